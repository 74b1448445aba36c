"""The report's section for the large experiment (after malloc-large)."""

from labreport import charts as chartlib
from labreport.common import extra, fmt, na_lines, note_ratio, run_params, table, times, value

EXP = "large"
PK = "poolkit pk_alloc"
BLOCKS = "5-25 MiB"
REPLACED = "64 KiB-8 MiB"


def rows_of(res, subs, sizes):
    """The table rows of one shape's results."""
    body = []
    for s in subs:
        r = res.find(EXP, s, sizes=sizes)
        if not value(r):
            continue
        kib = extra(r, "peak_rss_kb")
        body.append([s, "{} ({} – {})".format(fmt(r["median"]), fmt(r["min"]), fmt(r["max"])),
                     times(extra(r, "vs_glibc")), fmt(extra(r, "minor_faults")), times(extra(r, "faults_vs_glibc")),
                     fmt(kib / 1024 if kib else None)])
    return body


def replaced(res, subs):
    """The section's part for blocks replaced among many live, and its headline row."""
    pr = res.find(EXP, PK, sizes=REPLACED)
    if not pr:
        return [], None
    md = ["### Blocks replaced among many live", "",
          "64 live blocks of 64 KiB to 8 MiB; each call replaces a random one by a block of a random "
          "length and writes every page of it ({} calls untimed, then as many timed per run). Every gap "
          "between two live blocks holds a freed piece: an allocator that keeps few of them faults most "
          "pages in again. Time per run (lower is better), minor page faults and peak RSS growth.".format(
              fmt((pr.get("params") or {}).get("iterations"))), ""]
    body = rows_of(res, subs, REPLACED)
    md += [table(["allocator", "ms per run", "× glibc", "minor faults", "× glibc", "peak RSS MiB"], body), ""]
    vb = extra(pr, "vs_best")
    met = vb is not None and vb <= 1.1
    md += ["**Target**: pk_alloc at most 1.1× the fastest other allocator's time ({}) → {}.".format(
        times(vb), "met" if met else "not met"), ""]
    note_ratio(EXP, "pk_alloc ÷ the fastest other, time, replaced among many live", vb)
    if vb is None:
        return md, None
    return md, ("large: blocks replaced among 64 live", "pk_alloc ÷ the fastest other allocator: time (≤ 1.1×)",
                "–", times(vb), "met" if met else "not met")


def large(res, charts, outdir):
    subs = res.subjects(EXP)
    md = ["## large: blocks of 5-25 MiB (after malloc-large)", "",
          "20 slots; each iteration allocates a block of 5 to 25 MiB, writes it in full and frees the "
          "block it replaces in a random slot ({} iterations per run, a fixed seed). Time per run (lower "
          "is better), minor page faults and peak RSS growth, each run a process of its own; ratios: "
          "median of the per-repetition ratios to glibc.".format(fmt(run_params(res, EXP).get("iterations"))),
          ""]
    body = rows_of(res, subs, BLOCKS)
    md += [table(["allocator", "ms per run", "× glibc", "minor faults", "× glibc", "peak RSS MiB"], body), ""]
    pk = res.find(EXP, PK, sizes=BLOCKS)
    t, f = extra(pk, "vs_glibc"), extra(pk, "faults_vs_glibc")
    met = t is not None and f is not None and t <= 1.2 and f <= 2.0
    md += ["**Target**: pk_alloc at most 1.2× glibc's time ({}) and 2× its minor faults ({}) → {}.".format(
        times(t), times(f), "met" if met else "not met"), ""]
    more, head2 = replaced(res, subs)
    md += more
    md += list(dict.fromkeys(na_lines(res, EXP)))
    if chartlib.HAVE_MPL and body:
        shown = [s for s in subs if value(res.find(EXP, s, sizes=BLOCKS))]
        fig, axes = chartlib.plt.subplots(1, 2, figsize=(10, 4))
        for ax, (title, get) in zip(axes, (("ms per run", value),
                                           ("minor page faults", lambda r: extra(r, "minor_faults")))):
            vals = [get(res.find(EXP, s, sizes=BLOCKS)) or 0 for s in shown]
            ax.bar(range(len(shown)), vals, color=[chartlib.color(s) for s in shown])
            ax.set_xticks(range(len(shown)))
            ax.set_xticklabels([s.replace("poolkit ", "") for s in shown], fontsize=8, rotation=20)
            ax.set_title(title)
            ax.grid(True, axis="y", alpha=0.3)
        fig.suptitle("large (after malloc-large): 5-25 MiB blocks, 20 slots")
        chartlib.save(fig, outdir, "large.png", charts)
    note_ratio(EXP, "pk_alloc ÷ glibc, time", t)
    note_ratio(EXP, "pk_alloc ÷ glibc, minor faults", f)
    heads = [] if t is None else [("large (after malloc-large)", "pk_alloc ÷ glibc: time (≤ 1.2×) / minor faults (≤ 2×)",
                                   "–", "{} / {}".format(times(t), times(f)), "met" if met else "not met")]
    if head2:
        heads.append(head2)
    return md, heads or None
