/* pool_valid.c: a pool's identities, checked whole (mimalloc's
 * _mi_page_is_valid). */
#ifndef POOLKIT_POOL_VALID_H
#define POOLKIT_POOL_VALID_H

#include "pool/pool_types.h"

/* True if every identity the comments state holds for p
 * (pool_valid.c lists them); otherwise a fatal "internal assertion" report
 * naming the one that failed. Caller holds the pool's lock. deep: also
 * walks every free list of the pool's own slabs (O(free objects)), where
 * the shallow check is O(slabs). Called through POOL_VALIDATE, compiled in
 * at POOLKIT_ASSERT 3 only: at every state change of a pool, under its
 * lock (a slab taken by or given back from a heap, a direct call, trim,
 * reserve, create and destroy; shallow on the paths that run per slab or
 * per call, deep on whole-pool calls). */
bool pool_is_valid(const pk_pool *p, bool deep);
#define POOL_VALIDATE(p) PK_ASSERT_EXPENSIVE(pool_is_valid((p), false))
#define POOL_VALIDATE_DEEP(p) PK_ASSERT_EXPENSIVE(pool_is_valid((p), true))

#endif
