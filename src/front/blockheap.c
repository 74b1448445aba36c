/* pk_heap (heap.h): a private size-class front end whose blocks can all
 * be freed at once. "Heap" here is the user's heap of blocks of any size;
 * heap.c's heap is something else, a thread's cache of one pool.
 *
 * A heap is one class pool per size class, made on first use, as the
 * front end's own (alloc.c), and a set of its blocks over the last class
 * (alloc_large.c's large_set). Its pools carry POOL_SIZE_CLASS, so pk_free
 * and pk_usable_size take their objects as any class object, and
 * POOL_HEAP with the heap as the pool's arg, so a resize through pk_realloc
 * comes back here (through the resize this file registers with alloc.c,
 * which sits below it and calls nothing of it). They are regions
 * (PK_POOL_REGION): a destroy drops each slab whole without reading its
 * objects, and a reset (pool_region_reset) marks each one empty the same
 * way and keeps it for the next blocks, so freeing what is left costs the
 * heap's slabs and large blocks, not its blocks.
 *
 * Records come from a pool of the library's own (POOL_LIBRARY: what it
 * holds at exit is no leak of the program's). A destroyed debug heap's
 * record is kept (the last DEAD_KEPT of them) with its state DEAD and its
 * name, so a later call on it is reported rather than reading reused
 * memory.
 *
 * No lock: the record pool and a heap's class pools are published with a
 * compare-and-swap (a thread that loses the race destroys the pool it
 * made), the ring of dead records is taken a slot at a time with an atomic
 * exchange. A fork in the middle of either leaves nothing held.
 */
#include "front/alloc_internal.h"

#include <poolkit/heap.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define HEAP_LIVE 0x48454150u /* "HEAP" */
#define HEAP_DEAD 0x44454144u /* "DEAD" */
#define NAME_BYTES 41         /* heap.h: the name is cut at 40 bytes */
#define POOL_NAME_BYTES (NAME_BYTES + 8) /* the name, a space, the class's size */
_Static_assert(NAME_BYTES - 1 == 40, "heap.h states where a name is cut");

struct pk_heap {
    uint32_t state;
    unsigned flags;  /* PK_HEAP_* */
    bool debug;      /* PK_HEAP_DEBUG or POOLKIT_DEBUG=1 */
    pk_pool *pools[PK__ALLOC_CLASSES]; /* published with a compare-and-swap */
    large_set large;                   /* its blocks over PK_ALLOC_CLASS_MAX */
    char name[NAME_BYTES];
    /* Written with the heap's name, before any pool is made: threads that
     * race to make a class's pool only read it. */
    char pool_names[PK__ALLOC_CLASSES][POOL_NAME_BYTES];
};

/* Destroyed heaps kept, emptied, for the next ones (see "spare heaps"). */
#define SPARE_HEAPS 4

/* Destroyed debug heaps kept for the report of a later call. */
#define DEAD_KEPT 64
_Static_assert(DEAD_KEPT == 64, "heap.h states how many destroyed debug heaps are kept");
static pk_heap *dead[DEAD_KEPT];
static size_t dead_next;
static pk_pool *record_pool;

/* ---- checks ---- */

PK_COLD __attribute__((noreturn)) static void report_dead(const pk_heap *h, const char *call) {
    if (h->state == HEAP_DEAD)
        error_report(PK_FATAL, "heap used after destroy", h->name, h,
                     "%s(%p): heap '%s' was destroyed", call, (const void *)h, h->name);
    error_report(PK_FATAL, "foreign pointer", NULL, h, "%s(%p): not a heap pk_heap_create made", call,
                 (const void *)h);
    __builtin_unreachable();
}

static inline void check_live(const pk_heap *h, const char *call) {
    if (unlikely(h->state != HEAP_LIVE)) report_dead(h, call);
}

/* Debug mode: ptr must be h's block. A pointer that is no front-end block
 * at all is left to pk_free's report. */
PK_COLD static void check_owner(pk_heap *h, const void *ptr, const char *call) {
    pk_heap *o = pk_heap_of(ptr);
    size_t n;
    if (o == h || (!o && !alloc_is_class(alloc_pool_of(ptr)) && !large_usable(ptr, &n))) return;
    error_report(PK_FATAL, "wrong heap", h->name, ptr, "%s(heap '%s', %p): the block is %s%s%s", call, h->name,
                 ptr, o ? "of heap '" : "pk_alloc's", o ? o->name : "", o ? "'" : "");
}

/* ---- pools ---- */

static pk_pool *pool_made(pk_heap *h, size_t ci) { return __atomic_load_n(&h->pools[ci], __ATOMIC_ACQUIRE); }

/* "NAME SIZE" into class ci's name, by hand: snprintf over every class
 * cost more than making the heap's record. */
static void pool_name_write(pk_heap *h, size_t ci) {
    char *out = h->pool_names[ci];
    size_t n = strlen(h->name);
    memcpy(out, h->name, n);
    out[n++] = ' ';
    char digits[24];
    size_t k = 0;
    for (size_t v = alloc_class_size(ci); v; v /= 10) digits[k++] = (char)('0' + v % 10);
    while (k) out[n++] = digits[--k];
    out[n] = '\0';
}
_Static_assert(POOL_NAME_BYTES >= NAME_BYTES + 1 + 6, "the name, a space and a class's size (at most 6 digits)");

/* The pool made for h's class ci, or the one another thread published
 * first; NULL with errno ENOMEM. */
static PK_NOINLINE pk_pool *pool_make(pk_heap *h, size_t ci) {
    pk_pool_config c;
    memset(&c, 0, sizeof c);
    c.name = h->pool_names[ci];
    c.size = alloc_class_size(ci);
    c.arg = h;
    c.flags = POOL_SIZE_CLASS | POOL_HEAP | PK_POOL_REGION | ((h->flags & PK_HEAP_DEBUG) ? PK_POOL_DEBUG : 0);
    pk_pool *p = alloc_pool_create(&c);
    if (!p) {
        errno = ENOMEM;
        return NULL;
    }
    pk_pool *was = NULL;
    if (__atomic_compare_exchange_n(&h->pools[ci], &was, p, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return p;
    alloc_pool_destroy(p);
    return was;
}

/* pk_realloc's way to a heap's block (alloc.c calls nothing of this
 * file's): p, the heap's class pool holding ptr, names the heap; a large
 * block's set does (pk_heap_of). */
static void *resize_in_heap(const pk_pool *p, void *ptr, size_t size) {
    return pk_heap_realloc(p ? p->arg : pk_heap_of(ptr), ptr, size);
}

/* The pool of heap records, made on first use, before the first heap: the
 * resize is registered with it, so that pk_realloc has it before any block
 * is a heap's. */
static pk_pool *records(void) {
    pk_pool *p = __atomic_load_n(&record_pool, __ATOMIC_ACQUIRE);
    if (likely(p != NULL)) return p;
    alloc_heap_resize_with(resize_in_heap);
    pk_pool_config c;
    memset(&c, 0, sizeof c);
    c.name = "pk_heap records";
    c.size = sizeof(pk_heap);
    c.flags = POOL_LIBRARY;
    pk_pool *made = alloc_pool_create(&c);
    if (!made) return NULL;
    if (__atomic_compare_exchange_n(&record_pool, &p, made, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return made;
    alloc_pool_destroy(made);
    return p;
}

static inline void *class_alloc(pk_heap *h, size_t ci, void *caller) {
    pk_pool *p = pool_made(h, ci);
    if (unlikely(!p) && !(p = pool_make(h, ci))) return NULL;
    return alloc_from_pool(p, caller);
}

/* Every block of h freed: with keep, its pools kept with their slabs,
 * empty, for the next blocks (pool_region_reset), a pool that cannot be so
 * reset (debug mode, a tool build) destroyed and made again on use;
 * without, every pool destroyed whole. Its large blocks freed. The heap
 * must be quiet. */
static void free_all(pk_heap *h, bool keep) {
    for (size_t ci = 0; ci < PK__ALLOC_CLASSES; ci++) {
        pk_pool *p = h->pools[ci];
        if (!p || (keep && pool_region_reset(p))) continue;
        __atomic_store_n(&h->pools[ci], NULL, __ATOMIC_RELAXED);
        alloc_pool_destroy(p);
    }
    large_free_set(&h->large);
}

/* ---- create and destroy ---- */

/* ---- spare heaps ---- */

/* A destroyed heap's record, with its pools and their slabs emptied as a
 * reset leaves them, waits here for the next pk_heap_create: a heap per
 * request then costs what a reset costs, not a pool made and destroyed per
 * class it uses. The slabs go back to the system after the purge delay, as
 * any pool's empty ones, but for the current one and a spare of each class
 * that a destroying thread, the heap's only user, keeps in its cache
 * (pool_region_reset); pk_collect(1) in that thread gives them all back at
 * once. Debug heaps are never kept (their records are, dead: see
 * DEAD_KEPT). */
static pk_heap *spare[SPARE_HEAPS];

/* The spares are a stack, as near as a table without a lock allows: a put
 * takes the lowest free place, a take the highest held one, so the heap
 * destroyed last comes back first and each record keeps serving heaps of
 * one kind. A record's pools keep empty slabs for the purge delay, sized
 * for the heap that last used it: taken from the lowest place, a program's
 * one big heap and its small per-request ones traded records every round,
 * and every record's pools came to hold a big heap's slabs. A race leaves
 * a hole at worst, which the next take from the top closes. */
static pk_heap *spare_take(void) {
    for (size_t i = SPARE_HEAPS; i-- > 0;) {
        if (!__atomic_load_n(&spare[i], __ATOMIC_RELAXED)) continue;
        pk_heap *h = __atomic_exchange_n(&spare[i], NULL, __ATOMIC_ACQ_REL);
        if (h) return h;
    }
    return NULL;
}

/* Whether a spare's place is free now (a hint: spare_put may still lose
 * it to another thread). */
static bool spare_room(void) {
    for (size_t i = 0; i < SPARE_HEAPS; i++)
        if (!__atomic_load_n(&spare[i], __ATOMIC_RELAXED)) return true;
    return false;
}

static bool spare_put(pk_heap *h) {
    for (size_t i = 0; i < SPARE_HEAPS; i++) {
        pk_heap *none = NULL;
        if (__atomic_compare_exchange_n(&spare[i], &none, h, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            return true;
    }
    return false;
}

/* The heap's name, and its pools' after it. A spare heap's are written
 * again only when the name differs (a heap per request usually keeps one
 * name), while no call uses the heap. */
static void name_heap(pk_heap *h, const char *name) {
    size_t n = strnlen(name, sizeof h->name - 1);
    memcpy(h->name, name, n);
    h->name[n] = '\0';
    for (size_t ci = 0; ci < PK__ALLOC_CLASSES; ci++) pool_name_write(h, ci);
}

pk_heap *pk_heap_create_ex(const char *name, unsigned flags) {
    if (flags & ~(unsigned)(PK_HEAP_WHOLE | PK_HEAP_DEBUG)) {
        errno = EINVAL;
        return NULL;
    }
    if (!name) name = "pk_heap";
    bool debug = (flags & PK_HEAP_DEBUG) || options_debug();
    pk_heap *h = debug ? NULL : spare_take();
    if (h) {
        h->flags = flags;
        if (strncmp(h->name, name, sizeof h->name - 1) != 0) name_heap(h, name);
        __atomic_store_n(&h->state, HEAP_LIVE, __ATOMIC_RELEASE);
        return h;
    }
    /* Not zeroed whole: pool_names is written as pools are made. */
    pk_pool *rp = records();
    h = rp ? alloc_from_pool(rp, __builtin_return_address(0)) : NULL;
    if (!h) {
        errno = ENOMEM;
        return NULL;
    }
    memset(h, 0, offsetof(pk_heap, pool_names));
    h->flags = flags;
    h->debug = debug;
    name_heap(h, name);
    h->state = HEAP_LIVE;
    return h;
}

pk_heap *pk_heap_create(const char *name) { return pk_heap_create_ex(name, 0); }

static void report_left(pk_heap *h) {
    pk_heap_stats st;
    pk_heap_stats_get(h, &st);
    if (st.blocks)
        error_report(PK_WARNING, "leak", h->name, NULL, "heap '%s' destroyed with %zu live block%s (%zu bytes)",
                     h->name, st.blocks, st.blocks == 1 ? "" : "s", st.bytes);
}

void pk_heap_destroy(pk_heap *h) {
    if (!h) return;
    check_live(h, "pk_heap_destroy");
    if (h->debug && !(h->flags & PK_HEAP_WHOLE)) report_left(h);
    h->state = HEAP_DEAD;
    /* Kept for the next heap when there is room; else (or when another
     * thread took the room meanwhile) its pools go whole. */
    if (!h->debug && spare_room()) {
        free_all(h, true);
        if (spare_put(h)) return;
    }
    free_all(h, false);
    if (h->debug) { /* kept; the oldest kept goes */
        size_t at = __atomic_fetch_add(&dead_next, 1, __ATOMIC_RELAXED) % DEAD_KEPT;
        h = __atomic_exchange_n(&dead[at], h, __ATOMIC_ACQ_REL);
    }
    if (h) pk_pool_free(record_pool, h);
}

void pk_heap_reset(pk_heap *h) {
    check_live(h, "pk_heap_reset");
    free_all(h, true);
}

/* ---- allocation ---- */

void *pk_heap_alloc(pk_heap *h, size_t size) {
    check_live(h, "pk_heap_alloc");
    if (likely(size <= PK_ALLOC_CLASS_MAX)) return class_alloc(h, alloc_class_of(size), __builtin_return_address(0));
    return alloc_large_in(&h->large, size, 0, false);
}

void *pk_heap_calloc(pk_heap *h, size_t n, size_t size) {
    size_t total;
    check_live(h, "pk_heap_calloc");
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    if (total > PK_ALLOC_CLASS_MAX) return alloc_large_in(&h->large, total, 0, true); /* fresh pages */
    void *obj = class_alloc(h, alloc_class_of(total), __builtin_return_address(0));
    if (obj) memset(obj, 0, total);
    return obj;
}

void *pk_heap_zalloc(pk_heap *h, size_t size) { return pk_heap_calloc(h, 1, size); }

void *pk_heap_aligned_alloc(pk_heap *h, size_t align, size_t size) {
    check_live(h, "pk_heap_aligned_alloc");
    if (!is_pow2(align)) {
        errno = EINVAL;
        return NULL;
    }
    size_t want = size < align ? align : size;
    if (align <= SLAB_BYTES && want <= PK_ALLOC_CLASS_MAX) {
        size_t ci = alloc_class_aligned(alloc_class_of(want), align);
        pk_pool *p = ci < PK__ALLOC_CLASSES ? pool_made(h, ci) : NULL;
        if (ci < PK__ALLOC_CLASSES && !p) p = pool_make(h, ci);
        if (p && alloc_pool_aligns(p, align)) return alloc_from_pool(p, __builtin_return_address(0));
    }
    return alloc_large_in(&h->large, size, align, false);
}

/* ---- free and resize ---- */

void pk_heap_free(pk_heap *h, void *ptr) {
    check_live(h, "pk_heap_free");
    if (unlikely(h->debug) && ptr) check_owner(h, ptr, "pk_heap_free");
    pk_free(ptr);
}

/* A new block of h of size bytes with ptr's first `keep` bytes, ptr freed. */
static void *moved(pk_heap *h, void *ptr, size_t keep, size_t size) {
    void *to = pk_heap_alloc(h, size);
    if (!to) return NULL;
    memcpy(to, ptr, keep < size ? keep : size);
    pk_free(ptr);
    return to;
}

void *pk_heap_realloc(pk_heap *h, void *ptr, size_t size) {
    check_live(h, "pk_heap_realloc");
    if (!ptr) return pk_heap_alloc(h, size);
    if (unlikely(h->debug)) check_owner(h, ptr, "pk_heap_realloc");
    if (size == 0) {
        pk_free(ptr);
        return NULL;
    }
    pk_pool *p = alloc_pool_of(ptr);
    if (alloc_owns(p, ptr)) {
        if (size <= PK_ALLOC_CLASS_MAX && alloc_class_size(alloc_class_of(size)) == p->size) return ptr;
        return moved(h, ptr, p->size, size);
    }
    size_t n = pk_usable_size(ptr); /* reports a foreign pointer */
    if (size > PK_ALLOC_CLASS_MAX) return large_realloc(ptr, size); /* its set comes with it */
    return moved(h, ptr, n, size);
}

/* ---- lookups and stats ---- */

pk_heap *pk_heap_of(const void *ptr) {
    if (!ptr) return NULL;
    pk_pool *p = alloc_pool_of(ptr);
    if (p) return alloc_is_heap(p) && alloc_owns(p, ptr) ? p->arg : NULL;
    large_set *set = large_set_of(ptr);
    return set ? (pk_heap *)((char *)set - offsetof(pk_heap, large)) : NULL;
}

void pk_heap_stats_get(pk_heap *h, pk_heap_stats *out) {
    check_live(h, "pk_heap_stats_get");
    memset(out, 0, sizeof *out);
    out->name = h->name;
    for (size_t ci = 0; ci < PK__ALLOC_CLASSES; ci++) {
        pk_pool *p = pool_made(h, ci);
        if (!p) continue;
        pk_pool_stats ps;
        pk_pool_stats_get(p, &ps);
        out->pools++;
        out->blocks += ps.live;
        out->bytes += ps.live * ps.size;
        out->slabs += ps.slabs;
        out->bytes_reserved += ps.bytes_reserved;
    }
    large_set_count(&h->large, &out->large_blocks, &out->large_bytes);
    out->blocks += out->large_blocks;
    out->bytes += out->large_bytes;
    out->bytes_reserved += out->large_bytes;
}
