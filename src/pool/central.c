/* A pool's own slabs (central.h says which), under its lock (or on a LOCAL
 * pool's one thread).
 *
 * Slabs move between three lists: PARTIAL (some slots free), FULL (none
 * free) and EMPTY (all free). Objects are taken from partial slabs first so
 * that empty ones stay empty and can go back to the system; an empty slab
 * remembers the purge tick it emptied at (purge.c applies the rules).
 */
#include "pool/central.h"
#include "pool/harden.h"
#include "pool/check.h"
#include "pool/pool_list.h"

#include <errno.h>
#include <string.h>

/* Bytes of every pool's slabs (stats.h's process figures): they come and
 * go here. */
gauge pool_bytes;

/* A slab's counts agree with its list (POOLKIT_ASSERT >= 2). */
static inline void assert_slab(const pk_pool *p, const slab *s) {
    (void)p;
    (void)s;
    PK_ASSERT_INTERNAL(s->pool == p && s->used <= s->bump && s->bump <= s->capacity);
    PK_ASSERT_INTERNAL(s->list != SLAB_EMPTY || s->used == 0);
    PK_ASSERT_INTERNAL(s->list != SLAB_FULL || s->used == s->capacity);
}

static void move_slab(pk_pool *p, slab *s, slab_list_id to) {
    if (s->list == (uint32_t)to) return;
    if (s->list < SLAB_LISTS) slab_list_remove(&p->lists[s->list], s);
    slab_list_push(&p->lists[to], s, to);
}

/* SHARE_EMPTY, GIVE_EMPTY (policy.h): whether some pool may hold an empty
 * slab another could take, of a slab's span ([0]) or of a huge slot ([1]).
 * Set as a slab joins a pool's empty list (read first, so the line is
 * written only when it changes), cleared by a share of its kind that found
 * fewer than it looked for. */
static bool empties_held[2];

/* GIVE_EMPTY: whether a slab emptied since a give last counted too few
 * empty bytes to give any, so that a program that maps fresh slabs with
 * few empty ones held (a pool made for each of many requests) does not
 * look at every pool at each step of them: as many pools as steps. */
static bool give_armed;

static void note_empty_of(bool huge) {
    if (!__atomic_load_n(&empties_held[huge], __ATOMIC_RELAXED)) __atomic_store_n(&empties_held[huge], true, __ATOMIC_RELAXED);
    if (!__atomic_load_n(&give_armed, __ATOMIC_RELAXED)) __atomic_store_n(&give_armed, true, __ATOMIC_RELAXED);
}

static void note_empty(const pk_pool *p) { note_empty_of(p->geo.span > SLAB_BYTES); }

static bool empties_may_wait(bool huge) {
    return __atomic_load_n(&empties_held[0], __ATOMIC_RELAXED) ||
           (huge && __atomic_load_n(&empties_held[1], __ATOMIC_RELAXED));
}

static void emptied(pk_pool *p, slab *s) {
    move_slab(p, s, SLAB_EMPTY);
    s->empty_tick = p->tick_no;
    note_empty(p);
}

/* HOT_FOREIGN's switch (policy.h), as the slab count crosses its bound:
 * written only then, so that the frees that read it keep their line. */
static void count_foreign(pk_pool *p) {
    bool on = p->hot_foreign && p->slabs_total >= HOT_FOREIGN_SLABS;
    if (on != p->foreign_on) __atomic_store_n(&p->foreign_on, on, __ATOMIC_RELAXED);
}

static size_t release_slab(pk_pool *p, slab *s, bool cache);

_Static_assert(SHARE_EMPTY_SLABS * SLAB_BYTES == (size_t)1 << 20, "policy.h: a share takes at most 1 MiB");
_Static_assert(GIVE_EMPTY_FLOOR == (size_t)16 << 20 && GIVE_EMPTY_PART == 4,
               "docs/alloc.md and policy.h name the floor: 16 MiB, at most a quarter of the pools' bytes");

/* What a share (share_empties, central_give_empties) is after: the bytes
 * of slabs still to take, whether slabs of huge slots count, and the pool
 * that asks (whose lock the caller holds: never tried), if any. */
typedef struct share {
    pk_pool *asking;
    size_t left;
    bool huge;
    size_t span_min; /* only pools of slabs this long */
    bool keep;       /* their places kept for the next slab (else given back) */
} share;

/* One pool's part of a share: its empty slabs beyond SHARE_EMPTY_KEEP and
 * its reserve, oldest first, become kept places or go back. Not a pool
 * whose slots are a mapping of their own unless the share takes them (no
 * other pool's slab fits its place), nor one with a destructor (it would
 * run user code under two pools' locks). */
static void share_one(pk_pool *q, void *arg) {
    share *sh = arg;
    if (q == sh->asking || !sh->left || q->destruct || (!sh->huge && q->geo.span > SLAB_BYTES) ||
        q->geo.span < sh->span_min)
        return;
    slab_list *empty = &q->lists[SLAB_EMPTY];
    while (sh->left && empty->count > SHARE_EMPTY_KEEP && empty->tail) {
        slab *s = empty->tail;
        if (q->slab_free - s->capacity < q->keep_free) break;
        size_t bytes = release_slab(q, s, sh->keep);
        sh->left = bytes < sh->left ? sh->left - bytes : 0;
    }
}

/* A share over every pool but the asking one's; cleared first, the flag
 * is set again where the share ran short of pools (a lock not taken) or
 * took all it asked for (more may wait). */
static size_t share_run(share *sh) {
    size_t asked = sh->left;
    __atomic_store_n(&empties_held[0], false, __ATOMIC_RELAXED);
    if (sh->huge) __atomic_store_n(&empties_held[1], false, __ATOMIC_RELAXED);
    if (!pools_try_each_shared(share_one, sh) || !sh->left) { /* more may wait */
        note_empty_of(false);
        if (sh->huge) note_empty_of(true);
    }
    return asked - sh->left;
}

/* SHARE_EMPTY (policy.h): p is about to map a fresh slab. Where no backed
 * place is kept and some pool may hold empty slabs, up to
 * SHARE_EMPTY_SLABS of them become kept places first, which region_take
 * hands out before any fresh one. Only tried locks: the pool list's lock
 * comes before p's, which the caller holds, and another pool's may be held
 * by a thread that waits for p's. */
static void share_empties(pk_pool *p) {
    if (!empties_may_wait(false) || region_kept_bytes() >= SLAB_BYTES) return;
    share sh = {p, SHARE_EMPTY_SLABS * SLAB_BYTES, false, 0, true};
    share_run(&sh);
}

/* The bytes of q's empty slabs a give may take, added to *arg. */
static void count_one(pk_pool *q, void *arg) {
    size_t n = q->lists[SLAB_EMPTY].count;
    if (!q->destruct && n > SHARE_EMPTY_KEEP) *(size_t *)arg += (n - SHARE_EMPTY_KEEP) * q->geo.span;
}

/* Fresh bytes of large blocks asked for since the pools were last looked
 * at (GIVE_EMPTY_STEP). */
static size_t give_due;

/* GIVE_EMPTY (policy.h): `bytes` of fresh pages are about to be faulted
 * in for a large block, or for a slab of asking's (whose lock the caller
 * holds), or NULL. */
static size_t give_empties(pk_pool *asking, size_t bytes) {
    if (!bytes || !empties_may_wait(true) || !__atomic_load_n(&give_armed, __ATOMIC_RELAXED)) return 0;
    size_t due = __atomic_add_fetch(&give_due, bytes, __ATOMIC_RELAXED), held = 0;
    if (due < GIVE_EMPTY_STEP) return 0;
    __atomic_store_n(&give_due, 0, __ATOMIC_RELAXED);
    if (!pools_try_each_shared(count_one, &held)) return 0;
    size_t floor = policy_give_floor(__atomic_load_n(&pool_bytes.now, __ATOMIC_RELAXED));
    if (held <= floor) {
        __atomic_store_n(&give_armed, false, __ATOMIC_RELAXED);
        return 0;
    }
    share sh = {asking, due < held - floor ? due : held - floor, true, 0, false};
    size_t asked = sh.left;
    /* A huge slot's region, or run of places, can take the place of one at
     * least as long (retain.c cuts a region; region_take takes a run from
     * kept places): those first, kept, so that its slabs reuse their pages;
     * the rest go back at once (kept, they would fill what retain.c holds
     * with memory no slab asked for). */
    if (asking && asking->geo.span > SLAB_BYTES) {
        sh.span_min = asking->geo.span;
        sh.keep = true;
        pools_try_each_shared(share_one, &sh);
        sh.span_min = 0;
        sh.keep = false;
    }
    share_run(&sh);
    return asked - sh.left;
}

size_t central_give_empties(size_t bytes) { return give_empties(NULL, bytes); }

/* A new slab of the pool, counted, on the list of all its slabs and on no
 * other yet; NULL with errno ENOMEM. */
static slab *new_slab(pk_pool *p) {
    /* A huge slot's slab is a mapping or a run of places of its own, which
     * no other pool's empty slab of one place can be: those beyond the
     * floor leave their pools as it faults its pages in (objects that
     * change size between phases). */
    if (p->geo.span <= SLAB_BYTES) {
        share_empties(p);
        /* no kept place to take: its pages are fresh, and other pools'
         * empty slabs of huge slots, which no slab of one place reuses
         * whole, leave past the floor as a large block's would make them */
        if (region_kept_bytes() < SLAB_BYTES) give_empties(p, p->geo.span);
    } else {
        give_empties(p, p->geo.span);
    }
    slab *s = slab_create(p, &p->geo);
    if (!s) return NULL;
    track_close(s->objects, (size_t)s->capacity * p->geo.slot);
    p->slabs_total++;
    count_foreign(p);
    p->bytes_reserved += s->span;
    gauge_add(&pool_bytes, (long)s->span);
    p->slab_free += s->capacity;
    s->all_prev = NULL;
    s->all_next = p->all;
    if (p->all) p->all->all_prev = s;
    p->all = s;
    return s;
}

static void out_of_memory(pk_pool *p) {
    errno = ENOMEM;
    note_once(NOTE_OUT_OF_MEMORY, p->name, "pool '%s' is out of memory: the system refused a slab of %zu bytes",
              pool_name(p), p->geo.span);
}

/* A slab to take from; a new one only when allowed (a refill that already
 * has something stops at what is ready, so pk_pool_reserve's promise holds). */
static slab *slab_for_take(pk_pool *p, bool may_map) {
    slab *s = p->lists[SLAB_PARTIAL].head;
    if (s) return s;
    s = p->lists[SLAB_EMPTY].head;
    if (!s) {
        if (!may_map) return NULL;
        s = new_slab(p);
        if (!s) return NULL;
    }
    move_slab(p, s, SLAB_PARTIAL);
    return s;
}

/* Takes one freed slot from s, doing what the pool needs per object (a
 * hardened link's check, debug fills and checks). */
static char *take_freed(pk_pool *p, slab *s) {
    char *obj = s->free;
    /* the head the slab's last heap left (its free is a double free) is
     * handed out: live from now on */
    if (obj == __atomic_load_n(&s->left_head, __ATOMIC_RELAXED)) __atomic_store_n(&s->left_head, NULL, __ATOMIC_RELAXED);
    s->free = (void *)link_load(p, obj);
    check_slab_link(p, s, obj, s->free);
    if (unlikely(p->debug)) check_debug_take(p, s, obj, true);
    s->used++;
    return obj;
}

size_t central_take(pk_pool *p, size_t n, void **list, bool all) {
    ASSERT_POOL_LOCKED(p);
    size_t got = 0;
    while (got < n) {
        slab *s = slab_for_take(p, all || got == 0);
        if (!s) break;
        while (got < n && s->used < s->capacity) {
            if (!s->free) { /* fresh slots; one at a time for debug pools (fills, live bits) */
                size_t k = slab_carve(&p->carve, &p->rng, s, p->debug ? 1 : n - got, list);
                if (unlikely(!k)) check_report_lost_count(p, s); /* no slot, yet fewer than all out */
                if (unlikely(p->debug)) check_debug_take(p, s, *list, false);
                got += k;
                continue;
            }
            char *obj = take_freed(p, s);
            link_store(p, obj, (uintptr_t)*list);
            *list = obj;
            got++;
        }
        if (s->used == s->capacity) move_slab(p, s, SLAB_FULL);
    }
    p->slab_free -= got;
    p->out += got;
    p->allocs += got;
    if (p->out > p->peak_out) p->peak_out = p->out; /* direct pools' peak: heaps keep out_est */
    if (!got) out_of_memory(p);
    return got;
}

void central_give(pk_pool *p, slab *s, void *obj) {
    ASSERT_POOL_LOCKED(p);
    assert_slab(p, s);
    if (unlikely(obj == s->free)) check_report_double_free(p, obj); /* the head freed again */
    link_store(p, obj, (uintptr_t)s->free);
    s->free = obj;
    s->used--;
    p->slab_free++;
    p->out--;
    if (s->used == 0) emptied(p, s);
    else if (s->list == SLAB_FULL) move_slab(p, s, SLAB_PARTIAL);
}

/* ---- Slabs between the pool and the heaps; remote frees. ---- */

size_t central_collect(pk_pool *p, slab *s, void **head, void **tail) {
    *head = *tail = NULL;
    if (!__atomic_load_n(&s->thread_free, __ATOMIC_RELAXED)) return 0;
    char *list = __atomic_exchange_n(&s->thread_free, NULL, __ATOMIC_ACQUIRE), *last = NULL;
    size_t n = 0;
    s->migrated = true;
    if (chains_counted(p)) {
        /* chain by chain: its head says its length and its tail, whose link
         * names the next chain's head (pool_types.h) */
        for (char *obj = list; obj;) {
            uintptr_t mark = chain_mark_load(p, obj);
            size_t len = (uint32_t)mark, tail_at = mark >> 32;
            n += len;
            if (unlikely(len == 0 || len > s->capacity || tail_at >= s->bump))
                report_corrupted_link(p, obj, (void *)mark, "a remote-free chain mark that no free wrote "
                                                            "(a write after free, or an object freed twice)");
            /* more than the slab holds: an object pushed twice (two threads
             * freed it, or one thread twice, each push well-formed) */
            if (unlikely(n > s->capacity)) report_list_overrun(p, s, list, NULL, "a slab's remote-free list");
            last = s->objects + tail_at * p->geo.slot;
            obj = (char *)link_load(p, last);
            check_slab_link(p, s, last, obj); /* the next chain's head */
        }
        *head = list;
        *tail = last;
        return n;
    }
    for (char *obj = list; obj;) {
        /* a list longer than the slab holds an object twice: a double free */
        if (unlikely(++n > s->capacity)) report_list_overrun(p, s, list, NULL, "a slab's remote-free list");
        char *next = (char *)link_load(p, obj);
        check_slab_link(p, s, obj, next);
        last = obj;
        obj = next;
    }
    *head = list;
    *tail = last;
    return n;
}

size_t central_splice_remote(pk_pool *p, slab *s) {
    void *head, *tail;
    size_t n = central_collect(p, s, &head, &tail);
    if (!n) return 0;
    if (unlikely(n > s->used))
        error_report(PK_FATAL, "corrupted free list", p->name, head,
                     "the remote frees of a slab of pool '%s' bring home %zu objects where it has %u out: "
                     "most likely a double free of one of them (%p and the objects it links to)",
                     pool_name(p), n, s->used, head);
    link_store(p, tail, (uintptr_t)s->free);
    s->free = head;
    s->used -= (uint32_t)n;
    return n;
}

/* A pool's own slab: its remote frees onto its free list, and the slab
 * onto the list its counts then say. */
static void collect_own(pk_pool *p, slab *s) {
    size_t n = central_splice_remote(p, s);
    if (!n) return;
    __atomic_sub_fetch(&p->remote_base, (int64_t)n, __ATOMIC_RELAXED);
    p->out -= n;
    p->slab_free += n;
    if (s->used == 0) emptied(p, s);
    else move_slab(p, s, SLAB_PARTIAL);
}

void central_collect_own(pk_pool *p) {
    ASSERT_POOL_LOCKED(p);
    size_t left = p->slabs_total;
    for (int l = SLAB_PARTIAL; l <= SLAB_FULL; l++)
        for (slab *s = p->lists[l].head, *next; s; s = next) {
            slab_walk_step(p, &left);
            next = s->next;
            collect_own(p, s);
        }
}

/* s, one of the pool's own, off its list and counts, owned by h. */
static void to_heap(pk_pool *p, heap *h, slab *s) {
    slab_list_remove(&p->lists[s->list], s);
    p->out -= s->used;
    p->slab_free -= s->capacity - s->used;
    p->heap_slabs++;
    p->heap_bytes += s->span;
    __atomic_store_n(&s->owner, h, __ATOMIC_RELAXED);
}

/* The empty slab h takes: one it gave the pool among the first
 * EMPTY_AFFINITY (policy.h), else the first; NULL if none. */
static slab *empty_for(const pk_pool *p, const heap *h) {
    slab *first = p->lists[SLAB_EMPTY].head, *s = first;
    for (int i = 0; i < EMPTY_AFFINITY && s; i++, s = s->next)
        if (s->left_by == h) return s;
    return first;
}

slab *central_slab_for_heap(pk_pool *p, heap *h, bool may_map) {
    ASSERT_POOL_LOCKED(p);
    slab *s = p->lists[SLAB_PARTIAL].head;
    if (!s && !p->lists[SLAB_EMPTY].head) {
        /* Full slabs of threads gone may have had objects freed since:
         * a few are looked at (moving to the back) before a new slab. */
        for (int i = 0; i < FULL_SCAN && (s = p->lists[SLAB_FULL].head) != NULL; i++) {
            slab_list_remove(&p->lists[SLAB_FULL], s);
            slab_list_append(&p->lists[SLAB_FULL], s, SLAB_FULL);
            collect_own(p, s); /* to PARTIAL or EMPTY if any came home */
            if (s->list != SLAB_FULL) break;
        }
        s = p->lists[SLAB_PARTIAL].head;
    }
    if (s) collect_own(p, s); /* it may have emptied meanwhile: taken all the same */
    else s = empty_for(p, h);
    if (!s && !may_map) return NULL;
    if (!s) {
        s = slab_for_take(p, true); /* a new one, on PARTIAL */
        if (!s) {
            out_of_memory(p);
            return NULL;
        }
    }
    to_heap(p, h, s);
    return s;
}

bool central_adopt(pk_pool *p, heap *h, slab *s) {
    ASSERT_POOL_LOCKED(p);
    if (__atomic_load_n(&s->owner, __ATOMIC_RELAXED) != NULL || s->lost ||
        (s->list != SLAB_PARTIAL && s->list != SLAB_FULL))
        return false;
    collect_own(p, s);
    to_heap(p, h, s);
    return true;
}

/* Whether s's free list runs out of address order: of its first
 * RESTART_SAMPLE links (the last frees), more than 1/RESTART_DISORDER lead
 * away from a neighbouring slot. Read only where the slab is empty, so no
 * free pays for the count; a link that leaves the slab ends the look (the
 * walks that read the list whole report it). */
static bool freed_out_of_order(const pk_pool *p, const slab *s) {
    uint32_t looked = 0, away = 0;
    for (char *obj = s->free, *next; obj && looked < RESTART_SAMPLE; obj = next, looked++) {
        next = (char *)link_load(p, obj);
        if (!next || slab_slot_index(s, next) < 0) break;
        away += (uintptr_t)next - (uintptr_t)obj + s->slot > 2 * s->slot;
        /* more than the whole sample allows: decided, without reading the
         * rest (in random order each link is a line not in cache) */
        if (away > RESTART_SAMPLE / RESTART_DISORDER) return true;
    }
    return away > looked / RESTART_DISORDER;
}

void central_slab_emptied(const pk_pool *p, slab *s) {
    /* Restarted in address order (mimalloc's page reset) when its objects
     * came home out of order: the next heap to take it hands out its slots
     * as a stream again. A list freed in order (LIFO, FIFO) is a stream
     * already and is kept, which saves rewriting every link (figures:
     * policy.h, RESTART_DISORDER). Constructed objects keep their slots. */
    if (!p->construct && !p->destruct && freed_out_of_order(p, s)) {
        s->free = NULL;
        s->bump = 0;
    }
}

void central_slab_from_heap(pk_pool *p, slab *s) {
    ASSERT_POOL_LOCKED(p);
    p->heap_slabs--;
    p->heap_bytes -= s->span;
    s->left_by = __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
    __atomic_store_n(&s->owner, NULL, __ATOMIC_RELAXED);
    p->out += s->used;
    p->slab_free += s->capacity - s->used;
    if (s->used == 0) {
        central_slab_emptied(p, s);
        slab_list_push(&p->lists[SLAB_EMPTY], s, SLAB_EMPTY);
        s->empty_tick = p->tick_no;
        note_empty(p);
        if (options_purge_delay_ms() == 0) central_release(p, false);
    } else {
        slab_list_id to = s->used == s->capacity ? SLAB_FULL : SLAB_PARTIAL;
        slab_list_push(&p->lists[to], s, to);
    }
}

size_t central_count_remote(pk_pool *p, slab *s) {
    size_t n = 0;
    for (char *f = s->thread_free; f && n < s->capacity; n++) {
        if (slab_slot_index(s, f) < 0) break; /* never followed out of the slab */
        f = (char *)link_load(p, f);
    }
    return n;
}

void central_lose_slab(pk_pool *p, slab *s) {
    s->thread_free = NULL; /* its objects stay counted as live */
    s->owner = NULL;
    s->lost = true;
    s->free = NULL;
    s->used = s->bump;
    if (s->high < s->bump) s->high = s->bump;
    p->out += s->used;
    slab_list_push(&p->lists[SLAB_LOST], s, SLAB_LOST);
}

size_t central_lost_out(const pk_pool *p) {
    size_t n = 0;
    for (const slab *s = p->lists[SLAB_LOST].head; s; s = s->next) n += s->used;
    return n;
}

static size_t release_slab(pk_pool *p, slab *s, bool cache) {
    check_slab_release(p, s);
    if (p->destruct)
        for (uint32_t i = 0; i < s->bump; i++) {
            char *obj = s->objects + (size_t)i * p->geo.slot;
            track_open(obj, p->size);
            p->destruct(obj, p->arg);
        }
    size_t bytes = s->span;
    if (s->list < SLAB_LISTS) slab_list_remove(&p->lists[s->list], s);
    if (s->all_prev) s->all_prev->all_next = s->all_next;
    else p->all = s->all_next;
    if (s->all_next) s->all_next->all_prev = s->all_prev;
    if (s->list != SLAB_LOST) p->slab_free -= s->capacity - s->used;
    p->slabs_total--;
    count_foreign(p);
    p->bytes_reserved -= bytes;
    gauge_add(&pool_bytes, -(long)bytes);
    p->slabs_released++;
    p->bytes_released += bytes;
    note_once(NOTE_MEMORY_RETURNED, p->name,
              "pool '%s' gave a slab of %zu bytes back to the system (purge delay %ld ms)",
              pool_name(p), bytes, options_purge_delay_ms());
    slab_destroy(s, cache);
    return bytes;
}

size_t central_release_empty(pk_pool *p, bool any, uint32_t before) {
    ASSERT_POOL_LOCKED(p);
    slab_list *empty = &p->lists[SLAB_EMPTY];
    size_t bytes = 0, left = p->slabs_total;
    for (slab *s = empty->head, *next; s; s = next) {
        slab_walk_step(p, &left);
        next = s->next;
        if (!any && (int32_t)(s->empty_tick - before) > 0) continue;
        if (p->slab_free - s->capacity < p->keep_free) break;
        bytes += release_slab(p, s, false);
    }
    return bytes;
}

size_t central_release_surplus(pk_pool *p) {
    ASSERT_POOL_LOCKED(p);
    /* A huge slot's slab is a mapping or a run of places of its own, which
     * no slab of one place can take (a kept one serves a slab as long): the
     * pool's empty list is where it serves the next thread without page
     * faults, so it waits there for the purge tick. */
    if (p->geo.span > SLAB_BYTES) return 0;
    slab_list *empty = &p->lists[SLAB_EMPTY];
    size_t bytes = 0;
    while (empty->head && 2 * empty->count > p->slabs_total) {
        slab *s = empty->head;
        if (p->slab_free - s->capacity < p->keep_free) break;
        bytes += release_slab(p, s, true);
    }
    return bytes;
}

size_t central_release(pk_pool *p, bool all) {
    ASSERT_POOL_LOCKED(p);
    if (all) p->keep_free = 0;
    return central_release_empty(p, true, 0);
}

/* Whether `missing` more free slots could ever be made ready: their slabs
 * and what the pool holds must fit in the machine's physical memory. A
 * reserve of SIZE_MAX, or any count whose slabs no machine could hold,
 * then fails at once with ENOMEM instead of mapping slab after slab until
 * the kernel's out-of-memory killer ends the process. */
static bool reserve_fits(const pk_pool *p, size_t missing) {
    size_t slabs = missing / p->geo.capacity + (missing % p->geo.capacity != 0);
    size_t limit = os_physical_bytes();
    if (p->bytes_reserved > limit) return false;
    return slabs <= (limit - p->bytes_reserved) / p->geo.span;
}

/* Of the ready objects, those a pool with a limit may still hand out: the
 * count pk_pool_reserve promises (allocations past the limit fail,
 * however many slots are free). */
static size_t within_limit(const pk_pool *p, size_t ready) {
    if (!p->limit) return ready;
    size_t room = p->out < p->limit ? p->limit - p->out : 0;
    return ready < room ? ready : room;
}

size_t central_reserve(pk_pool *p, size_t n) {
    size_t ready = p->slab_free;
    if (ready < n && !reserve_fits(p, n - ready)) {
        errno = ENOMEM;
        return within_limit(p, ready);
    }
    while (ready < n) {
        if (p->limit && p->out + p->slab_free >= p->limit) break;
        slab *s = new_slab(p);
        if (!s) break;
        ready += s->capacity;
        slab_list_push(&p->lists[SLAB_EMPTY], s, SLAB_EMPTY);
    }
    if (n > p->keep_free) p->keep_free = n < ready ? n : ready;
    ready = within_limit(p, ready);
    if (ready < n) errno = ENOMEM;
    return ready;
}

void central_free_all(pk_pool *p) {
    /* Every pool's slab lists are walked once before they go (a hardened
     * pool's at every release of a slab): a double free that left a loop in
     * one, which no cheap check saw, is reported rather than forgotten. A
     * region's are not: its destroy follows no link (pk_pool_destroy). */
    bool walk = !p->hardened && !(p->flags & PK_POOL_REGION);
    for (int l = 0; l < SLAB_LISTS; l++)
        while (p->lists[l].head) {
            if (walk) check_slab_free_list(p, p->lists[l].head);
            release_slab(p, p->lists[l].head, true);
        }
}

void central_forget_all(pk_pool *p) {
    ASSERT_POOL_LOCKED(p);
    while (p->lists[SLAB_LOST].head) release_slab(p, p->lists[SLAB_LOST].head, true);
    for (int l = SLAB_PARTIAL; l <= SLAB_FULL; l++)
        while (p->lists[l].head) {
            slab *s = p->lists[l].head;
            p->out -= s->used;
            p->slab_free += s->used; /* its free slots counted already */
            slab_forget_objects(s); /* as central_slab_emptied restarts one */
            emptied(p, s);
        }
    if (options_purge_delay_ms() == 0) central_release(p, false);
}
