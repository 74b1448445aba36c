/* What object.c and autorelease.c share: the object header and the inline
 * release that the autorelease drain uses for every object it pops.
 *
 * Header (16 bytes, so the fields stay 16-byte aligned):
 *   cls   the class; once the memory is back in its pool, the pool's free
 *         link (pools keep it in the first word); while a released object
 *         waits for its dealloc behind another one, the wait queue's link.
 *   refs  the reference count, always accessed atomically. 1..REFS_MAX while
 *         alive. From the moment its dealloc is decided it holds REFS_DEAD:
 *         DEAD_TAG in the top 16 bits and the class in the low 48, so a
 *         release or retain that comes too late is recognised and can name
 *         the class even after the pool has reused the first word.
 */
#ifndef POOLKIT_OBJECT_INTERNAL_H
#define POOLKIT_OBJECT_INTERNAL_H

#include "base/internal.h"
#include "pool/pool_internal.h"

#include <poolkit/object.h>

typedef struct object_header {
    const pk_class *cls;
    uintptr_t refs;
} object_header;

_Static_assert(sizeof(object_header) == PK_OBJECT_HEADER_SIZE, "object header size");

#if UINTPTR_MAX > 0xFFFFFFFFu
#  define REFS_MAX (((uintptr_t)1 << 48) - 1)
#  define DEAD_TAG ((uintptr_t)0xDEADu << 48)
#  define DEAD_CLASS_MASK REFS_MAX
#else
#  define REFS_MAX ((uintptr_t)0x7FFFFFFFu)
#  define DEAD_TAG ((uintptr_t)0xDEAD0000u)
#  define DEAD_CLASS_MASK ((uintptr_t)0)
#endif

/* The dead mark for an object of cls. A class whose address does not fit
 * under the tag (not on Linux's x86-64 or AArch64 user space) still yields a
 * mark no live count has; refs_dead_class then finds no class in it, or in
 * the worst case a wrong one for the report (the dealloc queue checks). */
static inline uintptr_t refs_dead(const pk_class *cls) {
#if UINTPTR_MAX > 0xFFFFFFFFu
    return DEAD_TAG | (uintptr_t)cls;
#else
    (void)cls;
    return DEAD_TAG;
#endif
}

/* Not a count a live object can have: 0, or a dead mark or garbage. */
static inline bool refs_invalid(uintptr_t n) { return n - 1 >= REFS_MAX; }

/* The class recorded in a dead mark, or NULL. */
static inline const pk_class *refs_dead_class(uintptr_t n) {
    if ((n & ~DEAD_CLASS_MASK) != DEAD_TAG) return NULL;
    return (const pk_class *)(n & DEAD_CLASS_MASK);
}

static inline object_header *header_of(const void *obj) {
    return (object_header *)((char *)obj - sizeof(object_header));
}

/* ---- object_check.c: is a pointer an object of pk_new? ---- */

/* Whether the object layer is in debug mode (object.c; reads the switch
 * once). */
bool object_debug(void);
/* In debug mode, reports obj as a "foreign pointer" (PK_FATAL) unless it is
 * an object of pk_new (deallocated or not); call names the entry point. */
void object_check_slow(const void *obj, const char *call);
/* Whether obj's header starts a slot of an object pool (any mode; never
 * reads obj's memory). */
bool object_in_pools(const void *obj);
/* Whether obj is an object of pk_new, pooled or too large for the pools
 * (deallocated or not: its count says); never reads obj's memory. */
bool object_known(const void *obj);
/* Reports obj, given to `call`, as a "foreign pointer" (PK_FATAL). */
PK_COLD __attribute__((noreturn)) void object_report_foreign(const void *obj, const char *call);
/* The objects too large for the pools, recorded while they live in every
 * mode (add is false, having recorded nothing, when out of memory). */
bool large_add(const void *h);
void large_remove(const void *h);
bool large_has(const void *h);
void object_check_fork_lock(void);
void object_check_fork_unlock(void);

/* The slots of the slab of an object pool where the calling thread last
 * found an object (object_pooled_lookup), and the map's generation then:
 * while it has not changed, that slab still holds those slots (object.c). */
typedef struct object_slab_cache {
    uintptr_t first, bytes; /* slot 0's address, and the slots' bytes; 0: none */
    uint64_t recip;         /* the slot's reciprocal (slab.h, slot_on_grid) */
    uint64_t generation;    /* map_generation when found */
} object_slab_cache;
extern __thread object_slab_cache object_last_slab __attribute__((tls_model("initial-exec")));

/* object.c: object_pooled's lookup in the address map, which refills the
 * cache when it finds an object pool's slab. */
bool object_pooled_lookup(const void *obj);

/* Whether obj's header starts a slot of a pool made for objects, never
 * reading obj's memory: every release and retain asks it before they read
 * or write a count, so a pointer that is not an object is refused. First
 * against the slab the thread last found one in (a compare, a multiply and
 * the map's generation), else by the address map (about 30 instructions).
 * Objects too large for the pools fail it and take the slow way
 * (object_known). */
static inline bool object_pooled(const void *obj) {
    const object_slab_cache *c = &object_last_slab;
    uintptr_t off = (uintptr_t)header_of(obj) - c->first;
    if (likely(off < c->bytes && off * c->recip < c->recip &&
               c->generation == __atomic_load_n(&map_generation, __ATOMIC_ACQUIRE)))
        return true;
    return object_pooled_lookup(obj);
}

/* object.c: a release of a pointer object_pooled does not place: a live
 * object too large for the pools, else a foreign pointer, reported. */
void object_release_unpooled(void *obj);

/* object.c: disposes of an object whose class has no dealloc, whose count
 * is 1 and whose only reference the caller holds. */
void object_dispose_quiet(object_header *h, const pk_class *cls);

/* Releases obj if that runs no code of the program (a live object whose
 * class has no dealloc); false, having done nothing, otherwise. */
static inline bool object_release_quietly(void *obj) {
    if (unlikely(!object_pooled(obj))) return false;
    object_header *h = header_of(obj);
    uintptr_t n = __atomic_load_n(&h->refs, __ATOMIC_ACQUIRE);
    const pk_class *cls = h->cls;
    if (n != 1 || cls->dealloc != NULL) return false;
    object_dispose_quiet(h, cls);
    return true;
}

/* object.c: the count reached zero (we hold the only reference). */
void object_dispose(object_header *h);
/* object.c: a release that saw a count other than 1. */
void object_release_contended(object_header *h, uintptr_t seen);

/* pk_release without the NULL check (the pointer checked first). An
 * acquire load that sees 1 means the
 * caller holds the only reference (nobody can retain without one), so the
 * object is disposed of with no read-modify-write; the acquire pairs with
 * the release half of other threads' decrements. */
static inline void object_release(void *obj) {
    if (unlikely(!object_pooled(obj))) {
        object_release_unpooled(obj);
        return;
    }
    object_header *h = header_of(obj);
    uintptr_t n = __atomic_load_n(&h->refs, __ATOMIC_ACQUIRE);
    if (likely(n == 1))
        object_dispose(h);
    else
        object_release_contended(h, n);
}

/* Live objects per class (stats.c): fn(cls, live, arg) for every class
 * with live pooled objects, counted from the headers of every class pool's
 * live slots (objects too large for the pools are not counted). Walks like
 * pk_pool_visit: the object layer must be quiet on every other thread.
 * Classes past the first OBJECT_CENSUS_MAX are summed under cls NULL. */
#define OBJECT_CENSUS_MAX 256
void object_census(void (*fn)(const pk_class *cls, size_t live, void *arg), void *arg);

#endif
