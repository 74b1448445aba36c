"""The report's section for realprog: real programs with each allocator, through the
libraries' own allocator hooks and under LD_PRELOAD, a table and a chart per workload,
and a plain statement of where poolkit wins and where it loses: only where every
repetition agrees, the rest being within the machine's run-to-run spread."""

import math

from labreport import charts as chartlib
from labreport.common import extra, fmt, note_ratio, table, value

EXP = "realprog"
PK = "poolkit pk_alloc"
ORDER = ["glibc malloc", "mimalloc", "mimalloc 3", "jemalloc", "tcmalloc", PK]
KINDS = (("hooks", "through the library's own allocator hook", 0.9),
         ("preload", "unchanged Debian programs under LD_PRELOAD", 1.0))


def _workloads(res, kind):
    seen = []
    for r in res.rows(EXP):
        w = r.get("params", {}).get("workload")
        if r.get("params", {}).get("kind") == kind and w not in seen:
            seen.append(w)
    return seen


def _same(res, kind, w):
    """True / False when the outputs were compared, None when not."""
    got = None
    for s in ORDER:
        r = res.find(EXP, s, kind=kind, workload=w)
        v = extra(r, "same_output")
        if v is None:
            continue
        got = (got is not False) and v == 1
    return got


def _better_mimalloc(res, kind, w, rss=False):
    """(subject, extra's suffix) of the workload's faster mimalloc (rss: the smaller peak RSS), or
    None: the one a target compares to (LAB.md: the faster of the two per workload)."""
    best = None
    for s, suffix in (("mimalloc", ""), ("mimalloc 3", "3")):
        r = res.find(EXP, s, kind=kind, workload=w)
        v = extra(r, "peak_rss_kb") if rss else value(r)
        if v is not None and (best is None or v < best[0]):
            best = (v, s, suffix)
    return best[1:] if best else None


def _vs(res, kind, w, subject, rss=False):
    """subject's median per-repetition ratio to the workload's faster (rss: smaller) mimalloc."""
    b = _better_mimalloc(res, kind, w, rss)
    if not b:
        return None
    return extra(res.find(EXP, subject, kind=kind, workload=w), ("rss_vs_mimalloc" if rss else "vs_mimalloc") + b[1])


# A workload counts as a win or a loss only where poolkit's time fell on the
# same side of the faster mimalloc's in every repetition, and there were at
# least this many (the default run's): a difference that is not there passes
# one way by chance once in 2 ** SIGN_REPS (a sign test). The rest lie within
# the run's spread.
SIGN_REPS = 5


def _rep_ratios(res, kind, w):
    """poolkit's time over the workload's faster mimalloc's in each repetition (the two rows'
    samples, in repetition order), or None."""
    b = _better_mimalloc(res, kind, w)
    pk, mi = res.find(EXP, PK, kind=kind, workload=w), res.find(EXP, b[0], kind=kind, workload=w) if b else None
    if value(pk) is None or value(mi) is None:
        return None
    a, c = pk.get("samples") or [], mi.get("samples") or []
    if len(a) != len(c) or not a or not all(isinstance(v, (int, float)) and v > 0 for v in a + c):
        return None
    return [x / y for x, y in zip(a, c)]


def _side(ratios):
    """'win', 'loss' or 'spread': where every repetition (at least SIGN_REPS) puts poolkit."""
    if not ratios or len(ratios) < SIGN_REPS:
        return "spread"
    if all(r < 1.0 for r in ratios):
        return "win"
    if all(r > 1.0 for r in ratios):
        return "loss"
    return "spread"


def _geomean(vals):
    vals = [v for v in vals if v]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def _chart(res, kind, w, charts, outdir):
    """Time and peak RSS of each allocator over the faster (smaller) mimalloc's, side by side."""
    subjects = [s for s in ORDER if value(res.find(EXP, s, kind=kind, workload=w))]
    if not subjects:
        return
    fig, ax = chartlib.plt.subplots(figsize=(6.4, 3.2))
    width = 0.38
    for i, s in enumerate(subjects):
        r = res.find(EXP, s, kind=kind, workload=w)
        t, m = _vs(res, kind, w, s), _vs(res, kind, w, s, rss=True)
        ax.bar(i - width / 2, t or 0, width, color=chartlib.color(s), label="time" if i == 0 else None)
        ax.bar(i + width / 2, m or 0, width, color=chartlib.color(s), alpha=0.45, hatch="//",
               label="peak RSS" if i == 0 else None)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xticks(range(len(subjects)))
    ax.set_xticklabels([s.replace("poolkit ", "") for s in subjects], fontsize=8)
    ax.set_ylabel("x the faster mimalloc (same repetition)")
    ax.set_title("realprog {}: {} (solid: time, hatched: peak RSS)".format(kind, w), fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    chartlib.save(fig, outdir, "realprog_{}_{}.png".format(kind, w), charts)


def realprog(res, charts, outdir):
    md = ["## realprog: does it matter in a real program?", "",
          "Each workload runs once per allocator in each repetition, the order rotating. "
          "**hooks**: SQLite, libxml2, jansson and expat given each allocator's functions through "
          "their own hooks (SQLITE_CONFIG_MALLOC, xmlMemSetup, json_set_alloc_funcs, "
          "XML_ParserCreate_MM), workloads written like their real use, timed in a forked child "
          "(peak RSS: the child's growth). **preload**: jq, xmllint, sqlite3, perl and python3 as "
          "Debian ships them, over generated inputs, with each allocator's own preload library "
          "(wall time from spawn to exit; peak RSS of the process). poolkit is its size-class "
          "front end (`pk_alloc`; `libpoolkit-malloc.so` under LD_PRELOAD). Cells: median ms and, "
          "in brackets, the median of the per-repetition ratios to the workload's faster mimalloc "
          "(Debian's 2 or PyPI's 3; for peak RSS, the smaller one's). *output*: every "
          "allocator's output hash equal to glibc's in every repetition.", ""]
    heads, wins, losses, mixed = [], [], [], []
    for kind, title, bound in KINDS:
        names = _workloads(res, kind)
        if not names:
            continue
        subjects = [s for s in ORDER if any(res.find(EXP, s, kind=kind, workload=w) for w in names)]
        body = []
        for w in names:
            cells = []
            for s in subjects:
                r = res.find(EXP, s, kind=kind, workload=w)
                if not r or not r.get("available"):
                    cells.append("failed" if r and r.get("failed") else "n/a")
                    continue
                cells.append("{} ({}×) · {} MiB".format(
                    fmt(value(r)), fmt(_vs(res, kind, w, s)),
                    fmt((extra(r, "peak_rss_kb") or 0) / 1024)))
            same = _same(res, kind, w)
            body.append([w] + cells + ["–" if same is None else "identical" if same else "**differs**"])
            t = _vs(res, kind, w, PK)
            if t is not None:
                reps = _rep_ratios(res, kind, w)
                side = _side(reps)
                label = "{} {} {}×".format(kind, w, fmt(t))
                if side == "spread" and reps:
                    label += " ({}–{}×)".format(fmt(min(reps)), fmt(max(reps)))
                {"win": wins, "loss": losses, "spread": mixed}[side].append(label)
            if chartlib.HAVE_MPL:
                _chart(res, kind, w, charts, outdir)
        md += ["### {}: {}".format(kind, title), "",
               table(["workload"] + subjects + ["output"], body), ""]
        for w in names:
            for s in subjects:
                r = res.find(EXP, s, kind=kind, workload=w)
                if r and not r.get("available") and (r.get("failed") or s in ("glibc malloc", PK)):
                    md.append("- {} / {}: {}: {}".format(w, s, "failed" if r.get("failed") else "n/a",
                                                           r.get("why", "")))
        md.append("")
        ratios = [_vs(res, kind, w, PK) for w in names]
        g = _geomean(ratios)
        note_ratio(EXP, "{}: poolkit / the faster mimalloc time, geometric mean".format(kind), g)
        rss = [_vs(res, kind, w, PK, rss=True) for w in names]
        rss = [v for v in rss if v is not None]
        same_all = [_same(res, kind, w) for w in names]
        if kind == "hooks":
            each = all(v is not None and v <= 0.9 for v in ratios) and ratios
            heads.append(("realprog hooks", "poolkit / the faster mimalloc time, geometric mean of {} workloads "
                          "(target ≤ 0.85, each ≤ 0.9)".format(len([v for v in ratios if v])), "–",
                          times_or_dash(g), "met" if g and g <= 0.85 and each else "not met"))
            heads.append(("realprog hooks", "poolkit / the smaller mimalloc peak RSS, worst workload (target ≤ 1.2)",
                          "–", times_or_dash(max(rss) if rss else None),
                          "met" if rss and max(rss) <= 1.2 else "not met"))
        else:
            heads.append(("realprog LD_PRELOAD", "poolkit / the faster mimalloc time, geometric mean of {} programs "
                          "(target ≤ 1.0), outputs identical".format(len([v for v in ratios if v])), "–",
                          "{}; outputs {}".format(times_or_dash(g), "identical" if all(
                              x is not False for x in same_all) else "DIFFER"),
                          "met" if g and g <= 1.0 and all(x is not False for x in same_all) else "not met"))
    if wins or losses or mixed:
        said = "wins: {}; loses: {}; within the run's spread: {}".format(
            ", ".join(wins) or "none", ", ".join(losses) or "none", ", ".join(mixed) or "none")
        heads.append(("realprog", "where poolkit wins and loses: its time over the faster mimalloc's per workload, "
                      "a win or a loss only where every repetition (at least {}) agrees".format(SIGN_REPS),
                      "–", said, "reported"))
        md += ["**Where poolkit wins and loses against the faster mimalloc** (time; the median of the "
               "per-repetition ratios, and where the repetitions disagree, their range): a win or a loss "
               "only where poolkit was faster, or slower, in every repetition (at least {}: a difference "
               "that is not there passes so by chance once in {}); elsewhere the difference is within this "
               "machine's run-to-run spread. {}.".format(SIGN_REPS, 2 ** SIGN_REPS, said[0].upper() + said[1:]), ""]
    return md, heads


def times_or_dash(v):
    return "–" if v is None else "{}×".format(fmt(v))
