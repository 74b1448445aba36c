#!/usr/bin/env python3
"""The process report read back: tests/stats_check.py PROGRAM SCHEMA

PROGRAM is examples/stats_report's binary, whose fixed workload gives the
figures checked below; SCHEMA is docs/stats.schema.json. Checks:
  1. `PROGRAM --json`: the report validates against the schema, and its
     figures match the workload (the model below).
  2. POOLKIT_STATS=FILE.json: the exit report, written by a child process,
     validates and matches too (the autorelease pool popped by then).
  3. POOLKIT_STATS=1 (or yes, on, true, any case): the table on stderr at
     exit, opening with the version and the options in force, with the
     pk_new class rows; no file named after the word.
  4. POOLKIT_DEBUG=1: the leak summary at exit names the pools and classes
     with live objects, with their counts, and the arena never destroyed,
     but not the library's own pool; then the first objects of each pool
     with where they were allocated.
  5. POOLKIT_VERBOSE=1: a notable event is reported once.
  6. POOLKIT_STATS naming a file that cannot be written, or a word that is
     neither a switch nor a file name: reported.
The schema is checked with the jsonschema package where it is installed,
else with the small validator below (the keywords the schema uses)."""
import json
import os
import re
import subprocess
import sys
import tempfile

FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILURES.append(what)


def mini_validate(value, schema, path="$", root=None):
    """Yields an error string for each way value breaks schema (the subset of
    JSON Schema docs/stats.schema.json uses)."""
    root = root or schema
    if "$ref" in schema:  # "#/$defs/name"
        target = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        yield from mini_validate(value, target, path, root)
        return
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        pytypes = {"object": dict, "array": list, "string": str, "null": type(None),
                   "integer": int, "number": (int, float), "boolean": bool}
        ok = any(isinstance(value, pytypes[n]) and not (n in ("integer", "number") and isinstance(value, bool))
                 for n in names)
        if not ok:
            yield f"{path}: {value!r} is not of type {types}"
            return
    if "const" in schema and value != schema["const"]:
        yield f"{path}: {value!r} != {schema['const']!r}"
    if "enum" in schema and value not in schema["enum"]:
        yield f"{path}: {value!r} not in {schema['enum']}"
    if "minimum" in schema and isinstance(value, (int, float)) and value < schema["minimum"]:
        yield f"{path}: {value} < {schema['minimum']}"
    if "minLength" in schema and isinstance(value, str) and len(value) < schema["minLength"]:
        yield f"{path}: {value!r} shorter than {schema['minLength']}"
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        yield f"{path}: {value!r} does not match {schema['pattern']}"
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                yield f"{path}: missing {key}"
        props = schema.get("properties", {})
        for key, v in value.items():
            if key in props:
                yield from mini_validate(v, props[key], f"{path}.{key}", root)
            elif schema.get("additionalProperties") is False:
                yield f"{path}: unexpected {key}"
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            yield from mini_validate(v, schema["items"], f"{path}[{i}]", root)


def validate(doc, schema, what):
    try:
        import jsonschema
        errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)]
        how = "jsonschema " + getattr(jsonschema, "__name__", "")
    except ImportError:
        errors = list(mini_validate(doc, schema))
        how = "the built-in validator"
    check(not errors, f"{what}: valid against the schema ({how}) {errors[:3]}")


def run(prog, args=(), env_extra=None, cwd=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("POOLKIT_")}
    env.update(env_extra or {})
    return subprocess.run([prog, *args], env=env, capture_output=True, text=True, timeout=60, cwd=cwd)


def by_name(items):
    return {x["name"]: x for x in items}


def check_model(doc, what, at_exit):
    pools = by_name(doc["pools"])
    check(pools.get("nodes", {}).get("live") == 600 and pools["nodes"]["size"] == 48,
          f"{what}: pool nodes, 48 B, 600 live")
    check(pools.get("sessions", {}).get("live") == 10 and pools["sessions"]["size"] == 200,
          f"{what}: pool sessions, 200 B, 10 live")
    orders = 3 if at_exit else 4  # the autoreleased one is gone at exit
    check(pools.get("pk_alloc 64", {}).get("live") == orders,
          f"{what}: size-class pool 'pk_alloc 64' holds the {orders} live Orders")
    check(pools.get("pk_alloc 128", {}).get("live") == 2,
          f"{what}: size-class pool 'pk_alloc 128' holds the 2 live Customers")
    for p in doc["pools"]:
        if not (p["bytes_resident"] <= p["bytes_reserved"] and p["live"] <= p["peak_live"]):
            check(False, f"{what}: pool {p['name']}: resident <= reserved, live <= peak")
    t = doc["totals"]
    check(t["pools"] == len(doc["pools"]), f"{what}: totals.pools = the pools listed")
    check(t["live"] == sum(p["live"] for p in doc["pools"]), f"{what}: totals.live = the sum")
    check(t["bytes_reserved"] == sum(p["bytes_reserved"] for p in doc["pools"]),
          f"{what}: totals.bytes_reserved = the sum")
    check(doc["arenas"]["live"] == 1 and doc["arenas"]["bytes_reserved"] >= 100000,
          f"{what}: one arena holding at least its 100,000 bytes")
    check(t["bytes_reserved_peak"] >= t["bytes_reserved"] and
          doc["arenas"]["bytes_reserved_peak"] >= doc["arenas"]["bytes_reserved"],
          f"{what}: peaks at least what is reserved now")
    depth = 0 if at_exit else 1
    check(doc["autorelease"]["depth"] == depth and doc["autorelease"]["pending"] == depth,
          f"{what}: autorelease depth and pending {depth}")
    classes = by_name(doc["classes"] or [])
    check(classes.get("Order", {}).get("live") == orders and classes["Order"]["size"] == 40,
          f"{what}: class Order, 40 B, {orders} live")
    check(classes.get("Customer", {}).get("live") == 2, f"{what}: class Customer, 2 live")
    check(re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", doc["version"]) is not None,
          f"{what}: the version, MAJOR.MINOR.PATCH ({doc['version']})")


def check_options(doc, what, stats_value, stats_source):
    o = doc["options"]
    check(o["POOLKIT_STATS"] == {"value": stats_value, "source": stats_source},
          f"{what}: options.POOLKIT_STATS is {stats_value!r} from {stats_source} ({o['POOLKIT_STATS']})")
    check(o["POOLKIT_DEBUG"] == {"value": False, "source": "default"},
          f"{what}: options.POOLKIT_DEBUG off by default ({o['POOLKIT_DEBUG']})")
    check(isinstance(o["POOLKIT_PURGE_DELAY_MS"]["value"], int),
          f"{what}: options.POOLKIT_PURGE_DELAY_MS a count")


def main():
    prog, schema_path = sys.argv[1], sys.argv[2]
    schema = json.load(open(schema_path))

    r = run(prog, ["--json"])
    check(r.returncode == 0, f"--json exits 0 ({r.stderr.strip()[:200]})")
    doc = json.loads(r.stdout)
    validate(doc, schema, "pk_stats_print JSON")
    check_model(doc, "pk_stats_print JSON", at_exit=False)
    check_options(doc, "pk_stats_print JSON", "off", "default")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "report.json")
        r = run(prog, env_extra={"POOLKIT_STATS": path})
        check(r.returncode == 0 and os.path.exists(path), "POOLKIT_STATS=FILE.json writes the file at exit")
        doc = json.load(open(path))
        validate(doc, schema, "exit report")
        check_model(doc, "exit report", at_exit=True)
        check_options(doc, "exit report", path, "environment")

    for word in ("1", "yes", "On", "TRUE"):
        with tempfile.TemporaryDirectory() as tmp:
            r = run(prog, env_extra={"POOLKIT_STATS": word}, cwd=tmp)
            table = r.stderr
            check(re.search(r"^poolkit [0-9]+\.[0-9]+\.[0-9]+ report \(pid [0-9]+\)\n"
                            r"options in force .*\n(  POOLKIT_[A-Z_]+ .*\n){6}", table, re.M) is not None,
                  f"POOLKIT_STATS={word}: the table on stderr at exit opens with the version and 6 options")
            check(re.search(r"^  POOLKIT_STATS +stderr +environment$", table, re.M) is not None,
                  f"POOLKIT_STATS={word}: the options say where the report goes")
            check("\nnodes " in table and re.search(r"^Order +40 +3$", table, re.M) is not None,
                  f"POOLKIT_STATS={word}: pool rows and the pk_new class rows at exit")
            check(os.listdir(tmp) == [], f"POOLKIT_STATS={word}: no file written ({os.listdir(tmp)})")
    for word in ("0", "no", "Off", "false"):
        r = run(prog, env_extra={"POOLKIT_STATS": word})
        check("report (pid" not in r.stderr and r.stderr == "", f"POOLKIT_STATS={word}: no report")

    r = run(prog, env_extra={"POOLKIT_DEBUG": "1"})
    leak = [l for l in r.stderr.splitlines() if "leak: at exit" in l]
    check(len(leak) == 1, f"POOLKIT_DEBUG=1: one leak summary at exit ({len(leak)})")
    line = leak[0] if leak else ""
    for part in ("615 live objects", "'nodes' 600", "'sessions' 10", "class Order 3", "class Customer 2",
                 "1 arena never destroyed"):
        check(part in line, f"POOLKIT_DEBUG=1: the summary says {part}")
    check("autorelease pages" not in r.stderr and "pk_alloc 64' 3" not in line,
          "POOLKIT_DEBUG=1: the library's own pool is left out, pk_new's counted per class")
    site = r" \(allocated at [^)]+\)"
    check(re.search(r"^poolkit: leak: pool 'nodes', 600 live at exit, the first: "
                    r"0x[0-9a-f]+" + site + r"(, 0x[0-9a-f]+" + site + r"){3} \.\.\. \(596 more\)$",
                    r.stderr, re.M) is not None,
          "POOLKIT_DEBUG=1: the first 4 of pool 'nodes' listed with where they were allocated")
    check(re.search(r"^poolkit: leak: pool 'pk_alloc 64', 3 live at exit, the first: "
                    r"Order 0x[0-9a-f]+" + site + r"(, Order 0x[0-9a-f]+" + site + r"){2}$",
                    r.stderr, re.M) is not None,
          "POOLKIT_DEBUG=1: the live Orders listed by class with where they were allocated")

    r = run(prog, env_extra={"POOLKIT_DEBUG": "1", "POOLKIT_VERBOSE": "1"})
    notes = [l for l in r.stderr.splitlines() if "takes its lock on every call: debug checks" in l]
    check(len(notes) == 1, f"POOLKIT_VERBOSE=1: a locking pool noted once ({len(notes)} times)")

    r = run(prog, env_extra={"POOLKIT_STATS": "/nonexistent-dir/report.json"})
    check("POOLKIT_STATS=/nonexistent-dir/report.json: cannot open it for writing" in r.stderr,
          "POOLKIT_STATS naming an unwritable file is reported")

    with tempfile.TemporaryDirectory() as tmp:
        r = run(prog, env_extra={"POOLKIT_STATS": "ys"}, cwd=tmp)
        check("poolkit: bad option: POOLKIT_STATS=ys is neither a switch" in r.stderr and
              "report (pid" not in r.stderr and os.listdir(tmp) == [],
              "POOLKIT_STATS=ys (neither a switch nor a file name) is reported, nothing written")

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
