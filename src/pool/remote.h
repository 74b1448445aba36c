/* remote.c: frees into another heap's slab, pushed onto the slab's
 * thread_free (one atomic push per chain). */
#ifndef POOLKIT_POOL_REMOTE_H
#define POOLKIT_POOL_REMOTE_H

#include "pool/harden.h"

/* The heap's pending chain (objects of h->pend_slab, freed by h's thread)
 * home: one push. */
void remote_flush(pk_pool *p, heap *h);
/* A free by a thread that has no heap (exiting): obj straight onto its
 * slab's thread_free. */
void remote_push_one(pk_pool *p, slab *s, void *obj);
/* Whether any pool's remote_any was ever set (a fork's child skips its
 * walk of the pools where none was: pools.h, pools_fork_child). */
bool remote_any_pool(void);

#endif
