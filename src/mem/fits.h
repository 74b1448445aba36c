/* The kept pieces' table (retain.c's fits): freed large blocks' mappings
 * of any length, in one array, found without a look at every piece. A
 * program that replaces some of thousands of large blocks keeps a piece in
 * nearly every gap between two of them, and each of its allocations and
 * frees wants the smallest piece that holds a length and the pieces just
 * before and after an address.
 *
 * Invariants:
 * - fit_table[0, fit_count) are the pieces, disjoint and not empty; a
 *   removal moves the last piece into the gap (indexes change).
 * - While fit_indexed (a table of more than a few pieces: fits.c), by
 *   length: each piece is on the list of its bin (a quarter of a doubling
 *   of lengths, fit_bin), linked by its prev and next (index + 1, 0
 *   ending the list); a bin's bit in fit_bins is set while its list is
 *   not empty. Within a bin lengths are in no order. By address: each
 *   piece's base is in one open-addressing table and its end in another
 *   (linear probing, index + 1, 0 for a free slot; a removal shifts the
 *   probe chain back, so there are no tombstones). Otherwise the bins and
 *   the tables are empty and every find looks at each piece.
 * - fit_bytes is the pieces' lengths summed (relaxed stores: read without
 *   the lock).
 * Nothing here locks: retain.c's lock covers every call and every read of
 * fit_table. */
#ifndef POOLKIT_MEM_FITS_H
#define POOLKIT_MEM_FITS_H

#include "base/internal.h"
#include "base/policy.h"

typedef struct fit {
    char *base;
    size_t len;
    uint64_t since; /* retain.c's: when its oldest part came */
    uint64_t dirty; /* retain.c's: what its pages may hold */
    uint32_t prev, next; /* the table's: its bin's list */
} fit;

/* No piece (what the finds return for none). */
#define FIT_NONE SIZE_MAX

extern fit fit_table[LARGE_KEEP_COUNT];
extern size_t fit_count, fit_bytes;
/* Whether the index is kept: from more than FITS_INDEX_FROM pieces on
 * (fits.c says why), until the table falls under half as many. */
extern bool fit_indexed;
#define FITS_INDEX_FROM 64

void fits_add_indexed(fit f);
fit fits_remove_indexed(size_t i);

/* Adds f (room made: fit_count < LARGE_KEEP_COUNT). Inline where no index
 * is kept (a program with few large blocks: the usual case). */
static inline void fits_add(fit f) {
    if (fit_indexed || fit_count >= FITS_INDEX_FROM) {
        fits_add_indexed(f);
        return;
    }
    fit_table[fit_count++] = f;
    __atomic_store_n(&fit_bytes, fit_bytes + f.len, __ATOMIC_RELAXED);
}

/* Takes piece i out of the table and returns it; the last piece moves to i. */
static inline fit fits_remove(size_t i) {
    if (fit_indexed) return fits_remove_indexed(i);
    fit f = fit_table[i];
    fit_table[i] = fit_table[--fit_count];
    __atomic_store_n(&fit_bytes, fit_bytes - f.len, __ATOMIC_RELAXED);
    return f;
}
/* Piece i now spans [base, base + len), within what it spanned, not empty. */
void fits_resize(size_t i, char *base, size_t len);

/* The smallest piece of at least need bytes (one of exactly need at once). */
size_t fits_best(size_t need);
/* The longest piece; the shortest. */
size_t fits_longest(void);
size_t fits_shortest(void);
/* The piece that starts at base. */
size_t fits_starting(const char *base);
size_t fits_beside_indexed(const char *base, size_t len);
size_t fits_aligned_indexed(size_t len, size_t align);

/* A piece that ends at base or starts at base + len; without the index,
 * the first from index from on (a caller that takes each it finds out of
 * the table looks on from where the last one was: the piece that took its
 * place comes next). */
static inline size_t fits_beside(const char *base, size_t len, size_t from) {
    if (fit_indexed) return fits_beside_indexed(base, len);
    for (size_t i = from; i < fit_count; i++)
        if (fit_table[i].base + fit_table[i].len == base || fit_table[i].base == base + len) return i;
    return FIT_NONE;
}

/* Whether piece i holds len bytes at an address aligned to align, with
 * room in the table for a second entry where it leaves pieces on both
 * sides. */
static inline bool fits_hold_aligned(size_t i, size_t len, size_t align) {
    uintptr_t base = (uintptr_t)fit_table[i].base, at = align_up(base, align);
    size_t have = fit_table[i].len;
    if (at - base > have || have - (at - base) < len) return false;
    return at == base || have - (at - base) == len || fit_count < LARGE_KEEP_COUNT;
}

/* A piece that fits_hold_aligned: the pieces added last first (a block
 * freed and made again in the same shape finds its own mapping at once),
 * then, with the index, the bins of pieces long enough wherever they
 * start, then the shorter ones. */
static inline size_t fits_aligned(size_t len, size_t align) {
    if (fit_indexed) return fits_aligned_indexed(len, align);
    for (size_t i = fit_count; i-- > 0;)
        if (fits_hold_aligned(i, len, align)) return i;
    return FIT_NONE;
}

/* Whether the table and its index keep these invariants (the tests). */
bool fits_valid(void);

#endif
