/* Pools: construct and destruct hooks (object caching), limits and reserves. */
#include "support.h"

#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

using namespace pktest;

/* ======================================================================
 * construct / destruct (object caching)
 * ==================================================================== */


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
            pk_pool_free(h.pool.get(), take_random(live, rng));
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
                pk_pool_free(h.pool.get(), take_random(live, rng));
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
                pk_pool_free(p.get(), take_random(live, rng));
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

/* A thread's heap records come in chunks of keys (1,024 each) mapped as it
 * first uses a pool of the chunk: a reserve maps the calling thread's, so
 * that the allocations it promised ask for nothing. A pool whose key lies
 * in a chunk this thread never used, its reserve, its allocations. */
TEST(PoolReserve, ReservedObjectsNeedNoPageRequestInAPoolOfKeysTheThreadNeverUsed) {
    const size_t chunk = 1024;
    warm_up_thread();
    std::vector<PoolPtr> many;
    auto chunk_of = [&](pk_pool *p) { return (reinterpret_cast<uintptr_t>(p) >> 12 & 0xFFFF) / chunk; };
    PoolPtr mine = make_pool(64);
    pk_pool_free(mine.get(), pk_pool_alloc(mine.get()));
    pk_pool *far = nullptr;
    for (size_t i = 0; i < 2 * chunk + 8 && !far; i++) {
        many.push_back(make_pool(64));
        ASSERT_NE(many.back().get(), nullptr);
        if (chunk_of(many.back().get()) != chunk_of(mine.get())) far = many.back().get();
    }
    ASSERT_NE(far, nullptr) << "no pool in another chunk of keys";
    ASSERT_GE(pk_pool_reserve(far, 100), 100u);
    unsigned long before = pk_fault_requests();
    std::vector<void *> objs = alloc_n(far, 100);
    EXPECT_EQ(pk_fault_requests() - before, 0u) << "allocations within a reserve asked for pages";
    free_all(far, objs);
}

/* The promise holds for pools of every part of the key space: a thread's
 * heap records come in chunks (1,024 keys each) mapped as it uses them,
 * and the table kept ready for the next thread gets the chunks of the
 * pools that exist when it is made, not only of those made after. Pools
 * of two chunks, one reserve each; while a thread holds the ready table,
 * a pool of the first chunk is made (the record of one destroyed: its
 * key), which makes the next ready table, which a new thread takes. */
TEST(PoolReserve, ReservedObjectsNeedNoPageRequestOnAFreshThreadForPoolsOfManyKeys) {
    const size_t chunk = 1024;
    std::vector<PoolPtr> many;
    pk_pool *first = nullptr, *other = nullptr;
    /* a pool's key is its handle's bits 12 to 27 (pool.h) */
    auto chunk_of = [&](pk_pool *p) { return (reinterpret_cast<uintptr_t>(p) >> 12 & 0xFFFF) / chunk; };
    for (size_t i = 0; i < 2 * chunk + 8 && !other; i++) {
        many.push_back(make_pool(64));
        ASSERT_NE(many.back().get(), nullptr);
        if (!first) first = many.back().get();
        else if (chunk_of(many.back().get()) != chunk_of(first)) other = many.back().get();
    }
    ASSERT_NE(other, nullptr) << "no two pools in different chunks of keys";
    ASSERT_GE(pk_pool_reserve(first, 100), 100u);
    ASSERT_GE(pk_pool_reserve(other, 100), 100u);
    pk_pool *again = many[1].get();
    ASSERT_EQ(chunk_of(again), chunk_of(first));
    many[1].reset();
    std::mutex m;
    std::condition_variable cv;
    bool registered = false, done = false;
    pk_pool *reg = many[2].get(); /* not a reserved pool: the holder would take its slab */
    std::thread holder([&] {
        pk_pool_free(reg, pk_pool_alloc(reg)); /* takes the ready table */
        std::unique_lock<std::mutex> l(m);
        registered = true;
        cv.notify_all();
        cv.wait(l, [&] { return done; });
    });
    {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [&] { return registered; });
    }
    PoolPtr last = make_pool(64); /* makes the next ready table */
    EXPECT_EQ(chunk_of(last.get()), chunk_of(first)) << "the destroyed pool's record was not reused";
    unsigned long requests = 0;
    std::thread t([&] {
        unsigned long before = pk_fault_requests();
        std::vector<void *> a = alloc_n(first, 100), b = alloc_n(other, 100);
        requests = pk_fault_requests() - before;
        free_all(first, a);
        free_all(other, b);
    });
    t.join();
    {
        std::lock_guard<std::mutex> l(m);
        done = true;
    }
    cv.notify_all();
    holder.join();
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

/* A pool with a limit: what a reserve says is ready is what allocations
 * can still have, not the free slots its slabs hold past the limit. */
TEST(PoolReserve, APoolAtItsLimitHasNothingReady) {
    pk_pool_config c = make_config(64, 0, 0, "limited");
    c.limit = 10;
    PoolPtr p = make_pool(c);
    std::vector<void *> objs = alloc_n(p.get(), 6);
    ASSERT_EQ(objs.size(), 6u);
    errno = 0;
    EXPECT_EQ(pk_pool_reserve(p.get(), 3), 4u) << "the limit leaves room for 4";
    EXPECT_EQ(errno, 0);
    errno = 0;
    EXPECT_EQ(pk_pool_reserve(p.get(), 5), 4u);
    EXPECT_EQ(errno, ENOMEM);
    std::vector<void *> more = alloc_n(p.get(), 4);
    ASSERT_EQ(more.size(), 4u);
    errno = 0;
    EXPECT_EQ(pk_pool_reserve(p.get(), 1), 0u);
    EXPECT_EQ(errno, ENOMEM);
    errno = 0;
    EXPECT_EQ(pk_pool_alloc(p.get()), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    free_all(p.get(), more);
    EXPECT_EQ(pk_pool_reserve(p.get(), 4), 4u);
    free_all(p.get(), objs);
}

TEST(PoolReserve, ReservedMemoryIsCountedInBytesReserved) {
    PoolPtr p = make_pool(256);
    size_t before = stats_of(p.get()).bytes_reserved;
    ASSERT_GE(pk_pool_reserve(p.get(), 10000), 10000u);
    EXPECT_GE(stats_of(p.get()).bytes_reserved, before + 10000u * 256);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}
