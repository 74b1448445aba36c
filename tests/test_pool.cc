/* Pools: creation, sizes and alignment, objects, zeroing, PK_POOL_LOCAL: one test per behaviour the contract (API.md, pool.h) states. */
#include "support.h"

#include <map>

using namespace pktest;

/* ======================================================================
 * pk_pool_create
 * ==================================================================== */

TEST(PoolCreate, RejectsSizeZeroWithEINVAL) {
    pk_pool_config c = make_config(0);
    errno = 0;
    EXPECT_EQ(pk_pool_create(&c), nullptr);
    EXPECT_EQ(errno, EINVAL);
}

TEST(PoolCreate, RejectsAlignNotAPowerOfTwoWithEINVAL) {
    for (size_t align : {3u, 5u, 6u, 12u, 24u, 100u, 1000u, 4095u}) {
        pk_pool_config c = make_config(64, align);
        errno = 0;
        EXPECT_EQ(pk_pool_create(&c), nullptr) << "align " << align;
        EXPECT_EQ(errno, EINVAL) << "align " << align;
    }
}

TEST(PoolCreate, RejectsAlignOver4096WithEINVAL) {
    for (size_t align : {size_t(8192), size_t(1) << 16, size_t(1) << 20, size_t(1) << 40}) {
        pk_pool_config c = make_config(64, align);
        errno = 0;
        EXPECT_EQ(pk_pool_create(&c), nullptr) << "align " << align;
        EXPECT_EQ(errno, EINVAL) << "align " << align;
    }
}

static void noop_hook(void *, void *) {}

TEST(PoolCreate, RejectsZeroFlagWithConstructHookWithEINVAL) {
    pk_pool_config c = make_config(64, 0, PK_POOL_ZERO);
    c.construct = noop_hook;
    errno = 0;
    EXPECT_EQ(pk_pool_create(&c), nullptr);
    EXPECT_EQ(errno, EINVAL);
}

TEST(PoolCreate, RejectsTooLargeASizeWithEINVAL) {
    for (size_t size : {SIZE_MAX, SIZE_MAX / 2 + 1, SIZE_MAX - 4095}) {
        pk_pool_config c = make_config(size);
        errno = 0;
        EXPECT_EQ(pk_pool_create(&c), nullptr) << "size " << size;
        EXPECT_EQ(errno, EINVAL) << "size " << size;
    }
}

TEST(PoolCreate, AcceptsEveryPowerOfTwoAlignUpTo4096) {
    for (size_t align = 1; align <= 4096; align *= 2) {
        PoolPtr p = make_pool(24, align);
        EXPECT_NE(p.get(), nullptr) << "align " << align;
    }
}

TEST(PoolCreate, AcceptsEveryFlagCombination) {
    for (unsigned flags = 0; flags < 16; flags++) {
        PoolPtr p = make_pool(40, 0, flags);
        ASSERT_NE(p.get(), nullptr) << "flags " << flags;
        void *o = pk_pool_alloc(p.get());
        ASSERT_NE(o, nullptr) << "flags " << flags;
        std::memset(o, 1, 40);
        pk_pool_free(p.get(), o);
    }
}

TEST(PoolCreate, CopiesTheConfig) {
    pk_pool_config c = make_config(48, 16, 0, "copied");
    PoolPtr p = make_pool(c);
    ASSERT_NE(p.get(), nullptr);
    c.size = 4000;
    c.align = 4096;
    c.flags = PK_POOL_ZERO;
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.size, 48u);
    EXPECT_EQ(s.align, 16u);
    void *o = pk_pool_alloc(p.get());
    ASSERT_NE(o, nullptr);
    EXPECT_TRUE(aligned_to(o, 16));
    pk_pool_free(p.get(), o);
}

TEST(PoolCreate, NameMayBeNull) {
    pk_pool_config c = make_config(32, 0, 0, nullptr);
    PoolPtr p = make_pool(c);
    ASSERT_NE(p.get(), nullptr);
    void *o = pk_pool_alloc(p.get());
    ASSERT_NE(o, nullptr);
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.live, 1u);
    pk_pool_free(p.get(), o);
}

TEST(PoolDestroy, NullIsANoOp) { pk_pool_destroy(nullptr); }

/* ======================================================================
 * Alignment and sizes
 * ==================================================================== */

TEST(PoolAlign, ZeroMeansLargestPowerOfTwoDividingSizeUpTo4096) {
    std::vector<size_t> sizes;
    for (size_t s = 1; s <= 130; s++) sizes.push_back(s);
    for (size_t s : {192u, 200u, 255u, 256u, 384u, 1000u, 1024u, 4096u, 12288u, 65536u, 100000u})
        sizes.push_back(s);
    for (size_t size : sizes) {
        PoolPtr p = make_pool(size, 0);
        ASSERT_NE(p.get(), nullptr) << "size " << size;
        size_t want = natural_align(size);
        pk_pool_stats s = stats_of(p.get());
        EXPECT_EQ(s.align, want) << "size " << size;
        std::vector<void *> objs = alloc_n(p.get(), 50);
        ASSERT_EQ(objs.size(), 50u);
        for (void *o : objs) EXPECT_TRUE(aligned_to(o, want)) << "size " << size << " obj " << o;
        free_all(p.get(), objs);
    }
}

/* Objects of a pool, allocated until they fill at least `slabs` slabs (so
 * that the check covers slot 0 of several slabs, not one slab's grid). */
static std::vector<void *> alloc_slabs(pk_pool *p, size_t slabs) {
    std::vector<void *> objs;
    while (stats_of(p).slabs < slabs) {
        std::vector<void *> more = alloc_n(p, 64);
        if (more.empty()) break;
        objs.insert(objs.end(), more.begin(), more.end());
    }
    return objs;
}

static const unsigned kLayoutFlags[] = {0, PK_POOL_LOCAL, PK_POOL_HARDENED, PK_POOL_GUARD,
                                        PK_POOL_DEBUG, PK_POOL_ZERO};

/* What puts 64-byte objects on cache lines (no two objects share a line):
 * slot 0 of every slab starts at a multiple of the size. */
TEST(PoolAlign, PowerOfTwoSizesUpTo4096AreAlignedToTheirSizeInEverySlabAndMode) {
    for (unsigned flags : kLayoutFlags) {
        for (size_t size = 16; size <= 4096; size *= 2) {
            PoolPtr p = make_pool(size, 0, flags);
            ASSERT_NE(p.get(), nullptr) << "size " << size << " flags " << flags;
            EXPECT_EQ(stats_of(p.get()).align, size) << "size " << size << " flags " << flags;
            std::vector<void *> objs = alloc_slabs(p.get(), 3);
            ASSERT_GE(stats_of(p.get()).slabs, 3u) << "size " << size << " flags " << flags;
            size_t off = 0;
            for (void *o : objs) off |= reinterpret_cast<uintptr_t>(o) & (size - 1);
            EXPECT_EQ(off, 0u) << "size " << size << " flags " << flags << ": some object is "
                               << "misaligned by these bits, of " << objs.size();
            free_all(p.get(), objs);
        }
    }
}

TEST(PoolAlign, OtherSizesKeepTheirNaturalAlignmentInEverySlabAndMode) {
    for (unsigned flags : kLayoutFlags) {
        for (size_t size : {24u, 48u, 80u, 96u, 100u, 200u, 3072u, 5000u}) {
            PoolPtr p = make_pool(size, 0, flags);
            ASSERT_NE(p.get(), nullptr) << "size " << size << " flags " << flags;
            size_t want = natural_align(size);
            EXPECT_EQ(stats_of(p.get()).align, want) << "size " << size << " flags " << flags;
            std::vector<void *> objs = alloc_slabs(p.get(), 3);
            ASSERT_GE(stats_of(p.get()).slabs, 3u) << "size " << size << " flags " << flags;
            for (void *o : objs)
                ASSERT_TRUE(aligned_to(o, want)) << "size " << size << " flags " << flags << " obj " << o;
            free_all(p.get(), objs);
        }
    }
}

/* Placement is free where the slot is a power of two, whatever the pool
 * promises: a hook pool's link word makes a 56-byte object's slot 64 bytes,
 * and an explicit smaller align still gets the slot's own. */
static void hook_noop(void *, void *) {}

TEST(PoolAlign, SlotsOfAPowerOfTwoSizeAreAlignedToItWhenTheAlignAskedIsLess) {
    pk_pool_config hooked = make_config(56);
    hooked.construct = hook_noop;
    pk_pool_config asked = make_config(256, 16);
    for (const pk_pool_config &c : {hooked, asked}) {
        PoolPtr p = make_pool(c);
        ASSERT_NE(p.get(), nullptr) << "size " << c.size;
        size_t slot = c.construct ? 64 : c.size;
        std::vector<void *> objs = alloc_slabs(p.get(), 3);
        for (void *o : objs) ASSERT_TRUE(aligned_to(o, slot)) << "size " << c.size << " obj " << o;
        free_all(p.get(), objs);
    }
}

TEST(PoolAlign, HookPoolsKeepAtMostMaxAlignTByDefault) {
    pk_pool_config c = make_config(64);
    c.construct = hook_noop;
    PoolPtr p = make_pool(c);
    ASSERT_NE(p.get(), nullptr);
    EXPECT_EQ(stats_of(p.get()).align, alignof(std::max_align_t));
}

TEST(PoolAlign, EveryPowerOfTwoUpTo4096IsHonouredForSeveralSizes) {
    for (size_t size : {1u, 3u, 8u, 24u, 100u, 1000u, 4096u, 5000u, 70000u}) {
        for (size_t align = 1; align <= 4096; align *= 2) {
            PoolPtr p = make_pool(size, align);
            ASSERT_NE(p.get(), nullptr) << "size " << size << " align " << align;
            EXPECT_EQ(stats_of(p.get()).align, align) << "size " << size << " align " << align;
            size_t n = size >= 5000 ? 8 : 64;
            std::vector<void *> objs = alloc_n(p.get(), n);
            ASSERT_EQ(objs.size(), n);
            for (void *o : objs) {
                EXPECT_TRUE(aligned_to(o, align)) << "size " << size << " align " << align << " obj " << o;
                std::memset(o, 0xAB, size);
            }
            EXPECT_TRUE(no_overlap(objs, size)) << "size " << size << " align " << align;
            free_all(p.get(), objs);
        }
    }
}

TEST(PoolSize, EverySizeFromOneByteTo16MiBWorks) {
    std::vector<size_t> sizes;
    for (size_t s = 1; s <= 40; s++) sizes.push_back(s);
    for (size_t s : {63u, 65u, 127u, 129u, 255u, 257u, 1000u, 4095u, 4097u, 8191u, 32768u, 65535u, 65537u,
                     (1u << 20) - 1, 1u << 20, (1u << 20) + 1, 3u << 20, 1u << 24})
        sizes.push_back(s);
    uint64_t key = 1;
    for (size_t size : sizes) {
        PoolPtr p = make_pool(size);
        ASSERT_NE(p.get(), nullptr) << "size " << size;
        size_t n = size >= (1u << 20) ? 2 : 16;
        std::vector<void *> objs = alloc_n(p.get(), n);
        ASSERT_EQ(objs.size(), n) << "size " << size;
        EXPECT_TRUE(no_overlap(objs, size)) << "size " << size;
        for (size_t i = 0; i < n; i++) fill_pattern(objs[i], size, key + i);
        for (size_t i = 0; i < n; i++)
            EXPECT_EQ(check_pattern(objs[i], size, key + i), size) << "size " << size;
        key += n;
        EXPECT_EQ(stats_of(p.get()).live, n);
        free_all(p.get(), objs);
        EXPECT_EQ(stats_of(p.get()).live, 0u);
    }
}

TEST(PoolSize, LargeObjectsWasteAtMostAboutAPageEach) {
    const size_t page = page_size();
    for (size_t size : {size_t(1) << 20, (size_t(1) << 20) + 1, (size_t(3) << 20) + 100, size_t(1) << 24}) {
        PoolPtr p = make_pool(size);
        ASSERT_NE(p.get(), nullptr) << "size " << size;
        size_t n = size >= (size_t(1) << 24) ? 2 : 8;
        std::vector<void *> objs = alloc_n(p.get(), n);
        ASSERT_EQ(objs.size(), n);
        pk_pool_stats s = stats_of(p.get());
        EXPECT_EQ(s.live, n);
        EXPECT_LE(s.bytes_reserved, n * (size + 2 * page))
            << "size " << size << ": " << s.bytes_reserved / n << " bytes reserved per live object";
        free_all(p.get(), objs);
    }
}

/* ======================================================================
 * Objects
 * ==================================================================== */

TEST(PoolObjects, NeverOverlap) {
    for (size_t size : {1u, 8u, 24u, 100u, 4096u}) {
        PoolPtr p = make_pool(size);
        ASSERT_NE(p.get(), nullptr);
        std::vector<void *> objs = alloc_n(p.get(), 5000);
        ASSERT_EQ(objs.size(), 5000u);
        /* free every other one and allocate again: reuse must not overlap */
        std::vector<void *> keep, again;
        for (size_t i = 0; i < objs.size(); i++) (i % 2 ? keep : again).push_back(objs[i]);
        free_all(p.get(), again);
        again = alloc_n(p.get(), 5000);
        keep.insert(keep.end(), again.begin(), again.end());
        EXPECT_TRUE(no_overlap(keep, size)) << "size " << size;
        free_all(p.get(), keep);
    }
}

TEST(PoolObjects, OfDifferentPoolsNeverOverlap) {
    PoolPtr a = make_pool(64), b = make_pool(64), c = make_pool(96);
    std::vector<void *> pa, pb, pc;
    for (int i = 0; i < 3000; i++) {
        pa.push_back(pk_pool_alloc(a.get()));
        pb.push_back(pk_pool_alloc(b.get()));
        pc.push_back(pk_pool_alloc(c.get()));
    }
    std::map<uintptr_t, size_t> all; /* start -> size */
    for (void *o : pa) all[reinterpret_cast<uintptr_t>(o)] = 64;
    for (void *o : pb) all[reinterpret_cast<uintptr_t>(o)] = 64;
    for (void *o : pc) all[reinterpret_cast<uintptr_t>(o)] = 96;
    EXPECT_EQ(all.size(), 9000u) << "an object was handed out by two pools";
    uintptr_t end = 0;
    for (auto &e : all) {
        EXPECT_GE(e.first, end) << "object at " << std::hex << e.first << " overlaps the one before";
        end = e.first + e.second;
    }
    free_all(a.get(), pa);
    free_all(b.get(), pb);
    free_all(c.get(), pc);
}

TEST(PoolObjects, ContentsSurvive) {
    const size_t size = 40;
    PoolPtr p = make_pool(size);
    PoolPtr other = make_pool(size);
    std::vector<void *> objs = alloc_n(p.get(), 20000);
    ASSERT_EQ(objs.size(), 20000u);
    for (size_t i = 0; i < objs.size(); i++) fill_pattern(objs[i], size, i);
    /* churn the same pool and another one around them */
    Rng rng(7);
    std::vector<void *> churn, churn_other;
    const size_t steps = scaled(100000, 1000);
    for (size_t i = 0; i < steps; i++) {
        if (churn.empty() || rng.chance(55)) {
            void *o = pk_pool_alloc(p.get());
            ASSERT_NE(o, nullptr);
            std::memset(o, 0xEE, size);
            churn.push_back(o);
            void *q = pk_pool_alloc(other.get());
            std::memset(q, 0xDD, size);
            churn_other.push_back(q);
        } else {
            size_t k = rng.below(churn.size());
            std::swap(churn[k], churn.back());
            pk_pool_free(p.get(), churn.back());
            churn.pop_back();
            pk_pool_free(other.get(), churn_other.back());
            churn_other.pop_back();
        }
    }
    pk_pool_trim(p.get());
    for (size_t i = 0; i < objs.size(); i++) ASSERT_EQ(check_pattern(objs[i], size, i), size) << "object " << i;
    free_all(p.get(), objs);
    free_all(p.get(), churn);
    free_all(other.get(), churn_other);
}

TEST(PoolObjects, FreedMemoryIsReusedSoRepeatedCyclesStayBounded) {
    PoolPtr p = make_pool(128);
    std::vector<void *> objs = alloc_n(p.get(), 10000);
    free_all(p.get(), objs);
    size_t first = 0;
    const size_t rounds = scaled(200, 5);
    for (size_t round = 0; round < rounds; round++) {
        objs = alloc_n(p.get(), 10000);
        ASSERT_EQ(objs.size(), 10000u);
        size_t reserved = stats_of(p.get()).bytes_reserved;
        if (round == 0) first = reserved;
        ASSERT_LE(reserved, first + first / 4) << "round " << round;
        free_all(p.get(), objs);
    }
}

/* ======================================================================
 * PK_POOL_ZERO
 * ==================================================================== */

TEST(PoolZero, ObjectsComeOutZeroedEvenAfterBeingDirtiedAndFreed) {
    for (size_t size : {1u, 7u, 8u, 100u, 4096u, 65536u, 1u << 20}) {
        PoolPtr p = make_pool(size, 0, PK_POOL_ZERO);
        ASSERT_NE(p.get(), nullptr);
        size_t n = size >= 65536 ? 4 : 1000;
        for (int round = 0; round < 3; round++) {
            std::vector<void *> objs = alloc_n(p.get(), n);
            ASSERT_EQ(objs.size(), n);
            for (void *o : objs) {
                ASSERT_TRUE(all_bytes(o, size, 0)) << "size " << size << " round " << round;
                std::memset(o, 0xFF, size);
            }
            /* free in an order other than allocation's */
            std::reverse(objs.begin(), objs.begin() + static_cast<long>(n / 2));
            free_all(p.get(), objs);
        }
    }
}

TEST(PoolZero, BulkObjectsComeOutZeroed) {
    PoolPtr p = make_pool(72, 0, PK_POOL_ZERO);
    std::vector<void *> objs(500);
    for (int round = 0; round < 3; round++) {
        ASSERT_EQ(pk_pool_alloc_bulk(p.get(), objs.data(), objs.size()), objs.size());
        for (void *o : objs) {
            ASSERT_TRUE(all_bytes(o, 72, 0));
            std::memset(o, 0x5C, 72);
        }
        pk_pool_free_bulk(p.get(), objs.data(), objs.size());
    }
}

TEST(PoolZero, LocalPoolObjectsComeOutZeroed) {
    PoolPtr p = make_pool(24, 0, PK_POOL_ZERO | PK_POOL_LOCAL);
    for (int round = 0; round < 3; round++) {
        std::vector<void *> objs = alloc_n(p.get(), 3000);
        for (void *o : objs) {
            ASSERT_TRUE(all_bytes(o, 24, 0));
            std::memset(o, 0x77, 24);
        }
        free_all(p.get(), objs);
    }
}

/* ======================================================================
 * PK_POOL_LOCAL
 * ==================================================================== */

TEST(PoolLocal, WorksSingleThreaded) {
    const size_t size = 48;
    PoolPtr p = make_pool(size, 0, PK_POOL_LOCAL, "local");
    ASSERT_NE(p.get(), nullptr);
    Rng rng(42);
    std::vector<std::pair<void *, uint64_t>> live;
    uint64_t key = 0;
    const size_t steps = scaled(200000, 2000);
    for (size_t i = 0; i < steps; i++) {
        if (live.empty() || rng.chance(55)) {
            void *o = pk_pool_alloc(p.get());
            ASSERT_NE(o, nullptr);
            ASSERT_EQ(pk_pool_owner(o), p.get());
            fill_pattern(o, size, key);
            live.emplace_back(o, key++);
        } else {
            size_t k = rng.below(live.size());
            std::swap(live[k], live.back());
            ASSERT_EQ(check_pattern(live.back().first, size, live.back().second), size);
            pk_pool_free(p.get(), live.back().first);
            live.pop_back();
        }
        if (i == steps / 2) {
            std::vector<void *> v;
            for (auto &l : live) v.push_back(l.first);
            ASSERT_TRUE(no_overlap(v, size));
        }
    }
    EXPECT_EQ(stats_of(p.get()).live, live.size());
    for (auto &l : live) pk_pool_free(p.get(), l.first);
    pk_pool_trim(p.get());
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.live, 0u);
    EXPECT_LE(s.slabs, 1u);
}

TEST(PoolLocal, SupportsHooksBulkAndVisit) {
    HookPool h(64, PK_POOL_LOCAL);
    std::vector<void *> objs(1000);
    ASSERT_EQ(pk_pool_alloc_bulk(h.pool.get(), objs.data(), objs.size()), objs.size());
    for (void *o : objs) EXPECT_EQ(h.tracker.check_handed_out(o), "");
    std::vector<void *> seen;
    pk_pool_visit(h.pool.get(), collect, &seen);
    EXPECT_EQ(seen.size(), objs.size());
    pk_pool_free_bulk(h.pool.get(), objs.data(), objs.size());
    EXPECT_EQ(h.tracker.violations(), "");
}
