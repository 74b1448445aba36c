/* Where slabs lie (region.c): regions, the region map and the address map.
 *
 * A region is REGION_BYTES aligned to REGION_BYTES (policy.h). Its first
 * SLAB_BYTES hold the region's header (struct region) and the records
 * (struct slab, slab.h) of its slabs, RECORD_BYTES apart in the array of
 * the region's color (RECORD_COLORS): the slab at region + i * SLAB_BYTES
 * is described by record i, i from 1. So an object's record is its address
 * with the low REGION_SHIFT bits replaced by the color's array and the
 * slab's index times RECORD_BYTES (slab_of): mimalloc's segments and
 * pages. A slot that does not fit a place gets a region of its own (huge:
 * one slab, at region + SLAB_BYTES, as long as the slot needs) or, once
 * HUGE_OWN_MAX such regions are mapped (policy.h), a run of places in a
 * shared region (up to REGION_RUN_BYTES: its slab spans them, its record
 * is the first place's, the run's other records stay zero), so every slot
 * starts within its region's first REGION_BYTES and has a record.
 *
 * The region map keeps one bit per REGION_BYTES of the address space: set
 * while a region is mapped there, so a pointer is checked before its
 * record is read (region_holds). The address map keeps one entry per
 * GRANULE_SHIFT granule: which slab and pool, and the slots' geometry, so
 * any pointer at all is placed without reading its memory or its slab's
 * record (pk_pool_owner, the reports); it changes only when a slab comes
 * or goes.
 *
 * A slab's place, once its slab is destroyed, stays backed for the purge
 * delay (within RETAIN_BYTES) and goes first to the next slab made, of any
 * pool: a pool per request reuses warm pages without a system call. A
 * region with no slab and no place kept goes back to the system.
 */
#ifndef POOLKIT_REGION_H
#define POOLKIT_REGION_H

#include "base/internal.h"
#include "base/policy.h"

struct slab;
struct pk_pool;

#define GRANULE_SHIFT 16 /* the address map's unit */
_Static_assert(SLAB_BYTES == (size_t)1 << GRANULE_SHIFT,
               "one address-map entry per slab: an entry names one slab");
#define REGION_SLABS (REGION_BYTES / SLAB_BYTES)
#define RECORD_BYTES 256
#define RECORD_SHIFT 8
#define REGION_INERT 64 /* zero bytes that start a region's header (slab.h asserts what they cover) */
/* RECORD_COLORS: a region's records lie in one of RECORD_COLORS arrays of
 * its header's place, the one its address's low region bits name, so that
 * the records of a slab's place in different regions (whose addresses
 * agree in every bit below REGION_SHIFT) fall in different cache sets: with
 * one array, a thread freeing at random over many regions met the record's
 * line outside the second-level cache on many of its frees, that set's ways
 * taken by the other regions' records of the same place (docs/results.md,
 * "Records in colors"). */
#define RECORD_COLORS 4
#define RECORD_ARRAY (REGION_SLABS * RECORD_BYTES) /* one color's records */
_Static_assert(RECORD_BYTES == (size_t)1 << RECORD_SHIFT, "a record's index is its offset shifted");
_Static_assert(RECORD_COLORS * RECORD_ARRAY == SLAB_BYTES, "a region's records, in any color, fit its first slab's place");
_Static_assert(REGION_SLABS == (size_t)1 << (REGION_SHIFT - GRANULE_SHIFT),
               "the color's bits follow the place's in an address, as the array's follow the record's in an offset");
_Static_assert(REGION_SLABS <= 64, "a region's places are the bits of a word");
_Static_assert(SLAB_BYTES == 64 * 1024 && SLAB_BYTES / 64 == 1024 && 4096 / RECORD_BYTES == 16 &&
                   REGION_BYTES == 4 * 1024 * 1024 && REGION_SLABS - 1 == 63,
               "policy.h's comment on slabs and regions names these figures");

/* ---- the region map ---- */

#define REGION_MAP_BITS 48 /* the user address space covered */
extern uint64_t region_bits[((size_t)1 << (REGION_MAP_BITS - REGION_SHIFT)) / 64];

/* Whether a region is mapped at x's region: its records may be read. */
static inline bool region_holds(uintptr_t x) {
    uintptr_t word = x >> (REGION_SHIFT + 6); /* its bit's word: past the map for any address it does not cover */
    if (word >= sizeof region_bits / sizeof region_bits[0]) return false;
    return (__atomic_load_n(&region_bits[word], __ATOMIC_RELAXED) >> ((x >> REGION_SHIFT) & 63)) & 1;
}

/* The record of the slab whose place holds x, x in a mapped region: in its
 * color's array (RECORD_COLORS), the place's index times RECORD_BYTES, both
 * from one shift of the address (its header's place, index 0, reads as a
 * record of no slab: the region's own header, whose first REGION_INERT
 * bytes are zero, or zero bytes). */
static inline struct slab *slab_of(uintptr_t x) {
    uintptr_t base = x & ~(uintptr_t)(REGION_BYTES - 1);
    return (struct slab *)(base + ((x >> (GRANULE_SHIFT - RECORD_SHIFT)) & ((RECORD_COLORS * REGION_SLABS - 1) << RECORD_SHIFT)));
}

/* ---- places ---- */

/* The longest slab a run of places holds: at most a quarter of a region's
 * places, so a region holds three such runs and small slabs beside them;
 * the size classes' largest slot (PK_ALLOC_CLASS_MAX) and a typed pool's
 * 1 MiB objects fit. */
#define REGION_RUN_BYTES ((size_t)16 * SLAB_BYTES)
_Static_assert(REGION_RUN_BYTES / SLAB_BYTES <= (REGION_SLABS - 1) / 3, "three runs fit a region's places");
_Static_assert(REGION_RUN_BYTES == (size_t)1 << 20, "the comment above names 1 MiB");

/* The longest run of set bits in mask (a region's free places), or
 * REGION_RUN_MAX if it is at least that long: the run lists' index
 * (region.c), so found in a few steps however free the region. f[k] has
 * bit i set where bits i .. i + 2^k - 1 of mask all are, and the run is
 * built from the longest such step down. */
#define REGION_RUN_MAX (REGION_RUN_BYTES / SLAB_BYTES)
static inline uint32_t region_longest_run(uint64_t mask) {
    _Static_assert(REGION_RUN_MAX == 16, "f[4] says a run of REGION_RUN_MAX");
    uint64_t f[5] = {mask};
    for (int k = 1; k < 5; k++) f[k] = f[k - 1] & (f[k - 1] >> (1u << (k - 1)));
    if (f[4]) return REGION_RUN_MAX;
    uint64_t starts = mask; /* where a run of n set bits starts */
    uint32_t n = 0;
    for (int k = 3; k >= 0; k--) {
        uint64_t longer = starts & (f[k] >> n);
        if (longer) {
            starts = longer;
            n += 1u << k;
        }
    }
    return n;
}

/* The places a slab of span bytes (at most REGION_RUN_BYTES) takes. */
static inline size_t region_places(size_t span) { return (span + SLAB_BYTES - 1) / SLAB_BYTES; }

/* A record for a new slab of span bytes, all zero, and in *base the slab's
 * first byte (a place of a region; for span > SLAB_BYTES a huge region's,
 * or a run of places: HUGE_OWN_MAX); NULL with errno ENOMEM. The
 * slab's memory is zero unless a place of it was kept (*warm set). */
struct slab *region_take(size_t span, bool *warm, char **base);
/* The places of s, a slab of span bytes, back: kept backed for the purge
 * delay with `keep` (within RETAIN_BYTES), else given back now. Its record
 * must not be used afterwards. */
void region_give(struct slab *s, size_t span, bool keep);
/* Places kept past the delay go back, and regions left empty (sweep.c's
 * sweep). */
void region_tick(uint64_t now_ms);
/* Every kept place back now; returns the bytes (pk_pool_release_cache). */
size_t region_release_kept(void);
/* Bytes of kept places. */
size_t region_kept_bytes(void);

/* ---- the address map ---- */

#define MAP_L1_BITS 16
#define MAP_L2_BITS 16
_Static_assert(GRANULE_SHIFT + MAP_L2_BITS + MAP_L1_BITS == REGION_MAP_BITS, "both maps cover one space");
typedef struct map_entry {
    struct slab *slab;
    struct pk_pool *pool;
    char *objects;
    uint64_t recip;
    uint32_t slot, capacity;
} map_entry;
extern map_entry *map_l1[1u << MAP_L1_BITS];

/* The map entry of ptr's granule, or NULL where no leaf was ever made. */
static inline map_entry *map_find(const void *ptr) {
    uintptr_t a = (uintptr_t)ptr, g = a >> GRANULE_SHIFT;
    if (a >> REGION_MAP_BITS) return NULL;
    map_entry *leaf = __atomic_load_n(&map_l1[g >> MAP_L2_BITS], __ATOMIC_ACQUIRE);
    return leaf ? &leaf[g & ((1u << MAP_L2_BITS) - 1)] : NULL;
}
/* Records [start, end) as e (e->slab NULL: forgets them); false if a leaf
 * could not be mapped. */
bool map_set(uintptr_t start, uintptr_t end, const map_entry *e);

/* Fork handlers: the regions' and maps' lock (a leaf). */
void region_fork_lock(void);
void region_fork_unlock(void);

#endif
