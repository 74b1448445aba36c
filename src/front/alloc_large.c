/* Blocks over the last size class (alloc_internal.h): each is a mapping of
 * its own, page-rounded, recorded in a table so that a free or a resize
 * knows its length, and any other pointer is told apart from it without
 * reading memory that may not be mapped.
 *
 * The table is open addressing over the blocks' addresses, under one lock:
 * a block costs a system call or two (the mapping, its first touch of each
 * page), beside which the lock is nothing. A resize within a block's
 * mapping costs no system call, and threads that each grow buffers of
 * their own a few bytes at a time waited on each other for it: such a
 * resize reads the table without the lock (large_serves, a sequence
 * count). The lock is a leaf: nothing is called while it is held but the
 * OS layer's os_map for a larger table and os_zero_pages for the one it
 * replaces, so any thread, a fork's prepare handler included, may take it
 * last.
 *
 * A freed block's mapping waits for the purge delay among the kept fits
 * (retain.c, policy.h LARGE_KEEP_COUNT), and the next block of any length
 * takes it: cut to its length, or grown by mremap, so that blocks of
 * lengths that never repeat still reuse pages already faulted in. What
 * waits is bounded by the most bytes and blocks live at once lately
 * (keep_bound). A resize past the mapping takes room to grow on
 * (policy.h GROW_ROOM_SHIFT): from the kept pages after it, else by
 * mremap, so a buffer that grows by doubling is never copied, or, where
 * it has to move and is short enough (GROW_COPY_MAX), copied into a kept
 * mapping that holds it, whose pages are faulted in already. A resize
 * within the mapping that leaves little of it unused stays; a shrink past
 * that hands its tail to the fits without a system call. Zeroed blocks
 * (pk_calloc) take kept mappings too: cleared, up to LARGE_ZERO_REUSE_MAX,
 * or past it with their pages given back to come back zero; a block
 * aligned past a page keeps the bytes to its next aligned address and
 * takes a kept mapping of its shape, else a fresh aligned one
 * (fit_aligned).
 *
 * The hardened front end's guarded blocks (large_alloc_guarded) are
 * mappings of their own too, with a no-access page on each side and check
 * bytes in the last page's rest (alloc_checks.c, shared with the class
 * blocks); freed, they stay in the table, no-access, until
 * HARD_FREED_BLOCKS later frees, so a fault in one names it
 * (large_explain_fault) and no block takes its addresses at once; then
 * the mapping waits among the recycled (HARD_RECYCLED) for the next
 * guarded block it holds, placed against its last guard page. A freed
 * block's pages stay resident (warm) within a bound (HARD_WARM_BYTES),
 * else go back at its free; the next block a warm mapping
 * holds is cleared over them (no page fault), and warm pages go back
 * whole once no guarded block was freed for the purge delay (large_warm_tick,
 * on the pools' sweeps). They never
 * go to the fits. realloc grows one in place within its mapping
 * (large_grow_guarded); past it, the block moves to a mapping with room
 * for half as much again (alloc.c), so a buffer grown a few bytes at a
 * time is copied a bounded number of times per doubling, not at every
 * call; its bytes past the size asked for are check bytes then, found at
 * its free, where a block of its exact size faults at the access.
 */
#include "front/alloc_internal.h"
#include "front/alloc_checks.h"
#include "base/policy.h"
#include "base/sites.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

typedef struct block {
    uintptr_t ptr;  /* what the caller holds; 0: empty, TOMB: deleted */
    char *base;     /* the mapping */
    size_t len;     /* its length */
    size_t align;   /* its alignment: past a page, a resize copies */
    large_set *set; /* the set it belongs to, or NULL */
    size_t at;      /* its index in set->ptrs */
    /* hardened blocks (large_alloc_guarded) only: */
    size_t size;    /* the bytes asked for; 0 for the others */
    void *caller;   /* who allocated it */
    bool freed;     /* freed, kept no-access among the last freed */
    bool warm;      /* freed, its pages still resident (HARD_WARM_BYTES) */
    unsigned char form; /* malloc, new or new[] (alloc.h's PK__FORM_*) */
    /* every page of its mapping resident (a zeroed block cleared whole):
     * its mapping goes to the fits as such (os_unmap_later_fit_resident) */
    bool resident;
} block;
_Static_assert(1 << GROW_ROOM_SHIFT == ALLOC_PER_DOUBLING, "policy.h: a mapping's room is the classes' step");

#define TOMB ((uintptr_t)1)
#define TABLE_MIN 64

static pthread_mutex_t large_lock PK_FORK_LOCK = PK_SPIN_MUTEX_INITIALIZER;
static block *table;
static size_t cap, used, live; /* used counts live entries and tombstones */
static size_t bytes, peak_bytes;
/* The most bytes and blocks live at once since the fits were last empty:
 * the bound on what they may hold. */
static size_t recent_peak, recent_live;

/* What the fits may hold when a block leaves (bytes and live still count
 * it): LARGE_KEEP_PEAKS times the most bytes live at once since nothing
 * waited, at least LARGE_KEEP_FLOOR, in a number of pieces that follows
 * the most blocks live at once since then (policy.h says why). Under the
 * lock. */
static fit_bound keep_bound(void) {
    if (os_fit_bytes() == 0) recent_peak = bytes, recent_live = live;
    return policy_keep_bound(recent_peak, recent_live);
}

static size_t slot_of(uintptr_t ptr, size_t n) {
    return (size_t)(((ptr >> 12) * 0x9E3779B97F4A7C15ull) >> 20) & (n - 1);
}

/* large_fits's answer without the lock (alloc_internal.h). */
size_t large_takes;
__thread large_fits_kept large_fitted __attribute__((tls_model("initial-exec")));

/* Guarded blocks freed, the oldest first: their entries stay (freed) until
 * they leave, so a use after free is named. Under the lock. */
static uintptr_t freed_ring[HARD_FREED_BLOCKS];
static size_t freed_next, freed_count;

/* The mappings of guarded blocks that left the ring, no-access whole, the
 * oldest first, for the next guarded blocks (HARD_RECYCLED). Under the
 * lock. */
typedef struct guarded_span {
    char *base;
    size_t len;
    size_t warm; /* the bytes before its last page still resident */
} guarded_span;
static guarded_span recycled[HARD_RECYCLED];
static size_t recycled_n;
/* The freed guarded blocks' bytes still resident, and when a guarded block
 * was last freed (os_now_ms). Under the lock (the bytes read without it:
 * large_warm_bytes). */
static size_t warm_bytes;
static uint64_t warm_freed_ms;
/* A guarded mapping unmapped: a guard the fewer (os_guard_room, counted
 * where one is mapped). */
static void guarded_unmap(char *base, size_t len) {
    os_unmap(base, len);
    os_guards_add(-1);
}

/* The table's changes, counted for large_serves, which reads it without
 * the lock (a sequence count): odd while one is under way, so a reader
 * that sees the same even count before and after its reads read no change.
 * The fields it reads (ptr, len, size, set) are written with release
 * stores and read with acquire loads (no fence: ThreadSanitizer takes
 * none), so a reader that reads any of a change sees the count it began
 * with; a table replaced is never unmapped (a reader may still hold
 * it): it waits, its pages given back, to serve again as a table of its
 * size (retired, one a size; one replaced while another of its size waits
 * stays mapped, given back, unused: the tables double, so what stays is
 * address space less than twice the table in use). Under the lock. */
static unsigned long table_seq;
static block *retired[sizeof(size_t) * 8];

static void change_begin(void) { __atomic_store_n(&table_seq, table_seq + 1, __ATOMIC_RELAXED); }

static void change_end(void) { __atomic_store_n(&table_seq, table_seq + 1, __ATOMIC_RELEASE); }

static void entry_put(block *e, const block *b) {
    e->base = b->base;
    e->align = b->align;
    e->at = b->at;
    e->caller = b->caller;
    e->freed = b->freed;
    e->warm = b->warm;
    e->form = b->form;
    e->resident = b->resident;
    __atomic_store_n(&e->len, b->len, __ATOMIC_RELEASE);
    __atomic_store_n(&e->size, b->size, __ATOMIC_RELEASE);
    __atomic_store_n(&e->set, b->set, __ATOMIC_RELEASE);
    __atomic_store_n(&e->ptr, b->ptr, __ATOMIC_RELEASE);
}

static void entry_gone(block *e) {
    change_begin();
    __atomic_store_n(&e->ptr, TOMB, __ATOMIC_RELEASE);
    change_end();
}

static block *find(uintptr_t ptr) {
    if (!table) return NULL;
    for (size_t i = slot_of(ptr, cap);; i = (i + 1) & (cap - 1)) {
        if (table[i].ptr == ptr) return &table[i];
        if (table[i].ptr == 0) return NULL;
    }
}

/* The table rebuilt twice as large (or as large, to clear tombstones), for
 * an insert that would fill three quarters of it. Under the lock. */
static bool room(void) {
    size_t n = cap ? cap : TABLE_MIN, page = os_page_size();
    if ((live + 1) * 2 > n) n *= 2;
    unsigned k = (unsigned)__builtin_ctzl(n);
    block *t = retired[k] ? retired[k] : os_map(align_up(n * sizeof(block), page), 0);
    if (!t) return false;
    retired[k] = NULL;
    change_begin();
    for (size_t i = 0; i < cap; i++) {
        if (table[i].ptr <= TOMB) continue;
        size_t j = slot_of(table[i].ptr, n);
        while (t[j].ptr) j = (j + 1) & (n - 1);
        entry_put(&t[j], &table[i]);
    }
    block *old = table;
    size_t old_cap = cap;
    /* cap after table: a reader that sees the new cap sees the new table */
    __atomic_store_n(&table, t, __ATOMIC_RELEASE);
    __atomic_store_n(&cap, n, __ATOMIC_RELEASE);
    if (old) { /* zero (its pages given back), as a table taken from retired must be */
        os_zero_pages(old, align_up(old_cap * sizeof(block), page));
        retired[__builtin_ctzl(old_cap)] = old;
    }
    change_end();
    used = live;
    return true;
}

/* The first free entry on ptr's probe sequence, or NULL: none, or an empty
 * one that would leave too little room. */
static block *free_entry(uintptr_t ptr) {
    if (!table) return NULL;
    size_t i = slot_of(ptr, cap);
    while (table[i].ptr > TOMB) i = (i + 1) & (cap - 1);
    return table[i].ptr == TOMB || (used + 1) * 4 <= cap * 3 ? &table[i] : NULL;
}

/* Room in set for one more address. Under the lock. */
static bool set_room(large_set *set) {
    if (set->n < set->cap) return true;
    size_t cap = set->cap ? set->cap * 2 : os_page_size() / sizeof(uintptr_t);
    uintptr_t *a = os_map(cap * sizeof(uintptr_t), 0);
    if (!a) return false;
    if (set->ptrs) {
        memcpy(a, set->ptrs, set->n * sizeof(uintptr_t));
        os_unmap(set->ptrs, set->cap * sizeof(uintptr_t));
    }
    set->ptrs = a;
    set->cap = cap;
    return true;
}

/* e, a live entry, out of its set: the last address takes its index. */
static void set_remove(block *e) {
    large_set *set = e->set;
    uintptr_t last = set->ptrs[--set->n];
    set->bytes -= e->len;
    if (last != e->ptr) {
        set->ptrs[e->at] = last;
        find(last)->at = e->at;
    }
}

/* b into the table (and its set); false where there is no room. Under the
 * lock. */
static bool insert_locked(const block *b) {
    block *e = free_entry(b->ptr);
    if (!e && room()) e = free_entry(b->ptr);
    bool ok = e != NULL && (!b->set || set_room(b->set));
    if (ok) {
        if (e->ptr == 0) used++;
        change_begin();
        entry_put(e, b);
        change_end();
        if (b->set) {
            e->at = b->set->n;
            b->set->ptrs[b->set->n++] = b->ptr;
            b->set->bytes += b->len;
        }
        live++;
        bytes += b->len;
        if (bytes > peak_bytes) peak_bytes = bytes;
        if (bytes > recent_peak) recent_peak = bytes;
        if (live > recent_live) recent_live = live;
    }
    return ok;
}

static bool insert(const block *b) {
    pk_lock(&large_lock);
    fork_test_point(HOOK_LARGE_BLOCKS, &large_lock);
    bool ok = insert_locked(b);
    pk_unlock(&large_lock);
    return ok;
}

/* Takes entry b out into *out, and the bound on the fits for what leaves
 * it into *bound; caller holds the lock. */
static void take_locked(block *b, block *out, fit_bound *bound) {
    __atomic_store_n(&large_takes, large_takes + 1, __ATOMIC_RELEASE);
    *out = *b;
    if (b->set) set_remove(b);
    entry_gone(b);
    *bound = keep_bound();
    live--;
    bytes -= out->len;
}

/* *len bytes aligned to align, past a page, *len rounded up to a multiple
 * of align first (zero: cleared as os_map_fit_zero does): a kept mapping
 * of that shape, else a fresh aligned mapping; NULL if none. The block
 * keeps the bytes to its next aligned address: blocks of one shape then
 * tile their addresses, so their mappings merge into one of the process's
 * mappings, which Linux caps (vm.max_map_count). A mapping cut out of a
 * longer one, its pieces either side given back, left a hole at each
 * block once the pieces went, each block a mapping of its own, and a
 * program holding many got NULL at the cap (docs/alloc.md), where glibc's
 * blocks, which keep their slack, took none. What a block keeps is
 * address space, not memory: its pages past the caller's bytes are never
 * touched. */
static char *fit_aligned(size_t *len, size_t align, bool zero) {
    if (align > SIZE_MAX / 4 || *len > SIZE_MAX / 4) {
        errno = ENOMEM;
        return NULL;
    }
    *len = align_up(*len, align);
    /* one a block of the same shape left, whole: one look-up, and no
     * pieces to give back */
    char *kept = os_fit_take_aligned(*len, align, zero, *len <= LARGE_ZERO_REUSE_MAX);
    if (kept) return kept;
    os_fit_note_fresh(*len);
    return os_map(*len, align);
}

void *large_alloc_in(large_set *set, size_t size, size_t align, bool zero) {
    size_t page = os_page_size();
    if (align < page) align = page;
    if (size > SIZE_MAX / 2) {
        errno = ENOMEM;
        return NULL;
    }
    size_t len = align_up(size ? size : 1, page);
    /* A kept mapping holds what its last user wrote: os_map_fit_zero clears
     * it for a zeroed block (pk_calloc), as glibc's and mimalloc's calloc
     * clear reused memory; taking fresh pages instead faulted every page
     * in again, twice where the program reads before it writes. */
    size_t kept = os_fit_bytes();
    if (kept < len) central_give_empties(len - kept);
    bool resident = false;
    char *base = align > page ? fit_aligned(&len, align, zero)
                 : zero       ? os_map_fit_zero(len, len <= LARGE_ZERO_REUSE_MAX, &resident)
                              : os_map_fit(len);
    if (!base) {
        errno = ENOMEM;
        return NULL;
    }
    block b = {.ptr = (uintptr_t)base, .base = base, .len = len, .align = align, .set = set, .form = PK__FORM_MALLOC,
               .resident = resident};
    if (!insert(&b)) {
        os_unmap(base, len);
        errno = ENOMEM;
        return NULL;
    }
    return base;
}

void *large_alloc(size_t size, size_t align, bool zero) { return large_alloc_in(NULL, size, align, zero); }

/* ---- hardened blocks: between no-access pages ---- */

/* The bytes from a guarded block's start to the no-access page after it:
 * its mapping ends there, and begins with at least a page no-access. */
static size_t guarded_room(const block *e) {
    return (size_t)(e->base + e->len - os_page_size() - (char *)e->ptr);
}

/* The smallest recycled mapping that holds span bytes with at most as
 * much again to spare, out of the list into *out; false if none. Under
 * the lock. */
static bool recycled_take(size_t span, guarded_span *out) {
    size_t best = recycled_n;
    for (size_t i = 0; i < recycled_n; i++) {
        size_t len = recycled[i].len;
        if (len >= span && len / 2 <= span && (best == recycled_n || len < recycled[best].len)) best = i;
    }
    if (best == recycled_n) return false;
    *out = recycled[best];
    __atomic_store_n(&warm_bytes, warm_bytes - out->warm, __ATOMIC_RELAXED);
    memmove(&recycled[best], &recycled[best + 1], (recycled_n - best - 1) * sizeof recycled[0]);
    recycled_n--;
    return true;
}

/* Freed guarded block b's entry out of the table (a fault there is named
 * no more), its mapping returned, with its resident bytes. Under the lock. */
static guarded_span freed_leaves(block *b) {
    guarded_span s = {b->base, b->len, b->warm ? guarded_room(b) : 0};
    __atomic_store_n(&large_takes, large_takes + 1, __ATOMIC_RELEASE);
    entry_gone(b);
    live--;
    freed_count--;
    return s;
}

/* The address space freed guarded blocks hold, let go where the system
 * refused a new guarded mapping (a limit on the process's address space,
 * RLIMIT_AS): the recycled mappings, and the freed blocks' own, whose
 * entries leave (a fault there is named no more). Without it, a program
 * whose new_handler freed a reserve, or that freed a block to make room
 * for the next, got NULL at every later call. Whether any went. */
static bool guarded_let_go(void) {
    guarded_span go[HARD_FREED_BLOCKS + HARD_RECYCLED];
    size_t n = 0, warm = 0;
    pk_lock(&large_lock);
    for (size_t i = 0; i < recycled_n; i++) go[n++] = recycled[i];
    recycled_n = 0;
    for (size_t i = 0; i < HARD_FREED_BLOCKS; i++) {
        block *b = freed_ring[i] ? find(freed_ring[i]) : NULL;
        freed_ring[i] = 0;
        if (b) go[n++] = freed_leaves(b);
    }
    for (size_t i = 0; i < n; i++) warm += go[i].warm;
    __atomic_store_n(&warm_bytes, warm_bytes - warm, __ATOMIC_RELAXED);
    pk_unlock(&large_lock);
    for (size_t i = 0; i < n; i++) guarded_unmap(go[i].base, go[i].len);
    return n > 0;
}

/* A guarded mapping of at least span bytes, len of them usable at its end
 * before its last page: a recycled one, else a new one. NULL with errno
 * ENOMEM. */
static char *guarded_map(size_t len, size_t span, size_t *mapped) {
    guarded_span r;
    pk_lock(&large_lock);
    bool reuse = recycled_take(span, &r);
    pk_unlock(&large_lock);
    size_t page = os_page_size();
    if (reuse) {
        char *end = r.base + r.len - page;
        if (os_protect_rw(end - len, len)) {
            /* the pages the last block left resident: cleared where the
             * block lies (zero, as fresh pages are), given back before it */
            size_t clear = r.warm < len ? r.warm : len;
            memset(end - clear, 0, clear);
            if (r.warm > len) os_zero_pages(end - r.warm, r.warm - len);
            *mapped = r.len;
            return r.base;
        }
        guarded_unmap(r.base, r.len);
    }
    char *base = os_map_none(span);
    if (!base && guarded_let_go()) base = os_map_none(span);
    if (base) os_guards_add(1);
    if (base && !os_protect_rw(base + page, len)) {
        guarded_unmap(base, span);
        errno = ENOMEM;
        base = NULL;
    }
    *mapped = span;
    return base;
}

void *large_alloc_guarded(size_t size, size_t room, void *caller) {
    size_t page = os_page_size();
    if (size > SIZE_MAX / 2 || room > SIZE_MAX / 2) {
        errno = ENOMEM;
        return NULL;
    }
    size_t len = align_up(room > size ? room : size ? size : 1, page), span = len + 2 * page, mapped;
    char *base = guarded_map(len, span, &mapped);
    if (!base) return NULL;
    char *ptr = base + mapped - page - len;
    block b = {.ptr = (uintptr_t)ptr, .base = base, .len = mapped, .align = page, .size = size, .caller = caller,
               .form = PK__FORM_MALLOC};
    if (!insert(&b)) {
        guarded_unmap(base, mapped);
        errno = ENOMEM;
        return NULL;
    }
    /* Its pages are new, zero: a write before hard_fill's read of the
     * word the check bytes begin in, so that page faults in once (a read
     * first maps the zero page, which the write then copies). */
    if (size < len) ptr[size] = 0;
    hard_fill(ptr, size, len);
    return ptr;
}

PK_COLD __attribute__((noreturn)) static void report_guarded_overflow(const block *b, size_t first, size_t last) {
    error_report(PK_FATAL, "buffer overflow", NULL, (void *)b->ptr,
                 "block %p of %zu bytes was written past its end: bytes %zu to %zu past it changed (check "
                 "bytes), found at its free",
                 (void *)b->ptr, b->size, first - b->size, last - b->size);
    __builtin_unreachable();
}

PK_COLD __attribute__((noreturn)) static void report_guarded_twice(const void *ptr) {
    error_report(PK_FATAL, "double free", NULL, ptr, "%s(%p): the block was freed already", alloc_free_call(), ptr);
    __builtin_unreachable();
}

/* Guarded block b (its entry e, under the lock) freed: its check bytes
 * checked (unless the caller did, moving its pages away), no access left,
 * its pages kept resident (warm) within HARD_WARM_BYTES, else given back,
 * the entry kept among the last freed. The oldest of those leaves, its
 * mapping to the recycled, whose oldest leaves into *gone (to be
 * unmapped), or gone->base is NULL. */
static void free_guarded(block *e, block *gone, bool checked) {
    size_t len = guarded_room(e), first, last;
    gone->base = NULL;
    if (e->freed) {
        block copy = *e;
        pk_unlock(&large_lock);
        report_guarded_twice((void *)copy.ptr);
    }
    if (e->form != PK__FORM_MALLOC) {
        block copy = *e;
        pk_unlock(&large_lock);
        alloc_report_form(NULL, (void *)copy.ptr, copy.size, copy.form, PK__FORM_MALLOC);
    }
    if (!checked && hard_changed((char *)e->ptr, e->size, len, &first, &last)) {
        block copy = *e;
        pk_unlock(&large_lock);
        report_guarded_overflow(&copy, first, last);
    }
    e->warm = false;
    /* with a purge delay of 0 nothing waits (no sweep would give it back) */
    size_t warm_most = options_purge_delay_ms() == 0 ? 0 : bytes > HARD_WARM_BYTES ? bytes : HARD_WARM_BYTES;
    if (!checked && warm_bytes + len <= warm_most && os_protect_none((void *)e->ptr, len)) {
        e->warm = true;
        __atomic_store_n(&warm_bytes, warm_bytes + len, __ATOMIC_RELAXED);
        warm_freed_ms = os_now_ms();
    } else {
        os_decommit((void *)e->ptr, len);
    }
    e->freed = true;
    freed_count++; /* still live to the table's sizing until it leaves */
    bytes -= e->len;
    uintptr_t old = freed_ring[freed_next];
    freed_ring[freed_next] = e->ptr;
    freed_next = (freed_next + 1) % HARD_FREED_BLOCKS;
    block *o = old ? find(old) : NULL;
    if (o) {
        /* its mapping waits among the recycled, the oldest of which leaves */
        if (recycled_n == HARD_RECYCLED) {
            gone->base = recycled[0].base;
            gone->len = recycled[0].len;
            __atomic_store_n(&warm_bytes, warm_bytes - recycled[0].warm, __ATOMIC_RELAXED);
            memmove(&recycled[0], &recycled[1], (HARD_RECYCLED - 1) * sizeof recycled[0]);
            recycled_n--;
        }
        recycled[recycled_n++] = freed_leaves(o);
    }
}

size_t large_warm_bytes(void) { return __atomic_load_n(&warm_bytes, __ATOMIC_RELAXED); }

void large_warm_tick(uint64_t now) {
    pk_lock(&large_lock);
    if (warm_bytes && now >= warm_freed_ms && now - warm_freed_ms >= (uint64_t)options_purge_delay_ms()) {
        for (size_t i = 0; i < HARD_FREED_BLOCKS; i++) {
            block *b = freed_ring[i] ? find(freed_ring[i]) : NULL;
            if (b && b->warm) os_zero_pages((void *)b->ptr, guarded_room(b));
            if (b) b->warm = false;
        }
        for (size_t i = 0; i < recycled_n; i++) {
            guarded_span *r = &recycled[i];
            if (r->warm) os_zero_pages(r->base + r->len - os_page_size() - r->warm, r->warm);
            r->warm = 0;
        }
        __atomic_store_n(&warm_bytes, 0, __ATOMIC_RELAXED);
    }
    pk_unlock(&large_lock);
}

bool large_grow_guarded(void *ptr, size_t size) {
    size_t first, last;
    pk_lock(&large_lock);
    block *e = find((uintptr_t)ptr);
    bool grows = e && e->size && !e->freed && e->form == PK__FORM_MALLOC && size >= e->size && size <= guarded_room(e);
    /* only the check bytes that become the block's: the rest wait for the
     * free, so a buffer grown a few bytes at a time reads each once */
    if (grows && hard_changed(ptr, e->size, size, &first, &last)) {
        block copy = *e;
        pk_unlock(&large_lock);
        report_guarded_overflow(&copy, first, last);
    }
    /* the check bytes past it hold their pattern still (by position) */
    if (grows) __atomic_store_n(&e->size, size, __ATOMIC_RELEASE);
    pk_unlock(&large_lock);
    return grows;
}

void *large_shrink_guarded(void *ptr, size_t size, void *caller) {
    size_t page = os_page_size(), len = align_up(size, page), mapped, first, last;
    if (!os_guard_room()) return NULL;
    char *base = guarded_map(len, len + 2 * page, &mapped);
    if (!base) return NULL;
    char *to = base + mapped - page - len;
    block gone = {.base = NULL}, b;
    pk_lock(&large_lock);
    /* Room for the new entry first (a move cannot be undone; room() moves
     * the entries, so before the old one is found). */
    bool ok = free_entry((uintptr_t)to) || room();
    block *e = find((uintptr_t)ptr);
    ok = ok && e && e->size && !e->freed && e->form == PK__FORM_MALLOC && size < e->size;
    if (ok && hard_changed(ptr, e->size, guarded_room(e), &first, &last)) {
        block copy = *e;
        pk_unlock(&large_lock);
        report_guarded_overflow(&copy, first, last);
    }
    /* the old one's check bytes were read above: the pages that move
     * leave zero behind */
    ok = ok && os_move_pages_keep(to, ptr, len);
    if (ok) {
        free_guarded(e, &gone, true);
        b = (block){.ptr = (uintptr_t)to, .base = base, .len = mapped, .align = page, .size = size,
                    .caller = caller, .form = PK__FORM_MALLOC};
        insert_locked(&b); /* room was made, under the same lock */
    }
    pk_unlock(&large_lock);
    if (gone.base) guarded_unmap(gone.base, gone.len);
    if (!ok) {
        guarded_unmap(base, mapped);
        return NULL;
    }
    hard_fill(to, size, len);
    return to;
}

bool large_form(const void *ptr, unsigned *form, size_t *size) {
    pk_lock(&large_lock);
    block *e = find((uintptr_t)ptr);
    bool guarded = e && e->size && !e->freed;
    if (guarded) {
        *form = e->form;
        *size = e->size;
    }
    pk_unlock(&large_lock);
    return guarded;
}

void large_set_form(const void *ptr, unsigned form) {
    pk_lock(&large_lock);
    block *e = find((uintptr_t)ptr);
    if (e && e->size && !e->freed) e->form = (unsigned char)form;
    pk_unlock(&large_lock);
}

PK_COLD __attribute__((noreturn)) static void report_guard_fault(int sig, const void *addr, const block *b) {
    void *record[SITE_KINDS * SITES_MAX_FRAMES] = {0};
    char where[SITES_TEXT];
    record[0] = b->caller;
    sites_format(where, sizeof where, record);
    const char *at = (const char *)addr, *start = (const char *)b->ptr;
    const char *sigw = sig == SIGBUS ? "SIGBUS" : "SIGSEGV";
    if (b->freed)
        error_report(PK_FATAL, "use after free", NULL, addr,
                     "%s at %p, byte %zu of the %zu-byte block %p, freed already; %s", sigw, addr,
                     (size_t)(at - start), b->size, (void *)b->ptr, where);
    if (at < start)
        error_report(PK_FATAL, "buffer underflow", NULL, addr,
                     "%s at %p, %zu bytes before the %zu-byte block %p; %s", sigw, addr, (size_t)(start - at),
                     b->size, (void *)b->ptr, where);
    error_report(PK_FATAL, "buffer overflow", NULL, addr, "%s at %p, %zu bytes past the %zu-byte block %p; %s",
                 sigw, addr, (size_t)(at - start) - b->size, b->size, (void *)b->ptr, where);
    __builtin_unreachable();
}

bool large_explain_fault(int sig, const void *addr) {
    /* the faulting thread may hold the lock (a fault in the library): then
     * the fault goes unexplained rather than waiting forever */
    if (pk_trylock(&large_lock) != 0) return false;
    block hit = {0};
    for (size_t i = 0; table && i < cap; i++) {
        const block *b = &table[i];
        if (b->ptr > TOMB && b->size && (const char *)addr >= b->base && (const char *)addr < b->base + b->len) {
            hit = *b;
            break;
        }
    }
    pk_unlock(&large_lock);
    if (hit.ptr) report_guard_fault(sig, addr, &hit);
    return false;
}

bool large_free(void *ptr) {
    block b = {0}, gone = {0};
    fit_bound bound = {0, 0, false};
    pk_lock(&large_lock);
    block *e = find((uintptr_t)ptr);
    bool guarded = e && e->size; /* a hardened block, between guard pages */
    if (guarded) free_guarded(e, &gone, false);
    else if (e) take_locked(e, &b, &bound);
    pk_unlock(&large_lock);
    if (gone.base) guarded_unmap(gone.base, gone.len);
    if (b.base) (b.resident ? os_unmap_later_fit_resident : os_unmap_later_fit)(b.base, b.len, bound);
    return e != NULL;
}

bool large_usable(const void *ptr, size_t *usable) {
    pk_lock(&large_lock);
    block *b = find((uintptr_t)ptr);
    if (b && b->freed) b = NULL;
    if (b) *usable = b->size ? b->size : b->len - (size_t)((const char *)ptr - b->base);
    pk_unlock(&large_lock);
    return b != NULL;
}

/* ptr, a block whose mapping is len bytes, remembered as large_fits
 * answers for it (alloc_internal.h) while the count of takes stays at
 * `takes`: read under the lock, or before a read of the table without it
 * (large_serves), so that a take since makes it go. */
static void remember_fit(const void *ptr, size_t len, size_t takes) {
    large_fits_kept *k = &large_fitted;
    if (k->takes != takes) { /* what it remembers may have changed */
        memset(k->fit, 0, sizeof k->fit);
        k->takes = takes;
        k->next = 0;
    }
    k->fit[k->next] = (large_fit){(uintptr_t)ptr, policy_grow_least(len, os_page_size()), len};
    k->next = (k->next + 1) % LARGE_FITS_KEPT;
}

/* b's pages moved to the front of fresh (want bytes, the caller's) where
 * mremap refused to grow b's mapping: a block over several of the
 * system's mappings (a kept piece's pages gathered: retain.c) moves by
 * them, with no copy and no fault, so its resident pages stay the ones
 * the program wrote (KEPT_DENSE_SHIFT, policy.h: the caller copies a
 * block whose pages are in use). Where the system refuses a move
 * part-way, the block is copied into a mapping taken first for that, from
 * fresh's front and from b's place: what the refused move aimed at may now
 * be another thread's, so it stays mapped (retain.c's gather leaves it
 * too). Where it lies, or NULL, nothing moved, if no mapping could be
 * taken first. */
static char *moved_over(char *fresh, const block *b, size_t want, fit_bound bound) {
    char *spare = os_map(want, 0);
    if (!spare) return NULL;
    size_t moved, refused;
    if (os_move_pages(fresh, b->base, b->len, &moved, &refused, true)) {
        os_unmap(spare, want);
        return fresh;
    }
    memcpy(spare, fresh, moved);
    memcpy(spare + moved, b->base + moved, b->len - moved);
    os_unmap(fresh, moved);
    os_unmap(fresh + moved + refused, want - moved - refused);
    os_unmap_later_fit(b->base + moved, b->len - moved, bound);
    return spare;
}

/* b's contents copied into to (a mapping of its new length), its own
 * mapping kept for the next block: to. */
static char *copied_into(char *to, const block *b, fit_bound bound) {
    os_copy_resident(to, b->base, b->len);
    os_unmap_later_fit(b->base, b->len, bound);
    return to;
}

/* b's mapping grown to hold len bytes with its contents, or NULL (b
 * unchanged); *got, its new length: up to policy_grow_to's, room to grow
 * on, so that a buffer grown a little at a time asks once per step of
 * that room, not at every page it crosses. */
static void *grown(const block *b, size_t len, fit_bound bound, size_t *got) {
    size_t want = policy_grow_to(len, os_page_size());
    /* Kept pages right after it (its own tail, kept when it shrank) are
     * taken back as they are: no system call, no fault; mremap could not
     * grow it in place over them, and moved it to fault fresh pages in. */
    size_t more = os_fit_claim(b->base + b->len, len - b->len, want - b->len);
    *got = b->len + more;
    if (more) return b->base;
    *got = want;
    /* A kept mapping that holds it all, pages faulted in: copied there,
     * and its own pages wait for the next (GROW_COPY_MAX, policy.h), if
     * the block's pages are in use (KEPT_DENSE_SHIFT: a copy writes every
     * page). */
    bool aligned = b->align > os_page_size(), copies = !aligned && b->len <= GROW_COPY_MAX;
    bool dense = !aligned && (b->resident || os_kept_in_use(b->base, b->len));
    char *kept = dense && copies ? os_fit_take(want) : NULL;
    if (kept) return copied_into(kept, b, bound);
    /* A longer one, while kept mappings wait: their pages gathered after
     * its own make its room, its pages moved before them (GROW_COPY_MAX,
     * policy.h); the room's front is fresh, so it moves as below. */
    size_t written = 0;
    char *fresh = dense && !copies && os_fit_bytes() ? os_map_fit_after(want, b->len) : NULL;
    if (!fresh) {
        central_give_empties(want - b->len); /* its fresh pages */
        /* A mapping aligned past a page may move to any page: copied then. */
        void *p = aligned ? NULL : os_remap(b->base, b->len, want);
        if (p) {
            os_fit_note_fresh(want - b->len);
            return p;
        }
        fresh = aligned ? fit_aligned(got, b->align, false) : os_map_fit_written(want, &written);
        if (!fresh) return NULL;
    }
    /* copied where its pages are in use and kept pages lie under fresh:
     * they stay; moved over fresh ones (a block over several of the
     * system's mappings, its room gathered: no copy, no fault) */
    char *to = aligned || (dense && written) ? NULL : moved_over(fresh, b, want, bound);
    return to ? to : copied_into(fresh, b, bound);
}

bool large_serves(const void *ptr, size_t size, bool sets_leave) {
    size_t len = size > SIZE_MAX / 2 ? 0 : align_up(size, os_page_size()), have = 0;
    size_t takes = __atomic_load_n(&large_takes, __ATOMIC_ACQUIRE);
    unsigned long seq = __atomic_load_n(&table_seq, __ATOMIC_ACQUIRE);
    size_t n = __atomic_load_n(&cap, __ATOMIC_ACQUIRE);
    block *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
    if ((seq & 1) || !t) return false; /* a change under way, or no block yet */
    bool serves = false;
    /* at most n entries: a table read while it changed need not hold an empty one */
    for (size_t i = slot_of((uintptr_t)ptr, n), k = 0; k < n; i = (i + 1) & (n - 1), k++) {
        uintptr_t at = __atomic_load_n(&t[i].ptr, __ATOMIC_ACQUIRE);
        if (at == (uintptr_t)ptr) {
            have = __atomic_load_n(&t[i].len, __ATOMIC_ACQUIRE);
            serves = !__atomic_load_n(&t[i].size, __ATOMIC_ACQUIRE) && len && policy_grow_serves(have, len) &&
                     !(sets_leave && __atomic_load_n(&t[i].set, __ATOMIC_ACQUIRE));
            break;
        }
        if (!at) break;
    }
    serves = serves && __atomic_load_n(&table_seq, __ATOMIC_RELAXED) == seq;
    /* ptr's own entry changes only by a take of ptr, which is this
     * thread's call now or ordered before it: the count read first keeps
     * what it remembers no longer than the length read */
    if (serves) remember_fit(ptr, have, takes);
    return serves;
}

void *large_resize(void *ptr, size_t size, bool sets_leave, bool *mine) {
    block b;
    fit_bound bound;
    size_t len = size > SIZE_MAX / 2 ? 0 : align_up(size, os_page_size());
    pk_lock(&large_lock);
    block *e = find((uintptr_t)ptr);
    *mine = e && !(sets_leave && e->set);
    bool same = *mine && !e->size && len && policy_grow_serves(e->len, len);
    if (same) remember_fit(ptr, e->len, large_takes); /* the next resize it serves takes no lock */
    else if (*mine && len) take_locked(e, &b, &bound);
    pk_unlock(&large_lock);
    if (!*mine || same) return *mine ? ptr : NULL;
    if (!len) {
        errno = ENOMEM;
        return NULL;
    }
    block to = b;
    size_t got = len;
    if (len > b.len) {
        to.resident = false; /* what it grows over may not be */
        void *p = grown(&b, len, bound, &got);
        if (p) {
            to.ptr = (uintptr_t)p;
            to.base = p;
            to.len = got;
        }
    } else {
        /* The tail waits among the fits, its pages still faulted in; an
         * aligned block keeps its slack to an aligned end (fit_aligned). */
        if (b.align > os_page_size() && align_up(len, b.align) < b.len) len = align_up(len, b.align);
        if (len < b.len) (b.resident ? os_unmap_later_fit_resident : os_unmap_later_fit)(b.base + len, b.len - len, bound);
        to.len = got = len;
    }
    insert(&to); /* into the entry take left, or one as free: it cannot fail */
    if (to.len != got) {
        errno = ENOMEM;
        return NULL;
    }
    return to.base;
}

void *large_realloc(void *ptr, size_t size) {
    bool mine;
    void *to = large_resize(ptr, size, false, &mine);
    if (!mine) errno = ENOMEM;
    return to;
}

large_set *large_set_of(const void *ptr) {
    pk_lock(&large_lock);
    block *b = find((uintptr_t)ptr);
    large_set *set = b ? b->set : NULL;
    pk_unlock(&large_lock);
    return set;
}

void large_set_count(const large_set *set, size_t *blocks, size_t *bytes) {
    pk_lock(&large_lock);
    *blocks = set->n;
    *bytes = set->bytes;
    pk_unlock(&large_lock);
}

/* One block at a time, the last of the array: the lock is not held over
 * the unmapping. */
void large_free_set(large_set *set) {
    for (;;) {
        pk_lock(&large_lock);
        uintptr_t ptr = set->n ? set->ptrs[set->n - 1] : 0;
        pk_unlock(&large_lock);
        if (!ptr) break;
        if (large_free((void *)ptr)) continue;
        /* not in the table: never so, but the loop must end */
        pk_lock(&large_lock);
        if (set->n && set->ptrs[set->n - 1] == ptr) set->n--;
        pk_unlock(&large_lock);
    }
    if (set->ptrs) os_unmap(set->ptrs, set->cap * sizeof(uintptr_t));
    set->ptrs = NULL;
    set->cap = 0;
}

void large_stats_get(large_stats *out) {
    pk_lock(&large_lock);
    out->blocks = live - freed_count;
    out->bytes = bytes;
    out->peak_bytes = peak_bytes;
    pk_unlock(&large_lock);
}

void large_fork_lock(void) { pk_lock(&large_lock); }
void large_fork_unlock(void) { pk_unlock(&large_lock); }
