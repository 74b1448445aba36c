#!/usr/bin/env python3
"""lab/report_test.py: the typed-pool study's verdict (labreport/studies/
pool_pattern.py) on fixed figures. The study's claim is a ranking: the
pool costs less than the general-purpose allocator, net of the harness. A
net cost is a difference of two minima, so a pool as cheap as the empty
loop can come out below zero: that is no measurable cost, the claim holds,
and no ratio is printed. Exit 0: passed."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labreport.common import Results  # noqa: E402
from labreport.studies.pool_pattern import pool_pattern  # noqa: E402


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
    print("report_test: passed")


if __name__ == "__main__":
    main()
