/* One point of each of the thread shapes (lab.h), measured alone in a
 * forked child so that every allocator starts from a fresh heap and its
 * memory is its own: the steady state after larson, Hoard's cache-scratch,
 * xmalloc-test's remote batches, and many pools shared by many threads. The
 * loops are kernels_shapes.h's, run through the adapters; what is here is
 * the threads, the hand-overs and the clocks. The experiments
 * (exp_steady_state.c, exp_cache_scratch.c, exp_remote_batches.c,
 * exp_many_pools.c) repeat these points over their contenders, and
 * bench/bench_threads.c prints their targets.
 *
 * Time is taken by the threads' own clocks, from the first thread's start
 * to the last one's end: the main thread may be descheduled after a barrier
 * when there are more runnable threads than cores.
 */
#include "lab.h"
#include "kernels_shapes.h" /* the batch queue, LAB_STEADY_CLASS */

#include <poolkit/stats.h>

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 16

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n, size);
    if (!p) abort();
    return p;
}

static double thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Threads started together at a barrier; each runs fn(arg + i * stride)
 * and records its own start and end, and the CPU time it used. Returns the
 * span from the first start to the last end, in ns; *cpu (when not NULL)
 * gets the threads' CPU time, all together. */
typedef struct clocked {
    pthread_t thread;
    pthread_barrier_t *start;
    void (*fn)(void *);
    void *arg;
    double t0, t1, cpu;
} clocked;

static void *clocked_main(void *p) {
    clocked *c = (clocked *)p;
    pthread_barrier_wait(c->start);
    c->t0 = lab_now_ns();
    double cpu0 = thread_cpu_ns();
    c->fn(c->arg);
    c->cpu = thread_cpu_ns() - cpu0;
    c->t1 = lab_now_ns();
    return NULL;
}

static double run_clocked(int n, void (*fn)(void *), void *args, size_t stride, double *cpu) {
    clocked c[MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        c[i] = (clocked){.start = &start, .fn = fn, .arg = (char *)args + (size_t)i * stride};
        if (pthread_create(&c[i].thread, NULL, clocked_main, &c[i]) != 0) abort();
    }
    pthread_barrier_wait(&start);
    for (int i = 0; i < n; i++) pthread_join(c[i].thread, NULL);
    pthread_barrier_destroy(&start);
    double first = c[0].t0, last = c[0].t1;
    if (cpu) *cpu = 0;
    for (int i = 0; i < n; i++) {
        if (c[i].t0 < first) first = c[i].t0;
        if (c[i].t1 > last) last = c[i].t1;
        if (cpu) *cpu += c[i].cpu;
    }
    return last - first;
}

/* ---- the steady state (larson) ---- */

typedef struct steady_arg {
    lab_allocator *a;
    int threads, gens;
    long live, rounds;
    unsigned lo, hi;
} steady_arg;

typedef struct steady_thread {
    const steady_arg *c;
    void *const *ctxs;
    void **objs;
    uint8_t *sizes;
    uint64_t seed;
} steady_thread;

static void steady_worker(void *p) {
    steady_thread *s = (steady_thread *)p;
    s->c->a->steady(s->ctxs, s->objs, s->sizes, s->c->live, s->c->rounds, s->c->lo, s->c->hi,
                    s->seed);
}

/* out[0] ns per pair per thread; out[1] (lab_in_child) peak RSS growth. */
static void steady_child(void *argp, double *out) {
    const steady_arg *c = (const steady_arg *)argp;
    lab_allocator *a = c->a;
    void *ctxs[LAB_STEADY_CLASSES];
    bool one = c->lo == c->hi; /* fixed size: one context serves every class */
    for (int k = 0; k < LAB_STEADY_CLASSES; k++)
        ctxs[k] = one && k > 0 ? ctxs[0] : a->open(one ? c->lo : 16u * (unsigned)(k + 1));
    steady_thread t[MAX_THREADS];
    shared_rng rng = {0x5eed};
    /* The main thread fills every set, as larson's does: the first
     * generation's frees are all remote. */
    for (int i = 0; i < c->threads; i++) {
        t[i] = (steady_thread){c, ctxs, xcalloc((size_t)c->live, sizeof(void *)),
                               xcalloc((size_t)c->live, 1), 0};
        for (long j = 0; j < c->live; j++) {
            unsigned sz = c->lo + (unsigned)shared_rng_below(&rng, c->hi - c->lo + 1);
            t[i].sizes[j] = (uint8_t)sz;
            t[i].objs[j] = a->one_alloc(ctxs[LAB_STEADY_CLASS(sz)], sz);
        }
    }
    double span = 0;
    for (int g = 0; g < c->gens; g++) {
        for (int i = 0; i < c->threads; i++) t[i].seed = 0x5eed + (uint64_t)(g * c->threads + i + 1);
        span += run_clocked(c->threads, steady_worker, t, sizeof t[0], NULL); /* fresh threads */
    }
    for (int i = 0; i < c->threads; i++) {
        for (long j = 0; j < c->live; j++)
            a->one_free(ctxs[LAB_STEADY_CLASS(t[i].sizes[j])], t[i].objs[j], t[i].sizes[j]);
        free(t[i].objs);
        free(t[i].sizes);
    }
    for (int k = 0; k < (one ? 1 : LAB_STEADY_CLASSES); k++) a->close(ctxs[k]);
    out[0] = span / ((double)c->rounds * c->gens);
}

int lab_steady_measure(lab_allocator *a, int threads, long live, unsigned lo, unsigned hi,
                       long rounds, int gens, double *out) {
    if (!a->steady || threads < 1 || threads > MAX_THREADS || lo < 1 || hi > 128 || lo > hi)
        return -1;
    steady_arg c = {a, threads, gens, live, rounds, lo, hi};
    return lab_in_child(steady_child, &c, out, 1) != 0 || out[0] <= 0 ? -1 : 0;
}

/* ---- cache-scratch (Hoard) ---- */

typedef struct scratch_arg {
    lab_allocator *a;
    int threads;
    size_t size;
    long iterations, repetitions;
    int control;
} scratch_arg;

typedef struct scratch_thread {
    const scratch_arg *c;
    void *ctx, *handed;
} scratch_thread;

static void scratch_worker(void *p) {
    scratch_thread *s = (scratch_thread *)p;
    s->c->a->scratch(s->ctx, s->c->size, s->handed, s->c->iterations, s->c->repetitions);
}

/* Aligned, so that the loop's place in the code is the same whatever else
 * is linked. */
__attribute__((noinline, aligned(64))) void lab_scratch_writes(char *obj, size_t size,
                                                               long repetitions) {
    volatile char *v = obj;
    for (long j = 0; j < repetitions; j++)
        for (size_t k = 0; k < size; k++) v[k] = (char)(v[k] + 1);
}

/* The control's memory: one object per worker, side by side from a line's
 * start or LAB_SCRATCH_APART bytes apart. */
static char scratch_lines[MAX_THREADS * LAB_SCRATCH_APART] __attribute__((aligned(64)));

/* False sharing shows only while both workers run at once, which a shared
 * machine often does not grant: the workers run up to this many times, and
 * the run in which they overlapped most is kept (its CPU time per write is
 * what the allocator's placement costs; waiting for a core is not in it). */
#define SCRATCH_ATTEMPTS 5

static void scratch_child(void *argp, double *out) {
    const scratch_arg *c = (const scratch_arg *)argp;
    scratch_thread t[MAX_THREADS];
    void *ctx = c->control ? NULL : c->a->open(c->size);
    double writes = (double)c->iterations * (double)c->repetitions * (double)c->size;
    out[2] = -1;
    for (int k = 0; k < SCRATCH_ATTEMPTS && out[2] < 0.9 * c->threads; k++) {
        for (int i = 0; i < c->threads; i++) {
            if (c->control) {
                /* The empty adapter's worker: its "allocation" returns its
                 * context, so each worker writes the object placed for it. */
                size_t step = c->control == LAB_SCRATCH_SIDE_BY_SIDE ? c->size : LAB_SCRATCH_APART;
                char *obj = scratch_lines + (size_t)i * step;
                t[i] = (scratch_thread){c, obj, obj};
            } else {
                /* One after the other from the main thread: neighbours. */
                t[i] = (scratch_thread){c, ctx, c->a->one_alloc(ctx, c->size)};
            }
        }
        double cpu, span = run_clocked(c->threads, scratch_worker, t, sizeof t[0], &cpu);
        if (cpu / span > out[2]) {
            out[0] = cpu / c->threads / writes;
            out[1] = span;
            out[2] = cpu / span; /* how many workers ran at once, on average */
        }
    }
    if (ctx) c->a->close(ctx);
}

int lab_scratch_measure(lab_allocator *a, int threads, size_t size, long iterations,
                        long repetitions, int control, double *out) {
    if (control) a = lab_allocator_named("empty loop");
    if (!a || !a->scratch || threads < 1 || threads > MAX_THREADS || size > LAB_SCRATCH_APART)
        return -1;
    scratch_arg c = {a, threads, size, iterations, repetitions, control};
    double res[4];
    if (lab_in_child(scratch_child, &c, res, 3) != 0 || res[0] <= 0) return -1;
    memcpy(out, res, 3 * sizeof res[0]);
    return 0;
}

/* ---- remote batches (xmalloc-test) ---- */

typedef struct xmalloc_arg {
    lab_allocator *a;
    int pairs;
    size_t size;
    long batches;
} xmalloc_arg;

typedef struct xmalloc_thread {
    const xmalloc_arg *c;
    void *ctx;
    lab_batchq *q;
    int producer;
} xmalloc_thread;

static void xmalloc_worker(void *p) {
    xmalloc_thread *x = (xmalloc_thread *)p;
    if (x->producer) x->c->a->xproduce(x->ctx, x->c->size, x->q, x->c->batches);
    else x->c->a->xconsume(x->ctx, x->c->size, x->q);
}

static void xmalloc_child(void *argp, double *out) {
    const xmalloc_arg *c = (const xmalloc_arg *)argp;
    lab_batchq *q = xcalloc(1, sizeof *q);
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->changed, NULL);
    for (int i = 0; i < LAB_BATCHQ_CAP; i++) q->empty[i] = xcalloc(LAB_BATCH, sizeof(void *));
    q->nempty = LAB_BATCHQ_CAP;
    q->produced_left = c->batches * c->pairs;
    void *ctx = c->a->open(c->size);
    xmalloc_thread t[MAX_THREADS];
    for (int i = 0; i < 2 * c->pairs; i++) t[i] = (xmalloc_thread){c, ctx, q, i % 2 == 0};
    double span = run_clocked(2 * c->pairs, xmalloc_worker, t, sizeof t[0], NULL);
    c->a->close(ctx);
    for (int i = 0; i < LAB_BATCHQ_CAP; i++) free(q->empty[i]);
    pthread_cond_destroy(&q->changed);
    pthread_mutex_destroy(&q->lock);
    free(q);
    out[0] = span / ((double)c->batches * c->pairs * LAB_BATCH);
}

int lab_xmalloc_measure(lab_allocator *a, int pairs, size_t size, long batches, double *out) {
    if (!a->xproduce || pairs < 1 || 2 * pairs > MAX_THREADS) return -1;
    xmalloc_arg c = {a, pairs, size, batches};
    return lab_in_child(xmalloc_child, &c, out, 1) != 0 || out[0] <= 0 ? -1 : 0;
}

/* ---- many pools ---- */

typedef struct manypools_arg {
    lab_allocator *a;
    int threads;
    long npools, per_pool;
    size_t size;
} manypools_arg;

typedef struct manypools_thread {
    const manypools_arg *c;
    void *const *ctxs;
    void **objs;
    pthread_barrier_t *held, *go;
    double ns;
} manypools_thread;

/* Allocates, then waits while the main thread reads the memory (the
 * thread's caches still alive), then frees and exits. */
static void manypools_worker(void *p) {
    manypools_thread *m = (manypools_thread *)p;
    const manypools_arg *c = m->c;
    m->ns = c->a->manypools(m->ctxs, c->npools, c->per_pool, c->size, m->objs, 0);
    pthread_barrier_wait(m->held);
    pthread_barrier_wait(m->go);
    c->a->manypools(m->ctxs, c->npools, c->per_pool, c->size, m->objs, 1);
}

typedef struct manypools_main {
    manypools_thread *t;
    int threads;
    double *out;
    double rss0, reserved0, resident0;
    bool ours;
} manypools_main;

/* The main thread's part, on a thread of its own so that run_clocked can
 * start the workers: waits until they hold everything, reads, releases. */
static void manypools_reader(void *p) {
    manypools_main *m = (manypools_main *)p;
    pthread_barrier_wait(m->t[0].held);
    double per = (double)m->threads * (double)m->t[0].c->npools;
    m->out[0] = ((double)shared_status_bytes("VmRSS") - m->rss0) / per;
    m->out[1] = m->out[2] = NAN;
    if (m->ours) {
        pk_process_stats st;
        pk_stats_get(&st);
        m->out[1] = ((double)st.pool_bytes_reserved - m->reserved0) / per;
        m->out[2] = ((double)st.pool_bytes_resident - m->resident0) / per;
    }
    pthread_barrier_wait(m->t[0].go);
}

typedef struct manypools_slot {
    bool reader;
    manypools_thread worker;
    manypools_main main;
} manypools_slot;

static void manypools_dispatch(void *p) {
    manypools_slot *s = (manypools_slot *)p;
    if (s->reader) manypools_reader(&s->main);
    else manypools_worker(&s->worker);
}

static void manypools_child(void *argp, double *out) {
    const manypools_arg *c = (const manypools_arg *)argp;
    bool ours = !strcmp(c->a->family, "poolkit");
    size_t nobjs = (size_t)(c->npools * c->per_pool);
    manypools_slot s[MAX_THREADS + 1];
    pthread_barrier_t held, go;
    pthread_barrier_init(&held, NULL, (unsigned)c->threads + 1);
    pthread_barrier_init(&go, NULL, (unsigned)c->threads + 1);
    void **ctxs = xcalloc((size_t)c->npools, sizeof(void *));
    /* The lab's own arrays are made and touched before the first reading. */
    for (int i = 0; i < c->threads; i++) {
        s[i] = (manypools_slot){false, {c, ctxs, xcalloc(nobjs, sizeof(void *)), &held, &go, 0},
                                {0}};
        memset(s[i].worker.objs, 1, nobjs * sizeof(void *));
    }
    /* From here on everything counts: the pools' records, their slabs, the
     * threads' caches. */
    pk_process_stats st0;
    pk_stats_get(&st0);
    double rss0 = (double)shared_status_bytes("VmRSS");
    for (long p = 0; p < c->npools; p++) ctxs[p] = c->a->open(c->size);
    s[c->threads] = (manypools_slot){true, {0}, {&s[0].worker, c->threads, out, rss0,
                                     (double)st0.pool_bytes_reserved,
                                     (double)st0.pool_bytes_resident, ours}};
    run_clocked(c->threads + 1, manypools_dispatch, s, sizeof s[0], NULL);
    double ns = 0;
    for (int i = 0; i < c->threads; i++) {
        if (s[i].worker.ns > ns) ns = s[i].worker.ns;
        free(s[i].worker.objs);
    }
    out[3] = ns / ((double)c->npools * (double)c->per_pool);
    pthread_barrier_destroy(&held);
    pthread_barrier_destroy(&go);
    for (long p = 0; p < c->npools; p++) c->a->close(ctxs[p]);
    free(ctxs);
}

int lab_manypools_measure(lab_allocator *a, int threads, long npools, long per_pool, size_t size,
                          double *out) {
    if (!a->manypools || threads < 1 || threads > MAX_THREADS) return -1;
    manypools_arg c = {a, threads, npools, per_pool, size};
    return lab_in_child(manypools_child, &c, out, 4) != 0 || out[3] <= 0 ? -1 : 0;
}
