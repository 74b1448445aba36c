/* The slow path behind pk_pool_alloc (include/poolkit/pool.h's inline
 * half calls pk__pool_alloc_slow): it only dispatches, to heap.c's and
 * central.c's allocations. pk_pool_free's is pool_free.c's.
 *
 * Paths, chosen once per pool at creation (pool.c, choose_path):
 *   - the hardened lean path: a hardened pool whose link word is past the
 *     object (hooks), whose list holds objects of the current slab only:
 *     each link is decoded and checked to name a slot of that slab
 *     (hard_near) before it is followed, and a freed pointer of that slab
 *     is checked the same way, with the head freed again reported;
 *     anything else takes the heap path. Its allocation also serves a
 *     hardened pool of the inline paths where they refused a link out of
 *     the current slab (HARD_POP: an object of another slab listed,
 *     HOT_FOREIGN), so that taking it back costs no refill.
 *   - the heap path: the calling thread's heap for the pool (heap.c,
 *     pool_free.c), for every pool with threads' heaps; pools the inline
 *     paths cannot serve (hooks, zeroing, tool builds) come here on every
 *     call.
 *   - the direct path: no heap (debug pools, pools with a limit): every
 *     call takes the pool's lock.
 * The poll of the purge (pool_purge_poll) runs on allocations that reach
 * here; its reading is passed down.
 */
#include "pool/central.h"
#include "pool/heap.h"
#include "pool/pool_valid.h"
#include "pool/pools.h"
#include "pool/purge.h"
#include "pool/sweep.h"
#include "base/sites.h"
#include "pool/tcache.h"

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
