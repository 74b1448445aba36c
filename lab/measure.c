/* One point of each in-process workload, measured alone: the working set,
 * the pool pattern and the thread workloads (declared in lab.h). The
 * experiments (exp_workset.c, exp_pool_pattern.c, exp_threads.c) repeat
 * them over their contenders and parameters and keep rows; bench/'s
 * programs call the same functions and print their targets. */
#include "lab.h"
#include "kernels.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- the working set (workset.h) ---- */

/* The random order for each N: a fixed permutation (seed 0x5eed), made once. */
const uint32_t *lab_workset_perm(long n) {
    static struct {
        long n;
        uint32_t *perm;
    } cache[16];
    for (int i = 0; i < 16; i++) {
        if (cache[i].n == n) return cache[i].perm;
        if (cache[i].n == 0) {
            cache[i].perm = malloc(sizeof(uint32_t) * (size_t)n);
            if (!cache[i].perm) abort();
            shared_permutation(cache[i].perm, n, 0x5eed);
            cache[i].n = n;
            return cache[i].perm;
        }
    }
    abort();
}

typedef struct ws_arg {
    lab_allocator *a;
    size_t size;
    long n, phases;
    int order;
    const uint32_t *perm;
    double cap_ns;
} ws_arg;

/* In the child: out[0] ns per pair, [1] faults in the first phase, [2]
 * faults per repeated phase, [3] pairs timed, [4] and [5] poolkit's own
 * report of its memory (lab_pk_memory_end; NaN for the peers); out[6]
 * (lab_in_child) peak RSS growth in KiB. */
static void ws_child(void *argp, double *out) {
    ws_arg *c = (ws_arg *)argp;
    void **objs = workset_objs(c->n);
    out[4] = out[5] = NAN;
    if (!objs) {
        out[0] = -1;
        return;
    }
    bool ours = !strcmp(c->a->family, "poolkit");
    lab_pk_memory pkm;
    if (ours) lab_pk_memory_begin(&pkm);
    void *ctx = c->a->open(c->size);
    workset_stats st = {0, 0, 0};
    /* the code warm-up (workset.h), on the same context */
    c->a->workset(ctx, c->size, WORKSET_WARM_N, c->order, workset_warm_perm(), objs, 1, c->cap_ns,
                  &st);
    double ns = c->a->workset(ctx, c->size, c->n, c->order, c->perm, objs, c->phases, c->cap_ns,
                              &st);
    if (ours) lab_pk_memory_end(&pkm, out + 4);
    c->a->close(ctx);
    workset_objs_free(objs, c->n);
    if (ns < 0 || st.phases < 1) {
        out[0] = -1;
        return;
    }
    double pairs = (double)st.phases * (double)c->n;
    out[0] = ns / pairs;
    out[1] = (double)st.faults_first;
    out[2] = (double)st.faults_repeat / (double)st.phases;
    out[3] = pairs;
}

int lab_workset_measure(lab_allocator *a, size_t size, long n, int order, const uint32_t *perm,
                        long phases, double cap, double *out) {
    ws_arg c = {a, size, n, phases, order, perm, cap};
    return lab_in_child(ws_child, &c, out, 6) != 0 || out[0] < 0 ? -1 : 0;
}

/* ---- the pool pattern (kernels.h) ---- */

typedef struct pattern_arg {
    lab_allocator *a;
    size_t bytes;
    long rounds;
} pattern_arg;

/* The timed rounds run at least 3 times, and until 30 ms have passed (at
 * most 15 times), on the same context; the child reports their median, so
 * that one descheduling on a busy machine does not decide a short run (the
 * big size takes well under a millisecond for most contenders). */
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* out[0] ns for the rounds (median of the runs), [1] allocations and [2]
 * peak live objects per run, [3] and [4] poolkit's own report of its memory
 * (lab_pk_memory_end; NaN for the peers); out[5] (lab_in_child) peak RSS
 * growth in KiB. */
static void pattern_child(void *argp, double *out) {
    pattern_arg *c = (pattern_arg *)argp;
    lab_pattern_stats st = {0, 0};
    long warm = c->rounds / 10 > 0 ? c->rounds / 10 : 1;
    bool ours = !strcmp(c->a->family, "poolkit");
    lab_pk_memory pkm;
    out[3] = out[4] = NAN;
    if (ours) lab_pk_memory_begin(&pkm);
    void *ctx = c->a->open(c->bytes);
    c->a->pattern(ctx, c->bytes, warm, &st); /* warm-up, same context */
    double runs[15], spent = 0;
    int k = 0;
    while (k < 15 && (k < 3 || spent < 30e6)) {
        runs[k] = c->a->pattern(ctx, c->bytes, c->rounds, &st);
        spent += runs[k++];
    }
    qsort(runs, (size_t)k, sizeof runs[0], cmp_double);
    out[0] = k % 2 ? runs[k / 2] : (runs[k / 2 - 1] + runs[k / 2]) / 2;
    out[1] = (double)st.allocs;
    out[2] = (double)st.peak_live;
    if (ours) lab_pk_memory_end(&pkm, out + 3);
    c->a->close(ctx);
}

int lab_pattern_measure(lab_allocator *a, size_t bytes, long rounds, double *out) {
    pattern_arg c = {a, bytes, rounds};
    return lab_in_child(pattern_child, &c, out, 5) != 0 || out[0] < 0 ? -1 : 0;
}

/* ---- the thread workloads (kernels.h) ---- */

typedef struct worker {
    pthread_t thread;
    lab_allocator *a;
    void *ctx;
    int workload, index;
    long n;
    size_t size;
    lab_spsc *in, *out;
    pthread_barrier_t *start;
    double t_start, t_end; /* this thread's own clock readings */
} worker;

static void *work(void *arg) {
    worker *w = (worker *)arg;
    pthread_barrier_wait(w->start);
    w->t_start = lab_now_ns();
    if (w->workload == 0) w->a->pc(w->ctx, w->size, w->n, w->in, w->out);
    else w->a->churn(w->ctx, w->size, w->n, 0x5eed + (uint64_t)w->index);
    w->t_end = lab_now_ns();
    return NULL;
}

double lab_threads_measure(lab_allocator *a, int workload, int threads, long n, size_t size) {
    worker w[64];
    lab_spsc *queues = NULL;
    if (posix_memalign((void **)&queues, 64, sizeof(lab_spsc) * (size_t)threads)) return -1;
    memset(queues, 0, sizeof(lab_spsc) * (size_t)threads);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    void *ctx = a->open(size);
    int made = 0;
    for (int t = 0; t < threads; t++) {
        w[t] = (worker){0};
        w[t].a = a;
        w[t].ctx = ctx;
        w[t].workload = workload;
        w[t].index = t;
        w[t].n = n;
        w[t].size = size;
        w[t].in = &queues[(t + threads - 1) % threads];
        w[t].out = &queues[t];
        w[t].start = &start;
        if (pthread_create(&w[t].thread, NULL, work, &w[t]) != 0) break;
        made++;
    }
    double mops = -1;
    if (made == threads) {
        /* From the first thread's start to the last one's end, by the
         * threads' own clocks: the main thread may be descheduled after
         * the barrier (more runnable threads than cores). */
        pthread_barrier_wait(&start);
        for (int t = 0; t < made; t++) pthread_join(w[t].thread, NULL);
        double first = w[0].t_start, last = w[0].t_end;
        for (int t = 1; t < made; t++) {
            if (w[t].t_start < first) first = w[t].t_start;
            if (w[t].t_end > last) last = w[t].t_end;
        }
        mops = (double)n * threads / (last - first) * 1e3;
    } else {
        /* cannot happen in practice; release those that started */
        fprintf(stderr, "pk-lab: threads: could not start %d threads\n", threads);
        abort();
    }
    a->close(ctx);
    pthread_barrier_destroy(&start);
    free(queues);
    return mops;
}
