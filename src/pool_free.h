/* pool_free.c (and the short path below): every free path. The owner's
 * free of an object of another of its slabs, the heap's (a slab that fills
 * or empties), remote frees (pending chains), frees by an exiting thread,
 * and direct pools' frees. pool_slow.c only dispatches to them. */
#ifndef POOLKIT_POOL_FREE_H
#define POOLKIT_POOL_FREE_H

#include "pool_types.h"

/* The calling thread's slot for the pool at handle p, from the handle's
 * bits as pool.h finds it (reads nothing of the pool's record). */
static inline tc_slot *slot_of_handle(const pk_pool *p) {
    uintptr_t key_bits = (((uintptr_t)1 << PK__KEY_BITS) - 1) << PK__SLOT_SHIFT;
    return (tc_slot *)(pk__tc_table + (((uintptr_t)p >> (PK__RECORD_SHIFT - PK__SLOT_SHIFT)) & key_bits));
}

/* The short path: the owner's free of an object of one of its slabs that
 * is not the current one, on a plain pool (tc_slot.low 0) or a hardened
 * one the inline paths serve (its link encoded with the slot's secret:
 * harden.h, LINK ENCODING; the record's exact slot grid is checked, as the
 * library checks it), when nothing
 * changes lists (the slab neither was full nor empties) and the object is
 * not the slab list's head freed again; a slab the heap adopted from a
 * thread gone is one of its slabs like any other. The slab's record is found by
 * masking (region.h), after the region map says there is one; the record
 * says who owns the slab and where its slots lie (the pointer must start
 * one), so the owner's check needs neither the address map nor the pool's
 * record. The object goes onto its own slab's list, as mimalloc's free
 * pushes onto its page's. True if done; anything else goes on to the
 * library's paths, which check and report. */
static inline bool free_short(tc_slot *c, void *obj, uintptr_t cur, bool plain) {
    heap *h = c->heap;
    uintptr_t x = (uintptr_t)obj, secret = c->secret;
    /* plain pools (low 0) store links as they are, hardened ones whose
     * inline paths the slot serves (secret set) encode them (harden.h);
     * the others have something to do per object, in the library */
    if (!plain && unlikely(!h || (c->low && !secret))) return false;
    /* the current slab's region is mapped: the map is read only for others;
     * callers with no current slab's word (cur 0: hardened pools) ask it of
     * every pointer, NULL and low addresses included */
    if ((!plain || ((x ^ cur) >> REGION_SHIFT) != 0) && unlikely(!region_holds(x))) return false;
    slab *s = slab_of(x);
    /* owner first: only a slab's owner reads its other fields here */
    if (unlikely(__atomic_load_n(&s->owner, __ATOMIC_RELAXED) != h)) return false;
    void *f = s->free;
    uintptr_t off = x - (uintptr_t)s->objects, slot = s->step;
    /* off * recip wraps below recip exactly when off is a whole number of
     * slots (slot_on_grid); a slab whose slots pass 4 GiB has no recip and
     * goes on to the library */
    if (unlikely(off >= s->extent || off * s->recip >= s->recip)) return false;
    if (plain) {
        /* HOT_FREES: the list is empty (its slab used up), so the next
         * allocation takes this object while it is in cache, and no slab
         * changes hands for it; HOT_LIST: onto a list that is not empty
         * too, while the heap's budget lasts (hot_bar, one compare as the
         * test for an empty list). */
        void *head = c->head;
        if ((uintptr_t)head <= h->hot_bar) {
            if (head) {
                if (unlikely(obj == head)) return false; /* freed again: reported */
                if (--h->hot_room == 0) h->hot_bar = 0;
            }
            *(void **)obj = head;
            __atomic_store_n(&c->head, obj, __ATOMIC_RELAXED);
            return true;
        }
        if (unlikely(obj == head)) return false; /* freed again: reported */
    }
    if (unlikely(!f || obj == f || s->used <= 1)) return false;
    s->disorder += x - (uintptr_t)f + slot > 2 * slot; /* not next to the one before (RESTART_DISORDER) */
    *(uintptr_t *)obj = plain || !secret ? (uintptr_t)f : link_encode_with(secret, obj, (uintptr_t)f);
    s->free = obj;
    s->used--;
    c->frees++; /* the owner's only; read by it, or by another thread once it is quiescent */
    return true;
}

/* A free by a thread with a heap for p in slot c, obj already checked to
 * be a slot of s; now: the time if the caller read it, else 0 (read only if
 * a slab goes back to the pool). */
void free_checked(pk_pool *p, tc_slot *c, slab *s, void *obj, uint64_t now);
/* The slab of pool p whose slot starts at obj, from its record, or the
 * address map's report. */
slab *free_slab_of(pk_pool *p, void *obj);
/* obj, an object of another owned slab that was on h's list (HOT_FREES),
 * home to its slab; with list_moves its slab moves lists as a free would
 * move it, else (the pool's lock held: the heap is being abandoned) it
 * only goes onto the slab's list. */
void free_home_hot(pk_pool *p, heap *h, void *obj, bool list_moves);
/* A free by a thread that has no heap (exiting): straight onto the slab's
 * thread_free. */
void free_remote_now(pk_pool *p, slab *s, void *obj);
/* The heap's pending chain home (one push). */
void free_flush_pending(pk_pool *p, heap *h);
/* The hardened lean path's free: obj, of h's current slab, on its grid and
 * not the head, pushed encoded (true); the head freed again reported;
 * false for anything else. */
bool free_lean(pk_pool *p, heap *h, void *obj);
/* Direct pools: obj (not NULL, the pool live) back to its slab, under the
 * pool's lock (taken here). */
void free_direct(pk_pool *p, void *obj, uint64_t now);

#endif
