/* Instruction counts of pk_pool's fast paths, for callgrind: the CI gate.
 *
 * Runs N alloc+free pairs (touching one byte of each object, as the hot loop
 * does) inside one kernel function per mode:
 *   default  kernel_pool_default  a default (thread-safe) pool, inline fast paths
 *   local    kernel_pool_local    a PK_POOL_LOCAL pool, inline fast paths
 *   hardened kernel_pool_hardened a PK_POOL_HARDENED pool, its inline fast paths
 *   empty    kernel_empty         the same loop with no allocation
 *   other    kernel_pool_other    N frees, by their owner, of objects of a
 *                                 default pool's slabs other than the
 *                                 thread's current one (the library's
 *                                 short path, pk__pool_free_other), no
 *                                 allocation in the loop
 *   hardother kernel_pool_other   the other mode's loop over a
 *                                 PK_POOL_HARDENED pool (its encoded
 *                                 links: pk__pool_free_slot)
 *   remote   kernel_pool_other    the same loop, by a thread with a heap of
 *                                 its own, over objects a live thread
 *                                 made (remote frees: the pending chain,
 *                                 pushed home every REMOTE_BATCH)
 *   consumer kernel_pool_other    the remote loop, by a thread that
 *                                 allocates nothing from the pool (no
 *                                 current slab: every free reaches the
 *                                 library, the chain's slab known)
 *   listed   kernel_pool_replace  N frees and allocations in turn, by a
 *                                 thread with a heap of its own, of
 *                                 objects a live thread made in a pool
 *                                 past HOT_FOREIGN_SLABS (policy.h): each
 *                                 free goes onto the thread's list and the
 *                                 allocation takes it back
 *   hardlisted kernel_pool_replace the listed mode's loop over a
 *                                 PK_POOL_HARDENED pool: each free goes
 *                                 onto the thread's hardened list, over an
 *                                 object of its current slab, tagged
 *                                 (HOT_FOREIGN), and the inline allocation
 *                                 takes it back
 *   hardchain kernel_pool_replace_two the hardlisted mode's objects freed
 *                                 two at a time and allocated back two at
 *                                 a time: the second free goes onto the
 *                                 list over the first, so the first
 *                                 allocation meets a link out of the
 *                                 current slab to a tagged object, which
 *                                 the library follows (HARD_POP); per free
 *   hardedge kernel_pool_other    N frees, by their owner, each of an
 *                                 object of a different full slab of a
 *                                 PK_POOL_HARDENED pool (the first free
 *                                 into a used-up slab, which moves it from
 *                                 the heap's full list to avail: a random
 *                                 replacement's usual free once refills
 *                                 have taken every slab's free list), no
 *                                 allocation in the loop
 *   otherloop kernel_other_loop  the other mode's loop over the same
 *                                 objects, freeing none (its own cost)
 *   frontother kernel_frontend_other N pk_free calls, by their owner, of
 *                                 objects of a class's slabs other than
 *                                 the thread's current one (pk_free's
 *                                 owned index, its drains included), no
 *                                 allocation in the loop
 *   frontremote kernel_frontend_other N pk_free calls, by a thread with
 *                                 a current slab of the class, of blocks
 *                                 a live thread made (onto its list while
 *                                 HOT_FOREIGN's budget lasts, else the
 *                                 pending chain home)
 *   fill     kernel_pool_fill     N allocations from a default pool of
 *                                 objects of SIZE (8 KiB: eight a slab),
 *                                 none freed: every eighth a refill that
 *                                 leaves a used-up slab for a new one
 *   frontrandom kernel_frontend_other the frontother loop over the same
 *                                 objects in a random order (a fixed
 *                                 seed): a teardown in random order,
 *                                 whose drains meet runs of about one
 *                                 block and send the next frees straight
 *                                 home (OWN_DIRECT, policy.h)
 *   frontend kernel_frontend      pk_alloc and pk_free (unsized) of one size
 *   object   kernel_object        pk_new, pk_retain and two pk_release (not
 *                                 gated: a figure for the README, the cost
 *                                 of the object calls' checks)
 *   objpair  kernel_object_pair   pk_new and pk_release of one class: the
 *                                 object calls' fast paths, gated
 *   retain   kernel_object_retain N pk_retain calls on one object (its
 *                                 releases after the kernel), gated
 *   grow     kernel_grow          N pk_realloc calls that grow one block
 *                                 over the last class by a byte each (the
 *                                 system's resize of its mapping at each
 *                                 page included), gated per call
 *   growmany kernel_grow_many     the same spread over GROW_MANY blocks in
 *                                 turn (more than a thread remembers:
 *                                 the table read without its lock)
 *   pattern  kernel_pattern       N rounds of the typed-pool study's random
 *                                 fill pattern (the lab's own loop,
 *                                 LAB_PATTERN_LOOP: a free of a random
 *                                 open object and an allocation, at about
 *                                 128 open) over a default pool of SIZE-byte
 *                                 objects; per round, not gated: the
 *                                 instructions behind bench_pattern's net
 *                                 time, so a change to the owner's free
 *                                 into another slab can be weighed there
 *                                 exactly
 *   patternloop kernel_pattern_loop the same loop over one static buffer
 *                                 (the lab's empty loop), to subtract
 *   arena    kernel_arena         N allocations of SIZE bytes, default
 *                                 alignment, each touched, from one arena
 *                                 (pk_arena_alloc; the chunks' growth
 *                                 included), no free
 * bench/gate.sh runs each mode under
 *   valgrind --tool=callgrind --toggle-collect='kernel_*'
 * for two values of N and takes the difference, so start-up costs and the
 * first refill of the thread cache cancel; per pair net of the empty loop =
 *   (I(mode, N2) - I(mode, N1) - I(empty, N2) + I(empty, N1)) / (N2 - N1).
 *
 * Usage: bench_icount MODE N [SIZE]   (SIZE defaults to 64 bytes)
 * Run without arguments it times the three kernels natively, for a look. */
#include "harness.h"
#include "kernels.h" /* LAB_PATTERN_LOOP alone: no K_NAME */

#include <poolkit/alloc.h>
#include <poolkit/arena.h>
#include <poolkit/object.h>
#include <poolkit/pool.h>

#include <pthread.h>

#define ICOUNT_LOOP(ALLOC, FREE)                 \
    for (size_t i = 0; i < n; i++) {             \
        char *p = (char *)(ALLOC);               \
        p[0] = (char)i; /* touch one byte */     \
        BENCH_ESCAPE(p);                         \
        FREE;                                    \
    }

static char empty_target[64];

BENCH_KERNEL void kernel_empty(size_t n);
BENCH_KERNEL void kernel_arena(pk_arena *a, size_t size, size_t n);
BENCH_KERNEL void kernel_pool_default(pk_pool *pool, size_t n);
BENCH_KERNEL void kernel_pool_local(pk_pool *pool, size_t n);
BENCH_KERNEL void kernel_pool_hardened(pk_pool *pool, size_t n);
BENCH_KERNEL void kernel_object(const pk_class *cls, size_t n);
BENCH_KERNEL void kernel_object_pair(const pk_class *cls, size_t n);
BENCH_KERNEL void kernel_object_retain(void *obj, size_t n);
BENCH_KERNEL void kernel_pool_other(pk_pool *pool, void **objs, size_t n);
BENCH_KERNEL void kernel_frontend(size_t size, size_t n);
BENCH_KERNEL void kernel_other_loop(void **objs, size_t n);
BENCH_KERNEL void kernel_pool_replace(pk_pool *pool, void **objs, size_t n);
BENCH_KERNEL void kernel_pool_replace_two(pk_pool *pool, void **objs, size_t n);
BENCH_KERNEL void kernel_frontend_other(void **objs, size_t n);
BENCH_KERNEL void kernel_pool_fill(pk_pool *pool, void **objs, size_t n);
BENCH_KERNEL void kernel_pattern(pk_pool *pool, size_t size, long rounds);
BENCH_KERNEL void kernel_pattern_loop(size_t size, long rounds);

BENCH_KERNEL void kernel_frontend(size_t size, size_t n) { ICOUNT_LOOP(pk_alloc(size), pk_free(p)) }

BENCH_KERNEL void kernel_pool_other(pk_pool *pool, void **objs, size_t n) {
    for (size_t i = 0; i < n; i++) pk_pool_free(pool, objs[i]);
}

BENCH_KERNEL void kernel_pool_replace(pk_pool *pool, void **objs, size_t n) {
    for (size_t i = 0; i < n; i++) {
        pk_pool_free(pool, objs[i]);
        objs[i] = pk_pool_alloc(pool);
        BENCH_ESCAPE(objs[i]);
    }
}

BENCH_KERNEL void kernel_pool_replace_two(pk_pool *pool, void **objs, size_t n) {
    for (size_t i = 0; i + 1 < n; i += 2) {
        pk_pool_free(pool, objs[i]);
        pk_pool_free(pool, objs[i + 1]);
        objs[i + 1] = pk_pool_alloc(pool);
        objs[i] = pk_pool_alloc(pool);
        BENCH_ESCAPE(objs[i]);
        BENCH_ESCAPE(objs[i + 1]);
    }
}

BENCH_KERNEL void kernel_other_loop(void **objs, size_t n) {
    for (size_t i = 0; i < n; i++) BENCH_ESCAPE(objs[i]);
}

BENCH_KERNEL void kernel_frontend_other(void **objs, size_t n) {
    for (size_t i = 0; i < n; i++) pk_free(objs[i]);
}

BENCH_KERNEL void kernel_pool_fill(pk_pool *pool, void **objs, size_t n) {
    for (size_t i = 0; i < n; i++) {
        objs[i] = pk_pool_alloc(pool);
        BENCH_ESCAPE(objs[i]);
    }
}

#define PATTERN_ALLOC(c, sz) ((void)(sz), pk_pool_alloc((pk_pool *)(c)))
#define PATTERN_FREE(c, p, sz) pk_pool_free((pk_pool *)(c), (p))
#define PATTERN_NO_ALLOC(c, sz) ((void)(sz), (void *)(c))
#define PATTERN_NO_FREE(c, p, sz) BENCH_ESCAPE(p)

BENCH_KERNEL void kernel_pattern(pk_pool *pool, size_t size, long rounds) {
    lab_pattern_stats st;
    double ns;
    LAB_PATTERN_LOOP(PATTERN_ALLOC, PATTERN_FREE, pool, size, rounds, &st, ns);
    BENCH_ESCAPE(&st);
    (void)ns;
}

BENCH_KERNEL void kernel_pattern_loop(size_t size, long rounds) {
    lab_pattern_stats st;
    double ns;
    LAB_PATTERN_LOOP(PATTERN_NO_ALLOC, PATTERN_NO_FREE, empty_target, size, rounds, &st, ns);
    BENCH_ESCAPE(&st);
    (void)ns;
}

BENCH_KERNEL void kernel_empty(size_t n) { ICOUNT_LOOP(empty_target, (void)0) }

BENCH_KERNEL void kernel_arena(pk_arena *a, size_t size, size_t n) { ICOUNT_LOOP(pk_arena_alloc(a, size, 0), (void)0) }

BENCH_KERNEL void kernel_pool_default(pk_pool *pool, size_t n) {
    ICOUNT_LOOP(pk_pool_alloc(pool), pk_pool_free(pool, p))
}

BENCH_KERNEL void kernel_pool_local(pk_pool *pool, size_t n) {
    ICOUNT_LOOP(pk_pool_alloc(pool), pk_pool_free(pool, p))
}

BENCH_KERNEL void kernel_pool_hardened(pk_pool *pool, size_t n) {
    ICOUNT_LOOP(pk_pool_alloc(pool), pk_pool_free(pool, p))
}

BENCH_KERNEL void kernel_object(const pk_class *cls, size_t n) {
    ICOUNT_LOOP(pk_new(cls), (pk_retain(p), pk_release(p), pk_release(p)))
}

BENCH_KERNEL void kernel_object_pair(const pk_class *cls, size_t n) { ICOUNT_LOOP(pk_new(cls), pk_release(p)) }

/* The loop of the empty kernel's shape: the call's result escapes (no store). */
BENCH_KERNEL void kernel_object_retain(void *obj, size_t n) {
    for (size_t i = 0; i < n; i++) BENCH_ESCAPE(pk_retain(obj));
}

BENCH_KERNEL void *kernel_grow(char *p, size_t n) {
    for (size_t i = 1; i <= n; i++) {
        p = pk_realloc(p, PK_ALLOC_CLASS_MAX + i);
        BENCH_ESCAPE(p);
    }
    return p;
}

/* Blocks kernel_grow_many grows in turn: more than a thread remembers
 * (alloc_internal.h, LARGE_FITS_KEPT). */
#define GROW_MANY 64

BENCH_KERNEL void kernel_grow_many(char **b, size_t n) {
    for (size_t i = 1; i <= n; i++) {
        char **p = &b[i % GROW_MANY];
        *p = pk_realloc(*p, PK_ALLOC_CLASS_MAX + i / GROW_MANY + 1);
        BENCH_ESCAPE(*p);
    }
}

/* The remote mode's owner: makes the objects, then lives until the frees
 * are done (its slabs stay its own: the frees are remote ones). */
typedef struct remote_owner {
    pk_pool *pool; /* NULL: blocks of size from pk_alloc (frontremote) */
    size_t size;
    void **objs;
    size_t n;
    pthread_barrier_t made, freed;
} remote_owner;

static void *remote_owner_run(void *arg) {
    remote_owner *o = arg;
    for (size_t i = 0; i < o->n; i++) o->objs[i] = o->pool ? pk_pool_alloc(o->pool) : pk_alloc(o->size);
    pthread_barrier_wait(&o->made);
    pthread_barrier_wait(&o->freed);
    return NULL;
}

/* listed: the owner makes objects enough for the pool to pass
 * HOT_FOREIGN_SLABS (sixteen 64 KiB slabs) whatever n, and this thread
 * frees and allocates in turn over the first n; consumer: this thread
 * allocates nothing from the pool. */
static int run_remote(size_t n, size_t size, int listed, int consumer, unsigned flags, int two) {
    remote_owner o;
    o.pool = pk_pool_create(&(pk_pool_config){.name = "remote", .size = size, .flags = flags});
    o.size = size;
    size_t made = listed ? n + 20 * (65536 / size) : n;
    o.n = made;
    o.objs = malloc(made * sizeof *o.objs);
    if (!o.pool || !o.objs) return 1;
    void *mine = consumer ? NULL : pk_pool_alloc(o.pool); /* this thread's heap and current slab */
    pthread_t t;
    pthread_barrier_init(&o.made, NULL, 2);
    pthread_barrier_init(&o.freed, NULL, 2);
    if (pthread_create(&t, NULL, remote_owner_run, &o) != 0) return 1;
    pthread_barrier_wait(&o.made);
    if (two) kernel_pool_replace_two(o.pool, o.objs, n);
    else if (listed) kernel_pool_replace(o.pool, o.objs, n);
    else kernel_pool_other(o.pool, o.objs, n);
    pthread_barrier_wait(&o.freed);
    pthread_join(t, NULL);
    for (size_t i = listed ? 0 : n; i < made; i++) pk_pool_free(o.pool, o.objs[i]);
    if (mine) pk_pool_free(o.pool, mine);
    free(o.objs);
    pk_pool_destroy(o.pool);
    return 0;
}

/* frontremote: pk_free, by a thread with a current slab of the class, of
 * n blocks a live thread made (their slabs its heap's). */
static int run_frontremote(size_t n, size_t size) {
    remote_owner o = {.pool = NULL, .size = size, .n = n};
    o.objs = malloc(n * sizeof *o.objs);
    void *mine = pk_alloc(size); /* this thread's heap and current slab of the class */
    pthread_t t;
    if (!o.objs || !mine) return 1;
    pthread_barrier_init(&o.made, NULL, 2);
    pthread_barrier_init(&o.freed, NULL, 2);
    if (pthread_create(&t, NULL, remote_owner_run, &o) != 0) return 1;
    pthread_barrier_wait(&o.made);
    kernel_frontend_other(o.objs, n);
    pthread_barrier_wait(&o.freed);
    pthread_join(t, NULL);
    pk_free(mine);
    free(o.objs);
    return 0;
}

/* hardedge: slabs enough for n full ones besides the current one, then
 * the first object met of each 64 KiB slab but the last (pool.h's
 * PK__SLAB_MASK: the hardened carve's order within a slab is its own, but
 * a heap fills one slab before the next). */
static int run_hardedge(size_t n, size_t size) {
    pk_pool *pool = pk_pool_create(&(pk_pool_config){.name = "hardedge", .size = size, .flags = PK_POOL_HARDENED});
    size_t total = (n + 2) * (65536 / size + 1), k = 0;
    void **objs = malloc(total * sizeof *objs), **pick = malloc(n * sizeof *pick);
    char *picked = calloc(total, 1);
    if (!pool || !objs || !pick || !picked) return 1;
    uintptr_t last = 0;
    for (size_t i = 0; i < total; i++) {
        objs[i] = pk_pool_alloc(pool);
        uintptr_t slab = (uintptr_t)objs[i] >> 16;
        if (slab != last && k < n) pick[k++] = objs[i], picked[i] = 1;
        last = slab;
    }
    if (k < n) return 1;
    kernel_pool_other(pool, pick, n);
    for (size_t i = 0; i < total; i++)
        if (!picked[i]) pk_pool_free(pool, objs[i]);
    free(picked);
    free(pick);
    free(objs);
    pk_pool_destroy(pool);
    return 0;
}

static int run_mode(const char *mode, size_t n, size_t size) {
    if (strcmp(mode, "hardedge") == 0) return run_hardedge(n, size);
    if (strcmp(mode, "frontremote") == 0) return run_frontremote(n, size);
    if (strcmp(mode, "fill") == 0) {
        pk_pool *pool = pk_pool_create(&(pk_pool_config){.name = "fill", .size = size});
        void **objs = malloc(n * sizeof *objs);
        if (!pool || !objs) return 1;
        kernel_pool_fill(pool, objs, n);
        for (size_t i = 0; i < n; i++) pk_pool_free(pool, objs[i]);
        free(objs);
        pk_pool_destroy(pool);
        return 0;
    }
    if (strcmp(mode, "remote") == 0 || strcmp(mode, "listed") == 0 || strcmp(mode, "consumer") == 0)
        return run_remote(n, size, mode[0] == 'l', mode[0] == 'c', 0, 0);
    if (strcmp(mode, "hardlisted") == 0 || strcmp(mode, "hardchain") == 0)
        return run_remote(n, size, 1, 0, PK_POOL_HARDENED, mode[4] == 'c');
    if (strcmp(mode, "grow") == 0) {
        (void)size;
        pk_free(kernel_grow(pk_alloc(PK_ALLOC_CLASS_MAX), n));
        return 0;
    }
    if (strcmp(mode, "growmany") == 0) {
        char *b[GROW_MANY];
        for (size_t i = 0; i < GROW_MANY; i++) b[i] = pk_alloc(PK_ALLOC_CLASS_MAX);
        kernel_grow_many(b, n);
        for (size_t i = 0; i < GROW_MANY; i++) pk_free(b[i]);
        return 0;
    }
    if (strcmp(mode, "object") == 0 || strcmp(mode, "objpair") == 0 || strcmp(mode, "retain") == 0) {
        pk_class cls = {.name = "icount", .size = size - PK_OBJECT_HEADER_SIZE};
        if (mode[0] == 'r') {
            void *o = pk_new(&cls);
            kernel_object_retain(o, n);
            for (size_t i = 0; i <= n; i++) pk_release(o);
        } else if (mode[3] == 'p') {
            kernel_object_pair(&cls, n);
        } else {
            kernel_object(&cls, n);
        }
        return 0;
    }
    if (strcmp(mode, "empty") == 0) {
        kernel_empty(n);
        return 0;
    }
    if (strcmp(mode, "arena") == 0) {
        pk_arena *a = pk_arena_create(0);
        if (!a) return 1;
        kernel_arena(a, size, n);
        pk_arena_destroy(a);
        return 0;
    }
    if (strcmp(mode, "frontend") == 0) {
        kernel_frontend(size, n);
        return 0;
    }
    if (strcmp(mode, "other") == 0 || strcmp(mode, "otherloop") == 0 || strcmp(mode, "frontother") == 0 ||
        strcmp(mode, "frontrandom") == 0 || strcmp(mode, "hardother") == 0) {
        /* n objects of older slabs, then a slab's worth more, so that every
         * one of the n lies in a slab other than the current one */
        int front = mode[0] == 'f';
        unsigned flags = mode[0] == 'h' ? PK_POOL_HARDENED : 0;
        pk_pool *pool = front ? NULL : pk_pool_create(&(pk_pool_config){.name = mode, .size = size, .flags = flags});
        size_t total = n + 65536 / size + 1;
        void **objs = malloc(total * sizeof *objs);
        for (size_t i = 0; (front || pool) && objs && i < total; i++)
            objs[i] = front ? pk_alloc(size) : pk_pool_alloc(pool);
        uint64_t rng = 0x5eed;
        for (size_t i = n; objs && mode[5] == 'r' && i > 1; i--) { /* Fisher-Yates over the n */
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            size_t j = (size_t)(rng % i);
            void *t = objs[i - 1];
            objs[i - 1] = objs[j];
            objs[j] = t;
        }
        if (front) kernel_frontend_other(objs, n);
        else if (mode[5] == 'l') kernel_other_loop(objs, n);
        else kernel_pool_other(pool, objs, n);
        for (size_t i = mode[5] == 'l' ? 0 : n; i < total; i++) front ? pk_free(objs[i]) : pk_pool_free(pool, objs[i]);
        free(objs);
        if (pool) pk_pool_destroy(pool);
        return 0;
    }
    if (strcmp(mode, "pattern") == 0 || strcmp(mode, "patternloop") == 0) {
        pk_pool *pool = pk_pool_create(&(pk_pool_config){.name = mode, .size = size});
        if (pool && mode[7] == 'l') kernel_pattern_loop(size, (long)n);
        else if (pool) kernel_pattern(pool, size, (long)n);
        if (pool) pk_pool_destroy(pool);
        return pool ? 0 : -1;
    }
    unsigned flags;
    if (strcmp(mode, "default") == 0)
        flags = 0;
    else if (strcmp(mode, "local") == 0)
        flags = PK_POOL_LOCAL;
    else if (strcmp(mode, "hardened") == 0)
        flags = PK_POOL_HARDENED;
    else
        return -1;
    pk_pool *pool = pk_pool_create(&(pk_pool_config){.name = mode, .size = size, .flags = flags});
    if (!pool) {
        fprintf(stderr, "bench_icount: pk_pool_create failed: %s\n", strerror(errno));
        exit(2);
    }
    if (flags & PK_POOL_LOCAL)
        kernel_pool_local(pool, n);
    else if (flags & PK_POOL_HARDENED)
        kernel_pool_hardened(pool, n);
    else
        kernel_pool_default(pool, n);
    pk_pool_destroy(pool);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3) {
        size_t n = (size_t)strtoull(argv[2], NULL, 10);
        size_t size = argc >= 4 ? (size_t)strtoull(argv[3], NULL, 10) : 64;
        if (run_mode(argv[1], n, size) != 0) {
            fprintf(stderr, "usage: %s default|local|hardened|empty|arena|object|other|hardother|hardedge|remote|consumer|listed|otherloop|frontother|frontrandom|frontremote|fill|frontend|pattern|patternloop N [SIZE]\n", argv[0]);
            return 2;
        }
        return 0;
    }
    /* No arguments: a native look at the same kernels (the gate counts
     * instructions under callgrind instead; see bench/gate.sh). */
    bench_opts o = bench_parse(argc, argv, 5);
    bench_header("instruction-count kernels, timed natively (the gate is bench/gate.sh)", &o);
    const char *modes[4] = {"empty", "default", "local", "hardened"};
    bench_series t[4] = {{{0}, 0}};
    size_t n = 10000000;
    for (int rep = -1; rep < o.reps; rep++)
        for (int m = 0; m < 4; m++) {
            double t0 = bench_now_ns();
            run_mode(modes[m], n, 64);
            if (rep >= 0) bench_add(&t[m], (bench_now_ns() - t0) / (double)n);
        }
    for (int m = 0; m < 4; m++) bench_row(modes[m], &t[m], "ns", "per pair (64 B)");
    return 0;
}
