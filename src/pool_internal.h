/* The pool's private state, shared by the public calls (pool.c, pool_slow.c,
 * pool_bulk.c, pool_calls.c), central.c (slabs and the depot, under the
 * pool's lock) and tcache.c (thread caches).
 *
 * Where a free object can be, exactly one of:
 *   - in a slab: on its free list, or never handed out (slot >= bump);
 *   - in the depot: a chain of exactly `batch` objects ready for one cache;
 *   - in one thread's cache for the pool: its list or its spare batch.
 * live = (objects outside slabs) - (objects in the depot) - (objects cached).
 *
 * Lock order: the pool list (pool.c; pk_pool_foreach holds it around calls
 * that take the next two), the thread registry (tcache.c), a pool's lock,
 * then the leaf locks (pool records, retained memory, the address map). The
 * fork handlers take them all in that order.
 */
#ifndef POOLKIT_POOL_INTERNAL_H
#define POOLKIT_POOL_INTERNAL_H

#include <poolkit/pool.h>

#include "policy.h"
#include "slab.h"
#include "track.h"

#include <assert.h>
#include <pthread.h>

/* Private pk_pool_config flag for the object layer's pools: debug fills
 * leave the first 16 bytes (the object header, whose "deallocated" mark
 * names the class in an over-release report) alone. */
#define POOL_KEEPS_HEADER (1u << 30)
#define POOL_HEADER_BYTES 16
/* Private flag for the library's own pools (the autorelease stack's
 * pages): what they hold at exit is no leak of the program's, and the
 * debug leak summary leaves them out. */
#define POOL_LIBRARY (1u << 29)

/* A thread's cache for one pool. The inline fast paths use head and room
 * (pool.h): a list of free objects linked through their link words, and the
 * room left (batch minus the list's length). spare is a full batch kept
 * off the fast path, so a thread that frees and allocates around a batch
 * boundary swaps lists instead of taking the lock. balance counts objects
 * taken minus returned, for remote_frees. {NULL, 0} is a cache the thread
 * has not set up yet. 32 bytes: the inline paths index the table by
 * key * sizeof(tc_slot). */
typedef struct tc_slot {
    void *head;
    intptr_t room;
    void *spare;
    int64_t balance;
} tc_slot;

/* The library reads and writes caches with relaxed atomics: plain moves on
 * the machine, but visible as such to ThreadSanitizer, since stats read
 * other threads' caches. */
static inline void *tc_head(const tc_slot *c) { return __atomic_load_n(&c->head, __ATOMIC_RELAXED); }
static inline intptr_t tc_room(const tc_slot *c) { return __atomic_load_n(&c->room, __ATOMIC_RELAXED); }
static inline void *tc_spare(const tc_slot *c) { return __atomic_load_n(&c->spare, __ATOMIC_RELAXED); }
static inline void tc_set(tc_slot *c, void *head, intptr_t room) {
    __atomic_store_n(&c->head, head, __ATOMIC_RELAXED);
    __atomic_store_n(&c->room, room, __ATOMIC_RELAXED);
}
static inline void tc_set_spare(tc_slot *c, void *spare) { __atomic_store_n(&c->spare, spare, __ATOMIC_RELAXED); }
/* An empty list takes the spare batch (no lock): true if there was one. */
static inline bool tc_take_spare(tc_slot *c) {
    void *spare = tc_spare(c);
    if (!spare) return false;
    tc_set(c, spare, 0);
    tc_set_spare(c, NULL);
    return true;
}

/* The byte offset of cache 0, never set up in any table: the key of pools
 * that take the slow path on every call. */
#define TC_NO_KEY ((uintptr_t)0)

struct pk_pool {
    intptr_t tc_table; /* must stay first: read by the inline fast paths */
    uintptr_t tc_key;  /* must stay second: byte offset of the cache, or TC_NO_KEY */
    /* Hardened pools' lean path (pool_slow.c), together in one cache line with
     * the two words above. */
    struct {
        uintptr_t cache;  /* byte offset of the pool's cache in every table, or 0
                             when the lean path is off */
        uintptr_t secret; /* mixed into stored links (every hardened pool) */
        uintptr_t mask;   /* slab_align - 1 */
        uintptr_t header; /* slot 0's offset in its slab */
        uint64_t recip;   /* the geometry's recip */
        uint32_t span;    /* bytes of a slab's slots */
        uint32_t link;    /* link_off */
    } hard;

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
    size_t key;       /* index of the pool's cache in every thread's table */
    size_t batch;     /* objects per exchange between cache and pool; a thread caches two */
    uint64_t rng;     /* hardened pools: the order of fresh slots (under lock) */
    struct pk_pool *prev, *next; /* the list of live pools, under the pool list's lock;
                                    next links spare records too (pool.c) */
    /* POOL_LIVE from a successful create to destroy, then POOL_DEAD: the
     * record stays mapped (spare, or held back for debug pools: pool.c), so
     * the slow paths and whole-pool calls catch a pool used after its
     * destroy until the record is reused. dead_name is the name copied at
     * destroy, for that report: the caller's string may be gone by then. */
    uint32_t state;
    char dead_name[48];

    pthread_mutex_t lock;
#ifndef NDEBUG
    pthread_t owner;      /* the thread holding lock, for assertions */
#endif
    /* Under lock. */
    slab_list lists[SLAB_LISTS];
    size_t slabs_total;
    size_t bytes_reserved; /* bytes mapped for slabs */
    size_t slab_free;     /* free slots in slabs (free lists + untouched) */
    size_t out;           /* objects outside slabs */
    size_t keep_free;     /* free slots that release must leave (reserve) */
    void **depot;         /* chains of `batch` objects, ready for a cache */
    size_t depot_count, depot_slots;
    size_t depot_low;     /* fewest chains in the depot since the last tick */
    uint64_t tick_ms;     /* when the last purge tick ran */
    uint64_t used_ms;     /* when the last call for the pool's own work held the lock */
    uint32_t tick_no;     /* purge ticks so far; empty slabs remember it */
    bool draining;        /* a tick is moving idle chains home */
    size_t peak_out;
    uint64_t allocs, frees, remote_frees, slabs_released, bytes_released;
};

/* Debug builds (make test's sanitizer stages) record the lock's owner, so
 * every function that needs the pool's lock can assert that its caller
 * holds it. */
#ifndef NDEBUG
#  define POOL_OWNER_SET(p, v) ((p)->owner = (v))
#  define ASSERT_POOL_LOCKED(p) assert(!(p)->locked || pthread_equal((p)->owner, pthread_self()))
#else
#  define POOL_OWNER_SET(p, v) ((void)0)
#  define ASSERT_POOL_LOCKED(p) ((void)0)
#endif

static inline void pool_lock(pk_pool *p) {
    if (!p->locked) return;
    pthread_mutex_lock(&p->lock);
    POOL_OWNER_SET(p, pthread_self());
}
static inline bool pool_trylock(pk_pool *p) {
    if (pthread_mutex_trylock(&p->lock) != 0) return false;
    POOL_OWNER_SET(p, pthread_self());
    return true;
}
/* central.c: a call for the pool's own work, at now_ms (read before the
 * lock): what was idle for the purge delay before it goes back first, then
 * now_ms is the pool's last use. Caller holds the lock. */
void central_note_use(pk_pool *p, uint64_t now_ms);
/* The lock for such a call. */
static inline void pool_lock_for_use(pk_pool *p, uint64_t now_ms) {
    pool_lock(p);
    central_note_use(p, now_ms);
}
static inline void pool_unlock(pk_pool *p) {
    if (!p->locked) return;
    POOL_OWNER_SET(p, (pthread_t)0);
    pthread_mutex_unlock(&p->lock);
}

/* Link words, their encoding and every hardening check (needs the struct
 * above). */
#include "harden.h"

static inline const char *pool_name(const pk_pool *p) { return p->name ? p->name : "(unnamed)"; }

#define POOL_LIVE 0x4c495645u /* "LIVE" */
#define POOL_DEAD 0x44454144u /* "DEAD" */

/* Reports a call on a destroyed pool (pool.c); call names it, obj is the
 * pointer it was given or NULL. */
PK_COLD __attribute__((noreturn)) void pool_report_dead(const pk_pool *p, const char *call,
                                                        const void *obj);
/* Every call that may reach a destroyed pool's record checks it first: one
 * compare, never on the inline fast paths (a destroyed pool's tc_key is
 * TC_NO_KEY, so they send every call here). */
static inline void pool_check_live(const pk_pool *p, const char *call, const void *obj) {
    if (unlikely(p->state == POOL_DEAD)) pool_report_dead(p, call, obj);
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
/* Keeps a full batch chain in the depot, or returns it to the slabs when
 * the purge delay is 0. */
void central_depot_put(pk_pool *p, void *chain);
/* Moves every depot chain back to the slabs. */
void central_depot_drain(pk_pool *p);
/* Releases every empty slab beyond the reserve (all of them with `all`);
 * returns the bytes given back. */
size_t central_release(pk_pool *p, bool all);
/* The pool's purge tick (policy.h, PURGE_INTERVAL_MS): if the pool has had
 * no call of its own for the purge delay, every depot chain goes home and
 * every empty slab back to the system now; otherwise, once per interval,
 * depot chains unused since the last tick go home and slabs empty since the
 * last tick go back. Runs on the pool's calls and on sweeps. */
void central_maybe_tick(pk_pool *p, uint64_t now_ms);
/* Makes slabs until n free slots are ready; returns the ready count. */
size_t central_reserve(pk_pool *p, size_t n);
/* Destructs constructed objects and unmaps every slab (pool destroy). */
void central_free_all(pk_pool *p);
/* A pointer given to free must start a slot of this pool; reports it
 * otherwise. Needs no lock and reads no slab. */
void central_check_free(pk_pool *p, void *obj);
/* Debug pools: the whole check of a pointer given to free. */
void central_debug_check_free(pk_pool *p, void *obj);

/* ---- pool.c and pool_slow.c ---- */

/* pool_slow.c: the out-of-line free behind pk_pool_free (fastpath.c). */
void pool_free_generic(pk_pool *p, void *obj);
/* Ticks every shared pool that is not busy (purge.c's sweep). The pool
 * list's lock and each pool's are only tried, so a sweep never waits: not
 * for a pool in use, nor for the list while it is held (false: not swept),
 * as it is around a pk_pool_foreach callback, which may be this very
 * thread's caller. */
bool pools_purge_sweep(uint64_t now_ms);
/* Fork handlers' part: the pool list's lock (before the registry's), then
 * every pool's lock and the pool records' (after it); one unlock for all. */
void pools_fork_lock_list(void);
void pools_fork_lock_each(void);
void pools_fork_unlock(void);

/* ---- pool_valid.c: the pool's identities, checked whole. ---- */

/* True if every identity the comments state holds for p (pool_valid.c
 * lists them); otherwise a fatal "internal assertion" report naming the
 * one that failed. Caller holds the pool's lock. deep: also walks every
 * slab's free list and every depot chain (O(free objects)), where the
 * shallow check is O(slabs). Called through POOL_VALIDATE, compiled in at
 * POOLKIT_ASSERT 3 only. */
bool pool_is_valid(const pk_pool *p, bool deep);
/* At every state change of a pool, under its lock: the end of a refill or
 * a flush, trim, reserve, create and destroy (shallow on the paths that
 * run per batch, deep on whole-pool calls). */
#define POOL_VALIDATE(p) PK_ASSERT_EXPENSIVE(pool_is_valid((p), false))
#define POOL_VALIDATE_DEEP(p) PK_ASSERT_EXPENSIVE(pool_is_valid((p), true))

/* ---- tcache.c: per-thread cache tables and the thread registry. ---- */

bool tcache_attach(pk_pool *p);  /* gives the pool a key; false if out of memory */
void tcache_detach(pk_pool *p);  /* forgets every thread's cache for the pool, frees the key */
/* The calling thread's cache for p, registering the thread and growing its
 * table on first use and setting the cache up; NULL when the thread is
 * exiting or out of memory. */
tc_slot *tcache_slot(pk_pool *p);
/* Per-batch accounting of the calling thread's take (+n) or return (-n). */
void tcache_account(pk_pool *p, tc_slot *c, long n);
/* Moves one cache's objects (list and spare) home to the slabs, accounted
 * as returned, and leaves the cache empty and not set up; caller holds the
 * pool's lock, and the cache's thread is quiescent for the pool. */
void tcache_return(pk_pool *p, tc_slot *c);
/* Threads registered now (they have used a pool and not exited). */
size_t tcache_live_threads(void);

/* pool.c: calls fn(obj, sites, arg) on a debug pool's live objects (slot
 * addresses, in address order within a slab) until fn returns false;
 * sites is the slot's record of call sites (sites.h) or NULL. Other pools
 * keep no record of which slots are live: nothing is called. Holds the
 * pool's lock meanwhile, so fn must not call the pool. */
void pool_each_live_debug(pk_pool *p, bool (*fn)(void *obj, void *const *sites, void *arg), void *arg);
/* pool_calls.c: calls fn on every live object; every free object must be
 * home in its slab (caches and depot drained), so a slot is live exactly
 * when it was handed out and is not on its slab's free list. */
void pool_each_live(pk_pool *p, void (*fn)(void *obj, void *arg), void *arg);
/* Objects in all threads' caches for p (exact when quiescent). */
size_t tcache_cached(pk_pool *p);
/* Moves every thread's cached objects for p home to the slabs; caller
 * holds the registry lock and the pool's, and the pool is quiescent. */
void tcache_drain_all(pk_pool *p);
/* The calling thread's cache table: a shared all-empty table until the
 * thread registers and after it exits (initial-exec TLS). */
extern __thread tc_slot *tc_table __attribute__((tls_model("initial-exec")));
/* Offset, from the thread pointer, of the calling thread's table pointer. */
intptr_t tcache_table_off(void);
void tcache_registry_lock(void);
/* The fork child's registry: the forking thread only; caller holds the lock. */
void tcache_fork_child(void);
void tcache_registry_unlock(void);

#endif
