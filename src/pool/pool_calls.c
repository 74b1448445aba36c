/* Whole-pool calls: reserve, trim, stats, visit, owner. Each takes the
 * pool's lock once; the calls that read or take other threads' heaps
 * (stats, visit) also hold the thread registry's lock, so no thread exits
 * meanwhile (lock order: pool_internal.h).
 */
#include "pool/pool_internal.h"

#include <poolkit/stats.h>

#include <string.h>

size_t pk_pool_reserve(pk_pool *p, size_t n) {
    pool_check_live(p, "pk_pool_reserve", NULL);
    return pool_reserve(p, n);
}

size_t pk_pool_trim(pk_pool *p) {
    pool_check_live(p, "pk_pool_trim", NULL);
    tc_slot *c = p->cached ? tcache_slot(p) : NULL;
    pool_lock(p);
    fork_test_point(HOOK_POOL, p->lock);
    size_t before = p->bytes_reserved; /* first: all this call gives back is counted */
    purge_note_use(p, os_now_ms());
    if (c) heap_abandon(p, c); /* set up again on the thread's next slow path */
    central_collect_own(p);
    central_release(p, true);
    size_t bytes = before - p->bytes_reserved;
    POOL_VALIDATE_DEEP(p);
    pool_unlock(p);
    pool_purge_poll(); /* the other pools' ticks, after this one's count */
    return bytes;
}

/* pk_collect's part of one pool: pk_pool_trim's, with the empty slabs
 * given back only when forced (else after the purge delay). */
static void collect_one(pk_pool *p, void *arg) {
    size_t *bytes = arg;
    if (!p->locked) return; /* PK_POOL_LOCAL: its thread's alone */
    tc_slot *c = p->cached ? tcache_slot(p) : NULL;
    pool_lock(p);
    size_t before = p->bytes_reserved;
    if (c) heap_abandon(p, c); /* set up again on the thread's next slow path */
    central_collect_own(p);
    if (bytes[1]) central_release(p, true);
    bytes[0] += before - p->bytes_reserved;
    POOL_VALIDATE(p);
    pool_unlock(p);
}

size_t pk_collect(int force) {
    size_t bytes[2] = {0, force != 0};
    pk_pool_foreach(collect_one, bytes);
    if (force) {
        bytes[0] += pk_pool_release_cache();
        pool_sweep_release();
    } else {
        pool_purge_poll();
    }
    return bytes[0];
}

/* Pages ever touched of the pool's own slabs: each slab's header and the
 * slots handed out at least once (slots past the high mark were never
 * written), page-rounded. */
static size_t resident_bytes(const pk_pool *p) {
    size_t bytes = 0, left = p->slabs_total;
    for (int l = 0; l < SLAB_LISTS; l++)
        for (const slab *s = p->lists[l].head; s; s = s->next) {
            slab_walk_step(p, &left);
            bytes += slab_touched(p, s);
        }
    return bytes;
}

void pk_pool_stats_get(pk_pool *p, pk_pool_stats *out) {
    pool_check_live(p, "pk_pool_stats_get", NULL);
    pool_purge_poll();
    tcache_registry_lock();
    pool_lock(p);
    heap_sums h;
    heap_sum(p, &h);
    int64_t pending = __atomic_load_n(&p->remote_base, __ATOMIC_RELAXED) + h.pending;
    int64_t outside = (int64_t)(p->out + h.used); /* objects outside the slabs' free lists */
    int64_t live = outside - (int64_t)h.idle - pending;
    memset(out, 0, sizeof *out);
    out->name = p->name;
    out->size = p->size;
    out->align = p->align;
    out->live = live > 0 ? (size_t)live : 0;
    int64_t est = __atomic_load_n(&p->peak_est, __ATOMIC_RELAXED);
    size_t peak = p->peak_out > (size_t)(est > 0 ? est : 0) ? p->peak_out : (size_t)(est > 0 ? est : 0);
    out->peak_live = peak > out->live ? peak : out->live;
    out->slabs = p->slabs_total;
    out->bytes_reserved = p->bytes_reserved;
    out->taken = p->allocs + h.allocs;
    /* every object taken from a slab's free list and not out now came back */
    out->returned = out->taken > (uint64_t)outside ? out->taken - (uint64_t)outside : 0;
    out->remote_frees = __atomic_load_n(&p->remote_frees, __ATOMIC_RELAXED) + h.remote_frees;
    out->slabs_released = p->slabs_released;
    out->bytes_resident = resident_bytes(p) + h.resident;
    out->bytes_released = p->bytes_released;
    pool_unlock(p);
    tcache_registry_unlock();
}

/* A slab's free slots, one bit each: a slot is at least a word, so a slab
 * holds at most SLAB_BYTES / 8 of them (a huge slot's slab, one). */
#define FREE_BITS_WORDS (SLAB_BYTES / sizeof(uintptr_t) / 64)
_Static_assert(SLAB_BYTES % (sizeof(uintptr_t) * 64) == 0, "whole words of bits");

void pool_each_live(pk_pool *p, void (*fn)(void *obj, void *arg), void *arg) {
    size_t left = p->slabs_total;
    for (int l = 0; l < SLAB_LISTS; l++) {
        if (l == SLAB_EMPTY) continue;
        for (slab *s = p->lists[l].head; s; s = s->next) {
            slab_walk_step(p, &left);
            uint64_t free_bits[FREE_BITS_WORDS] = {0};
            PK_ASSERT_INTERNAL(s->capacity <= FREE_BITS_WORDS * 64);
            /* Every free object is checked before its link is read, and met
             * once: a slot met twice (a double free) or outside the slab (a
             * link overwritten) is reported, never walked for ever. */
            for (char *f = s->free, *prev = NULL; f; prev = f, f = (char *)link_load(p, f)) {
                long i = slab_slot_index(s, f);
                if (unlikely(i < 0 || (uint32_t)i >= s->bump))
                    report_bad_link(p, prev ? prev : f, f, "not a free slot of its slab");
                uint64_t bit = (uint64_t)1 << (i % 64);
                if (unlikely(free_bits[i / 64] & bit)) report_list_overrun(p, s, s->free, NULL, "a slab's free list");
                free_bits[i / 64] |= bit;
            }
            for (uint32_t i = 0; i < s->bump; i++)
                if (!(free_bits[i / 64] & ((uint64_t)1 << (i % 64))))
                    fn(s->objects + (size_t)i * p->geo.slot, arg);
        }
    }
}

/* pk_pool_visit's steps; held: the walk under the pool's lock too. */
static void visit(pk_pool *p, void (*fn)(void *obj, void *arg), void *arg, bool held) {
    tcache_registry_lock();
    pool_lock(p);
    heap_abandon_all(p); /* every free object home: the threads set up anew */
    central_collect_own(p);
    POOL_VALIDATE_DEEP(p);
    if (held) pool_each_live(p, fn, arg);
    pool_unlock(p);
    tcache_registry_unlock();
    if (!held) pool_each_live(p, fn, arg);
}

void pk_pool_visit(pk_pool *p, void (*fn)(void *obj, void *arg), void *arg) {
    pool_check_live(p, "pk_pool_visit", NULL);
    visit(p, fn, arg, false);
}

void pool_visit_held(pk_pool *p, void (*fn)(void *obj, void *arg), void *arg) { visit(p, fn, arg, true); }

pk_pool *pk_pool_owner(const void *ptr) { return slab_owner(ptr); }

/* The pool's slabs and counts as no heap had used it; caller holds the
 * pool's lock and has dealt with the heaps. */
static void region_emptied(pk_pool *p) {
    central_forget_all(p); /* remote frees dropped unread with the rest */
    __atomic_store_n(&p->remote_base, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&p->out_est, 0, __ATOMIC_RELAXED);
    POOL_VALIDATE_DEEP(p);
}

/* The reset of a pool only the calling thread has used since its heaps
 * were last forgotten (a pk_heap per request, made, used and reset by one
 * thread): that thread's heap keeps its current slab and a spare, emptied
 * in place (heap_reset_own), so the next allocation of the class takes no
 * lock and no slab, and no other thread's slot is touched (so the
 * registry's lock is not taken).
 * False, nothing done, when another thread has a heap of the pool. */
static bool region_reset_own(pk_pool *p) {
    if (!p->cached) return false;
    heap *h = tc_slot_of(p)->heap; /* NULL too in a thread with no table yet */
    pool_lock(p);
    if (p->heaps != h || (h && h->next)) {
        pool_unlock(p);
        return false;
    }
    if (h) heap_reset_own(p, h);
    region_emptied(p);
    pool_unlock(p);
    return true;
}

bool pool_region_reset(pk_pool *p) {
    pool_check_live(p, "pool_region_reset", NULL);
    if (!(p->flags & PK_POOL_REGION) || p->debug || p->construct || p->destruct || TRACK_ENABLED) return false;
    if (region_reset_own(p)) return true;
    tcache_registry_lock();
    pool_lock(p);
    /* As pk_pool_destroy's region: every heap's slabs home unread, each
     * thread's slot cleared (set up again on its next slow path); then
     * every slab empty. No heap is left, and no object on a thread_free
     * list or out: what the heaps pushed and synced goes with them (their
     * counters of objects taken and returned too, as at a destroy). */
    heap_forget_all_kept(p);
    region_emptied(p);
    pool_unlock(p);
    tcache_registry_unlock();
    return true;
}
