/* Memory: what a pool holds for its objects, and whether it really gives
 * memory back.
 *
 * 100,000 live objects of 200 B from one default pool, each written in full
 * (so its pages are resident); then all freed in a random order and the pool
 * trimmed. Targets:
 *   bytes_reserved / (100,000 * 200) <= 1.10
 *   after freeing all and pk_pool_trim: stats.slabs <= 1, and the process's
 *   RSS (/proc/self/statm) falls by about the bytes the pool gave back
 *   (at least 90% of them).
 * The figures are exact, not timings: one run is enough; --reps repeats the
 * whole cycle in one pool to show that nothing creeps.
 *
 * Usage: bench_memory [--objects N] [--size B] [--reps N]
 */
#include "harness.h"

#include <poolkit/pool.h>

static double mib(double b) { return b / (1024.0 * 1024.0); }

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 5);
    size_t count = (size_t)bench_arg_long(&o, "--objects", 100000);
    size_t size = (size_t)bench_arg_long(&o, "--size", 200);
    int cycles = bench_arg_flag(&o, "--reps") ? o.reps : 3;
    o.method = "exact byte counts from the pool's stats and /proc/self/statm (no timing)";
    bench_header("memory: live objects, reserve overhead, trim and RSS", &o);

    void **objs = malloc(count * sizeof *objs);
    size_t *order = malloc(count * sizeof *order);
    if (!objs || !order) return 2;
    memset(objs, 0, count * sizeof *objs); /* resident before any reading */
    shared_rng rng = {42};
    pk_pool *pool = pk_pool_create(&(pk_pool_config){.name = "memory", .size = size});
    if (!pool) {
        fprintf(stderr, "pk_pool_create: %s\n", strerror(errno));
        return 2;
    }

    int pass = 1;
    printf("%zu objects of %zu B = %.2f MiB of object bytes; %d cycles of fill / free all / trim\n",
           count, size, mib((double)(count * size)), cycles);
    printf("  %-5s %12s %10s %12s %14s %12s %12s %10s %12s %8s\n", "cycle", "RSS before", "reserved",
           "x obj bytes", "RSS full", "RSS freed", "trim gave", "slabs", "RSS after", "fell");
    for (int cycle = 0; cycle < cycles; cycle++) {
        size_t rss0 = bench_rss_bytes();
        for (size_t i = 0; i < count; i++) {
            objs[i] = pk_pool_alloc(pool);
            if (!objs[i]) {
                fprintf(stderr, "pk_pool_alloc failed at %zu: %s\n", i, strerror(errno));
                return 2;
            }
            memset(objs[i], (int)(i & 0xff), size);
        }
        pk_pool_stats full;
        pk_pool_stats_get(pool, &full);
        size_t rss_full = bench_rss_bytes();

        for (size_t i = 0; i < count; i++) order[i] = i;
        for (size_t i = count - 1; i > 0; i--) { /* random order of frees */
            size_t j = shared_rng_below(&rng, i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (size_t i = 0; i < count; i++) pk_pool_free(pool, objs[order[i]]);
        size_t rss_freed = bench_rss_bytes();
        size_t trimmed = pk_pool_trim(pool);
        pk_pool_stats after;
        pk_pool_stats_get(pool, &after);
        size_t rss_after = bench_rss_bytes();

        double ratio = (double)full.bytes_reserved / (double)(count * size);
        /* The pool gave back everything it held beyond what remains. */
        double given = (double)full.bytes_reserved - (double)after.bytes_reserved;
        double fell = (double)rss_full - (double)rss_after;
        printf("  %-5d %9.2f MiB %6.2f MiB %11.3fx %10.2f MiB %8.2f MiB %8.2f MiB %10zu %8.2f MiB %7.0f%%\n",
               cycle, mib((double)rss0), mib((double)full.bytes_reserved), ratio,
               mib((double)rss_full), mib((double)rss_freed), mib((double)trimmed), after.slabs,
               mib((double)rss_after), given > 0 ? 100.0 * fell / given : 0.0);
        if (cycle == 0 || cycle == cycles - 1) {
            pass &= bench_target(ratio <= 1.10,
                                 "memory (cycle %d): bytes_reserved / object bytes <= 1.10: "
                                 "%.3fx (%zu B for %zu x %zu B; %zu slabs)",
                                 cycle, ratio, full.bytes_reserved, count, size, full.slabs);
            pass &= bench_target(after.slabs <= 1,
                                 "memory (cycle %d): slabs after freeing all and pk_pool_trim "
                                 "<= 1: %zu (%zu B still reserved, trim released %zu B, "
                                 "slabs_released %llu)",
                                 cycle, after.slabs, after.bytes_reserved, trimmed,
                                 (unsigned long long)after.slabs_released);
            pass &= bench_target(given > 0 && fell >= 0.9 * given,
                                 "memory (cycle %d): RSS falls by about the pool's bytes "
                                 "(>= 90%%): fell %.2f MiB for %.2f MiB given back (%.0f%%)",
                                 cycle, mib(fell), mib(given), given > 0 ? 100.0 * fell / given : 0.0);
        }
    }
    printf("memory targets: %s\n", pass ? "all pass" : "some FAIL");
    pk_pool_destroy(pool);
    free(objs);
    free(order);
    return 0;
}
