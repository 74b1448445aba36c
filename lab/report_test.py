#!/usr/bin/env python3
"""lab/report_test.py: verdicts of the report on fixed figures. The
typed-pool study's (labreport/studies/pool_pattern.py): its claim is a
ranking, the pool costs less than the general-purpose allocator, net of the
harness; a net cost is a difference of two minima, so a pool as cheap as
the empty loop can come out below zero: that is no measurable cost, the
claim holds, and no ratio is printed. realprog's (labreport/studies/
realprog.py): a workload is a win or a loss only where every repetition
agrees; the others are within the run's spread. Exit 0: passed."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labreport.common import Results  # noqa: E402
from labreport.studies.pool_pattern import pool_pattern  # noqa: E402
from labreport.studies.realprog import realprog  # noqa: E402


def run(nets):
    """The headline row for pk_pool's and glibc's nets per size."""
    rows = []
    for size, (pool, glibc) in nets.items():
        for subject, net in (("poolkit pk_pool", pool), ("glibc malloc", glibc)):
            rows.append({"subject": subject, "family": "c", "available": True, "median": 20.0,
                         "min": 20.0, "max": 20.0, "params": {"size": size}, "extra": {"net": net}})
    res = Results({"experiments": [{"name": "pool-pattern", "rows": rows}]})
    with tempfile.TemporaryDirectory() as out:  # its chart, where matplotlib is there
        _, head = pool_pattern(res, [], out)
    return head


def realprog_said(workloads):
    """realprog's headline on where poolkit wins and loses, for hooks workloads given as
    name: (poolkit's ms per repetition, mimalloc's)."""
    rows = []
    for w, (pk, mi) in workloads.items():
        for subject, ms in (("poolkit pk_alloc", pk), ("mimalloc", mi)):
            ratios = sorted(a / b for a, b in zip(pk, mi))
            rows.append({"subject": subject, "family": "c", "available": True,
                         "median": sorted(ms)[len(ms) // 2], "min": min(ms), "max": max(ms), "samples": ms,
                         "params": {"kind": "hooks", "workload": w},
                         "extra": {"vs_mimalloc": ratios[len(ratios) // 2] if subject != "mimalloc" else 1.0}})
    res = Results({"experiments": [{"name": "realprog", "rows": rows}]})
    with tempfile.TemporaryDirectory() as out:
        _, heads = realprog(res, [], out)
    return [h for h in heads if h[1].startswith("where poolkit wins and loses")][0][3]


def check(what, got, want):
    if got != want:
        print("FAILED: {}: {!r}, want {!r}".format(what, got, want))
        sys.exit(1)


def main():
    head = run({"small": (-0.4, 3.7), "medium": (2.5, 11.0), "big": (11.6, 76.0)})
    check("a pool net below zero: verdict", head[4], "holds")
    check("a pool net below zero: no ratio", head[3].split(" / ")[0],
          "pool's net -0.4 ns (none measurable) against 3.70 ns")
    check("the big ratio", head[3].split(" / ")[1], "6.55×")
    head = run({"small": (4.0, 3.7), "medium": (2.5, 11.0), "big": (11.6, 76.0)})
    check("a pool dearer than malloc: verdict", head[4], "does not hold")
    head = run({"small": (0.0, 3.7), "medium": (2.5, 11.0), "big": (80.0, 76.0)})
    check("a pool dearer than malloc at big: verdict", head[4], "does not hold")
    said = realprog_said({
        "slower": ([110, 104, 130, 99, 101], [100, 100, 100, 98, 100]),   # every repetition slower
        "faster": ([90, 80, 99, 70, 95], [100, 100, 100, 98, 100]),      # every one faster
        "noisy": ([140, 90, 101, 120, 99], [100, 100, 100, 98, 100]),    # a median of 1.02x, both ways
        "tied": ([100, 120, 130, 140, 150], [100, 100, 100, 100, 100]),  # one repetition equal
        "few": ([120, 130, 140], [100, 100, 100])})                      # too few to tell
    check("realprog: sides", said,
          "wins: hooks faster 0.9×; loses: hooks slower 1.04×; within the run's spread: "
          "hooks noisy 1.01× (0.9–1.40×), hooks tied 1.30× (1–1.50×), hooks few 1.30× (1.20–1.40×)")
    print("report_test: passed")


if __name__ == "__main__":
    main()
