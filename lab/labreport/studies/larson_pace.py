"""The report's section for the larson-pace experiment (larson at its own pace)."""

from labreport import charts as chartlib
from labreport.common import extra, faster_mimalloc, fmt, na_lines, note_ratio, run_params, table, times

EXP = "larson-pace"
PK = "poolkit pk_alloc"
HAND = ["every generation", "none (control)"]


def larson_pace(res, charts, outdir):
    subs = res.subjects(EXP)
    p = run_params(res, EXP)
    md = ["## larson-pace: larson at its own pace", "",
          "{} lanes, each a live set of {} blocks of 8-1,000 B; a lane's thread replaces random blocks "
          "{} times, then hands the set to a new thread: {} generations a lane, a new thread every "
          "few milliseconds, so most frees are of blocks whose thread has exited. The control does "
          "the same replacements on one thread a lane. ns per replacement, both lanes over the wall "
          "time (lower is better); each run a process of its own.".format(
              fmt(p.get("lanes")), fmt(p.get("live_per_lane")), fmt(p.get("replacements_per_generation")),
              fmt(p.get("generations"))), ""]
    body = []
    for s in subs:
        rs = [res.find(EXP, s, handover=h) for h in HAND]
        if not any(r and r.get("available") for r in rs):
            continue
        cells = []
        for r in rs:
            cells.append("–" if not r or not r.get("available") else "{} ({} – {})".format(
                fmt(r["median"]), fmt(r["min"]), fmt(r["max"])))
        kib = extra(rs[0], "peak_rss_kb")
        body.append([s] + cells + [fmt(kib / 1024 if kib else None)])
    md += [table(["allocator", "hand-overs: ns", "control: ns", "peak RSS MiB"], body), ""]
    mi = faster_mimalloc(res, EXP, handover=HAND[0])
    pk = res.find(EXP, PK, handover=HAND[0])
    suffix = "3" if mi and mi["subject"] == "mimalloc 3" else ""
    v = extra(pk, "vs_mimalloc" + suffix) if mi else None
    md += ["**Target**: pk_alloc ÷ the faster mimalloc ({}) with hand-overs, median of the repetitions' "
           "ratios (≤ 1.0×): {} → {}.".format(mi["subject"] if mi else "–", times(v),
                                              "met" if v is not None and v <= 1.0 else "not met"), ""]
    md += na_lines(res, EXP)
    if chartlib.HAVE_MPL and body:
        shown = [s for s in subs if any(res.med(EXP, s, handover=h) for h in HAND)]
        values = {s: [res.med(EXP, s, handover=h) for h in HAND] for s in shown}
        chartlib.log_bars(values, ["hand-overs every generation", "control (no hand-over)"], 1.0,
                          "ns per replacement (log)", "larson-pace: larson at its own pace", (8, 4.5), 2,
                          outdir, "larson_pace.png", charts)
    note_ratio(EXP, "pk_alloc ÷ the faster mimalloc, hand-overs", v)
    if v is None:
        return md, None
    return md, ("larson-pace (larson at its own pace)", "pk_alloc ÷ the faster mimalloc, ns per replacement "
                "with hand-overs (target: ≤ 1.0×)", "–", times(v), "met" if v <= 1.0 else "not met")
