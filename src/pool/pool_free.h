/* pool_free.c (and the short path below): which path each free takes. The
 * owner's free of an object of another of its slabs (its slab's state
 * changes: heap.c), the heap's, frees into another heap's slab (pending
 * chains, pushed by remote.c), and direct pools' frees; pool_free.c's
 * dispatch (pk__pool_free_slow, pool_free_generic) sends each to its path. */
#ifndef POOLKIT_POOL_FREE_H
#define POOLKIT_POOL_FREE_H

#include "pool/harden.h"
#include "pool/heap.h"

/* The calling thread's slot for the pool at handle p, from the handle's
 * bits as pool.h finds it (reads nothing of the pool's record). */
static inline tc_slot *slot_of_handle(const pk_pool *p) {
    uintptr_t key_bits = (((uintptr_t)1 << PK__KEY_BITS) - 1) << PK__SLOT_SHIFT;
    return (tc_slot *)(pk__tc_table + (((uintptr_t)p >> (PK__RECORD_SHIFT - PK__SLOT_SHIFT)) & key_bits));
}

/* The short path's body, once s, the record of the slab whose place holds
 * obj, is found (its region is mapped): the owner's free into one of its
 * slabs that is not the current one, on a plain pool (tc_slot.low 0) or a
 * hardened one the inline paths serve (its link encoded with the slot's
 * secret: harden.h, LINK ENCODING). The record says who owns the slab and
 * where its slots lie (the pointer must start one: slab_has_slot), so the
 * owner's check needs neither the address map nor the pool's record; a
 * slab the heap adopted from a thread gone is one of its slabs like any
 * other. The object goes onto its own slab's list, as mimalloc's free
 * pushes onto its page's: a push and a count, no list move. FREE_DONE if
 * done; FREE_EDGE for a free that changes lists (its slab was full, or
 * empties) or gives the slab list's head again, which the caller sends to
 * heap_free_owned with the slab found (the library's path would find the
 * same slab again and take the same steps); on a caller that passed no
 * current slab word, not for an object of the current slab, whose list is
 * the thread's; FREE_LIBRARY for anything else, which the library's paths
 * check and report. plain: known
 * plain, with a current slab (cur set). FREE_FOREIGN: a slab another heap
 * (or none) holds, none of whose other fields were read. */
enum { FREE_LIBRARY, FREE_DONE, FREE_EDGE, FREE_FOREIGN };

/* obj onto c's hardened list, which is empty, as its end: the object of
 * another slab such a list holds (HOT_FREES, and HOT_FOREIGN's first),
 * which the inline allocation takes back, and a link to which from an
 * object of the current slab freed after it sends that allocation to the
 * library, which accepts a link to hot_obj (heap.c, hot_link). */
static inline void hot_push_hardened(tc_slot *c, heap *h, void *obj) {
    *(uintptr_t *)obj = link_encode_with(c->secret, obj, 0);
    h->hot_obj = obj;
    __atomic_store_n(&c->hhead, obj, __ATOMIC_RELAXED);
}

/* HOT_COUNT (policy.h): obj goes onto h's list with n objects of other
 * slabs under it: its second word says so, keyed. */
static inline void hot_mark(heap *h, void *obj, size_t n) {
    uintptr_t *w = (uintptr_t *)obj + 1;
    track_open(w, sizeof *w);
    *w = n ^ (uintptr_t)obj ^ h->hot_key;
    track_close(w, sizeof *w);
    h->hot_n = n + 1;
    h->hot_stop = NULL;
}

/* HOT_COUNT: the objects of other slabs on h's list, whose head is head
 * (not NULL), at most: a head the short path listed says how many (its
 * second word: the count under it, keyed); one that is the list's only
 * object, at most itself; any other (an object of the current slab),
 * hot_n, the count after the last listing (taken back or not since). */
static inline size_t hot_listed(const heap *h, void *head) {
    uintptr_t *w = (uintptr_t *)head;
    track_open(w, 2 * sizeof *w);
    uintptr_t i = w[1] ^ (uintptr_t)head ^ h->hot_key;
    size_t n = i < h->hot_room ? i + 1 : w[0] ? h->hot_n : 1;
    track_close(w, 2 * sizeof *w);
    return n;
}

/* HOT_FREES and HOT_LIST (policy.h): whether obj, an object of another
 * slab h owns (not the list's head), may go onto h's list, whose head is
 * head: onto an empty list always; onto another while the list holds
 * fewer than hot_room such objects (HOT_COUNT) or the budget lasts (its
 * count spent, hot_bar cleared as it runs out). The caller pushes it. */
static inline bool hot_takes(heap *h, void *head, void *obj) {
    if (!head) {
        if (h->hot_count) hot_mark(h, obj, 0);
        return true;
    }
    if (h->hot_count) {
        /* refused at this head before: the list has not shrunk since (a
         * teardown's frees past the bound, one compare each) */
        size_t room = h->hot_room; /* read once: hot_mark's store into obj may alias it */
        size_t n = head == h->hot_stop ? room : hot_listed(h, head);
        bool takes = n < room;
        if (takes) hot_mark(h, obj, n);
        else h->hot_stop = head;
        return takes;
    }
    if (!h->hot_room) return false;
    if (--h->hot_room == 0) h->hot_bar = 0;
    return true;
}

static inline int free_into_slab(tc_slot *c, slab *s, void *obj, bool plain) {
    heap *h = c->heap;
    uintptr_t x = (uintptr_t)obj;
    /* owner first: only a slab's owner reads its other fields here */
    if (unlikely(__atomic_load_n(&s->owner, __ATOMIC_RELAXED) != h)) return FREE_FOREIGN;
    if (unlikely(!slab_has_slot(s, x))) return FREE_LIBRARY;
    if (plain) {
        /* HOT_FREES: the list is empty (its slab used up), so the next
         * allocation takes this object while it is in cache, and no slab
         * changes hands for it; HOT_LIST: onto a list that is not empty
         * too, while the heap's budget lasts (hot_bar, one compare as the
         * test for an empty list). */
        void *head = __atomic_load_n(&c->head, __ATOMIC_RELAXED);
        if ((uintptr_t)head <= h->hot_bar) {
            if (unlikely(obj == head && head)) return FREE_LIBRARY; /* freed again: reported */
            if (!hot_takes(h, head, obj)) goto home;
            *(void **)obj = head;
            __atomic_store_n(&c->head, obj, __ATOMIC_RELAXED);
            return FREE_DONE;
        }
        if (unlikely(obj == head)) return FREE_LIBRARY; /* freed again: reported */
    } else if (c->secret) {
        /* HOT_FREES on a hardened list: onto it only when it is empty (the
         * inline allocation follows a link only within the current slab or
         * to the end) */
        void *head = __atomic_load_n(&c->hhead, __ATOMIC_RELAXED);
        if (unlikely(obj == head)) return FREE_LIBRARY; /* freed again: reported */
        if (!head && h->cur) {
            hot_push_hardened(c, h, obj);
            return FREE_DONE;
        }
    } else if (unlikely(obj == __atomic_load_n(&c->head, __ATOMIC_RELAXED))) {
        /* a plain list's head freed again, by a caller that passed no
         * current slab word (pool_free_at: pk_free's second try, after its
         * own short path saw the head): the list holds objects of other
         * slabs too (HOT_FREES, OWN_FREES), so the head may be one of s */
        return FREE_LIBRARY;
    }
home:;
    void *f = s->free;
    uint32_t used = s->used;
    /* a full slab (no free list: it moves to avail), the last object home
     * (the slab empties), the list's head given again (reported) */
    if (unlikely(!f) || unlikely(used <= 1) || unlikely(obj == f))
        return plain || s != h->cur ? FREE_EDGE : FREE_LIBRARY;
    uintptr_t secret = c->secret;
    *(uintptr_t *)obj = plain || !secret ? (uintptr_t)f : link_encode_with(secret, obj, (uintptr_t)f);
    h->warm = s;
    s->free = obj;
    s->used = used - 1;
    h->short_frees++; /* the owner's only; read by it, or by another thread once it is quiescent */
    return FREE_DONE;
}

/* obj, whose place is s's, a slab that c's heap does not own: onto the
 * heap's pending chain for s's owner (a remote free, as the dispatch would
 * send it, without finding the slab again) if another heap holds s and obj
 * is one of its pool's slots; false for anything else (a slab of the
 * pool's own, which the dispatch may adopt; another pool's; no slot), which
 * the library's dispatch takes and reports. */
bool free_foreign(tc_slot *c, slab *s, void *obj);

/* free_short's steps once a region is known to lie at obj. */
static inline bool free_short_in(tc_slot *c, void *obj, bool plain) {
    slab *s = slab_of((uintptr_t)obj);
    int done = free_into_slab(c, s, obj, plain);
    if (done == FREE_EDGE) heap_free_owned(c->heap, s, obj);
    else if (done == FREE_FOREIGN) return free_foreign(c, s, obj);
    return done == FREE_DONE || done == FREE_EDGE;
}

/* The short path: the owner's free of an object of one of its slabs that
 * is not the current one (free_into_slab), after the region map says a
 * region lies at the address, so that its record, found by masking
 * (region.h), may be read. The map is read for every pointer: a compare
 * with the current slab's word that skipped it for objects of that slab's
 * region was a branch that frees in random order over more than one region
 * went either way at random, mispredicted as often (docs/results.md,
 * "Random frees and the region map"). */
static inline bool free_short(tc_slot *c, void *obj, bool plain) {
    /* plain pools (low 0) store links as they are, hardened ones whose
     * inline paths the slot serves (secret set) encode them (harden.h);
     * the others have something to do per object, in the library */
    if (!plain && unlikely(!c->heap || (c->low && !c->secret))) return false;
    if (unlikely(!region_holds((uintptr_t)obj))) return false;
    return free_short_in(c, obj, plain);
}

/* A free by a thread with a heap for p in slot c, obj already checked to
 * be a slot of s; now: the time if the caller read it, else 0 (read only if
 * a slab goes back to the pool). */
void free_checked(pk_pool *p, tc_slot *c, slab *s, void *obj, uint64_t now);
/* free_checked with the heap in hand (heap_get's for the slot: a bulk
 * free finds it once). */
void free_checked_in(pk_pool *p, heap *h, slab *s, void *obj, uint64_t now);
/* free_checked_in of each of n objects (not NULL: reported) of h's
 * thread, each checked (free_slab_of) unless trusted; a run of them that
 * go home to one slab goes in one move (heap_free_home_run). */
void free_checked_bulk(pk_pool *p, heap *h, void **objs, size_t n, bool trusted, uint64_t now);
/* The slab of pool p whose slot starts at obj, from its record, or the
 * address map's report. */
slab *free_slab_of(pk_pool *p, void *obj);
/* The hardened lean path's free: obj, of h's current slab, on its grid and
 * not the head, pushed encoded (true); the head freed again reported;
 * false for anything else. */
bool free_lean(pk_pool *p, heap *h, void *obj);
/* Every free the inline paths and the short path do not serve, any pool
 * (also fastpath.c's pk_pool_free where the header has no inline path). */
void pool_free_generic(pk_pool *p, void *obj);
/* pk__pool_free_slow for a caller that wraps it (the size-class front
 * end): caller is the user's call site, which debug pools record. */
void pool_free_at(pk_pool *p, void *obj, void *caller);
/* Direct pools: obj (not NULL, the pool live) back to its slab, under the
 * pool's lock (taken here). */
void free_direct(pk_pool *p, void *obj, uint64_t now);

#endif
