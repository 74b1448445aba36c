/* heap.c: a thread's heap for a pool, the allocation side (the frees are
 * pool_free.c's): the current slab and the list it feeds, the next slab,
 * and whole heaps (thread exit, trim, destroy, stats, fork). Callers pass
 * the time down (pool_purge_poll's reading): the heap reads no clock. */
#ifndef POOLKIT_POOL_HEAP_H
#define POOLKIT_POOL_HEAP_H

#include "pool/pool_types.h"

/* The calling thread's heap in slot c, set up on first use. */
heap *heap_get(pk_pool *p, tc_slot *c);
/* The calling thread's allocation when its list is empty: the next objects
 * of its current slab, or the next slab. NULL with errno ENOMEM. */
void *heap_alloc(pk_pool *p, tc_slot *c, uint64_t now);
/* heap_alloc's n times over (pk_pool_alloc_bulk): objs gets as many as
 * came, the count returned (fewer: errno ENOMEM). */
size_t heap_alloc_bulk(pk_pool *p, tc_slot *c, void **objs, size_t n, uint64_t now);
/* The hardened lean path's allocation (pool_slow.c), and a hardened
 * inline pool's once its inline path refused (HARD_POP): the list's head
 * if its link decodes to a slot of the current slab, to the end, or to an
 * object of another slab the list may hold (hot_link); a link elsewhere is
 * reported; NULL on an empty list. */
void *heap_alloc_lean(pk_pool *p, heap *h);
/* s, owned by h and not current, has come to hold no object: kept as the
 * heap's newest spare (HEAP_SPARE); where the heap has as many as the pool
 * allows, the newest before it goes to the pool. now: the time, or 0 if
 * the caller has not read it (a free). */
void heap_slab_emptied(pk_pool *p, heap *h, slab *s, uint64_t now);
/* The pool's peak estimate (stats' peak_live) learns what h took out or
 * brought home since it last told it: at each refill, and every
 * REMOTE_BATCH remote frees of a thread that only frees. */
void heap_note_peak(pk_pool *p, heap *h);
/* OWNED_WALK (policy.h), after an adoption: where h owns OWNED_WALK times
 * as many slabs as after its last walk, the remote frees of every one
 * collected, the emptied ones to its spares or the pool (whose lock the
 * caller must not hold). */
void heap_walk_due(pk_pool *p, heap *h);
/* s, one of the pool's own (central_adopt took it), joins h's lists. */
void heap_take_slab(pk_pool *p, heap *h, slab *s);
/* obj onto the free list of s, an owned slab of h that is not current;
 * the slab moves from full to avail, or, with its last object home, becomes
 * a spare of the heap (heap_slab_emptied). */
void heap_free_home(pk_pool *p, heap *h, slab *s, void *obj, uint64_t now);
/* k objects of s (as heap_free_home's), linked from head to tail, onto its
 * free list: heap_free_home's moves, once. */
void heap_free_home_run(pk_pool *p, heap *h, slab *s, void *head, void *tail, uint32_t k, uint64_t now);
/* The owner's free of obj, a slot of s, one of h's slabs that is not the
 * current one, with the HOT_FREES case and the thread's list's head
 * ruled out (the short path's FREE_EDGE, pool_free.h): heap_free_home, a
 * double free reported. */
void heap_free_owned(heap *h, slab *s, void *obj);
/* OWN_FREES' drain (pk_free calls it when due): the objects pk_free pushed
 * onto h's list since it was last empty or drained, of slabs other than the
 * current one, home to their slabs (heap_free_home); a pointer that is no
 * free slot of an owned slab reported. */
void heap_own_drain(pk_pool *p, heap *h);
/* Gives everything of the heap in slot c back to the pool (its list, its
 * pending chain, its slabs) and clears the slot: thread exit, trim, and,
 * with the pool quiescent, destroy and visit. Caller holds the pool's lock
 * (and the registry's for another thread's heap). */
void heap_abandon(pk_pool *p, tc_slot *c);
/* A thread's exit (tcache_attach's on_exit): its heap of p abandoned
 * under the pool's lock, a use of the pool (purge_note_use). */
void heap_thread_exit(pk_pool *p, tc_slot *c);
/* Every heap of the pool, abandoned (destroy, visit): the registry's and
 * the pool's locks held, the pool quiescent. */
void heap_abandon_all(pk_pool *p);
/* The same for a pool about to be unmapped with no count to keep (a
 * PK_POOL_REGION pool's destroy, no checks to make): slabs handed to the
 * pool as they are, no list walked. */
void heap_forget_all(pk_pool *p);
/* heap_forget_all for a reset that keeps the slabs (pool_region_reset):
 * each slab to the pool empty, its objects unread, its touched mark kept. */
void heap_forget_all_kept(pk_pool *p);
/* A reset's heap of the calling thread when it is the pool's only one
 * (pool_region_reset): its current slab kept installed and one other kept
 * as its spare, each with no slot handed out and its touched mark kept;
 * its other slabs forgotten as heap_forget_all_kept's; its counters
 * started again. The next allocations carve those slabs again without the
 * pool's lock. Caller holds the pool's lock. */
void heap_reset_own(pk_pool *p, heap *h);
/* Sums of the heaps' counters and of their slabs' counts (the registry's
 * and the pool's locks held): objects outside the slabs' free lists that
 * are not live (lists, pending chains), the owned slabs' used counts,
 * allocs, remote frees, resident bytes. */
typedef struct heap_sums {
    size_t idle;
    int64_t pending; /* pushed - collected */
    uint64_t allocs, remote_frees;
    size_t used, resident;
} heap_sums;
void heap_sum(const pk_pool *p, heap_sums *out);
/* Fork child: heaps of threads that did not survive are dropped, their
 * slabs put on the pool's LOST list, every slot ever handed out counted as
 * live (their lists are never followed: those threads may have been
 * changing them). Caller holds the pool's lock. */
void heap_fork_child(pk_pool *p, const tc_slot *mine, const tc_slot *mine_end);
/* The heap's identities (heap.c lists them), checked whole; a fatal
 * "internal assertion" report names the one that failed. At every refill,
 * where POOLKIT_ASSERT is 3. */
bool heap_is_valid(const pk_pool *p, const heap *h);
#define HEAP_VALIDATE(p, h) PK_ASSERT_EXPENSIVE(heap_is_valid((p), (h)))

#endif
