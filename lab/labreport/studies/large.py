"""The report's section for the large experiment (after malloc-large)."""

from labreport import charts as chartlib
from labreport.common import extra, fmt, na_lines, note_ratio, run_params, table, times, value

EXP = "large"
PK = "poolkit pk_alloc"


def large(res, charts, outdir):
    subs = res.subjects(EXP)
    md = ["## large: blocks of 5-25 MiB (after malloc-large)", "",
          "20 slots; each iteration allocates a block of 5 to 25 MiB, writes it in full and frees the "
          "block it replaces in a random slot ({} iterations per run, a fixed seed). Time per run (lower "
          "is better), minor page faults and peak RSS growth, each run a process of its own; ratios: "
          "median of the per-repetition ratios to glibc.".format(fmt(run_params(res, EXP).get("iterations"))),
          ""]
    body = []
    for s in subs:
        r = res.find(EXP, s)
        if not value(r):
            continue
        kib = extra(r, "peak_rss_kb")
        body.append([s, "{} ({} – {})".format(fmt(r["median"]), fmt(r["min"]), fmt(r["max"])),
                     times(extra(r, "vs_glibc")), fmt(extra(r, "minor_faults")), times(extra(r, "faults_vs_glibc")),
                     fmt(kib / 1024 if kib else None)])
    md += [table(["allocator", "ms per run", "× glibc", "minor faults", "× glibc", "peak RSS MiB"], body), ""]
    pk = res.find(EXP, PK)
    t, f = extra(pk, "vs_glibc"), extra(pk, "faults_vs_glibc")
    met = t is not None and f is not None and t <= 1.2 and f <= 2.0
    md += ["**Target**: pk_alloc at most 1.2× glibc's time ({}) and 2× its minor faults ({}) → {}.".format(
        times(t), times(f), "met" if met else "not met"), ""]
    md += na_lines(res, EXP)
    if chartlib.HAVE_MPL and body:
        shown = [s for s in subs if value(res.find(EXP, s))]
        fig, axes = chartlib.plt.subplots(1, 2, figsize=(10, 4))
        for ax, (title, get) in zip(axes, (("ms per run", value),
                                           ("minor page faults", lambda r: extra(r, "minor_faults")))):
            vals = [get(res.find(EXP, s)) or 0 for s in shown]
            ax.bar(range(len(shown)), vals, color=[chartlib.color(s) for s in shown])
            ax.set_xticks(range(len(shown)))
            ax.set_xticklabels([s.replace("poolkit ", "") for s in shown], fontsize=8, rotation=20)
            ax.set_title(title)
            ax.grid(True, axis="y", alpha=0.3)
        fig.suptitle("large (after malloc-large): 5-25 MiB blocks, 20 slots")
        chartlib.save(fig, outdir, "large.png", charts)
    note_ratio(EXP, "pk_alloc ÷ glibc, time", t)
    note_ratio(EXP, "pk_alloc ÷ glibc, minor faults", f)
    if t is None:
        return md, None
    return md, ("large (after malloc-large)", "pk_alloc ÷ glibc: time (≤ 1.2×) / minor faults (≤ 2×)", "–",
                "{} / {}".format(times(t), times(f)), "met" if met else "not met")
