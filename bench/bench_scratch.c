/* Passive false sharing, after Hoard's cache-scratch (mimalloc-bench): the
 * main thread allocates one object per worker, back to back, and hands
 * each to its worker; each worker frees it (a free on a thread other than
 * the allocating one), then loops: allocate one object, write each of its
 * bytes --writes times, free it. An allocator that gives a worker its
 * handed-over object back, with the other worker's object on the same cache
 * line, makes the two cores fight over that line on every write.
 *
 * For a pool, whether two neighbouring objects share a line is layout:
 * objects of a power-of-two size aligned to it (64 B on a cache line, as
 * jemalloc and mimalloc place them) never do, while slots shifted off the
 * line by a slab header each straddle two lines and share one with each
 * neighbour. The program prints where the pool's two objects start (mod 64)
 * beside the times.
 *
 * Contenders, interleaved in each repetition: glibc malloc, mimalloc (loaded
 * at run time, when installed), pk_pool (default flags, a fresh pool each
 * run). Reported: ns per loop iteration of one worker (allocate, write,
 * free), median [min - max] over the repetitions, timed from the start
 * signal to the last worker's end; and the median of the workers' own CPU
 * time per iteration, which a loaded machine inflates less (a worker
 * waiting for a core costs wall time, not CPU time). Timings on a shared
 * machine are noisy: compare within one run.
 *
 * Usage: bench_scratch [--reps N] [--quick] [--size B] [--threads N]
 *                      [--iters N] [--writes N]
 */
#include "harness.h"

#include <poolkit/pool.h>

#include <pthread.h>

#define MAX_THREADS 16

enum { C_GLIBC, C_MI, C_POOL, NCONT };
static const char *const names[NCONT] = {"glibc malloc", "mimalloc", "pk_pool default"};

static void *(*mi_malloc_fn)(size_t);
static void (*mi_free_fn)(void *);

typedef struct run {
    int kind;
    pk_pool *pool;
    size_t size;
    long iters, writes;
    int start; /* atomic: the workers wait for it */
} run;

typedef struct worker {
    run *r;
    void *obj; /* the object the main thread allocated for it */
    pthread_t tid;
    double cpu_ns; /* the worker's own CPU time in its loop */
} worker;

static double thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *obj_alloc(run *r) {
    switch (r->kind) {
    case C_GLIBC: return malloc(r->size);
    case C_MI: return mi_malloc_fn(r->size);
    default: return pk_pool_alloc(r->pool);
    }
}

static void obj_free(run *r, void *p) {
    switch (r->kind) {
    case C_GLIBC: free(p); break;
    case C_MI: mi_free_fn(p); break;
    default: pk_pool_free(r->pool, p);
    }
}

static BENCH_KERNEL void *worker_main(void *arg) {
    worker *w = arg;
    run *r = w->r;
    obj_free(r, w->obj);
    while (!__atomic_load_n(&r->start, __ATOMIC_ACQUIRE)) {
    }
    /* In locals: read through r, the bounds would be reloaded after every
     * byte written (a char store may alias them), and those loads would
     * time the core's memory disambiguation, not the cache lines. */
    const size_t size = r->size;
    const long iters = r->iters, writes = r->writes;
    double t0 = thread_cpu_ns();
    for (long i = 0; i < iters; i++) {
        volatile char *o = obj_alloc(r);
        for (long j = 0; j < writes; j++)
            for (size_t k = 0; k < size; k++) o[k] = (char)(k + (size_t)j);
        obj_free(r, (void *)o);
    }
    w->cpu_ns = thread_cpu_ns() - t0;
    return NULL;
}

/* One run: ns per iteration of one worker, wall clock, and in *cpu the
 * workers' CPU time per iteration; mod gets where the first two objects
 * start, mod 64. */
static double run_once(int kind, size_t size, int threads, long iters, long writes, unsigned *mod,
                       double *cpu) {
    run r = {kind, NULL, size, iters, writes, 0};
    if (kind == C_POOL) {
        r.pool = pk_pool_create(&(pk_pool_config){.name = "scratch", .size = size});
        if (!r.pool) {
            fprintf(stderr, "pk_pool_create: %s\n", strerror(errno));
            exit(2);
        }
    }
    worker w[MAX_THREADS];
    for (int t = 0; t < threads; t++) {
        w[t].r = &r;
        w[t].obj = obj_alloc(&r);
        if (!w[t].obj) exit(2);
    }
    mod[0] = (unsigned)((uintptr_t)w[0].obj % 64);
    mod[1] = (unsigned)((uintptr_t)w[threads > 1].obj % 64);
    for (int t = 0; t < threads; t++)
        if (pthread_create(&w[t].tid, NULL, worker_main, &w[t]) != 0) exit(2);
    double t0 = bench_now_ns();
    __atomic_store_n(&r.start, 1, __ATOMIC_RELEASE);
    for (int t = 0; t < threads; t++) pthread_join(w[t].tid, NULL);
    double ns = bench_now_ns() - t0;
    *cpu = 0;
    for (int t = 0; t < threads; t++) *cpu += w[t].cpu_ns / (double)threads / (double)iters;
    if (r.pool) pk_pool_destroy(r.pool);
    return ns / (double)iters;
}

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 7);
    size_t size = (size_t)bench_arg_long(&o, "--size", 64);
    int threads = (int)bench_arg_long(&o, "--threads", 2);
    long iters = bench_arg_long(&o, "--iters", o.quick ? 200 : 1000);
    long writes = bench_arg_long(&o, "--writes", 1000);
    if (threads < 1 || threads > MAX_THREADS || size < 1 || iters < 1 || writes < 1) {
        fprintf(stderr, "usage: bench_scratch [--reps N] [--quick] [--size B] [--threads 1..%d] "
                        "[--iters N] [--writes N]\n", MAX_THREADS);
        return 2;
    }
    bench_header("passive false sharing (cache-scratch): objects handed to workers, then "
                 "allocate / write / free", &o);
    printf("%d workers, %zu-byte objects, %ld iterations of %ld writes per byte\n", threads, size,
           iters, writes);

    char why[300] = "";
    void *mi = shared_dlopen("libmimalloc.so.2", "libmimalloc2.0", why, sizeof why);
    int have_mi = mi && shared_dlsym(mi, "mi_malloc", &mi_malloc_fn, why, sizeof why) &&
                  shared_dlsym(mi, "mi_free", &mi_free_fn, why, sizeof why);

    bench_series s[NCONT], cpu[NCONT];
    memset(s, 0, sizeof s);
    memset(cpu, 0, sizeof cpu);
    unsigned mod[NCONT][2] = {{0}};
    for (int rep = -1; rep < o.reps; rep++) { /* rep -1: the warm-up */
        for (int c = 0; c < NCONT; c++) {
            if (c == C_MI && !have_mi) continue;
            double on_cpu;
            double ns = run_once(c, size, threads, rep < 0 ? iters / 10 + 1 : iters, writes, mod[c],
                                 &on_cpu);
            if (rep >= 0) {
                bench_add(&s[c], ns);
                bench_add(&cpu[c], on_cpu);
            }
        }
    }
    double pool = bench_median(&s[C_POOL]);
    for (int c = 0; c < NCONT; c++) {
        if (c == C_MI && !have_mi) {
            bench_row_na(names[c], why);
            continue;
        }
        char extra[160];
        snprintf(extra, sizeof extra, "pk_pool %.2fx; CPU %.0f ns (pk_pool %.2fx); objects at %u, %u mod 64",
                 pool / bench_median(&s[c]), bench_median(&cpu[c]),
                 bench_median(&cpu[C_POOL]) / bench_median(&cpu[c]), mod[c][0], mod[c][1]);
        bench_row(names[c], &s[c], "ns", extra);
    }
    return 0;
}
