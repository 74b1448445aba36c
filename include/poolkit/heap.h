/* poolkit heaps: blocks of any size, freed one by one or all at once.
 *
 * A heap is the size-class front end (alloc.h) made private: it owns one
 * pool per size class, made on first use, and a list of its blocks over
 * the last class (each its own mapping). A block is freed alone with
 * pk_heap_free, or pk_free, as any front-end block; everything left goes
 * in one call, pk_heap_reset (the heap stays) or pk_heap_destroy (the heap
 * goes), at the end of a request, a parse, a frame: as mimalloc's
 * mi_heap_destroy, talloc's contexts or jemalloc's arenas. That call costs
 * the heap's slabs and large blocks, not its small blocks: a slab is
 * dropped (destroy) or emptied and kept (reset) whole, its objects unread.
 *
 * A heap's blocks are front-end blocks: pk_free, pk_free_sized,
 * pk_realloc, pk_reallocarray, pk_realloc_aligned, pk_expand and
 * pk_usable_size accept them, and a block resized through any of them stays
 * in its heap. Sizes, alignment and the rounding are pk_alloc's.
 *
 * Thread rules: any thread may allocate from a heap and free its blocks,
 * at once (the pools' rules: a block freed by another thread goes home in
 * batches). pk_heap_reset and pk_heap_destroy need the heap quiet: no other
 * thread allocating from it or freeing its blocks during the call; blocks a
 * thread frees after the call must not be the heap's.
 *
 * Debug mode (POOLKIT_DEBUG=1, or PK_HEAP_DEBUG): pk_heap_destroy reports
 * the blocks left (a PK_WARNING "leak" naming the heap and their count)
 * unless the heap was made with PK_HEAP_WHOLE; a call on a destroyed heap
 * is reported as "heap used after destroy" (PK_FATAL), naming it, for as
 * long as the library keeps the dead heap's record (the last 64 destroyed
 * debug heaps). The heap's pools are debug pools then, with their checks.
 *
 * Errors: an allocating call returns NULL with errno ENOMEM (EINVAL for
 * a bad alignment or flag); a pointer that is no block of the heap, given
 * to pk_heap_free or pk_heap_realloc, is reported as for pk_free (alloc.h);
 * in debug mode, a block of another heap or of pk_alloc is reported too
 * ("wrong heap").
 */
#ifndef POOLKIT_HEAP_H
#define POOLKIT_HEAP_H

#include <poolkit/alloc.h>
#include <poolkit/export.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A heap of blocks of any size (opaque). */
typedef struct pk_heap pk_heap;

/* Flags for pk_heap_create_ex. */
enum {
    PK_HEAP_WHOLE = 1u << 0, /* made to be freed whole: destroy reports no blocks left */
    PK_HEAP_DEBUG = 1u << 1  /* debug mode for this heap alone (its pools are debug pools) */
};

/* A heap's figures, filled by pk_heap_stats_get. */
typedef struct pk_heap_stats {
    const char *name;      /* the heap's name (a copy, cut at 40 bytes) */
    size_t blocks;         /* blocks live: the pools' objects and the large blocks */
    size_t bytes;          /* their usable bytes */
    size_t pools;          /* size classes the heap has made a pool for */
    size_t slabs;          /* the pools' slabs */
    size_t bytes_reserved; /* bytes the heap holds from the system: its pools'
                              slabs and its large blocks' mappings */
    size_t large_blocks;   /* of blocks, those over PK_ALLOC_CLASS_MAX */
    size_t large_bytes;    /* their mappings' lengths */
} pk_heap_stats;

/* Makes an empty heap; name (NULL: "pk_heap") is copied, cut at 40 bytes,
 * and names its pools in the stats report ("NAME 48" for its 48-byte
 * class). Returns NULL with errno ENOMEM. Thread-safe. */
PK_API pk_heap *pk_heap_create(const char *name);

/* pk_heap_create with flags, PK_HEAP_*; NULL with errno EINVAL for an
 * unknown flag. */
PK_API pk_heap *pk_heap_create_ex(const char *name, unsigned flags);

/* Frees every block left and the heap: the pools are emptied whole, as
 * pk_heap_reset empties them, and kept for the next pk_heap_create (a few
 * heaps' worth; else destroyed, their slabs kept for the purge delay), the
 * large blocks freed one by one. In debug mode, blocks left are reported
 * (see above) unless the heap has PK_HEAP_WHOLE. NULL is a no-op. The heap
 * must be quiet (the thread rules above); the pointer and every block are
 * dead afterwards. */
PK_API void pk_heap_destroy(pk_heap *heap);

/* Frees every block of the heap, which stays usable and empty: its pools
 * keep their slabs, emptied without a read of their objects, for the next
 * blocks (in debug mode the pools are destroyed and made again on use);
 * its large blocks are freed. Never reports blocks left. The heap must be
 * quiet. */
PK_API void pk_heap_reset(pk_heap *heap);

/* At least size bytes from the heap, aligned as pk_alloc's block of that
 * size, or NULL with errno ENOMEM. Contents undefined. size 0 gives a
 * unique block. Any thread. */
PK_API PK__ALLOCATOR PK__ATTR_SIZE(2) void *pk_heap_alloc(pk_heap *heap, size_t size);

/* pk_heap_alloc's block, zeroed. */
PK_API PK__ALLOCATOR PK__ATTR_SIZE(2) void *pk_heap_zalloc(pk_heap *heap, size_t size);

/* n * size bytes from the heap, zeroed; NULL with errno ENOMEM when the
 * product overflows or memory runs out. */
PK_API PK__ALLOCATOR PK__ATTR_SIZE2(2, 3) void *pk_heap_calloc(pk_heap *heap, size_t n, size_t size);

/* size bytes from the heap aligned to align, a power of two (else NULL
 * with errno EINVAL), as pk_aligned_alloc. */
PK_API PK__ALLOCATOR PK__ATTR_ALIGN(2) PK__ATTR_SIZE(3) void *pk_heap_aligned_alloc(pk_heap *heap, size_t align,
                                                                                   size_t size);

/* ptr, a block of the heap, resized to size bytes with its contents up to
 * the smaller size, as pk_realloc: in place within its class (or its
 * mapping), else moved within the heap. NULL ptr: pk_heap_alloc; size 0
 * frees ptr and returns NULL; on failure NULL with errno ENOMEM, ptr as it
 * was. Any thread. */
PK_API PK__FREED_BY_PK PK__ATTR_SIZE(3) void *pk_heap_realloc(pk_heap *heap, void *ptr, size_t size);

/* Frees ptr, a block of the heap (the same as pk_free(ptr)); NULL is a
 * no-op. Any thread. */
PK_API void pk_heap_free(pk_heap *heap, void *ptr);

/* The heap that owns ptr, a live block, or NULL for any other block of
 * the front end (or NULL). Thread-safe; a large block's lookup takes a
 * lock. */
PK_API pk_heap *pk_heap_of(const void *ptr);

/* The heap's figures, exact when no call on the heap is in progress. */
PK_API void pk_heap_stats_get(pk_heap *heap, pk_heap_stats *out);

#ifdef __cplusplus
}
#endif
#endif
