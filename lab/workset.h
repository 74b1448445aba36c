/* The working-set loop (the lab's workset experiment and bench_workset).
 *
 * One phase: allocate N objects, touching each (one word written at its
 * start, then the escape barrier), then free all N in one of three orders:
 *
 *   LIFO    newest first   (alloc into objs[0..N), free objs[N-1] ... objs[0])
 *   FIFO    oldest first   (alloc into objs[0..N), free objs[0] ... objs[N-1])
 *   random  a fixed random permutation of allocation order: the i-th object
 *           allocated goes to objs[perm[i]], and objs[0..N) is freed in
 *           index order. The shuffle costs one scattered store per object
 *           at allocation and no extra load at free, the same for every
 *           allocator.
 *
 * then END(ctx), a statement (an arena's reset; nothing for allocators that
 * free each object). A measurement (WORKSET_RUN) is one untimed first phase,
 * in which the allocator brings its memory in, then the timed phases: as many
 * as asked, or fewer when they pass a time cap (checked after each phase, at
 * least one runs), so that no contender with a pathological order can stall a
 * run. Minor page faults (getrusage RUSAGE_SELF, ru_minflt) are counted over
 * the first phase and over the timed ones: an allocator that keeps its memory
 * faults nothing in a repeated phase; one that gives it back to the system
 * and takes it again faults every time.
 *
 * The objs array comes from workset_objs(): mapped and populated up front,
 * so that its own pages never count as the allocator's faults. In a forked
 * child, every code page also faults once when it first runs (the child
 * shares the parent's program text, but not its page tables): so a
 * measurement first calls its kernel once on a few objects (WORKSET_WARM_N,
 * workset_warm_perm()), on the same context, which runs every path of the
 * kernel and of the allocator's common paths before anything is counted.
 *
 * Compiled into every lab adapter through lab/kernels.h (K_workset) and run
 * by lab_workset_measure (measure.c); lab/zig/workset.zig is the same loop in
 * Zig, and lab/PROTOCOL.md spells the loop out for any other contender
 * program.
 */
#ifndef PK_WORKSET_H
#define PK_WORKSET_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "lab.h"

#define WORKSET_ESCAPE(p) LAB_ESCAPE(p)

typedef enum { WORKSET_LIFO, WORKSET_FIFO, WORKSET_RANDOM, WORKSET_ORDERS } workset_order;

static const char *const workset_order_names[WORKSET_ORDERS] = {"LIFO", "FIFO", "random"};

/* What one measurement gives, besides its time. */
typedef struct workset_stats {
    long phases;          /* timed phases run (after the untimed first one) */
    long faults_first;    /* minor faults in the first phase */
    long faults_repeat;   /* minor faults in all the timed phases together */
} workset_stats;

/* Minor page faults of this process so far. */
static inline long workset_minflt(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return ru.ru_minflt;
}

/* The code warm-up's size and its permutation (0..WORKSET_WARM_N-1, reversed). */
#define WORKSET_WARM_N 64
static inline const uint32_t *workset_warm_perm(void) {
    static uint32_t perm[WORKSET_WARM_N];
    for (uint32_t i = 0; i < WORKSET_WARM_N; i++) perm[i] = WORKSET_WARM_N - 1 - i;
    return perm;
}

/* An array of n pointers, mapped and populated now, or NULL. */
static inline void **workset_objs(long n) {
    size_t bytes = sizeof(void *) * (size_t)(n > 0 ? n : 1);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0);
    if (p == MAP_FAILED) return NULL;
    memset(p, 0, bytes); /* in case MAP_POPULATE was ignored */
    return (void **)p;
}

static inline void workset_objs_free(void **objs, long n) {
    if (objs) munmap(objs, sizeof(void *) * (size_t)(n > 0 ? n : 1));
}

/* One phase (objects of at least one word). ALLOC(ctx, size) is an
 * expression giving an object; FREE(ctx, p, size) and END(ctx) are
 * statements. perm is a permutation of 0..n-1 (used by WORKSET_RANDOM). */
#define WORKSET_PHASE(ALLOC, FREE, END, ctx, size, n, order, perm, objs)          \
    do {                                                                          \
        if ((order) == WORKSET_RANDOM) {                                          \
            for (long i_ = 0; i_ < (n); i_++) {                                   \
                char *p_ = (char *)(ALLOC(ctx, size));                            \
                size_t w_ = (size_t)i_;                                           \
                memcpy(p_, &w_, sizeof w_); /* the touch */                       \
                WORKSET_ESCAPE(p_);                                               \
                (objs)[(perm)[i_]] = p_;                                          \
            }                                                                     \
        } else {                                                                  \
            for (long i_ = 0; i_ < (n); i_++) {                                   \
                char *p_ = (char *)(ALLOC(ctx, size));                            \
                size_t w_ = (size_t)i_;                                           \
                memcpy(p_, &w_, sizeof w_);                                       \
                WORKSET_ESCAPE(p_);                                               \
                (objs)[i_] = p_;                                                  \
            }                                                                     \
        }                                                                         \
        if ((order) == WORKSET_LIFO) {                                            \
            for (long i_ = (n); i_-- > 0;) FREE(ctx, (objs)[i_], size);           \
        } else {                                                                  \
            for (long i_ = 0; i_ < (n); i_++) FREE(ctx, (objs)[i_], size);        \
        }                                                                         \
        END(ctx);                                                                 \
    } while (0)

/* A measurement: the untimed first phase, then up to max_phases timed phases
 * (at least one; no more once cap_ns has passed). NOW() gives nanoseconds.
 * Sets ns (a double lvalue) to the time of the timed phases and fills *st.
 * One copy of the phase's code serves both parts, so that the code warm-up
 * runs all of it. */
#define WORKSET_RUN(ALLOC, FREE, END, ctx, size, n, order, perm, objs, max_phases, cap_ns,   \
                    NOW, ns, st)                                                            \
    do {                                                                                    \
        (void)NOW(); /* a first clock read can fault (the vDSO's data page in a child) */   \
        long f0_ = workset_minflt(), f1_ = f0_, done_ = -1;                                 \
        double t0_ = 0, t1_ = 0;                                                            \
        for (;;) {                                                                          \
            WORKSET_PHASE(ALLOC, FREE, END, ctx, size, n, order, perm, objs);               \
            if (done_ < 0) { /* the first phase is over: start the clock */                 \
                f1_ = workset_minflt();                                                     \
                t0_ = t1_ = NOW();                                                          \
                done_ = 0;                                                                  \
                continue;                                                                   \
            }                                                                               \
            done_++;                                                                        \
            t1_ = NOW();                                                                    \
            if (done_ >= (max_phases) || t1_ - t0_ > (double)(cap_ns)) break;               \
        }                                                                                   \
        long f2_ = workset_minflt();                                                        \
        (ns) = t1_ - t0_;                                                                   \
        (st)->phases = done_;                                                               \
        (st)->faults_first = f1_ - f0_;                                                     \
        (st)->faults_repeat = f2_ - f1_;                                                    \
    } while (0)

#endif
