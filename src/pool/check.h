/* check.c: the checks of a pointer given to a pool and their reports, and
 * debug pools' per-object checks (fills, live bits, call sites). Each
 * report names the pool and the pointer and says what most likely
 * happened; every fatal one ends the process (error.h). */
#ifndef POOLKIT_CHECK_H
#define POOLKIT_CHECK_H

#include "pool/pool_types.h"

/* A pointer given to free must start a slot of this pool; reports it
 * otherwise. Needs no lock and reads no slab (the address map). Returns
 * the slab. */
slab *check_free(pk_pool *p, void *obj);
/* A pointer coming home must be a slot of one of this pool's slabs that was
 * handed out: anything else is reported, never linked into a free list.
 * holder: the free object whose link named obj (hardened pools), or NULL. */
slab *check_handed_out(pk_pool *p, void *obj, const void *holder);
/* Reports obj as freed twice (a second push of the head of a list). */
PK_COLD __attribute__((noreturn)) void check_report_double_free(pk_pool *p, void *obj);
/* Reports NULL given to a free of pool p (free(NULL) is a no-op; a pool's
 * free of it is not). */
PK_COLD __attribute__((noreturn)) void check_report_null(pk_pool *p);
/* Reports slab s, whose count says objects are free where its free list
 * and its fresh slots are used up: an object of it came home twice (its
 * count went down twice), which a take would otherwise loop on. */
PK_COLD __attribute__((noreturn)) void check_report_lost_count(pk_pool *p, const slab *s);
/* Debug pools: the whole check of a pointer given to free (live bit,
 * red zone, fills), under the pool's lock. */
void check_debug_free(pk_pool *p, void *obj);
/* Debug pools: the red zone of obj, a live object, intact (destroy checks
 * every live object's: a pool freed whole frees none of them one by one). */
void check_debug_live(pk_pool *p, void *obj);
/* Debug pools: a slot leaving slab s; reused: it was freed before, so it
 * must still hold the free fill. */
void check_debug_take(pk_pool *p, slab *s, char *obj, bool reused);
/* A slab about to be released: a debug pool's free slots still hold the
 * free fill, a hardened pool's free list links only its own slots. */
void check_slab_release(pk_pool *p, slab *s);
/* A slab's free list, walked before the slab goes (every pool's at
 * destroy, a hardened pool's at every release): each link checked before
 * it is followed (check_slab_link), and no more objects than the slab
 * handed out, or the object met twice is reported (report_list_overrun). */
void check_slab_free_list(pk_pool *p, slab *s);

/* Every walk of a pool's slab lists stops at the pool's slab count: one
 * that runs longer lists a slab twice (memory of the pool's records was
 * overwritten), and is reported rather than walked for ever. *left starts
 * at the slab count (read before the walk, which may release slabs) and
 * counts the slabs met down. */
PK_COLD __attribute__((noreturn)) void check_report_slab_list(const pk_pool *p);
static inline void slab_walk_step(const pk_pool *p, size_t *left) {
    if (unlikely((*left)-- == 0)) check_report_slab_list(p);
}

#endif
