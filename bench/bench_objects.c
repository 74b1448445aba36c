/* Objects and autorelease pools against glibc malloc, with their targets.
 *
 *   new+release     pk_new + pk_release of a 16-byte class, against malloc(16) + free:
 *                   target <= 0.5x
 *   push+pop        an empty pk_autorelease_push + pk_autorelease_pop, against
 *                   malloc(16) + free: target <= 0.3x
 *   sweep           LAB.md section 1: 1,000,000 objects created and autoreleased,
 *                   1,000,000 ... 1 objects per pool (a fresh pool per batch, popped
 *                   at its end). Targets: per object on the best row <= one malloc+free;
 *                   the one-pool-per-object row <= 1.3x the best row
 *   one big pool    the sweep's first row (1,000,000 objects autoreleased into
 *                   one pool, then the pool popped) against malloc(16) + memset(0) for
 *                   the same N, all allocated, then all freed newest first (the order
 *                   of the pool's drain): target per object <= 1x
 *   binary-trees    the Benchmarks Game program at depth 16, nodes from malloc (freed
 *                   recursively) against pk_new nodes whose dealloc releases the
 *                   children: target <= 0.4x
 *
 * Every contender runs once per repetition, interleaved (malloc+free on both
 * sides of the two hot loops it is compared with), after a warm-up; the figures
 * are medians with [min - max]. Targets are judged on the median of
 * per-repetition ratios, which holds up on a machine whose load changes between
 * repetitions. Per-operation figures are raw (the empty loop is printed beside
 * them and is not subtracted, which favours no one).
 *
 * Times are the thread's CPU time unless --wall is given (see now_ns).
 *
 * Usage: bench_objects [--reps N] [--quick] [--iters N] [--depth N] [--wall]
 */
#include "harness.h"
#include "bintrees.h" /* the lab's (pk_lab_core's include directory) */

#include <poolkit/poolkit.h>

/* ---- the kernels ---- */

typedef struct { uint64_t a, b; } fields16;
static const pk_class class16 = {"bench16", sizeof(fields16), NULL};

BENCH_KERNEL static void kernel_empty(long n) {
    for (long i = 0; i < n; i++) BENCH_ESCAPE(i);
}

BENCH_KERNEL static void kernel_malloc_free(long n) {
    for (long i = 0; i < n; i++) {
        void *p = malloc(16);
        BENCH_ESCAPE(p);
        free(p);
    }
}

BENCH_KERNEL static void kernel_new_release(long n) {
    for (long i = 0; i < n; i++) {
        void *p = pk_new(&class16);
        BENCH_ESCAPE(p);
        pk_release(p);
    }
}

BENCH_KERNEL static void kernel_push_pop(long n) {
    for (long i = 0; i < n; i++) {
        pk_autorelease_pool p = pk_autorelease_push();
        BENCH_ESCAPE(p.token);
        pk_autorelease_pop(p);
    }
}

/* total objects, per_pool of them in each pool. */
BENCH_KERNEL static void kernel_sweep(long total, long per_pool) {
    for (long done = 0; done < total; done += per_pool) {
        pk_autorelease_pool pool = pk_autorelease_push();
        for (long j = 0; j < per_pool; j++) {
            void *o = pk_autorelease(pk_new(&class16));
            BENCH_ESCAPE(o);
        }
        pk_autorelease_pop(pool);
    }
}

/* The malloc analogue of one sweep row (informative): per_pool objects kept,
 * then freed newest first. */
static void **sweep_ptrs;
BENCH_KERNEL static void kernel_sweep_malloc(long total, long per_pool) {
    for (long done = 0; done < total; done += per_pool) {
        for (long j = 0; j < per_pool; j++) {
            sweep_ptrs[j] = malloc(16);
            BENCH_ESCAPE(sweep_ptrs[j]);
        }
        for (long j = per_pool; j-- > 0;) free(sweep_ptrs[j]);
    }
}

/* The same N allocated, zeroed and kept, then freed newest first: what one
 * autorelease pool holding every object stands for. */
BENCH_KERNEL static void kernel_malloc_zero_all(long total) {
    for (long j = 0; j < total; j++) {
        void *p = malloc(sizeof(fields16));
        memset(p, 0, sizeof(fields16));
        BENCH_ESCAPE(p);
        sweep_ptrs[j] = p;
    }
    for (long j = total; j-- > 0;) free(sweep_ptrs[j]);
}

/* ---- binary-trees (lab/bintrees.h: the same program the lab runs) ---- */

BENCH_KERNEL static long kernel_trees_malloc(int max_depth) { return bt_program(&bt_malloc, NULL, max_depth, 0); }

BENCH_KERNEL static long kernel_trees_pk(int max_depth) { return bt_program(&bt_objects, NULL, max_depth, 0); }

/* ---- driver ---- */

/* The clock: by default the thread's CPU time (user and system), which
 * leaves out the time the thread waited for a CPU on a loaded machine and
 * keeps page faults in; --wall uses the monotonic wall clock instead. */
static int use_wall;

static double now_ns(void) {
    if (use_wall) return bench_now_ns();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double time_ns(void (*fn)(long), long n) {
    double t0 = now_ns();
    fn(n);
    return (now_ns() - t0) / (double)n;
}

/* A hot loop recycles one block, and its cost depends a little on that
 * block's address (aliasing with the allocator's own hot words). Each
 * measurement therefore runs in four parts, with 0 to 3 blocks of the same
 * kind held aside first so that a different block is recycled in each. */
enum { HOLD_MALLOC, HOLD_PK };
static double time_spread(void (*fn)(long), long n, int kind) {
    double sum = 0;
    for (int k = 0; k < 4; k++) {
        void *held[3];
        for (int i = 0; i < k; i++) held[i] = kind == HOLD_PK ? pk_new(&class16) : malloc(16);
        sum += time_ns(fn, n / 4);
        for (int i = 0; i < k; i++) {
            if (kind == HOLD_PK)
                pk_release(held[i]);
            else
                free(held[i]);
        }
    }
    return sum / 4;
}

#define SWEEP_ROWS 7
static const long sweep_per_pool[SWEEP_ROWS] = {1000000, 100000, 10000, 1000, 100, 10, 1};

/* A ratio row: median and spread of per-repetition ratios. Each ratio
 * compares two contenders timed back to back in the same repetition, so it
 * holds up on a machine whose load changes between repetitions. */
static void ratio_row(const char *label, const bench_series *r) {
    printf("  %-46s %6.2fx  [%5.2fx - %5.2fx]\n", label, bench_median(r), bench_min(r),
           bench_max(r));
}

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 9);
    long iters = bench_arg_long(&o, "--iters", o.quick ? 1000000 : 4000000);
    int depth = (int)bench_arg_long(&o, "--depth", 16);
    use_wall = bench_arg_flag(&o, "--wall");
    const long total = 1000000;
    bench_header("objects and autorelease pools", &o);
    printf("clock: %s\n", use_wall ? "wall (CLOCK_MONOTONIC)"
                                    : "the thread's CPU time (CLOCK_THREAD_CPUTIME_ID; --wall for wall time)");

    sweep_ptrs = malloc(sizeof(void *) * (size_t)total);
    if (!sweep_ptrs) return 1;

    /* Warm-up: every kernel once, so pools, pages and malloc's arenas exist. */
    kernel_empty(iters / 10);
    kernel_malloc_free(iters / 10);
    kernel_new_release(iters / 10);
    kernel_push_pop(iters / 10);
    kernel_sweep(total, total);
    kernel_sweep(total, 1);
    kernel_sweep_malloc(total, 1000);
    kernel_malloc_zero_all(total);
    long sum_m = kernel_trees_malloc(depth > 6 ? 6 : depth);
    long sum_p = kernel_trees_pk(depth > 6 ? 6 : depth);
    if (sum_m != sum_p) {
        printf("binary-trees: the two versions disagree (%ld vs %ld)\n", sum_m, sum_p);
        return 1;
    }

    bench_series empty = {{0}, 0}, mf = {{0}, 0}, nr = {{0}, 0}, pp = {{0}, 0};
    bench_series r_nr = {{0}, 0}, r_pp = {{0}, 0};
    bench_series sweep[SWEEP_ROWS], sweep_m[SWEEP_ROWS];
    bench_series trees_m = {{0}, 0}, trees_p = {{0}, 0}, r_trees = {{0}, 0};
    bench_series mzero = {{0}, 0}, r_big = {{0}, 0};
    memset(sweep, 0, sizeof sweep);
    memset(sweep_m, 0, sizeof sweep_m);

    for (int r = 0; r < o.reps; r++) {
        bench_add(&empty, time_ns(kernel_empty, iters));
        double m1 = time_spread(kernel_malloc_free, iters / 2, HOLD_MALLOC);
        double a = time_spread(kernel_new_release, iters, HOLD_PK);
        double b = time_ns(kernel_push_pop, iters);
        double m2 = time_spread(kernel_malloc_free, iters / 2, HOLD_MALLOC);
        double m = (m1 + m2) / 2; /* malloc on both sides of the two */
        bench_add(&mf, m);
        bench_add(&nr, a);
        bench_add(&pp, b);
        bench_add(&r_nr, a / m);
        bench_add(&r_pp, b / m);
        /* The pk rows back to back (compared with one another), in
         * alternating order, then the malloc rows. */
        double row[SWEEP_ROWS];
        for (int k = 0; k < SWEEP_ROWS; k++) {
            int i = r % 2 ? SWEEP_ROWS - 1 - k : k;
            double t0 = now_ns();
            kernel_sweep(total, sweep_per_pool[i]);
            row[i] = (now_ns() - t0) / (double)total;
        }
        for (int i = 0; i < SWEEP_ROWS; i++) bench_add(&sweep[i], row[i]);
        for (int i = 0; i < SWEEP_ROWS; i++) {
            double t0 = now_ns();
            kernel_sweep_malloc(total, sweep_per_pool[i]);
            bench_add(&sweep_m[i], (now_ns() - t0) / (double)total);
        }
        {
            double t0 = now_ns();
            kernel_malloc_zero_all(total);
            double z = (now_ns() - t0) / (double)total;
            bench_add(&mzero, z);
            bench_add(&r_big, row[0] / z); /* row 0: all in one pool */
        }
        double t0 = now_ns();
        sum_m = kernel_trees_malloc(depth);
        double tm = (now_ns() - t0) / 1e6;
        t0 = now_ns();
        sum_p = kernel_trees_pk(depth);
        double tp = (now_ns() - t0) / 1e6;
        bench_add(&trees_m, tm);
        bench_add(&trees_p, tp);
        bench_add(&r_trees, tp / tm);
        if (sum_m != sum_p) {
            printf("binary-trees: the two versions disagree (%ld vs %ld)\n", sum_m, sum_p);
            return 1;
        }
    }

    char note[160];
    printf("\nhot loops, %ld iterations, ns per iteration:\n", iters);
    bench_row("empty loop", &empty, "ns", "");
    bench_row("glibc malloc(16) + free", &mf, "ns", "");
    bench_row("pk_new + pk_release (16 B)", &nr, "ns", "");
    bench_row("empty push + pop", &pp, "ns", "");

    printf("\nautorelease sweep, %ld objects, ns per object (whole row / objects):\n", total);
    int best = 0;
    for (int i = 0; i < SWEEP_ROWS; i++)
        if (bench_median(&sweep[i]) < bench_median(&sweep[best])) best = i;
    for (int i = 0; i < SWEEP_ROWS; i++) {
        char label[64];
        snprintf(label, sizeof label, "pk %7ld per pool (%.3f s)", sweep_per_pool[i],
                 bench_median(&sweep[i]) * total / 1e9);
        bench_row(label, &sweep[i], "ns", i == best ? "(best row)" : "");
    }
    for (int i = 0; i < SWEEP_ROWS; i++) {
        char label[64];
        snprintf(label, sizeof label, "malloc %7ld kept, then freed", sweep_per_pool[i]);
        bench_row(label, &sweep_m[i], "ns", "(informative)");
    }

    bench_row("malloc+memset(0), all kept, then freed", &mzero, "ns", "(the one big pool's reference)");

    printf("\nbinary-trees depth %d (checksum %ld), ms per run:\n", depth, sum_p);
    bench_row("malloc nodes, recursive free", &trees_m, "ms", "");
    bench_row("pk_new nodes, pk_release root", &trees_p, "ms", "");

    /* Per-repetition ratios for the sweep: rows of one repetition against
     * that repetition's best row and its malloc+free. */
    bench_series r_best_mf = {{0}, 0}, r_one_best = {{0}, 0};
    for (int r = 0; r < o.reps; r++) {
        bench_add(&r_best_mf, sweep[best].v[r] / mf.v[r]);
        bench_add(&r_one_best, sweep[SWEEP_ROWS - 1].v[r] / sweep[best].v[r]);
    }
    printf("\nratios, median of per-repetition ratios [min - max]:\n");
    ratio_row("pk_new+pk_release / malloc+free", &r_nr);
    ratio_row("empty push+pop / malloc+free", &r_pp);
    snprintf(note, sizeof note, "sweep best row (%ld per pool) / malloc+free", sweep_per_pool[best]);
    ratio_row(note, &r_best_mf);
    ratio_row("sweep one pool per object / best row", &r_one_best);
    ratio_row("one pool of 1,000,000 / malloc+memset(0)+free", &r_big);
    ratio_row("binary-trees pk_new / malloc", &r_trees);

    printf("\n");
    int ok = 1;
    double q;
    q = bench_median(&r_nr);
    ok &= bench_target(q <= 0.5, "pk_new+pk_release 16 B: %.2f ns vs malloc+free %.2f ns: %.2fx; target <= 0.5x",
                       bench_median(&nr), bench_median(&mf), q);
    q = bench_median(&r_pp);
    ok &= bench_target(q <= 0.3, "empty push+pop: %.2f ns: %.2fx malloc+free; target <= 0.3x",
                       bench_median(&pp), q);
    q = bench_median(&r_best_mf);
    ok &= bench_target(q <= 1.0,
                       "sweep best row (%ld per pool): %.2f ns per object: %.2fx malloc+free; "
                       "target <= 1x",
                       sweep_per_pool[best], bench_median(&sweep[best]), q);
    q = bench_median(&r_one_best);
    ok &= bench_target(q <= 1.3, "sweep one pool per object: %.2f ns: %.2fx the best row; target <= 1.3x",
                       bench_median(&sweep[SWEEP_ROWS - 1]), q);
    q = bench_median(&r_big);
    ok &= bench_target(q <= 1.0,
                       "%ld pk_new objects autoreleased into one pool, then popped: %.2f ns per "
                       "object vs malloc+memset(0)+free %.2f ns: %.2fx; target <= 1x",
                       total, bench_median(&sweep[0]), bench_median(&mzero), q);
    q = bench_median(&r_trees);
    ok &= bench_target(q <= 0.4,
                       "binary-trees depth %d: %.1f ms vs malloc %.1f ms: %.2fx; target <= 0.4x",
                       depth, bench_median(&trees_p), bench_median(&trees_m), q);
    printf("targets: %s\n", ok ? "all PASS" : "some FAIL");
    free(sweep_ptrs);
    return 0;
}
