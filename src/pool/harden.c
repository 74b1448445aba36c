/* Hardening's out-of-line half (harden.h says what each check is): the
 * reports the checks share, with their wording and the reading of a bad
 * link word that says what most likely happened; also the report of a
 * list that runs past what it can hold, which every mode's walks make.
 */
#include "pool/harden.h"

#include <stdio.h>
#include <stdlib.h>

void report_corrupted_link(const pk_pool *p, const void *holder, const void *link, const char *why) {
    error_report(PK_FATAL, "corrupted free list", p->name, holder,
                 "the free object %p of pool '%s' links to %p, which is %s: most likely a double "
                 "free or a write after free of object %p",
                 holder, pool_name(p), link, why, holder);
    abort(); /* error_report never returns from a fatal report */
}

/* The link word of holder decodes to link, which no check accepts. The
 * encoding (harden.h) puts the word's first four bytes in memory in the
 * decoded pointer's high half: when the other four still decode to a slot
 * of the holder's slab (or to the end of the list), only the first bytes
 * were written over, which is what a write running past the end of the
 * object before it leaves; else the whole word was written, which is a
 * write after free (or a double free whose object was handed out and
 * written while still listed). */
void report_bad_link(const pk_pool *p, const void *holder, const void *link, const char *why) {
    if (!p->hardened) report_corrupted_link(p, holder, link, why);
    uintptr_t h = (uintptr_t)holder, d = (uintptr_t)link;
    uintptr_t off = (h & (SLAB_BYTES - 1)) - p->geo.header;
    char before[80] = "";
    if (off >= p->geo.slot && off < (uintptr_t)p->geo.capacity * p->geo.slot)
        snprintf(before, sizeof before, " from object %p (the slot before it)", (void *)(h - p->geo.slot));
    uintptr_t low = d & 0xffffffffu, high_same = h & ~(uintptr_t)0xffffffffu;
    bool to_end = low == 0, to_slot = slot_of_slab_at(p, high_same | low, h);
    if (to_end || to_slot) {
        /* the bytes that differ from the nearest valid word: its first ones */
        uintptr_t want_high = to_slot ? high_same : 0, got_high = d & ~(uintptr_t)0xffffffffu;
        uintptr_t diff = (want_high ^ got_high) >> 32; /* byte i here is the word's byte i in memory */
        unsigned bytes = 0;
        for (unsigned i = 0; i < 4; i++)
            if ((diff >> (8 * i)) & 0xff) bytes = i + 1;
        error_report(PK_FATAL, "corrupted free list", p->name, holder,
                     "the free object %p of pool '%s' links to %p, which is %s: most likely an overflow%s: "
                     "the first %u byte%s of its link word %s overwritten and the rest is intact",
                     holder, pool_name(p), link, why, before, bytes, bytes == 1 ? "" : "s",
                     bytes == 1 ? "was" : "were");
        abort();
    }
    error_report(PK_FATAL, "corrupted free list", p->name, holder,
                 "the free object %p of pool '%s' links to %p, which is %s: its whole link word was "
                 "overwritten: most likely a write after free of object %p, an overflow%s that ran over "
                 "it, or a double free of it that let it be handed out while still listed",
                 holder, pool_name(p), link, why, holder, before);
    abort();
}

/* The most slots a slab holds: a granule of the smallest slots, a word
 * each (a larger slab holds fewer, larger slots: slab.c), so one bitmap of
 * this many bits covers any slab's. */
#define LIST_SEEN_SLOTS ((1u << GRANULE_SHIFT) / sizeof(uintptr_t))

void report_list_overrun(const pk_pool *p, const slab *s, void *head, const void *hot, const char *list) {
    uint64_t seen[LIST_SEEN_SLOTS / 64] = {0};
    bool hot_seen = false;
    char *prev = NULL;
    /* Walked again from its head, each object checked before its link is
     * read: the first object met twice is the one the list holds twice. */
    for (char *obj = head; obj; prev = obj, obj = (char *)link_load(p, obj)) {
        if (obj == hot && !hot_seen && slab_of_slot(obj, p)) {
            hot_seen = true;
            continue;
        }
        long idx = slab_slot_index(s, obj);
        if (idx < 0 || (uint32_t)idx >= s->bump) report_bad_link(p, prev ? prev : obj, obj, "not a free slot of its slab");
        if ((size_t)idx >= LIST_SEEN_SLOTS) break;
        uint64_t bit = (uint64_t)1 << (idx % 64);
        if (seen[idx / 64] & bit)
            error_report(PK_FATAL, "corrupted free list", p->name, obj,
                         "%s of pool '%s' lists object %p twice, so it runs on past the %u objects its slab "
                         "holds: most likely a double free of object %p of pool '%s'",
                         list, pool_name(p), (void *)obj, s->capacity, (void *)obj, pool_name(p));
        seen[idx / 64] |= bit;
    }
    error_report(PK_FATAL, "corrupted free list", p->name, head,
                 "%s of pool '%s' runs on past the %u objects its slab holds: most likely a double free of "
                 "one of its objects", list, pool_name(p), s->capacity);
    abort(); /* error_report never returns from a fatal report */
}
