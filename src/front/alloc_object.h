/* The front end's calls for the object layer: pk_new's memory comes from
 * pk_alloc's class pools and large blocks, so objects and blocks share one
 * class table, one large-block set, one lock and one fork hook (alloc.c).
 *
 * An object's memory is a block of its slot's bytes (header and fields,
 * 16-byte aligned: every class from 16 bytes on is a multiple of 16, so
 * its slots are 16-aligned). In default and debug modes it is a class
 * pool's slot up to 64 KiB (alloc.c, OBJECT_POOLED_MAX), taken and given
 * back through the pool's inline paths with the front end's guarded slow
 * paths behind them; a larger one is a large block of its own. With POOLKIT_HARDENED=1 every
 * object is a hardened block (check word, quarantine, guard pages for the
 * large ones), allocated and freed as pk_aligned_alloc's and pk_free's.
 */
#ifndef POOLKIT_ALLOC_OBJECT_H
#define POOLKIT_ALLOC_OBJECT_H

#include <poolkit/alloc.h>

#include "pool/pool_internal.h"

/* The class table's length: pk_alloc's classes (PK__ALLOC_CLASSES), then
 * pk_new's own, one for each 16 bytes from 144 to 1,024 (alloc.c): an
 * object of such a size that is no class of pk_alloc's has a class of its
 * exact size, and shares pools only with objects. */
#define ALLOC_CLASSES_ALL (PK__ALLOC_CLASSES + 56)

/* Whether p, a slab's pool, is one of the front end's class pools (not a
 * pk_heap's): the pools pk_new's objects lie in. */
static inline bool alloc_is_front_class(const pk_pool *p) {
    return p && (p->flags & (POOL_SIZE_CLASS | POOL_HEAP)) == POOL_SIZE_CLASS;
}

/* The class pool an object of size bytes (a multiple of 16) comes from in
 * the current mode (hardened: pk_alloc's class with room for its check
 * word; else its object class, or pk_alloc's of that size), made if need be.
 * NULL with errno EINVAL when such a block is a large block (over 64 KiB,
 * or over the classes in hardened mode), or ENOMEM. */
pk_pool *alloc_object_pool(size_t size);
/* Whether an object of size bytes is a class pool's slot in the current
 * mode (default or debug, up to 64 KiB), which alloc_object_pool gives. */
bool alloc_object_pooled(size_t size);
/* The block of an object of size bytes that alloc_object_pooled does not
 * pool: a large block of its own, or in hardened mode a hardened block
 * (pk_aligned_alloc's); pk_free gives it back. NULL with errno ENOMEM. */
void *alloc_object_block(size_t size);
/* The default mode's class pool for an object of size bytes (a multiple
 * of 16 that alloc_object_pooled pools) if it has been made, else NULL:
 * a lookup with no side effect, for frees of objects it handed out. */
pk_pool *alloc_object_pool_made(size_t size);
/* An object of p, a class pool: its inline path, else its slow path with
 * the front end's guard against re-entry (alloc.c, "Re-entry"); NULL with
 * errno ENOMEM. */
void *alloc_from_pool(pk_pool *p, void *caller);
/* ptr, an object of p, a class pool, whose inline free missed
 * (pk__pool_free_try gave the thread's slot c and its word cur): the short
 * path into another of the thread's slabs, as pk_free's, else the guarded
 * slow path. */
void alloc_free_missed(pk_pool *p, void *ptr, pk__link *c, uintptr_t cur);
/* The class pool made for class index ci (below ALLOC_CLASSES_ALL), or
 * NULL (none made yet, or ci past the classes): for walks over every
 * class (the census). */
pk_pool *alloc_class_made(size_t ci);

#endif
