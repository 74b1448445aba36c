"""The report's section for the migrate experiment (threads that come and go, after mstress)."""

from labreport import charts as chartlib
from labreport.common import faster_mimalloc, fmt, na_lines, note_ratio, ratio, table, times, value

EXP = "migrate"
PK = "poolkit pk_alloc"
JUDGED = [25, 100, 250]


def migrate(res, charts, outdir):
    subs = res.subjects(EXP)
    marks = sorted({int(r["params"]["iterations"]) for r in res.rows(EXP) if "iterations" in r.get("params", {})})
    md = ["## migrate: threads that come and go (after mstress)", "",
          "Each iteration starts 2 threads that allocate objects of 8 to 128 B (1% far larger), keep "
          "some to their end, free most at random and swap some through a shared array of 1,000 "
          "slots, so that objects outlive their thread; the live set does not grow. Peak RSS growth "
          "in MiB after N iterations (lower is better; flat is the goal), each allocator in a process "
          "of its own.", ""]
    body = []
    for s in subs:
        vals = [res.med(EXP, s, iterations=n) for n in marks]
        if any(v is not None for v in vals):
            body.append([s] + [fmt(v) for v in vals])
    md += [table(["allocator"] + ["{} it.".format(n) for n in marks], body), ""]
    parts, worst = [], None
    for n in JUDGED:
        mi = faster_mimalloc(res, EXP, iterations=n)
        r = ratio(res.med(EXP, PK, iterations=n), value(mi))
        parts.append("{}: {} ({})".format(n, times(r), mi["subject"] if mi else "–"))
        if r is not None and (worst is None or r > worst):
            worst = r
    pk = [res.med(EXP, PK, iterations=n) for n in JUDGED]
    pk = [v for v in pk if v is not None]
    flat = max(pk) / min(pk) if pk and min(pk) > 0 else None
    md += ["**Targets**: pk_alloc's peak ÷ the better (smaller) mimalloc's (≤ 1.5×): " + ", ".join(parts) +
           " → {}; pk_alloc flat over 25, 100 and 250 iterations, largest ÷ smallest peak (≤ 1.2×): {} → {}."
           .format("met" if worst is not None and worst <= 1.5 else "not met", times(flat),
                   "met" if flat is not None and flat <= 1.2 else "not met"), ""]
    md += na_lines(res, EXP)
    if chartlib.HAVE_MPL and body:
        fig, ax = chartlib.plt.subplots(figsize=(8, 4.5))
        for s in subs:
            pts = [(n, res.med(EXP, s, iterations=n)) for n in marks]
            pts = [(n, v) for n, v in pts if v is not None]
            if pts:
                ax.plot([n for n, _ in pts], [v for _, v in pts], marker="o", label=s, color=chartlib.color(s))
        ax.set_xlabel("iterations (2 threads each)")
        ax.set_ylabel("peak RSS growth so far, MiB")
        ax.set_title("migrate (after mstress): peak RSS per iteration")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        chartlib.save(fig, outdir, "migrate.png", charts)
    note_ratio(EXP, "pk_alloc ÷ the better mimalloc, peak RSS, worst of 25/100/250 iterations", worst)
    note_ratio(EXP, "pk_alloc peak RSS, largest ÷ smallest of 25/100/250 iterations", flat)
    heads = []
    if worst is not None:
        heads.append(("migrate (after mstress)", "pk_alloc ÷ the better mimalloc, peak RSS, worst of 25/100/250 "
                      "iterations (target: ≤ 1.5×)", "–", times(worst), "met" if worst <= 1.5 else "not met"))
    if flat is not None:
        heads.append(("migrate (after mstress)", "pk_alloc peak RSS flat: largest ÷ smallest of 25/100/250 "
                      "iterations (target: ≤ 1.2×)", "–", times(flat), "met" if flat <= 1.2 else "not met"))
    return md, heads
