/* The kept pieces' table (src/mem/fits.c), white-box: random additions,
 * removals and cuts against a plain list, each answer of the table checked
 * against a look at every piece. The pieces are address ranges only (the
 * table never touches the memory), spread so that some lie side by side.
 * Nothing else in this program frees a large block, so the table is the
 * test's alone, under retain.c's lock. */
#include "support.h"

#include <algorithm>
#include <cstdint>
#include <vector>

extern "C" {
#include "mem/fits.h"
}

using namespace pktest;

namespace {

constexpr size_t page = 4096;

struct Piece {
    char *base;
    size_t len;
};

struct Model {
    std::vector<Piece> pieces;

    size_t best(size_t need) const {
        size_t pick = SIZE_MAX;
        for (const Piece &p : pieces)
            if (p.len >= need && p.len < pick) pick = p.len;
        return pick;
    }
    size_t longest() const {
        size_t most = 0;
        for (const Piece &p : pieces) most = std::max(most, p.len);
        return most;
    }
    size_t shortest() const {
        size_t least = SIZE_MAX;
        for (const Piece &p : pieces) least = std::min(least, p.len);
        return least;
    }
    size_t bytes() const {
        size_t n = 0;
        for (const Piece &p : pieces) n += p.len;
        return n;
    }
    Piece *at(const char *base) {
        for (Piece &p : pieces)
            if (p.base == base) return &p;
        return nullptr;
    }
};

fit piece(char *base, size_t len) {
    fit f{};
    f.base = base;
    f.len = len;
    f.since = UINT64_MAX; /* never old: no purge takes it */
    return f;
}

/* Lengths a few pages to many MiB, many of them equal (one bin, one list). */
size_t draw_len(Rng &rng) {
    if (rng.chance(30)) return 64 * page;
    return page * (1 + rng.below(rng.chance(50) ? 64 : 16384));
}

/* Whether [base, base + len) holds len bytes at an address aligned to
 * align, the table with room for a second entry where needed. */
bool holds_aligned(const char *base, size_t have, size_t len, size_t align) {
    uintptr_t b = reinterpret_cast<uintptr_t>(base), at = (b + align - 1) & ~(uintptr_t)(align - 1);
    if (at - b > have || have - (at - b) < len) return false;
    return at == b || have - (at - b) == len || fit_count < LARGE_KEEP_COUNT;
}

void check(const Model &m, Rng &rng) {
    ASSERT_EQ(fit_count, m.pieces.size());
    ASSERT_EQ(fit_bytes, m.bytes());
    size_t need = draw_len(rng), i = fits_best(need), want = m.best(need);
    if (want == SIZE_MAX) ASSERT_EQ(i, FIT_NONE) << "a piece for " << need << " bytes where none holds them";
    else ASSERT_EQ(i == FIT_NONE ? 0 : fit_table[i].len, want) << "not the smallest piece of " << need << " bytes";
    if (m.pieces.empty()) {
        ASSERT_EQ(fits_longest(), FIT_NONE);
        ASSERT_EQ(fits_shortest(), FIT_NONE);
        return;
    }
    ASSERT_EQ(fit_table[fits_longest()].len, m.longest());
    ASSERT_EQ(fit_table[fits_shortest()].len, m.shortest());
    const Piece &p = m.pieces[rng.below(m.pieces.size())];
    /* lengths about a piece's own, and past most (the bins above it) */
    for (size_t want_len : {p.len, p.len + 1, p.len + page * rng.below(64), page * (1 + rng.below(m.longest() / page))}) {
        i = fits_best(want_len);
        size_t best = m.best(want_len);
        if (best == SIZE_MAX) {
            ASSERT_EQ(i, FIT_NONE) << want_len;
        } else {
            ASSERT_NE(i, FIT_NONE) << "no piece for " << want_len << " bytes";
            ASSERT_EQ(fit_table[i].len, best) << want_len;
        }
    }
    i = fits_starting(p.base);
    ASSERT_NE(i, FIT_NONE);
    ASSERT_EQ(fit_table[i].base, p.base);
    i = fits_beside(p.base + p.len, 1, 0); /* nothing starts a byte later */
    ASSERT_NE(i, FIT_NONE);
    ASSERT_EQ(fit_table[i].base, p.base) << "not the piece that ends there";
    i = fits_beside(p.base - 1, 1, 0); /* nothing ends a byte before */
    ASSERT_NE(i, FIT_NONE);
    ASSERT_EQ(fit_table[i].base, p.base) << "not the piece that starts there";
    if (p.len > page) {
        ASSERT_EQ(fits_starting(p.base + page), FIT_NONE) << "a piece found inside another";
    }
    size_t align = page << rng.below(11);
    i = fits_aligned(need, align);
    bool any = std::any_of(m.pieces.begin(), m.pieces.end(),
                           [&](const Piece &q) { return holds_aligned(q.base, q.len, need, align); });
    ASSERT_EQ(i != FIT_NONE, any) << need << " bytes at " << align;
    if (i != FIT_NONE) {
        ASSERT_TRUE(holds_aligned(fit_table[i].base, fit_table[i].len, need, align));
    }
}

} // namespace

/* retain.c's lock, held as retain.c holds it around every call: a purge
 * on another thread waits. */
struct RetainLocked {
    RetainLocked() { os_fork_lock(); }
    ~RetainLocked() { os_fork_unlock(); }
};

TEST(Fits, EveryAnswerIsThePlainLooksAfterRandomChanges) {
    RetainLocked locked;
    ASSERT_EQ(fit_count, 0u) << "something else kept a piece";
    Rng rng(11);
    Model m;
    /* slots 64 MiB apart, each holding one piece or two side by side */
    char *const area = reinterpret_cast<char *>(uintptr_t(1) << 44);
    const size_t slot_bytes = size_t(64) << 20;
    std::vector<size_t> free_slots, in_slot(LARGE_KEEP_COUNT, 0);
    for (size_t k = 0; k < LARGE_KEEP_COUNT; k++) free_slots.push_back(k);
    auto slot_of = [&](const char *base) { return static_cast<size_t>(base - area) / slot_bytes; };
    const int steps = running_under_valgrind() ? 12000 : 60000; /* the model's looks are slow there */
    for (int step = 0; step < steps; step++) {
        /* phases that fill the table to the brim and phases that empty it */
        unsigned grow_percent = (step / 6000) % 2 == 0 ? 60 : 25;
        bool room = fit_count + 2 <= LARGE_KEEP_COUNT && !free_slots.empty();
        unsigned op = static_cast<unsigned>(rng.below(100));
        if (fit_count == 0 || (room && op < grow_percent)) {
            size_t s = rng.below(free_slots.size());
            size_t k = free_slots[s];
            free_slots[s] = free_slots.back();
            free_slots.pop_back();
            char *slot = area + k * slot_bytes;
            size_t a = std::min(draw_len(rng), size_t(32) << 20), b = std::min(draw_len(rng), size_t(32) << 20);
            fits_add(piece(slot, a));
            m.pieces.push_back({slot, a});
            fits_add(piece(slot + a, b)); /* its neighbour, side by side */
            m.pieces.push_back({slot + a, b});
            in_slot[k] = 2;
        } else if (op % 2 == 0) {
            fit f = fits_remove(rng.below(fit_count));
            auto it = std::find_if(m.pieces.begin(), m.pieces.end(), [&](const Piece &p) { return p.base == f.base; });
            ASSERT_NE(it, m.pieces.end());
            ASSERT_EQ(it->len, f.len);
            m.pieces.erase(it);
            if (--in_slot[slot_of(f.base)] == 0) free_slots.push_back(slot_of(f.base));
        } else {
            size_t i = rng.below(fit_count);
            fit f = fit_table[i];
            if (f.len == page) continue;
            size_t cut = page * (1 + rng.below(f.len / page - 1));
            Piece *p = m.at(f.base);
            ASSERT_NE(p, nullptr);
            if (rng.chance(50)) { /* its front taken */
                fits_resize(i, f.base + cut, f.len - cut);
                p->base += cut;
            } else { /* its tail */
                fits_resize(i, f.base, f.len - cut);
            }
            p->len -= cut;
        }
        check(m, rng);
        if (step % 128 == 0) {
            ASSERT_TRUE(fits_valid()) << "after step " << step;
        }
        if (HasFatalFailure()) return;
    }
    while (fit_count) fits_remove(fit_count - 1);
    EXPECT_EQ(fit_bytes, 0u);
    EXPECT_TRUE(fits_valid()) << "an index left behind";
}
