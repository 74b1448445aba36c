/* Slabs of slots too big for a place, past the mappings of their own
 * (HUGE_OWN_MAX, policy.h): runs of places in shared regions (region.c).
 * A program that holds many blocks of 64 KiB to 1 MiB must neither fail
 * at the system's cap on mappings nor have two blocks share a byte, and
 * runs, single places and kept (backed) places must serve one another.
 * Single-threaded, and counting mappings: not under ThreadSanitizer, whose
 * build gives a place back by mapping it afresh (region.c), a mapping of
 * its own each time.
 * POOLKIT_TEST_LABELS: novalgrind notsan */
#include "support.h"

#include <poolkit/alloc.h>
#include <poolkit/pool.h>
#include <poolkit/stats.h>

#include <cstring>
#include <cstdio>
#include <map>

#include <unistd.h>

extern "C" {
#include "base/internal.h"
#include "base/policy.h"
size_t region_kept_bytes(void); /* mem/region.h, which is C only */
}

using namespace pktest;

namespace {

/* The process's address space now (its mappings' bytes), 0 if unknown. */
size_t vsz_bytes() {
    FILE *f = std::fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f && std::fscanf(f, "%lu", &pages) != 1) pages = 0;
    if (f) std::fclose(f);
    return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

/* The library's one-time reservations (its pool records' area, the size
 * classes' pools) made before a test takes its measures. */
void warm_up() {
    pk_free(pk_alloc(70000));
    pk_collect(1);
}

/* After every block is freed, pk_collect(1) gives back every place and
 * mapping the blocks took: no place of a run stays taken or kept, and the
 * address space they took goes back but for the address map's leaves
 * (never given back: region.c) and what retain.c keeps. Adjacent regions
 * are one mapping to the system, so the address space is what tells. */
void expect_all_back(long before, size_t vsz, const char *what) {
    pk_collect(1);
    EXPECT_EQ(region_kept_bytes(), 0u) << what;
    long left = mapping_count() - before; /* a sanitizer's own come and go */
    EXPECT_LT(left, 64) << what << ": " << left << " mappings left";
    size_t now = vsz_bytes();
    EXPECT_LT(now, vsz + (size_t(64) << 20)) << what << ": " << ((now - vsz) >> 20) << " MiB of address space left";
}

/* A block's first and last 16 bytes and a word in its middle, keyed: a
 * block that shares a byte with another shows it. */
void mark(char *p, size_t size, uint64_t key) {
    size_t edge = size < 32 ? size / 2 : 16;
    fill_pattern(p, edge, key);
    fill_pattern(p + size - edge, edge, key + 1);
    if (size >= 64) fill_pattern(p + size / 2, 8, key + 2);
}

bool marked(const char *p, size_t size, uint64_t key) {
    size_t edge = size < 32 ? size / 2 : 16;
    return check_pattern(p, edge, key) == edge && check_pattern(p + size - edge, edge, key + 1) == edge &&
           (size < 64 || check_pattern(p + size / 2, 8, key + 2) == 8);
}

} // namespace

/* Past the mappings of their own, blocks of the classes over a place
 * (80 KiB and 256 KiB slots here) share regions: HUGE_OWN_MAX + 3,000 live
 * take about HUGE_OWN_MAX mappings, not one each. */
TEST(BigSlots, PastTheOwnMappingsBlocksShareRegions) {
    static_assert(PK_ALLOC_CLASS_MAX > 200000 && 200000 > SLAB_BYTES, "200,000 B is a class over a place");
    warm_up();
    for (size_t size : {size_t(70000), size_t(200000)}) {
        const size_t n = HUGE_OWN_MAX + 3000;
        long before = mapping_count();
        size_t vsz = vsz_bytes();
        std::vector<char *> live;
        for (size_t i = 0; i < n; i++) {
            char *p = static_cast<char *>(pk_alloc(size));
            ASSERT_NE(p, nullptr) << "size " << size << " block " << i;
            mark(p, size, i);
            live.push_back(p);
        }
        long grew = mapping_count() - before; /* signed: other mappings come and go too */
        EXPECT_LT(grew, static_cast<long>(HUGE_OWN_MAX + 3000 / 4))
            << "size " << size << ": " << n << " blocks took " << grew << " mappings";
        /* the blocks made past the own mappings (runs) freed but every 16th,
         * which keeps their regions mapped: the pages they touched (first,
         * middle and last; the last in another place of the run than the
         * others) go back */
        size_t rss = rss_bytes(), freed = 0;
        for (size_t i = HUGE_OWN_MAX; i < n; i++) {
            if (i % 16 == 0) continue;
            ASSERT_TRUE(marked(live[i], size, i)) << "size " << size << " block " << i;
            pk_free(live[i]);
            freed++;
        }
        pk_collect(1);
        size_t dropped = rss > rss_bytes() ? rss - rss_bytes() : 0;
        EXPECT_GT(dropped, freed * 3 * page_size() * 9 / 10)
            << "size " << size << ": " << freed << " blocks freed, " << (dropped >> 10) << " KiB resident less";
        for (size_t i = HUGE_OWN_MAX; i < n; i++) {
            if (i % 16 == 0) continue;
            live[i] = static_cast<char *>(pk_alloc(size));
            ASSERT_NE(live[i], nullptr);
            mark(live[i], size, i);
        }
        /* every other one freed and taken again: runs and mappings reused */
        for (size_t i = 0; i < n; i += 2) {
            ASSERT_TRUE(marked(live[i], size, i)) << "size " << size << " block " << i;
            pk_free(live[i]);
        }
        for (size_t i = 0; i < n; i += 2) {
            live[i] = static_cast<char *>(pk_alloc(size));
            ASSERT_NE(live[i], nullptr);
            mark(live[i], size, i + n);
        }
        for (size_t i = 0; i < n; i++) {
            ASSERT_TRUE(marked(live[i], size, i % 2 ? i : i + n)) << "size " << size << " block " << i;
            pk_free(live[i]);
        }
        expect_all_back(before, vsz, size == 70000 ? "70,000 B blocks" : "200,000 B blocks");
    }
}

/* Random blocks of every kind of slab (single places, runs of 2 to 16
 * places from the classes and from typed pools of 600 KiB and 1 MiB
 * objects), past HUGE_OWN_MAX mappings of their own (a ballast of 80 KiB
 * blocks), allocated and freed against a model; now and then a typed pool
 * is destroyed (its places kept) and made again, or the kept places go
 * back (pk_pool_release_cache). No block loses a byte to another, the
 * mappings stay about HUGE_OWN_MAX, and all goes back at the end. */
TEST(BigSlots, RunsPlacesAndKeptPlacesAgainstAModel) {
    PurgeDelay delay(60000); /* places are kept only with a delay */
    warm_up();
    long before = mapping_count();
    size_t vsz = vsz_bytes();
    std::vector<void *> ballast;
    for (size_t i = 0; i < HUGE_OWN_MAX; i++) {
        ballast.push_back(pk_alloc(70000));
        ASSERT_NE(ballast.back(), nullptr);
    }
    PoolPtr p600 = make_pool(600 << 10, 0, 0, "runs600k");
    PoolPtr p1m = make_pool(1 << 20, 0, 0, "runs1m");
    struct block {
        size_t size;
        pk_pool *pool;
        uint64_t key;
    };
    std::map<char *, block> model;
    static const size_t sizes[] = {24, 3000, 40000, 70000, 140000, 250000};
    Rng rng(20261205);
    const size_t ops = scaled(30000, 3000);
    for (size_t op = 0; op < ops; op++) {
        if (model.size() < 1500 && (model.empty() || rng.chance(55))) {
            size_t kind = rng.below(8);
            block b{0, nullptr, op * 3};
            char *q;
            if (kind < 6) {
                b.size = sizes[kind];
                q = static_cast<char *>(pk_alloc(b.size));
            } else {
                b.pool = kind == 6 ? p600.get() : p1m.get();
                b.size = kind == 6 ? 600 << 10 : 1 << 20;
                q = static_cast<char *>(pk_pool_alloc(b.pool));
            }
            ASSERT_NE(q, nullptr) << "op " << op;
            ASSERT_EQ(model.count(q), 0u) << "op " << op << ": a live block handed out again";
            auto next = model.upper_bound(q);
            if (next != model.end()) {
                ASSERT_LE(q + b.size, next->first) << "op " << op << ": overlaps the next block";
            }
            if (next != model.begin()) {
                auto prev = std::prev(next);
                ASSERT_LE(prev->first + prev->second.size, q) << "op " << op << ": overlaps the block before";
            }
            mark(q, b.size, b.key);
            model[q] = b;
        } else {
            auto it = model.begin();
            std::advance(it, static_cast<long>(rng.below(model.size())));
            ASSERT_TRUE(marked(it->first, it->second.size, it->second.key)) << "op " << op;
            if (it->second.pool) pk_pool_free(it->second.pool, it->first);
            else pk_free(it->first);
            model.erase(it);
        }
        if (op % 3000 == 2999) {
            size_t turn = op / 3000 % 3;
            if (turn == 0) {
                pk_pool_release_cache();
                continue;
            }
            /* a typed pool's objects freed and the pool destroyed: its slabs'
             * runs become kept places (within RETAIN_BYTES), which the next
             * slabs of any length take */
            PoolPtr &pool = turn == 1 ? p600 : p1m;
            for (auto it = model.begin(); it != model.end();) {
                if (it->second.pool != pool.get()) {
                    ++it;
                    continue;
                }
                ASSERT_TRUE(marked(it->first, it->second.size, it->second.key)) << "op " << op;
                pk_pool_free(pool.get(), it->first);
                it = model.erase(it);
            }
            pool = make_pool(turn == 1 ? 600 << 10 : 1 << 20, 0, 0, turn == 1 ? "runs600k" : "runs1m");
        }
    }
    long grew = mapping_count() - before;
    EXPECT_LT(grew, static_cast<long>(HUGE_OWN_MAX + 600)) << ops << " operations took " << grew << " mappings";
    for (auto &[q, b] : model) {
        ASSERT_TRUE(marked(q, b.size, b.key));
        if (b.pool) pk_pool_free(b.pool, q);
        else pk_free(q);
    }
    for (void *q : ballast) pk_free(q);
    p600.reset();
    p1m.reset();
    expect_all_back(before, vsz, "the model's blocks");
}
