/* Slabs: one aligned mapping of equal-sized slots, and its record (struct
 * slab) apart, packed with other slabs' records (slab.c).
 *
 * Invariants:
 * - A slab's mapping starts at an address aligned to its pool's slab_align
 *   (at least one 64 KiB granule), and every slot starts inside the first
 *   slab_align bytes.
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
 * - The address map records which 64 KiB granules belong to which slab, so
 *   any pointer at all can be looked up without touching its memory
 *   (pk_pool_owner, foreign-pointer checks).
 */
#ifndef POOLKIT_SLAB_H
#define POOLKIT_SLAB_H

#include "internal.h"

#define GRANULE_SHIFT 16                 /* the address map's unit: 64 KiB */
/* The most alignment a slot's placement gives (a page): a pool's align is
 * at most this too (pk_pool_config). */
#define SLOT_ALIGN_MAX 4096

struct pk_pool;

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
struct heap;

typedef struct slab {
    struct pk_pool *pool;
    struct heap *owner;       /* the thread heap that owns it, or NULL: the pool's */
    void *thread_free;        /* objects freed by threads other than the owner (atomic push) */
    struct slab *prev, *next; /* in the list named by `list` */
    struct slab *all_prev, *all_next; /* every slab of the pool, under its lock */
    char *base;               /* the mapping: slab_align-aligned, span bytes */
    char *objects;            /* slot 0: base, or past a debug pool's live bits */
    size_t span;              /* bytes mapped from the start of the slab */
    size_t slab_align;        /* the mapping's alignment */
    bool guarded;             /* its last page is a no-access guard page */
    bool lost;                /* on SLAB_LOST (fork child): set once, never cleared */
    bool adopted;             /* taken over on a free from a thread gone, until it empties */
    uint32_t capacity;        /* slots in this slab */
    uint32_t used;            /* slots outside the slab */
    uint32_t bump;            /* slots handed out since the slab was last empty */
    uint32_t high;            /* the most bump has been: slots ever touched */
    uint32_t list;            /* slab_list_id */
    uint32_t empty_tick;      /* the pool's purge tick when the slab last became empty */
    uint32_t disorder;        /* owner's frees not next to the one before (heap.c) */
    void *free;               /* freed slots, linked through the pool's link word */
    uint64_t *live_bits;      /* debug pools: one bit per slot, set while handed out */
    void **sites;             /* debug pools: site_words per slot (sites.h), or NULL */
    size_t sites_bytes;       /* mapped for sites */
} slab;

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
    size_t slab_align; /* power of two; the mask that finds a slab */
    size_t span;       /* bytes mapped per slab (<= slab_align) */
    size_t header;     /* bytes before slot 0 */
    uint32_t capacity; /* slots per slab */
    bool debug_bits;   /* keep live_bits */
    size_t guard;      /* bytes of no-access guard page at the end of the span (0 = none) */
    uint64_t recip;    /* 2^64 / slot rounded up: offset / slot by a multiply; 0 if slot >= 2^32 */
    size_t site_words; /* debug pools: words of call sites per slot (sites.h); 0 = none */
} slab_geometry;

/* Chooses the slab layout for slots of `slot` bytes aligned to `align`
 * (placed as the invariant above says).
 * Small slots share a slab of at least 64 KiB; a slot over 64 KiB gets a slab
 * of its own sized to a page past the object. With `guard`, the span's last
 * page is left out of the slots and made no-access, so a linear overflow
 * past the slab faults before it reaches the next one. False if it cannot
 * fit. */
bool slab_geometry_for(size_t slot, size_t align, bool debug_bits, bool guard, slab_geometry *g);

/* Maps a new empty slab and records it in the address map. NULL + ENOMEM. */
slab *slab_create(struct pk_pool *pool, const slab_geometry *g);
/* Removes the slab from the address map and unmaps it, or, with `cache`,
 * retains it for the purge delay for the next slab_create (retain.c). */
void slab_destroy(slab *s, bool cache);

/* The address map (slab.c): a two-level radix table over 64 KiB granules;
 * each entry names the granule's slab and copies what lookups need, so
 * nothing reads the slab itself. Readers use atomic loads. */
#define MAP_L1_BITS 16
#define MAP_L2_BITS 16
#define MAP_ADDRESS_BITS (GRANULE_SHIFT + MAP_L2_BITS + MAP_L1_BITS) /* 48 */
typedef struct map_entry {
    slab *slab;
    struct pk_pool *pool;
    char *objects;
    uint64_t recip;
    uint32_t slot, capacity;
} map_entry;
extern map_entry *map_l1[1u << MAP_L1_BITS];

/* The map entry of ptr's granule, or NULL where no leaf was ever made. */
static inline map_entry *map_find(const void *ptr) {
    uintptr_t a = (uintptr_t)ptr, g = a >> GRANULE_SHIFT;
    if (a >> MAP_ADDRESS_BITS) return NULL;
    map_entry *leaf = __atomic_load_n(&map_l1[g >> MAP_L2_BITS], __ATOMIC_ACQUIRE);
    return leaf ? &leaf[g & ((1u << MAP_L2_BITS) - 1)] : NULL;
}

/* Whether off, an offset from slot 0 below 2^32 slots' worth, is a whole
 * number of slots: with recip = 2^64 / slot rounded up, off is a multiple
 * of slot exactly when off * recip wraps below recip (a multiply, where a
 * division costs tens of cycles on every free). */
static inline bool slot_on_grid(uint64_t off, uint64_t slot, uint64_t recip) {
    return recip ? off * recip < recip : off % slot == 0;
}

/* The slab of pool whose object slot starts at ptr, or NULL for any other
 * pointer; reads neither ptr's memory nor the slab's (the free paths' check
 * of every pointer they are given). */
static inline slab *slab_of_slot(const void *ptr, const struct pk_pool *pool) {
    map_entry *e = map_find(ptr);
    slab *s = e ? __atomic_load_n(&e->slab, __ATOMIC_ACQUIRE) : NULL;
    if (!s || __atomic_load_n(&e->pool, __ATOMIC_RELAXED) != pool) return NULL;
    uintptr_t first = (uintptr_t)__atomic_load_n(&e->objects, __ATOMIC_RELAXED);
    uintptr_t slot = __atomic_load_n(&e->slot, __ATOMIC_RELAXED);
    uintptr_t count = __atomic_load_n(&e->capacity, __ATOMIC_RELAXED);
    uint64_t recip = __atomic_load_n(&e->recip, __ATOMIC_RELAXED);
    uintptr_t a = (uintptr_t)ptr, off = a - first;
    if (!slot || a < first || off >= slot * count) return NULL;
    if (!slot_on_grid(off, slot, recip)) return NULL;
    return s;
}

/* The slab holding ptr's granule, or NULL; never touches ptr's memory. */
slab *slab_lookup(const void *ptr);

/* Counts the slabs taken out of the map (slab_destroy): what a lookup
 * found holds for as long as it has not changed (object_internal.h keeps
 * the last object slab a thread found this way). */
extern uint64_t map_generation;

/* The pool with an object slot starting at ptr, or NULL; reads neither ptr's
 * memory nor the slab's, so it is safe while slabs come and go. Inline for
 * the object layer's release, which asks it of every pointer. */
static inline struct pk_pool *slot_owner(const void *ptr) {
    map_entry *e = map_find(ptr);
    if (!e || !__atomic_load_n(&e->slab, __ATOMIC_ACQUIRE)) return NULL;
    struct pk_pool *pool = __atomic_load_n(&e->pool, __ATOMIC_RELAXED);
    uintptr_t first = (uintptr_t)__atomic_load_n(&e->objects, __ATOMIC_RELAXED);
    uintptr_t slot = __atomic_load_n(&e->slot, __ATOMIC_RELAXED);
    uintptr_t count = __atomic_load_n(&e->capacity, __ATOMIC_RELAXED);
    uint64_t recip = __atomic_load_n(&e->recip, __ATOMIC_RELAXED);
    uintptr_t a = (uintptr_t)ptr, off = a - first;
    if (a < first || off >= slot * count || !slot_on_grid(off, slot, recip)) return NULL;
    return pool;
}
/* The same, out of line. */
struct pk_pool *slab_owner(const void *ptr);

/* off / slot for off, slot < 2^32, with recip = 2^64 / slot rounded up
 * (exact in that range): a multiply instead of a division, which on the free
 * path of every object would cost tens of cycles. */
__extension__ typedef unsigned __int128 u128;
static inline size_t slot_div(uint64_t off, uint64_t slot, uint64_t recip) {
    return recip ? (size_t)(((u128)recip * off) >> 64) : (size_t)(off / slot);
}

/* Index of the slot that starts at ptr, or -1 if ptr is not a slot start. */
static inline long slab_slot_index(const slab *s, const void *ptr, const slab_geometry *g) {
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)s->objects;
    if ((uintptr_t)ptr < (uintptr_t)s->objects || off >= (uintptr_t)s->capacity * g->slot) return -1;
    size_t idx = slot_div(off, g->slot, g->recip);
    return idx * g->slot == off ? (long)idx : -1;
}

void slab_list_push(slab_list *l, slab *s, slab_list_id id);
/* At the back (a heap's full list is looked at from the front). */
void slab_list_append(slab_list *l, slab *s, slab_list_id id);
void slab_list_remove(slab_list *l, slab *s);

#endif
