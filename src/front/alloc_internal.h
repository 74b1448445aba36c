/* The size-class front end's private parts (alloc.c, alloc_large.c,
 * alloc_harden.c, blockheap.c), and the one place it asks the core which
 * pool a pointer belongs to.
 *
 * The front end sits above the pools (layer 5, with the object layer): it
 * calls the pools' public calls and their slow entries, and reads the
 * core's state only through alloc_slab_of below and the pool's short free
 * path it hands the record to (pool_free.h), so that a change in how the
 * core finds an object's slab changes that function alone.
 *
 * Within front/ the files call one way too (src/layers.txt; the layers.*
 * tests check the compiled objects), lowest first: alloc_classes.c (the
 * class table) and alloc_checks.c (the checks both kinds of hardened block
 * share); alloc_large.c; alloc_harden.c; alloc.c; blockheap.c (pk_heap,
 * made of alloc.c's calls); alloc_forms.c and alloc_variants.c. Where a
 * lower one must make an upper one act, the upper one hands it a function:
 * alloc.c its re-entry guard to hard_setup, blockheap.c pk_realloc's resize
 * of a heap's block (alloc_heap_resize_with).
 */
#ifndef POOLKIT_ALLOC_INTERNAL_H
#define POOLKIT_ALLOC_INTERNAL_H

#include <poolkit/alloc.h>

#include "pool/pool_internal.h"
#include "front/alloc_object.h"

/* ---- classes ---- */

/* Classes 0-8 are 8, 16, 32, 48, ..., 128 bytes; then four per doubling,
 * (5..8) * 2^(b-2) for each b from 7: 160, 192, 224, 256, 320, ... */
#define ALLOC_STEP_CLASSES 9   /* 8, then 16 to 128 by 16 */
#define ALLOC_PER_DOUBLING 4
_Static_assert(PK__ALLOC_CLASSES == ALLOC_STEP_CLASSES + ALLOC_PER_DOUBLING * (18 - 7),
               "the classes run from 8 bytes to 2^18 (PK_ALLOC_CLASS_MAX)");
_Static_assert(PK_ALLOC_CLASS_MAX == (size_t)1 << 18, "the last class is PK_ALLOC_CLASS_MAX");
/* alloc.h: "at most 25% of a request is rounded away above 128 bytes": a
 * class over 128 is 1/ALLOC_PER_DOUBLING of its power of two above the one
 * before. */
_Static_assert(100 / ALLOC_PER_DOUBLING == 25, "four classes per doubling: steps of a quarter");

/* (size + 7) / 8 to the class, for sizes up to PK__ALLOC_SMALL_MAX (alloc_classes.c). */
extern const unsigned char alloc_small_class[PK__ALLOC_SMALL_MAX / 8 + 1];

/* The class of size (1 <= size <= PK_ALLOC_CLASS_MAX). */
static inline size_t alloc_class_of(size_t size) {
    if (size <= PK__ALLOC_SMALL_MAX) return alloc_small_class[(size + 7) >> 3];
    unsigned b = (unsigned)(sizeof(size_t) * 8 - 1) - (unsigned)__builtin_clzl(size - 1);
    return ALLOC_STEP_CLASSES + (size_t)(b - 7) * ALLOC_PER_DOUBLING + (((size - 1) >> (b - 2)) & 3);
}

/* The bytes of class ci. */
static inline size_t alloc_class_size(size_t ci) {
    if (ci < ALLOC_STEP_CLASSES) return ci ? ci * 16 : 8;
    size_t k = ci - ALLOC_STEP_CLASSES;
    return (5 + k % ALLOC_PER_DOUBLING) << (k / ALLOC_PER_DOUBLING + 5);
}

/* ---- the lookup ---- */

/* The record of the slab whose place holds ptr, or NULL where no region
 * is mapped: the region map's bit, then the record found by masking the
 * address (region.h), without a check that ptr starts a slot. Never reads
 * ptr's memory. The free path's one question to the core: pk_free asks it
 * once and hands the record down. */
static inline slab *alloc_slab_of(const void *ptr) {
    uintptr_t x = (uintptr_t)ptr;
    return region_holds(x) ? slab_of(x) : NULL;
}

/* The pool whose slab holds ptr's address (s, alloc_slab_of(ptr)), or
 * NULL where there is no slab. A slab's place is its alone except past the
 * end of a slab whose slot outgrows a place (one slot a slab, mapped to the
 * page), where another mapping may start; alloc_owns says whether ptr is
 * really a slot. */
static inline pk_pool *alloc_pool_in(const slab *s) { return __atomic_load_n(&s->pool, __ATOMIC_RELAXED); }
static inline pk_pool *alloc_pool_of(const void *ptr) {
    slab *s = alloc_slab_of(ptr);
    return s ? alloc_pool_in(s) : NULL;
}

/* Whether p, alloc_pool_of(ptr), is a class pool (not NULL). */
static inline bool alloc_is_class(const pk_pool *p) { return p && (p->flags & POOL_SIZE_CLASS); }

/* Whether p's slabs span whole granules, so that no other slab shares one
 * and the record found from a pointer's address is its slab's. */
static inline bool alloc_whole_granules(const pk_pool *p) {
    return (p->geo.span & (((size_t)1 << GRANULE_SHIFT) - 1)) == 0;
}
/* Whether p, alloc_pool_of(ptr), is a class pool and ptr may be one of its
 * objects: the grid is checked only where ptr's granule may be shared, the
 * rest by the pool's own free path. */
static inline bool alloc_owns(const pk_pool *p, const void *ptr) {
    if (!alloc_is_class(p)) return false;
    return alloc_whole_granules(p) || slab_owner(ptr) == p;
}

/* Whether p, alloc_pool_of(ptr), is one of a pk_heap's class pools. */
static inline bool alloc_is_heap(const pk_pool *p) { return p && (p->flags & POOL_HEAP); }

/* alloc_from_pool (alloc_object.h) serves a pk_heap's pools too. */
/* pk_pool_create and pk_pool_destroy with that guard raised, for a heap's
 * pools: what they call may allocate. */
pk_pool *alloc_pool_create(const pk_pool_config *c);
void alloc_pool_destroy(pk_pool *p);
/* The first class from ci on whose size is a multiple of align, or
 * PK__ALLOC_CLASSES if none. Its slots are aligned to align up to
 * SLOT_ALIGN_MAX; past it, only where its pool says so (alloc_pool_aligns). */
size_t alloc_class_aligned(size_t ci, size_t align);
/* pk_alloc and pk_aligned_alloc past their inline paths, with the site a
 * report names (the C++ operators' own caller, not the operator). */
void *alloc_at(size_t size, void *caller);
void *aligned_alloc_at(size_t align, size_t size, void *caller);

/* Whether every slot of class pool p is aligned to align (a power of two
 * from alloc_class_aligned). Past a page, as p's slabs lay their slots
 * out: a power-of-two class up to SLAB_BYTES without a debug pool's
 * redzone. Such blocks share slabs rather than take a mapping each, which
 * Linux bounds (vm.max_map_count): a program with that many live failed. */
static inline bool alloc_pool_aligns(const pk_pool *p, size_t align) {
    return align <= SLOT_ALIGN_MAX || slab_slot_align(&p->geo) >= align;
}

/* ---- alloc_large.c: blocks over PK_ALLOC_CLASS_MAX, each its own mapping ---- */

/* A set of blocks that can be freed together (a pk_heap's), all zero to
 * start with; its words belong to alloc_large.c. */
typedef struct large_set {
    uintptr_t *ptrs; /* the blocks' addresses */
    size_t n, cap;
    size_t bytes;    /* their mappings' lengths, summed */
} large_set;

/* A block of size bytes aligned to align (a power of two; at most a page
 * means a page), zeroed with zero; NULL with errno ENOMEM. */
void *large_alloc(size_t size, size_t align, bool zero);
/* large_alloc's block, a member of set until it is freed (set NULL: none). */
void *large_alloc_in(large_set *set, size_t size, size_t align, bool zero);
/* large_alloc_in with the guard raised, after the purge's poll (alloc.c);
 * a call from inside the library gets a bootstrap block. */
void *alloc_large_in(large_set *set, size_t size, size_t align, bool zero);
/* The blocks of set and their mappings' bytes, under the table's lock. */
void large_set_count(const large_set *set, size_t *blocks, size_t *bytes);
/* The set a live block belongs to, or NULL (none, or no live block). */
large_set *large_set_of(const void *ptr);
/* Frees every block of set and the set's own array; set is empty after.
 * No other call may use the set meanwhile. */
void large_free_set(large_set *set);
/* Whether ptr is a live block; if so, gives it back. */
bool large_free(void *ptr);
/* Whether ptr is a live block; if so, *usable is its length from ptr. */
bool large_usable(const void *ptr, size_t *usable);
/* Whether ptr is a live block, not a guarded one, whose mapping serves
 * size (policy_grow_serves): resized to size, it stays as it is; answered
 * with no lock for the blocks this thread last found so (false for any
 * other). large_resize remembers the blocks it leaves where they are, the
 * last LARGE_FITS_KEPT of them, each with the sizes its length serves,
 * beside the count of entries taken out of the table (a free or a resize;
 * a guarded block leaving the last freed) when they were found. While that
 * count has not moved, their lengths are the same: only a take changes a
 * block, its own free or resize, done by this thread or by another that
 * the program has synchronized with since (so the count's new value is
 * seen), after which its address may name a new block. For buffers grown
 * a few bytes at a time. */
#define LARGE_FITS_KEPT 4
typedef struct large_fit {
    uintptr_t ptr;
    size_t min, max; /* the sizes its mapping's length serves */
} large_fit;
typedef struct large_fits_kept {
    large_fit fit[LARGE_FITS_KEPT];
    size_t takes;  /* large_takes when they were found */
    unsigned next; /* the one the next block found replaces */
} large_fits_kept;
extern size_t large_takes;
extern __thread large_fits_kept large_fitted __attribute__((tls_model("initial-exec")));
static inline bool large_fits(const void *ptr, size_t size) {
    const large_fits_kept *k = &large_fitted;
    if (likely(k->takes == __atomic_load_n(&large_takes, __ATOMIC_ACQUIRE)))
        for (unsigned i = 0; i < LARGE_FITS_KEPT; i++)
            if (k->fit[i].ptr == (uintptr_t)ptr) return size - k->fit[i].min <= k->fit[i].max - k->fit[i].min;
    return false;
}
/* Whether ptr is a live block, not a guarded one (nor, with sets_leave,
 * one of a heap's set), whose mapping serves size (policy_grow_serves):
 * resized to size, it stays as it is. Takes no lock (a sequence count):
 * any number of blocks, resized by any number of threads, are answered
 * so; false also where a change to the table ran meanwhile (the caller
 * asks large_resize then). */
bool large_serves(const void *ptr, size_t size, bool sets_leave);
/* ptr resized to size bytes: in place or moved by the system with its
 * contents, one lock taken where it stays; NULL with errno ENOMEM (ptr
 * unchanged). *mine false, NULL returned and errno untouched, where ptr is
 * no live block, or with sets_leave one of a heap's set (its heap resizes
 * it). */
void *large_resize(void *ptr, size_t size, bool sets_leave, bool *mine);
/* large_resize of a live block (ENOMEM for any other); a heap's stays in
 * its set. */
void *large_realloc(void *ptr, size_t size);
/* Blocks live now, their bytes, and the most bytes at once. */
typedef struct large_stats {
    size_t blocks, bytes, peak_bytes;
} large_stats;
void large_stats_get(large_stats *out);

/* alloc.c: pk_alloc's classes whose pool has been made (not pk_new's own). */
size_t alloc_classes_made(void);
/* alloc.c: a pk_heap's block resized in its heap: p is the heap's class
 * pool holding ptr, or NULL for a block of a heap's large set. blockheap.c
 * registers its resize before it makes its first heap; pk_realloc calls it
 * for any heap's block. */
typedef void *(*alloc_heap_resize_fn)(const pk_pool *p, void *ptr, size_t size);
void alloc_heap_resize_with(alloc_heap_resize_fn fn);
/* alloc.c: the front end's mode, default or hardened (alloc_harden.c),
 * read from the options once, by alloc_mode_read. */
enum { ALLOC_MODE_UNREAD, ALLOC_MODE_DEFAULT, ALLOC_MODE_HARDENED };
extern int alloc_mode;
bool alloc_mode_read(void);
/* Whether the front end is hardened; the slow paths ask it (default mode
 * pays one compare there, and nothing on the inline paths, which the
 * hardened class pools leave to the library: pool.c, choose_path). */
static inline bool alloc_hardened(void) {
    int m = __atomic_load_n(&alloc_mode, __ATOMIC_ACQUIRE);
    if (likely(m == ALLOC_MODE_DEFAULT)) return false;
    return m == ALLOC_MODE_HARDENED || alloc_mode_read();
}

/* ---- alloc_harden.c: the hardened front end (POOLKIT_HARDENED=1) ---- */

/* Whether class pool p's blocks are the hardened front end's. */
static inline bool alloc_hard(const pk_pool *p) { return pool_hard_front(p); }

/* Sets the secret bytes up and asks the fault handler to ask
 * explain_fault; once, before the first hardened block. guarded is alloc.c's
 * re-entry guard (fn(arg) with the thread's depth raised), for the work
 * this file starts outside any call of the front end's (a thread's exit). */
void hard_setup(void (*guarded)(void (*fn)(void *), void *arg));
/* The class whose hardened block holds size bytes and the check word. */
static inline size_t hard_class_of(size_t size) {
    size_t want = size + HARD_TAIL < HARD_MIN_SLOT ? HARD_MIN_SLOT : size + HARD_TAIL;
    return alloc_class_of(want);
}
/* A block of n bytes from class pool p (class ci), checked, its slack and
 * word set: the calling thread's ready block of the class first, else the
 * pool's; NULL with errno ENOMEM. Caller has raised depth. */
void *hard_class_alloc(pk_pool *p, size_t ci, size_t n, void *caller);
/* Checks ptr (of class pool p), zeroes it and quarantines it; reports a
 * double free, an overflow, an underflow. Caller has raised depth. */
void hard_class_free(pk_pool *p, void *ptr, void *caller);
/* hard_class_free of ptr, whose slab's record s the caller found (the
 * slab that holds ptr's address: p's spans are whole granules). */
void hard_class_free_in(pk_pool *p, slab *s, void *ptr, void *caller);
/* Block ptr of hardened class pool p grown to size in place, where size's
 * class is p's (below HARD_GUARDED_MIN): the checks of its free first
 * (reported there), then its check word says size (true); false for a
 * shrink, a size of another class, or no slot's start. */
bool hard_class_grow(pk_pool *p, void *ptr, size_t size);
/* The bytes asked for of a hardened class block. */
size_t hard_class_request(const pk_pool *p, const void *obj);
/* Whether obj, a slot of hardened class pool p, holds a block whose check
 * word checks: its form in *form, its size in *n. */
bool hard_class_form(const pk_pool *p, const void *obj, unsigned *form, size_t *n);
/* The check word of obj, a block of n bytes of hardened class pool p,
 * rewritten with form. */
void hard_class_set_form(const pk_pool *p, void *obj, size_t n, unsigned form);
/* A distinct pointer to no bytes (a no-access page), or NULL. */
void *hard_zero_block(void);
bool hard_zero_owns(const void *ptr);
/* A free (call names it) of ptr if it lies in the zone of blocks of size 0:
 * true, the block freed, or reported (freed already, or no block's
 * address); false for any other pointer. */
bool hard_zero_free(const void *ptr, const char *call);

/* alloc_large.c's hardened blocks: size bytes between two no-access pages,
 * in a mapping of room bytes or more (at least size), the rest of the last
 * page check bytes; caller is named in a fault's report. NULL with errno
 * ENOMEM. */
void *large_alloc_guarded(size_t size, size_t room, void *caller);
/* The pools' sweep (pool_sweep_with): the freed guarded blocks' pages kept
 * resident go back once none was freed for the purge delay. */
void large_warm_tick(uint64_t now);
/* The freed guarded blocks' bytes kept resident (pk_stats_get's retained). */
size_t large_warm_bytes(void);
/* A live guarded block of the malloc form grown to size in place, where
 * its mapping holds it: its check bytes so far checked (reported if
 * changed), size its new size (true); false for any other pointer or
 * size, and for a shrink. */
bool large_grow_guarded(void *ptr, size_t size);
/* A guarded block shrunk to size bytes (less than its own): a new guarded
 * block at another address whose pages are the old one's first pages,
 * moved, not copied (os_move_pages_keep); the old one freed (its check
 * bytes checked, no access left), as a shrink that moves it would. NULL
 * where ptr is no such block, no more guards may be held
 * (os_guard_room) or the system refuses the move: nothing changed
 * then. */
void *large_shrink_guarded(void *ptr, size_t size, void *caller);
/* A live guarded block's form and size; false for any other pointer. */
bool large_form(const void *ptr, unsigned *form, size_t *size);
/* A live guarded block's form set. */
void large_set_form(const void *ptr, unsigned form);
/* A fault at addr in a guarded block's pages (live or freed) reported
 * (never returns then); false when addr is none of theirs. */
bool large_explain_fault(int sig, const void *addr);

#endif
