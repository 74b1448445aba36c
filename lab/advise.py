#!/usr/bin/env python3
"""pk-lab advise: where a program allocates, and what each place would gain
from a typed pool, an arena, a heap freed whole or an autorelease scope.

    pk-lab advise [--top N] [--out DIR] [--runs N] [--sample N|auto]
                  [--stdin FILE] -- PROGRAM [ARGS...]

(pk-lab passes --record-lib and --lab.) What it does, every step measured
on this machine:

 1. runs PROGRAM plainly and under the recording library
    (libpoolkit-record.so, lab/advise/record.c), interleaved, --runs times
    each: the plain runs' median wall time is the run the savings are a
    share of, and the ratio of the medians is the recording's overhead;
    with --sample auto (the default) a first counting run sizes the
    sampling so that the recording stays within 1.6x the plain run; a
    first recorded run over 1.9x is run again with the sampling its own
    cost per recorded allocation calls for
 2. symbolizes each site's frames with addr2line (binutils) from the
    dump's copy of /proc/self/maps; a site is the line that calls malloc
    (the stacks that reach it merged), or the whole stack where that line
    is unknown (no debug information)
 3. measures what one allocation costs in each style at the sizes the
    sites use (`pk-lab advise-costs`, lab/advise_costs.c: the lab's hot
    and batch loops, interleaved, median of 5)
 4. classifies each site (classify) and prices the style it fits (price):
    the predicted saving is the site's allocations times the difference
    of the two measured costs, in the loop that matches its pattern
 5. writes DIR/advise.md (the table and what each figure rests on),
    DIR/advise.json, DIR/lifetimes.png (the top sites' lifetimes)
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# ---- the classifier's rules -------------------------------------------------
# A site is rare below RARE_ALLOCS allocations or RARE_SHARE of the
# process's: its cost cannot matter.
RARE_ALLOCS = 1000
RARE_SHARE = 0.001
# Grown by realloc in more than this share of its allocations: a pool or an
# arena cannot resize in place.
RESIZED_SHARE = 0.25
# Freed on another thread than the allocating one in more than this share:
# only a shared pool takes such frees.
REMOTE_SHARE = 0.1
# Blocks that die together (freed in runs, or never freed) in at least this
# share: an arena when almost none is freed alone (INDIVIDUAL_SHARE), a heap
# freed whole otherwise.
TOGETHER_SHARE = 0.5
INDIVIDUAL_SHARE = 0.1
# A pool serves one size; a site of up to POOL_SIZES distinct sizes takes a
# pool per size.
POOL_SIZES = 4
# Short-lived: median lifetime at most SHORT_LIFE allocations (of any site).
SHORT_LIFE = 64
# The hot loop prices a site whose blocks live at most HOT_LIFE allocations
# with at most HOT_PEAK live at once; the batch loop prices the others.
HOT_LIFE = 16
HOT_PEAK = 64
# Advice that saves less than this share of the run is "leave it".
WORTH_SHARE = 0.01
# --sample auto: the recording's own time, as a share of the plain run, that
# the sampling aims at (1.6x the run in all; the goal is at most 2x).
BUDGET = 0.6

STYLES = {
    "local": "pk_pool with PK_POOL_LOCAL",
    "pool": "pk_pool",
    "arena": "pk_arena",
    "heap": "a heap freed whole (pk_heap)",
    "autorelease": "an autorelease scope (pk_scratch)",
    "leave": "leave it",
}
# What each style's cost is measured with (advise-costs' style names).
STYLE_COST = {"local": "local", "pool": "pool", "arena": "arena", "heap": "arena",
              "autorelease": "autorelease"}

# ---- the recording's dump -----------------------------------------------------


def parse_dump(path):
    """The dump record.c writes: header fields, executable mappings, sites."""
    d = {"maps": [], "sites": {}}
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "map":
                lo, hi = (int(x, 16) for x in w[1].split("-"))
                d["maps"].append((lo, hi, int(w[3], 16), w[6] if len(w) > 6 else ""))
            elif w[0] == "site":
                d["sites"][int(w[1])] = {"frames": [int(x, 16) for x in w[3:]]}
            elif w[0] == "stat":
                s = d["sites"][int(w[1])]
                i = 2
                while i < len(w):
                    if w[i] == "sizes":
                        s["sizes"] = [int(x) for x in w[i + 1:]]
                        break
                    s[w[i]] = int(w[i + 1])
                    i += 2
            elif w[0].startswith("h") and w[0] != "pk-record":
                s = d["sites"][int(w[1])]
                s[w[0]] = {int(k): int(v) for k, v in (x.split(":") for x in w[2:])}
            elif len(w) == 2:
                d[w[0]] = int(w[1]) if w[1].isdigit() else w[1]
    return d


def elf_is_exec(path):
    try:
        with open(path, "rb") as f:
            head = f.read(18)
        return head[:4] == b"\x7fELF" and int.from_bytes(head[16:18], "little") == 2
    except OSError:
        return False


def symbolize(dump, addr2line="addr2line"):
    """{address: {"function", "file", "line", "object"}} for every frame."""
    objects = {}
    for lo, hi, off, path in dump["maps"]:
        if path.startswith("/"):
            base = objects.get(path, {}).get("base")
            if off == 0 and (base is None or lo < base):
                objects.setdefault(path, {})["base"] = lo
    where = {}
    for s in dump["sites"].values():
        for a in s["frames"]:
            for lo, hi, off, path in dump["maps"]:
                if lo <= a < hi and path.startswith("/"):
                    rel = a - 1 if elf_is_exec(path) else a - 1 - objects.get(path, {}).get("base", lo)
                    where[a] = (path, rel)
                    break
    out = {a: {"function": "??", "file": None, "line": None,
               "object": os.path.basename(p), "offset": rel} for a, (p, rel) in where.items()}
    by_obj = {}
    for a, (p, rel) in where.items():
        by_obj.setdefault(p, []).append((a, rel))
    for path, items in by_obj.items():
        try:
            r = subprocess.run([addr2line, "-f", "-C", "-p", "-e", path] + ["%#x" % rel for _, rel in items],
                               capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            continue
        lines = r.stdout.splitlines()
        for (a, _), text in zip(items, lines):
            func, _, loc = text.partition(" at ") if " at " in text else (text.split(" ")[0], "", "")
            loc = loc.split(" (discriminator")[0].strip()
            e = out[a]
            if func.strip() and func.strip() != "??":
                e["function"] = func.strip()
            file, _, line = loc.rpartition(":")
            if file and file != "??" and line.isdigit() and int(line) > 0:
                e["file"], e["line"] = file, int(line)
    return out


def frame_text(e):
    if e["file"]:
        return "%s (%s:%d)" % (e["function"], os.path.basename(e["file"]), e["line"])
    if e["function"] != "??":
        # no line: a stripped object, whose name is the nearest exported
        # symbol before the address, which may not be the function's own
        return "near %s (%s)" % (e["function"], e["object"])
    return "%s+%#x" % (e["object"], e["offset"])


# ---- sites ---------------------------------------------------------------------

COUNTS = ("allocs", "frees", "resized", "bytes", "usable", "remote", "live", "peak", "together", "runs")
HISTS = ("hsize", "hlife_ns", "hlife_allocs", "hrun")


def merge_sites(dump, syms):
    """Sites by the line that calls malloc (its stacks merged), or by the
    whole stack where that line is unknown."""
    merged = {}
    for sid, s in dump["sites"].items():
        if not s.get("allocs"):
            continue
        frames = [syms.get(a, {"function": "??", "file": None, "line": None, "object": "?", "offset": a})
                  for a in s["frames"]]
        top = frames[0]
        key = ("line", top["file"], top["line"]) if top["file"] else ("stack",) + tuple(frame_text(e) for e in frames)
        m = merged.get(key)
        if m is None:
            m = merged[key] = {"frames": [frame_text(e) for e in frames], "function": top["function"],
                               "file": top["file"], "line": top["line"], "object": top["object"],
                               "stacks": 0, "threads": 0, "sizes": [], "nsizes": 0, "min": None, "max": 0}
            for c in COUNTS:
                m[c] = 0
            for h in HISTS:
                m[h] = {}
        m["stacks"] += 1
        for c in COUNTS:
            m[c] += s.get(c, 0)
        for h in HISTS:
            for b, v in s.get(h, {}).items():
                m[h][b] = m[h].get(b, 0) + v
        m["threads"] = max(m["threads"], s.get("threads", 0))
        m["min"] = s["min"] if m["min"] is None else min(m["min"], s["min"])
        m["max"] = max(m["max"], s["max"])
        sizes = set(m["sizes"]) | set(s.get("sizes", []))
        many = s.get("nsizes", 0) > POOL_SIZES or m["nsizes"] > POOL_SIZES or len(sizes) > POOL_SIZES
        m["sizes"] = sorted(sizes)[:POOL_SIZES]
        m["nsizes"] = POOL_SIZES + 1 if many else len(sizes)
    return list(merged.values())


def scale_counts(sites, scale):
    """Sampled counts to estimates of the whole: each times the sampling
    scale; the peak too, but never above the longest lifetime's bound (a
    site whose blocks all die within L allocations has at most L live)."""
    if scale <= 1:
        return
    for s in sites:
        for c in COUNTS:
            if c not in ("runs", "peak"):
                s[c] = s[c] * scale
        bound = 2 ** max(s["hlife_allocs"]) if s["hlife_allocs"] and not s["live"] else float("inf")
        s["peak"] = max(s["peak"], min(s["peak"] * scale, bound))


def hist_median(h):
    """The median of a log2 histogram, as its bucket's upper bound (bucket b
    holds [2^(b-1), 2^b)); None when empty."""
    n = sum(h.values())
    if not n:
        return None
    seen = 0
    for b in sorted(h):
        seen += h[b]
        if seen * 2 >= n:
            return 0 if b == 0 else 2 ** b - 1
    return None


def classify(s, total_allocs):
    """(style, reason): the style a site's pattern fits, before pricing."""
    n = s["allocs"]
    if n < RARE_ALLOCS or n < RARE_SHARE * total_allocs:
        return "leave", "rare: %d allocations (%.2f%% of the process's)" % (n, 100.0 * n / max(total_allocs, 1))
    if s["resized"] > RESIZED_SHARE * n:
        return "leave", "grown by realloc (%d of %d blocks): a pool or an arena cannot resize" % (s["resized"], n)
    poolable = s["nsizes"] <= POOL_SIZES
    frees = max(s["frees"], 1)
    if s["remote"] > REMOTE_SHARE * frees:
        if poolable:
            return "pool", "%.0f%% freed on another thread, %s" % (100.0 * s["remote"] / frees, sizes_text(s))
        return "leave", "freed on another thread, in many sizes"
    together = (s["together"] + s["live"]) / n
    if together >= TOGETHER_SHARE:
        alone = (s["frees"] - s["together"]) / n
        style = "arena" if alone <= INDIVIDUAL_SHARE else "heap"
        return style, "%.0f%% die together (%d runs of frees%s), %.0f%% freed alone" % (
            100 * together, s["runs"], ", %d never freed" % s["live"] if s["live"] else "", 100 * max(alone, 0))
    if poolable:
        if s["threads"] <= 1 and s["remote"] == 0:
            return "local", "freed one by one on one thread, %s" % sizes_text(s)
        return "pool", "freed one by one on %d threads, %s" % (s["threads"], sizes_text(s))
    life = hist_median(s["hlife_allocs"])
    if life is not None and life <= SHORT_LIFE and s["remote"] == 0:
        return "autorelease", "short-lived (median %d allocations), many sizes" % life
    return "leave", "many sizes, long-lived"


def sizes_text(s):
    if s["nsizes"] > POOL_SIZES:
        return "%d-%d B" % (s["min"], s["max"])
    return ", ".join("%d B" % z for z in s["sizes"])


def loop_of(s):
    """The advise-costs loop that matches the site's pattern."""
    life = hist_median(s["hlife_allocs"])
    if life is not None and life <= HOT_LIFE and s["peak"] <= HOT_PEAK:
        return "hot"
    return "batch"


def cost_at(costs, style, loop, size):
    """(ns, measured size): the cost at the smallest measured size that
    holds size (the largest measured size beyond them); None if missing."""
    sizes = costs["sizes"]
    i = next((k for k, z in enumerate(sizes) if z >= size), len(sizes) - 1)
    v = costs["ns"].get(style, {}).get(loop, [None] * len(sizes))[i]
    return (v[0], sizes[i]) if v else None


def price(s, style, costs, run_ns):
    """The predicted saving of style at site s, from the measured costs."""
    if style == "leave":
        return None
    loop = "batch" if style in ("arena", "heap") else "hot" if style == "autorelease" else loop_of(s)
    size = s["bytes"] / max(s["allocs"], 1)
    base = cost_at(costs, "malloc", loop, size)
    new = cost_at(costs, STYLE_COST[style], loop, size)
    if not base or not new:
        return None
    saving_ns = s["allocs"] * (base[0] - new[0])
    p = {"loop": loop, "size": base[1], "malloc_ns": base[0], "style_ns": new[0],
         "saving_ms": saving_ns / 1e6, "saving_share": saving_ns / run_ns if run_ns else None,
         "basis": "%d allocations x (malloc %.1f ns - %s %.1f ns), %s loop at %d B" % (
             s["allocs"], base[0], STYLE_COST[style], new[0], loop, base[1])}
    if style in ("local", "pool", "arena", "heap"):
        # glibc's chunk (usable size + its 8-byte header) against the slot
        # the pool or arena gives (the size rounded up to 16), at the peak
        chunk = s["usable"] / max(s["allocs"], 1) + 8
        slot = math.ceil(size / 16) * 16
        p["memory_kib"] = s["peak"] * (chunk - slot) / 1024
    return p


def advise(sites, total_allocs, costs, run_ns):
    """Each site with its style, price and advice, best saving first."""
    out = []
    for s in sites:
        style, reason = classify(s, total_allocs)
        p = price(s, style, costs, run_ns)
        advice = style
        if p and p["saving_ms"] <= 0:
            advice, reason = "leave", "%s (%s would cost %.1f ns against malloc's %.1f)" % (
                reason, STYLE_COST[style], p["style_ns"], p["malloc_ns"])
        elif p and run_ns and p["saving_share"] < WORTH_SHARE:
            advice, reason = "leave", "%s; %s would save %.2f%% of the run" % (reason, STYLES[style],
                                                                                100 * p["saving_share"])
        elif style != "leave" and not p:
            advice, reason = "leave", "%s; no cost measured at this size" % reason
        out.append(dict(s, style=style, advice=advice, reason=reason, price=p))
    out.sort(key=lambda x: (0, -x["price"]["saving_ms"]) if x["advice"] != "leave" else (1, -x["allocs"]))
    return out


# ---- running the program ------------------------------------------------------


def run_once(argv, env, stdin_path, out_path):
    """Wall seconds of one run; raises on a non-zero exit."""
    with open(stdin_path or os.devnull, "rb") as fin, open(out_path, "wb") as fout:
        t = time.perf_counter()
        r = subprocess.run(argv, stdin=fin, stdout=fout, stderr=subprocess.PIPE, env=env)
        wall = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError("%s exited with status %d: %s" % (argv[0], r.returncode,
                                                             r.stderr.decode(errors="replace").strip()[-400:]))
    return wall


def record_env(lib, prefix, sample, depth):
    env = dict(os.environ)
    env.pop("GLIBC_TUNABLES", None)
    env["LD_PRELOAD"] = lib
    env["PK_ADVISE_OUT"] = prefix
    env["PK_ADVISE_SAMPLE"] = str(sample)
    env["PK_ADVISE_DEPTH"] = str(depth)
    return env


def main_dump(prefix):
    """The dump of the process that allocated most (the program, not a
    helper it forked or ran), and the others' count."""
    d = os.path.dirname(prefix) or "."
    files = [os.path.join(d, f) for f in os.listdir(d) if f.startswith(os.path.basename(prefix) + ".")]
    dumps = [parse_dump(f) for f in files]
    for f in files:
        os.unlink(f)
    if not dumps:
        return None, 0
    return max(dumps, key=lambda x: x.get("allocs", 0)), len(dumps) - 1


def record(args, work):
    """Runs the program plain and recorded, interleaved; returns the main
    dump and the timing figures."""
    argv = args.program
    plain_env = dict(os.environ)
    plain_env.pop("LD_PRELOAD", None)
    out = os.path.join(work, "stdout")
    prefix = os.path.join(work, "rec")
    plain = [run_once(argv, plain_env, args.stdin, out)]
    sample, counted = args.sample, None
    if sample == "auto":
        # a counting run (no stack walked): what every allocation costs the
        # recording anyway, and the walk's cost; the walks get what is left
        # of the budget (at least a tenth of the run), at three times the
        # walk's cost measured at the recording's start (a real program's
        # stacks cost more to walk)
        t = run_once(argv, record_env(args.record_lib, prefix, 1 << 40, args.depth), args.stdin, out)
        d, _ = main_dump(prefix)
        counted = {"allocs": d["allocs"], "walk_ns": d["walk_ns"], "seconds": t} if d else None
        sample = 1
        if d:
            budget = max(0.1, BUDGET - (t / plain[0] - 1)) * plain[0] * 1e9
            sample = max(1, math.ceil(d["allocs"] * d["walk_ns"] * 3 / budget))
    sample = int(sample)
    recorded, dump, others, resampled = [], None, 0, None
    for i in range(args.runs):
        if i:
            plain.append(run_once(argv, plain_env, args.stdin, out))
        recorded.append(run_once(argv, record_env(args.record_lib, prefix, sample, args.depth), args.stdin, out))
        d, o = main_dump(prefix)
        if dump is None:
            dump, others = d, o
        if i == 0 and counted and d and recorded[0] > 1.9 * plain[0] and resampled is None:
            # over budget: what one recorded allocation cost in this run,
            # and the sampling that fits it; the run again with it
            each = (recorded[0] - counted["seconds"]) * 1e9 / max(d["tracked"], 1)
            budget = max(0.1, BUDGET - (counted["seconds"] / plain[0] - 1)) * plain[0] * 1e9
            resampled = {"from": sample, "each_ns": each}
            sample = max(sample + 1, math.ceil(d["allocs"] * each / budget))
            recorded.pop()
            recorded.append(run_once(argv, record_env(args.record_lib, prefix, sample, args.depth), args.stdin, out))
            dump, others = main_dump(prefix)
    if dump is None:
        raise RuntimeError("the recording wrote nothing (a static program, or one that ends with _exit?)")
    timing = {"plain_s": plain, "recorded_s": recorded, "sample": sample, "counting_run": counted,
              "resampled": resampled,
              "overhead": statistics.median(recorded) / statistics.median(plain),
              "other_processes": others}
    return dump, timing


def measure_costs(lab, sites, path=None):
    """advise-costs' figures at the sizes the sites need, or those of the
    file at path (a run of `pk-lab advise-costs` saved by the lab)."""
    if path:
        with open(path) as f:
            return json.load(f)
    sizes = [16]
    biggest = max((s["bytes"] / max(s["allocs"], 1) for s in sites), default=16)
    while sizes[-1] < min(biggest, 65536):
        sizes.append(sizes[-1] * 2)
    cmd = [lab, "advise-costs", "--reps", "5"] + [str(z) for z in sizes]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


# ---- the report -----------------------------------------------------------------


def fmt_count(n):
    return "{:,}".format(int(round(n)))


def life_text(s):
    a, t = hist_median(s["hlife_allocs"]), hist_median(s["hlife_ns"])
    if a is None:
        return "never freed"
    ts = "%.0f ns" % t if t < 1e3 else "%.1f us" % (t / 1e3) if t < 1e6 else "%.1f ms" % (t / 1e6) if t < 1e9 \
        else "%.1f s" % (t / 1e9)
    return "< %s allocs, < %s" % (fmt_count(a + 1), ts)


def site_name(s):
    if s["file"]:
        return "%s %s:%d" % (s["function"], os.path.basename(s["file"]), s["line"])
    return " < ".join(s["frames"][:3])


def write_chart(path, top):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no chart: matplotlib is not installed (scripts/lab-setup.sh puts it in .venv)"
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, s in enumerate(top):
        h = s["hlife_allocs"]
        if not h:
            continue
        n = sum(h.values())
        xs = list(range(1, max(h) + 2))  # bucket b: [2^(b-1), 2^b), drawn from its lower bound
        ax.step([2 ** (b - 1) for b in xs], [100.0 * h.get(b, 0) / n for b in xs], where="post",
                label="%d. %s (%s)" % (i + 1, site_name(s)[:48], STYLES[s["advice"]]))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("lifetime: allocations (of any site) between a block's allocation and its free")
    ax.set_ylabel("% of the site's frees")
    ax.set_title("Lifetimes of the top sites")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def report(args, dump, timing, costs, rows, run_ns):
    top = rows[:args.top]
    lines = []
    cmd = " ".join(args.program) + (" < %s" % args.stdin if args.stdin else "")
    lines.append("# pk-lab advise: %s\n" % os.path.basename(args.program[0]))
    lines.append("Command: `%s`; %s allocations in %.1f ms (median of %d plain runs).\n" % (
        cmd, fmt_count(dump["allocs"]), run_ns / 1e6, len(timing["plain_s"])))
    samp = timing["sample"]
    lines.append("Recording: `libpoolkit-record.so`, %d frames per stack, %s; overhead %.2fx "
                 "(median recorded %.1f ms over median plain %.1f ms, %d runs each, interleaved).\n" % (
                     dump["depth"], "every allocation" if samp == 1 else
                     "sampled, one allocation in %d on average (counts scaled by %.1f)" % (
                         samp, dump["allocs"] / max(dump["tracked"], 1)),
                     timing["overhead"], 1e3 * statistics.median(timing["recorded_s"]),
                     1e3 * statistics.median(timing["plain_s"]), len(timing["plain_s"])))
    lines.append("Costs: `%s` (ns per allocation and free, net of the empty loop, median of %d; %s).\n" % (
        costs["source"], costs["reps"], costs["cpu"]))
    lines.append("| # | site | allocations | sizes | lifetime (median) | threads | die together | peak live "
                 "| advice | saving ms | % of run | why |")
    lines.append("| " + " | ".join(["---"] * 12) + " |")
    for i, s in enumerate(top):
        p = s["price"] if s["advice"] != "leave" else None
        frees = max(s["frees"], 1)
        lines.append("| %d | %s | %s | %s | %s | %d%s | %.0f%% | %s | %s | %s | %s | %s |" % (
            i + 1, site_name(s), fmt_count(s["allocs"]), sizes_text(s), life_text(s), s["threads"],
            " (%.0f%% freed on another)" % (100.0 * s["remote"] / frees) if s["remote"] else "",
            100.0 * (s["together"] + s["live"]) / max(s["allocs"], 1), fmt_count(s["peak"]),
            STYLES[s["advice"]], "%.2f" % p["saving_ms"] if p else "-",
            "%.1f%%" % (100 * p["saving_share"]) if p else "-", s["reason"]))
    lines.append("")
    lines.append("Predicted savings, what each rests on:\n")
    for i, s in enumerate(top):
        if s["advice"] != "leave":
            mem = s["price"].get("memory_kib")
            lines.append("- %d. %s: %s = %.2f ms%s" % (
                i + 1, site_name(s), s["price"]["basis"], s["price"]["saving_ms"],
                "; memory at the peak: %.1f KiB %s (glibc's chunks against 16-byte slots)" % (
                    abs(mem), "less" if mem >= 0 else "more") if mem is not None else ""))
    if not any(s["advice"] != "leave" for s in top):
        lines.append("- nothing to gain: no site's style saves %.0f%% of the run at the costs measured here."
                     % (100 * WORTH_SHARE))
    lines.append("")
    for i, s in enumerate(top[:5]):
        lines.append("Stack of %d: %s" % (i + 1, " < ".join(s["frames"])))
    lines.append("")
    chart_note = write_chart(os.path.join(args.out, "lifetimes.png"), top[:5])
    lines.append(chart_note or "![lifetimes](lifetimes.png)")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "advise.md"), "w") as f:
        f.write(text)
    summary = {"overhead": timing["overhead"], "sample": timing["sample"], "allocs": dump["allocs"],
               "run_ms": run_ns / 1e6, "worth": sum(1 for s in rows if s["advice"] != "leave"),
               "top": [{"site": site_name(s), "function": s["function"], "advice": s["advice"], "style": s["style"],
                        "saving_ms": (s["price"] or {}).get("saving_ms"),
                        "saving_share": (s["price"] or {}).get("saving_share"),
                        "allocs": s["allocs"]} for s in rows[:3]]}
    data = {"summary": summary, "command": cmd, "allocs": dump["allocs"], "run_ms": run_ns / 1e6, "timing": timing,
            "depth": dump["depth"], "costs": costs,
            "rules": {k: v for k, v in globals().items() if k.isupper() and isinstance(v, (int, float))},
            "sites": [{k: v for k, v in s.items() if not k.startswith("h")} |
                      {"lifetime_allocs": s["hlife_allocs"], "lifetime_ns": s["hlife_ns"], "sizes_log2": s["hsize"],
                       "runs_log2": s["hrun"]} for s in rows[:max(args.top, 50)]]}
    with open(os.path.join(args.out, "advise.json"), "w") as f:
        json.dump(data, f, indent=1, default=str)
    return text


def main(argv=None):
    ap = argparse.ArgumentParser(prog="pk-lab advise", description=__doc__.split("\n\n")[0])
    ap.add_argument("--record-lib", required=True, help=argparse.SUPPRESS)
    ap.add_argument("--lab", required=True, help=argparse.SUPPRESS)
    ap.add_argument("--top", type=int, default=10, help="sites in the table (default 10)")
    ap.add_argument("--out", default="advise-report", help="the report's folder (default advise-report)")
    ap.add_argument("--runs", type=int, default=3, help="plain and recorded runs each (default 3)")
    ap.add_argument("--sample", default="auto", help="record one allocation in N, or auto (default)")
    ap.add_argument("--depth", type=int, default=4, help="frames per stack (1-8, default 4)")
    ap.add_argument("--stdin", help="a file for the program's standard input")
    ap.add_argument("--costs", help="advise-costs' JSON to price with, instead of measuring now")
    ap.add_argument("--quiet", action="store_true", help="no table on stdout")
    ap.add_argument("program", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    if args.program and args.program[0] == "--":
        args.program = args.program[1:]
    if not args.program:
        ap.error("no program: pk-lab advise [options] -- PROGRAM [ARGS...]")
    if args.sample != "auto" and not args.sample.isdigit():
        ap.error("--sample takes a number or auto")
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="pk-advise-")
    try:
        dump, timing = record(args, work)
    except (OSError, RuntimeError) as e:
        print("pk-lab advise: %s" % e, file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    syms = symbolize(dump)
    sites = merge_sites(dump, syms)
    scale_counts(sites, dump["allocs"] / max(dump["tracked"], 1))
    costs = measure_costs(args.lab, sites, args.costs)
    run_ns = statistics.median(timing["plain_s"]) * 1e9
    rows = advise(sites, dump["allocs"], costs, run_ns)
    text = report(args, dump, timing, costs, rows, run_ns)
    if not args.quiet:
        print(text)
    print("pk-lab advise: report in %s/advise.md (advise.json, lifetimes.png)" % args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
