/* Hardening: every check a hardened pool (PK_POOL_HARDENED, POOLKIT_HARDENED)
 * makes, in one place (snmalloc's mem/freelist.h), each named:
 *
 *   LINK ENCODING  link_code: a free object's link word is stored xor-ed
 *                  with a per-pool secret and the object's own address, so
 *                  a pointer written over a free object decodes to garbage
 *   CURRENT SLAB   a thread's slot list holds objects of its current slab
 *                  only, so each link followed must name a slot of that
 *                  slab (hard_near on the lean path, harden_check_slab_link
 *                  on the heap path), and remote-free chains are walked and
 *                  checked link by link when collected (central_collect)
 *   SLOT GRID      hard_grid: an offset from slot 0 is a whole number of
 *                  slots, by a multiply
 *   SAME SLAB      hard_near: a pointer in the slab of a slot already known
 *                  to be the pool's, on the grid (the lean path's check, no
 *                  address map)
 *   SLAB LINK      harden_check_slab_link: a slab's own free list links only
 *                  slots of that slab handed out before
 *   SHUFFLE        fresh slots go out in an unpredictable order (central.c,
 *                  take_fresh_shuffled; constants and their figures in
 *                  policy.h)
 * and the report they share (report_corrupted_link, harden.c). Every
 * pointer given to free is also checked on every pool, hardened or not
 * (central_check_free, central.c).
 *
 * Invariant: every object on a hardened pool's list was checked on its way
 * in (free) and its link is checked before it is followed (alloc), so a
 * forged link is reported, never handed out. A freed pointer hard_near
 * does not place goes on to the heap path, whose exact check (the address
 * map) reports it; hard_near itself never reports.
 *
 * Included by pool_internal.h after struct pk_pool; not on its own.
 */
#ifndef POOLKIT_HARDEN_H
#define POOLKIT_HARDEN_H

/* Link words: where a free object keeps the next one's address. Every
 * pool's lists go through link_load / link_store; hardened pools' words are
 * encoded. */
static inline uintptr_t *link_of(const pk_pool *p, void *obj) {
    return (uintptr_t *)((char *)obj + p->link_off);
}

/* LINK ENCODING: hardened pools keep each link word xor-ed with a
 * per-pool secret and the link's own object, so a forged or overwritten
 * link decodes to garbage that the pool's checks catch instead of
 * following. link_code goes both
 * ways (xor is its own inverse); written in this order so that the
 * compiler can test a decoded NULL as one compare on the lean path. */
static inline uintptr_t link_code(const pk_pool *p, const void *obj, uintptr_t v) {
    return v ^ p->hard.secret ^ (uintptr_t)obj;
}
static inline uintptr_t link_load(const pk_pool *p, void *obj) {
    uintptr_t *l = link_of(p, obj);
    track_open(l, sizeof *l);
    uintptr_t v = *l;
    track_close(l, sizeof *l);
    return p->hardened ? link_code(p, obj, v) : v;
}
static inline void link_store(const pk_pool *p, void *obj, uintptr_t v) {
    uintptr_t *l = link_of(p, obj);
    track_open(l, sizeof *l);
    *l = p->hardened ? link_code(p, obj, v) : v;
    track_close(l, sizeof *l);
}

/* The report every check shares: the free object holder links to link,
 * which is `why` (not one of the pool's objects...); reported as a
 * corrupted free list, with its likely cause (harden.c). */
PK_COLD __attribute__((noreturn)) void report_corrupted_link(const pk_pool *p, const void *holder,
                                                             const void *link, const char *why);

/* Hardened pools' lean paths (pool_slow.c) check that a pointer x starts a
 * slot of the pool. SLOT GRID, hard_grid: off (from slot 0 of x's slab) is
 * on the slot grid, by a multiply: for off < 2^32, off is a multiple of the
 * slot exactly when off * ceil(2^64 / slot) wraps below ceil(2^64 / slot).
 * SAME SLAB, hard_near, without the address map: x lies in the same slab as
 * `near`, a slot already known to be the pool's, on the grid. False sends
 * the caller on to the exact check, never to a report. */
static inline bool hard_grid(const pk_pool *p, uintptr_t off) {
    /* slot_on_grid without its test of recip: the lean path is on only
     * where a slab's slots span less than 4 GiB, so recip is never 0 */
    return off < p->hard.span && off * p->hard.recip < p->hard.recip;
}

static inline bool hard_near(const pk_pool *p, uintptr_t x, uintptr_t near) {
    return (x ^ near) <= p->hard.mask && hard_grid(p, (x & p->hard.mask) - p->hard.header);
}

/* SLAB LINK: a hardened pool's slab free list links only slots of that
 * slab that were handed out before (slot index below bump), or ends
 * (NULL); anything else was written by someone else and is reported, never
 * followed (central.c, on every take and at a slab's release). */
static inline void harden_check_slab_link(pk_pool *p, slab *s, void *from, void *next) {
    long idx = next ? slab_slot_index(s, next, &p->geo) : 0;
    if (!next || (idx >= 0 && (uint32_t)idx < s->bump)) return;
    report_corrupted_link(p, from, next, "not a free slot of its slab");
}

#endif
