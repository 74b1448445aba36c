/* Cross-thread producer/consumer: the lab's threads workload (the pc kernel
 * of lab/kernels.h, lab_threads_measure) with two threads in a ring, 32-byte
 * objects: each thread allocates objects and hands them, through a
 * single-producer/single-consumer queue, to the other, which frees them.
 * Every object is freed on a thread other than the one that allocated it,
 * so an allocator's remote-free path is all that is measured.
 *
 * Contenders, interleaved in one run (the lab's adapters): the queues alone
 * (the empty loop: no allocation), glibc malloc, jemalloc, tcmalloc,
 * both mimallocs (Debian's 2.x, and PyPI's 3.x where the lab's set-up
 * installed it; loaded at run time) and pk_pool (default flags, and
 * PK_POOL_HARDENED). Each run is a forked child, so its peak RSS is its own.
 * Reported: ns per object, both threads together (median [min - max]), and
 * the child's peak RSS growth. Targets: pk_pool at most 0.3x the faster
 * mimalloc (per repetition), and
 * memory bounded (peak RSS growth under a quarter of what the objects would
 * take if memory were never reused); the hardened pool at most 1.15x the
 * default (the median of per-repetition ratios).
 *
 * --churn runs the lab's churn workload instead (one thread: a live set of 256 objects,
 * each step frees a random one and allocates its replacement; the
 * larson-like steady state of docs/design/core3-prototypes.md), reported
 * without targets.
 *
 * Usage: bench_xthread [--reps N] [--quick] [--objects N] [--churn]
 */
#include "harness.h"
#include "kernels.h" /* LAB_SPSC_CAP */

#include <math.h>

#define OBJ_SIZE 32

enum { C_RING, C_GLIBC, C_JE, C_TC, C_MI, C_MI3, C_POOL, C_HARD, NCONT };
static bench_contender cont[NCONT] = {
    BENCH_CONTENDER("empty loop", "queues alone (no allocation)"),
    BENCH_CONTENDER("glibc malloc", "glibc malloc/free"),
    BENCH_CONTENDER("jemalloc", ""),
    BENCH_CONTENDER("tcmalloc", ""),
    BENCH_CONTENDER("mimalloc", ""),
    BENCH_CONTENDER(LAB_MIMALLOC3, ""),
    BENCH_CONTENDER("poolkit pk_pool", "pk_pool default"),
    BENCH_CONTENDER("poolkit pk_pool HARDENED", "pk_pool HARDENED"),
};

static int churn; /* --churn: the churn workload on one thread */

typedef struct job {
    lab_allocator *a;
    long n; /* objects, both threads together */
} job;

/* In a forked child: out[0] ns per object, out[1] the most poolkit held
 * from the system during the run (KiB; NaN for the peers); out[2]
 * (lab_in_child) peak RSS growth in KiB. */
static void child(void *arg, double *out) {
    const job *j = arg;
    lab_pk_memory m;
    double pk[2] = {NAN, NAN};
    int ours = !strcmp(j->a->family, "poolkit");
    if (ours) lab_pk_memory_begin(&m);
    double mops = churn ? lab_threads_measure(j->a, 1, 1, j->n, OBJ_SIZE)
                        : lab_threads_measure(j->a, 0, 2, j->n / 2, OBJ_SIZE);
    if (ours) lab_pk_memory_end(&m, pk);
    out[0] = mops > 0 ? 1e3 / mops : -1;
    out[1] = pk[0];
}

static double mib(double kib) { return kib / 1024.0; }

int main(int argc, char **argv) {
    shared_reexec_for_tls(argv); /* jemalloc under dlopen */
    bench_opts o = bench_parse(argc, argv, 5);
    long n = bench_arg_long(&o, "--objects", o.quick ? 500000 : 2000000);
    churn = bench_arg_flag(&o, "--churn");
    if (churn)
        o.method = "median of interleaved repetitions after a warm-up; churn: one thread, 256 "
                   "live objects, each step frees a random one and allocates another";
    bench_header(churn ? "churn (larson-like steady state): 32 B objects, one thread" :
                 "cross-thread producer/consumer: 32 B objects allocated on one thread, freed "
                 "on another",
                 &o);
    if (churn)
        printf("steps: %ld on one thread (the empty loop's row: the loop with no allocator); each "
               "run is a forked child; peak RSS = child's VmHWM - its VmRSS at start\n", n);
    else
        printf("objects: %ld, half allocated by each of 2 threads in a ring of %d-slot queues; "
               "each run is a forked child; peak RSS = child's VmHWM - its VmRSS at start\n",
               n, LAB_SPSC_CAP);
    bench_find(cont, NCONT, 0);

    bench_series t[NCONT] = {{{0}, 0}}, rss[NCONT] = {{{0}, 0}}, ratio_mi = {{0}, 0};
    bench_series ratio_hard = {{0}, 0};
    double pk_peak = NAN;
    int failed[NCONT] = {0};
    for (int rep = -1; rep < o.reps; rep++) {
        double v[NCONT] = {0};
        for (int c = 0; c < NCONT; c++) {
            if (cont[c].why) continue;
            job j = {cont[c].a, rep < 0 ? n / 4 : n};
            double out[3];
            if (lab_in_child(child, &j, out, 2) != 0 || out[0] < 0) {
                failed[c] = 1;
                continue;
            }
            if (rep < 0) continue;
            v[c] = out[0];
            bench_add(&t[c], out[0]);
            bench_add(&rss[c], out[2]);
            if (c == C_POOL) pk_peak = out[1];
        }
        double mi = bench_faster(v, C_MI, C_MI3);
        if (rep >= 0 && mi > 0 && v[C_POOL] > 0) bench_add(&ratio_mi, v[C_POOL] / mi);
        if (rep >= 0 && v[C_HARD] > 0 && v[C_POOL] > 0) bench_add(&ratio_hard, v[C_HARD] / v[C_POOL]);
    }

    printf("\n  %-34s %10s %-5s %-25s  %s\n", "contender", "median", "", "[min - max]",
           "peak RSS growth (median)");
    for (int c = 0; c < NCONT; c++) {
        if (cont[c].why || (failed[c] && t[c].n == 0)) {
            bench_row_na(cont[c].label, cont[c].why ? cont[c].why : "the child process failed");
            continue;
        }
        char extra[80];
        snprintf(extra, sizeof extra, "%8.1f MiB", mib(bench_median(&rss[c])));
        if (c != C_RING)
            snprintf(extra + strlen(extra), 40, "   (net of the queues %6.1f ns)",
                     bench_median(&t[c]) - bench_median(&t[C_RING]));
        bench_row(cont[c].label, &t[c], "ns", extra);
    }
    printf("  pk_pool in the last run, by its own report: at most %.2f MiB reserved\n", mib(pk_peak));

    if (churn) return 0; /* the targets are the cross-thread ones */
    double bound = (double)n * OBJ_SIZE / 4.0 / 1024.0; /* KiB */
    int pass = 1;
    if (ratio_mi.n == 0) {
        pass &= bench_skip("cross-thread (producer/consumer): pk_pool <= 0.3x the faster mimalloc",
                           cont[C_MI].why ? cont[C_MI].why : "the mimalloc runs failed");
    } else {
        int m = bench_faster_of(t, C_MI, C_MI3);
        pass &= bench_target(bench_median(&ratio_mi) <= 0.3,
                             "cross-thread (producer/consumer): pk_pool <= 0.3x the faster mimalloc: %.2fx "
                             "per-run ratio median (%.1f ns per object; %s %.1f)",
                             bench_median(&ratio_mi), bench_median(&t[C_POOL]), cont[m].label,
                             bench_median(&t[m]));
    }
    pass &= bench_target(t[C_POOL].n > 0 && bench_max(&rss[C_POOL]) <= bound,
                         "cross-thread: pk_pool memory bounded: peak RSS growth %.1f MiB (max of "
                         "runs) <= %.1f MiB (a quarter of %ld x %d B)",
                         mib(bench_max(&rss[C_POOL])), mib(bound), n, OBJ_SIZE);
    pass &= bench_target(ratio_hard.n > 0 && bench_median(&ratio_hard) <= 1.15,
                         "cross-thread (producer/consumer): PK_POOL_HARDENED <= 1.15x the default "
                         "pool: %.2fx per-run ratio median (%.1f vs %.1f ns per object)",
                         bench_median(&ratio_hard), bench_median(&t[C_HARD]), bench_median(&t[C_POOL]));
    printf("cross-thread targets: %s\n", pass ? "all pass" : "some FAIL");
    return 0;
}
