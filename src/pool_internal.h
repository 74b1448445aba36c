/* The pool's private state, shared by pool.c (the public calls), central.c
 * (slabs and the depot, under the pool's lock) and tcache.c (thread caches).
 *
 * Where a free object can be, exactly one of:
 *   - in a slab: on its free list, or never handed out (slot >= bump);
 *   - in the depot: a chain of exactly `batch` objects ready for one cache;
 *   - in one thread's cache word for the pool.
 * live = (objects outside slabs) - (objects in the depot) - (objects cached).
 */
#ifndef POOLKIT_POOL_INTERNAL_H
#define POOLKIT_POOL_INTERNAL_H

#include <poolkit/pool.h>

#include "slab.h"
#include "track.h"

#include <pthread.h>

/* Private pk_pool_config flag for the object layer's pools: debug fills
 * leave the first 16 bytes (the object header, whose "deallocated" mark
 * names the class in an over-release report) alone. */
#define POOL_KEEPS_HEADER (1u << 30)
#define POOL_HEADER_BYTES 16

#define DEPOT_MIN 16 /* chains a depot may always hold; more as the pool grows */

/* A thread's cache for one pool: a list of free objects linked through
 * their link words, and the room left (tc_cap minus the list's length).
 * {NULL, 0} is a cache the thread has not set up yet. */
typedef struct tc_slot {
    void *head;
    intptr_t room;
} tc_slot;

/* The library reads and writes caches with relaxed atomics: plain moves on
 * the machine, but visible as such to ThreadSanitizer, since stats read
 * other threads' caches. */
static inline void *tc_head(const tc_slot *c) { return __atomic_load_n(&c->head, __ATOMIC_RELAXED); }
static inline intptr_t tc_room(const tc_slot *c) { return __atomic_load_n(&c->room, __ATOMIC_RELAXED); }
static inline void tc_set(tc_slot *c, void *head, intptr_t room) {
    __atomic_store_n(&c->head, head, __ATOMIC_RELAXED);
    __atomic_store_n(&c->room, room, __ATOMIC_RELAXED);
}

struct pk_pool {
    intptr_t tc_off; /* must stay first: read by the inline fast paths */

    /* Set at creation, read-only afterwards. */
    const char *name;
    size_t size, align;
    size_t link_off;  /* where a free object keeps its link word */
    size_t redzone;   /* debug pools: guard bytes after the object */
    size_t fill_from; /* debug pools: first byte the fills cover */
    slab_geometry geo;
    unsigned flags;
    bool locked;      /* not PK_POOL_LOCAL */
    bool cached;      /* uses thread caches (else every call goes to the slabs) */
    bool debug, hardened, zero;
    void (*construct)(void *, void *);
    void (*destruct)(void *, void *);
    void *arg;
    size_t limit;
    unsigned slot;    /* thread-cache slot, 0 when uncached */
    unsigned fast_slot; /* the slot tc_off names: slot for inline pools, else 0 */
    size_t tc_cap;    /* objects one thread may cache */
    size_t batch;     /* objects moved per exchange between cache and pool */
    uintptr_t secret; /* hardened pools: mixed into stored links */

    pthread_mutex_t lock;
    /* Under lock. */
    slab_list lists[SLAB_LISTS];
    size_t slabs_total;
    size_t bytes_reserved; /* bytes mapped for slabs */
    size_t slab_free;     /* free slots in slabs (free lists + untouched) */
    size_t out;           /* objects outside slabs */
    size_t keep_free;     /* free slots that release must leave (reserve) */
    void **depot;         /* chains of `batch` objects, ready for a cache */
    size_t depot_count, depot_slots;
    size_t peak_out;
    uint64_t allocs, frees, remote_frees, slabs_released;
};

static inline void pool_lock(pk_pool *p) {
    if (p->locked) pthread_mutex_lock(&p->lock);
}
static inline void pool_unlock(pk_pool *p) {
    if (p->locked) pthread_mutex_unlock(&p->lock);
}

static inline uintptr_t *link_of(const pk_pool *p, void *obj) {
    return (uintptr_t *)((char *)obj + p->link_off);
}

/* Hardened pools keep each link word xor-ed with a per-pool secret and the
 * link's own address, so a forged or overwritten link decodes to garbage
 * that the pool's checks catch instead of following. */
static inline uintptr_t link_load(const pk_pool *p, void *obj) {
    uintptr_t *l = link_of(p, obj);
    track_open(l, sizeof *l);
    uintptr_t v = *l;
    track_close(l, sizeof *l);
    return p->hardened ? v ^ p->secret ^ (uintptr_t)obj : v;
}
static inline void link_store(const pk_pool *p, void *obj, uintptr_t v) {
    uintptr_t *l = link_of(p, obj);
    track_open(l, sizeof *l);
    *l = p->hardened ? v ^ p->secret ^ (uintptr_t)obj : v;
    track_close(l, sizeof *l);
}

/* The user's view of an object starts or ends here (tool builds). */
static inline void track_handout(const pk_pool *p, void *obj) {
    track_alloc(obj, p->size, p->zero || p->construct || p->destruct);
}
static inline void track_takeback(const pk_pool *p, void *obj) {
    track_free(obj, p->geo.slot);
}

/* ---- central.c: the pool's slabs and depot; caller holds the lock. ---- */

/* Takes up to n objects from the depot or slabs and pushes them onto the
 * list *list. With `all`, maps slabs until n are taken; otherwise, once it
 * has some, it stops at what is ready. Returns how many (0 with errno
 * ENOMEM). */
size_t central_take(pk_pool *p, size_t n, void **list, bool all);
/* Returns every object of a NULL-terminated list to its slab. */
void central_give_chain(pk_pool *p, void *list);
/* Returns one object to its slab. */
void central_give(pk_pool *p, void *obj);
/* Keeps a full batch chain in the depot if there is room; false otherwise. */
bool central_depot_put(pk_pool *p, void *chain);
/* Moves every depot chain back to the slabs. */
void central_depot_drain(pk_pool *p);
/* Releases empty slabs beyond the hysteresis allowance (all if `all`);
 * returns the bytes given back. */
size_t central_release(pk_pool *p, bool all);
/* Makes slabs until n free slots are ready; returns the ready count. */
size_t central_reserve(pk_pool *p, size_t n);
/* Destructs constructed objects and unmaps every slab (pool destroy). */
void central_free_all(pk_pool *p);
/* A pointer given to free must start a slot of this pool; reports it
 * otherwise. Needs no lock and reads no slab. */
void central_check_free(pk_pool *p, void *obj);
/* Debug pools: the whole check of a pointer given to free. */
void central_debug_check_free(pk_pool *p, void *obj);

/* The out-of-line free, without tcache_undo_take (fastpath.c). */
void pool_free_generic(pk_pool *p, void *obj);

/* ---- tcache.c: per-thread cache words and the thread registry. ---- */

bool tcache_attach(pk_pool *p);  /* gives the pool a slot; false if none left */
void tcache_detach(pk_pool *p);  /* forgets every thread's cache for the pool */
/* The calling thread's cache for p, registering the thread on first use and
 * setting the cache up; NULL when the thread is exiting. */
tc_slot *tcache_slot(pk_pool *p);
/* Gives back the room the inline free path took before it came here. */
void tcache_undo_take(pk_pool *p);
/* Per-batch accounting of a thread's take (+n) or return (-n). */
void tcache_account(pk_pool *p, long n);
/* Objects in all threads' caches for p (exact when quiescent). */
size_t tcache_cached(pk_pool *p);
/* Moves every thread's cached objects for p home to the slabs; caller
 * holds the registry lock and the pool's, and the pool is quiescent. */
void tcache_drain_all(pk_pool *p);
/* Offset, from the thread pointer, of the word that is always 0. */
intptr_t tcache_null_off(void);
intptr_t tcache_off(unsigned slot);
void tcache_registry_lock(void);
void tcache_registry_unlock(void);

#endif
