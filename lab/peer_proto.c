/* Prototype pool cores for issue 19 (docs/design/core3-prototypes.md): three
 * candidate designs for the third core, each a lab adapter whose kernels
 * inline its fast paths, measured against pk_pool, the naive list and the
 * mallocs by bench_workset and bench_hotloop (--protos).
 *
 *   proto sharded   (a) mimalloc's free-list sharding. Each slab keeps its
 *                   own lists: `free` (allocation pops it), `local_free`
 *                   (the owner's frees) and `thread_free` (other threads'
 *                   frees, one atomic push). A thread allocates from its
 *                   current slab and moves on slab by slab; free finds the
 *                   slab by address mask.
 *   proto cachebin  (b) jemalloc 5.3's cache_bin. A thread's cache for a
 *                   pool is a bounded stack of pointers; its bounds are
 *                   found by comparing the low 16 bits of the stack pointer.
 *                   Fills take slots from the pool's slabs in address order
 *                   (each slab's bitmap); flushes send the oldest half home,
 *                   setting bitmap bits without touching the objects.
 *   proto hybrid    (c) a short LIFO of recently freed pointers in front of
 *                   (a)'s slabs (one free list per slab).
 *   proto packed    (d) = (a), with the slab headers packed at the start of
 *                   4 MiB regions (mimalloc's segments) instead of at the
 *                   start of each slab: is the header's page what random
 *                   order at scale pays for?
 *   proto hybrid packed  (e) = (c), with (d)'s packed headers.
 *   proto single packed  (f) = (d) with one free list per slab: the owner's
 *                   frees go on `free` itself (no local_free), so the
 *                   object just freed is the next handed out when its slab
 *                   is cur; (e) without the LIFO, which at small N keeps up
 *                   to 14 slabs from emptying and restarting in address order.
 *
 * Shared by all three:
 * - Slabs are PS_SLAB bytes mapped from the system at an address aligned to
 *   PS_SLAB, so slab_of(p) is one mask. Slot 0 starts after the header,
 *   rounded up to the slot's alignment; power-of-two sizes up to 4 KiB are
 *   aligned to their size.
 * - A slab whose last object comes back starts over (bump from slot 0, in
 *   address order) and goes on its owner's (or pool's) empty list with a
 *   time stamp; empty slabs older than PS_DELAY_MS go back to the system
 *   (munmap) at the next slab that empties or is mapped: the first slow path
 *   after the delay, no low-water mark.
 * - Per-thread state: each thread has a table of PS_KEYS slots of PS_STATE
 *   bytes, reached as pk_pool reaches its caches (a TLS pointer plus the
 *   pool's byte offset), so the prototypes pay the same lookup as pk_pool.
 *   A thread that has not registered points at a shared table whose slots
 *   always send it to a slow path.
 * - Slabs of (a) and (c) belong to one thread (xtid: its thread pointer; the
 *   low bit marks a full slab), so a free by another thread goes home to
 *   the slab (thread_free) instead of into the freeing thread's cache (the
 *   issue's passive false sharing). (b)'s slabs belong to the pool, behind
 *   its lock, and a free always lands in the freeing thread's cache, as in
 *   jemalloc.
 *
 * Prototype limits: single-threaded fast paths are real, the multi-thread
 * parts are sketches (thread_free is pushed and collected; a pool opened
 * after other threads registered sets up only the calling thread's slot;
 * thread exit does not hand slabs back); at most PS_KEYS pools at once;
 * no hardening, no stats.
 */
#include "lab.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define PS_SHIFT 16
#define PS_SLAB ((size_t)1 << PS_SHIFT)
#define PS_KEYS 64
#define PS_STATE 1024 /* bytes per pool in a thread's table */
#define PS_DELAY_MS 500
#define PS_FULL ((uintptr_t)1)
#define PS_EXTEND_BYTES 4096 /* (a), (c): slots linked per extension */
#define PS_EXTEND_MIN 8
#define CB_CAP 64 /* (b): pointers per thread per pool */
#define HY_RECENT 14 /* (c): pointers per thread per pool */
#define PS_BITWORDS (PS_SLAB / 16 / 64)

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

enum { V_SHARDED, V_CACHEBIN, V_HYBRID, V_PACKED, V_HYPACK, V_SINGLE, V_COUNT };
#define IS_PACKED(v) ((v) == V_PACKED || (v) == V_HYPACK || (v) == V_SINGLE)
#define IS_SHARDED(v) ((v) == V_SHARDED || (v) == V_PACKED || (v) == V_SINGLE)
#define IS_HYBRID(v) ((v) == V_HYBRID || (v) == V_HYPACK)
enum { L_NONE, L_AVAIL, L_FULL, L_EMPTY };

struct ps_pool;

typedef struct ps_slab {
    uintptr_t xtid;    /* (a), (c): owner's thread pointer | PS_FULL; (b): 0 */
    void *free;        /* (a), (c): slots to hand out, linked through their first word */
    void *local_free;  /* (a): the owner's frees since the last collect */
    uint32_t used;     /* slots outside the slab, plus 1 while it is its heap's cur */
    uint32_t cap;
    char *bump, *end;  /* (a), (c): slots never linked yet */
    void *thread_free; /* (a), (c): remote frees, pushed atomically */
    struct ps_slab *prev, *next;
    struct ps_pool *pool;
    uint64_t stamp_ms; /* when it became empty */
    uint32_t list;     /* L_* */
    uint32_t hint;     /* (b): first bitmap word that may hold a free slot */
    char *mem;         /* the slab's memory: the header's own address, except (d)'s */
    uint64_t bits[];   /* (b): one bit per slot, set while the slot is in the slab */
} ps_slab;

typedef struct ps_list {
    ps_slab *head, *tail;
    size_t n;
} ps_list;

/* (a), (c): one thread's slabs of one pool. */
typedef struct ps_heap {
    ps_slab *cur; /* allocation pops cur->free; the sentinel until set up */
    struct ps_pool *pool;
    ps_list avail, full, empty;
} ps_heap;

typedef struct hy_state {
    uint32_t n, lim; /* recent[0..n) hold objects; lim is 0 until set up */
    void *recent[HY_RECENT];
    ps_heap h;
} hy_state;

typedef struct cb_state {
    void **head; /* next object to hand out; &stack[CB_CAP] when empty */
    uint16_t low_full, low_empty; /* low bits of &stack[0], &stack[CB_CAP]; 0 until set up */
    void *stack[CB_CAP + 1];
} cb_state;

_Static_assert(sizeof(hy_state) <= PS_STATE && sizeof(cb_state) <= PS_STATE, "PS_STATE");

typedef struct ps_pool {
    uintptr_t key; /* byte offset of this pool's state in every table */
    int variant;
    size_t size, slot, first; /* first: offset of slot 0 in its slab */
    uint32_t cap;
    uint32_t recip; /* (b): ceil(2^32 / slot): offset / slot by a multiply */
    pthread_mutex_t lock; /* (b): the pool's slabs */
    ps_list partial, full, empty; /* (b) */
    size_t mapped; /* slabs mapped now (all variants) */
} ps_pool;

/* ---- thread identity and tables ---- */

static inline uintptr_t ps_tid(void) {
#if defined(__x86_64__)
    uintptr_t t;
    __asm__("mov %%fs:0, %0" : "=r"(t));
    return t;
#else
    return (uintptr_t)__builtin_thread_pointer();
#endif
}

static _Alignas(64) char ps_unreg[PS_KEYS * PS_STATE];
static __thread char *ps_table __attribute__((tls_model("initial-exec"))) = ps_unreg;
static ps_slab ps_sentinel; /* free == NULL: sends allocation to the slow path */
static pthread_mutex_t ps_keys_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t ps_keys_used; /* bit k: key k * PS_STATE is taken */

static LAB_NOINLINE void ps_register(void) {
    char *t = aligned_alloc(64, sizeof ps_unreg);
    if (!t) abort();
    memcpy(t, ps_unreg, sizeof ps_unreg);
    ps_table = t;
}

static uint64_t ps_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static inline ps_slab *ps_slab_of(const void *p) {
    return (ps_slab *)((uintptr_t)p & ~(uintptr_t)(PS_SLAB - 1));
}

/* (d): slabs carved from 4 MiB regions whose first 64 KiB holds the
 * headers of the other 63, PS_REC bytes apart (mimalloc's segment layout):
 * the headers of 63 slabs share 4 pages instead of one page each. */
#define PS_REGION_SHIFT 22
#define PS_REGION ((size_t)1 << PS_REGION_SHIFT)
#define PS_REC 256
static inline ps_slab *ps_packed_of(const void *p) {
    uintptr_t a = (uintptr_t)p;
    return (ps_slab *)((a & ~(uintptr_t)(PS_REGION - 1)) +
                       ((a >> (PS_SHIFT - 8)) & ((PS_REGION / PS_SLAB - 1) * PS_REC)));
}
_Static_assert(PS_REC == 1 << 8, "ps_packed_of shifts by PS_SHIFT - 8");

static pthread_mutex_t ps_region_lock = PTHREAD_MUTEX_INITIALIZER;
static ps_slab *ps_region_free; /* (d): unused slab records, linked through next */

static ps_slab *region_take(void) {
    pthread_mutex_lock(&ps_region_lock);
    if (!ps_region_free) {
        char *m = mmap(NULL, 2 * PS_REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (m == MAP_FAILED) abort();
        char *a = (char *)(((uintptr_t)m + PS_REGION - 1) & ~(uintptr_t)(PS_REGION - 1));
        if (a > m) munmap(m, (size_t)(a - m));
        munmap(a + PS_REGION, (size_t)(m + 2 * PS_REGION - (a + PS_REGION)));
        for (size_t i = PS_REGION / PS_SLAB - 1; i >= 1; i--) { /* lowest address on top */
            ps_slab *r = (ps_slab *)(a + i * PS_REC);
            r->mem = a + i * PS_SLAB;
            r->next = ps_region_free;
            ps_region_free = r;
        }
    }
    ps_slab *s = ps_region_free;
    ps_region_free = s->next;
    pthread_mutex_unlock(&ps_region_lock);
    char *mem = s->mem;
    memset(s, 0, sizeof *s);
    s->mem = mem;
    return s;
}

static void region_give(ps_slab *s) {
    madvise(s->mem, PS_SLAB, MADV_DONTNEED); /* the region stays reserved */
    pthread_mutex_lock(&ps_region_lock);
    s->next = ps_region_free;
    ps_region_free = s;
    pthread_mutex_unlock(&ps_region_lock);
}

/* ---- slab lists ---- */

static void list_push(ps_list *l, ps_slab *s, uint32_t id) {
    s->prev = NULL;
    s->next = l->head;
    if (l->head) l->head->prev = s;
    else l->tail = s;
    l->head = s;
    l->n++;
    s->list = id;
}
static void list_remove(ps_list *l, ps_slab *s) {
    if (s->prev) s->prev->next = s->next;
    else l->head = s->next;
    if (s->next) s->next->prev = s->prev;
    else l->tail = s->prev;
    l->n--;
    s->prev = s->next = NULL;
    s->list = L_NONE;
}
static ps_slab *list_pop(ps_list *l) {
    ps_slab *s = l->head;
    if (s) list_remove(l, s);
    return s;
}

/* ---- slabs from the system ---- */

static ps_slab *slab_map(ps_pool *p) {
    if (IS_PACKED(p->variant)) {
        ps_slab *r = region_take();
        r->pool = p;
        r->cap = p->cap;
        p->mapped++;
        return r;
    }
    char *m = mmap(NULL, 2 * PS_SLAB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) abort();
    char *a = (char *)(((uintptr_t)m + PS_SLAB - 1) & ~(uintptr_t)(PS_SLAB - 1));
    if (a > m) munmap(m, (size_t)(a - m));
    if (a + PS_SLAB < m + 2 * PS_SLAB) munmap(a + PS_SLAB, (size_t)(m + 2 * PS_SLAB - (a + PS_SLAB)));
    ps_slab *s = (ps_slab *)a;
    s->pool = p;
    s->cap = p->cap;
    s->mem = a;
    p->mapped++;
    return s;
}

static void slab_unmap(ps_slab *s) {
    s->pool->mapped--;
    if (IS_PACKED(s->pool->variant)) region_give(s);
    else munmap(s, PS_SLAB);
}

/* Everything free again: hand out from slot 0 in address order. */
static void slab_restart(ps_slab *s) {
    ps_pool *p = s->pool;
    s->free = s->local_free = NULL;
    s->used = 0;
    s->bump = s->mem + p->first;
    s->end = s->bump + (size_t)p->cap * p->slot;
    if (p->variant == V_CACHEBIN) {
        for (uint32_t w = 0; w < PS_BITWORDS; w++) {
            uint32_t lo = w * 64;
            s->bits[w] = lo >= p->cap ? 0 : p->cap - lo >= 64 ? ~(uint64_t)0
                                                               : ((uint64_t)1 << (p->cap - lo)) - 1;
        }
        s->hint = 0;
    }
}

/* Empty slabs older than the delay go back to the system (oldest at the tail). */
static void purge(ps_list *empty, uint64_t now) {
    while (empty->tail && empty->tail->stamp_ms + PS_DELAY_MS <= now) {
        ps_slab *s = empty->tail;
        list_remove(empty, s);
        slab_unmap(s);
    }
}

static void slab_to_empty(ps_list *empty, ps_slab *s) {
    slab_restart(s);
    uint64_t now = ps_now_ms();
    s->stamp_ms = now;
    purge(empty, now);
    list_push(empty, s, L_EMPTY);
}

/* ---- (a) and (c): a thread's own slabs ---- */

static void heap_setup(ps_heap *h, ps_pool *p) {
    memset(h, 0, sizeof *h);
    h->cur = &ps_sentinel;
    h->pool = p;
}

/* Moves a slab's remote frees to its free list; returns how many. */
static uint32_t collect_remote(ps_slab *s) {
    void *list = __atomic_exchange_n(&s->thread_free, NULL, __ATOMIC_ACQUIRE);
    uint32_t n = 0;
    while (list) {
        void *next = *(void **)list;
        *(void **)list = s->free;
        s->free = list;
        list = next;
        n++;
    }
    s->used -= n;
    return n;
}

/* Links up to PS_EXTEND_BYTES of never-used slots onto free, in address order. */
static void extend(ps_slab *s, size_t slot) {
    size_t k = PS_EXTEND_BYTES / slot;
    if (k < PS_EXTEND_MIN) k = PS_EXTEND_MIN;
    size_t left = (size_t)(s->end - s->bump) / slot;
    if (k > left) k = left;
    char *p = s->bump;
    for (size_t i = 0; i + 1 < k; i++) *(void **)(p + i * slot) = p + (i + 1) * slot;
    *(void **)(p + (k - 1) * slot) = s->free;
    s->free = p;
    s->bump = p + k * slot;
}

/* The next slab to allocate from: one with free slots, an empty one, one
 * whose remote frees came back while it was full, or a new one. */
static ps_slab *heap_next(ps_heap *h) {
    ps_slab *s = list_pop(&h->avail);
    if (s) return s;
    s = list_pop(&h->empty);
    if (s) return s;
    for (ps_slab *f = h->full.head; f; f = f->next) {
        if (__atomic_load_n(&f->thread_free, __ATOMIC_RELAXED)) {
            list_remove(&h->full, f);
            f->xtid &= ~PS_FULL;
            collect_remote(f);
            return f;
        }
    }
    purge(&h->empty, ps_now_ms());
    s = slab_map(h->pool);
    slab_restart(s);
    s->xtid = ps_tid();
    return s;
}

/* The slow path of allocation: refill cur->free, or move to the next slab.
 * Returns an object popped from cur->free. */
static LAB_NOINLINE void *heap_alloc_slow(ps_heap *h) {
    if (h->empty.tail) purge(&h->empty, ps_now_ms()); /* the first slow path after the delay */
    ps_slab *s = h->cur;
    for (;;) {
        if (s != &ps_sentinel) {
            if (s->local_free) {
                s->free = s->local_free;
                s->local_free = NULL;
                break;
            }
            if (__atomic_load_n(&s->thread_free, __ATOMIC_RELAXED) && collect_remote(s)) break;
            if (s->bump < s->end) {
                extend(s, h->pool->slot);
                break;
            }
            s->used--; /* drops cur's reference: used == cap now */
            s->xtid |= PS_FULL;
            list_push(&h->full, s, L_FULL);
        }
        s = h->cur = heap_next(h);
        s->used++; /* cur's reference: cur never empties, so the hot loop never retires it */
        if (s->free) break;
    }
    void *obj = s->free;
    s->free = *(void **)obj;
    s->used++;
    return obj;
}

/* The owner freed the last object of s (used just reached 0; never cur,
 * which holds a reference of its own). */
static LAB_NOINLINE void heap_retire(ps_heap *h, ps_slab *s) {
    if (s->list == L_AVAIL) list_remove(&h->avail, s);
    else if (s->list == L_FULL) list_remove(&h->full, s);
    s->xtid &= ~PS_FULL;
    slab_to_empty(&h->empty, s);
}

/* A free into a full slab of this thread, or by another thread. Returns 1
 * when the object was pushed home remotely, 0 when the caller's thread owns
 * s (full flag now clear, s on avail) and should push it locally. */
static int heap_free_slow(ps_heap *h, ps_slab *s, void *obj) {
    if ((s->xtid & ~PS_FULL) != ps_tid()) { /* remote: one atomic push, no lock */
        void *old = __atomic_load_n(&s->thread_free, __ATOMIC_RELAXED);
        do *(void **)obj = old;
        while (!__atomic_compare_exchange_n(&s->thread_free, &old, obj, 1, __ATOMIC_RELEASE,
                                            __ATOMIC_RELAXED));
        return 1;
    }
    list_remove(&h->full, s);
    s->xtid &= ~PS_FULL;
    list_push(&h->avail, s, L_AVAIL);
    return 0;
}

static void heap_close(ps_heap *h) {
    if (!h->pool) return;
    ps_list *ls[3] = {&h->avail, &h->full, &h->empty};
    for (int i = 0; i < 3; i++) {
        ps_slab *s;
        while ((s = list_pop(ls[i]))) slab_unmap(s);
    }
    if (h->cur != &ps_sentinel) slab_unmap(h->cur);
    h->cur = &ps_sentinel;
    h->pool = NULL;
}

/* ---- (a) sharded: fast paths ---- */

static LAB_NOINLINE void *sh_alloc_slow(ps_pool *p) {
    if (ps_table == ps_unreg) ps_register();
    ps_heap *h = (ps_heap *)(ps_table + p->key);
    if (!h->pool) heap_setup(h, p);
    return heap_alloc_slow(h);
}

static inline void *sh_alloc(ps_pool *p) {
    ps_heap *h = (ps_heap *)(ps_table + p->key);
    ps_slab *s = h->cur;
    void *obj = s->free;
    if (likely(obj != NULL)) {
        s->free = *(void **)obj;
        s->used++;
        return obj;
    }
    return sh_alloc_slow(p);
}

static LAB_NOINLINE void sh_free_slow(ps_pool *p, ps_slab *s, void *obj) {
    ps_heap *h = (ps_heap *)(ps_table + p->key);
    if (heap_free_slow(h, s, obj)) return;
    *(void **)obj = s->local_free;
    s->local_free = obj;
    if (--s->used == 0) heap_retire(h, s);
}

static LAB_NOINLINE void sh_retire(ps_pool *p, ps_slab *s) {
    heap_retire((ps_heap *)(ps_table + p->key), s);
}

/* Constants: packed, 1 for (d) and (f) (the header found in the region's
 * table); single, 1 for (f) (the owner's frees go on the list allocation
 * pops, so the object just freed is the next one handed out). */
static inline void sh_free_g(ps_pool *p, void *obj, const int packed, const int single) {
    ps_slab *s = packed ? ps_packed_of(obj) : ps_slab_of(obj);
    if (likely(s->xtid == ps_tid())) {
        void **list = single ? &s->free : &s->local_free;
        *(void **)obj = *list;
        *list = obj;
        if (unlikely(--s->used == 0)) sh_retire(p, s);
        return;
    }
    sh_free_slow(p, s, obj);
}
static inline void sh_free(ps_pool *p, void *obj) { sh_free_g(p, obj, 0, 0); }
static inline void pk_free(ps_pool *p, void *obj) { sh_free_g(p, obj, 1, 0); }
static inline void sg_free(ps_pool *p, void *obj) { sh_free_g(p, obj, 1, 1); }

/* ---- (c) hybrid: a short LIFO of pointers in front of (a)'s slabs ---- */

static LAB_NOINLINE void *hy_alloc_slow(ps_pool *p) {
    if (ps_table == ps_unreg) ps_register();
    hy_state *st = (hy_state *)(ps_table + p->key);
    if (!st->h.pool) {
        heap_setup(&st->h, p);
        st->n = 0;
        st->lim = HY_RECENT;
    }
    return heap_alloc_slow(&st->h);
}

static inline void *hy_alloc(ps_pool *p) {
    hy_state *st = (hy_state *)(ps_table + p->key);
    uint32_t n = st->n;
    if (likely(n != 0)) {
        st->n = n - 1;
        return st->recent[n - 1];
    }
    ps_slab *s = st->h.cur;
    void *obj = s->free;
    if (likely(obj != NULL)) {
        s->free = *(void **)obj;
        s->used++;
        return obj;
    }
    return hy_alloc_slow(p);
}

/* The LIFO is full (or not set up), the slab is full, or obj is remote:
 * obj goes straight home to its slab's single free list. */
static LAB_NOINLINE void hy_free_slow(ps_pool *p, ps_slab *s, void *obj) {
    hy_state *st = (hy_state *)(ps_table + p->key);
    if ((s->xtid & PS_FULL) || (s->xtid & ~PS_FULL) != ps_tid()) {
        if (heap_free_slow(&st->h, s, obj)) return;
    }
    *(void **)obj = s->free;
    s->free = obj;
    if (--s->used == 0) heap_retire(&st->h, s);
}

static LAB_NOINLINE void hy_retire(ps_pool *p, ps_slab *s) {
    heap_retire(&((hy_state *)(ps_table + p->key))->h, s);
}

static inline void hy_free_g(ps_pool *p, void *obj, const int packed) {
    ps_slab *s = packed ? ps_packed_of(obj) : ps_slab_of(obj);
    hy_state *st = (hy_state *)(ps_table + p->key);
    uint32_t n = st->n;
    if (likely(s->xtid == ps_tid())) {
        if (likely(n < st->lim)) {
            st->recent[n] = obj;
            st->n = n + 1;
            return;
        }
        /* the LIFO is full: home to the slab, inline (the owner's own free) */
        *(void **)obj = s->free;
        s->free = obj;
        if (unlikely(--s->used == 0)) hy_retire(p, s);
        return;
    }
    hy_free_slow(p, s, obj);
}
static inline void hy_free(ps_pool *p, void *obj) { hy_free_g(p, obj, 0); }
static inline void hp_free(ps_pool *p, void *obj) { hy_free_g(p, obj, 1); }

/* ---- (b) cache bin: a stack of pointers, filled and flushed in halves ---- */

static void cb_setup(cb_state *b) {
    b->head = &b->stack[CB_CAP];
    b->low_full = (uint16_t)(uintptr_t)&b->stack[0];
    b->low_empty = (uint16_t)(uintptr_t)&b->stack[CB_CAP];
}

/* Up to want slots from the pool's slabs, lowest address first within a
 * slab, into out[]; caller holds the lock. */
static uint32_t cb_take(ps_pool *p, void **out, uint32_t want) {
    uint32_t k = 0;
    while (k < want) {
        ps_slab *s = p->partial.head;
        if (!s) {
            s = list_pop(&p->empty);
            if (!s) {
                purge(&p->empty, ps_now_ms());
                s = slab_map(p);
                slab_restart(s);
            }
            list_push(&p->partial, s, L_AVAIL);
        }
        char *base = (char *)s + p->first;
        uint32_t w = s->hint;
        while (k < want && w < PS_BITWORDS) {
            uint64_t bits = s->bits[w];
            while (bits && k < want) {
                uint32_t b = (uint32_t)__builtin_ctzll(bits);
                bits &= bits - 1;
                out[k++] = base + (size_t)(w * 64 + b) * p->slot;
                s->used++;
            }
            s->bits[w] = bits;
            if (!bits) w++;
        }
        s->hint = w;
        if (s->used == s->cap) {
            list_remove(&p->partial, s);
            list_push(&p->full, s, L_FULL);
        }
    }
    return k;
}

/* One slot home to its slab's bitmap, never touching the object; caller
 * holds the lock. */
static void cb_give(ps_pool *p, void *obj) {
    ps_slab *s = ps_slab_of(obj);
    uint32_t off = (uint32_t)((char *)obj - (char *)s - p->first);
    uint32_t i = (uint32_t)(((uint64_t)off * p->recip) >> 32);
    s->bits[i / 64] |= (uint64_t)1 << (i % 64);
    if (i / 64 < s->hint) s->hint = i / 64;
    if (s->used-- == s->cap) {
        list_remove(&p->full, s);
        list_push(&p->partial, s, L_AVAIL);
    }
    if (s->used == 0) {
        list_remove(&p->partial, s);
        slab_to_empty(&p->empty, s);
    }
}

static LAB_NOINLINE void *cb_alloc_slow(ps_pool *p) {
    if (ps_table == ps_unreg) ps_register();
    cb_state *b = (cb_state *)(ps_table + p->key);
    if (!b->low_empty) cb_setup(b);
    pthread_mutex_lock(&p->lock);
    if (p->empty.tail) purge(&p->empty, ps_now_ms());
    uint32_t k = cb_take(p, &b->stack[CB_CAP / 2], CB_CAP / 2);
    pthread_mutex_unlock(&p->lock);
    b->head = &b->stack[CB_CAP - k];
    return *b->head++;
}

static inline void *cb_alloc(ps_pool *p) {
    cb_state *b = (cb_state *)(ps_table + p->key);
    void **head = b->head;
    if (likely((uint16_t)(uintptr_t)head != b->low_empty)) {
        b->head = head + 1;
        return *head;
    }
    return cb_alloc_slow(p);
}

static LAB_NOINLINE void cb_free_slow(ps_pool *p, void *obj) {
    if (ps_table == ps_unreg) ps_register();
    cb_state *b = (cb_state *)(ps_table + p->key);
    if (!b->low_empty) {
        cb_setup(b);
    } else { /* full: the oldest half (the stack's bottom) goes home */
        pthread_mutex_lock(&p->lock);
        for (int i = CB_CAP / 2; i < CB_CAP; i++) cb_give(p, b->stack[i]);
        pthread_mutex_unlock(&p->lock);
        memmove(&b->stack[CB_CAP / 2], &b->stack[0], sizeof(void *) * (CB_CAP / 2));
        b->head = &b->stack[CB_CAP / 2];
    }
    *--b->head = obj;
}

static inline void cb_free(ps_pool *p, void *obj) {
    cb_state *b = (cb_state *)(ps_table + p->key);
    void **head = b->head;
    if (likely((uint16_t)(uintptr_t)head != b->low_full)) {
        *--head = obj;
        b->head = head;
        return;
    }
    cb_free_slow(p, obj);
}

/* ---- pools ---- */

static int is_pow2(size_t x) { return x && !(x & (x - 1)); }

static void *ps_open(size_t size, int variant) {
    ps_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    pthread_mutex_lock(&ps_keys_lock);
    int k = 0;
    while (k < PS_KEYS && (ps_keys_used >> k & 1)) k++;
    if (k == PS_KEYS) abort(); /* a prototype limit */
    ps_keys_used |= (uint64_t)1 << k;
    pthread_mutex_unlock(&ps_keys_lock);
    p->key = (uintptr_t)k * PS_STATE;
    p->variant = variant;
    p->size = size;
    size_t align = 16;
    p->slot = (size + 15) & ~(size_t)15;
    if (is_pow2(size) && size <= 4096) p->slot = align = size < 16 ? 16 : size;
    size_t header = IS_PACKED(variant) ? 0 : sizeof(ps_slab) + (variant == V_CACHEBIN ? PS_BITWORDS * 8 : 0);
    p->first = (header + align - 1) & ~(align - 1);
    p->cap = (uint32_t)((PS_SLAB - p->first) / p->slot);
    p->recip = (uint32_t)((((uint64_t)1 << 32) + p->slot - 1) / p->slot);
    pthread_mutex_init(&p->lock, NULL);
    /* The shared table's slot: empty, so every call goes slow; and this
     * thread's, if it has a table (a sketch: other threads' are not set). */
    char *slots[2] = {ps_unreg + p->key, ps_table != ps_unreg ? ps_table + p->key : NULL};
    for (int i = 0; i < 2; i++) {
        if (!slots[i]) continue;
        memset(slots[i], 0, PS_STATE);
        if (IS_SHARDED(variant)) ((ps_heap *)slots[i])->cur = &ps_sentinel;
        if (IS_HYBRID(variant)) ((hy_state *)slots[i])->h.cur = &ps_sentinel;
    }
    return p;
}

static void ps_close(void *ctx) {
    ps_pool *p = ctx;
    char *st = ps_table + p->key;
    if (ps_table != ps_unreg) {
        if (IS_SHARDED(p->variant)) heap_close((ps_heap *)st);
        if (IS_HYBRID(p->variant)) heap_close(&((hy_state *)st)->h);
        memset(st, 0, PS_STATE);
    }
    ps_list *ls[3] = {&p->partial, &p->full, &p->empty};
    for (int i = 0; i < 3; i++) {
        ps_slab *s;
        while ((s = list_pop(ls[i]))) slab_unmap(s);
    }
    pthread_mutex_lock(&ps_keys_lock);
    ps_keys_used &= ~((uint64_t)1 << (p->key / PS_STATE));
    pthread_mutex_unlock(&ps_keys_lock);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

static void *sh_open(size_t size) { return ps_open(size, V_SHARDED); }
static void *cb_open(size_t size) { return ps_open(size, V_CACHEBIN); }
static void *hy_open(size_t size) { return ps_open(size, V_HYBRID); }
static void *pk_open(size_t size) { return ps_open(size, V_PACKED); }
static void *hp_open(size_t size) { return ps_open(size, V_HYPACK); }
static void *sg_open(size_t size) { return ps_open(size, V_SINGLE); }

/* Entry points behind calls, for the self-check and objdump. */
LAB_NOINLINE void *lab_proto_alloc(void *pool) {
    ps_pool *p = pool;
    if (p->variant == V_HYPACK) return hy_alloc(p);
    return IS_SHARDED(p->variant) ? sh_alloc(p)
           : p->variant == V_CACHEBIN                      ? cb_alloc(p)
                                                           : hy_alloc(p);
}
LAB_NOINLINE void lab_proto_free(void *pool, void *obj) {
    ps_pool *p = pool;
    if (p->variant == V_SHARDED) sh_free(p, obj);
    else if (p->variant == V_PACKED) pk_free(p, obj);
    else if (p->variant == V_HYPACK) hp_free(p, obj);
    else if (p->variant == V_SINGLE) sg_free(p, obj);
    else if (p->variant == V_CACHEBIN) cb_free(p, obj);
    else hy_free(p, obj);
}
/* One fast path each, alone, for objdump's instruction counts. */
LAB_NOINLINE void *lab_proto_sharded_alloc(void *p) { return sh_alloc(p); }
LAB_NOINLINE void lab_proto_sharded_free(void *p, void *o) { sh_free(p, o); }
LAB_NOINLINE void *lab_proto_cachebin_alloc(void *p) { return cb_alloc(p); }
LAB_NOINLINE void lab_proto_cachebin_free(void *p, void *o) { cb_free(p, o); }
LAB_NOINLINE void *lab_proto_hybrid_alloc(void *p) { return hy_alloc(p); }
LAB_NOINLINE void lab_proto_hybrid_free(void *p, void *o) { hy_free(p, o); }
LAB_NOINLINE void lab_proto_packed_free(void *p, void *o) { pk_free(p, o); }
LAB_NOINLINE void lab_proto_hypack_free(void *p, void *o) { hp_free(p, o); }
LAB_NOINLINE void lab_proto_single_free(void *p, void *o) { sg_free(p, o); }

/* Thread workloads too (churn, producer/consumer): the remote paths run. */
#define K_THREADS 1
#define K_NAME sharded
#define K_ALLOC(c, sz) sh_alloc((ps_pool *)(c))
#define K_FREE(c, p, sz) sh_free((ps_pool *)(c), (p))
#include "kernels.h"
#undef K_NAME
#undef K_ALLOC
#undef K_FREE
#define K_NAME cachebin
#define K_ALLOC(c, sz) cb_alloc((ps_pool *)(c))
#define K_FREE(c, p, sz) cb_free((ps_pool *)(c), (p))
#include "kernels.h"
#undef K_NAME
#undef K_ALLOC
#undef K_FREE
#define K_NAME hybrid
#define K_ALLOC(c, sz) hy_alloc((ps_pool *)(c))
#define K_FREE(c, p, sz) hy_free((ps_pool *)(c), (p))
#include "kernels.h"
#undef K_NAME
#undef K_ALLOC
#undef K_FREE
#define K_NAME packed
#define K_ALLOC(c, sz) sh_alloc((ps_pool *)(c))
#define K_FREE(c, p, sz) pk_free((ps_pool *)(c), (p))
#include "kernels.h"
#undef K_NAME
#undef K_ALLOC
#undef K_FREE
#define K_NAME hypack
#define K_ALLOC(c, sz) hy_alloc((ps_pool *)(c))
#define K_FREE(c, p, sz) hp_free((ps_pool *)(c), (p))
#include "kernels.h"
#undef K_NAME
#undef K_ALLOC
#undef K_FREE
#define K_NAME single
#define K_ALLOC(c, sz) sh_alloc((ps_pool *)(c))
#define K_FREE(c, p, sz) sg_free((ps_pool *)(c), (p))
#include "kernels.h"

/* ---- the self-check: no object handed out twice, alignment, memory back ---- */

static int cmp_ptr(const void *a, const void *b) {
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return (x > y) - (x < y);
}

/* Every live object distinct, inside a slot of its slab, aligned. */
static int check_live(ps_pool *p, void **v, long n, char *msg, size_t len) {
    void **s = malloc(sizeof(void *) * (size_t)n);
    memcpy(s, v, sizeof(void *) * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_ptr);
    int ok = 1;
    for (long i = 0; i < n && ok; i++) {
        ps_slab *sl = IS_PACKED(p->variant) ? ps_packed_of(s[i]) : ps_slab_of(s[i]);
        size_t off = (size_t)((char *)s[i] - sl->mem);
        if (i > 0 && s[i] == s[i - 1])
            ok = 0, snprintf(msg, len, "object %p handed out twice", s[i]);
        else if (off < p->first || (off - p->first) % p->slot || (off - p->first) / p->slot >= p->cap)
            ok = 0, snprintf(msg, len, "%p is not a slot", s[i]);
        else if (is_pow2(p->slot) && (uintptr_t)s[i] % p->slot)
            ok = 0, snprintf(msg, len, "%p not aligned to %zu", s[i], p->slot);
    }
    free(s);
    return ok;
}

/* Slabs that objects in this thread's cache keep from emptying ((b), (c)). */
static size_t cached_slabs(ps_pool *p) {
    void **v = NULL;
    size_t n = 0;
    char *st = ps_table + p->key;
    if (p->variant == V_CACHEBIN && ((cb_state *)st)->low_empty) {
        cb_state *b = (cb_state *)st;
        v = b->head;
        n = (size_t)(&b->stack[CB_CAP] - b->head);
    } else if (IS_HYBRID(p->variant)) {
        v = ((hy_state *)st)->recent;
        n = ((hy_state *)st)->n;
    }
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < i && ps_slab_of(v[j]) != ps_slab_of(v[i])) j++;
        distinct += j == i;
    }
    return distinct;
}

typedef struct remote_arg {
    ps_pool *p;
    void **v;
    long n;
} remote_arg;

static void *remote_frees(void *argp) {
    remote_arg *r = argp;
    for (long i = 0; i < r->n; i++) lab_proto_free(r->p, r->v[i]);
    return NULL;
}

/* (a), (c), (d): another thread frees everything; the owner gets it all back
 * through thread_free without mapping more than one more slab. */
static int check_remote(int var, void **v, long n, char *msg, size_t len) {
    ps_pool *p = ps_open(64, var);
    for (long i = 0; i < n; i++) v[i] = lab_proto_alloc(p);
    size_t before = p->mapped;
    remote_arg r = {p, v, n};
    pthread_t t;
    if (pthread_create(&t, NULL, remote_frees, &r) != 0 || pthread_join(t, NULL) != 0) return -1;
    for (long i = 0; i < n; i++) v[i] = lab_proto_alloc(p);
    if (!check_live(p, v, n, msg, len)) return -1;
    if (p->mapped > before + 1) {
        snprintf(msg, len, "variant %d: remote frees not reused (%zu slabs, %zu before)", var,
                 p->mapped, before);
        return -1;
    }
    for (long i = 0; i < n; i++) lab_proto_free(p, v[i]);
    ps_close(p);
    return 0;
}

int lab_proto_selfcheck(char *msg, size_t len) {
    static const size_t sizes[] = {16, 48, 64, 256, 4096};
    const long n = 20000;
    void **v = malloc(sizeof(void *) * (size_t)n);
    uint32_t *perm = malloc(sizeof(uint32_t) * (size_t)n);
    shared_permutation(perm, n, 42);
    for (int var = 0; var < V_COUNT; var++) {
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
            ps_pool *p = ps_open(sizes[z], var);
            for (int round = 0; round < 3; round++) {
                for (long i = 0; i < n; i++) {
                    v[i] = lab_proto_alloc(p);
                    memset(v[i], 0x5a, sizes[z]);
                }
                if (!check_live(p, v, n, msg, len)) return -1;
                /* free half at random, take them again, check, free all at random */
                for (long i = 0; i < n / 2; i++) lab_proto_free(p, v[perm[i]]);
                for (long i = 0; i < n / 2; i++) v[perm[i]] = lab_proto_alloc(p);
                if (!check_live(p, v, n, msg, len)) return -1;
                for (long i = 0; i < n; i++) lab_proto_free(p, v[perm[i]]);
            }
            /* Memory back: all free (80 slabs at 256 B), the delay passes, and the first
             * allocation slow path after it purges. Allocating a slab's worth plus every
             * cache forces one in every design: (c), (e) and (f) can run on their fast
             * paths indefinitely, so "the first call after the delay" holds only for
             * slow paths. Slabs that objects in the thread's cache kept from emptying
             * ((b), (c), (e)) may stay. */
            if (z == 3) {
                size_t before = p->mapped, pinned = cached_slabs(p);
                struct timespec d = {0, (PS_DELAY_MS + 20) * 1000000L};
                nanosleep(&d, NULL);
                long m = (long)p->cap + CB_CAP + HY_RECENT + 1;
                for (long i = 0; i < m; i++) v[i] = lab_proto_alloc(p);
                for (long i = 0; i < m; i++) lab_proto_free(p, v[i]);
                if (p->mapped > pinned + 4) {
                    snprintf(msg, len, "variant %d: %zu slabs mapped after the delay (%zu before, "
                             "%zu kept by objects cached at the start of the delay)", var,
                             p->mapped, before, pinned);
                    return -1;
                }
            }
            ps_close(p);
        }
    }
    for (int var = 0; var < V_COUNT; var++)
        if (var != V_CACHEBIN && check_remote(var, v, n, msg, len) != 0) return -1;
    free(v);
    free(perm);
    snprintf(msg, len, "ok: 6 designs x 5 sizes, 20,000 objects, no double hand-out, slots aligned, "
                       "empty slabs unmapped after the delay, remote frees reused by the owner "
                       "(all but (b))");
    return 0;
}

/* ---- adapters ---- */

static void proto_fill(lab_allocator *a, const char *subject, const char *what,
                       void *(*open)(size_t)) {
    a->subject = subject;
    a->family = "proto";
    a->open = open;
    a->close = ps_close;
    a->frees_each = 1;
    snprintf(a->version, sizeof a->version, "%s", what);
    a->available = 1;
}

void lab_adapter_proto_sharded(lab_allocator *a) {
    proto_fill(a, "proto sharded", "(a) sharded free lists (mimalloc-like)", sh_open);
    sharded_fill(a);
}
void lab_adapter_proto_cachebin(lab_allocator *a) {
    proto_fill(a, "proto cachebin", "(b) cache bin (jemalloc-like)", cb_open);
    cachebin_fill(a);
}
void lab_adapter_proto_hybrid(lab_allocator *a) {
    proto_fill(a, "proto hybrid", "(c) hybrid: LIFO of 14 + sharded slabs", hy_open);
    hybrid_fill(a);
}
void lab_adapter_proto_hypack(lab_allocator *a) {
    proto_fill(a, "proto hybrid packed", "(e) = (c) with (d)'s packed headers", hp_open);
    hypack_fill(a);
}
void lab_adapter_proto_single(lab_allocator *a) {
    proto_fill(a, "proto single packed", "(f) = (d) with one free list per slab", sg_open);
    single_fill(a);
}
void lab_adapter_proto_packed(lab_allocator *a) {
    proto_fill(a, "proto packed", "(d) = (a) with headers packed per 4 MiB region", pk_open);
    packed_fill(a);
}
