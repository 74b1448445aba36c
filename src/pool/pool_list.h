/* pool_list.c: the list of live pools, for the sweep (sweep.c), the fork
 * handlers and pk_pool_foreach. */
#ifndef POOLKIT_POOL_LIST_H
#define POOLKIT_POOL_LIST_H

#include "pool/pool_types.h"

/* A pool made or destroyed (pool.c). */
void pools_add(pk_pool *p);
void pools_remove(pk_pool *p);
/* Calls fn(p, arg) on every shared pool (not PK_POOL_LOCAL: those belong to
 * one thread) whose lock it gets, holding it. The list's lock and each
 * pool's are only tried, so this never waits: not for a pool in use, nor
 * for the list while it is held (false: nothing visited), as it is around
 * a pk_pool_foreach callback, which may be this very thread's caller. */
bool pools_try_each_shared(void (*fn)(pk_pool *p, void *arg), void *arg);
/* The list's lock, for the fork handlers (before the thread registry's),
 * and fn on every pool while they hold it. */
void pools_lock_list(void);
void pools_unlock_list(void);
void pools_each_held(void (*fn)(pk_pool *p, void *arg), void *arg);
/* The listed pools' keys, *n of them, for the fork handlers while they hold
 * the list's lock; LISTED_LOCAL marks a PK_POOL_LOCAL pool's. */
#define LISTED_LOCAL ((uint32_t)1 << 31)
const uint32_t *pools_listed_keys(size_t *n);

#endif
