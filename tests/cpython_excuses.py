#!/usr/bin/env python3
"""scripts/cpython-tests.py's reading of a junit file: a crash of a case
CPython itself causes by reading freed memory is excused in the modes that
overwrite freed memory only, never a poolkit report, never another case,
and every counted failure keeps its text for the log."""
import importlib.util
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("cpython_tests", os.path.join(HERE, "..", "scripts", "cpython-tests.py"))
ct = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ct)

KNOWN = "test.test_threading.ThreadJoinOnShutdown.test_4_daemon_threads"
CRASHED = ("AssertionError: Process return code is -11\nstderr:\n---\n"
           "Fatal Python error: Segmentation fault\n---")
REPORTED = "poolkit: pool 'alloc.64': block 0x7f0000001000 written after its free\nSegmentation fault"

JUNIT = """<testsuites><testsuite>
<testcase name="%s"><failure type="AssertionError" message="m">%s</failure></testcase>
<testcase name="test.test_other.Case.test_known_crash_elsewhere"><failure>%s</failure></testcase>
<testcase name="test.test_ok.Case.test_passes"/>
<testcase name="test.test_skip.Case.test_skipped"><skipped>Windows only</skipped></testcase>
</testsuite></testsuites>""" % (KNOWN, CRASHED, CRASHED)

failed = []


def check(what, cond):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failed.append(what)


with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "j.xml")
    with open(path, "w") as f:
        f.write(JUNIT)
    texts = {}
    got = ct.cases(path, texts)

known = "." + KNOWN  # the empty class name comes first
check("states read", got.get(known) == "failure" and got.get(".test.test_ok.Case.test_passes") == "ok"
      and got.get(".test.test_skip.Case.test_skipped") == "skipped")
check("a failure's text kept", "Segmentation fault" in texts.get(known, ""))
check("no text for a skip", ".test.test_skip.Case.test_skipped" not in texts)
check("the known crash excused under hardened", ct.excused("hardened", known, texts[known]) is not None)
check("not under default", ct.excused("default", known, texts[known]) is None)
check("not a poolkit report", ct.excused("hardened", known, REPORTED) is None)
check("not a failure that is no crash", ct.excused("hardened", known, "AssertionError: b'' is not false") is None)
check("not another case's crash",
      ct.excused("hardened", ".test.test_other.Case.test_known_crash_elsewhere", CRASHED) is None)
check("a counted failure shows its end", "Fatal Python error" in ct.show(texts[known]))
sys.exit(1 if failed else 0)
