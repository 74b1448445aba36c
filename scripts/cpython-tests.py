#!/usr/bin/env python3
"""CPython's own regression tests under libpoolkit-malloc.so.

Debian's python3 runs tests from its package libpython3.11-testsuite with
PYTHONMALLOC=malloc, so that every Python object comes from malloc, three
times: without the preload (the reference), preloaded, and preloaded with
POOLKIT_HARDENED=1. A test case that fails, errs or crashes under the
preload and passes in the reference is poolkit's, and fails this script;
one that fails in the reference too is the machine's, and is listed only.

    scripts/cpython-tests.py LIB            the subset (make test's cpython stage)
    scripts/cpython-tests.py LIB --all      the whole suite (several hours on 2 cores)

The subset is the tests that stress what a malloc replacement can change:
signals and crashes (faulthandler, the crashing workers of
concurrent.futures, regrtest's own crash detection, signal, subprocess),
threads (threading), object lifetime and the collector (gc, weakref,
tracemalloc), and the containers and serializers that allocate most
(dict, set, list, bytes, deque, json, pickle, re, mmap).

A case that fails only under poolkit is run again alone, in the same mode,
up to RERUNS times: CPython's signal and thread stress tests race with the
scheduler (test_signal's StressTest counts the signals that arrive while
another thread changes the handler, and fails when none arrived), and an
allocator's speed moves that race. A case that passes on a rerun is listed
as flaky, with its first failure, and not counted; one that fails every
time counts.

CPython itself reads freed memory in a few places. glibc leaves a freed
block as it was, so such a read goes unseen; POOLKIT_HARDENED=1 zeroes it, as
CPython's debug build fills it with 0xDD, and the read can crash.
FREED_MEMORY_READERS names each such case with its CPython issue; in those
modes a crash of that case is listed, not counted. Anything else it prints
(a poolkit report, a wrong result) still counts. Every case counted is
printed with its failure, so a failure in a fresh machine's log can be read
without rerunning it.

Options: --jobs N (regrtest's -j, default 2), --modes reference,default,hardened,
--timeout S (regrtest's per-file limit, default 900), --keep DIR (logs and
junit files). Exit status: 0 when nothing fails only under poolkit.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

PYTHON = "/usr/bin/python3"  # Debian's: its test package matches it
PACKAGE = "libpython3.11-testsuite"

SUBSET = [
    "test_faulthandler", "test_regrtest", "test_signal", "test_subprocess", "test_threading",
    "test_gc", "test_weakref", "test_tracemalloc", "test_dict", "test_set", "test_list",
    "test_bytes", "test_deque", "test_json", "test_pickle", "test_re", "test_mmap",
]
# Its deadlock tests only (workers that crash on purpose, 2 s); the rest of
# the file is two minutes of waiting on process pools.
FUTURES = ("test_concurrent_futures", "*DeadlockTest*")

# Case id: (modes, why). Each is a CPython bug, not a poolkit one: the crash
# comes from CPython reading memory it freed, which a poisoning allocator
# (CPython's own debug build included) turns into a fault.
FREED_MEMORY_READERS = {
    "test.test_threading.ThreadJoinOnShutdown.test_4_daemon_threads": (
        ("hardened",),
        "a daemon thread waking in take_gil reads its thread state, which Py_Finalize "
        "freed (CPython gh-110052: the same crash under its debug build's 0xDD fill)"),
}
# What a crash of the child looks like in the case's failure, as opposed
# to a report the allocator printed.
CRASH = re.compile(r"Segmentation fault|return code is -11|Bus error|return code is -7")

MODES = {
    "reference": {},
    "default": {"LD_PRELOAD": None},
    "hardened": {"LD_PRELOAD": None, "POOLKIT_HARDENED": "1"},
}

FILE_RESULT = re.compile(r"\] (test_[\w.]+) (passed|failed|crashed|skipped|timed out|"
                         r"resource denied|interrupted|ran no tests|env changed)?")


def testsuite_present():
    r = subprocess.run([PYTHON, "-c", "import test.libregrtest"], capture_output=True)
    return r.returncode == 0


def run_regrtest(env, args, xml_path, log, timeout):
    cmd = [PYTHON, "-m", "test", "--junit-xml", xml_path, "--timeout", str(timeout)] + args
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors="replace")
    log.write(r.stdout)
    files = {}
    for m in FILE_RESULT.finditer(r.stdout):
        files[m.group(1)] = m.group(2) or "failed"
    return files


def cases(xml_path, texts):
    """{case id: 'ok' | 'failure' | 'error' | 'skipped'} from a junit file;
    the failure's text of each failing case goes to texts."""
    out = {}
    if not os.path.exists(xml_path):
        return out
    for tc in ET.parse(xml_path).getroot().iter("testcase"):
        cid = tc.get("classname", "") + "." + tc.get("name", "")
        state = "ok"
        for child in tc:
            if child.tag in ("failure", "error", "skipped"):
                state = child.tag
                if child.tag != "skipped":
                    texts[cid] = "\n".join(t for t in (child.text, tc.findtext("system-err")) if t)
        out[cid] = state
    return out


def excused(mode, cid, text):
    """Why a failure of cid in mode is CPython's, or None."""
    modes, why = FREED_MEMORY_READERS.get(cid.lstrip("."), ((), None))  # ids start with the empty class name
    if mode in modes and CRASH.search(text) and "poolkit" not in text:
        return why
    return None


def show(text, lines=25):
    """The end of a failure's text, indented, where the cause is."""
    tail = text.rstrip().splitlines()[-lines:]
    return "".join("    | %s\n" % l for l in tail)


def mode_env(mode, lib):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    for k in [k for k in env if k.startswith("POOLKIT_")]:
        env.pop(k)
    env["PYTHONMALLOC"] = "malloc"
    for k, v in MODES[mode].items():
        env[k] = lib if v is None else v
    return env


def run_mode(mode, lib, tests, futures, jobs, timeout, work):
    env = mode_env(mode, lib)
    files, got, texts = {}, {}, {}
    with open(os.path.join(work, mode + ".log"), "w") as log:
        runs = [(tests, [])]  # no names: the whole suite
        if futures:
            runs.append(([FUTURES[0]], ["-m", FUTURES[1]]))
        for i, (names, extra) in enumerate(runs):
            xml_path = os.path.join(work, "%s-%d.xml" % (mode, i))
            files.update(run_regrtest(env, ["-j%d" % jobs] + extra + names, xml_path, log, timeout))
            got.update(cases(xml_path, texts))
    return files, got, texts


# Reruns of a case that failed only under poolkit (the docstring says why).
RERUNS = 2


def rerun_passes(mode, lib, cid, timeout, work):
    """Whether case cid passes when run alone in mode, within RERUNS tries."""
    tid = cid.lstrip(".")  # ids start with the empty class name
    parts = tid.split(".")
    if len(parts) < 3 or not parts[1].startswith("test_"):
        return False
    env = mode_env(mode, lib)
    with open(os.path.join(work, mode + "-reruns.log"), "a") as log:
        for i in range(RERUNS):
            xml_path = os.path.join(work, "%s-rerun-%d.xml" % (mode, i))
            if os.path.exists(xml_path):
                os.remove(xml_path)
            run_regrtest(env, ["-m", tid, parts[1]], xml_path, log, timeout)
            got = cases(xml_path, {})
            ok = got.get(cid) == "ok" or got.get(tid) == "ok"
            print("cpython-tests: %s: %s run again (%d of %d): %s" % (mode, tid, i + 1, RERUNS,
                                                                     "passed" if ok else "failed"), flush=True)
            if ok:
                return True
    return False


BAD = ("failure", "error")
BAD_FILE = ("failed", "crashed", "timed out", "interrupted")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lib", help="libpoolkit-malloc.so")
    ap.add_argument("--all", action="store_true", help="the whole suite, not the subset")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--modes", default="reference,default,hardened")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--keep", help="a folder for the logs and junit files")
    a = ap.parse_args()

    lib = os.path.realpath(a.lib)
    if not os.path.exists(lib):
        sys.exit("cpython-tests: no %s" % lib)
    if not os.path.exists(PYTHON) or not testsuite_present():
        sys.exit("cpython-tests: %s's tests are not installed: apt-get install %s "
                 "(scripts/setup.sh installs it)" % (PYTHON, PACKAGE))
    modes = a.modes.split(",")
    if modes[0] != "reference" or any(m not in MODES for m in modes):
        sys.exit("cpython-tests: --modes starts with reference, then default and/or hardened")
    work = a.keep or tempfile.mkdtemp(prefix="pk-cpython-")
    os.makedirs(work, exist_ok=True)
    tests, futures = (([], False) if a.all else (SUBSET, True))

    results = {}
    for mode in modes:
        t0 = time.time()
        files, got, texts = run_mode(mode, lib, tests, futures, a.jobs, a.timeout, work)
        results[mode] = (files, got, texts)
        n_bad = sum(1 for s in got.values() if s in BAD)
        n_files_bad = sum(1 for s in files.values() if s in BAD_FILE)
        print("cpython-tests: %-9s %5d test cases in %3d files, %3d failed or erred, %d files failed, %.0f s"
              % (mode, len(got), len(files), n_bad, n_files_bad, time.time() - t0), flush=True)

    ref_files, ref_cases, _ = results["reference"]
    if not ref_cases:
        sys.exit("cpython-tests: the reference run ran no test (see %s/reference.log)" % work)
    ours = 0
    machine = sorted(c for c, s in ref_cases.items() if s in BAD)
    for mode in modes[1:]:
        files, got, texts = results[mode]
        for c, s in sorted(got.items()):
            if s in BAD and ref_cases.get(c) not in BAD:
                why = excused(mode, c, texts.get(c, ""))
                if why:
                    print("cpython-tests: %s: %s crashed, CPython's (not counted): %s" % (mode, c, why))
                    continue
                flaky = rerun_passes(mode, lib, c, a.timeout, work)
                print("cpython-tests: %s: %s %s only under poolkit%s" % (
                    mode, c, s, ", then passed when run again (flaky, not counted)" if flaky else ""))
                sys.stdout.write(show(texts.get(c, "(no text in the junit file)")))
                ours += 0 if flaky else 1
        for f, s in sorted(files.items()):
            if s in BAD_FILE and ref_files.get(f) not in BAD_FILE and s != "failed":
                print("cpython-tests: %s: %s %s only under poolkit" % (mode, f, s))
                ours += 1
        for f in sorted(set(ref_files) - set(files)):
            print("cpython-tests: %s: %s did not run" % (mode, f))
            ours += 1
    for c in machine:
        print("cpython-tests: fails without poolkit too (not counted): %s" % c)
    print("cpython-tests: logs in %s" % work)
    print("cpython-tests: %d passed, %d failed" % (sum(len(results[m][1]) for m in modes[1:]) - ours, ours))
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main())
