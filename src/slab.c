/* Slab layout, creation and release, and the address map.
 *
 * The address map is a two-level radix table over 64 KiB granules of the
 * 48-bit user address space: 65536 first-level entries (bits 32..47), each a
 * lazily mapped leaf of 65536 entries (bits 16..31). An entry names the slab
 * and copies what pk_pool_owner needs (pool, first slot, slot size, slot
 * count), so answering for any pointer never reads the slab, which another
 * thread may be unmapping at that moment. Writers hold map_lock; readers use
 * atomic loads and may see a slab half-recorded while it comes or goes,
 * which can give a wrong answer for a pointer into that slab but never a
 * crash. Leaves are never freed: they cost 2 MiB of address space each and
 * only touched pages of physical memory. */
#include "slab.h"
#include "track.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

map_entry *map_l1[1u << MAP_L1_BITS];
static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;

static void entry_store(map_entry *e, const map_entry *v) {
    __atomic_store_n(&e->pool, v->pool, __ATOMIC_RELAXED);
    __atomic_store_n(&e->objects, v->objects, __ATOMIC_RELAXED);
    __atomic_store_n(&e->recip, v->recip, __ATOMIC_RELAXED);
    __atomic_store_n(&e->slot, v->slot, __ATOMIC_RELAXED);
    __atomic_store_n(&e->capacity, v->capacity, __ATOMIC_RELAXED);
    __atomic_store_n(&e->slab, v->slab, __ATOMIC_RELEASE);
}

static bool map_set(uintptr_t start, uintptr_t end, const map_entry *value) {
    bool ok = true;
    pthread_mutex_lock(&map_lock);
    fork_test_point(HOOK_ADDRESS_MAP, &map_lock);
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
    pthread_mutex_unlock(&map_lock);
    return ok;
}

slab *slab_lookup(const void *ptr) {
    map_entry *e = map_find(ptr);
    return e ? __atomic_load_n(&e->slab, __ATOMIC_ACQUIRE) : NULL;
}

struct pk_pool *slab_owner(const void *ptr) { return slot_owner(ptr); }

bool slab_geometry_for(size_t slot, size_t align, bool debug_bits, bool guard, slab_geometry *g) {
    const size_t small_slab = (size_t)1 << GRANULE_SHIFT;
    size_t page = os_page_size();
    /* The slab's record lives apart (slab_record_get), so the mapping holds
     * only slots, after a debug pool's live bits. Where slot 0 may start:
     * rounding the bits up to the slot's own power of two costs no slot
     * where the slot is a power of two (the span and the guard page are
     * multiples of it) and, computed for every size in steps of 8 up to
     * 64 KiB, plain and guarded, none elsewhere either. */
    size_t base = 0;
    size_t place = slot & -slot;
    if (place > SLOT_ALIGN_MAX) place = SLOT_ALIGN_MAX;
    if (place < align) place = align;
    if (place < 16) place = 16;
    memset(g, 0, sizeof *g);
    g->slot = slot;
    g->align = align;
    g->debug_bits = debug_bits;
    g->guard = guard ? page : 0;
    g->recip = slot < ((uint64_t)1 << 32) ? UINT64_MAX / slot + 1 : 0;
    if (slot > ((size_t)1 << 46)) return false;

    if (slot <= small_slab) {
        /* At least 16 slots per slab so the tail and header waste stay small. */
        size_t want = base + 16 * slot + (debug_bits ? 16 * slot / 8 + 64 : 0) + g->guard;
        size_t span = small_slab;
        while (span < want) span <<= 1;
        size_t cap = span / slot, header;
        for (;; cap--) {
            size_t bits = debug_bits ? align_up((cap + 63) / 64 * 8, 8) : 0;
            header = bits ? align_up(base + bits, place) : 0;
            if (header + cap * slot <= span - g->guard) break;
        }
        g->slab_align = g->span = span;
        g->header = header;
        g->capacity = (uint32_t)cap;
        return cap > 0;
    }
    /* One slot per slab: map just a page past it. The slot starts in the
     * first 64 KiB, so a 64 KiB alignment is all masking needs; a larger one
     * would spread slabs apart and cost a page-table page each. */
    size_t header = debug_bits ? align_up(base + 8, place) : 0;
    size_t span = align_up(header + slot, page) + g->guard;
    size_t slab_align = small_slab;
    g->slab_align = slab_align;
    g->span = span;
    g->header = header;
    g->capacity = 1;
    return true;
}

static const map_entry no_entry;
static void slab_forget(slab *s, bool cache);

void slab_fork_lock(void) { pthread_mutex_lock(&map_lock); }
void slab_fork_unlock(void) { pthread_mutex_unlock(&map_lock); }

/* Slab records: apart from the slabs, packed 256 bytes apart in chunks of
 * RECORD_CHUNK, so the records of a pool's slabs share a few pages (the
 * free path reads the record of every object's slab: with the record at
 * the slab's start, a free in random order cost a TLB miss for the object's
 * page and another for its slab's first page). Never unmapped: a stale
 * record pointer reads a record, never unmapped memory. Under map_lock. */
#define RECORD_BYTES 256
#define RECORD_CHUNK ((size_t)1 << 16)
_Static_assert(sizeof(slab) <= RECORD_BYTES, "a slab record fits its 256 bytes");
static slab *spare_record;
static char *record_next, *record_end;

static slab *slab_record_get(void) {
    slab *s = spare_record;
    if (s) {
        spare_record = s->next;
        return s;
    }
    if (record_next == record_end) {
        char *chunk = os_map(RECORD_CHUNK, 0);
        if (!chunk) return NULL;
        record_next = chunk;
        record_end = chunk + RECORD_CHUNK;
    }
    s = (slab *)record_next;
    record_next += RECORD_BYTES;
    return s;
}

static void slab_record_put(slab *s) {
    s->next = spare_record;
    spare_record = s;
}

slab *slab_create(struct pk_pool *pool, const slab_geometry *g) {
    /* Slabs of destroyed pools wait in retained memory for the next slab of
     * the same shape: a pool per request or per tree then pays no system
     * call and no page fault. */
    char *base = os_map_reuse(g->span, g->slab_align);
    if (!base) return NULL;
    if (g->header) memset(base, 0, g->header); /* a debug pool's live bits */
    if (g->guard && !os_protect_none(base + g->span - g->guard, g->guard)) {
        os_unmap(base, g->span);
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_lock(&map_lock);
    slab *s = slab_record_get();
    pthread_mutex_unlock(&map_lock);
    if (!s) {
        os_unmap(base, g->span);
        errno = ENOMEM;
        return NULL;
    }
    memset(s, 0, sizeof *s);
    s->pool = pool;
    s->base = base;
    s->objects = base + g->header;
    s->span = g->span;
    s->slab_align = g->slab_align;
    s->guarded = g->guard != 0;
    s->capacity = g->capacity;
    s->list = SLAB_NOWHERE;
    if (g->debug_bits) s->live_bits = (uint64_t *)base;
    if (g->site_words) {
        /* Apart from the slab: a debug pool's sites can outweigh its objects. */
        size_t bytes = align_up((size_t)g->capacity * g->site_words * sizeof(void *), os_page_size());
        s->sites = os_map(bytes, 0);
        if (!s->sites) {
            slab_forget(s, false);
            errno = ENOMEM;
            return NULL;
        }
        s->sites_bytes = bytes;
    }
    map_entry e = {s, pool, s->objects, g->recip, (uint32_t)g->slot, g->capacity};
    if (g->slot > UINT32_MAX) e.slot = 0; /* owner lookups then answer NULL */
    if (!map_set((uintptr_t)base, (uintptr_t)base + g->span, &e)) {
        map_set((uintptr_t)base, (uintptr_t)base + g->span, &no_entry);
        slab_forget(s, false);
        errno = ENOMEM;
        return NULL;
    }
    return s;
}

/* The record back to the spares, the mapping back to the system (or to
 * retained memory, with cache). */
static void slab_forget(slab *s, bool cache) {
    char *base = s->base;
    size_t span = s->span, align = s->slab_align;
    bool guarded = s->guarded;
    if (s->sites) os_unmap(s->sites, s->sites_bytes);
    pthread_mutex_lock(&map_lock);
    slab_record_put(s);
    pthread_mutex_unlock(&map_lock);
    /* A guarded slab is never retained: its guard page would sit inside the
     * slots of the next pool to reuse the mapping. */
    if (cache && !guarded) os_unmap_later(base, span, align);
    else os_unmap(base, span);
}

uint64_t map_generation;

void slab_destroy(slab *s, bool cache) {
    track_open(s->base, s->span); /* the shadow of unmapped memory must not stay poisoned */
    map_set((uintptr_t)s->base, (uintptr_t)s->base + s->span, &no_entry);
    /* after the map forgets it, before its memory can serve another slab */
    __atomic_add_fetch(&map_generation, 1, __ATOMIC_RELEASE);
    slab_forget(s, cache);
}

void slab_list_push(slab_list *l, slab *s, slab_list_id id) {
    s->prev = NULL;
    s->next = l->head;
    if (l->head) l->head->prev = s;
    else l->tail = s;
    l->head = s;
    __atomic_store_n(&l->count, l->count + 1, __ATOMIC_RELAXED);
    s->list = id;
}

void slab_list_append(slab_list *l, slab *s, slab_list_id id) {
    s->next = NULL;
    s->prev = l->tail;
    if (l->tail) l->tail->next = s;
    else l->head = s;
    l->tail = s;
    __atomic_store_n(&l->count, l->count + 1, __ATOMIC_RELAXED);
    s->list = id;
}

void slab_list_remove(slab_list *l, slab *s) {
    if (s->prev) s->prev->next = s->next;
    else l->head = s->next;
    if (s->next) s->next->prev = s->prev;
    else l->tail = s->prev;
    s->prev = s->next = NULL;
    __atomic_store_n(&l->count, l->count - 1, __ATOMIC_RELAXED);
    s->list = SLAB_NOWHERE;
}
