"""The report's section for the pool-pattern experiment."""

from labreport import charts as chartlib
from labreport.common import extra, fmt, na_lines, note_ratio, ratio, table, times, value


SIZES = ["small", "medium", "big"]


def beats(g, p):
    """The general-purpose allocator's net cost over the pool's, as the
    study gives it, and its text. A pool whose net cost is at or below the
    empty loop's (a difference of two minima, so it can come out below
    zero) has no cost the harness can see: no ratio then, but the study's
    ranking holds if the general-purpose allocator's cost is above zero."""
    if g is None or p is None:
        return None, "–"
    if p <= 0:
        return None, "pool's net {} ns (none measurable) against {} ns".format(fmt(p), fmt(g))
    return g / p, times(g / p)


def pool_pattern(res, charts, outdir):
    exp = "pool-pattern"
    subs = res.subjects(exp)
    md = ["## pool-pattern: the typed memory pool benchmark (Zig, 2023)", "",
          "ns per round (median), net of the empty loop, and peak RSS of each contender's "
          "child process. Published: µs per operation for the general-purpose allocator / "
          "arena / pool.", ""]
    pubs = ["Zig 2023: general-purpose allocator", "Zig 2023: ArenaAllocator", "Zig 2023: MemoryPool"]
    for size in SIZES:
        r0 = next((r for r in res.rows(exp) if r["params"].get("size") == size
                   and r["family"] != "published"), None)
        rounds = r0["params"].get("rounds") if r0 else None
        pv = [res.med(exp, p, size=size) for p in pubs]
        md.append("**{}** ({} rounds; published: raw {} µs, arena {} µs, pool {} µs)".format(
            size, fmt(rounds), *[fmt(v / 1000 if v else None) for v in pv]))
        md.append("")
        body = []
        for s in subs:
            r = res.find(exp, s, size=size)
            if not r or not r.get("available"):
                continue
            body.append([s, fmt(value(r)), "{} – {}".format(fmt(r["min"]), fmt(r["max"])),
                         fmt(extra(r, "net")), fmt(extra(r, "allocs")), fmt(extra(r, "peak_live")),
                         fmt(extra(r, "peak_rss_kb"))])
        md.append(table(["contender", "ns/round", "min – max", "net ns", "allocs", "peak live",
                         "peak RSS KiB"], body))
        md.append("")
    # decisive: raw (glibc) ÷ pool (pk_pool), net, per size, against published raw ÷ pool
    parts, lowest = [], []
    for size in SIZES:
        g = extra(res.find(exp, "glibc malloc", size=size), "net")
        p = extra(res.find(exp, "poolkit pk_pool", size=size), "net")
        pr, pp = res.med(exp, pubs[0], size=size), res.med(exp, pubs[2], size=size)
        mine, text = beats(g, p)
        parts.append((size, mine, ratio(pr, pp), text, g is not None and p is not None and g > 0 and p < g))
        nets = [(extra(res.find(exp, s, size=size), "net"), s) for s in subs if s != "empty loop"]
        nets = [(v, s) for v, s in nets if v is not None]
        if nets:
            lowest.append((size, min(nets)[1]))
    finding = "**Finding.** The study's pool beat the general-purpose allocator by " + ", ".join(
        "{} ({})".format(times(pub), size) for size, _, pub, _, _ in parts) + "; here pk_pool against "
    finding += "glibc malloc, net of the harness: " + ", ".join(
        "{} ({})".format(text, size) for size, _, _, text, _ in parts) + ". "
    if lowest:
        finding += "Lowest net cost: " + ", ".join("{} {}".format(size, s) for size, s in lowest) + "."
    md += [finding, ""]
    md += na_lines(res, exp)
    if chartlib.HAVE_MPL:
        shown = [s for s in subs if s != "empty loop"
                 and any(extra(res.find(exp, s, size=z), "net") is not None for z in SIZES)]
        values = {s: [extra(res.find(exp, s, size=z), "net") for z in SIZES] for s in shown}
        chartlib.log_bars(values, ["small (1 B)", "medium (8 KiB)", "big (1 MiB)"], 0.5,
                          "net ns per round (log; floor 0.5)", "pool-pattern: net cost per size",
                          (10, 5), 2, outdir, "pattern_net.png", charts)
    # pk_pool against a plain free list (the naive free list, Zig MemoryPool's algorithm), net
    tgt = []
    for size in ("medium", "big"):
        p = extra(res.find(exp, "poolkit pk_pool", size=size), "net")
        n = extra(res.find(exp, "naive free list", size=size), "net")
        tgt.append((size, p, n, None if p is None or n is None else p <= 1.3 * n + 2.0))
    if any(ok is not None for *_, ok in tgt):
        md += ["**Target**: pk_pool's net time at most 1.3× the naive free list's + 2 ns (medium, big): " +
               ", ".join("{} {} vs {} ns".format(size, fmt(p), fmt(n)) for size, p, n, _ in tgt) + " → " +
               ("met" if all(ok for *_, ok in tgt) else "not met") + ".", ""]
    small, big = parts[0], parts[2]
    note_ratio("pool-pattern", "general-purpose ÷ pool, net, small", small[1])
    note_ratio("pool-pattern", "general-purpose ÷ pool, net, big", big[1])
    # the study's claim is the ranking: the pool costs less than the
    # general-purpose allocator at both sizes
    head = ("Typed memory pool benchmark (Zig, 2023)", "general-purpose ÷ pool, net (small / big)",
            "{} / {}".format(times(small[2]), times(big[2])),
            "{} / {}".format(small[3], big[3]),
            "holds" if small[4] and big[4] else "does not hold")
    return md, head
