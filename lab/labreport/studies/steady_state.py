"""The report's section for the steady-state experiment (after larson)."""

from labreport import charts as chartlib
from labreport.common import (HARDENED, extra, faster_mimalloc, fmt, hardened_target, na_lines, ratio, spread,
                              table, times, value, verdict, vs_pool, worst_ratio)

SCALES = [(1000, "16-128 B"), (1000, "64 B"), (100000, "16-128 B"), (100000, "64 B")]
PK = "poolkit pk_pool"


def steady_state(res, charts, outdir):
    exp = "steady-state"
    subs = res.subjects(exp)
    heads = ["{:,} live, {}".format(n, m) for n, m in SCALES]
    md = ["## steady-state: random replacement in a live set, sets handed to new threads "
          "(after larson)", "",
          "Two threads; each frees a random object of its live set and allocates a replacement "
          "(16-128 B over one pk_pool per 16-byte class, or a fixed 64 B), then hands its set to "
          "a fresh thread. ns per free+allocate pair per thread (lower is better); peak RSS "
          "growth of the run in MiB.", ""]
    body = []
    for s in subs:
        vals = [res.med(exp, s, live_per_thread=n, sizes=m) for n, m in SCALES]
        if all(v is None for v in vals):
            continue
        rss = [extra(res.find(exp, s, live_per_thread=n, sizes=m), "peak_rss_kb") for n, m in SCALES]
        body.append([s] + [fmt(v) for v in vals] + [fmt(rss[2] / 1024 if rss[2] else None)])
    md.append(table(["allocator"] + heads + ["MiB at 100,000, 16-128 B"], body))
    md.append("")
    ratios = []
    for n, m in SCALES:
        a, b = res.find(exp, PK, live_per_thread=n, sizes=m), faster_mimalloc(res, exp, live_per_thread=n, sizes=m)
        ratios.append((ratio(value(a), value(b)), spread(a, b)))
    md.append("pk_pool ÷ the faster mimalloc (target ≤ 0.8× at every scale): " + ", ".join(
        "{} {}".format(h, times(r)) for h, (r, _) in zip(heads, ratios)) + ".")
    md.append("")
    line, hard_head = hardened_target("steady-state", "ns per pair, every scale", [
        (h, vs_pool(res.find(exp, HARDENED, live_per_thread=n, sizes=m))) for h, (n, m) in zip(heads, SCALES)],
        1.15)
    md += [line, ""]
    md += na_lines(res, exp)
    if chartlib.HAVE_MPL and body:
        values = {s: [res.med(exp, s, live_per_thread=n, sizes=m) for n, m in SCALES] for s in subs
                  if any(res.med(exp, s, live_per_thread=n, sizes=m) for n, m in SCALES)}
        chartlib.log_bars(values, heads, 1.0, "ns per pair per thread (log)",
                          "steady-state (after larson): 2 threads", (10, 4.5), 3, outdir,
                          "steady_state.png", charts)
    worst, rng = worst_ratio("steady-state", "pk_pool ÷ the faster mimalloc, worst scale", ratios)
    more = [hard_head] if hard_head else []
    if worst is None:
        return md, more
    return md, [("steady-state (after larson)", "pk_pool ÷ the faster mimalloc, ns per pair, worst of 4 scales "
                 "(target: ≤ 0.8×)", "–", times(worst), verdict(worst, rng, 0.8, above=False))] + more
