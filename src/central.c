/* The pool's own slabs, under its lock (or on a LOCAL pool's one thread):
 * all the slabs of a direct pool (debug, limit), and for the others the
 * slabs no thread's heap owns: empty ones, waiting for a heap or for the
 * purge, and those of threads that exited. Also what heaps and direct
 * calls share: carving fresh slots, collecting remote frees, the checks of
 * a freed pointer, and the moves of slabs between the pool and a heap.
 *
 * Slabs move between three lists: PARTIAL (some slots free), FULL (none
 * free) and EMPTY (all free). Objects are taken from partial slabs first so
 * that empty ones stay empty and can go back to the system.
 *
 * Memory return (policy.h): every half purge delay the pool ticks; slabs
 * that were empty at the previous tick go back to the system, and so does
 * every empty slab of a pool that had no call of its own for the whole
 * delay (time stamps, below). With delay 0 empty slabs go at once.
 */
#include "pool_internal.h"
#include "sites.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static bool bytes_are(const unsigned char *b, size_t n, unsigned char v, size_t *bad) {
    for (size_t i = 0; i < n; i++) {
        if (b[i] != v) {
            *bad = i;
            return false;
        }
    }
    return true;
}

/* A debug slot's call sites, or NULL when none are kept. */
static void **slot_sites(const pk_pool *p, const slab *s, size_t idx) {
    return s->sites ? s->sites + idx * p->geo.site_words : NULL;
}

static PK_COLD __attribute__((noreturn)) void report_write_after_free(pk_pool *p, slab *s, char *obj,
                                                                       size_t idx, size_t at) {
    char where[SITES_TEXT];
    error_report(PK_FATAL, "write after free", p->name, obj,
                 "object %p of pool '%s' was modified at byte %zu after it was freed%s%s", obj,
                 pool_name(p), at, s->sites ? "; " : "",
                 sites_format(where, sizeof where, slot_sites(p, s, idx)));
    abort();
}

static PK_COLD __attribute__((noreturn)) void report_double_free(pk_pool *p, slab *s, void *obj,
                                                                  size_t idx) {
    char where[SITES_TEXT];
    void **sites = slot_sites(p, s, idx);
    if (sites) /* where it was allocated and first freed, then the free that faulted */
        sites_append_capture(sites_format(where, sizeof where, sites), sizeof where, "freed again at");
    error_report(PK_FATAL, "double free", p->name, obj, "object %p of pool '%s' was freed twice%s%s",
                 obj, pool_name(p), sites && where[0] ? "; " : "", sites ? where : "");
    abort();
}

/* Debug pools: a slot leaving the slab. A reused slot must still hold the
 * free fill, or something wrote to it after it was freed. */
static void debug_on_take(pk_pool *p, slab *s, char *obj, bool reused) {
    size_t idx = slot_div((uint64_t)(obj - s->objects), p->geo.slot, p->geo.recip), bad;
    bool plain = !p->construct && !p->destruct;
    track_open(obj, p->size + p->redzone);
    if (reused && plain &&
        !bytes_are((unsigned char *)obj + p->fill_from, p->size - p->fill_from, FILL_FREE, &bad))
        report_write_after_free(p, s, obj, idx, bad + p->fill_from);
    if (s->sites) {
        sites_keep(slot_sites(p, s, idx), SITE_ALLOC);
        slot_sites(p, s, idx)[SITE_FREE * sites_frames()] = NULL; /* no longer freed */
    }
    if (plain && !p->zero) memset(obj + p->fill_from, FILL_ALLOC, p->size - p->fill_from);
    memset(obj + p->size, FILL_REDZONE, p->redzone);
    track_close(obj, p->size + p->redzone);
    s->live_bits[idx / 64] |= (uint64_t)1 << (idx % 64);
}

static slab *checked_slab(pk_pool *p, void *obj, const void *holder);

void central_debug_check_free(pk_pool *p, void *obj) {
    const char *name = pool_name(p);
    slab *s = checked_slab(p, obj, NULL);
    size_t idx = slot_div((uint64_t)((char *)obj - s->objects), p->geo.slot, p->geo.recip);
    char where[SITES_TEXT];
    const char *sep = s->sites ? "; " : "";
    if (!(s->live_bits[idx / 64] & ((uint64_t)1 << (idx % 64)))) report_double_free(p, s, obj, idx);
    size_t bad;
    track_open(obj, p->size + p->redzone);
    if (!bytes_are((unsigned char *)obj + p->size, p->redzone, FILL_REDZONE, &bad)) {
        const unsigned char *zone = (const unsigned char *)obj + p->size;
        size_t last = p->redzone - 1; /* how far it reached: the last byte changed */
        while (zone[last] == FILL_REDZONE) last--;
        error_report(PK_FATAL, "buffer overflow", p->name, obj,
                     "a write reaching %zu byte%s past the end of object %p (size %zu) of pool '%s' (the "
                     "redzone after it changed from byte %zu to byte %zu)%s%s",
                     last + 1, last ? "s" : "", obj, p->size, name, bad + 1, last + 1, sep,
                     sites_format(where, sizeof where, slot_sites(p, s, idx)));
    }
    if (s->sites) sites_keep(slot_sites(p, s, idx), SITE_FREE);
    s->live_bits[idx / 64] &= ~((uint64_t)1 << (idx % 64));
    if (!p->construct && !p->destruct) memset((char *)obj + p->fill_from, FILL_FREE, p->size - p->fill_from);
    track_close(obj, p->size + p->redzone);
}

/* A new slab of the pool, counted, on the list of all its slabs and on no
 * other yet; NULL with errno ENOMEM. */
static slab *new_slab(pk_pool *p) {
    slab *s = slab_create(p, &p->geo);
    if (!s) return NULL;
    track_close(s->objects, (size_t)s->capacity * p->geo.slot);
    p->slabs_total++;
    p->bytes_reserved += s->span;
    gauge_add(&pool_bytes, (long)s->span);
    p->slab_free += s->capacity;
    s->all_prev = NULL;
    s->all_next = p->all;
    if (p->all) p->all->all_prev = s;
    p->all = s;
    return s;
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

/* A slot handed out for the first time: its construct hook runs now. */
static inline void construct_fresh(pk_pool *p, char *obj) {
    if (!p->construct) return;
    track_open(obj, p->size);
    p->construct(obj, p->arg);
    track_close(obj, p->size);
}

/* Takes one slot from s (its free list first), doing what the pool needs
 * per object: construct a fresh slot, debug fills and checks. */
static char *take_one(pk_pool *p, slab *s) {
    char *obj = s->free;
    bool reused = obj != NULL;
    if (reused) {
        s->free = (void *)link_load(p, obj);
        check_slab_link(p, s, obj, s->free);
    } else {
        obj = s->objects + (size_t)s->bump * p->geo.slot;
        s->bump++;
        if (s->bump > s->high) s->high = s->bump;
        construct_fresh(p, obj);
    }
    if (unlikely(p->debug)) debug_on_take(p, s, obj, reused);
    s->used++;
    return obj;
}

/* Carves k never-used slots of s onto *list in one tight loop: the common
 * case of a fresh slab, where nothing per object is needed but the link. */
static void take_fresh(pk_pool *p, slab *s, size_t k, void **list) {
    size_t slot = p->geo.slot;
    char *first = s->objects + (size_t)s->bump * slot, *head = *list;
    /* Linked from the top down so the list hands them out in address
     * order: a stream the hardware prefetcher follows, where a list that
     * runs down within each batch and up across batches defeats it once the
     * working set leaves the caches. */
    for (char *obj = first + (k - 1) * slot;; obj -= slot) {
        *(void **)obj = head;
        head = obj;
        if (obj == first) break;
    }
    *list = head;
    s->bump += (uint32_t)k;
    s->used += (uint32_t)k;
    if (s->bump > s->high) s->high = s->bump;
}

/* PK_POOL_SHUFFLE pools' fresh slots go out shuffled: policy.h, SHUFFLE_RUN. */
static uint64_t next_random(uint64_t *rng) {
    uint64_t x = *rng; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *rng = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* PK_POOL_SHUFFLE pools only: k (at most SHUFFLE_RUN) never-used slots of
 * s, linked in one pass from the first picked to the last, whose link is
 * left for the caller: the
 * run's first object is returned, its last in *tail. Each pick takes the
 * next slot of one of SHUFFLE_SLICES slices chosen by two bits of a random
 * word (32 picks a draw; once slices run out, the two bits scaled to those
 * left, a little unevenly). */
static char *take_fresh_shuffled(pk_pool *p, uint64_t *rng, slab *s, size_t k, char **tail) {
    _Static_assert(SHUFFLE_SLICES == 4, "two bits pick a slice");
    char *next[SHUFFLE_SLICES], *last[SHUFFLE_SLICES];
    size_t slices = k < SHUFFLE_SLICES ? k : SHUFFLE_SLICES, slot = p->geo.slot;
    char *first = s->objects + (size_t)s->bump * slot, *head = NULL, *prev = NULL;
    for (size_t i = 0; i < slices; i++) {
        next[i] = first + k * i / slices * slot;
        last[i] = first + (k * (i + 1) / slices - 1) * slot;
    }
    s->bump += (uint32_t)k; /* first: the links below name handed-out slots */
    if (s->bump > s->high) s->high = s->bump;
    uint64_t bits = 0;
    for (size_t n = 0, live = slices; n < k; n++) {
        if ((n & 31) == 0) bits = next_random(rng);
        size_t i = live == SHUFFLE_SLICES ? (size_t)(bits & 3) : (size_t)(bits & 3) * live >> 2;
        bits >>= 2;
        char *obj = next[i];
        if (obj == last[i]) { /* slice used up: the last live one takes its place */
            live--;
            next[i] = next[live];
            last[i] = last[live];
        } else {
            next[i] = obj + slot;
        }
        construct_fresh(p, obj);
        if (prev) link_store(p, prev, (uintptr_t)obj);
        else head = obj;
        prev = obj;
    }
    s->used += (uint32_t)k;
    *tail = prev;
    return head;
}

size_t central_take(pk_pool *p, size_t n, void **list, bool all) {
    ASSERT_POOL_LOCKED(p);
    size_t got = 0;
    bool plain = !p->construct && !p->debug && !p->hardened && p->link_off == 0 && !TRACK_ENABLED;
    while (got < n) {
        slab *s = slab_for_take(p, all || got == 0);
        if (!s) break;
        while (got < n && s->used < s->capacity) {
            size_t fresh = s->capacity - s->bump, need = n - got;
            if (plain && !s->free && fresh) {
                size_t k = fresh < need ? fresh : need;
                take_fresh(p, s, k, list);
                got += k;
                continue;
            }
            if (p->shuffle && !p->debug && !s->free && fresh && s->bump >= s->high) { /* SHUFFLE */
                size_t k = fresh < need ? fresh : need;
                if (k > SHUFFLE_RUN) k = SHUFFLE_RUN;
                char *tail, *head = take_fresh_shuffled(p, &p->rng, s, k, &tail);
                link_store(p, tail, (uintptr_t)*list);
                *list = head;
                got += k;
                continue;
            }
            char *obj = take_one(p, s);
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
    if (!got) {
        errno = ENOMEM;
        note_once(NOTE_OUT_OF_MEMORY, p->name, "pool '%s' is out of memory: the system refused a slab of %zu bytes",
                  pool_name(p), p->geo.span);
    }
    return got;
}

size_t central_carve(pk_pool *p, uint64_t *rng, slab *s, size_t k, void **list) {
    size_t fresh = s->capacity - s->bump;
    if (k > fresh) k = fresh;
    /* SHUFFLE covers slots never handed out before: those under the high
     * mark, carved again after the slab emptied, go in address order (a
     * working set that empties and refills its slabs each phase would pay
     * for a shuffle per object and per phase; policy.h has the figures). */
    if (p->shuffle && s->bump < s->high && k > s->high - s->bump) k = s->high - s->bump;
    if (p->shuffle && s->bump >= s->high) {
        char *first = NULL, *tail = NULL;
        for (size_t done = 0; done < k;) {
            size_t run = k - done < SHUFFLE_RUN ? k - done : SHUFFLE_RUN;
            char *part_tail, *part = take_fresh_shuffled(p, rng, s, run, &part_tail);
            if (tail) link_store(p, tail, (uintptr_t)part); /* runs in address order */
            else first = part;
            tail = part_tail;
            done += run;
        }
        if (tail) {
            link_store(p, tail, (uintptr_t)*list);
            *list = first;
        }
        return k;
    }
    if (!p->construct && !p->hardened && !TRACK_ENABLED && p->link_off == 0) {
        take_fresh(p, s, k, list);
        return k;
    }
    /* Linked from the top down, so the list hands them out in address
     * order, each constructed on the way. */
    void *head = *list;
    char *first = s->objects + (size_t)s->bump * p->geo.slot;
    s->bump += (uint32_t)k;
    if (s->bump > s->high) s->high = s->bump;
    s->used += (uint32_t)k;
    for (size_t i = k; i-- > 0;) {
        char *obj = first + i * p->geo.slot;
        construct_fresh(p, obj);
        link_store(p, obj, (uintptr_t)head);
        head = obj;
    }
    *list = head;
    return k;
}

/* Reports obj, given to pool p, as not one of its object slots, naming the
 * fault from what the address map says it is. A pointer that came from a
 * hardened pool's link (holder: the free object that held it) is a
 * corrupted free list, whatever it points to. */
static PK_COLD __attribute__((noreturn)) void report_bad_pointer(pk_pool *p, const void *obj,
                                                                   const void *holder) {
    if (holder) report_bad_link(p, holder, obj, "not one of its objects");
    slab *s = slab_lookup(obj);
    const char *what = !s ? "foreign pointer" : s->pool != p ? "wrong pool" : "interior pointer";
    char why[160];
    if (!s) snprintf(why, sizeof why, "not a poolkit object");
    else if (s->pool != p) snprintf(why, sizeof why, "an object of pool '%s'", pool_name(s->pool));
    else snprintf(why, sizeof why, "not the start of one of its objects");
    error_report(PK_FATAL, what, p->name, obj, "%p given to pool '%s' is %s", obj, pool_name(p), why);
    abort(); /* error_report never returns from a fatal report */
}

slab *central_check_free(pk_pool *p, void *obj) {
    slab *s = slab_of_slot(obj, p);
    if (unlikely(!s)) report_bad_pointer(p, obj, NULL);
    return s;
}

void central_report_slab_list(const pk_pool *p) {
    error_report(PK_FATAL, "corrupted slab list", p->name, p,
                 "a slab list of pool '%s' runs on past the pool's %zu slabs: the pool's records were "
                 "overwritten", pool_name(p), p->slabs_total);
    abort();
}

void central_report_double_free(pk_pool *p, void *obj) {
    error_report(PK_FATAL, "double free", p->name, obj, "object %p of pool '%s' was freed twice",
                 obj, pool_name(p));
    abort();
}

/* A pointer coming home must be a slot of one of this pool's slabs that was
 * handed out: anything else is reported, never linked into a free list.
 * holder: the free object whose link named obj (hardened pools), or NULL. */
static slab *checked_slab(pk_pool *p, void *obj, const void *holder) {
    slab *s = slab_lookup(obj);
    long idx = s && s->pool == p ? slab_slot_index(s, obj, &p->geo) : -1;
    if (unlikely(idx < 0 || (uint32_t)idx >= s->bump)) report_bad_pointer(p, obj, holder);
    if (unlikely(s->used == 0)) report_double_free(p, s, obj, (size_t)idx);
    return s;
}

static void give_to_slab(pk_pool *p, slab *s, void *obj) {
    ASSERT_POOL_LOCKED(p);
    assert_slab(p, s);
    if (unlikely(obj == s->free)) central_report_double_free(p, obj); /* the head freed again */
    link_store(p, obj, (uintptr_t)s->free);
    s->free = obj;
    s->used--;
    p->slab_free++;
    p->out--;
    if (s->used == 0) {
        move_slab(p, s, SLAB_EMPTY);
        s->empty_tick = p->tick_no;
    } else if (s->list == SLAB_FULL) {
        move_slab(p, s, SLAB_PARTIAL);
    }
}

void central_give(pk_pool *p, void *obj) {
    give_to_slab(p, checked_slab(p, obj, NULL), obj);
    if (options_purge_delay_ms() == 0) central_release(p, false);
}

/* ---- Slabs between the pool and the heaps; remote frees. ---- */

size_t central_collect(pk_pool *p, slab *s, void **head, void **tail) {
    *head = *tail = NULL;
    if (!__atomic_load_n(&s->thread_free, __ATOMIC_RELAXED)) return 0;
    char *list = __atomic_exchange_n(&s->thread_free, NULL, __ATOMIC_ACQUIRE), *last = NULL;
    size_t n = 0;
    if (chains_counted(p)) {
        /* chain by chain: its head says its length and its tail, whose link
         * names the next chain's head (pool_internal.h) */
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
    p->frees += n;
    if (s->used == 0) {
        move_slab(p, s, SLAB_EMPTY);
        s->empty_tick = p->tick_no;
    } else {
        move_slab(p, s, SLAB_PARTIAL);
    }
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

/* s, one of the pool's own, off its list and into h: its counts move. */
static void to_heap(pk_pool *p, heap *h, slab *s) {
    slab_list_remove(&p->lists[s->list], s);
    p->out -= s->used;
    p->slab_free -= s->capacity - s->used;
    p->heap_slabs++;
    p->heap_bytes += s->span;
    h->slabs++;
    h->bytes += s->span;
    __atomic_store_n(&s->owner, h, __ATOMIC_RELAXED);
    __atomic_store_n(&h->used, h->used + s->used, __ATOMIC_RELAXED);
    __atomic_store_n(&h->resident, h->resident + slab_touched(p, s), __ATOMIC_RELAXED);
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
    else s = p->lists[SLAB_EMPTY].head;
    if (!s && !may_map) return NULL;
    if (!s) {
        s = slab_for_take(p, true); /* a new one, on PARTIAL */
        if (!s) {
            errno = ENOMEM;
            note_once(NOTE_OUT_OF_MEMORY, p->name,
                      "pool '%s' is out of memory: the system refused a slab of %zu bytes",
                      pool_name(p), p->geo.span);
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

void central_slab_emptied(const pk_pool *p, slab *s) {
    /* Restarted in address order (mimalloc's page reset) when its objects
     * came home out of order: the next heap to take it hands out its slots
     * as a stream again. A list freed in order (LIFO, FIFO) is a stream
     * already and is kept, which saves rewriting every link (figures:
     * policy.h, RESTART_DISORDER). Constructed objects keep their slots. */
    if (s->disorder > s->capacity / RESTART_DISORDER && !p->construct && !p->destruct) {
        s->free = NULL;
        s->bump = 0;
    }
    s->disorder = 0;
    s->adopted = false;
}

void central_slab_from_heap(pk_pool *p, heap *h, slab *s) {
    ASSERT_POOL_LOCKED(p);
    p->heap_slabs--;
    p->heap_bytes -= s->span;
    h->slabs--;
    h->bytes -= s->span;
    __atomic_store_n(&s->owner, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&h->used, h->used - s->used, __ATOMIC_RELAXED);
    __atomic_store_n(&h->resident, h->resident - slab_touched(p, s), __ATOMIC_RELAXED);
    p->out += s->used;
    p->slab_free += s->capacity - s->used;
    if (s->used == 0) {
        central_slab_emptied(p, s);
        slab_list_push(&p->lists[SLAB_EMPTY], s, SLAB_EMPTY);
        s->empty_tick = p->tick_no;
        if (options_purge_delay_ms() == 0) central_release(p, false);
    } else {
        slab_list_push(&p->lists[s->used == s->capacity ? SLAB_FULL : SLAB_PARTIAL], s,
                       s->used == s->capacity ? SLAB_FULL : SLAB_PARTIAL);
    }
}

size_t central_count_remote(pk_pool *p, slab *s) {
    size_t n = 0;
    for (char *f = s->thread_free; f && n < s->capacity; n++) {
        if (slab_slot_index(s, f, &p->geo) < 0) break; /* never followed out of the slab */
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

static void debug_check_free_slots(pk_pool *p, slab *s) {
    if (!p->debug || p->construct || p->destruct) return;
    for (uint32_t i = 0; i < s->bump; i++) {
        if (s->live_bits[i / 64] & ((uint64_t)1 << (i % 64))) continue;
        char *obj = s->objects + (size_t)i * p->geo.slot;
        size_t bad;
        track_open(obj, p->size);
        bool intact = bytes_are((unsigned char *)obj + p->fill_from, p->size - p->fill_from, FILL_FREE, &bad);
        track_close(obj, p->size);
        if (!intact) report_write_after_free(p, s, obj, i, bad + p->fill_from);
    }
}

/* A slab's free list, walked before the slab goes: each link checked
 * before it is followed (check_slab_link), and no more objects than the
 * slab handed out. */
static void check_slab_free_list(pk_pool *p, slab *s) {
    size_t n = 0;
    for (char *f = s->free; f; n++) {
        if (unlikely(n >= s->bump)) report_list_overrun(p, s, s->free, NULL, "a slab's free list");
        char *next = (char *)link_load(p, f);
        check_slab_link(p, s, f, next);
        f = next;
    }
}

static size_t release_slab(pk_pool *p, slab *s, bool cache) {
    debug_check_free_slots(p, s);
    if (p->hardened) check_slab_free_list(p, s);
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

/* Releases the empty slabs that became empty at or before tick `before`
 * (every one with `any`), leaving keep_free free slots for the reserve. */
static size_t release_empty(pk_pool *p, bool any, uint32_t before) {
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

size_t central_release(pk_pool *p, bool all) {
    ASSERT_POOL_LOCKED(p);
    if (all) p->keep_free = 0;
    return release_empty(p, true, 0);
}

/* ---- Idle return by time stamp (policy.h, PURGE_INTERVAL_MS) ----
 * The pool's empty slabs change only under its lock (a heap gives one back
 * under it too), so used_ms, the last time a call for the pool's own work
 * held it, bounds how long all of them have sat unused. A call after a
 * silence of the delay or more finds it so before it changes anything
 * (central_note_use), and so does any tick on the pool in between: a sweep
 * on another pool's call, or the background purge. Slabs threads' heaps own
 * are not the pool's to take and stay; so do the slots a reserve keeps. */

/* Whether the pool has had no call of its own for the delay (now may lag
 * used_ms: another thread may have read a later time before the lock). */
static bool idle_for_delay(const pk_pool *p, uint64_t now, uint64_t delay) {
    return delay && now > p->used_ms && now - p->used_ms >= delay;
}

/* Every empty slab goes back (their memory sat unused for the delay). */
static void release_idle(pk_pool *p, uint64_t now) {
    central_collect_own(p);
    if (p->lists[SLAB_EMPTY].head) release_empty(p, true, 0);
    /* The next interval starts now. */
    p->tick_ms = now;
    p->tick_no++;
}

void central_note_use(pk_pool *p, uint64_t now) {
    ASSERT_POOL_LOCKED(p);
    if (idle_for_delay(p, now, (uint64_t)options_purge_delay_ms())) release_idle(p, now);
    if (now > p->used_ms) p->used_ms = now;
}

void central_maybe_tick(pk_pool *p, uint64_t now) {
    ASSERT_POOL_LOCKED(p);
    uint64_t delay = (uint64_t)options_purge_delay_ms();
    if (idle_for_delay(p, now, delay)) {
        release_idle(p, now);
        return;
    }
    if (now - p->tick_ms < PURGE_INTERVAL_MS(delay)) return;
    p->tick_ms = now;
    central_collect_own(p);
    release_empty(p, false, p->tick_no - 1);
    p->tick_no++;
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

size_t central_reserve(pk_pool *p, size_t n) {
    size_t ready = p->slab_free;
    if (ready < n && !reserve_fits(p, n - ready)) {
        errno = ENOMEM;
        return ready;
    }
    while (ready < n) {
        if (p->limit && p->out + p->slab_free >= p->limit) break;
        slab *s = new_slab(p);
        if (!s) break;
        ready += s->capacity;
        slab_list_push(&p->lists[SLAB_EMPTY], s, SLAB_EMPTY);
    }
    if (n > p->keep_free) p->keep_free = n < ready ? n : ready;
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
