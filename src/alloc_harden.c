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
 *                the block's free, naming the bytes changed
 *   UNDERFLOW    at free, the check word of the slot before (the last
 *                bytes an underflow writes) must be zero or check. A
 *                slab's first slot is kept back, never handed out, so that
 *                every block has a slot before it in its slab
 *   ZERO ON FREE a freed block is zeroed; it must still be zero when it
 *                leaves the quarantine and, in its first line but for the
 *                two words the pool's lists lend (its link, a chain's
 *                mark), when it is handed out again: a write after free is
 *                reported there. Fresh slots are zeroed when carved where
 *                their place held another slab's bytes (slab.c, carve_how's
 *                scrub)
 *   QUARANTINE   a freed block waits for HARD_QUARANTINE frees of its
 *                class before its pool may hand it out again (policy.h):
 *                free(p) then malloc(n) does not give p back, and realloc
 *                moves any block whose size changes; the blocks still
 *                waiting at exit are checked then
 *   SIZE 0       a block of size 0 points into a no-access reservation;
 *                the fault handler names it
 *   GUARDED      blocks of HARD_GUARDED_MIN bytes and up: alloc_large.c
 *                (no-access pages on both sides, freed ones kept no-access)
 *
 * The hardened class pools are served by the library alone (pool.c,
 * choose_path: no inline path), so every call of the front end comes
 * here. Callers (alloc.c) have raised the thread's depth. Default mode
 * never comes here: its fast paths are as they were.
 *
 * Invariant: a slot of a hardened class pool below its slab's bump is
 * either a block handed out (its check word checks) or free (zero, but its
 * link and a chain's mark), so any other content is the program's write.
 */
#include "alloc_internal.h"
#include "policy.h"
#include "pools.h"
#include "sites.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(HARD_MIN_SLOT >= 3 * sizeof(uintptr_t), "the check word lies past the two words a free slot lends");
_Static_assert(HARD_TAIL == sizeof(uint64_t), "the check word is one word");
_Static_assert(HARD_GUARDED_MIN + HARD_TAIL <= PK_ALLOC_CLASS_MAX, "a block below the guarded ones has a class");

/* ---- the check bytes ---- */

static uint64_t pattern; /* set once (hard_setup) */
/* The pattern a line long, and a line of zeros, so that the checks below
 * compare a line at a time with the C library's memcmp and memcpy, which
 * are vectorised: a block's slack and a freed block may be KiBs. */
#define LINE 64
static uint64_t pattern_line[LINE / sizeof(uint64_t)];
static const char zero_line[LINE];

/* Eight bytes from a secret, each with its top bit set and none 0xFF:
 * no ASCII text, no zero, no all-ones, the common values of a stray write. */
static uint64_t pattern_from(uint64_t secret) {
    uint64_t w = 0;
    for (int i = 0; i < 8; i++) {
        uint64_t b = ((secret >> (8 * i)) & 0x7F) | 0x80;
        if (b == 0xFF) b = 0xFE;
        w |= b << (8 * i);
    }
    return w;
}

static inline unsigned char pattern_byte(size_t i) { return (unsigned char)(pattern >> (8 * (i & 7))); }

/* The pattern's bytes sit at offsets from the block's start, which is
 * aligned to a word at least; b[from, to) is filled or compared a line at
 * a time from the first word boundary. */
void hard_fill(char *b, size_t from, size_t to) {
    size_t i = from;
    for (; i < to && (i & 7); i++) b[i] = (char)pattern_byte(i);
    for (; i < to; i += LINE) memcpy(b + i, pattern_line, to - i < LINE ? to - i : LINE);
}

bool hard_changed(const char *b, size_t from, size_t to, size_t *first, size_t *last) {
    size_t i = from;
    for (; i < to && (i & 7); i++)
        if ((unsigned char)b[i] != pattern_byte(i)) goto found;
    for (; i < to; i += LINE)
        if (memcmp(b + i, pattern_line, to - i < LINE ? to - i : LINE) != 0) break;
    for (; i < to; i++)
        if ((unsigned char)b[i] != pattern_byte(i)) goto found;
    return false;
found:
    *first = i;
    *last = i;
    for (size_t j = to; j-- > i;)
        if ((unsigned char)b[j] != pattern_byte(j)) {
            *last = j;
            break;
        }
    return true;
}

/* The first byte of b[from, to) that is not zero, or to. */
static size_t first_nonzero(const char *b, size_t from, size_t to) {
    size_t i = from;
    for (; i < to; i += LINE)
        if (memcmp(b + i, zero_line, to - i < LINE ? to - i : LINE) != 0) break;
    for (; i < to; i++)
        if (b[i]) return i;
    return to;
}

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

size_t hard_class_of(size_t size) {
    size_t want = size + HARD_TAIL < HARD_MIN_SLOT ? HARD_MIN_SLOT : size + HARD_TAIL;
    return alloc_class_of(want);
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
                 "free(%p): the block (pool '%s') is not in use: freed already (its check word is clear), "
                 "or never handed out",
                 obj, pool_name(p));
    __builtin_unreachable();
}

PK_COLD __attribute__((noreturn)) static void report_written_free(const pk_pool *p, const void *obj, size_t at,
                                                                   const char *when) {
    error_report(PK_FATAL, "write after free", p->name, obj,
                 "block %p (pool '%s') was written after its free: byte %zu of it changed, found %s", obj,
                 pool_name(p), at, when);
    __builtin_unreachable();
}

/* ---- the quarantine ---- */

/* One first-in first-out queue per class: a block leaves after
 * HARD_QUARANTINE frees of its class, so a write after free meets the
 * check on its way out within that many frees of the same size. */
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static void *ring[PK__ALLOC_CLASSES][HARD_QUARANTINE]; /* under ring_lock */
static unsigned ring_next[PK__ALLOC_CLASSES];

/* A block out of the quarantine back to its pool, still zero. */
static void release(pk_pool *p, void *obj, void *caller) {
    size_t at = first_nonzero(obj, 0, p->size);
    if (at != p->size) report_written_free(p, obj, at, "when it left the quarantine");
    pool_free_at(p, obj, caller);
}

static void quarantine(pk_pool *p, void *obj, void *caller) {
    size_t ci = alloc_class_of(p->size);
    pthread_mutex_lock(&ring_lock);
    unsigned i = ring_next[ci];
    void *out = ring[ci][i];
    ring[ci][i] = obj;
    ring_next[ci] = (i + 1) % HARD_QUARANTINE;
    pthread_mutex_unlock(&ring_lock);
    if (out) release(p, out, caller);
}

/* At exit every block still held is checked: a write after free that no
 * later allocation met is reported before the program ends. */
static void check_held_at_exit(void) {
    pthread_mutex_lock(&ring_lock);
    for (size_t ci = 0; ci < PK__ALLOC_CLASSES; ci++)
        for (size_t i = 0; i < HARD_QUARANTINE; i++) {
            char *obj = ring[ci][i];
            size_t size = alloc_class_size(ci);
            if (obj && first_nonzero(obj, 0, size) != size) {
                pk_pool *p = alloc_pool_of(obj);
                pthread_mutex_unlock(&ring_lock);
                report_written_free(p, obj, first_nonzero(obj, 0, size), "at exit, while it waited in the quarantine");
            }
        }
    pthread_mutex_unlock(&ring_lock);
}

void hard_fork_lock(void) { pthread_mutex_lock(&ring_lock); }
void hard_fork_unlock(void) { pthread_mutex_unlock(&ring_lock); }

/* ---- class blocks ---- */

void *hard_class_alloc(pk_pool *p, size_t n, void *caller) {
    for (;;) {
        char *obj = pool_alloc_at(p, caller);
        if (!obj) return NULL;
        slab *s = slab_of((uintptr_t)obj);
        /* a slab's first slot stays back: the slot before every block */
        if (slab_slot_index(s, obj) == 0 && s->capacity > 1) continue;
        /* the whole block was zero when it left the quarantine; since then
         * it lay on its pool's list, which writes its first words: the
         * line after them is checked (the commonest write after free lands
         * near a block's start), not the whole block a second time */
        size_t end = p->size < LINE ? p->size : LINE;
        size_t at = first_nonzero(obj, 2 * sizeof(uintptr_t), end);
        if (at != end) report_written_free(p, obj, at, "when it was handed out again");
        memset(obj, 0, 2 * sizeof(uintptr_t)); /* the list's words: the whole block is zero */
        hard_fill(obj, n, p->size - HARD_TAIL);
        word_store(p, obj, check_word(p, obj, n));
        return obj;
    }
}

void hard_class_free(pk_pool *p, void *ptr, void *caller) {
    slab *s = slab_of((uintptr_t)ptr);
    long idx = slab_slot_index(s, ptr);
    if (idx < 0) { /* not a slot's start: the pool's own checks say what it is */
        pool_free_at(p, ptr, caller);
        return;
    }
    char *obj = ptr;
    uint64_t w = word_load(p, obj);
    if (!w) report_not_in_use(p, obj);
    size_t n, first, last;
    if (!word_checks(p, obj, w, &n)) report_broken_word(p, obj, w);
    if (word_form(w) != PK__FORM_MALLOC) alloc_report_form(p, obj, n, word_form(w), PK__FORM_MALLOC);
    if (hard_changed(obj, n, p->size - HARD_TAIL, &first, &last)) report_overflow(p, obj, n, first, last, "check bytes");
    if (idx > 0) {
        const char *prev = obj - s->slot;
        uint64_t pw = word_load(p, prev);
        size_t pn;
        if (pw && !word_checks(p, prev, pw, &pn)) report_underflow(p, obj, prev, pw);
    }
    memset(obj, 0, p->size - HARD_TAIL);
    word_store(p, obj, 0);
    quarantine(p, obj, caller);
}

/* ---- blocks of size 0 ---- */

static char *zero_zone;
static size_t zero_next;

void *hard_zero_block(void) {
    char *z = __atomic_load_n(&zero_zone, __ATOMIC_ACQUIRE);
    if (!z) {
        char *fresh = os_reserve(HARD_ZERO_BYTES, os_page_size());
        if (!fresh) return NULL;
        if (__atomic_compare_exchange_n(&zero_zone, &z, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) z = fresh;
        else os_unmap(fresh, HARD_ZERO_BYTES);
    }
    size_t at = __atomic_fetch_add(&zero_next, HARD_ZERO_STEP, __ATOMIC_RELAXED) % HARD_ZERO_BYTES;
    return z + at;
}

bool hard_zero_owns(const void *ptr) {
    const char *z = __atomic_load_n(&zero_zone, __ATOMIC_ACQUIRE);
    return z && (const char *)ptr >= z && (const char *)ptr < z + HARD_ZERO_BYTES;
}

/* ---- setup and the fault handler's question ---- */

static bool explain_fault(int sig, const void *addr) {
    if (hard_zero_owns(addr)) {
        const char *z = zero_zone;
        const char *block = z + ((const char *)addr - z) / HARD_ZERO_STEP * HARD_ZERO_STEP;
        error_report(PK_FATAL, "size-0 block used", NULL, addr,
                     "%s at %p: a read or write through a block of size 0 (%p), which has no bytes",
                     sig == SIGBUS ? "SIGBUS" : "SIGSEGV", addr, (const void *)block);
    }
    return large_explain_fault(sig, addr);
}

void hard_setup(void) {
    uint64_t seed = (uint64_t)(uintptr_t)&ring ^ (uint64_t)(uintptr_t)__builtin_frame_address(0) ^
                    os_now_ms() * 0x9E3779B97F4A7C15ull;
    seed = (seed ^ (seed >> 31)) * 0xBF58476D1CE4E5B9ull;
    pattern = pattern_from(seed ^ (seed >> 29));
    for (size_t i = 0; i < LINE / sizeof(uint64_t); i++) pattern_line[i] = pattern;
    crash_explain_with(explain_fault);
    atexit(check_held_at_exit);
}
