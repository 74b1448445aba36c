"""The report's section for the workset experiment."""

from labreport import charts as chartlib
from labreport.common import HARDENED, extra, fmt, hardened_target, na_lines, note_ratio, table, times, vs_pool


WS_ORDERS = ["LIFO", "FIFO", "random"]


WS_MALLOCS = ["glibc malloc", "jemalloc", "mimalloc", "mimalloc 3", "tcmalloc"]


def ws_is_peer(res, exp, s):
    """A peer that frees each object (not an empty loop, nor a bulk-free arena)."""
    rs = [r for r in res.rows(exp, subject=s) if r.get("available")]
    if not rs or rs[0]["family"] != "peer" or "empty" in s:
        return False
    return all(extra(r, "frees_each") != 0 for r in rs)


def ws_fastest(res, exp, cands, **params):
    """(ns, subject) of the fastest measured candidate at these params, or None."""
    vals = [(res.med(exp, s, **params), s) for s in cands]
    vals = [(v, s) for v, s in vals if v is not None]
    return min(vals) if vals else None


def hardened_section(res, exp, md, counts, sizes):
    """The hardened target: pk_pool HARDENED ÷ the default pk_pool at every N and order (a table per
    size), judged at every point and shown by each order's worst; returns the headline row."""
    worst = []
    for size in sizes:
        body = []
        for order in WS_ORDERS:
            vals = [vs_pool(res.find(exp, HARDENED, order=order, n=n, size=size)) for n in counts]
            if all(v is None for v in vals):
                continue
            body.append([order] + [times(v) for v in vals])
        if not body:
            continue
        md.append("pk_pool HARDENED ÷ the default pk_pool, {} B (median of the repetitions' "
                  "ratios):".format(size))
        md.append("")
        md.append(table(["order"] + ["N = {}".format(fmt(n)) for n in counts], body))
        md.append("")
    for order in WS_ORDERS:
        pts = [(vs_pool(res.find(exp, HARDENED, order=order, n=n, size=size)), n, size)
               for size in sizes for n in counts]
        pts = [p for p in pts if p[0] is not None]
        if pts:
            v, n, size = max(pts)
            worst.append(("{} (worst N: {}, {} B)".format(order, fmt(n), size), v))
        else:
            worst.append((order, None))
    line, head = hardened_target("workset", "ns per pair at every N and order", worst, 1.15)
    md += [line, ""]
    return head


def workset(res, charts, outdir):
    exp = "workset"
    subs = res.subjects(exp)
    rows = [r for r in res.rows(exp) if r["family"] != "published"]
    counts = sorted({int(r["params"]["n"]) for r in rows if "n" in r.get("params", {})})
    sizes = sorted({int(r["params"]["size"]) for r in rows if "size" in r.get("params", {})})
    md = ["## workset: working sets of 1,000 to 1,000,000 objects", "",
          "Allocate N objects (touching each), free all in LIFO, FIFO or random order, repeat; "
          "ns per allocate+free pair (median, gross: the empty loops show what the loop itself "
          "costs). Each C contender runs in a fresh child process; APR pools and pk_arena free "
          "a whole phase at once, whatever the order.", ""]
    peers_ = [s for s in subs if ws_is_peer(res, exp, s)]
    mallocs = [s for s in WS_MALLOCS if s in subs]
    head_parts, finding = [], []
    for size in sizes:
        for order in WS_ORDERS:
            md.append("**{}, {} B**".format(order, size))
            md.append("")
            body = []
            for s in subs:
                cells = [fmt(res.med(exp, s, order=order, n=n, size=size)) for n in counts]
                if all(c == "–" for c in cells):
                    continue
                body.append([s] + cells)
            md.append(table(["allocator"] + ["N = {}".format(fmt(n)) for n in counts], body))
            md.append("")
        # faults per repeated phase (the most over the orders) and bytes per object
        nmax = counts[-1] if counts else None
        empty_kb = extra(res.find(exp, "empty loop", order="LIFO", n=nmax, size=size), "peak_rss_kb")
        body = []
        for s in subs:
            cells = []
            for n in counts:
                fs = [extra(res.find(exp, s, order=o, n=n, size=size), "faults_repeat") for o in WS_ORDERS]
                fs = [f for f in fs if f is not None]
                cells.append(fmt(max(fs)) if fs else "–")
            kb = extra(res.find(exp, s, order="LIFO", n=nmax, size=size), "peak_rss_kb")
            per_obj = (kb - (empty_kb or 0)) * 1024 / nmax if kb is not None and nmax else None
            if all(c == "–" for c in cells):
                continue
            body.append([s] + cells + [fmt(per_obj)])
        md.append("Minor page faults per repeated phase ({} B; the most over the three orders), "
                  "and peak RSS growth per object at N = {} (LIFO, net of the empty loop's; "
                  "C contenders only):".format(size, fmt(nmax)))
        md.append("")
        md.append(table(["allocator"] + ["N = {}".format(fmt(n)) for n in counts] + ["bytes/object"], body))
        md.append("")
        # the headline: pk_pool against the fastest peer, and against the fastest malloc
        for order in WS_ORDERS:
            parts, vs_malloc = [], []
            for n in counts:
                pk = res.med(exp, "poolkit pk_pool", order=order, n=n, size=size)
                best = ws_fastest(res, exp, peers_, order=order, n=n, size=size)
                bm = ws_fastest(res, exp, mallocs, order=order, n=n, size=size)
                if pk and best:
                    parts.append((n, pk / best[0], best[1]))
                if pk and bm:
                    vs_malloc.append((n, pk / bm[0], bm[1]))
            if not parts:
                continue
            limit = 1.0 if order == "random" else 0.75
            met = sum(1 for _, r, _ in vs_malloc if r <= limit)
            finding.append("- **{}** ({} B): pk_pool ÷ the fastest peer: {}. Against the fastest of "
                           "glibc, jemalloc, both mimallocs and tcmalloc (target: at most {}×{}): "
                           "met at {} of {} N.".format(
                               order, size, ", ".join("{} at N = {} ({})".format(times(r), fmt(n), b)
                                                      for n, r, b in parts),
                               fmt(limit), ", or 1.3× a naive free list: see bench_workset"
                               if order != "random" else "", met, len(vs_malloc)))
            if size == sizes[0] or size == 48:
                head_parts.append((order, min(r for _, r, _ in parts), max(r for _, r, _ in parts)))
        pkf = [extra(res.find(exp, "poolkit pk_pool", order=o, n=n, size=size), "faults_repeat")
               for o in WS_ORDERS for n in counts]
        pkf = [f for f in pkf if f is not None]
        if pkf:
            finding.append("- page faults per repeated phase ({} B): pk_pool at most {} (goal: 0){}.".format(
                size, fmt(max(pkf)), "; zero faults: " + ", ".join(
                    s for s in subs if "empty" not in s and all(
                        (extra(res.find(exp, s, order=o, n=n, size=size), "faults_repeat") or 0) < 0.5
                        for o in WS_ORDERS for n in counts)
                    and any(res.find(exp, s, order=o, n=n, size=size) for o in WS_ORDERS for n in counts))))
    if finding:
        md += ["**Finding.** poolkit pk_pool against the fastest peer that frees each object "
               "(glibc, jemalloc, mimalloc, tcmalloc, Boost.Pool, GLib, talloc, Zig MemoryPool: "
               "whichever ran):", ""] + finding + [""]
    hard_head = hardened_section(res, exp, md, counts, sizes)
    md += na_lines(res, exp)
    if chartlib.HAVE_MPL and counts:
        for size in sizes:
            fig, axes = chartlib.plt.subplots(1, 3, figsize=(15, 5), sharey=True)
            for ax, order in zip(axes, WS_ORDERS):
                for s in subs:
                    pts = [(n, res.med(exp, s, order=order, n=n, size=size)) for n in counts]
                    pts = [(n, v) for n, v in pts if v]
                    if not pts:
                        continue
                    style = dict(marker="o", markersize=3, label=s, color=chartlib.color(s))
                    if "empty" in s:
                        style.update(linestyle=":", color="#888888")
                    elif s == "poolkit pk_pool":
                        style.update(linewidth=2.5, color="#000000")
                    elif s.startswith("poolkit"):
                        style.update(linewidth=2, linestyle="--", color="#444444")
                    ax.plot([n for n, _ in pts], [v for _, v in pts], **style)
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_xlabel("objects in the working set, N (log)")
                ax.set_title(order)
                ax.grid(True, which="both", alpha=0.3)
            axes[0].set_ylabel("ns per allocate+free pair (log)")
            axes[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
            fig.suptitle("workset: {} B objects, allocate N, touch, free all, repeat".format(size))
            chartlib.save(fig, outdir, "workset_{}B.png".format(size), charts)
    head = None
    for o, lo, hi in head_parts:
        note_ratio("workset", "pk_pool ÷ fastest peer, {}, best N".format(o), lo)
        note_ratio("workset", "pk_pool ÷ fastest peer, {}, worst N".format(o), hi)
    if head_parts:
        head = ("working sets (workset, {} B)".format(48 if 48 in sizes else sizes[0]),
                "pk_pool ÷ fastest peer, ns per pair, over N = {}–{} ({})".format(
                    fmt(counts[0]), fmt(counts[-1]), " / ".join(o for o, _, _ in head_parts)), "–",
                " / ".join("{}–{}".format(times(lo), times(hi)) for _, lo, hi in head_parts), "")
    return md, ([head] if head else []) + ([hard_head] if hard_head else [])
