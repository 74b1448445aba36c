/* The pool's private state, shared by the public calls (pool.c, pool_slow.c,
 * pool_bulk.c, pool_calls.c), heap.c (threads' heaps), central.c (the
 * pool's own slabs, under its lock) and tcache.c (thread tables).
 *
 * Where a slab is, exactly one of: on one of the pool's lists (SLAB_*,
 * owner NULL; SLAB_LOST in a fork child only, for the slabs of threads that
 * did not survive the fork), or owned by one thread's heap (on its avail or
 * full list, or its current slab). Every slab is also on the pool's `all`
 * list.
 *
 * Where a free object is, exactly one of: on its slab's free list (or never
 * handed out: slot >= bump); on its slab's thread_free; in a freeing
 * thread's pending chain; on the owner's slot list (its current slab's).
 * live = sum of used - slot lists - pending chains - thread_free objects.
 *
 * Lock order: the pool list (pool.c; pk_pool_foreach holds it around calls
 * that take the next two), the thread registry (tcache.c), a pool's lock,
 * then the leaf locks (pool records, retained memory, the address map). The
 * fork handlers take them all in that order. A heap's own work (its slabs'
 * free lists, its current slab) takes no lock.
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

/* A thread's slot for one pool: 64 bytes, the key's in the thread's
 * table, which the inline paths (pool.h) find from the pool's handle alone
 * (the key is the record's index in the records' area: pool.c). The first
 * six words are theirs, as pool.h lists them; heap is the thread's heap for
 * the pool (heap.c), NULL until its first slow path. All zero is a slot the
 * thread has not set up, and a pool no inline path serves keeps words 0, 1,
 * 3 and 4 at zero, so those paths always miss. */
typedef struct tc_slot {
    uintptr_t unused;
    void *head;        /* default pools' list: the current slab's free objects */
    uintptr_t cur;     /* that slab's address | low, or 0 */
    uintptr_t low;     /* the pool's slab_low */
    void *hhead;       /* hardened pools' list (encoded links) */
    uintptr_t hcur;    /* as cur, for hardened pools */
    uintptr_t secret;  /* hardened pools' secret */
    struct heap *heap;
} tc_slot;

/* The list a thread allocates from for a pool: two words, its head and its
 * current slab's word (as tc_slot's cur). For the pools the default inline
 * paths serve it is the slot's head and cur, for the hardened ones hhead
 * and hcur, for the others (the library serves every call) the heap's
 * own (heap.own), which no inline path reads. */
typedef struct tc_list {
    void *head;
    uintptr_t cur;
} tc_list;
enum { LIST_SLOT, LIST_HARDENED, LIST_HEAP };

/* The library reads and writes lists with relaxed atomics: plain moves on
 * the machine, but visible as such to ThreadSanitizer, since stats read
 * other threads' lists. */
static inline void *tc_head(const tc_list *l) { return __atomic_load_n(&l->head, __ATOMIC_RELAXED); }
static inline uintptr_t tc_cur(const tc_list *l) { return __atomic_load_n(&l->cur, __ATOMIC_RELAXED); }

/* A thread's heap for one pool (heap.c; mimalloc's heap, one per thread per
 * pool): the slabs the thread owns and allocates from. Only its thread
 * touches it, without a lock, except where a comment says so; the pool's
 * lock guards prev/next and the moves of slabs between heap and pool. Other
 * threads read the counters (relaxed) under the registry's lock (stats). */
typedef struct heap {
    struct pk_pool *pool;      /* NULL: not set up */
    tc_slot *slot;             /* the thread's slot for the pool */
    tc_list *list;             /* the list it allocates from: in the slot, or own */
    tc_list own;               /* that list, for pools no inline path serves */
    size_t count;              /* its length as the library's paths leave it: exact
                                  where no inline path serves the pool, else stale
                                  (stats walk those lists instead: heap_sum) */
    struct heap *prev, *next;  /* the pool's heaps, under the pool's lock */
    struct slab *cur;          /* the slab whose free objects are on slot->head */
    struct slab *spare;        /* an empty slab kept for the next one (HEAP_SPARE) */
    slab_list avail, full;     /* owned slabs, HEAP_AVAIL and HEAP_FULL */
    /* Remote frees of one slab, gathered before one push onto its
     * thread_free (REMOTE_BATCH). */
    struct slab *pend_slab;
    void *pend_head, *pend_tail;
    size_t pend_n;
    uintptr_t pend_first, pend_bytes; /* pend_slab's slots: the pending objects keep it */
    size_t used;               /* sum of the owned slabs' used counts */
    size_t resident;           /* bytes of the owned slabs ever touched */
    size_t slabs, bytes;       /* owned slabs and their spans: under the pool's lock */
    int64_t synced;            /* its objects out, as last added to the pool's out_est */
    uint64_t allocs, frees, remote_frees;
    uint64_t collected;        /* remote frees taken off its slabs' thread_free */
    uint64_t pushed;           /* remote frees it pushed onto other slabs' thread_free */
    uint64_t adopted_frees;    /* frees into slabs it took over from threads gone (stats'
                                  remote_frees, not the peak estimate's) */
    uint64_t rng;              /* hardened pools: the order of fresh slots (SHUFFLE) */
    /* The owned slab the last free went to, and its slots' range: the next
     * free into it needs no address map lookup. Cleared when the heap gives
     * the slab away. */
    struct slab *last;
    uintptr_t last_first, last_bytes;
    /* The object of another owned slab last freed onto the slot list (see
     * policy.h, HOT_FREES), its slab, and the head below it: the list's head
     * back at hot_next means an allocation took it; the head still at
     * hot_obj means none did, and the next such free sends it home first. */
    void *hot_obj, *hot_next;
    struct slab *hot_slab;
    unsigned hot_evicted;      /* such objects sent home in a row, none taken */
    bool hot_off;              /* HOT_PHASE of those: a phase of frees, none until
                                  the next refill */
} heap;

/* The heap's list is head, count objects long (count: as heap.count says). */
static inline void list_set(heap *h, void *head, size_t count) {
    __atomic_store_n(&h->list->head, head, __ATOMIC_RELAXED);
    __atomic_store_n(&h->count, count, __ATOMIC_RELAXED);
}
static inline void list_set_cur(heap *h, uintptr_t cur) { __atomic_store_n(&h->list->cur, cur, __ATOMIC_RELAXED); }

struct pk_pool {
    uintptr_t slab_low; /* geo.slab_align - 1, less a hardened pool's slot
                           alignment bits (pool.c, choose_path, says why);
                           copied into each thread's slot */
    int list_at;        /* where its threads' lists are: LIST_* */
    struct {
        uintptr_t secret;   /* mixed into stored links (every hardened pool) */
        uintptr_t lean;     /* the slot's offset for the lean path (pool_slow.c),
                               which serves pools whose link word is past the
                               object, or 0 */
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
    bool shuffle;     /* PK_POOL_SHUFFLE: fresh slots go out shuffled (hardened too) */
    void (*construct)(void *, void *);
    void (*destruct)(void *, void *);
    void *arg;
    size_t limit;
    size_t key;       /* index of the record in the records' area, and of the
                         pool's slot in every thread's table */
    size_t extend;    /* fresh slots a heap links at a time (policy.h, EXTEND_BYTES) */
    uint64_t rng;     /* hardened pools: the order of fresh slots of direct calls
                         (under lock), and the seed of each heap's own */
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
    size_t slab_free;     /* free slots in the pool's own slabs (free lists + untouched) */
    size_t out;           /* the pool's own slabs' used counts, summed */
    size_t keep_free;     /* free slots that release must leave (reserve) */
    heap *heaps;          /* threads' heaps for the pool */
    slab *all;            /* every slab of the pool (all_next), wherever it is */
    size_t heap_slabs, heap_bytes; /* slabs owned by heaps, and their spans */
    uint64_t tick_ms;     /* when the last purge tick ran */
    uint64_t used_ms;     /* when the last call for the pool's own work held the lock */
    uint32_t tick_no;     /* purge ticks so far; empty slabs remember it */
    size_t peak_out;
    /* The counters of direct calls and of heaps that were folded in. */
    uint64_t allocs, frees, slabs_released, bytes_released;
    /* Touched by any thread without the lock (atomic). */
    uint64_t remote_frees;
    /* Objects on the slabs' thread_free lists: this plus each heap's pushed
     * minus its collected (owner-only counters, so remote frees contend on
     * no pool-wide word); direct pushes, collections of the pool's own
     * slabs and the counters of heaps gone are added here. */
    int64_t remote_base;
    int64_t out_est;        /* the heaps' allocs - frees, as of their last refill */
    int64_t peak_est;       /* the most out_est has been */
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
 * compare, never on the inline fast paths (a destroyed pool's slots are
 * cleared in every thread, so they send every call here). */
static inline void pool_check_live(const pk_pool *p, const char *call, const void *obj) {
    if (unlikely(p->state == POOL_DEAD)) pool_report_dead(p, call, obj);
}

/* Bytes of s ever touched (stats' resident): the debug bits before slot 0
 * and the slots up to its high mark, page-rounded. */
static inline size_t slab_touched(const pk_pool *p, const slab *s) {
    size_t bytes = align_up(p->geo.header + (size_t)s->high * p->geo.slot, os_page_size());
    return bytes < s->span ? bytes : s->span;
}

/* The user's view of an object starts or ends here (tool builds). */
static inline void track_handout(const pk_pool *p, void *obj) {
    track_alloc(obj, p->size, p->zero || p->construct || p->destruct);
}
static inline void track_takeback(const pk_pool *p, void *obj) {
    track_free(obj, p->geo.slot);
}

/* ---- central.c: the pool's own slabs; caller holds the lock. ---- */

/* Direct pools: takes up to n objects from the slabs and pushes them onto
 * the list *list. With `all`, maps slabs until n are taken; otherwise, once
 * it has some, it stops at what is ready. Returns how many (0 with errno
 * ENOMEM). */
size_t central_take(pk_pool *p, size_t n, void **list, bool all);
/* Direct pools: returns one object to its slab. */
void central_give(pk_pool *p, void *obj);
/* Releases every empty slab beyond the reserve (all of them with `all`);
 * returns the bytes given back. */
size_t central_release(pk_pool *p, bool all);
/* A slab for heap h to own: one of the pool's partly used slabs, else an
 * empty one, else, if may_map, a new one; NULL (with errno ENOMEM if
 * may_map) when there is none. Its counts move from the pool to the heap. */
slab *central_slab_for_heap(pk_pool *p, heap *h, bool may_map);
/* A free into s, one of the pool's own partly used or full slabs (a thread
 * gone left it): h takes it (its remote frees collected), so this free and
 * the next ones into it are the owner's, not remote (mimalloc reclaims an
 * abandoned page on free the same way). False if s is not the pool's any
 * more. The slab is on no list afterwards: the caller places it. */
bool central_adopt(pk_pool *p, heap *h, slab *s);
/* A slab its heap gives back (empty, or its thread is leaving): its counts
 * move to the pool, and it goes on the list its counts say. */
void central_slab_from_heap(pk_pool *p, heap *h, slab *s);
/* Links up to k never-used slots of s (from bump) onto *list in address
 * order, constructing them if the pool has a construct hook; hardened pools
 * shuffle them (SHUFFLE) with the caller's generator *rng (a heap's own,
 * or the pool's under its lock). Returns how many; counts them in s->used. */
size_t central_carve(pk_pool *p, uint64_t *rng, slab *s, size_t k, void **list);
/* Takes s's thread_free (remote frees), checking each link on hardened
 * pools; returns the count, and the chain's tail in *tail. The caller owns
 * s (its heap's thread, or the pool's lock for the pool's own slabs) and
 * accounts the count (heap.collected, or remote_base). */
size_t central_collect(pk_pool *p, slab *s, void **head, void **tail);
/* central_collect, then the chain onto s's free list and off its used
 * count; returns the count for the caller to account. */
size_t central_splice_remote(pk_pool *p, slab *s);
/* s's last object came home: restarted in address order if its frees came
 * out of order (RESTART_DISORDER), its per-emptying marks cleared. */
void central_slab_emptied(const pk_pool *p, slab *s);
/* Collects the remote frees of the pool's own slabs, moving each to the
 * list its counts then say. */
void central_collect_own(pk_pool *p);
/* The pool's purge tick (policy.h, PURGE_INTERVAL_MS): if the pool has had
 * no call of its own for the purge delay, every empty slab goes back to the
 * system now; otherwise, once per interval, slabs empty since the last tick
 * go back. Runs on the pool's calls and on sweeps. */
void central_maybe_tick(pk_pool *p, uint64_t now_ms);
/* Makes slabs until n free slots are ready; returns the ready count. */
size_t central_reserve(pk_pool *p, size_t n);
/* Destructs constructed objects and unmaps every slab (pool destroy). */
void central_free_all(pk_pool *p);
/* A pointer given to free must start a slot of this pool; reports it
 * otherwise. Needs no lock and reads no slab. Returns the slab. */
slab *central_check_free(pk_pool *p, void *obj);
/* Debug pools: the whole check of a pointer given to free. */
void central_debug_check_free(pk_pool *p, void *obj);
/* Reports obj as freed twice (a second push of the head of a list). */
PK_COLD __attribute__((noreturn)) void central_report_double_free(pk_pool *p, void *obj);

/* Remote-free chains (heap.c pushes, central_collect takes): on pools whose
 * link word is an object's first and which have a second (slots of 16
 * bytes or more, no hooks), the head object of each chain pushed onto a
 * slab's thread_free carries, in its second word, the chain's length and
 * its tail's slot index, so the owner collecting the list reads two
 * objects per chain instead of every object (each of them last written by
 * another core: a walk cost a producer 12 ns an object in bench_xthread).
 * A hardened pool's mark is encoded like a link, at its own word, so a
 * write after free of the head decodes to a mark the collection refuses;
 * the links inside a chain are checked where they are followed (the
 * hardened fast paths, the slab paths), as every other link is. Walking and
 * checking every link at collection instead cost hardened producer/consumer
 * 2.6x the default pool (issue 20). */
static inline bool chains_counted(const pk_pool *p) {
    return p->link_off == 0 && p->geo.slot >= 2 * sizeof(uintptr_t);
}

/* ---- heap.c: a thread's heap for a pool. ---- */

/* HOT_FREES: obj, of s, an owned slab other than the current one, onto the
 * slot list when no earlier such object waits there (one an allocation
 * took is forgotten here). False when one still waits on top (the caller
 * sends it home first) or the pool keeps its list to the current slab (the
 * hardened lean path's). A hardened pool's inline alloc refuses a link to
 * the hot object (another slab) and goes to heap_alloc, which follows it. */
static inline bool heap_free_hot(const pk_pool *p, heap *h, struct slab *s, void *obj) {
    void *head = tc_head(h->list);
    if (h->hot_obj) {
        if (head != h->hot_next) return false; /* on top still, or buried under frees */
        h->hot_obj = NULL;                      /* taken */
        h->hot_evicted = 0;
    }
    if (h->hot_off || p->hard.lean || !h->cur || unlikely(obj == head)) return false;
    link_store(p, obj, (uintptr_t)head);
    list_set(h, obj, h->count + 1);
    h->hot_obj = obj;
    h->hot_slab = s;
    h->hot_next = head;
    return true;
}

/* obj onto the free list of s, an owned slab that is not current, counted;
 * a free not next to the one before counts toward RESTART_DISORDER. The
 * caller moves the slab between lists if its counts say so. */
static inline void heap_push_owned(const pk_pool *p, heap *h, struct slab *s, void *obj) {
    void *f = s->free;
    if (f) s->disorder += (uintptr_t)obj - (uintptr_t)f + p->geo.slot > 2 * p->geo.slot;
    link_store(p, obj, (uintptr_t)f);
    s->free = obj;
    s->used--;
    __atomic_store_n(&h->used, h->used - 1, __ATOMIC_RELAXED);
    __atomic_store_n(&h->frees, h->frees + 1, __ATOMIC_RELAXED);
}

/* The calling thread's allocation when its slot's list is empty: the next
 * objects of its current slab, or the next slab. NULL with errno ENOMEM. */
void *heap_alloc(pk_pool *p, tc_slot *c);
/* The calling thread's free of a checked object of slab s that is not on
 * its current slab (or of any slab, for pools without the inline path). */
void heap_free(pk_pool *p, tc_slot *c, slab *s, void *obj);
/* A free by a thread that has no heap (exiting): straight onto the slab's
 * thread_free. */
void heap_free_remote_now(pk_pool *p, slab *s, void *obj);
/* Gives everything of the heap in slot c back to the pool (its list, its
 * pending chain, its slabs) and clears the slot: thread exit, trim, and,
 * with the pool quiescent, destroy and visit. Caller holds the pool's lock
 * (and the registry's for another thread's heap). */
void heap_abandon(pk_pool *p, tc_slot *c);
/* Every heap of the pool, abandoned (destroy, visit): the registry's and
 * the pool's locks held, the pool quiescent. */
void heap_abandon_all(pk_pool *p);
/* The same for a pool about to be unmapped with no count to keep (a
 * PK_POOL_REGION pool's destroy, no checks to make): slabs handed to the
 * pool as they are, no list walked. */
void heap_forget_all(pk_pool *p);
/* Sums of the heaps' counters (the registry's and the pool's locks held):
 * objects outside the slabs' free lists that are not live (slot lists,
 * pending chains), allocs, frees, remote frees, resident bytes. */
typedef struct heap_sums {
    size_t idle;
    int64_t pending; /* pushed - collected */
    uint64_t allocs, frees, remote_frees;
    size_t used, resident;
} heap_sums;
void heap_sum(const pk_pool *p, heap_sums *out);
/* Fork child: heaps of threads that did not survive are dropped, their
 * slabs put on the pool's LOST list, every slot ever handed out counted as
 * live (their lists are never followed: those threads may have been
 * changing them). Caller holds the pool's lock. */
void heap_fork_child(pk_pool *p, const tc_slot *mine, const tc_slot *mine_end);
/* central.c: s, owned by a heap gone with its thread, onto the LOST list. */
void central_lose_slab(pk_pool *p, slab *s);
/* central.c, fork child: the objects on s's thread_free, counted by a walk
 * that never leaves the slab. */
size_t central_count_remote(pk_pool *p, slab *s);

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
 * free list of the pool's own slabs (O(free objects)), where the shallow
 * check is O(slabs). Called through POOL_VALIDATE, compiled in at
 * POOLKIT_ASSERT 3 only. */
bool pool_is_valid(const pk_pool *p, bool deep);
/* At every state change of a pool, under its lock: a slab taken by or given
 * back from a heap, a direct call, trim, reserve, create and destroy
 * (shallow on the paths that run per slab or per call, deep on whole-pool
 * calls). */
#define POOL_VALIDATE(p) PK_ASSERT_EXPENSIVE(pool_is_valid((p), false))
#define POOL_VALIDATE_DEEP(p) PK_ASSERT_EXPENSIVE(pool_is_valid((p), true))

/* ---- tcache.c: per-thread cache tables and the thread registry. ---- */

void tcache_attach(pk_pool *p);  /* the pool, of key p->key, gets heaps from now on */
void tcache_detach(pk_pool *p);  /* forgets every thread's slot and heap for the pool */
/* The calling thread's cache for p, registering the thread and growing its
 * table on first use and setting the cache up; NULL when the thread is
 * exiting or out of memory. */
tc_slot *tcache_slot(pk_pool *p);
/* The calling thread's table, [*lo, *hi); false when it has none. */
bool tcache_table_range(const tc_slot **lo, const tc_slot **hi);
/* Threads registered now (they have used a pool and not exited). */
size_t tcache_live_threads(void);

/* pool.c: calls fn(obj, sites, arg) on a debug pool's live objects (slot
 * addresses, in address order within a slab) until fn returns false;
 * sites is the slot's record of call sites (sites.h) or NULL. Other pools
 * keep no record of which slots are live: nothing is called. Holds the
 * pool's lock meanwhile, so fn must not call the pool. */
void pool_each_live_debug(pk_pool *p, bool (*fn)(void *obj, void *const *sites, void *arg), void *arg);
/* pool_calls.c: calls fn on every live object; every free object must be
 * home in its slab (every heap abandoned, remote frees collected), so a
 * slot is live exactly when it was handed out and is not on its slab's
 * free list. */
void pool_each_live(pk_pool *p, void (*fn)(void *obj, void *arg), void *arg);
/* The heap records of the calling thread's table (beside its slots):
 * heap k serves the pool whose key is k. */
heap *tcache_heap(size_t key);
/* pool.c: the fork child's pools drop the heaps of threads gone (the
 * forking thread's table is [mine, mine_end)). */
void pools_fork_child(const tc_slot *mine, const tc_slot *mine_end);
/* The calling thread's cache table (pool.h's pk__tc_table): a shared
 * all-empty table until the thread registers and after it exits. */
PK_API extern __thread char *pk__tc_table __attribute__((tls_model("initial-exec")));
#define tc_table ((tc_slot *)pk__tc_table)
/* The calling thread's slot for p, set up or not. */
static inline tc_slot *tc_slot_of(const pk_pool *p) { return tc_table + p->key; }
void tcache_registry_lock(void);
/* The fork child's registry: the forking thread only; caller holds the lock. */
void tcache_fork_child(void);
void tcache_registry_unlock(void);

#endif
