/* tcache.c: per-thread tables (a slot and a heap record per key) and the
 * thread registry. */
#ifndef POOLKIT_TCACHE_H
#define POOLKIT_TCACHE_H

#include "pool/pool_types.h"

/* The pool, of key p->key, gets heaps from now on; a thread's exit hands
 * each heap it has to on_exit (the heap layer's: tcache knows no heap),
 * under the registry's lock, before it forgets the slot. */
void tcache_attach(pk_pool *p, void (*on_exit)(pk_pool *p, tc_slot *c));
void tcache_detach(pk_pool *p);  /* forgets every thread's slot and heap for the pool */
/* The calling thread's slot for p, registering the thread and growing its
 * table on first use; NULL when the thread is exiting or out of memory. */
tc_slot *tcache_slot(pk_pool *p);
/* The calling thread's heap record for p mapped now, where the thread has
 * a table (one it takes later comes with the records of the pools that
 * exist then): pk_pool_reserve's, so that the calls it makes ready ask the
 * system for nothing. */
void tcache_prepare(pk_pool *p);
/* The calling thread's table, [*lo, *hi); false when it has none. */
bool tcache_table_range(const tc_slot **lo, const tc_slot **hi);
/* No thread but the calling one, live, holds a table: every heap of every
 * pool is its own (a thread's exit gives its heaps back). Caller holds the
 * registry's lock (fork's handlers). */
bool tcache_alone(void);
/* Keys given out so far (every slot from there on was never set up); read
 * without the registry's lock, by the fault handler (crash.c). */
size_t tcache_keys_used(void);
/* Threads registered now (they have used a pool and not exited). */
size_t tcache_live_threads(void);
/* The calling thread's heap record for the pool whose key is key, once
 * tcache_slot gave that pool's slot (which maps the record's chunk). */
heap *tcache_heap(size_t key);
void tcache_registry_lock(void);
/* The fork child's registry: the forking thread only; caller holds the lock. */
void tcache_fork_child(void);
void tcache_registry_unlock(void);

#endif
