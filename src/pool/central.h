/* central.c: a pool's own slabs, under its lock (or on a PK_POOL_LOCAL
 * pool's one thread): all the slabs of a direct pool (debug, a limit), and
 * for the others the slabs no thread's heap owns (empty ones, and those of
 * threads that exited); the moves of slabs between the pool and a heap;
 * remote frees collected. Every function but central_collect and
 * central_splice_remote needs the pool's lock. */
#ifndef POOLKIT_CENTRAL_H
#define POOLKIT_CENTRAL_H

#include "pool/pool_types.h"

/* Direct pools: takes up to n objects from the slabs and pushes them onto
 * the list *list. With `all`, maps slabs until n are taken; otherwise, once
 * it has some, it stops at what is ready. Returns how many (0 with errno
 * ENOMEM). */
size_t central_take(pk_pool *p, size_t n, void **list, bool all);
/* Direct pools: returns one checked object to its slab s. */
void central_give(pk_pool *p, slab *s, void *obj);
/* Releases the pool's empty slabs: every one with `any`, else those empty
 * since tick `before` or earlier, leaving keep_free free slots (reserve).
 * Returns the bytes given back. */
size_t central_release_empty(pk_pool *p, bool any, uint32_t before);
/* Empty slabs beyond as many as the pool's others (the slabs that hold
 * objects, the threads' included), leaving the reserve: to the region's
 * warm places (region.c keeps a bounded number for the next slab of any
 * pool), the rest to the system; none of a pool of huge slots (their
 * slabs serve no other pool). For a thread's exit, whose empty slabs
 * would otherwise wait for a purge tick, which only a call that reaches
 * the library runs. Returns the bytes given back. */
size_t central_release_surplus(pk_pool *p);
/* A mapping of `bytes` fresh pages is about to be made outside the pools
 * (a large block, alloc_large.c): as many bytes of the pools' empty slabs,
 * beyond SHARE_EMPTY_KEEP each and their reserves, go back to the system
 * first, past GIVE_EMPTY_FLOOR of such slabs, so that memory emptied in the
 * classes does not wait out the purge delay while the large blocks that
 * took its objects' place grow (a buffer grown by realloc leaves the
 * classes: REALLOC_MAPPED_MIN). A pool of huge slots does the same as it
 * maps a slab (central.c, new_slab), keeping the regions of slots at least
 * as long as its own for its slabs. Any thread, no lock held; only tried
 * locks. Returns the bytes. */
size_t central_give_empties(size_t bytes);
/* Every empty slab beyond the reserve (the reserve too with `all`). */
size_t central_release(pk_pool *p, bool all);
/* A slab for a heap to own: one of the pool's partly used slabs, else an
 * empty one, else, if may_map, a new one; NULL (with errno ENOMEM if
 * may_map) when there is none. Off the pool's lists and counts, its owner
 * set to h: the heap counts it (heap.c). */
slab *central_slab_for_heap(pk_pool *p, struct heap *h, bool may_map);
/* A free into s, one of the pool's own partly used or full slabs (a thread
 * gone left it): h takes it (its remote frees collected), so this free and
 * the next ones into it are the owner's, not remote (mimalloc's reclaim on
 * free of an abandoned page). False if s is not the pool's any more. Off
 * the pool's lists and counts like central_slab_for_heap. */
bool central_adopt(pk_pool *p, struct heap *h, slab *s);
/* A slab a heap gives back (empty, or its thread is leaving), its counts
 * already off the heap's: onto the pool's counts and the list they say. */
void central_slab_from_heap(pk_pool *p, slab *s);
/* Takes s's thread_free (remote frees), checking each link on hardened
 * pools; returns the count, and the chain's tail in *tail. The caller owns
 * s (its heap's thread, or the pool's lock for the pool's own slabs) and
 * accounts the count (heap.collected, or remote_base). */
size_t central_collect(pk_pool *p, slab *s, void **head, void **tail);
/* central_collect, then the chain onto s's free list and off its used
 * count; returns the count for the caller to account. */
size_t central_splice_remote(pk_pool *p, slab *s);
/* s's last object came home: restarted in address order if its frees came
 * out of order (RESTART_DISORDER), its per-emptying marks cleared. */
void central_slab_emptied(const pk_pool *p, slab *s);
/* Collects the remote frees of the pool's own slabs, moving each to the
 * list its counts then say. */
void central_collect_own(pk_pool *p);
/* Makes slabs until n free slots are ready; returns the ready count. */
size_t central_reserve(pk_pool *p, size_t n);
/* Destructs constructed objects and unmaps every slab (pool destroy). */
void central_free_all(pk_pool *p);
/* Every slab of the pool's own empty again, its objects forgotten unread
 * (a region's reset: pool_region_reset); lost slabs are unmapped. */
void central_forget_all(pk_pool *p);
/* Fork child: s, owned by a heap gone with its thread, onto the LOST list. */
void central_lose_slab(pk_pool *p, slab *s);
/* The objects counted out in lost slabs (every slot they ever handed out:
 * which of them a thread gone held free is not known). Caller holds the
 * pool's lock. */
size_t central_lost_out(const pk_pool *p);
/* Fork child: the objects on s's thread_free, counted by a walk that never
 * leaves the slab. */
size_t central_count_remote(pk_pool *p, slab *s);

#endif
