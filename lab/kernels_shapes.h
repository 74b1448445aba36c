/* The thread shapes after mimalloc-bench, compiled once per thread-safe
 * allocator: included by kernels.h inside its per-allocator part (K_NAME,
 * K_ALLOC and K_FREE defined, K_THREADS 1), after the batch queue below.
 *
 *   steady     larson's server simulation: a live set of n objects; each
 *              round frees a random one and allocates its replacement, of a
 *              random size in [lo, hi] from the context of its 16-byte class;
 *   scratch    Hoard's cache-scratch worker: free the object handed over by
 *              another thread, then allocate one object at a time and write
 *              every byte of it many times, and free it;
 *   xproduce,  xmalloc-test: producers allocate batches of LAB_BATCH objects
 *   xconsume   and queue them; consumers free whole batches (every free is
 *              remote);
 *   manypools  one thread's share of many pools: per_pool objects from each
 *              of npools contexts (or frees them back).
 *
 * measure_shapes.c runs them on threads; exp_steady_state.c,
 * exp_cache_scratch.c, exp_remote_batches.c and exp_many_pools.c are their
 * experiments, bench/bench_threads.c their targets.
 */

/* ---- shared part: the batch queue of remote-batches (once) ---- */
#ifndef PK_LAB_KERNELS_SHAPES_COMMON_H
#define PK_LAB_KERNELS_SHAPES_COMMON_H

#include <pthread.h>

/* Objects per batch (xmalloc-test's), and the most full batches queued at
 * once: 64 x 4,096 = 262,144 objects in flight at most ("hundreds of
 * thousands", LAB.md), so memory stays bounded whatever the allocator's
 * speed, as a server's would. */
#define LAB_BATCH 4096
#define LAB_BATCHQ_CAP 64

/* Full batches travel producer -> consumer in a ring; emptied pointer
 * arrays come back on a stack, so the queue itself never allocates (its
 * arrays are the lab's, made before the run, not the allocator's). One
 * mutex, as xmalloc-test's global list has. */
typedef struct lab_batchq {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    void **full[LAB_BATCHQ_CAP];
    long head, count;             /* the ring of full batches */
    void **empty[LAB_BATCHQ_CAP]; /* spare arrays */
    long nempty;
    long produced_left; /* batches still to be queued, all producers together */
} lab_batchq;

/* An empty array to fill (waits while all are in flight). */
static inline void **lab_batchq_take_empty(lab_batchq *q) {
    pthread_mutex_lock(&q->lock);
    while (q->nempty == 0) pthread_cond_wait(&q->changed, &q->lock);
    void **a = q->empty[--q->nempty];
    pthread_mutex_unlock(&q->lock);
    return a;
}

static inline void lab_batchq_put_full(lab_batchq *q, void **a) {
    pthread_mutex_lock(&q->lock);
    q->full[(q->head + q->count) % LAB_BATCHQ_CAP] = a;
    q->count++;
    q->produced_left--;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->lock);
}

/* The next full batch, or NULL once every batch has been produced and taken. */
static inline void **lab_batchq_take_full(lab_batchq *q) {
    void **a = NULL;
    pthread_mutex_lock(&q->lock);
    while (q->count == 0 && q->produced_left > 0) pthread_cond_wait(&q->changed, &q->lock);
    if (q->count > 0) {
        a = q->full[q->head];
        q->head = (q->head + 1) % LAB_BATCHQ_CAP;
        q->count--;
    }
    pthread_mutex_unlock(&q->lock);
    return a;
}

static inline void lab_batchq_put_empty(lab_batchq *q, void **a) {
    pthread_mutex_lock(&q->lock);
    q->empty[q->nempty++] = a;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->lock);
}

/* cache-scratch's writes: repetitions passes over size bytes at obj, each
 * byte read and written through a volatile pointer (Hoard's loop). One
 * copy (measure_shapes.c) that every allocator's worker calls, so the
 * writes are the same machine code, at the same alignment, for all of them:
 * only the object's address differs. */
void lab_scratch_writes(char *obj, size_t size, long repetitions);

/* The size classes of steady-state: 16-byte steps up to 128 B. */
#define LAB_STEADY_CLASSES 8
#define LAB_STEADY_CLASS(sz) (((sz) - 1u) >> 4)

#endif

/* ---- per-allocator part ---- */
#if defined(K_NAME) && K_THREADS

/* Rounds of larson: ctxs[LAB_STEADY_CLASS(size)] serves an object of size
 * bytes (allocators that take a size get the size itself); sizes[i] is
 * objs[i]'s size. Returns the rounds' time. */
static LAB_KERNEL double K(steady)(void *const *ctxs, void **objs, uint8_t *sizes, long n,
                                   long rounds, unsigned lo, unsigned hi, uint64_t seed) {
    (void)ctxs;
    shared_rng rng = {seed};
    unsigned span = hi - lo + 1;
    double t0 = lab_now_ns();
    for (long r = 0; r < rounds; r++) {
        size_t i = shared_rng_below(&rng, (size_t)n);
        unsigned old = sizes[i];
        (void)old;
        K_FREE(ctxs[LAB_STEADY_CLASS(old)], objs[i], old);
        unsigned sz = lo + (unsigned)shared_rng_below(&rng, span);
        char *p = (char *)K_ALLOC(ctxs[LAB_STEADY_CLASS(sz)], sz);
        p[0] = (char)r;
        LAB_ESCAPE(p);
        objs[i] = p;
        sizes[i] = (uint8_t)sz;
    }
    return lab_now_ns() - t0;
}

/* Hoard's cache-scratch worker: free handed (allocated by another thread),
 * then iterations times: allocate, write each of its size bytes repetitions
 * times (lab_scratch_writes), free.
 * Returns the time of it all. */
static LAB_KERNEL double K(scratch)(void *ctx, size_t size, void *handed, long iterations,
                                    long repetitions) {
    (void)ctx;
    double t0 = lab_now_ns();
    K_FREE(ctx, handed, size);
    for (long i = 0; i < iterations; i++) {
        char *obj = (char *)K_ALLOC(ctx, size);
        lab_scratch_writes(obj, size, repetitions);
        K_FREE(ctx, obj, size);
    }
    return lab_now_ns() - t0;
}

/* xmalloc-test's producer: batches batches of LAB_BATCH objects, each
 * touched, queued for a consumer. */
static LAB_KERNEL void K(xproduce)(void *ctx, size_t size, lab_batchq *q, long batches) {
    (void)ctx;
    (void)size;
    for (long b = 0; b < batches; b++) {
        void **a = lab_batchq_take_empty(q);
        for (long i = 0; i < LAB_BATCH; i++) {
            char *p = (char *)K_ALLOC(ctx, size);
            p[0] = (char)i;
            a[i] = p;
        }
        lab_batchq_put_full(q, a);
    }
}

/* xmalloc-test's consumer: frees whole batches until none is left to come. */
static LAB_KERNEL void K(xconsume)(void *ctx, size_t size, lab_batchq *q) {
    (void)ctx;
    (void)size;
    void **a;
    while ((a = lab_batchq_take_full(q)) != NULL) {
        for (long i = 0; i < LAB_BATCH; i++) K_FREE(ctx, a[i], size);
        lab_batchq_put_empty(q, a);
    }
}

/* One thread's share of many pools: per_pool objects of size bytes from each
 * of the npools contexts into objs (npools x per_pool slots), each touched
 * in full; or, with release, all of them freed. Returns the time. */
static LAB_KERNEL double K(manypools)(void *const *ctxs, long npools, long per_pool, size_t size,
                                      void **objs, int release) {
    (void)ctxs;
    double t0 = lab_now_ns();
    for (long p = 0; p < npools; p++) {
        for (long i = 0; i < per_pool; i++) {
            void **slot = &objs[p * per_pool + i];
            if (release) {
                K_FREE(ctxs[p], *slot, size);
            } else {
                char *o = (char *)K_ALLOC(ctxs[p], size);
                memset(o, (int)i, size);
                LAB_ESCAPE(o);
                *slot = o;
            }
        }
    }
    return lab_now_ns() - t0;
}

/* One object, for the untimed set-up and tear-down of the shapes (a live set
 * filled, an object handed over). */
static void *K(one_alloc)(void *ctx, size_t size) {
    (void)ctx;
    (void)size;
    char *p = (char *)K_ALLOC(ctx, size);
    p[0] = 1;
    return p;
}
static void K(one_free)(void *ctx, void *p, size_t size) {
    (void)ctx;
    (void)size;
    K_FREE(ctx, p, size);
}

static void K(fill_shapes)(lab_allocator *a) {
    a->steady = K(steady);
    a->scratch = K(scratch);
    a->xproduce = K(xproduce);
    a->xconsume = K(xconsume);
    a->manypools = K(manypools);
    a->one_alloc = K(one_alloc);
    a->one_free = K(one_free);
}

#endif
