"""The report's section for the advise experiment: pk-lab advise on a demo
(its predicted saving against the measured one) and on the real programs
(each one's top site, from the reports under advise/)."""

import json
import os

from labreport.common import extra, fmt, na_lines, note_ratio, table, value

EXP = "advise"
DEMO_MALLOC = "advise-demo (malloc)"
DEMO_POOLED = "advise-demo (top advice applied)"
PREDICTION = "pk-lab advise prediction"
ADVISE = "pk-lab advise"


def program_summary(outdir, name):
    """The summary advise.py wrote for a program, or None."""
    try:
        with open(os.path.join(outdir, "advise", name, "advise.json")) as f:
            return json.load(f).get("summary")
    except (OSError, ValueError):
        return None


def advise(res, charts, outdir):
    m, p, pred = res.find(EXP, DEMO_MALLOC), res.find(EXP, DEMO_POOLED), res.find(EXP, PREDICTION)
    measured, predicted = extra(p, "saving_ms"), value(pred)
    requests = m["params"].get("requests") if m else None
    md = ["## advise: what a program's own sites would gain", "",
          "`pk-lab advise -- PROGRAM` records where a program allocates (`libpoolkit-record.so`), classifies "
          "each site and prices the style it fits with this machine's costs (`pk-lab advise-costs`); "
          "docs/advise.md says how to read its report. Here it runs on a demo, `examples/advise_demo.c` "
          "({} requests, written with malloc), and on realprog's programs. The demo's top advice "
          "(its token site from a pk_pool with PK_POOL_LOCAL) is applied in `advise-demo-pooled`; both run "
          "in every repetition, alternating, and the measured saving is the median of the repetitions' "
          "differences. Reports: `advise/demo/advise.md` and `advise/PROGRAM/advise.md`.".format(fmt(requests)),
          ""]
    body = []
    for r in (m, p):
        if value(r):
            body.append([r["subject"], "{} ({} – {})".format(fmt(r["median"]), fmt(r["min"]), fmt(r["max"]))])
    md += [table(["demo", "ms per run"], body), ""]
    ratio = measured / predicted if measured is not None and predicted else None
    met = ratio is not None and abs(ratio - 1) <= 0.3
    md += ["Saving at the token site: predicted **{} ms** (advise, recording overhead {}x, sampling 1 in {}), "
           "measured **{} ms**; measured ÷ predicted {}.".format(
               fmt(predicted), fmt(extra(pred, "overhead")), fmt(extra(pred, "sample")), fmt(measured), fmt(ratio)),
           "", "**Target**: the measured saving within 30% of the predicted → {}.".format(
               "met" if met else "not met"), ""]
    rows = []
    for r in res.rows(EXP, subject=ADVISE):
        name = r["params"].get("program")
        s = program_summary(outdir, name) if r.get("available") else None
        if not s:
            continue
        top = (s.get("top") or [{}])[0]
        saving = "nothing to gain" if top.get("advice") == "leave" or top.get("saving_ms") is None else \
            "{} ms ({:.1f}% of the run)".format(fmt(top["saving_ms"]), 100 * (top.get("saving_share") or 0))
        rows.append([name, "{}x".format(fmt(value(r))), fmt(extra(r, "sample")), fmt(extra(r, "allocs")),
                     fmt(extra(r, "run_ms")), top.get("site", "-"), top.get("advice", "-"), saving])
    md += [table(["program", "recording overhead", "sampling 1 in", "allocations", "run ms", "top site", "advice",
                  "predicted saving"], rows), ""]
    md += na_lines(res, EXP)
    note_ratio(EXP, "measured ÷ predicted saving (demo)", ratio)
    if ratio is None:
        return md, None
    return md, ("advise (demo)", "measured ÷ predicted saving (within 30%)", "–", fmt(ratio),
                "met" if met else "not met")
