/* What object.c and autorelease.c share: the object header and the inline
 * release that the autorelease drain uses for every object it pops.
 *
 * Header (16 bytes, so the fields stay 16-byte aligned):
 *   cls   the class; once the memory is back in its pool, the pool's free
 *         link (pools keep it in the first word); while a released object
 *         waits for its dealloc behind another one, the wait queue's link.
 *   refs  the reference count, always accessed atomically: while alive the
 *         count in the bits above REFS_SHIFT and REFS_TAG in those below.
 *         The tag is the object's mark: pk_new's objects share the front
 *         end's class pools and large blocks with pk_alloc's blocks, so
 *         where the memory lies no longer says "object", and a pointer that
 *         starts a slot is taken for an object only if this word is tagged.
 *         The tag is odd and sits in the low bits, so a pointer, a zero or
 *         a small number there never passes for it, and the hot paths'
 *         compares stay 32-bit immediates. From the moment its dealloc is
 *         decided the word holds REFS_DEAD: DEAD_TAG in the top 16 bits and
 *         the class in the low 48 (a class is 8-aligned: never the tag), so
 *         a release or retain that comes too late is recognised and can
 *         name the class even after the pool has reused the first word.
 */
#ifndef POOLKIT_OBJECT_INTERNAL_H
#define POOLKIT_OBJECT_INTERNAL_H

#include "base/internal.h"
#include "pool/pool_internal.h"
#include "front/alloc_internal.h"

#include <poolkit/object.h>

typedef struct object_header {
    const pk_class *cls;
    uintptr_t refs;
} object_header;

_Static_assert(sizeof(object_header) == PK_OBJECT_HEADER_SIZE, "object header size");

#if UINTPTR_MAX > 0xFFFFFFFFu
#  define REFS_SHIFT 16
#  define REFS_TAG ((uintptr_t)0x0B1Fu)
#  define REFS_MAX (((uintptr_t)1 << 47) - 1) /* the most references at once */
#  define DEAD_TAG ((uintptr_t)0xDEADu << 48)
#  define DEAD_CLASS_MASK (((uintptr_t)1 << 48) - 1)
#else
#  define REFS_SHIFT 8
#  define REFS_TAG ((uintptr_t)0xB1u)
#  define REFS_MAX ((uintptr_t)0x007FFFFFu)
#  define DEAD_TAG ((uintptr_t)0xDEAD0000u)
#  define DEAD_CLASS_MASK ((uintptr_t)0)
#endif
_Static_assert(DEAD_TAG == POOL_KEPT_MARK && (DEAD_TAG & ~DEAD_CLASS_MASK) == DEAD_TAG &&
                   POOL_KEPT_MARK_MASK == ~DEAD_CLASS_MASK,
               "debug pools' fills keep a dead mark (pool_types.h, POOL_KEEPS_HEADER)");
#define REFS_ONE ((uintptr_t)1 << REFS_SHIFT) /* one reference: retain's and release's step */
#define REFS_LIVE1 (REFS_ONE | REFS_TAG)      /* a live object's word with one reference */
_Static_assert(REFS_TAG & 1, "the tag is odd: no class address (a dead mark) and no pointer has it");
_Static_assert(REFS_LIVE1 <= 0x7FFFFFFF, "compares with a live count take a 32-bit immediate");
/* pk_retain's one compare after its add (object.c, retain_known): every
 * live word is positive as a signed word, a dead mark negative. */
_Static_assert((intptr_t)((REFS_MAX << REFS_SHIFT) | REFS_TAG) > 0 && (intptr_t)DEAD_TAG < 0,
               "live words positive, dead marks negative");

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

/* Not the word of a live object: untagged (a dead mark, a pk_alloc block's
 * data, a freed slot), or tagged with a count of 0 or past REFS_MAX. The
 * rotation moves the tag's bits, zero after the subtraction in a live
 * word, to the top, so one compare checks the tag and the count. */
static inline bool refs_invalid(uintptr_t n) {
    uintptr_t d = n - REFS_LIVE1;
    return (d >> REFS_SHIFT | d << (sizeof d * 8 - REFS_SHIFT)) >= REFS_MAX;
}

/* Whether n is a live object's word with more than one reference (the
 * rotation as in refs_invalid, from two references). */
static inline bool refs_shared(uintptr_t n) {
    uintptr_t d = n - (REFS_LIVE1 + REFS_ONE);
    return (d >> REFS_SHIFT | d << (sizeof d * 8 - REFS_SHIFT)) < REFS_MAX - 1;
}

/* Whether n carries the tag: a live object's word, its count not checked. */
static inline bool refs_tag_ok(uintptr_t n) { return (n & (REFS_ONE - 1)) == REFS_TAG; }

/* The references counted in a live object's word. */
static inline size_t refs_count(uintptr_t n) { return (size_t)(n >> REFS_SHIFT); }

/* The class recorded in a dead mark, or NULL. */
static inline const pk_class *refs_dead_class(uintptr_t n) {
    if ((n & ~DEAD_CLASS_MASK) != DEAD_TAG) return NULL;
    return (const pk_class *)(n & DEAD_CLASS_MASK);
}

static inline object_header *header_of(const void *obj) {
    return (object_header *)((char *)obj - sizeof(object_header));
}

/* ---- object_check.c: is a pointer an object of pk_new? ---- */

/* Whether the object layer is in debug mode (reads the switch once). */
bool object_debug(void);
/* The pointers pk_retain and pk_release send to their slow entries: those
 * up to this one (every one until object_debug has read the switch, and in
 * debug mode; else NULL alone). */
extern uintptr_t object_slow_below __attribute__((visibility("hidden"))); /* one load, no GOT */
/* In debug mode, reports obj as a "foreign pointer" (PK_FATAL) unless it is
 * an object of pk_new (deallocated or not); call names the entry point. */
void object_check_slow(const void *obj, const char *call);
/* Whether obj's header starts a slot of one of the front end's class
 * pools, where pk_new's objects lie (any mode; never reads obj's memory). */
bool object_in_pools(const void *obj);
/* Whether obj is an object of pk_new (deallocated or not: its count says):
 * its header starts a class pool's slot or a large block of the front end,
 * and its count word is tagged, live or dead. Reads that word, never
 * writes. */
bool object_known(const void *obj);
/* Whether word, an object's count word, is the word of a live object or
 * the dead mark of one. */
static inline bool refs_tagged(uintptr_t n) { return !refs_invalid(n) || refs_dead_class(n) != NULL; }
/* Reports obj, given to `call`, as a "foreign pointer" (PK_FATAL). */
PK_COLD __attribute__((noreturn)) void object_report_foreign(const void *obj, const char *call);

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
 * cache when it finds a slab of a front end's class pool. */
bool object_pooled_lookup(const void *obj);

/* Whether obj's header starts a slot of a front end's class pool, never
 * reading obj's memory: every release and retain asks it before they read
 * a count, so a pointer elsewhere is refused unread; within the pools,
 * which pk_alloc's blocks share, the count word's tag (REFS_TAG) tells an
 * object, checked before the word is written. First against the slab the
 * thread last found one in (a compare, a multiply and the map's
 * generation), else by the address map (about 30 instructions). Objects
 * over the last class (large blocks) fail it and take the slow way
 * (object_known). pk_retain and pk_release test the first half inline and
 * take the lookup in a function of their own, as a tail call, so that their
 * fast paths keep no stack frame. */
static inline bool object_pooled_cached(const void *obj) {
    const object_slab_cache *c = &object_last_slab;
    uintptr_t off = (uintptr_t)header_of(obj) - c->first;
    return likely(off < c->bytes && off * c->recip < c->recip &&
                  c->generation == __atomic_load_n(&map_generation, __ATOMIC_ACQUIRE));
}

static inline bool object_pooled(const void *obj) {
    return object_pooled_cached(obj) || object_pooled_lookup(obj);
}

/* object.c: a release of a pointer object_pooled does not place: a live
 * object in a large block, else a foreign pointer, reported. */
void object_release_unpooled(void *obj);

/* object.c: disposes of an object whose class has no dealloc, whose count
 * is 1 and whose only reference the caller holds. */
void object_dispose_quiet(object_header *h, const pk_class *cls);

/* obj's header if releasing obj runs no code of the program (a live
 * object with one reference, whose class has no dealloc) and obj lies in
 * the slab the thread last found one in (object_pooled_cached: nothing
 * else of obj is read first); NULL otherwise. */
static inline object_header *object_quiet_cached(void *obj) {
    if (!object_pooled_cached(obj)) return NULL;
    object_header *h = header_of(obj);
    if (__atomic_load_n(&h->refs, __ATOMIC_ACQUIRE) != REFS_LIVE1 || h->cls->dealloc != NULL) return NULL;
    return h;
}

/* object.c: the count reached zero (we hold the only reference). */
void object_dispose(object_header *h);
/* object.c: a release that saw a word other than REFS_LIVE1. */
void object_release_contended(object_header *h, uintptr_t seen);

/* pk_release without the NULL check (the pointer checked first). An
 * acquire load that sees one reference (REFS_LIVE1: tagged) means the
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
    if (likely(n == REFS_LIVE1))
        object_dispose(h);
    else
        object_release_contended(h, n);
}

/* Live objects per class (stats.c): fn(cls, live, arg) for every class
 * with live pooled objects, counted from the headers of every front end
 * class pool's live slots whose count word is a live object's (objects in
 * large blocks are not counted). Walks like
 * pk_pool_visit: the object layer must be quiet on every other thread.
 * Classes past the first OBJECT_CENSUS_MAX are summed under cls NULL. */
#define OBJECT_CENSUS_MAX 256
void object_census(void (*fn)(const pk_class *cls, size_t live, void *arg), void *arg);

#endif
