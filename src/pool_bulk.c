/* Bulk calls (pk_pool_alloc_bulk, pk_pool_free_bulk): the calling thread's
 * cache first, then the pool's lock at most once for the rest.
 *
 * Invariants: as the single-object paths (pool_slow.c); objects taken or
 * returned under the lock past the cache are accounted to the thread's
 * cache balance, so remote_frees and the live count stay exact.
 */
#include "pool_internal.h"
#include "sites.h"

#include <errno.h>
#include <string.h>

size_t pk_pool_alloc_bulk(pk_pool *p, void **objs, size_t n) {
    pool_check_live(p, "pk_pool_alloc_bulk", NULL);
    if (unlikely(p->debug)) sites_capture(__builtin_return_address(0));
    size_t i = 0;
    uint64_t now = pool_purge_poll();
    tc_slot *c = p->cached ? tcache_slot(p) : NULL;
    for (; c && i < n; i++) {
        if (!tc_head(c) && !tc_take_spare(c)) break;
        objs[i] = tc_head(c);
        tc_set(c, checked_next(p, objs[i]), tc_room(c) + 1);
    }
    if (i < n) {
        pool_lock_for_use(p, now);
        size_t need = n - i, want = need;
        if (p->limit) want = p->out >= p->limit ? 0 : want < p->limit - p->out ? want : p->limit - p->out;
        void *list = NULL;
        size_t got = want ? central_take(p, want, &list, true) : 0;
        if (c) tcache_account(p, c, (long)got);
        central_maybe_tick(p, now);
        POOL_VALIDATE(p);
        pool_unlock(p);
        for (char *obj = list; obj; obj = (char *)link_load(p, obj)) objs[i++] = obj;
        if (got < need) errno = ENOMEM;
    }
    for (size_t k = 0; k < i; k++) {
        track_handout(p, objs[k]);
        if (p->zero) memset(objs[k], 0, p->size);
    }
    return i;
}

void pk_pool_free_bulk(pk_pool *p, void **objs, size_t n) {
    pool_check_live(p, "pk_pool_free_bulk", n ? objs[0] : NULL);
    if (unlikely(p->debug)) sites_capture(__builtin_return_address(0));
    size_t i = 0;
    uint64_t now = pool_purge_poll();
    tc_slot *c = p->cached ? tcache_slot(p) : NULL;
    for (; c && i < n && tc_room(c) > 0 && objs[i]; i++) {
        central_check_free(p, objs[i]);
        track_takeback(p, objs[i]);
        link_store(p, objs[i], (uintptr_t)tc_head(c));
        tc_set(c, objs[i], tc_room(c) - 1);
    }
    if (i == n) return;
    pool_lock_for_use(p, now);
    if (c) tcache_account(p, c, -(long)(n - i));
    for (; i < n; i++) {
        if (unlikely(!objs[i]))
            error_report(PK_FATAL, "null pointer", p->name, NULL, "NULL given to pool '%s'",
                         pool_name(p));
        track_takeback(p, objs[i]);
        if (p->debug) central_debug_check_free(p, objs[i]);
        central_give(p, objs[i]);
        p->frees++;
    }
    central_maybe_tick(p, now);
    POOL_VALIDATE(p);
    pool_unlock(p);
}
