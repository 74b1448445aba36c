/* Pools across threads: cross-thread frees, threads that exit with cached
 * objects, destroy from another thread, concurrent calls. Every test ends
 * with the pool quiescent and checks that nothing is lost: stats.live == 0
 * and a trim gives the memory back.
 *
 * Heavy tests carry "Stress" in their names; POOLKIT_TEST_SCALE scales them
 * down for sanitizer and valgrind runs (see support.h). */
#include "support.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <set>
#include <thread>

using namespace pktest;

namespace {

/* Single-producer single-consumer ring of pointers. */
class Ring {
  public:
    explicit Ring(size_t capacity) : slots_(capacity) {}

    bool push(void *p) {
        size_t t = tail_.load(std::memory_order_relaxed);
        if (t - head_.load(std::memory_order_acquire) == slots_.size()) return false;
        slots_[t % slots_.size()] = p;
        tail_.store(t + 1, std::memory_order_release);
        return true;
    }
    bool pop(void *&p) {
        size_t h = head_.load(std::memory_order_relaxed);
        if (h == tail_.load(std::memory_order_acquire)) return false;
        p = slots_[h % slots_.size()];
        head_.store(h + 1, std::memory_order_release);
        return true;
    }
    size_t capacity() const { return slots_.size(); }

  private:
    std::vector<void *> slots_;
    alignas(64) std::atomic<size_t> head_{0};
    alignas(64) std::atomic<size_t> tail_{0};
};

/* A mailbox where any thread drops objects and any other takes them. */
class Mailbox {
  public:
    void put(void *p, uint64_t key) {
        std::lock_guard<std::mutex> g(m_);
        items_.emplace_back(p, key);
    }
    bool take(void *&p, uint64_t &key) {
        std::lock_guard<std::mutex> g(m_);
        if (items_.empty()) return false;
        p = items_.front().first;
        key = items_.front().second;
        items_.pop_front();
        return true;
    }
    std::vector<std::pair<void *, uint64_t>> drain() {
        std::lock_guard<std::mutex> g(m_);
        std::vector<std::pair<void *, uint64_t>> v(items_.begin(), items_.end());
        items_.clear();
        return v;
    }

  private:
    std::mutex m_;
    std::deque<std::pair<void *, uint64_t>> items_;
};

/* Cheap per-object check for small objects: the key in the first and last
 * words (or bytes). */
void stamp(void *obj, size_t size, uint64_t key) {
    if (size >= 16) {
        std::memcpy(obj, &key, 8);
        std::memcpy(static_cast<char *>(obj) + size - 8, &key, 8);
    } else {
        fill_pattern(obj, size, key);
    }
}
bool stamped(const void *obj, size_t size, uint64_t key) {
    if (size >= 16) {
        uint64_t a, b;
        std::memcpy(&a, obj, 8);
        std::memcpy(&b, static_cast<const char *>(obj) + size - 8, 8);
        return a == key && b == key;
    }
    return check_pattern(obj, size, key) == size;
}

void expect_empty_after_trim(pk_pool *p, const char *what) {
    pk_pool_stats s = stats_of(p);
    EXPECT_EQ(s.live, 0u) << what;
    pk_pool_trim(p);
    s = stats_of(p);
    EXPECT_EQ(s.live, 0u) << what;
    EXPECT_LE(s.slabs, 1u) << what << ": slabs left after every thread is gone and the pool is trimmed";
}

}  // namespace

/* ======================================================================
 * Producer / consumer
 * ==================================================================== */

TEST(PoolThreads, ProducerConsumerStress) {
    const size_t size = 32;
    const size_t n = scaled(2000000, 5000);
    PoolPtr p = make_pool(size, 0, 0, "pc");
    Ring ring(1024);
    std::atomic<size_t> bad{0};
    std::thread producer([&] {
        for (size_t i = 0; i < n; i++) {
            void *o = pk_pool_alloc(p.get());
            if (!o) {
                bad++;
                continue;
            }
            stamp(o, size, i);
            while (!ring.push(o)) std::this_thread::yield();
        }
    });
    std::thread consumer([&] {
        size_t expect = 0;
        while (expect < n - bad.load()) {
            void *o;
            if (!ring.pop(o)) {
                std::this_thread::yield();
                continue;
            }
            if (!stamped(o, size, expect)) bad++;
            expect++;
            pk_pool_free(p.get(), o);
        }
    });
    producer.join();
    consumer.join();
    EXPECT_EQ(bad.load(), 0u);
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.live, 0u);
    EXPECT_GT(s.remote_frees, 0u);
    EXPECT_EQ(s.remote_frees, n) << "pool.h: remote_frees is exact for a pure producer/consumer pair";
    EXPECT_LE(s.peak_live, 64u * 1024) << "objects in flight stay bounded (ring of " << ring.capacity() << ")";
    EXPECT_LE(s.bytes_reserved, size_t(16) << 20) << "memory stays bounded";
    expect_empty_after_trim(p.get(), "producer/consumer");
}

TEST(PoolThreads, ProducerConsumerWithBulkCallsStress) {
    const size_t size = 64;
    const size_t rounds = scaled(20000, 200);
    const size_t k = 32;
    PoolPtr p = make_pool(size, 0, 0, "pcbulk");
    Ring ring(256);
    std::atomic<size_t> bad{0};
    std::thread producer([&] {
        std::vector<void *> objs(k);
        for (size_t r = 0; r < rounds; r++) {
            if (pk_pool_alloc_bulk(p.get(), objs.data(), k) != k) bad++;
            for (void *o : objs) {
                stamp(o, size, reinterpret_cast<uintptr_t>(o));
                while (!ring.push(o)) std::this_thread::yield();
            }
        }
    });
    std::thread consumer([&] {
        std::vector<void *> objs;
        for (size_t got = 0; got < rounds * k;) {
            void *o;
            if (!ring.pop(o)) {
                std::this_thread::yield();
                continue;
            }
            if (!stamped(o, size, reinterpret_cast<uintptr_t>(o))) bad++;
            objs.push_back(o);
            got++;
            if (objs.size() == 50) {
                pk_pool_free_bulk(p.get(), objs.data(), objs.size());
                objs.clear();
            }
        }
        pk_pool_free_bulk(p.get(), objs.data(), objs.size());
    });
    producer.join();
    consumer.join();
    EXPECT_EQ(bad.load(), 0u);
    EXPECT_GT(stats_of(p.get()).remote_frees, 0u);
    expect_empty_after_trim(p.get(), "bulk producer/consumer");
}

/* ======================================================================
 * Many threads churning one pool, freeing each other's objects
 * ==================================================================== */

namespace {

struct ChurnCase {
    const char *label;
    size_t size;
    unsigned flags;
    bool hooks;
    size_t limit;
};

std::ostream &operator<<(std::ostream &os, const ChurnCase &c) { return os << c.label; }

class PoolChurn : public ::testing::TestWithParam<ChurnCase> {};

}  // namespace

TEST_P(PoolChurn, ThreadsFreeEachOthersObjectsStress) {
    const ChurnCase &c = GetParam();
    const int threads = 4;
    const size_t steps = scaled(c.flags & PK_POOL_DEBUG ? 150000 : 600000, 2000);
    HookTracker tracker(c.size);
    pk_pool_config cfg = make_config(c.size, 0, c.flags, "churn");
    cfg.limit = c.limit;
    if (c.hooks) tracker.install(cfg);
    {
        PoolPtr p = make_pool(cfg);
        ASSERT_NE(p.get(), nullptr);
        Mailbox mail;
        /* hook pools keep the whole pattern (HookTracker checks it at the
         * next hand-out); others a cheap stamp */
        auto write = [&](void *o, uint64_t key) {
            if (c.hooks) {
                fill_pattern(o, c.size, key);
                tracker.set_state(o, key);
            } else {
                stamp(o, c.size, key);
            }
        };
        auto intact = [&](void *o, uint64_t key) {
            return c.hooks ? check_pattern(o, c.size, key) == c.size : stamped(o, c.size, key);
        };
        std::atomic<size_t> bad{0}, failed_allocs{0};
        std::atomic<size_t> held{0}, max_held{0};
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; t++) {
            ts.emplace_back([&, t] {
                Rng rng(static_cast<uint64_t>(t) + 1);
                std::vector<std::pair<void *, uint64_t>> mine;
                uint64_t key = static_cast<uint64_t>(t) << 48;
                for (size_t i = 0; i < steps; i++) {
                    unsigned r = static_cast<unsigned>(rng.below(100));
                    if (r < 45 || mine.empty()) {
                        void *o = pk_pool_alloc(p.get());
                        if (!o) {
                            if (!c.limit || errno != ENOMEM) bad++;
                            failed_allocs++;
                            continue;
                        }
                        size_t h = ++held;
                        size_t m = max_held.load();
                        while (h > m && !max_held.compare_exchange_weak(m, h)) {
                        }
                        if ((c.flags & PK_POOL_ZERO) && !all_bytes(o, c.size, 0)) bad++;
                        if (c.hooks && !tracker.check_handed_out(o).empty()) bad++;
                        if (pk_pool_owner(o) != p.get()) bad++;
                        key++;
                        write(o, key);
                        mine.emplace_back(o, key);
                    } else if (r < 70) {
                        /* give one away */
                        size_t k = rng.below(mine.size());
                        std::swap(mine[k], mine.back());
                        mail.put(mine.back().first, mine.back().second);
                        mine.pop_back();
                    } else {
                        /* free one of someone else's if there is one, else one of mine */
                        void *o;
                        uint64_t k;
                        if (!mail.take(o, k)) {
                            size_t j = rng.below(mine.size());
                            std::swap(mine[j], mine.back());
                            o = mine.back().first;
                            k = mine.back().second;
                            mine.pop_back();
                        }
                        if (!intact(o, k)) bad++;
                        held--;
                        pk_pool_free(p.get(), o);
                    }
                }
                for (auto &e : mine) {
                    if (!intact(e.first, e.second)) bad++;
                    held--;
                    pk_pool_free(p.get(), e.first);
                }
            });
        }
        for (auto &t : ts) t.join();
        for (auto &e : mail.drain()) {
            if (!intact(e.first, e.second)) bad++;
            held--;
            pk_pool_free(p.get(), e.first);
        }
        EXPECT_EQ(bad.load(), 0u) << c;
        EXPECT_EQ(held.load(), 0u);
        if (c.limit) {
            EXPECT_LE(max_held.load(), c.limit) << c;
        } else {
            EXPECT_EQ(failed_allocs.load(), 0u) << c;
        }
        expect_empty_after_trim(p.get(), c.label);
    }
    if (c.hooks) {
        EXPECT_EQ(tracker.constructs(), tracker.destructs()) << c;
        EXPECT_EQ(tracker.violations(), "") << c;
    }
}

INSTANTIATE_TEST_SUITE_P(Configs, PoolChurn,
                         ::testing::Values(ChurnCase{"Default", 48, 0, false, 0},
                                           ChurnCase{"Tiny", 1, 0, false, 0},
                                           ChurnCase{"Zero", 100, PK_POOL_ZERO, false, 0},
                                           ChurnCase{"Hooks", 64, 0, true, 0},
                                           ChurnCase{"Hardened", 32, PK_POOL_HARDENED, false, 0},
                                           ChurnCase{"Debug", 40, PK_POOL_DEBUG, false, 0},
                                           ChurnCase{"Limit", 24, 0, false, 200},
                                           ChurnCase{"Large", 5000, 0, false, 0}),
                         [](const ::testing::TestParamInfo<ChurnCase> &i) { return std::string(i.param.label); });

/* Objects of a slab each (a slot past 64 KiB: heap.c's leaves_when_full
 * and pool_free.c's adopt move such slabs between heaps), passed between
 * threads through one array by atomic exchange, so most are freed by
 * another thread than the one that made them, by generations of threads
 * that come and go: every object's stamp intact when it is freed, nothing
 * live at the end, and the pool's slabs bounded whatever the number of
 * generations while the live set is. */
TEST(PoolThreads, BlocksOfASlabEachPassedBetweenGenerationsStress) {
    for (unsigned flags : {0u, unsigned(PK_POOL_HARDENED)}) {
        const size_t size = 100000, slots = 256;
        const int threads = 4, generations = 8;
        const size_t calls = scaled(3000, 200);
        PoolPtr p = make_pool(size, 0, flags, "passed");
        ASSERT_NE(p.get(), nullptr);
        ASSERT_GT(size, size_t(64) << 10) << "one object per slab";
        std::vector<std::atomic<void *>> slot(slots);
        std::vector<std::atomic<uint64_t>> key(slots);
        for (auto &x : slot) x = nullptr;
        std::atomic<size_t> bad{0};
        std::vector<size_t> slabs;
        static char busy_word;
        void *const busy = &busy_word;
        for (int g = 0; g < generations; g++) {
            std::vector<std::thread> ts;
            for (int t = 0; t < threads; t++)
                ts.emplace_back([&, g, t] {
                    Rng rng(static_cast<uint64_t>(g * threads + t) + 1);
                    for (size_t i = 0; i < calls; i++) {
                        void *o = pk_pool_alloc(p.get());
                        if (!o) {
                            bad++;
                            continue;
                        }
                        /* the slot's key changes with its object: the slot
                         * holds `busy` meanwhile */
                        size_t k = rng.below(slots);
                        uint64_t mine = (uint64_t(g * threads + t) << 40) | i;
                        stamp(o, size, mine);
                        void *old;
                        while ((old = slot[k].exchange(busy)) == busy) std::this_thread::yield();
                        uint64_t was = key[k].exchange(mine);
                        slot[k].store(o);
                        if (old && !stamped(old, size, was)) bad++;
                        if (old) pk_pool_free(p.get(), old);
                    }
                });
            for (auto &t : ts) t.join();
            slabs.push_back(stats_of(p.get()).slabs);
        }
        for (size_t k = 0; k < slots; k++) {
            void *o = slot[k].load();
            if (o && !stamped(o, size, key[k].load())) bad++;
            if (o) pk_pool_free(p.get(), o);
        }
        EXPECT_EQ(bad.load(), 0u) << (flags ? "hardened" : "default");
        /* each generation's threads end with their spares given back and
         * the next takes them: the count stays within a few times the live
         * set (the pool keeps empty slabs for the threads that come next),
         * whatever the number of generations; a slab lost on the way would
         * stay out past the trim below */
        EXPECT_LE(*std::max_element(slabs.begin(), slabs.end()), 4 * slots)
            << "slabs after each generation: " << ::testing::PrintToString(slabs);
        expect_empty_after_trim(p.get(), flags ? "passed, hardened" : "passed");
    }
}

/* ======================================================================
 * Thread exit
 * ==================================================================== */

TEST(PoolThreads, ThreadsExitingWithCachedObjectsGiveThemBack) {
    PoolPtr p = make_pool(64, 0, 0, "exiting");
    const int waves = static_cast<int>(scaled(20, 3));
    for (int w = 0; w < waves; w++) {
        std::vector<std::thread> ts;
        for (int t = 0; t < 8; t++)
            ts.emplace_back([&] {
                std::vector<void *> objs;
                for (int i = 0; i < 3000; i++) objs.push_back(pk_pool_alloc(p.get()));
                for (void *o : objs) pk_pool_free(p.get(), o);
                /* and a few more, so the cache is certainly not empty at exit */
                for (int i = 0; i < 10; i++) objs[static_cast<size_t>(i)] = pk_pool_alloc(p.get());
                for (int i = 0; i < 10; i++) pk_pool_free(p.get(), objs[static_cast<size_t>(i)]);
            });
        for (auto &t : ts) t.join();
        ASSERT_EQ(stats_of(p.get()).live, 0u) << "wave " << w;
    }
    expect_empty_after_trim(p.get(), "threads exited");
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.taken, s.returned) << "every object is back in the slabs";
}

TEST(PoolThreads, ObjectsOfAnExitedThreadCanBeFreedElsewhere) {
    PoolPtr p = make_pool(128, 0, 0, "orphans");
    std::vector<void *> objs;
    std::thread t([&] {
        for (int i = 0; i < 20000; i++) {
            void *o = pk_pool_alloc(p.get());
            stamp(o, 128, static_cast<uint64_t>(i));
            objs.push_back(o);
        }
    });
    t.join();
    EXPECT_EQ(stats_of(p.get()).live, objs.size());
    for (size_t i = 0; i < objs.size(); i++) {
        ASSERT_TRUE(stamped(objs[i], 128, i));
        pk_pool_free(p.get(), objs[i]);
    }
    EXPECT_GT(stats_of(p.get()).remote_frees, 0u);
    expect_empty_after_trim(p.get(), "orphans freed on the main thread");
}

TEST(PoolThreads, TrimMovesOnlyTheCallersCacheHomeButLosesNothing) {
    PoolPtr p = make_pool(64, 0, 0, "trim");
    Gate cached, done;
    std::thread t([&] {
        std::vector<void *> objs;
        for (int i = 0; i < 5000; i++) objs.push_back(pk_pool_alloc(p.get()));
        for (void *o : objs) pk_pool_free(p.get(), o);
        cached.open();
        done.wait(); /* keeps its cache while main trims */
    });
    cached.wait();
    pk_pool_trim(p.get());
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.live, 0u) << "objects cached by another thread are not live";
    EXPECT_LE(s.slabs, 3u) << "only what the other thread's small cache pins remains";
    done.open();
    t.join();
    expect_empty_after_trim(p.get(), "after the other thread exited");
}

TEST(PoolThreads, ManyShortLivedThreadsUseOnePool) {
    PoolPtr p = make_pool(32, 0, 0, "short");
    const int n = static_cast<int>(scaled(400, 20));
    std::atomic<int> bad{0};
    for (int round = 0; round < n / 16; round++) {
        std::vector<std::thread> ts;
        for (int t = 0; t < 16; t++)
            ts.emplace_back([&] {
                void *o = pk_pool_alloc(p.get());
                if (!o || pk_pool_owner(o) != p.get()) bad++;
                pk_pool_free(p.get(), o);
            });
        for (auto &t : ts) t.join();
    }
    EXPECT_EQ(bad.load(), 0);
    expect_empty_after_trim(p.get(), "short-lived threads");
}

/* ======================================================================
 * Destroy from another thread
 * ==================================================================== */

TEST(PoolThreads, DestroyFromAThreadOtherThanTheCreator) {
    pk_pool *raw = nullptr;
    std::thread creator([&] {
        pk_pool_config c = make_config(64, 0, 0, "handed");
        raw = pk_pool_create(&c);
        std::vector<void *> objs;
        for (int i = 0; i < 1000; i++) objs.push_back(pk_pool_alloc(raw));
        for (void *o : objs) pk_pool_free(raw, o);
    });
    creator.join();
    ASSERT_NE(raw, nullptr);
    std::thread destroyer([raw] { pk_pool_destroy(raw); });
    destroyer.join();
}

TEST(PoolThreads, DestroyWhileAnotherThreadHoldsCachedObjects) {
    /* The other thread freed all its objects (so it is not using the pool)
     * but its cache still holds some when the pool goes away; it then uses a
     * new pool, which may get the same cache slot. */
    for (int round = 0; round < static_cast<int>(scaled(50, 5)); round++) {
        PoolPtr a = make_pool(48, 0, 0, "first");
        Gate cached, destroyed, finished;
        pk_pool *b_raw = nullptr;
        std::atomic<int> bad{0};
        std::thread t([&] {
            std::vector<void *> objs;
            for (int i = 0; i < 300; i++) objs.push_back(pk_pool_alloc(a.get()));
            for (void *o : objs) pk_pool_free(a.get(), o);
            cached.open();
            destroyed.wait();
            objs.clear();
            for (int i = 0; i < 300; i++) {
                void *o = pk_pool_alloc(b_raw);
                if (!o || pk_pool_owner(o) != b_raw) bad++;
                objs.push_back(o);
            }
            for (void *o : objs) pk_pool_free(b_raw, o);
            finished.open();
        });
        cached.wait();
        a.reset();
        PoolPtr b = make_pool(48, 0, 0, "second");
        b_raw = b.get();
        destroyed.open();
        finished.wait();
        t.join();
        EXPECT_EQ(bad.load(), 0) << "round " << round;
        expect_empty_after_trim(b.get(), "second pool");
    }
}

TEST(PoolThreads, DestroyAfterTheCreatingThreadExited) {
    pk_pool *raw = nullptr;
    std::vector<void *> left;
    std::thread t([&] {
        pk_pool_config c = make_config(200, 0, 0, "orphaned");
        raw = pk_pool_create(&c);
        for (int i = 0; i < 100; i++) left.push_back(pk_pool_alloc(raw));
    });
    t.join();
    for (void *o : left) pk_pool_free(raw, o);
    EXPECT_EQ(stats_of(raw).live, 0u);
    pk_pool_destroy(raw);
}

TEST(PoolThreads, CreateAndDestroyConcurrentlyStress) {
    const int threads = 4;
    const size_t rounds = scaled(3000, 50);
    std::atomic<int> bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++)
        ts.emplace_back([&, t] {
            for (size_t r = 0; r < rounds; r++) {
                pk_pool_config c = make_config(16 + 16 * static_cast<size_t>(t), 0,
                                               r % 7 == 0 ? unsigned(PK_POOL_DEBUG) : 0u, "transient");
                pk_pool *p = pk_pool_create(&c);
                if (!p) {
                    bad++;
                    continue;
                }
                void *objs[20];
                for (auto &o : objs) {
                    o = pk_pool_alloc(p);
                    if (!o || pk_pool_owner(o) != p) bad++;
                }
                for (auto &o : objs) pk_pool_free(p, o);
                pk_pool_destroy(p);
            }
        });
    for (auto &t : ts) t.join();
    EXPECT_EQ(bad.load(), 0);
}

/* More pools than there are thread-cache slots, used from several threads. */
TEST(PoolThreads, HundredsOfPoolsAcrossThreads) {
    std::vector<PoolPtr> pools;
    for (int i = 0; i < 300; i++) pools.push_back(make_pool(8 + 8 * static_cast<size_t>(i % 16)));
    std::atomic<int> bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 3; t++)
        ts.emplace_back([&] {
            for (int round = 0; round < 20; round++)
                for (auto &p : pools) {
                    void *a = pk_pool_alloc(p.get());
                    void *b = pk_pool_alloc(p.get());
                    if (!a || !b || a == b || pk_pool_owner(a) != p.get()) bad++;
                    pk_pool_free(p.get(), a);
                    pk_pool_free(p.get(), b);
                }
        });
    for (auto &t : ts) t.join();
    EXPECT_EQ(bad.load(), 0);
    for (auto &p : pools) EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* ======================================================================
 * Concurrent calls other than alloc/free
 * ==================================================================== */

TEST(PoolThreads, OwnerWhilePoolsComeAndGoStress) {
    std::atomic<bool> stop{false};
    std::atomic<uintptr_t> published{0};
    std::atomic<int> bad{0};
    std::thread churn([&] {
        const size_t rounds = scaled(2000, 50);
        for (size_t r = 0; r < rounds; r++) {
            PoolPtr p = make_pool(r % 2 ? 64 : 70000);
            std::vector<void *> objs;
            for (int i = 0; i < 50; i++) objs.push_back(pk_pool_alloc(p.get()));
            for (void *o : objs) {
                if (pk_pool_owner(o) != p.get()) bad++;
                published.store(reinterpret_cast<uintptr_t>(o), std::memory_order_relaxed);
            }
            for (void *o : objs) pk_pool_free(p.get(), o);
        }
        stop = true;
    });
    std::thread lookup([&] {
        Rng rng(1);
        while (!stop) {
            uintptr_t a = published.load(std::memory_order_relaxed);
            (void)pk_pool_owner(reinterpret_cast<const void *>(a));
            (void)pk_pool_owner(reinterpret_cast<const void *>(a + 8));
            (void)pk_pool_owner(reinterpret_cast<const void *>(a ^ (rng.next() & 0xfffff)));
        }
    });
    churn.join();
    lookup.join();
    EXPECT_EQ(bad.load(), 0);
}

TEST(PoolThreads, TrimReserveAndStatsWhileOtherThreadsAllocateStress) {
    PoolPtr p = make_pool(80, 0, 0, "busy");
    std::atomic<bool> stop{false};
    std::atomic<size_t> bad{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < 3; t++)
        workers.emplace_back([&, t] {
            Rng rng(static_cast<uint64_t>(t) + 7);
            std::vector<std::pair<void *, uint64_t>> mine;
            uint64_t key = static_cast<uint64_t>(t) << 40;
            const size_t steps = scaled(600000, 3000);
            for (size_t i = 0; i < steps; i++) {
                if (mine.size() < 5000 && (mine.empty() || rng.chance(50))) {
                    void *o = pk_pool_alloc(p.get());
                    if (!o) {
                        bad++;
                        continue;
                    }
                    stamp(o, 80, ++key);
                    mine.emplace_back(o, key);
                } else {
                    size_t k = rng.below(mine.size());
                    std::swap(mine[k], mine.back());
                    if (!stamped(mine.back().first, 80, mine.back().second)) bad++;
                    pk_pool_free(p.get(), mine.back().first);
                    mine.pop_back();
                }
            }
            for (auto &e : mine) pk_pool_free(p.get(), e.first);
        });
    std::thread admin([&] {
        while (!stop) {
            pk_pool_trim(p.get());
            if (pk_pool_reserve(p.get(), 100) < 100) bad++;
            pk_pool_stats s = stats_of(p.get());
            if (s.live > 3u * 5000 + 1000) bad++;
            std::this_thread::yield();
        }
    });
    for (auto &t : workers) t.join();
    stop = true;
    admin.join();
    EXPECT_EQ(bad.load(), 0u);
    expect_empty_after_trim(p.get(), "busy pool");
}

TEST(PoolThreads, LimitHoldsAcrossThreadsStress) {
    const size_t limit = 100;
    pk_pool_config c = make_config(24, 0, 0, "limited");
    c.limit = limit;
    PoolPtr p = make_pool(c);
    std::atomic<size_t> held{0}, max_held{0}, bad{0}, refused{0};
    std::atomic<int> arrived{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; t++)
        ts.emplace_back([&, t] {
            Rng rng(static_cast<uint64_t>(t) + 3);
            std::vector<void *> mine;
            /* first every thread takes what it can and holds it until all
             * have tried: 4 x 60 > 100, so some are refused */
            for (int i = 0; i < 60; i++) {
                errno = 0;
                void *o = pk_pool_alloc(p.get());
                if (!o) {
                    if (errno != ENOMEM) bad++;
                    refused++;
                    continue;
                }
                held++;
                mine.push_back(o);
            }
            arrived++;
            while (arrived.load() < 4) std::this_thread::yield();
            if (held.load() > limit) bad++;
            const size_t steps = scaled(300000, 2000);
            for (size_t i = 0; i < steps; i++) {
                if (mine.size() < 60 && (mine.empty() || rng.chance(55))) {
                    errno = 0;
                    void *o = pk_pool_alloc(p.get());
                    if (!o) {
                        if (errno != ENOMEM) bad++;
                        refused++;
                        continue;
                    }
                    size_t h = ++held;
                    size_t m = max_held.load();
                    while (h > m && !max_held.compare_exchange_weak(m, h)) {
                    }
                    mine.push_back(o);
                } else {
                    held--;
                    pk_pool_free(p.get(), mine.back());
                    mine.pop_back();
                }
            }
            for (void *o : mine) {
                held--;
                pk_pool_free(p.get(), o);
            }
        });
    for (auto &t : ts) t.join();
    EXPECT_EQ(bad.load(), 0u);
    EXPECT_LE(max_held.load(), limit);
    EXPECT_GT(refused.load(), 0u) << "4 threads wanting up to 60 each must hit a limit of 100";
    expect_empty_after_trim(p.get(), "limited pool");
}

TEST(PoolThreads, LocalPoolsOnePerThread) {
    std::atomic<int> bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; t++)
        ts.emplace_back([&] {
            PoolPtr p = make_pool(40, 0, PK_POOL_LOCAL, "mine");
            std::vector<void *> objs;
            for (int r = 0; r < 20; r++) {
                for (int i = 0; i < 2000; i++) objs.push_back(pk_pool_alloc(p.get()));
                for (void *o : objs)
                    if (pk_pool_owner(o) != p.get()) bad++;
                for (void *o : objs) pk_pool_free(p.get(), o);
                objs.clear();
            }
            pk_pool_trim(p.get());
            if (stats_of(p.get()).live != 0 || stats_of(p.get()).slabs > 1) bad++;
        });
    for (auto &t : ts) t.join();
    EXPECT_EQ(bad.load(), 0);
}

TEST(PoolThreads, HooksRunOncePerStayAcrossThreadsStress) {
    HookTracker tracker(48);
    {
        pk_pool_config c = make_config(48, 0, 0, "hooked");
        tracker.install(c);
        PoolPtr p = make_pool(c);
        Ring ring(512);
        const size_t n = scaled(500000, 2000);
        std::atomic<size_t> bad{0};
        std::thread producer([&] {
            for (size_t i = 0; i < n; i++) {
                void *o = pk_pool_alloc(p.get());
                if (!tracker.check_handed_out(o).empty()) bad++;
                fill_pattern(o, 48, i + 1);
                tracker.set_state(o, i + 1);
                while (!ring.push(o)) std::this_thread::yield();
            }
        });
        std::thread consumer([&] {
            for (size_t i = 0; i < n;) {
                void *o;
                if (!ring.pop(o)) {
                    std::this_thread::yield();
                    continue;
                }
                i++;
                pk_pool_free(p.get(), o);
            }
        });
        producer.join();
        consumer.join();
        EXPECT_EQ(bad.load(), 0u);
        expect_empty_after_trim(p.get(), "hooked pool");
    }
    EXPECT_EQ(tracker.constructs(), tracker.destructs());
    EXPECT_EQ(tracker.violations(), "");
}

/* ======================================================================
 * Large working sets, many pools, large batches
 * ==================================================================== */

namespace {

/* Waits until `n` threads have arrived; the last one in lets all go. */
class Barrier {
  public:
    explicit Barrier(int n) : n_(n) {}
    void arrive_and_wait() {
        std::unique_lock<std::mutex> g(m_);
        int gen = gen_;
        if (++in_ == n_) {
            in_ = 0;
            gen_++;
            cv_.notify_all();
            return;
        }
        cv_.wait(g, [&] { return gen_ != gen; });
    }

  private:
    std::mutex m_;
    std::condition_variable cv_;
    int n_, in_ = 0, gen_ = 0;
};

/* Takes element k out of v in O(1) (order does not matter). */
template <class T>
T take_at(std::vector<T> &v, size_t k) {
    std::swap(v[k], v.back());
    T e = v.back();
    v.pop_back();
    return e;
}

}  // namespace

TEST(PoolThreads, LargeWorkingSetsWithRandomAndCrossThreadFreesStress) {
    const int threads = 4;
    const size_t size = 48;
    const size_t hold = scaled(50000, 2000); /* each thread's largest working set */
    const size_t steps = scaled(1000000, 4000);
    PoolPtr p = make_pool(size, 0, 0, "large-sets");
    Mailbox mail;
    Barrier filled(threads + 1), checked(threads + 1);
    std::atomic<size_t> bad{0}, in_mail{0};
    std::vector<size_t> held(threads, 0);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++)
        ts.emplace_back([&, t] {
            Rng rng(static_cast<uint64_t>(t) + 101);
            std::vector<std::pair<void *, uint64_t>> mine;
            mine.reserve(hold);
            uint64_t key = uint64_t(t + 1) << 40;
            auto alloc = [&] {
                void *o = pk_pool_alloc(p.get());
                if (!o) {
                    bad++;
                    return;
                }
                stamp(o, size, ++key);
                mine.emplace_back(o, key);
            };
            auto check_and_free = [&](void *o, uint64_t k) {
                if (!stamped(o, size, k)) bad++;
                pk_pool_free(p.get(), o);
            };
            /* fill, then stop while the main thread checks the count */
            while (mine.size() < hold) alloc();
            held[size_t(t)] = mine.size();
            filled.arrive_and_wait();
            checked.arrive_and_wait();
            /* wander between a quarter and all of `hold`, freeing at random,
             * one free in ten by another thread */
            size_t target = hold / 4;
            for (size_t i = 0; i < steps; i++) {
                if (i % (hold / 2 + 1) == 0) target = hold / 4 + rng.below(hold - hold / 4 + 1);
                bool grow = mine.size() < target;
                if (mine.empty() || (grow ? rng.chance(70) : rng.chance(30))) {
                    alloc();
                } else if (rng.chance(10)) {
                    auto e = take_at(mine, rng.below(mine.size()));
                    mail.put(e.first, e.second);
                    in_mail++;
                } else {
                    void *o;
                    uint64_t k;
                    if (rng.chance(50) && mail.take(o, k)) {
                        in_mail--;
                        check_and_free(o, k);
                    } else {
                        auto e = take_at(mine, rng.below(mine.size()));
                        check_and_free(e.first, e.second);
                    }
                }
            }
            while (!mine.empty()) {
                auto e = take_at(mine, rng.below(mine.size()));
                check_and_free(e.first, e.second);
            }
        });
    filled.arrive_and_wait();
    size_t total = 0;
    for (size_t h : held) total += h;
    EXPECT_EQ(stats_of(p.get()).live, total) << "live is exact while no call is in progress";
    checked.arrive_and_wait();
    for (auto &t : ts) t.join();
    for (auto &e : mail.drain()) {
        if (!stamped(e.first, size, e.second)) bad++;
        pk_pool_free(p.get(), e.first);
    }
    EXPECT_EQ(bad.load(), 0u);
    /* (remote_frees counts what a thread returned beyond what it took: with
     * exchanges both ways it may stay 0, so it is not checked here) */
    EXPECT_GE(stats_of(p.get()).peak_live, total);
    expect_empty_after_trim(p.get(), "large working sets");
}

TEST(PoolThreads, ThousandPoolsAcrossThreadsStress) {
    const int threads = 4;
    const size_t npools = 1000;
    const size_t steps = scaled(600000, 4000);
    std::vector<PoolPtr> pools;
    std::vector<size_t> sizes;
    for (size_t i = 0; i < npools; i++) {
        sizes.push_back(8 + 8 * (i % 64));
        pools.push_back(make_pool(sizes.back(), 0, i % 17 == 0 ? unsigned(PK_POOL_HARDENED) : 0u, "thousand"));
        ASSERT_NE(pools.back().get(), nullptr) << "pool " << i;
    }
    struct Held {
        size_t pool;
        void *obj;
        uint64_t key;
    };
    std::mutex mail_m;
    std::vector<Held> mail;
    std::atomic<size_t> bad{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++)
        ts.emplace_back([&, t] {
            Rng rng(static_cast<uint64_t>(t) + 201);
            std::vector<Held> mine;
            uint64_t key = uint64_t(t + 1) << 40;
            auto check_and_free = [&](const Held &h) {
                if (!stamped(h.obj, sizes[h.pool], h.key)) bad++;
                pk_pool_free(pools[h.pool].get(), h.obj);
            };
            for (size_t i = 0; i < steps; i++) {
                unsigned r = static_cast<unsigned>(rng.below(100));
                if (mine.size() < 20000 && (mine.empty() || r < 50)) {
                    /* a third of the time one of a few busy pools */
                    size_t k = rng.chance(33) ? rng.below(10) : rng.below(npools);
                    void *o = pk_pool_alloc(pools[k].get());
                    if (!o || pk_pool_owner(o) != pools[k].get()) {
                        bad++;
                        continue;
                    }
                    stamp(o, sizes[k], ++key);
                    mine.push_back(Held{k, o, key});
                } else if (r < 60) {
                    Held h = take_at(mine, rng.below(mine.size()));
                    std::lock_guard<std::mutex> g(mail_m);
                    mail.push_back(h);
                } else {
                    Held h;
                    bool theirs = false;
                    if (r < 75) {
                        std::lock_guard<std::mutex> g(mail_m);
                        if (!mail.empty()) {
                            h = take_at(mail, rng.below(mail.size()));
                            theirs = true;
                        }
                    }
                    if (!theirs) h = take_at(mine, rng.below(mine.size()));
                    check_and_free(h);
                }
            }
            for (const Held &h : mine) check_and_free(h);
        });
    for (auto &t : ts) t.join();
    for (const Held &h : mail) {
        if (!stamped(h.obj, sizes[h.pool], h.key)) bad++;
        pk_pool_free(pools[h.pool].get(), h.obj);
    }
    EXPECT_EQ(bad.load(), 0u);
    for (size_t i = 0; i < npools; i++) ASSERT_EQ(stats_of(pools[i].get()).live, 0u) << "pool " << i;
    for (size_t i = 0; i < npools; i += 97) expect_empty_after_trim(pools[i].get(), "one of a thousand pools");
}

TEST(PoolThreads, ProducerConsumerWithLargeBatchesStress) {
    const size_t size = 64;
    const size_t batch = scaled(20000, 1000);
    const size_t batches = scaled(100, 10);
    const size_t in_flight = 3;
    PoolPtr p = make_pool(size, 0, 0, "batches");
    std::mutex m;
    std::condition_variable cv;
    std::deque<std::vector<void *>> queue;
    std::atomic<size_t> bad{0};
    std::thread producer([&] {
        uint64_t key = 0;
        for (size_t b = 0; b < batches; b++) {
            std::vector<void *> objs(batch);
            size_t got = b % 2 ? pk_pool_alloc_bulk(p.get(), objs.data(), batch) : 0;
            for (size_t i = got; i < batch; i++) objs[i] = pk_pool_alloc(p.get());
            for (void *&o : objs) {
                if (!o) {
                    bad++;
                    o = pk_pool_alloc(p.get());
                }
                stamp(o, size, reinterpret_cast<uintptr_t>(o) ^ key);
            }
            std::unique_lock<std::mutex> g(m);
            cv.wait(g, [&] { return queue.size() < in_flight; });
            queue.push_back(std::move(objs));
            cv.notify_all();
            key++;
        }
    });
    std::thread consumer([&] {
        Rng rng(3);
        for (size_t b = 0; b < batches; b++) {
            std::vector<void *> objs;
            {
                std::unique_lock<std::mutex> g(m);
                cv.wait(g, [&] { return !queue.empty(); });
                objs = std::move(queue.front());
                queue.pop_front();
                cv.notify_all();
            }
            for (void *o : objs)
                if (!stamped(o, size, reinterpret_cast<uintptr_t>(o) ^ b)) bad++;
            for (size_t i = objs.size() - 1; i > 0; i--) std::swap(objs[i], objs[rng.below(i + 1)]);
            if (b % 3 == 0) {
                pk_pool_free_bulk(p.get(), objs.data(), objs.size());
            } else {
                for (void *o : objs) pk_pool_free(p.get(), o);
            }
        }
    });
    producer.join();
    consumer.join();
    EXPECT_EQ(bad.load(), 0u);
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.live, 0u);
    EXPECT_EQ(s.remote_frees, batch * batches)
        << "pool.h: remote_frees is exact for a pure producer/consumer pair";
    /* peak_live counts what sits on the producer's slabs' remote-free lists
     * until the producer collects it (at most about one more batch), as
     * well as the objects in flight */
    EXPECT_LE(s.peak_live, (in_flight + 3) * batch + 4096) << "objects in flight stay bounded by the queue";
    EXPECT_LE(s.bytes_reserved, 2 * (in_flight + 2) * batch * size + (size_t(4) << 20))
        << "memory stays bounded by what is in flight";
    expect_empty_after_trim(p.get(), "large batches");
}

TEST(PoolThreads, LiveIsExactAfterThreadsJoin) {
    const int threads = 4;
    const size_t size = 40;
    PoolPtr p = make_pool(size, 0, 0, "joined");
    /* each thread allocates a random number of objects, frees a random
     * part of them (some of another thread's), and exits holding the rest */
    std::vector<std::vector<void *>> kept(threads);
    std::vector<std::vector<void *>> shared_out(threads);
    Barrier handed(threads);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++)
        ts.emplace_back([&, t] {
            Rng rng(static_cast<uint64_t>(t) + 301);
            std::vector<void *> mine;
            size_t n = scaled(10000, 500) + rng.below(scaled(40000, 1000));
            for (size_t i = 0; i < n; i++) mine.push_back(pk_pool_alloc(p.get()));
            for (size_t i = 0; i < n / 3; i++) pk_pool_free(p.get(), take_at(mine, rng.below(mine.size())));
            for (size_t i = 0; i < n / 10; i++)
                shared_out[size_t(t)].push_back(take_at(mine, rng.below(mine.size())));
            handed.arrive_and_wait();
            /* free half of what the next thread handed out */
            std::vector<void *> &theirs = shared_out[size_t((t + 1) % threads)];
            for (size_t i = 0; i < theirs.size() / 2; i++) pk_pool_free(p.get(), theirs[i]);
            handed.arrive_and_wait();
            kept[size_t(t)] = mine;
        });
    for (auto &t : ts) t.join();
    size_t live = 0;
    std::vector<void *> rest;
    for (int t = 0; t < threads; t++) {
        rest.insert(rest.end(), kept[size_t(t)].begin(), kept[size_t(t)].end());
        std::vector<void *> &out = shared_out[size_t(t)];
        rest.insert(rest.end(), out.begin() + static_cast<long>(out.size() / 2), out.end());
    }
    live = rest.size();
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.live, live) << "after the threads joined";
    EXPECT_GE(s.taken - s.returned, live);
    EXPECT_GE(s.peak_live, live);
    /* the main thread frees half; the rest on a new thread */
    for (size_t i = 0; i < rest.size() / 2; i++) pk_pool_free(p.get(), rest[i]);
    EXPECT_EQ(stats_of(p.get()).live, live - rest.size() / 2);
    std::thread last([&] {
        for (size_t i = rest.size() / 2; i < rest.size(); i++) pk_pool_free(p.get(), rest[i]);
    });
    last.join();
    EXPECT_EQ(stats_of(p.get()).live, 0u);
    expect_empty_after_trim(p.get(), "joined");
    s = stats_of(p.get());
    EXPECT_EQ(s.taken, s.returned) << "every object is back in the slabs once the other threads are gone and "
                                    "the main thread has trimmed";
}
