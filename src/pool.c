/* Pools: creation, the out-of-line paths behind the inline fast paths, and
 * the calls that look at a whole pool (stats, visit, trim, destroy); the
 * list of live pools, which purge ticks and fork handlers walk.
 *
 * Which path a pool takes is decided once, at creation:
 *   - inline: thread caches, the link word at offset 0, nothing to do per
 *     object. tc_key names the pool's cache, so the header's inline
 *     functions serve most calls.
 *   - hardened: thread caches with encoded links; tc_key is TC_NO_KEY, so
 *     every call comes here, to a lean path that decodes and checks each
 *     link and freed pointer against the slab of the list's head without
 *     the address map (hard_near), and takes the generic path below for
 *     anything else.
 *   - cached: thread caches, but something per object (a construct hook keeps
 *     the link word past the object, zeroing): tc_key is TC_NO_KEY, so every
 *     call comes here and uses the cache.
 *   - direct: no cache (debug checks, a limit): every call takes the pool's
 *     lock and works on the slabs.
 */
#include "pool_internal.h"
#include "sites.h"

#include <poolkit/stats.h>

#include <errno.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEBUG_REDZONE 16

static const char *pool_name(const pk_pool *p) { return p->name ? p->name : "(unnamed)"; }

/* The alignment a pool gives when its config asks for none: the largest
 * power of two dividing the size, up to 4096, so that a power-of-two size
 * up to 4 KiB is aligned to itself (a 64-byte object fills one cache line
 * and shares it with no neighbour) at no cost, since such a slot is already
 * a multiple of it. A pool with hooks keeps a link word past each object
 * (layout): rounding that slot up to a large alignment would cost up to
 * twice the memory, so it keeps alignof(max_align_t) at most. */
static size_t natural_align(size_t size, bool hooks) {
    size_t a = size & -size; /* largest power of two dividing size */
    size_t most = hooks ? alignof(max_align_t) : SLOT_ALIGN_MAX;
    return a > most ? most : a;
}

static uintptr_t make_secret(const void *p) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uintptr_t x = (uintptr_t)p ^ ((uintptr_t)ts.tv_nsec << 17) ^ (uintptr_t)ts.tv_sec;
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; /* mix */
    return x | 1;
}

static bool layout(pk_pool *p, const pk_pool_config *c) {
    bool hooks = c->construct || c->destruct;
    size_t slot;
    if (c->size > SIZE_MAX / 2) return false; /* before the sums below can wrap */
    if (p->debug) {
        p->redzone = DEBUG_REDZONE;
        p->link_off = align_up(c->size + DEBUG_REDZONE, sizeof(uintptr_t));
        slot = p->link_off + sizeof(uintptr_t);
    } else if (hooks) {
        p->link_off = align_up(c->size, sizeof(uintptr_t)); /* keep the constructed state */
        slot = p->link_off + sizeof(uintptr_t);
    } else {
        slot = c->size < sizeof(uintptr_t) ? sizeof(uintptr_t) : c->size;
    }
    size_t a = p->align < sizeof(uintptr_t) ? sizeof(uintptr_t) : p->align;
    if (slot > SIZE_MAX / 2) return false;
    if (!slab_geometry_for(align_up(slot, a), p->align, p->debug, (c->flags & PK_POOL_GUARD) != 0, &p->geo))
        return false;
    if (p->debug) p->geo.site_words = SITE_KINDS * sites_frames();
    return true;
}

static void choose_path(pk_pool *p) {
    p->tc_table = tcache_table_off();
    p->tc_key = TC_NO_KEY;
    p->cached = !p->debug && !p->limit && tcache_attach(p);
    if (!p->cached) {
        note_once(NOTE_LOCKED_POOL, p->name, "pool '%s' takes its lock on every call: %s",
                  pool_name(p), p->debug ? "debug checks" : p->limit ? "a limit"
                                                      : "every thread-cache key is in use");
        return;
    }
    /* About BATCH_BYTES per exchange, but at least BATCH_MIN objects up to
     * 1 MiB: a cache of a few objects would send a workload that wanders
     * (allocate a few, free a few) to the lock on most calls. */
    size_t batch = BATCH_BYTES / p->geo.slot;
    size_t least = p->geo.slot <= ((size_t)1 << 20) ? BATCH_MIN : 1;
    p->batch = batch < least ? least : batch > BATCH_MAX ? BATCH_MAX : batch;
    /* The lean hardened path's checks need a slab's slots to span less
     * than 4 GiB (hard_near); larger slots take the generic path. */
    uint64_t span = (uint64_t)p->geo.capacity * p->geo.slot;
    if (p->hardened && !p->zero && !TRACK_ENABLED && span < ((uint64_t)1 << 32)) {
        p->hard.cache = p->key * sizeof(tc_slot);
        p->hard.mask = p->geo.slab_align - 1;
        p->hard.header = p->geo.header;
        p->hard.recip = p->geo.recip;
        p->hard.span = (uint32_t)span;
        p->hard.link = (uint32_t)p->link_off;
    }
#ifdef PK__HAVE_INLINE
    bool plain = p->link_off == 0 && !p->zero && !p->hardened;
    if (plain && !TRACK_ENABLED) p->tc_key = p->key * sizeof(tc_slot);
#endif
}

/* Live pools, for purge ticks and the fork handlers. */
static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static pk_pool *pools;

static void pools_add(pk_pool *p) {
    pthread_mutex_lock(&pools_lock);
    fork_test_point(HOOK_POOL_LIST, &pools_lock);
    p->prev = NULL;
    p->next = pools;
    if (pools) pools->prev = p;
    pools = p;
    pthread_mutex_unlock(&pools_lock);
}

static void pools_remove(pk_pool *p) {
    pthread_mutex_lock(&pools_lock);
    if (p->prev) p->prev->next = p->next;
    else pools = p->next;
    if (p->next) p->next->prev = p->prev;
    pthread_mutex_unlock(&pools_lock);
}

/* Ticks every shared pool that is not busy (a busy pool ticks on its own
 * calls). PK_POOL_LOCAL pools belong to one thread and tick only on its
 * calls. */
bool pools_purge_sweep(uint64_t now) {
    if (pthread_mutex_trylock(&pools_lock) != 0) return false;
    for (pk_pool *p = pools; p; p = p->next) {
        if (!p->locked || !pool_trylock(p)) continue;
        central_maybe_tick(p, now);
        pool_unlock(p);
    }
    pthread_mutex_unlock(&pools_lock);
    return true;
}

/* Pool records of destroyed pools, kept for the next create (bounded), so
 * that a pool per request or per tree costs no system call. A spare record
 * keeps its first two words (the table offset, TC_NO_KEY) and is marked
 * POOL_DEAD, so a stale pointer's inline calls reach the slow paths, which
 * report it (pool_check_live) until the record is reused: spares are linked
 * through next, never through the words the inline paths read. */
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static pk_pool *spare_records;
static size_t spare_count;

/* Debug pools' records are held back from reuse (a FIFO, like ASan's
 * quarantine of freed memory) for the next QUARANTINE_RECORDS debug pools
 * destroyed, so that a debug pool used after its destroy is reported rather
 * than served by whichever pool got its record. Under spare_lock. */
static pk_pool *quarantine[QUARANTINE_RECORDS];
static size_t quarantine_next;

static size_t record_bytes(void) { return align_up(sizeof(pk_pool), os_page_size()); }

static pk_pool *record_get(void) {
    pthread_mutex_lock(&spare_lock);
    fork_test_point(HOOK_POOL_RECORDS, &spare_lock);
    pk_pool *p = spare_records;
    if (p) {
        spare_records = p->next;
        spare_count--;
    }
    pthread_mutex_unlock(&spare_lock);
    if (!p) return os_map(record_bytes(), 0);
    memset(p, 0, sizeof *p);
    return p;
}

static void record_put(pk_pool *p) {
    pthread_mutex_lock(&spare_lock);
    bool keep = !TRACK_ENABLED && spare_count < SPARE_RECORDS_MAX;
    if (keep) {
        p->next = spare_records;
        spare_records = p;
        spare_count++;
    }
    pthread_mutex_unlock(&spare_lock);
    if (!keep) os_unmap(p, record_bytes());
}

/* A destroyed pool's record: a debug pool's waits in the quarantine and
 * pushes out the oldest there; the others go straight to the spares. */
static void record_retire(pk_pool *p) {
    if (p->debug) {
        pthread_mutex_lock(&spare_lock);
        pk_pool *oldest = quarantine[quarantine_next];
        quarantine[quarantine_next] = p;
        quarantine_next = (quarantine_next + 1) % QUARANTINE_RECORDS;
        pthread_mutex_unlock(&spare_lock);
        if (!oldest) return;
        p = oldest;
    }
    record_put(p);
}

void pool_report_dead(const pk_pool *p, const char *call, const void *obj) {
    char given[48] = "";
    if (obj) snprintf(given, sizeof given, " given %p", obj);
    error_report(PK_FATAL, "pool used after destroy", p->dead_name, p,
                 "%s%s on pool '%s' (%p), which was destroyed", call, given, p->dead_name,
                 (const void *)p);
    abort(); /* error_report never returns from a fatal report */
}

void pools_fork_lock_list(void) { pthread_mutex_lock(&pools_lock); }

void pools_fork_lock_each(void) {
    for (pk_pool *p = pools; p; p = p->next) pool_lock(p);
    pthread_mutex_lock(&spare_lock);
}

void pools_fork_unlock(void) {
    pthread_mutex_unlock(&spare_lock);
    for (pk_pool *p = pools; p; p = p->next) pool_unlock(p);
    pthread_mutex_unlock(&pools_lock);
}

/* The program asked for its memory back: the quarantined debug records go
 * too (a stale debug pool pointer then faults instead of being reported). */
size_t pk_pool_release_cache(void) {
    pthread_mutex_lock(&spare_lock);
    pk_pool *p = spare_records;
    size_t bytes = spare_count * record_bytes();
    spare_records = NULL;
    spare_count = 0;
    for (size_t i = 0; i < QUARANTINE_RECORDS; i++) {
        if (!quarantine[i]) continue;
        quarantine[i]->next = p;
        p = quarantine[i];
        quarantine[i] = NULL;
        bytes += record_bytes();
    }
    pthread_mutex_unlock(&spare_lock);
    while (p) {
        pk_pool *next = p->next;
        os_unmap(p, record_bytes());
        p = next;
    }
    return bytes + os_retain_release();
}

pk_pool *pk_pool_create(const pk_pool_config *c) {
    const unsigned known = PK_POOL_ZERO | PK_POOL_LOCAL | PK_POOL_DEBUG | PK_POOL_HARDENED |
                           PK_POOL_REGION | PK_POOL_GUARD | POOL_KEEPS_HEADER | POOL_LIBRARY;
    if (!c || c->size == 0 || (c->flags & ~known) || (c->flags & PK_POOL_ZERO && c->construct) ||
        (c->align && (!is_pow2(c->align) || c->align > 4096))) {
        errno = EINVAL;
        return NULL;
    }
    fork_handlers_install();
    stats_at_exit_install();
    uint64_t now = pool_purge_poll();
    pk_pool *p = record_get();
    if (!p) return NULL;
    p->used_ms = now;
    p->name = c->name;
    p->size = c->size;
    p->align = c->align ? c->align : natural_align(c->size, c->construct || c->destruct);
    p->flags = c->flags;
    p->locked = !(c->flags & PK_POOL_LOCAL);
    p->debug = (c->flags & PK_POOL_DEBUG) || options_debug();
    p->hardened = (c->flags & PK_POOL_HARDENED) || options_hardened();
    if ((c->flags & POOL_KEEPS_HEADER) && c->size > POOL_HEADER_BYTES) p->fill_from = POOL_HEADER_BYTES;
    p->zero = (c->flags & PK_POOL_ZERO) != 0;
    p->construct = c->construct;
    p->destruct = c->destruct;
    p->arg = c->arg;
    p->limit = c->limit;
    memset(&p->hard, 0, sizeof p->hard);
    p->hard.secret = make_secret(p);
    p->rng = (uint64_t)p->hard.secret * 0x9E3779B97F4A7C15ull | 1;
    p->batch = 1;
    if (!layout(p, c)) {
        record_put(p);
        errno = EINVAL;
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    choose_path(p);
    p->state = POOL_LIVE;
    pools_add(p);
    if (c->reserve && pk_pool_reserve(p, c->reserve) < c->reserve) {
        pk_pool_destroy(p);
        errno = ENOMEM;
        return NULL;
    }
    return p;
}

static void each_live(pk_pool *p, void (*fn)(void *obj, void *arg), void *arg);
static void untrack(void *obj, void *pool) { track_takeback(pool, obj); }

/* The first few leaked objects of a debug pool come with where they were
 * allocated; then addresses alone, as many as fit. */
#define LEAKS_WITH_SITES 4

void pool_each_live_debug(pk_pool *p, bool (*fn)(void *obj, void *const *sites, void *arg), void *arg) {
    if (!p->debug) return;
    pool_lock(p);
    for (int l = 0; l < SLAB_LISTS; l++)
        for (slab *s = p->lists[l].head; s; s = s->next)
            for (uint32_t i = 0; i < s->bump; i++)
                if ((s->live_bits[i / 64] & ((uint64_t)1 << (i % 64))) &&
                    !fn(s->objects + (size_t)i * p->geo.slot, s->sites ? s->sites + i * p->geo.site_words : NULL,
                        arg))
                    goto done;
done:
    pool_unlock(p);
}

typedef struct leak_text {
    char buf[2800];
    size_t used, shown;
} leak_text;

static bool add_leak(void *obj, void *const *sites, void *arg) {
    leak_text *t = arg;
    char where[SITES_TEXT];
    const char *sep = t->shown++ ? " " : ": ";
    size_t room = sizeof t->buf - t->used;
    int w;
    if (sites && t->shown <= LEAKS_WITH_SITES)
        w = snprintf(t->buf + t->used, room, "%s%p (%s)", sep, obj, sites_format(where, sizeof where, sites));
    else
        w = snprintf(t->buf + t->used, room, "%s%p", sep, obj);
    if (w < 0 || (size_t)w >= room) {
        t->buf[t->used] = '\0'; /* no half entries */
        return false;
    }
    t->used += (size_t)w;
    return t->used + 24 < sizeof t->buf;
}

static void report_leaks(pk_pool *p, size_t live) {
    leak_text t = {.buf = "", .used = 0, .shown = 0};
    pool_each_live_debug(p, add_leak, &t);
    error_report(PK_WARNING, "leak", p->name, NULL, "pool '%s' destroyed with %zu live object%s%s",
                 pool_name(p), live, live == 1 ? "" : "s", t.buf);
}

void pk_pool_destroy(pk_pool *p) {
    if (!p) return;
    pool_check_live(p, "pk_pool_destroy", NULL);
    pool_purge_poll();
    pools_remove(p); /* first: no purge sweep can reach the pool after this */
    tcache_registry_lock();
    pool_lock(p);
    size_t live = p->out - p->depot_count * p->batch - tcache_cached(p);
    if (p->hardened || TRACK_ENABLED) {
        /* Every free object goes home through the checks, so a forged link
         * is reported here rather than forgotten with the memory, and tool
         * builds can tell which objects are still live. */
        tcache_drain_all(p);
        central_depot_drain(p);
    }
    pool_unlock(p);
    if (p->cached) tcache_detach(p);
    tcache_registry_unlock();
    if (live && !(p->flags & PK_POOL_REGION)) report_leaks(p, live);
    /* The objects die with the pool: a tool must not report them later, or
     * see their addresses handed out again while it still thinks them live
     * (poolkit reported any leak above). */
    if (TRACK_ENABLED) each_live(p, untrack, p);
    pool_lock(p);
    central_free_all(p);
    pool_unlock(p);
    pthread_mutex_destroy(&p->lock);
    /* Dead from here on: with no cache key (tcache_detach), the inline
     * paths go slow and the slow paths to the direct ones, which check. */
    snprintf(p->dead_name, sizeof p->dead_name, "%s", pool_name(p));
    p->state = POOL_DEAD;
    record_retire(p);
}

/* ---- The slow paths behind pk_pool_alloc and pk_pool_free. ---- */

static void *direct_alloc(pk_pool *p, uint64_t now) {
    pool_check_live(p, "pk_pool_alloc", NULL);
    void *obj = NULL;
    pool_lock_for_use(p, now);
    if (p->limit && p->out >= p->limit) errno = ENOMEM;
    else central_take(p, 1, &obj, false);
    central_maybe_tick(p, now);
    pool_unlock(p);
    if (!obj) return NULL;
    track_handout(p, obj);
    if (p->zero) memset(obj, 0, p->size);
    return obj;
}

static void direct_free(pk_pool *p, void *obj, uint64_t now) {
    pool_check_live(p, "pk_pool_free", obj);
    if (unlikely(!obj))
        error_report(PK_FATAL, "null pointer", p->name, obj, "NULL given to pool '%s'", pool_name(p));
    track_takeback(p, obj);
    pool_lock_for_use(p, now);
    if (p->debug) central_debug_check_free(p, obj);
    central_give(p, obj);
    p->frees++;
    central_maybe_tick(p, now);
    pool_unlock(p);
}

/* Hardened pools: the link about to be followed must name a slot of this
 * pool, or the list was overwritten. */
static PK_NOINLINE char *check_link(pk_pool *p, void *obj, char *n) {
    if (slab_owner(n) == p) return n;
    report_corrupted_link(p, obj, n, "not one of its objects");
}

static inline char *checked_next(pk_pool *p, void *obj) {
    char *n = (char *)link_load(p, obj);
    return unlikely(p->hardened && n) ? check_link(p, obj, n) : n;
}

/* Hardened pools' lean paths (below) check that a pointer x starts a slot
 * of the pool. hard_grid: off (from slot 0 of x's slab) is on the slot grid,
 * by a multiply: for off < 2^32, off is a multiple of the slot exactly when
 * off * ceil(2^64 / slot) wraps below ceil(2^64 / slot). hard_near, without
 * the address map: x lies in the same slab as `near`, a slot already known
 * to be the pool's, on the grid. False sends the caller on to the exact
 * check, never to a report. */
static inline bool hard_grid(const pk_pool *p, uintptr_t off) {
    return off < p->hard.span && off * p->hard.recip < p->hard.recip;
}

static inline bool hard_near(const pk_pool *p, uintptr_t x, uintptr_t near) {
    return (x ^ near) <= p->hard.mask && hard_grid(p, (x & p->hard.mask) - p->hard.header);
}

/* x in another slab: the address map says whose slab it is and where its
 * slot 0 is (every slab of a pool has the pool's geometry, so the grid
 * check is the same). */
static inline bool hard_far(const pk_pool *p, uintptr_t x) {
    uintptr_t objects = 0;
    return slab_map_pool((const void *)x, &objects) == p && hard_grid(p, x - objects);
}

static PK_NOINLINE void *alloc_generic(pk_pool *p);

/* Debug pools: the call site first (sites.h), apart from the entry points
 * so that they need no stack frame of their own for it. */
static PK_NOINLINE void *alloc_captured(pk_pool *p, void *caller) {
    sites_capture(caller);
    return alloc_generic(p);
}

static PK_NOINLINE void free_captured(pk_pool *p, void *obj, void *caller) {
    sites_capture(caller);
    pool_free_generic(p, obj);
}
static PK_NOINLINE void *alloc_far_link(pk_pool *p, tc_slot *c, char *obj, char *next);

/* Kept apart from the generic path, so the lean path pays for no registers
 * the generic one needs. */
void *pk__pool_alloc_slow(pk_pool *p) {
    if (p->hard.cache) {
        /* Every object on a hardened list was checked on its way in; its
         * link, in the object's memory, is decoded and checked before the
         * list follows it. */
        tc_slot *c = (tc_slot *)((char *)tc_table + p->hard.cache);
        char *obj = tc_head(c);
        if (likely(obj != NULL)) {
            char *next = (char *)link_code(p, obj, *(uintptr_t *)(obj + p->hard.link));
            if (unlikely(next && !hard_near(p, (uintptr_t)next, (uintptr_t)obj)))
                return alloc_far_link(p, c, obj, next);
            tc_set(c, next, tc_room(c) + 1);
            return obj;
        }
    }
    if (unlikely(p->debug)) return alloc_captured(p, __builtin_return_address(0));
    return alloc_generic(p);
}

/* A hardened list's link into another slab: checked against the address
 * map (a tail call, so the lean path above needs no stack frame). */
static PK_NOINLINE void *alloc_far_link(pk_pool *p, tc_slot *c, char *obj, char *next) {
    if (unlikely(!hard_far(p, (uintptr_t)next))) next = check_link(p, obj, next); /* reports it */
    tc_set(c, next, tc_room(c) + 1);
    return obj;
}

static void *alloc_generic(pk_pool *p) {
    tc_slot *c = p->cached ? tcache_slot(p) : NULL;
    if (!c) return direct_alloc(p, pool_purge_poll());
    if (!tc_head(c)) tc_take_spare(c);
    char *obj = tc_head(c);
    intptr_t room = tc_room(c);
    if (!obj) {
        uint64_t now = pool_purge_poll();
        void *list = NULL;
        pool_lock_for_use(p, now);
        size_t got = central_take(p, p->batch, &list, false);
        tcache_account(p, c, (long)got);
        central_maybe_tick(p, now);
        pool_unlock(p);
        if (!got) return NULL;
        obj = list;
        room = (intptr_t)(p->batch - got);
    }
    tc_set(c, checked_next(p, obj), room + 1);
    track_handout(p, obj);
    if (p->zero) memset(obj, 0, p->size);
    return obj;
}

/* A full list becomes the spare batch; a spare already there goes to the
 * depot first. */
static void retire_list(pk_pool *p, tc_slot *c) {
    void *spare = tc_spare(c);
    if (spare) {
        uint64_t now = pool_purge_poll();
        pool_lock_for_use(p, now);
        tcache_account(p, c, -(long)p->batch);
        central_depot_put(p, spare);
        central_maybe_tick(p, now);
        pool_unlock(p);
    }
    tc_set_spare(c, tc_head(c));
    tc_set(c, NULL, (intptr_t)p->batch);
}

void pool_free_generic(pk_pool *p, void *obj) {
    tc_slot *c = p->cached && obj ? tcache_slot(p) : NULL;
    if (!c) {
        uint64_t now = pool_purge_poll();
        direct_free(p, obj, now);
        return;
    }
    central_check_free(p, obj);
    if (unlikely(obj == tc_head(c)))
        error_report(PK_FATAL, "double free", p->name, obj, "object %p of pool '%s' was freed twice",
                     obj, pool_name(p));
    track_takeback(p, obj);
    if (tc_room(c) <= 0) retire_list(p, c);
    link_store(p, obj, (uintptr_t)tc_head(c));
    tc_set(c, obj, tc_room(c) - 1);
}

/* Pushes a checked obj onto a hardened list whose head and room the caller
 * read. */
static inline void hard_push(const pk_pool *p, tc_slot *c, void *obj, void *head, intptr_t room) {
    *(uintptr_t *)((char *)obj + p->hard.link) = link_code(p, obj, (uintptr_t)head);
    tc_set(c, obj, room - 1);
}

/* A hardened free into a slab other than the list head's: the address map
 * says whether it is one of the pool's slots (a tail call, so the lean path
 * needs no stack frame). */
static PK_NOINLINE void free_far(pk_pool *p, tc_slot *c, void *obj) {
    if (!hard_far(p, (uintptr_t)obj)) {
        pool_free_generic(p, obj); /* reports it */
        return;
    }
    hard_push(p, c, obj, tc_head(c), tc_room(c));
}

void pk__pool_free_slow(pk_pool *p, void *obj) {
    if (p->hard.cache) {
        /* The list's head is a checked slot of the pool: an object in its
         * slab, on a slot boundary, is one too; anything else (another slab,
         * an empty list) is looked up in the address map, and what fails
         * there (a foreign pointer) takes the generic path, which reports
         * it, as it does the head freed again and a full list. */
        tc_slot *c = (tc_slot *)((char *)tc_table + p->hard.cache);
        char *head = tc_head(c);
        intptr_t room = tc_room(c);
        if (likely(room > 0 && obj != head)) {
            if (unlikely(!hard_near(p, (uintptr_t)obj, (uintptr_t)head))) {
                free_far(p, c, obj);
                return;
            }
            hard_push(p, c, obj, head, room);
            return;
        }
    } else if (p->tc_key != TC_NO_KEY) {
        /* The inline free that found no room took one from it: give it
         * back. (The cache of TC_NO_KEY is never set up; its room only runs
         * down, 2^63 frees from wrapping.) */
        tc_slot *z = (tc_slot *)((char *)tc_table + p->tc_key);
        if (tc_room(z) < 0) __atomic_store_n(&z->room, 0, __ATOMIC_RELAXED);
    }
    if (unlikely(p->debug)) {
        free_captured(p, obj, __builtin_return_address(0));
        return;
    }
    pool_free_generic(p, obj);
}

/* ---- Bulk calls: the cache first, then the pool's lock at most once. ---- */

size_t pk_pool_alloc_bulk(pk_pool *p, void **objs, size_t n) {
    pool_check_live(p, "pk_pool_alloc_bulk", NULL);
    if (unlikely(p->debug)) sites_capture(__builtin_return_address(0));
    size_t i = 0;
    uint64_t now = pool_purge_poll();
    tc_slot *c = p->cached ? tcache_slot(p) : NULL;
    for (; c && i < n; i++) {
        if (!tc_head(c) && !tc_take_spare(c)) break;
        objs[i] = tc_head(c);
        tc_set(c, checked_next(p, objs[i]), tc_room(c) + 1);
    }
    if (i < n) {
        pool_lock_for_use(p, now);
        size_t need = n - i, want = need;
        if (p->limit) want = p->out >= p->limit ? 0 : want < p->limit - p->out ? want : p->limit - p->out;
        void *list = NULL;
        size_t got = want ? central_take(p, want, &list, true) : 0;
        if (c) tcache_account(p, c, (long)got);
        central_maybe_tick(p, now);
        pool_unlock(p);
        for (char *obj = list; obj; obj = (char *)link_load(p, obj)) objs[i++] = obj;
        if (got < need) errno = ENOMEM;
    }
    for (size_t k = 0; k < i; k++) {
        track_handout(p, objs[k]);
        if (p->zero) memset(objs[k], 0, p->size);
    }
    return i;
}

void pk_pool_free_bulk(pk_pool *p, void **objs, size_t n) {
    pool_check_live(p, "pk_pool_free_bulk", n ? objs[0] : NULL);
    if (unlikely(p->debug)) sites_capture(__builtin_return_address(0));
    size_t i = 0;
    uint64_t now = pool_purge_poll();
    tc_slot *c = p->cached ? tcache_slot(p) : NULL;
    for (; c && i < n && tc_room(c) > 0 && objs[i]; i++) {
        central_check_free(p, objs[i]);
        track_takeback(p, objs[i]);
        link_store(p, objs[i], (uintptr_t)tc_head(c));
        tc_set(c, objs[i], tc_room(c) - 1);
    }
    if (i == n) return;
    pool_lock_for_use(p, now);
    if (c) tcache_account(p, c, -(long)(n - i));
    for (; i < n; i++) {
        if (unlikely(!objs[i]))
            error_report(PK_FATAL, "null pointer", p->name, NULL, "NULL given to pool '%s'",
                         pool_name(p));
        track_takeback(p, objs[i]);
        if (p->debug) central_debug_check_free(p, objs[i]);
        central_give(p, objs[i]);
        p->frees++;
    }
    central_maybe_tick(p, now);
    pool_unlock(p);
}

/* ---- Whole-pool calls. ---- */

size_t pk_pool_reserve(pk_pool *p, size_t n) {
    pool_check_live(p, "pk_pool_reserve", NULL);
    uint64_t now = pool_purge_poll();
    pool_lock_for_use(p, now);
    size_t ready = central_reserve(p, n);
    pool_unlock(p);
    return ready;
}

size_t pk_pool_trim(pk_pool *p) {
    pool_check_live(p, "pk_pool_trim", NULL);
    tc_slot *c = p->cached ? tcache_slot(p) : NULL;
    pool_lock(p);
    fork_test_point(HOOK_POOL, &p->lock);
    size_t before = p->bytes_reserved; /* first: all this call gives back is counted */
    central_note_use(p, os_now_ms());
    if (c) tcache_return(p, c); /* set up again on the thread's next slow path */
    central_depot_drain(p);
    central_release(p, true);
    size_t bytes = before - p->bytes_reserved;
    pool_unlock(p);
    pool_purge_poll(); /* the other pools' ticks, after this one's count */
    return bytes;
}

/* Pages ever touched: each slab's header and the slots handed out at least
 * once (slots past bump were never written), page-rounded. */
static size_t resident_bytes(const pk_pool *p) {
    size_t page = os_page_size(), bytes = 0;
    for (int l = 0; l < SLAB_LISTS; l++)
        for (const slab *s = p->lists[l].head; s; s = s->next) {
            size_t touched = align_up(p->geo.header + (size_t)s->bump * p->geo.slot, page);
            bytes += touched < s->span ? touched : s->span;
        }
    return bytes;
}

void pk_pool_stats_get(pk_pool *p, pk_pool_stats *out) {
    pool_check_live(p, "pk_pool_stats_get", NULL);
    pool_purge_poll();
    tcache_registry_lock();
    pool_lock(p);
    size_t cached = tcache_cached(p);
    memset(out, 0, sizeof *out);
    out->name = p->name;
    out->size = p->size;
    out->align = p->align;
    out->live = p->out - p->depot_count * p->batch - cached;
    out->peak_live = p->peak_out > out->live ? p->peak_out : out->live;
    out->slabs = p->slabs_total;
    out->bytes_reserved = p->bytes_reserved;
    out->allocs = p->allocs;
    out->frees = p->frees;
    out->remote_frees = p->remote_frees;
    out->slabs_released = p->slabs_released;
    out->bytes_resident = resident_bytes(p);
    out->bytes_released = p->bytes_released;
    pool_unlock(p);
    tcache_registry_unlock();
}

/* Calls fn on every live object; every free object must be home in its slab
 * (caches and depot drained), so a slot is live exactly when it was handed
 * out and is not on its slab's free list. */
static void each_live(pk_pool *p, void (*fn)(void *obj, void *arg), void *arg) {
    for (int l = 0; l < SLAB_LISTS; l++) {
        if (l == SLAB_EMPTY) continue;
        for (slab *s = p->lists[l].head; s; s = s->next) {
            uint64_t free_bits[(65536 / sizeof(uintptr_t) + 63) / 64] = {0};
            for (char *f = s->free; f; f = (char *)link_load(p, f)) {
                size_t i = slot_div((uint64_t)(f - s->objects), p->geo.slot, p->geo.recip);
                free_bits[i / 64] |= (uint64_t)1 << (i % 64);
            }
            for (uint32_t i = 0; i < s->bump; i++)
                if (!(free_bits[i / 64] & ((uint64_t)1 << (i % 64))))
                    fn(s->objects + (size_t)i * p->geo.slot, arg);
        }
    }
}

void pk_pool_visit(pk_pool *p, void (*fn)(void *obj, void *arg), void *arg) {
    pool_check_live(p, "pk_pool_visit", NULL);
    tcache_registry_lock();
    pool_lock(p);
    tcache_drain_all(p);
    central_depot_drain(p);
    pool_unlock(p);
    tcache_registry_unlock();
    each_live(p, fn, arg);
}

pk_pool *pk_pool_owner(const void *ptr) { return slab_owner(ptr); }

size_t pk_pool_foreach(void (*fn)(pk_pool *pool, void *arg), void *arg) {
    size_t n = 0;
    pthread_mutex_lock(&pools_lock);
    for (pk_pool *p = pools; p; p = p->next, n++) fn(p, arg);
    pthread_mutex_unlock(&pools_lock);
    return n;
}
