/* Pools: memory going back: trim, release and destroy. */
#include "child.h"
#include "support.h"

#include <poolkit/alloc.h>
#include <poolkit/fault.h>

#include <pthread.h>
#include <sys/resource.h>

#include <thread>

using namespace pktest;

/* ======================================================================
 * trim and release
 * ==================================================================== */

TEST(PoolTrim, HundredThousandLive200ByteObjectsReserveAtMost110Percent) {
    PoolPtr p = make_pool(200);
    std::vector<void *> objs = alloc_n(p.get(), 100000);
    ASSERT_EQ(objs.size(), 100000u);
    pk_pool_stats s = stats_of(p.get());
    EXPECT_LE(static_cast<double>(s.bytes_reserved), 1.10 * 100000 * 200)
        << s.bytes_reserved << " bytes in " << s.slabs << " slabs";
    free_all(p.get(), objs);
}

/* Alignment costs no memory: docs/design.md's bound (reserved <= 1.10x the
 * object bytes) holds at the sizes its table reports, power-of-two sizes
 * aligned to themselves included. 100,000 objects, or 40 MiB of them. */
TEST(PoolTrim, ReservedStaysWithin110PercentOfObjectBytesAtEverySize) {
    for (size_t size : {16u, 24u, 48u, 64u, 100u, 128u, 256u, 1024u, 4096u}) {
        PoolPtr p = make_pool(size);
        size_t n = std::min<size_t>(100000, (size_t(40) << 20) / size);
        std::vector<void *> objs = alloc_n(p.get(), n);
        ASSERT_EQ(objs.size(), n) << "size " << size;
        pk_pool_stats s = stats_of(p.get());
        EXPECT_LE(static_cast<double>(s.bytes_reserved), 1.10 * static_cast<double>(n * size))
            << "size " << size << ": " << s.bytes_reserved << " bytes in " << s.slabs << " slabs";
        free_all(p.get(), objs);
    }
}

TEST(PoolTrim, AfterAllAreFreedAtMostOneSlabRemains) {
    PoolPtr p = make_pool(200);
    std::vector<void *> objs = alloc_n(p.get(), 100000);
    ASSERT_EQ(objs.size(), 100000u);
    pk_pool_stats full = stats_of(p.get());
    free_all(p.get(), objs);
    size_t before = stats_of(p.get()).bytes_reserved;
    size_t released = pk_pool_trim(p.get());
    pk_pool_stats s = stats_of(p.get());
    EXPECT_LE(s.slabs, 1u);
    EXPECT_EQ(s.live, 0u);
    EXPECT_LE(s.bytes_reserved, full.bytes_reserved / 10)
        << s.bytes_reserved << " bytes still reserved after trim";
    EXPECT_EQ(released, before - s.bytes_reserved) << "trim returns the bytes it released";
}

TEST(PoolTrim, ReturnsZeroWhenThereIsNothingToGiveBack) {
    PoolPtr p = make_pool(64);
    EXPECT_EQ(pk_pool_trim(p.get()), 0u);
    std::vector<void *> objs = alloc_n(p.get(), 10000);
    free_all(p.get(), objs);
    pk_pool_trim(p.get());
    EXPECT_EQ(pk_pool_trim(p.get()), 0u);
}

TEST(PoolTrim, KeepsLiveObjectsAndGivesBackEmptySlabs) {
    const size_t size = 96;
    PoolPtr p = make_pool(size);
    std::vector<void *> objs = alloc_n(p.get(), 50000);
    ASSERT_EQ(objs.size(), 50000u);
    pk_pool_stats full = stats_of(p.get());
    /* free the lowest 90% by address: whole slabs become empty */
    std::sort(objs.begin(), objs.end());
    std::vector<void *> keep(objs.begin() + 45000, objs.end());
    std::vector<void *> gone(objs.begin(), objs.begin() + 45000);
    for (size_t i = 0; i < keep.size(); i++) fill_pattern(keep[i], size, i);
    free_all(p.get(), gone);
    pk_pool_trim(p.get());
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.live, keep.size());
    size_t per_slab = full.bytes_reserved / std::max<size_t>(full.slabs, 1);
    EXPECT_LE(s.bytes_reserved, full.bytes_reserved / 5 + 2 * per_slab);
    for (size_t i = 0; i < keep.size(); i++) ASSERT_EQ(check_pattern(keep[i], size, i), size);
    std::vector<void *> seen;
    pk_pool_visit(p.get(), collect, &seen);
    EXPECT_EQ(seen.size(), keep.size());
    free_all(p.get(), keep);
}

TEST(PoolTrim, PoolWorksAfterTrim) {
    PoolPtr p = make_pool(64);
    for (int r = 0; r < 20; r++) {
        std::vector<void *> objs = alloc_n(p.get(), 5000);
        ASSERT_EQ(objs.size(), 5000u);
        EXPECT_TRUE(no_overlap(objs, 64));
        free_all(p.get(), objs);
        pk_pool_trim(p.get());
        EXPECT_EQ(stats_of(p.get()).live, 0u);
    }
}

TEST(PoolTrim, ProcessResidentMemoryFalls) {
    if (running_under_valgrind() || PKTEST_ASAN) GTEST_SKIP() << "resident size is the tool's here";
    size_t base = rss_bytes();
    if (base == 0) GTEST_SKIP() << "no /proc/self/status";
    PoolPtr p = make_pool(200);
    std::vector<void *> objs = alloc_n(p.get(), 200000);
    for (void *o : objs) std::memset(o, 1, 200);
    size_t full = rss_bytes();
    if (full < base + (20u << 20)) GTEST_SKIP() << "resident size did not grow as expected";
    free_all(p.get(), objs);
    std::vector<void *>().swap(objs);
    pk_pool_trim(p.get());
    size_t after = rss_bytes();
    EXPECT_LE(after, base + (full - base) / 4)
        << "RSS " << base / 1024 << " KiB before, " << full / 1024 << " full, " << after / 1024 << " after trim";
}

/* With the purge delay at 0, empty slabs go back as they empty; with a
 * delay they go back once unused for it (test_pool_purge.cc). */
TEST(PoolRelease, EmptySlabsAreReleasedWithoutTrim) {
    PurgeDelay delay(0);
    PoolPtr p = make_pool(200);
    std::vector<void *> objs = alloc_n(p.get(), 100000);
    pk_pool_stats full = stats_of(p.get());
    free_all(p.get(), objs);
    pk_pool_stats s = stats_of(p.get());
    EXPECT_TRUE(s.slabs_released > 0 || s.slabs < full.slabs)
        << full.slabs << " slabs before, " << s.slabs << " after freeing all, " << s.slabs_released << " released";
    EXPECT_LT(s.bytes_reserved, full.bytes_reserved / 2) << "most of the memory goes back without a trim";
}

TEST(PoolRelease, LoopAcrossASlabBoundaryDoesNotThrash) {
    PoolPtr p = make_pool(64);
    /* allocate until a new slab is opened; then the last objects sit at a slab
     * boundary */
    std::vector<void *> base;
    size_t slabs = 0;
    for (int i = 0; i < 1000000; i++) {
        base.push_back(pk_pool_alloc(p.get()));
        size_t now = stats_of(p.get()).slabs;
        if (i > 0 && now > slabs && slabs > 0) break;
        slabs = now;
    }
    for (size_t burst : {1u, 10u, 100u, 500u, 1000u}) {
        uint64_t released0 = stats_of(p.get()).slabs_released;
        size_t iters = std::max<size_t>(scaled(100000) / burst, 50);
        std::vector<void *> objs;
        for (size_t it = 0; it < iters; it++) {
            objs = alloc_n(p.get(), burst);
            free_all(p.get(), objs);
            base.push_back(pk_pool_alloc(p.get())); /* step over the boundary ... */
            pk_pool_free(p.get(), base.back());     /* ... and back */
            base.pop_back();
        }
        uint64_t released = stats_of(p.get()).slabs_released - released0;
        EXPECT_LE(released, 8u) << "burst " << burst << ": " << released << " slabs released in " << iters
                                << " iterations";
    }
    free_all(p.get(), base);
}

/* A program whose objects change size between phases: the slabs one
 * pool's freed objects left empty serve the next pool that grows, within
 * the purge delay, without a page request (SHARE_EMPTY, policy.h): its
 * memory does not grow while its live objects do not. */
TEST(PoolRelease, EmptySlabsOfOnePoolServeAnotherThatGrows) {
    PurgeDelay delay(60000);
    PoolPtr a = make_pool(64), b = make_pool(48);
    std::vector<void *> objs = alloc_n(a.get(), 64000); /* about 63 slabs */
    ASSERT_EQ(objs.size(), 64000u);
    free_all(a.get(), objs);
    size_t held = stats_of(a.get()).bytes_reserved;
    unsigned long requests = pk_fault_requests();
    objs = alloc_n(b.get(), 64000); /* about 47 slabs */
    ASSERT_EQ(objs.size(), 64000u);
    pk_pool_stats sb = stats_of(b.get()), sa = stats_of(a.get());
    EXPECT_LE(pk_fault_requests() - requests, 2u) << sb.slabs << " slabs made after the first pool's "
                                                   << held / 65536 << " emptied";
    EXPECT_LE(sa.bytes_reserved + sb.bytes_reserved, held + (size_t(2) << 16))
        << "the first pool's emptied slabs and the second's live ones";
    free_all(b.get(), objs);
}

/* What pk_pool_reserve made ready stays its pool's: another pool that grows
 * takes none of it. */
TEST(PoolRelease, AReserveIsNotSharedWithAnotherPool) {
    PurgeDelay delay(60000);
    PoolPtr a = make_pool(64), b = make_pool(64);
    ASSERT_GE(pk_pool_reserve(a.get(), 64000), 64000u);
    std::vector<void *> objs = alloc_n(a.get(), 64000); /* its slabs empty again */
    free_all(a.get(), objs);
    size_t ready = stats_of(a.get()).slabs;
    objs = alloc_n(b.get(), 64000);
    ASSERT_EQ(objs.size(), 64000u);
    EXPECT_EQ(stats_of(a.get()).slabs, ready);
    free_all(b.get(), objs);
}

/* ======================================================================
 * big objects: the thread's list holds the objects freed last (HOT_LIST)
 * ==================================================================== */

namespace {

/* The typed-pool study's pattern (bench/bench_pattern.c): up to 256 objects
 * open; each round frees a random open one with probability open/256 and
 * allocates one with the complement. Returns the allocations made. */
struct Pattern {
    std::vector<void *> open;
    size_t peak = 0; /* the most objects open at once */
    uint64_t rng = 0x5eed;
    uint64_t next() {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        return rng;
    }
    double unit() { return (double)(next() >> 11) / 9007199254740992.0; }
    size_t run(pk_pool *p, long rounds) {
        size_t allocs = 0;
        for (long r = 0; r < rounds; r++) {
            double fill = (double)open.size() / 256.0;
            if (unit() <= fill && !open.empty()) {
                size_t i = next() % open.size();
                pk_pool_free(p, open[i]);
                open[i] = open.back();
                open.pop_back();
            }
            if (unit() >= fill) {
                char *o = static_cast<char *>(pk_pool_alloc(p));
                if (!o) return allocs;
                o[0] = (char)r;
                open.push_back(o);
                allocs++;
                peak = std::max(peak, open.size());
            }
        }
        return allocs;
    }
    void finish(pk_pool *p) { free_all(p, open); }
};

} // namespace

/* Eight 8 KiB objects fill a slab: with frees onto their slabs' lists the
 * pattern refilled from another slab at about every fourth allocation, each
 * refill taking the few objects that slab had (stats' taken: about one per
 * allocation). The thread's list keeps what it frees, so refills are rare. */
TEST(BigObjects, AnEightKiBPatternDoesNotChangeSlabOnEveryCall) {
    PurgeDelay delay(60000);
    PoolPtr p = make_pool(8192);
    Pattern pat;
    pat.run(p.get(), 20000); /* the live set reaches its size */
    uint64_t taken0 = stats_of(p.get()).taken;
    size_t allocs = pat.run(p.get(), scaled(200000, 50000));
    uint64_t taken = stats_of(p.get()).taken - taken0;
    EXPECT_LT(taken * 4, allocs) << taken << " objects taken from slabs by refills for " << allocs
                                 << " allocations";
    pat.finish(p.get());
}

/* A freed 1 MiB object (a slab of its own) is the next one handed out, as a
 * free list's is: the last freed comes back first, and no page is asked for. */
TEST(BigObjects, AFreedMiBObjectIsTheNextAllocatedWithNoPageRequest) {
    PurgeDelay delay(60000);
    PoolPtr p = make_pool(1 << 20);
    std::vector<void *> objs = alloc_n(p.get(), 8);
    ASSERT_EQ(objs.size(), 8u);
    unsigned long requests = pk_fault_requests();
    for (int i : {1, 5, 3, 0}) pk_pool_free(p.get(), objs[i]);
    for (int i : {0, 3, 5, 1}) {
        void *o = pk_pool_alloc(p.get());
        EXPECT_EQ(o, objs[i]) << "the object freed last comes back first";
        objs[i] = o;
    }
    EXPECT_EQ(pk_fault_requests(), requests) << "freed mappings served the allocations";
    free_all(p.get(), objs);
}

/* Objects of 1 MiB the thread's list may hold: HOT_LIST_BYTES (policy.h;
 * src/pool/heap.c asserts it). */
static const size_t listed_mib = 32;
/* Free objects on the thread's list (stats: taken - returned - live). */
static size_t listed(pk_pool *p) {
    pk_pool_stats s = stats_of(p);
    return (size_t)(s.taken - s.returned - s.live);
}

/* What the thread's list keeps of other slabs is out of the purge's reach
 * until the thread refills or trims, so it is bounded in bytes: of 48 freed
 * 1 MiB objects, at most HOT_LIST_BYTES' stay listed, with the current
 * slab's own; the rest go home to their slabs. */
TEST(BigObjects, TheThreadsListKeepsAtMostItsBytesBudgetOfFreedObjects) {
    PurgeDelay delay(60000);
    PoolPtr p = make_pool(1 << 20);
    std::vector<void *> objs = alloc_n(p.get(), listed_mib + 16);
    ASSERT_EQ(objs.size(), listed_mib + 16);
    free_all(p.get(), objs);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
    EXPECT_LE(listed(p.get()), listed_mib + 1) << "objects left on the thread's list";
}

/* The list's bound counts the objects it holds, not the frees since the
 * last refill: objects the allocations took back make room for as many
 * frees. A budget of frees sent the second half home. */
TEST(BigObjects, ObjectsTakenBackFromTheListMakeRoomForMoreFrees) {
    PurgeDelay delay(60000);
    PoolPtr p = make_pool(1 << 20);
    size_t half = listed_mib / 2;
    std::vector<void *> objs = alloc_n(p.get(), 2 * listed_mib);
    ASSERT_EQ(objs.size(), 2 * listed_mib);
    for (size_t i = 0; i < listed_mib; i++) pk_pool_free(p.get(), objs[i]);
    ASSERT_EQ(listed(p.get()), listed_mib) << "the list holds its bound";
    for (size_t i = 0; i < half; i++) objs[i] = pk_pool_alloc(p.get());
    EXPECT_EQ(listed(p.get()), listed_mib - half) << "taken back from the list";
    for (size_t i = listed_mib; i < listed_mib + half; i++) pk_pool_free(p.get(), objs[i]);
    EXPECT_EQ(listed(p.get()), listed_mib) << "as many frees listed as objects were taken back";
    for (size_t i = listed_mib; i < listed_mib + half; i++) objs[i] = pk_pool_alloc(p.get());
    objs.erase(objs.begin() + (long)half, objs.begin() + (long)listed_mib); /* on the list */
    free_all(p.get(), objs);
}

/* 2 * listed_mib objects of 1 MiB allocated, each a refill's, then one
 * more, *cur: the current slab's. */
static std::vector<void *> alloc_then_current(pk_pool *p, void **cur) {
    std::vector<void *> objs = alloc_n(p, 2 * listed_mib + 1);
    *cur = objs.size() == 2 * listed_mib + 1 ? objs.back() : nullptr;
    if (*cur) objs.pop_back();
    return objs;
}

/* Each object of another slab on the list carries its count in its second
 * word, under a key: an object the list holds that the count did not put
 * there (the current slab's, freed inline) and whose second word the user
 * set to its own address reads as none, so a count without the key let
 * the next frees list past the bound. */
TEST(BigObjects, AnObjectPointingAtItselfDoesNotResetTheListsCount) {
    PurgeDelay delay(60000);
    PoolPtr p = make_pool(1 << 20);
    void *cur;
    std::vector<void *> objs = alloc_then_current(p.get(), &cur);
    ASSERT_NE(cur, nullptr);
    for (size_t i = 0; i < listed_mib; i++) pk_pool_free(p.get(), objs[i]);
    static_cast<void **>(cur)[1] = cur;
    pk_pool_free(p.get(), cur);
    for (size_t i = listed_mib; i < 2 * listed_mib; i++) pk_pool_free(p.get(), objs[i]);
    EXPECT_LE(listed(p.get()), listed_mib + 1);
}

/* The object freed onto an empty list is counted too: under the current
 * slab's object (freed inline, carrying no count), the count starts from
 * it. Uncounted, it let one more object onto the list past the bound. */
TEST(BigObjects, TheFirstObjectOntoAnEmptyListIsCounted) {
    PurgeDelay delay(60000);
    PoolPtr p = make_pool(1 << 20);
    void *cur;
    std::vector<void *> objs = alloc_then_current(p.get(), &cur);
    ASSERT_NE(cur, nullptr);
    pk_pool_free(p.get(), objs[0]);
    pk_pool_free(p.get(), cur);
    for (size_t i = 1; i < objs.size(); i++) pk_pool_free(p.get(), objs[i]);
    EXPECT_EQ(listed(p.get()), listed_mib + 1) << "the bound's objects and the current slab's";
}

/* However frees and allocations interleave, the list never holds more than
 * its bound; nor where each freed object's second word holds what a count
 * with no key would read as "none under it" (its own address). */
TEST(BigObjects, TheListsBoundHoldsUnderRandomFreesAndAllocations) {
    PurgeDelay delay(60000);
    for (bool self : {false, true}) {
        PoolPtr p = make_pool(1 << 20);
        std::vector<void *> open;
        uint64_t rng = 0x5eed;
        size_t most = 0;
        for (int step = 0; step < (int)scaled(4000, 1000); step++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            if ((rng >> 32) % 100 < (open.size() < 100 ? 40u : 60u) && !open.empty()) {
                size_t i = (size_t)(rng % open.size());
                if (self) static_cast<void **>(open[i])[1] = open[i];
                pk_pool_free(p.get(), open[i]);
                open[i] = open.back();
                open.pop_back();
            } else {
                void *o = pk_pool_alloc(p.get());
                ASSERT_NE(o, nullptr);
                open.push_back(o);
            }
            most = std::max(most, listed(p.get()));
        }
        EXPECT_LE(most, listed_mib + 1) << (self ? "objects pointing at themselves" : "objects as allocated");
        EXPECT_GE(most, listed_mib / 2) << "the list held freed objects";
        free_all(p.get(), open);
    }
}

/* The typed-pool study's pattern over 1 MiB objects (a slab each): the
 * list is the free list of what the thread freed last, so an allocation
 * takes a slab (stats' taken) only where the pattern passes its live set's
 * peak. With a budget of frees per refill (eight objects), 18% did. */
TEST(BigObjects, AMiBPatternTakesASlabAtFewAllocations) {
    PurgeDelay delay(60000);
    PoolPtr p = make_pool(1 << 20);
    Pattern pat;
    pat.run(p.get(), 20000);
    uint64_t taken0 = stats_of(p.get()).taken;
    size_t allocs = pat.run(p.get(), scaled(40000, 20000));
    uint64_t taken = stats_of(p.get()).taken - taken0;
    EXPECT_LT(taken * 50, allocs) << taken << " slabs taken for " << allocs << " allocations";
    pat.finish(p.get());
}

/* More 1 MiB objects freed than the thread's list keeps: their mappings stay
 * with the pool for the purge delay and serve the next allocations, with no
 * page request; the pattern over them asks for none either. */
TEST(BigObjects, FreedMiBMappingsServeTheNextAllocationsWithinTheDelay) {
    PurgeDelay delay(60000);
    PoolPtr p = make_pool(1 << 20);
    std::vector<void *> objs = alloc_n(p.get(), 100);
    ASSERT_EQ(objs.size(), 100u);
    unsigned long requests = pk_fault_requests();
    free_all(p.get(), objs);
    objs = alloc_n(p.get(), 100);
    EXPECT_EQ(pk_fault_requests(), requests) << "100 objects freed, 100 allocated";
    free_all(p.get(), objs);
    Pattern pat;
    pat.run(p.get(), 5000);
    requests = pk_fault_requests();
    size_t peak = pat.peak;
    uint64_t returned0 = stats_of(p.get()).returned;
    size_t allocs = pat.run(p.get(), 20000);
    /* a page request per object past the live set's earlier peak, as a free
     * list's arena grows */
    EXPECT_LE(pk_fault_requests() - requests, pat.peak - peak)
        << "the pattern over 1 MiB objects, " << allocs << " allocations";
    /* its frees stay on the thread's list: few reach the slabs */
    EXPECT_LT((stats_of(p.get()).returned - returned0) * 4, allocs);
    pat.finish(p.get());
}

/* Trim gives back every 1 MiB object's mapping, those on the thread's list
 * too. */
TEST(BigObjects, TrimGivesBackEveryFreedMiBObject) {
    PurgeDelay delay(60000);
    PoolPtr p = make_pool(1 << 20);
    Pattern pat;
    pat.run(p.get(), 5000);
    pat.finish(p.get());
    EXPECT_GT(stats_of(p.get()).bytes_reserved, (size_t)32 << 20);
    pk_pool_trim(p.get());
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.live, 0u);
    EXPECT_EQ(s.bytes_reserved, 0u) << s.slabs << " slabs left after trim";
}

/* ======================================================================
 * destroy
 * ==================================================================== */

/* Slabs come and go at new addresses (a big object's slab is a mapping of
 * its own, and the system or the hint places the next one elsewhere): the
 * address map's pages that described them go back with them, so a program
 * that makes and destroys pools of big objects for long, or gives its
 * blocks back at every phase (malloc_trim), stays the size it was: within
 * 4 MiB over `rounds` of fn after `warm` of them. */
template <class Fn> void expect_resident_flat(int warm, int rounds, Fn fn) {
    if (running_under_valgrind() || PKTEST_ASAN || PKTEST_TSAN) GTEST_SKIP() << "resident size is the tool's here";
    for (int r = 0; r < warm; r++) ASSERT_NO_FATAL_FAILURE(fn());
    size_t before = rss_bytes();
    if (before == 0) GTEST_SKIP() << "no /proc/self/status";
    for (int r = 0; r < rounds; r++) ASSERT_NO_FATAL_FAILURE(fn());
    size_t after = rss_bytes();
    EXPECT_LT(after, before + (size_t(4) << 20)) << "resident " << before << " -> " << after << " bytes";
}

TEST(PoolDestroy, PoolsOfBigObjectsMadeAndDestroyedForLongKeepTheResidentSize) {
    std::vector<void *> objs(64);
    expect_resident_flat(50, 400, [&] {
        PoolPtr p = make_pool(size_t(1) << 20);
        for (void *&o : objs) {
            o = pk_pool_alloc(p.get());
            ASSERT_NE(o, nullptr);
            std::memset(o, 1, 64);
        }
        for (void *o : objs) pk_pool_free(p.get(), o);
    });
}

TEST(PoolDestroy, BlocksGivenBackAtEveryPhaseKeepTheResidentSize) {
    std::vector<void *> blocks(320);
    expect_resident_flat(30, 300, [&] {
        for (void *&b : blocks) {
            b = pk_alloc(200000);
            ASSERT_NE(b, nullptr);
            std::memset(b, 1, 64);
        }
        for (void *b : blocks) pk_free(b);
        pk_collect(1); /* what malloc_trim does */
    });
}

TEST(PoolDestroy, WithLiveObjectsReportsAWarningNamingThePoolAndCount) {
    ErrorCapture errors;
    PoolPtr p = make_pool(64, 0, 0, "leaking_pool");
    std::vector<void *> objs = alloc_n(p.get(), 37);
    p.reset();
    std::vector<RecordedError> e = errors.errors();
    ASSERT_GE(e.size(), 1u);
    bool counted = false;
    for (const RecordedError &r : e) {
        EXPECT_EQ(r.severity, PK_WARNING) << r.message;
        EXPECT_EQ(r.pool, "leaking_pool") << r.message;
        EXPECT_NE(r.message.find("leaking_pool"), std::string::npos) << r.message;
        if (r.message.find("37") != std::string::npos) counted = true;
    }
    EXPECT_TRUE(counted) << "the warning gives the number of live objects: " << e[0].message;
}

TEST(PoolDestroy, WithLiveObjectsInDebugModeReportsTheirAddresses) {
    ErrorCapture errors;
    PoolPtr p = make_pool(64, 0, PK_POOL_DEBUG, "debug_leak");
    std::vector<void *> objs = alloc_n(p.get(), 3);
    p.reset();
    std::vector<RecordedError> e = errors.errors();
    ASSERT_GE(e.size(), 1u);
    for (void *o : objs) {
        bool named = false;
        for (const RecordedError &r : e)
            if (r.ptr == o || r.message.find(ptr_str(o)) != std::string::npos) named = true;
        EXPECT_TRUE(named) << "live object " << o << " not reported";
    }
    for (const RecordedError &r : e) EXPECT_EQ(r.severity, PK_WARNING);
}

TEST(PoolDestroy, WithNoLiveObjectsReportsNothing) {
    ErrorCapture errors;
    for (unsigned flags : {0u, unsigned(PK_POOL_LOCAL), unsigned(PK_POOL_DEBUG), unsigned(PK_POOL_HARDENED)}) {
        PoolPtr p = make_pool(64, 0, flags);
        std::vector<void *> objs = alloc_n(p.get(), 1000);
        free_all(p.get(), objs);
        objs = alloc_n(p.get(), 10); /* some objects now sit in this thread's cache */
        free_all(p.get(), objs);
    }
    EXPECT_EQ(errors.count(), 0u);
}

TEST(PoolDestroy, FromAnotherThread) {
    PoolPtr p = make_pool(64);
    std::vector<void *> objs = alloc_n(p.get(), 1000);
    free_all(p.get(), objs);
    objs = alloc_n(p.get(), 10);
    free_all(p.get(), objs);
    pk_pool *raw = p.release();
    std::thread t([raw] { pk_pool_destroy(raw); });
    t.join();
    /* this thread's cache for the destroyed pool must not leak into new pools */
    for (int i = 0; i < 100; i++) {
        PoolPtr q = make_pool(64);
        std::vector<void *> o = alloc_n(q.get(), 100);
        for (void *x : o) ASSERT_EQ(pk_pool_owner(x), q.get());
        ASSERT_TRUE(no_overlap(o, 64));
        ASSERT_EQ(stats_of(q.get()).live, 100u);
        free_all(q.get(), o);
    }
}

TEST(PoolDestroy, ThreadCacheOfADestroyedPoolIsNotHandedToTheNextPool) {
    const size_t rounds = scaled(2000, 50);
    for (size_t i = 0; i < rounds; i++) {
        PoolPtr a = make_pool(48);
        std::vector<void *> objs = alloc_n(a.get(), 20);
        free_all(a.get(), objs); /* cached by this thread */
        a.reset();
        PoolPtr b = make_pool(48);
        objs = alloc_n(b.get(), 20);
        for (void *o : objs) ASSERT_EQ(pk_pool_owner(o), b.get()) << "iteration " << i;
        ASSERT_EQ(stats_of(b.get()).live, 20u);
        free_all(b.get(), objs);
    }
}

TEST(PoolDestroy, ManyPoolsAtOnce) {
    std::vector<PoolPtr> pools;
    std::vector<void *> objs;
    for (int i = 0; i < 2000; i++) {
        pools.push_back(make_pool(16 + 8 * static_cast<size_t>(i % 50)));
        ASSERT_NE(pools.back().get(), nullptr) << "pool " << i;
        objs.push_back(pk_pool_alloc(pools.back().get()));
    }
    for (size_t i = 0; i < pools.size(); i++) {
        ASSERT_EQ(pk_pool_owner(objs[i]), pools[i].get());
        pk_pool_free(pools[i].get(), objs[i]);
    }
}

/* ======================================================================
 * address space: a limit on it (RLIMIT_AS, `ulimit -v`) counts every byte
 * mapped, used or not
 * ==================================================================== */

struct SpaceWork {
    pk_pool *pools[2];
    pthread_barrier_t *all_in, *go;
    bool ok;
};

/* A thread's work: objects of two pools and blocks of every size class
 * and a few larger, all live while every thread holds its own, then
 * freed. */
static void *space_worker(void *arg) {
    SpaceWork *w = static_cast<SpaceWork *>(arg);
    void *objs[2][1000], *blocks[64];
    size_t nb = 0;
    w->ok = true;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 1000; i++) w->ok &= (objs[k][i] = pk_pool_alloc(w->pools[k])) != nullptr;
    for (size_t size = 1; size <= (size_t(1) << 20) && nb < 64; size = size * 2 + 1)
        w->ok &= (blocks[nb++] = pk_alloc(size)) != nullptr;
    pthread_barrier_wait(w->all_in);
    pthread_barrier_wait(w->go);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 1000; i++) pk_pool_free(w->pools[k], objs[k][i]);
    for (size_t i = 0; i < nb; i++) pk_free(blocks[i]);
    return nullptr;
}

enum { SPACE_THREADS = 4 };

/* SPACE_THREADS threads (256 KiB stacks) at space_worker's work on a and
 * b: whether every allocation succeeded; *grown gets the address space
 * they added while all were live. */
static bool space_run(pk_pool *a, pk_pool *b, size_t *grown) {
    pthread_barrier_t all_in, go;
    pthread_barrier_init(&all_in, nullptr, SPACE_THREADS + 1);
    pthread_barrier_init(&go, nullptr, SPACE_THREADS + 1);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, size_t(256) << 10);
    SpaceWork work[SPACE_THREADS];
    pthread_t t[SPACE_THREADS];
    size_t before = vm_bytes();
    int made = 0;
    for (; made < SPACE_THREADS; made++) {
        work[made] = SpaceWork{{a, b}, &all_in, &go, false};
        if (pthread_create(&t[made], &attr, space_worker, &work[made]) != 0) break;
    }
    if (made < SPACE_THREADS) std::abort(); /* the barriers would wait for ever */
    pthread_barrier_wait(&all_in);
    size_t during = vm_bytes();
    *grown = during > before ? during - before : 0;
    pthread_barrier_wait(&go);
    bool ok = true;
    for (int i = 0; i < SPACE_THREADS; i++) {
        pthread_join(t[i], nullptr);
        ok &= work[i].ok;
    }
    pthread_attr_destroy(&attr);
    pthread_barrier_destroy(&all_in);
    pthread_barrier_destroy(&go);
    return ok;
}

/* Pools, threads and the size classes take address space for what they
 * use, not for every pool or thread there might be. With 64 MiB more than
 * the process had, a pool's first objects and four threads (each with
 * heaps for two pools and the size classes, blocks up to 1 MiB) fit; the
 * pools' first create had reserved 512 MiB, for the records' whole area.
 * Then, with no limit (where a thread that cannot map its heap records
 * serves its calls without them), four threads more add at most 8 MiB
 * each: a thread's heap records for every key were 24 MiB more. */
PKTEST_CHILD(PoolsAndThreadsFitALimitOnAddressSpace) {
    if (PKTEST_ASAN || PKTEST_TSAN || running_under_valgrind())
        CHILD_SKIP("the tool reserves address space of its own, past any such limit");
    const size_t room = size_t(64) << 20, per_thread = size_t(8) << 20;
    struct rlimit was;
    CHILD_CHECK(getrlimit(RLIMIT_AS, &was) == 0, "getrlimit: %s", std::strerror(errno));
    size_t base = vm_bytes();
    CHILD_CHECK(base > 0, "no VmSize in /proc/self/status");
    struct rlimit rl = {base + room, was.rlim_max};
    CHILD_CHECK(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit: %s", std::strerror(errno));
    pk_pool_config c64 = make_config(64), c256 = make_config(256);
    pk_pool *a = pk_pool_create(&c64), *b = pk_pool_create(&c256);
    CHILD_CHECK(a && b, "pk_pool_create under a limit %zu MiB over the process's %zu MiB: %s", room >> 20,
                base >> 20, std::strerror(errno));
    size_t grown = 0;
    CHILD_CHECK(space_run(a, b, &grown), "a thread got NULL under a limit %zu MiB over the process's %zu MiB",
                room >> 20, base >> 20);
    std::printf("address space: %zu MiB at the start, %zu MiB more with the threads under the limit\n",
                base >> 20, grown >> 20);
    CHILD_CHECK(setrlimit(RLIMIT_AS, &was) == 0, "setrlimit: %s", std::strerror(errno));
    CHILD_CHECK(space_run(a, b, &grown), "a thread got NULL");
    std::printf("%d threads more with no limit: %zu KiB each\n", SPACE_THREADS, grown / SPACE_THREADS >> 10);
    CHILD_CHECK(grown <= SPACE_THREADS * per_thread, "%d threads added %zu MiB of address space", SPACE_THREADS,
                grown >> 20);
    pk_pool_destroy(a);
    pk_pool_destroy(b);
    return 0;
}

TEST(AddressSpace, PoolsAndThreadsFitALimitOnAddressSpace) {
    EXPECT_CHILD_PASSES("PoolsAndThreadsFitALimitOnAddressSpace", {{"MALLOC_ARENA_MAX", "1"}});
}
