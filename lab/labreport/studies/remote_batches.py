"""The report's section for the remote-batches experiment (after xmalloc-test)."""

from labreport.common import (extra, faster_mimalloc, fmt, na_lines, ratio, spread, table, times, value, verdict,
                              worst_ratio)

PAIRS = [1, 2]
PK = "poolkit pk_pool"


def remote_batches(res, charts, outdir):
    exp = "remote-batches"
    md = ["## remote-batches: producers allocate batches of 4,096 × 64 B, consumers free them "
          "(after xmalloc-test)", "",
          "ns per object, all threads together (lower is better), and peak RSS growth in MiB.", ""]
    body = []
    for s in res.subjects(exp):
        cells = []
        for p in PAIRS:
            r = res.find(exp, s, producers=p)
            kib = extra(r, "peak_rss_kb")
            cells += [fmt(res.med(exp, s, producers=p)), fmt(kib / 1024 if kib else None)]
        if any(c != "–" for c in cells):
            body.append([s] + cells)
    md.append(table(["allocator"] + [h for p in PAIRS for h in ("{}+{}: ns".format(p, p), "MiB")], body))
    md.append("")
    mis = [faster_mimalloc(res, exp, producers=p) for p in PAIRS]
    ratios = [(ratio(res.med(exp, PK, producers=p), value(mi)), spread(res.find(exp, PK, producers=p), mi))
              for p, mi in zip(PAIRS, mis)]
    md.append("pk_pool ÷ the faster mimalloc (target ≤ 0.6×): " + ", ".join(
        "{}+{} threads {} ({})".format(p, p, times(r), mi["subject"] if mi else "–")
        for p, (r, _), mi in zip(PAIRS, ratios, mis)) + ".")
    md.append("")
    md += na_lines(res, exp)
    worst, rng = worst_ratio("remote-batches", "pk_pool ÷ the faster mimalloc, worst thread count", ratios)
    if worst is None:
        return md, None
    return md, ("remote-batches (after xmalloc-test)", "pk_pool ÷ the faster mimalloc, ns per object, worst of "
                "1+1 and 2+2 threads (target: ≤ 0.6×)", "–", times(worst),
                verdict(worst, rng, 0.6, above=False))
