#!/usr/bin/env python3
"""Every test a ctest run skipped, with its reason; fails on an undocumented one.

    scripts/ctest-skips.py STAGE JUNIT_XML [ALLOW_LIST]

JUNIT_XML is what `ctest --output-junit` wrote (the Makefile's test stages
write BUILD_DIR/ctest-STAGE.xml). A skip is a test ctest marked skipped, or a
GoogleTest test that printed "[  SKIPPED ]" inside a test ctest ran as a
whole program (the memcheck.* tests of the valgrind stage); its reason is the
GTEST_SKIP() message. ALLOW_LIST (default tests/skips.txt) documents the
skips that are expected, one per line:

    STAGES  TEST_REGEX  CAUSE

STAGES is a comma-separated list of stages or *, TEST_REGEX a Python regular
expression searched in the test's name (Suite.Test, or the ctest name), CAUSE
the reason in words. Prints every skip, marked documented or not, and exits
1 when the stage is one of $SKIPS_STRICT (default "gcc": the plain build,
where nothing should skip without a cause) and a skip is not documented; 2
when the results cannot be read (a stage whose skips are unknown must not
pass as if none).
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

RUN = re.compile(r"^\[ RUN      \] (\S+)")
SKIPPED_AT = re.compile(r"^\S+:\d+: Skipped$")
SKIPPED = re.compile(r"^\[  SKIPPED \] (\S+\.\S+) \(\d+ ms\)")


def gtest_skips(output):
    """(name, reason) for each GoogleTest test the output shows skipped."""
    found, reason, collecting = {}, [], False
    for line in output.splitlines():
        if RUN.match(line):
            reason, collecting = [], False
        elif SKIPPED_AT.match(line):
            reason, collecting = [], True
        elif SKIPPED.match(line):
            name = SKIPPED.match(line).group(1)
            found.setdefault(name, " ".join(r for r in reason if r) or "(no reason given)")
            collecting = False
        elif collecting and not line.startswith("=="):  # valgrind's lines
            reason.append(line.strip())
    return found


def read_skips(junit):
    """(test name, reason) for every skip in a ctest JUnit file."""
    skips = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        ctest_name = case.get("name", "")
        out = "".join(e.text or "" for e in case.iter("system-out"))
        inner = gtest_skips(out)
        if case.get("status") in ("skipped", "notrun", "disabled") or case.find("skipped") is not None:
            if not inner:  # skipped by ctest itself, or a reason gtest did not print
                msg = case.find("skipped")
                reason = (msg.get("message") if msg is not None else "") or "skipped by ctest"
                skips.append((ctest_name, reason))
                continue
        for name, reason in inner.items():
            # a test of its own (prefix.Suite.Test) or one of a whole program
            shown = ctest_name if ctest_name.endswith("." + name) else f"{ctest_name}: {name}"
            skips.append((shown, reason))
    return skips


def read_allow_list(path):
    entries = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 3:
                sys.exit(f"{path}:{n}: want STAGES TEST_REGEX CAUSE, got: {line}")
            entries.append((parts[0].split(","), re.compile(parts[1]), parts[2]))
    return entries


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.split("\n\n")[1])
    stage, junit = sys.argv[1], sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    allow_path = sys.argv[3] if len(sys.argv) == 4 else os.path.join(here, "..", "tests", "skips.txt")
    strict = os.environ.get("SKIPS_STRICT", "gcc").split()
    try:
        skips = read_skips(junit)
    except (OSError, ET.ParseError) as e:
        print(f"skips: cannot read the test results {junit}: {e}")
        return 2
    allow = read_allow_list(allow_path)
    undocumented = 0
    print(f"skips ({stage}): {len(skips)} test(s) skipped")
    for name, reason in sorted(skips):
        cause = next((c for stages, rx, c in allow
                      if ("*" in stages or stage in stages) and rx.search(name)), None)
        if cause is None:
            undocumented += 1
            print(f"  SKIPPED {name}: {reason}  [NOT DOCUMENTED for stage {stage} in tests/skips.txt]")
        else:
            print(f"  SKIPPED {name}: {reason}  [documented: {cause}]")
    if undocumented and stage in strict:
        print(f"skips ({stage}): FAIL: {undocumented} skip(s) with no documented cause; fix the test or "
              f"add a line to tests/skips.txt (stage, test, cause)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
