#!/usr/bin/env python3
"""The process report read back (issue 11): tests/stats_check.py PROGRAM SCHEMA

PROGRAM is examples/stats_report's binary, whose fixed workload gives the
figures checked below; SCHEMA is docs/stats.schema.json. Checks:
  1. `PROGRAM --json`: the report validates against the schema, and its
     figures match the workload (the model below).
  2. POOLKIT_STATS=FILE.json: the exit report, written by a child process,
     validates and matches too (the autorelease pool popped by then).
  3. POOLKIT_STATS=1: the table on stderr at exit.
  4. POOLKIT_DEBUG=1: the leak summary at exit names the pools and classes
     with live objects, with their counts.
  5. POOLKIT_VERBOSE=1: a notable event is reported once.
  6. POOLKIT_STATS naming a file that cannot be written: reported.
The schema is checked with the jsonschema package where it is installed,
else with the small validator below (the keywords the schema uses)."""
import json
import os
import subprocess
import sys
import tempfile

FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILURES.append(what)


def mini_validate(value, schema, path="$"):
    """Yields an error string for each way value breaks schema (the subset of
    JSON Schema docs/stats.schema.json uses)."""
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
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                yield f"{path}: missing {key}"
        props = schema.get("properties", {})
        for key, v in value.items():
            if key in props:
                yield from mini_validate(v, props[key], f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                yield f"{path}: unexpected {key}"
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            yield from mini_validate(v, schema["items"], f"{path}[{i}]")


def validate(doc, schema, what):
    try:
        import jsonschema
        errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)]
        how = "jsonschema " + getattr(jsonschema, "__name__", "")
    except ImportError:
        errors = list(mini_validate(doc, schema))
        how = "the built-in validator"
    check(not errors, f"{what}: valid against the schema ({how}) {errors[:3]}")


def run(prog, args=(), env_extra=None):
    env = dict(os.environ)
    for k in ("POOLKIT_STATS", "POOLKIT_DEBUG", "POOLKIT_VERBOSE", "POOLKIT_HARDENED"):
        env.pop(k, None)
    env.update(env_extra or {})
    return subprocess.run([prog, *args], env=env, capture_output=True, text=True, timeout=60)


def by_name(items):
    return {x["name"]: x for x in items}


def check_model(doc, what, at_exit):
    pools = by_name(doc["pools"])
    check(pools.get("nodes", {}).get("live") == 600 and pools["nodes"]["size"] == 48,
          f"{what}: pool nodes, 48 B, 600 live")
    check(pools.get("sessions", {}).get("live") == 10 and pools["sessions"]["size"] == 200,
          f"{what}: pool sessions, 200 B, 10 live")
    orders = 3 if at_exit else 4  # the autoreleased one is gone at exit
    check(pools.get("pk_new 64", {}).get("live") == orders,
          f"{what}: size-class pool 'pk_new 64' holds the {orders} live Orders")
    check(pools.get("pk_new 128", {}).get("live") == 2,
          f"{what}: size-class pool 'pk_new 128' holds the 2 live Customers")
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
    if not at_exit:
        classes = by_name(doc["classes"] or [])
        check(classes.get("Order", {}).get("live") == 4 and classes["Order"]["size"] == 40,
              f"{what}: class Order, 40 B, 4 live")
        check(classes.get("Customer", {}).get("live") == 2, f"{what}: class Customer, 2 live")
    else:
        check(doc["classes"] is None, f"{what}: no class walk at exit")


def main():
    prog, schema_path = sys.argv[1], sys.argv[2]
    schema = json.load(open(schema_path))

    r = run(prog, ["--json"])
    check(r.returncode == 0, f"--json exits 0 ({r.stderr.strip()[:200]})")
    doc = json.loads(r.stdout)
    validate(doc, schema, "pk_stats_print JSON")
    check_model(doc, "pk_stats_print JSON", at_exit=False)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "report.json")
        r = run(prog, env_extra={"POOLKIT_STATS": path})
        check(r.returncode == 0 and os.path.exists(path), "POOLKIT_STATS=FILE.json writes the file at exit")
        doc = json.load(open(path))
        validate(doc, schema, "exit report")
        check_model(doc, "exit report", at_exit=True)

    r = run(prog, env_extra={"POOLKIT_STATS": "1"})
    check("poolkit report (pid" in r.stderr and "\nnodes " in r.stderr,
          "POOLKIT_STATS=1: the table on stderr at exit")

    r = run(prog, env_extra={"POOLKIT_DEBUG": "1"})
    leak = [l for l in r.stderr.splitlines() if "leak: at exit" in l]
    check(len(leak) == 1, f"POOLKIT_DEBUG=1: one leak summary at exit ({len(leak)})")
    line = leak[0] if leak else ""
    for part in ("'nodes' 600", "'sessions' 10", "class Order 3", "class Customer 2"):
        check(part in line, f"POOLKIT_DEBUG=1: the summary says {part}")

    r = run(prog, env_extra={"POOLKIT_DEBUG": "1", "POOLKIT_VERBOSE": "1"})
    notes = [l for l in r.stderr.splitlines() if "takes its lock on every call: debug checks" in l]
    check(len(notes) == 1, f"POOLKIT_VERBOSE=1: a locking pool noted once ({len(notes)} times)")

    r = run(prog, env_extra={"POOLKIT_STATS": "/nonexistent-dir/report.json"})
    check("POOLKIT_STATS=/nonexistent-dir/report.json: cannot open it for writing" in r.stderr,
          "POOLKIT_STATS naming an unwritable file is reported")

    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
