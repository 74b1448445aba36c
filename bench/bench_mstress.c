/* Threads that come and go, after mimalloc-bench's mstress: in each
 * iteration 2 threads, the calling one (which lives on) and a new one,
 * allocate objects of 8 to 128 B (powers of two; 1% of them 100 to 10,000
 * times larger), keep some to the end, free most at random, and swap some
 * with a shared array of 1,000 slots, so that objects outlive their thread
 * and are freed by the next ones; the new thread exits, and the calling
 * thread frees half the array. The live set does not grow with the
 * iterations, so neither may memory.
 *
 * The loop is the lab's migrate experiment's (lab_migrate_iteration).
 * Contenders (bench/frontends.h): glibc malloc, mimalloc 2.0.9 and 3.4
 * (loaded at run time), poolkit's pk_alloc. Each run is a forked child: its
 * peak RSS growth (VmHWM less its VmRSS at start) is its own. Reported:
 * peak RSS growth and time at 25, 100 and 250 iterations, medians of
 * interleaved repetitions. Targets: pk_alloc's peak at most 1.5x the
 * smaller mimalloc's at every count, and flat:
 * the peak at 250 iterations at most 1.2x the peak at 25.
 *
 * Then workers that end: END_THREADS threads each make END_BLOCKS blocks
 * of 16 B to 1 KiB, write them, free them and exit; the main thread then
 * makes and frees END_ROUND_BLOCKS blocks of the same sizes END_ROUNDS
 * times, 10 ms apart (its lists serve it: such a program may never call
 * into an allocator's slow path again). Reported:
 * the child's resident memory over its start at the end, against the
 * burst's peak. Target: pk_alloc's at most the better peer's. What it keeps
 * is its warm places (at most RETAIN_BYTES, src/base/policy.h), which
 * the next threads' slabs take with no page fault.
 *
 * Then generations: GEN_THREADS threads one after another, each keeping
 * GEN_LIVE blocks, replacing GEN_REPLACE of them at random and handing
 * half of its blocks to the next thread, which frees them: once with
 * blocks of 16 B to 1 KiB, once with blocks of 64 to 256 KiB (each a
 * slab of its own in pk_alloc's classes). Then, with blocks of 64 to
 * 256 KiB, a live set of GEN_SHARED blocks that outlives the threads: each
 * replaces GEN_REPLACE of them at random (frees of blocks that threads
 * gone made, into slabs of several classes, most of them full with a
 * block still live). Reported: time, and resident memory over the start
 * after each quarter of the threads. Target: pk_alloc's last quarter at
 * most 1.2x its first (memory does not grow while the live set does
 * not).
 *
 * Usage: bench_mstress [--reps N] [--quick] [--scale N] [--no-peers]
 */
#include "frontends.h"

#include <pthread.h>
#include <stdbool.h>

static long scale;

typedef struct job {
    const frontend *fe;
    int iterations;
} job;

/* In a forked child: out[0] the run's time in ms (the lab's loop,
 * lab_migrate_iteration); out[1] (lab_in_child) peak RSS growth in KiB. */
static void child(void *arg, double *out) {
    const job *j = arg;
    uint64_t r = 12345;
    double t0 = bench_now_ns();
    for (int n = 0; n < j->iterations; n++)
        lab_migrate_iteration(j->fe->a, scale, &r, n + 1 == j->iterations);
    out[0] = (bench_now_ns() - t0) / 1e6;
}

static double mib(double kib) { return kib / 1024.0; }

#define END_THREADS 4
#define END_BLOCKS 40000
#define END_ROUNDS 60
#define END_ROUND_BLOCKS 500

static size_t end_size(size_t i) { return 16 + (i * 7919 % 64) * 16; }

static void *end_worker(void *arg) {
    const rp_alloc *a = arg;
    void **v = malloc(END_BLOCKS * sizeof *v);
    if (!v) abort();
    for (size_t i = 0; i < END_BLOCKS; i++) {
        v[i] = a->malloc(end_size(i));
        if (!v[i]) abort();
        memset(v[i], 1, end_size(i));
    }
    for (size_t i = 0; i < END_BLOCKS; i++) a->free(v[i]);
    free(v);
    return NULL;
}

/* In a forked child: out[0] its resident KiB over its start once the
 * workers ended and the main thread's rounds ran; out[1] (lab_in_child)
 * its peak growth. */
static void end_child(void *arg, double *out) {
    const rp_alloc *a = arg;
    size_t base = bench_rss_bytes();
    pthread_t t[END_THREADS];
    for (int i = 0; i < END_THREADS; i++)
        if (pthread_create(&t[i], NULL, end_worker, (void *)a) != 0) abort();
    for (int i = 0; i < END_THREADS; i++) pthread_join(t[i], NULL);
    void *v[END_ROUND_BLOCKS];
    for (int r = 0; r < END_ROUNDS; r++) {
        for (size_t i = 0; i < END_ROUND_BLOCKS; i++) v[i] = a->malloc(end_size(i + (size_t)r));
        for (size_t i = 0; i < END_ROUND_BLOCKS; i++) a->free(v[i]);
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    size_t now = bench_rss_bytes();
    out[0] = now > base ? (double)(now - base) / 1024.0 : 0;
}

static void workers_that_end(frontend *fes, const bench_opts *o) {
    bench_series left[FE_COUNT], peak[FE_COUNT];
    memset(left, 0, sizeof left);
    memset(peak, 0, sizeof peak);
    for (int rep = 0; rep < o->reps; rep++)
        for (int c = 0; c < FE_COUNT; c++) {
            int f = (c + rep) % FE_COUNT;
            double out[2];
            if (fes[f].why[0] || lab_in_child(end_child, (void *)fes[f].a, out, 1) != 0) continue;
            bench_add(&left[f], out[0]);
            bench_add(&peak[f], out[1]);
        }
    printf("\nworkers that end: %d threads x %d blocks of 16-1024 B made, written, freed; then the main "
           "thread's %d rounds of %d blocks, 10 ms apart (each run a forked child)\n",
           END_THREADS, END_BLOCKS, END_ROUNDS, END_ROUND_BLOCKS);
    printf("  %-20s %28s %28s\n", "contender", "peak RSS growth MiB [min-max]", "resident after MiB [min-max]");
    for (int f = 0; f < FE_COUNT; f++)
        if (fes[f].why[0] || !left[f].n) bench_row_na(fes[f].label, fes[f].why[0] ? fes[f].why : "the child failed");
        else
            printf("  %-20s %10.1f [%6.1f - %6.1f] %10.1f [%6.1f - %6.1f]\n", fes[f].label,
                   mib(bench_median(&peak[f])), mib(bench_min(&peak[f])), mib(bench_max(&peak[f])),
                   mib(bench_median(&left[f])), mib(bench_min(&left[f])), mib(bench_max(&left[f])));
    if (!left[FE_POOLKIT].n) return;
    double best = -1;
    for (int f = 0; f < FE_COUNT; f++)
        if (f != FE_POOLKIT && left[f].n && (best < 0 || bench_median(&left[f]) < best)) best = bench_median(&left[f]);
    double pk = bench_median(&left[FE_POOLKIT]);
    if (best < 0) {
        printf("target: workers that end: pk_alloc resident after <= the better peer's: no peer measured  -> SKIP\n");
        return;
    }
    char peers[96] = "";
    for (int f = 0; f < FE_COUNT; f++)
        if (f != FE_POOLKIT && left[f].n)
            snprintf(peers + strlen(peers), sizeof peers - strlen(peers), "; %s %.1f", fes[f].label,
                     mib(bench_median(&left[f])));
    bench_target(pk <= best,
                 "workers that end: pk_alloc keeps %.1f MiB resident, %.2f of the burst's peak (target: at most "
                 "the better peer's, %.1f MiB%s)",
                 mib(pk), pk / bench_median(&peak[FE_POOLKIT]), mib(best), peers);
}

#define GEN_THREADS 100
#define GEN_LIVE 200
#define GEN_REPLACE 2000
#define GEN_SHARED 256

typedef struct gen_job {
    const rp_alloc *a;
    size_t lo, hi;
    void **handed; /* the last thread's half, for the next to free */
    size_t nhanded;
    void **shared; /* or the live set every thread replaces in */
    shared_rng rng;
} gen_job;

static void *gen_thread(void *arg) {
    gen_job *j = arg;
    const rp_alloc *a = j->a;
    if (j->shared) {
        for (size_t k = 0; k < GEN_REPLACE; k++) {
            size_t i = shared_rng_below(&j->rng, GEN_SHARED);
            a->free(j->shared[i]);
            j->shared[i] = a->malloc(j->lo + shared_rng_below(&j->rng, j->hi - j->lo + 1));
            if (!j->shared[i]) abort();
            *(char *)j->shared[i] = 1;
        }
        return NULL;
    }
    void *v[GEN_LIVE];
    for (size_t i = 0; i < j->nhanded; i++) a->free(j->handed[i]);
    j->nhanded = 0;
    for (size_t i = 0; i < GEN_LIVE; i++) {
        v[i] = a->malloc(j->lo + shared_rng_below(&j->rng, j->hi - j->lo + 1));
        if (!v[i]) abort();
        *(char *)v[i] = 1;
    }
    for (size_t k = 0; k < GEN_REPLACE; k++) {
        size_t i = shared_rng_below(&j->rng, GEN_LIVE);
        a->free(v[i]);
        v[i] = a->malloc(j->lo + shared_rng_below(&j->rng, j->hi - j->lo + 1));
        if (!v[i]) abort();
        *(char *)v[i] = 1;
    }
    for (size_t i = 0; i < GEN_LIVE; i++)
        if (i % 2) j->handed[j->nhanded++] = v[i];
        else a->free(v[i]);
    return NULL;
}

/* In a forked child: out[0] ms, out[1..4] resident KiB over the start
 * after each quarter of the threads; out[5] (lab_in_child) peak growth. */
static void gen_child(void *arg, double *out) {
    gen_job j = *(const gen_job *)arg;
    void *handed[GEN_LIVE], *shared[GEN_SHARED] = {NULL};
    j.handed = handed;
    if (j.shared) j.shared = shared;
    size_t base = bench_rss_bytes();
    double t0 = bench_now_ns();
    for (int t = 0; t < GEN_THREADS; t++) {
        pthread_t th;
        if (pthread_create(&th, NULL, gen_thread, &j) != 0) abort();
        pthread_join(th, NULL);
        if ((t + 1) % (GEN_THREADS / 4) == 0) {
            size_t now = bench_rss_bytes();
            out[1 + t / (GEN_THREADS / 4)] = now > base ? (double)(now - base) / 1024.0 : 0;
        }
    }
    out[0] = (bench_now_ns() - t0) / 1e6;
    for (size_t i = 0; i < j.nhanded; i++) j.a->free(handed[i]);
    for (size_t i = 0; j.shared && i < GEN_SHARED; i++) j.a->free(shared[i]);
}

static void generations(frontend *fes, const bench_opts *o, size_t lo, size_t hi, bool shared) {
    bench_series ms[FE_COUNT], q[FE_COUNT][4];
    memset(ms, 0, sizeof ms);
    memset(q, 0, sizeof q);
    for (int rep = 0; rep < o->reps; rep++)
        for (int c = 0; c < FE_COUNT; c++) {
            int f = (c + rep) % FE_COUNT;
            void *mark = NULL; /* any non-NULL: gen_child makes the set */
            gen_job j = {fes[f].a, lo, hi, NULL, 0, shared ? &mark : NULL, {7}};
            double out[6];
            if (fes[f].why[0] || lab_in_child(gen_child, &j, out, 5) != 0) continue;
            bench_add(&ms[f], out[0]);
            for (int k = 0; k < 4; k++) bench_add(&q[f][k], out[1 + k]);
        }
    if (shared)
        printf("\ngenerations: %d threads one after another replacing %d blocks at random each among %d live "
               "blocks of %zu-%zu B that outlive them (each run a forked child)\n",
               GEN_THREADS, GEN_REPLACE, GEN_SHARED, lo, hi);
    else
        printf("\ngenerations: %d threads one after another, %d live blocks of %zu-%zu B, %d replaced at random, "
               "half handed to the next thread (each run a forked child)\n",
               GEN_THREADS, GEN_LIVE, lo, hi, GEN_REPLACE);
    printf("  %-20s %10s   %s\n", "contender", "time ms", "resident MiB after each quarter of the threads");
    for (int f = 0; f < FE_COUNT; f++)
        if (fes[f].why[0] || !ms[f].n) bench_row_na(fes[f].label, fes[f].why[0] ? fes[f].why : "the child failed");
        else
            printf("  %-20s %10.1f   %.1f / %.1f / %.1f / %.1f\n", fes[f].label, bench_median(&ms[f]),
                   mib(bench_median(&q[f][0])), mib(bench_median(&q[f][1])), mib(bench_median(&q[f][2])),
                   mib(bench_median(&q[f][3])));
    if (!ms[FE_POOLKIT].n) return;
    double first = bench_median(&q[FE_POOLKIT][0]), last = bench_median(&q[FE_POOLKIT][3]);
    double growth = first > 0 ? last / first : 1;
    bench_target(growth <= 1.2,
                 "generations of %zu-%zu B%s: pk_alloc resident memory flat: %.2fx after the last quarter of the "
                 "threads against the first (%.1f vs %.1f MiB)",
                 lo, hi, shared ? ", a live set that outlives them" : "", growth, mib(last), mib(first));
}

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 5);
    scale = bench_arg_long(&o, "--scale", 50);
    bench_header("threads that come and go (mstress shape): peak RSS over iterations", &o);
    printf("each iteration: %d threads, scale %ld (mimalloc-bench's mstress %d %ld N), a shared array of %d "
           "slots; each run a forked child; peak RSS = child's VmHWM - its VmRSS at start\n",
           LAB_MIGRATE_THREADS, scale, LAB_MIGRATE_THREADS, scale, LAB_MIGRATE_TRANSFERS);
    frontend fes[FE_COUNT];
    frontends_load(fes, bench_arg_flag(&o, "--no-peers"));
    static const int iters[] = {25, 100, 250};
    enum { NI = 3 };
    bench_series rss[FE_COUNT][NI], ms[FE_COUNT][NI];
    memset(rss, 0, sizeof rss);
    memset(ms, 0, sizeof ms);
    for (int rep = -1; rep < o.reps; rep++)
        for (int k = 0; k < NI; k++)
            for (int c = 0; c < FE_COUNT; c++) {
                int f = (c + (rep > 0 ? rep : 0)) % FE_COUNT; /* the first contender rotates */
                if (fes[f].why[0]) continue;
                job j = {&fes[f], rep < 0 ? 5 : iters[k]};
                double out[2];
                if (lab_in_child(child, &j, out, 1) != 0) {
                    snprintf(fes[f].why, sizeof fes[f].why, "the child process failed");
                    continue;
                }
                if (rep < 0) continue;
                bench_add(&ms[f][k], out[0]);
                bench_add(&rss[f][k], out[1]);
            }

    printf("\n  %-20s %10s %28s %28s\n", "contender", "iterations", "peak RSS growth MiB [min-max]",
           "time ms [min-max]");
    for (int f = 0; f < FE_COUNT; f++) {
        if (fes[f].why[0]) {
            bench_row_na(fes[f].label, fes[f].why);
            continue;
        }
        for (int k = 0; k < NI; k++)
            printf("  %-20s %10d %10.1f [%6.1f - %6.1f] %10.0f [%6.0f - %6.0f]\n", fes[f].label, iters[k],
                   mib(bench_median(&rss[f][k])), mib(bench_min(&rss[f][k])), mib(bench_max(&rss[f][k])),
                   bench_median(&ms[f][k]), bench_min(&ms[f][k]), bench_max(&ms[f][k]));
    }
    if (fes[FE_POOLKIT].why[0]) return 1;
    const bench_series *pk = rss[FE_POOLKIT];
    double flat = bench_median(&pk[NI - 1]) / bench_median(&pk[0]);
    bench_target(flat <= 1.2, "mstress shape: pk_alloc peak RSS flat over iterations: %.2fx at %d against %d "
                              "(%.1f vs %.1f MiB)",
                 flat, iters[NI - 1], iters[0], mib(bench_median(&pk[NI - 1])), mib(bench_median(&pk[0])));
    if (frontends_best_median(fes, &rss[0][0], NI) < 0) {
        printf("target: mstress shape: pk_alloc peak RSS <= 1.5x the smaller mimalloc: no mimalloc available  -> SKIP\n");
        workers_that_end(fes, &o);
        generations(fes, &o, 16, 1024, false);
        generations(fes, &o, 64 << 10, 256 << 10, false);
        generations(fes, &o, 64 << 10, 256 << 10, true);
        return 0;
    }
    for (int k = 0; k < NI; k++) {
        int mi = frontends_best_median(fes, &rss[0][k], NI); /* the smaller mimalloc at each count */
        double ratio = bench_median(&pk[k]) / bench_median(&rss[mi][k]);
        bench_target(ratio <= 1.5, "mstress shape: pk_alloc peak RSS <= 1.5x the smaller mimalloc at %d iterations: "
                                   "%.2fx (%.1f vs %.1f MiB, %s; glibc %.1f)",
                     iters[k], ratio, mib(bench_median(&pk[k])), mib(bench_median(&rss[mi][k])), fes[mi].label,
                     mib(bench_median(&rss[FE_GLIBC][k])));
    }
    workers_that_end(fes, &o);
    generations(fes, &o, 16, 1024, false);
    generations(fes, &o, 64 << 10, 256 << 10, false);
    generations(fes, &o, 64 << 10, 256 << 10, true);
    return 0;
}
