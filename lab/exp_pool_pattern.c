/* pool-pattern: the typed memory pool benchmark (Zig, 2023).
 *
 * A fixed-seed random pattern of allocations and frees around a small live
 * set (PROTOCOL.md gives it exactly, so that every program makes the same
 * calls): each round frees a random live object with probability
 * len(open)/256 and allocates one with the complement. Three sizes: 1 byte,
 * 8 KiB and 1 MiB. Every contender runs in a forked child, so that its peak
 * RSS is its own; the child warms up on a tenth of the rounds, then times
 * the rounds with the same context (what the warm-up left cached stays, as
 * glibc's heap does: steady state, not first use). Figures
 * are ns per round, and net of the empty loop (the same pattern with a
 * static buffer for "allocation") measured in the same repetition.
 * Beside the allocators, the naive free list (peer_naive.c: a free list in
 * front of an arena, Zig MemoryPool's algorithm, standing in for it where
 * Zig is not run). Target (bench/bench_pattern.c's for the big size): at
 * medium and big, pk_pool's net time at most 1.3x the free list's + 2 ns
 * (medians of the net times).
 */
#include "lab.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXP "pool-pattern"

static const struct size_case {
    const char *name;
    size_t bytes;
    long rounds[4];               /* smoke, quick, default, full */
    double pub_us[3];             /* raw, arena, pool */
    long pub_allocs, pub_peak;
} sizes[] = {
    {"small", 1, {20000, 250000, 1000000, 2500000}, {3.25, 0.48, 0.43}, 1248859, 154},
    {"medium", 8192, {8000, 100000, 400000, 1000000}, {8.70, 1.92, 0.42}, 499709, 154},
    /* ten times the study's rounds past smoke: its 25,000 take a quarter
     * of a millisecond, too short to time (bench/bench_pattern.c) */
    {"big", 1048576, {200, 25000, 100000, 250000}, {224.03, 169.42, 2.60}, 12589, 146},
};
#define NSIZES 3

/* The in-process contenders, in table order. */
static const char *const contenders[] = {
    "empty loop",       "glibc malloc",     "jemalloc",        LAB_MIMALLOC,
    LAB_MIMALLOC3,      "tcmalloc",         "Boost.Pool object_pool", "Boost.Pool pool",
    "naive free list",  "poolkit pk_arena", "poolkit pk_pool",
};
#define NCONT (int)(sizeof contenders / sizeof contenders[0])

static const char *const published_subjects[3] = {
    "Zig 2023: general-purpose allocator", "Zig 2023: ArenaAllocator", "Zig 2023: MemoryPool"};

static long rounds_of(const struct size_case *s) {
    return lab_pick(s->rounds[0], s->rounds[1], s->rounds[2], s->rounds[3]);
}

static lab_params params_of(const struct size_case *s) {
    lab_params ps = {0};
    lab_pset_str(&ps, "size", s->name);
    lab_pset_num(&ps, "rounds", (double)rounds_of(s));
    return ps;
}

static void published(void) {
    for (int k = 0; k < NSIZES; k++) {
        lab_params ps = {0};
        lab_pset_str(&ps, "size", sizes[k].name);
        for (int i = 0; i < 3; i++) {
            lab_row *r = lab_published(EXP, published_subjects[i], &ps, "ns/op",
                                       sizes[k].pub_us[i] * 1000.0);
            lab_row_info(r, "Zig std.heap, 2023 (published)", NULL);
            lab_row_extra(r, "allocs", (double)sizes[k].pub_allocs);
            lab_row_extra(r, "peak_live", (double)sizes[k].pub_peak);
        }
    }
}

static void run(int rep) {
    for (int k = 0; k < NSIZES; k++) {
        const struct size_case *s = &sizes[k];
        long rounds = lab_warm(rounds_of(s));
        lab_params ps = params_of(s);
        double ns_round[NCONT], res[NCONT][6];
        int ok[NCONT];
        /* Rotate the starting contender each repetition, so that none is
         * always first after a size change. */
        for (int j = 0; j < NCONT; j++) {
            int i = (j + (rep > 0 ? rep : 0)) % NCONT;
            lab_allocator *a = lab_allocator_named(contenders[i]);
            ok[i] = 0;
            if (!a || !a->available || !a->pattern) continue;
            lab_progress(a->subject, s->name);
            if (lab_pattern_measure(a, s->bytes, rounds, res[i]) != 0) continue;
            ok[i] = 1;
            ns_round[i] = res[i][0] / (double)rounds;
        }
        if (rep < 0) continue;
        double empty = ok[0] ? ns_round[0] : 0;
        for (int i = 0; i < NCONT; i++) {
            lab_allocator *a = lab_allocator_named(contenders[i]);
            if (!a) continue;
            lab_row *r = lab_row_for(EXP, a, &ps);
            if (!a->available) continue;
            if (!ok[i]) {
                if (r->samples.n == 0) lab_row_unavailable(r, "the contender failed in its child process");
                continue;
            }
            lab_row_sample(r, ns_round[i]);
            lab_row_extra(r, "net", ns_round[i] - empty);
            lab_row_extra(r, "peak_rss_kb", res[i][5]);
            if (!isnan(res[i][3])) lab_row_extra(r, "pk_reserved_peak_kb", res[i][3]);
            lab_row_extra(r, "allocs", res[i][1]);
            lab_row_extra(r, "peak_live", res[i][2]);
        }
    }
}

static void print(FILE *out) {
    char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
    fprintf(out, "== pool-pattern: the typed memory pool benchmark (Zig, 2023)\n");
    fprintf(out, "   ns per round [min - max], net of the empty loop; peak RSS of a child "
                 "process per contender\n");
    for (int k = 0; k < NSIZES; k++) {
        const struct size_case *s = &sizes[k];
        char want[48];
        snprintf(want, sizeof want, "\"%s\"", s->name);
        fprintf(out, "\n  %s (%zu B objects), %s rounds; published (Zig 2023, us per op): raw %s, "
                     "arena %s, pool %s; %s allocs, peak %ld live\n",
                s->name, s->bytes, lab_fmt((double)rounds_of(s), b1), lab_fmt(s->pub_us[0], b2),
                lab_fmt(s->pub_us[1], b3), lab_fmt(s->pub_us[2], b4),
                lab_fmt((double)s->pub_allocs, b5), s->pub_peak);
        fprintf(out, "  %-30s %10s %23s %10s %10s %6s %12s %12s\n", "contender", "ns/round",
                "[min - max]", "net", "allocs", "peak", "peak RSS KiB", "reserved KiB");
        for (int i = 0; i < lab_row_count(); i++) {
            lab_row *r = lab_row_at(i);
            const char *sz = lab_param_get(r, "size");
            if (strcmp(r->experiment, EXP) || !strcmp(r->family, "published")) continue;
            if (sz ? strcmp(sz, want) : k != 0) continue;
            if (!r->available) {
                fprintf(out, "  %-30s %s: %.90s\n", r->subject, r->failed ? "failed" : "n/a", r->why);
                continue;
            }
            char range[48];
            snprintf(range, sizeof range, "[%s - %s]", lab_fmt(lab_min(&r->samples), b1),
                     lab_fmt(lab_max(&r->samples), b2));
            double pk = lab_extra_median(r, "pk_reserved_peak_kb");
            fprintf(out, "  %-30s %10s %23s %10s %10s %6s %12s %12s\n", r->subject,
                    lab_fmt_row(r, b3), range, lab_fmt(lab_extra_median(r, "net"), b4),
                    lab_fmt(lab_extra_median(r, "allocs"), b5),
                    lab_fmt(lab_extra_median(r, "peak_live"), b6),
                    lab_fmt(lab_extra_median(r, "peak_rss_kb"), b1), isnan(pk) ? "" : lab_fmt(pk, b2));
        }
    }
    fprintf(out, "  (reserved KiB: poolkit rows only, from poolkit's own JSON report of the run read "
                 "back: the most its pools and arenas held from the system at once)\n");
    /* pk_pool against a plain free list (the naive free list, Zig
     * MemoryPool's algorithm) where objects are not tiny: medium and big */
    lab_target t = LAB_TARGET_INIT;
    for (int k = 1; k < NSIZES; k++) {
        char want[48];
        snprintf(want, sizeof want, "\"%s\"", sizes[k].name);
        lab_row *p = lab_find(EXP, "poolkit pk_pool", "size", want, NULL);
        lab_row *n = lab_find(EXP, "naive free list", "size", want, NULL);
        double pn = p && p->available ? lab_extra_median(p, "net") : NAN;
        double nn = n && n->available ? lab_extra_median(n, "net") : NAN;
        double bound = 1.3 * nn + 2.0;
        /* judged as the excess over the bound (a net time may be near 0 or below) */
        lab_target_add(&t, ", ", pn - bound, 0.0, "%s %s vs %s ns (bound %s)", sizes[k].name, lab_fmt(pn, b1),
                       lab_fmt(nn, b2), lab_fmt(bound, b3));
    }
    fprintf(out, "  target (pool-pattern): pk_pool net at most 1.3x the naive free list's + 2 ns, medium and "
                 "big: %s -> %s\n", t.line, lab_target_verdict(&t));
}

const lab_experiment lab_exp_pool_pattern = {
    EXP, "The typed memory pool benchmark (Zig, 2023)", "ns/round", 8.0, published, run, print, NULL,
};
