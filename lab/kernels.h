/* The lab's loops, compiled once per allocator with direct calls.
 *
 * An adapter file (peer_*.c) defines, then includes this header:
 *
 *   K_NAME          a prefix for the generated functions (glibc, pkpool, ...)
 *   K_ALLOC(c, sz)  an expression: an object of sz bytes from context c
 *   K_FREE(c, p, sz) a statement: p back (nothing for arena-like allocators)
 *   K_RESET(c)      a statement: everything back at once (arena-like only)
 *   K_FREES_EACH    1 if K_FREE really frees, 0 if only K_RESET does
 *   K_THREADS       1 to generate the thread workloads (thread-safe allocators)
 *
 * and gets static functions K_NAME_hot, _batch, _pattern, _workset (and _churn,
 * _pc and the shapes of kernels_shapes.h), plus K_FILL(a), which puts them in a lab_allocator. All
 * but K_NAME are undefined at the end, so a file that includes it again (one
 * adapter per mode) defines them afresh and #undefs K_NAME only. The working-set
 * loop itself lives in workset.h. These are the only copies of the
 * workloads: bench/'s programs run them too, through the adapters or
 * (bench_hotloop) by including this header over their own contenders.
 *
 * Every new object is touched (its first byte written) and escapes, so no
 * allocation can be optimized away. Allocators that cannot free one object
 * (APR pools, pk_arena) are reset every 1024 objects in the hot loop and
 * after every batch in the batch loop; the reset is part of the time. In the
 * pattern they are never reset: that is the study's "arena" row (memory
 * grows, and peak RSS shows it). In the working set they are reset at the end
 * of each phase (their "free all", whatever the order).
 *
 * The loop bodies are also macros (LAB_PATTERN_LOOP), so that C++ adapters
 * can instantiate them inside templates.
 */
#ifndef PK_LAB_KERNELS_COMMON_H
#define PK_LAB_KERNELS_COMMON_H

#include "lab.h"
#include "workset.h"

#include <sched.h>
#include <stdlib.h>

/* The pattern's list of open objects never passes 257 (at 256 every round
 * frees), so twice that is room to spare. */
#define LAB_PATTERN_CAP 512

/* The pool-pattern loop (PROTOCOL.md). ALLOC(ctx, size) and FREE(ctx, p, size)
 * as in the adapters; sets ns (double) to the time of the rounds, st->allocs
 * and st->peak_live; frees what is left (untimed) with FREE, then RESET_AFTER. */
#define LAB_PATTERN_LOOP(ALLOC, FREE, ctx, size, rounds, st, ns)                  \
    do {                                                                          \
        void **open_ = (void **)malloc(sizeof(void *) * LAB_PATTERN_CAP);         \
        long n_ = 0, allocs_ = 0, peak_ = 0;                                      \
        shared_rng rng_ = {0x5eed};                                                  \
        double t0_ = lab_now_ns();                                                \
        for (long r_ = 0; r_ < (rounds); r_++) {                                  \
            double fill_ = (double)n_ / 256.0;                                    \
            if (shared_rng_unit(&rng_) <= fill_ && n_ > 0) {                       \
                long i_ = (long)(shared_rng_next(&rng_) % (uint64_t)n_);             \
                FREE(ctx, open_[i_], size);                                       \
                open_[i_] = open_[--n_];                                          \
            }                                                                     \
            if (shared_rng_unit(&rng_) >= fill_) {                                 \
                char *p_ = (char *)ALLOC(ctx, size);                              \
                p_[0] = (char)r_;                                                 \
                LAB_ESCAPE(p_);                                                   \
                open_[n_++] = p_;                                                 \
                allocs_++;                                                        \
                if (n_ > peak_) peak_ = n_;                                       \
            }                                                                     \
        }                                                                         \
        (ns) = lab_now_ns() - t0_;                                                \
        while (n_ > 0) FREE(ctx, open_[--n_], size);                              \
        free(open_);                                                              \
        (st)->allocs = allocs_;                                                   \
        (st)->peak_live = peak_;                                                  \
    } while (0)

/* A single-producer single-consumer ring of pointers (threads experiment). */
#define LAB_SPSC_CAP 1024
typedef struct lab_spsc {
    size_t head; /* written by the producer */
    char pad0[56];
    size_t tail; /* written by the consumer */
    char pad1[56];
    void *slot[LAB_SPSC_CAP];
} lab_spsc;

#endif

/* ---- per-allocator part: included once per adapter ---------------------------- */

#if defined(K_NAME) && defined(K_ALLOC) && defined(K_FREE)

#ifndef K_RESET
#  define K_RESET(c) ((void)(c))
#endif
#ifndef K_FREES_EACH
#  define K_FREES_EACH 1
#endif
#ifndef K_THREADS
#  define K_THREADS 0
#endif

#define K_CAT2(a, b) a##_##b
#define K_CAT(a, b) K_CAT2(a, b)
#define K(fn) K_CAT(K_NAME, fn)

/* Allocate, touch, free; n times. */
static LAB_KERNEL double K(hot)(void *ctx, size_t size, long n) {
    (void)ctx;
    (void)size;
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        char *p = (char *)K_ALLOC(ctx, size);
        p[0] = (char)i;
        LAB_ESCAPE(p);
        K_FREE(ctx, p, size);
#if !K_FREES_EACH
        if ((i & 1023) == 1023) K_RESET(ctx);
#endif
    }
    return lab_now_ns() - t0;
}

/* n objects in batches of per_batch: allocate the batch (touching each), then
 * free it in the order given (a permutation of 0..per_batch-1). */
static LAB_KERNEL double K(batch)(void *ctx, size_t size, long n, long per_batch,
                                  const uint32_t *order) {
    (void)ctx;
    (void)size;
    void **objs = (void **)malloc(sizeof(void *) * (size_t)per_batch);
    long batches = n / per_batch > 0 ? n / per_batch : 1;
    double t0 = lab_now_ns();
    for (long b = 0; b < batches; b++) {
        for (long i = 0; i < per_batch; i++) {
            char *p = (char *)K_ALLOC(ctx, size);
            p[0] = (char)i;
            LAB_ESCAPE(p);
            objs[i] = p;
        }
        for (long i = 0; i < per_batch; i++) K_FREE(ctx, objs[order[i]], size);
#if !K_FREES_EACH
        K_RESET(ctx);
#endif
    }
    double t = lab_now_ns() - t0;
    free(objs);
    return t;
}

#define K_PATTERN_ALLOC(c, sz) K_ALLOC(c, sz)
#define K_PATTERN_FREE(c, p, sz) K_FREE(c, p, sz)
static LAB_KERNEL double K(pattern)(void *ctx, size_t size, long rounds, lab_pattern_stats *st) {
    (void)ctx;
    (void)size;
    double ns = 0;
    LAB_PATTERN_LOOP(K_PATTERN_ALLOC, K_PATTERN_FREE, ctx, size, rounds, st, ns);
#if !K_FREES_EACH
    K_RESET(ctx);
#endif
    return ns;
}
#undef K_PATTERN_ALLOC
#undef K_PATTERN_FREE

/* The working set (workset.h): a first phase, then timed phases. */
static LAB_KERNEL double K(workset)(void *ctx, size_t size, long n, int order,
                                    const uint32_t *perm, void **objs, long phases,
                                    double cap_ns, struct workset_stats *st) {
    (void)ctx;
    (void)size;
    double ns = 0;
    WORKSET_RUN(K_ALLOC, K_FREE, K_RESET, ctx, size, n, order, perm, objs, phases, cap_ns,
                lab_now_ns, ns, st);
    return ns;
}

#if K_THREADS
/* Per-thread churn: a working set of 256 objects; each step frees a random
 * one and allocates its replacement. */
static LAB_KERNEL void K(churn)(void *ctx, size_t size, long n, uint64_t seed) {
    (void)ctx;
    (void)size;
    void *ws[256];
    shared_rng rng = {seed};
    for (int i = 0; i < 256; i++) {
        char *p = (char *)K_ALLOC(ctx, size);
        p[0] = 1;
        ws[i] = p;
    }
    for (long i = 0; i < n; i++) {
        unsigned k = (unsigned)(shared_rng_next(&rng) & 255);
        K_FREE(ctx, ws[k], size);
        char *p = (char *)K_ALLOC(ctx, size);
        p[0] = (char)i;
        LAB_ESCAPE(p);
        ws[k] = p;
    }
    for (int i = 0; i < 256; i++) K_FREE(ctx, ws[i], size);
}

/* Producer/consumer, one link of a ring: allocate n objects into out (the
 * next thread frees them) and free what arrives on in (the previous
 * thread's), until both are done. With one thread, in == out. */
static LAB_KERNEL void K(pc)(void *ctx, size_t size, long n, lab_spsc *in, lab_spsc *out) {
    (void)ctx;
    (void)size;
    long made = 0, freed = 0;
    int idle = 0;
    size_t oh = __atomic_load_n(&out->head, __ATOMIC_RELAXED);
    size_t it = __atomic_load_n(&in->tail, __ATOMIC_RELAXED);
    while (made < n || freed < n) {
        long m = 0;
        if (made < n) {
            size_t ot = __atomic_load_n(&out->tail, __ATOMIC_ACQUIRE);
            long room = (long)(LAB_SPSC_CAP - (oh - ot));
            m = n - made < 64 ? n - made : 64;
            if (m > room) m = room;
            for (long j = 0; j < m; j++) {
                char *p = (char *)K_ALLOC(ctx, size);
                p[0] = (char)j;
                out->slot[(oh + (size_t)j) & (LAB_SPSC_CAP - 1)] = p;
            }
            oh += (size_t)m;
            made += m;
            __atomic_store_n(&out->head, oh, __ATOMIC_RELEASE);
        }
        size_t ih = __atomic_load_n(&in->head, __ATOMIC_ACQUIRE);
        long got = (long)(ih - it);
        for (; it != ih; it++) K_FREE(ctx, in->slot[it & (LAB_SPSC_CAP - 1)], size);
        freed += got;
        __atomic_store_n(&in->tail, it, __ATOMIC_RELEASE);
        if (m == 0 && got == 0) {
            if (++idle > 64) {
                sched_yield();
                idle = 0;
            }
        } else {
            idle = 0;
        }
    }
}

/* The thread shapes of the steady-state, cache-scratch, remote-batches
 * and many-pools experiments (after larson, Hoard, xmalloc-test): their own header. */
#include "kernels_shapes.h"
#endif

static void K(fill)(lab_allocator *a) {
    a->hot = K(hot);
    a->batch = K(batch);
    a->pattern = K(pattern);
    a->workset = K(workset);
    a->frees_each = K_FREES_EACH;
#if K_THREADS
    a->churn = K(churn);
    a->pc = K(pc);
    a->thread_safe = 1;
    K(fill_shapes)(a);
#endif
}
#define K_FILL(a) K(fill)(a)

#undef K_ALLOC
#undef K_FREE
#undef K_RESET
#undef K_FREES_EACH
#undef K_THREADS

#endif
