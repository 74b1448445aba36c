/* Pools: one test per behaviour the contract (API.md, pool.h) states. */
#include "support.h"

#include <sys/mman.h>

#include <csignal>
#include <map>
#include <set>
#include <thread>

using namespace pktest;

namespace {

std::vector<void *> alloc_n(pk_pool *p, size_t n) {
    std::vector<void *> v;
    v.reserve(n);
    for (size_t i = 0; i < n; i++) {
        void *o = pk_pool_alloc(p);
        if (!o) break;
        v.push_back(o);
    }
    return v;
}

void free_all(pk_pool *p, std::vector<void *> &v) {
    for (void *o : v) pk_pool_free(p, o);
    v.clear();
}

/* No two of objs (each size bytes) overlap. */
::testing::AssertionResult no_overlap(std::vector<void *> objs, size_t size) {
    std::sort(objs.begin(), objs.end());
    for (size_t i = 1; i < objs.size(); i++) {
        uintptr_t a = reinterpret_cast<uintptr_t>(objs[i - 1]);
        uintptr_t b = reinterpret_cast<uintptr_t>(objs[i]);
        if (a == b) return ::testing::AssertionFailure() << "object " << objs[i] << " handed out twice";
        if (a + size > b)
            return ::testing::AssertionFailure()
                   << "objects " << objs[i - 1] << " and " << objs[i] << " overlap (size " << size << ")";
    }
    return ::testing::AssertionSuccess();
}

void collect(void *obj, void *arg) { static_cast<std::vector<void *> *>(arg)->push_back(obj); }

int static_object[16];

}  // namespace

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

TEST(PoolAlign, ZeroMeansLargestPowerOfTwoDividingSizeCappedAtMaxAlignT) {
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
 * construct / destruct (object caching)
 * ==================================================================== */

namespace {

struct HookPool {
    HookTracker tracker;
    PoolPtr pool;
    explicit HookPool(size_t size, unsigned flags = 0, size_t align = 0) : tracker(size) {
        pk_pool_config c = make_config(size, align, flags, "hooked");
        tracker.install(c);
        pool = make_pool(c);
    }
};

}  // namespace

TEST(PoolHooks, ConstructRunsNoLaterThanFirstHandOut) {
    HookPool h(56);
    ASSERT_NE(h.pool.get(), nullptr);
    std::vector<void *> objs = alloc_n(h.pool.get(), 3000);
    ASSERT_EQ(objs.size(), 3000u);
    for (void *o : objs) EXPECT_EQ(h.tracker.check_handed_out(o), "") << o;
    EXPECT_GE(h.tracker.constructs(), 3000);
    free_all(h.pool.get(), objs);
    EXPECT_EQ(h.tracker.violations(), "");
}

TEST(PoolHooks, ConstructRunsAtMostOncePerObjectPerStay) {
    HookPool h(24);
    Rng rng(3);
    std::vector<void *> live;
    std::set<void *> seen;
    const size_t steps = scaled(50000, 1000);
    for (size_t i = 0; i < steps; i++) {
        if (live.empty() || rng.chance(52)) {
            void *o = pk_pool_alloc(h.pool.get());
            ASSERT_NE(o, nullptr);
            seen.insert(o);
            live.push_back(o);
        } else {
            size_t k = rng.below(live.size());
            std::swap(live[k], live.back());
            pk_pool_free(h.pool.get(), live.back());
            live.pop_back();
        }
    }
    EXPECT_EQ(h.tracker.double_constructs(), 0);
    EXPECT_GE(static_cast<size_t>(h.tracker.constructs()), seen.size());
    free_all(h.pool.get(), live);
    EXPECT_EQ(h.tracker.violations(), "");
}

TEST(PoolHooks, FreedObjectKeepsTheStateItsUserLeft) {
    for (unsigned flags : {0u, unsigned(PK_POOL_LOCAL), unsigned(PK_POOL_HARDENED), unsigned(PK_POOL_DEBUG)}) {
        HookPool h(40, flags);
        ASSERT_NE(h.pool.get(), nullptr);
        Rng rng(11);
        uint64_t key = 1;
        std::vector<void *> live;
        const size_t steps = scaled(30000, 1000);
        for (size_t i = 0; i < steps; i++) {
            if (live.empty() || rng.chance(50)) {
                void *o = pk_pool_alloc(h.pool.get());
                ASSERT_NE(o, nullptr);
                ASSERT_EQ(h.tracker.check_handed_out(o), "") << "flags " << flags << " step " << i;
                fill_pattern(o, 40, key);
                h.tracker.set_state(o, key++);
                live.push_back(o);
            } else {
                size_t k = rng.below(live.size());
                std::swap(live[k], live.back());
                pk_pool_free(h.pool.get(), live.back());
                live.pop_back();
            }
        }
        free_all(h.pool.get(), live);
        EXPECT_EQ(h.tracker.violations(), "") << "flags " << flags;
    }
}

TEST(PoolHooks, DestructRunsWhenTrimGivesMemoryBack) {
    HookPool h(200);
    std::vector<void *> objs = alloc_n(h.pool.get(), 20000);
    ASSERT_EQ(objs.size(), 20000u);
    free_all(h.pool.get(), objs);
    long before = h.tracker.destructs();
    size_t released = pk_pool_trim(h.pool.get());
    EXPECT_GT(released, 0u);
    EXPECT_GT(h.tracker.destructs(), before);
    /* whatever is still constructed must fit in the slabs still held */
    pk_pool_stats s = stats_of(h.pool.get());
    EXPECT_LE(h.tracker.constructed_now() * 200, s.bytes_reserved);
    EXPECT_EQ(h.tracker.violations(), "");
}

TEST(PoolHooks, ConstructAndDestructCountsMatchAfterDestroy) {
    HookTracker t(88);
    {
        pk_pool_config c = make_config(88, 8, 0, "counted");
        t.install(c);
        PoolPtr p = make_pool(c);
        Rng rng(5);
        std::vector<void *> live;
        const size_t steps = scaled(40000, 2000);
        for (size_t i = 0; i < steps; i++) {
            if (live.empty() || rng.chance(60)) {
                live.push_back(pk_pool_alloc(p.get()));
            } else {
                size_t k = rng.below(live.size());
                std::swap(live[k], live.back());
                pk_pool_free(p.get(), live.back());
                live.pop_back();
            }
            if (i == steps / 2) pk_pool_trim(p.get());
        }
        free_all(p.get(), live);
    }
    EXPECT_GT(t.constructs(), 0);
    EXPECT_EQ(t.constructs(), t.destructs());
    EXPECT_EQ(t.constructed_now(), 0u);
    EXPECT_EQ(t.violations(), "");
}

TEST(PoolHooks, DestroyRunsDestructOnLiveObjectsToo) {
    ErrorCapture errors;
    HookTracker t(64);
    {
        pk_pool_config c = make_config(64, 0, 0, "leaky");
        t.install(c);
        PoolPtr p = make_pool(c);
        std::vector<void *> objs = alloc_n(p.get(), 100);
        for (size_t i = 0; i < objs.size(); i++) {
            fill_pattern(objs[i], 64, 1000 + i);
            t.set_state(objs[i], 1000 + i);
        }
    }
    EXPECT_EQ(t.constructs(), t.destructs());
    EXPECT_EQ(t.constructed_now(), 0u);
    EXPECT_EQ(t.violations(), "");
}

TEST(PoolHooks, BulkAllocatedObjectsAreConstructed) {
    HookPool h(32);
    std::vector<void *> objs(700);
    ASSERT_EQ(pk_pool_alloc_bulk(h.pool.get(), objs.data(), objs.size()), objs.size());
    for (void *o : objs) EXPECT_EQ(h.tracker.check_handed_out(o), "");
    pk_pool_free_bulk(h.pool.get(), objs.data(), objs.size());
    EXPECT_EQ(h.tracker.violations(), "");
}

namespace {
struct ArgSeen {
    int good = 0, bad = 0;
};
ArgSeen *expected_arg;
void count_arg(void *, void *arg) {
    if (arg == expected_arg)
        expected_arg->good++;
    else
        expected_arg->bad++;
}
}  // namespace

TEST(PoolHooks, ReceiveTheConfiguredArg) {
    ArgSeen seen;
    expected_arg = &seen;
    {
        pk_pool_config c = make_config(16);
        c.construct = count_arg;
        c.destruct = count_arg;
        c.arg = &seen;
        PoolPtr p = make_pool(c);
        std::vector<void *> objs = alloc_n(p.get(), 10);
        free_all(p.get(), objs);
    }
    EXPECT_GE(seen.good, 20);
    EXPECT_EQ(seen.bad, 0);
    expected_arg = nullptr;
}

TEST(PoolHooks, DestructOnlyPoolRunsDestructForEveryObjectThatLeaves) {
    static long destructed;
    destructed = 0;
    {
        pk_pool_config c = make_config(16);
        c.destruct = [](void *, void *) { destructed++; };
        PoolPtr p = make_pool(c);
        ASSERT_NE(p.get(), nullptr);
        std::vector<void *> objs = alloc_n(p.get(), 10);
        free_all(p.get(), objs);
    }
    EXPECT_GE(destructed, 10);
}

/* ======================================================================
 * limit
 * ==================================================================== */

TEST(PoolLimit, AllocReturnsNullWithENOMEMAtTheLimit) {
    pk_pool_config c = make_config(32);
    c.limit = 10;
    PoolPtr p = make_pool(c);
    std::vector<void *> objs = alloc_n(p.get(), 10);
    ASSERT_EQ(objs.size(), 10u);
    errno = 0;
    EXPECT_EQ(pk_pool_alloc(p.get()), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_EQ(stats_of(p.get()).live, 10u);
    free_all(p.get(), objs);
}

TEST(PoolLimit, AllocWorksAgainAfterAFree) {
    pk_pool_config c = make_config(32);
    c.limit = 3;
    PoolPtr p = make_pool(c);
    std::vector<void *> objs = alloc_n(p.get(), 3);
    ASSERT_EQ(objs.size(), 3u);
    for (int i = 0; i < 1000; i++) {
        errno = 0;
        ASSERT_EQ(pk_pool_alloc(p.get()), nullptr);
        ASSERT_EQ(errno, ENOMEM);
        pk_pool_free(p.get(), objs.back());
        objs.back() = pk_pool_alloc(p.get());
        ASSERT_NE(objs.back(), nullptr);
    }
    free_all(p.get(), objs);
}

TEST(PoolLimit, BulkAllocStopsAtTheLimitWithENOMEM) {
    pk_pool_config c = make_config(32);
    c.limit = 100;
    PoolPtr p = make_pool(c);
    void *single = pk_pool_alloc(p.get());
    std::vector<void *> objs(150);
    errno = 0;
    size_t got = pk_pool_alloc_bulk(p.get(), objs.data(), objs.size());
    EXPECT_EQ(got, 99u);
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_EQ(stats_of(p.get()).live, 100u);
    pk_pool_free_bulk(p.get(), objs.data(), got);
    pk_pool_free(p.get(), single);
    EXPECT_EQ(pk_pool_alloc_bulk(p.get(), objs.data(), 100), 100u);
    pk_pool_free_bulk(p.get(), objs.data(), 100);
}

TEST(PoolLimit, ZeroMeansNoLimit) {
    PoolPtr p = make_pool(16);
    std::vector<void *> objs = alloc_n(p.get(), 200000);
    EXPECT_EQ(objs.size(), 200000u);
    free_all(p.get(), objs);
}

/* ======================================================================
 * reserve
 * ==================================================================== */

namespace {
/* Makes sure this thread's own bookkeeping exists, so that only the pool
 * under test can make page requests. */
void warm_up_thread() {
    PoolPtr w = make_pool(8);
    void *o = pk_pool_alloc(w.get());
    pk_pool_free(w.get(), o);
}
}  // namespace

TEST(PoolReserve, ReserveAtCreationMakesThatManyAllocsNeedNoPageRequest) {
    warm_up_thread();
    for (size_t size : {16u, 200u, 4096u, 1u << 20}) {
        size_t n = size >= (1u << 20) ? 4 : 1000;
        pk_pool_config c = make_config(size);
        c.reserve = n;
        PoolPtr p = make_pool(c);
        ASSERT_NE(p.get(), nullptr);
        unsigned long before = pk_fault_requests();
        std::vector<void *> objs = alloc_n(p.get(), n);
        ASSERT_EQ(objs.size(), n);
        EXPECT_EQ(pk_fault_requests(), before) << "size " << size << ": allocs within the reserve asked for pages";
        free_all(p.get(), objs);
    }
}

/* The contract's "n more allocs need no system call" holds on a thread
 * that never used poolkit before too. */
TEST(PoolReserve, ReservedObjectsNeedNoPageRequestOnAFreshThread) {
    pk_pool_config c = make_config(64);
    c.reserve = 100;
    PoolPtr p = make_pool(c);
    ASSERT_NE(p.get(), nullptr);
    unsigned long requests = 0;
    std::thread t([&] {
        unsigned long before = pk_fault_requests();
        std::vector<void *> objs = alloc_n(p.get(), 100);
        requests = pk_fault_requests() - before;
        free_all(p.get(), objs);
    });
    t.join();
    EXPECT_EQ(requests, 0u) << "a new thread's first allocations asked for pages";
}

TEST(PoolReserve, ReturnsAtLeastNAndThatManyAllocsThenNeedNoPageRequest) {
    warm_up_thread();
    for (size_t size : {8u, 64u, 4096u, 1u << 20}) {
        for (size_t n : {1u, 100u, 5000u}) {
            if (size >= (1u << 20) && n > 4) continue;
            PoolPtr p = make_pool(size);
            std::vector<void *> keep = alloc_n(p.get(), 3);
            errno = 0;
            size_t ready = pk_pool_reserve(p.get(), n);
            EXPECT_GE(ready, n) << "size " << size << " n " << n;
            unsigned long before = pk_fault_requests();
            std::vector<void *> objs = alloc_n(p.get(), n);
            ASSERT_EQ(objs.size(), n);
            EXPECT_EQ(pk_fault_requests(), before) << "size " << size << " n " << n;
            free_all(p.get(), objs);
            free_all(p.get(), keep);
        }
    }
}

TEST(PoolReserve, ReturnsHowManyObjectsAreReadyNow) {
    PoolPtr p = make_pool(64);
    size_t first = pk_pool_reserve(p.get(), 500);
    ASSERT_GE(first, 500u);
    EXPECT_GE(pk_pool_reserve(p.get(), 10), first) << "the objects made ready before are still ready";
    EXPECT_GE(pk_pool_reserve(p.get(), 0), first);
}

TEST(PoolReserve, ReservedMemoryIsCountedInBytesReserved) {
    PoolPtr p = make_pool(256);
    size_t before = stats_of(p.get()).bytes_reserved;
    ASSERT_GE(pk_pool_reserve(p.get(), 10000), 10000u);
    EXPECT_GE(stats_of(p.get()).bytes_reserved, before + 10000u * 256);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

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
    EXPECT_EQ(s.allocs, 0u);
    EXPECT_EQ(s.frees, 0u);
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
                size_t k = rng.below(live.size());
                std::swap(live[k], live.back());
                pk_pool_free(p.get(), live.back());
                live.pop_back();
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
    EXPECT_GE(s.allocs, 3000u);
    EXPECT_GE(s.allocs - s.frees, s.live);
    EXPECT_EQ(s.live, 1500u);
    free_all(p.get(), objs);
    pk_pool_trim(p.get());
    s = stats_of(p.get());
    EXPECT_EQ(s.allocs, s.frees) << "after trim no object is outside the slabs";
}

TEST(PoolStats, NoRemoteFreesOnOneThread) {
    PoolPtr p = make_pool(32);
    for (int r = 0; r < 10; r++) {
        std::vector<void *> objs = alloc_n(p.get(), 2000);
        free_all(p.get(), objs);
    }
    EXPECT_EQ(stats_of(p.get()).remote_frees, 0u);
}

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
    struct Delay {
        long old = pk_set_purge_delay(0);
        ~Delay() { pk_set_purge_delay(old); }
    } delay;
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

/* ======================================================================
 * destroy
 * ==================================================================== */

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

/* ======================================================================
 * PK_POOL_DEBUG and PK_POOL_HARDENED: detected misuse (death tests)
 * ==================================================================== */

namespace {
std::string fatal_line(const char *what, const char *pool, const void *ptr) {
    return std::string("HANDLER severity=FATAL what=") + what + " pool=" + pool + " ptr=" + ptr_str(ptr);
}
}  // namespace

TEST(PoolDebugDeathTest, DoubleFreeOfTheLastFreedObjectIsFatal) {
    PoolPtr p = make_pool(64, 0, PK_POOL_DEBUG, "dbgpool");
    void *a = pk_pool_alloc(p.get());
    EXPECT_DEATH(
        {
            pk_set_error_handler(print_fields_handler, nullptr);
            pk_pool_free(p.get(), a);
            pk_pool_free(p.get(), a);
        },
        fatal_line("double free", "dbgpool", a));
    pk_pool_free(p.get(), a);
}

TEST(PoolDebugDeathTest, DoubleFreeOfAnEarlierFreedObjectIsFatal) {
    PoolPtr p = make_pool(64, 0, PK_POOL_DEBUG, "dbgpool");
    void *a = pk_pool_alloc(p.get());
    void *b = pk_pool_alloc(p.get());
    void *c = pk_pool_alloc(p.get());
    EXPECT_DEATH(
        {
            pk_set_error_handler(print_fields_handler, nullptr);
            pk_pool_free(p.get(), a);
            pk_pool_free(p.get(), b);
            pk_pool_free(p.get(), c);
            pk_pool_free(p.get(), a);
        },
        fatal_line("double free", "dbgpool", a));
    pk_pool_free(p.get(), a);
    pk_pool_free(p.get(), b);
    pk_pool_free(p.get(), c);
}

TEST(PoolDebugDeathTest, DoubleFreeAfterManyOtherFreesIsFatal) {
    PoolPtr p = make_pool(32, 0, PK_POOL_DEBUG, "dbgpool");
    std::vector<void *> objs = alloc_n(p.get(), 5000);
    void *victim = objs[17];
    EXPECT_DEATH(
        {
            pk_set_error_handler(print_fields_handler, nullptr);
            for (void *o : objs) pk_pool_free(p.get(), o);
            pk_pool_free(p.get(), victim);
        },
        fatal_line("double free", "dbgpool", victim));
    free_all(p.get(), objs);
}

TEST(PoolDebugDeathTest, FreeOfAMallocPointerIsFatal) {
    PoolPtr p = make_pool(64, 0, PK_POOL_DEBUG, "dbgpool");
    void *m = std::malloc(64);
    EXPECT_DEATH(
        {
            pk_set_error_handler(print_fields_handler, nullptr);
            pk_pool_free(p.get(), m);
        },
        fatal_line("foreign pointer", "dbgpool", m));
    std::free(m);
}

TEST(PoolDebugDeathTest, FreeOfAStackPointerIsFatal) {
    PoolPtr p = make_pool(64, 0, PK_POOL_DEBUG, "dbgpool");
    alignas(64) char stack[64];
    EXPECT_DEATH(
        {
            pk_set_error_handler(print_fields_handler, nullptr);
            pk_pool_free(p.get(), stack);
        },
        fatal_line("foreign pointer", "dbgpool", stack));
}

TEST(PoolDebugDeathTest, FreeOfAnotherPoolsObjectIsFatal) {
    PoolPtr p = make_pool(64, 0, PK_POOL_DEBUG, "dbgpool");
    PoolPtr q = make_pool(64, 0, 0, "otherpool");
    void *o = pk_pool_alloc(q.get());
    EXPECT_DEATH(
        {
            pk_set_error_handler(print_fields_handler, nullptr);
            pk_pool_free(p.get(), o);
        },
        "HANDLER severity=FATAL what=[a-z -]+ pool=dbgpool ptr=" + ptr_str(o));
    pk_pool_free(q.get(), o);
}

TEST(PoolDebugDeathTest, FreeOfAnInteriorPointerIsFatal) {
    PoolPtr p = make_pool(64, 0, PK_POOL_DEBUG, "dbgpool");
    void *o = pk_pool_alloc(p.get());
    char *inner = static_cast<char *>(o) + 8;
    EXPECT_DEATH(
        {
            pk_set_error_handler(print_fields_handler, nullptr);
            pk_pool_free(p.get(), inner);
        },
        "HANDLER severity=FATAL what=[a-z -]*pointer pool=dbgpool ptr=" + ptr_str(inner));
    pk_pool_free(p.get(), o);
}

TEST(PoolDebugDeathTest, DefaultHandlerPrintsOneLineNamingFaultPoolAndPointer) {
    PoolPtr p = make_pool(64, 0, PK_POOL_DEBUG, "dbgpool");
    void *a = pk_pool_alloc(p.get());
    std::string ptr = ptr_str(a);
    EXPECT_DEATH(
        {
            pk_set_error_handler(nullptr, nullptr);
            pk_pool_free(p.get(), a);
            pk_pool_free(p.get(), a);
        },
        "poolkit: double free: [^\n]*(dbgpool[^\n]*" + ptr + "|" + ptr + "[^\n]*dbgpool)");
    pk_pool_free(p.get(), a);
}

/* Redzones: a write just past the end of an object is caught when the
 * object is freed. (Skipped under ASan and valgrind, which report the write
 * themselves.) */
TEST(PoolDebugDeathTest, WritePastTheEndIsReportedAtFree) {
    if (running_under_valgrind() || PKTEST_ASAN) GTEST_SKIP() << "writes out of bounds on purpose";
    PoolPtr p = make_pool(40, 0, PK_POOL_DEBUG, "dbgpool");
    void *o = pk_pool_alloc(p.get());
    EXPECT_DEATH(
        {
            pk_set_error_handler(print_fields_handler, nullptr);
            static_cast<unsigned char *>(o)[40] ^= 0xFF;
            pk_pool_free(p.get(), o);
        },
        "HANDLER severity=FATAL what=[a-z -]+ pool=dbgpool ptr=" + ptr_str(o));
    pk_pool_free(p.get(), o);
}

/* Poisoning: a write into a freed object is caught by the time its memory
 * is reused or given back. */
TEST(PoolDebugDeathTest, WriteAfterFreeIsReportedBeforeTheMemoryMovesOn) {
    if (running_under_valgrind() || PKTEST_ASAN) GTEST_SKIP() << "writes to freed memory on purpose";
    PoolPtr p = make_pool(40, 0, PK_POOL_DEBUG, "dbgpool");
    std::vector<void *> objs = alloc_n(p.get(), 100);
    void *victim = objs[50];
    EXPECT_DEATH(
        {
            pk_set_error_handler(print_fields_handler, nullptr);
            for (void *o : objs) pk_pool_free(p.get(), o);
            static_cast<unsigned char *>(victim)[3] ^= 0x5A;
            std::vector<void *> again = alloc_n(p.get(), 1000);
            free_all(p.get(), again);
            pk_pool_trim(p.get());
            pk_pool_destroy(p.get());
        },
        "HANDLER severity=FATAL what=[a-z -]+ pool=dbgpool ptr=" + ptr_str(victim));
    free_all(p.get(), objs);
}

namespace {
void silent_handler(const pk_error *, void *) {}
}  // namespace

TEST(PoolDebugDeathTest, FatalErrorWhoseHandlerReturnsStillAborts) {
    PoolPtr p = make_pool(64, 0, PK_POOL_DEBUG, "dbgpool");
    void *a = pk_pool_alloc(p.get());
    EXPECT_EXIT(
        {
            pk_set_error_handler(silent_handler, nullptr);
            pk_pool_free(p.get(), a);
            pk_pool_free(p.get(), a);
            std::fprintf(stderr, "returned after a double free\n");
            std::_Exit(0);
        },
        ::testing::KilledBySignal(SIGABRT), "");
    pk_pool_free(p.get(), a);
}

TEST(PoolHardenedDeathTest, FreeOfAMallocPointerIsFatal) {
    PoolPtr p = make_pool(64, 0, PK_POOL_HARDENED, "hardpool");
    void *m = std::malloc(64);
    EXPECT_DEATH(
        {
            pk_set_error_handler(print_fields_handler, nullptr);
            pk_pool_free(p.get(), m);
        },
        "HANDLER severity=FATAL what=[a-z -]+ pool=hardpool ptr=" + ptr_str(m));
    std::free(m);
}

TEST(PoolHardenedDeathTest, FreeOfAnotherPoolsObjectIsFatal) {
    PoolPtr p = make_pool(64, 0, PK_POOL_HARDENED, "hardpool");
    PoolPtr q = make_pool(64, 0, 0, "otherpool");
    void *o = pk_pool_alloc(q.get());
    EXPECT_DEATH(
        {
            pk_set_error_handler(print_fields_handler, nullptr);
            pk_pool_free(p.get(), o);
        },
        "HANDLER severity=FATAL what=[a-z -]+ pool=hardpool ptr=" + ptr_str(o));
    pk_pool_free(q.get(), o);
}

namespace {
alignas(64) char forged_target[64 * 64];

/* Frees objs, overwrites them with forged links, then allocates: exits 0 if
 * only genuine free objects came out, 1 if a forged one did (a detected
 * corruption aborts instead). */
void forge_links_then_allocate(pk_pool *p, std::vector<void *> objs, std::vector<void *> live) {
    std::set<void *> live_set(live.begin(), live.end());
    for (void *o : objs) pk_pool_free(p, o);
    const uintptr_t forged[3] = {reinterpret_cast<uintptr_t>(forged_target + 64),
                                 reinterpret_cast<uintptr_t>(live[3]), 0x4141414141414141ull};
    for (size_t i = 0; i < objs.size(); i++) {
        uintptr_t *w = static_cast<uintptr_t *>(objs[i]);
        for (size_t k = 0; k < 8; k++) w[k] = forged[(i + k) % 3];
    }
    for (int i = 0; i < 400; i++) {
        void *o = pk_pool_alloc(p);
        if (!o) continue;
        if (pk_pool_owner(o) != p || live_set.count(o)) {
            std::fprintf(stderr, "forged pointer %p handed out\n", o);
            std::_Exit(1);
        }
        live_set.insert(o);
    }
    std::_Exit(0);
}

bool exited_cleanly_or_aborted(int status) {
    return (WIFEXITED(status) && WEXITSTATUS(status) == 0) || (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
}
}  // namespace

/* Overwrites freed objects (a use after free) with pointers of the caller's
 * choosing; a hardened pool either reports it or hands out only its own free
 * objects, never a forged one. */
TEST(PoolHardenedDeathTest, ForgedFreeListLinkIsNeverHandedOut) {
    if (running_under_valgrind() || PKTEST_ASAN) GTEST_SKIP() << "writes to freed memory on purpose";
    PoolPtr p = make_pool(64, 0, PK_POOL_HARDENED, "hardpool");
    std::vector<void *> objs = alloc_n(p.get(), 200);
    std::vector<void *> live = alloc_n(p.get(), 10);
    EXPECT_EXIT(forge_links_then_allocate(p.get(), objs, live), exited_cleanly_or_aborted, "");
    free_all(p.get(), objs);
    free_all(p.get(), live);
}

/* Pools that always take the slow path (here: a limit) check every free. */
TEST(PoolSlowPathDeathTest, FreeOfAMallocPointerIsDetected) {
    pk_pool_config c = make_config(64, 0, 0, "limited");
    c.limit = 1000;
    PoolPtr p = make_pool(c);
    void *m = std::malloc(64);
    EXPECT_DEATH(
        {
            pk_set_error_handler(print_fields_handler, nullptr);
            pk_pool_free(p.get(), m);
        },
        "HANDLER severity=FATAL what=[a-z -]+ pool=limited ptr=" + ptr_str(m));
    std::free(m);
}

/* Pools with per-object work (zeroing, hooks) take the slow path on every
 * call, and pool.h promises the check on every slow path. */
TEST(PoolSlowPathDeathTest, ZeroPoolDetectsAMallocPointer) {
    PoolPtr p = make_pool(64, 0, PK_POOL_ZERO, "zeroed");
    void *m = std::malloc(64);
    EXPECT_DEATH(
        {
            pk_set_error_handler(print_fields_handler, nullptr);
            pk_pool_free(p.get(), m);
            void *o = pk_pool_alloc(p.get());
            std::fprintf(stderr, "alloc after the bad free returned %p\n", o);
        },
        "HANDLER severity=FATAL what=[a-z -]+ pool=zeroed ptr=" + ptr_str(m));
    std::free(m);
}

TEST(PoolSlowPathDeathTest, HookPoolDetectsAnotherPoolsObject) {
    HookPool h(64);
    PoolPtr q = make_pool(64, 0, 0, "otherpool");
    void *o = pk_pool_alloc(q.get());
    EXPECT_DEATH(
        {
            pk_set_error_handler(print_fields_handler, nullptr);
            pk_pool_free(h.pool.get(), o);
            void *x = pk_pool_alloc(h.pool.get());
            std::fprintf(stderr, "alloc after the bad free returned %p\n", x);
        },
        "HANDLER severity=FATAL what=[a-z -]+ pool=hooked ptr=" + ptr_str(o));
    pk_pool_free(q.get(), o);
}
