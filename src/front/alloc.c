/* The size-class front end (alloc.h): malloc-shaped calls over one pool per
 * size class, made on first use; blocks over the last class each get a
 * mapping of their own (alloc_large.c).
 *
 * Finding the class. pk_alloc and pk_free_sized compute it from the size;
 * pk_free, pk_realloc and pk_usable_size ask alloc_pool_of (alloc_internal.h)
 * which pool's slab holds the address, the front end's one question to the
 * core. Anything that is no class pool's object is a mapped block, one of
 * the bootstrap buffer's, or foreign (reported).
 *
 * Re-entry. As malloc, the front end is also the C library's allocator,
 * and the library it runs on calls the C library: a pool made on first use
 * reads the environment (strdup), registers the fork handlers
 * (pthread_atfork), a thread's first call sets a pthread key, a debug pool
 * with several frames calls backtrace(), whose first call loads libgcc_s.
 * Each may call malloc or free again, on the same thread, while the
 * library is half-way through a call, where a lock it holds, or a
 * pthread_once in progress, would wait forever. So every slow path runs
 * with the thread's `depth` raised, and a call that finds it raised never
 * enters the library: an allocation is served from the bootstrap buffer
 * (a static array, bumped and never reused; a block past its end is
 * mapped), a free of a class object waits on the thread's deferred list,
 * sent at the end of the outer call. The inline fast paths need no guard: they touch only
 * the thread's own slot, and no slow path calls out in the middle of
 * changing it.
 *
 * Classes' pools are published with a release store and read here with
 * acquire loads; the inline paths (alloc.h) read only a class's slot
 * offset (a relaxed load: a thread's own slot, set up by its own calls).
 */
#define PK__EMIT_ALLOC_EXTERN_INLINE 1
#include "front/alloc_internal.h"
#include "base/policy.h"
#include "pool/pool_free.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ---- the classes' pools (the table of sizes: alloc_classes.c) ---- */

/* pk_new's own classes, past pk_alloc's in the table (alloc_object.h): an
 * object of 129 to 1,024 bytes (header and fields: a multiple of 16) whose
 * size is no class of pk_alloc's has a class of exactly its size, as the
 * object layer's classes had before they moved here; pk_alloc's steps of a
 * quarter would round up to 25% of it away (528 bytes in 640). Class
 * ALLOC_CLASSES_PK_ALLOC + (size - 129) / 16; those whose size is a class
 * of pk_alloc's are never made (the shared class serves that size). */
#define OBJECT_FINE_ABOVE 128
_Static_assert(ALLOC_CLASSES_ALL == PK__ALLOC_CLASSES + (PK__ALLOC_SMALL_MAX - OBJECT_FINE_ABOVE) / 16,
               "one object class for each 16 bytes from 144 to 1,024");

/* Each class's pool once made; and at alloc_small_class's entries the
 * offset of their class pool's slot in threads' tables, so pk_alloc finds a
 * small size's slot with one load (alloc.h). */
static pk_pool *class_pools[ALLOC_CLASSES_ALL];
uint32_t pk__alloc_small_slots[PK__ALLOC_SMALL_MAX / 8 + 1];
static char class_names[ALLOC_CLASSES_ALL][24];
static pthread_mutex_t class_lock PK_FORK_LOCK = PTHREAD_MUTEX_INITIALIZER;

static pk_pool *class_pool_made(size_t ci) { return __atomic_load_n(&class_pools[ci], __ATOMIC_ACQUIRE); }

/* An object of more bytes than this is a large block of its own, not a
 * class slot: above it, the classes' quarter steps would keep up to a
 * quarter of the object unused (70,016 bytes in an 81,920-byte slot),
 * where a mapping rounds to a page, under a sixteenth of it. */
#define OBJECT_POOLED_MAX ((size_t)64 << 10)
_Static_assert(OBJECT_POOLED_MAX <= PK_ALLOC_CLASS_MAX && OBJECT_POOLED_MAX / 4096 >= 16,
               "pooled objects have classes; a page is at most a sixteenth of a larger one");

/* The bytes of class ci, pk_alloc's or an object class. */
static size_t class_bytes(size_t ci) {
    return ci < PK__ALLOC_CLASSES ? alloc_class_size(ci) : OBJECT_FINE_ABOVE + 16 * (ci - PK__ALLOC_CLASSES + 1);
}

/* The class of an object's size bytes (16 <= size <= PK_ALLOC_CLASS_MAX, a
 * multiple of 16): pk_alloc's where it has that size, else the object
 * class of that size up to 1,024 bytes, else pk_alloc's. */
static size_t object_class_of(size_t size) {
    size_t ci = alloc_class_of(size);
    if (size <= OBJECT_FINE_ABOVE || size > PK__ALLOC_SMALL_MAX || alloc_class_size(ci) == size) return ci;
    return PK__ALLOC_CLASSES + (size - OBJECT_FINE_ABOVE - 1) / 16;
}

/* Class ci's pool, made now if it is not yet; NULL with errno ENOMEM.
 * Caller has raised depth. */
static PK_NOINLINE pk_pool *class_pool_make(size_t ci) {
    pk_pool *p = class_pool_made(ci);
    if (p) return p;
    /* The fork handlers first (pk_pool_create would install them too, but
     * with the lock already held: a fork in between left it held in the
     * child). */
    init_announce(INIT_SHARED_STATE);
    pk_lock(&class_lock);
    fork_test_point(HOOK_ALLOC_CLASSES, &class_lock);
    p = class_pools[ci];
    if (!p) {
        snprintf(class_names[ci], sizeof class_names[ci], "%s %zu",
                 ci < PK__ALLOC_CLASSES ? "pk_alloc" : "pk_new", class_bytes(ci));
        pk_pool_config c;
        memset(&c, 0, sizeof c);
        c.name = class_names[ci];
        c.size = class_bytes(ci);
        /* pk_new's objects lie here too: debug fills leave a slot's first
         * 16 bytes alone, so a late release still finds the dead mark
         * naming the class (object_internal.h). */
        c.flags = POOL_SIZE_CLASS | POOL_KEEPS_HEADER;
        p = pk_pool_create(&c);
        if (p) {
            for (size_t i = 0; i <= PK__ALLOC_SMALL_MAX / 8; i++)
                if (alloc_small_class[i] == ci)
                    __atomic_store_n(&pk__alloc_small_slots[i], p->geo.table_slot, __ATOMIC_RELAXED);
            __atomic_store_n(&class_pools[ci], p, __ATOMIC_RELEASE);
        }
    }
    pk_unlock(&class_lock);
    if (!p) errno = ENOMEM;
    return p;
}

size_t alloc_classes_made(void) {
    size_t n = 0;
    for (size_t ci = 0; ci < PK__ALLOC_CLASSES; ci++) n += class_pool_made(ci) != NULL;
    return n;
}

pk_pool *alloc_class_made(size_t ci) { return ci < ALLOC_CLASSES_ALL ? class_pool_made(ci) : NULL; }

void alloc_fork_lock(void) { pk_lock(&class_lock); }
void alloc_fork_unlock(void) { pk_unlock(&class_lock); }

/* ---- re-entry: the thread's depth, the bootstrap buffer, deferred frees ---- */

static __thread unsigned depth __attribute__((tls_model("initial-exec")));
static __thread void *deferred __attribute__((tls_model("initial-exec")));

/* Enough for what the C library allocates while the library makes its
 * first pools and registers its handlers (a few KiB), with room to spare;
 * the array costs memory only where it is written. */
#define BOOT_BYTES ((size_t)256 << 10)
#define BOOT_HEADER 16 /* the block's size, keeping 16-byte alignment */
static char boot[BOOT_BYTES] __attribute__((aligned(64))) PK_BIG_TABLE;
static size_t boot_used;

static bool boot_owns(const void *ptr) {
    return (const char *)ptr >= boot && (const char *)ptr < boot + BOOT_BYTES;
}

static void *boot_alloc(size_t size, size_t align, bool zero) {
    if (size <= BOOT_BYTES && align <= BOOT_HEADER) {
        size_t need = align_up(size + BOOT_HEADER, BOOT_HEADER);
        size_t at = __atomic_fetch_add(&boot_used, need, __ATOMIC_RELAXED);
        if (at + need <= BOOT_BYTES) {
            *(size_t *)(boot + at) = size;
            return boot + at + BOOT_HEADER; /* never used before: zero */
        }
    }
    return large_alloc(size, align, zero);
}

static size_t boot_size(const void *ptr) { return *(const size_t *)((const char *)ptr - BOOT_HEADER); }

static PK_NOINLINE void drain_deferred(void) {
    while (deferred) {
        void *obj = deferred;
        deferred = *(void **)obj;
        pk_free(obj);
    }
}

static inline void leave(void) {
    depth--;
    if (unlikely(deferred != NULL) && depth == 0) drain_deferred();
}

/* fn(arg) with the thread's depth raised: for work the front end starts
 * outside a call of its own (alloc_harden.c's at a thread's exit, which
 * hard_setup is handed this for). */
static void alloc_guarded(void (*fn)(void *), void *arg) {
    depth++;
    fn(arg);
    leave();
}

/* ---- the mode: default or hardened (alloc_harden.c), read once ---- */

int alloc_mode;
static pthread_once_t hard_once = PTHREAD_ONCE_INIT;

static void hard_start(void) { hard_setup(alloc_guarded); }

PK_NOINLINE bool alloc_mode_read(void) {
    depth++;
    /* may allocate: the environment's first read; debug mode, which checks
     * more of each block, takes precedence */
    bool hard = options_hardened() && !options_debug();
    if (hard) pthread_once(&hard_once, hard_start);
    __atomic_store_n(&alloc_mode, hard ? ALLOC_MODE_HARDENED : ALLOC_MODE_DEFAULT, __ATOMIC_RELEASE);
    leave();
    return hard;
}


/* ---- allocation ---- */

/* An object of class ci, the inline path first (callers that come from
 * the inline pk_alloc have tried it already: it is cheap to try again). */
static void *class_alloc(size_t ci, void *caller) {
    pk_pool *p = class_pool_made(ci);
    if (likely(p != NULL)) {
        void *obj = pk__pool_alloc_inline(p);
        if (likely(obj != NULL)) return obj;
    }
    depth++;
    /* What a pool records, and the announcements of its first creation,
     * may allocate: first use only. */
    if (!p) p = class_pool_make(ci);
    void *obj = p ? pool_alloc_at(p, caller) : NULL;
    leave();
    return obj;
}

void *alloc_from_pool(pk_pool *p, void *caller) {
    void *obj = pk__pool_alloc_inline(p);
    if (likely(obj != NULL)) return obj;
    if (unlikely(depth != 0)) return boot_alloc(p->size, 0, false);
    depth++;
    obj = pool_alloc_at(p, caller);
    leave();
    return obj;
}

/* ---- pk_new's memory (alloc_object.h) ---- */

pk_pool *alloc_object_pool(size_t size) {
    size_t ci = ALLOC_CLASSES_ALL; /* none: a large block */
    if (unlikely(alloc_hardened())) {
        if (size < HARD_GUARDED_MIN) ci = alloc_class_aligned(hard_class_of(size), 16);
        if (ci >= PK__ALLOC_CLASSES) ci = ALLOC_CLASSES_ALL; /* pk_alloc's classes only */
    } else if (size <= OBJECT_POOLED_MAX) {
        ci = object_class_of(size);
    }
    if (ci >= ALLOC_CLASSES_ALL) {
        errno = EINVAL;
        return NULL;
    }
    pk_pool *p = class_pool_made(ci);
    if (likely(p != NULL)) return p;
    depth++;
    p = class_pool_make(ci);
    leave();
    return p;
}

pk_pool *alloc_object_pool_made(size_t size) { return class_pool_made(object_class_of(size)); }

bool alloc_object_pooled(size_t size) { return size <= OBJECT_POOLED_MAX && !alloc_hardened(); }

void *alloc_object_block(size_t size) {
    if (alloc_hardened()) return pk_aligned_alloc(16, size);
    return alloc_large_in(NULL, size, 16, false);
}

/* Large blocks' calls run the purge's poll, as the pools' slow paths do,
 * so that freed blocks kept for reuse go back after the delay in a program
 * that makes nothing else. Never inside the library (depth): the poll may
 * start the background purge's thread, which allocates. */
void *alloc_large_in(large_set *set, size_t size, size_t align, bool zero) {
    if (unlikely(depth != 0)) return boot_alloc(size, align, zero);
    depth++;
    init_announce(INIT_SHARED_STATE); /* the fork handlers cover the block table */
    pool_purge_poll();
    void *obj = large_alloc_in(set, size, align, zero);
    leave();
    return obj;
}

static PK_NOINLINE void *large_from_library(size_t size, size_t align, bool zero) {
    return alloc_large_in(NULL, size, align, zero);
}

pk_pool *alloc_pool_create(const pk_pool_config *c) {
    depth++;
    pk_pool *p = pk_pool_create(c);
    leave();
    return p;
}

void alloc_pool_destroy(pk_pool *p) {
    depth++;
    pk_pool_destroy(p);
    leave();
}

static void large_poll(void) {
    if (depth) return;
    depth++;
    pool_purge_poll();
    leave();
}


/* A hardened block (alloc_harden.c): of size 0, in a class pool with its
 * check word, or guarded in a mapping of its own of room bytes or more
 * (room: size, but where a realloc grows a block: realloc_any); always
 * zero. Past GUARDS_MAX guards held (policy.h), a block that a class
 * holds with its check word takes one, a larger one a plain mapping. */
static PK_NOINLINE void *hard_alloc(size_t size, size_t room, size_t align, void *caller) {
    if (size == 0 && align <= HARD_ZERO_STEP) {
        void *z = hard_zero_block();
        if (!z) errno = ENOMEM;
        return z;
    }
    size_t ci = PK__ALLOC_CLASSES;
    bool guard = align <= os_page_size() && os_guard_room();
    if (align <= SLAB_BYTES && (size < HARD_GUARDED_MIN || (!guard && size <= PK_ALLOC_CLASS_MAX - HARD_TAIL))) {
        ci = hard_class_of(size);
        if (align > 1) ci = alloc_class_aligned(ci, align); /* a division: aligned calls only */
    }
    depth++;
    void *obj;
    pk_pool *p = NULL;
    if (ci < PK__ALLOC_CLASSES) {
        p = class_pool_made(ci);
        if (unlikely(!p)) p = class_pool_make(ci);
        if (p && !alloc_pool_aligns(p, align)) ci = PK__ALLOC_CLASSES;
    }
    if (ci < PK__ALLOC_CLASSES) {
        obj = p ? hard_class_alloc(p, ci, size, caller) : NULL;
    } else {
        init_announce(INIT_SHARED_STATE); /* the fork handlers cover the block table */
        pool_purge_poll();
        obj = guard ? large_alloc_guarded(size, room, caller) : large_alloc(size, align, true);
    }
    leave();
    return obj;
}

/* hard_alloc of a request that a class serves (neither 0 bytes nor
 * HARD_GUARDED_MIN, no alignment asked), its pool made: the class's
 * allocation with the guard raised, without hard_alloc's other cases or
 * the frame they need, which every small hardened malloc paid. */
static inline void *hard_alloc_small(size_t size, void *caller) {
    if (likely(size - 1 < HARD_GUARDED_MIN - 1)) {
        size_t ci = hard_class_of(size);
        pk_pool *p = ci < PK__ALLOC_CLASSES ? class_pool_made(ci) : NULL;
        if (likely(p != NULL)) {
            depth++;
            void *obj = hard_class_alloc(p, ci, size, caller);
            leave();
            return obj;
        }
    }
    return hard_alloc(size, size, 0, caller);
}

/* pk_alloc's path in the library, caller the site a report names. */
static inline __attribute__((always_inline)) void *alloc_slow_at(size_t size, void *caller) {
    if (unlikely(depth != 0)) return boot_alloc(size, 0, false);
    if (unlikely(alloc_hardened())) return hard_alloc_small(size, caller);
    if (size > PK_ALLOC_CLASS_MAX) return large_from_library(size, 0, false);
    return class_alloc(alloc_class_of(size), caller);
}

void *pk__alloc_slow(size_t size) { return alloc_slow_at(size, __builtin_return_address(0)); }

void *alloc_at(size_t size, void *caller) { return alloc_slow_at(size, caller); }

#ifndef PK__HAVE_INLINE
void *pk_alloc(size_t size) { return pk__alloc_slow(size); }
#endif

void *pk_calloc(size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    if (unlikely(depth != 0)) return boot_alloc(total, 0, true);
    if (unlikely(alloc_hardened())) return hard_alloc_small(total, __builtin_return_address(0));
    if (total > PK_ALLOC_CLASS_MAX) return large_from_library(total, 0, true); /* fresh pages */
    /* the class's whole slot, which malloc_usable_size reports usable, as
     * glibc clears its whole chunk: a program that grows into the slack
     * finds zeros there too */
    size_t ci = alloc_class_of(total);
    void *obj = class_alloc(ci, __builtin_return_address(0));
    if (obj) memset(obj, 0, alloc_class_size(ci));
    return obj;
}

/* The first class from ci on whose size is a multiple of align: a slot of
 * a class is aligned to the largest power of two dividing its size (up to
 * SLOT_ALIGN_MAX, slab.h). PK__ALLOC_CLASSES if none. */
size_t alloc_class_aligned(size_t ci, size_t align) {
    while (ci < PK__ALLOC_CLASSES && alloc_class_size(ci) % align) ci++;
    return ci;
}

/* Whether class ci's slots are aligned to align, its pool made to ask. */
static PK_NOINLINE bool class_aligns(size_t ci, size_t align) {
    pk_pool *p = class_pool_made(ci);
    if (!p) {
        depth++;
        p = class_pool_make(ci);
        leave();
    }
    return p && alloc_pool_aligns(p, align);
}

void *aligned_alloc_at(size_t align, size_t size, void *caller) {
    if (!is_pow2(align)) {
        errno = EINVAL;
        return NULL;
    }
    if (unlikely(depth != 0)) return boot_alloc(size, align, false);
    if (unlikely(alloc_hardened())) return hard_alloc(size, size, align, caller);
    size_t want = size < align ? align : size;
    if (align <= SLAB_BYTES && want <= PK_ALLOC_CLASS_MAX) {
        size_t ci = alloc_class_aligned(alloc_class_of(want), align);
        if (ci < PK__ALLOC_CLASSES && (align <= SLOT_ALIGN_MAX || class_aligns(ci, align)))
            return class_alloc(ci, caller);
    }
    return large_from_library(size, align, false);
}

void *pk_aligned_alloc(size_t align, size_t size) { return aligned_alloc_at(align, size, __builtin_return_address(0)); }

/* ---- free ---- */

PK_COLD __attribute__((noreturn)) static void report_foreign(const char *call, const void *ptr,
                                                              const pk_pool *p) {
    if (p && !(p->flags & POOL_SIZE_CLASS))
        error_report(PK_FATAL, "foreign pointer", p->name, ptr,
                     "%s(%p): an object of pool '%s', which pk_alloc did not make (give it to "
                     "pk_pool_free)",
                     call, ptr, pool_name(p));
    error_report(PK_FATAL, "foreign pointer", NULL, ptr,
                 "%s(%p): not a block pk_alloc handed out, or one already freed", call, ptr);
    __builtin_unreachable();
}

/* A pointer that is no class pool's object: a mapped block, the bootstrap
 * buffer's (never reused), or a fault. */
static void free_other(void *ptr, const pk_pool *p, const char *call) {
    if (boot_owns(ptr) || hard_zero_free(ptr, call)) return;
    if (large_free(ptr)) {
        large_poll();
        return;
    }
    report_foreign(call, ptr, p);
}

/* Class pool p's object back, through the pool's slow path. */
static void class_free(pk_pool *p, void *ptr, void *caller) {
    if (unlikely(depth != 0)) { /* see "Re-entry" */
        *(void **)ptr = deferred;
        deferred = ptr;
        return;
    }
    depth++;
    if (unlikely(alloc_hard(p))) hard_class_free(p, ptr, caller);
    else pool_free_at(p, ptr, caller);
    leave();
}

static PK_NOINLINE void free_slow(pk_pool *p, void *ptr, void *caller) {
    if (!ptr) return;
    if (likely(alloc_owns(p, ptr))) class_free(p, ptr, caller);
    else free_other(ptr, p, "pk_free");
}

/* A free of ptr, whose slab's record is s, by pk_free in hardened mode,
 * outside the library: a block of a hardened class pool whose spans are
 * whole granules (s is then ptr's slab, as alloc_owns would find) goes to
 * hard_class_free with the record in hand, without free_slow's and
 * class_free's steps to it, which every hardened free paid; anything
 * else to free_slow. Out of pk_free, so that a default mode's slow frees
 * pay one compare of the mode for it. */
static PK_NOINLINE void hard_free_at(slab *s, void *ptr, void *caller) {
    pk_pool *p = alloc_pool_in(s);
    if (!p || !alloc_hard(p) || depth != 0 || !alloc_whole_granules(p)) { /* alloc_hard: a class pool's */
        free_slow(p, ptr, caller);
        return;
    }
    depth++;
    hard_class_free_in(p, s, ptr, caller);
    leave();
}

/* A free that changes its slab's lists (heap_free_owned), by the owner of
 * s, one of class pool p's slabs, outside the library (depth 0): with the
 * guard raised, as any call that may take the pool's lock. */
static PK_NOINLINE void class_free_edge(tc_slot *c, slab *s, void *ptr) {
    depth++;
    heap_free_owned(c->heap, s, ptr);
    leave();
}

/* A free of ptr, a block of s, a slab another live thread's heap of the
 * class owns, by a thread whose slot c of the class has a current slab,
 * outside the library (depth 0; the short path's owner check refused it):
 * onto this thread's list or the pending chain home (pool_free.h,
 * free_foreign) with the record in hand, as a typed pool's short path
 * sends it; what free_foreign leaves (the pool's own slab, whose free may
 * adopt it; no slot) to free_slow. Through free_slow and then
 * pool_free_at, such a free found the record and asked the short path's
 * questions twice more, and in a server whose threads free each other's
 * blocks such frees are many. */
static PK_NOINLINE void class_free_foreign(tc_slot *c, slab *s, void *ptr, void *caller) {
    depth++;
    bool done = free_foreign(c, s, ptr);
    leave();
    if (!done) free_slow(alloc_pool_in(s), ptr, caller);
}

/* The short path (pool_free.h, free_into_slab) of ptr, a block of s, one
 * of the slabs of the class whose slot c has a current slab, outside the
 * library (depth 0), a block of another live thread's slab included
 * (class_free_foreign, which names caller where it reports): whether it
 * took the free. pk_free and alloc_free_missed share it. */
static inline __attribute__((always_inline)) bool class_free_short(tc_slot *c, slab *s, void *ptr, void *caller) {
    int done = free_into_slab(c, s, ptr, true);
    if (likely(done == FREE_DONE)) return true;
    if (done == FREE_EDGE) {
        class_free_edge(c, s, ptr);
        return true;
    }
    if (done == FREE_FOREIGN) {
        class_free_foreign(c, s, ptr, caller);
        return true;
    }
    return false;
}

/* OWN_FREES' drain, due: outside the library only (its heaps may be
 * mid-change under a call that frees), as class_free_edge. */
static PK_NOINLINE void own_drain(tc_slot *c) {
    if (depth) return; /* the next free's, outside */
    depth++;
    heap_own_drain(c->heap->pool, c->heap);
    leave();
}

/* OWN_DIRECT (policy.h): ptr, a block of another slab h owns (the owned
 * index: its record is mapped), home to its slab as the short path sends a
 * typed pool's (pool_free.h, free_into_slab), with fewer stores: in a
 * teardown every block is a cold line, and the fewer stores a free makes
 * behind it, the more frees run ahead (docs/results.md, "Teardown in
 * random order"). */
static void own_home(tc_slot *c, heap *h, void *ptr) {
    uintptr_t x = (uintptr_t)ptr;
    slab *s = slab_of(x);
    if (unlikely(!slab_has_slot(s, x))) {
        class_free(alloc_pool_in(s), ptr, __builtin_return_address(0)); /* reported */
        return;
    }
    void *f = s->free;
    uint32_t used = s->used;
    /* its slab full or emptied, or the slab list's head freed again */
    if (unlikely(!f) || unlikely(used <= 1) || unlikely(ptr == f)) {
        class_free_edge(c, s, ptr);
        return;
    }
    *(void **)ptr = f;
    s->free = ptr;
    s->used = used - 1;
    h->short_frees++;
}

/* own_push's block, where OWN_FREES' count (own_room) has run out: home
 * (OWN_DIRECT: a block of another slab, the count 0, left so: such frees
 * store nothing to it, whose store each next free's read would wait on),
 * or pushed, counted and the drain made (due). */
static PK_NOINLINE void own_full(tc_slot *c, void *ptr, void *head) {
    heap *h = c->heap;
    if (h->own_direct && h->own_room == 0 && !depth) {
        own_home(c, h, ptr);
        return;
    }
    *(void **)ptr = head;
    __atomic_store_n(&c->head, ptr, __ATOMIC_RELAXED);
    h->own_room--;
    own_drain(c);
}

/* A block of a slab the thread's heap of its class owns, whose class's
 * slot c the owned index named (pool_types.h), current slab or not: onto
 * the class's list, one path whatever the slab (OWN_FREES; another slab's
 * home while OWN_DIRECT holds), unless it is the list's head (freed again):
 * whether it went. word: the block's address | (SLAB_BYTES - 1), the
 * entry's. want: the class's slot the caller requires (pk_free_sized's),
 * or NULL for any. A heap that owns a slab has a current one (heap.c,
 * refill), so the slot's list is set up. */
static inline __attribute__((always_inline)) bool own_push_in(tc_slot *c, void *ptr, uintptr_t word,
                                                              const tc_slot *want) {
    uintptr_t cur = __atomic_load_n(&c->cur, __ATOMIC_RELAXED);
    void *head = __atomic_load_n(&c->head, __ATOMIC_RELAXED);
    if (likely(ptr != head) && (!want || c == want)) {
        heap *h = c->heap;
        intptr_t room = h->own_room - (word != cur); /* a block of another slab counts */
        if (unlikely(room < 0)) {
            own_full(c, ptr, head);
            return true;
        }
        *(void **)ptr = head;
        __atomic_store_n(&c->head, ptr, __ATOMIC_RELAXED);
        h->own_room = room; /* stats read it racily: heap.c */
        return true;
    }
    return false;
}

_Static_assert(PK__OWN_INDEX == OWN_INDEX && PK__OWN_INDEX_OFF == OWN_INDEX_OFF && PK__SLAB_SHIFT == SLAB_SHIFT &&
                   offsetof(own_entry, word) == 0 && offsetof(own_entry, slot) == sizeof(uintptr_t),
               "alloc.h's inline pk_free reads the owned index as pool_types.h lays it out");

/* The slot the owned index names for ptr's slab in the thread's table, or
 * NULL. */
static inline __attribute__((always_inline)) tc_slot *own_slot(char *table, void *ptr) {
    uintptr_t x = (uintptr_t)ptr;
    const own_entry *e = own_entry_at(table, x);
    if (likely(__atomic_load_n(&e->word, __ATOMIC_RELAXED) == (x | (SLAB_BYTES - 1))))
        return (tc_slot *)(table + __atomic_load_n(&e->slot, __ATOMIC_RELAXED));
    return NULL;
}

/* own_push_in on the slot the owned index names, if any. */
static inline __attribute__((always_inline)) bool own_push(char *table, void *ptr, const tc_slot *want) {
    tc_slot *c = own_slot(table, ptr);
    return c && own_push_in(c, ptr, (uintptr_t)ptr | (SLAB_BYTES - 1), want);
}

/* pk_free's steps once the owned index was read (c: the slot it named, or
 * NULL): a block of a slab the thread's heap of its class owns onto the
 * class's list, a push the inline paths could make, so inside the library
 * too. Else the slab's record from the address (the region map's bit,
 * then the record by masking), once: the class's slot in the thread's
 * table from it, the inline free (an object of the thread's current slab
 * the index did not name), then, for an object of another slab the thread
 * owns, the short path with the record in hand (pool_free.h,
 * free_into_slab), as the typed pool's own miss takes it, unless the call
 * comes from inside the library (see "Re-entry": it waits); a block of a
 * hardened class pool, to its checks with the record in hand
 * (hard_free_at). Everything else goes on to free_slow. No guess of the
 * class (the one freed into last, say) comes first: with mixed sizes it
 * fails about half the time, a mispredicted branch each (docs/alloc.md,
 * "How fast"). Inlined into its two entries, so that the caller a report
 * names is theirs. */
static inline __attribute__((always_inline)) void free_owned(void *ptr, tc_slot *owned) {
    uintptr_t x = (uintptr_t)ptr;
    if (likely(owned != NULL) && likely(own_push_in(owned, ptr, x | (SLAB_BYTES - 1), NULL))) return;
    if (unlikely(!region_holds(x))) {
        free_slow(NULL, ptr, __builtin_return_address(0));
        return;
    }
    slab *s = slab_of(x);
    /* A class pool's slab names its pool's slot in the thread's table
     * (table_slot), so neither path reads the pool's record; any other
     * slab's record names slot 0, which no pool has and which stays all
     * zero (no current slab), so its objects go on below. The slot's
     * current slab is live, so when its record (tc_slot.rec) is s, x lies
     * in it: the inline free's push (pool.h), not the head freed again,
     * without the object's word to compute. */
    tc_slot *c = (tc_slot *)(pk__tc_table + s->table_slot);
    if (likely(c->rec == s)) { /* the owner's word: no other thread reads it */
        if (likely(pk__slot_push((pk__link *)c, ptr))) return;
    } else if (likely(__atomic_load_n(&c->cur, __ATOMIC_RELAXED) != 0 && depth == 0)) {
        /* a plain list with a current slab (pool.h) */
        if (likely(class_free_short(c, s, ptr, __builtin_return_address(0)))) return;
    } else if (unlikely(__atomic_load_n(&alloc_mode, __ATOMIC_RELAXED) == ALLOC_MODE_HARDENED)) {
        hard_free_at(s, ptr, __builtin_return_address(0));
        return;
    }
    free_slow(alloc_pool_in(s), ptr, __builtin_return_address(0));
}

/* alloc.h's inline pk_free calls this one with the slot the index named;
 * callers of the function (PK_NO_INLINE, its address) read the index
 * here. */
void pk_free(void *ptr) { free_owned(ptr, own_slot(pk__tc_table, ptr)); }

void pk__free_owned(void *ptr, void *c) { free_owned(ptr, (tc_slot *)c); }

void alloc_free_missed(pk_pool *p, void *ptr, pk__link *c, uintptr_t cur) {
    if (likely(cur != 0 && depth == 0) &&
        likely(class_free_short((tc_slot *)c, slab_of((uintptr_t)ptr), ptr, __builtin_return_address(0))))
        return;
    class_free(p, ptr, __builtin_return_address(0));
}

/* size's class, or past the classes its page-rounded length (0 for none):
 * the room a default-mode block of size bytes has, and a heap pool's object
 * size in either mode. */
static size_t class_rounded(size_t size) {
    if (size <= PK_ALLOC_CLASS_MAX) return alloc_class_size(alloc_class_of(size));
    if (size > SIZE_MAX / 2) return 0;
    return align_up(size, os_page_size());
}

/* pk_free_sized past its inline path and the owned index's push. */
static PK_NOINLINE void free_sized_rest(void *ptr, size_t size) {
    pk_pool *want = size <= PK_ALLOC_CLASS_MAX ? class_pool_made(alloc_class_of(size)) : NULL;
    pk__link *c = NULL;
    uintptr_t cur = 0;
    if (want && pk__pool_free_try(want, ptr, &c, &cur)) return;
    if (c && own_push(pk__tc_table, ptr, (const tc_slot *)c)) return; /* a size over the inline path's */
    slab *s = alloc_slab_of(ptr);
    pk_pool *p = s ? alloc_pool_in(s) : NULL;
    if (likely(p == want && cur != 0 && depth == 0)) { /* the short path, as pk_free's */
        int done = free_into_slab((tc_slot *)c, s, ptr, true);
        if (likely(done == FREE_DONE)) return;
        if (done == FREE_EDGE) {
            class_free_edge((tc_slot *)c, s, ptr);
            return;
        }
    }
    if (likely(alloc_owns(p, ptr))) {
        if (unlikely(alloc_hard(p)) && size < HARD_GUARDED_MIN) want = class_pool_made(hard_class_of(size));
        /* a heap's object: its class must be size's (its pool is not want) */
        if (unlikely(p != want) && !(alloc_is_heap(p) && p->size == class_rounded(size)))
            error_report(PK_FATAL, "wrong size", p->name, ptr,
                         "pk_free_sized(%p, %zu): the object is of class '%s', not of the class of %zu "
                         "bytes (%zu)",
                         ptr, size, pool_name(p), size,
                         size <= PK_ALLOC_CLASS_MAX ? alloc_class_size(alloc_class_of(size)) : size);
        class_free(p, ptr, __builtin_return_address(0));
        return;
    }
    free_other(ptr, p, "pk_free_sized");
}

void pk__free_sized_slow(void *ptr, size_t size) {
    if (!ptr) return;
    /* A block of another slab the owned index names for the size's class
     * (its slot as the inline path finds it): listed as pk_free lists it,
     * so that a second free of it by either call is the head freed again,
     * never a push onto its slab's list that pk_free's push would not see;
     * apart from the rest, so that this path keeps no frame. */
    if (likely(size <= PK__ALLOC_SMALL_MAX) && own_push(pk__tc_table, ptr, (const tc_slot *)pk__alloc_small_slot(size)))
        return;
    free_sized_rest(ptr, size);
}

#ifndef PK__HAVE_INLINE
void pk_free_sized(void *ptr, size_t size) { pk__free_sized_slow(ptr, size); }
#endif

/* ---- realloc and sizes ---- */

/* pk_heap's resize (blockheap.c, above this file): a heap registers it
 * with its first record (alloc_heap_resize_with), and a block is a heap's
 * only once a heap has been made, so pk_realloc finds it set whenever it
 * meets one. A hook rather than a call: the classes call nothing of
 * pk_heap's, which is made of them. */
static alloc_heap_resize_fn heap_resize;

void alloc_heap_resize_with(alloc_heap_resize_fn fn) { __atomic_store_n(&heap_resize, fn, __ATOMIC_RELEASE); }

/* ptr, a block of heap pool p, or of a heap's large set with p NULL,
 * resized in its heap. */
static void *heap_realloc(const pk_pool *p, void *ptr, size_t size) {
    return __atomic_load_n(&heap_resize, __ATOMIC_ACQUIRE)(p, ptr, size);
}

/* ptr's usable bytes, or reports it (call names the caller). */
static size_t usable_or_report(const void *ptr, const pk_pool *p, const char *call) {
    size_t n;
    if (alloc_owns(p, ptr)) return unlikely(alloc_hard(p)) ? hard_class_request(p, ptr) : p->size;
    if (boot_owns(ptr)) return boot_size(ptr);
    if (hard_zero_owns(ptr)) return 0;
    if (large_usable(ptr, &n)) return n;
    report_foreign(call, ptr, p);
}

size_t pk_good_size(size_t size) {
    /* a hardened block's usable bytes are those asked for: check bytes
     * follow them (pk_usable_size says as much) */
    if (unlikely(alloc_hardened()) && size <= SIZE_MAX / 2) return size;
    return class_rounded(size);
}

size_t pk_usable_size(const void *ptr) {
    if (!ptr) return 0;
    return usable_or_report(ptr, alloc_pool_of(ptr), "pk_usable_size");
}

/* to, a new block of size bytes (NULL: none, ptr kept), given ptr's first
 * `keep` bytes, ptr freed. */
static void *move_into(void *to, void *ptr, size_t keep, size_t size) {
    if (!to) return NULL;
    memcpy(to, ptr, keep < size ? keep : size);
    pk_free(ptr);
    return to;
}

static void *moved(void *ptr, size_t keep, size_t size) { return move_into(pk_alloc(size), ptr, keep, size); }

_Static_assert(REALLOC_MAPPED_MIN == 32 * 1024 && REALLOC_MAPPED_LIVE_MAX == 16384,
               "alloc.h's pk_realloc, docs/alloc.md and docs/malloc.md name 32 KiB and 16,384");

/* Whether fewer than REALLOC_MAPPED_LIVE_MAX mapped blocks are live. */
static bool mapped_few(void) {
    large_stats ls;
    large_stats_get(&ls);
    return ls.blocks < REALLOC_MAPPED_LIVE_MAX;
}

static PK_NOINLINE void *realloc_any(void *ptr, size_t size) {
    if (!ptr) return pk_alloc(size);
    if (size == 0) { /* as glibc: freed, and NULL */
        pk_free(ptr);
        return NULL;
    }
    pk_pool *p = alloc_pool_of(ptr);
    /* A heap's block (heap.h) stays in its heap: a class block's pool
     * names it; a large block's set is asked only where the block would
     * leave it (large_resize keeps the set), not on every resize. */
    if (unlikely(alloc_is_heap(p))) return heap_realloc(p, ptr, size);
    if (unlikely(alloc_hardened())) { /* moved unless it grows in place (QUARANTINE, alloc_harden.c) */
        if (!p && large_set_of(ptr)) return heap_realloc(NULL, ptr, size);
        if (alloc_owns(p, ptr) && alloc_hard(p) ? hard_class_grow(p, ptr, size) : !p && large_grow_guarded(ptr, size))
            return ptr;
        size_t n = usable_or_report(ptr, p, "pk_realloc");
        /* Grown past its place: into a guarded block with room for half as
         * much again, so that a buffer grown a few bytes at a time moves
         * once per half again (alloc_large.c), where a move at every call
         * copied it whole each time. */
        if (size > n && size >= HARD_GUARDED_MIN) {
            void *to = hard_alloc(size, n + n / 2, 0, __builtin_return_address(0));
            return move_into(to, ptr, n, size);
        }
        /* Shrunk and still guarded: its pages move to the new block, where
         * a copy read and wrote them all. */
        if (!p && size < n && size >= HARD_GUARDED_MIN) {
            depth++;
            void *to = large_shrink_guarded(ptr, size, __builtin_return_address(0));
            leave();
            if (to) return to;
        }
        return moved(ptr, n, size);
    }
    if (likely(alloc_owns(p, ptr))) {
        /* In place only within the class, so pk_free_sized's size is always
         * the last one given: a shrink to another class moves too. Not the
         * block freed last (its class's list's head, as a free checks): a
         * stale pointer handed back would be live and free at once (a move
         * frees it, and that free reports it). */
        if (size <= PK_ALLOC_CLASS_MAX && class_pool_made(alloc_class_of(size)) == p) {
            if (unlikely(ptr == __atomic_load_n(&tc_slot_of(p)->head, __ATOMIC_RELAXED)))
                error_report(PK_FATAL, "double free", p->name, ptr,
                             "pk_realloc(%p, %zu): the block (pool '%s') was freed already", ptr, size,
                             pool_name(p));
            return ptr;
        }
        /* REALLOC_MAPPED_MIN and REALLOC_MAPPED_LIVE_MAX (policy.h) */
        if (size > p->size && size > REALLOC_MAPPED_MIN && (size > PK_ALLOC_CLASS_MAX || mapped_few())) {
            int saved = errno;
            void *to = large_from_library(size, 0, false);
            if (to || size > PK_ALLOC_CLASS_MAX) return move_into(to, ptr, p->size, size);
            /* no mapping to be had (the process's mappings at Linux's cap,
             * vm.max_map_count, say): a class holds it still, as glibc's
             * heap does */
            errno = saved;
        }
        return moved(ptr, p->size, size);
    }
    if (!p && size > REALLOC_MAPPED_MIN && !boot_owns(ptr)) { /* a mapped block stays one */
        if (large_serves(ptr, size, size <= PK_ALLOC_CLASS_MAX)) return ptr;
        bool mine;
        large_poll();
        int saved = errno;
        void *to = large_resize(ptr, size, size <= PK_ALLOC_CLASS_MAX, &mine);
        if (mine && (to || size > PK_ALLOC_CLASS_MAX)) return to;
        if (mine) errno = saved; /* no mapping to be had: a class, below */
    }
    size_t n = usable_or_report(ptr, p, "pk_realloc");
    if (!p && large_set_of(ptr)) return heap_realloc(NULL, ptr, size);
    return moved(ptr, n, size);
}

void *pk_realloc(void *ptr, size_t size) {
    /* A mapped block that stays within its mapping (a buffer grown a few
     * bytes at a time, policy.h GROW_ROOM_SHIFT) is answered first, with
     * no lock and no stack frame while it is one of the blocks this thread
     * found so last. Hardened blocks always move. */
    if (size > REALLOC_MAPPED_MIN && ptr && !alloc_hardened() && large_fits(ptr, size)) return ptr;
    return realloc_any(ptr, size);
}
