/* The slow paths behind pk_pool_alloc and pk_pool_free (include/poolkit/
 * pool.h's inline halves call pk__pool_alloc_slow / pk__pool_free_slow):
 * they only dispatch. The frees are pool_free.c's (and pool_free.h's short
 * path), the allocations heap.c's and central.c's.
 *
 * Paths, chosen once per pool at creation (pool.c, choose_path):
 *   - the hardened lean path: a hardened pool whose link word is past the
 *     object (hooks), whose list holds objects of the current slab only:
 *     each link is decoded and checked to name a slot of that slab
 *     (hard_near) before it is followed, and a freed pointer of that slab
 *     is checked the same way, with the head freed again reported;
 *     anything else takes the heap path.
 *   - the heap path: the calling thread's heap for the pool (heap.c,
 *     pool_free.c), for every pool with threads' heaps; pools the inline
 *     paths cannot serve (hooks, zeroing, tool builds) come here on every
 *     call. A free tries the short path first (the owner's free of an
 *     object of another of its slabs).
 *   - the direct path: no heap (debug pools, pools with a limit): every
 *     call takes the pool's lock.
 * The poll of the purge (pool_purge_poll) runs on allocations that reach
 * here and on direct frees; its reading is passed down.
 */
#include "central.h"
#include "check.h"
#include "heap.h"
#include "pool_free.h"
#include "pool_valid.h"
#include "pools.h"
#include "purge.h"
#include "sites.h"
#include "tcache.h"

#include <errno.h>
#include <string.h>

/* ---- Allocation. ---- */

static void *direct_alloc(pk_pool *p, uint64_t now) {
    pool_check_live(p, "pk_pool_alloc", NULL);
    void *obj = NULL;
    pool_lock_for_use(p, now);
    if (p->limit && p->out >= p->limit) errno = ENOMEM;
    else central_take(p, 1, &obj, false);
    purge_tick(p, now);
    POOL_VALIDATE(p);
    pool_unlock(p);
    if (!obj) return NULL;
    track_handout(p, obj);
    if (p->zero) memset(obj, 0, p->size);
    return obj;
}

static PK_NOINLINE void *alloc_generic(pk_pool *p) {
    uint64_t now = pool_purge_poll();
    tc_slot *c = tc_slot_of(p);
    if (!c->heap) c = p->cached ? tcache_slot(p) : NULL;
    if (!c) return direct_alloc(p, now);
    void *obj = heap_alloc(p, c, now);
    if (!obj) return NULL;
    track_handout(p, obj);
    if (p->zero) memset(obj, 0, p->size);
    return obj;
}

/* Debug pools: the call site first (sites.h), apart from the entry points
 * so that they need no stack frame of their own for it. */
static PK_NOINLINE void *alloc_captured(pk_pool *p, void *caller) {
    sites_capture(caller);
    return alloc_generic(p);
}

/* Kept apart from the heap path, so the lean path pays for no registers
 * the heap path needs. caller: the user's call site, for debug pools. */
static inline __attribute__((always_inline)) void *alloc_slow_at(pk_pool *p, void *caller) {
    heap *h = tc_slot_of(p)->heap;
    if (p->hard.lean && h) {
        void *obj = heap_alloc_lean(p, h);
        if (likely(obj != NULL)) return obj;
    }
    if (unlikely(p->debug)) return alloc_captured(p, caller);
    return alloc_generic(p);
}

void *pk__pool_alloc_slow(pk_pool *p) { return alloc_slow_at(p, __builtin_return_address(0)); }
void *pool_alloc_at(pk_pool *p, void *caller) { return alloc_slow_at(p, caller); }

/* ---- Frees. ---- */

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
            free_remote_now(p, s, obj);
            return;
        }
        pool_check_live(p, "pk_pool_free", obj);
        if (unlikely(!obj))
            error_report(PK_FATAL, "null pointer", p->name, obj, "NULL given to pool '%s'", pool_name(p));
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
    if (p->hard.lean && h && free_lean(p, h, obj)) return;
    if (unlikely(p->debug)) {
        free_captured(p, obj, caller);
        return;
    }
    pool_free_generic(p, obj);
}

void pk__pool_free_slow(pk_pool *p, void *obj) {
    if (likely(free_short(slot_of_handle(p), obj, 0, false))) return;
    free_dispatch(p, obj, __builtin_return_address(0));
}

void pk__pool_free_other(void *c, void *obj, uintptr_t cur, pk_pool *p) {
    if (likely(free_short(c, obj, cur, true))) return;
    free_dispatch(p, obj, __builtin_return_address(0));
}

void pool_free_at(pk_pool *p, void *obj, void *caller) {
    if (likely(free_short(slot_of_handle(p), obj, 0, false))) return;
    free_dispatch(p, obj, caller);
}
