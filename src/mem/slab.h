/* Slabs: SLAB_BYTES of equal-sized slots (a huge slot's slab: as long as it
 * needs), and their records (struct slab) in their regions' headers
 * (region.h). slab.c makes and unmakes slabs, lays out their slots, links
 * fresh slots (carving, the shuffle) and keeps slab lists.
 *
 * Invariants:
 * - A slab starts at an address aligned to SLAB_BYTES, and every slot
 *   starts inside its first SLAB_BYTES; its record is slab_of(any slot).
 * - Slot 0 starts at a multiple of the pool's align and of the largest power
 *   of two dividing the slot (up to SLOT_ALIGN_MAX), so every slot is
 *   aligned to both: a slot of a power-of-two size up to 4 KiB is aligned
 *   to its size, and a 64-byte slot fills one cache line.
 * - Slots [0, bump) have been handed out at least once (and constructed, if
 *   the pool has a construct hook); slots [bump, capacity) were never touched.
 * - used counts slots outside the slab's free list: with the user, on its
 *   owner's allocation list (while it is the owner's current slab), in a
 *   freeing thread's pending chain or on thread_free. A slab with used == 0
 *   holds nothing anyone can reach.
 * - The free list has exactly bump - used objects, except on a heap's
 *   current slab, whose free objects are on the thread's list (heap.c).
 */
#ifndef POOLKIT_SLAB_H
#define POOLKIT_SLAB_H

#include "base/internal.h"
#include "mem/region.h"

/* The most alignment a slot's placement gives (a page): a pool's align is
 * at most this too (pk_pool_config). */
#define SLOT_ALIGN_MAX 4096

struct pk_pool;
struct heap;

/* The pool's own lists (a direct pool's slabs, and the slabs no thread's
 * heap owns: empty ones, and those of threads that exited), then where a
 * heap (heap.c) keeps the slabs it owns. */
typedef enum {
    SLAB_PARTIAL, SLAB_FULL, SLAB_EMPTY,
    SLAB_LOST, /* fork child: owned by a thread that did not survive; every slot
                  ever handed out counts as live, none is handed out again */
    SLAB_LISTS,
    HEAP_AVAIL = SLAB_LISTS, /* owned, with free slots (freed, or never handed out) */
    HEAP_FULL,               /* owned, none free (remote frees may wait on thread_free) */
    HEAP_CUR,                /* owned, the slab the heap allocates from: on no list */
    SLAB_NOWHERE
} slab_list_id;

typedef struct slab {
    /* The owner's free of an object of a slab that is not its current one
     * (pool_free.c) reads and writes this line only. */
    struct heap *owner;       /* the thread heap that owns it, or NULL: the pool's */
    void *free;               /* freed slots, linked through the pool's link word */
    uint32_t used;            /* slots outside the slab */
    uint32_t grid_limit;      /* slab_has_slot's bound; 0 sends every pointer to the library */
    char *objects;            /* slot 0: base, or past a debug pool's live bits */
    uint32_t table_slot;      /* slab_geometry's, copied: pk_free reads it with the owner's
                                 fields, one line of the record */
    uint64_t recip;           /* the pool's geometry's (slot_on_grid); 0 past 4 GiB slots */
    struct pk_pool *pool;
    uint64_t grid_mul;        /* slab_has_slot's multiplier */
    /* Other threads' frees land here (one atomic push per run): a line of
     * its own, apart from the owner's. */
    _Alignas(64) void *thread_free;
    /* The head of its free list when it last left a heap (the object that
     * heap's thread freed last there, as its list went home, before other
     * threads' frees were collected onto it): freed while the slab is still
     * the pool's, that object is free already. Read only while no heap owns
     * the slab (a heap that takes it hands its objects out); relaxed
     * atomics, since any thread's free reads it. */
    void *left_head;
    uintptr_t slot;           /* bytes per slot */
    struct slab *prev, *next; /* in the list named by `list` */
    struct slab *all_prev, *all_next; /* every slab of the pool, under its lock */
    char *base;               /* the slab's first byte: SLAB_BYTES-aligned */
    size_t span;              /* bytes from base */
    uint32_t capacity;        /* slots in this slab */
    uint32_t bump;            /* slots handed out since the slab was last empty */
    uint32_t high;            /* the most bump has been: slots ever touched */
    uint32_t list;            /* slab_list_id */
    uintptr_t extent;         /* capacity * slot: a slot's offset from objects is below */
    uint32_t empty_tick;      /* the pool's purge tick when the slab last became empty */
    const struct heap *left_by; /* the heap that last gave it to the pool (compared only:
                                   EMPTY_AFFINITY, central.c) */
    bool guarded;             /* its last page is a no-access guard page */
    bool lost;                /* on SLAB_LOST (fork child): set once, never cleared */
    bool warm;                /* its place held another slab's bytes when it was made */
    bool migrated;            /* remote frees collected since it last left a heap
                                 (central_collect; heap.c, leaves_when_full) */
    uint64_t *live_bits;      /* debug pools: one bit per slot, set while handed out */
    void **sites;             /* debug pools: site_words per slot (sites.h), or NULL */
    size_t sites_bytes;       /* mapped for sites */
} slab;
_Static_assert(sizeof(slab) <= RECORD_BYTES, "a slab's record fits its place in the region's header");
_Static_assert(offsetof(slab, thread_free) == 64, "the owner's fields fill the record's first line");
_Static_assert(offsetof(slab, table_slot) < 64 && offsetof(slab, owner) < 64 && offsetof(slab, grid_mul) < 64,
               "pk_free's reads of the record share its first line");
_Static_assert(offsetof(slab, owner) + sizeof(void *) <= REGION_INERT && offsetof(slab, pool) + sizeof(void *) <= REGION_INERT &&
                   offsetof(slab, grid_limit) + sizeof(uint32_t) <= REGION_INERT,
               "a pointer into a region's header place reads a record with no owner, no pool and no slot");

/* count is stored with relaxed atomics: a heap reads a pool's counts
 * without the lock, as a hint of whether the pool has a slab for it. */
typedef struct slab_list {
    slab *head, *tail;
    size_t count;
} slab_list;

/* Geometry shared by all slabs of one pool. */
typedef struct slab_geometry {
    size_t slot;       /* bytes per slot */
    size_t align;      /* object alignment */
    size_t span;       /* bytes per slab: SLAB_BYTES, or more for a huge slot */
    size_t header;     /* bytes before slot 0 */
    uint32_t capacity; /* slots per slab */
    bool debug_bits;   /* keep live_bits */
    size_t guard;      /* bytes of no-access guard page at the end of the span (0 = none) */
    uint64_t recip;    /* 2^64 / slot rounded up: offset / slot by a multiply; 0 if slot >= 2^32 */
    size_t site_words; /* debug pools: words of call sites per slot (sites.h); 0 = none */
    uint32_t table_slot; /* set by the pool layer: the byte offset of the pool's slot in every
                            thread's table where pk_free may free into its current slab inline
                            (the front end's class pools), 0 for any other pool */
} slab_geometry;

/* Chooses the slab layout for slots of `slot` bytes aligned to `align`
 * (placed as the invariant above says): as many as fit in SLAB_BYTES after
 * a debug pool's live bits and before a guard page; a slot that does not
 * fit gets a slab of its own, a page past the object. With `guard`, the
 * span's last page is left out of the slots and made no-access, so a
 * linear overflow past the slab faults before it reaches the next one.
 * With `lead`, slabs of more than one slot start with a slot's length that
 * no slot uses, zero (slab_create), so that every slot has one before it
 * (the hardened front end's underflow check). False if it cannot fit. */
bool slab_geometry_for(size_t slot, size_t align, bool debug_bits, bool lead, bool guard, slab_geometry *g);

/* The alignment every slot laid out by g has: slot 0 starts header bytes
 * past a SLAB_BYTES-aligned base and each next one a slot further, so the
 * largest power of two dividing SLAB_BYTES, header and (where a slab holds
 * more than one) slot. At least g->align, and past SLOT_ALIGN_MAX where the
 * layout happens to give it: a power-of-two slot with no header. */
static inline size_t slab_slot_align(const slab_geometry *g) {
    size_t bits = SLAB_BYTES | g->header | (g->capacity > 1 ? g->slot : 0);
    return bits & -bits;
}

/* A new empty slab of pool, recorded in the address map, its guard page
 * (g->guard) made no-access while the guards held allow (os_guard_room).
 * NULL + ENOMEM. */
slab *slab_create(struct pk_pool *pool, const slab_geometry *g);
/* Removes the slab from the address map and gives its place back, kept
 * for the next slab for the purge delay with `cache` (region.c). */
void slab_destroy(slab *s, bool cache);

/* Whether off, an offset from slot 0 below 2^32 slots' worth, is a whole
 * number of slots: with recip = 2^64 / slot rounded up, off is a multiple
 * of slot exactly when off * recip wraps below recip (a multiply, where a
 * division costs tens of cycles on every free). */
static inline bool slot_on_grid(uint64_t off, uint64_t slot, uint64_t recip) {
    return recip ? off * recip < recip : off % slot == 0;
}

/* off / slot for off, slot < 2^32, with recip = 2^64 / slot rounded up
 * (exact in that range): a multiply instead of a division. */
__extension__ typedef unsigned __int128 u128;
static inline size_t slot_div(uint64_t off, uint64_t slot, uint64_t recip) {
    return recip ? (size_t)(((u128)recip * off) >> 64) : (size_t)(off / slot);
}

/* Whether x starts one of s's slots, with one multiply and one compare:
 * with mul = floor(2^64 / slot) + 1, a slot's offset k * slot times mul
 * wraps to k * e (e = slot * mul - 2^64, 1 <= e <= slot), and any other
 * offset within 2^32 of slot 0 (below it too) to at least 2^64 / slot -
 * 2^32, far above limit = capacity * e. Set where a slot is at most
 * REGION_BYTES (so every address of the slab's region is within 2^32 of
 * slot 0) and the slots' bytes fit 32 bits (slab_grid_set); other slabs
 * have limit 0, so their frees go to the library's checks
 * (tests/test_pool_heap.cc checks every offset of a slab at several slot
 * sizes). */
typedef struct slab_grid {
    uintptr_t objects;
    uint64_t mul, limit;
} slab_grid;
static inline slab_grid slab_grid_of(const slab *s) {
    return (slab_grid){(uintptr_t)s->objects, s->grid_mul, s->grid_limit};
}
static inline bool slab_grid_has(slab_grid g, uintptr_t x) { return (x - g.objects) * g.mul < g.limit; }
static inline bool slab_has_slot(const slab *s, uintptr_t x) { return slab_grid_has(slab_grid_of(s), x); }
/* (The grid's three words held apart, slab_grid_of, serve a loop over many
 * of a slab's objects whose stores the compiler cannot tell from the
 * record's: heap.c's drain.) */

/* Sets s's grid_mul and grid_limit for its slot and capacity. */
static inline void slab_grid_set(slab *s, uint64_t slot, uint32_t capacity) {
    if (slot > REGION_BYTES || capacity * slot > UINT32_MAX) return; /* limit 0 */
    s->grid_mul = UINT64_MAX / slot + 1 + ((slot & (slot - 1)) == 0); /* floor(2^64 / slot) + 1 */
    s->grid_limit = (uint32_t)(capacity * (slot * s->grid_mul)); /* at most capacity * slot */
}

/* Every slot of s free again, in address order, its objects unread and
 * its remote frees dropped (a region's reset); its touched mark (high)
 * stays. The caller keeps the counts. */
static inline void slab_forget_objects(slab *s) {
    s->used = s->bump = 0;
    s->free = NULL;
    __atomic_store_n(&s->thread_free, NULL, __ATOMIC_RELAXED);
}

/* Index of the slot that starts at ptr, or -1 if ptr is not a slot start. */
static inline long slab_slot_index(const slab *s, const void *ptr) {
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)s->objects;
    if ((uintptr_t)ptr < (uintptr_t)s->objects || off >= s->extent) return -1;
    size_t idx = slot_div(off, s->slot, s->recip);
    return idx * s->slot == off ? (long)idx : -1;
}

/* Whether ptr, within 2^32 of s's slot 0 (an address of s's region),
 * starts one of s's slots: the grid's multiply, the index only where the
 * grid says no (a slab whose limit is 0, or no slot there). */
static inline bool slab_starts_slot(const slab *s, const void *ptr) {
    return likely(slab_has_slot(s, (uintptr_t)ptr)) || slab_slot_index(s, ptr) >= 0;
}

/* Whether ptr, any address, starts one of s's slots handed out since the
 * slab was last empty (an index below bump): a pointer the grid places by
 * chance, 2^32 or more from slot 0, is past the bound. */
static inline bool slab_slot_handed(const slab *s, const void *ptr) {
    return slab_starts_slot(s, ptr) && (uintptr_t)ptr - (uintptr_t)s->objects < (uintptr_t)s->bump * s->slot;
}

/* The pointer lookup of every check: whether one of the slots of a live
 * slab starts at ptr, by the address map, with that slab's entry as read
 * copied to *got. Reads neither ptr's memory nor the slab's record, and the
 * map's leaves are never unmapped, so it is safe for any pointer while
 * slabs and regions come and go (the frees' lookup, region_holds and
 * slab_of, reads the record and is for pointers poolkit handed out).
 * slab_of_slot, slot_owner and the object layer's pointer check
 * (object.c) are it. */
static inline bool map_slot(const void *ptr, map_entry *got) {
    const map_entry *e = map_find(ptr);
    if (!e || !(got->slab = __atomic_load_n(&e->slab, __ATOMIC_ACQUIRE))) return false;
    got->pool = __atomic_load_n(&e->pool, __ATOMIC_RELAXED);
    got->objects = __atomic_load_n(&e->objects, __ATOMIC_RELAXED);
    got->slot = __atomic_load_n(&e->slot, __ATOMIC_RELAXED);
    got->capacity = __atomic_load_n(&e->capacity, __ATOMIC_RELAXED);
    got->recip = __atomic_load_n(&e->recip, __ATOMIC_RELAXED);
    /* Below slot 0 wraps past the slots. An entry's slot is 0 past 4 GiB
     * (slab_create), so within the slots recip is set: the multiply alone. */
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)got->objects;
    return off < (uintptr_t)got->slot * got->capacity && off * got->recip < got->recip;
}

/* The slab of pool whose object slot starts at ptr, or NULL for any other
 * pointer (map_slot: the checks of every pointer a slow path is given). */
static inline slab *slab_of_slot(const void *ptr, const struct pk_pool *pool) {
    map_entry e;
    return map_slot(ptr, &e) && e.pool == pool ? e.slab : NULL;
}

/* The pool of the slab whose place holds ptr, or NULL where there is none:
 * the region map's bit, then the slab's record found by masking (one load
 * each, no address map). Never reads ptr's memory; ptr need not start a
 * slot (slab_of_slot checks that). A slot that passes its region's first
 * REGION_BYTES (a huge one) is found from its first bytes only. */
static inline struct pk_pool *slab_pool_of(const void *ptr) {
    uintptr_t x = (uintptr_t)ptr;
    if (!region_holds(x)) return NULL;
    return __atomic_load_n(&slab_of(x)->pool, __ATOMIC_RELAXED);
}

/* The slab holding ptr's granule, or NULL; never touches ptr's memory. */
slab *slab_lookup(const void *ptr);

/* Counts the slabs taken out of the map (slab_destroy): what a lookup
 * found holds for as long as it has not changed (object_internal.h keeps
 * the last object slab a thread found this way). */
extern uint64_t map_generation;

/* The pool with an object slot starting at ptr, or NULL (map_slot). */
static inline struct pk_pool *slot_owner(const void *ptr) {
    map_entry e;
    return map_slot(ptr, &e) ? e.pool : NULL;
}
/* The same, out of line. */
struct pk_pool *slab_owner(const void *ptr);

/* ---- fresh slots (slab.c) ---- */

/* What carving needs of the pool, copied so slab.c needs no pool. */
typedef struct carve_how {
    size_t link_off;   /* where a free object keeps its link */
    uintptr_t secret;  /* hardened pools: links are encoded (harden.h); else 0 */
    bool encode;       /* hardened */
    bool shuffle;      /* PK_POOL_SHUFFLE: fresh slots in an unpredictable order */
    bool plain;        /* nothing per object: a tight loop of links */
    void (*construct)(void *obj, void *arg); /* run on each fresh slot, or NULL */
    void *arg;
    size_t size;       /* object bytes (for the tools' view while constructing) */
    bool scrub;        /* zero each slot never touched in this slab, where its
                          place held another slab's bytes: the hardened front
                          end's class pools, whose checks take a free slot
                          for zero (alloc_harden.c) */
} carve_how;

/* Links up to k never-used slots of s (from bump) onto *list in address
 * order, constructing them if the pool has a construct hook; shuffled pools
 * (SHUFFLE) take slots never touched before in a random order drawn from
 * *rng. Returns how many; counts them in s->used. */
size_t slab_carve(const carve_how *how, uint64_t *rng, slab *s, size_t k, void **list);

/* ---- slab lists (slab.c) ---- */

void slab_list_push(slab_list *l, slab *s, slab_list_id id);
/* At the back (a heap's full list is looked at from the front). */
void slab_list_append(slab_list *l, slab *s, slab_list_id id);
void slab_list_remove(slab_list *l, slab *s);

#endif
