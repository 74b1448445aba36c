"""The report's section for the cache-scratch experiment (after Hoard)."""

from labreport.common import (MIMALLOCS, extra, faster_mimalloc, fmt, median_rows, na_lines, ratio, table, times,
                              value, worst_ratio)

SIZES = [8, 16, 32, 64]
PK = "poolkit pk_pool"
CONTROLS = ["control: side by side, no allocator", "control: 256 B apart, no allocator"]


def cache_scratch(res, charts, outdir):
    exp = "cache-scratch"
    md = ["## cache-scratch: passive false sharing (after Hoard)", "",
          "The main thread allocates one object per worker and hands it over; each of 2 workers "
          "frees it, then allocates one object at a time and writes every byte of it many times. "
          "CPU ns per byte written per worker (lower is better). The two control rows do the same "
          "writes with no allocator, the workers' objects side by side or 256 B apart: where the "
          "first is no slower, the machine does not show false sharing and the table cannot "
          "tell the allocators apart.", ""]
    body = median_rows(res, exp, [{"size": z} for z in SIZES])
    md.append(table(["allocator"] + ["{} B".format(z) for z in SIZES], body))
    md.append("")
    md.append("The medians mix repetitions in which the two workers ran at once with repetitions "
              "in which they took turns (no false sharing can happen then; on a shared machine "
              "that is common). The repetition in which they overlapped most (workers at once in "
              "brackets) says what the allocator's placement costs:")
    md.append("")

    def over(s, z):
        r = res.find(exp, s, size=z)
        return extra(r, "overlapped_ns"), extra(r, "overlapped_at_once")

    body = []
    for s in res.subjects(exp):
        cells = [over(s, z) for z in SIZES]
        if any(v is not None for v, _ in cells):
            body.append([s] + ["{} ({})".format(fmt(v), fmt(a)) if v is not None else "–"
                               for v, a in cells])
    md.append(table(["allocator"] + ["{} B".format(z) for z in SIZES], body))
    md.append("")
    side = [over(CONTROLS[0], z)[0] for z in SIZES]
    apart = [over(CONTROLS[1], z)[0] for z in SIZES]
    shows = None
    if all(side) and all(apart):
        shows = sum(side) / sum(apart)
        md.append("Controls, overlapped: side by side ÷ apart = {} ({}).".format(
            times(shows), "false sharing shows here" if shows >= 1.5 else
            "false sharing does not show on this machine"))
        md.append("")
    ratios, decided = [], shows is not None and shows >= 1.5
    for z in SIZES:
        (p, pa) = over(PK, z)
        (m, ma) = min((over(s, z) for s in MIMALLOCS), key=lambda x: x[0] if x[0] is not None else float("inf"))
        ratios.append(ratio(p, m))
        decided = decided and (pa or 0) >= 1.5 and (ma or 0) >= 1.5
    md.append("pk_pool ÷ the faster mimalloc in the most-overlapped repetitions (target ≤ 1×): " + ", ".join(
        "{} B {}".format(z, times(r)) for z, r in zip(SIZES, ratios)) + "; medians: " + ", ".join(
        "{} B {}".format(z, times(ratio(res.med(exp, PK, size=z), value(faster_mimalloc(res, exp, size=z)))))
        for z in SIZES) + ".")
    md.append("")
    md += na_lines(res, exp)
    worst, _ = worst_ratio("cache-scratch", "pk_pool ÷ the faster mimalloc, worst size, most-overlapped run",
                           [(r, None) for r in ratios])
    if worst is None:
        return md, None
    v = ("holds" if worst <= 1.0 else "does not hold") if decided else \
        "not decided (the workers did not both run at once, or no false sharing shows)"
    return md, ("cache-scratch (after Hoard)", "pk_pool ÷ the faster mimalloc, CPU ns per byte written, worst "
                "of 8-64 B, most-overlapped run (target: ≤ 1×)", "–", times(worst), v)
