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
 * Idle (memory returned without a call into the library): a burst of the same objects in a fresh pool,
 * allocated, written and freed; then --idle-ms (1,500) with no poolkit call;
 * then one call that reaches the library (the first allocation from another
 * pool: its thread cache is empty). Target: the burst's memory is back at
 * that call (RSS within a quarter of what the burst added), not an interval
 * later. Then the same burst with the background purge on
 * (pk_set_background_purge) and no call at all: RSS is read until it falls.
 *
 * Usage: bench_memory [--objects N] [--size B] [--reps N] [--idle-ms MS]
 */
#include "harness.h"

#include <poolkit/pool.h>

static double mib(double b) { return b / (1024.0 * 1024.0); }

/* Allocates count objects of pool, writes them in full and frees them (last
 * first). Returns the resident bytes with the objects, or 0 on failure. */
static size_t burst(pk_pool *pool, void **objs, size_t count, size_t size) {
    for (size_t i = 0; i < count; i++) {
        objs[i] = pk_pool_alloc(pool);
        if (!objs[i]) return 0;
        memset(objs[i], (int)(i & 0xff), size);
    }
    size_t full = bench_rss_bytes();
    for (size_t i = count; i-- > 0;) pk_pool_free(pool, objs[i]);
    return full;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The idle story; returns whether its targets pass. */
static int idle_story(void **objs, size_t count, size_t size, long idle_ms) {
    int pass = 1;
    printf("\nidle: %zu x %zu B allocated, written and freed, %ld ms with no poolkit call (purge delay %ld "
           "ms), then one call: the first allocation from another pool\n",
           count, size, idle_ms, pk_set_purge_delay(-1));
    pk_pool *idle = pk_pool_create(&(pk_pool_config){.name = "idle", .size = size});
    pk_pool *request = pk_pool_create(&(pk_pool_config){.name = "request", .size = 64});
    if (!idle || !request) return 0;
    size_t base = bench_rss_bytes(), full = burst(idle, objs, count, size);
    if (!full) return 0;
    sleep_ms(idle_ms);
    size_t before = bench_rss_bytes();
    uint64_t t0 = bench_now_ns();
    void *obj = pk_pool_alloc(request);
    uint64_t t1 = bench_now_ns();
    size_t after = bench_rss_bytes();
    /* Then light calls that reach the library (a bulk allocation and free
     * of one object every 10 ms) for 600 ms: what a program that resumes
     * slowly sees; before time stamps, the memory left here. */
    for (int i = 0; i < 60; i++) {
        void *one;
        if (pk_pool_alloc_bulk(request, &one, 1) == 1) pk_pool_free_bulk(request, &one, 1);
        sleep_ms(10);
    }
    size_t later = bench_rss_bytes();
    pk_pool_free(request, obj);
    double added = (double)full - (double)base;
    printf("  RSS before the burst %.2f MiB, with it %.2f MiB, after %ld ms idle %.2f MiB, right after the one "
           "call %.2f MiB (the call took %.2f ms), 600 ms of light calls later %.2f MiB\n",
           mib((double)base), mib((double)full), idle_ms, mib((double)before), mib((double)after),
           (double)(t1 - t0) / 1e6, mib((double)later));
    pass &= bench_target((double)after <= (double)base + added / 4,
                         "idle: memory back at the first call: RSS %.2f MiB before the call, %.2f MiB after "
                         "(the burst added %.2f MiB; within a quarter of it)",
                         mib((double)before), mib((double)after), mib(added));
    pk_pool_destroy(idle);

    /* The background purge: the same burst, then no call at all. */
    int was = pk_set_background_purge(1);
    if (was < 0) {
        printf("  background purge: not available (%s)\n", strerror(errno));
        pk_pool_destroy(request);
        return pass;
    }
    idle = pk_pool_create(&(pk_pool_config){.name = "idle (background)", .size = size});
    if (!idle) return 0;
    base = bench_rss_bytes();
    full = burst(idle, objs, count, size);
    if (!full) return 0;
    added = (double)full - (double)base;
    uint64_t start = bench_now_ns();
    double waited = -1;
    size_t rss = full;
    while ((double)(bench_now_ns() - start) / 1e6 < 3000.0 + 4.0 * (double)pk_set_purge_delay(-1)) {
        rss = bench_rss_bytes();
        if ((double)rss <= (double)base + added / 4) {
            waited = (double)(bench_now_ns() - start) / 1e6;
            break;
        }
        sleep_ms(5);
    }
    pass &= bench_target(waited >= 0,
                         "idle (background purge): memory back with no call: RSS %.2f MiB with the burst, "
                         "%.2f MiB %.0f ms after it",
                         mib((double)full), mib((double)rss), waited);
    pk_set_background_purge(was);
    pk_pool_destroy(idle);
    pk_pool_destroy(request);
    return pass;
}

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 5);
    size_t count = (size_t)bench_arg_long(&o, "--objects", 100000);
    size_t size = (size_t)bench_arg_long(&o, "--size", 200);
    int cycles = bench_arg_flag(&o, "--reps") ? o.reps : 3;
    long idle_ms = bench_arg_long(&o, "--idle-ms", 1500);
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
    pk_pool_destroy(pool);
    pk_pool_release_cache(); /* the idle story starts with nothing retained */
    pass &= idle_story(objs, count, size, idle_ms);
    printf("memory targets: %s\n", pass ? "all pass" : "some FAIL");
    free(objs);
    free(order);
    return 0;
}
