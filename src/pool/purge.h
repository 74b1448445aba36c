/* purge.c: when memory goes back, and the rules a pool's tick applies
 * (policy.h, PURGE_INTERVAL_MS). */
#ifndef POOLKIT_PURGE_H
#define POOLKIT_PURGE_H

#include "pool/pool_types.h"

/* pool_purge_poll (sweep.h) runs the sweeps on the library's calls and
 * returns the time it read, which its callers pass down to the ticks. */
/* A call for the pool's own work, at now (read before the lock): what was
 * idle for the purge delay before it goes back first, then now is the
 * pool's last use. Caller holds the lock. */
void purge_note_use(pk_pool *p, uint64_t now);
/* The pool's purge tick: if the pool has had no call of its own for the
 * purge delay, every empty slab goes back to the system now; otherwise,
 * once per interval, slabs empty since the last tick go back. Runs on the
 * pool's calls and on sweeps; caller holds the lock. */
void purge_tick(pk_pool *p, uint64_t now);
/* A thread's heap of the pool was given back at its exit: the pool keeps
 * no more empty slabs than slabs in use (central_release_surplus), unless
 * the surplus the last exit gave back was made again since (IDLE_ADAPT,
 * policy.h: threads that come and go, each needing what the last one
 * freed), until a tick finds kept slabs unused. Caller holds the lock. */
void purge_thread_exit(pk_pool *p);
/* IDLE_ADAPT (policy.h): how many times the pool's idle delay has doubled
 * (takes the lock; for white-box tests, whose build may lay the pool's
 * record out otherwise). */
uint32_t purge_idle_shift(pk_pool *p);
/* The lock for a call for the pool's own work. */
static inline void pool_lock_for_use(pk_pool *p, uint64_t now) {
    pool_lock(p);
    purge_note_use(p, now);
}
#endif
