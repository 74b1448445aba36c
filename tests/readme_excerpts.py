#!/usr/bin/env python3
"""Checks that the code shown in poolkit's Markdown files is real code.

Usage: readme_excerpts.py SOURCE_DIR --built FILE... --docs FILE.md...

Every fenced code block of a C-family language (```c, ```cpp, ```objc, ...)
in each Markdown file must come right after a marker naming the example it
is taken from,

    <!-- example: examples/tour.c -->

and its lines must be a contiguous run of that file's lines, character for
character, except that the run's common indentation may be left out (a
function's body can be shown flush left). The example must be one of the
files given after --built: the programs the build compiles and ctest runs,
so that what the README shows compiles and runs. Blocks with no language or
a shell's (commands, a program's output) are not code and are not checked;
a marker before one of them is checked all the same.

Exit status 0 when every block is found; 1 with one line per fault
(file:line: what) otherwise.
"""
import argparse
import os
import re
import sys

CODE_LANGS = {"c", "h", "cpp", "c++", "cc", "cxx", "hpp", "objc", "objective-c", "m"}
MARKER = re.compile(r"^<!--\s*example:\s*(\S+)\s*-->\s*$")
FENCE = re.compile(r"^(```+|~~~+)\s*([^\s`]*)")


def blocks(lines):
    """Yields (marker, marker_line, lang, start_line, body) for each fenced
    block; marker is the example named just before it (or None). Line
    numbers are 1-based; start_line is the fence's."""
    marker, marker_line = None, 0
    i = 0
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line)
        if m:
            marker, marker_line = m.group(1), i + 1
            i += 1
            continue
        f = FENCE.match(line)
        if f:
            fence, lang = f.group(1), f.group(2).lower()
            start = i + 1
            body = []
            i += 1
            while i < len(lines) and not lines[i].startswith(fence[0] * len(fence)):
                body.append(lines[i])
                i += 1
            yield marker, marker_line, lang, start, body
            marker = None
            i += 1
            continue
        if line.strip() and marker is not None:
            yield marker, marker_line, None, None, None  # a marker with no block after it
            marker = None
        i += 1
    if marker is not None:
        yield marker, marker_line, None, None, None


def dedent(run):
    indents = [len(l) - len(l.lstrip(" ")) for l in run if l.strip()]
    cut = min(indents) if indents else 0
    return [l[cut:] if l.strip() else "" for l in run]


def found_in(body, source_lines):
    """True if body is a contiguous run of source_lines (less its common indentation)."""
    body = [l.rstrip() for l in body]
    n = len(body)
    if n == 0:
        return False
    for i in range(len(source_lines) - n + 1):
        if dedent([l.rstrip() for l in source_lines[i:i + n]]) == body:
            return True
    return False


def check(md_path, source_dir, built):
    """Returns (faults, how many blocks were found in their examples)."""
    faults = []
    matched = 0
    shown = os.path.relpath(md_path, source_dir)
    with open(md_path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for marker, marker_line, lang, start, body in blocks(lines):
        if body is None:
            faults.append(f"{shown}:{marker_line}: marker for {marker} is not followed by a code block")
            continue
        if marker is None:
            if lang in CODE_LANGS:
                faults.append(f"{shown}:{start}: a ```{lang} block with no "
                              "'<!-- example: examples/FILE -->' line before it")
            continue
        if os.path.normpath(marker) not in built:
            faults.append(f"{shown}:{marker_line}: {marker} is not one of the examples "
                          "that are built and run")
            continue
        path = os.path.join(source_dir, marker)
        try:
            with open(path, encoding="utf-8") as f:
                source_lines = f.read().split("\n")
        except OSError as e:
            faults.append(f"{shown}:{marker_line}: cannot read {marker}: {e.strerror}")
            continue
        if found_in(body, source_lines):
            matched += 1
            continue
        stripped = {l.strip() for l in source_lines}
        stray = next((l for l in body if l.strip() not in stripped), None)
        why = f" (no line '{stray.strip()}' there)" if stray is not None else " (lines out of order)"
        faults.append(f"{shown}:{start}: the block is not found, line for line, in {marker}{why}")
    return faults, matched


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source_dir")
    ap.add_argument("--built", nargs="+", required=True,
                    help="the example files built and run, relative to SOURCE_DIR")
    ap.add_argument("--docs", nargs="+", required=True, help="Markdown files to check")
    args = ap.parse_args()
    built = {os.path.normpath(b) for b in args.built}
    faults = []
    checked = 0
    for md in args.docs:
        path = md if os.path.isabs(md) else os.path.join(args.source_dir, md)
        f, n = check(path, args.source_dir, built)
        faults += f
        checked += n
    for fault in faults:
        print(fault)
    if faults:
        print(f"readme excerpts: FAILED: {len(faults)} fault(s)")
        return 1
    print(f"readme excerpts: {checked} code block(s) of {len(args.docs)} file(s) found in their examples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
