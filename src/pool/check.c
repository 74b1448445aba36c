/* The checks of a pointer given to a pool, debug pools' per-object checks,
 * and their reports (check.h). What the owner's short free path checks
 * itself (its slab's record: pool_free.c) comes here only to be reported.
 */
#include "pool/check.h"
#include "pool/harden.h"
#include "base/bytes.h"
#include "base/sites.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool bytes_are(const unsigned char *b, size_t n, unsigned char v, size_t *bad) {
    *bad = bytes_first_not(b, n, v);
    return *bad == n;
}

/* A debug slot's call sites, or NULL when none are kept. */
static void **slot_sites(const pk_pool *p, const slab *s, size_t idx) {
    return s->sites ? s->sites + idx * p->geo.site_words : NULL;
}

static size_t slot_index(const pk_pool *p, const slab *s, const void *obj) {
    return slot_div((uint64_t)((const char *)obj - s->objects), p->geo.slot, p->geo.recip);
}

static PK_COLD __attribute__((noreturn)) void report_write_after_free(pk_pool *p, slab *s, char *obj,
                                                                       size_t idx, size_t at) {
    char where[SITES_TEXT];
    error_report(PK_FATAL, "write after free", p->name, obj,
                 "object %p of pool '%s' was modified at byte %zu after it was freed%s%s", obj,
                 pool_name(p), at, s->sites ? "; " : "",
                 sites_format(where, sizeof where, slot_sites(p, s, idx)));
    abort();
}

static PK_COLD __attribute__((noreturn)) void report_double_free(pk_pool *p, slab *s, void *obj,
                                                                  size_t idx) {
    char where[SITES_TEXT];
    void **sites = slot_sites(p, s, idx);
    if (sites) /* where it was allocated and first freed, then the free that faulted */
        sites_append_capture(sites_format(where, sizeof where, sites), sizeof where, "freed again at");
    error_report(PK_FATAL, "double free", p->name, obj, "object %p of pool '%s' was freed twice%s%s",
                 obj, pool_name(p), sites && where[0] ? "; " : "", sites ? where : "");
    abort();
}

void check_report_double_free(pk_pool *p, void *obj) {
    error_report(PK_FATAL, "double free", p->name, obj, "object %p of pool '%s' was freed twice",
                 obj, pool_name(p));
    abort();
}

void check_report_null(pk_pool *p) {
    error_report(PK_FATAL, "null pointer", p->name, NULL, "NULL given to pool '%s'", pool_name(p));
    abort();
}

void check_report_lost_count(pk_pool *p, const slab *s) {
    error_report(PK_FATAL, "corrupted free list", p->name, s->objects,
                 "a slab of pool '%s' (its objects from %p) counts %u of its %u objects handed out, yet has "
                 "no free one left: most likely a double free of one of its objects",
                 pool_name(p), (void *)s->objects, s->used, s->capacity);
    abort();
}

/* Reports obj, given to pool p, as not one of its object slots, naming the
 * fault from what the address map says it is. A pointer that came from a
 * hardened pool's link (holder: the free object that held it) is a
 * corrupted free list, whatever it points to. */
static PK_COLD __attribute__((noreturn)) void report_bad_pointer(pk_pool *p, const void *obj,
                                                                   const void *holder) {
    if (holder) report_bad_link(p, holder, obj, "not one of its objects");
    slab *s = slab_lookup(obj);
    const char *what = !s ? "foreign pointer" : s->pool != p ? "wrong pool" : "interior pointer";
    char why[160];
    if (!s) snprintf(why, sizeof why, "not a poolkit object");
    else if (s->pool != p) snprintf(why, sizeof why, "an object of pool '%s'", pool_name(s->pool));
    else snprintf(why, sizeof why, "not the start of one of its objects");
    error_report(PK_FATAL, what, p->name, obj, "%p given to pool '%s' is %s", obj, pool_name(p), why);
    abort(); /* error_report never returns from a fatal report */
}

slab *check_free(pk_pool *p, void *obj) {
    slab *s = slab_of_slot(obj, p);
    if (unlikely(!s)) report_bad_pointer(p, obj, NULL);
    return s;
}

slab *check_handed_out(pk_pool *p, void *obj, const void *holder) {
    slab *s = slab_lookup(obj);
    long idx = s && s->pool == p ? slab_slot_index(s, obj) : -1;
    if (unlikely(idx < 0 || (uint32_t)idx >= s->bump)) report_bad_pointer(p, obj, holder);
    if (unlikely(s->used == 0)) report_double_free(p, s, obj, (size_t)idx);
    return s;
}

/* Whether the slot at obj keeps its word at POOL_KEPT_WORD through the
 * debug fills: a pool that keeps one (fill_from, POOL_KEEPS_HEADER), and
 * the word holds the mark. */
static bool slot_keeps_word(const pk_pool *p, const char *obj) {
    uintptr_t w;
    if (!p->fill_from) return false;
    memcpy(&w, obj + POOL_KEPT_WORD, sizeof w);
    return (w & POOL_KEPT_MARK_MASK) == POOL_KEPT_MARK;
}

/* The debug fill of a slot, but for the word it keeps. */
static void fill_slot(const pk_pool *p, char *obj, int byte) {
    if (!slot_keeps_word(p, obj)) {
        memset(obj, byte, p->size);
        return;
    }
    memset(obj, byte, POOL_KEPT_WORD);
    memset(obj + p->fill_from, byte, p->size - p->fill_from);
}

/* Whether a free slot's fill is whole (but for the word it keeps); if
 * not, *bad is the first byte changed. Inline in the debug allocation's
 * check, which gcc left paying a call for it when its own estimate of the
 * compare's size changed. */
static inline __attribute__((always_inline)) bool slot_filled(const pk_pool *p, const char *obj, size_t *bad) {
    const unsigned char *b = (const unsigned char *)obj;
    if (!slot_keeps_word(p, obj)) return bytes_are(b, p->size, FILL_FREE, bad);
    if (!bytes_are(b, POOL_KEPT_WORD, FILL_FREE, bad)) return false;
    if (bytes_are(b + p->fill_from, p->size - p->fill_from, FILL_FREE, bad)) return true;
    *bad += p->fill_from;
    return false;
}

void check_debug_take(pk_pool *p, slab *s, char *obj, bool reused) {
    size_t idx = slot_index(p, s, obj), bad;
    bool plain = !p->construct && !p->destruct;
    track_open(obj, p->size + p->redzone);
    if (reused && plain && !slot_filled(p, obj, &bad)) report_write_after_free(p, s, obj, idx, bad);
    if (s->sites) {
        sites_keep(slot_sites(p, s, idx), SITE_ALLOC);
        slot_sites(p, s, idx)[SITE_FREE * sites_frames()] = NULL; /* no longer freed */
    }
    if (plain && !p->zero) memset(obj, FILL_ALLOC, p->size);
    memset(obj + p->size, FILL_REDZONE, p->redzone);
    track_close(obj, p->size + p->redzone);
    s->live_bits[idx / 64] |= (uint64_t)1 << (idx % 64);
}

/* The red zone after obj, a live slot (idx) of s, still holds its fill;
 * the track is open. */
static void check_redzone(pk_pool *p, slab *s, void *obj, size_t idx) {
    const char *name = pool_name(p);
    char where[SITES_TEXT];
    const char *sep = s->sites ? "; " : "";
    size_t bad;
    if (!bytes_are((unsigned char *)obj + p->size, p->redzone, FILL_REDZONE, &bad)) {
        const unsigned char *zone = (const unsigned char *)obj + p->size;
        size_t last = p->redzone - 1; /* how far it reached: the last byte changed */
        while (zone[last] == FILL_REDZONE) last--;
        error_report(PK_FATAL, "buffer overflow", p->name, obj,
                     "a write reaching %zu byte%s past the end of object %p (size %zu) of pool '%s' (the "
                     "redzone after it changed from byte %zu to byte %zu)%s%s",
                     last + 1, last ? "s" : "", obj, p->size, name, bad + 1, last + 1, sep,
                     sites_format(where, sizeof where, slot_sites(p, s, idx)));
    }
}

void check_debug_live(pk_pool *p, void *obj) {
    slab *s = slab_of((uintptr_t)obj);
    char *zone = (char *)obj + p->size;
    track_open(zone, p->redzone);
    check_redzone(p, s, obj, slot_index(p, s, obj));
    track_close(zone, p->redzone);
}

void check_debug_free(pk_pool *p, void *obj) {
    slab *s = check_handed_out(p, obj, NULL);
    size_t idx = slot_index(p, s, obj);
    if (!(s->live_bits[idx / 64] & ((uint64_t)1 << (idx % 64)))) report_double_free(p, s, obj, idx);
    track_open(obj, p->size + p->redzone);
    check_redzone(p, s, obj, idx);
    if (s->sites) sites_keep(slot_sites(p, s, idx), SITE_FREE);
    s->live_bits[idx / 64] &= ~((uint64_t)1 << (idx % 64));
    if (!p->construct && !p->destruct) fill_slot(p, obj, FILL_FREE);
    track_close(obj, p->size + p->redzone);
}

void check_slab_release(pk_pool *p, slab *s) {
    if (p->debug && !p->construct && !p->destruct) {
        for (uint32_t i = 0; i < s->bump; i++) {
            if (s->live_bits[i / 64] & ((uint64_t)1 << (i % 64))) continue;
            char *obj = s->objects + (size_t)i * p->geo.slot;
            size_t bad;
            track_open(obj, p->size);
            bool intact = slot_filled(p, obj, &bad);
            track_close(obj, p->size);
            if (!intact) report_write_after_free(p, s, obj, i, bad);
        }
    }
    if (p->hardened) check_slab_free_list(p, s);
}

void check_slab_free_list(pk_pool *p, slab *s) {
    size_t n = 0;
    for (char *f = s->free; f; n++) {
        if (unlikely(n >= s->bump)) report_list_overrun(p, s, s->free, NULL, "a slab's free list");
        char *next = (char *)link_load(p, f);
        check_slab_link(p, s, f, next);
        f = next;
    }
}

void check_report_slab_list(const pk_pool *p) {
    error_report(PK_FATAL, "corrupted slab list", p->name, p,
                 "a slab list of pool '%s' runs on past the pool's %zu slabs: the pool's records were "
                 "overwritten", pool_name(p), p->slabs_total);
    abort();
}
