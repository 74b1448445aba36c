/* The pool's types, shared by every module of the pool layer: a thread's
 * slot and list (tcache.c), a thread's heap (heap.c), the pool record
 * (pool.c), with the layouts the inline paths (pool.h) rely on asserted
 * beside them, and the small helpers every module uses. Each module's
 * functions are in its own header (central.h, check.h, heap.h, pools.h,
 * purge.h, tcache.h); harden.h holds the link words and the hardening
 * checks.
 *
 * Where a slab is, exactly one of: on one of the pool's lists (SLAB_*,
 * owner NULL; SLAB_LOST in a fork child only, for the slabs of threads that
 * did not survive the fork), or owned by one thread's heap (on its avail or
 * full list, its spare, or its current slab). Every slab is also on the
 * pool's `all` list.
 *
 * Where a free object is, exactly one of: on its slab's free list (or never
 * handed out: slot >= bump); on its slab's thread_free; in a freeing
 * thread's pending chain; on the owner's list (its current slab's).
 * live = sum of used - lists - pending chains - thread_free objects.
 *
 * Lock order: the pool list (pool_list.c; pk_pool_foreach holds it around calls
 * that take the next two), the thread registry (tcache.c), a pool's lock,
 * then the leaf locks (pool records, retained memory, the regions and
 * maps). The fork handlers take them all in that order. A heap's own work
 * (its slabs' free lists, its current slab) takes no lock.
 */
#ifndef POOLKIT_POOL_TYPES_H
#define POOLKIT_POOL_TYPES_H

#include <poolkit/pool.h>

#include "base/adapt.h"
#include "base/policy.h"
#include "mem/slab.h"
#include "base/track.h"

#include <assert.h>
#include <pthread.h>

/* Private pk_pool_config flag for the front end's class pools, which hold
 * pk_new's objects: a debug pool's free fill leaves the word at
 * POOL_KEPT_WORD alone where it holds POOL_KEPT_MARK under
 * POOL_KEPT_MARK_MASK (a deallocated object's count word, whose mark names
 * the class in an over-release report), and fills and checks the rest of
 * the slot, and any other block's whole slot, as any debug pool's. */
#define POOL_KEEPS_HEADER (1u << 30)
#define POOL_HEADER_BYTES 16
#define POOL_KEPT_WORD 8
#if UINTPTR_MAX > 0xFFFFFFFFu
#  define POOL_KEPT_MARK ((uintptr_t)0xDEADu << 48)
#  define POOL_KEPT_MARK_MASK ((uintptr_t)0xFFFFu << 48)
#else
#  define POOL_KEPT_MARK ((uintptr_t)0xDEAD0000u)
#  define POOL_KEPT_MARK_MASK (~(uintptr_t)0)
#endif
/* Private flag for the library's own pools (the autorelease stack's
 * pages): what they hold at exit is no leak of the program's, and the
 * debug leak summary leaves them out. */
#define POOL_LIBRARY (1u << 29)
/* Private flag of the size-class front end's pools (alloc.c): pk_free's
 * slow path and the stats report tell them by it. */
#define POOL_SIZE_CLASS (1u << 28)
/* Private flag, with POOL_SIZE_CLASS, of a pk_heap's class pools
 * (blockheap.c): the pool's arg is its heap, so a resize through the front
 * end keeps the block in its heap. */
#define POOL_HEAP (1u << 27)

/* ---- a thread's slot for one pool ---- */

/* 64 bytes, the key's in the thread's table, which the inline paths find
 * from the pool's handle alone (the key is the index of the pool's record
 * in the records' area: pool.c). Words 1 to 6 are theirs, as pool.h lists
 * them; word 0 (heap) is written once, so no store of the inline paths
 * lands on the line's first word, where the table pointer itself lies in
 * its own line (tcache.c: a store there followed by a load of the pointer
 * would look dependent to a processor that compares address bits below the
 * page size). All zero is a slot the thread has not set up, and a pool no
 * inline path serves keeps words 1, 2, 4 and 5 at zero, so those paths
 * always miss. */
typedef struct tc_slot {
    struct heap *heap; /* the thread's heap for the pool (heap.c), NULL until
                          its first slow path */
    void *head;        /* default pools' list: the current slab's free objects */
    uintptr_t cur;     /* that slab's address | (SLAB_BYTES - 1), or 0 */
    uintptr_t low;     /* hardened pools: the mask their words compare under
                          (pool.c); 0 marks the plain pools (link word first,
                          stored as it is, nothing to do per object), whose
                          owner's frees the short path serves (pool_free.c) */
    void *hhead;       /* hardened pools' list (encoded links) */
    uintptr_t hcur;    /* as cur, for hardened pools, with their low */
    uintptr_t secret;  /* hardened pools' secret */
    struct slab *rec;  /* the record of cur's slab, where cur is this slot's (the
                          pools whose list is head and cur), else NULL: pk_free,
                          which has the record of the object's slab in hand,
                          compares it with this word instead of the object's
                          address or'ed with the mask with cur (no copy of the
                          pointer to keep) */
} tc_slot;
_Static_assert(sizeof(tc_slot) == (size_t)1 << PK__SLOT_SHIFT, "a slot is a key's share of the table");
_Static_assert(offsetof(tc_slot, head) == 1 * sizeof(uintptr_t) && offsetof(tc_slot, cur) == 2 * sizeof(uintptr_t) &&
                   offsetof(tc_slot, low) == 3 * sizeof(uintptr_t) && offsetof(tc_slot, hhead) == 4 * sizeof(uintptr_t) &&
                   offsetof(tc_slot, hcur) == 5 * sizeof(uintptr_t) && offsetof(tc_slot, secret) == 6 * sizeof(uintptr_t),
               "pool.h's inline paths read a slot's words 1 to 6 in this order");
_Static_assert(PK__SLAB_MASK == SLAB_BYTES - 1, "pool.h's inline free knows a slab's size");

/* The list a thread allocates from for a pool: two words, its head and its
 * current slab's word (as tc_slot's cur). For the pools the default inline
 * paths serve it is the slot's head and cur, for the hardened ones hhead
 * and hcur, for the others (the library serves every call) the heap's
 * own (heap.own), which no inline path reads. */
typedef struct tc_list {
    void *head;
    uintptr_t cur;
} tc_list;
_Static_assert(offsetof(tc_slot, cur) - offsetof(tc_slot, head) == offsetof(tc_list, cur) &&
                   offsetof(tc_slot, hcur) - offsetof(tc_slot, hhead) == offsetof(tc_list, cur),
               "a slot's two lists are tc_list views");
enum { LIST_SLOT, LIST_HARDENED, LIST_HEAP };
/* pk_pool.hard.lean's bits: the lean free (pool_free.c, free_lean) and the
 * lean allocation (heap.c, heap_alloc_lean), which pops the list's head
 * where its link leads within the current slab, to a hot object or ends. */
enum { HARD_LEAN = 1, HARD_POP = 2 };

/* The library reads and writes lists with relaxed atomics: plain moves on
 * the machine, but visible as such to ThreadSanitizer, since stats read
 * other threads' lists. */
static inline void *tc_head(const tc_list *l) { return __atomic_load_n(&l->head, __ATOMIC_RELAXED); }
static inline uintptr_t tc_cur(const tc_list *l) { return __atomic_load_n(&l->cur, __ATOMIC_RELAXED); }

/* The calling thread's cache table (pool.h's pk__tc_table): a shared
 * all-empty table until the thread registers and after it exits. */
PK_API extern __thread char *pk__tc_table __attribute__((tls_model("initial-exec")));
#define tc_table ((tc_slot *)pk__tc_table)

/* Past its slots, each table holds the thread's owned slabs by address
 * (the owned index): OWN_INDEX entries, one per SLAB_BYTES of address
 * (modulo OWN_INDEX slabs), each naming a slab of a size class that the
 * thread's heap of that class owns (its word: the slab's base or'ed with
 * SLAB_BYTES - 1, as tc_slot.cur) and the class's slot (its table offset,
 * the slab geometry's table_slot). pk_free so finds, from the address and
 * two loads of the thread's own table, that its own heap owns the object's
 * slab and which slot serves it, without the address map or the slab's
 * record, and pushes the object onto that slot's list whether its slab is
 * the current one or not: inline for the current one (alloc.h, whose
 * PK__OWN_INDEX and PK__OWN_INDEX_OFF alloc.c ties to these), in the
 * library for the others (alloc.c). An entry is exact: set when the heap
 * takes the slab, cleared when the slab leaves it (heap.c, count_in and
 * count_out), relaxed atomics, as the owner alone reads it and others
 * write it only while the owner is quiescent (destroy, visit). Two owned
 * slabs at one place: the later one's entry, the other's objects take the
 * record's way. An empty entry (0) covers no address. */
#define OWN_INDEX 1024
#define OWN_INDEX_OFF ((size_t)TABLE_KEYS * sizeof(tc_slot))
typedef struct own_entry {
    uintptr_t word;   /* the slab's base | (SLAB_BYTES - 1), or 0 */
    uintptr_t slot;   /* its class's slot's offset in the table */
} own_entry;
#define OWN_INDEX_BYTES ((size_t)OWN_INDEX * sizeof(own_entry))
/* (The entry's byte offset straight from the address: the index's offset
 * folds into the load's displacement.) */
_Static_assert(sizeof(own_entry) == 16, "an entry's byte offset is its index shifted by 4");
static inline own_entry *own_entry_at(char *table, uintptr_t x) {
    return (own_entry *)(table + OWN_INDEX_OFF + ((x >> (SLAB_SHIFT - 4)) & ((uintptr_t)(OWN_INDEX - 1) << 4)));
}

/* ---- a thread's heap for one pool ---- */

/* heap.c, mimalloc's heap (one per thread per pool): the slabs the thread
 * owns and allocates from. Only its thread touches it, without a lock,
 * except where a comment says so; the pool's lock guards prev/next and the
 * moves of slabs between heap and pool. Other threads read the counters
 * (relaxed) under the registry's lock (stats). */
typedef struct heap {
    struct pk_pool *pool;      /* NULL: not set up */
    tc_slot *slot;             /* the thread's slot for the pool */
    tc_list *list;             /* the list it allocates from: in the slot, or own */
    tc_list own;               /* that list, for pools no inline path serves */
    size_t count;              /* its length as the library's paths leave it: exact
                                  where no inline path serves the pool, else stale
                                  (stats walk those lists instead: heap_sum) */
    struct heap *prev, *next;  /* the pool's heaps, under the pool's lock */
    struct slab *cur;          /* the slab whose free objects are on the list */
    struct slab *spare;        /* empty slabs kept for the next ones (HEAP_SPARE), linked
                                  through their next, the last emptied first */
    size_t spares;             /* how many: at most the pool's spares */
    slab_list avail, full;     /* owned slabs, HEAP_AVAIL and HEAP_FULL */
    /* Remote frees of one slab, gathered before one push onto its
     * thread_free (REMOTE_BATCH). */
    struct slab *pend_slab;
    void *pend_head, *pend_tail;
    size_t pend_n;
    size_t resident;           /* bytes of the owned slabs ever touched */
    size_t slabs, bytes;       /* owned slabs and their spans: under the pool's lock */
    int64_t synced;            /* its objects out, as last added to the pool's out_est */
    int64_t synced_high;       /* the most synced has been (heap.c, note_peak) */
    uint64_t allocs;           /* objects its lists took from its slabs (stats' taken) */
    uint64_t frees;            /* objects the library's paths put back on its slabs
                                  (the short path counts its own: short_frees);
                                  stats' returned is derived from the slabs' counts */
    uint64_t remote_frees;     /* its frees into slabs it does not own */
    uint64_t collected;        /* remote frees taken off its slabs' thread_free */
    uint64_t pushed;           /* remote frees it pushed onto other slabs' thread_free */
    bool may_adopt;            /* its last refill left it short of a slab (heap.c,
                                  short_of_slab) and it has adopted none since
                                  (pool_free.c) */
    /* HOT_LIST (policy.h): the short path puts an owner's free of another
     * owned slab onto a non-empty list while (uintptr_t)head <= hot_bar:
     * hot_bar is UINTPTR_MAX while hot_room, the objects it may still so
     * list before the next refill, is not 0, and 0 otherwise (HOT_FREES:
     * an empty list only). One compare, as the test for an empty list. */
    uintptr_t hot_bar;
    size_t hot_room;
    /* HOT_COUNT (policy.h): on pools whose lists only the heap's paths and
     * the inline ones touch (not the size classes'), hot_room is a bound on a count
     * instead of a budget (never spent; hot_bar stays UINTPTR_MAX): hot_n
     * bounds the objects of other owned slabs
     * on the list, each of which carries its place in that count in its
     * second word, keyed by hot_key (which changes as the count restarts,
     * at each refill). */
    bool hot_count;
    size_t hot_n;
    uintptr_t hot_key;
    void *hot_stop; /* the head at which the count last refused, until the next listing
                       or refill: a free finding it there is refused at once */
    size_t foreign_room;       /* HOT_FOREIGN: objects of other heaps' slabs it may still
                                  push onto a non-empty list before the list is next empty */
    struct slab *warm;         /* the owned slab its owner last freed an object into, left
                                  on its list, or NULL: next_slab's first pick; cleared when
                                  the slab leaves the heap (count_out) */
    size_t walk_at;            /* owned slabs at which an adoption walks them all (OWNED_WALK) */
    uint64_t short_frees;      /* the short path's frees (pool_free.h), beside warm,
                                  which it writes too */
    uint64_t rng;              /* hardened pools: the order of fresh slots (SHUFFLE) */
    /* OWN_FREES (policy.h): what pk_free's pushes of objects of other owned
     * slabs onto the slot's list may still spend before heap_own_drain
     * sends them home, counted from own_budget since the list was last
     * empty or drained; below 0: due. own_budget: the pool's own_frees, or
     * up to OWN_FREES_REUSED times it while the drains find that the
     * allocations took most of what was pushed (heap.c, own_adapt). */
    intptr_t own_room;
    intptr_t own_budget;
    bool own_direct;           /* OWN_DIRECT: pk_free sends objects of other owned slabs home,
                                  own_room 0 between its frees; until the next drain, refill
                                  or trim (heap.c, own_restart) */
    void *hot_obj;             /* hardened pools: the object of another slab last
                                  put onto the empty list (HOT_FREES, HOT_FOREIGN), until the next
                                  refill (an abandon clears the heap); the library's
                                  checks of the list's links accept a link to it
                                  (heap.c, hot_link) */
} heap;

/* The heap's list is head, count objects long (count: as heap.count says). */
static inline void list_set(heap *h, void *head, size_t count) {
    __atomic_store_n(&h->list->head, head, __ATOMIC_RELAXED);
    __atomic_store_n(&h->count, count, __ATOMIC_RELAXED);
}
/* The list's current slab s (NULL: none), whose word is cur (tc_slot.cur);
 * tc_slot.rec follows it where the list is the slot's own. */
static inline void list_set_cur(heap *h, slab *s, uintptr_t cur) {
    __atomic_store_n(&h->list->cur, cur, __ATOMIC_RELAXED);
    if (h->list == (tc_list *)&h->slot->head) __atomic_store_n(&h->slot->rec, s, __ATOMIC_RELAXED);
}

/* ---- the pool ---- */

struct pk_pool {
    /* Set at creation, read-only afterwards. */
    uintptr_t slab_low; /* SLAB_BYTES - 1, less a hardened pool's slot
                           alignment bits (pool.c, choose_path, says why) */
    int list_at;        /* where its threads' lists are: LIST_* */
    struct {
        uintptr_t secret;   /* mixed into stored links (every hardened pool) */
        uintptr_t lean;     /* HARD_LEAN and HARD_POP: the lean path (pool_slow.c,
                               pool_free.c) serves the pool, whose link word is past
                               the object; HARD_POP alone: its allocation's pop of a
                               link the inline path refused (LIST_HARDENED) */
    } hard;
    const char *name;
    size_t size, align;
    size_t link_off;  /* where a free object keeps its link word */
    size_t redzone;   /* debug pools: guard bytes after the object */
    size_t fill_from; /* debug pools: the end of the kept word (POOL_KEEPS_HEADER), or 0 */
    slab_geometry geo;
    carve_how carve;  /* what carving fresh slots takes (slab.h) */
    unsigned flags;
    bool locked;      /* not PK_POOL_LOCAL */
    bool cached;      /* uses thread caches (else every call goes to the slabs) */
    bool debug, hardened, zero;
    bool shuffle;     /* PK_POOL_SHUFFLE: fresh slots go out shuffled (hardened too) */
    void (*construct)(void *, void *);
    void (*destruct)(void *, void *);
    void *arg;
    size_t limit;
    size_t key;       /* the record's index in the records' area, and the
                         pool's slot in every thread's table */
    size_t extend;    /* fresh slots a heap links at a time (policy.h, EXTEND_BYTES) */
    size_t own_frees; /* OWN_FREES: objects of other slabs pk_free may push onto a
                         thread's list between drains; 0 for pools without the
                         owned index (any but the plain size classes) */
    size_t hot_list;  /* objects of other slabs a thread's list may hold (HOT_LIST), 0 for
                         pools whose short path lists none but HOT_FREES' */
    size_t foreign_budget; /* HOT_FOREIGN: what a list takes past its emptying (policy_hot_foreign) */
    bool hot_foreign; /* HOT_FOREIGN: the short path lists frees into slabs other
                         heaps hold too (plain pools the inline paths serve, but the
                         size classes of slabs of many: pk_free's lists are OWN_FREES') */
    bool foreign_on;  /* hot_foreign, and the pool holds HOT_FOREIGN_SLABS slabs or more:
                         written under the lock as the count crosses it, read racily */
    size_t spares;    /* empty slabs a heap keeps (HEAP_SPARE: 1, more for slabs of one slot) */
    uint64_t rng;     /* hardened pools: the order of fresh slots of direct calls
                         (under lock), and the seed of each heap's own */
    struct pk_pool *prev, *next; /* the list of live pools, under the pool list's lock;
                                    next links spare records too (pool.c) */
    uint32_t listed_at;          /* its place in pool_list.c's arrays, under the same lock */
    /* POOL_LIVE from a successful create to destroy, then POOL_DEAD: the
     * record stays mapped (spare, or held back for debug pools: pool.c), so
     * the slow paths and whole-pool calls catch a pool used after its
     * destroy until the record is reused. dead_name is the name copied at
     * destroy, for that report: the caller's string may be gone by then. */
    uint32_t state;
    char dead_name[48];

    /* The pool's lock lies in a table of its own (pool.c), a cache line
     * each: fork's handlers take and release every pool's lock, and each
     * page written after a fork is copied, in the parent and the child, so
     * the locks share pages instead of each taking its record's. */
    pthread_mutex_t *lock;
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
    /* IDLE_ADAPT (policy.h, base/adapt.h): the pool's idle delay, in
     * slabs made (slabs_total + slabs_released), and when its last idle
     * return ran. */
    idle_adapt idle;
    uint64_t idle_ms;
    /* The same for the surplus a thread's exit gives back (purge.c,
     * purge_thread_exit): its slabs (0 once judged), the slabs made by
     * then, and whether exits keep it (it came back). */
    size_t exit_gone, exit_mark;
    bool exit_keep;
    uint64_t remote_seen; /* the remote frees counted when the pool's own slabs
                             were last all collected for a heap (heap.c) */
    size_t peak_out;
    /* The counters of direct calls and of heaps that were folded in
     * (allocs: pk_pool_stats's taken). */
    uint64_t allocs, slabs_released, bytes_released;
    /* Touched by any thread without the lock (atomic). */
    uint64_t remote_frees;
    /* Set at the first remote free into one of the pool's slabs, never
     * cleared: until then no full slab can hold a freed slot, and a heap
     * short of a slab looks at none of its full ones (heap.c, FULL_SCAN).
     * Written once, so remote frees do not share its line for ever. */
    bool remote_any;
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
    pk_lock(p->lock);
    POOL_OWNER_SET(p, pthread_self());
}
static inline bool pool_trylock(pk_pool *p) {
    if (pk_trylock(p->lock) != 0) return false;
    POOL_OWNER_SET(p, pthread_self());
    return true;
}
static inline void pool_unlock(pk_pool *p) {
    if (!p->locked) return;
    POOL_OWNER_SET(p, (pthread_t)0);
    pk_unlock(p->lock);
}

static inline const char *pool_name(const pk_pool *p) { return p->name ? p->name : "(unnamed)"; }

#define POOL_LIVE 0x4c495645u /* "LIVE" */
#define POOL_DEAD 0x44454144u /* "DEAD" */

/* Whether p's objects are the hardened front end's blocks (alloc_harden.c),
 * whose checks see every call, so no inline or lean path serves them: a
 * hardened class pool of the front end, neither a heap's (its blocks carry
 * no check word: heap.h) nor a debug pool (which checks more). */
static inline bool pool_hard_front(const pk_pool *p) {
    return p->hardened && !p->debug && (p->flags & (POOL_SIZE_CLASS | POOL_HEAP)) == POOL_SIZE_CLASS;
}

/* The calling thread's slot for p, set up or not. */
static inline tc_slot *tc_slot_of(const pk_pool *p) { return tc_table + p->key; }

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

/* Counters stats read from other threads: the owner's plain read and
 * relaxed store, never a lost update (one writer). */
#define BUMP(field, d) __atomic_store_n(&(field), (field) + (d), __ATOMIC_RELAXED)

/* Remote-free chains (pool_free.c pushes, central_collect takes): on pools
 * whose link word is an object's first and which have a second (slots of
 * 16 bytes or more, no hooks), the head object of each chain pushed onto a
 * slab's thread_free carries, in its second word, the chain's length and
 * its tail's slot index, so the owner collecting the list reads two
 * objects per chain instead of every object (each of them last written by
 * another core, a cache miss apiece).
 * A hardened pool's mark is encoded like a link, at its own word, so a
 * write after free of the head decodes to a mark the collection refuses;
 * the links inside a chain are checked where they are followed (the
 * hardened fast paths, the slab paths), as every other link is. Walking and
 * checking every link at collection instead would put that walk back into
 * hardened producer/consumer, at a multiple of the default pool's time
 * (docs/design/core4-prototypes.md). */
static inline bool chains_counted(const pk_pool *p) {
    return p->link_off == 0 && p->geo.slot >= 2 * sizeof(uintptr_t);
}

#endif
