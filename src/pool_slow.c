/* The slow paths behind pk_pool_alloc and pk_pool_free (include/poolkit/
 * pool.h's inline halves call pk__pool_alloc_slow / pk__pool_free_slow):
 * mimalloc's alloc.c and free.c.
 *
 * Two paths, chosen once per pool at creation (pool.c, choose_path):
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

void *pk__pool_alloc_slow(pk_pool *p) {
    if (unlikely(p->debug)) return alloc_captured(p, __builtin_return_address(0));
    return alloc_generic(p);
}

static void *alloc_generic(pk_pool *p) {
    tc_slot *c = p->cached ? tcache_slot(p) : NULL;
    if (!c) return direct_alloc(p, pool_purge_poll());
    void *obj = heap_alloc(p, c);
    if (!obj) return NULL;
    track_handout(p, obj);
    if (p->zero) memset(obj, 0, p->size);
    return obj;
}

void pool_free_generic(pk_pool *p, void *obj) {
    tc_slot *c = p->cached && obj ? tcache_slot(p) : NULL;
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
    if (unlikely(p->debug)) {
        free_captured(p, obj, __builtin_return_address(0));
        return;
    }
    pool_free_generic(p, obj);
}
