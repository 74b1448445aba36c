/* The slow paths behind pk_pool_alloc and pk_pool_free (include/poolkit/
 * pool.h's inline halves call pk__pool_alloc_slow / pk__pool_free_slow):
 * mimalloc's page.c to its alloc.c and free.c.
 *
 * Three paths, chosen once per pool at creation (pool.c, choose_path):
 *   - hardened lean path: a hardened pool's thread cache, every link
 *     decoded and checked against the list head's slab (harden.h) before it
 *     is followed; anything unusual goes on to the generic path.
 *   - generic path: the thread cache (tc_slot) refilled from and flushed to
 *     the pool a batch at a time under the pool's lock.
 *   - direct path: no cache (debug pools, pools with a limit, pools with no
 *     cache key): every call takes the pool's lock.
 *
 * Invariants: a cache's room is batch minus its list's length; a list
 * holds at most one batch and the spare one more; every exchange with the
 * pool moves a whole batch and is accounted (tcache_account) under the
 * pool's lock, so the pool's live count stays exact (pool_internal.h).
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

/* ---- Allocation: the hardened lean path, then the generic one. ---- */

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
static PK_NOINLINE void *alloc_far_link(pk_pool *p, tc_slot *c, char *obj, char *next);

/* Kept apart from the generic path, so the lean path pays for no registers
 * the generic one needs. */
void *pk__pool_alloc_slow(pk_pool *p) {
    if (p->hard.cache) {
        /* Every object on a hardened list was checked on its way in; its
         * link, in the object's memory, is decoded and checked before the
         * list follows it. */
        tc_slot *c = (tc_slot *)((char *)tc_table + p->hard.cache);
        char *obj = tc_head(c);
        if (likely(obj != NULL)) {
            char *next = (char *)link_code(p, obj, *(uintptr_t *)(obj + p->hard.link));
            if (unlikely(next && !hard_near(p, (uintptr_t)next, (uintptr_t)obj)))
                return alloc_far_link(p, c, obj, next);
            tc_set(c, next, tc_room(c) + 1);
            return obj;
        }
    }
    if (unlikely(p->debug)) return alloc_captured(p, __builtin_return_address(0));
    return alloc_generic(p);
}

/* A hardened list's link into another slab: checked against the address
 * map (a tail call, so the lean path above needs no stack frame). */
static PK_NOINLINE void *alloc_far_link(pk_pool *p, tc_slot *c, char *obj, char *next) {
    if (unlikely(!hard_far(p, (uintptr_t)next))) next = harden_check_link(p, obj, next); /* reports it */
    tc_set(c, next, tc_room(c) + 1);
    return obj;
}

static void *alloc_generic(pk_pool *p) {
    tc_slot *c = p->cached ? tcache_slot(p) : NULL;
    if (!c) return direct_alloc(p, pool_purge_poll());
    if (!tc_head(c)) tc_take_spare(c);
    char *obj = tc_head(c);
    intptr_t room = tc_room(c);
    if (!obj) {
        uint64_t now = pool_purge_poll();
        void *list = NULL;
        pool_lock_for_use(p, now);
        size_t got = central_take(p, p->batch, &list, false);
        tcache_account(p, c, (long)got);
        central_maybe_tick(p, now);
        POOL_VALIDATE(p);
        pool_unlock(p);
        if (!got) return NULL;
        obj = list;
        room = (intptr_t)(p->batch - got);
    }
    tc_set(c, checked_next(p, obj), room + 1);
    track_handout(p, obj);
    if (p->zero) memset(obj, 0, p->size);
    return obj;
}

/* ---- Free: the generic path, then the hardened lean one. ---- */

/* A full list becomes the spare batch; a spare already there goes to the
 * depot first. */
static void retire_list(pk_pool *p, tc_slot *c) {
    void *spare = tc_spare(c);
    if (spare) {
        uint64_t now = pool_purge_poll();
        pool_lock_for_use(p, now);
        tcache_account(p, c, -(long)p->batch);
        central_depot_put(p, spare);
        central_maybe_tick(p, now);
        POOL_VALIDATE(p);
        pool_unlock(p);
    }
    tc_set_spare(c, tc_head(c));
    tc_set(c, NULL, (intptr_t)p->batch);
}

void pool_free_generic(pk_pool *p, void *obj) {
    tc_slot *c = p->cached && obj ? tcache_slot(p) : NULL;
    if (!c) {
        uint64_t now = pool_purge_poll();
        direct_free(p, obj, now);
        return;
    }
    central_check_free(p, obj);
    if (unlikely(obj == tc_head(c)))
        error_report(PK_FATAL, "double free", p->name, obj, "object %p of pool '%s' was freed twice",
                     obj, pool_name(p));
    track_takeback(p, obj);
    if (tc_room(c) <= 0) retire_list(p, c);
    link_store(p, obj, (uintptr_t)tc_head(c));
    tc_set(c, obj, tc_room(c) - 1);
}

/* Pushes a checked obj onto a hardened list whose head and room the caller
 * read. */
static inline void hard_push(const pk_pool *p, tc_slot *c, void *obj, void *head, intptr_t room) {
    *(uintptr_t *)((char *)obj + p->hard.link) = link_code(p, obj, (uintptr_t)head);
    tc_set(c, obj, room - 1);
}

/* A hardened free into a slab other than the list head's: the address map
 * says whether it is one of the pool's slots (a tail call, so the lean path
 * needs no stack frame). */
static PK_NOINLINE void free_far(pk_pool *p, tc_slot *c, void *obj) {
    if (!hard_far(p, (uintptr_t)obj)) {
        pool_free_generic(p, obj); /* reports it */
        return;
    }
    hard_push(p, c, obj, tc_head(c), tc_room(c));
}

void pk__pool_free_slow(pk_pool *p, void *obj) {
    if (p->hard.cache) {
        /* The list's head is a checked slot of the pool: an object in its
         * slab, on a slot boundary, is one too; anything else (another slab,
         * an empty list) is looked up in the address map, and what fails
         * there (a foreign pointer) takes the generic path, which reports
         * it, as it does the head freed again and a full list. */
        tc_slot *c = (tc_slot *)((char *)tc_table + p->hard.cache);
        char *head = tc_head(c);
        intptr_t room = tc_room(c);
        if (likely(room > 0 && obj != head)) {
            if (unlikely(!hard_near(p, (uintptr_t)obj, (uintptr_t)head))) {
                free_far(p, c, obj);
                return;
            }
            hard_push(p, c, obj, head, room);
            return;
        }
    } else if (p->tc_key != TC_NO_KEY) {
        /* The inline free that found no room took one from it: give it
         * back. (The cache of TC_NO_KEY is never set up; its room only runs
         * down, 2^63 frees from wrapping.) */
        tc_slot *z = (tc_slot *)((char *)tc_table + p->tc_key);
        if (tc_room(z) < 0) __atomic_store_n(&z->room, 0, __ATOMIC_RELAXED);
    }
    if (unlikely(p->debug)) {
        free_captured(p, obj, __builtin_return_address(0));
        return;
    }
    pool_free_generic(p, obj);
}
