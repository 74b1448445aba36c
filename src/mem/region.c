/* Regions, the region map and the address map (region.h says what each
 * is). Everything here changes under one lock, a leaf: the regions' lists
 * and places, both maps' writes. Readers of the maps use atomic loads and
 * may see a slab half-recorded while it comes or goes, which can give a
 * wrong answer for a pointer into that slab but never a crash; the address
 * map's leaves are never freed (2 MiB of address space each, touched pages
 * only). A record read through the region map (region_holds, slab_of) can
 * meet its region being unmapped by another thread only for a pointer into
 * a region with no slab left, which no live object is.
 */
#include "mem/region.h"
#include "base/adapt.h"
#include "base/bytes.h"
#include "base/track.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

uint64_t region_bits[((size_t)1 << (REGION_MAP_BITS - REGION_SHIFT)) / 64] PK_BIG_TABLE;
map_entry *map_l1[1u << MAP_L1_BITS] PK_BIG_TABLE;

static pthread_mutex_t lock PK_FORK_LOCK = PTHREAD_MUTEX_INITIALIZER;

/* The lists a region is on, each through a link of its own: the regions
 * with a kept place, and the run lists (the regions whose longest run of
 * free places is as long as the list's index, RUN_LISTS - 1 for that long
 * or longer; a region with no free place is on none), so that a run of k
 * places is found at the head of the first list from k on that has one,
 * however many regions hold a few free places apart (a live set of 80 KiB
 * blocks leaves one in each region), and a single place goes where the
 * free places are fewest in a row. */
enum { ON_KEPT, ON_RUN, ON_LISTS };
#define RUN_LISTS (REGION_RUN_BYTES / SLAB_BYTES + 1)

typedef struct region_link {
    struct region *prev, *next;
} region_link;

/* A region's header, at its start: record 0 of color 0's array (region.h,
 * RECORD_COLORS), unused by the other colors, whose record 0 stays zero.
 * Its first REGION_INERT bytes stay zero: a pointer into the header's place
 * finds record 0 as its slab's (slab_of), which must name no owner, no pool
 * and no slot (slab.h). */
typedef struct region {
    char inert[REGION_INERT];
    region_link on[ON_LISTS];
    uint64_t free;              /* places with no slab (bit i: place i) */
    uint64_t kept;              /* of those, the ones still backed (since: in their records) */
    size_t bytes;               /* mapped from the region's start */
    uint32_t run;               /* its run list (0: on none) */
    bool huge;                  /* one slab, as long as its slot needs */
} region;
_Static_assert(sizeof(region) <= RECORD_BYTES, "a region's header fits record 0 of color 0");

/* Places 1 .. REGION_SLABS - 1. */
#define ALL_PLACES (~(uint64_t)0 >> (64 - REGION_SLABS) & ~(uint64_t)1)

static region *kept_regions; /* under lock, as the run lists */
static region *run_lists[RUN_LISTS];
static size_t huge_mapped;    /* huge regions mapped (HUGE_OWN_MAX); written under lock */
/* Addresses of regions given back, tried first for the next ones, so a
 * program that maps and unmaps regions reuses its address space (and the
 * address map's leaves that cover it). Under lock. */
#define REUSE_ADDRESSES 1024
static uintptr_t reuse[REUSE_ADDRESSES] PK_BIG_TABLE;
static size_t reuse_n;
static size_t kept_bytes;    /* under lock; read without it */
/* IDLE_ADAPT (policy.h, base/adapt.h) for the kept places, in bytes of
 * places taken unbacked (fresh), both under lock. */
static idle_adapt placing;
static uint64_t fresh;

static region *region_at(uintptr_t x) { return (region *)(x & ~(uintptr_t)(REGION_BYTES - 1)); }
/* The color of r's records (region.h, RECORD_COLORS), and record i. */
static size_t color_of(const region *r) { return ((uintptr_t)r >> REGION_SHIFT) & (RECORD_COLORS - 1); }
static char *record_at(region *r, size_t i) { return (char *)r + color_of(r) * RECORD_ARRAY + i * RECORD_BYTES; }
static size_t place_of(const struct slab *s) { return ((uintptr_t)s & (RECORD_ARRAY - 1)) / RECORD_BYTES; }

/* When each kept place was kept (ms), in the array of the next color (no
 * record of the region's lies there), past the header where that is array
 * 0: a record belongs to its slab's layer (slab.h), this is the region's. */
_Static_assert(RECORD_BYTES + REGION_SLABS * sizeof(uint64_t) <= RECORD_ARRAY,
               "the kept places' times fit another color's array, past the region's header");
static uint64_t *kept_since(region *r) {
    size_t next = (color_of(r) + 1) & (RECORD_COLORS - 1);
    return (uint64_t *)((char *)r + next * RECORD_ARRAY + (next == 0 ? RECORD_BYTES : 0));
}

static void map_bit(const region *r, bool on) {
    uintptr_t i = (uintptr_t)r >> REGION_SHIFT;
    uint64_t bit = (uint64_t)1 << (i % 64);
    if (on) __atomic_fetch_or(&region_bits[i / 64], bit, __ATOMIC_RELEASE);
    else __atomic_fetch_and(&region_bits[i / 64], ~bit, __ATOMIC_RELEASE);
}

static void list_add(region **head, region *r, int on) {
    r->on[on].prev = NULL;
    r->on[on].next = *head;
    if (*head) (*head)->on[on].prev = r;
    *head = r;
}

static void list_remove(region **head, region *r, int on) {
    region_link *l = &r->on[on];
    if (l->prev) l->prev->on[on].next = l->next;
    else *head = l->next;
    if (l->next) l->next->on[on].prev = l->prev;
    l->prev = l->next = NULL;
}

/* r onto the lists its places now say (after a change of free or kept,
 * which had_kept says it had before). */
static void lists_note(region *r, bool had_kept) {
    if (!had_kept && r->kept) list_add(&kept_regions, r, ON_KEPT);
    else if (had_kept && !r->kept) list_remove(&kept_regions, r, ON_KEPT);
    uint32_t run = region_longest_run(r->free);
    _Static_assert(RUN_LISTS - 1 == REGION_RUN_MAX, "the run lists end at the longest run counted");
    if (run == r->run) return;
    if (r->run) list_remove(&run_lists[r->run], r, ON_RUN);
    if (run) list_add(&run_lists[run], r, ON_RUN);
    r->run = run;
}

/* A new region, mapped and on the map; caller holds lock. */
static region *region_new(void) {
    void *want = reuse_n ? (void *)reuse[--reuse_n] : NULL;
    region *r = os_map_near(want, REGION_BYTES, REGION_BYTES);
    if (!r) return NULL;
    r->free = ALL_PLACES;
    r->bytes = REGION_BYTES;
    map_bit(r, true);
    lists_note(r, false);
    return r;
}

/* A slab of its own mapping lies at an address of color 0 (region.h,
 * RECORD_COLORS): its record then shares the first page with the region's
 * header, where another color's lay a page apart, a page more resident for
 * every such slab (docs/results.md, "Records in colors"). */
#define HUGE_ALIGN (RECORD_COLORS * REGION_BYTES)

static struct slab *huge_take(size_t span, bool *warm, char **base) {
    size_t bytes = SLAB_BYTES + span;
    pk_lock(&lock);
    void *want = reuse_n && (reuse[reuse_n - 1] & (HUGE_ALIGN - 1)) == 0 ? (void *)reuse[--reuse_n] : NULL;
    pk_unlock(&lock);
    region *r = os_map_reuse_near(want, bytes, HUGE_ALIGN);
    if (!r) return NULL;
    PK_ASSERT_INTERNAL(color_of(r) == 0); /* the hint so aligned, or the system's mapping */
    /* a reused mapping holds retain.c's entry, and what its block held:
     * the header and record 1, of color 0 */
    memset(r, 0, 2 * RECORD_BYTES);
    r->bytes = bytes;
    r->huge = true;
    *warm = true;
    pk_lock(&lock);
    map_bit(r, true);
    __atomic_store_n(&huge_mapped, huge_mapped + 1, __ATOMIC_RELAXED);
    pk_unlock(&lock);
    *base = (char *)r + SLAB_BYTES;
    return (struct slab *)record_at(r, 1);
}

/* The places of mask that start a run of k of them (bit i: place i). */
static uint64_t run_starts(uint64_t mask, size_t k) {
    uint64_t starts = mask;
    for (size_t j = 1; j < k && starts; j++) starts &= mask >> j;
    return starts;
}

/* The bits of the run of k places from place i. */
static uint64_t run_bits(size_t i, size_t k) { return (~(uint64_t)0 >> (64 - k)) << i; }

/* Fresh places' pages, while freed large blocks' wait unused: as many of
 * theirs go back (the program's memory moved from large blocks to small
 * objects, and would hold both), once per GIVE_EMPTY_STEP of them (the
 * look takes retain.c's lock, the giving a system call). */
static size_t fits_owed; /* relaxed atomic */

static void fits_owe(size_t bytes) {
    if (!os_fit_bytes()) return;
    size_t owed = __atomic_add_fetch(&fits_owed, bytes, __ATOMIC_RELAXED);
    if (owed >= GIVE_EMPTY_STEP &&
        __atomic_compare_exchange_n(&fits_owed, &owed, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        os_fit_owe(owed, os_now_ms());
}

struct slab *region_take(size_t span, bool *warm, char **base) {
    *warm = false;
    if (span > REGION_RUN_BYTES ||
        (span > SLAB_BYTES && __atomic_load_n(&huge_mapped, __ATOMIC_RELAXED) < HUGE_OWN_MAX))
        return huge_take(span, warm, base);
    size_t k = region_places(span);
    pk_lock(&lock);
    fork_test_point(HOOK_ADDRESS_MAP, &lock);
    region *r = NULL;
    uint64_t starts = 0;
    for (region *q = kept_regions; q && !r; q = q->on[ON_KEPT].next) /* backed places first: no page to fault in */
        if ((starts = run_starts(q->kept, k)) != 0) r = q;
    for (size_t list = k; !r && list < RUN_LISTS; list++)
        if ((r = run_lists[list]) != NULL) starts = run_starts(r->free, k);
    bool made = !r;
    if (made) {
        if (!(r = region_new())) {
            pk_unlock(&lock);
            errno = ENOMEM;
            return NULL;
        }
        starts = run_starts(r->free, k);
    }
    size_t i = (size_t)__builtin_ctzll(starts);
    uint64_t run = run_bits(i, k), kept = r->kept & run;
    /* fresh places are a page request too (fault.h), but in a region just
     * mapped, whose mapping was the request */
    if (kept != run && !made && !os_request()) {
        pk_unlock(&lock);
        return NULL;
    }
    size_t kept_n = (size_t)__builtin_popcountll(kept);
    bool had_kept = r->kept != 0;
    if (kept) {
        *warm = true;
        r->kept &= ~run;
        __atomic_store_n(&kept_bytes, kept_bytes - kept_n * SLAB_BYTES, __ATOMIC_RELAXED);
    }
    fresh += (k - kept_n) * SLAB_BYTES;
    r->free &= ~run;
    lists_note(r, had_kept);
    /* the run's other records too: a pointer into its later places reads
     * one (slab_of), which must name no slab */
    char *s = record_at(r, i);
    bytes_zero(s, k * RECORD_BYTES);
    *base = (char *)r + i * SLAB_BYTES;
    pk_unlock(&lock);
    if (kept_n) retain_uncharge(kept_n * SLAB_BYTES); /* retain.c's lock comes before this one (fork.c) */
    if (kept_n < k) fits_owe((k - kept_n) * SLAB_BYTES);
    return (struct slab *)s;
}

/* A place's pages back to the system (it stays mapped, zero when next
 * touched). Under ThreadSanitizer a fresh mapping takes its place instead:
 * its shadow of the place (four times the place) goes back only so. */
#if defined(__SANITIZE_THREAD__)
#  define TSAN_BUILD 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define TSAN_BUILD 1
#  endif
#endif
static void places_drop(region *r, size_t i, size_t k) {
    char *at = (char *)r + i * SLAB_BYTES;
#ifdef TSAN_BUILD
    mmap(at, k * SLAB_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
#else
    madvise(at, k * SLAB_BYTES, MADV_DONTNEED);
#endif
}

/* An empty region with nothing kept: off its run list and the region map;
 * caller holds lock, and unmaps it (region_unmap) once it has dropped it. */
static void region_unlink(region *r) {
    if (r->run) list_remove(&run_lists[r->run], r, ON_RUN);
    r->run = 0;
    map_bit(r, false);
    if (reuse_n < REUSE_ADDRESSES) reuse[reuse_n++] = (uintptr_t)r;
}
static void map_drop(uintptr_t start, uintptr_t end);
static void region_unmap(region *r) {
    map_drop((uintptr_t)r, (uintptr_t)r + r->bytes);
    os_unmap(r, r->bytes);
}

void region_give(struct slab *s, size_t span, bool keep) {
    region *r = region_at((uintptr_t)s);
    keep = keep && !TRACK_ENABLED && options_purge_delay_ms() > 0;
    if (r->huge) {
        pk_lock(&lock);
        map_bit(r, false);
        __atomic_store_n(&huge_mapped, huge_mapped - 1, __ATOMIC_RELAXED);
        pk_unlock(&lock);
        map_drop((uintptr_t)r, (uintptr_t)r + r->bytes); /* whether kept or not: retain.c unmaps kept ones later */
        bool kept = keep && os_unmap_later(r, r->bytes, HUGE_ALIGN);
        if (!keep) os_unmap(r, r->bytes);
        if (!kept) { /* its address free: the next region's first try */
            pk_lock(&lock);
            if (reuse_n < REUSE_ADDRESSES) reuse[reuse_n++] = (uintptr_t)r;
            pk_unlock(&lock);
        }
        return;
    }
    size_t i = place_of(s), k = region_places(span);
    uint64_t run = run_bits(i, k);
    keep = keep && retain_charge(k * SLAB_BYTES);
    if (!keep) places_drop(r, i, k); /* before the places are free for another slab */
    pk_lock(&lock);
    bool had_kept = r->kept != 0;
    r->free |= run;
    bool drop = false;
    if (keep) {
        r->kept |= run;
        __atomic_store_n(&kept_bytes, kept_bytes + k * SLAB_BYTES, __ATOMIC_RELAXED);
        uint64_t now = os_now_ms();
        for (size_t j = i; j < i + k; j++) kept_since(r)[j] = now;
    }
    lists_note(r, had_kept);
    if (!keep && r->free == ALL_PLACES && !r->kept) {
        region_unlink(r);
        drop = true;
    }
    pk_unlock(&lock);
    if (drop) region_unmap(r);
}

/* Kept places retained before `before` (all with UINT64_MAX) go back, and
 * regions left empty; returns the bytes. */
static size_t release_kept(uint64_t before) {
    size_t bytes = 0;
    region *gone = NULL;
    pk_lock(&lock);
    for (region *r = kept_regions, *next; r; r = next) {
        next = r->on[ON_KEPT].next;
        bool had_kept = r->kept != 0;
        for (uint64_t k = r->kept; k; k &= k - 1) {
            size_t i = (size_t)__builtin_ctzll(k);
            if (before != UINT64_MAX && kept_since(r)[i] >= before) continue;
            r->kept &= ~((uint64_t)1 << i);
            __atomic_store_n(&kept_bytes, kept_bytes - SLAB_BYTES, __ATOMIC_RELAXED);
            bytes += SLAB_BYTES;
            places_drop(r, i, 1);
        }
        lists_note(r, had_kept);
        if (r->free == ALL_PLACES && !r->kept) {
            region_unlink(r);
            r->on[ON_RUN].next = gone; /* unmapped once the lock is dropped */
            gone = r;
        }
    }
    pk_unlock(&lock);
    if (bytes) retain_uncharge(bytes);
    for (region *r = gone, *next; r; r = next) {
        next = r->on[ON_RUN].next;
        region_unmap(r);
    }
    return bytes;
}

/* When the place kept longest was kept (UINT64_MAX: none). Under lock. */
static uint64_t kept_oldest(void) {
    uint64_t first = UINT64_MAX;
    for (region *r = kept_regions; r; r = r->on[ON_KEPT].next)
        for (uint64_t k = r->kept; k; k &= k - 1) {
            uint64_t t = kept_since(r)[__builtin_ctzll(k)];
            if (t < first) first = t;
        }
    return first;
}

/* The places kept for the delay go back; the delay adapts as retain.c's:
 * the last return judged once more is due (adapt_judge: the bytes of
 * places taken unbacked since), the oldest place's age noted with each. */
void region_tick(uint64_t now) {
    uint64_t base = (uint64_t)options_purge_delay_ms();
    if (!__atomic_load_n(&kept_bytes, __ATOMIC_RELAXED) || now < base) return;
    pk_lock(&lock);
    uint64_t first = kept_oldest(), delay = base << placing.shift;
    if (first != UINT64_MAX && now >= first + delay) {
        adapt_judge(&placing, fresh, base);
        delay = base << placing.shift;
    }
    pk_unlock(&lock);
    if (first == UINT64_MAX || now < first + delay) return;
    size_t bytes = release_kept(now - delay + 1);
    pk_lock(&lock);
    adapt_gave(&placing, bytes, fresh, now - first);
    pk_unlock(&lock);
}

size_t region_release_kept(void) { return release_kept(UINT64_MAX); }

size_t region_kept_bytes(void) { return __atomic_load_n(&kept_bytes, __ATOMIC_RELAXED); }

/* ---- the address map ---- */

static void entry_store(map_entry *e, const map_entry *v) {
    __atomic_store_n(&e->pool, v->pool, __ATOMIC_RELAXED);
    __atomic_store_n(&e->objects, v->objects, __ATOMIC_RELAXED);
    __atomic_store_n(&e->recip, v->recip, __ATOMIC_RELAXED);
    __atomic_store_n(&e->slot, v->slot, __ATOMIC_RELAXED);
    __atomic_store_n(&e->capacity, v->capacity, __ATOMIC_RELAXED);
    __atomic_store_n(&e->slab, v->slab, __ATOMIC_RELEASE);
}

/* The pages of a leaf from the one holding lo to the one holding hi, each
 * given back if no entry on it is set: its reads then see zeros, an empty
 * entry, as they did. Under lock, which every writer holds; a reader reads
 * an entry of the page or zeros, the same empty entry. */
static void leaf_pages_drop(const char *lo, const char *hi) {
    size_t page = os_page_size();
    for (uintptr_t at = (uintptr_t)lo & ~(uintptr_t)(page - 1); at <= (uintptr_t)hi; at += page) {
        uint64_t *w = (uint64_t *)at;
        size_t i = 0;
        while (i < page / sizeof *w && !__atomic_load_n(&w[i], __ATOMIC_RELAXED)) i++;
        if (i == page / sizeof *w) os_zero_pages(w, page);
    }
}

/* The address map's pages that describe [start, end), given back where no
 * entry on them is set, as that address space goes back to the system:
 * slabs move on to new addresses (the system's, or the hint's, which
 * climbs), so a program that maps and unmaps regions for long touched page
 * after page of leaves and kept them all. At a region's unmap, not at each
 * slab's forget: a page describes 6 MiB of slabs, which come and go. */
static void map_drop(uintptr_t start, uintptr_t end) {
    uintptr_t mask = ((uintptr_t)1 << MAP_L2_BITS) - 1, last = (end - 1) >> GRANULE_SHIFT;
    pk_lock(&lock);
    for (uintptr_t g = start >> GRANULE_SHIFT; g <= last;) {
        uintptr_t leaf_last = g | mask, to = last < leaf_last ? last : leaf_last;
        const map_entry *leaf = __atomic_load_n(&map_l1[g >> MAP_L2_BITS], __ATOMIC_ACQUIRE);
        if (leaf) leaf_pages_drop((const char *)&leaf[g & mask], (const char *)(&leaf[to & mask] + 1) - 1);
        g = to + 1;
    }
    pk_unlock(&lock);
}

bool map_set(uintptr_t start, uintptr_t end, const map_entry *value) {
    bool ok = true;
    pk_lock(&lock);
    for (uintptr_t g = start >> GRANULE_SHIFT; g <= (end - 1) >> GRANULE_SHIFT; g++) {
        size_t i1 = (size_t)(g >> MAP_L2_BITS), i2 = (size_t)(g & ((1u << MAP_L2_BITS) - 1));
        map_entry *leaf = __atomic_load_n(&map_l1[i1], __ATOMIC_ACQUIRE);
        if (!leaf) {
            if (!value->slab) continue;
            leaf = os_map(sizeof(map_entry) << MAP_L2_BITS, 0);
            if (!leaf) {
                ok = false;
                break;
            }
            __atomic_store_n(&map_l1[i1], leaf, __ATOMIC_RELEASE);
        }
        entry_store(&leaf[i2], value);
    }
    pk_unlock(&lock);
    return ok;
}

void region_fork_lock(void) { pk_lock(&lock); }
void region_fork_unlock(void) { pk_unlock(&lock); }
