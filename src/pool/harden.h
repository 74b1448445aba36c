/* Hardening: every check a hardened pool (PK_POOL_HARDENED, POOLKIT_HARDENED)
 * makes, in one place (snmalloc's mem/freelist.h), each named:
 *
 *   LINK ENCODING  link_encode: a free object's link word is stored as
 *                  rot32(link ^ secret ^ object), with a per-pool secret,
 *                  so a pointer written over a free object decodes to
 *                  garbage, and an overflow into the word's first bytes
 *                  moves the decoded pointer out of its slab
 *   CURRENT SLAB   a thread's slot list holds objects of its current slab,
 *                  and at most one of another (the hot object, HOT_FREES,
 *                  which heap.c knows), so each link followed must name
 *                  that slab (by the mask: the inline alloc in pool.h and
 *                  the lean path), the hot object (heap_alloc), or end;
 *                  remote-free chains carry an encoded mark (length and
 *                  tail) checked when collected (central_collect), the
 *                  next chain's head checked as a link
 *   SLOT GRID      the inline paths check that a pointer is aligned as
 *                  a slot start, for free, by leaving the alignment bits
 *                  out of the mask they compare (pool.c, choose_path):
 *                  the grid itself where the slot is a power of two or
 *                  alone in its slab; the exact grid is checked where it
 *                  costs no fast path: slot_of_slab_at (one multiply) on
 *                  the lean path, slot arithmetic for every listed object when
 *                  the thread's list goes home (uninstall), the address
 *                  map on the heap and slab paths
 *   DOUBLE FREE    the head of the thread's list freed again is reported
 *                  (SLUB's "not the head itself"; the default pools' inline
 *                  free refuses it too); a slab's own list is checked at
 *                  every free that reaches it (heap.c)
 *   LIST BOUND     every mode: every walk of a list stops at the most it can
 *                  hold, and report_list_overrun names the object met twice
 *                  (a double free with other frees between)
 *   SLAB LINK      harden_check_slab_link: a slab's own free list links only
 *                  slots of that slab handed out before
 *   SHUFFLE        PK_POOL_SHUFFLE pools only: fresh slots go out in an
 *                  unpredictable order (central.c,
 *                  take_fresh_shuffled; constants and their figures in
 *                  policy.h)
 * and the report they share (report_corrupted_link, harden.c), which says
 * what most likely happened.
 * Every pointer given to free on a slow path is also checked on every
 * pool, hardened or not (central_check_free, central.c).
 *
 * Invariant: every object on a hardened pool's slot list was checked on
 * its way in (free: its slab, aligned as a slot, not the head; on the grid
 * exactly where the slot is a power of two) and its link is checked before
 * it is followed (alloc: its slab and alignment, the hot object, or the
 * end), so a forged or overflowed link is reported, never handed out. A
 * pointer the fast checks do not place goes on to the library, whose exact
 * checks (slot arithmetic, the address map) report it; the inline paths
 * report nothing themselves. Known gap: where the slot is not a power of
 * two, a pointer into an object of the current slab that is aligned as a
 * slot start would be passes the inline free; it is reported if still
 * listed when the list goes home, and is otherwise handed out (docs/design.md).
 *
 * Included by pool_types.h after struct pk_pool; not on its own.
 */
#ifndef POOLKIT_HARDEN_H
#define POOLKIT_HARDEN_H

#include "base/link.h"
#include "pool/pool_types.h"

/* Link words: where a free object keeps the next one's address. Every
 * pool's lists go through link_load / link_store; hardened pools' words are
 * encoded. */
static inline uintptr_t *link_of(const pk_pool *p, void *obj) {
    return (uintptr_t *)((char *)obj + p->link_off);
}

/* LINK ENCODING: hardened pools keep each link word as
 * rot32(link ^ secret ^ object): xor-ed with a per-pool secret and the
 * link's own object (SLUB's CONFIG_SLAB_FREELIST_HARDENED), then its halves
 * swapped. The swap is what makes overflows show: a linear overflow from
 * the slot before writes the word's first bytes, which after the swap are
 * the decoded pointer's high half, so any change to them moves the pointer
 * out of its slab, which the same-slab check catches (mimalloc's rotate in
 * mi_ptr_encode serves the same end with a secret amount). The inline
 * paths (pool.h, pk__rot32) compute the same words. */
static inline uintptr_t link_encode(const pk_pool *p, const void *obj, uintptr_t v) {
    return link_encode_with(p->hard.secret, obj, v);
}
static inline uintptr_t link_decode(const pk_pool *p, const void *obj, uintptr_t stored) {
    return link_decode_with(p->hard.secret, obj, stored);
}
/* HOT_FOREIGN on a hardened list (pool_free.c, foreign_home_hardened): an
 * object of another heap's slab that the short path put onto a list that
 * was not empty carries in its second word its own address, encoded as a
 * link under another key (HOT_TAG), so that the library follows a link to
 * it (heap.c, hot_link) and to no other slot of such a slab: a live
 * object's second word is the program's. Slots of two words or more. */
#define HOT_TAG ((uintptr_t)0x5bd1e9955bd1e995ull)
static inline uintptr_t hot_tag(uintptr_t secret, const void *obj) {
    return link_encode_with(secret ^ HOT_TAG, (const uintptr_t *)obj + 1, (uintptr_t)obj);
}

/* The word at link_off in obj as stored (a plain pool's link), for a
 * loop that holds the offset apart. */
static inline uintptr_t link_load_plain(void *obj, size_t link_off) {
    uintptr_t *l = (uintptr_t *)((char *)obj + link_off);
    track_open(l, sizeof *l);
    uintptr_t v = *l;
    track_close(l, sizeof *l);
    return v;
}
static inline uintptr_t link_load(const pk_pool *p, void *obj) {
    uintptr_t v = link_load_plain(obj, p->link_off);
    return p->hardened ? link_decode(p, obj, v) : v;
}
static inline void link_store(const pk_pool *p, void *obj, uintptr_t v) {
    uintptr_t *l = link_of(p, obj);
    track_open(l, sizeof *l);
    *l = p->hardened ? link_encode(p, obj, v) : v;
    track_close(l, sizeof *l);
}

/* A remote-free chain's mark (pool_internal.h, chains_counted): in the
 * head object's second word, encoded on hardened pools at that word's
 * address. */
static inline void chain_mark_store(const pk_pool *p, void *head, uintptr_t mark) {
    uintptr_t *w = (uintptr_t *)head + 1;
    track_open(w, sizeof *w);
    *w = p->hardened ? link_encode(p, w, mark) : mark;
    track_close(w, sizeof *w);
}
static inline uintptr_t chain_mark_load(const pk_pool *p, void *head) {
    uintptr_t *w = (uintptr_t *)head + 1;
    track_open(w, sizeof *w);
    uintptr_t v = *w;
    track_close(w, sizeof *w);
    return p->hardened ? link_decode(p, w, v) : v;
}

/* The report every check shares: the free object holder links to link,
 * which is `why` (not one of the pool's objects...); reported as a
 * corrupted free list, with what most likely happened: an overflow from
 * the slot before when only the word's first bytes are off, else a write
 * after free or a double free (harden.c). */
PK_COLD __attribute__((noreturn)) void report_corrupted_link(const pk_pool *p, const void *holder,
                                                             const void *link, const char *why);

/* The same report for a link word that decodes to link, which no check
 * accepts, with what most likely happened read from the word (harden.c):
 * an overflow when only its first bytes changed, else a write after free
 * or a double free. */
PK_COLD __attribute__((noreturn)) void report_bad_link(const pk_pool *p, const void *holder, const void *link,
                                                       const char *why);

/* A walk of a free list of slab s (list names it: a thread's list, a
 * slab's free list, its remote frees), from head, met more objects than the
 * list can hold: it holds one twice (a loop), or a link leaves the slab.
 * Walks it again (bounded: a bitmap of the slab's slots; hot, an object of
 * another slab the list may hold once, aside) and reports the object met
 * twice as a double free, or the link out of the slab as a corrupted link.
 * Every mode: every walk of a free list stops at the most it can hold. */
PK_COLD __attribute__((noreturn)) void report_list_overrun(const pk_pool *p, const slab *s, void *head,
                                                           const void *hot, const char *list);

/* SLOT GRID, slot_of_slab_at: x starts one of the slots of the slab that
 * holds `in` (the same aligned block, past any header, on the slot grid,
 * below the capacity), from the geometry alone: no slab record, no address
 * map. */
static inline bool slot_of_slab_at(const pk_pool *p, uintptr_t x, uintptr_t in) {
    uintptr_t mask = SLAB_BYTES - 1, at = x & mask;
    if ((x & ~mask) != (in & ~mask) || at < p->geo.header) return false;
    uintptr_t off = at - p->geo.header;
    return off < (uintptr_t)p->geo.capacity * p->geo.slot && slot_on_grid(off, p->geo.slot, p->geo.recip);
}

/* SAME SLAB, hard_near: x lies in the slab of `cur` (a thread's current
 * slab word: its base with the low bits set) and starts a slot. False
 * sends the caller on to the exact check, never to a report. */
static inline bool hard_near(const pk_pool *p, uintptr_t x, uintptr_t cur) {
    return (x | p->slab_low) == cur && slot_of_slab_at(p, x, cur);
}

/* SLAB LINK: a hardened pool's slab free list links only slots of that
 * slab that were handed out before (slot index below bump), or ends
 * (NULL); anything else was written by someone else and is reported, never
 * followed (central.c, on every take and at a slab's release). */
static inline void harden_check_slab_link(pk_pool *p, slab *s, void *from, void *next) {
    if (!next || slab_slot_handed(s, next)) return;
    report_bad_link(p, from, next, "not a free slot of its slab");
}

/* Every mode, before the library follows a link of slab s's lists (a
 * slab's free list, its remote frees): a hardened pool's SLAB LINK check;
 * elsewhere only that the link lies within the slab's slots, so that
 * reading it cannot fault (a compare; default pools check no grid). */
static inline void check_slab_link(pk_pool *p, slab *s, void *from, void *next) {
    if (p->hardened) {
        harden_check_slab_link(p, s, from, next);
        return;
    }
    if (unlikely(next && (uintptr_t)next - (uintptr_t)s->objects >= (uintptr_t)s->capacity * p->geo.slot))
        report_bad_link(p, from, next, "not a slot of its slab");
}

#endif
