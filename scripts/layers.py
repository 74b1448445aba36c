#!/usr/bin/env python3
"""The library's layers, checked (make test runs it: the layers.* tests).

src/layers.txt lists the folders of src/, lowest first. This script fails
when:
  - a folder of src/ is not listed, or a listed one is missing;
  - an #include "..." in src/ does not name a file of src/ by its folder
    ("pool/heap.h", never "heap.h" or "../x.h");
  - a file includes a header of a folder listed after its own (upward);
  - the modules' includes make a cycle (a module is a folder and a base
    name: pool/heap.c and pool/heap.h are one module), also within a folder;
  - with --objects: a compiled file refers to a symbol (calls a function,
    reads a variable) defined by a file of a folder listed after its own;
    or the modules' references make a cycle (within a folder: across
    folders a cycle needs an upward reference). Includes alone would miss
    a call through a header of a lower folder that declares a function an
    upper folder defines, and two files of one folder that call each
    other through a shared header.

--self-test copies src/ aside, checks that the copy passes, then that each
of a few one-line mutations (an upward include, an include cycle, a folder
left off the map, a bare include) makes it fail; with --objects, that a
lowest file's object swapped for a top one's (a call upward) and two
objects of one folder compiled to call each other (--cc) fail too.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_map(src):
    folders = []
    with open(os.path.join(src, "layers.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                folders.append(line.split()[0])
    return folders


def sources(src):
    out = []
    for folder in sorted(os.listdir(src)):
        d = os.path.join(src, folder)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith((".c", ".h")):
                out.append(folder + "/" + name)
    return out


def module(path):
    return os.path.splitext(path)[0]


def cycles(graph):
    """The graph's strongly connected components of more than one node
    (Tarjan's algorithm), each sorted: every include cycle lies in one."""
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(n):
        index[n] = low[n] = len(index)
        stack.append(n)
        on.add(n)
        for m in sorted(graph.get(n, ())):
            if m not in index:
                visit(m)
                low[n] = min(low[n], low[m])
            elif m in on:
                low[n] = min(low[n], index[m])
        if low[n] == index[n]:
            comp = []
            while True:
                m = stack.pop()
                on.discard(m)
                comp.append(m)
                if m == n:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for n in sorted(graph):
        if n not in index:
            visit(n)
    return out


def check_tree(src):
    errors = []
    folders = read_map(src)
    rank = {f: i for i, f in enumerate(folders)}
    present = sorted(e for e in os.listdir(src) if os.path.isdir(os.path.join(src, e)))
    for f in present:
        if f not in rank:
            errors.append(f"src/{f}/ is not in src/layers.txt")
    for f in folders:
        if f not in present:
            errors.append(f"src/layers.txt lists {f}, which src/ does not have")
    loose = [e for e in os.listdir(src) if e.endswith((".c", ".h"))]
    for e in sorted(loose):
        errors.append(f"src/{e} is in no layer (move it into a folder of src/layers.txt)")
    files = sources(src)
    graph = {}
    for path in files:
        folder = path.split("/")[0]
        with open(os.path.join(src, path), errors="replace") as f:
            text = f.read()
        mine = module(path)
        graph.setdefault(mine, set())
        for inc in INCLUDE.findall(text):
            if "/" not in inc or inc.startswith(".") or os.path.normpath(inc) != inc:
                errors.append(f'src/{path}: #include "{inc}": name the folder ("layer/file.h")')
                continue
            if not os.path.isfile(os.path.join(src, inc)):
                errors.append(f'src/{path}: #include "{inc}": no such file in src/')
                continue
            to = inc.split("/")[0]
            if to in rank and folder in rank and rank[to] > rank[folder]:
                errors.append(f'src/{path}: #include "{inc}": {to}/ is above {folder}/ in src/layers.txt')
            if module(inc) != mine:
                graph[mine].add(module(inc))
    for comp in cycles(graph):
        errors.append("modules that include each other around a cycle: " + ", ".join(comp))
    names = {}
    for path in files:
        if path.endswith(".c"):
            base = os.path.basename(path)
            if base in names:
                errors.append(f"src/{path} and src/{names[base]}: one base name, two files")
            names[base] = path
    return errors, rank, names


def check_objects(objects, rank, names, nm):
    """Symbols each object refers to, against the folder that defines them."""
    errors = []
    defined, used = {}, {}
    for obj in objects:
        base = object_source(obj)
        path = names.get(base)
        if path is None:
            errors.append(f"{obj}: no source src/*/{base}")
            continue
        out = subprocess.run([nm, "-P", obj], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            fields = line.split()
            if len(fields) < 2:
                continue
            name, kind = fields[0], fields[1]
            if kind == "U":
                used.setdefault(path, set()).add(name)
            elif kind in "TDBRCVWGiu":
                defined[name] = path
    graph = {}
    for path, syms in sorted(used.items()):
        for name in sorted(syms):
            owner = defined.get(name)
            if owner is None or owner == path:
                continue
            a, b = path.split("/")[0], owner.split("/")[0]
            if rank[b] > rank[a]:
                errors.append(f"src/{path} refers to {name} of src/{owner}: {b}/ is above {a}/")
            if module(owner) != module(path):
                graph.setdefault(module(path), set()).add(module(owner))
    for comp in cycles(graph):
        errors.append("modules that refer to each other around a cycle: " + ", ".join(comp))
    return errors


def run(src, objects, nm="nm"):
    errors, rank, names = check_tree(src)
    if objects and not errors:
        errors += check_objects(objects, rank, names, nm)
    return errors


def object_source(obj):
    base = os.path.basename(obj)
    base = base[:-2] if base.endswith(".o") else base
    return base if base.endswith(".c") else base + ".c"


def self_test_objects(src, objects, nm, cc):
    """A lowest-layer file swapped for the compiled code of a top one must be
    caught calling upward, and two files of one folder compiled to call each
    other caught in a cycle; the objects as built must pass."""
    errors = run(src, objects, nm)
    if errors:
        print("self-test: the objects as built fail:", *errors, sep="\n  ")
        return 1
    _, rank, names = check_tree(src)
    by_rank = sorted(objects, key=lambda o: rank[names[object_source(o)].split("/")[0]])
    low, high = by_rank[0], by_rank[-1]
    # two objects of the lowest folder, made to call each other
    a, b = [o for o in by_rank if names[object_source(o)].split("/")[0] ==
            names[object_source(low)].split("/")[0]][:2]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        fake = os.path.join(tmp, object_source(low) + ".o")
        shutil.copy(high, fake)
        trial = [o for o in objects if o != low] + [fake]
        what = f"src/{names[object_source(low)]} compiled from src/{names[object_source(high)]}"
        failures += report_mutation(f"a call upward ({what})", run(src, trial, nm), "is above")
        fakes = []
        for me, other in ((a, b), (b, a)):
            c_file = os.path.join(tmp, object_source(me))
            with open(c_file, "w") as f:
                f.write(f"void layers_{other_id(other)}(void);\n"
                        f"void layers_{other_id(me)}(void) {{ layers_{other_id(other)}(); }}\n")
            os.makedirs(os.path.join(tmp, "cyc"), exist_ok=True)
            out = os.path.join(tmp, "cyc", object_source(me) + ".o")
            subprocess.run([cc, "-c", c_file, "-o", out], check=True)
            fakes.append(out)
        trial = [o for o in objects if o not in (a, b)] + fakes
        what = f"src/{names[object_source(a)]} and src/{names[object_source(b)]} calling each other"
        failures += report_mutation(f"a call cycle ({what})", run(src, trial, nm), "around a cycle")
    return 1 if failures else 0


def other_id(obj):
    return re.sub(r"\W", "_", object_source(obj))


def report_mutation(what, errors, words):
    hits = [e for e in errors if words in e]
    if hits:
        print(f"self-test: {what} caught: {hits[0]}")
        return 0
    print(f"self-test: {what} NOT caught")
    return 1


def self_test(src):
    """Each mutation must be caught; the unmutated copy must pass."""
    folders = read_map(src)
    files = sources(src)
    low_c = next(p for p in files if p.startswith(folders[0] + "/") and p.endswith(".c"))
    high_h = [p for f in folders for p in files if p.startswith(f + "/") and p.endswith(".h")][-1]
    # A cycle: a header that includes another of its own folder, made to be
    # included back (within one folder, so only the cycle check can see it).
    pair = None
    for path in sources(src):
        if not path.endswith(".h"):
            continue
        with open(os.path.join(src, path)) as f:
            for inc in INCLUDE.findall(f.read()):
                if inc.endswith(".h") and module(inc) != module(path) and \
                        inc.split("/")[0] == path.split("/")[0]:
                    pair = (inc, path)
                    break
        if pair:
            break
    # Each mutation and the words its error must have (the check that
    # catches it, not another one).
    mutations = [
        ("an upward include", low_c, f'#include "{high_h}"\n', "is above"),
        ("an include cycle", pair[0], f'#include "{pair[1]}"\n', "around a cycle"),
        ("a bare include", low_c, '#include "internal.h"\n', "name the folder"),
        ("a folder off the map", None, None, "is not in src/layers.txt"),
    ]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "src")
        shutil.copytree(src, copy)
        if run(copy, None):
            print("self-test: the unmutated copy fails:", *run(copy, None), sep="\n  ")
            return 1
        for what, path, line, words in mutations:
            trial = os.path.join(tmp, "trial")
            shutil.copytree(copy, trial)
            if path is None:
                os.mkdir(os.path.join(trial, "stray"))
                with open(os.path.join(trial, "stray", "x.c"), "w") as f:
                    f.write("int x;\n")
            else:
                target = os.path.join(trial, path)
                with open(target) as f:
                    text = f.read()
                with open(target, "w") as f:
                    f.write(line + text)
            errors = [e for e in run(trial, None) if words in e]
            if errors:
                print(f"self-test: {what} ({path or 'src/stray/'}) caught: {errors[0]}")
            else:
                print(f"self-test: {what} ({path or 'src/stray/'}) NOT caught")
                failures += 1
            shutil.rmtree(trial)
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default=os.path.join(os.path.dirname(__file__), "..", "src"))
    ap.add_argument("--objects", nargs="*", default=[],
                    help="the library's compiled objects (nm reads them)")
    ap.add_argument("--nm", default="nm", help="the nm to read them with")
    ap.add_argument("--cc", default="cc", help="the C compiler the self-test's cycle is compiled with")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    src = os.path.normpath(args.src)
    if args.self_test:
        failed = self_test(src)
        if args.objects:
            failed |= self_test_objects(src, args.objects, args.nm, args.cc)
        return failed
    errors = run(src, args.objects, args.nm)
    for e in errors:
        print("layers:", e)
    if errors:
        print(f"layers: {len(errors)} error(s); the map is src/layers.txt")
        return 1
    folders = read_map(src)
    print(f"layers: {len(sources(src))} files in {len(folders)} layers "
          f"({', '.join(folders)}); {len(args.objects)} objects checked; no upward include "
          "or reference, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
