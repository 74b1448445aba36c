/* A thread's heap for one pool (mimalloc's heap and page, one heap per
 * thread per pool): the slabs the thread owns, the one it allocates from,
 * and its frees, local and remote.
 *
 * Allocation pops the thread's slot list (pool.h, inline), which holds the
 * free objects of the current slab only; when it runs dry (heap_alloc), the
 * heap takes, in order: the remote frees that came home to the current
 * slab, its next never-used slots in address order (EXTEND_BYTES at a
 * time), an owned slab with freed slots, a full one whose remote frees came
 * in (FULL_SCAN), and last a slab from the pool (under its lock). So memory
 * goes out slab by slab: after frees in any order the objects handed out
 * next lie in one 64 KiB slab, not all over the working set.
 *
 * Frees: an object of the current slab goes onto the slot list (inline: the
 * object just freed is the next one handed out); an object of another slab
 * the heap owns onto that slab's free list (heap_free, no lock); a slab
 * whose last object comes home goes back to the pool, restarted in address
 * order; an object of a slab another heap (or the pool) owns gathers in the
 * freeing heap's pending chain and goes home by one atomic push per run
 * (REMOTE_BATCH), to be collected by the slab's owner.
 *
 * Invariants (pool_internal.h states where each free object is):
 *   - a slab the heap owns has owner == the heap and is its cur (list
 *     HEAP_CUR, free list NULL: its free objects are on the slot list, and
 *     used counts them as out) or on avail (free slots: on its free list or
 *     never handed out) or full (none);
 *   - h->used is the sum of its slabs' used counts; slot->count the length
 *     of slot->head where no inline path serves the pool (pool_internal.h);
 *     pend_n the length of the pending chain, whose objects
 *     all belong to pend_slab, which the heap does not own;
 *   - slabs move between heap and pool only under the pool's lock
 *     (central_slab_for_heap, central_slab_from_heap).
 */
#include "pool_internal.h"

#include <errno.h>
#include <string.h>

/* Counters stats read from other threads: the owner's plain read and
 * relaxed store, never a lost update (one writer). */
#define BUMP(field, d) __atomic_store_n(&(field), (field) + (d), __ATOMIC_RELAXED)

static inline uintptr_t cur_word(const pk_pool *p, const slab *s) { return (uintptr_t)s->base | p->slab_low; }

static heap *heap_get(pk_pool *p, tc_slot *c) {
    heap *h = c->heap;
    if (likely(h != NULL)) return h;
    h = tcache_heap(p->key);
    memset(h, 0, sizeof *h);
    h->pool = p;
    h->slot = c;
    h->list = p->list_at == LIST_SLOT ? (tc_list *)&c->head : p->list_at == LIST_HARDENED ? (tc_list *)&c->hhead : &h->own;
    c->low = p->slab_low;
    c->secret = p->list_at == LIST_HARDENED ? p->hard.secret : 0;
    h->rng = (p->hard.secret ^ (uintptr_t)h) * 0x9E3779B97F4A7C15ull | 1; /* read-only after creation */
    pool_lock(p);
    h->next = p->heaps;
    if (p->heaps) p->heaps->prev = h;
    p->heaps = h;
    pool_unlock(p);
    c->heap = h;
    return h;
}

/* ---- The current slab. ---- */

static void install(pk_pool *p, heap *h, slab *s) {
    size_t n = s->bump - s->used; /* its free list's length */
    void *head = s->free;
    s->free = NULL;
    s->used = s->bump;
    s->list = HEAP_CUR;
    BUMP(h->used, n);
    BUMP(h->allocs, n);
    h->cur = s;
    list_set_cur(h, cur_word(p, s));
    list_set(h, head, n);
}

/* The slot list goes back onto the current slab's free list; the slab is
 * left on no list for the caller to place. A hardened pool's list is
 * checked link by link on the way (trim, thread exit, destroy), so a
 * forged link is reported there rather than kept. */
static slab *uninstall(pk_pool *p, heap *h) {
    slab *s = h->cur;
    uintptr_t cur = cur_word(p, s);
    size_t n = 0; /* counted: the inline paths keep no count */
    char *keep = NULL, *last = NULL;
    for (char *obj = tc_head(h->list), *next, *prev = NULL; obj; prev = obj, obj = next) {
        /* SLOT GRID at the slab's boundary: the fast paths checked each
         * object's slab and alignment only (harden.h). The head came from
         * a free; every other object from a link. */
        if (p->hardened) {
            long idx = slab_slot_index(s, obj, &p->geo);
            if (unlikely((idx < 0 || (uint32_t)idx >= s->bump) && obj != h->hot_obj)) {
                if (!prev) central_check_free(p, obj); /* reports a pointer that is no slot */
                report_bad_link(p, prev ? prev : obj, obj, "not a free slot of its slab");
            }
        }
        next = (char *)link_load(p, obj);
        if (((uintptr_t)obj | p->slab_low) != cur) {
            /* An object of another owned slab, freed onto the list for
             * reuse while hot (HOT_FREES): home to its own slab. */
            slab *o = slab_of_slot(obj, p);
            link_store(p, obj, (uintptr_t)o->free);
            o->free = obj;
            o->used--;
            BUMP(h->used, -1);
            BUMP(h->frees, 1);
            continue;
        }
        if (last) link_store(p, last, (uintptr_t)obj);
        else keep = obj;
        last = obj;
        n++;
    }
    if (last) link_store(p, last, 0);
    h->hot_obj = NULL;
    s->free = keep;
    s->used -= (uint32_t)n;
    BUMP(h->used, -n);
    BUMP(h->frees, n);
    list_set(h, NULL, 0);
    list_set_cur(h, 0);
    h->cur = NULL;
    s->list = SLAB_NOWHERE;
    return s;
}

/* Remote frees of an owned slab that is not current go onto its free list. */
static void collect_into(pk_pool *p, heap *h, slab *s) {
    size_t n = central_splice_remote(p, s);
    if (!n) return;
    BUMP(h->collected, n);
    BUMP(h->used, -n);
    BUMP(h->frees, n);
}

static void give_to_pool(pk_pool *p, heap *h, slab *s) {
    if (h->last == s) h->last = NULL;
    uint64_t now = pool_purge_poll();
    pool_lock_for_use(p, now);
    central_slab_from_heap(p, h, s);
    central_maybe_tick(p, now);
    POOL_VALIDATE(p);
    pool_unlock(p);
}

/* Whether the pool has a slab a heap could take without mapping one: read
 * without the lock, a hint (a wrong one costs a lock or a page). */
static bool pool_has_slab(const pk_pool *p) {
    return __atomic_load_n(&p->lists[SLAB_PARTIAL].count, __ATOMIC_RELAXED) +
               __atomic_load_n(&p->lists[SLAB_EMPTY].count, __ATOMIC_RELAXED) > 0;
}

/* Whether allocating from s would touch memory touched before. */
static bool has_touched_free(const slab *s) { return s->free || s->bump < s->high; }

/* The next slab to allocate from, owned and on no list: one of the heap's
 * own with free slots, a full one whose remote frees came in, or one from
 * the pool. With may_map false only slabs with free slots in memory
 * touched before, with may_map true any, a new one last. NULL (with ENOMEM
 * if may_map) when there is none. The heap's avail list keeps slabs with
 * freed slots at the front and those with only fresh ones at the back. */
static slab *next_slab(pk_pool *p, heap *h, bool may_map) {
    slab *s = h->spare;
    if (s) {
        h->spare = NULL;
        return s;
    }
    s = h->avail.head;
    if (s && has_touched_free(s)) {
        slab_list_remove(&h->avail, s);
        return s;
    }
    for (int i = 0; i < FULL_SCAN && (s = h->full.head) != NULL; i++) {
        slab_list_remove(&h->full, s);
        if (__atomic_load_n(&s->thread_free, __ATOMIC_RELAXED)) {
            collect_into(p, h, s);
            return s;
        }
        slab_list_append(&h->full, s, HEAP_FULL);
    }
    if (pool_has_slab(p) || (may_map && !h->avail.head)) {
        uint64_t now = pool_purge_poll();
        pool_lock_for_use(p, now);
        s = central_slab_for_heap(p, h, may_map && !h->avail.head);
        central_maybe_tick(p, now);
        POOL_VALIDATE(p);
        pool_unlock(p);
        if (s) return s;
    }
    if (may_map && (s = h->avail.head) != NULL) {
        slab_list_remove(&h->avail, s);
        return s;
    }
    if (may_map && !s) errno = ENOMEM;
    return NULL;
}

/* Links the current slab's next never-used slots onto the empty slot list. */
static bool extend(pk_pool *p, heap *h, slab *s) {
    if (s->bump >= s->capacity) return false;
    void *list = NULL;
    size_t before = slab_touched(p, s);
    /* Slots touched before go all at once (no page to fault in); fresh ones
     * a page at a time. */
    size_t k = s->bump < s->high ? s->high - s->bump : p->extend;
    k = central_carve(p, &h->rng, s, k, &list);
    BUMP(h->used, k);
    BUMP(h->allocs, k);
    BUMP(h->resident, slab_touched(p, s) - before);
    list_set(h, list, k);
    return true;
}

static void flush(pk_pool *p, heap *h);
static void note_peak(pk_pool *p, heap *h);

/* The slot list is empty: fill it. False with ENOMEM.
 *
 * Memory touched before comes first: the current slab's remote frees, its
 * slots below its high mark, then any slab with free slots (the heap's own,
 * or the pool's), and only then slots never touched, so a program that
 * repeats a phase faults no page back in. */
static bool refill(pk_pool *p, heap *h) {
    /* A slow path: the purge's poll (a coarse clock's read), and what waits
     * goes home now. A thread that only cycles through slabs it owns
     * reaches the library at refills alone, and other pools' idle memory
     * must still go back on its calls. */
    pool_purge_poll();
    if (h->pend_slab) flush(p, h);
    h->hot_obj = NULL; /* the list is empty: whatever was pushed hot was taken */
    h->hot_off = false;
    h->hot_evicted = 0;
    slab *s = h->cur, *next = NULL;
    if (s) {
        void *head, *tail;
        size_t n = central_collect(p, s, &head, &tail);
        if (n) { /* remote frees of the current slab: straight onto the list */
            BUMP(h->collected, n);
            BUMP(h->allocs, n);
            BUMP(h->frees, n);
            list_set(h, head, n);
            return true;
        }
        if (s->bump < s->high && extend(p, h, s)) return true;
        next = next_slab(p, h, false);
        if (!next && extend(p, h, s)) return true;
        uninstall(p, h); /* every slot out, or fresh ones left for later */
        if (s->bump < s->capacity) slab_list_append(&h->avail, s, HEAP_AVAIL);
        else slab_list_append(&h->full, s, HEAP_FULL);
    }
    if (!next) next = next_slab(p, h, true);
    if (!next) return false;
    install(p, h, next);
    return tc_head(h->list) || extend(p, h, next);
}

/* The pool's peak (stats' peak_live): each refill adds what the heap took
 * out or brought home since its last one to the pool's estimate, one atomic
 * add per refill rather than per object. */
static void note_peak(pk_pool *p, heap *h) {
    /* Out: on its list or with the user. Remote frees leave the count when
     * they are made (the freeing heap's remote_frees) and come back when the
     * owner collects them onto its lists (collected), so objects waiting
     * to be collected are not counted as out. */
    int64_t out = (int64_t)(h->allocs - h->frees - h->remote_frees + h->collected), d = out - h->synced;
    if (!d) return;
    h->synced = out;
    int64_t now = __atomic_add_fetch(&p->out_est, d, __ATOMIC_RELAXED);
    int64_t peak = __atomic_load_n(&p->peak_est, __ATOMIC_RELAXED);
    while (now > peak && !__atomic_compare_exchange_n(&p->peak_est, &peak, now, true, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED)) {
    }
}

void *heap_alloc(pk_pool *p, tc_slot *c) {
    heap *h = heap_get(p, c);
    if (!tc_head(h->list)) {
        if (!refill(p, h)) {
            errno = ENOMEM;
            return NULL;
        }
        note_peak(p, h);
    }
    char *obj = tc_head(h->list);
    char *next = (char *)link_load(p, obj);
    if (p->hardened && next && next != h->hot_obj) harden_check_slab_link(p, h->cur, obj, next);
    list_set(h, next, h->count - 1);
    return obj;
}

/* ---- Frees. ---- */

static void push_chain(pk_pool *p, slab *s, void *head, void *tail, size_t n) {
    if (unlikely(s->lost)) return; /* fork child: its objects stay counted as live */
    if (chains_counted(p)) { /* the chain's length and tail, in its head's second word */
        uintptr_t tail_at = ((uintptr_t)tail - (uintptr_t)s->objects) / p->geo.slot;
        chain_mark_store(p, head, tail_at << 32 | n);
    }
    void *old = __atomic_load_n(&s->thread_free, __ATOMIC_RELAXED);
    do link_store(p, tail, (uintptr_t)old);
    while (!__atomic_compare_exchange_n(&s->thread_free, &old, head, true, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
}

static void flush(pk_pool *p, heap *h) {
    BUMP(h->pushed, h->pend_n); /* before the push: the owner may collect at once */
    push_chain(p, h->pend_slab, h->pend_head, h->pend_tail, h->pend_n);
    h->pend_slab = NULL;
    h->pend_head = h->pend_tail = NULL;
    __atomic_store_n(&h->pend_n, 0, __ATOMIC_RELAXED);
}

static void free_remote(pk_pool *p, heap *h, slab *s, void *obj) {
    BUMP(h->remote_frees, 1);
    /* a thread that only frees has no refills: it tells the pool's peak
     * estimate every REMOTE_BATCH frees instead */
    if ((h->remote_frees & (REMOTE_BATCH - 1)) == 0) note_peak(p, h);
    if (h->pend_slab == s) {
        if (unlikely(obj == h->pend_head)) central_report_double_free(p, obj);
        link_store(p, obj, (uintptr_t)h->pend_head);
        h->pend_head = obj;
        BUMP(h->pend_n, 1);
        if (h->pend_n >= REMOTE_BATCH) flush(p, h);
        return;
    }
    if (h->pend_slab) flush(p, h);
    h->pend_slab = s;
    h->pend_first = (uintptr_t)s->objects;
    h->pend_bytes = (uintptr_t)s->capacity * p->geo.slot;
    h->pend_head = h->pend_tail = obj;
    BUMP(h->pend_n, 1);
}

void heap_free_remote_now(pk_pool *p, slab *s, void *obj) {
    __atomic_add_fetch(&p->remote_frees, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&p->remote_base, 1, __ATOMIC_RELAXED);
    push_chain(p, s, obj, obj, 1);
}

/* A free into one of the pool's own slabs (its thread gone): the heap takes
 * the slab, so frees into it stop being remote. */
static bool adopt(pk_pool *p, heap *h, slab *s) {
    pool_lock(p);
    bool mine = central_adopt(p, h, s);
    POOL_VALIDATE(p);
    pool_unlock(p);
    if (mine) {
        s->adopted = true; /* frees into it count as remote until it empties */
        if (s->free || s->bump < s->capacity) slab_list_push(&h->avail, s, HEAP_AVAIL);
        else slab_list_append(&h->full, s, HEAP_FULL);
    }
    return mine;
}

/* A slab whose last object came home by its owner's frees: kept as the
 * heap's spare (policy.h, HEAP_SPARE), restarted like the pool would, and
 * the spare it replaces, if any, goes back to the pool. */
static void keep_spare(pk_pool *p, heap *h, slab *s) {
    central_slab_emptied(p, s);
    s->list = SLAB_NOWHERE;
    slab *old = h->spare;
    h->spare = s;
    if (old) give_to_pool(p, h, old);
}

/* An object of an owned slab other than the current one onto its slab's
 * free list; the slab moves lists (or goes back to the pool) as its counts
 * say. */
static void free_home(pk_pool *p, heap *h, slab *s, void *obj) {
    heap_push_owned(p, h, s, obj);
    if (s->used == 0) {
        slab_list_remove(s->list == HEAP_FULL ? &h->full : &h->avail, s);
        keep_spare(p, h, s);
    } else if (s->list == HEAP_FULL) {
        slab_list_remove(&h->full, s);
        slab_list_push(&h->avail, s, HEAP_AVAIL);
    }
}

void heap_free(pk_pool *p, tc_slot *c, slab *s, void *obj) {
    heap *h = heap_get(p, c);
    /* the head of the thread's list, of the current slab or the hot
     * object of another, freed again */
    if (unlikely(obj == tc_head(h->list))) central_report_double_free(p, obj);
    if (s == h->cur) {
        link_store(p, obj, (uintptr_t)tc_head(h->list));
        list_set(h, obj, h->count + 1);
        return;
    }
    heap *owner = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
    if (owner != h) {
        if (owner || s->lost || !adopt(p, h, s)) {
            free_remote(p, h, s, obj);
            return;
        }
    }
    if (s->adopted) BUMP(h->adopted_frees, 1);
    if (unlikely(obj == s->free || s->used == 0)) central_report_double_free(p, obj);
    if (h->hot_obj && tc_head(h->list) == h->hot_obj) { /* not taken: home first */
        void *hot = h->hot_obj;
        h->hot_obj = NULL;
        list_set(h, (void *)link_load(p, hot), h->count - 1);
        h->hot_off = ++h->hot_evicted >= HOT_PHASE; /* a phase of frees: none until a refill */
        free_home(p, h, h->hot_slab, hot);
    }
    if (heap_free_hot(p, h, s, obj)) return;
    free_home(p, h, s, obj);
}

/* ---- Whole heaps. ---- */

/* Every slab of h but the current one, off its list, given to fn. */
static void each_other_slab(pk_pool *p, heap *h, void (*fn)(pk_pool *, heap *, slab *)) {
    slab *s = h->spare;
    h->spare = NULL;
    if (s) fn(p, h, s);
    while ((s = h->avail.head) != NULL) {
        slab_list_remove(&h->avail, s);
        fn(p, h, s);
    }
    while ((s = h->full.head) != NULL) {
        slab_list_remove(&h->full, s);
        fn(p, h, s);
    }
}

/* h's record and c's slot, as a thread that never used the pool has them. */
static void heap_clear(heap *h, tc_slot *c) {
    memset(h, 0, sizeof *h);
    memset(c, 0, sizeof *c);
}

static void abandon_slab(pk_pool *p, heap *h, slab *s) {
    if (h->last == s) h->last = NULL;
    collect_into(p, h, s);
    central_slab_from_heap(p, h, s);
}

void heap_abandon(pk_pool *p, tc_slot *c) {
    heap *h = c->heap;
    if (!h) return;
    ASSERT_POOL_LOCKED(p);
    if (h->pend_slab) flush(p, h);
    if (h->cur) abandon_slab(p, h, uninstall(p, h));
    each_other_slab(p, h, abandon_slab);
    PK_ASSERT_INTERNAL(h->used == 0 && h->resident == 0);
    note_peak(p, h); /* its count stays: its live objects are still out */
    p->allocs += h->allocs;
    p->frees += h->frees;
    __atomic_add_fetch(&p->remote_frees, h->remote_frees + h->adopted_frees, __ATOMIC_RELAXED);
    __atomic_add_fetch(&p->remote_base, (int64_t)(h->pushed - h->collected), __ATOMIC_RELAXED);
    if (h->prev) h->prev->next = h->next;
    else p->heaps = h->next;
    if (h->next) h->next->prev = h->prev;
    heap_clear(h, c);
}

void heap_abandon_all(pk_pool *p) {
    while (p->heaps) heap_abandon(p, p->heaps->slot);
}

/* A slab of a heap being forgotten: to the pool's full list, its lists as
 * they are (the pool is about to unmap it). */
static void forget_slab(pk_pool *p, heap *h, slab *s) {
    s->used = s->bump = s->high = s->capacity; /* counts nothing reads any more */
    s->free = NULL;
    __atomic_store_n(&s->thread_free, NULL, __ATOMIC_RELAXED);
    central_slab_from_heap(p, h, s);
}

void heap_forget_all(pk_pool *p) {
    for (heap *h; (h = p->heaps) != NULL;) {
        tc_slot *c = h->slot;
        if (h->cur) forget_slab(p, h, h->cur);
        each_other_slab(p, h, forget_slab);
        p->heaps = h->next;
        heap_clear(h, c);
    }
}

#if defined(__SANITIZE_THREAD__)
#  define NO_TSAN __attribute__((no_sanitize_thread))
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define NO_TSAN __attribute__((no_sanitize("thread")))
#  endif
#endif
#ifndef NO_TSAN
#  define NO_TSAN
#endif

/* The length of another thread's slot list of a pool the inline paths
 * or the hardened lean path serve (they keep no count). Its thread may be changing the list, and
 * the objects handed out from it, meanwhile: the walk reads only within
 * the pool's slabs (mapped for as long as the caller holds the pool's
 * lock, which releasing a slab takes) and only slot starts, stops after
 * the slab's capacity, and is exact when the thread is quiescent, as the
 * contract asks for exact stats. Its reads race by design, so they are
 * left out of ThreadSanitizer's view. */
static NO_TSAN size_t racy_slot_length(const pk_pool *p, const heap *h) {
    const tc_list *l = h->list;
    uintptr_t cur = tc_cur(l);
    const slab *s = h->cur; /* records are never unmapped */
    if (!cur || !s || (uintptr_t)s->base != (cur & ~(uintptr_t)(p->geo.slab_align - 1))) return 0;
    uintptr_t first = (uintptr_t)s->objects, size = (uintptr_t)s->capacity * p->geo.slot;
    size_t n = 0;
    for (uintptr_t x = (uintptr_t)tc_head(l); x && n < s->capacity + HOT_FREES; n++) {
        uintptr_t off = x - first;
        if ((x < first || off >= size || !slot_on_grid(off, p->geo.slot, p->geo.recip)) &&
            !slab_of_slot((void *)x, p)) /* a hot object of another slab of the pool's is mapped too */
            break;
        uintptr_t v = *(volatile uintptr_t *)(x + p->link_off);
        x = p->hardened ? link_decode(p, (void *)x, v) : v;
    }
    return n;
}

void heap_sum(const pk_pool *p, heap_sums *out) {
    bool uncounted = p->list_at != LIST_HEAP || p->hard.lean;
    memset(out, 0, sizeof *out);
    for (const heap *h = p->heaps; h; h = h->next) {
        size_t listed = uncounted ? racy_slot_length(p, h) : __atomic_load_n(&h->count, __ATOMIC_RELAXED);
        out->idle += listed + __atomic_load_n(&h->pend_n, __ATOMIC_RELAXED);
        out->used += __atomic_load_n(&h->used, __ATOMIC_RELAXED);
        out->resident += __atomic_load_n(&h->resident, __ATOMIC_RELAXED);
        out->allocs += __atomic_load_n(&h->allocs, __ATOMIC_RELAXED);
        out->frees += __atomic_load_n(&h->frees, __ATOMIC_RELAXED);
        out->remote_frees += __atomic_load_n(&h->remote_frees, __ATOMIC_RELAXED) +
                             __atomic_load_n(&h->adopted_frees, __ATOMIC_RELAXED);
        out->pending += (int64_t)(__atomic_load_n(&h->pushed, __ATOMIC_RELAXED) -
                                  __atomic_load_n(&h->collected, __ATOMIC_RELAXED));
    }
}

void heap_fork_child(pk_pool *p, const tc_slot *mine, const tc_slot *mine_end) {
    heap *kept = NULL;
    for (heap *h = p->heaps, *next; h; h = next) {
        next = h->next;
        if (h->slot >= mine && h->slot < mine_end) {
            kept = h;
            continue;
        }
        /* Its thread is gone and may have been changing it: only the
         * counters the pool's lock guards are read. */
        p->heap_slabs -= h->slabs;
        p->heap_bytes -= h->bytes;
        p->allocs += h->allocs;
        p->frees += h->frees;
    }
    p->heaps = kept;
    if (kept) kept->prev = kept->next = NULL;
    if (kept && kept->pend_slab && __atomic_load_n(&kept->pend_slab->owner, __ATOMIC_RELAXED) != kept &&
        __atomic_load_n(&kept->pend_slab->owner, __ATOMIC_RELAXED) != NULL) {
        /* waiting for a slab about to be lost: its objects stay counted live */
        kept->pend_slab = NULL;
        kept->pend_head = kept->pend_tail = NULL;
        kept->pend_n = 0;
    }
    /* The slabs of the heaps gone, found by the pool's list of all slabs
     * (whose owner changes only under the pool's lock). */
    for (slab *s = p->all; s; s = s->all_next) {
        heap *o = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
        if (o && o != kept) central_lose_slab(p, s);
    }
    /* A thread gone may have counted a push it had not made yet: the
     * pending total is counted afresh from the lists themselves. */
    int64_t pending = 0;
    for (slab *s = p->all; s; s = s->all_next) pending += (int64_t)central_count_remote(p, s);
    if (kept) pending -= (int64_t)(kept->pushed - kept->collected);
    p->remote_base = pending;
}
