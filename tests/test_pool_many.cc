/* Any number of pools (API.md, "Scale"): each of tens of thousands of live
 * pools works like the only one (contents, owner, stats); pools made and
 * destroyed hundreds of thousands of times leak nothing while other threads
 * use long-lived pools; pk_new's objects, whose size classes are pools
 * themselves, keep working beside many user pools. */
#include "support.h"

#include <atomic>
#include <thread>

using namespace pktest;

namespace {

constexpr size_t kMiB = size_t(1) << 20;

/* Sizes from 1 byte to a few KiB, so pools of many geometries live at once. */
size_t size_for(size_t i) {
    static const size_t sizes[] = {1, 8, 16, 24, 40, 48, 64, 72, 100, 128, 200, 256, 333, 512, 1000, 4096, 5000};
    return sizes[i % (sizeof sizes / sizeof sizes[0])];
}

struct LivePool {
    pk_pool *pool;
    size_t size;
    std::vector<void *> objs;
};

uint64_t key_of(size_t pool, size_t obj) { return (uint64_t(pool) << 20) | obj; }

/* Makes n pools, each holding `per_pool` objects with their patterns, then
 * checks every pool and object, frees and destroys them all. */
void expect_many_live_pools_work(size_t n, size_t per_pool) {
    std::vector<LivePool> pools(n);
    for (size_t i = 0; i < n; i++) {
        LivePool &lp = pools[i];
        lp.size = size_for(i);
        pk_pool_config c = make_config(lp.size, 0, i % 13 == 0 ? unsigned(PK_POOL_HARDENED) : 0u, "many");
        errno = 0;
        lp.pool = pk_pool_create(&c);
        ASSERT_NE(lp.pool, nullptr) << "pool " << i << " of " << n << ": errno " << errno;
        for (size_t k = 0; k < per_pool; k++) {
            void *o = pk_pool_alloc(lp.pool);
            ASSERT_NE(o, nullptr) << "pool " << i << " object " << k;
            fill_pattern(o, lp.size, key_of(i, k));
            lp.objs.push_back(o);
        }
        /* free and allocate again: the pool's cache works too */
        pk_pool_free(lp.pool, lp.objs.back());
        lp.objs.back() = pk_pool_alloc(lp.pool);
        ASSERT_NE(lp.objs.back(), nullptr);
        fill_pattern(lp.objs.back(), lp.size, key_of(i, per_pool - 1));
    }
    /* every pool, after all the others were made */
    for (size_t i = 0; i < n; i++) {
        LivePool &lp = pools[i];
        pk_pool_stats s = stats_of(lp.pool);
        ASSERT_EQ(s.live, per_pool) << "pool " << i;
        ASSERT_STREQ(s.name, "many") << "pool " << i;
        ASSERT_GE(s.size, lp.size) << "pool " << i;
        ASSERT_GE(s.slabs, 1u) << "pool " << i;
        for (size_t k = 0; k < per_pool; k++) {
            void *o = lp.objs[k];
            ASSERT_EQ(pk_pool_owner(o), lp.pool) << "pool " << i << " object " << k;
            ASSERT_EQ(check_pattern(o, lp.size, key_of(i, k)), lp.size) << "pool " << i << " object " << k;
        }
    }
    /* free in an order that mixes pools, then check and destroy */
    for (size_t k = 0; k < per_pool; k++)
        for (size_t i = 0; i < n; i++) pk_pool_free(pools[i].pool, pools[i].objs[k]);
    for (size_t i = 0; i < n; i++) {
        ASSERT_EQ(stats_of(pools[i].pool).live, 0u) << "pool " << i;
        pk_pool_destroy(pools[i].pool);
    }
}

}  // namespace

/* Counts are scaled down under slow tools, never below what makes the
 * point: thousands of pools, far more than any per-thread table of caches. */
TEST(ManyPools, TenThousandLivePoolsEachWork) { expect_many_live_pools_work(scaled(10000, 5000), 5); }

TEST(ManyPools, TwentyThousandLivePoolsEachWork) { expect_many_live_pools_work(scaled(20000, 10000), 3); }

TEST(ManyPools, PoolMadeAfterTenThousandOthersIsServedLikeTheFirst) {
    /* A pool made when 10,000 others are live serves a loop the way the
     * first pool did: from the thread's cache (stats.taken moves per refill
     * between cache and pool, so it moves no more than for the first pool),
     * with no more slabs and no page requests. */
    const size_t n = scaled(10000, 2000);
    struct Churn {
        uint64_t allocs;
        pk_pool_stats after;
    };
    auto churn = [](pk_pool *p) {
        std::vector<void *> objs;
        auto round = [&] {
            for (int i = 0; i < 50; i++) objs.push_back(pk_pool_alloc(p));
            for (void *o : objs) pk_pool_free(p, o);
            objs.clear();
        };
        round(); /* warm up: the thread's cache for p is made */
        uint64_t a0 = stats_of(p).taken;
        for (int r = 0; r < 200; r++) round();
        Churn c;
        c.after = stats_of(p);
        c.allocs = c.after.taken - a0;
        return c;
    };
    PoolPtr first = make_pool(48, 0, 0, "first");
    Churn alone = churn(first.get());
    std::vector<PoolPtr> others;
    for (size_t i = 0; i < n; i++) {
        others.push_back(make_pool(size_for(i), 0, 0, "other"));
        ASSERT_NE(others.back().get(), nullptr) << "pool " << i;
        pk_pool_free(others.back().get(), pk_pool_alloc(others.back().get()));
    }
    PoolPtr last = make_pool(48, 0, 0, "last");
    unsigned long requests = pk_fault_requests();
    Churn crowded = churn(last.get());
    EXPECT_EQ(crowded.after.live, 0u);
    EXPECT_LE(crowded.allocs, alone.allocs + 64)
        << "10,000 allocations of 50 objects at a time: the first pool handed " << alone.allocs
        << " objects across its slabs, the pool made after " << n << " others " << crowded.allocs
        << " (is it served from a thread cache at all?)";
    EXPECT_LE(crowded.after.slabs, alone.after.slabs);
    EXPECT_LE(crowded.after.bytes_reserved, alone.after.bytes_reserved);
    EXPECT_LE(pk_fault_requests() - requests, 2u) << "a loop over 50 objects asked for pages again and again";
}

TEST(ManyPools, CreatedAndDestroyedHundredsOfThousandsOfTimesWhileOtherThreadsAllocateLeakNothing) {
    const size_t rounds = scaled(300000, 5000);
    std::atomic<bool> stop{false};
    std::atomic<size_t> bad{0};
    /* long-lived pools, used by two threads meanwhile */
    std::vector<PoolPtr> lasting;
    for (size_t size : {32u, 96u, 700u}) lasting.push_back(make_pool(size, 0, 0, "lasting"));
    std::vector<std::thread> workers;
    for (int t = 0; t < 2; t++)
        workers.emplace_back([&, t] {
            Rng rng(static_cast<uint64_t>(t) + 11);
            std::vector<std::pair<void *, uint64_t>> mine[3];
            uint64_t key = uint64_t(t) << 40;
            while (!stop.load(std::memory_order_relaxed)) {
                size_t k = rng.below(3);
                pk_pool *p = lasting[k].get();
                if (mine[k].size() < 2000 && rng.chance(55)) {
                    void *o = pk_pool_alloc(p);
                    if (!o) {
                        bad++;
                        continue;
                    }
                    std::memcpy(o, &++key, 8);
                    mine[k].emplace_back(o, key);
                } else if (!mine[k].empty()) {
                    size_t j = rng.below(mine[k].size());
                    std::swap(mine[k][j], mine[k].back());
                    uint64_t got;
                    std::memcpy(&got, mine[k].back().first, 8);
                    if (got != mine[k].back().second) bad++;
                    pk_pool_free(p, mine[k].back().first);
                    mine[k].pop_back();
                }
            }
            for (int k = 0; k < 3; k++)
                for (auto &e : mine[k]) pk_pool_free(lasting[size_t(k)].get(), e.first);
        });

    const bool measure = !running_under_valgrind() && !PKTEST_ASAN;
    size_t rss_warm = 0, vm_warm = 0;
    for (size_t r = 0; r < rounds; r++) {
        if (r == rounds / 4) {
            rss_warm = rss_bytes();
            vm_warm = vm_bytes();
        }
        size_t size = size_for(r);
        pk_pool_config c = make_config(size, 0, r % 5 == 0 ? unsigned(PK_POOL_DEBUG) : 0u, "transient");
        pk_pool *p = pk_pool_create(&c);
        if (!p) {
            ADD_FAILURE() << "pk_pool_create failed in round " << r << ", errno " << errno;
            break;
        }
        void *objs[4];
        for (size_t i = 0; i < 4; i++) {
            objs[i] = pk_pool_alloc(p);
            if (!objs[i] || pk_pool_owner(objs[i]) != p) {
                bad++;
                objs[i] = nullptr;
                continue;
            }
            fill_pattern(objs[i], size, r * 4 + i);
        }
        pk_pool_stats s = stats_of(p);
        if (s.live != 4 || s.slabs < 1) bad++;
        for (size_t i = 0; i < 4; i++) {
            if (!objs[i]) continue;
            if (check_pattern(objs[i], size, r * 4 + i) != size) bad++;
            pk_pool_free(p, objs[i]);
        }
        pk_pool_destroy(p);
    }
    size_t rss_end = rss_bytes(), vm_end = vm_bytes();
    stop = true;
    for (auto &t : workers) t.join();
    EXPECT_EQ(bad.load(), 0u);
    for (auto &p : lasting) {
        pk_pool_trim(p.get());
        pk_pool_stats s = stats_of(p.get());
        EXPECT_EQ(s.live, 0u) << s.size << "-byte lasting pool";
        EXPECT_LE(s.slabs, 1u) << s.size << "-byte lasting pool";
    }
    /* The memory of destroyed pools that is kept for reuse is bounded
     * (pool.h, pk_pool_release_cache: 16 MiB of slabs, 64 records). */
    EXPECT_LE(pk_pool_release_cache(), 17 * kMiB);
    if (measure && rss_warm && vm_warm) {
        EXPECT_LE(rss_end, rss_warm + 16 * kMiB)
            << "resident size grew from " << rss_warm / 1024 << " KiB to " << rss_end / 1024 << " KiB over "
            << rounds - rounds / 4 << " pools made and destroyed";
        EXPECT_LE(vm_end, vm_warm + 256 * kMiB)
            << "virtual size grew from " << vm_warm / kMiB << " MiB to " << vm_end / kMiB << " MiB over "
            << rounds - rounds / 4 << " pools made and destroyed";
    }
}

/* ======================================================================
 * Objects of pk_new beside many user pools
 * ==================================================================== */

namespace {

std::atomic<long> g_deallocs{0};
void counted_dealloc(void *) { g_deallocs++; }

}  // namespace

TEST(ManyPools, ObjectsOfPkNewKeepWorkingBesideManyUserPools) {
    /* classes of many sizes, so that size-class pools are made both before
     * and after the user pools */
    std::vector<pk_class> classes;
    for (size_t size = 8; size <= 4000; size += 97) classes.push_back(pk_class{"Sized", size, counted_dealloc});
    const size_t half = classes.size() / 2;
    auto make_objects = [&](size_t from, size_t to, std::vector<std::pair<void *, const pk_class *>> &out) {
        for (size_t c = from; c < to; c++)
            for (int i = 0; i < 20; i++) {
                void *o = pk_new(&classes[c]);
                ASSERT_NE(o, nullptr) << "class of " << classes[c].size << " bytes";
                ASSERT_TRUE(all_bytes(o, classes[c].size, 0)) << "pk_new's object is not zeroed";
                fill_pattern(o, classes[c].size, reinterpret_cast<uintptr_t>(o));
                out.emplace_back(o, &classes[c]);
            }
    };
    std::vector<std::pair<void *, const pk_class *>> objs;
    ASSERT_NO_FATAL_FAILURE(make_objects(0, half, objs));

    const size_t n = scaled(10000, 2000);
    std::vector<PoolPtr> users;
    std::vector<void *> user_objs;
    for (size_t i = 0; i < n; i++) {
        users.push_back(make_pool(size_for(i), 0, 0, "user"));
        ASSERT_NE(users.back().get(), nullptr) << "pool " << i;
        user_objs.push_back(pk_pool_alloc(users.back().get()));
        ASSERT_NE(user_objs.back(), nullptr);
    }
    ASSERT_NO_FATAL_FAILURE(make_objects(half, classes.size(), objs));

    long d0 = g_deallocs.load();
    for (auto &e : objs) {
        void *o = e.first;
        const pk_class *cls = e.second;
        ASSERT_EQ(pk_class_of(o), cls);
        ASSERT_EQ(pk_refcount(o), 1u);
        ASSERT_EQ(check_pattern(o, cls->size, reinterpret_cast<uintptr_t>(o)), cls->size);
        pk_pool *home = pk_class_pool(cls);
        ASSERT_NE(home, nullptr);
        ASSERT_EQ(pk_pool_owner(static_cast<char *>(o) - PK_OBJECT_HEADER_SIZE), home)
            << "object of " << cls->size << " bytes is not in its class's pool";
        for (auto &u : users) ASSERT_NE(u.get(), home);
        pk_retain(o);
        pk_release(o);
        ASSERT_EQ(pk_refcount(o), 1u);
    }
    for (size_t i = 0; i < n; i++) {
        ASSERT_EQ(pk_pool_owner(user_objs[i]), users[i].get()) << "pool " << i;
        pk_pool_free(users[i].get(), user_objs[i]);
    }
    /* release on another thread, then all user pools go while objects live on */
    std::thread t([&] {
        for (size_t i = 0; i < objs.size(); i += 2) pk_release(objs[i].first);
    });
    t.join();
    users.clear();
    for (size_t i = 1; i < objs.size(); i += 2) {
        ASSERT_EQ(check_pattern(objs[i].first, objs[i].second->size, reinterpret_cast<uintptr_t>(objs[i].first)),
                  objs[i].second->size);
        pk_release(objs[i].first);
    }
    EXPECT_EQ(g_deallocs.load() - d0, static_cast<long>(objs.size()));
    for (auto &c : classes) EXPECT_EQ(stats_of(pk_class_pool(&c)).live, 0u) << "class of " << c.size << " bytes";
}
