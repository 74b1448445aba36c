#!/usr/bin/env python3
"""Fails when a test's PASS_ or FAIL_REGULAR_EXPRESSION has a repeated group
with an alternative, such as (.|\\n)*.

    tests/ctest_regexes.py CTEST BUILD_DIR

CMake's matcher backtracks: where the alternatives of a repeated group can
match the same text (in CMake's expressions `.` matches a newline too),
it tries every way of splitting the output among them, exponential in the
output's length, and ctest reaps no other test while it does, so tests that
end meanwhile are reported as timed out. `.*` spans lines on its own.
"""
import json
import re
import subprocess
import sys

# a group holding a '|' outside any inner group, followed by * or +
REPEATED_ALTERNATION = re.compile(r"\((?:[^()]*\|[^()]*)\)[*+]")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out = subprocess.run([sys.argv[1], "--test-dir", sys.argv[2], "--show-only=json-v1"], check=True,
                         capture_output=True, text=True).stdout
    tests = json.loads(out)["tests"]
    bad = []
    for t in tests:
        for prop in t.get("properties", []):
            if prop["name"] not in ("PASS_REGULAR_EXPRESSION", "FAIL_REGULAR_EXPRESSION"):
                continue
            for rx in prop["value"]:
                if REPEATED_ALTERNATION.search(rx):
                    bad.append(f"{t['name']}: {prop['name']} {rx!r}")
    for line in bad:
        print("repeated alternation (exponential in ctest's matcher):", line)
    print(f"{len(tests)} tests read, {len(bad)} with a repeated alternation")
    return 1 if bad or not tests else 0


if __name__ == "__main__":
    sys.exit(main())
