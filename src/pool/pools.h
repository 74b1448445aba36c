/* The pool module: pool.c (layout, path, create and destroy, records),
 * pool_slow.c (the allocation's slow path; the frees' is pool_free.c's),
 * pool_bulk.c
 * and pool_calls.c (bulk and whole-pool calls). */
#ifndef POOLKIT_POOLS_H
#define POOLKIT_POOLS_H

#include "pool/pool_types.h"

/* Reports a call on a destroyed pool (pool.c); call names it, obj is the
 * pointer it was given or NULL. */
PK_COLD __attribute__((noreturn)) void pool_report_dead(const pk_pool *p, const char *call,
                                                        const void *obj);
/* Every call that may reach a destroyed pool's record checks it first: one
 * compare, never on the inline fast paths (a destroyed pool's slots are
 * cleared in every thread, so they send every call here). */
static inline void pool_check_live(const pk_pool *p, const char *call, const void *obj) {
    if (unlikely(p->state == POOL_DEAD)) pool_report_dead(p, call, obj);
}

/* pk_pool_reserve's work, after its check (pool.c: creation reserves too):
 * the objects ready for allocation without a call to the system. */
size_t pool_reserve(pk_pool *p, size_t n);
/* pk__pool_alloc_slow for a caller that wraps it (the size-class front
 * end, alloc.c): caller is the user's call site, which debug pools record.
 * The frees' dispatch is pool_free.h's. */
void *pool_alloc_at(pk_pool *p, void *caller);
/* pk_pool_free_bulk of objects the caller has checked: each a slot of one
 * of p's slabs, handed out and not freed since (the hardened front end's
 * blocks, whose check words said so), so that only their runs are found. */
void pool_free_bulk_checked(pk_pool *p, void **objs, size_t n);
/* A region's reset (pool_calls.c; heap.h's pk_heap_reset): every object of
 * p freed at once, unread, and its slabs kept, empty, for the next ones;
 * every thread's cache of p forgotten (the calling thread's, when it is
 * p's only one, kept and emptied in place). No other thread may be using p.
 * Only for a region pool that pk_pool_destroy would drop unread (no debug,
 * no hooks, no tool build): false, nothing done, for any other. */
bool pool_region_reset(pk_pool *p);
/* The process's secret seed (pool.c): drawn from the kernel once, kept by a
 * fork child; hardened pools and the hardened front end mix theirs from it. */
uint64_t pool_secret_seed(void);

/* Fork handlers' part: the pool list's lock (before the registry's), then
 * every pool's lock and the pool records' (after it); one unlock for all. */
void pools_fork_lock_list(void);
void pools_fork_lock_each(void);
void pools_fork_unlock(void);
/* The fork child's pools drop the heaps of threads gone (the forking
 * thread's table is [mine, mine_end)); where no other thread held heaps
 * and no remote free ever began, none is read. */
void pools_fork_child(const tc_slot *mine, const tc_slot *mine_end);

/* pool.c: calls fn(obj, sites, arg) on a debug pool's live objects (slot
 * addresses, in address order within a slab) until fn returns false;
 * sites is the slot's record of call sites (sites.h) or NULL. Other pools
 * keep no record of which slots are live: nothing is called. Holds the
 * pool's lock meanwhile, so fn must not call the pool. */
void pool_each_live_debug(pk_pool *p, bool (*fn)(void *obj, void *const *sites, void *arg), void *arg);
/* pool_calls.c: calls fn on every live object; every free object must be
 * home in its slab (every heap abandoned, remote frees collected), so a
 * slot is live exactly when it was handed out and is not on its slab's
 * free list. */
void pool_each_live(pk_pool *p, void (*fn)(void *obj, void *arg), void *arg);
/* pk_pool_visit with the walk under the pool's lock, for fn that calls
 * nothing of the pool while other threads may still call it (the exit
 * summary: exit() from one thread while others allocate from debug
 * pools, whose calls all take the lock). */
void pool_visit_held(pk_pool *p, void (*fn)(void *obj, void *arg), void *arg);


#endif
