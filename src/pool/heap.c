/* A thread's heap for one pool (mimalloc's heap and page, one heap per
 * thread per pool): the slabs the thread owns, the one it allocates from,
 * and whole heaps; every change of a slab's state under a heap (an object
 * home to a slab that fills or empties). Which free takes which path is
 * pool_free.c's.
 *
 * Allocation pops the thread's list (pool.h, inline), which holds the free
 * objects of the current slab only; when it runs dry (heap_alloc), the
 * heap takes, in order: the remote frees that came home to the current
 * slab, its slots touched before, an owned slab with freed slots (the one
 * its thread last freed into, else the front of its avail list: no
 * search), its next never-used slots
 * (EXTEND_BYTES at a time), a full slab whose remote frees came in
 * (FULL_SCAN), and last a slab from the pool (under its lock). So memory
 * goes out slab by slab: after frees in any order the objects handed out
 * next lie in one slab, not all over the working set; and memory touched
 * before comes first, so a program that repeats a phase faults no page
 * back in.
 *
 * Invariants (heap_is_valid checks them at each refill, POOLKIT_ASSERT 3):
 *   - a slab the heap owns has owner == the heap and is its cur (list
 *     HEAP_CUR, free list NULL: its free objects are on the heap's list,
 *     and used counts them as out), a spare (no object out, on no list
 *     but the chain of spares, at most the pool's spares of them),
 *     on avail (free slots: on its free list or never handed out) or on
 *     full (none but, maybe, remote frees waiting);
 *   - slabs and bytes count the owned slabs and their spans; the heap's
 *     list holds objects of its current slab, no more than it has out, and
 *     at most HOT_FREES, or the pool's hot_list (HOT_LIST), of its other
 *     owned slabs, and at most HOT_FOREIGN + 1 of slabs other heaps hold
 *     (pool_free.c, free_foreign_home);
 *   - pend_n is the length of the pending chain, whose objects all belong
 *     to pend_slab, which the heap does not own;
 *   - slabs move between heap and pool only under the pool's lock
 *     (central_slab_for_heap, central_adopt, central_slab_from_heap).
 */
#include "pool/heap.h"
#include "pool/pool_valid.h"
#include "pool/central.h"
#include "pool/check.h"
#include "pool/purge.h"
#include "pool/remote.h"
#include "pool/tcache.h"
#include "base/bytes.h"

#include <errno.h>
#include <string.h>

static inline uintptr_t cur_word(const pk_pool *p, const slab *s) { return (uintptr_t)s->base | p->slab_low; }

heap *heap_get(pk_pool *p, tc_slot *c) {
    heap *h = c->heap;
    if (likely(h != NULL)) return h;
    h = tcache_heap(p->key);
    bytes_zero(h, sizeof *h);
    h->pool = p;
    h->slot = c;
    h->list = p->list_at == LIST_SLOT       ? (tc_list *)&c->head
              : p->list_at == LIST_HARDENED ? (tc_list *)&c->hhead
                                            : &h->own;
    bool plain = p->link_off == 0 && !p->hardened && !TRACK_ENABLED;
    c->low = plain ? 0 : p->slab_low;
    c->secret = p->list_at == LIST_HARDENED ? p->hard.secret : 0;
    h->own_budget = h->own_room = (intptr_t)p->own_frees;
    h->rng = (p->hard.secret ^ (uintptr_t)h) * 0x9E3779B97F4A7C15ull | 1; /* read-only after creation */
    /* not the size classes, whose lists pk_free pushes onto too (OWN_FREES,
     * or, in tool builds, the library's paths), and whose blocks the
     * object layer and the hardened front end write their own words into */
    h->hot_count = p->hot_list && !p->geo.table_slot;
    h->hot_key = h->rng * 0x9E3779B97F4A7C15ull; /* not what a user writes */
    pool_lock(p);
    h->next = p->heaps;
    if (p->heaps) p->heaps->prev = h;
    p->heaps = h;
    pool_unlock(p);
    c->heap = h;
    return h;
}

/* ---- Slabs between the heap and the pool: the heap's counts. ---- */

/* The owned index's entry for s, owned by h (pool_types.h): the heap's
 * thread's table, from its slot. NULL where the pool has no index. */
static own_entry *own_entry_of(const pk_pool *p, const heap *h, const slab *s) {
    if (!p->own_frees) return NULL;
    return own_entry_at((char *)h->slot - s->table_slot, (uintptr_t)s->base);
}

static void count_in(const pk_pool *p, heap *h, slab *s) {
    __atomic_store_n(&s->left_head, NULL, __ATOMIC_RELAXED); /* the heap hands its objects out now */
    h->slabs++;
    h->bytes += s->span;
    BUMP(h->resident, slab_touched(p, s));
    own_entry *e = own_entry_of(p, h, s);
    if (e) {
        __atomic_store_n(&e->slot, (uintptr_t)s->table_slot, __ATOMIC_RELAXED);
        __atomic_store_n(&e->word, (uintptr_t)s->base | (SLAB_BYTES - 1), __ATOMIC_RELAXED);
    }
}

static void count_out(const pk_pool *p, heap *h, const slab *s) {
    if (h->warm == s) h->warm = NULL; /* it names an owned slab only (next_slab) */
    own_entry *e = own_entry_of(p, h, s);
    /* another owned slab's at the same place is left */
    if (e && __atomic_load_n(&e->word, __ATOMIC_RELAXED) == ((uintptr_t)s->base | (SLAB_BYTES - 1)))
        __atomic_store_n(&e->word, 0, __ATOMIC_RELAXED);
    h->slabs--;
    h->bytes -= s->span;
    BUMP(h->resident, -slab_touched(p, s));
}

/* s, owned, back to the pool; caller holds the pool's lock. */
static void to_pool(pk_pool *p, heap *h, slab *s) {
    count_out(p, h, s);
    central_slab_from_heap(p, s);
}

static void give_to_pool(pk_pool *p, heap *h, slab *s, uint64_t now) {
    pool_lock_for_use(p, now);
    to_pool(p, h, s);
    purge_tick(p, now);
    POOL_VALIDATE(p);
    pool_unlock(p);
}

void heap_take_slab(pk_pool *p, heap *h, slab *s) {
    count_in(p, h, s);
    if (s->free || s->bump < s->capacity) slab_list_push(&h->avail, s, HEAP_AVAIL);
    else slab_list_append(&h->full, s, HEAP_FULL);
}

_Static_assert(SPARE_BYTES == (size_t)4 << 20 && SPARES_MAX == 16 && HOT_LIST == 64 &&
                   HOT_LIST_BYTES == (size_t)32 << 20 && HOT_FOREIGN_BYTES == (size_t)4 << 20,
               "pool.h (pk_set_purge_delay), docs/design.md, docs/alloc.md and tests/test_pool_memory.cc, "
               "test_pool_freepath.cc name the spares' and the thread list's bounds");

/* The heap's spares (HEAP_SPARE): push s, on no list; pop the last pushed. */
static void spare_push(heap *h, slab *s) {
    s->list = SLAB_NOWHERE;
    s->prev = NULL;
    s->next = h->spare;
    h->spare = s;
    h->spares++;
}

static slab *spare_pop(heap *h) {
    slab *s = h->spare;
    if (s) {
        h->spare = s->next;
        s->next = NULL;
        h->spares--;
    }
    return s;
}

void heap_slab_emptied(pk_pool *p, heap *h, slab *s, uint64_t now) {
    central_slab_emptied(p, s);
    /* the spares full: the one emptied last replaces the one before it */
    slab *old = h->spares < p->spares ? NULL : spare_pop(h);
    spare_push(h, s);
    if (old) give_to_pool(p, h, old, now ? now : os_now_ms());
}

/* ---- The current slab. ---- */

static void install(pk_pool *p, heap *h, slab *s) {
    size_t n = s->bump - s->used; /* its free list's length */
    void *head = s->free;
    if (unlikely(!head && n)) check_report_lost_count(p, s); /* an object came home twice */
    s->free = NULL;
    s->used = s->bump;
    s->list = HEAP_CUR;
    BUMP(h->allocs, n);
    h->cur = s;
    list_set_cur(h, s, cur_word(p, s));
    list_set(h, head, n);
}

/* Stats read other threads' lists and slabs racily (racy_list_length). */
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

/* Whether obj, a slot handed out, carries the tag of an object the short
 * path listed on a hardened list (harden.h, hot_tag). */
static NO_TSAN bool hot_tagged(const pk_pool *p, const char *obj) {
    const uintptr_t *w = (const uintptr_t *)obj + 1;
    track_open(w, sizeof *w);
    uintptr_t word = *(const volatile uintptr_t *)w;
    track_close(w, sizeof *w);
    return word == hot_tag(p->hard.secret, obj);
}
/* Whether obj, on h's list, is an object of another slab h owns (the
 * HOT_FREES object), or of another heap's slab that the short path listed
 * (HOT_FOREIGN: on a hardened list the hot object, or one it tagged, whose
 * slab h may have adopted since). Stats ask about another thread's list:
 * its reads race by design there, as racy_list_length's do. */
static NO_TSAN bool hot_object(const heap *h, const char *obj) {
    uintptr_t x = (uintptr_t)obj;
    if (!region_holds(x)) return false;
    const slab *s = slab_of(x);
    heap *owner = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
    const pk_pool *p = h->pool;
    bool ours = owner == h ? s != h->cur
                           : p->hot_foreign && __atomic_load_n(&s->pool, __ATOMIC_RELAXED) == p;
    long idx = ours ? slab_slot_index(s, obj) : -1;
    if (idx < 0 || (uint32_t)idx >= s->bump) return false;
    return owner == h || !p->hardened || obj == h->hot_obj || hot_tagged(p, obj);
}

/* obj, met on a thread's list after prev (NULL: the list's head, which
 * came from a free, so checked as any free of it), is no free slot of the
 * slab the walk expected: reported (uninstall, the drain). */
static PK_COLD void report_unlisted(pk_pool *p, const char *prev, char *obj) {
    if (!prev) check_free(p, obj);
    report_bad_link(p, prev ? prev : obj, obj, "not a free slot of its slab");
}

/* The most objects of other owned slabs h's list may hold: the short
 * path's (HOT_FREES, HOT_LIST) and those pk_free pushed since the list was
 * last empty or drained (OWN_FREES): the heap's budget and the one that
 * makes a drain due, more when the library's own frees (pk_realloc's) pushed them
 * while a drain waits for the call's end (alloc.c), every one counted off
 * own_room. Read racily by stats, as the lists are. */
static NO_TSAN size_t own_budget(const heap *h) { return (size_t)*(const volatile intptr_t *)&h->own_budget; }
static NO_TSAN size_t own_pushed(const heap *h) {
    /* the owner's plain counts (pk_free's fast path keeps them so): another
     * thread's read races by design, as racy_list_length's do, and may
     * meet a budget and a room of two moments (own_adapt moves both):
     * never below 0 */
    intptr_t pushed = (intptr_t)own_budget(h) - *(const volatile intptr_t *)&h->own_room; /* room only falls */
    return pushed > 0 ? (size_t)pushed : 0;
}
static size_t hot_most_of(const pk_pool *p, size_t pushed, size_t budget) {
    return (p->hot_list ? p->hot_list + HOT_FREES : HOT_FREES) + (p->hot_foreign ? HOT_FOREIGN + 1 : 0) +
           (pushed > budget ? pushed : budget + 1);
}
static size_t hot_most(const pk_pool *p, const heap *h) { return hot_most_of(p, own_pushed(h), own_budget(h)); }
_Static_assert(OWN_FREES == 64 && OWN_FREES_BYTES == (size_t)64 << 10 && OWN_FREES_REUSED == 4,
               "pool.h (pk_set_purge_delay) and docs/alloc.md name OWN_FREES' bounds");
/* The list is empty, or holds no object of another slab that pk_free
 * pushed: OWN_FREES' count starts again. */
static void own_restart(heap *h) {
    h->own_room = h->own_budget;
    h->own_direct = false;
}

/* OWN_FREES_REUSED (policy.h): after a drain that met `found` of the
 * `pushed` objects of other slabs pushed since the last one, the budget
 * doubles (up to OWN_FREES_REUSED times the pool's own_frees) if the
 * allocations took most of them back, and is the pool's again if not. */
static void own_adapt(const pk_pool *p, heap *h, size_t pushed, size_t found) {
    intptr_t base = (intptr_t)p->own_frees, b = h->own_budget, to = base;
    if (unlikely(found * OWN_FREES_TAKEN < pushed)) to = b * 2 < base * OWN_FREES_REUSED ? b * 2 : base * OWN_FREES_REUSED;
    if (likely(to == b)) return;
    /* what was pushed while the runs went home stays counted */
    h->own_room += to - b;
    h->own_budget = to;
}

/* Whether x starts one of the first `handed` bytes' slots of the slab
 * whose grid g is set (slab_grid_set): the bound keeps the offset in the
 * range where the grid is exact. */
static inline bool grid_handed(slab_grid g, uintptr_t handed, uintptr_t x) {
    return x - g.objects < handed && slab_grid_has(g, x);
}

/* Whether obj starts one of the slots s has handed out (the first
 * `handed` bytes' worth), g being s's grid: a multiply and two compares
 * where the grid is set, a division where it is not. */
static inline bool slot_handed(const slab *s, slab_grid g, uintptr_t handed, const char *obj) {
    if (likely(g.limit)) return grid_handed(g, handed, (uintptr_t)obj);
    long idx = slab_slot_index(s, obj);
    return idx >= 0 && (uint32_t)idx < s->bump;
}

/* The run of a plain pool's list from *obj that are slots g's slab has
 * handed out (`handed` bytes' worth), as the inline paths and extend leave
 * a thread's list: read, never rewritten, at most `most` of them. Returns
 * their count, *obj left at the first object past the run and *last at
 * the run's last. A call of its own, so that its few words stay in
 * registers, where the checked walk's many would spill them. */
static PK_NOINLINE size_t plain_run(slab_grid g, uintptr_t handed, size_t link_off, size_t most, char **obj,
                                    char **last) {
    size_t k = 0;
    char *o = *obj, *l = *last;
    while (o && k < most && grid_handed(g, handed, (uintptr_t)o)) {
        k++;
        l = o;
        o = (char *)link_load_plain(o, link_off);
    }
    *obj = o;
    *last = l;
    return k;
}

/* The heap's current slab s off it, its list empty now. */
static slab *uninstalled(heap *h, slab *s) {
    list_set(h, NULL, 0);
    own_restart(h);
    list_set_cur(h, NULL, 0);
    h->cur = NULL;
    s->list = SLAB_NOWHERE;
    return s;
}

/* The heap's list goes back onto the current slab's free list (the
 * objects of other owned slabs listed, HOT_FREES and HOT_LIST, come back
 * linked in *hot for the caller to send home: home_hot); the slab is left
 * on no list for the caller to place. Every object is checked to be a slot
 * of the slab, so a broken list is reported here rather than kept (trim,
 * thread exit, destroy), and the walk stops at the most the list can hold
 * (the slab's slots and the hot objects). */
static slab *uninstall(pk_pool *p, heap *h, void **hot) {
    slab *s = h->cur;
    *hot = NULL;
    /* a refill's (the list ran dry): nothing to walk, so none of the walk's
     * set-up (bench/gate.sh's fill row counts a slab change with it) */
    if (!tc_head(h->list)) return uninstalled(h, s);
    size_t n = 0, met = 0, hots = 0, hot_max = hot_most(p, h), most = (size_t)s->capacity + hot_max; /* n: the inline paths keep no count */
    char *first = NULL, *last = NULL, *head = tc_head(h->list);
    /* the slab's bounds held apart from its record, which the link stores
     * below could otherwise alias */
    const slab_grid g = slab_grid_of(s);
    const uintptr_t handed = (uintptr_t)s->bump * s->slot;
    char *obj = head, *prev = NULL;
    if (!p->hardened && g.limit) { /* the checked walk below takes over where the run ends */
        n = met = plain_run(g, handed, p->link_off, most, &obj, &prev);
        if (n) first = head, last = prev;
    }
    for (char *next; obj; prev = obj, obj = next) {
        /* no more than the slab's slots and the hot object: a loop (an
         * object freed twice with others between) is reported, never
         * walked for ever */
        if (unlikely(++met > most)) report_list_overrun(p, s, head, *hot, "the thread's free list");
        /* checked before its link is read: a slot the slab has handed out */
        if (unlikely(!slot_handed(s, g, handed, obj))) {
            if (hots < hot_max && hot_object(h, obj)) {
                next = (char *)link_load(p, obj);
                link_store(p, obj, (uintptr_t)*hot);
                *hot = obj;
                hots++;
                continue;
            }
            report_unlisted(p, prev, obj);
        }
        next = (char *)link_load(p, obj);
        n++;
        /* last's link already leads here unless a hot object came between */
        if (!last) first = obj;
        else if (unlikely(last != prev)) link_store(p, last, (uintptr_t)obj);
        last = obj;
    }
    if (last) {
        link_store(p, last, (uintptr_t)s->free);
        s->free = first;
    }
    s->used -= (uint32_t)n;
    BUMP(h->frees, n);
    return uninstalled(h, s);
}

/* A run whose head is the list's, or longer than the slab has out, holds
 * an object freed twice (reported, naming the run's head). */
void heap_free_home_run(pk_pool *p, heap *h, slab *s, void *head, void *tail, uint32_t k, uint64_t now) {
    void *f = s->free;
    if (unlikely(head == f || s->used < k)) check_report_double_free(p, head);
    link_store(p, tail, (uintptr_t)f);
    s->free = head;
    s->used -= k;
    BUMP(h->frees, k);
    if (s->used == 0) {
        slab_list_remove(s->list == HEAP_FULL ? &h->full : &h->avail, s);
        heap_slab_emptied(p, h, s, now);
    } else {
        if (s->list == HEAP_FULL) {
            slab_list_remove(&h->full, s);
            slab_list_push(&h->avail, s, HEAP_AVAIL);
        }
        h->warm = s;
    }
}

void heap_free_home(pk_pool *p, heap *h, slab *s, void *obj, uint64_t now) {
    heap_free_home_run(p, h, s, obj, obj, 1, now);
}

void heap_free_owned(heap *h, slab *s, void *obj) { heap_free_home(h->pool, h, s, obj, 0); }

/* The drain's run: objects of one slab (word: its base | SLAB_BYTES - 1)
 * met one after another, sent home together (heap_free_home_run), as a
 * program freeing a slab's objects in a row (in the order it made them, or
 * the reverse) makes them. */
typedef struct own_run {
    slab *s;
    uintptr_t word;
    char *head, *tail;
    uint32_t n;
} own_run;

void heap_own_drain(pk_pool *p, heap *h) {
    PK_ASSERT_INTERNAL(p->link_off == 0 && !p->hardened); /* links as they are: OWN_FREES' pools */
    uintptr_t cur = tc_cur(h->list);
    char *first = NULL, *last = NULL, *prev = NULL, *obj = tc_head(h->list);
    /* the objects of other slabs pk_free pushed since the list was last
     * empty or drained, and the most the list can hold (a loop, an object
     * freed twice with others between, is never walked for ever) */
    size_t budget = (size_t)h->own_budget, pushed = budget - (size_t)h->own_room, due = pushed; /* the owner's: plain */
    size_t most = (h->cur ? h->cur->capacity : 0) + hot_most_of(p, pushed, budget);
    own_run r = {NULL, 0, NULL, NULL, 0};
    size_t runs = 0;
    own_restart(h); /* now: what is pushed while the runs go home counts for the next drain */
    /* The object freed last stays the list's head (checked, as the walk
     * checks each): freed again, it is then the head freed again, which
     * pk_free refuses, where sent home it would have been pushed again
     * unseen and handed out twice (a pool whose budget is one object
     * drains at every such free). It counts for the next drain. */
    char *keep = NULL;
    if (obj && ((uintptr_t)obj | (SLAB_BYTES - 1)) != cur) {
        uintptr_t x = (uintptr_t)obj;
        slab *s = region_holds(x) ? slab_of(x) : NULL;
        if (unlikely(!s || s->owner != h || !slab_grid_has(slab_grid_of(s), x))) report_unlisted(p, NULL, obj);
        keep = prev = obj;
        obj = *(char **)obj;
        due -= due > 0;
        most -= most > 0;
    }
    /* The walk goes until it has met them all (pushes and pops are at the
     * head, so they lie above the objects listed before, with the frees
     * of other paths, which keep no count, among them), or to the list's
     * end where the allocations took some: the current slab's objects
     * stay, in their order (unchecked, as the inline free leaves them);
     * the others go home, each checked to be a slot of an owned slab
     * (pk_free checked the slab only) before its link is read. */
    while (obj && due > 0 && most > 0) {
        uintptr_t word = (uintptr_t)obj | (SLAB_BYTES - 1);
        if (word == cur) {
            if (last) *(char **)last = obj;
            else first = obj;
            last = prev = obj;
            obj = *(char **)obj;
            most--;
            continue;
        }
        if (word != r.word) { /* a run of another slab starts */
            if (r.n) heap_free_home_run(p, h, r.s, r.head, r.tail, r.n, 0);
            runs++;
            uintptr_t x = (uintptr_t)obj;
            r.s = region_holds(x) ? slab_of(x) : NULL;
            if (unlikely(!r.s || r.s->owner != h)) report_unlisted(p, prev, obj);
            r.word = word;
            r.n = 0;
            r.head = obj;
        } else {
            *(char **)r.tail = obj;
        }
        /* the run's objects while they follow one another on the list, as
         * linked there (the grid read once: the record may lie anywhere) */
        slab_grid g = slab_grid_of(r.s);
        size_t k = 0, lim = due < most ? due : most;
        do {
            if (unlikely(!slab_grid_has(g, (uintptr_t)obj))) report_unlisted(p, prev, obj);
            prev = obj;
            obj = *(char **)obj;
        } while (++k < lim && ((uintptr_t)obj | (SLAB_BYTES - 1)) == word); /* the end (NULL) is no slab's */
        r.tail = prev;
        r.n += (uint32_t)k;
        due -= k;
        most -= k;
    }
    if (r.n) heap_free_home_run(p, h, r.s, r.head, r.tail, r.n, 0);
    if (last) {
        *(char **)last = obj;
        obj = first;
    }
    if (keep) {
        *(char **)keep = obj;
        obj = keep;
    }
    list_set(h, obj, h->count); /* the count of an inline-served list is not kept */
    own_adapt(p, h, pushed, pushed - due);
    h->own_room -= keep != NULL;
    if (due == 0 && runs * OWN_DIRECT_RUN > pushed) {
        /* OWN_DIRECT: the kept head stays, uncounted (pk_free compares it) */
        h->own_direct = true;
        h->own_room = 0;
    }
}

/* obj, an object of another owned slab that was on h's list (HOT_FREES),
 * home to its slab; with list_moves its slab moves lists as a free would
 * move it, else (the pool's lock held: the heap is being abandoned) it
 * only goes onto the slab's list. */
static void free_home_hot(pk_pool *p, heap *h, void *obj, bool list_moves) {
    slab *s = slab_of((uintptr_t)obj);
    if (__atomic_load_n(&s->owner, __ATOMIC_RELAXED) != h) {
        remote_push_one(p, s, obj);
        return;
    }
    if (list_moves) {
        heap_free_home(p, h, s, obj, 0);
        return;
    }
    link_store(p, obj, (uintptr_t)s->free); /* the slab goes back to the pool as it is */
    s->free = obj;
    s->used--;
    BUMP(h->frees, 1);
}

/* The objects uninstall found of other owned slabs (linked through their
 * link words) home to their slabs, as free_home_hot says. */
static void home_hot(pk_pool *p, heap *h, void *hot, bool list_moves) {
    while (hot) {
        void *next = (void *)link_load(p, hot);
        free_home_hot(p, h, hot, list_moves);
        hot = next;
    }
}

/* Remote frees of an owned slab that is not current go onto its free list. */
static void collect_into(pk_pool *p, heap *h, slab *s) {
    size_t n = central_splice_remote(p, s);
    if (!n) return;
    BUMP(h->collected, n);
    BUMP(h->frees, n);
}

/* Whether the pool has a slab a heap could take without mapping one: read
 * without the lock, a hint (a wrong one costs a lock or a page). */
static bool pool_has_slab(const pk_pool *p) {
    return __atomic_load_n(&p->lists[SLAB_PARTIAL].count, __ATOMIC_RELAXED) +
               __atomic_load_n(&p->lists[SLAB_EMPTY].count, __ATOMIC_RELAXED) > 0;
}

/* Whether allocating from s would touch memory touched before. */
static bool has_touched_free(const slab *s) { return s->free || s->bump < s->high; }

/* Every full slab of the pool's collected, when ORPHAN_WALK says the remote
 * frees made since the last walk may have emptied some (policy.h): a heap
 * is about to take a new slab otherwise. Under the pool's lock. */
static void collect_orphans_due(pk_pool *p) {
    if (p->lists[SLAB_PARTIAL].head || p->lists[SLAB_EMPTY].head || !p->lists[SLAB_FULL].head) return;
    uint64_t n = __atomic_load_n(&p->remote_frees, __ATOMIC_RELAXED);
    for (const heap *x = p->heaps; x; x = x->next) n += __atomic_load_n(&x->remote_frees, __ATOMIC_RELAXED);
    /* a heap's count restarts at a reset: then n is below what was seen */
    if (n >= p->remote_seen && n - p->remote_seen <= p->lists[SLAB_FULL].count / ORPHAN_WALK) return;
    p->remote_seen = n;
    central_collect_own(p);
}

_Static_assert(OWNED_WALK == 2 && OWNED_WALK_MIN == 16, "docs/design.md names the owned walk's bounds");

void heap_walk_due(pk_pool *p, heap *h) {
    if (h->slabs < h->walk_at || h->slabs < OWNED_WALK_MIN) return;
    /* each owned slab on avail or full whose remote frees came in: home,
     * emptied as an owner's free empties it (a spare, the one before to
     * the pool), else at the front of avail */
    slab_list *lists[2] = {&h->avail, &h->full};
    for (int l = 0; l < 2; l++)
        for (slab *s = lists[l]->head, *next; s; s = next) {
            next = s->next;
            if (!__atomic_load_n(&s->thread_free, __ATOMIC_RELAXED)) continue;
            collect_into(p, h, s);
            slab_list_remove(lists[l], s);
            if (s->used) slab_list_push(&h->avail, s, HEAP_AVAIL);
            else heap_slab_emptied(p, h, s, 0);
        }
    h->walk_at = h->slabs * OWNED_WALK;
}

/* Whether h's next refill that needs a slab would find none of its own
 * with slots touched before (next_slab's order: the spare, then the front
 * of avail) and go on to the pool. Only then may a free adopt a slab
 * (pool_free.c, adopt), which takes the pool's slab's place: a heap that
 * adopted one at every refill while it had its own to take next (a thread
 * that lives on beside threads that come and go, freeing what they left:
 * mstress's main thread) gathered slabs faster than it used them, and the
 * next threads' frees into them waited on their thread_free, uncollected,
 * for as long as it lived. */
static bool short_of_slab(const heap *h) {
    return !h->spare && !(h->avail.head && has_touched_free(h->avail.head));
}

/* The next slab to allocate from, owned and on no list: the spare, the
 * slab the owner last freed into (warm) if it is on avail, one of the
 * heap's own with free slots (the front of avail), a full one whose remote
 * frees came in, or one from the pool. With may_map false only slabs with
 * free slots in memory touched before, with may_map true any, a new one
 * last. NULL (with ENOMEM if may_map) when there is none. The avail list
 * keeps slabs with freed slots at the front and those with only fresh ones
 * at the back. The warm slab first: its list's head is the object freed
 * last, still in cache, and the next ones were freed not long before; the
 * front of avail is the slab that left full first, whose frees may be long
 * cold. Random replacement over a live set that outgrows the cache (a
 * free, then an allocation, of random sizes) so reuses what it just freed,
 * as a free list per page does (docs/results.md, "Random replacement"). */
static slab *next_slab(pk_pool *p, heap *h, bool may_map, uint64_t now) {
    slab *s = spare_pop(h);
    if (s) return s;
    s = h->warm;
    h->warm = NULL;
    if (s && s->list == HEAP_AVAIL && s->free) {
        PK_ASSERT_INTERNAL(s->owner == h);
        slab_list_remove(&h->avail, s);
        return s;
    }
    s = h->avail.head;
    if (s && has_touched_free(s)) {
        slab_list_remove(&h->avail, s);
        return s;
    }
    int scan = __atomic_load_n(&p->remote_any, __ATOMIC_RELAXED) ? FULL_SCAN : 0;
    for (int i = 0; i < scan && (s = h->full.head) != NULL; i++) {
        slab_list_remove(&h->full, s);
        if (__atomic_load_n(&s->thread_free, __ATOMIC_RELAXED)) {
            collect_into(p, h, s);
            return s;
        }
        slab_list_append(&h->full, s, HEAP_FULL);
    }
    if (pool_has_slab(p) || (may_map && !h->avail.head)) {
        pool_lock_for_use(p, now);
        collect_orphans_due(p);
        s = central_slab_for_heap(p, h, may_map && !h->avail.head);
        if (s) count_in(p, h, s);
        purge_tick(p, now);
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

_Static_assert(EXTEND_BYTES / 16 == 256 && EXTEND_BYTES / EXTEND_FIRST == 64 && EXTEND_FIRST == HARD_EXTEND,
               "policy.h's comment on EXTEND_FIRST names these figures");

/* Links the current slab's next never-used slots onto the empty list. */
static bool extend(pk_pool *p, heap *h, slab *s) {
    if (s->bump >= s->capacity) return false;
    void *list = NULL;
    size_t before = slab_touched(p, s);
    /* Slots touched before go all at once (no page to fault in); fresh ones
     * as many as were handed out, from EXTEND_FIRST up to a page. */
    size_t k = s->bump < s->high ? s->high - s->bump : policy_extend_next(p->extend, s->bump);
    k = slab_carve(&p->carve, &h->rng, s, k, &list);
    BUMP(h->allocs, k);
    BUMP(h->resident, slab_touched(p, s) - before);
    list_set(h, list, k);
    return true;
}

/* Whether s, the current slab, used up, leaves the heap for the pool
 * rather than its full list: a slab of one slot (a huge slot) whose last
 * object came home by another thread's free (remote frees collected since
 * it last left a heap: slab.migrated). Its object will likely be freed by
 * another thread again, which then takes the slab as its own (pool_free.c,
 * adopt) and reuses it; on the full list it waited for its owner's next
 * look at remote frees while a thread short of a slab mapped a new one
 * (mimalloc abandons its full pages of large blocks at once). A slab whose
 * object its owner frees stays: its pool pattern pays no lock. */
static bool leaves_when_full(slab *s) {
    bool leave = s->capacity == 1 && s->used == 1 && s->migrated;
    s->migrated = false;
    return leave;
}

/* The list is empty: fill it. False with ENOMEM. */
static bool refill(pk_pool *p, heap *h, uint64_t now) {
    if (h->pend_slab) remote_flush(p, h); /* what waits goes home now */
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
        next = next_slab(p, h, false, now);
        if (!next && extend(p, h, s)) return true;
        void *hot;
        uninstall(p, h, &hot); /* every slot out, or fresh ones left for later */
        bool leave = leaves_when_full(s);
        if (s->bump < s->capacity) slab_list_append(&h->avail, s, HEAP_AVAIL);
        else if (!leave) slab_list_append(&h->full, s, HEAP_FULL);
        home_hot(p, h, hot, true);
        if (leave) give_to_pool(p, h, s, now);
    }
    if (!next) next = next_slab(p, h, true, now);
    if (!next) {
        /* No slab: the one used up stays current (on the full list, as
         * next_slab took the avail one if there were any), so a heap that
         * owns slabs has a current one, as pk_free's path (OWN_FREES)
         * relies on. */
        if (s && s->list == HEAP_FULL) {
            slab_list_remove(&h->full, s);
            install(p, h, s);
        }
        return false;
    }
    install(p, h, next);
    return tc_head(h->list) || extend(p, h, next);
}

/* The pool's peak (stats' peak_live): a refill adds what the heap took out
 * or brought home since it last added to the pool's estimate, one atomic
 * add rather than one per object, when the heap's count reached a new high
 * of its own (a peak goes in at once) or moved by REMOTE_BATCH or more (the
 * step a thread that only frees reports in); exact, every change at once.
 * A thread that replaces objects in a steady state (larson: a free, then an
 * allocation, of random sizes) so adds nothing per refill to the one word
 * every thread's refills of the pool share, and each heap's share of the
 * estimate stays within REMOTE_BATCH of its count. */
static void note_peak(pk_pool *p, heap *h, bool exact) {
    /* Out: on its list or with the user. Remote frees leave the count when
     * they are made (the freeing heap's remote_frees) and come back when the
     * owner collects them onto its lists (collected), so objects waiting
     * to be collected are not counted as out. */
    uint64_t frees = h->frees + h->short_frees;
    int64_t out = (int64_t)(h->allocs - frees - h->remote_frees + h->collected), d = out - h->synced;
    if (!d) return;
    if (!exact && out <= h->synced_high && d < REMOTE_BATCH && d > -(int64_t)REMOTE_BATCH) return;
    h->synced = out;
    if (out > h->synced_high) h->synced_high = out;
    int64_t now = __atomic_add_fetch(&p->out_est, d, __ATOMIC_RELAXED);
    int64_t peak = __atomic_load_n(&p->peak_est, __ATOMIC_RELAXED);
    while (now > peak && !__atomic_compare_exchange_n(&p->peak_est, &peak, now, true, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED)) {
    }
}

void heap_note_peak(pk_pool *p, heap *h) { note_peak(p, h, false); }

static PK_NOINLINE void *lean_refused(pk_pool *p, char *obj, char *next) {
    report_bad_link(p, obj, next, "not a free slot of its slab");
}

/* A hardened list's link that leads out of the current slab: to the hot
 * object, the one object of another owned slab such a list holds
 * (HOT_FREES), put on it when it was empty and linked to by the objects of
 * the current slab freed after it; or to an object of another heap's slab
 * the short path listed (HOT_FOREIGN: pool_free.c, foreign_home_hardened),
 * a slot of the pool that slab has handed out whose second word carries
 * its tag (harden.h, hot_tag). hot_obj stays
 * set after the inline allocation took it, until the next refill: a link
 * to it then is one the secret encoded, which only the library writes. A
 * link the program overwrote decodes to another value (the object's
 * address is in the encoding), which names no such slot but by chance. */
static inline bool hot_link(const heap *h, const void *next) {
    if (!next) return false;
    if (next == h->hot_obj) return true;
    /* the tag, read once the address is known to start a slot of the pool:
     * the short path wrote it, so no slab owner or count need be asked (a
     * slow allocation in two, where a thread frees its own objects and
     * other threads' in turn) */
    uintptr_t x = (uintptr_t)next;
    if (!region_holds(x)) return false;
    const slab *s = slab_of(x);
    return __atomic_load_n(&s->pool, __ATOMIC_RELAXED) == h->pool && slab_starts_slot(s, next) &&
           hot_tagged(h->pool, (const char *)next);
}

void *heap_alloc_lean(pk_pool *p, heap *h) {
    tc_list *l = h->list;
    char *obj = tc_head(l);
    if (!obj) return NULL;
    char *next = (char *)link_decode(p, obj, *(uintptr_t *)(obj + p->link_off));
    if (unlikely(next && ((uintptr_t)next | p->slab_low) != tc_cur(l)) && !hot_link(h, next))
        return lean_refused(p, obj, next);
    __atomic_store_n(&l->head, next, __ATOMIC_RELAXED); /* no count: as inline */
    return obj;
}

/* h's list, empty, refilled (the next objects of its current slab, or the
 * next slab) and its per-refill state reset; false with errno ENOMEM. */
static bool list_refill(pk_pool *p, heap *h, uint64_t now) {
    if (!refill(p, h, now)) {
        errno = ENOMEM;
        return false;
    }
    h->may_adopt = short_of_slab(h);
    /* the list holds none of another slab's objects now: HOT_LIST's
     * budget is whole again */
    h->hot_obj = NULL;
    h->foreign_room = p->foreign_budget;
    h->hot_room = p->hot_list;
    h->hot_bar = p->hot_list ? UINTPTR_MAX : 0;
    /* HOT_COUNT: from 0, and no count written before passes */
    h->hot_n = 0;
    h->hot_stop = NULL;
    h->hot_key += 0x9E3779B97F4A7C15ull;
    own_restart(h);
    note_peak(p, h, false);
    HEAP_VALIDATE(p, h);
    return true;
}

/* The head of h's list, whose link is checked on a hardened pool (it leads
 * within the current slab, to the hot object, or to the end); *count
 * follows. */
static inline char *list_pop(pk_pool *p, heap *h, char *obj, size_t *count) {
    char *next = (char *)link_load(p, obj);
    /* harden_check_slab_link's check, a link out of the current slab asked
     * about only once it fails */
    if (p->hardened && next && !slab_slot_handed(h->cur, next) && !hot_link(h, next))
        harden_check_slab_link(p, h->cur, obj, next); /* reports it */
    --*count;
    return next;
}

void *heap_alloc(pk_pool *p, tc_slot *c, uint64_t now) {
    heap *h = heap_get(p, c);
    if (!tc_head(h->list) && !list_refill(p, h, now)) return NULL;
    char *obj = tc_head(h->list);
    size_t count = h->count;
    char *next = list_pop(p, h, obj, &count);
    list_set(h, next, count);
    return obj;
}

size_t heap_alloc_bulk(pk_pool *p, tc_slot *c, void **objs, size_t n, uint64_t now) {
    heap *h = heap_get(p, c);
    size_t i = 0;
    while (i < n) {
        if (!tc_head(h->list) && !list_refill(p, h, now)) break;
        /* the list's run popped with its count in a register, stored
         * once; the head is stored at each pop, as heap_alloc's, so that a
         * fault on a link a default pool does not check finds the broken
         * link at the list's head (crash.c) */
        char *obj = tc_head(h->list);
        size_t count = h->count;
        do {
            objs[i++] = obj;
            obj = list_pop(p, h, obj, &count);
            __atomic_store_n(&h->list->head, obj, __ATOMIC_RELAXED);
        } while (obj && i < n);
        list_set(h, obj, count);
    }
    return i;
}

/* ---- Whole heaps. ---- */

/* Every slab of h but the current one, off its list, given to fn. */
static void each_other_slab(pk_pool *p, heap *h, void (*fn)(pk_pool *, heap *, slab *)) {
    slab *s;
    while ((s = spare_pop(h)) != NULL) fn(p, h, s);
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
    bytes_zero(h, sizeof *h);
    memset(c, 0, sizeof *c); /* a line: gcc stores it in a few moves */
}

/* s to the pool as its heap is given back: its left_head is its free
 * list's head, taken before other threads' frees are collected onto it
 * (a slab that leaves a heap another way keeps none: count_in cleared it). */
static void abandon_slab(pk_pool *p, heap *h, slab *s) {
    __atomic_store_n(&s->left_head, s->free, __ATOMIC_RELAXED);
    collect_into(p, h, s);
    to_pool(p, h, s);
}

/* Folds the heap's counters into the pool's and takes it off the pool's
 * list; caller holds the pool's lock. */
static void fold(pk_pool *p, heap *h) {
    p->allocs += h->allocs; /* stats derive frees from allocs and the slabs' counts */
    __atomic_add_fetch(&p->remote_frees, h->remote_frees, __ATOMIC_RELAXED);
    __atomic_add_fetch(&p->remote_base, (int64_t)(h->pushed - h->collected), __ATOMIC_RELAXED);
    if (h->prev) h->prev->next = h->next;
    else p->heaps = h->next;
    if (h->next) h->next->prev = h->prev;
}

void heap_abandon(pk_pool *p, tc_slot *c) {
    heap *h = c->heap;
    if (!h) return;
    ASSERT_POOL_LOCKED(p);
    if (h->pend_slab) remote_flush(p, h);
    if (h->cur) {
        void *hot;
        slab *s = uninstall(p, h, &hot);
        home_hot(p, h, hot, false);
        abandon_slab(p, h, s);
    }
    each_other_slab(p, h, abandon_slab);
    PK_ASSERT_INTERNAL(h->slabs == 0 && h->resident == 0);
    note_peak(p, h, true); /* its count stays: its live objects are still out */
    fold(p, h);
    heap_clear(h, c);
}

void heap_thread_exit(pk_pool *p, tc_slot *c) {
    pool_lock_for_use(p, os_now_ms()); /* what it gives back is fresh */
    heap_abandon(p, c);
    /* A thread that freed what it made and ended leaves empty slabs that no
     * thread may ask for again, and the purge tick that would give them back
     * runs only on a call that reaches the library: the threads left may
     * never make one (their lists serve them). So the pool keeps no more
     * empty slabs than slabs in use, now, unless the threads that come
     * after make them again (purge_thread_exit). */
    purge_thread_exit(p);
    POOL_VALIDATE(p);
    pool_unlock(p);
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
    to_pool(p, h, s);
}

/* A slab of a heap being forgotten for a reset: to the pool empty, its
 * objects unread, its mark of slots touched (high) kept. */
static void forget_slab_kept(pk_pool *p, heap *h, slab *s) {
    slab_forget_objects(s);
    to_pool(p, h, s);
}

static void forget_all(pk_pool *p, void (*forget)(pk_pool *, heap *, slab *)) {
    for (heap *h; (h = p->heaps) != NULL;) {
        tc_slot *c = h->slot;
        if (h->cur) forget(p, h, h->cur);
        each_other_slab(p, h, forget);
        p->heaps = h->next;
        heap_clear(h, c);
    }
}

void heap_forget_all(pk_pool *p) { forget_all(p, forget_slab); }
void heap_forget_all_kept(pk_pool *p) { forget_all(p, forget_slab_kept); }

/* The slab a reset keeps as h's spare: its last spare, else its first
 * other owned slab, off its list; NULL when h owns no slab but the current
 * one. */
static slab *spare_for_reset(heap *h) {
    slab *s = spare_pop(h);
    if (s) return s;
    slab_list *l = h->avail.head ? &h->avail : &h->full;
    if ((s = l->head) != NULL) slab_list_remove(l, s);
    return s;
}

void heap_reset_own(pk_pool *p, heap *h) {
    ASSERT_POOL_LOCKED(p);
    /* The heap keeps what any heap may keep with nothing out: its current
     * slab and a spare (a request that used one more slab of the class
     * uses it again at once); the rest goes to the pool, whose empty slabs
     * go back after the purge delay. */
    slab *spare = spare_for_reset(h);
    each_other_slab(p, h, forget_slab_kept);
    if (spare) {
        slab_forget_objects(spare);
        spare_push(h, spare);
    }
    if (h->cur) { /* installed, so used counts what its list holds: none now */
        slab_forget_objects(h->cur);
        list_set(h, NULL, 0);
    }
    own_restart(h);
    /* What waited to go home to another slab went with the reset. */
    h->pend_slab = NULL;
    h->pend_head = h->pend_tail = NULL;
    h->pend_n = 0;
    h->synced = h->synced_high = 0;
    h->allocs = h->frees = h->short_frees = h->remote_frees = h->collected = h->pushed = 0;
}


/* The length of another thread's list of a pool the inline paths or the
 * hardened lean path serve (they keep no count). Its thread may be changing
 * the list, and the objects handed out from it, meanwhile: the walk reads
 * only within the current slab (mapped for as long as the caller holds the
 * pool's lock, which releasing a slab takes) and only slot starts, stops
 * after the slab's capacity, and is exact when the thread is quiescent, as
 * the contract asks for exact stats. Its reads race by design, so they are
 * left out of ThreadSanitizer's view. */
static NO_TSAN size_t racy_list_length(const pk_pool *p, const heap *h) {
    const tc_list *l = h->list;
    uintptr_t cur = tc_cur(l);
    const slab *s = h->cur; /* records stay mapped while the pool holds the slab */
    if (!cur || !s || (uintptr_t)s->base != (cur & ~(uintptr_t)(SLAB_BYTES - 1))) return 0;
    size_t n = 0, most = s->capacity + hot_most(p, h);
    for (uintptr_t x = (uintptr_t)tc_head(l); x && n < most; n++) {
        if (slab_slot_index(s, (void *)x) < 0 && !hot_object(h, (const char *)x)) break;
        uintptr_t v = *(volatile uintptr_t *)(x + p->link_off);
        x = p->hardened ? link_decode(p, (void *)x, v) : v;
    }
    return n;
}

/* The used counts of the slabs heaps own, read racily like the lists. */
static NO_TSAN size_t racy_owned_used(const pk_pool *p) {
    size_t used = 0, left = p->slabs_total;
    for (const slab *s = p->all; s; s = s->all_next) {
        slab_walk_step(p, &left);
        if (__atomic_load_n(&s->owner, __ATOMIC_RELAXED)) used += *(volatile uint32_t *)&s->used;
    }
    return used;
}

void heap_sum(const pk_pool *p, heap_sums *out) {
    bool uncounted = p->list_at != LIST_HEAP || p->hard.lean;
    memset(out, 0, sizeof *out);
    for (const heap *h = p->heaps; h; h = h->next) {
        size_t listed = uncounted ? racy_list_length(p, h) : __atomic_load_n(&h->count, __ATOMIC_RELAXED);
        out->idle += listed + __atomic_load_n(&h->pend_n, __ATOMIC_RELAXED);
        out->resident += __atomic_load_n(&h->resident, __ATOMIC_RELAXED);
        out->allocs += __atomic_load_n(&h->allocs, __ATOMIC_RELAXED);
        out->remote_frees += __atomic_load_n(&h->remote_frees, __ATOMIC_RELAXED);
        out->pending += (int64_t)(__atomic_load_n(&h->pushed, __ATOMIC_RELAXED) -
                                  __atomic_load_n(&h->collected, __ATOMIC_RELAXED));
    }
    out->used = racy_owned_used(p);
}

void heap_fork_child(pk_pool *p, const tc_slot *mine, const tc_slot *mine_end) {
    heap *kept = NULL;
    bool dropped = false;
    for (heap *h = p->heaps, *next; h; h = next) {
        next = h->next;
        if (h->slot >= mine && h->slot < mine_end) {
            kept = h;
            continue;
        }
        dropped = true;
        /* Its thread is gone and may have been changing it: only the
         * counters the pool's lock guards are read. */
        p->heap_slabs -= h->slabs;
        p->heap_bytes -= h->bytes;
        p->allocs += h->allocs;
    }
    PK_SET_IF_CHANGED(p->heaps, kept);
    if (kept) {
        PK_SET_IF_CHANGED(kept->prev, NULL);
        PK_SET_IF_CHANGED(kept->next, NULL);
    }
    if (kept && kept->pend_slab && __atomic_load_n(&kept->pend_slab->owner, __ATOMIC_RELAXED) != kept &&
        __atomic_load_n(&kept->pend_slab->owner, __ATOMIC_RELAXED) != NULL) {
        /* waiting for a slab about to be lost: its objects stay counted live */
        kept->pend_slab = NULL;
        kept->pend_head = kept->pend_tail = NULL;
        kept->pend_n = 0;
    }
    /* One walk of the pool's list of all slabs (whose owner changes only
     * under the pool's lock): the slabs of the heaps gone are lost, their
     * waiting frees with them; and as a thread gone may have counted a
     * push it had not made yet, the pending total is counted afresh from
     * the other slabs' lists. With no heap gone and no remote free ever
     * begun (remote_any is set before a push's release), no slab has
     * another owner and every list is empty: nothing to walk, where the
     * walk would read every slab's header (a fork of a large heap). */
    int64_t pending = 0;
    size_t left = p->slabs_total;
    bool walk = dropped || __atomic_load_n(&p->remote_any, __ATOMIC_RELAXED);
    for (slab *s = walk ? p->all : NULL; s; s = s->all_next) {
        slab_walk_step(p, &left);
        heap *o = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
        if (o && o != kept) central_lose_slab(p, s);
        else pending += (int64_t)central_count_remote(p, s);
    }
    if (kept) pending -= (int64_t)(kept->pushed - kept->collected);
    PK_SET_IF_CHANGED(p->remote_base, pending);
}

/* ---- The heap's identities (HEAP_VALIDATE). ---- */

#define VALID(cond)                                                        \
    do {                                                                   \
        if (unlikely(!(cond))) assert_fail(__FILE__, __LINE__, #cond);     \
    } while (0)

static void owned_is_valid(const pk_pool *p, const heap *h, const slab *s, uint32_t list) {
    VALID(s->pool == p && s->owner == h && s->list == list);
    VALID(s->used <= s->bump && s->bump <= s->high && s->high <= s->capacity);
    VALID(list != HEAP_FULL || s->bump == s->capacity);
    VALID(list != HEAP_AVAIL || s->free || s->bump < s->capacity);
    VALID(list != HEAP_CUR || !s->free);
}

bool heap_is_valid(const pk_pool *p, const heap *h) {
    size_t slabs = 0, bytes = 0;
    if (h->cur) {
        owned_is_valid(p, h, h->cur, HEAP_CUR);
        slabs++, bytes += h->cur->span;
        VALID(tc_cur(h->list) == cur_word(p, h->cur));
        /* The list as far as it is well formed: a link the program broke is
         * the checks' to report (uninstall, the hardened paths), not an
         * internal fault. */
        size_t n = 0, hot = 0, hot_max = hot_most(p, h);
        for (char *obj = tc_head(h->list); obj && n <= h->cur->capacity + hot_max; obj = (char *)link_load(p, obj)) {
            long idx = slab_slot_index(h->cur, obj);
            if (idx < 0 && hot_object(h, obj)) hot++;
            else if (idx < 0 || (uint32_t)idx >= h->cur->bump) break;
            n++;
        }
        VALID(hot <= hot_max && n - hot <= h->cur->used);
    } else {
        VALID(!tc_head(h->list) && !tc_cur(h->list));
    }
    size_t spares = 0;
    for (const slab *s = h->spare; s && spares <= p->spares; s = s->next, spares++) {
        VALID(s->owner == h && s->used == 0 && s->list == SLAB_NOWHERE);
        slabs++, bytes += s->span;
    }
    VALID(spares == h->spares && spares <= p->spares);
    const slab_list *lists[2] = {&h->avail, &h->full};
    /* bounded by the heap's own count (the pool's changes under its lock,
     * which this owner's check does not take) */
    size_t left = h->slabs;
    for (int l = 0; l < 2; l++) {
        size_t n = 0;
        const slab *prev = NULL;
        for (const slab *s = lists[l]->head; s; prev = s, s = s->next) {
            VALID(left-- > 0);
            VALID(s->prev == prev);
            owned_is_valid(p, h, s, l == 0 ? HEAP_AVAIL : HEAP_FULL);
            n++, bytes += s->span;
        }
        VALID(n == lists[l]->count && lists[l]->tail == prev);
        slabs += n;
    }
    VALID(slabs == h->slabs && bytes == h->bytes);
    VALID(!h->pend_slab || (h->pend_slab->owner != h && h->pend_n > 0 && h->pend_n < REMOTE_BATCH));
    return true;
}
