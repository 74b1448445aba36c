/* poolkit's size-class front end: malloc-shaped calls over pools.
 *
 * pk_alloc(size) takes an object from the pool of size's class: one pool
 * per class, made on first use, shared by every thread, so an allocation
 * has the pools' fast paths (the calling thread's own slab, no lock, no
 * atomic instruction) and every pool behaviour: other threads' frees go
 * home in batches, empty slabs go back to the system after the purge delay
 * (pk_set_purge_delay), POOLKIT_DEBUG=1 and POOLKIT_HARDENED=1 apply to
 * the class pools, and the stats report lists them ("pk_alloc 48", ...).
 * Sizes above the largest class (PK_ALLOC_CLASS_MAX) are mapped from the
 * system on their own and unmapped when freed (kept for the purge delay
 * first, for the next block of that size). Nothing is stored beside an
 * object: pk_free finds its class from its address.
 *
 * The classes step by 16 bytes up to 128 (an 8-byte class below) and then
 * by a quarter of each power of two (160, 192, 224, 256, 320, ...), as
 * jemalloc's do: at most 25% of a request is rounded away above 128 bytes,
 * and a program's objects spread over few pools, each of which fills whole
 * slabs. docs/alloc.md gives the measurement behind the choice.
 *
 * Every call is thread-safe. After fork() the child may use every call.
 * Errors: a call that cannot allocate returns NULL with errno ENOMEM (or
 * EINVAL for a bad alignment); a pointer the front end did not hand out (or
 * handed out and took back) given to pk_free, pk_free_sized, pk_realloc or
 * pk_usable_size goes to the error handler as a PK_FATAL "foreign pointer"
 * or "double free", naming the pointer, whenever the call reaches the
 * library: as for pools, a free that the inline fast path serves (an object
 * of the calling thread's current slab of its class) is not checked,
 * except in debug and hardened modes.
 *
 * libpoolkit-malloc (docs/malloc.md) exports malloc, free and the rest of
 * the family over these calls, for LD_PRELOAD or for linking.
 */
#ifndef POOLKIT_ALLOC_H
#define POOLKIT_ALLOC_H

#include <poolkit/export.h>
#include <poolkit/pool.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest size a class pool serves; larger blocks are mapped alone. */
#define PK_ALLOC_CLASS_MAX ((size_t)256 << 10)

/* pk_alloc, pk_free and pk_free_sized are inline where the compiler allows
 * it (the section at the end; pk_free stays a function as well, which a
 * macro of its name bypasses there); their declarations come first either
 * way, so that every allocating call below can name its deallocators. */
#ifdef PK__HAVE_INLINE
#  ifdef PK__EMIT_ALLOC_EXTERN_INLINE /* the library's one external definition */
#    define PK__ALLOC_INLINE PK_API
#  else
#    define PK__ALLOC_INLINE static inline __attribute__((always_inline))
#  endif
/* _FORTIFY_SOURCE checks a write against its block's size, which the
 * compiler knows from the alloc_size of the call that returned the block:
 * an inlined pk_alloc leaves no call. A fortified build calls the
 * library's pk_alloc. */
#  if defined(_FORTIFY_SOURCE) && _FORTIFY_SOURCE > 0 && !defined(PK__EMIT_ALLOC_EXTERN_INLINE)
#    define PK__ALLOC_CALLED 1
#  endif
#else
#  define PK__ALLOC_INLINE PK_API
#  define PK__ALLOC_CALLED 1
#endif

/* Gives back ptr, which pk_alloc, pk_calloc, pk_realloc or pk_aligned_alloc
 * (or another call of this header that returns a block, or a heap's call:
 * heap.h) returned, from any thread. NULL is a no-op. */
PK_API void pk_free(void *ptr);

/* pk_free for a caller that knows the size: size must be the size last
 * given for ptr (to pk_alloc or pk_realloc, or n * size to pk_calloc); for
 * pk_aligned_alloc's memory call pk_free. The class then comes from the
 * size, with no lookup of the address. A size of another class than ptr's
 * is reported ("wrong size"), naming both. NULL is a no-op. */
PK__ALLOC_INLINE void pk_free_sized(void *ptr, size_t size);

/* What every allocating call declares, where the compiler knows it: its
 * block aliases nothing (malloc), has the size and alignment its arguments
 * say (__builtin_object_size, _FORTIFY_SOURCE), and is freed by pk_free
 * (gcc's -Wmismatched-dealloc warns of free(pk_calloc(n, size))). gcc
 * ignores that pairing on inline functions, so pk_alloc carries it, and
 * pk_free_sized is named with pk_free, only where they are not inline
 * (PK_NO_INLINE, a platform without the inline paths, or for pk_alloc a
 * fortified build). */
#ifdef PK__HAVE_INLINE
#  define PK__FREED_BY_PK PK__ATTR_DEALLOC(pk_free)
#else
#  define PK__FREED_BY_PK PK__ATTR_DEALLOC(pk_free) PK__ATTR_DEALLOC(pk_free_sized)
#endif
#define PK__ALLOCATOR PK__ATTR_MALLOC PK__FREED_BY_PK

/* Returns at least size bytes (an object of size's class), aligned to 16
 * (8 for sizes up to 8), or NULL with errno ENOMEM. Contents are undefined.
 * size 0 gives a unique pointer, which must be freed as any other. */
#ifdef PK__ALLOC_CALLED
PK_API PK__ALLOCATOR PK__ATTR_SIZE(1) void *pk_alloc(size_t size);
#else
PK__ALLOC_INLINE PK__ATTR_MALLOC PK__ATTR_SIZE(1) void *pk_alloc(size_t size);
#endif

/* pk_alloc's block, zeroed. */
PK_API PK__ALLOCATOR PK__ATTR_SIZE(1) void *pk_zalloc(size_t size);

/* Resizes ptr's memory to size bytes, keeping its contents up to the
 * smaller of the two sizes: in place when size is of the same class (or,
 * for a mapped block, when the system can resize the mapping), else moved.
 * A block grown past 32 KiB becomes a mapped block, whatever its size, and
 * stays one while it is over 32 KiB (unless the process holds many mapped
 * blocks already: each is one of its mappings, which the system caps);
 * grown past its mapping, it takes a
 * quarter again as room, so that a buffer that keeps growing asks for
 * pages once per quarter, not at every page. NULL ptr: pk_alloc(size). size 0:
 * frees ptr and returns NULL. On failure returns NULL with errno ENOMEM
 * and leaves ptr as it was. */
PK_API PK__FREED_BY_PK PK__ATTR_SIZE(2) void *pk_realloc(void *ptr, size_t size);

/* pk_realloc of n * size bytes; NULL with errno ENOMEM, ptr left as it
 * was, when the product overflows. */
PK_API PK__FREED_BY_PK PK__ATTR_SIZE2(2, 3) void *pk_reallocarray(void *ptr, size_t n, size_t size);

/* ptr's block if it already holds size bytes (its usable size, as
 * pk_usable_size says), else NULL with errno ENOMEM and the block as it
 * was: never moves, never shrinks, never allocates. NULL ptr: NULL. */
PK_API void *pk_expand(void *ptr, size_t size);

/* n objects of size bytes, zeroed; NULL with errno ENOMEM when n * size
 * overflows or memory runs out. */
PK_API PK__ALLOCATOR PK__ATTR_SIZE2(1, 2) void *pk_calloc(size_t n, size_t size);

/* size bytes aligned to align, a power of two (else NULL with errno
 * EINVAL); any size, including one that is not a multiple of align.
 * Alignments up to 4096 come from a class whose size is a multiple of the
 * alignment; up to 64 KiB, from a power-of-two class, whose slots lie so
 * aligned (in debug mode, whose slots carry a redzone, from a mapping of
 * their own); larger ones from a mapping of their own. */
PK_API PK__ALLOCATOR PK__ATTR_ALIGN(1) PK__ATTR_SIZE(2) void *pk_aligned_alloc(size_t align, size_t size);

/* pk_aligned_alloc's block, zeroed. */
PK_API PK__ALLOCATOR PK__ATTR_ALIGN(1) PK__ATTR_SIZE(2) void *pk_aligned_zalloc(size_t align, size_t size);

/* pk_realloc for a block that must stay aligned to align (a power of two,
 * else NULL with errno EINVAL): ptr itself when it is so aligned and size
 * keeps it in its class (or its pages), else a new block aligned to align
 * with ptr's contents up to the smaller size, ptr freed. NULL ptr:
 * pk_aligned_alloc; size 0 frees ptr and returns NULL; on failure NULL with
 * errno ENOMEM and ptr as it was. */
PK_API PK__FREED_BY_PK PK__ATTR_ALIGN(2) PK__ATTR_SIZE(3) void *pk_realloc_aligned(void *ptr, size_t align,
                                                                                   size_t size);

/* The bytes pk_alloc(size) makes usable: size's class, or for a size over
 * PK_ALLOC_CLASS_MAX its page-rounded length (SQLite's xRoundup asks this);
 * in hardened mode (POOLKIT_HARDENED=1) size itself, since check bytes
 * follow each block's requested bytes; 0 when no block of that size can
 * exist. Never allocates. */
PK_API size_t pk_good_size(size_t size);

/* The bytes usable at ptr (at least the size asked for: its class's size,
 * or a mapped block's length, page-rounded, with the room pk_realloc gave
 * it); 0 for NULL. */
PK_API size_t pk_usable_size(const void *ptr);

/* ------------------------------------------------------------------------
 * Inline fast paths. What follows is private: it may change with
 * PK_POOL_ABI.
 *
 * pk__alloc_small_slots holds, at (size + 7) / 8 for each size up to
 * PK__ALLOC_SMALL_MAX, the byte offset in the thread's table (pool.h,
 * pk__tc_table) of the slot of the size's class pool once made, and 0
 * before: slot 0 belongs to no pool and stays all zero, so an empty list
 * and no current slab send the call to the library. pk_alloc and
 * pk_free_sized of such a size take the slot's list as the pool's inline
 * paths do (pool.h), with no test of whether the class was made, and call
 * the library for anything else: larger sizes, a class not made yet, a
 * list the inline path cannot serve.
 */
#define PK__ALLOC_SMALL_MAX 1024
#define PK__ALLOC_CLASSES 53

PK_API extern uint32_t pk__alloc_small_slots[PK__ALLOC_SMALL_MAX / 8 + 1];
PK_API void *pk__alloc_slow(size_t size);
PK_API void pk__free_sized_slow(void *ptr, size_t size);

/* Past its slots, the thread's table holds the owned index: PK__OWN_INDEX
 * entries of two words, one per slab of address (modulo PK__OWN_INDEX
 * slabs), each naming a slab a class pool's heap of the thread owns (its
 * word: the slab's address | PK__SLAB_MASK, as a slot's cur) and that
 * class's slot (its byte offset in the table). pk_free finds from the
 * address alone, in two loads of the thread's own table, whether the
 * block is of the current slab of its class, and then pushes it as the
 * pool's inline free does. Anything else goes to pk__free_owned with the
 * slot the index named (its slab is the thread's: the library pushes it
 * there too), or NULL. */
#define PK__OWN_INDEX 1024
#define PK__OWN_INDEX_OFF ((PK__STATIC_CAST(uintptr_t, 1) << PK__KEY_BITS) << PK__SLOT_SHIFT)
PK_API void pk__free_owned(void *ptr, void *c);

/* The forms a block is allocated and freed in: malloc's (free), new's
 * (delete) and new[]'s (delete[]). <poolkit/new.hpp> and the malloc
 * library's operators call the _at and _as entries, which are pk_alloc,
 * pk_aligned_alloc, pk_free and pk_free_sized but for the form: hardened
 * mode (POOLKIT_HARDENED=1) keeps it with the block and reports a free in
 * another form ("mismatched free"); default mode neither keeps nor checks
 * it. pk_free is the malloc form's free. */
#define PK__FORM_MALLOC 0u
#define PK__FORM_NEW 1u
#define PK__FORM_NEW_ARRAY 2u
/* pk_alloc and pk_aligned_alloc with the form, and the site debug mode's
 * and hardened mode's reports name: the operators pass their own caller,
 * so that a report names the line that said new, not the operator. The _as
 * entries, without the caller, are those of programs built against an
 * earlier new.hpp. */
PK_API void *pk__alloc_as(size_t size, unsigned form);
PK_API void *pk__aligned_alloc_as(size_t align, size_t size, unsigned form);
PK_API void *pk__alloc_at(size_t size, unsigned form, void *caller);
PK_API void *pk__aligned_alloc_at(size_t align, size_t size, unsigned form, void *caller);
/* nothrow: a noexcept operator delete then calls them as its last step
 * (a tail call), so that a report's free site is the delete's caller. */
PK_API PK__ATTR_NOTHROW void pk__free_as(void *ptr, unsigned form);
PK_API PK__ATTR_NOTHROW void pk__free_sized_as(void *ptr, size_t size, unsigned form);

#ifdef PK__HAVE_INLINE
/* The thread's slot for a size's class (slot 0 before the class is made).
 * A relaxed load: the inline paths read nothing of the pool, only the
 * slot, which this thread's own calls to the library set up. */
static inline __attribute__((always_inline)) pk__link *pk__alloc_small_slot(size_t size) {
    uint32_t off = __atomic_load_n(&pk__alloc_small_slots[(size + 7) >> 3], __ATOMIC_RELAXED);
    return PK__REINTERPRET_CAST(pk__link *, pk__tc_table + off);
}

#  ifndef PK__ALLOC_CALLED
PK__ALLOC_INLINE PK__ATTR_MALLOC PK__ATTR_SIZE(1) void *pk_alloc(size_t size) {
    if (__builtin_expect(size <= PK__ALLOC_SMALL_MAX, 1)) {
        void *obj = pk__slot_alloc_try(pk__alloc_small_slot(size), 1);
        if (__builtin_expect(obj != PK__NULL, 1)) return obj;
    }
    return pk__alloc_slow(size);
}
#  endif

/* pk__alloc_at and pk__free_sized_as with pk_alloc's and pk_free_sized's
 * inline paths in front: a hardened class pool has none (its calls all
 * reach the library, which keeps the form), so what they serve is a
 * default-mode block, which keeps no form. */
static inline __attribute__((always_inline)) void *pk__alloc_at_inline(size_t size, unsigned form, void *caller) {
    if (__builtin_expect(size <= PK__ALLOC_SMALL_MAX, 1)) {
        void *obj = pk__slot_alloc_try(pk__alloc_small_slot(size), 1);
        if (__builtin_expect(obj != PK__NULL, 1)) return obj;
    }
    return pk__alloc_at(size, form, caller);
}

static inline __attribute__((always_inline)) void pk__free_sized_as_inline(void *ptr, size_t size, unsigned form) {
    if (__builtin_expect(size <= PK__ALLOC_SMALL_MAX, 1) &&
        __builtin_expect(pk__slot_free_inline(pk__alloc_small_slot(size), ptr), 1))
        return;
    pk__free_sized_as(ptr, size, form);
}

PK__ALLOC_INLINE void pk_free_sized(void *ptr, size_t size) {
    if (__builtin_expect(size <= PK__ALLOC_SMALL_MAX, 1) &&
        __builtin_expect(pk__slot_free_inline(pk__alloc_small_slot(size), ptr), 1))
        return;
    pk__free_sized_slow(ptr, size);
}

/* pk_free with its inline path: the owned index's entry for ptr's slab,
 * then, if the entry names it and it is its slot's current slab, the
 * slot's push (not the list's head freed again). */
static inline __attribute__((always_inline)) void pk__free_inline(void *ptr) {
    uintptr_t x = PK__REINTERPRET_CAST(uintptr_t, ptr);
    /* what the compiler knows of ptr (NULL, a local, a block of size 0)
     * would have it warn of the push's store, which only a block of the
     * index's slab reaches */
    __asm__("" : "+r"(x));
    uintptr_t word = x | PK__SLAB_MASK;
    const pk__link *e = PK__REINTERPRET_CAST(const pk__link *, pk__tc_table + PK__OWN_INDEX_OFF +
                                             ((x >> (PK__SLAB_SHIFT - 4)) & ((PK__OWN_INDEX - 1) << 4)));
    pk__link *c = PK__NULL;
    if (__builtin_expect(__atomic_load_n(&e[0], __ATOMIC_RELAXED) == word, 1)) {
        c = PK__REINTERPRET_CAST(pk__link *, pk__tc_table + __atomic_load_n(&e[1], __ATOMIC_RELAXED));
        if (__builtin_expect(__atomic_load_n(&c[2], __ATOMIC_RELAXED) == word, 1) &&
            __builtin_expect(pk__slot_push(c, PK__REINTERPRET_CAST(void *, x)), 1))
            return;
    }
    pk__free_owned(ptr, c);
}
/* pk_free stays a function (its address, the allocating calls' pairing
 * with it); a call of it takes the inline path. */
#  ifndef PK__EMIT_ALLOC_EXTERN_INLINE
#    define pk_free(ptr) pk__free_inline(ptr)
#  endif
#else
#  define pk__alloc_at_inline pk__alloc_at
#  define pk__free_sized_as_inline pk__free_sized_as
#endif
#undef PK__ALLOC_INLINE
#undef PK__ALLOC_CALLED

#ifdef __cplusplus
}
#endif
#endif
