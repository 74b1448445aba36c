/* The hardened front end (POOLKIT_HARDENED=1): the checks that need what
 * only the front end knows, the size each block was asked for. The class
 * pools' own hardening (harden.h) guards their lists; this file guards the
 * blocks, each check named:
 *
 *   CHECK WORD   a block's slot ends in a word that holds the size asked
 *                for, plus one (high half), and a hash of it, the block's
 *                address and a secret (low half); zero while the slot is
 *                free. At free, a zero word is a double free (t, u, t
 *                included) and any other that does not check an overflow
 *   FORM         the word's top two bits, in the hash too, say whether
 *                malloc, new or new[] made the block (alloc_forms.c sets
 *                and checks them); free of any but malloc's is reported
 *   CHECK BYTES  the slack between the size asked for and the check word
 *                holds bytes drawn from the secret (no text, no zero),
 *                checked at free: an overflow of one byte is reported at
 *                the block's free, naming the bytes changed (written and
 *                compared by alloc_checks.c, which guarded blocks share)
 *   UNDERFLOW    at free, the check word of the slot before (the last
 *                bytes an underflow writes) must be zero or check. The
 *                class pools' slabs start with a slot's length no block
 *                uses, kept zero (slab_geometry_for's lead), so that every
 *                block has a slot before it in its slab; holding each
 *                slab's first slot instead kept every slab from ever
 *                emptying (a thread that lived on beside threads that
 *                came and went held more slabs every generation)
 *   ZERO ON FREE a freed block is zeroed; it must still be zero, whole,
 *                when it is handed out again or goes back to its pool
 *                after the quarantine let it go, and in its first line
 *                (but for the two words the pool's lists lend, its link
 *                and a chain's mark) when its pool gives it back: a write
 *                after free is reported there. Fresh slots are zeroed
 *                when carved where their place held another slab's bytes
 *                (slab.c, carve_how's scrub)
 *   QUARANTINE   a freed block waits for HARD_QUARANTINE frees of its
 *                class by the thread that freed it before it may be
 *                handed out again (policy.h): free(p) then malloc(n) does
 *                not give p back, and realloc moves any block it shrinks
 *                or grows past its slot (or its mapping: alloc_large.c),
 *                so a pointer kept from before meets a freed block; one
 *                grown within them stays, the caller's pointer the same;
 *                the exiting thread's blocks still waiting at exit are
 *                checked then, another thread's at its exit
 *   SIZE 0       a block of size 0 points into a no-access reservation;
 *                the fault handler names it
 *   GUARDED      blocks of HARD_GUARDED_MIN bytes and up: alloc_large.c
 *                (no-access pages on both sides, freed ones kept no-access)
 *
 * The hardened class pools are served by the library alone (pool.c,
 * choose_path: no inline path), so every call of the front end comes
 * here; a thread's steady alloc and free of a class stay here, between its
 * quarantine and its ready blocks, with no lock and no call into the pool.
 * Callers (alloc.c) have raised the thread's depth. Default mode
 * never comes here: its fast paths are as they were.
 *
 * Invariant: a slot of a hardened class pool below its slab's bump is
 * either a block handed out (its check word checks) or free (zero, but its
 * link and a chain's mark while on its pool's lists; zero whole in a
 * thread's quarantine or ready stack), so any other content is the
 * program's write.
 */
#include "front/alloc_internal.h"
#include "front/alloc_checks.h"
#include "base/bytes.h"
#include "base/policy.h"
#include "pool/pools.h"
#include "base/sites.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(HARD_MIN_SLOT >= 3 * sizeof(uintptr_t), "the check word lies past the two words a free slot lends");
_Static_assert(HARD_TAIL == sizeof(uint64_t), "the check word is one word");
_Static_assert(HARD_GUARDED_MIN + HARD_TAIL <= PK_ALLOC_CLASS_MAX, "a block below the guarded ones has a class");

/* ---- zero checks ---- */

#define LINE 64 /* the bytes handed out again checked zero (a line) */

/* ---- the check word ---- */

static inline uint64_t *check_word_of(const pk_pool *p, const void *obj) {
    return (uint64_t *)((char *)obj + p->size - HARD_TAIL);
}

/* The size is kept plus one, so that no block's word is zero, a size-0
 * block's (an aligned one) included; the form (alloc.h's PK__FORM_*) in
 * the top two bits, which no size reaches (FORM_SHIFT). */
#define FORM_SHIFT 62
_Static_assert(HARD_GUARDED_MIN < ((uint64_t)1 << (FORM_SHIFT - 32)) - 1, "a size plus one leaves the form's bits");
static inline uint64_t check_word_as(const pk_pool *p, const void *obj, size_t n, unsigned form) {
    uint64_t h = ((uint64_t)(uintptr_t)obj ^ p->hard.secret ^ n ^ (uint64_t)form << FORM_SHIFT) * 0x9E3779B97F4A7C15ull;
    return (uint64_t)form << FORM_SHIFT | (uint64_t)(n + 1) << 32 | h >> 32;
}
static inline uint64_t check_word(const pk_pool *p, const void *obj, size_t n) {
    return check_word_as(p, obj, n, PK__FORM_MALLOC);
}
static inline unsigned word_form(uint64_t w) { return (unsigned)(w >> FORM_SHIFT); }

/* Whether w checks as the word of a block at obj, and its size in *n. */
static bool word_checks(const pk_pool *p, const void *obj, uint64_t w, size_t *n) {
    size_t k = (size_t)(w >> 32 & (((uint64_t)1 << (FORM_SHIFT - 32)) - 1));
    *n = k - 1;
    return k && k - 1 <= p->size - HARD_TAIL && word_form(w) <= PK__FORM_NEW_ARRAY &&
           w == check_word_as(p, obj, k - 1, word_form(w));
}

/* The word is read and written with relaxed atomics: the check of a
 * block's neighbour reads a slot that another thread may be handing out. */
static inline uint64_t word_load(const pk_pool *p, const void *obj) {
    return __atomic_load_n(check_word_of(p, obj), __ATOMIC_RELAXED);
}
static inline void word_store(const pk_pool *p, void *obj, uint64_t w) {
    __atomic_store_n(check_word_of(p, obj), w, __ATOMIC_RELAXED);
}

size_t hard_class_request(const pk_pool *p, const void *obj) {
    size_t n;
    return word_checks(p, obj, word_load(p, obj), &n) ? n : p->size - HARD_TAIL; /* reported at the free */
}

bool hard_class_form(const pk_pool *p, const void *obj, unsigned *form, size_t *n) {
    if (slab_slot_index(slab_of((uintptr_t)obj), obj) < 0) return false;
    uint64_t w = word_load(p, obj);
    *form = word_form(w);
    return word_checks(p, obj, w, n);
}

void hard_class_set_form(const pk_pool *p, void *obj, size_t n, unsigned form) {
    word_store(p, obj, check_word_as(p, obj, n, form));
}

/* ---- reports ---- */

PK_COLD __attribute__((noreturn)) static void report_overflow(const pk_pool *p, const void *obj, size_t n,
                                                               size_t first, size_t last, const char *how) {
    error_report(PK_FATAL, "buffer overflow", p->name, obj,
                 "block %p of %zu bytes (pool '%s') was written past its end: bytes %zu to %zu past it "
                 "changed (%s), found at its free",
                 obj, n, pool_name(p), first - n, last - n, how);
    __builtin_unreachable();
}

PK_COLD __attribute__((noreturn)) static void report_broken_word(const pk_pool *p, const void *obj, uint64_t w) {
    error_report(PK_FATAL, "buffer overflow", p->name, obj,
                 "block %p (pool '%s') was written past its end: its check word, the last %zu bytes of its "
                 "%zu-byte slot, reads %#llx, found at its free",
                 obj, pool_name(p), HARD_TAIL, p->size, (unsigned long long)w);
    __builtin_unreachable();
}

PK_COLD __attribute__((noreturn)) static void report_underflow(const pk_pool *p, const void *obj,
                                                                const void *prev, uint64_t w) {
    size_t from = HARD_TAIL;
    for (size_t i = 0; i < HARD_TAIL; i++) /* the word's lowest byte that is not a free slot's */
        if ((w >> (8 * i)) & 0xFF) {
            from = HARD_TAIL - i;
            break;
        }
    error_report(PK_FATAL, "buffer underflow", p->name, obj,
                 "block %p (pool '%s') was written before its start: up to %zu bytes before it changed "
                 "(the check word of the block before, %p, reads %#llx), found at its free",
                 obj, pool_name(p), from, prev, (unsigned long long)w);
    __builtin_unreachable();
}

PK_COLD __attribute__((noreturn)) static void report_not_in_use(const pk_pool *p, const void *obj) {
    error_report(PK_FATAL, "double free", p->name, obj,
                 "%s(%p): the block (pool '%s') is not in use: freed already (its check word is clear), "
                 "or never handed out",
                 alloc_free_call(), obj, pool_name(p));
    __builtin_unreachable();
}

PK_COLD __attribute__((noreturn)) static void report_written_free(const pk_pool *p, const void *obj, size_t at,
                                                                   const char *when) {
    error_report(PK_FATAL, "write after free", p->name, obj,
                 "block %p (pool '%s') was written after its free: byte %zu of it changed, found %s", obj,
                 pool_name(p), at, when);
    __builtin_unreachable();
}

/* ---- the quarantine and the thread's ready blocks ---- */

/* One first-in first-out queue per class and thread: a block leaves after
 * HARD_QUARANTINE frees of its class by the thread that freed it, then
 * waits on the thread's ready stack of its class (HARD_READY, policy.h),
 * which the thread's next allocations of the class take first, so that a
 * steady alloc and free never reach the pool. A block the quarantine let
 * go is checked whole once, on its way out of the stack: handed out again
 * or sent back to its pool (so a write after free, in the quarantine or
 * on the stack, is found before anyone else holds the block), one read
 * of it where a check as it left the quarantine too would read it twice.
 * The stack's bottom entries may be blocks its pool gave (a refill:
 * `from_pool`), whose rest was checked when they went back to the pool,
 * or is fresh: only their first line is checked when they are handed
 * out. Each thread's queues and stacks are its own (no lock, no atomic),
 * in pages mapped at its first free, found through one initial-exec word;
 * at the thread's exit (a key's destructor) its blocks are checked and go
 * back to their pools, and the pages to the system. */
typedef struct hard_ring {
    void *held[PK__ALLOC_CLASSES][HARD_QUARANTINE];
    void *ready[PK__ALLOC_CLASSES][HARD_READY];
    unsigned char next[PK__ALLOC_CLASSES];      /* held's oldest */
    unsigned char nready[PK__ALLOC_CLASSES];    /* ready's count */
    unsigned char from_pool[PK__ALLOC_CLASSES]; /* ready's bottom entries a refill gave, at most nready */
} hard_ring;
_Static_assert(HARD_QUARANTINE <= 256 && HARD_READY <= 255, "a queue's next slot and a stack's count fit a byte");

static __thread hard_ring *my_ring __attribute__((tls_model("initial-exec")));
/* Set once the thread's queues went back at its exit: a free after that
 * makes none (ring_make), since the key's destructor may not run again
 * (the C library frees other threads' blocks of its own after the
 * destructors' last round, and each such free mapped queues and held
 * blocks that nothing gave back: memory lost per exiting thread). */
static __thread bool ring_gone __attribute__((tls_model("initial-exec")));
static pthread_key_t ring_key; /* its destructor empties an exiting thread's queues */
static unsigned char ready_most[PK__ALLOC_CLASSES]; /* a class's stack bound (hard_setup) */

static PK_NOINLINE hard_ring *ring_make(void) {
    hard_ring *r = os_map(align_up(sizeof(hard_ring), os_page_size()), 0);
    if (!r) return NULL;
    my_ring = r;
    pthread_setspecific(ring_key, r); /* may allocate: the caller has raised depth */
    return r;
}

/* Block obj of p, zero whole since its free unless written after it. */
static inline void check_zero(const pk_pool *p, const char *obj, const char *when) {
    size_t at = bytes_first_not(obj, p->size, 0);
    if (at != p->size) report_written_free(p, obj, at, when);
}

/* A block out of the quarantine, unchecked, to the thread's ready stack of
 * class ci, or back to its pool when that is full, checked. */
static void release(hard_ring *r, size_t ci, pk_pool *p, void *obj, void *caller) {
    if (unlikely(r->nready[ci] >= ready_most[ci])) {
        if (ready_most[ci] < 2) {
            check_zero(p, obj, "when it left the quarantine");
            pool_free_at(p, obj, caller);
            return;
        }
        /* the newer half back to the pool in one call, which pays its
         * poll and its lookups once (a program that frees what it built);
         * those the quarantine let go checked first */
        unsigned half = ready_most[ci] / 2u;
        for (unsigned i = half > r->from_pool[ci] ? half : r->from_pool[ci]; i < r->nready[ci]; i++)
            check_zero(p, r->ready[ci][i], "when it went back to its pool");
        pool_free_bulk_checked(p, &r->ready[ci][half], r->nready[ci] - half);
        r->nready[ci] = (unsigned char)half;
        if (r->from_pool[ci] > half) r->from_pool[ci] = (unsigned char)half;
    }
    r->ready[ci][r->nready[ci]++] = obj;
}

/* ci: p's class. Without queues for the thread (out of memory, or past
 * its exit) the block goes back at once, checked. */
static inline void quarantine(pk_pool *p, size_t ci, void *obj, void *caller) {
    hard_ring *r = my_ring;
    if (unlikely(!r) && (ring_gone || !(r = ring_make()))) {
        size_t at = bytes_first_not(obj, p->size, 0);
        if (at != p->size) report_written_free(p, obj, at, "when it left the quarantine");
        pool_free_at(p, obj, caller);
        return;
    }
    unsigned i = r->next[ci];
    void *out = r->held[ci][i];
    r->held[ci][i] = obj;
    r->next[ci] = (unsigned char)((i + 1) % HARD_QUARANTINE);
    if (out) release(r, ci, p, out, caller);
}

/* Block obj of r, checked (still zero), and back to its pool with
 * give_back, else left where it is. */
static void ring_check(void **slot, bool give_back, const char *when) {
    char *obj = *slot;
    if (!obj) return;
    pk_pool *p = alloc_pool_of(obj);
    size_t at = bytes_first_not(obj, p->size, 0);
    if (at != p->size) report_written_free(p, obj, at, when);
    if (!give_back) return;
    *slot = NULL;
    pool_free_at(p, obj, NULL);
}

/* Every block r holds, checked, and back to its pool with give_back (a
 * write after free that no later allocation met is reported here). */
static void ring_empty(hard_ring *r, bool give_back, const char *when) {
    for (size_t ci = 0; ci < PK__ALLOC_CLASSES; ci++) {
        for (size_t i = 0; i < HARD_QUARANTINE; i++) ring_check(&r->held[ci][i], give_back, when);
        for (size_t i = 0; i < r->nready[ci]; i++) ring_check(&r->ready[ci][i], give_back, when);
        if (give_back) r->nready[ci] = r->from_pool[ci] = 0;
    }
}

static void ring_give_back(void *arg) {
    hard_ring *r = arg;
    ring_empty(r, true, "at its thread's exit, while it waited in the quarantine");
    os_unmap(r, align_up(sizeof *r, os_page_size()));
}

/* alloc.c's guard against re-entry (see its "Re-entry"), handed to
 * hard_setup: the destructor below starts work outside any call of the
 * front end's, and the pools it frees into may allocate. Set before the key
 * whose destructor reads it. */
static void (*run_guarded)(void (*fn)(void *), void *arg);

/* Later frees of the exiting thread's (other keys' destructors, the C
 * library's own) go back at once (ring_gone). */
static void ring_at_thread_exit(void *arg) {
    if (my_ring == arg) my_ring = NULL;
    ring_gone = true;
    run_guarded(ring_give_back, arg);
}

/* At exit the exiting thread's blocks still held are checked (other
 * threads' queues are theirs, checked at their exit). */
static bool held_check_due; /* set by hard_setup */

/* A destructor, not atexit: hard_setup runs inside the first hardened
 * allocation, which may be a malloc the C library makes under the lock
 * atexit takes (stats.c says when). */
__attribute__((destructor)) static void check_held_at_exit(void) {
    if (__atomic_load_n(&held_check_due, __ATOMIC_ACQUIRE) && my_ring)
        ring_empty(my_ring, false, "at exit, while it waited in the quarantine");
}

/* ---- class blocks ---- */

/* obj, from p's lists or a refill: the whole block was zero when it went
 * back to the pool (checked then) or is fresh; since then its first `from`
 * bytes may hold the words the pool's lists lend (its link, a chain's
 * mark). The line after them is checked (the commonest write after free
 * lands near a block's start), not the whole block a second time; then the
 * whole block is zero. */
static inline void check_zero_at_handout(const pk_pool *p, char *obj, size_t from) {
    size_t end = p->size < LINE ? p->size : LINE;
    size_t at = bytes_first_not_in(obj, from, end, 0);
    if (at != end) report_written_free(p, obj, at, "when it was handed out again");
    if (from) memset(obj, 0, from);
}

/* Half a ready stack's worth of blocks from the pool in one call, which
 * pays its poll and its lookups once (a program that builds a structure);
 * the words the pool's lists lent are cleared, the rest is checked when
 * each is handed out. Returns one of them, or NULL. */
static PK_NOINLINE char *refill(hard_ring *r, pk_pool *p, size_t ci) {
    void *got[HARD_READY / 2];
    int saved = errno; /* fewer than asked for is no failure while one came */
    size_t k = pk_pool_alloc_bulk(p, got, ready_most[ci] / 2u);
    if (k) errno = saved;
    for (size_t i = 0; i < k; i++) {
        char *obj = got[i];
        memset(obj, 0, 2 * sizeof(uintptr_t));
        r->ready[ci][r->nready[ci]++] = obj;
    }
    if (!r->nready[ci]) return NULL;
    r->from_pool[ci] = --r->nready[ci]; /* the stack was empty: all of it */
    return r->ready[ci][r->nready[ci]];
}

void *hard_class_alloc(pk_pool *p, size_t ci, size_t n, void *caller) {
    hard_ring *r = my_ring;
    char *obj;
    if (likely(r && r->nready[ci])) {
        unsigned i = --r->nready[ci];
        obj = r->ready[ci][i];
        if (likely(i >= r->from_pool[ci])) {
            check_zero(p, obj, "when it was handed out again"); /* the quarantine let it go unchecked */
        } else {
            r->from_pool[ci] = (unsigned char)i;
            check_zero_at_handout(p, obj, 0);
        }
    } else {
        obj = r && ready_most[ci] >= 2 ? refill(r, p, ci) : NULL;
        if (obj) check_zero_at_handout(p, obj, 0);
        else if ((obj = pool_alloc_at(p, caller))) check_zero_at_handout(p, obj, 2 * sizeof(uintptr_t));
        else return NULL;
    }
    hard_fill(obj, n, p->size - HARD_TAIL);
    word_store(p, obj, check_word(p, obj, n));
    return obj;
}

/* The checks of block obj of slab s at its free or its resize: its check
 * word (clear: freed already; broken: overwritten), its form, its check
 * bytes up to byte upto (the slot's end at most), the slot before's word
 * (an underflow). Returns its size. */
static inline __attribute__((always_inline)) size_t checked_block(pk_pool *p, const slab *s, char *obj, size_t upto) {
    uint64_t w = word_load(p, obj);
    if (!w) report_not_in_use(p, obj);
    size_t n, first, last, end = p->size - HARD_TAIL;
    if (!word_checks(p, obj, w, &n)) report_broken_word(p, obj, w);
    if (word_form(w) != PK__FORM_MALLOC) alloc_report_form(p, obj, n, word_form(w), PK__FORM_MALLOC);
    if (upto < end) end = upto;
    if (hard_changed(obj, n, end, &first, &last)) report_overflow(p, obj, n, first, last, "check bytes");
    if (s->capacity > 1) { /* the lead before the first */
        const char *prev = obj - s->slot;
        uint64_t pw = word_load(p, prev);
        size_t pn;
        if (pw && !word_checks(p, prev, pw, &pn)) report_underflow(p, obj, prev, pw);
    }
    return n;
}

/* In place, so that a buffer grown a few bytes at a time is not copied at
 * every call: the pointer stays the caller's, so none goes stale. The
 * check bytes between the old size and the new are checked now (they
 * become the block's, which realloc leaves unspecified); those past the
 * new size hold their pattern still (it is by position) and wait for the
 * free, so each check byte is read once however many times the block
 * grows. Only the word changes. */
bool hard_class_grow(pk_pool *p, void *ptr, size_t size) {
    slab *s = slab_of((uintptr_t)ptr);
    /* size's class p's (it fits the slot), so that pk_free_sized's size
     * stays true: an aligned block's class may be larger than its size's */
    if (size >= HARD_GUARDED_MIN || hard_class_of(size) != alloc_class_of(p->size) || slab_slot_index(s, ptr) < 0)
        return false;
    if (size < checked_block(p, s, ptr, size)) return false; /* a shrink moves (QUARANTINE) */
    word_store(p, ptr, check_word(p, ptr, size));
    return true;
}

void hard_class_free(pk_pool *p, void *ptr, void *caller) {
    hard_class_free_in(p, slab_of((uintptr_t)ptr), ptr, caller);
}

void hard_class_free_in(pk_pool *p, slab *s, void *ptr, void *caller) {
    if (unlikely(!slab_starts_slot(s, ptr))) { /* s is ptr's region's record */
        /* not a slot's start: the pool's own checks say what it is */
        pool_free_at(p, ptr, caller);
        return;
    }
    char *obj = ptr;
    (void)checked_block(p, s, obj, SIZE_MAX);
    memset(obj, 0, p->size - HARD_TAIL);
    word_store(p, obj, 0);
    quarantine(p, alloc_class_of(p->size), obj, caller);
}

/* ---- blocks of size 0 ---- */

/* A block of size 0 is an address of the no-access zone, one of
 * ZERO_SLOTS; a bit a slot says it is handed out and not freed, so that
 * the addresses, taken in turn, wrap past the live ones (each block's
 * address unique while it lives, as malloc(0)'s and new's must be), and a
 * second free of one is reported. The bits are the zone's only memory
 * touched: ZERO_SLOTS / 8 bytes at the most. */
#define ZERO_SLOTS (HARD_ZERO_BYTES / HARD_ZERO_STEP)
_Static_assert(ZERO_SLOTS % 64 == 0, "the live bits fill whole words");

static char *zero_zone;
static uint64_t *zero_live;
static size_t zero_next;

static bool zero_setup(void) {
    uint64_t *live = __atomic_load_n(&zero_live, __ATOMIC_ACQUIRE);
    if (!live) {
        uint64_t *fresh = os_map(ZERO_SLOTS / 8, os_page_size());
        if (!fresh) return false;
        if (__atomic_compare_exchange_n(&zero_live, &live, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            live = fresh;
        else os_unmap(fresh, ZERO_SLOTS / 8);
    }
    char *z = NULL;
    char *fresh = os_reserve(HARD_ZERO_BYTES, os_page_size());
    if (!fresh) return false;
    /* published after the bits: hard_zero_owns's callers read them */
    if (!__atomic_compare_exchange_n(&zero_zone, &z, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        os_unmap(fresh, HARD_ZERO_BYTES);
    return true;
}

void *hard_zero_block(void) {
    char *z = __atomic_load_n(&zero_zone, __ATOMIC_ACQUIRE);
    if (unlikely(!z)) {
        if (!zero_setup()) return NULL;
        z = __atomic_load_n(&zero_zone, __ATOMIC_ACQUIRE);
    }
    /* read as zero_setup publishes it: a thread that found the zone made
     * may meet another's compare-and-swap of the bits' pointer, which
     * failed (they were set) */
    uint64_t *live = __atomic_load_n(&zero_live, __ATOMIC_ACQUIRE);
    for (size_t tries = 0; tries < ZERO_SLOTS; tries++) {
        size_t i = __atomic_fetch_add(&zero_next, 1, __ATOMIC_RELAXED) % ZERO_SLOTS;
        uint64_t bit = (uint64_t)1 << (i % 64);
        if (!(__atomic_fetch_or(&live[i / 64], bit, __ATOMIC_RELAXED) & bit)) return z + i * HARD_ZERO_STEP;
    }
    return NULL; /* every address of the zone lives */
}

bool hard_zero_owns(const void *ptr) {
    const char *z = __atomic_load_n(&zero_zone, __ATOMIC_ACQUIRE);
    return z && (const char *)ptr >= z && (const char *)ptr < z + HARD_ZERO_BYTES;
}

bool hard_zero_free(const void *ptr, const char *call) {
    if (!hard_zero_owns(ptr)) return false;
    const char *z = __atomic_load_n(&zero_zone, __ATOMIC_ACQUIRE);
    uint64_t *live = __atomic_load_n(&zero_live, __ATOMIC_ACQUIRE);
    size_t off = (size_t)((const char *)ptr - z), i = off / HARD_ZERO_STEP;
    uint64_t bit = (uint64_t)1 << (i % 64);
    if (off % HARD_ZERO_STEP)
        error_report(PK_FATAL, "foreign pointer", NULL, ptr,
                     "%s(%p): a pointer into the reservation of blocks of size 0, not one of them", call, ptr);
    else if (!(__atomic_fetch_and(&live[i / 64], ~bit, __ATOMIC_RELAXED) & bit))
        error_report(PK_FATAL, "double free", NULL, ptr, "%s(%p): a block of size 0 freed already", call, ptr);
    return true;
}

/* ---- setup and the fault handler's question ---- */

static bool explain_fault(int sig, const void *addr) {
    if (hard_zero_owns(addr)) {
        const char *z = __atomic_load_n(&zero_zone, __ATOMIC_ACQUIRE);
        const char *block = z + ((const char *)addr - z) / HARD_ZERO_STEP * HARD_ZERO_STEP;
        error_report(PK_FATAL, "size-0 block used", NULL, addr,
                     "%s at %p: a read or write through a block of size 0 (%p), which has no bytes",
                     sig == SIGBUS ? "SIGBUS" : "SIGSEGV", addr, (const void *)block);
    }
    return large_explain_fault(sig, addr);
}

void hard_setup(void (*guarded)(void (*fn)(void *), void *arg)) {
    run_guarded = guarded;
    hard_pattern_setup();
    crash_explain_with(explain_fault);
    pool_sweep_with(large_warm_tick);
    for (size_t ci = 0; ci < PK__ALLOC_CLASSES; ci++) {
        size_t most = HARD_READY_BYTES / alloc_class_size(ci);
        ready_most[ci] = (unsigned char)(most < HARD_READY ? most : HARD_READY);
    }
    pthread_key_create(&ring_key, ring_at_thread_exit);
    __atomic_store_n(&held_check_due, true, __ATOMIC_RELEASE);
}
