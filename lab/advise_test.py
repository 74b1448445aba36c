#!/usr/bin/env python3
"""Tests of pk-lab advise (lab/advise.py).

    advise_test.py                 the classifier and the pricing, on fixed
                                   figures (ctest lab.advise_units)
    advise_test.py --programs RECORD_LIB --out DIR
                                   Debian programs under the recording
                                   library (every allocation, and sampled):
                                   the same output as without it, and a
                                   dump from each (ctest lab.advise_programs)
    advise_test.py --sites PROGRAM --lab PK_LAB --source SITES_C --out DIR
                                   lab/advise/sites.c under pk-lab advise:
                                   each of its five marked sites gets its advice, named
                                   by its file and line (ctest lab.advise_sites)
"""
import argparse
import json
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import advise as A  # noqa: E402


def site(**kw):
    """A one-size site of 100,000 allocations, all freed alone on the
    allocating thread, short-lived; kw overrides."""
    s = {"allocs": 100000, "frees": 100000, "resized": 0, "bytes": 100000 * 48, "usable": 100000 * 56,
         "remote": 0, "live": 0, "peak": 10, "together": 0, "runs": 0, "threads": 1, "sizes": [48],
         "nsizes": 1, "min": 48, "max": 48, "hlife_allocs": {3: 100000}, "hlife_ns": {8: 100000},
         "hsize": {6: 100000}, "hrun": {1: 100000}, "function": "f", "file": "f.c", "line": 1,
         "frames": ["f (f.c:1)"], "object": "prog"}
    s.update(kw)
    return s


TOTAL = 1000000
# Fixed costs, ns per allocation: sizes 16, 64, 256.
COSTS = {"sizes": [16, 64, 256], "source": "fixed", "reps": 1, "cpu": "test",
         "ns": {"malloc": {"hot": [[10, 10, 10], [11, 11, 11], [12, 12, 12]],
                           "batch": [[20, 20, 20], [21, 21, 21], [22, 22, 22]]},
                "pool": {"hot": [[4, 4, 4], [4.5, 4.5, 4.5], [5, 5, 5]], "batch": [[8, 8, 8], [9, 9, 9], [10, 10, 10]]},
                "local": {"hot": [[2, 2, 2], [3, 3, 3], [4, 4, 4]], "batch": [[5, 5, 5], [6, 6, 6], [7, 7, 7]]},
                "arena": {"hot": [[1, 1, 1], [2, 2, 2], [3, 3, 3]], "batch": [[1, 1, 1], [1.5, 1.5, 1.5], [2, 2, 2]]},
                "autorelease": {"hot": [[30, 30, 30], [31, 31, 31], [32, 32, 32]],
                                "batch": [[6, 6, 6], [7, 7, 7], [8, 8, 8]]}}}


class Classify(unittest.TestCase):
    def style(self, **kw):
        return A.classify(site(**kw), TOTAL)[0]

    def test_one_size_churn_on_one_thread_is_a_local_pool(self):
        self.assertEqual(self.style(), "local")

    def test_one_size_churn_on_two_threads_is_a_shared_pool(self):
        self.assertEqual(self.style(threads=2), "pool")

    def test_frees_on_another_thread_take_a_shared_pool(self):
        self.assertEqual(self.style(remote=50000), "pool")
        self.assertEqual(self.style(remote=A.REMOTE_SHARE * 100000 + 1), "pool")

    def test_a_few_remote_frees_still_allow_a_local_pool_only_when_there_are_none(self):
        self.assertEqual(self.style(remote=1, threads=1), "pool")

    def test_remote_frees_in_many_sizes_are_left(self):
        self.assertEqual(self.style(remote=50000, nsizes=5, sizes=[1, 2, 3, 4]), "leave")

    def test_up_to_four_sizes_are_poolable_five_are_not(self):
        self.assertEqual(self.style(nsizes=4, sizes=[16, 32, 48, 64]), "local")
        self.assertEqual(self.style(nsizes=5, sizes=[16, 32, 48, 64], hlife_allocs={20: 100000}), "leave")

    def test_remote_frees_beyond_the_share_forbid_an_arena(self):
        bound = int(A.REMOTE_SHARE * 100000)
        self.assertEqual(self.style(together=95000, runs=500, remote=bound), "arena")
        self.assertEqual(self.style(together=95000, runs=500, remote=bound + 1), "pool")

    def test_blocks_freed_in_runs_take_an_arena(self):
        self.assertEqual(self.style(together=95000, runs=500), "arena")

    def test_the_together_share_is_a_closed_bound(self):
        n = int(A.TOGETHER_SHARE * 100000)
        self.assertEqual(self.style(together=n, runs=10), "heap")
        self.assertEqual(self.style(together=n - 1, runs=10), "local")

    def test_some_frees_alone_make_it_a_heap_freed_whole(self):
        self.assertEqual(self.style(together=60000, runs=100), "heap")
        alone = int(A.INDIVIDUAL_SHARE * 100000)
        self.assertEqual(self.style(together=100000 - alone, runs=100), "arena")
        self.assertEqual(self.style(together=100000 - alone - 1, runs=100), "heap")

    def test_never_freed_blocks_die_together_at_exit(self):
        self.assertEqual(self.style(frees=0, live=100000, hlife_allocs={}), "arena")

    def test_rare_sites_are_left(self):
        self.assertEqual(self.style(allocs=A.RARE_ALLOCS - 1, frees=A.RARE_ALLOCS - 1), "leave")
        self.assertEqual(A.classify(site(), 100000 / A.RARE_SHARE + 1000)[0], "leave")
        self.assertEqual(self.style(allocs=A.RARE_ALLOCS, frees=A.RARE_ALLOCS), "local")

    def test_blocks_grown_by_realloc_are_left(self):
        self.assertEqual(self.style(resized=30000), "leave")
        self.assertEqual(self.style(resized=20000), "local")

    def test_short_lived_blocks_of_many_sizes_take_an_autorelease_scope(self):
        many = dict(nsizes=5, sizes=[16, 32, 48, 64])
        self.assertEqual(self.style(hlife_allocs={6: 100000}, **many), "autorelease")
        self.assertEqual(self.style(hlife_allocs={8: 100000}, **many), "leave")


class Price(unittest.TestCase):
    def test_a_short_lived_site_is_priced_in_the_hot_loop_at_the_size_that_holds_it(self):
        p = A.price(site(), "local", COSTS, 1e9)
        self.assertEqual((p["loop"], p["size"]), ("hot", 64))
        self.assertAlmostEqual(p["saving_ms"], 100000 * (11 - 3) / 1e6)
        self.assertAlmostEqual(p["saving_share"], 100000 * (11 - 3) / 1e9)

    def test_many_live_blocks_are_priced_in_the_batch_loop(self):
        p = A.price(site(peak=1000), "local", COSTS, 1e9)
        self.assertEqual(p["loop"], "batch")
        self.assertAlmostEqual(p["saving_ms"], 100000 * (21 - 6) / 1e6)
        p = A.price(site(hlife_allocs={10: 100000}), "pool", COSTS, 1e9)
        self.assertAlmostEqual(p["saving_ms"], 100000 * (21 - 9) / 1e6)

    def test_each_style_is_priced_with_its_own_cost(self):
        self.assertAlmostEqual(A.price(site(), "pool", COSTS, 1e9)["saving_ms"], 100000 * (11 - 4.5) / 1e6)
        self.assertAlmostEqual(A.price(site(), "arena", COSTS, 1e9)["saving_ms"], 100000 * (21 - 1.5) / 1e6)
        self.assertAlmostEqual(A.price(site(), "heap", COSTS, 1e9)["saving_ms"], 100000 * (21 - 1.5) / 1e6)
        self.assertAlmostEqual(A.price(site(), "autorelease", COSTS, 1e9)["saving_ms"], 100000 * (11 - 31) / 1e6)

    def test_sizes_beyond_the_measured_ones_take_the_largest(self):
        p = A.price(site(bytes=100000 * 16), "local", COSTS, 1e9)
        self.assertEqual(p["size"], 16)
        p = A.price(site(bytes=100000 * 17), "local", COSTS, 1e9)
        self.assertEqual(p["size"], 64)
        p = A.price(site(bytes=100000 * 5000), "local", COSTS, 1e9)
        self.assertEqual(p["size"], 256)

    def test_memory_is_glibcs_chunk_against_a_16_byte_slot_at_the_peak(self):
        p = A.price(site(peak=1024), "local", COSTS, 1e9)
        self.assertAlmostEqual(p["memory_kib"], 1024 * (56 + 8 - 48) / 1024)

    def test_a_slot_is_the_size_rounded_up_to_16(self):
        p = A.price(site(peak=1024, bytes=100000 * 40, usable=100000 * 40), "local", COSTS, 1e9)
        self.assertAlmostEqual(p["memory_kib"], 0)

    def test_leave_is_not_priced(self):
        self.assertIsNone(A.price(site(), "leave", COSTS, 1e9))


class Sampling(unittest.TestCase):
    def test_counts_scale_and_the_peak_stays_under_the_lifetime_bound(self):
        s = site(allocs=1000, frees=1000, peak=4, hlife_allocs={2: 1000})
        A.scale_counts([s], 60)
        self.assertEqual((s["allocs"], s["frees"], s["peak"]), (60000, 60000, 4))
        s = site(allocs=1000, frees=1000, peak=100, hlife_allocs={20: 1000})
        A.scale_counts([s], 60)
        self.assertEqual(s["peak"], 6000)


class Advise(unittest.TestCase):
    def test_a_style_that_costs_more_than_malloc_is_left(self):
        many = dict(nsizes=5, sizes=[16, 32, 48, 64], hlife_allocs={2: 100000})
        (row,) = A.advise([site(**many)], TOTAL, COSTS, 1e9)
        self.assertEqual((row["style"], row["advice"]), ("autorelease", "leave"))
        self.assertIn("would cost 31.0 ns against malloc's 11.0", row["reason"])
        (row,) = A.advise([site(**many)], TOTAL, COSTS, 0)  # no run time: no share to judge by
        self.assertEqual(row["advice"], "leave")

    def test_a_saving_under_the_worth_share_of_the_run_is_left(self):
        (row,) = A.advise([site()], TOTAL, COSTS, 100000 * 8 / A.WORTH_SHARE * 1.01)
        self.assertEqual(row["advice"], "leave")
        (row,) = A.advise([site()], TOTAL, COSTS, 100000 * 8 / A.WORTH_SHARE * 0.99)
        self.assertEqual(row["advice"], "local")

    def test_sites_are_ranked_by_saving(self):
        rows = A.advise([site(line=1), site(line=2, together=100000, runs=9), site(line=3, allocs=10, frees=10)],
                        TOTAL, COSTS, 1e6)
        self.assertEqual([r["line"] for r in rows], [2, 1, 3])


# ---- the synthetic program ---------------------------------------------------

EXPECTED = {"churn": {"local"}, "together": {"arena", "heap"}, "remote": {"pool"}, "rare": {"leave"},
            "slow": {"local"}}


def check_sites(args):
    lines = {}
    with open(args.source) as f:
        for i, text in enumerate(f, 1):
            m = re.search(r"/\* site: (\w+) \*/", text)
            if m:
                lines[m.group(1)] = i
    assert set(lines) == set(EXPECTED), "sites.c's markers: %s" % sorted(lines)
    cmd = [args.lab, "advise", "--sample", "1", "--runs", "1", "--quiet", "--out", args.out, "--", args.sites, "0.3"]
    print(" ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    if r.returncode != 0:
        print("FAIL: pk-lab advise exited with %d" % r.returncode)
        return 1
    with open(os.path.join(args.out, "advise.json")) as f:
        data = json.load(f)
    failed = 0
    for name, line in sorted(lines.items()):
        rows = [s for s in data["sites"] if s["file"] and os.path.basename(s["file"]) == "sites.c"
                and s["line"] == line]
        if len(rows) != 1:
            print("FAIL: %s: %d rows name sites.c:%d" % (name, len(rows), line))
            failed += 1
            continue
        s = rows[0]
        # the style the pattern fits, and a saving priced (whether it is
        # worth a share of this run depends on the machine, not checked)
        priced = s["style"] == "leave" or (s["price"] or {}).get("saving_ms", 0) > 0
        ok = s["style"] in EXPECTED[name] and priced
        print("%s: sites.c:%d %s, style %s, advice %s (%s) -> %s" % (
            name, line, s["function"], s["style"], s["advice"], s["reason"],
            "ok" if ok else "FAIL: expected %s with a positive saving" % EXPECTED[name]))
        failed += not ok
    return 1 if failed else 0


# Programs that allocate in different ways (threads, fork and exec, realloc):
# each must give the same output under the recording library as without it.
PROGRAMS = [
    ["/usr/bin/python3", "-c", "import threading, json\n"
     "out = []\n"
     "def work(n): out.append(len(json.dumps([{'k': i, 'v': 'x' * (i % 50)} for i in range(n)])))\n"
     "ts = [threading.Thread(target=work, args=(3000 + i,)) for i in range(4)]\n"
     "[t.start() for t in ts]; [t.join() for t in ts]\n"
     "print(sorted(out))"],
    ["/usr/bin/perl", "-e", "my %h; $h{$_ % 977} .= 'ab' x ($_ % 7) for 1 .. 200000; "
     "print scalar(keys %h), ' ', length(join '', values %h), qq(\n)"],
    ["/bin/sh", "-c", "for i in 1 2 3; do echo line $i; done | sort -r | tr a-z A-Z"],
    ["/usr/bin/sort", "--parallel=2", "-S", "1M", os.path.abspath(__file__)],
]


def check_programs(args):
    failed = 0
    os.makedirs(args.out, exist_ok=True)
    for argv in PROGRAMS:
        if not os.access(argv[0], os.X_OK):
            print("%s: not installed, passed over" % argv[0])
            continue
        plain = subprocess.run(argv, capture_output=True)
        for sample in ("1", "7"):
            prefix = os.path.join(args.out, "rec")
            env = dict(os.environ, LD_PRELOAD=args.programs, PK_ADVISE_OUT=prefix, PK_ADVISE_SAMPLE=sample)
            rec = subprocess.run(argv, capture_output=True, env=env)
            dumps = [f for f in os.listdir(args.out) if f.startswith("rec.")]
            ok = rec.returncode == plain.returncode and rec.stdout == plain.stdout and dumps
            sites = 0
            for f in dumps:
                sites += len(A.parse_dump(os.path.join(args.out, f))["sites"])
                os.unlink(os.path.join(args.out, f))
            print("%s (sample %s): status %d, %d dumps, %d sites -> %s" % (
                os.path.basename(argv[0]), sample, rec.returncode, len(dumps), sites, "ok" if ok else "FAIL"))
            if not ok:
                sys.stdout.write(rec.stderr.decode(errors="replace")[-600:])
            failed += not ok
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sites")
    ap.add_argument("--programs")
    ap.add_argument("--lab")
    ap.add_argument("--source")
    ap.add_argument("--out")
    args, rest = ap.parse_known_args()
    if args.sites:
        return check_sites(args)
    if args.programs:
        return check_programs(args)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=1)


if __name__ == "__main__":
    sys.exit(main())
