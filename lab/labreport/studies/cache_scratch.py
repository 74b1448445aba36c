"""The report's section for the cache-scratch experiment (after Hoard; issue 19, target 7)."""

from labreport.common import fmt, na_lines, note_ratio, ratio, spread, table, times, verdict

SIZES = [8, 16, 32, 64]
PK = "poolkit pk_pool"
CONTROLS = ["control: side by side, no allocator", "control: 256 B apart, no allocator"]


def cache_scratch(res, charts, outdir):
    exp = "cache-scratch"
    md = ["## cache-scratch: passive false sharing (after Hoard)", "",
          "The main thread allocates one object per worker and hands it over; each of 2 workers "
          "frees it, then allocates one object at a time and writes every byte of it many times. "
          "ns per byte written per worker (lower is better). The two control rows do the same "
          "writes with no allocator, the workers' objects side by side or 256 B apart: where the "
          "first is no slower, the machine does not show false sharing and the table cannot "
          "tell the allocators apart.", ""]
    body = []
    for s in res.subjects(exp):
        vals = [res.med(exp, s, size=z) for z in SIZES]
        if any(v is not None for v in vals):
            body.append([s] + [fmt(v) for v in vals])
    md.append(table(["allocator"] + ["{} B".format(z) for z in SIZES], body))
    md.append("")
    side = [res.med(exp, CONTROLS[0], size=z) for z in SIZES]
    apart = [res.med(exp, CONTROLS[1], size=z) for z in SIZES]
    shows = None
    if all(side) and all(apart):
        shows = sum(side) / sum(apart)
        md.append("Controls: side by side ÷ apart = {} ({}).".format(
            times(shows), "false sharing shows here" if shows >= 1.5 else
            "false sharing does not show on this machine"))
        md.append("")
    ratios = [(ratio(res.med(exp, PK, size=z), res.med(exp, "mimalloc", size=z)),
               spread(res.find(exp, PK, size=z), res.find(exp, "mimalloc", size=z))) for z in SIZES]
    md.append("pk_pool ÷ mimalloc (target ≤ 1×): " + ", ".join(
        "{} B {}".format(z, times(r)) for z, (r, _) in zip(SIZES, ratios)) + ".")
    md.append("")
    na = na_lines(res, exp)
    if na:
        md += [na, ""]
    known = [(r, g) for r, g in ratios if r is not None]
    if not known:
        return md, None
    worst, rng = max(known, key=lambda x: x[0])
    note_ratio("cache-scratch", "pk_pool ÷ mimalloc, worst size", worst, rng)
    v = verdict(worst, rng, 1.0, above=False)
    if shows is not None and shows < 1.5:
        v += " (not decided: no false sharing on this machine)"
    return md, ("cache-scratch (after Hoard)", "pk_pool ÷ mimalloc, ns per write, worst of 8-64 B "
                "(issue 19 target: ≤ 1×)", "–", times(worst), v)
