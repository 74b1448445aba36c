/* poolkit objects: reference counting and autorelease pools for plain C.
 *
 * pk_new gives a zeroed object of a class with reference count 1; its memory
 * is a block of the size-class front end (alloc.h) for its header and
 * fields: up to 64 KiB, a slot of the class pool of that many bytes, shared
 * with pk_alloc's blocks and every class of that size; over it, a large
 * block mapped alone (with POOLKIT_HARDENED=1, a hardened block of
 * the front end: check word, quarantine, guard pages). pk_retain
 * and pk_release are atomic, so objects may move between threads. When the
 * count reaches zero the class's dealloc runs, then the memory goes back to
 * its pool, from whatever thread released it.
 *
 * An object is PK_OBJECT_HEADER_SIZE bytes of header (class and count) and
 * then its fields, aligned to 16 bytes; the pointer pk_new returns is the
 * first field. Where header and fields together make a power of two up
 * to 4 KiB (48 bytes of fields: 64), the header starts on a multiple of
 * that size, so the object fills whole cache lines and shares none with
 * another.
 * A dealloc that releases the last reference to another object runs that
 * object's dealloc inside it, up to 32 deep on a thread; deeper ones wait
 * and run, on the same thread, before the outermost pk_release returns, so
 * chains of any length are freed in bounded stack. A dealloc must return
 * normally (no longjmp out of it).
 *
 * Autorelease pools are per thread and nest: pk_autorelease_push returns a
 * token; pk_autorelease_pop(token) releases, newest first, everything that was
 * autoreleased or deferred since, including what gets autoreleased while it
 * drains, and pops any inner pools still open. pk_scratch memory lives until
 * the innermost pool pops. A thread that exits drains its pools; what is
 * autoreleased with no pool pushed goes to the thread's implicit pool, drained
 * at thread exit (POOLKIT_DEBUG=1 reports each such call as a warning). The
 * main thread's implicit pool is not drained by exit().
 *
 * Errors: a count released past zero ("over-release"), a retain of a freed
 * object, a popped, stale or foreign token ("bad autorelease token") and a
 * pointer that cannot be an object ("foreign pointer") are reported through
 * the error handler (error.h) as PK_FATAL.
 *
 * Every pointer given to pk_retain or pk_release, in every mode, is checked
 * against poolkit's address map (and the front end's table of large
 * blocks) before its header is read: one that does not start a class
 * pool's slot or a large block, plus the header (a stack or malloc buffer,
 * another pool's object, an interior pointer, a large object after its
 * block was freed), is a "foreign pointer" naming it, and its memory is
 * never read or written. One that does is an object only if its count word
 * carries the objects' mark (a pk_alloc block in the same pool does not):
 * otherwise it too is reported, that word read and never written. The check costs under a nanosecond per call
 * (README, "Debugging and hardening"). A pointer given to pk_autorelease is
 * checked the same way when its pool pops and releases it; debug mode,
 * POOLKIT_DEBUG=1 (read once; the same switch makes every pool a debug
 * pool, the size classes' included), checks it at the call too.
 */
#ifndef POOLKIT_OBJECT_H
#define POOLKIT_OBJECT_H

#include <poolkit/export.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pk_pool; /* pool.h */

/* A class of objects: static data that pk_new's caller provides; it needs
 * no registration and must outlive its objects. */
typedef struct pk_class {
    const char *name;           /* for reports (may be NULL) */
    size_t size;                /* bytes of the object's own fields */
    void (*dealloc)(void *obj); /* releases what obj holds (not obj's memory); may be NULL */
} pk_class;

/* Bytes of header in front of an object's fields: the memory a pool handed
 * out starts at (char *)obj - PK_OBJECT_HEADER_SIZE. */
#define PK_OBJECT_HEADER_SIZE 16

/* A new object of cls: fields zeroed, reference count 1. The class needs no
 * registration and must outlive its objects. Any thread. NULL with errno
 * EINVAL (cls NULL) or ENOMEM. */
PK_API void *pk_new(const pk_class *cls);
/* Adds a reference; returns obj. NULL is allowed. Any thread (atomic). A
 * pointer that is not an object of pk_new is reported (PK_FATAL), never
 * written. */
PK_API void *pk_retain(void *obj);
/* Drops a reference; at zero the class's dealloc runs, then the memory goes
 * back to its pool. NULL is allowed. Any thread (atomic); dropping the only
 * reference costs no atomic read-modify-write. A pointer that is not an
 * object of pk_new is reported (PK_FATAL), never written; a deallocated
 * object whose memory was not reused yet is reported as an over-release. */
PK_API void pk_release(void *obj);
/* The current count (0 once deallocated, while the memory is not reused).
 * A snapshot only when other threads hold references. */
PK_API size_t pk_refcount(const void *obj);
/* The object's class (also inside its dealloc). */
PK_API const pk_class *pk_class_of(const void *obj);
/* The pool that holds the memory of cls's objects (created if need be), for
 * pk_pool_stats_get, pk_pool_reserve or pk_pool_trim; shared with every
 * class of the same size class and with pk_alloc's blocks of that class
 * (alloc.h: its stats count both). NULL with errno ENOMEM, or EINVAL for a
 * class whose objects (header and fields) are over 64 KiB (large blocks of
 * their own, no pool). */
PK_API struct pk_pool *pk_class_pool(const pk_class *cls);

/* A pushed autorelease pool, from pk_autorelease_push: a plain value. */
typedef struct pk_autorelease_pool {
    uintptr_t token; /* stack position and generation; opaque */
} pk_autorelease_pool;
#define PK_AUTORELEASE_NONE (~PK__STATIC_CAST(uintptr_t, 0)) /* the token of a push that failed */

/* Autorelease pools belong to the thread that pushed them: every call below
 * acts on the calling thread's stack.
 *
 * pk_autorelease_push(): pushes a pool on the calling thread's stack and
 * returns its token: the stack position and a generation, so that a token
 * that is no longer live is recognised. O(1); a push/pop loop does not
 * allocate. If no memory is left it returns PK_AUTORELEASE_NONE with errno
 * ENOMEM: popping that token does nothing, and what is autoreleased
 * meanwhile goes to the enclosing pool.
 *
 * pk_autorelease_pop(pool): pops the pool and every pool pushed after it on
 * this thread: releases and runs deferred calls newest first, including what
 * they autorelease or defer meanwhile, then frees the scratch memory taken
 * since the push. A token that is not a live pool of this thread (popped
 * already, popped with an outer pool, or pushed on another thread) is
 * reported as "bad autorelease token" (PK_FATAL) before anything changes.
 * Code that runs during the drain may push and pop its own pools, but must
 * not pop the pool being drained or one outside it.
 *
 * pk_autorelease(obj): hands one reference to the calling thread's innermost
 * pool, released when that pool pops; returns obj. NULL is allowed. With no
 * pool pushed it goes to the thread's implicit pool. If the stack cannot
 * grow, the object leaks and a PK_WARNING says so.
 *
 * The three are inline functions (defined at the end of this header) where
 * the compiler allows, and are also exported by the library. */
#if !defined(PK_NO_INLINE) && defined(__GNUC__)
#  define PK__ARP_HAVE_INLINE 1
#endif
#if !defined(PK__ARP_HAVE_INLINE) || defined(PK__DOXYGEN)
/* Pushes a pool; returns its token (see above). */
PK_API pk_autorelease_pool pk_autorelease_push(void);
/* Pops pool and every pool pushed after it (see above). */
PK_API void pk_autorelease_pop(pk_autorelease_pool pool);
/* Hands one reference of obj to the innermost pool; returns obj (see above). */
PK_API void *pk_autorelease(void *obj);
#endif

/* fn(ptr) when the innermost pool pops, in order with the autoreleased
 * objects (pk_defer(buf, free)). Returns ptr; NULL with errno EINVAL (fn
 * NULL) or ENOMEM, and then fn will not run. */
PK_API void *pk_defer(void *ptr, void (*fn)(void *));
/* size bytes aligned to alignof(max_align_t), valid until the innermost pool
 * pops (thread exit with no pool): taken from a per-thread arena that the pop
 * rewinds in O(1). NULL with errno ENOMEM. */
PK_API void *pk_scratch(size_t size);

/* PK_AUTORELEASE_POOL { ... } and PK_AUTORELEASE_SCOPE() are defined below,
 * after the inline fast paths they use. */

/* The calling thread's autorelease stack. */
typedef struct pk_autorelease_stats {
    size_t pending;    /* objects and deferred calls waiting, implicit pool included */
    size_t implicit;   /* of which in the implicit pool (below every pushed pool) */
    size_t depth;      /* pools pushed and not yet popped */
    size_t high_water; /* the most entries pending at once on this thread so far */
    size_t pages;      /* stack pages the thread holds, the spare included */
    uint64_t page_allocs; /* pages taken from the shared page pool so far */
} pk_autorelease_stats;
/* Fills *out for the calling thread; walks the thread's stack, so it costs
 * O(entries pending). */
PK_API void pk_autorelease_stats_get(pk_autorelease_stats *out);

/* ------------------------------------------------------------------------
 * Inline fast paths. What follows is private: it may change with
 * PK_AUTORELEASE_ABI.
 *
 * pk__arp is the calling thread's autorelease stack as the fast paths see
 * it (the library keeps the rest). The stack is a chain of pages of word
 * slots; slots are numbered, and number n of the hot page is at
 * base + n * sizeof(uintptr_t). An object entry is the object pointer (low 4
 * bits 0); a pool entry is genhi | 1. A token is genhi | number of the pool
 * word. A push takes the slow path when top >= limit (page full, no page
 * yet, or debug mode, where limit is NULL); a pop takes it unless the pool is
 * empty, in the hot page, above `watch`, and its word holds the token's
 * generation (slots[-1] is never a pool word, so top - 1 may be read).
 *
 * Define PK_NO_INLINE before including this header to call the library's
 * exported functions instead.
 */
#define PK_AUTORELEASE_ABI 1

typedef struct pk__arp_fast {
    uintptr_t *top;    /* next free slot of the hot page */
    uintptr_t *limit;  /* end of the hot page; NULL: every push and autorelease go slow */
    uintptr_t base;    /* slot number n is at base + n * sizeof(uintptr_t) */
    uintptr_t genhi;   /* push counter << PK__ARP_NUM_BITS */
    uintptr_t watch;   /* pops of a pool numbered <= watch go slow */
    size_t pending;    /* entries waiting (objects and deferred calls) */
    size_t high_water; /* the most entries pending at once */
} pk__arp_fast;

#if UINTPTR_MAX > 0xFFFFFFFFu
#  define PK__ARP_NUM_BITS 32
#else
#  define PK__ARP_NUM_BITS 20
#endif
#define PK__ARP_NUM_MASK ((PK__STATIC_CAST(uintptr_t, 1) << PK__ARP_NUM_BITS) - 1)

#if defined(PK__ARP_HAVE_INLINE) || defined(PK__ARP_EMIT_EXTERN_INLINE)
PK_API extern __thread pk__arp_fast pk__arp;
PK_API pk_autorelease_pool pk__autorelease_push_slow(void);
PK_API void pk__autorelease_pop_slow(uintptr_t token);
PK_API void *pk__autorelease_slow(void *obj);

#  ifdef PK__ARP_EMIT_EXTERN_INLINE /* the library's one external definition */
#    define PK__ARP_INLINE PK_API
#  else
#    define PK__ARP_INLINE static inline __attribute__((always_inline))
#  endif

PK__ARP_INLINE pk_autorelease_pool pk_autorelease_push(void) {
    pk__arp_fast *t = &pk__arp;
    uintptr_t *top = t->top;
    if (__builtin_expect(PK__REINTERPRET_CAST(uintptr_t, top) >=
                             PK__REINTERPRET_CAST(uintptr_t, t->limit),
                         0))
        return pk__autorelease_push_slow();
    uintptr_t genhi = t->genhi + (PK__STATIC_CAST(uintptr_t, 1) << PK__ARP_NUM_BITS);
    t->genhi = genhi;
    *top = genhi | 1;
    t->top = top + 1;
    pk_autorelease_pool pool = {
        genhi | ((PK__REINTERPRET_CAST(uintptr_t, top) - t->base) / sizeof(uintptr_t))};
    return pool;
}

PK__ARP_INLINE void pk_autorelease_pop(pk_autorelease_pool pool) {
    pk__arp_fast *t = &pk__arp;
    uintptr_t num = pool.token & PK__ARP_NUM_MASK;
    uintptr_t at = t->base + num * sizeof(uintptr_t);
    if (__builtin_expect(at + sizeof(uintptr_t) == PK__REINTERPRET_CAST(uintptr_t, t->top) &&
                             num > t->watch &&
                             *PK__REINTERPRET_CAST(const uintptr_t *, at) == pool.token - num + 1,
                         1)) {
        t->top = PK__REINTERPRET_CAST(uintptr_t *, at);
        return;
    }
    pk__autorelease_pop_slow(pool.token);
}

PK__ARP_INLINE void *pk_autorelease(void *obj) {
    pk__arp_fast *t = &pk__arp;
    uintptr_t *top = t->top;
    if (__builtin_expect(PK__REINTERPRET_CAST(uintptr_t, top) <
                                 PK__REINTERPRET_CAST(uintptr_t, t->limit) &&
                             (PK__REINTERPRET_CAST(uintptr_t, obj) & 15) == 0 && obj != PK__NULL,
                         1)) {
        *top = PK__REINTERPRET_CAST(uintptr_t, obj);
        t->top = top + 1;
        size_t n = ++t->pending;
        if (n > t->high_water) t->high_water = n;
        return obj;
    }
    return pk__autorelease_slow(obj);
}
#endif

#define PK__CAT2(a, b) a##b
#define PK__CAT(a, b) PK__CAT2(a, b)
/* PK_AUTORELEASE_POOL { ... } pushes a pool and pops it when the block ends.
 * Its one limit: leaving the block by return, goto, break or longjmp skips
 * the pop. PK_AUTORELEASE_SCOPE() (GCC and Clang) pops on any exit from the
 * enclosing scope, early return included. */
#define PK_AUTORELEASE_POOL                                                        \
    for (pk_autorelease_pool PK__CAT(pk__arp_, __LINE__) = pk_autorelease_push(), \
                             *PK__CAT(pk__arp_once_, __LINE__) =                  \
                                 &PK__CAT(pk__arp_, __LINE__);                     \
         PK__CAT(pk__arp_once_, __LINE__);                                         \
         pk_autorelease_pop(PK__CAT(pk__arp_, __LINE__)),                          \
                             PK__CAT(pk__arp_once_, __LINE__) = PK__NULL)

#if defined(__GNUC__)
static inline void pk__autorelease_scope_end(pk_autorelease_pool *pool) {
    pk_autorelease_pop(*pool);
}
#  define PK_AUTORELEASE_SCOPE()                                          \
      pk_autorelease_pool PK__CAT(pk__ars_, __LINE__)                     \
          __attribute__((cleanup(pk__autorelease_scope_end), unused)) =  \
              pk_autorelease_push()
#endif

#ifdef __cplusplus
}
#endif
#endif
