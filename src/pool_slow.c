/* The slow paths behind pk_pool_alloc and pk_pool_free (include/poolkit/
 * pool.h's inline halves call pk__pool_alloc_slow / pk__pool_free_slow):
 * mimalloc's alloc.c and free.c.
 *
 * Three paths, chosen once per pool at creation (pool.c, choose_path):
 *   - the hardened lean path: a hardened pool's slot list, which holds
 *     objects of the current slab only: each link is decoded and checked
 *     to name a slot of that slab (hard_near) before it is followed, and a
 *     freed pointer of that slab is checked the same way, with the head
 *     freed again reported; anything else takes the heap path.
 *   - the heap path: the calling thread's heap for the pool (heap.c), for
 *     every pool with thread slots; pools the inline paths cannot serve
 *     (hardened, hooks, zeroing, tool builds) come here on every call and
 *     pop and push the same slot list, with their link words, checks and
 *     fills.
 *   - the direct path: no heap (debug pools, pools with a limit, pools with
 *     no key left): every call takes the pool's lock.
 *
 * Every pointer given to free is checked first on both (central_check_free,
 * by the address map, never reading the pointer's memory).
 */
#include "pool_internal.h"
#include "sites.h"

#include <errno.h>
#include <string.h>

/* ---- The direct path: no cache, the pool's lock on every call. ---- */

static void *direct_alloc(pk_pool *p, uint64_t now) {
    pool_check_live(p, "pk_pool_alloc", NULL);
    void *obj = NULL;
    pool_lock_for_use(p, now);
    if (p->limit && p->out >= p->limit) errno = ENOMEM;
    else central_take(p, 1, &obj, false);
    central_maybe_tick(p, now);
    POOL_VALIDATE(p);
    pool_unlock(p);
    if (!obj) return NULL;
    track_handout(p, obj);
    if (p->zero) memset(obj, 0, p->size);
    return obj;
}

static void direct_free(pk_pool *p, void *obj, uint64_t now) {
    pool_check_live(p, "pk_pool_free", obj);
    if (unlikely(!obj))
        error_report(PK_FATAL, "null pointer", p->name, obj, "NULL given to pool '%s'", pool_name(p));
    track_takeback(p, obj);
    pool_lock_for_use(p, now);
    if (p->debug) central_debug_check_free(p, obj);
    central_give(p, obj);
    p->frees++;
    central_maybe_tick(p, now);
    POOL_VALIDATE(p);
    pool_unlock(p);
}

/* ---- The heap path. ---- */

static PK_NOINLINE void *alloc_generic(pk_pool *p);

/* Debug pools: the call site first (sites.h), apart from the entry points
 * so that they need no stack frame of their own for it. */
static PK_NOINLINE void *alloc_captured(pk_pool *p, void *caller) {
    sites_capture(caller);
    return alloc_generic(p);
}

static PK_NOINLINE void free_captured(pk_pool *p, void *obj, void *caller) {
    sites_capture(caller);
    pool_free_generic(p, obj);
}

static PK_NOINLINE void *alloc_lean_refused(pk_pool *p, char *obj, char *next) {
    report_bad_link(p, obj, next, "not a free slot of its slab");
}

/* Kept apart from the heap path, so the lean path pays for no registers
 * the heap path needs. */
void *pk__pool_alloc_slow(pk_pool *p) {
    heap *h = tc_slot_of(p)->heap;
    if (p->hard.lean && h) {
        tc_list *l = h->list;
        char *obj = tc_head(l);
        if (likely(obj != NULL)) {
            char *next = (char *)link_decode(p, obj, *(uintptr_t *)(obj + p->link_off));
            if (unlikely(next && ((uintptr_t)next | p->slab_low) != tc_cur(l))) return alloc_lean_refused(p, obj, next);
            __atomic_store_n(&l->head, next, __ATOMIC_RELAXED); /* no count: as inline */
            return obj;
        }
    }
    if (unlikely(p->debug)) return alloc_captured(p, __builtin_return_address(0));
    return alloc_generic(p);
}

/* The calling thread's slot for p when its heap is set up (so the thread
 * is registered and p has heaps), else NULL: key 0's slot, which pools
 * without heaps use, never has one. */
static inline tc_slot *own_slot(const pk_pool *p) {
    tc_slot *c = tc_slot_of(p);
    return likely(c->heap != NULL) ? c : NULL;
}

static void *alloc_generic(pk_pool *p) {
    tc_slot *c = own_slot(p);
    if (!c) c = p->cached ? tcache_slot(p) : NULL;
    if (!c) return direct_alloc(p, pool_purge_poll());
    void *obj = heap_alloc(p, c);
    if (!obj) return NULL;
    track_handout(p, obj);
    if (p->zero) memset(obj, 0, p->size);
    return obj;
}

/* An object onto the free list of s, an owned slab that is not current,
 * when nothing changes lists (the slab neither empties nor stops being
 * full) and it is not the list's head freed again: true if done. */
static inline bool put_owned(pk_pool *p, heap *h, slab *s, void *obj) {
    void *f = s->free;
    if (!f || obj == f || s->used <= 1) return false;
    heap_push_owned(p, h, s, obj);
    return true;
}

/* The owner's free of an object of one of its slabs that is not current:
 * inline here when nothing changes lists (HOT_FREES included: the object
 * freed before, still on top of the slot list, goes home first), the rest
 * in heap.c. */
static inline bool free_owned(pk_pool *p, heap *h, slab *s, void *obj) {
    if (__atomic_load_n(&s->owner, __ATOMIC_RELAXED) != h || s == h->cur) return false;
    void *hot = h->hot_obj;
    if (hot && tc_head(h->list) == hot) { /* no allocation took it */
        if (obj == hot) return false; /* freed again: heap_free reports it */
        void *below = (void *)link_load(p, hot);
        if (!put_owned(p, h, h->hot_slab, hot)) return false;
        list_set(h, below, h->count - 1);
        h->hot_obj = NULL;
        h->hot_off = ++h->hot_evicted >= HOT_PHASE; /* a phase of frees: none until a refill */
    }
    if (!heap_free_hot(p, h, s, obj) && !put_owned(p, h, s, obj)) return false;
    if (unlikely(s->adopted)) __atomic_store_n(&h->adopted_frees, h->adopted_frees + 1, __ATOMIC_RELAXED);
    return true;
}

/* obj's slab: the one the heap's last free went to when obj is one of its
 * slots (an owned slab, so it cannot go away meanwhile), else the address
 * map's answer, which reports anything that is not a slot of the pool. The
 * two ranges are checked first: consecutive frees mostly fall in the slab
 * of the one before, and the map lookup costs a fifth of a free. */
static inline slab *free_slab(pk_pool *p, heap *h, void *obj) {
    uintptr_t off = (uintptr_t)obj - h->last_first;
    if (likely(h->last && off < h->last_bytes && slot_on_grid(off, p->geo.slot, p->geo.recip))) return h->last;
    /* The slab of the remote frees gathering: its pending objects keep it. */
    off = (uintptr_t)obj - h->pend_first;
    if (h->pend_slab && off < h->pend_bytes && slot_on_grid(off, p->geo.slot, p->geo.recip)) return h->pend_slab;
    slab *s = slab_of_slot(obj, p);
    if (unlikely(!s)) central_check_free(p, obj); /* reports it */
    if (__atomic_load_n(&s->owner, __ATOMIC_RELAXED) == h) {
        h->last = s;
        h->last_first = (uintptr_t)s->objects;
        h->last_bytes = (uintptr_t)s->capacity * p->geo.slot;
    }
    return s;
}

void pool_free_generic(pk_pool *p, void *obj) {
    tc_slot *c = obj ? own_slot(p) : NULL;
    if (likely(c != NULL)) {
        slab *s = free_slab(p, c->heap, obj);
        track_takeback(p, obj);
        if (!free_owned(p, c->heap, s, obj)) heap_free(p, c, s, obj);
        return;
    }
    c = p->cached && obj ? tcache_slot(p) : NULL;
    if (!c) {
        if (p->cached && obj) { /* an exiting thread: no heap, so home at once */
            slab *s = central_check_free(p, obj);
            track_takeback(p, obj);
            heap_free_remote_now(p, s, obj);
            return;
        }
        direct_free(p, obj, pool_purge_poll());
        return;
    }
    slab *s = central_check_free(p, obj);
    track_takeback(p, obj);
    heap_free(p, c, s, obj);
}

void pk__pool_free_slow(pk_pool *p, void *obj) {
    heap *h = tc_slot_of(p)->heap;
    if (p->hard.lean && h) {
        /* An object of the current slab, on its grid, not the head: pushed
         * encoded. The head freed again is reported here; anything else
         * (another slab, a foreign or interior pointer) takes the heap
         * path, which checks and reports. */
        tc_list *l = h->list;
        char *head = tc_head(l);
        if (unlikely(obj == head && obj)) central_report_double_free(p, obj);
        if (likely(hard_near(p, (uintptr_t)obj, tc_cur(l)))) {
            *(uintptr_t *)((char *)obj + p->link_off) = link_encode(p, obj, (uintptr_t)head);
            __atomic_store_n(&l->head, obj, __ATOMIC_RELAXED);
            return;
        }
    }
    if (unlikely(p->debug)) {
        free_captured(p, obj, __builtin_return_address(0));
        return;
    }
    pool_free_generic(p, obj);
}
