#!/usr/bin/env python3
"""lab/compare.py OLD NEW: two lab runs side by side (results.json files or their folders).

What `pk-lab compare OLD NEW` runs. For every ratio the lab's report decides
a study by (lab/report.py records them as numbers), it prints the old and the
new value, the change, and whether the change exceeds the run-to-run spread:
each ratio's range over the repetitions ([min, max] of both rows it divides)
in the old run and in the new one. Ranges that do not overlap: the change is
real ("beyond the spread"); ranges that overlap: it is not told from noise.
A ratio recorded without a range (one made of several rows, or of published
figures) is compared with a fixed threshold of 10% instead, and says so.
Two runs of one machine check repeatability; two machines, two compilers or
two poolkit versions compare like for like (the machine lines are printed).

Exit status 0, or 2 on bad arguments or unreadable files."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (the sections that compute the ratios)
from labreport import common  # noqa: E402


THRESHOLD = 0.10


def ratios_of(path):
    if os.path.isdir(path):
        path = os.path.join(path, "results.json")
    with open(path) as f:
        data = json.load(f)
    res = report.Results(data)
    report.chartlib.HAVE_MPL = False  # numbers only: no charts
    common.RATIOS.clear()
    for name, fn in report.SECTIONS:
        if name in res.exps:
            try:
                fn(res, [], os.path.dirname(os.path.abspath(path)))
            except Exception as e:  # one broken section must not lose the rest
                print("compare: section {} failed on {}: {}".format(name, path, e), file=sys.stderr)
    out = {}
    for study, label, value, rng in common.RATIOS:
        out.setdefault((study, label), (value, rng))
    return data, out


def fmt(v):
    return common.fmt(v) if v is not None else "–"


def cell(value, rng):
    return "{}{}".format(fmt(value), " [{}–{}]".format(fmt(rng[0]), fmt(rng[1])) if rng else "")


def judge(old, new):
    (ov, orng), (nv, nrng) = old, new
    if orng and nrng:
        apart = orng[1] < nrng[0] or nrng[1] < orng[0]
        return "beyond the spread" if apart else "within the spread"
    return ("over 10%" if abs(nv / ov - 1) > THRESHOLD else "within 10%") + " (no range)"


def main(argv):
    if len(argv) != 3:
        print("usage: compare.py OLD/results.json NEW/results.json", file=sys.stderr)
        return 2
    try:
        old_data, old = ratios_of(argv[1])
        new_data, new = ratios_of(argv[2])
    except (OSError, ValueError) as e:
        print("compare: {}".format(e), file=sys.stderr)
        return 2
    print("old: {}  ({}, {} repetitions)".format(argv[1], old_data.get("date", "?"), old_data.get("reps", "?")))
    print("     {}".format(report.machine_line(old_data)))
    print("new: {}  ({}, {} repetitions)".format(argv[2], new_data.get("date", "?"), new_data.get("reps", "?")))
    print("     {}".format(report.machine_line(new_data)))
    print()
    rows, noisy, changed = [], 0, 0
    for k in list(old) + [k for k in new if k not in old]:
        study, label = k
        if k not in old or k not in new:
            rows.append((study, label, cell(*old[k]) if k in old else "–",
                         cell(*new[k]) if k in new else "–", "", "only in one run"))
            continue
        change = new[k][0] / old[k][0] - 1 if old[k][0] else float("nan")
        verdict = judge(old[k], new[k])
        if abs(change) > THRESHOLD:
            changed += 1
        if "beyond" in verdict or "over" in verdict:
            noisy += 1
        rows.append((study, label, cell(*old[k]), cell(*new[k]), "{:+.1f}%".format(change * 100), verdict))
    w = [max(len(str(r[i])) for r in rows + [("study", "ratio", "old", "new", "change", "")]) for i in range(6)]
    head = ("study", "ratio", "old", "new", "change", "")
    print("  ".join(str(h).ljust(w[i]) for i, h in enumerate(head)).rstrip())
    for r in rows:
        print("  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)).rstrip())
    print()
    print("{} ratios; {} changed by more than 10%; {} beyond the run-to-run spread (or over 10% "
          "where no spread was recorded)".format(len(rows), changed, noisy))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
