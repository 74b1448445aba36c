"""The report's section for the many-pools experiment."""

from labreport import charts as chartlib
from labreport.common import extra, fmt, median_rows, na_lines, table

PK = "poolkit pk_pool"


def many_pools(res, charts, outdir):
    exp = "many-pools"
    counts = sorted({int(r["params"]["threads"]) for r in res.rows(exp) if "threads" in r["params"]})
    md = ["## many-pools: memory with many threads and many pools", "",
          "1,000 pools of 64-byte objects (the mallocs: the same objects from one heap); each "
          "thread allocates 10 objects from every pool and holds them. Bytes per thread per pool "
          "(640 live), read while the threads hold their objects: the process's RSS growth since "
          "before the pools were made, and poolkit's own account (bytes its slabs reserve, and of "
          "those ever touched).", ""]
    body = median_rows(res, exp, [{"threads": t} for t in counts], "{} (RSS growth)")
    for key, label in (("pk_reserved_b", "reserved"), ("pk_resident_b", "resident")):
        vals = [extra(res.find(exp, PK, threads=t), key) for t in counts]
        if any(v is not None for v in vals):
            body.append(["poolkit pk_pool ({}, its own account)".format(label)] + [fmt(v) for v in vals])
    md.append(table(["bytes per thread per pool \\ threads"] + [str(t) for t in counts], body))
    md.append("")
    md += na_lines(res, exp)
    if chartlib.HAVE_MPL and counts and body:
        values = {s: [res.med(exp, s, threads=t) for t in counts] for s in res.subjects(exp)
                  if any(res.med(exp, s, threads=t) for t in counts)}
        chartlib.log_bars(values, ["{} thread{}".format(t, "s" if t > 1 else "") for t in counts],
                          10, "RSS growth, bytes per thread per pool (log)",
                          "many-pools: 1,000 pools x 10 objects of 64 B per thread", (9, 4.5), 3,
                          outdir, "many_pools.png", charts)
    if not counts:
        return md, None
    t = counts[-1]
    r = res.find(exp, PK, threads=t)
    if not r or not r.get("available"):
        return md, None
    return md, ("many-pools", "pk_pool at {} threads × 1,000 pools × 10 objects: reserved / resident / "
                "RSS growth, B per thread per pool (640 live)".format(t), "–",
                "{} / {} / {}".format(fmt(extra(r, "pk_reserved_b")), fmt(extra(r, "pk_resident_b")),
                                      fmt(res.med(exp, PK, threads=t))), "reported")
