/* Bulk calls (pk_pool_alloc_bulk, pk_pool_free_bulk): on pools with heaps,
 * the thread's heap found once, its list popped a run at a time
 * (heap_alloc_bulk) and each object freed as by the single-object path,
 * a run of objects bound home to one slab moved at once (no lock unless a
 * slab changes hands); on direct pools, the pool's lock once
 * for the whole call.
 *
 * Invariants: as the single-object paths (pool_slow.c, heap.c).
 */
#include "pool/pool_internal.h"
#include "base/sites.h"

#include <errno.h>
#include <string.h>

size_t pk_pool_alloc_bulk(pk_pool *p, void **objs, size_t n) {
    pool_check_live(p, "pk_pool_alloc_bulk", NULL);
    if (unlikely(p->debug)) sites_capture(__builtin_return_address(0));
    size_t i = 0;
    uint64_t now = pool_purge_poll();
    tc_slot *c = p->cached ? tcache_slot(p) : NULL;
    if (c) {
        i = heap_alloc_bulk(p, c, objs, n, now);
    } else if (n) {
        pool_lock_for_use(p, now);
        size_t want = n;
        if (p->limit) want = p->out >= p->limit ? 0 : want < p->limit - p->out ? want : p->limit - p->out;
        void *list = NULL;
        size_t got = want ? central_take(p, want, &list, true) : 0;
        purge_tick(p, now);
        POOL_VALIDATE(p);
        pool_unlock(p);
        /* As many as were taken: a slab list that held an object twice
         * (a double free) may have linked this one into a loop. */
        for (char *obj = list; obj && i < got; obj = (char *)link_load(p, obj)) objs[i++] = obj;
    }
    if (i < n) errno = ENOMEM;
    for (size_t k = 0; k < i; k++) {
        track_handout(p, objs[k]);
        if (p->zero) memset(objs[k], 0, p->size);
    }
    return i;
}

/* trusted: objs are slots of p's slabs, each handed out and not freed
 * since, as the caller has checked (pool_free_bulk_checked). */
static void free_bulk(pk_pool *p, void **objs, size_t n, bool trusted) {
    uint64_t now = pool_purge_poll();
    tc_slot *c = p->cached ? tcache_slot(p) : NULL;
    if (c) {
        if (n) free_checked_bulk(p, heap_get(p, c), objs, n, trusted, now);
        return;
    }
    if (p->cached) { /* an exiting thread: no heap, so home at once */
        for (size_t i = 0; i < n; i++) {
            if (unlikely(!objs[i])) check_report_null(p);
            slab *s = check_free(p, objs[i]);
            track_takeback(p, objs[i]);
            remote_push_one(p, s, objs[i]);
        }
        return;
    }
    if (!n) return;
    pool_lock_for_use(p, now);
    for (size_t i = 0; i < n; i++) {
        if (unlikely(!objs[i])) check_report_null(p);
        track_takeback(p, objs[i]);
        if (p->debug) check_debug_free(p, objs[i]);
        central_give(p, check_handed_out(p, objs[i], NULL), objs[i]);
    }
    if (options_purge_delay_ms() == 0) central_release(p, false);
    purge_tick(p, now);
    POOL_VALIDATE(p);
    pool_unlock(p);
}

void pk_pool_free_bulk(pk_pool *p, void **objs, size_t n) {
    pool_check_live(p, "pk_pool_free_bulk", n ? objs[0] : NULL);
    if (unlikely(p->debug)) sites_capture(__builtin_return_address(0));
    free_bulk(p, objs, n, false);
}

void pool_free_bulk_checked(pk_pool *p, void **objs, size_t n) { free_bulk(p, objs, n, true); }
