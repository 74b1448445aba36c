/* Every free path but the inline ones (pool.h) and the short one
 * (pool_free.h): mimalloc's free.c.
 *
 *   - heap path: the calling thread's heap. An object of its current slab
 *     goes onto its list; of another slab it owns, onto that slab's own
 *     list, the slab moving from full to avail, or, once its last object
 *     is home, becoming the heap's spare (heap.c); of a slab of a thread
 *     gone (the pool's own), the heap adopts the slab first if it has
 *     refilled since it last adopted one (else the object goes as a
 *     remote free, below); of a slab
 *     another heap owns, it gathers in a pending chain that goes home by
 *     one atomic push per run (REMOTE_BATCH), for the owner to collect.
 *   - an exiting thread (no heap): straight onto the slab's thread_free.
 *   - direct pools (debug, a limit): under the pool's lock, onto the slab.
 * Every pointer is checked before it is linked anywhere: against its
 * slab's record (free_slab_of), or by the address map (check.c), which
 * reports anything that is not a slot of the pool.
 */
#include "pool_free.h"
#include "pool_valid.h"
#include "central.h"
#include "check.h"
#include "heap.h"
#include "purge.h"
#include "tcache.h"

#include <string.h>

/* Counters stats read from other threads: the owner's plain read and
 * relaxed store, never a lost update (one writer). */
#define BUMP(field, d) __atomic_store_n(&(field), (field) + (d), __ATOMIC_RELAXED)

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

static void push_chain(pk_pool *p, slab *s, void *head, void *tail, size_t n) {
    if (unlikely(s->lost)) return; /* fork child: its objects stay counted as live */
    if (chains_counted(p)) { /* the chain's length and tail, in its head's second word */
        uintptr_t tail_at = ((uintptr_t)tail - (uintptr_t)s->objects) / p->geo.slot;
        chain_mark_store(p, head, tail_at << 32 | n);
    }
    void *old = __atomic_load_n(&s->thread_free, __ATOMIC_RELAXED);
    do link_store(p, tail, (uintptr_t)old);
    while (!__atomic_compare_exchange_n(&s->thread_free, &old, head, true, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
}

void free_flush_pending(pk_pool *p, heap *h) {
    BUMP(h->pushed, h->pend_n); /* before the push: the owner may collect at once */
    push_chain(p, h->pend_slab, h->pend_head, h->pend_tail, h->pend_n);
    h->pend_slab = NULL;
    h->pend_head = h->pend_tail = NULL;
    __atomic_store_n(&h->pend_n, 0, __ATOMIC_RELAXED);
}

static void free_remote(pk_pool *p, heap *h, slab *s, void *obj) {
    BUMP(h->remote_frees, 1);
    /* a thread that only frees has no refills: it tells the pool's peak
     * estimate every REMOTE_BATCH frees instead */
    if ((h->remote_frees & (REMOTE_BATCH - 1)) == 0) heap_note_peak(p, h);
    if (h->pend_slab == s) {
        if (unlikely(obj == h->pend_head)) check_report_double_free(p, obj);
        link_store(p, obj, (uintptr_t)h->pend_head);
        h->pend_head = obj;
        BUMP(h->pend_n, 1);
        if (h->pend_n >= REMOTE_BATCH) free_flush_pending(p, h);
        return;
    }
    if (h->pend_slab) free_flush_pending(p, h);
    h->pend_slab = s;
    h->pend_head = h->pend_tail = obj;
    BUMP(h->pend_n, 1);
}

void free_remote_now(pk_pool *p, slab *s, void *obj) {
    __atomic_add_fetch(&p->remote_frees, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&p->remote_base, 1, __ATOMIC_RELAXED);
    push_chain(p, s, obj, obj, 1);
}

/* ---- The owner's frees. ---- */

/* A free into one of the pool's own slabs (its thread gone): the heap takes
 * the slab, an ordinary owned slab from then on (its frees take the short
 * path, its free slots serve the heap's next refills), if it has refilled
 * since it last took one (heap.may_adopt). A thread that allocates from the
 * pool so takes slabs no faster than it uses them; a thread that only frees
 * (a main thread freeing what its exited workers left) would otherwise
 * gather every slab it frees into and never collect the frees other threads
 * make into them later, which only a refill does: slabs with no live object
 * kept for the rest of its life. Its other frees are remote, and those
 * slabs stay the pool's, for the next heap that needs a slab (which
 * collects them) or the purge. */
static bool adopt(pk_pool *p, heap *h, slab *s) {
    h->may_adopt = false;
    pool_lock(p);
    bool mine = central_adopt(p, h, s);
    if (mine) heap_take_slab(p, h, s);
    POOL_VALIDATE(p);
    pool_unlock(p);
    return mine;
}

/* obj onto the free list of s, an owned slab that is not current; the slab
 * moves from full to avail, or, with its last object home, becomes the
 * heap's spare. */
static void free_home(pk_pool *p, heap *h, slab *s, void *obj, uint64_t now) {
    void *f = s->free;
    if (unlikely(obj == f || s->used == 0)) check_report_double_free(p, obj);
    link_store(p, obj, (uintptr_t)f);
    s->free = obj;
    s->used--;
    BUMP(h->frees, 1);
    if (s->used == 0) {
        slab_list_remove(s->list == HEAP_FULL ? &h->full : &h->avail, s);
        heap_slab_emptied(p, h, s, now);
    } else if (s->list == HEAP_FULL) {
        slab_list_remove(&h->full, s);
        slab_list_push(&h->avail, s, HEAP_AVAIL);
    }
}

void free_owned_edge(heap *h, slab *s, void *obj) { free_home(h->pool, h, s, obj, 0); }

void free_checked(pk_pool *p, tc_slot *c, slab *s, void *obj, uint64_t now) {
    heap *h = heap_get(p, c);
    void *head = tc_head(h->list);
    /* the head of the thread's list freed again */
    if (unlikely(obj == head)) check_report_double_free(p, obj);
    if (s == h->cur) {
        link_store(p, obj, (uintptr_t)head);
        list_set(h, obj, h->count + 1);
        return;
    }
    heap *owner = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
    if (owner != h) {
        if (owner || s->lost || !h->may_adopt || !adopt(p, h, s)) {
            free_remote(p, h, s, obj);
            return;
        }
    }
    if ((!head || h->hot_room) && h->cur && !p->hardened) { /* HOT_FREES, HOT_LIST: hardened lists keep to the current slab */
        if (head && --h->hot_room == 0) h->hot_bar = 0;
        link_store(p, obj, (uintptr_t)head);
        list_set(h, obj, h->count + 1);
        return;
    }
    free_home(p, h, s, obj, now);
}

void free_home_hot(pk_pool *p, heap *h, void *obj, bool list_moves) {
    slab *s = slab_of((uintptr_t)obj);
    if (list_moves) {
        free_home(p, h, s, obj, 0);
        return;
    }
    link_store(p, obj, (uintptr_t)s->free); /* the slab goes back to the pool as it is */
    s->free = obj;
    s->used--;
    BUMP(h->frees, 1);
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
