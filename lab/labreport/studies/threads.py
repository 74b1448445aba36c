"""The report's section for the threads experiment."""

from labreport import charts as chartlib
from labreport.common import (HARDENED, fmt, hardened_target, na_lines, note_ratio, ratio, spread, table,
                              times, vs_pool)


def threads(res, charts, outdir):
    exp = "threads"
    subs = res.subjects(exp)
    counts = sorted({int(r["params"]["threads"]) for r in res.rows(exp) if "threads" in r["params"]})
    md = ["## threads: producer/consumer and per-thread churn, 64-byte objects", "",
          "Million objects allocated and freed per second, all threads together (higher is better).", ""]
    for wl in ("producer/consumer", "churn"):
        md.append("**{}**".format(wl))
        md.append("")
        body = []
        for s in subs:
            vals = [res.med(exp, s, workload=wl, threads=t) for t in counts]
            if all(v is None for v in vals):
                continue
            body.append([s] + [fmt(v) for v in vals] + [times(ratio(vals[-1], vals[0]))])
        md.append(table(["allocator"] + ["{} thread{}".format(t, "s" if t > 1 else "") for t in counts]
                        + ["scaling"], body))
        md.append("")
    tmax = counts[-1] if counts else 1
    pk = res.med(exp, "poolkit pk_pool", workload="producer/consumer", threads=tmax)
    gl = res.med(exp, "glibc malloc", workload="producer/consumer", threads=tmax)
    best = None
    for s in subs:
        v = res.med(exp, s, workload="producer/consumer", threads=tmax)
        if v and (best is None or v > best[0]):
            best = (v, s)
    finding = ("**Finding.** With {} threads passing objects to one another, pk_pool moves {} M "
               "objects/s against glibc's {} ({}).").format(tmax, fmt(pk), fmt(gl), times(ratio(pk, gl)))
    if best:
        finding += " Highest: {} ({} M/s).".format(best[1], fmt(best[0]))
    md += [finding, ""]
    line, hard_head = hardened_target("threads", "producer/consumer, time (the default's throughput "
                                "over HARDENED's)", [
        ("{} thread{}".format(t, "s" if t > 1 else ""),
         vs_pool(res.find(exp, HARDENED, workload="producer/consumer", threads=t))) for t in counts], 1.15)
    md += [line, ""]
    md += na_lines(res, exp)
    if chartlib.HAVE_MPL and counts:
        fig, axes = chartlib.plt.subplots(1, 2, figsize=(11, 4.5))
        for ax, wl in zip(axes, ("producer/consumer", "churn")):
            for s in subs:
                pts = [(t, res.med(exp, s, workload=wl, threads=t)) for t in counts]
                pts = [(t, v) for t, v in pts if v]
                if pts:
                    ax.plot([t for t, _ in pts], [v for _, v in pts], marker="o", label=s,
                            color=chartlib.color(s))
            ax.set_xticks(counts)
            ax.set_xlabel("threads")
            ax.set_ylabel("M objects/s")
            ax.set_title(wl)
            ax.grid(True, alpha=0.3)
            ax.set_ylim(bottom=0)
        axes[0].legend(fontsize=7)
        fig.suptitle("threads: throughput and scaling")
        chartlib.save(fig, outdir, "threads.png", charts)
    note_ratio("threads", "pk_pool ÷ glibc malloc at {} threads".format(tmax), ratio(pk, gl),
               spread(res.find(exp, "poolkit pk_pool", workload="producer/consumer", threads=tmax),
                      res.find(exp, "glibc malloc", workload="producer/consumer", threads=tmax)))
    head = ("threads (producer/consumer)", "pk_pool ÷ glibc malloc at {} threads".format(tmax), "–",
            times(ratio(pk, gl)), "")
    return md, [head] + ([hard_head] if hard_head else [])
