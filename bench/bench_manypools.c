/* Any number of pools (a realistic-scale program): the hot loop (allocate, touch
 * one byte, free) on the 1st, the 1,000th and the 10,000th live pool of the
 * program.
 *
 * The program creates 10,000 pools of one object size (--size, 64 B by
 * default), one after the other, and keeps one object allocated in each, so
 * that every pool is in use, as in a program with many types or many
 * modules; then it runs the hot loop (the lab's pk_pool hot kernel, the
 * one bench_hotloop runs) on pool 1,
 * pool 1,000 and pool 10,000, interleaved within each repetition (the
 * starting one rotates), after a warm-up. The pool is a run-time argument of
 * one kernel, so every pool runs the same machine code. Target: pools 1,000
 * and 10,000 at most 1.25x pool 1's time (median of per-repetition ratios).
 * For information: the time to create the pools, and what they hold. Issue
 * 11: pk_stats_print over all of them (the pools of the process) in under
 * 50 ms.
 *
 * Usage: bench_manypools [--reps N] [--quick] [--iters N] [--size BYTES] [--pools N]
 */
#include "harness.h"

#include <poolkit/pool.h>
#include <poolkit/stats.h>

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 9);
    long iters = bench_arg_long(&o, "--iters", o.quick ? 2000000 : 10000000);
    size_t size = (size_t)bench_arg_long(&o, "--size", 64);
    long npools = bench_arg_long(&o, "--pools", 10000);
    if (npools < 1000) npools = 1000;
    bench_header("any number of pools: the hot loop on the 1st, 1,000th and 10,000th live pool",
                 &o);

    pk_pool **pools = calloc((size_t)npools, sizeof *pools);
    void **held = calloc((size_t)npools, sizeof *held);
    if (!pools || !held) return 1;
    size_t rss0 = bench_rss_bytes();
    double t0 = bench_now_ns();
    for (long i = 0; i < npools; i++) {
        char name[32];
        snprintf(name, sizeof name, "pool %ld", i + 1);
        pools[i] = pk_pool_create(&(pk_pool_config){.name = name, .size = size});
        if (!pools[i]) {
            fprintf(stderr, "pk_pool_create #%ld failed: %s\n", i + 1, strerror(errno));
            return 1;
        }
        held[i] = pk_pool_alloc(pools[i]);
        if (!held[i]) {
            fprintf(stderr, "pk_pool_alloc on pool #%ld failed: %s\n", i + 1, strerror(errno));
            return 1;
        }
        memset(held[i], 1, size);
    }
    double create_ms = (bench_now_ns() - t0) / 1e6;
    size_t rss1 = bench_rss_bytes();
    printf("%ld pools of %zu B objects, one object held in each: created in %.1f ms (%.2f us per "
           "pool with its first object); RSS grew %.1f MiB (%.1f KiB per pool)\n",
           npools, size, create_ms, create_ms * 1e3 / (double)npools,
           (double)(rss1 - rss0) / 1048576.0, (double)(rss1 - rss0) / 1024.0 / (double)npools);
    printf("hot loop: %ld iterations per run; ns per alloc+free pair\n", iters);
    lab_allocator *pk = lab_allocator_named("poolkit pk_pool"), *empty = lab_allocator_named("empty loop");
    void *empty_ctx = empty->open(size);

    enum { NWHICH = 3 };
    const long which[NWHICH] = {1, 1000, npools};
    bench_series t[NWHICH + 1] = {{{0}, 0}}, ratio[NWHICH] = {{{0}, 0}};
    for (int rep = -1; rep < o.reps; rep++) {
        long n = rep < 0 ? iters / 4 : iters;
        double v[NWHICH + 1];
        for (int j = 0; j <= NWHICH; j++) {
            int k = (j + (rep > 0 ? rep : 0)) % (NWHICH + 1);
            if (k == NWHICH)
                v[k] = empty->hot(empty_ctx, size, n) / (double)n;
            else
                v[k] = pk->hot(pools[which[k] - 1], size, n) / (double)n;
        }
        if (rep < 0) continue;
        for (int k = 0; k <= NWHICH; k++) bench_add(&t[k], v[k]);
        for (int k = 0; k < NWHICH; k++) bench_add(&ratio[k], v[k] / v[0]);
    }

    printf("\n  %-34s %10s %-5s %-25s  %s\n", "pool", "median", "", "[min - max]",
           "x pool 1 (median of per-repetition ratios)");
    for (int k = 0; k < NWHICH; k++) {
        char label[64], extra[64];
        snprintf(label, sizeof label, "pool %ld of %ld", which[k], npools);
        snprintf(extra, sizeof extra, "%6.2fx", bench_median(&ratio[k]));
        bench_row(label, &t[k], "ns", extra);
    }
    bench_row("empty loop (touch only)", &t[NWHICH], "ns", "");

    printf("\n");
    int pass = 1;
    for (int k = 1; k < NWHICH; k++) {
        double r = bench_median(&ratio[k]);
        pass &= bench_target(r <= 1.25,
                             "many pools: hot loop %zu B on pool %ld of %ld <= 1.25x pool 1: "
                             "%.2fx (%.2f vs %.2f ns)",
                             size, which[k], npools, r, bench_median(&t[k]), bench_median(&t[0]));
    }
    /* The process report over every live pool, into /dev/null
     * (table and JSON), median of the repetitions. */
    FILE *devnull = fopen("/dev/null", "w");
    bench_series report[2] = {{{0}, 0}};
    for (int rep = -1; devnull && rep < o.reps; rep++)
        for (int form = 0; form < 2; form++) {
            double t0 = bench_now_ns();
            pk_stats_print(devnull, form ? PK_STATS_JSON : 0);
            if (rep >= 0) bench_add(&report[form], (bench_now_ns() - t0) / 1e6);
        }
    if (devnull) fclose(devnull);
    bench_row("pk_stats_print, table", &report[0], "ms", "");
    bench_row("pk_stats_print, JSON", &report[1], "ms", "");
    double worst = bench_median(&report[0]) > bench_median(&report[1]) ? bench_median(&report[0])
                                                                         : bench_median(&report[1]);
    pass &= bench_target(devnull && worst < 50,
                         "many pools: pk_stats_print over %ld live pools < 50 ms: %.1f ms (table "
                         "%.1f, JSON %.1f)",
                         npools, worst, bench_median(&report[0]), bench_median(&report[1]));
    printf("many-pools targets: %s\n", pass ? "all pass" : "some FAIL");

    for (long i = npools; i-- > 0;) {
        pk_pool_free(pools[i], held[i]);
        pk_pool_destroy(pools[i]);
    }
    free(pools);
    free(held);
    return 0;
}
