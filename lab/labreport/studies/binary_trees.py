"""The report's section for the binary-trees experiment."""

from labreport import charts as chartlib
from labreport.common import (HARDENED, fmt, hardened_target, na_lines, note_ratio, ratio, spread, table,
                              times, value, vs_pool)


def binary_trees(res, charts, outdir):
    exp = "binary-trees"
    subs = res.subjects(exp)
    depth = None
    for r in res.rows(exp):
        depth = r["params"].get("depth") or depth
    base = res.med(exp, "glibc malloc", depth=depth)
    md = ["## binary-trees: the Benchmarks Game program (depth {}, one thread)".format(depth), ""]
    body = []
    for s in subs:
        r = res.find(exp, s, depth=depth) or res.find(exp, s)
        if not value(r):
            continue
        body.append([s, fmt(value(r)), "{} – {}".format(fmt(r["min"]), fmt(r["max"])),
                     times(ratio(base, value(r)))])
    md.append(table(["nodes from", "ms", "min – max", "against malloc"], body))
    md.append("")
    best = min(((value(res.find(exp, s, depth=depth)), s) for s in subs
                if value(res.find(exp, s, depth=depth))), default=None)
    pool = res.med(exp, "poolkit pk_pool", depth=depth)
    finding = "**Finding.** pk_pool runs the program {} faster than malloc".format(times(ratio(base, pool)))
    if best:
        finding += "; fastest: {} ({} ms)".format(best[1], fmt(best[0]))
    md += [finding + ".", ""]
    line, hard_head = hardened_target("binary-trees", "whole program", [
        ("depth {}".format(depth), vs_pool(res.find(exp, HARDENED, depth=depth)))], 1.15)
    md += [line, ""]
    md += na_lines(res, exp)
    if chartlib.HAVE_MPL and body:
        fig, ax = chartlib.plt.subplots(figsize=(7, 3.5))
        names = [b[0] for b in body]
        vals = [value(res.find(exp, s, depth=depth)) for s in names]
        ax.barh(names, vals, color="#2a7ab9")
        ax.invert_yaxis()
        ax.set_xlabel("ms for the whole program")
        ax.set_title("binary-trees, depth {}".format(depth))
        ax.grid(True, axis="x", alpha=0.3)
        chartlib.save(fig, outdir, "binary_trees.png", charts)
    note_ratio("binary-trees", "malloc ÷ pk_pool, whole program", ratio(base, pool),
               spread(res.find(exp, "glibc malloc", depth=depth), res.find(exp, "poolkit pk_pool", depth=depth)))
    head = ("binary-trees (Benchmarks Game)", "malloc ÷ pk_pool, whole program", "–",
            times(ratio(base, pool)), "")
    return md, [head] + ([hard_head] if hard_head else [])
