#!/usr/bin/env python3
"""Checks a pk-lab results.json: its schema (lab/PROTOCOL.md) and that it is
complete: all nineteen experiments, every row with its fields, every contender
the lab lists present, either measured or "not available" with a reason (both
mimallocs: Debian's 2 and PyPI's 3), every point of the thread shapes
(steady-state, cache-scratch, remote-batches, many-pools) and of the
malloc-shaped edges (migrate, larson-pace, large) measured for every
contender that is available, with their extra figures; advise's demo
rows and prediction, and a row for each real program (measured, with its
overhead and top site's figures, or not available with a reason).
The hardened pools' experiments (peers, workset, steady-state, binary-trees, threads)
run pk_pool's hardened mode beside the default pool: each of its measured
rows must carry its ratio to the default pool in the same repetitions
(vs_pk_pool), and, in the second form below, pk-lab's output must print each
of the five hardened target lines with its figures and a verdict, and the target
lines of pool-pattern, migrate, larson-pace and large likewise.

    check_results.py DIR/results.json
    check_results.py --run PATH/TO/pk-lab --out DIR [pk-lab args...]

The second form first runs `pk-lab run --smoke --out DIR` (plus any extra
arguments), then checks DIR/results.json: the lab's smoke test (ctest
lab.smoke). Two runs are compared by `pk-lab compare` (lab/compare.py).
Standard library only. Exit status 0 when every check passes.
"""
import json
import math
import os
import subprocess
import sys

EXPERIMENTS = [
    "autorelease-sweep", "alloc-styles", "common-ops", "object-generation",
    "pool-pattern", "peers", "threads", "binary-trees", "workset",
    "steady-state", "cache-scratch", "remote-batches", "many-pools", "realprog",
    "migrate", "larson-pace", "large", "heap", "advise",
]
FAMILIES = {"poolkit", "peer", "published"}

# Contenders each experiment must show (measured, or not available with a reason).
EXPECTED = {
    "autorelease-sweep": ["poolkit pk_new", "GNUstep NSObject", "PKObject"],
    "alloc-styles": ["GNUstep NSObject", "PKObject", "glibc malloc", "poolkit pk_pool",
                     "poolkit pk_new"],
    "object-generation": ["GNUstep NSObject", "PKObject", "glibc malloc",
                          "C ring buffer (10,000 slots)", "C bunch (16 per malloc)",
                          "poolkit pk_pool", "poolkit pk_new"],
    "pool-pattern": ["empty loop", "glibc malloc", "jemalloc", "mimalloc", "mimalloc 3", "tcmalloc",
                     "Boost.Pool object_pool", "Boost.Pool pool", "naive free list", "poolkit pk_arena",
                     "poolkit pk_pool", "Zig GeneralPurposeAllocator", "Zig ArenaAllocator",
                     "Zig MemoryPool"],
    "peers": ["glibc malloc", "jemalloc", "mimalloc", "mimalloc 3", "tcmalloc", "Boost.Pool pool",
              "GLib g_slice", "APR pools", "talloc", "poolkit pk_arena", "poolkit pk_pool",
              "Zig GeneralPurposeAllocator", "Zig ArenaAllocator", "Zig MemoryPool"],
    "threads": ["glibc malloc", "jemalloc", "mimalloc", "mimalloc 3", "tcmalloc", "poolkit pk_pool"],
    "binary-trees": ["glibc malloc", "APR pools", "poolkit pk_pool", "poolkit pk_arena",
                     "poolkit pk_new"],
    "common-ops": [],
    "workset": ["empty loop", "glibc malloc", "jemalloc", "mimalloc", "mimalloc 3", "tcmalloc", "Boost.Pool pool",
                "Boost.Pool object_pool", "GLib g_slice", "APR pools", "talloc",
                "poolkit pk_arena", "poolkit pk_pool", "Zig MemoryPool"],
}
# realprog: every workload of each kind, for every allocator (measured or not available).
REALPROG = ["glibc malloc", "mimalloc", "mimalloc 3", "jemalloc", "tcmalloc", "poolkit pk_alloc"]
REALPROG_POINTS = [("hooks", w) for w in ("sqlite", "libxml2", "jansson", "expat")] + \
    [("preload", p) for p in ("jq", "xmllint", "sqlite3", "perl", "python3")]
EXPECTED["realprog"] = REALPROG
# pk_pool's hardened mode beside the default pool, in the experiments whose output
# prints a hardened target line ("target (hardened NAME): ...").
HARDENED = "poolkit pk_pool HARDENED"
HARDENED_TARGETS = ("peers", "workset", "steady-state", "binary-trees", "threads")
for _name in ("peers", "workset", "binary-trees", "threads"):
    EXPECTED[_name].append(HARDENED)
MALLOCS_AND_POOL = ["glibc malloc", "jemalloc", "mimalloc", "mimalloc 3", "tcmalloc", "poolkit pk_pool"]
SCRATCH_CONTROLS = ["control: side by side, no allocator", "control: 256 B apart, no allocator"]
for _name in ("steady-state", "cache-scratch", "remote-batches", "many-pools"):
    EXPECTED[_name] = MALLOCS_AND_POOL + (SCRATCH_CONTROLS if _name == "cache-scratch" else []) + \
        ([HARDENED] if _name in HARDENED_TARGETS else [])

# The thread shapes: the points each available contender must have
# (params that must match), and the extra figures each point must carry.
SHAPE_POINTS = {
    "steady-state": ([{"threads": 2, "live_per_thread": n, "sizes": m}
                      for n in (1000, 100000) for m in ("16-128 B", "64 B")],
                     ["mops_all_threads", "peak_rss_kb"]),
    "cache-scratch": ([{"threads": 2, "size": z} for z in (8, 16, 32, 64)],
                      ["span_ms", "concurrency", "overlapped_ns", "overlapped_at_once"]),
    "remote-batches": ([{"producers": p, "consumers": p, "size": 64} for p in (1, 2)],
                       ["mfrees_per_s", "peak_rss_kb"]),
    "many-pools": ([{"threads": t, "pools": 1000, "objects_per_pool": 10, "size": 64}
                    for t in (1, 2, 8)], ["ns_per_alloc", "peak_rss_kb"]),
}
# The malloc-shaped edges: realprog's allocators, every point measured for each
# one available, with its extra figures; and each experiment's target lines.
for _name in ("migrate", "larson-pace", "large"):
    EXPECTED[_name] = REALPROG
SHAPE_POINTS["migrate"] = ([{"iterations": n, "threads": 2} for n in (10, 25, 50, 100, 150, 200, 250)], ["ms"])
SHAPE_POINTS["larson-pace"] = ([{"handover": h, "lanes": 2, "live_per_lane": 5000}
                                for h in ("every generation", "none (control)")], ["peak_rss_kb"])
SHAPE_POINTS["large"] = ([{"slots": 20, "sizes": "5-25 MiB"}, {"slots": 64, "sizes": "64 KiB-8 MiB"}],
                         ["minor_faults", "peak_rss_kb"])
# Each experiment's own target lines ("target (NAME): ... -> met" or "-> not met"), how many.
TARGET_LINES = {"pool-pattern": 1, "migrate": 2, "larson-pace": 1, "large": 2, "heap": 2}
EXPECTED["heap"] = ["glibc malloc", "poolkit pk_heap destroy", "poolkit pk_heap reset", "mimalloc 3 heap",
                    "talloc", "APR pools"]
# advise: the demo's two rows and the prediction; a row per real program.
EXPECTED["advise"] = ["advise-demo (malloc)", "advise-demo (top advice applied)", "pk-lab advise prediction",
                      "pk-lab advise"]
ADVISE_PROGRAMS = ["jq", "xmllint", "sqlite3", "perl", "python3",
                   "sqlite-hook", "libxml2-hook", "jansson-hook", "expat-hook"]
ADVISE_EXTRAS = ["sample", "allocs", "run_ms", "sites_worth", "top_saving_ms", "top_saving_share"]

# Experiments that carry the study's published figures.
PUBLISHED = {"autorelease-sweep", "alloc-styles", "common-ops", "object-generation",
             "pool-pattern"}

COMMON_OPS = [
    "IMP-cached message send", "C++ virtual method call", "integer division",
    "Objective-C message send", "float division with int conversion",
    "floating-point division", "16-byte memcpy", "16-byte malloc/free",
    "NSInvocation message send", "NSObject alloc/init/release",
    "NSAutoreleasePool alloc/init/release", "NSButtonCell creation", "16 MB malloc/free",
    "read 16-byte file", "zero-second delayed perform", "NSButtonCell draw",
    "pthread create/join", "1 MB memcpy", "write 16-byte file", "write 16-byte file (atomic)",
    "process spawn", "read 16 MB file", "write 16 MB file", "write 16 MB file (atomic)",
    # poolkit's rows, next to the rows they replace
    "pk_pool alloc/free (16 B)", "pk_arena alloc (16 B)", "pk_new/pk_release",
    "pk_autorelease push/pop", "PKObject alloc/init/release",
]
# Rows of common-ops that come from pk-lab-objc (covered by its "not
# available" rows when it cannot run).
OBJC_OPS = {"IMP-cached message send", "Objective-C message send", "NSInvocation message send",
            "NSObject alloc/init/release", "NSAutoreleasePool alloc/init/release",
            "zero-second delayed perform", "PKObject alloc/init/release"}


class Checker:
    def __init__(self):
        self.failures = []
        self.passed = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failures.append(what)
        return ok


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check_row(c, exp, i, row):
    where = "%s row %d (%s)" % (exp, i, row.get("subject", "?"))
    for key in ("subject", "family", "median", "min", "max", "reps", "params", "available"):
        if not c.check(key in row, "%s: no field '%s'" % (where, key)):
            return
    c.check(isinstance(row["subject"], str) and row["subject"], "%s: empty subject" % where)
    c.check(row["family"] in FAMILIES, "%s: family '%s'" % (where, row["family"]))
    c.check(isinstance(row["params"], dict), "%s: params is not an object" % where)
    c.check(isinstance(row["reps"], int) and row["reps"] >= 0, "%s: bad reps" % where)
    c.check(isinstance(row["available"], bool), "%s: available is not a boolean" % where)
    if row["available"]:
        ok = all(is_num(row[k]) for k in ("median", "min", "max"))
        if c.check(ok, "%s: available but median/min/max not numbers" % where):
            c.check(row["min"] <= row["median"] <= row["max"],
                    "%s: not min <= median <= max" % where)
        if row["family"] == "published":
            c.check(row["reps"] == 0, "%s: published row with reps %s" % (where, row["reps"]))
        else:
            c.check(row["reps"] >= 1, "%s: measured row with no repetition" % where)
            c.check(isinstance(row.get("version"), str) and isinstance(row.get("flags"), str),
                    "%s: no version/flags (what ran)" % where)
    else:
        c.check(isinstance(row.get("why"), str) and row["why"].strip(),
                "%s: not available without a reason" % where)
        c.check(row["median"] is None, "%s: not available but has a median" % where)


def check_shape(c, name, rows, points, extras):
    """Every point of a thread shape, for every contender with a measured row:
    measured (a positive median), with its extra figures; poolkit's rows of
    many-pools carry poolkit's own account, resident within reserved."""
    rows = [r for r in rows if isinstance(r, dict)]
    for subject in EXPECTED[name]:
        mine = [r for r in rows if r.get("subject") == subject]
        if not any(r.get("available") for r in mine):
            continue
        for want in points:
            hit = [r for r in mine if all(r.get("params", {}).get(k) == v for k, v in want.items())]
            where = "%s: %s at %s" % (name, subject, want)
            if not c.check(len(hit) == 1, where + ": %d rows, not 1" % len(hit)):
                continue
            r = hit[0]
            if not c.check(r.get("available") and is_num(r.get("median")) and r["median"] > 0,
                           where + ": not measured"):
                continue
            extra = r.get("extra", {})
            need = extras
            if name == "many-pools" and subject == "poolkit pk_pool":
                need = need + ["pk_reserved_b", "pk_resident_b"]
            for k in need:
                c.check(is_num(extra.get(k)), where + ": no '%s'" % k)
            if name == "many-pools" and subject == "poolkit pk_pool" and \
                    is_num(extra.get("pk_reserved_b")) and is_num(extra.get("pk_resident_b")):
                c.check(0 < extra["pk_resident_b"] <= extra["pk_reserved_b"],
                        where + ": not 0 < resident <= reserved")


def check_hardened(c, name, rows):
    """Every measured row of pk_pool's hardened mode carries its ratio to the default pool."""
    for r in rows:
        if not isinstance(r, dict) or r.get("subject") != HARDENED or not r.get("available"):
            continue
        v = r.get("extra", {}).get("vs_pk_pool")
        c.check(is_num(v) and v > 0, "%s: %s at %s: no ratio to the default pool (vs_pk_pool)"
                % (name, HARDENED, r.get("params")))


def check_realprog(c, rows, output):
    """Every workload of each kind for every allocator (measured or not available); each
    measured row carries its peak RSS and an output identical to glibc's; pk-lab printed
    realprog's five target lines, each with a verdict."""
    rows = [r for r in rows if isinstance(r, dict)]
    for subject in REALPROG:
        for kind, w in REALPROG_POINTS:
            hit = [r for r in rows if r.get("subject") == subject and r.get("params") == {"kind": kind, "workload": w}]
            where = "realprog: %s / %s %s" % (subject, kind, w)
            if not c.check(len(hit) == 1, where + ": %d rows, not 1" % len(hit)) or not hit[0].get("available"):
                continue
            extra = hit[0].get("extra", {})
            c.check(is_num(extra.get("peak_rss_kb")), where + ": no peak_rss_kb")
            if "same_output" in extra:
                c.check(extra["same_output"] == 1, where + ": output differs from glibc's")
    if output is not None:
        lines = [ln for ln in output.splitlines() if "target (realprog, " in ln]
        c.check(len(lines) == 5, "realprog: %d target lines, not 5" % len(lines))
        for ln in lines:
            c.check(ln.rstrip().endswith(("-> met", "-> not met", "-> not measured")),
                    "realprog: target line without a verdict: %s" % ln.strip())


def check_advise(c, rows, output):
    """The demo measured with and without the advice (the applied one with its saving per
    repetition), and a row per real program: measured with its figures, or not available;
    pk-lab printed advise's target line with a verdict ("not measured" where advise cannot
    record: a sanitizer build)."""
    if output is not None:
        lines = [ln for ln in output.splitlines() if "target (advise): " in ln]
        if c.check(len(lines) == 1, "advise: %d target lines, not 1" % len(lines)):
            c.check(lines[0].rstrip().endswith(("-> met", "-> not met", "-> not measured"))
                    and "nan" not in lines[0], "advise: target line without a verdict: %s" % lines[0].strip())
    rows = [r for r in rows if isinstance(r, dict)]
    pooled = [r for r in rows if r.get("subject") == "advise-demo (top advice applied)" and r.get("available")]
    if c.check(len(pooled) == 1, "advise: the demo with the advice applied not measured"):
        c.check(is_num(pooled[0].get("extra", {}).get("saving_ms")), "advise: the demo's rows carry no saving_ms")
    for name in ADVISE_PROGRAMS:
        hit = [r for r in rows if r.get("subject") == "pk-lab advise" and r.get("params") == {"program": name}]
        if not c.check(len(hit) == 1, "advise: %s: %d rows, not 1" % (name, len(hit))) or not hit[0].get("available"):
            continue
        extra = hit[0].get("extra", {})
        for key in ADVISE_EXTRAS:
            c.check(is_num(extra.get(key)), "advise: %s: no %s" % (name, key))


def check_target_lines(c, names, output, unavailable=()):
    """The target lines pk-lab printed: the hardened one of each experiment that judges
    hardened pools ("target (hardened NAME): ...") and those of the experiments that print
    their own ("target (NAME): ..."), each with its figures and a verdict; "not measured"
    only in an experiment where a contender it expects was not available (a peer this
    machine lacks), and no figure printed as "nan"."""
    short = {exp for exp, _, _ in unavailable}
    heads = [(name, "target (hardened %s): " % name, 1) for name in HARDENED_TARGETS]
    heads += [(name, "target (%s): " % name, n) for name, n in TARGET_LINES.items()]
    for name, head, n in heads:
        if name not in names:
            continue
        lines = [ln for ln in output.splitlines() if head in ln]
        if c.check(len(lines) == n, "%s: %d lines '%s', not %d" % (name, len(lines), head.strip(), n)):
            for ln in lines:
                verdicts = ("-> met", "-> not met") + (("-> not measured",) if name in short else ())
                c.check(ln.rstrip().endswith(verdicts) and "nan" not in ln,
                        "%s: target line without its figures and verdict: %s" % (name, ln.strip()))


def check(path, output=None):
    c = Checker()
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        print("check_results: cannot read %s: %s" % (path, e))
        return 1
    machine = data.get("machine", {})
    for key in ("cpu", "cores", "os", "compiler"):
        c.check(key in machine and machine[key] not in ("", None), "machine: no '%s'" % key)
    exps = {e.get("name"): e for e in data.get("experiments", [])}
    missing = [name for name in EXPERIMENTS if name not in exps]
    c.check(not missing, "experiments missing: %s" % ", ".join(missing))
    unavailable = []
    for name in EXPERIMENTS:
        e = exps.get(name)
        if e is None:
            continue
        for key in ("title", "unit", "rows"):
            c.check(key in e, "%s: no '%s'" % (name, key))
        rows = e.get("rows", [])
        c.check(len(rows) > 0, "%s: no rows" % name)
        for i, row in enumerate(rows):
            if isinstance(row, dict):
                check_row(c, name, i, row)
            else:
                c.check(False, "%s row %d: not an object" % (name, i))
        subjects = {}
        for row in rows:
            if isinstance(row, dict):
                subjects.setdefault(row.get("subject"), []).append(row)
        for subject in EXPECTED[name]:
            have = subjects.get(subject)
            if c.check(bool(have), "%s: contender '%s' missing" % (name, subject)):
                if not any(r.get("available") for r in have):
                    unavailable.append((name, subject, have[0].get("why", "")))
        if name in PUBLISHED:
            c.check(any(r.get("family") == "published" for r in rows if isinstance(r, dict)),
                    "%s: no published rows" % name)
        measured = [r for r in rows if isinstance(r, dict) and r.get("family") != "published"
                    and r.get("available")]
        c.check(len(measured) > 0, "%s: nothing measured" % name)
        if name == "common-ops":
            ops = {r.get("params", {}).get("op") for r in rows if isinstance(r, dict)}
            objc_na = any(not r.get("available") and "op" not in r.get("params", {})
                          for r in rows if isinstance(r, dict))
            for op in COMMON_OPS:
                c.check(op in ops or (op in OBJC_OPS and objc_na),
                        "common-ops: row '%s' missing" % op)
    for name, (points, extras) in SHAPE_POINTS.items():
        if name in exps:
            check_shape(c, name, exps[name].get("rows", []), points, extras)
    for name in HARDENED_TARGETS:
        if name in exps:
            check_hardened(c, name, exps[name].get("rows", []))
    if "realprog" in exps:
        check_realprog(c, exps["realprog"].get("rows", []), output)
    if "advise" in exps:
        check_advise(c, exps["advise"].get("rows", []), output)
    if output is not None:
        check_target_lines(c, exps, output, unavailable)
    for exp, subject, why in unavailable:
        print("  not available: %s / %s: %s" % (exp, subject, why))
    for f in c.failures:
        print("  FAIL: %s" % f)
    print("check_results: %s: %d experiments, %d checks passed, %d failed"
          % (path, len(exps), c.passed, len(c.failures)))
    return 0 if not c.failures else 1


def main(argv):
    if len(argv) >= 2 and argv[1] == "--run":
        if len(argv) < 5 or argv[3] != "--out":
            print(__doc__)
            return 2
        lab, out, extra = argv[2], argv[4], argv[5:]
        cmd = [lab, "run", "--smoke", "--out", out] + extra
        print("check_results: running " + " ".join(cmd), flush=True)
        run = subprocess.run(cmd, stdout=subprocess.PIPE, universal_newlines=True)
        sys.stdout.write(run.stdout)
        sys.stdout.flush()
        if run.returncode != 0:
            print("check_results: pk-lab exited with status %d" % run.returncode)
            return 1
        return check(os.path.join(out, "results.json"), run.stdout)
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__)
        return 2
    return check(argv[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
