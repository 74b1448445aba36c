#!/usr/bin/python3
"""Runs every case of the misuse program under an allocator and sorts what
became of each.

Each case (`misuse list` names them) runs in a child of its own with a time
limit, preloaded through an allocator's malloc library, and ends one way:

  report     stopped (a signal or a nonzero exit) with a message on stderr:
             the allocator's, since the program writes nothing there (under
             poolkit, one that starts "poolkit:")
  fault      stopped with no such message (a SIGSEGV, mostly)
  held       a property case whose property held (PROPERTY-HELD)
  unnoticed  the program went on past the misuse (UNNOTICED), or a property
             case whose property did not hold (PROPERTY-BROKEN)
  hang       the time limit ran out
  error      anything else (SETUP-FAILED, an exit 0 with no line)
A hang or an error under poolkit fails the run, whatever the expectations;
under another allocator it is that allocator's and only listed.

"Caught" is report, fault or held: the program was stopped before it could
go on unnoticed, or the property held.

  run.py --program build/tests/misuse --preload build/libpoolkit-malloc.so \\
         --mode default --mode hardened --mode debug [--expected FILE] [-v]
  run.py --program build/tests/misuse --peer all      (glibc and what else is installed)

With --expected, each mode's outcomes are checked against the file's: a case
expected caught that is not, or a report that became a fault, a hang or an
error fails the run (exit 1); a case caught that was expected unnoticed, or
another change, is listed so that the file can be raised with
--update-expected, which rewrites the lines of the modes run.
Python 3's standard library only.
"""

import argparse
import concurrent.futures
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time

OUTCOMES = ("report", "fault", "held", "unnoticed", "hang", "error")
CAUGHT = ("report", "fault", "held")
# An expectation that takes a report or a fault alike: for a case whose
# message depends on where the system placed a mapping (a write a whole MiB
# before a block lands beside it or in nothing of the allocator's).
EITHER = "caught"

# The environment of each poolkit mode.
MODES = {
    "default": {},
    "hardened": {"POOLKIT_HARDENED": "1"},
    "debug": {"POOLKIT_DEBUG": "1"},
}

# Other allocators, by their Debian file names, for --peer.
PEERS = {
    "glibc": None,
    "jemalloc": "libjemalloc.so.2",
    "mimalloc": "libmimalloc.so.2",
    "tcmalloc": "libtcmalloc_minimal.so.4",
}
LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
            "/usr/local/lib")


class Run:
    """One allocator in one configuration: a row of the table."""

    def __init__(self, label, preload, env, mode=None):
        self.label, self.preload, self.env, self.mode = label, preload, env, mode
        # What a report must say: poolkit's start so; another allocator's, anything.
        self.marker = "poolkit:" if mode else ""
        self.results = {}  # case id -> dict(outcome, status, stderr, seconds)


def list_cases(program):
    out = subprocess.run([program, "list"], check=True, capture_output=True, text=True).stdout
    cases = []
    for line in out.splitlines():
        kind, size = line.split()
        cases.append((kind, size))
    return cases


def case_id(kind, size):
    return f"{kind}/{size}"


def child_env(run):
    """The caller's environment without any allocator settings, plus the run's."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("POOLKIT_", "MALLOC_", "GLIBC_TUNABLES", "LD_PRELOAD",
                                "MIMALLOC_", "JE_MALLOC_CONF", "MALLOC_CONF", "TCMALLOC_"))}
    env.update(run.env)
    if run.preload:
        env["LD_PRELOAD"] = run.preload
    return env


def classify(returncode, stdout, stderr, marker):
    lines = stdout.split()
    if "PROPERTY-HELD" in lines:
        return "held"
    if "PROPERTY-BROKEN" in lines or "UNNOTICED" in lines:
        return "unnoticed"
    if "SETUP-FAILED" in lines:
        return "error"
    if returncode == 0:
        return "error"
    return "report" if stderr.strip() and marker in stderr else "fault"


def run_case(program, run, kind, size, timeout):
    start = time.monotonic()
    child = subprocess.Popen([program, kind, size], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=child_env(run), start_new_session=True)
    try:
        out, err = child.communicate(timeout=timeout)
        outcome = classify(child.returncode, out.decode(errors="replace"),
                           err.decode(errors="replace"), run.marker)
        status = child.returncode
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        outcome, status = "hang", None
    seconds = time.monotonic() - start
    if status is not None and status < 0:
        status = signal.Signals(-status).name
    return {"outcome": outcome, "status": status, "seconds": round(seconds, 3),
            "stderr": err.decode(errors="replace").strip()}


def run_all(program, runs, cases, jobs, timeout):
    # No core files from the hundreds of aborts and faults.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_case, program, run, kind, size, timeout): (run, case_id(kind, size))
                   for run in runs for kind, size in cases}
        for future in concurrent.futures.as_completed(futures):
            run, cid = futures[future]
            run.results[cid] = future.result()


def counts(run):
    c = {o: 0 for o in OUTCOMES}
    for r in run.results.values():
        c[r["outcome"]] += 1
    c["caught"] = sum(c[o] for o in CAUGHT)
    return c


def print_table(runs, total):
    print(f"| allocator ({total} cases) | stopped with a report | faulted with no message "
          "| property held | unnoticed | caught | hang or error |")
    print("|---|---|---|---|---|---|---|")
    for run in runs:
        c = counts(run)
        print(f"| {run.label} | {c['report']} | {c['fault']} | {c['held']} | {c['unnoticed']} "
              f"| {c['caught']} | {c['hang'] + c['error']} |")


def print_detail(run, cases):
    print(f"\n{run.label}:")
    for kind, size in cases:
        cid = case_id(kind, size)
        r = run.results[cid]
        first = r["stderr"].splitlines()[0][:100] if r["stderr"] else ""
        print(f"  {cid:34} {r['outcome']:9} {str(r['status']):8} {r['seconds']:6.2f}s  {first}")


def print_uncaught(run, cases):
    """The cases not caught, a kind with its sizes: 'underflow-1 (8, 4096)'."""
    missed = {}
    for kind, size in cases:
        if run.results[case_id(kind, size)]["outcome"] not in CAUGHT:
            missed.setdefault(kind, []).append(size)
    words = [kind if sizes == ["0"] else f"{kind} ({', '.join(sizes)})" for kind, sizes in missed.items()]
    count = sum(len(sizes) for sizes in missed.values())
    print(f"{run.label}: not caught ({count}): {'; '.join(words) if words else 'none'}")


# ---- The expectations file ------------------------------------------------------

def read_expected(path):
    """{mode: {case id: outcome}} from lines 'MODE CASE OUTCOME'."""
    expected = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 3 or parts[2] not in OUTCOMES[:4] + (EITHER,):
                sys.exit(f"{path}:{number}: want 'MODE CASE OUTCOME' with an outcome of "
                         f"{', '.join(OUTCOMES[:4] + (EITHER,))}: {line}")
            expected.setdefault(parts[0], {})[parts[1]] = parts[2]
    return expected


def write_expected(path, runs, cases):
    """Rewrites the lines of the modes of runs; keeps the header and other modes' lines."""
    header, kept = [], []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.startswith("#") and not kept:
                    header.append(line)
                elif line.strip() and not line.startswith("#"):
                    kept.append(line)
    modes = {run.mode for run in runs}
    either = {tuple(line.split()[:2]) for line in kept if line.split()[2] == EITHER}
    kept = [line for line in kept if line.split()[0] not in modes]
    for run in runs:
        for k, s in cases:
            got = run.results[case_id(k, s)]["outcome"]
            if (run.mode, case_id(k, s)) in either and got in ("report", "fault"):
                got = EITHER
            kept.append(f"{run.mode} {case_id(k, s)} {got}\n")
    order = list(MODES)
    kept.sort(key=lambda line: order.index(line.split()[0]) if line.split()[0] in order else 99)
    with open(path, "w") as f:
        f.writelines(header + kept)


def check(run, cases, expected):
    """The failures of run against its mode's expectations, and the notes."""
    failures, notes = [], []
    want = expected.get(run.mode)
    if want is None:
        return [f"{run.label}: the expectations have no lines for mode '{run.mode}'"], notes
    ids = [case_id(k, s) for k, s in cases]
    for cid in sorted(set(want) - set(ids)):
        failures.append(f"{run.label}: {cid} is expected but the program has no such case")
    for cid in ids:
        got = run.results[cid]["outcome"]
        exp = want.get(cid)
        if got in ("hang", "error"):
            failures.append(f"{run.label}: {cid}: {got} ({run.results[cid]['status']})")
        elif exp is None:
            failures.append(f"{run.label}: {cid} has no expectation (now {got})")
        elif exp == EITHER:
            if got not in ("report", "fault"):
                failures.append(f"{run.label}: {cid} expected a report or a fault, now {got}")
        elif exp in CAUGHT and got not in CAUGHT:
            failures.append(f"{run.label}: {cid} expected {exp}, now {got}: no longer caught")
        elif exp == "report" and got == "fault":
            failures.append(f"{run.label}: {cid} expected report, now fault: the message is gone")
        elif exp not in CAUGHT and got in CAUGHT:
            notes.append(f"{run.label}: {cid} newly caught: {got} (expected {exp})")
        elif exp != got:
            notes.append(f"{run.label}: {cid} changed: {exp} -> {got}")
    return failures, notes


# ---- Peers ------------------------------------------------------------------------

def find_library(name):
    for d in LIB_DIRS:
        path = os.path.join(d, name)
        if os.path.exists(path):
            return path
    return None


def package_version(path):
    """The Debian package's version of a file, or '' where dpkg cannot tell."""
    try:
        pkg = subprocess.run(["dpkg-query", "-S", os.path.realpath(path)], capture_output=True,
                             text=True).stdout.split(":")[0]
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                              text=True).stdout.strip() if pkg else ""
    except OSError:
        return ""


def peer_runs(names):
    runs = []
    for name in (PEERS if "all" in names else names):
        if name not in PEERS:
            sys.exit(f"run.py: no peer '{name}' (one of {', '.join(PEERS)}, or all)")
        if PEERS[name] is None:
            version = os.confstr("CS_GNU_LIBC_VERSION") or "glibc"
            runs.append(Run(version, None, {}))
            continue
        path = find_library(PEERS[name])
        if path is None:
            if "all" not in names:
                sys.exit(f"run.py: {PEERS[name]} is not installed")
            continue
        version = package_version(path)
        runs.append(Run(f"{name} {version}".strip(), path, {}))
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--program", required=True, help="the misuse program (build/tests/misuse)")
    ap.add_argument("--preload", help="libpoolkit-malloc.so, for --mode")
    ap.add_argument("--mode", action="append", default=[], choices=list(MODES),
                    help="a poolkit mode to run (repeatable)")
    ap.add_argument("--peer", action="append", default=[],
                    help=f"another allocator ({', '.join(PEERS)}, or all that are installed)")
    ap.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                    help="one more variable for every run (repeatable), e.g. POOLKIT_FAULT_HANDLER=1")
    ap.add_argument("--expected", help="the expectations file to check the modes against")
    ap.add_argument("--update-expected", action="store_true",
                    help="rewrite the expectations of the modes run with this run's outcomes")
    ap.add_argument("--cases", help="only the cases whose KIND/SIZE matches this regex")
    ap.add_argument("--json", help="write every outcome here")
    ap.add_argument("--timeout", type=float, default=10, help="seconds a case may run (10)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("-v", "--verbose", action="store_true", help="every case's outcome")
    args = ap.parse_args()

    if args.mode and not args.preload:
        ap.error("--mode needs --preload")
    if args.update_expected and not (args.expected and args.mode):
        ap.error("--update-expected needs --expected and --mode")
    if args.update_expected and args.cases:
        ap.error("--update-expected runs every case: leave out --cases")
    if args.env and args.expected:
        ap.error("--env changes what the expectations are about: run it without --expected")
    program = os.path.abspath(args.program)
    runs = [Run(f"poolkit {m}", os.path.abspath(args.preload), MODES[m], m) for m in args.mode]
    runs += peer_runs(args.peer)
    extra = dict(v.split("=", 1) for v in args.env)
    for run in runs:
        run.env = {**run.env, **extra}
        if extra:
            run.label += " " + " ".join(args.env)
    if not runs:
        ap.error("nothing to run: give --mode or --peer")

    cases = list_cases(program)
    if args.cases:
        cases = [(k, s) for k, s in cases if re.search(args.cases, case_id(k, s))]
    start = time.monotonic()
    run_all(program, runs, cases, args.jobs, args.timeout)
    took = time.monotonic() - start

    print(f"# {sys.argv[0]} {' '.join(sys.argv[1:])}")
    print(f"# {len(cases)} cases, {args.timeout:g} s limit each, {args.jobs} at a time, {took:.1f} s")
    print_table(runs, len(cases))
    print()
    for run in runs:
        print_uncaught(run, cases)
    if args.verbose:
        for run in runs:
            print_detail(run, cases)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"allocator": r.label, "preload": r.preload, "env": r.env, "counts": counts(r),
                        "cases": r.results} for r in runs], f, indent=1, sort_keys=True)

    # A hang or an error of poolkit's fails the run; another allocator's is
    # its own (jemalloc 5.3 spins on some double frees) and only listed.
    failed = False
    for run in runs:
        for cid, r in sorted(run.results.items()):
            if r["outcome"] in ("hang", "error"):
                failed = failed or run.mode is not None
                if not args.expected or run.mode is None:
                    word = "FAIL" if run.mode else "NOTE"
                    print(f"{word} {run.label}: {cid}: {r['outcome']} ({r['status']}) {r['stderr'][:200]}")
    if args.expected and args.update_expected:
        if failed:
            sys.exit("run.py: not updating the expectations: a case hung or failed to run")
        write_expected(args.expected, [r for r in runs if r.mode], cases)
        print(f"\n{args.expected}: the lines of {', '.join(args.mode)} rewritten from this run")
    elif args.expected:
        expected = read_expected(args.expected)
        for run in runs:
            if run.mode is None:
                continue
            if args.cases:
                expected.setdefault(run.mode, {})
                expected[run.mode] = {c: o for c, o in expected[run.mode].items()
                                      if re.search(args.cases, c)}
            failures, notes = check(run, cases, expected)
            for line in notes:
                print(f"NOTE {line}")
            for line in failures:
                print(f"FAIL {line}")
            failed = failed or bool(failures)
            if notes:
                print(f"(raise the expectations: {sys.argv[0]} --program ... --preload ... "
                      f"--mode {run.mode} --expected {args.expected} --update-expected)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
