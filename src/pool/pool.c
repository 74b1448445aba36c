/* Pools: the layout of a new pool and the path it takes, creation and
 * destruction (with the leak report; on the list of live pools,
 * pool_list.c, from one to the other), and the records of destroyed pools
 * kept for reuse. The calls on a live pool are elsewhere:
 * pool_slow.c and pool_free.c (behind the inline fast paths), pool_bulk.c
 * (bulk calls), pool_calls.c (whole-pool calls).
 *
 * Invariants: a pool is on the list exactly while its state is POOL_LIVE
 * (pools_add after its layout, pools_remove first thing at destroy, so no
 * sweep reaches a pool being torn down); a record is on the spares, in the
 * debug quarantine, in use, or given back with its index free, never two of
 * these; a spare or quarantined record's slots are clear in every thread,
 * so a stale pointer's inline calls reach the slow paths that report it.
 *
 * Which path a pool takes is decided once, at creation (choose_path), and
 * says where its threads' lists are (list_at):
 *   - inline: threads' heaps (heap.c), the link word at offset 0, nothing
 *     to do per object. The list is the slot's default words, which the
 *     header's inline functions serve.
 *   - hardened: threads' heaps with encoded links; the list is the slot's
 *     hardened words, so the default inline paths always miss and the
 *     header's hardened inline paths serve it: they decode and check each
 *     link and each freed pointer against the current slab (its mask,
 *     which leaves out the slot's alignment bits: harden.h, SLOT GRID), a
 *     freed pointer against the head too.
 *     Pools whose link word sits past the object (construct hooks) take
 *     the same checks out of line (the lean path: pool_slow.c allocates,
 *     pool_free.c frees). Anything
 *     else takes the heap path below.
 *   - heap: threads' heaps, but something per object (a construct hook's
 *     link word past the object, zeroing, tool builds): the list is the
 *     heap's own, so every call comes to the library.
 *   - direct: no heap (debug checks, a limit): every call takes the pool's
 *     lock and works on the slabs.
 * pool_slow.c says how each works (pool_free.c for the frees).
 */
#include "pool/pool_internal.h"
#include "base/bytes.h"
#include "base/sites.h"

#include <poolkit/poolkit.h> /* pk_version_string */
#include <poolkit/stats.h> /* pk_pool_foreach */

#include <errno.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <time.h>

/* ---- Layout and path, chosen once at creation. ---- */

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

/* Hardened pools' secrets: a process seed from the kernel (getrandom,
 * once; the exec's AT_RANDOM bytes and the clock if that fails), mixed per
 * pool with a count and the record's address, so no two pools share one.
 * A fork child keeps its parent's seed, as it keeps its pools. */
uint64_t pool_secret_seed(void) {
    static uint64_t seed;
    uint64_t s = __atomic_load_n(&seed, __ATOMIC_RELAXED);
    if (s) return s;
    if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s) {
        const unsigned char *r = (const unsigned char *)getauxval(AT_RANDOM);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        s = (uint64_t)ts.tv_nsec << 20 ^ (uint64_t)ts.tv_sec;
        if (r) {
            uint64_t a;
            memcpy(&a, r, sizeof a);
            s ^= a * 0xff51afd7ed558ccdull;
        }
    }
    s |= 1; /* 0 means not drawn yet */
    __atomic_store_n(&seed, s, __ATOMIC_RELAXED); /* two first callers may both draw: either seed will do */
    return s;
}

static uintptr_t make_secret(const void *p) {
    static uint64_t count;
    uint64_t x = pool_secret_seed() ^ (uintptr_t)p ^
                 (__atomic_add_fetch(&count, 1, __ATOMIC_RELAXED) * 0x9E3779B97F4A7C15ull);
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; /* mix (murmur3's finalizer) */
    x *= 0xc4ceb9fe1a85ec53ull; x ^= x >> 33;
    return (uintptr_t)(x | 1);
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
    if (!slab_geometry_for(align_up(slot, a), p->align, p->debug, pool_hard_front(p), (c->flags & PK_POOL_GUARD) != 0,
                           &p->geo))
        return false;
    if (p->debug) p->geo.site_words = SITE_KINDS * sites_frames();
    return true;
}

static void choose_path(pk_pool *p) {
    p->list_at = LIST_HEAP;
    p->slab_low = SLAB_BYTES - 1;
    p->extend = p->hardened ? policy_extend_hardened(p->geo.slot) : policy_extend(p->geo.slot);
    p->cached = !p->debug && !p->limit;
    if (!p->cached) {
        note_once(NOTE_LOCKED_POOL, p->name, "pool '%s' takes its lock on every call: %s",
                  pool_name(p), p->debug ? "debug checks" : "a limit");
        return;
    }
    tcache_attach(p, heap_thread_exit);
    /* pk_free's fast path finds a class pool's slot from its slabs' records
     * (alloc.c): the slot's offset in the table, as pool.h finds it from
     * the handle. */
    if (p->flags & POOL_SIZE_CLASS) p->geo.table_slot = (uint32_t)((uintptr_t)p->key << PK__SLOT_SHIFT);
    /* The lean path's grid check (slot_of_slab_at, by the geometry's
     * multiply) needs a slab's slots to span less than 4 GiB; larger slots
     * take the heap path. */
    uint64_t span = (uint64_t)p->geo.capacity * p->geo.slot, slot = p->geo.slot;
    if (p->hardened && !pool_hard_front(p) && !p->zero && !TRACK_ENABLED && span < ((uint64_t)1 << 32) && p->geo.header == 0) {
        /* The lean path serves pools the inline paths cannot (a link word
         * past the object); for the others it would only repeat the inline
         * checks that just failed, on every free into another slab. */
        p->hard.lean = HARD_LEAN | HARD_POP;
        /* The fast paths' same-slab checks compare (x | slab_low) with the
         * current slab's word: leaving the slot's alignment bits out of
         * slab_low makes them check that x is aligned as a slot start at no
         * cost, which is the slot grid exactly where the slot is a power of
         * two (or alone in its slab). */
        uintptr_t amask = p->geo.capacity == 1 ? SLAB_BYTES - 1 : (slot & -slot) - 1;
        p->slab_low &= ~amask;
#ifdef PK__HAVE_INLINE
        if (p->link_off == 0) {
            p->list_at = LIST_HARDENED;
            /* the inline paths do the rest; a link they refuse, to an
             * object of another slab the list holds (HOT_FOREIGN), is
             * popped there with no refill and no clock read */
            p->hard.lean = HARD_POP;
        }
#endif
    }
#ifdef PK__HAVE_INLINE
    bool plain = p->link_off == 0 && !p->zero && !p->hardened;
    if (plain && !TRACK_ENABLED) p->list_at = LIST_SLOT;
#endif
    /* hardened lists take one object of another slab at most (HOT_FREES,
     * heap.c's hot_link), not HOT_LIST's; the link word must be the
     * object's first (the short path's plain branch) */
    _Static_assert(SLAB_BYTES / HOT_LIST == 1024, "HOT_LIST's comment (policy.h) names slots over 1 KiB");
    /* the size classes' slabs of one object too: without the list, a
     * program that frees its own blocks of 33-256 KiB and makes them again
     * sent each through its slab, a spare or the pool (docs/results.md,
     * "Blocks of a slab each freed by their owner"); OWN_FREES, below, is
     * for slabs of many */
    bool class_of_one = p->geo.table_slot && p->geo.capacity == 1;
    if (!p->hardened && p->link_off == 0) p->hot_list = policy_hot_list(p->geo.capacity, p->geo.slot);
    p->spares = policy_spares(p->geo.capacity, p->geo.span);
    /* pk_free's one path (OWN_FREES) serves the size classes whose lists the
     * inline paths serve as they are */
    if (p->geo.table_slot && p->list_at == LIST_SLOT && !class_of_one) p->own_frees = policy_own_frees(p->geo.slot);
    /* HOT_FOREIGN: pools the inline paths serve, but the size classes with
     * slabs of many objects (their lists are OWN_FREES') */
    p->foreign_budget = policy_hot_foreign(p->geo.slot);
    /* a hardened list's objects past its end carry a tag in their second
     * word (harden.h, hot_tag): slots of one word take the end alone */
    if (p->hardened && p->geo.slot < 2 * sizeof(uintptr_t)) p->foreign_budget = 0;
    p->hot_foreign = (!p->geo.table_slot || class_of_one) &&
                     (p->list_at == LIST_SLOT || p->list_at == LIST_HARDENED);
    PK_ASSERT_INTERNAL(!(p->hot_foreign && p->own_frees)); /* one list's rule per pool */
}


/* ---- Pool records: the area, reuse and the debug quarantine. ---- */

/* Every pool record lies POOL_RECORD_BYTES from the next, in places of an
 * area of TABLE_KEYS records aligned to its size, so that a handle's bits
 * give the record's index, which is the pool's key (pool.h finds the
 * thread's slot from it). The area is reserved a chunk of AREA_CHUNK
 * records at a time, as pools are made, each chunk at its own place in
 * some such window of address space (any window: the bits a handle keeps
 * are the same in each), so that a program with few pools holds little
 * address space (a limit on it, RLIMIT_AS, counts what is reserved, used
 * or not); each record's page is backed when first used. Index 0 is never
 * given out.
 *
 * Records of destroyed pools are kept for the next create (up to
 * SPARE_RECORDS_MAX), so that a pool per request or per tree costs no
 * system call; a spare record is marked POOL_DEAD and its slots were
 * cleared in every thread (tcache_detach), so a stale pointer's inline
 * calls reach the slow paths, which report it (pool_check_live), until the
 * record is reused. Spares are linked through next. A record beyond the
 * spares gives its page back (a stale pointer's call then faults) and its
 * index to the free indexes. */
#define POOL_RECORD_BYTES ((size_t)1 << PK__RECORD_SHIFT)
#define AREA_BYTES (POOL_RECORD_BYTES * TABLE_KEYS)
#define AREA_CHUNK 1024
#define CHUNK_BYTES (POOL_RECORD_BYTES * AREA_CHUNK)
_Static_assert(sizeof(pk_pool) <= POOL_RECORD_BYTES, "a pool record fits its place in the area");
_Static_assert(TABLE_KEYS % AREA_CHUNK == 0, "the area is whole chunks");

static pthread_mutex_t spare_lock PK_FORK_LOCK = PTHREAD_MUTEX_INITIALIZER;
static char *chunks[TABLE_KEYS / AREA_CHUNK]; /* under spare_lock */
static uint32_t free_index[TABLE_KEYS] PK_BIG_TABLE;
static size_t free_count, next_index = 1; /* indexes never used: [next_index, TABLE_KEYS) */
static pk_pool *spare_records;
static size_t spare_count;

/* Debug pools' records are held back from reuse (a FIFO, like ASan's
 * quarantine of freed memory) for the next QUARANTINE_RECORDS debug pools
 * destroyed, so that a debug pool used after its destroy is reported rather
 * than served by whichever pool got its record. Under spare_lock. */
static pk_pool *quarantine[QUARANTINE_RECORDS] PK_BIG_TABLE;
static size_t quarantine_next;

/* The pools' locks, by key (pool_types.h says why they are not in the
 * records); a page of the table is backed when a key on it is first used. */
typedef struct {
    pthread_mutex_t m;
} __attribute__((aligned(64))) pool_lock_slot;
_Static_assert(sizeof(pool_lock_slot) == 64, "one lock a cache line: no two pools' slow paths share one");
static pool_lock_slot pool_locks[TABLE_KEYS] __attribute__((aligned(4096))) PK_BIG_TABLE; /* the first keys' locks on one page */

static pk_pool *record_at(size_t index) {
    return (pk_pool *)(chunks[index / AREA_CHUNK] + index % AREA_CHUNK * POOL_RECORD_BYTES);
}

/* The chunk of index's record reserved; caller holds spare_lock. */
static bool chunk_ready(size_t index) {
    char **c = &chunks[index / AREA_CHUNK];
    if (!*c) *c = os_reserve_at(CHUNK_BYTES, AREA_BYTES, index / AREA_CHUNK * CHUNK_BYTES);
    return *c != NULL;
}

/* A record's page back to the system and its index to the free ones;
 * caller holds spare_lock. */
static void record_drop(pk_pool *p) {
    size_t index = p->key;
    os_decommit(p, POOL_RECORD_BYTES);
    free_index[free_count++] = (uint32_t)index;
}

static pk_pool *record_get(void) {
    pk_lock(&spare_lock);
    fork_test_point(HOOK_POOL_RECORDS, &spare_lock);
    pk_pool *p = spare_records;
    if (p) {
        spare_records = p->next;
        spare_count--;
        pk_unlock(&spare_lock);
        size_t key = p->key;
        bytes_zero(p, sizeof *p);
        p->key = key;
        return p;
    }
    size_t index = 0;
    if (!free_count && next_index == TABLE_KEYS) { /* every index taken: the oldest quarantined */
        for (size_t i = 0; i < QUARANTINE_RECORDS && !free_count; i++) {
            size_t k = (quarantine_next + i) % QUARANTINE_RECORDS;
            if (quarantine[k]) record_drop(quarantine[k]);
            quarantine[k] = NULL;
        }
    }
    if (free_count) index = free_index[--free_count];
    else if (next_index < TABLE_KEYS) index = next_index++;
    if (index && (!chunk_ready(index) || !os_commit(record_at(index), POOL_RECORD_BYTES))) {
        free_index[free_count++] = (uint32_t)index;
        index = 0;
    }
    pk_unlock(&spare_lock);
    if (!index) {
        errno = ENOMEM;
        return NULL;
    }
    p = record_at(index);
    p->key = index;
    return p;
}

/* A destroyed pool's record: a debug pool's waits in the quarantine and
 * pushes out the oldest there; the others go straight to the spares. */
static void record_retire(pk_pool *p);

static void record_put(pk_pool *p) {
    pk_lock(&spare_lock);
    if (!TRACK_ENABLED && spare_count < SPARE_RECORDS_MAX) {
        p->next = spare_records;
        spare_records = p;
        spare_count++;
    } else {
        record_drop(p);
    }
    pk_unlock(&spare_lock);
}

static void record_retire(pk_pool *p) {
    if (p->debug) {
        pk_lock(&spare_lock);
        pk_pool *oldest = quarantine[quarantine_next];
        quarantine[quarantine_next] = p;
        quarantine_next = (quarantine_next + 1) % QUARANTINE_RECORDS;
        pk_unlock(&spare_lock);
        if (!oldest) return;
        p = oldest;
    }
    record_put(p);
}

size_t pool_reserve(pk_pool *p, size_t n) {
    /* the calling thread's heap record too, so that its next allocations
     * ask the system for nothing (tcache.c maps a thread's heap records a
     * chunk at a time, at its first use of a pool of the chunk) */
    if (p->cached) tcache_prepare(p);
    uint64_t now = pool_purge_poll();
    pool_lock_for_use(p, now);
    size_t ready = central_reserve(p, n);
    POOL_VALIDATE_DEEP(p);
    pool_unlock(p);
    return ready;
}

void pool_report_dead(const pk_pool *p, const char *call, const void *obj) {
    char given[48] = "";
    if (obj) snprintf(given, sizeof given, " given %p", obj);
    error_report(PK_FATAL, "pool used after destroy", p->dead_name, p,
                 "%s%s on pool '%s' (%p), which was destroyed", call, given, p->dead_name,
                 (const void *)p);
    abort(); /* error_report never returns from a fatal report */
}

void pools_fork_lock_list(void) { pools_lock_list(); }

/* Every listed pool's lock, by key (pool_list.c says why not through the
 * list); debug builds note the owner in the record (ASSERT_POOL_LOCKED). */
static void fork_lock_listed(bool take) {
    size_t n;
    const uint32_t *keys = pools_listed_keys(&n);
    for (size_t i = 0; i < n; i++) {
        if (keys[i] & LISTED_LOCAL) continue;
        pthread_mutex_t *m = &pool_locks[keys[i]].m;
        if (take) pk_lock(m);
        POOL_OWNER_SET(record_at(keys[i]), take ? pthread_self() : (pthread_t)0);
        if (!take) pk_unlock(m);
    }
}

void pools_fork_lock_each(void) {
    fork_lock_listed(true);
    pk_lock(&spare_lock);
}

static void fork_child_one(pk_pool *p, void *arg) {
    const tc_slot *const *mine = arg;
    heap_fork_child(p, mine[0], mine[1]);
}

#ifndef NDEBUG
/* What the child's walk would have found: the forking thread's heap alone
 * in each pool, and no remote free counted. */
static void alone_is_whole(pk_pool *p, void *arg) {
    (void)arg;
    assert(!p->heaps || !p->heaps->next);
    assert(p->remote_base == 0);
}
#endif

void pools_fork_child(const tc_slot *mine, const tc_slot *mine_end) {
    /* With no heap but the forking thread's in any pool and no remote free
     * ever begun, there is nothing to drop or count again: the walk would
     * read every pool's record (a page each) in a child whose address
     * translations start cold. */
    if (tcache_alone() && !remote_any_pool()) {
#ifndef NDEBUG
        pools_each_held(alone_is_whole, NULL);
#endif
        return;
    }
    const tc_slot *range[2] = {mine, mine_end};
    pools_each_held(fork_child_one, range);
}

void pools_fork_unlock(void) {
    pk_unlock(&spare_lock);
    fork_lock_listed(false);
    pools_unlock_list();
}

/* The program asked for its memory back: the quarantined debug records go
 * too (a stale debug pool pointer then faults instead of being reported). */
size_t pk_pool_release_cache(void) {
    pk_lock(&spare_lock);
    size_t bytes = 0;
    for (pk_pool *p = spare_records, *next; p; p = next) {
        next = p->next;
        record_drop(p);
        bytes += POOL_RECORD_BYTES;
    }
    spare_records = NULL;
    spare_count = 0;
    for (size_t i = 0; i < QUARANTINE_RECORDS; i++) {
        if (!quarantine[i]) continue;
        record_drop(quarantine[i]);
        quarantine[i] = NULL;
        bytes += POOL_RECORD_BYTES;
    }
    pk_unlock(&spare_lock);
    return bytes + os_retain_release() + region_release_kept();
}

/* ---- Create and destroy. ---- */

/* The name in parentheses: pool.h makes pk_pool_create a macro for
 * programs that inline the fast paths (the ABI check below). */
pk_pool *(pk_pool_create)(const pk_pool_config *c) {
    const unsigned known = PK_POOL_ZERO | PK_POOL_LOCAL | PK_POOL_DEBUG | PK_POOL_HARDENED |
                           PK_POOL_REGION | PK_POOL_GUARD | PK_POOL_SHUFFLE | POOL_KEEPS_HEADER | POOL_LIBRARY |
                           POOL_SIZE_CLASS | POOL_HEAP;
    if (!c || c->size == 0 || (c->flags & ~known) || (c->flags & PK_POOL_ZERO && c->construct) ||
        (c->align && (!is_pow2(c->align) || c->align > 4096))) {
        errno = EINVAL;
        return NULL;
    }
    init_announce(INIT_SHARED_STATE); /* fork handlers (fork.c) */
    init_announce(INIT_FIRST_POOL);   /* the report at exit (stats.c) */
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
    p->hardened = (c->flags & (PK_POOL_HARDENED | PK_POOL_SHUFFLE)) || options_hardened();
    p->shuffle = (c->flags & PK_POOL_SHUFFLE) != 0;
    if ((c->flags & POOL_KEEPS_HEADER) && c->size > POOL_HEADER_BYTES) p->fill_from = POOL_HEADER_BYTES;
    p->zero = (c->flags & PK_POOL_ZERO) != 0;
    p->construct = c->construct;
    p->destruct = c->destruct;
    p->arg = c->arg;
    p->limit = c->limit;
    memset(&p->hard, 0, sizeof p->hard);
    p->hard.secret = make_secret(p);
    p->rng = (uint64_t)p->hard.secret * 0x9E3779B97F4A7C15ull | 1;
    if (!layout(p, c)) {
        record_put(p);
        errno = EINVAL;
        return NULL;
    }
    p->lock = &pool_locks[p->key].m;
    pthread_mutex_init(p->lock, NULL);
    choose_path(p);
    p->carve = (carve_how){.link_off = p->link_off, .secret = p->hard.secret, .encode = p->hardened,
                           .shuffle = p->shuffle, .construct = p->construct, .arg = p->arg, .size = p->size,
                           .plain = !p->construct && !p->hardened && !TRACK_ENABLED && p->link_off == 0,
                           .scrub = pool_hard_front(p)};
    p->state = POOL_LIVE;
    POOL_VALIDATE_DEEP(p); /* no other thread knows the pool yet */
    pools_add(p);
    if (c->reserve && pool_reserve(p, c->reserve) < c->reserve) {
        pk_pool_destroy(p);
        errno = ENOMEM;
        return NULL;
    }
    return p;
}

static void untrack(void *obj, void *pool) { track_takeback(pool, obj); }

/* The first few leaked objects of a debug pool come with where they were
 * allocated; then addresses alone, as many as fit. */
#define LEAKS_WITH_SITES 4

void pool_each_live_debug(pk_pool *p, bool (*fn)(void *obj, void *const *sites, void *arg), void *arg) {
    if (!p->debug) return;
    pool_lock(p);
    size_t left = p->slabs_total;
    for (int l = 0; l < SLAB_LISTS; l++)
        for (slab *s = p->lists[l].head; s; s = s->next, slab_walk_step(p, &left))
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

pk_pool *pk__pool_create_abi(const pk_pool_config *c, int abi) {
    if (unlikely(abi != PK_POOL_ABI))
        error_report(PK_FATAL, "ABI mismatch", c ? c->name : NULL, NULL,
                     "this program was compiled with poolkit headers whose inline pool paths have "
                     "layout %d (PK_POOL_ABI), but runs with libpoolkit %s, whose layout is %d: "
                     "rebuild it against this version's headers",
                     abi, pk_version_string(), PK_POOL_ABI);
    return (pk_pool_create)(c);
}

static void report_leaks(pk_pool *p, size_t live, size_t lost) {
    leak_text t = {.buf = "", .used = 0, .shown = 0};
    pool_each_live_debug(p, add_leak, &t);
    char more[96] = "";
    if (lost)
        snprintf(more, sizeof more, " (and %zu in slabs of threads that did not survive a fork, not counted)", lost);
    error_report(PK_WARNING, "leak", p->name, NULL, "pool '%s' destroyed with %zu live object%s%s%s",
                 pool_name(p), live, live == 1 ? "" : "s", more, t.buf);
}

static bool redzone_intact(void *obj, void *const *sites, void *arg) {
    (void)sites;
    check_debug_live(arg, obj);
    return true;
}

void pk_pool_destroy(pk_pool *p) {
    if (!p) return;
    pool_check_live(p, "pk_pool_destroy", NULL);
    pool_purge_poll();
    pools_remove(p); /* first: no purge sweep can reach the pool after this */
    tcache_registry_lock();
    pool_lock(p);
    /* Every heap's slabs and free objects home, remote frees collected:
     * what is still out is live. Hardened pools' free lists are checked
     * when their slabs go (central_free_all), so a forged link is reported
     * rather than forgotten with the memory; a region's are forgotten
     * unread, hardened or not: its destroy follows no link, so none can
     * mislead it, and a pool per task does not pay for a walk of each. */
    bool region = (p->flags & PK_POOL_REGION) && !p->debug && !p->construct && !p->destruct && !TRACK_ENABLED;
    if (region) heap_forget_all(p); /* freed whole: no object's count is needed */
    else heap_abandon_all(p);
    central_collect_own(p);
    size_t live = region ? 0 : p->out;
    /* a fork child's slabs of the parent's other threads count every slot
     * out, the free ones those threads held among them: not the program's
     * leak, and not told apart from its objects, so not reported as one */
    size_t lost = region ? 0 : central_lost_out(p);
    live = live > lost ? live - lost : 0;
    POOL_VALIDATE_DEEP(p);
    pool_unlock(p);
    if (p->cached) tcache_detach(p);
    tcache_registry_unlock();
    if (p->debug) pool_each_live_debug(p, redzone_intact, p);
    if (live && !(p->flags & PK_POOL_REGION)) report_leaks(p, live, lost);
    /* The objects die with the pool: a tool must not report them later, or
     * see their addresses handed out again while it still thinks them live
     * (poolkit reported any leak above). */
    if (TRACK_ENABLED) pool_each_live(p, untrack, p);
    pool_lock(p);
    central_free_all(p);
    pool_unlock(p);
    pthread_mutex_destroy(p->lock);
    /* Dead from here on: with no cache key (tcache_detach), the inline
     * paths go slow and the slow paths to the direct ones, which check. */
    /* a copy by hand: snprintf was a tenth of a pool's create and destroy
     * (a heap per request makes and destroys its pools every time) */
    size_t dn = strnlen(pool_name(p), sizeof p->dead_name - 1);
    memcpy(p->dead_name, pool_name(p), dn);
    p->dead_name[dn] = '\0';
    p->state = POOL_DEAD;
    record_retire(p);
}
