/* Every free path but the inline ones (pool.h) and the short one
 * (pool_free.h): mimalloc's free.c.
 *
 *   - heap path: the calling thread's heap. An object of its current slab
 *     goes onto its list; of another slab it owns, onto that slab's own
 *     list, the slab moving from full to avail, or, once its last object
 *     is home, becoming the heap's spare (heap.c, heap_free_home); of a slab of a thread
 *     gone (the pool's own), the heap adopts the slab first if its last
 *     refill left it short of a slab and it has adopted none since (else
 *     the object goes as a remote free, below); of a slab
 *     another heap owns, it gathers in a pending chain that goes home by
 *     one atomic push per run (REMOTE_BATCH, remote.c), for the owner to
 *     collect.
 *   - an exiting thread (no heap): straight onto the slab's thread_free
 *     (remote_push_one).
 *   - direct pools (debug, a limit): under the pool's lock, onto the slab.
 * Every pointer is checked before it is linked anywhere: against its
 * slab's record (free_slab_of), or by the address map (check.c), which
 * reports anything that is not a slot of the pool.
 */
#include "pool/pool_free.h"
#include "pool/pool_valid.h"
#include "pool/central.h"
#include "pool/check.h"
#include "pool/heap.h"
#include "pool/remote.h"
#include "pool/purge.h"
#include "pool/pools.h"
#include "pool/sweep.h"
#include "pool/tcache.h"
#include "base/sites.h"

#include <string.h>

slab *free_slab_of(pk_pool *p, void *obj) {
    uintptr_t x = (uintptr_t)obj;
    if (likely(region_holds(x))) {
        slab *s = slab_of(x);
        if (likely(__atomic_load_n(&s->pool, __ATOMIC_RELAXED) == p)) {
            uintptr_t off = x - (uintptr_t)s->objects;
            if (likely(off < s->extent && slot_on_grid(off, s->slot, s->recip))) return s;
        }
    }
    return check_free(p, obj); /* reports it */
}

/* ---- Remote frees. ---- */

/* A remote free that starts a chain, ends one (REMOTE_BATCH), tells the
 * pool's peak estimate, or gives the chain's head again (reported). */
static PK_NOINLINE void free_remote_edge(pk_pool *p, heap *h, slab *s, void *obj) {
    BUMP(h->remote_frees, 1);
    /* a thread that only frees has no refills: it tells the pool's peak
     * estimate every REMOTE_BATCH frees instead */
    if ((h->remote_frees & (REMOTE_BATCH - 1)) == 0) heap_note_peak(p, h);
    if (h->pend_slab == s) {
        if (unlikely(obj == h->pend_head)) check_report_double_free(p, obj);
        link_store(p, obj, (uintptr_t)h->pend_head);
        h->pend_head = obj;
        BUMP(h->pend_n, 1);
        if (h->pend_n >= REMOTE_BATCH) remote_flush(p, h);
        return;
    }
    if (h->pend_slab) remote_flush(p, h);
    /* an object at the head of its slab's remote list is free already: the
     * head of the chain this thread sent home last (the object it freed
     * last, when that chain ended full), or of another thread's, freed
     * again; a chain started with it would cut the one home short */
    if (unlikely(obj == __atomic_load_n(&s->thread_free, __ATOMIC_RELAXED))) check_report_double_free(p, obj);
    h->pend_slab = s;
    h->pend_head = h->pend_tail = obj;
    BUMP(h->pend_n, 1);
}

/* obj onto h's pending chain, whose slab is obj's: a push and two counts;
 * false for a chain's end, the peak's note and the head freed again
 * (free_remote_edge's). plain: the caller knows the slot plain (its low 0:
 * the link is the object's first word, stored as it is), so the pool is
 * not asked how it stores links. */
static inline __attribute__((always_inline)) bool pend_push(pk_pool *p, heap *h, void *obj, bool plain) {
    uint64_t n = h->remote_frees + 1;
    size_t k = h->pend_n + 1;
    void *head = h->pend_head;
    if (unlikely(obj == head) || unlikely((n & (REMOTE_BATCH - 1)) == 0) || unlikely(k >= REMOTE_BATCH)) return false;
    __atomic_store_n(&h->remote_frees, n, __ATOMIC_RELAXED);
    if (plain) *(void **)obj = head;
    else link_store(p, obj, (uintptr_t)head);
    h->pend_head = obj;
    __atomic_store_n(&h->pend_n, k, __ATOMIC_RELAXED);
    return true;
}

/* obj onto the pending chain of its slab s: the push where the chain is
 * s's, the rest apart (free_remote_edge), so that this path keeps no
 * frame (the instruction gate's remote count). */
static PK_NOINLINE void free_remote(pk_pool *p, heap *h, slab *s, void *obj) {
    if (likely(h->pend_slab == s) && likely(pend_push(p, h, obj, false))) return;
    free_remote_edge(p, h, s, obj);
}

/* HOT_FOREIGN's rule for both lists: whether obj, of a slab another heap
 * holds, goes onto the thread's list whose head is head, an empty list
 * always (it renews the budget), another while the budget lasts; the head
 * freed again is reported. */
static inline bool foreign_takes(pk_pool *p, heap *h, const void *head, void *obj) {
    if (!head) {
        h->foreign_room = p->foreign_budget; /* the list holds no such object now */
        return true;
    }
    if (unlikely(obj == head)) check_report_double_free(p, obj); /* freed again */
    if (!h->foreign_room) return false; /* the budget is spent: home */
    h->foreign_room--;
    return true;
}

/* free_foreign_home's hardened list (the inline paths serve it), by the
 * same rule: onto an empty list as its end (hot_obj), and onto one that is
 * not empty with its link encoded and its second word tagged (harden.h,
 * hot_tag). The
 * inline allocation takes it back when its link leads into the current
 * slab or ends; where it leads to another such object the library follows
 * it (heap.c, hot_link). Onto an empty list only, a server's frees of
 * another live thread's objects went home one by one and its allocations
 * refilled every few calls (docs/results.md, "A hardened list keeps other
 * threads' objects"). Apart, so that the default half keeps no frame. */
static PK_NOINLINE void foreign_home_hardened(tc_slot *c, heap *h, slab *s, void *obj) {
    pk_pool *p = h->pool;
    void *head = __atomic_load_n(&c->hhead, __ATOMIC_RELAXED);
    if (!foreign_takes(p, h, head, obj)) {
        free_remote(p, h, s, obj);
        return;
    }
    if (!head) {
        hot_push_hardened(c, h, obj);
        return;
    }
    ((uintptr_t *)obj)[1] = hot_tag(c->secret, obj);
    *(uintptr_t *)obj = link_encode_with(c->secret, obj, (uintptr_t)head);
    __atomic_store_n(&c->hhead, obj, __ATOMIC_RELAXED);
}

/* obj, a slot of s, a slab another heap holds: a remote free, or, where
 * HOT_FOREIGN (policy.h) is on (the pool holds HOT_FOREIGN_SLABS slabs or
 * more), onto the thread's list while the list is empty or the budget
 * lasts (a hardened list: while it is empty). Apart from free_foreign, so
 * that the short path that takes it keeps no frame (the instruction gate's
 * remote and owner's other-slab counts). */
static PK_NOINLINE void free_foreign_home(tc_slot *c, heap *h, slab *s, void *obj) {
    pk_pool *p = h->pool;
    if (__atomic_load_n(&p->foreign_on, __ATOMIC_RELAXED) && h->cur) {
        if (c->secret) {
            foreign_home_hardened(c, h, s, obj);
            return;
        }
        void *head = __atomic_load_n(&c->head, __ATOMIC_RELAXED);
        if (foreign_takes(p, h, head, obj)) {
            *(void **)obj = head;
            __atomic_store_n(&c->head, obj, __ATOMIC_RELAXED);
            return;
        }
    }
    if (!c->low && h->pend_slab == s && likely(pend_push(p, h, obj, true))) return;
    free_remote(p, h, s, obj);
}

bool free_foreign(tc_slot *c, slab *s, void *obj) {
    heap *h = c->heap;
    if (!h) return false;
    pk_pool *p = h->pool;
    heap *owner = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
    if (!owner || __atomic_load_n(&s->pool, __ATOMIC_RELAXED) != p || !slab_has_slot(s, (uintptr_t)obj))
        return false;
    free_foreign_home(c, h, s, obj);
    return true;
}

/* ---- The owner's frees. ---- */

/* A free into one of the pool's own slabs (its thread gone): the heap takes
 * the slab, an ordinary owned slab from then on (its frees take the short
 * path, its free slots serve the heap's next refills), if its last refill
 * left it short of a slab and it has taken none since (heap.may_adopt). A
 * thread that allocates from the pool so takes slabs no faster than it
 * needs them (heap.c, short_of_slab); a thread that only frees
 * (a main thread freeing what its exited workers left) would otherwise
 * gather every slab it frees into and never collect the frees other threads
 * make into them later, which only a refill does: slabs with no live object
 * kept for the rest of its life. Its other frees are remote, and those
 * slabs stay the pool's, for the next heap that needs a slab (which
 * collects them) or the purge. An adoption may walk the heap's slabs
 * (OWNED_WALK): the threads that free what the adopter made leave its
 * other slabs empty. */
static bool adopt(pk_pool *p, heap *h, slab *s) {
    h->may_adopt = false;
    pool_lock(p);
    bool mine = central_adopt(p, h, s);
    if (mine) heap_take_slab(p, h, s);
    POOL_VALIDATE(p);
    pool_unlock(p);
    if (mine) heap_walk_due(p, h);
    return mine;
}

void free_checked(pk_pool *p, tc_slot *c, slab *s, void *obj, uint64_t now) {
    free_checked_in(p, heap_get(p, c), s, obj, now);
}

/* free_checked_in's decision: obj listed, sent to another owner, or to
 * the heap through an adoption (true), or for its slab's free list, h's
 * and not current (false: the caller sends it home). */
static inline bool free_checked_away(pk_pool *p, heap *h, slab *s, void *obj) {
    void *head = tc_head(h->list);
    /* the head of the thread's list freed again */
    if (unlikely(obj == head)) check_report_double_free(p, obj);
    if (s == h->cur) {
        link_store(p, obj, (uintptr_t)head);
        list_set(h, obj, h->count + 1);
        return true;
    }
    heap *owner = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
    if (owner != h) {
        /* the pool's slab: the object its last heap's thread freed last
         * there, freed again (that thread exited, say), is free already */
        if (!owner && unlikely(obj == __atomic_load_n(&s->left_head, __ATOMIC_RELAXED)))
            check_report_double_free(p, obj);
        if (owner || s->lost || !h->may_adopt || !adopt(p, h, s)) {
            free_remote(p, h, s, obj);
            return true;
        }
    }
    /* HOT_FREES, and HOT_LIST but on hardened lists (their hot_list is 0),
     * whose links lead within the current slab but for the one hot object
     * (hot_obj) */
    if (h->cur && hot_takes(h, head, obj)) {
        if (p->hardened) h->hot_obj = obj;
        link_store(p, obj, (uintptr_t)head);
        list_set(h, obj, h->count + 1);
        return true;
    }
    return false;
}

void free_checked_in(pk_pool *p, heap *h, slab *s, void *obj, uint64_t now) {
    if (!free_checked_away(p, h, s, obj)) heap_free_home(p, h, s, obj, now);
}

void free_checked_bulk(pk_pool *p, heap *h, void **objs, size_t n, bool trusted, uint64_t now) {
    for (size_t i = 0; i < n;) {
        char *obj = objs[i++];
        if (unlikely(!obj)) check_report_null(p);
        slab *s = trusted ? slab_of((uintptr_t)obj) : free_slab_of(p, obj);
        track_takeback(p, obj);
        if (free_checked_away(p, h, s, obj)) continue;
        if (i == n || ((uintptr_t)objs[i] ^ (uintptr_t)obj) >> GRANULE_SHIFT) {
            heap_free_home(p, h, s, obj, now);
            continue;
        }
        /* Home, with the objects of its slab that follow it (an object of
         * its granule is one of its slab's, as slab_of says): what
         * free_checked_away decided for the first holds for them, since
         * nothing it reads changes; each is checked as the first was.
         * Freed again: the slab list's head, the run's, the thread list's,
         * or more objects than the slab has out. */
        if (unlikely(obj == s->free)) check_report_double_free(p, obj);
        char *head = obj;
        uint32_t k = 1;
        while (i < n && (((uintptr_t)objs[i] ^ (uintptr_t)obj) >> GRANULE_SHIFT) == 0) {
            char *next = objs[i++];
            if (!trusted) (void)free_slab_of(p, next);
            track_takeback(p, next);
            if (unlikely(next == head || next == tc_head(h->list) || k >= s->used)) check_report_double_free(p, next);
            link_store(p, next, (uintptr_t)head);
            head = next;
            k++;
        }
        heap_free_home_run(p, h, s, head, obj, k, now);
    }
}

/* ---- The hardened lean path (pool_slow.c says which pools take it). ---- */

bool free_lean(pk_pool *p, heap *h, void *obj) {
    /* An object of the current slab, on its grid, not the head: pushed
     * encoded. The head freed again is reported here; anything else
     * (another slab, a foreign or interior pointer) takes the heap path,
     * which checks and reports. */
    tc_list *l = h->list;
    char *head = tc_head(l);
    if (unlikely(obj == head && obj)) check_report_double_free(p, obj);
    if (!hard_near(p, (uintptr_t)obj, tc_cur(l))) return false;
    *(uintptr_t *)((char *)obj + p->link_off) = link_encode(p, obj, (uintptr_t)head);
    __atomic_store_n(&l->head, obj, __ATOMIC_RELAXED); /* no count: as inline */
    return true;
}

/* ---- Direct pools: the pool's lock on every call. ---- */

void free_direct(pk_pool *p, void *obj, uint64_t now) {
    track_takeback(p, obj);
    pool_lock_for_use(p, now);
    if (p->debug) check_debug_free(p, obj);
    central_give(p, check_handed_out(p, obj, NULL), obj);
    if (options_purge_delay_ms() == 0) central_release(p, false);
    purge_tick(p, now);
    POOL_VALIDATE(p);
    pool_unlock(p);
}

/* ---- The dispatch: pk_pool_free's miss, and every free the library makes. ---- */

void pool_free_generic(pk_pool *p, void *obj) {
    tc_slot *c = tc_slot_of(p);
    if (likely(obj && c->heap)) {
        slab *s = free_slab_of(p, obj);
        track_takeback(p, obj);
        free_checked(p, c, s, obj, 0);
        return;
    }
    c = p->cached && obj ? tcache_slot(p) : NULL;
    if (!c) {
        if (p->cached && obj) { /* an exiting thread: no heap, so home at once */
            slab *s = check_free(p, obj);
            track_takeback(p, obj);
            remote_push_one(p, s, obj);
            return;
        }
        pool_check_live(p, "pk_pool_free", obj);
        if (unlikely(!obj)) check_report_null(p);
        free_direct(p, obj, pool_purge_poll());
        return;
    }
    slab *s = check_free(p, obj);
    track_takeback(p, obj);
    free_checked(p, c, s, obj, 0);
}

static PK_NOINLINE void free_captured(pk_pool *p, void *obj, void *caller) {
    sites_capture(caller);
    pool_free_generic(p, obj);
}

static PK_NOINLINE void free_dispatch(pk_pool *p, void *obj, void *caller) {
    heap *h = tc_slot_of(p)->heap;
    if ((p->hard.lean & HARD_LEAN) && h && free_lean(p, h, obj)) return;
    if (unlikely(p->debug)) {
        free_captured(p, obj, caller);
        return;
    }
    pool_free_generic(p, obj);
}

/* A thread with no current slab (one that only frees: a consumer) and an
 * object of the slab its pending chain waits for: onto the chain, without
 * the region map or the record's look-up. That slab is the pool's (the
 * heap is), its record lives (the chain's objects are counted out on it),
 * and free_short would find the same slab and send the object the same
 * way, while another live heap owns it (checked, as free_foreign does):
 * with no current slab, nothing is listed (free_foreign_home). */
static inline bool free_pending(pk_pool *p, tc_slot *c, void *obj) {
    heap *h = c->heap;
    uintptr_t low = c->low;
    if (!h || h->cur || (low && !c->secret)) return false;
    slab *s = h->pend_slab;
    if (!s || !slab_has_slot(s, (uintptr_t)obj)) return false;
    heap *owner = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
    if (!owner || owner == h) return false;
    if (likely(!low) && likely(pend_push(p, h, obj, true))) return true; /* s is the chain's */
    free_remote(p, h, s, obj);
    return true;
}

void pk__pool_free_slow(pk_pool *p, void *obj) {
    tc_slot *c = slot_of_handle(p);
    if (free_pending(p, c, obj)) return;
    if (likely(free_short(c, obj, false))) return;
    free_dispatch(p, obj, __builtin_return_address(0));
}

void pk__pool_free_other(void *c, void *obj, uintptr_t cur, pk_pool *p) {
    (void)cur; /* not 0: the slot is a default pool's, whose links are plain */
    if (likely(free_short(c, obj, true))) return;
    free_dispatch(p, obj, __builtin_return_address(0));
}

void pk__pool_free_slot(void *c, void *obj, pk_pool *p) {
    tc_slot *t = c;
    uintptr_t x = (uintptr_t)obj, hcur = __atomic_load_n(&t->hcur, __ATOMIC_RELAXED);
    if (likely(hcur != 0)) {
        /* a hardened list with a current slab: its slot has a heap and a
         * secret, and no pending chain takes the object (free_pending is
         * for slots with no current slab); the map read as free_short
         * reads it */
        if (likely(region_holds(x)) && likely(free_short_in(t, obj, false))) return;
    } else if (free_pending(p, t, obj) || likely(free_short(t, obj, false))) {
        return;
    }
    free_dispatch(p, obj, __builtin_return_address(0));
}

void pool_free_at(pk_pool *p, void *obj, void *caller) {
    if (likely(free_short(slot_of_handle(p), obj, false))) return;
    free_dispatch(p, obj, caller);
}
