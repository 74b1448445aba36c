/* Reference-counted objects on top of the size-class front end.
 *
 * Memory. An object's memory is a 16-byte header (object_internal.h) and its
 * fields rounded up to 16 bytes: a block of the front end, from the class
 * pool pk_alloc uses for that many bytes, or a large block over the last
 * class (front/alloc_object.h), so objects and pk_alloc's blocks share one
 * class table, one large-block set, their locks and fork handlers. The
 * classes' slots are 16-aligned: "aligned" means the memory with its
 * header, not the pointer pk_new returns, 16 bytes into it. In default and
 * debug modes the calling thread keeps its last class and that class's
 * pool, so pk_new and pk_release take the pool's inline paths; hardened
 * mode (POOLKIT_HARDENED=1) allocates and frees every object as the front
 * end's hardened blocks (check word, quarantine), with no cache. Nothing
 * in the header says which pool: the class's size does, so the memory
 * returns to the same pool from any thread.
 *
 * Counts (tagged: object_internal.h). pk_new stores one reference.
 * pk_retain loads the word, and only if it is a live object's adds one
 * with a relaxed fetch-add, so a block that is not an object is never
 * written. pk_release first loads the word with acquire: one reference
 * means we hold the only one, so the object is disposed of with no
 * read-modify-write; otherwise, if it is a live object's, an acq_rel
 * fetch-sub, and whoever takes it from one disposes. Disposal stores the dead
 * mark first, so a release that comes late (during the dealloc, or after the
 * memory went back and before it is reused) sees a count no live object has
 * and is reported as an over-release.
 *
 * Dealloc chains. Deallocs that release the last reference to other objects
 * nest, as plain recursion, up to DEALLOC_NESTING deep on a thread; deeper
 * than that an object waits on the thread's stack of pending objects
 * (linked through its first header word, its class kept in the dead mark),
 * and the outermost disposal runs those once its own dealloc returns. Trees
 * are freed in the natural order (children before parents' memory) and a
 * list of a million objects needs no more than DEALLOC_NESTING frames.
 */
#include "object/object_internal.h"
#include "pool/pool_internal.h"

#include <poolkit/pool.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The calling thread's last class and its pool. A hit turns the pool lookup
 * into a predicted branch: the free-list store in pk_release then no longer
 * waits for the chain header -> class -> size -> class table -> pool, which
 * the next allocation's load would wait for in turn. Never holds NULL or a
 * heap class. */
static const pk_class no_class;
static __thread struct class_cache {
    const pk_class *cls;
    pk_pool *pool;
    /* The pool's slot's offset in every thread's table (as pk__slot finds
     * it; 0, the table's zero slot, for none), and cls if it has no dealloc
     * (else no_class), which release compares with in one instruction. */
    uintptr_t slot_off;
    const pk_class *plain;
} cc __attribute__((tls_model("initial-exec"))) = {&no_class, NULL, 0, &no_class};

static void cache_class(const pk_class *cls, pk_pool *pool) {
    cc.cls = cls;
    cc.pool = pool;
    cc.slot_off = (uintptr_t)((char *)pk__slot(pool) - pk__tc_table);
    cc.plain = cls->dealloc ? &no_class : cls;
}

/* The calling thread's slot of the cached class's pool. */
static inline pk__link *cached_slot(void) { return (pk__link *)(void *)(pk__tc_table + cc.slot_off); }

/* Debug mode (object_check.c), at no cost outside it: pk_retain and
 * pk_release send every pointer up to object_slow_below to their slow
 * entries, which the NULL test needed anyway (one compare with memory
 * instead of a test of the register). */
static inline bool goes_slow(const void *obj) {
    return (uintptr_t)obj <= __atomic_load_n(&object_slow_below, __ATOMIC_RELAXED);
}

/* ---- is it in the class pools? (object_internal.h, object_pooled) ---- */

__thread object_slab_cache object_last_slab __attribute__((tls_model("initial-exec")));

bool object_pooled_lookup(const void *obj) {
    uint64_t generation = __atomic_load_n(&map_generation, __ATOMIC_ACQUIRE); /* before the lookup */
    map_entry e;
    if (!map_slot(header_of(obj), &e) || !alloc_is_front_class(e.pool)) return false;
    /* The cache's test is map_slot's: below the slots' end, then the multiply. */
    object_last_slab = (object_slab_cache){(uintptr_t)e.objects, (uintptr_t)e.slot * e.capacity, e.recip, generation};
    return true;
}

/* ---- sizes ---- */

/* Slot bytes for fields of size bytes, or 0 if it cannot be represented. */
static inline size_t slot_bytes(size_t size) {
    if (size > SIZE_MAX / 2) return 0;
    return sizeof(object_header) + align_up(size, 16);
}

/* ---- allocation ---- */

static inline void *object_init(object_header *h, const pk_class *cls) {
    h->cls = cls;
    h->refs = REFS_LIVE1; /* not yet shared: a plain store */
    return h + 1;
}

/* An object of over 32 bytes of fields: its memset, out of pk_new. */
static PK_NOINLINE void *new_zeroed(object_header *h, const pk_class *cls) {
    memset(h + 1, 0, slot_bytes(cls->size) - sizeof *h);
    return object_init(h, cls);
}

/* A class pool's object in default and debug modes, caching the class and
 * its pool for the next call; else (hardened mode, or over 64 KiB) the
 * front end's block of its own (alloc_object_block). */
static PK_NOINLINE void *new_slow(const pk_class *cls) {
    if (!cls) {
        errno = EINVAL;
        return NULL;
    }
    size_t slot = slot_bytes(cls->size);
    if (slot == 0) {
        errno = ENOMEM;
        return NULL;
    }
    object_header *h;
    if (alloc_object_pooled(slot)) {
        pk_pool *pool = alloc_object_pool(slot);
        if (!pool) return NULL;
        cache_class(cls, pool);
        h = alloc_from_pool(pool, __builtin_return_address(0));
    } else {
        h = alloc_object_block(slot);
    }
    if (!h) return NULL;
    memset(h + 1, 0, slot - sizeof *h);
    return object_init(h, cls);
}

/* The cached pool's inline path missed: its guarded slow path. */
static PK_NOINLINE void *new_refill(const pk_class *cls) {
    object_header *h = alloc_from_pool(cc.pool, __builtin_return_address(0));
    if (unlikely(!h)) return NULL;
    memset(h + 1, 0, slot_bytes(cls->size) - sizeof *h);
    return object_init(h, cls);
}

/* Every call on the fast path is a tail call (the refill, the memset of
 * more than 32 bytes, the miss), so it saves no register: up to 32 bytes
 * of fields are zeroed in place, with no loop. */
void *pk_new(const pk_class *cls) {
    if (likely(cls == cc.cls)) {
        object_header *h = pk__slot_alloc_try(cached_slot(), 1);
        if (unlikely(!h)) return new_refill(cls);
        size_t n16 = (cls->size + 15) >> 4;
        if (unlikely(n16 > 2)) return new_zeroed(h, cls);
        uint64_t *q = (uint64_t *)(h + 1);
        if (likely(n16 != 0)) {
            q[0] = 0;
            q[1] = 0;
            if (n16 > 1) {
                q[2] = 0;
                q[3] = 0;
            }
        }
        return object_init(h, cls);
    }
    return new_slow(cls);
}

pk_pool *pk_class_pool(const pk_class *cls) {
    if (!cls) {
        errno = EINVAL;
        return NULL;
    }
    size_t slot = slot_bytes(cls->size);
    if (slot == 0) {
        errno = EINVAL;
        return NULL;
    }
    return alloc_object_pool(slot);
}

/* ---- disposal ---- */

/* A cache miss: the pool from the class's size (made before the object
 * existed, and whoever releases the object is ordered after its creation,
 * so the lookup finds it), cached; in hardened mode and for large blocks,
 * pk_free. */
static PK_NOINLINE void free_uncached(const pk_class *cls, object_header *h) {
    size_t slot = slot_bytes(cls->size);
    pk_pool *p = alloc_object_pooled(slot) ? alloc_object_pool_made(slot) : NULL;
    if (p) {
        cache_class(cls, p);
    }
    pk_free(h);
}

/* The memory of an object of the cached class: the slot's inline free,
 * else the front end's short path for another of the thread's slabs, or
 * its guarded slow path (alloc_free_missed). */
static inline void free_cached(object_header *h) {
    pk__link *c = cached_slot();
    uintptr_t cur;
    if (likely(pk__slot_free_try(c, h, &cur))) return;
    alloc_free_missed(cc.pool, h, c, cur);
}

/* An object's memory: free_cached for the cached class, else its pool
 * looked up (free_uncached). */
static inline void free_memory(const pk_class *cls, object_header *h) {
    if (likely(cls == cc.cls)) {
        free_cached(h);
        return;
    }
    free_uncached(cls, h);
}

/* The calling thread's nesting of deallocs, and the objects waiting for
 * theirs (a stack linked through the first header word). */
static __thread struct dealloc_queue {
    object_header *head;
    unsigned depth; /* deallocs running on this thread */
} dq __attribute__((tls_model("initial-exec")));

#define DEALLOC_NESTING 32 /* deallocs that run in place inside one another */

static inline void dealloc_and_free(object_header *h, const pk_class *cls) {
    cls->dealloc(h + 1);
    free_memory(cls, h);
}

/* The outermost dealloc of the thread (depth 0), or one too deep to nest. */
static PK_NOINLINE void dispose_outer_or_deep(object_header *h, const pk_class *cls,
                                              uintptr_t dead) {
    struct dealloc_queue *q = &dq;
    if (q->depth == 0) { /* run it, then what waits, each nesting afresh */
        q->depth = 1;
        dealloc_and_free(h, cls);
        while ((h = q->head) != NULL) {
            q->head = (object_header *)(void *)h->cls;
            cls = refs_dead_class(__atomic_load_n(&h->refs, __ATOMIC_RELAXED));
            h->cls = cls;
            dealloc_and_free(h, cls);
        }
        q->depth = 0;
        return;
    }
    if (likely(refs_dead_class(dead) == cls)) { /* too deep: wait, the class kept in the mark */
        h->cls = (const pk_class *)(void *)q->head;
        q->head = h;
        return;
    }
    dealloc_and_free(h, cls); /* a class above the mark's reach: nest anyway */
}

static PK_NOINLINE void dispose_with_dealloc(object_header *h) {
    const pk_class *cls = h->cls;
    uintptr_t dead = refs_dead(cls);
    __atomic_store_n(&h->refs, dead, __ATOMIC_RELAXED);
    unsigned depth = dq.depth;
    if (likely(depth - 1 < DEALLOC_NESTING - 1)) { /* nested in another dealloc */
        dq.depth = depth + 1;
        dealloc_and_free(h, cls);
        dq.depth = depth;
        return;
    }
    dispose_outer_or_deep(h, cls, dead);
}

/* An object of the thread's cached class with no dealloc (cc.plain) needs
 * no look at its class's dealloc or at which pool it is: its dead mark,
 * then free_cached. */
static inline void dispose(object_header *h) {
    const pk_class *cls = h->cls;
    if (likely(cls == cc.plain)) {
        __atomic_store_n(&h->refs, refs_dead(cls), __ATOMIC_RELAXED);
        free_cached(h);
        return;
    }
    if (likely(cls->dealloc == NULL)) {
        __atomic_store_n(&h->refs, refs_dead(cls), __ATOMIC_RELAXED);
        free_memory(cls, h);
        return;
    }
    dispose_with_dealloc(h);
}

void object_dispose(object_header *h) { dispose(h); }

void object_dispose_quiet(object_header *h, const pk_class *cls) {
    __atomic_store_n(&h->refs, refs_dead(cls), __ATOMIC_RELAXED);
    free_memory(cls, h);
}

/* A count no live object has. A dead mark names the class; otherwise the
 * header is checked against the address map: not in any object pool, the
 * pointer was never an object (or was a large one whose memory went back
 * to the C heap), which the header promises to call a foreign pointer. */
static PK_COLD void report_bad_count(object_header *h, uintptr_t n, const char *what,
                                     const char *doing, const char *call) {
    const pk_class *cls = refs_dead_class(n);
    const char *name = cls && cls->name ? cls->name : NULL;
    /* Untagged: no object's count word, unless zero, which is what a
     * hardened free leaves in a quarantined block. */
    if (!cls && n != REFS_TAG && n != 0) {
        if (!object_in_pools(h + 1))
            error_report(PK_FATAL, "foreign pointer", NULL, h + 1,
                         "%s: %p is not an object of any pool (a foreign pointer, or an object "
                         "in a large block, freed already)", call, (void *)(h + 1));
        error_report(PK_FATAL, "foreign pointer", NULL, h + 1,
                     "%s: %p has no object header: a pk_alloc block, or an object freed and its "
                     "memory reused", call, (void *)(h + 1));
    }
    error_report(PK_FATAL, what, name, h + 1,
                 "%s object %p of class %s whose reference count is %s", doing,
                 (void *)(h + 1), name ? name : "(unknown: memory reused)",
                 n == REFS_TAG || n == 0 ? "zero" : "past zero (deallocated)");
}

void object_release_contended(object_header *h, uintptr_t seen) {
    if (unlikely(refs_invalid(seen))) {
        report_bad_count(h, seen, "over-release", "released", "pk_release");
        return;
    }
    uintptr_t old = __atomic_fetch_sub(&h->refs, REFS_ONE, __ATOMIC_ACQ_REL);
    if (likely(refs_shared(old))) return;
    if (old == REFS_LIVE1) {
        dispose(h);
        return;
    }
    report_bad_count(h, old, "over-release", "released", "pk_release");
}

/* ---- the public calls ---- */

/* Returns obj, so the caller's report is a tail call. */
static PK_COLD void *retain_bad(void *obj, uintptr_t old) {
    report_bad_count(header_of(obj), old, "retain of a deallocated object", "retained", "pk_retain");
    return obj;
}

/* The tag first: a class pool's slot may hold a pk_alloc block, whose word
 * must not be written. The count is checked on the word the add returns,
 * which also reports a word that stopped being live between the load and
 * the add (a release on another thread), in one signed compare: a tagged
 * word is at least REFS_LIVE1 with a count of one or more, and positive
 * while the count is at most REFS_MAX, and a dead mark is negative. */
static inline void *retain_known(void *obj) {
    uintptr_t *refs = &header_of(obj)->refs;
    uintptr_t n = __atomic_load_n(refs, __ATOMIC_RELAXED);
    if (unlikely(!refs_tag_ok(n))) return retain_bad(obj, n);
    uintptr_t old = __atomic_fetch_add(refs, REFS_ONE, __ATOMIC_RELAXED);
    if (unlikely((intptr_t)old < (intptr_t)REFS_LIVE1)) return retain_bad(obj, old);
    return obj;
}

static inline void release_known(void *obj) {
    object_header *h = header_of(obj);
    uintptr_t n = __atomic_load_n(&h->refs, __ATOMIC_ACQUIRE);
    if (likely(n == REFS_LIVE1)) {
        dispose(h);
        return;
    }
    object_release_contended(h, n);
}

/* A pointer object_pooled does not place: an object in a large block (the
 * front end's table, under its lock: such an object costs a mapping and a
 * memset of over 256 KiB anyway), else not an object, reported before its
 * memory is written. */
static PK_NOINLINE void *retain_unpooled(void *obj) {
    if (!object_known(obj)) object_report_foreign(obj, "pk_retain");
    return retain_known(obj);
}

void object_release_unpooled(void *obj) {
    if (!object_known(obj)) object_report_foreign(obj, "pk_release");
    release_known(obj);
}

/* object_pooled's lookup, out of the entry points (object_internal.h). */
static PK_NOINLINE void *retain_looked_up(void *obj) {
    if (unlikely(!object_pooled_lookup(obj))) return retain_unpooled(obj);
    return retain_known(obj);
}

static PK_NOINLINE void release_looked_up(void *obj) {
    if (unlikely(!object_pooled_lookup(obj))) {
        object_release_unpooled(obj);
        return;
    }
    release_known(obj);
}

static inline void *retain(void *obj) {
    if (unlikely(!object_pooled_cached(obj))) return retain_looked_up(obj);
    return retain_known(obj);
}

static inline void release(void *obj) {
    if (unlikely(!object_pooled_cached(obj))) {
        release_looked_up(obj);
        return;
    }
    release_known(obj);
}

/* The slow entries: NULL, or debug mode's check before the call as usual.
 * Apart, as tail calls, so that the entry points keep no register across
 * a call. */
static PK_NOINLINE void *retain_slow(void *obj) {
    if (!obj) return NULL;
    if (object_debug()) object_check_slow(obj, "pk_retain");
    return retain(obj);
}

static PK_NOINLINE void release_slow(void *obj) {
    if (!obj) return;
    if (object_debug()) object_check_slow(obj, "pk_release");
    release(obj);
}

void *pk_retain(void *obj) {
    if (unlikely(goes_slow(obj))) return retain_slow(obj);
    return retain(obj);
}

void pk_release(void *obj) {
    if (unlikely(goes_slow(obj))) {
        release_slow(obj);
        return;
    }
    release(obj);
}

size_t pk_refcount(const void *obj) {
    if (!obj) return 0;
    uintptr_t n = __atomic_load_n(&header_of(obj)->refs, __ATOMIC_RELAXED);
    return refs_invalid(n) ? 0 : refs_count(n);
}

const pk_class *pk_class_of(const void *obj) {
    if (!obj) return NULL;
    object_header *h = header_of(obj);
    uintptr_t n = __atomic_load_n(&h->refs, __ATOMIC_RELAXED);
    return refs_invalid(n) ? refs_dead_class(n) : h->cls;
}

typedef struct census {
    const pk_class *cls[OBJECT_CENSUS_MAX];
    size_t live[OBJECT_CENSUS_MAX];
    size_t n, other;
} census;

static void census_count(void *obj, void *arg) {
    census *c = arg;
    const object_header *h = obj;
    if (refs_invalid(h->refs)) return; /* not a live object: a pk_alloc block, or over-released */
    for (size_t i = 0; i < c->n; i++)
        if (c->cls[i] == h->cls) {
            c->live[i]++;
            return;
        }
    if (c->n == OBJECT_CENSUS_MAX) {
        c->other++;
        return;
    }
    c->cls[c->n] = h->cls;
    c->live[c->n++] = 1;
}

void object_census(void (*fn)(const pk_class *cls, size_t live, void *arg), void *arg) {
    census *c = calloc(1, sizeof *c);
    if (!c) return;
    pk_pool *p;
    for (size_t ci = 0; ci < ALLOC_CLASSES_ALL; ci++)
        if ((p = alloc_class_made(ci)) != NULL) pool_visit_held(p, census_count, c);
    for (size_t i = 0; i < c->n; i++) fn(c->cls[i], c->live[i], arg);
    if (c->other) fn(NULL, c->other, arg);
    free(c);
}
