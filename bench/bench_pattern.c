/* The random fill pattern of the typed memory pool benchmark (Zig, 2023;
 * LAB.md section 5).
 *
 * Keep a list `open`; each round, fill = len(open) / 256; if random() <= fill,
 * free a random element of open; if random() >= fill, allocate one object,
 * touch it (write its first byte) and append it. Fixed seed, so every
 * contender sees the same sequence of operations:
 *   small   1 B objects,    2,500,000 rounds
 *   3k      3 KiB objects,  1,000,000 rounds (not the study's: 21 to a slab)
 *   medium  8 KiB objects,  1,000,000 rounds
 *   300k    300 KiB objects,   100,000 rounds (not the study's: a slab each)
 *   big     1 MiB objects,    250,000 rounds (the study's 25,000 take a
 *           quarter of a millisecond, too short to time: the naive list's
 *           net came out 2-4 ns below the empty loop's; the pattern's
 *           shape is the same, peak 151 live; pk_arena's child, which
 *           never frees, then writes 490 MiB)
 *
 * The lab's pool-pattern measurement (lab_pattern_measure, the loop of
 * lab/kernels.h): each run is a forked child, so that its peak RSS is its
 * own; the child warms up on a tenth of the rounds, then times them at least
 * three times (median). Contenders (the lab's adapters): the empty loop
 * (same random numbers and list operations, no allocation), the naive free
 * list that never gives memory back (lab/peer_naive.c: the algorithm of
 * Zig's std.heap.MemoryPool, a free list in front of an arena; it stands in
 * for it here), glibc malloc, pk_arena (frees are no-ops; reset after the
 * rounds) and pk_pool (default flags).
 *
 * Reported: ns per round (median [min - max]); net = the contender's minimum
 * minus the empty loop's minimum (a difference of two larger numbers, so the
 * minima of the repetitions are used); the contenders run one after the
 * other within each repetition, so every ratio is of figures measured side
 * by side; peak RSS growth of the child; what
 * pk_pool held from the system at its peak and at the end, once every object
 * was freed (poolkit's own report, read back).
 *
 * Targets: small, pk_pool net within 0.5 ns of the naive free list's; every
 * other size, net <= 1.3x the naive list's + 2 ns, and pk_pool_trim gives
 * the memory back. Each target line prints glibc's net beside.
 *
 * Usage: bench_pattern [--reps N] [--quick] [--only small|3k|medium|300k|big]
 */
#include "harness.h"

#include <poolkit/pool.h>


typedef struct pattern {
    const char *name;
    size_t size;
    long rounds;
} pattern;

static pattern patterns[] = {
    {"small", 1, 2500000},
    {"3k", 3072, 1000000},
    {"medium", 8192, 1000000},
    {"300k", 300 << 10, 100000},
    {"big", 1 << 20, 250000},
};
#define NPATTERNS (int)(sizeof patterns / sizeof patterns[0])

enum { C_EMPTY, C_NAIVE, C_GLIBC, C_ARENA, C_POOL, NCONT };
static bench_contender cont[NCONT] = {
    BENCH_CONTENDER("empty loop", "empty loop (no allocation)"),
    BENCH_CONTENDER("naive free list", "naive free list (~Zig MemoryPool)"),
    BENCH_CONTENDER("glibc malloc", "glibc malloc/free"),
    BENCH_CONTENDER("poolkit pk_arena", "pk_arena (free = no-op)"),
    BENCH_CONTENDER("poolkit pk_pool", "pk_pool default"),
};

/* What lab_pattern_measure reports (lab/lab.h). */
enum { R_NS, R_ALLOCS, R_PEAK, R_PK_PEAK, R_PK_END, R_RSS, NRES };

static double mib_of_kib(double k) { return k / 1024.0; }

/* Whether pk_pool gives the pattern's memory back when asked: in a child,
 * the rounds on the lab's pk_pool context (a pool), then pk_pool_trim.
 * out[0] KiB reserved after the rounds (every object freed), out[1] KiB
 * pk_pool_trim released. */
static void give_back(void *arg, double *out) {
    const pattern *pt = arg;
    lab_allocator *a = lab_allocator_named("poolkit pk_pool");
    pk_pool *pool = a->open(pt->size);
    lab_pattern_stats st;
    a->pattern(pool, pt->size, pt->rounds / 10, &st);
    pk_pool_stats ps;
    pk_pool_stats_get(pool, &ps);
    out[0] = (double)ps.bytes_reserved / 1024.0;
    out[1] = (double)pk_pool_trim(pool) / 1024.0;
    a->close(pool);
}

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 7);
    const char *only = NULL;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--only") == 0) only = argv[i + 1];
    bench_header("random fill pattern (LAB.md section 5, the Zig typed memory pool benchmark)",
                 &o);
    printf("rounds: fill = len(open)/256; free a random open object if random() <= fill; "
           "allocate and touch one if random() >= fill; seed 0x5eed\n");
    printf("each run is a forked child (median of >= 3 timed runs after a warm-up); net = "
           "contender min - empty loop min; peak RSS = child's VmHWM - its VmRSS at start\n");

    bench_find(cont, NCONT, 0);
    int pass_all = 1;
    for (int pi = 0; pi < NPATTERNS; pi++) {
        const pattern *pt = &patterns[pi];
        if (only && strcmp(only, pt->name) != 0) continue;
        long rounds = o.quick ? pt->rounds / 5 : pt->rounds;
        bench_series t[NCONT] = {{{0}, 0}}, rss[NCONT] = {{{0}, 0}};
        double last[NCONT][NRES];
        int failed[NCONT] = {0};
        memset(last, 0, sizeof last);

        for (int rep = -1; rep < o.reps; rep++) {
            for (int c = 0; c < NCONT; c++) {
                double out[NRES];
                long r = rep < 0 ? rounds / 4 : rounds;
                if (lab_pattern_measure(cont[c].a, pt->size, r, out) != 0) {
                    failed[c] = 1;
                    continue;
                }
                if (rep < 0) continue;
                bench_add(&t[c], out[R_NS] / (double)r);
                bench_add(&rss[c], out[R_RSS]);
                memcpy(last[c], out, sizeof out);
            }
        }

        printf("\npattern %s: %zu B objects, %ld rounds, %.0f allocations, peak %.0f live\n",
               pt->name, pt->size, rounds, last[C_EMPTY][R_ALLOCS], last[C_EMPTY][R_PEAK]);
        printf("  %-34s %10s %-5s %-25s  %s\n", "contender", "median", "", "[min - max]",
               "net per round | peak RSS growth");
        double empty_min = bench_min(&t[C_EMPTY]);
        double net[NCONT];
        for (int c = 0; c < NCONT; c++) {
            net[c] = bench_min(&t[c]) - empty_min;
            if (failed[c] && t[c].n == 0) {
                bench_row_na(cont[c].label, "the child process failed");
                continue;
            }
            char extra[128];
            snprintf(extra, sizeof extra, "net %8.2f ns | %8.1f MiB", c == C_EMPTY ? 0.0 : net[c],
                     mib_of_kib(bench_median(&rss[c])));
            bench_row(cont[c].label, &t[c], "ns", extra);
        }
        double back[3] = {0, 0, 0};
        lab_in_child(give_back, (void *)pt, back, 2);
        printf("  pk_pool memory (its own report): %.1f MiB reserved at the peak, %.1f MiB at the "
               "end with every object freed; in one more run, pk_pool_trim gave back %.1f of "
               "%.1f MiB\n", mib_of_kib(last[C_POOL][R_PK_PEAK]), mib_of_kib(last[C_POOL][R_PK_END]),
               mib_of_kib(back[1]), mib_of_kib(back[0]));

        int gives_back = back[1] > 0 && back[1] >= back[0];
        if (pi == 0) {
            pass_all &= bench_target(net[C_POOL] <= net[C_NAIVE] + 0.5,
                                     "pattern %s: pk_pool net within 0.5 ns of the naive free "
                                     "list: %.2f vs %.2f ns (diff %+.2f); glibc %.2f ns",
                                     pt->name, net[C_POOL], net[C_NAIVE],
                                     net[C_POOL] - net[C_NAIVE], net[C_GLIBC]);
        } else {
            pass_all &= bench_target(
                net[C_POOL] <= 1.3 * net[C_NAIVE] + 2.0 && gives_back,
                "pattern %s: pk_pool net <= 1.3x the naive free list's (standing in for Zig "
                "MemoryPool, the same algorithm) + 2 ns: %.2f vs %.2f ns (limit %.2f); glibc "
                "%.2f ns; gives memory back when trimmed (%.1f of %.1f MiB)",
                pt->name, net[C_POOL], net[C_NAIVE], 1.3 * net[C_NAIVE] + 2.0, net[C_GLIBC],
                mib_of_kib(back[1]), mib_of_kib(back[0]));
        }
    }
    printf("pattern targets: %s\n", pass_all ? "all pass" : "some FAIL");
    return 0;
}
