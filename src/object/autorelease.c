/* Autorelease pools: a per-thread stack of entries kept in pages.
 *
 * The stack. Each thread owns a chain of pages (PAGE_BYTES each, from one
 * pk_pool shared by all threads), newest first; the hot page is the one
 * being filled and f->top its next free slot. Entries are words, read from
 * the top down, so each entry's kind is told by its topmost word:
 *   object     the object pointer (objects are 16-aligned: low 4 bits 0)
 *   pool       genhi | TAG_POOL     (genhi = generation << NUM_BITS)
 *   deferred   [ptr] [fn] [TAG_DEFER]
 * An entry never straddles two pages: when one does not fit, the page
 * records where its entries end (page->end) and the next page starts fresh.
 * Slots are numbered across the stack: slots[0] of a page is number
 * page->first, and pages are numbered as if full (first = previous first +
 * PAGE_SLOTS), so numbers grow with the stack; number 0 is never a slot.
 * f->base turns a number into an address in the hot page and back. The word
 * before slots[0] (page->guard) holds TAG_MASK: neither a pool word nor an
 * object, so the inline pop and pop_hot may read the word below the top
 * even when the hot page is empty.
 *
 * Tokens. A push writes a pool word and returns genhi | its number, genhi
 * being the thread's push counter shifted left by NUM_BITS (seeded per
 * thread, so threads count in different ranges). A token is live iff its
 * number is below the top, on a used slot of its page, and that slot holds
 * its pool word: a popped pool's slot is above the top or has been
 * overwritten, and a pool pushed there later has another generation. A
 * forged token can only pass by naming a slot that holds exactly the right
 * word.
 *
 * Fast and slow. object.h inlines push, pop and autorelease over pk__arp
 * (the fields they need); everything else is in arp_tls. The inline pop
 * handles an empty pool in the hot page; pk__autorelease_pop_slow handles
 * the rest: it drains entries one at a time, re-reading the top after each,
 * so that what a dealloc or deferred call autoreleases meanwhile (it lands
 * above the cursor) is drained by the same pop, and inner pool words met on
 * the way are dropped (popping an outer pool pops the inner ones). A page
 * emptied by the drain becomes the spare, so a push/pop loop that straddles
 * a page boundary does not allocate.
 *
 * The implicit pool is simply the entries below every pool word; the fast
 * paths do not care. In debug mode (POOLKIT_DEBUG) f->limit is NULL, so every
 * push and autorelease takes its slow path, which keeps t->outer (the number
 * of the outermost live pool, 0 for none) and reports what goes to the
 * implicit pool. f->watch makes the inline pop go slow for a pool numbered
 * at or below it: the outermost pool in debug mode, and any pool that owns
 * scratch memory.
 *
 * Scratch. pk_scratch takes memory from a per-thread arena. The first
 * pk_scratch after a push saves the arena's position in a record (itself in
 * the arena) owned by the top's number at that time; a pop of the pool
 * numbered n rewinds to the oldest record owned above n. A pthread key's
 * destructor drains the whole stack at thread exit.
 */
#define PK__ARP_EMIT_EXTERN_INLINE 1 /* this file holds the exported copies */
#include "object/object_internal.h"
#include "pool/pool_internal.h"

#include <poolkit/arena.h>
#include <poolkit/pool.h>

#include <errno.h>
#include <pthread.h>
#include <string.h>

#define PAGE_BYTES 4096
#define TAG_MASK ((uintptr_t)15)
#define TAG_POOL ((uintptr_t)1)
#define TAG_DEFER ((uintptr_t)2)
#define NUM_BITS PK__ARP_NUM_BITS
#define NUM_MASK PK__ARP_NUM_MASK
#define GEN_ONE ((uintptr_t)1 << NUM_BITS)

typedef struct arp_page {
    struct arp_page *prev; /* older page; NULL for the first */
    uintptr_t first;       /* number of slots[0] */
    uintptr_t *end;        /* end of the entries, once a newer page exists */
    uintptr_t guard;       /* TAG_MASK: slots[-1] is never an entry */
    uintptr_t slots[];
} arp_page;

#define PAGE_SLOTS ((PAGE_BYTES - sizeof(arp_page)) / sizeof(uintptr_t))

typedef struct scratch_rec {
    struct scratch_rec *prev;
    pk_arena_mark mark; /* the arena's position before this record */
    uintptr_t owner;    /* the top's number when it was made */
    uintptr_t genhi;    /* the thread's push counter then */
} scratch_rec;

/* The thread's state beyond pk__arp. */
typedef struct arp_thread {
    arp_page *hot, *spare;
    uintptr_t *end;          /* the hot page's real end (f->limit may be NULL) */
    uintptr_t outer;         /* debug mode: number of the outermost live pool */
    uintptr_t scratch_owner; /* owner of scratch_top; 0 when none */
    scratch_rec *scratch_top;
    pk_arena *scratch;
    size_t pages;
    uint64_t page_allocs;
    bool registered, debug;
} arp_thread;

__thread pk__arp_fast pk__arp __attribute__((tls_model("initial-exec")));
static __thread arp_thread arp_tls __attribute__((tls_model("initial-exec")));

static pk_pool *page_pool; /* atomic */
static pthread_mutex_t page_lock PK_FORK_LOCK = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static uintptr_t thread_serial; /* atomic */

static inline uintptr_t num_of(const uintptr_t *p) {
    return ((uintptr_t)p - pk__arp.base) / sizeof(uintptr_t);
}

static inline uintptr_t *slot_at(uintptr_t num) {
    return (uintptr_t *)(pk__arp.base + num * sizeof(uintptr_t));
}

/* The inline pop goes slow for pools numbered <= watch. */
static void update_watch(arp_thread *t) {
    uintptr_t w = t->outer;
    if (t->scratch_owner && t->scratch_owner - 1 > w) w = t->scratch_owner - 1;
    pk__arp.watch = w;
}

/* ---- pages ---- */

static pk_pool *pages(void) {
    pk_pool *p = __atomic_load_n(&page_pool, __ATOMIC_ACQUIRE);
    if (likely(p != NULL)) return p;
    pk_lock(&page_lock);
    fork_test_point(HOOK_ARP_PAGES, &page_lock);
    p = page_pool;
    if (!p) {
        pk_pool_config c;
        memset(&c, 0, sizeof c);
        c.name = "autorelease pages";
        c.size = PAGE_BYTES;
        c.align = 64;
        c.flags = POOL_LIBRARY;
        p = pk_pool_create(&c);
        if (p) __atomic_store_n(&page_pool, p, __ATOMIC_RELEASE);
    }
    pk_unlock(&page_lock);
    return p;
}

static arp_page *page_new(arp_thread *t) {
    arp_page *p = t->spare;
    if (p) {
        t->spare = NULL;
        return p;
    }
    pk_pool *pool = pages();
    if (!pool || !(p = pk_pool_alloc(pool))) {
        errno = ENOMEM;
        return NULL;
    }
    p->guard = TAG_MASK;
    t->pages++;
    t->page_allocs++;
    return p;
}

static void page_free(arp_thread *t, arp_page *p) {
    t->pages--;
    pk_pool_free(__atomic_load_n(&page_pool, __ATOMIC_RELAXED), p);
}

static void set_hot(arp_thread *t, arp_page *p, uintptr_t *top) {
    t->hot = p;
    t->end = p->slots + PAGE_SLOTS;
    pk__arp.top = top;
    pk__arp.limit = t->debug ? NULL : t->end;
    pk__arp.base = (uintptr_t)p->slots - p->first * sizeof(uintptr_t);
}

/* Moves the stack to a fresh page (an entry did not fit). */
static bool page_advance(arp_thread *t) {
    uintptr_t first = t->hot->first + PAGE_SLOTS;
    if (first + PAGE_SLOTS >= NUM_MASK) { /* numbers would not fit a token */
        errno = ENOMEM;
        return false;
    }
    arp_page *p = page_new(t);
    if (!p) return false;
    p->prev = t->hot;
    p->first = first;
    t->hot->end = pk__arp.top;
    set_hot(t, p, p->slots);
    return true;
}

/* The hot page is empty: back to the previous one, keeping a spare. */
static void page_retreat(arp_thread *t) {
    arp_page *old = t->hot, *p = old->prev;
    set_hot(t, p, p->end);
    if (t->spare)
        page_free(t, old);
    else
        t->spare = old;
}

/* ---- the thread's state ---- */

static void thread_exit(void *arg);

static void make_exit_key(void) {
    if (pthread_key_create(&exit_key, thread_exit) != 0) exit_key = (pthread_key_t)-1;
}

/* Gives the thread its first page and arranges the drain at its exit. */
static PK_NOINLINE bool thread_init(arp_thread *t) {
    if (t->hot) return true;
    if (!t->registered) {
        pthread_once(&exit_key_once, make_exit_key);
        if (exit_key != (pthread_key_t)-1) pthread_setspecific(exit_key, t);
        t->registered = true;
        t->debug = options_debug();
        /* Spread the threads' generations apart (golden-ratio steps). */
        uintptr_t serial = __atomic_add_fetch(&thread_serial, 1, __ATOMIC_RELAXED);
        pk__arp.genhi = (uintptr_t)(serial * 0x9E3779B97F4A7C15ull) << NUM_BITS;
    }
    arp_page *p = page_new(t);
    if (!p) return false;
    p->prev = NULL;
    p->first = 1; /* number 0 is never a slot */
    set_hot(t, p, p->slots);
    return true;
}

/* ---- draining ---- */

static PK_NOINLINE void scratch_unwind(arp_thread *t, uintptr_t num) {
    scratch_rec *r = t->scratch_top;
    pk_arena_mark mark = {NULL, 0};
    bool any = false;
    while (r && r->owner > num) {
        mark = r->mark;
        any = true;
        r = r->prev;
    }
    t->scratch_top = r;
    t->scratch_owner = r ? r->owner : 0;
    update_watch(t);
    if (any) pk_arena_rewind(t->scratch, mark);
}

/* Runs the entry whose top word is w (not an object) and takes it off. */
static PK_NOINLINE void drain_special(arp_thread *t, uintptr_t *top, uintptr_t w) {
    if ((w & TAG_MASK) == TAG_POOL) { /* an inner pool: popped with this one */
        pk__arp.top = top - 1;
        if (num_of(top - 1) == t->outer) {
            t->outer = 0;
            update_watch(t);
        }
        return;
    }
    void (*fn)(void *);
    memcpy(&fn, &top[-2], sizeof fn);
    void *ptr = (void *)top[-3];
    pk__arp.top = top - 3;
    pk__arp.pending--;
    fn(ptr);
}

/* Releases objects off the top of the hot page `page`, newest first, down to
 * `floor`, while the entries met are objects and the hot page stays `page`:
 * the loop that pops spend their time in. Re-reads the top after every
 * release, since the release may run code that autoreleases or pops. */
static inline void release_run(arp_thread *t, const arp_page *page, uintptr_t *floor) {
    uintptr_t *top;
    while (t->hot == page && (top = pk__arp.top) > floor) {
        uintptr_t w = top[-1];
        if (unlikely(w & TAG_MASK)) return;
        pk__arp.top = top - 1;
        pk__arp.pending--;
        object_release((void *)w);
    }
}

/* Takes entries off the top, newest first, while the top's number is above
 * stop. Re-reads the state after every entry: the entry's code may push,
 * autorelease, defer or pop on this thread. */
static void drain(arp_thread *t, uintptr_t stop) {
    for (;;) {
        arp_page *page = t->hot;
        uintptr_t *top = pk__arp.top;
        /* An empty page goes first: its number may already equal stop. */
        if (unlikely(top == page->slots) && page->prev) {
            page_retreat(t);
            continue;
        }
        if (num_of(top) <= stop) return;
        uintptr_t *floor = stop >= page->first ? slot_at(stop) : page->slots;
        release_run(t, page, floor);
        top = pk__arp.top;
        if (t->hot == page && top > floor && (top[-1] & TAG_MASK)) drain_special(t, top, top[-1]);
    }
}

/* The pool numbered num has just lost its word: the rest of a pop. */
static inline void pop_done(arp_thread *t, uintptr_t num) {
    if (unlikely(num == t->outer)) {
        t->outer = 0;
        update_watch(t);
    }
    if (unlikely(t->scratch_owner > num)) scratch_unwind(t, num);
}

/* Pops the live pool whose word (`word`) is numbered num: any case. */
static PK_NOINLINE void pop_live(arp_thread *t, uintptr_t num, uintptr_t word) {
    drain(t, num + 1);
    /* Unless code run by the drain popped this pool itself, take its word off. */
    uintptr_t *top = pk__arp.top;
    if (num_of(top) == num + 1 && top[-1] == word) pk__arp.top = top - 1;
    pop_done(t, num);
}

/* Pops the live pool whose word is at `at` in the hot page: its objects in
 * one run, and pop_live for anything else (a deferred call, an inner pool,
 * a page change, or code that popped this pool meanwhile). */
static PK_NOINLINE void pop_hot(arp_thread *t, uintptr_t *at, uintptr_t token) {
    const arp_page *page = t->hot;
    release_run(t, page, at + 1);
    if (likely(t->hot == page && pk__arp.top == at + 1)) {
        pk__arp.top = at;
        pop_done(t, token & NUM_MASK);
        return;
    }
    uintptr_t num = token & NUM_MASK;
    pop_live(t, num, token - num + TAG_POOL);
}

static PK_COLD void report_bad_token(uintptr_t token) {
    error_report(PK_FATAL, "bad autorelease token", NULL, (const void *)token,
                 "token %#lx is not a live autorelease pool of this thread (popped already, "
                 "popped with an outer pool, pushed on another thread, or an outer pool popped "
                 "while a pool inside it drains)",
                 (unsigned long)token);
}

/* A pool outside the hot page, or a bad token. */
static PK_NOINLINE void pop_elsewhere(arp_thread *t, uintptr_t token) {
    if (token == PK_AUTORELEASE_NONE) return; /* the push had failed */
    uintptr_t num = token & NUM_MASK, word = token - num + TAG_POOL;
    arp_page *p = t->hot;
    uintptr_t *end = pk__arp.top;
    while (p && num < p->first) {
        p = p->prev;
        end = p ? p->end : NULL;
    }
    if (!p || num >= p->first + (uintptr_t)(end - p->slots) || p->slots[num - p->first] != word) {
        report_bad_token(token);
        return;
    }
    pop_live(t, num, word);
}

/* Every pop of a pool that holds entries, or of one elsewhere. */
static PK_NOINLINE void pop_entries(uintptr_t token) {
    arp_thread *t = &arp_tls;
    uintptr_t num = token & NUM_MASK, word = token - num + TAG_POOL;
    uintptr_t *at = slot_at(num), *top = pk__arp.top;
    /* (top is NULL until the thread has a page, so at < top implies t->hot.) */
    if (unlikely(at >= top || at < t->hot->slots || *at != word)) {
        pop_elsewhere(t, token);
        return;
    }
    pop_hot(t, at, token);
}

/* A pool of one object (a pool per object, an object per request) first,
 * with no call but the object's free at its end: the pool's word just
 * below the top (as the inline pop, which takes an empty pool, finds its
 * own: the page's header words before its slots never equal a pool's
 * word), the object quiet in the thread's last slab (object_quiet_cached).
 * Nothing can be autoreleased meanwhile, so the pool goes first and the
 * release is the last thing done. Anything else, a cold slab included,
 * goes the way of every pop. Frees the frame a call in the middle would
 * make it keep. */
void pk__autorelease_pop_slow(uintptr_t token) {
    uintptr_t num = token & NUM_MASK;
    uintptr_t *at = slot_at(num);
    if (likely(at + 2 == pk__arp.top && *at == token - num + TAG_POOL && num > pk__arp.watch)) {
        uintptr_t w = at[1];
        object_header *h = (w & TAG_MASK) == 0 ? object_quiet_cached((void *)w) : NULL;
        if (likely(h != NULL)) {
            pk__arp.top = at;
            pk__arp.pending--;
            object_dispose_quiet(h, h->cls);
            return;
        }
    }
    pop_entries(token);
}

/* ---- pushing, autoreleasing, deferring ---- */

static inline pk_autorelease_pool push_at(uintptr_t *top) {
    uintptr_t genhi = pk__arp.genhi + GEN_ONE;
    pk__arp.genhi = genhi;
    *top = genhi | TAG_POOL;
    pk__arp.top = top + 1;
    pk_autorelease_pool pool = {genhi | num_of(top)};
    return pool;
}

/* Every push the inline path does not finish: no page yet, page full, or
 * debug mode. */
pk_autorelease_pool pk__autorelease_push_slow(void) {
    arp_thread *t = &arp_tls;
    if (!thread_init(t) || (pk__arp.top == t->end && !page_advance(t))) {
        pk_autorelease_pool none = {PK_AUTORELEASE_NONE};
        return none;
    }
    uintptr_t *top = pk__arp.top;
    if (t->debug && t->outer == 0) {
        t->outer = num_of(top);
        update_watch(t);
    }
    return push_at(top);
}

static inline void count_pending(void) {
    size_t n = ++pk__arp.pending;
    if (n > pk__arp.high_water) pk__arp.high_water = n;
}

static PK_COLD void warn_implicit(const char *what, const void *ptr, const char *name) {
    error_report(PK_WARNING, "autorelease with no pool", name, ptr,
                 "%s %p%s%s with no autorelease pool pushed: it goes to the thread's "
                 "implicit pool, drained at thread exit", what, ptr,
                 name ? " of class " : "", name ? name : "");
}

/* Room for n words on the stack, the thread set up, and the implicit pool
 * reported in debug mode. False with errno ENOMEM. */
static PK_NOINLINE bool make_room(arp_thread *t, size_t n, const char *what, const void *ptr,
                                  const char *name) {
    if (!thread_init(t)) return false;
    if ((size_t)(t->end - pk__arp.top) < n && !page_advance(t)) return false;
    if (t->debug && t->outer == 0) warn_implicit(what, ptr, name);
    return true;
}

/* Every autorelease the inline path does not finish. */
void *pk__autorelease_slow(void *obj) {
    if (obj == NULL) return NULL;
    if ((uintptr_t)obj & TAG_MASK) {
        error_report(PK_FATAL, "foreign pointer", NULL, obj,
                     "pk_autorelease: %p is not a poolkit object (misaligned)", obj);
        return obj;
    }
    object_check_slow(obj, "pk_autorelease"); /* debug mode takes this path every time */
    arp_thread *t = &arp_tls;
    const pk_class *cls = pk_class_of(obj);
    const char *name = cls ? cls->name : NULL;
    if (!make_room(t, 1, "object", obj, name)) {
        error_report(PK_WARNING, "out of memory", name, obj,
                     "pk_autorelease: no memory for the autorelease stack: object %p leaks", obj);
        return obj;
    }
    *pk__arp.top++ = (uintptr_t)obj;
    count_pending();
    return obj;
}

void *pk_defer(void *ptr, void (*fn)(void *)) {
    if (unlikely(fn == NULL)) {
        errno = EINVAL;
        return NULL;
    }
    if (unlikely((uintptr_t)pk__arp.top + 3 * sizeof(uintptr_t) > (uintptr_t)pk__arp.limit)) {
        if (!make_room(&arp_tls, 3, "deferred call on", ptr, NULL)) return NULL;
    }
    uintptr_t *top = pk__arp.top;
    top[0] = (uintptr_t)ptr;
    memcpy(&top[1], &fn, sizeof fn);
    top[2] = TAG_DEFER;
    pk__arp.top = top + 3;
    count_pending();
    return ptr;
}

/* ---- scratch memory ---- */

void *pk_scratch(size_t size) {
    arp_thread *t = &arp_tls;
    if (unlikely(!t->hot) && !thread_init(t)) return NULL;
    if (unlikely(!t->scratch)) {
        t->scratch = pk_arena_create(0);
        if (!t->scratch) return NULL;
        arena_count_library(1);
    }
    scratch_rec *r = t->scratch_top;
    bool implicit = false;
    if (unlikely(!r || r->genhi != pk__arp.genhi)) { /* the first since the last push */
        pk_arena_mark mark = pk_arena_save(t->scratch);
        r = pk_arena_alloc(t->scratch, sizeof *r, 0);
        if (!r) return NULL;
        r->prev = t->scratch_top;
        r->mark = mark;
        r->owner = num_of(pk__arp.top);
        r->genhi = pk__arp.genhi;
        t->scratch_top = r;
        t->scratch_owner = r->owner;
        update_watch(t);
        implicit = t->debug && t->outer == 0;
    }
    void *mem = pk_arena_alloc(t->scratch, size, 0);
    if (unlikely(implicit) && mem) warn_implicit("scratch memory", mem, NULL); /* names what it hands out */
    return mem;
}

/* ---- thread exit and stats ---- */

/* The key's destructor: drains everything, the implicit pool included, and
 * gives the pages and the scratch arena back. What runs during the drain may
 * autorelease again; the drain takes that too. If a later destructor uses
 * the stack again, thread_init sets the key once more and this runs again. */
static void thread_exit(void *arg) {
    arp_thread *t = arg;
    if (t->hot) drain(t, 1);
    if (t->scratch) {
        pk_arena_destroy(t->scratch);
        arena_count_library(-1);
    }
    if (t->spare) page_free(t, t->spare);
    if (t->hot) page_free(t, t->hot);
    size_t high = pk__arp.high_water;
    uint64_t allocs = t->page_allocs;
    memset(t, 0, sizeof *t); /* registered = false: a later use re-arms the key */
    memset(&pk__arp, 0, sizeof pk__arp);
    pk__arp.high_water = high;
    t->page_allocs = allocs;
}

void pk_autorelease_stats_get(pk_autorelease_stats *out) {
    arp_thread *t = &arp_tls;
    memset(out, 0, sizeof *out);
    size_t below_outer = 0, depth = 0;
    arp_page *p = t->hot;
    uintptr_t *end = pk__arp.top;
    while (p) {
        uintptr_t *w = end;
        while (w > p->slots) {
            uintptr_t v = w[-1];
            if ((v & TAG_MASK) == TAG_POOL) {
                depth++;
                below_outer = 0;
                w -= 1;
                continue;
            }
            below_outer++;
            w -= (v & TAG_MASK) == TAG_DEFER ? 3 : 1;
        }
        p = p->prev;
        end = p ? p->end : NULL;
    }
    out->pending = pk__arp.pending;
    out->implicit = below_outer;
    out->depth = depth;
    out->high_water = pk__arp.high_water;
    out->pages = t->pages;
    out->page_allocs = t->page_allocs;
}

void arp_fork_lock(void) { pk_lock(&page_lock); }
void arp_fork_unlock(void) { pk_unlock(&page_lock); }
