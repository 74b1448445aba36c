/* poolkit arenas: bump allocation with save/rewind and reset.
 *
 * An arena hands out memory from chunks taken from the system, moving a
 * pointer forward; nothing is freed one by one. pk_arena_save takes a mark
 * and pk_arena_rewind frees everything allocated since it, so nested scopes
 * of temporary memory cost O(1) each. An arena is not thread-safe: one thread
 * at a time.
 *
 * Errors: calls that can fail return NULL and set errno (EINVAL for bad
 * arguments, ENOMEM when memory runs out).
 */
#ifndef POOLKIT_ARENA_H
#define POOLKIT_ARENA_H

#include <poolkit/export.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An arena (opaque). */
typedef struct pk_arena pk_arena;
/* A position in an arena, from pk_arena_save: a plain value to copy freely. */
typedef struct pk_arena_mark {
    void *chunk; /* the chunk that was current */
    size_t used; /* bytes used in it */
} pk_arena_mark;

/* Creates an arena whose chunks hold chunk_size bytes (0 = the default,
 * 64 KiB). Returns NULL with errno ENOMEM. */
PK_API pk_arena *pk_arena_create(size_t chunk_size);

/* Gives every chunk back to the system. NULL is a no-op. */
PK_API void pk_arena_destroy(pk_arena *arena);

/* Returns size bytes aligned to align (a power of two; 0 = alignof(max_align_t)),
 * valid until a rewind past this point, a reset or destroy. A request of the
 * default alignment (0) takes a multiple of it, so the next one starts
 * aligned with no padding to compute. A request larger than a chunk gets a
 * chunk of its own. size 0 returns a unique pointer.
 * Contents are undefined. NULL with errno EINVAL (bad align) or ENOMEM; the
 * arena stays usable after either. */
PK_API void *pk_arena_alloc(pk_arena *arena, size_t size, size_t align);

/* Copies s (not NULL), with its terminating NUL, into the arena. NULL with
 * errno ENOMEM. */
PK_API char *pk_arena_strdup(pk_arena *arena, const char *s);

/* The arena's current position, to pass to pk_arena_rewind later. Never
 * fails and allocates nothing; marks nest. */
PK_API pk_arena_mark pk_arena_save(pk_arena *arena);

/* Frees everything allocated since mark was taken; the mark stays usable.
 * Chunks made after the mark are kept as spares for the next growth of the
 * arena, so that a loop of save, allocate, rewind does not call the system
 * each turn; spares unused for the purge delay (pk_set_purge_delay) go back
 * to the system on a later rewind or reset (with delay 0: all but one, at
 * once). Chunks larger than a normal chunk wait, for the purge delay,
 * among the mappings that freed large blocks leave (pk_alloc's), which the
 * next request of any length past a chunk, the arena's or pk_alloc's,
 * takes first (with delay 0 they go at once). Rewinding to a
 * mark that is no longer in the arena's past (it
 * was rewound past, or the arena was reset since) is misuse: it is reported
 * as the fatal error "bad arena mark" (error.h) whenever the mark's chunk no
 * longer belongs to the arena or the mark lies past the arena's position in
 * its chunk; otherwise it cannot be told from a good mark. */
PK_API void pk_arena_rewind(pk_arena *arena, pk_arena_mark mark);

/* Frees everything; every earlier mark becomes invalid. The first chunk
 * stays current, and the others are kept as spares exactly as
 * pk_arena_rewind keeps them: an arena reset once per phase, request or
 * frame faults none of its memory back in. */
PK_API void pk_arena_reset(pk_arena *arena);

/* An arena's figures, filled by pk_arena_stats_get. */
typedef struct pk_arena_stats {
    size_t bytes_used;     /* bytes from chunk starts to where allocation stands, in
                              every chunk (alignment padding and abandoned chunk
                              tails included) */
    size_t bytes_reserved; /* bytes its chunks hold from the system, spares included */
    size_t chunks;         /* chunks, spares included */
} pk_arena_stats;

/* Fills *out. Like every arena call, only from the thread that owns the
 * arena (or with the caller's own lock). pk_stats_get counts every arena's
 * reserved bytes from any thread. */
PK_API void pk_arena_stats_get(pk_arena *arena, pk_arena_stats *out);

#ifdef __cplusplus
}
#endif
#endif
