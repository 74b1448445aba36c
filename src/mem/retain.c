/* Retained memory: mappings kept mapped for the purge delay, so that the
 * next user reuses them without a system call or a page fault, then given
 * back. Two kinds, under one lock (a leaf):
 *
 * - Whole mappings (huge slabs' regions, arena chunks), keyed by size and
 *   alignment, for the next slab or arena of the same shape, or of the
 *   same alignment and a shorter size (its tail given back). Bounded by
 *   RETAIN_BYTES process-wide (policy.h), with the slabs' places region.c
 *   keeps (retain_charge). The first bytes of each mapping hold its entry
 *   while it waits.
 * - Fits: freed large blocks' mappings (alloc_large.c), of any length, in
 *   a table of at most LARGE_KEEP_COUNT entries indexed by length and by
 *   address (mem/fits.h), under the caller's bound in bytes and entries
 *   (policy.h). A request takes the front of the
 *   smallest that holds it (the rest waits on); where none does, a fresh
 *   mapping whose front takes the pages of the longest few, moved there
 *   by mremap (gather: no copy, no fault; while the front end's live
 *   blocks are few, LARGE_GATHER_LIVE_MAX), so that a block longer than any
 *   piece faults in only what they all lack, and as much again mapped
 *   past it waits among the fits (LARGE_FIT_SLACK). A mapping kept
 *   beside another is joined to it, so blocks freed side by side serve a
 *   longer one; the entry's time stamp is its oldest part's, so nothing
 *   waits past the delay because a neighbour came later. Past the count
 *   the smallest goes (the fewest pages to fault in again), past the
 *   bound in bytes the oldest. No entry is written into the memory kept:
 *   what leaves is gathered GONE_BATCH at a time and unmapped outside the
 *   lock. Pages one block wrote that stay resident under the next ones,
 *   which do not write them (residue: LARGE_RESIDUE_MAX, policy.h), go
 *   back in rounds, and by a look at every fit's pages (RESIDUE_LOOK_MS),
 *   the address space kept; a fit that holds zero pages only is not
 *   cleared again for a zeroed block.
 *
 * The delay they wait adapts (IDLE_ADAPT, policy.h; judge_purge below):
 * a purge by age followed by as much mapped afresh lengthens it.
 *
 * Reused memory is not zero (callers that need zeros clear what they use
 * or ask for fresh pages). Tool builds keep nothing, so that Valgrind and
 * ASan see every mapping fresh. */
#include "base/internal.h"
#include "base/adapt.h"
#include "base/policy.h"
#include "base/track.h"
#include "mem/fits.h"

#include <pthread.h>
#include <string.h>

typedef struct retained {
    struct retained *next;
    size_t size, align;
    uint64_t since; /* os_now_ms() when it was retained */
} retained;

/* A fit's dirty: CLEAN when every page is one the system zeroes (fresh,
 * or given back since); WRITTEN when a user may have written some;
 * RESIDENT when a user wrote every page (a zeroed block cleared whole), so
 * they are resident; else the round in which residue came
 * (LARGE_RESIDUE_MAX). Two joined keep the lower (dirty_joined), but
 * RESIDENT beside another state is WRITTEN: not every page is known
 * resident then. */
#define CLEAN UINT64_MAX
#define WRITTEN (UINT64_MAX - 1)
#define RESIDENT (UINT64_MAX - 2)

/* What leaves the fits at once under the lock, on the stack, before the
 * lock is dropped to unmap it. */
#define GONE_BATCH 16
/* The most fits one request gathers (map_fit). */
#define GATHER_PIECES 16

static pthread_mutex_t retain_lock PK_FORK_LOCK = PK_SPIN_MUTEX_INITIALIZER;
static retained *head;
static size_t held;
/* LARGE_RESIDUE_MAX: the bytes of residue since the round began, and the
 * round: fits whose residue came in an earlier one are due; decaying
 * while some may be (the frees in between scan no table). */
static size_t residue;
static uint64_t round_no;
static bool decaying;
/* A thread's own count: no cache line shared between threads that free
 * (the default model: large frees only, and no static TLS taken from a
 * program that opens the library with dlopen). */
static __thread unsigned frees_seen;
/* The bound the front end gave with its last piece (os_unmap_later_fit,
 * relaxed atomics: written before the lock is taken): map_fit's slack
 * keeps to it, and map_fit gathers pieces only where it says so. */
static fit_bound last_bound;
/* When the oldest entry was retained (at most): a tick before it has
 * waited the delay has nothing to do and takes no lock. */
static uint64_t oldest;
/* IDLE_ADAPT (policy.h, base/adapt.h) for what is kept here, in bytes
 * mapped where nothing kept served (fresh, a relaxed atomic), under the
 * lock; keep_shift, its shift as the tick reads it without the lock. */
static idle_adapt keeping;
static uint64_t fresh;
static unsigned keep_shift;

static void note_fresh(size_t bytes) { __atomic_fetch_add(&fresh, bytes, __ATOMIC_RELAXED); }

/* FIT_GIVE_REGRET (policy.h): the fits given back for small objects'
 * fresh places (os_fit_owe), judged by the large blocks' fresh bytes since
 * (fits_fresh, a relaxed atomic: mapped where no fit served). Under the
 * lock. */
static uint64_t fits_fresh;
static struct {
    size_t gone;     /* given since the run of gives began (0: none) */
    uint64_t mark;   /* fits_fresh then */
    uint64_t resume; /* os_now_ms() before which none go */
    unsigned shift;  /* the doublings of the pause */
} owing;

void os_fit_note_fresh(size_t bytes) { __atomic_fetch_add(&fits_fresh, bytes, __ATOMIC_RELAXED); }

static void note_fits_fresh(size_t bytes) {
    note_fresh(bytes);
    os_fit_note_fresh(bytes);
}

void *os_map_reuse_near(void *want, size_t size, size_t align) {
    pk_lock(&retain_lock);
    fork_test_point(HOOK_RETAINED, &retain_lock);
    /* Its own size first; else a longer one, cut: a huge slab's region
     * left by one class serves the next of a shorter class without a
     * fault (objects that change size between phases). */
    retained **link = &head, **longer = NULL, *r;
    for (; (r = *link) && (r->size != size || r->align != align); link = &r->next)
        if (!longer && r->align == align && r->size > size) longer = link;
    if (!r && longer) r = *(link = longer);
    size_t have = r ? r->size : 0;
    if (r) {
        *link = r->next;
        __atomic_store_n(&held, held - have, __ATOMIC_RELAXED);
    }
    pk_unlock(&retain_lock);
    if (have > size) os_unmap((char *)r + size, have - size);
    if (r) return r;
    note_fresh(size);
    return os_map_near(want, size, align);
}

void *os_map_reuse(size_t size, size_t align) { return os_map_reuse_near(NULL, size, align); }

bool os_unmap_later(void *p, size_t size, size_t align) {
    bool keep = !TRACK_ENABLED && size >= sizeof(retained) && options_purge_delay_ms() > 0;
    if (keep) {
        retained *r = p;
        pk_lock(&retain_lock);
        keep = held + size <= RETAIN_BYTES;
        if (keep) {
            r->size = size;
            r->align = align;
            r->since = os_now_ms();
            if (!head && !fit_count) __atomic_store_n(&oldest, r->since, __ATOMIC_RELAXED);
            r->next = head;
            head = r;
            __atomic_store_n(&held, held + size, __ATOMIC_RELAXED);
        }
        pk_unlock(&retain_lock);
    }
    if (!keep) os_unmap(p, size);
    return keep;
}

/* ---- fits: freed large blocks' mappings of any length ---- */

static fit piece_of(char *base, size_t len, uint64_t since, uint64_t dirty) {
    fit f = {base, len, since, dirty, 0, 0};
    return f;
}

/* The first len bytes of fit i (len at most its length) out of the table:
 * the rest waits on, with its stamp. Under the lock. */
static inline __attribute__((always_inline)) fit fit_take_front(size_t i, size_t len) {
    fit *k = &fit_table[i];
    if (k->len == len) return fits_remove(i);
    fit f = piece_of(k->base, len, k->since, k->dirty);
    fits_resize(i, k->base + len, k->len - len);
    return f;
}

/* Puts f in the table (room for it made). Under the lock. */
static inline __attribute__((always_inline)) void fit_add(fit f) {
    if (!head && !fit_count) __atomic_store_n(&oldest, f.since, __ATOMIC_RELAXED);
    fits_add(f);
}

/* The fits to gather into one mapping for a request no fit holds: while
 * some fit holds what is still missing, the smallest that does, cut to it
 * (the rest waits on); until then the longest, whole; at most
 * GATHER_PIECES. Under the lock; returns how many, *got their bytes. */
static size_t choose_pieces(size_t size, fit *piece, size_t *got) {
    size_t n = 0;
    *got = 0;
    while (*got < size && n < GATHER_PIECES && fit_count) {
        size_t need = size - *got, best = fits_best(need);
        piece[n] = best != FIT_NONE ? fit_take_front(best, need) : fits_remove(fits_longest());
        *got += piece[n++].len;
    }
    return n;
}

/* The fresh pages mapped past a request (map_fit's slack) wait among the
 * fits, untouched, within the bound the fits last had. */
static bool slack_fits(size_t len) {
    return fit_count < __atomic_load_n(&last_bound.count, __ATOMIC_RELAXED) &&
           fit_bytes + len <= __atomic_load_n(&last_bound.bytes, __ATOMIC_RELAXED);
}

static void keep_slack(char *p, size_t len) {
    pk_lock(&retain_lock);
    bool keep = slack_fits(len);
    if (keep) fit_add(piece_of(p, len, os_now_ms(), CLEAN));
    pk_unlock(&retain_lock);
    if (!keep) os_unmap(p, len);
}

/* A mapping of size bytes whose front holds the pieces' pages, moved there
 * in order (os_move_pages: no copy, no fault), the rest fresh, and extra
 * fresh bytes past it for the fits; NULL, every piece given back, if the
 * system refuses (what a refused move left at its target is not the
 * caller's to unmap: another thread may map there). */
static void *gather(fit *piece, size_t n, size_t size, size_t extra, size_t front) {
    char *to = os_map(size + extra, 0);
    if (to && extra) keep_slack(to + size, extra);
    size_t at = front, i = 0, moved = 0, refused;
    while (to && i < n && os_move_pages(to + at, piece[i].base, piece[i].len, &moved, &refused, true))
        at += piece[i++].len;
    if (to && i < n) {
        os_unmap(to, at + moved);
        size_t past = at + piece[i].len;
        os_unmap(to + past, size - past);
        piece[i].base += moved;
        piece[i].len -= moved;
        to = NULL;
    }
    for (; i < n; i++) os_unmap(piece[i].base, piece[i].len);
    return to;
}

/* The front size bytes of the smallest fit that holds them, out of the
 * table (the rest waits on), or a fit with no base. The fit added last
 * first: of the request's length, it is the smallest that holds it, with
 * no scan (a program that frees and allocates blocks of one length takes
 * back the one it freed last, in cache). Under the lock. */
static fit take_best(size_t size) {
    size_t best = fit_count && fit_table[fit_count - 1].len == size ? fit_count - 1 : fits_best(size);
    return best != FIT_NONE ? fit_take_front(best, size) : piece_of(NULL, 0, 0, CLEAN);
}

/* size bytes as os_map_fit gives them; *dirty gets how many at the front
 * may hold what a last user wrote (the rest are fresh, zero pages),
 * *resident whether they are all resident (a RESIDENT fit). */
static void *map_fit(size_t size, size_t *dirty, bool *resident) {
    fit f, piece[GATHER_PIECES];
    size_t pieces = 0, got = 0, extra = 0;
    pk_lock(&retain_lock);
    fork_test_point(HOOK_RETAINED, &retain_lock);
    f = take_best(size);
    if (!f.base && __atomic_load_n(&last_bound.gather, __ATOMIC_RELAXED)) {
        pieces = choose_pieces(size, piece, &got);
        /* LARGE_FIT_SLACK, where pieces wait but none held the request
         * (with none, the program has used none lately: the purge took them) */
        size_t slack = size * LARGE_FIT_SLACK;
        if (pieces && slack / LARGE_FIT_SLACK == size && slack_fits(slack)) extra = slack;
    }
    pk_unlock(&retain_lock);
    *dirty = f.base ? (f.dirty == CLEAN ? 0 : size) : got;
    *resident = f.base && f.dirty == RESIDENT;
    if (f.base) return f.base;
    void *p = gather(piece, pieces, size, extra, 0);
    note_fits_fresh(p ? size - got : size);
    if (p) return p;
    *dirty = 0;
    return os_map(size, 0);
}

void *os_map_fit_after(size_t size, size_t front) {
    fit piece[GATHER_PIECES];
    size_t got;
    pk_lock(&retain_lock);
    fork_test_point(HOOK_RETAINED, &retain_lock);
    size_t pieces = choose_pieces(size - front, piece, &got);
    pk_unlock(&retain_lock);
    if (!pieces) return NULL;
    void *p = gather(piece, pieces, size, 0, front);
    if (p) note_fits_fresh(size - front - got); /* the front takes the caller's pages */
    return p;
}

void *os_fit_take(size_t size) {
    pk_lock(&retain_lock);
    fork_test_point(HOOK_RETAINED, &retain_lock);
    fit f = take_best(size);
    pk_unlock(&retain_lock);
    return f.base;
}

void *os_map_fit_written(size_t size, size_t *written) {
    bool resident;
    return map_fit(size, written, &resident);
}

void *os_map_fit(size_t size) {
    size_t written;
    return os_map_fit_written(size, &written);
}

bool os_kept_in_use(void *p, size_t len) {
    if (len <= KEPT_DENSE_MIN) return true;
    size_t pages = len / os_page_size();
    return os_resident_pages(p, pages) >= pages >> KEPT_DENSE_SHIFT;
}

/* The first dirty bytes of p, kept memory, zero: cleared (os_map_fit_zero
 * says when, and where most are resident: known so, or looked at), or
 * given back to come back zero. Whether it cleared them. */
static bool zero_kept(void *p, size_t dirty, bool clear, bool resident) {
    bool cleared = p && clear && (resident || os_kept_in_use(p, dirty));
    if (cleared) memset(p, 0, dirty);
    else if (p) os_zero_pages(p, dirty);
    return cleared;
}

void *os_map_fit_zero(size_t size, bool clear, bool *resident) {
    size_t dirty;
    void *p = map_fit(size, &dirty, resident);
    *resident = zero_kept(p, dirty, clear, *resident) && dirty == size;
    return p;
}

void *os_fit_take_aligned(size_t len, size_t align, bool zero, bool clear) {
    char *got = NULL;
    bool was_clean = false;
    pk_lock(&retain_lock);
    fork_test_point(HOOK_RETAINED, &retain_lock);
    size_t i = fits_aligned(len, align);
    if (i != FIT_NONE) {
        fit *f = &fit_table[i];
        uintptr_t base = (uintptr_t)f->base, at = align_up(base, align);
        size_t front = at - base, tail = f->len - front - len;
        was_clean = f->dirty == CLEAN;
        if (!front) {
            fit_take_front(i, len);
        } else {
            /* the front waits on in the entry; the tail, a second one */
            fit rest = piece_of((char *)at + len, tail, f->since, f->dirty);
            fits_resize(i, f->base, front);
            if (tail) fit_add(rest);
        }
        got = (char *)at;
    }
    pk_unlock(&retain_lock);
    if (zero && !was_clean) zero_kept(got, len, clear, false);
    return got;
}

size_t os_fit_claim(void *at, size_t least, size_t most) {
    size_t got = 0;
    pk_lock(&retain_lock);
    size_t i = fits_starting(at);
    if (i != FIT_NONE && fit_table[i].len >= least) {
        got = fit_table[i].len < most ? fit_table[i].len : most;
        fit_take_front(i, got);
    }
    pk_unlock(&retain_lock);
    return got;
}

/* LARGE_RESIDUE_MAX (policy.h): a fit whose residue came in an earlier
 * round than this one, out of the table, or a fit with no base. Under the
 * lock. */
static fit decay_due(void) {
    for (size_t i = 0; decaying && i < fit_count; i++)
        if (fit_table[i].dirty < round_no) return fits_remove(i);
    decaying = false;
    return piece_of(NULL, 0, 0, CLEAN);
}

static uint64_t dirty_joined(uint64_t a, uint64_t b) {
    uint64_t low = a < b ? a : b;
    return a != b && low == RESIDENT ? WRITTEN : low;
}

/* *f joined with the fits just before and after it, out of the table:
 * blocks freed side by side serve a longer one. Under the lock. */
static void join_beside(fit *f) {
    for (size_t i = 0; (i = fits_beside(f->base, f->len, i)) != FIT_NONE;) {
        bool looked = !fit_indexed; /* else a look after a drop starts at the top */
        fit joined = fits_remove(i);
        if (!looked) i = 0;
        if (joined.base < f->base) f->base = joined.base;
        f->len += joined.len;
        if (joined.since < f->since) f->since = joined.since;
        f->dirty = dirty_joined(f->dirty, joined.dirty);
    }
}

/* f, taken out of the table, among the fits again, joined with what was
 * freed beside it meanwhile, where the bound still has room for it (other
 * frees may have filled it); else given back. */
static void put_back(fit f) {
    pk_lock(&retain_lock);
    bool keep = slack_fits(f.len);
    if (keep) join_beside(&f), fit_add(f);
    pk_unlock(&retain_lock);
    if (!keep) os_unmap(f.base, f.len);
}

/* Gives the pages of f, out of the table, back and keeps its address space
 * among the fits again, clean. Not under the lock: the system call sends
 * every thread's processor a flush. */
static void decay(fit f) {
    os_zero_pages(f.base, f.len);
    f.dirty = CLEAN;
    put_back(f);
}

/* ---- RESIDUE_LOOK_MS: the look at every kept piece ---- */

#define SPARSE 1u /* a granule with residue */
#define DENSE 2u  /* a granule in use, or pages the system would not tell of */
_Static_assert(1024 % RESIDUE_GRANULE_PAGES == 0, "a look's vector holds whole granules");

/* What the granules of [base, base + len) hold (SPARSE, DENSE); with give,
 * the residue's pages go back, one call for each run of granules between
 * dense ones. */
static unsigned look_granules(char *base, size_t len, bool give) {
    unsigned char vec[1024];
    size_t page = os_page_size(), pages = len / page, run = 0;
    unsigned seen = 0, run_seen = 0;
    for (size_t at = 0; at < pages; at += sizeof vec) {
        size_t k = pages - at < sizeof vec ? pages - at : sizeof vec;
        if (!os_resident_map(base + at * page, k, vec)) return seen | DENSE;
        for (size_t g = 0; g < k; g += RESIDUE_GRANULE_PAGES) {
            size_t n = k - g < RESIDUE_GRANULE_PAGES ? k - g : RESIDUE_GRANULE_PAGES, r = 0;
            for (size_t i = 0; i < n; i++) r += vec[g + i] & 1;
            if (r && r >= n - (n >> RESIDUE_DENSE_SHIFT)) {
                if (give && run_seen) os_zero_pages(base + run * page, (at + g - run) * page);
                seen |= DENSE, run_seen = 0, run = at + g + n;
            } else if (r) {
                seen |= SPARSE, run_seen = SPARSE;
                if (!give) return seen;
            }
        }
    }
    if (give && run_seen) os_zero_pages(base + run * page, (pages - run) * page);
    return seen;
}

/* Where the next look starts in the table, so that looks cover a table
 * longer than one look takes; next_look, when one is due. */
static size_t look_at;
static uint64_t next_look;

/* The pieces with residue found from look_at on, out of the table, at most
 * GONE_BATCH, looking at about *budget bytes (less what it looked at);
 * *end when the table's end came. */
static size_t take_residue(fit *taken, size_t *budget, bool *end) {
    size_t n = 0, step = RESIDUE_STEP_BYTES, i;
    pk_lock(&retain_lock);
    for (i = look_at < fit_count ? look_at : fit_count; i < fit_count && n < GONE_BATCH && step && *budget;) {
        fit *f = &fit_table[i];
        size_t looked = f->len < step ? f->len : step;
        step -= looked;
        *budget -= looked < *budget ? looked : *budget;
        if (f->dirty != CLEAN && (look_granules(f->base, f->len, false) & SPARSE)) taken[n++] = fits_remove(i);
        else i++;
    }
    *end = i >= fit_count;
    look_at = *end ? 0 : i;
    pk_unlock(&retain_lock);
    return n;
}

/* RESIDUE_SWEEP_BYTES of the pieces looked at, their residue given back
 * (RESIDUE_LOOK_MS). */
static void sweep_residue(void) {
    fit taken[GONE_BATCH];
    size_t budget = RESIDUE_SWEEP_BYTES;
    bool end = false;
    while (!end && budget) {
        size_t n = take_residue(taken, &budget, &end);
        for (size_t i = 0; i < n; i++) {
            /* not marked clean: a page swapped out reads as not resident */
            look_granules(taken[i].base, taken[i].len, true);
            put_back(taken[i]);
        }
    }
}

/* The look, where RESIDUE_LOOK_MS passed since the last; one thread
 * looks. */
static void look_if_due(uint64_t now) {
    uint64_t due = __atomic_load_n(&next_look, __ATOMIC_RELAXED);
    if (now >= due && os_fit_bytes() &&
        __atomic_compare_exchange_n(&next_look, &due, now + RESIDUE_LOOK_MS, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
        sweep_residue();
}

static void unmap_all(const fit *f, size_t n) {
    for (size_t i = 0; i < n; i++) os_unmap(f[i].base, f[i].len);
}

/* gone's *n fits unmapped, the lock dropped meanwhile, where GONE_BATCH
 * wait: whether they were (what the caller looked at may have changed).
 * Under the lock. */
static bool drained(fit *gone, size_t *n) {
    if (*n < GONE_BATCH) return false;
    pk_unlock(&retain_lock);
    unmap_all(gone, *n);
    *n = 0;
    pk_lock(&retain_lock);
    return true;
}

/* Fit i's last `over` bytes out of the table (all of it where it holds no
 * more): its front waits on. Under the lock. */
static fit take_tail(size_t i, size_t over) {
    if (over >= fit_table[i].len) return fits_remove(i);
    size_t left = fit_table[i].len - over;
    fit f = piece_of(fit_table[i].base + left, over, 0, CLEAN);
    fits_resize(i, fit_table[i].base, left);
    return f;
}

/* The entry that goes first when the table is full (the smallest: the
 * fewest pages lost) or past the bound (the oldest). Under the lock;
 * fit_count > 0. */
static size_t fit_victim(bool full) {
    if (full) return fits_shortest();
    size_t v = 0;
    for (size_t i = 1; i < fit_count; i++)
        if (fit_table[i].since < fit_table[v].since) v = i;
    return v;
}

static void unmap_later_fit(void *p, size_t len, fit_bound b, uint64_t dirty) {
    size_t bound = b.bytes, count = b.count < LARGE_KEEP_COUNT ? b.count : LARGE_KEEP_COUNT;
    __atomic_store_n(&last_bound.bytes, bound, __ATOMIC_RELAXED);
    __atomic_store_n(&last_bound.count, count, __ATOMIC_RELAXED);
    __atomic_store_n(&last_bound.gather, b.gather, __ATOMIC_RELAXED);
    if (TRACK_ENABLED || options_purge_delay_ms() <= 0 || len > bound || len > LARGE_KEEP_MAX) {
        os_unmap(p, len);
        return;
    }
    fit gone[GONE_BATCH];
    size_t n_gone = 0;
    /* LARGE_SPARSE_SHIFT: residue, or pages the next block reuses; one
     * free in LARGE_SPARSE_EVERY looks (a system call) */
    size_t sample = len / os_page_size() < LARGE_SPARSE_PAGES ? len / os_page_size() : LARGE_SPARSE_PAGES;
    bool look = dirty == WRITTEN && frees_seen++ % LARGE_SPARSE_EVERY == 0;
    size_t resident = look ? os_resident_pages(p, sample) : 0;
    bool sparse = look && resident && resident < sample >> LARGE_SPARSE_SHIFT;
    uint64_t now = os_now_ms();
    fit f = piece_of(p, len, now, dirty);
    pk_lock(&retain_lock);
    if (sparse) {
        f.dirty = round_no;
        residue += resident * os_page_size() * LARGE_SPARSE_EVERY;
        if (residue >= LARGE_RESIDUE_MAX) residue = 0, round_no++, decaying = true;
    }
    join_beside(&f);
    /* Room for it; joined past the bound alone, its front is kept to the
     * bound and the rest goes (a longest mapping, kept whole, would
     * otherwise take every neighbour it joined with it). */
    fit cut = piece_of(NULL, 0, 0, CLEAN);
    if (f.len > bound) {
        size_t keep_len = bound & ~(os_page_size() - 1);
        cut = piece_of(f.base + keep_len, f.len - keep_len, 0, CLEAN);
        f.len = keep_len;
    }
    bool keep = f.len > 0;
    while (keep && fit_count && (fit_count >= count || fit_bytes + f.len > bound)) {
        if (drained(gone, &n_gone)) continue;
        bool full = fit_count >= count;
        size_t v = fit_victim(full);
        /* past the count, the whole entry goes; past the bound, only as
         * much of it as the bound wants (its tail) */
        gone[n_gone++] = take_tail(v, full ? SIZE_MAX : align_up(fit_bytes + f.len - bound, os_page_size()));
    }
    if (keep) fit_add(f);
    fit stale = decay_due();
    pk_unlock(&retain_lock);
    if (!keep) os_unmap(f.base, f.len);
    if (cut.len) os_unmap(cut.base, cut.len);
    unmap_all(gone, n_gone);
    if (stale.base) decay(stale);
    look_if_due(now);
}

void os_unmap_later_fit(void *p, size_t len, fit_bound b) { unmap_later_fit(p, len, b, WRITTEN); }

void os_unmap_later_fit_resident(void *p, size_t len, fit_bound b) { unmap_later_fit(p, len, b, RESIDENT); }

/* ---- the purge ---- */

/* Unlinks the entries retained before `before` (all with UINT64_MAX) and
 * unmaps them outside the lock, the fits GONE_BATCH at a time; returns the
 * bytes. */
static size_t release_older(uint64_t before) {
    retained *gone = NULL;
    fit gone_fits[GONE_BATCH];
    size_t bytes = 0, n_fits;
    uint64_t left; /* the oldest entry kept */
    pk_lock(&retain_lock);
    do {
        n_fits = 0;
        left = UINT64_MAX;
        for (size_t i = 0; i < fit_count;) {
            if (n_fits < GONE_BATCH && (before == UINT64_MAX || fit_table[i].since < before)) {
                gone_fits[n_fits++] = fits_remove(i);
            } else {
                if (fit_table[i].since < left) left = fit_table[i].since;
                i++;
            }
        }
        if (n_fits == GONE_BATCH) {
            pk_unlock(&retain_lock);
            for (size_t i = 0; i < n_fits; i++) bytes += gone_fits[i].len;
            unmap_all(gone_fits, n_fits);
            pk_lock(&retain_lock);
        }
    } while (n_fits == GONE_BATCH);
    for (retained **link = &head, *r; (r = *link);) {
        if (before == UINT64_MAX || r->since < before) {
            *link = r->next;
            __atomic_store_n(&held, held - r->size, __ATOMIC_RELAXED);
            r->next = gone;
            gone = r;
        } else {
            if (r->since < left) left = r->since;
            link = &r->next;
        }
    }
    __atomic_store_n(&oldest, left, __ATOMIC_RELAXED);
    pk_unlock(&retain_lock);
    for (size_t i = 0; i < n_fits; i++) bytes += gone_fits[i].len;
    unmap_all(gone_fits, n_fits);
    while (gone) {
        retained *next = gone->next;
        bytes += gone->size;
        os_unmap(gone, gone->size);
        gone = next;
    }
    return bytes;
}

/* IDLE_ADAPT: the last purge by age judged (adapt_judge), under the lock,
 * once more is due to go: the bytes mapped fresh since against those it
 * gave back, the age of the oldest it took. Returns the delay then in
 * force. */
static uint64_t judge_purge(uint64_t base) {
    pk_lock(&retain_lock);
    adapt_judge(&keeping, __atomic_load_n(&fresh, __ATOMIC_RELAXED), base);
    unsigned shift = keeping.shift;
    __atomic_store_n(&keep_shift, shift, __ATOMIC_RELAXED);
    pk_unlock(&retain_lock);
    return base << shift;
}

void os_retain_tick(uint64_t now) {
    uint64_t base = (uint64_t)options_purge_delay_ms();
    look_if_due(now);
    uint64_t first = __atomic_load_n(&oldest, __ATOMIC_RELAXED);
    if (!os_retained_bytes() || now < first + (base << __atomic_load_n(&keep_shift, __ATOMIC_RELAXED))) return;
    uint64_t delay = judge_purge(base);
    if (now < first + delay) return;
    size_t bytes = release_older(now - delay + 1);
    pk_lock(&retain_lock);
    adapt_gave(&keeping, bytes, __atomic_load_n(&fresh, __ATOMIC_RELAXED), now - first);
    pk_unlock(&retain_lock);
}

size_t os_retain_release(void) {
    /* nothing kept is left to hold: the gives start afresh (FIT_GIVE_REGRET) */
    pk_lock(&retain_lock);
    memset(&owing, 0, sizeof owing);
    pk_unlock(&retain_lock);
    return release_older(UINT64_MAX);
}

size_t os_retained_bytes(void) {
    return __atomic_load_n(&held, __ATOMIC_RELAXED) + __atomic_load_n(&fit_bytes, __ATOMIC_RELAXED);
}

size_t os_fit_bytes(void) { return __atomic_load_n(&fit_bytes, __ATOMIC_RELAXED); }

/* The oldest fit that holds pages (not CLEAN), or FIT_NONE. Under the lock. */
static size_t oldest_written(void) {
    size_t v = FIT_NONE;
    for (size_t i = 0; i < fit_count; i++)
        if (fit_table[i].dirty != CLEAN && (v == FIT_NONE || fit_table[i].since < fit_table[v].since)) v = i;
    return v;
}

/* At least bytes of the written fits retained before `before`, the oldest
 * first, out of the table into gone (GONE_BATCH of them; more unmapped on
 * the way, the lock dropped meanwhile); *n_gone of them. The bytes taken.
 * Under the lock. */
static size_t give_oldest(size_t bytes, uint64_t before, fit *gone, size_t *n_gone) {
    size_t given = 0;
    for (size_t v; given < bytes && (v = oldest_written()) != FIT_NONE && fit_table[v].since < before;) {
        if (drained(gone, n_gone)) continue;
        gone[(*n_gone)++] = take_tail(v, align_up(bytes - given, os_page_size()));
        given += gone[*n_gone - 1].len;
    }
    return given;
}

_Static_assert(IDLE_SHIFT_MAX == 4, "docs/alloc.md: the gives' pause grows to 16 times the purge delay");

size_t os_fit_owe(size_t bytes, uint64_t now) {
    fit gone[GONE_BATCH];
    size_t n_gone = 0, given = 0;
    pk_lock(&retain_lock);
    uint64_t made = __atomic_load_n(&fits_fresh, __ATOMIC_RELAXED);
    if (owing.gone && 2 * (made - owing.mark) >= owing.gone) {
        owing.resume = now + ((uint64_t)options_purge_delay_ms() << owing.shift);
        if (owing.shift < IDLE_SHIFT_MAX) owing.shift++;
        owing.gone = 0;
    }
    if (now >= owing.resume) {
        if (!owing.gone) owing.mark = made;
        uint64_t idle = (uint64_t)options_purge_delay_ms() >> FIT_GIVE_IDLE_SHIFT;
        given = give_oldest(bytes, now >= idle ? now - idle + 1 : 0, gone, &n_gone);
        owing.gone += given;
    }
    pk_unlock(&retain_lock);
    unmap_all(gone, n_gone);
    return given;
}

bool retain_charge(size_t size) {
    pk_lock(&retain_lock);
    bool ok = held + size <= RETAIN_BYTES;
    if (ok) __atomic_store_n(&held, held + size, __ATOMIC_RELAXED);
    pk_unlock(&retain_lock);
    return ok;
}

void retain_uncharge(size_t size) {
    pk_lock(&retain_lock);
    __atomic_store_n(&held, held - size, __ATOMIC_RELAXED);
    pk_unlock(&retain_lock);
}

void os_fork_lock(void) { pk_lock(&retain_lock); }
void os_fork_unlock(void) { pk_unlock(&retain_lock); }
