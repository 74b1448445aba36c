#!/usr/bin/env python3
"""lab/report.py DIR/results.json: the lab's report, from pk-lab's results.

Writes, beside results.json: report.md (the machine line, a headline table
with one decisive ratio per study, one table and one finding per
experiment) and PNG charts drawn with matplotlib (the autorelease sweep,
hot-loop bars per allocator, the pattern's net cost per size, thread
scaling, common operations on a log scale, binary-trees, working sets
against N per free order, the steady state and many pools, peak RSS per
iteration of threads that come and go, larson's pace, large blocks). Every finding is
computed from the data; nothing here is a fixed number but the studies' own
published figures, which come from results.json too.

Without matplotlib (outside the project's .venv) it still writes report.md,
without charts, and says so.

The parts, by job: labreport/common.py (loading the results, the numbers,
tables), labreport/charts.py (the one plotting helper), labreport/studies/
(one module per experiment, each a section of the report). Each section
also records its headline ratio as a number (common.RATIOS), which
lab/compare.py (`pk-lab compare`) sets side by side for two runs.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labreport import charts as chartlib  # noqa: E402
from labreport.common import Results, machine_line, table  # noqa: E402
from labreport.studies.alloc_styles import alloc_styles  # noqa: E402
from labreport.studies.autorelease_sweep import autorelease_sweep  # noqa: E402
from labreport.studies.binary_trees import binary_trees  # noqa: E402
from labreport.studies.common_ops import common_ops  # noqa: E402
from labreport.studies.object_generation import object_generation  # noqa: E402
from labreport.studies.peers import peers  # noqa: E402
from labreport.studies.pool_pattern import pool_pattern  # noqa: E402
from labreport.studies.threads import threads  # noqa: E402
from labreport.studies.workset import workset  # noqa: E402
from labreport.studies.steady_state import steady_state  # noqa: E402
from labreport.studies.cache_scratch import cache_scratch  # noqa: E402
from labreport.studies.remote_batches import remote_batches  # noqa: E402
from labreport.studies.many_pools import many_pools  # noqa: E402
from labreport.studies.realprog import realprog  # noqa: E402
from labreport.studies.migrate import migrate  # noqa: E402
from labreport.studies.larson_pace import larson_pace  # noqa: E402
from labreport.studies.large import large  # noqa: E402
from labreport.studies.heap import heap  # noqa: E402
from labreport.studies.advise import advise  # noqa: E402


SECTIONS = [("autorelease-sweep", autorelease_sweep), ("alloc-styles", alloc_styles),
            ("common-ops", common_ops), ("object-generation", object_generation),
            ("pool-pattern", pool_pattern), ("peers", peers), ("threads", threads),
            ("binary-trees", binary_trees), ("workset", workset),
            ("steady-state", steady_state), ("cache-scratch", cache_scratch),
            ("remote-batches", remote_batches), ("many-pools", many_pools),
            ("realprog", realprog), ("migrate", migrate), ("larson-pace", larson_pace),
            ("large", large), ("heap", heap), ("advise", advise)]


def main(argv):
    if len(argv) != 2:
        print("usage: report.py DIR/results.json", file=sys.stderr)
        return 2
    path = argv[1]
    with open(path) as f:
        data = json.load(f)
    res = Results(data)
    outdir = os.path.dirname(os.path.abspath(path))
    charts, heads, body = [], [], []
    for name, fn in SECTIONS:
        if name not in res.exps:
            continue
        try:
            md, head = fn(res, charts, outdir)
        except Exception as e:  # one broken section must not lose the report
            md, head = ["## " + name, "", "(this section failed: {}: {})".format(type(e).__name__, e), ""], None
        body += md
        if isinstance(head, list):
            heads += head
        elif head:
            heads.append(head)
    out = ["# poolkit lab report", "",
           "**Machine:** " + machine_line(data), "",
           "**Run:** `{}` · {} scale · {} repetitions (median shown) · {} · {:.0f} s".format(
               data.get("command", "pk-lab run"), data.get("scale", "?"), data.get("reps", "?"),
               data.get("date", ""), data.get("duration_s", 0)), ""]
    out += ["## Headline", "",
            table(["study", "the ratio that decides it", "published", "here", "verdict"],
                  [list(h) for h in heads]), ""]
    if charts:
        out += ["## Charts", ""] + ["![{}]({})".format(c[:-4].replace("_", " "), c) for c in charts] + [""]
    elif not chartlib.HAVE_MPL:
        out += ["*(No charts: matplotlib is not available here ({}); run lab/run.sh, which "
                "installs it into the project's .venv.)*".format(chartlib.MPL_WHY), ""]
    out += body
    out += ["---", "Method: warm-up, then repetitions with every contender interleaved; median and "
            "[min, max]; escape barriers keep the work; per-operation figures net of the empty "
            "loop where marked. Data: `results.json` (every row names what ran: version and flags)."]
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write("\n".join(out) + "\n")
    print("report: {} ({} charts)".format(os.path.join(outdir, "report.md"), len(charts)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
