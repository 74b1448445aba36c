/* Slabs: their layout, making and unmaking them in their regions' places
 * (region.c), their fresh slots linked onto a list (carving, the shuffle),
 * and slab lists. Nothing here knows a pool beyond what the caller hands
 * in (slab_geometry, carve_how).
 */
#include "mem/slab.h"
#include "base/link.h"
#include "base/track.h"

#include <errno.h>
#include <string.h>

slab *slab_lookup(const void *ptr) {
    map_entry *e = map_find(ptr);
    return e ? __atomic_load_n(&e->slab, __ATOMIC_ACQUIRE) : NULL;
}

struct pk_pool *slab_owner(const void *ptr) { return slot_owner(ptr); }

bool slab_geometry_for(size_t slot, size_t align, bool debug_bits, bool lead, bool guard, slab_geometry *g) {
    size_t page = os_page_size();
    /* The record lives apart (region.h), so the slab holds only slots,
     * after a debug pool's live bits. Where slot 0 may start: rounding the
     * bits up to the slot's own power of two costs no slot where the slot
     * is a power of two (the span and the guard page are multiples of it). */
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

    size_t room = SLAB_BYTES - g->guard;
    if (slot <= room) {
        size_t cap = room / slot, header;
        for (; cap > 0; cap--) {
            size_t bits = debug_bits ? align_up((cap + 63) / 64 * 8, 8) : 0;
            header = bits ? align_up(bits, place) : 0;
            if (lead) header = align_up(header + slot, place);
            if (header + cap * slot <= room) break;
        }
        if (cap > 0) {
            g->span = SLAB_BYTES;
            g->header = header;
            g->capacity = (uint32_t)cap;
            return true;
        }
    }
    /* A slab of its own slot, as long as the slot (in pages): a run of
     * places, or a region of its own (region.h); its slot starts within
     * its first SLAB_BYTES, so masking finds its record. */
    size_t header = debug_bits ? align_up(8, place) : 0;
    g->span = align_up(header + slot, page) + g->guard;
    g->header = header;
    g->capacity = 1;
    return true;
}

static const map_entry no_entry;

uint64_t map_generation;

slab *slab_create(struct pk_pool *pool, const slab_geometry *g) {
    bool warm;
    char *base;
    slab *s = region_take(g->span, &warm, &base);
    if (!s) return NULL;
    s->base = base;
    if (g->header && warm) memset(base, 0, g->header); /* a debug pool's live bits, or the lead */
    bool guard = g->guard && os_guard_room();
    if (guard && !os_protect_none(base + g->span - g->guard, g->guard)) {
        region_give(s, g->span, false);
        errno = ENOMEM;
        return NULL;
    }
    if (guard) os_guards_add(1);
    s->pool = pool;
    s->warm = warm;
    s->objects = base + g->header;
    s->span = g->span;
    s->slot = g->slot;
    s->recip = g->recip;
    slab_grid_set(s, g->slot, g->capacity);
    s->extent = (uintptr_t)g->capacity * g->slot;
    s->guarded = guard;
    s->capacity = g->capacity;
    s->list = SLAB_NOWHERE;
    s->table_slot = g->table_slot;
    if (g->debug_bits) s->live_bits = (uint64_t *)base;
    if (g->site_words) {
        /* Apart from the slab: a debug pool's sites can outweigh its objects. */
        size_t bytes = align_up((size_t)g->capacity * g->site_words * sizeof(void *), os_page_size());
        s->sites = os_map(bytes, 0);
        if (!s->sites) {
            slab_destroy(s, false);
            errno = ENOMEM;
            return NULL;
        }
        s->sites_bytes = bytes;
    }
    map_entry e = {s, pool, s->objects, g->recip, (uint32_t)g->slot, g->capacity};
    if (g->slot > UINT32_MAX) e.slot = 0; /* no slot then (map_slot, which needs recip set) */
    if (!map_set((uintptr_t)base, (uintptr_t)base + g->span, &e)) {
        slab_destroy(s, false);
        errno = ENOMEM;
        return NULL;
    }
    return s;
}

void slab_destroy(slab *s, bool cache) {
    track_open(s->base, s->span); /* the shadow of a place given back must not stay poisoned */
    map_set((uintptr_t)s->base, (uintptr_t)s->base + s->span, &no_entry);
    /* after the map forgets it, before its place can serve another slab */
    __atomic_add_fetch(&map_generation, 1, __ATOMIC_RELEASE);
    if (s->sites) os_unmap(s->sites, s->sites_bytes);
    /* a pointer into it is no object of any pool's any more (pool_free.c
     * reads the record before the address map) */
    __atomic_store_n(&s->pool, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&s->owner, NULL, __ATOMIC_RELAXED);
    if (s->guarded) { /* its place serves other slabs next: no guard page there */
        os_protect_rw(s->base + s->span - os_page_size(), os_page_size());
        os_guards_add(-1);
        cache = false;
    }
    region_give(s, s->span, cache);
}

/* ---- fresh slots ---- */

static inline void link_put(const carve_how *how, char *obj, uintptr_t v) {
    uintptr_t *l = (uintptr_t *)(obj + how->link_off);
    track_open(l, sizeof *l);
    *l = how->encode ? link_encode_with(how->secret, obj, v) : v;
    track_close(l, sizeof *l);
}

/* A slot handed out for the first time: its construct hook runs now. */
static inline void construct_fresh(const carve_how *how, char *obj) {
    if (!how->construct) return;
    track_open(obj, how->size);
    how->construct(obj, how->arg);
    track_close(obj, how->size);
}

/* Carves k never-used slots of s onto *list in one tight loop: the common
 * case of a fresh slab, where nothing per object is needed but the link. */
static void take_fresh(slab *s, size_t k, void **list) {
    size_t slot = s->slot;
    char *first = s->objects + (size_t)s->bump * slot, *head = *list;
    /* Linked from the top down so the list hands them out in address
     * order: a stream the hardware prefetcher follows, where a list that
     * runs down within each batch and up across batches defeats it once the
     * working set leaves the caches. */
    for (char *obj = first + (k - 1) * slot;; obj -= slot) {
        *(void **)obj = head;
        head = obj;
        if (obj == first) break;
    }
    *list = head;
}

/* PK_POOL_SHUFFLE pools' fresh slots go out shuffled: policy.h, SHUFFLE_RUN. */
static uint64_t next_random(uint64_t *rng) {
    uint64_t x = *rng; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *rng = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* k (at most SHUFFLE_RUN) never-used slots of s from bump, linked in one
 * pass from the first picked to the last, whose link is left for the
 * caller: the run's first object is returned, its last in *tail. Each pick
 * takes the next slot of one of SHUFFLE_SLICES slices chosen by two bits of
 * a random word (32 picks a draw; once slices run out, the two bits scaled
 * to those left, a little unevenly). */
static char *take_fresh_shuffled(const carve_how *how, uint64_t *rng, slab *s, size_t k, char **tail) {
    _Static_assert(SHUFFLE_SLICES == 4, "two bits pick a slice");
    char *next[SHUFFLE_SLICES], *last[SHUFFLE_SLICES];
    size_t slices = k < SHUFFLE_SLICES ? k : SHUFFLE_SLICES, slot = s->slot;
    char *first = s->objects + (size_t)s->bump * slot, *head = NULL, *prev = NULL;
    for (size_t i = 0; i < slices; i++) {
        next[i] = first + k * i / slices * slot;
        last[i] = first + (k * (i + 1) / slices - 1) * slot;
    }
    uint64_t bits = 0;
    for (size_t n = 0, live = slices; n < k; n++) {
        if ((n & 31) == 0) bits = next_random(rng);
        size_t i = live == SHUFFLE_SLICES ? (size_t)(bits & 3) : (size_t)(bits & 3) * live >> 2;
        bits >>= 2;
        char *obj = next[i];
        if (obj == last[i]) { /* slice used up: the last live one takes its place */
            live--;
            next[i] = next[live];
            last[i] = last[live];
        } else {
            next[i] = obj + slot;
        }
        construct_fresh(how, obj);
        if (prev) link_put(how, prev, (uintptr_t)obj);
        else head = obj;
        prev = obj;
    }
    *tail = prev;
    return head;
}

size_t slab_carve(const carve_how *how, uint64_t *rng, slab *s, size_t k, void **list) {
    size_t fresh = s->capacity - s->bump;
    if (k > fresh) k = fresh;
    if (!k) return 0;
    /* SHUFFLE covers slots never handed out before: those under the high
     * mark, carved again after the slab emptied, go in address order (a
     * working set that empties and refills its slabs each phase would pay
     * for a shuffle per object and per phase; policy.h has the figures). */
    if (how->shuffle && s->bump < s->high && k > s->high - s->bump) k = s->high - s->bump;
    if (how->shuffle && s->bump >= s->high) {
        char *first = NULL, *tail = NULL;
        for (size_t done = 0; done < k;) {
            size_t run = k - done < SHUFFLE_RUN ? k - done : SHUFFLE_RUN;
            char *part_tail, *part = take_fresh_shuffled(how, rng, s, run, &part_tail);
            s->bump += (uint32_t)run; /* the next run's slots follow */
            if (tail) link_put(how, tail, (uintptr_t)part); /* runs in address order */
            else first = part;
            tail = part_tail;
            done += run;
        }
        link_put(how, tail, (uintptr_t)*list);
        *list = first;
    } else if (how->plain) {
        take_fresh(s, k, list);
        s->bump += (uint32_t)k;
    } else {
        /* Linked from the top down, so the list hands them out in address
         * order, each constructed on the way. */
        void *head = *list;
        char *first = s->objects + (size_t)s->bump * s->slot;
        if (how->scrub && s->warm && s->bump + k > s->high) { /* slots below high are this slab's own */
            size_t from = s->bump > s->high ? s->bump : s->high;
            char *at = s->objects + from * s->slot;
            size_t bytes = (s->bump + k - from) * s->slot;
            track_open(at, bytes);
            memset(at, 0, bytes);
            track_close(at, bytes);
        }
        for (size_t i = k; i-- > 0;) {
            char *obj = first + i * s->slot;
            construct_fresh(how, obj);
            link_put(how, obj, (uintptr_t)head);
            head = obj;
        }
        *list = head;
        s->bump += (uint32_t)k;
    }
    if (s->bump > s->high) s->high = s->bump;
    s->used += (uint32_t)k;
    return k;
}

/* ---- slab lists ---- */

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
