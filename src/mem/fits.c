/* The kept pieces' table: storage, the bins by length, the tables by
 * address (fits.h states the invariants). A table of a few pieces is read
 * by a look at each, which costs less than the index's upkeep: the index
 * is built once the table passes INDEX_FROM pieces and dropped below
 * INDEX_UNTIL, the gap between them so that a table near one bound does
 * not build and drop it at each call. */
#include "mem/fits.h"

#define INDEX_FROM FITS_INDEX_FROM
#define INDEX_UNTIL 32
/* The pieces added last that an aligned request looks at before the bins. */
#define ALIGNED_RECENT 4
_Static_assert(INDEX_UNTIL < INDEX_FROM && INDEX_FROM < LARGE_KEEP_COUNT, "the index's bounds");

fit fit_table[LARGE_KEEP_COUNT] PK_BIG_TABLE;
size_t fit_count, fit_bytes;
bool fit_indexed;

/* ---- by length ---- */

/* A quarter of a doubling each: a bin's pieces differ in length by less
 * than a quarter, so a list is short unless many pieces have nearly one
 * length (then its exact length ends the look at once). */
#define BIN_STEPS 4
#define BINS (64 * BIN_STEPS)
#define BIN_WORDS (BINS / 64)

static uint32_t bin_head[BINS];
static uint64_t fit_bins[BIN_WORDS];

static size_t fit_bin(size_t len) {
    len = len > BIN_STEPS ? len : BIN_STEPS; /* no shift goes negative */
    unsigned lg = 63u - (unsigned)__builtin_clzll((unsigned long long)len);
    return lg * BIN_STEPS + ((len >> (lg - 2)) & (BIN_STEPS - 1));
}

static void bin_link(size_t i) {
    size_t b = fit_bin(fit_table[i].len);
    uint32_t first = bin_head[b];
    fit_table[i].prev = 0;
    fit_table[i].next = first;
    if (first) fit_table[first - 1].prev = (uint32_t)i + 1;
    bin_head[b] = (uint32_t)i + 1;
    fit_bins[b / 64] |= 1ull << (b % 64);
}

static void bin_unlink(size_t i) {
    size_t b = fit_bin(fit_table[i].len);
    uint32_t prev = fit_table[i].prev, next = fit_table[i].next;
    if (prev) fit_table[prev - 1].next = next;
    else bin_head[b] = next;
    if (next) fit_table[next - 1].prev = prev;
    if (!bin_head[b]) fit_bins[b / 64] &= ~(1ull << (b % 64));
}

/* The first bin from b up with a piece, or BINS. */
static size_t bin_from(size_t b) {
    for (size_t w = b / 64; b < BINS && w < BIN_WORDS; w++, b = w * 64) {
        uint64_t bits = fit_bins[w] & (~0ull << (b % 64));
        if (bits) return w * 64 + (size_t)__builtin_ctzll(bits);
    }
    return BINS;
}

/* The last bin with a piece, or BINS. */
static size_t bin_last(void) {
    for (size_t w = BIN_WORDS; w-- > 0;)
        if (fit_bins[w]) return w * 64 + 63 - (size_t)__builtin_clzll(fit_bins[w]);
    return BINS;
}

/* Bin b's piece of the least length at least need (longest: the greatest
 * length), or FIT_NONE. */
static size_t bin_pick(size_t b, size_t need, bool longest) {
    size_t pick = FIT_NONE;
    for (uint32_t k = bin_head[b]; k; k = fit_table[k - 1].next) {
        size_t len = fit_table[k - 1].len;
        if (len < need) continue;
        if (pick == FIT_NONE || (longest ? len > fit_table[pick].len : len < fit_table[pick].len)) pick = k - 1;
        if (len == need && !longest) break;
    }
    return pick;
}

/* ---- a look at every piece (a table of a few, no index) ---- */

/* The piece of the least length at least need (longest: the greatest). A
 * length too short becomes SIZE_MAX without a branch (lengths at random
 * either side of need defeat the branch predictor). */
static size_t scan_pick(size_t need, bool longest) {
    size_t pick = FIT_NONE, best = longest ? 0 : SIZE_MAX;
    for (size_t i = 0; i < fit_count; i++) {
        size_t len = fit_table[i].len, key = len | -(size_t)(len < need);
        if (longest ? len > best : key < best) best = longest ? len : key, pick = i;
    }
    return pick == FIT_NONE || fit_table[pick].len >= need ? pick : FIT_NONE;
}

static size_t scan_at(const char *key) {
    for (size_t i = 0; i < fit_count; i++)
        if (fit_table[i].base == key) return i;
    return FIT_NONE;
}

size_t fits_best(size_t need) {
    if (!fit_indexed) return scan_pick(need, false);
    size_t b = fit_bin(need), pick = bin_pick(b, need, false);
    if (pick != FIT_NONE) return pick;
    b = bin_from(b + 1);
    return b < BINS ? bin_pick(b, 0, false) : FIT_NONE;
}

size_t fits_longest(void) {
    if (!fit_indexed) return scan_pick(0, true);
    size_t b = bin_last();
    return b < BINS ? bin_pick(b, 0, true) : FIT_NONE;
}

size_t fits_shortest(void) {
    if (!fit_indexed) return scan_pick(0, false);
    size_t b = bin_from(0);
    return b < BINS ? bin_pick(b, 0, false) : FIT_NONE;
}

/* The first piece of bins [from, to) that fits_hold_aligned, or FIT_NONE. */
static size_t bins_aligned(size_t from, size_t to, size_t len, size_t align) {
    for (size_t b = bin_from(from); b < to; b = bin_from(b + 1))
        for (uint32_t k = bin_head[b]; k; k = fit_table[k - 1].next)
            if (fits_hold_aligned(k - 1, len, align)) return k - 1;
    return FIT_NONE;
}

size_t fits_aligned_indexed(size_t len, size_t align) {
    /* the pieces added last first, as without the index: a block freed
     * and made again in the same shape finds its own mapping at once */
    for (size_t i = fit_count, recent = ALIGNED_RECENT; i-- > 0 && recent-- > 0;)
        if (fits_hold_aligned(i, len, align)) return i;
    /* then the bins of pieces long enough wherever they start, then the
     * shorter ones, which may start well */
    size_t sure = fit_bin(len + align - os_page_size()) + 1, i = bins_aligned(sure, BINS, len, align);
    return i != FIT_NONE ? i : bins_aligned(fit_bin(len), sure, len, align);
}

/* ---- by address ---- */

#define ADDR_SLOTS (2 * LARGE_KEEP_COUNT)
_Static_assert((ADDR_SLOTS & (ADDR_SLOTS - 1)) == 0, "the address tables' slots are a power of two");

/* [0] by base, [1] by end. */
static uint32_t at_addr[2][ADDR_SLOTS] PK_BIG_TABLE;

static const char *key_of(size_t i, int end) { return fit_table[i].base + (end ? fit_table[i].len : 0); }

static size_t addr_hash(const char *a) {
    uint64_t h = ((uint64_t)(uintptr_t)a >> 12) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> (64 - __builtin_ctzll(ADDR_SLOTS)));
}

static size_t addr_find(const char *key, int end) {
    for (size_t h = addr_hash(key);; h = (h + 1) % ADDR_SLOTS) {
        uint32_t k = at_addr[end][h];
        if (!k) return FIT_NONE;
        if (key_of(k - 1, end) == key) return k - 1;
    }
}

static void addr_put(size_t i, int end) {
    size_t h = addr_hash(key_of(i, end));
    while (at_addr[end][h]) h = (h + 1) % ADDR_SLOTS;
    at_addr[end][h] = (uint32_t)i + 1;
}

/* The slot that holds piece i (its key as the piece has it now). */
static size_t addr_slot(size_t i, int end) {
    size_t h = addr_hash(key_of(i, end));
    while (at_addr[end][h] != i + 1) h = (h + 1) % ADDR_SLOTS;
    return h;
}

/* Empties piece i's slot and moves back each later one of its probe chain
 * that may fill the hole (its own slot not cyclically within the hole and
 * it). */
static void addr_drop(size_t i, int end) {
    size_t hole = addr_slot(i, end);
    for (size_t j = (hole + 1) % ADDR_SLOTS; at_addr[end][j]; j = (j + 1) % ADDR_SLOTS) {
        size_t home = addr_hash(key_of(at_addr[end][j] - 1, end));
        if ((j - home) % ADDR_SLOTS >= (j - hole) % ADDR_SLOTS) {
            at_addr[end][hole] = at_addr[end][j];
            hole = j;
        }
    }
    at_addr[end][hole] = 0;
}

size_t fits_starting(const char *base) { return fit_indexed ? addr_find(base, 0) : scan_at(base); }

size_t fits_beside_indexed(const char *base, size_t len) {
    size_t i = addr_find(base, 1);
    return i != FIT_NONE ? i : addr_find(base + len, 0);
}

/* ---- the table ---- */

static void index_in(size_t i) {
    bin_link(i);
    addr_put(i, 0);
    addr_put(i, 1);
}

static void index_out(size_t i) {
    bin_unlink(i);
    addr_drop(i, 0);
    addr_drop(i, 1);
}

/* INDEX_FROM: every piece indexed. */
static void index_build(void) {
    fit_indexed = true;
    for (size_t i = 0; i < fit_count; i++) index_in(i);
}

/* INDEX_UNTIL: the index emptied, slot by slot (no table-wide clear). */
static void index_drop(void) {
    for (size_t i = 0; i < fit_count; i++) {
        size_t b = fit_bin(fit_table[i].len);
        bin_head[b] = 0;
        fit_bins[b / 64] = 0;
        at_addr[0][addr_slot(i, 0)] = 0;
        at_addr[1][addr_slot(i, 1)] = 0;
    }
    fit_indexed = false;
}

void fits_add_indexed(fit f) {
    size_t i = fit_count++;
    fit_table[i] = f;
    if (fit_indexed) index_in(i);
    else index_build();
    __atomic_store_n(&fit_bytes, fit_bytes + f.len, __ATOMIC_RELAXED);
}

fit fits_remove_indexed(size_t i) {
    fit f = fit_table[i];
    size_t last = --fit_count;
    if (fit_count < INDEX_UNTIL) {
        fit_count++; /* drops what is indexed, the piece leaving included */
        index_drop();
        fit_table[i] = fit_table[--fit_count];
    } else {
        index_out(i);
    }
    if (fit_indexed && i != last) {
        /* the last piece moves to i: whatever names it names i */
        uint32_t prev = fit_table[last].prev, next = fit_table[last].next;
        if (prev) fit_table[prev - 1].next = (uint32_t)i + 1;
        else bin_head[fit_bin(fit_table[last].len)] = (uint32_t)i + 1;
        if (next) fit_table[next - 1].prev = (uint32_t)i + 1;
        at_addr[0][addr_slot(last, 0)] = (uint32_t)i + 1;
        at_addr[1][addr_slot(last, 1)] = (uint32_t)i + 1;
        fit_table[i] = fit_table[last];
    }
    __atomic_store_n(&fit_bytes, fit_bytes - f.len, __ATOMIC_RELAXED);
    return f;
}

void fits_resize(size_t i, char *base, size_t len) {
    fit *f = &fit_table[i];
    size_t was = f->len;
    if (!fit_indexed) {
        f->base = base;
        f->len = len;
        __atomic_store_n(&fit_bytes, fit_bytes - was + len, __ATOMIC_RELAXED);
        return;
    }
    /* what is the same stays indexed: a front taken keeps the end, a tail
     * cut keeps the base, and most cuts keep the bin */
    bool bin = fit_bin(len) != fit_bin(was), at_base = base != f->base, at_end = base + len != f->base + was;
    if (bin) bin_unlink(i);
    if (at_base) addr_drop(i, 0);
    if (at_end) addr_drop(i, 1);
    f->base = base;
    f->len = len;
    if (bin) bin_link(i);
    if (at_base) addr_put(i, 0);
    if (at_end) addr_put(i, 1);
    __atomic_store_n(&fit_bytes, fit_bytes - was + len, __ATOMIC_RELAXED);
}

/* ---- the validator ---- */

/* Whether the index says what fits.h states: with it, each piece once on
 * its bin's list and in each address table, a bin's bit set while its list
 * is not empty, nothing else in them; without it, nothing at all. For the
 * tests (the whole table and index read). */
bool fits_valid(void) {
    size_t listed = 0, slots[2] = {0, 0}, bytes = 0;
    for (size_t i = 0; i < fit_count; i++) bytes += fit_table[i].len;
    for (size_t b = 0; b < BINS; b++) {
        bool bit = (fit_bins[b / 64] >> (b % 64)) & 1;
        if (bit != (bin_head[b] != 0)) return false;
        uint32_t prev = 0;
        for (uint32_t k = bin_head[b]; k; prev = k, k = fit_table[k - 1].next) {
            if (k > fit_count || fit_table[k - 1].prev != prev || fit_bin(fit_table[k - 1].len) != b) return false;
            if (++listed > fit_count) return false;
        }
    }
    for (int end = 0; end < 2; end++)
        for (size_t h = 0; h < ADDR_SLOTS; h++) {
            uint32_t k = at_addr[end][h];
            if (!k) continue;
            if (k > fit_count || addr_find(key_of(k - 1, end), end) != k - 1) return false;
            slots[end]++;
        }
    size_t want = fit_indexed ? fit_count : 0;
    return bytes == fit_bytes && listed == want && slots[0] == want && slots[1] == want;
}
