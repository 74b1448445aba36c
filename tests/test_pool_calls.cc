/* Pools: the calls on many objects or the whole pool: bulk, visit, owner, stats. */
#include "support.h"

#include <sys/mman.h>

#include <set>

using namespace pktest;

namespace {
int static_object[16];
}  // namespace

/* ======================================================================
 * bulk
 * ==================================================================== */

TEST(PoolBulk, AllocBulkReturnsNDistinctUsableObjects) {
    for (size_t size : {8u, 48u, 512u}) {
        PoolPtr p = make_pool(size);
        std::vector<void *> objs(3000, nullptr);
        ASSERT_EQ(pk_pool_alloc_bulk(p.get(), objs.data(), objs.size()), objs.size());
        for (void *o : objs) {
            ASSERT_NE(o, nullptr);
            EXPECT_EQ(pk_pool_owner(o), p.get());
            EXPECT_TRUE(aligned_to(o, natural_align(size)));
        }
        EXPECT_TRUE(no_overlap(objs, size));
        for (size_t i = 0; i < objs.size(); i++) fill_pattern(objs[i], size, i);
        for (size_t i = 0; i < objs.size(); i++) EXPECT_EQ(check_pattern(objs[i], size, i), size);
        EXPECT_EQ(stats_of(p.get()).live, objs.size());
        pk_pool_free_bulk(p.get(), objs.data(), objs.size());
        EXPECT_EQ(stats_of(p.get()).live, 0u);
    }
}

TEST(PoolBulk, MixesWithSingleAllocAndFree) {
    PoolPtr p = make_pool(40);
    std::vector<void *> singles = alloc_n(p.get(), 1000);
    pk_pool_free_bulk(p.get(), singles.data(), singles.size());
    EXPECT_EQ(stats_of(p.get()).live, 0u);
    std::vector<void *> bulk(1000);
    ASSERT_EQ(pk_pool_alloc_bulk(p.get(), bulk.data(), bulk.size()), bulk.size());
    std::vector<void *> more = alloc_n(p.get(), 1000);
    std::vector<void *> all = bulk;
    all.insert(all.end(), more.begin(), more.end());
    EXPECT_TRUE(no_overlap(all, 40));
    EXPECT_EQ(stats_of(p.get()).live, 2000u);
    free_all(p.get(), bulk);
    pk_pool_free_bulk(p.get(), more.data(), more.size());
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

TEST(PoolBulk, ZeroCountIsANoOp) {
    PoolPtr p = make_pool(40);
    void *dummy = nullptr;
    EXPECT_EQ(pk_pool_alloc_bulk(p.get(), &dummy, 0), 0u);
    pk_pool_free_bulk(p.get(), &dummy, 0);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

TEST(PoolBulk, LargeBulkBiggerThanAnySlab) {
    PoolPtr p = make_pool(24);
    std::vector<void *> objs(200000);
    ASSERT_EQ(pk_pool_alloc_bulk(p.get(), objs.data(), objs.size()), objs.size());
    EXPECT_TRUE(no_overlap(objs, 24));
    pk_pool_free_bulk(p.get(), objs.data(), objs.size());
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* ======================================================================
 * visit
 * ==================================================================== */

TEST(PoolVisit, SeesExactlyTheLiveObjectsOnceEach) {
    for (unsigned flags : {0u, unsigned(PK_POOL_LOCAL), unsigned(PK_POOL_DEBUG)}) {
        PoolPtr p = make_pool(48, 0, flags);
        std::vector<void *> objs = alloc_n(p.get(), 5000);
        std::vector<void *> live, dead;
        for (size_t i = 0; i < objs.size(); i++) (i % 3 == 0 ? dead : live).push_back(objs[i]);
        free_all(p.get(), dead);
        std::vector<void *> seen;
        pk_pool_visit(p.get(), collect, &seen);
        std::sort(seen.begin(), seen.end());
        std::sort(live.begin(), live.end());
        EXPECT_EQ(seen, live) << "flags " << flags;
        free_all(p.get(), live);
    }
}

TEST(PoolVisit, GoesInAddressOrderWithinASlab) {
    PoolPtr p = make_pool(32);
    std::vector<void *> objs = alloc_n(p.get(), 20000);
    Rng rng(8);
    std::vector<void *> live, dead;
    for (void *o : objs) (rng.chance(30) ? dead : live).push_back(o);
    free_all(p.get(), dead);
    std::vector<void *> seen;
    pk_pool_visit(p.get(), collect, &seen);
    ASSERT_EQ(seen.size(), live.size());
    /* ascending runs: a step back can only happen when visit moves to the
     * next slab */
    size_t steps_back = 0;
    for (size_t i = 1; i < seen.size(); i++)
        if (seen[i] < seen[i - 1]) steps_back++;
    EXPECT_LT(steps_back, stats_of(p.get()).slabs);
    free_all(p.get(), live);
}

TEST(PoolVisit, SeesNothingInAPoolWithNoLiveObjects) {
    PoolPtr p = make_pool(48);
    std::vector<void *> seen;
    pk_pool_visit(p.get(), collect, &seen);
    EXPECT_TRUE(seen.empty());
    std::vector<void *> objs = alloc_n(p.get(), 100);
    free_all(p.get(), objs); /* now cached, not live */
    pk_pool_visit(p.get(), collect, &seen);
    EXPECT_TRUE(seen.empty()) << seen.size() << " free objects visited";
}

TEST(PoolVisit, SeesBulkAndLargeObjects) {
    PoolPtr p = make_pool(1 << 20);
    std::vector<void *> objs(5);
    ASSERT_EQ(pk_pool_alloc_bulk(p.get(), objs.data(), objs.size()), 5u);
    std::vector<void *> seen;
    pk_pool_visit(p.get(), collect, &seen);
    std::sort(seen.begin(), seen.end());
    std::sort(objs.begin(), objs.end());
    EXPECT_EQ(seen, objs);
    pk_pool_free_bulk(p.get(), objs.data(), objs.size());
}

/* ======================================================================
 * owner
 * ==================================================================== */

TEST(PoolOwner, ReturnsThePoolForItsObjects) {
    std::vector<PoolPtr> pools;
    std::vector<std::vector<void *>> objs;
    size_t sizes[] = {1, 16, 100, 4096, 5000, 1 << 20};
    unsigned flagsets[] = {0, PK_POOL_LOCAL, PK_POOL_DEBUG, PK_POOL_HARDENED, PK_POOL_ZERO};
    for (size_t size : sizes)
        for (unsigned flags : flagsets) {
            pools.push_back(make_pool(size, 0, flags));
            objs.push_back(alloc_n(pools.back().get(), size >= (1 << 20) ? 3 : 300));
        }
    for (size_t i = 0; i < pools.size(); i++)
        for (void *o : objs[i]) ASSERT_EQ(pk_pool_owner(o), pools[i].get()) << "pool " << i << " obj " << o;
    for (size_t i = 0; i < pools.size(); i++) free_all(pools[i].get(), objs[i]);
}

TEST(PoolOwner, ReturnsThePoolForFreedObjectSlots) {
    PoolPtr p = make_pool(64);
    std::vector<void *> objs = alloc_n(p.get(), 100);
    std::vector<void *> copy = objs;
    std::vector<void *> keep = alloc_n(p.get(), 1); /* keeps the slab */
    free_all(p.get(), objs);
    for (void *o : copy) EXPECT_EQ(pk_pool_owner(o), p.get());
    free_all(p.get(), keep);
}

TEST(PoolOwner, ReturnsNullForNull) { EXPECT_EQ(pk_pool_owner(nullptr), nullptr); }

TEST(PoolOwner, ReturnsNullForStackPointers) {
    PoolPtr p = make_pool(64);
    void *o = pk_pool_alloc(p.get());
    char stack[256];
    int x = 0;
    EXPECT_EQ(pk_pool_owner(stack), nullptr);
    EXPECT_EQ(pk_pool_owner(stack + 64), nullptr);
    EXPECT_EQ(pk_pool_owner(&x), nullptr);
    EXPECT_EQ(pk_pool_owner(&o), nullptr);
    pk_pool_free(p.get(), o);
}

TEST(PoolOwner, ReturnsNullForMallocPointers) {
    PoolPtr p = make_pool(64);
    void *o = pk_pool_alloc(p.get());
    for (size_t size : {1u, 16u, 64u, 4096u, 1u << 20, 8u << 20}) {
        void *m = std::malloc(size);
        ASSERT_NE(m, nullptr);
        EXPECT_EQ(pk_pool_owner(m), nullptr) << "malloc(" << size << ")";
        std::free(m);
    }
    pk_pool_free(p.get(), o);
}

TEST(PoolOwner, ReturnsNullForStaticPointers) {
    static char local_static[100];
    EXPECT_EQ(pk_pool_owner(static_object), nullptr);
    EXPECT_EQ(pk_pool_owner(local_static), nullptr);
    EXPECT_EQ(pk_pool_owner("a string literal"), nullptr);
    EXPECT_EQ(pk_pool_owner(reinterpret_cast<const void *>(&pk_pool_owner)), nullptr);
}

TEST(PoolOwner, ReturnsNullForInteriorPointers) {
    for (unsigned flags : {0u, unsigned(PK_POOL_DEBUG), unsigned(PK_POOL_HARDENED)}) {
        for (size_t size : {2u, 8u, 24u, 200u, 4096u, 70000u}) {
            PoolPtr p = make_pool(size, 0, flags);
            std::vector<void *> objs = alloc_n(p.get(), 20);
            for (void *o : objs) {
                const char *c = static_cast<const char *>(o);
                EXPECT_EQ(pk_pool_owner(c + 1), nullptr) << "size " << size << " flags " << flags;
                EXPECT_EQ(pk_pool_owner(c + size / 2), nullptr) << "size " << size << " flags " << flags;
                EXPECT_EQ(pk_pool_owner(c + size - 1), nullptr) << "size " << size << " flags " << flags;
            }
            free_all(p.get(), objs);
        }
    }
}

TEST(PoolOwner, ReturnsNullForGarbageAddressesAndNeverCrashes) {
    PoolPtr p = make_pool(64);
    std::vector<void *> objs = alloc_n(p.get(), 1000);
    std::set<uintptr_t> starts;
    for (void *o : objs) starts.insert(reinterpret_cast<uintptr_t>(o));
    const uintptr_t fixed[] = {1,
                               8,
                               4096,
                               0xdeadbeef,
                               0x7fffffffffffull,
                               0x800000000000ull,
                               0xffff800000000000ull,
                               0xffffffffffffffffull,
                               0xfffffffffffff000ull,
                               0x0000100000000000ull};
    for (uintptr_t a : fixed) EXPECT_EQ(pk_pool_owner(reinterpret_cast<const void *>(a)), nullptr) << a;
    Rng rng(99);
    const size_t tries = scaled(200000, 1000);
    for (size_t i = 0; i < tries; i++) {
        uintptr_t a = static_cast<uintptr_t>(rng.next());
        if (i % 2) a &= 0x7fffffffffffull; /* user-space range */
        if (i % 4 == 1) a &= ~uintptr_t(63);
        if (starts.count(a)) continue;
        ASSERT_EQ(pk_pool_owner(reinterpret_cast<const void *>(a)), nullptr) << std::hex << a;
    }
    /* addresses near the pool's own memory: only must not crash */
    for (void *o : objs) {
        uintptr_t a = reinterpret_cast<uintptr_t>(o);
        for (int shift = 12; shift <= 26; shift++) {
            uintptr_t base = a & ~((uintptr_t(1) << shift) - 1);
            (void)pk_pool_owner(reinterpret_cast<const void *>(base));
            (void)pk_pool_owner(reinterpret_cast<const void *>(base - 8));
            (void)pk_pool_owner(reinterpret_cast<const void *>(base + (uintptr_t(1) << shift) + 8));
        }
    }
    free_all(p.get(), objs);
}

namespace {
/* Whether the page holding addr is mapped (mincore fails with ENOMEM if not). */
bool page_mapped(uintptr_t addr) {
    unsigned char vec;
    uintptr_t page = addr & ~(uintptr_t(page_size()) - 1);
    return mincore(reinterpret_cast<void *>(page), page_size(), &vec) == 0;
}
}  // namespace

/* A byte-for-byte copy of a slab's memory elsewhere is not the pool's: owner
 * must tell the real slab from an imitation (no trusting a header found by
 * masking the address). */
TEST(PoolOwner, ReturnsNullForACopyOfASlabsMemory) {
    PoolPtr p = make_pool(64);
    std::vector<void *> objs = alloc_n(p.get(), 100);
    const size_t max_align = size_t(4) << 20;
    const size_t span = 2 * max_align;
    void *raw = mmap(nullptr, span + max_align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(raw, MAP_FAILED);
    uintptr_t forged = (reinterpret_cast<uintptr_t>(raw) + max_align - 1) & ~uintptr_t(max_align - 1);
    uintptr_t obj = reinterpret_cast<uintptr_t>(objs[50]);
    for (size_t align = page_size(); align <= max_align; align *= 2) {
        uintptr_t base = obj & ~uintptr_t(align - 1);
        size_t len = obj + 64 - base;
        bool mapped = true;
        for (uintptr_t a = base; a < base + len && mapped; a += page_size()) mapped = page_mapped(a);
        if (!mapped || len > span) continue;
        std::memcpy(reinterpret_cast<void *>(forged), reinterpret_cast<void *>(base), len);
        const void *imitation = reinterpret_cast<const void *>(forged + (obj - base));
        EXPECT_EQ(pk_pool_owner(imitation), nullptr) << "copy of " << align << "-aligned memory";
        std::memset(reinterpret_cast<void *>(forged), 0, len);
    }
    munmap(raw, span + max_align);
    free_all(p.get(), objs);
}

TEST(PoolOwner, ReturnsNullOnceThePoolIsDestroyed) {
    void *o;
    {
        PoolPtr p = make_pool(64);
        o = pk_pool_alloc(p.get());
        pk_pool_free(p.get(), o);
    }
    EXPECT_EQ(pk_pool_owner(o), nullptr);
}

/* ======================================================================
 * stats
 * ==================================================================== */

TEST(PoolStats, ReportNameSizeAndAlign) {
    pk_pool_config c = make_config(200, 64, 0, "widgets");
    PoolPtr p = make_pool(c);
    pk_pool_stats s = stats_of(p.get());
    ASSERT_NE(s.name, nullptr);
    EXPECT_STREQ(s.name, "widgets");
    EXPECT_EQ(s.size, 200u);
    EXPECT_EQ(s.align, 64u);
    for (size_t size : {8u, 16u, 24u, 64u, 200u, 4096u}) {
        PoolPtr q = make_pool(size);
        EXPECT_EQ(stats_of(q.get()).size, size);
    }
}

TEST(PoolStats, StartEmpty) {
    PoolPtr p = make_pool(64);
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.live, 0u);
    EXPECT_EQ(s.peak_live, 0u);
    EXPECT_EQ(s.taken, 0u);
    EXPECT_EQ(s.returned, 0u);
    EXPECT_EQ(s.remote_frees, 0u);
    EXPECT_EQ(s.slabs_released, 0u);
}

TEST(PoolStats, LiveIsExactWhenQuiescent) {
    for (unsigned flags : {0u, unsigned(PK_POOL_LOCAL), unsigned(PK_POOL_DEBUG), unsigned(PK_POOL_HARDENED)}) {
        PoolPtr p = make_pool(32, 0, flags);
        Rng rng(flags + 1);
        std::vector<void *> live;
        const size_t steps = scaled(20000, 1000);
        for (size_t i = 0; i < steps; i++) {
            if (live.empty() || rng.chance(55)) {
                live.push_back(pk_pool_alloc(p.get()));
            } else {
                pk_pool_free(p.get(), take_random(live, rng));
            }
            if (i % 97 == 0) {
                ASSERT_EQ(stats_of(p.get()).live, live.size()) << "flags " << flags << " step " << i;
            }
        }
        EXPECT_EQ(stats_of(p.get()).live, live.size());
        free_all(p.get(), live);
        EXPECT_EQ(stats_of(p.get()).live, 0u);
    }
}

TEST(PoolStats, BytesReservedAndSlabsCoverTheLiveObjects) {
    PoolPtr p = make_pool(100);
    std::vector<void *> objs = alloc_n(p.get(), 10000);
    pk_pool_stats s = stats_of(p.get());
    EXPECT_GE(s.bytes_reserved, 10000u * 100);
    EXPECT_GE(s.slabs, 1u);
    free_all(p.get(), objs);
}

/* A heap adds a rise of its count to the pool's peak estimate at once,
 * however small (a refill of large objects takes a few). */
TEST(PoolStats, PeakLiveCountsASmallRise) {
    PoolPtr p = make_pool(1024);
    std::vector<void *> objs = alloc_n(p.get(), 40);
    free_all(p.get(), objs);
    objs = alloc_n(p.get(), 1);
    pk_pool_stats s = stats_of(p.get());
    EXPECT_GE(s.peak_live, 40u);
    free_all(p.get(), objs);
}

TEST(PoolStats, PeakLiveIsAtLeastTheHighestLiveCount) {
    PoolPtr p = make_pool(32);
    std::vector<void *> objs = alloc_n(p.get(), 5000);
    free_all(p.get(), objs);
    objs = alloc_n(p.get(), 10);
    pk_pool_stats s = stats_of(p.get());
    EXPECT_GE(s.peak_live, 5000u);
    EXPECT_EQ(s.live, 10u);
    free_all(p.get(), objs);
}

TEST(PoolStats, AllocsMinusFreesCoverTheLiveObjects) {
    PoolPtr p = make_pool(32);
    std::vector<void *> objs = alloc_n(p.get(), 3000);
    std::vector<void *> half(objs.begin(), objs.begin() + 1500);
    objs.erase(objs.begin(), objs.begin() + 1500);
    free_all(p.get(), half);
    pk_pool_stats s = stats_of(p.get());
    EXPECT_GE(s.taken, 3000u);
    EXPECT_GE(s.taken - s.returned, s.live);
    EXPECT_EQ(s.live, 1500u);
    free_all(p.get(), objs);
    pk_pool_trim(p.get());
    s = stats_of(p.get());
    EXPECT_EQ(s.taken, s.returned) << "after trim no object is outside the slabs";
}

TEST(PoolStats, NoRemoteFreesOnOneThread) {
    PoolPtr p = make_pool(32);
    for (int r = 0; r < 10; r++) {
        std::vector<void *> objs = alloc_n(p.get(), 2000);
        free_all(p.get(), objs);
    }
    EXPECT_EQ(stats_of(p.get()).remote_frees, 0u);
}
