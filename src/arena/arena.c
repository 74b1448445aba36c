/* Arenas: bump allocation in chunks taken from the page source.
 *
 * Layout and invariants:
 * - Every chunk starts with a chunk header; allocations follow it. Chunks
 *   form a list from the newest (arena->cur, the one being bumped) back to
 *   the oldest, the home chunk, which is never freed before destroy.
 * - Every chunk's payload starts at the same offset (CHUNK_HDR): a mark's
 *   `used` is valid in a chunk exactly when CHUNK_HDR <= used <= the
 *   chunk's position, one unsigned compare.
 * - The pk_arena itself, the record each allocation reads and writes, is
 *   carved from slabs of the regions (record_take), apart from the
 *   chunks: a program's allocation stores to the chunk (its object) and to
 *   the record, and the next allocation loads the record back. With the
 *   record within some megabytes of the objects, some processors make that
 *   load wait as if on the objects' stores, for stretches of a run
 *   (docs/results.md, "An arena's record apart from its chunks"). The
 *   regions lie far from the chunks, which are mappings of their own.
 * - A request of the default alignment takes a multiple of it, so the
 *   position stays so aligned and the allocation's bump is one add on the
 *   chain from one allocation to the next (no padding to compute first).
 * - Normal chunks are arena->chunk_size bytes; a request that cannot fit in
 *   one gets a chunk of its own, sized to fit, which becomes current (the
 *   rest of the previous chunk is abandoned, so marks stay (chunk, offset)).
 * - A chunk we leave records its position in `top`, so a mark that lies
 *   beyond where the arena stopped in that chunk can be told from a good one.
 * - Normal chunks that rewind and reset free wait on the arena's spare list
 *   (linked through prev, newest first, the time they were freed in top) for
 *   the purge delay (pk_set_purge_delay), and growth takes them before it
 *   asks the system: an arena reset once per phase, request or frame faults
 *   none of its memory back in, and a loop that saves, allocates across a
 *   chunk boundary and rewinds calls neither mmap nor munmap. Spares idle
 *   past the delay go back on the arena's next rewind past a chunk or reset
 *   (an arena no one calls keeps them until destroy); with delay 0, one
 *   spare is kept and the rest go at once. Chunks of their own (larger
 *   than a normal chunk) come from and go back to the kept mappings of
 *   freed large blocks (os_map_fit, os_unmap_later_fit), which serve any
 *   length, within LARGE_KEEP_PEAKS times what the arena held in them:
 *   each taken from the system and given back at once made an arena of
 *   big requests, reset per phase, many times slower than malloc and
 *   free of the same blocks (a system call and every page faulted anew
 *   each time).
 * - Memory is not zeroed on reuse: arenas promise nothing about contents.
 */
#include "base/internal.h"
#include "base/policy.h"
#include "mem/region.h"
#include "pool/sweep.h"

#include <poolkit/arena.h>

#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

typedef struct chunk {
    struct chunk *prev; /* next older chunk; NULL for the home chunk */
    size_t size;        /* bytes mapped, header included */
    size_t top;         /* position when the arena moved on to a newer chunk */
} chunk;

struct pk_arena {
    /* first: the word record_free links a freed record through, so that
     * a destroyed arena's record no longer passes check_live */
    uintptr_t live;    /* live_word(a) while the arena lives; 0 once destroyed */
    char *ptr;         /* next free byte in cur */
    char *end;         /* end of cur's usable bytes */
    chunk *cur;        /* newest chunk */
    chunk *spare;      /* freed normal chunks kept for reuse (the spare list), or NULL */
    size_t chunk_size; /* normal chunk size: a multiple of the page size */
    size_t big_bytes;  /* bytes of the chunks of their own (oversized) in the list */
    chunk *home;       /* the oldest chunk, kept until destroy */
};

/* The arena's word while it lives, keyed by its address, so that a handle
 * destroyed already (its record on record_free, its home chunk
 * kept for the next arena, still mapped) or one that is no arena is
 * reported, not freed twice: a second destroy put the home chunk among the
 * kept mappings twice, and two later arenas got the same memory. */
static uintptr_t live_word(const pk_arena *a) { return (uintptr_t)a ^ (uintptr_t)0x9e3779b97f4a7c15u; }

static PK_COLD PK_NOINLINE void report_dead(const pk_arena *a, const char *call) {
    error_report(PK_FATAL, "arena used after destroy", NULL, a,
                 "%s on arena %p, which was destroyed (or is not an arena)", call, (const void *)a);
    abort(); /* error_report never returns from a fatal report */
}

static inline void check_live(const pk_arena *a, const char *call) {
    if (unlikely(a->live != live_word(a))) report_dead(a, call);
}

/* Every arena's chunks, for pk_stats_get from any thread: moved only where
 * chunks come and go, never on an allocation. */
gauge arena_bytes;
static size_t live_arenas;

static void account(long arenas, long bytes) {
    __atomic_fetch_add(&live_arenas, (size_t)arenas, __ATOMIC_RELAXED);
    gauge_add(&arena_bytes, bytes);
}

size_t arena_count(void) { return __atomic_load_n(&live_arenas, __ATOMIC_RELAXED); }

static size_t library_arenas;
size_t arena_count_library(long change) {
    return __atomic_add_fetch(&library_arenas, (size_t)change, __ATOMIC_RELAXED);
}

#define DEFAULT_ALIGN alignof(max_align_t)
#define DEFAULT_CHUNK_SIZE ((size_t)64 * 1024)
#define CHUNK_HDR align_up(sizeof(chunk), DEFAULT_ALIGN)

/* Records (the file's comment says why they lie apart), carved from slabs
 * taken from the regions, ARENA_RECORD bytes each, under record_lock, a
 * leaf (the slab is taken with the lock released, fork's handlers take it
 * among the leaves: arena_fork_lock). A destroyed arena's record stays
 * with its thread (record_key, below) or, where the thread keeps one
 * already, goes onto record_free, linked through its first word (live),
 * and the next arena takes it; the slabs stay, as many as the most arenas live at once
 * needed. Not a pool: a pool of the library's own would show in the
 * program's figures (pk_stats_get's pools and objects) for every program
 * that makes an arena. */
#define ARENA_RECORD align_up(sizeof(pk_arena), DEFAULT_ALIGN)
static pthread_mutex_t record_lock PK_FORK_LOCK = PK_SPIN_MUTEX_INITIALIZER;
static pk_arena *record_free;
static char *record_next, *record_end;

void arena_fork_lock(void) { pk_lock(&record_lock); }
void arena_fork_unlock(void) { pk_unlock(&record_lock); }

/* A record from the free list or the current slab, or NULL. Under the lock. */
static pk_arena *record_pop(void) {
    pk_arena *a = record_free;
    if (a) {
        record_free = (pk_arena *)a->live;
    } else if ((size_t)(record_end - record_next) >= ARENA_RECORD) {
        a = (pk_arena *)(void *)record_next;
        record_next += ARENA_RECORD;
    }
    return a;
}

/* Each thread keeps the record of the last arena it destroyed as its key's
 * value, and its next arena takes it back with no lock: an arena per small
 * task, made and destroyed by two threads at once, took three to four times
 * as long through the lock alone (docs/results.md, "An arena's record apart
 * from its chunks"). The key's destructor hands a thread's kept record to
 * record_free at its exit. */
static pthread_key_t record_key;
static bool record_key_made;

static void record_give_shared(pk_arena *a);
static void record_key_exit(void *a) { record_give_shared(a); }
static void record_key_make(void) { record_key_made = pthread_key_create(&record_key, record_key_exit) == 0; }

static pk_arena *record_take(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, record_key_make);
    pk_arena *kept = record_key_made ? pthread_getspecific(record_key) : NULL;
    if (kept) {
        pthread_setspecific(record_key, NULL);
        return kept;
    }
    pk_lock(&record_lock);
    pk_arena *a = record_pop();
    pk_unlock(&record_lock);
    while (!a) {
        bool warm;
        char *base;
        struct slab *s = region_take(SLAB_BYTES, &warm, &base);
        if (!s) return NULL;
        pk_lock(&record_lock);
        bool used = (size_t)(record_end - record_next) < ARENA_RECORD && !record_free;
        if (used) {
            record_next = base;
            record_end = base + SLAB_BYTES;
        }
        a = record_pop();
        pk_unlock(&record_lock);
        if (!used) region_give(s, SLAB_BYTES, true); /* another thread's came first */
    }
    return a;
}

static void record_give(pk_arena *a) {
    a->live = 0;
    if (record_key_made && !pthread_getspecific(record_key) && pthread_setspecific(record_key, a) == 0) return;
    record_give_shared(a);
}

static void record_give_shared(pk_arena *a) {
    pk_lock(&record_lock);
    a->live = (uintptr_t)record_free;
    record_free = a;
    pk_unlock(&record_lock);
}

static void make_current(pk_arena *a, chunk *c, size_t used) {
    a->cur = c;
    a->ptr = (char *)c + used;
    a->end = (char *)c + c->size;
}

static void unmap_chunk(chunk *c) {
    account(0, -(long)c->size);
    os_unmap(c, c->size);
}

/* Gives back the spares freed at least the purge delay before now; with
 * delay 0, all but the newest. */
static void purge_spares(pk_arena *a, uint64_t now) {
    uint64_t delay = (uint64_t)options_purge_delay_ms();
    chunk **at = &a->spare;
    if (delay == 0 && *at) at = &(*at)->prev;
    while (*at) {
        chunk *c = *at;
        if (delay && now - c->top < delay) {
            at = &c->prev;
            continue;
        }
        *at = c->prev;
        unmap_chunk(c);
    }
}

/* The bound on the kept mappings while the arena's chunks of their own
 * go back to them (os_unmap_later_fit): their bytes, and the fewest
 * pieces (an arena keeps no count of its chunks). */
static fit_bound big_bound(const pk_arena *a) { return policy_keep_bound(a->big_bytes, 0); }

/* Frees one chunk that rewind or reset gave up. Rewind drops chunks newest
 * first, so the oldest lands at the head of the spare list: the chunk the
 * next allocation past the mark went into before, and will go into again. */
static void drop_chunk(pk_arena *a, chunk *c, uint64_t now, fit_bound bound) {
    if (c->size != a->chunk_size) {
        account(0, -(long)c->size);
        a->big_bytes -= c->size;
        os_unmap_later_fit(c, c->size, bound);
        return;
    }
    c->prev = a->spare;
    c->top = now;
    a->spare = c;
}

pk_arena *pk_arena_create(size_t chunk_size) {
    size_t page = os_page_size();
    if (chunk_size == 0) chunk_size = DEFAULT_CHUNK_SIZE;
    if (chunk_size > SIZE_MAX / 2) {
        errno = ENOMEM;
        return NULL;
    }
    chunk_size = align_up(chunk_size, page);
    /* Chunks come from and go back to retained memory, so an arena per task
     * reuses the last task's pages, as APR's pools do; a tick here returns
     * what stayed unused for the purge delay (and the poll ticks the pools). */
    init_announce(INIT_SHARED_STATE); /* fork handlers (fork.c) */
    os_retain_tick(pool_purge_poll());
    pk_arena *a = record_take();
    if (!a) {
        errno = ENOMEM;
        return NULL;
    }
    chunk *home = os_map_reuse(chunk_size, page);
    if (!home) {
        record_give(a);
        errno = ENOMEM;
        return NULL;
    }
    home->prev = NULL;
    home->size = chunk_size;
    a->home = home;
    a->spare = NULL;
    a->chunk_size = chunk_size;
    a->big_bytes = 0;
    a->live = live_word(a);
    make_current(a, home, CHUNK_HDR);
    account(1, (long)chunk_size);
    return a;
}

/* Hands a's chunks from c down to (not including) stop to the retained
 * memory (retain.c: normal ones for the next arena, those of their own to
 * the kept mappings of any length); returns their bytes. */
static size_t retain_chunks(const pk_arena *a, chunk *c, chunk *stop) {
    size_t bytes = 0;
    fit_bound bound = big_bound(a);
    for (chunk *prev; c != stop; c = prev) {
        prev = c->prev;
        bytes += c->size;
        if (c->size != a->chunk_size) os_unmap_later_fit(c, c->size, bound);
        else os_unmap_later(c, c->size, os_page_size());
    }
    return bytes;
}

void pk_arena_destroy(pk_arena *arena) {
    if (!arena) return;
    check_live(arena, "pk_arena_destroy");
    pool_purge_poll(); /* a call that reaches the library: idle memory goes first */
    chunk *home = arena->home;
    size_t bytes = home->size + retain_chunks(arena, arena->spare, NULL) + retain_chunks(arena, arena->cur, home);
    account(-1, -(long)bytes);
    /* no room and no chunk: the inline paths of a call on the destroyed
     * handle fail their checks and reach the slow ones, which report it */
    arena->live = 0;
    arena->ptr = arena->end = NULL;
    arena->cur = NULL;
    os_unmap_later(home, home->size, os_page_size());
    record_give(arena);
}

/* Whether size bytes aligned to align fit in the current chunk, with *pad
 * set to the padding they need. Written so nothing can overflow, whatever
 * size and align are. size 0 never fits (size - 1 wraps): the slow path
 * gives it a byte of its own, and the fast path needs no branch for it. */
static inline bool fits(const pk_arena *a, size_t size, size_t align, size_t *pad) {
    uintptr_t at = (uintptr_t)a->ptr;
    size_t room = (size_t)((uintptr_t)a->end - at);
    *pad = (size_t)(-at & (align - 1));
    return *pad < room && size - 1 < room - *pad;
}

static inline void *bump(pk_arena *a, size_t pad, size_t size) {
    char *p = a->ptr + pad;
    a->ptr = p + size;
    return p;
}

/* Makes current a chunk in which size bytes aligned to align are sure to fit.
 * Leaves the arena untouched when the system has no memory. */
static bool grow(pk_arena *a, size_t size, size_t align) {
    size_t page = os_page_size();
    size_t start = align_up(CHUNK_HDR, align); /* chunks are aligned to max(align, page) */
    if (size > SIZE_MAX - start - page) {
        errno = ENOMEM;
        return false;
    }
    size_t need = start + size;
    chunk *c;
    if (need <= a->chunk_size && align <= page) {
        c = a->spare;
        if (c) {
            a->spare = c->prev;
        } else {
            c = os_map_reuse(a->chunk_size, page);
            if (!c) return false;
            account(0, (long)a->chunk_size);
        }
        c->size = a->chunk_size;
    } else {
        size_t bytes = align_up(need, page);
        c = align <= page ? os_map_fit(bytes) : os_map(bytes, align);
        if (!c) return false;
        c->size = bytes;
        a->big_bytes += bytes;
        account(0, (long)bytes);
    }
    a->cur->top = (size_t)(a->ptr - (char *)a->cur);
    c->prev = a->cur;
    make_current(a, c, CHUNK_HDR);
    return true;
}

static PK_NOINLINE void *alloc_slow(pk_arena *a, size_t size, size_t align) {
    check_live(a, "pk_arena_alloc");
    if (unlikely(!is_pow2(align))) {
        errno = EINVAL;
        return NULL;
    }
    if (size == 0) size = 1; /* a unique address needs a byte of its own */
    size_t pad;
    if (!fits(a, size, align, &pad)) {
        if (!grow(a, size, align)) return NULL;
        fits(a, size, align, &pad);
    }
    return bump(a, pad, size);
}

void *pk_arena_alloc(pk_arena *arena, size_t size, size_t align) {
    if (likely(align == 0)) {
        /* 0 for 0 and past SIZE_MAX - DEFAULT_ALIGN + 1, which then fail
         * the compare (rounded - 1 wraps) and take the slow path */
        size_t rounded = (size + DEFAULT_ALIGN - 1) & ~(DEFAULT_ALIGN - 1);
        char *p = arena->ptr;
        if (likely(((uintptr_t)p & (DEFAULT_ALIGN - 1)) == 0 && rounded - 1 < (size_t)(arena->end - p))) {
            arena->ptr = p + rounded;
            return p;
        }
        align = DEFAULT_ALIGN;
    }
    size_t pad;
    if (likely(is_pow2(align) && fits(arena, size, align, &pad))) return bump(arena, pad, size);
    return alloc_slow(arena, size, align);
}

char *pk_arena_strdup(pk_arena *arena, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = pk_arena_alloc(arena, n, 1);
    if (p) memcpy(p, s, n);
    return p;
}

pk_arena_mark pk_arena_save(pk_arena *arena) {
    pk_arena_mark m = {arena->cur, (size_t)(arena->ptr - (char *)arena->cur)};
    return m;
}

static PK_COLD void bad_mark(pk_arena *a, pk_arena_mark m, const char *why) {
    error_report(PK_FATAL, "bad arena mark", NULL, m.chunk,
                 "arena %p, mark {chunk %p, used %zu}: %s", (void *)a, m.chunk, m.used, why);
}

/* The mark is in an older chunk, or bad: check it against the list before
 * freeing anything, so that a reported mark leaves the arena as it was. The
 * walk is O(chunks), which the chunks freed here pay for anyway. */
static PK_NOINLINE void rewind_slow(pk_arena *a, pk_arena_mark m) {
    check_live(a, "pk_arena_rewind");
    chunk *c = a->cur;
    if (m.chunk == c) {
        bad_mark(a, m, "it is past the arena's position in its chunk (rewound past, or reset?)");
        return;
    }
    while (c && c != m.chunk) c = c->prev;
    if (!c) {
        bad_mark(a, m, "its chunk is not the arena's (rewound past, reset, or another arena?)");
        return;
    }
    if (m.used - CHUNK_HDR > c->top - CHUNK_HDR) {
        bad_mark(a, m, "it lies beyond where the arena left its chunk");
        return;
    }
    uint64_t now = os_now_ms();
    fit_bound bound = big_bound(a);
    for (chunk *x = a->cur, *prev; x != c; x = prev) {
        prev = x->prev;
        drop_chunk(a, x, now, bound);
    }
    purge_spares(a, now);
    make_current(a, c, m.used);
}

void pk_arena_rewind(pk_arena *arena, pk_arena_mark mark) {
    size_t pos = (size_t)(arena->ptr - (char *)arena->cur);
    if (likely(mark.chunk == arena->cur && mark.used - CHUNK_HDR <= pos - CHUNK_HDR)) {
        arena->ptr = (char *)arena->cur + mark.used;
        return;
    }
    rewind_slow(arena, mark);
}

/* The chunk kept current is the home chunk: it is of normal size, as large
 * as any other chunk that could be kept. The others go to the spare list
 * (oversized ones back to the system). */
void pk_arena_reset(pk_arena *arena) {
    check_live(arena, "pk_arena_reset");
    chunk *home = arena->home;
    uint64_t now = os_now_ms();
    fit_bound bound = big_bound(arena);
    for (chunk *c = arena->cur, *prev; c != home; c = prev) {
        prev = c->prev;
        drop_chunk(arena, c, now, bound);
    }
    purge_spares(arena, now);
    make_current(arena, home, CHUNK_HDR);
}

void pk_arena_stats_get(pk_arena *arena, pk_arena_stats *out) {
    check_live(arena, "pk_arena_stats_get");
    memset(out, 0, sizeof *out);
    for (chunk *c = arena->cur; c; c = c->prev) {
        out->bytes_used += c == arena->cur ? (size_t)(arena->ptr - (char *)c) : c->top;
        out->bytes_reserved += c->size;
        out->chunks++;
    }
    for (chunk *c = arena->spare; c; c = c->prev) {
        out->bytes_reserved += c->size;
        out->chunks++;
    }
}
