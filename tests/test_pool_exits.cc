/* Threads that come and go (design.md, "Threads that exit"): a thread's
 * slabs go back to the pool when it exits, the next thread that needs a
 * slab of the pool takes them (the objects freed into them meanwhile
 * collected), a thread that frees into one of them adopts it only if its
 * last refill left it short of a slab and it has adopted none since, and
 * a slab with no live object left is reused or, after the purge delay,
 * given back, whoever freed its objects.
 *
 * - the mstress shape: generations of threads that allocate, pass objects
 *   through a shared array and exit, while the main thread, which
 *   allocated from the pool once, frees what they left: the slab count
 *   stays where the first generations put it; and so it does where the
 *   main thread allocates, frees and swaps too, as mstress's does, and
 *   frees half of what the array holds after each generation;
 * - the larson shape: each generation takes over the previous one's live
 *   set, replaces objects at random and exits: the same; over more slabs
 *   than HOT_FOREIGN_SLABS (frees into the main thread's slabs listed by
 *   the freeing thread), one thread or two at a time; and with slabs of
 *   one object, two freed before two are made (the second free remote,
 *   into a full slab of the pool's among many that hold a live object);
 * - threads that exit with every object live, freed by a thread that never
 *   refills: the slabs go back after the purge delay;
 * - an adopted slab is the adopter's: its frees are not remote.
 *
 * Public API only; tests/test_pool_exits_internal.cc watches the short
 * path itself. */
#include "support.h"

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

using namespace pktest;

namespace {

constexpr size_t kSize = 128;

size_t slabs_of(pk_pool *p) { return stats_of(p).slabs; }

void free_if(pk_pool *p, void *obj) {
    if (obj) pk_pool_free(p, obj);
}

/* The slab count after the first quarter of the generations, and at the
 * end: memory may not grow with generations while the live set does not. */
struct SlabCounts {
    size_t early = 0, end = 0;
    ::testing::AssertionResult bounded() const {
        if (end <= early + early / 5 + 2) return ::testing::AssertionSuccess();
        return ::testing::AssertionFailure() << "slabs grew with the generations: " << early << " after a quarter of them, "
                                             << end << " at the end";
    }
};

/* gens threads, one after another, each running step(g, rng) steps times;
 * the slab counts after a quarter of them and at the end. */
template <class Step>
SlabCounts generations(pk_pool *p, size_t gens, size_t steps, Step step) {
    SlabCounts counts;
    for (size_t g = 0; g < gens; g++) {
        std::thread t([&, g] {
            std::mt19937_64 rng(g + 1);
            for (size_t i = 0; i < steps; i++) step(rng);
        });
        t.join();
        if (g + 1 == gens / 4) counts.early = slabs_of(p);
    }
    counts.end = slabs_of(p);
    return counts;
}

/* A slab a thread's exit left to the pool remembers the object that thread
 * freed last there (a second free of it is reported: test_pool_misuse.cc);
 * once a heap took the slab again and handed that object out, the slab
 * leaving that heap (here its trim) forgets it: another thread's free of
 * the live object is no double free. */
TEST(PoolExits, AnObjectHandedOutAgainFromASlabAnExitLeftIsFreedWithoutAReport) {
    PoolPtr p = make_pool(64, 0, 0, "left");
    std::vector<void *> objs;
    void *a = nullptr;
    std::thread([&] {
        objs = alloc_n(p.get(), 10);
        a = objs[3];
        pk_pool_free(p.get(), a);
    }).join();
    void *again = pk_pool_alloc(p.get()); /* the slab the exit left, its list's head first */
    ASSERT_EQ(again, a) << "the refill did not take the slab the exit left";
    pk_pool_trim(p.get()); /* this thread's slabs go to the pool, `again` live */
    std::thread([&] { pk_pool_free(p.get(), again); }).join(); /* reported, were it remembered */
    EXPECT_EQ(stats_of(p.get()).live, 9u);
    objs.erase(objs.begin() + 3);
    free_all(p.get(), objs);
}

/* mstress's worker: n allocations, one in four swapped with a random slot
 * of the shared array (an older thread's object, or none), frees at random
 * among the recent ones, and what it still holds freed at its end. */
void swap_and_free(pk_pool *p, std::vector<std::atomic<void *>> &transfer, uint64_t seed, size_t n) {
    std::mt19937_64 rng(seed);
    std::vector<void *> objs;
    for (size_t i = 0; i < n; i++) {
        void *o = pk_pool_alloc(p);
        ASSERT_NE(o, nullptr);
        if (i % 4 == 0) o = transfer[rng() % transfer.size()].exchange(o);
        if (o) objs.push_back(o);
        if (objs.size() > 64) {
            size_t k = rng() % objs.size();
            pk_pool_free(p, objs[k]);
            objs[k] = objs.back();
            objs.pop_back();
        }
    }
    free_all(p, objs);
}

TEST(PoolExits, GenerationsPassingObjectsThroughASharedArrayKeepTheSlabCountBounded) {
    PoolPtr p = make_pool(kSize, 0, 0, "mstress");
    void *mine = pk_pool_alloc(p.get()); /* the main thread refills once: it may adopt one slab */
    ASSERT_NE(mine, nullptr);
    const size_t gens = scaled(80, 20), per_thread = 2000, transfers = 500;
    std::vector<std::atomic<void *>> transfer(transfers);
    for (auto &t : transfer) t.store(nullptr);
    std::mt19937_64 main_rng(7);
    SlabCounts counts;
    for (size_t g = 0; g < gens; g++) {
        std::thread([&, g] { swap_and_free(p.get(), transfer, g + 1, per_thread); }).join();
        for (auto &slot : transfer) /* the main thread frees half of what the threads left */
            if (main_rng() % 2) free_if(p.get(), slot.exchange(nullptr));
        if (g + 1 == gens / 4) counts.early = slabs_of(p.get());
    }
    counts.end = slabs_of(p.get());
    EXPECT_TRUE(counts.bounded());
    for (auto &slot : transfer) free_if(p.get(), slot.exchange(nullptr));
    pk_pool_free(p.get(), mine);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* mstress itself: the main thread is one of the two that allocate, free
 * at random and swap objects with the shared array, and it lives on while
 * the other comes and goes. The objects it swaps out are freed by the next
 * threads into slabs it owns, which it took from the pool or adopted; the
 * slab count stays where the first generations put it. */
TEST(PoolExits, ALongLivedThreadBesideThreadsThatComeAndGoKeepsTheSlabCountBounded) {
    PoolPtr p = make_pool(kSize, 0, 0, "mstress-main");
    /* not scaled: fewer generations stay below the slab count at which an
     * adoption walks the heap's slabs (OWNED_WALK_MIN) */
    const size_t gens = 120, per_thread = 3000, transfers = 500;
    std::vector<std::atomic<void *>> transfer(transfers);
    for (auto &t : transfer) t.store(nullptr);
    SlabCounts counts;
    for (size_t g = 0; g < gens; g++) {
        std::thread([&, g] { swap_and_free(p.get(), transfer, 2 * g + 1, per_thread); }).join();
        swap_and_free(p.get(), transfer, 2 * g + 2, per_thread);
        if (g + 1 == gens / 4) counts.early = slabs_of(p.get());
    }
    counts.end = slabs_of(p.get());
    EXPECT_TRUE(counts.bounded());
    for (auto &slot : transfer) free_if(p.get(), slot.exchange(nullptr));
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* mstress as mimalloc-bench runs it: as above, and after each generation
 * the main thread frees about half of what the shared array holds, into
 * slabs the exited threads left to the pool. A heap that adopted one of
 * those at each refill while it had slabs of its own to take next held
 * ever more of them, emptied by the next threads' frees and never
 * collected (heap.c, may_adopt): the slab count grew with the
 * generations (9 after a quarter of them, 15 at the end; now 3 and 3). */
TEST(PoolExits, ALongLivedThreadFreeingWhatThreadsThatComeAndGoLeftKeepsTheSlabCountBounded) {
    PoolPtr p = make_pool(16, 0, 0, "mstress-main-frees");
    const size_t gens = 200, per_thread = 2000, transfers = 1000;
    std::vector<std::atomic<void *>> transfer(transfers);
    for (auto &t : transfer) t.store(nullptr);
    std::mt19937_64 main_rng(11);
    SlabCounts counts;
    for (size_t g = 0; g < gens; g++) {
        std::thread([&, g] { swap_and_free(p.get(), transfer, 2 * g + 1, per_thread); }).join();
        swap_and_free(p.get(), transfer, 2 * g + 2, per_thread / 2);
        for (auto &slot : transfer)
            if (main_rng() % 2) free_if(p.get(), slot.exchange(nullptr));
        if (g + 1 == gens / 4) counts.early = slabs_of(p.get());
    }
    counts.end = slabs_of(p.get());
    EXPECT_TRUE(counts.bounded());
    for (auto &slot : transfer) free_if(p.get(), slot.exchange(nullptr));
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* The larson shape: the main thread fills a live set of `live` objects,
 * then each of `gens` threads in turn replaces `steps` of them at random
 * and exits: the slab count stays bounded and every object comes home. */
static void larson_generations(const char *name, size_t gens, size_t live, size_t steps, size_t slabs_at_least) {
    PoolPtr p = make_pool(kSize, 0, 0, name);
    std::vector<void *> set = alloc_n(p.get(), live); /* the first live set, the main thread's */
    ASSERT_EQ(set.size(), live);
    ASSERT_GE(slabs_of(p.get()), slabs_at_least);
    SlabCounts counts = generations(p.get(), gens, steps, [&](std::mt19937_64 &rng) {
        size_t k = rng() % live;
        pk_pool_free(p.get(), set[k]);
        set[k] = pk_pool_alloc(p.get());
        ASSERT_NE(set[k], nullptr);
    });
    EXPECT_TRUE(counts.bounded());
    free_all(p.get(), set);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

TEST(PoolExits, GenerationsHandingOverTheirLiveSetKeepTheSlabCountBounded) {
    larson_generations("larson", scaled(100, 20), 3000, 3000, 1);
}

TEST(PoolExits, GenerationsHandingOverALiveSetLargerThanTheCachesKeepTheSlabCountBounded) {
    /* over more slabs than HOT_FOREIGN_SLABS (policy.h), so that a free
     * into a slab the main thread holds goes onto the freeing thread's list
     * and comes back at its next allocation */
    larson_generations("larson, large", scaled(24, 8), 40000, 20000, 17);
}

TEST(PoolExits, TwoThreadsAtATimeHandingOverLargeLiveSetsKeepTheSlabCountBounded) {
    /* The lab's steady state: two sets the main thread filled, two threads
     * at a time each replacing objects of its own set while the other
     * frees into the same slabs of the main thread's, then handing the
     * sets to the next two */
    PoolPtr p = make_pool(kSize, 0, 0, "larson, two at a time");
    const size_t gens = scaled(12, 4), live = 30000, steps = scaled(20000, 2000);
    std::vector<void *> sets[2] = {alloc_n(p.get(), live), alloc_n(p.get(), live)};
    ASSERT_TRUE(sets[0].size() == live && sets[1].size() == live);
    SlabCounts counts;
    for (size_t g = 0; g < gens; g++) {
        std::thread t[2];
        for (int i = 0; i < 2; i++)
            t[i] = std::thread([&, i, g] {
                std::mt19937_64 rng(2 * g + (size_t)i + 1);
                std::vector<void *> &set = sets[i];
                for (size_t k = 0; k < steps; k++) {
                    size_t j = rng() % live;
                    pk_pool_free(p.get(), set[j]);
                    set[j] = pk_pool_alloc(p.get());
                    ASSERT_NE(set[j], nullptr);
                }
            });
        for (auto &th : t) th.join();
        if (g + 1 == gens / 4) counts.early = slabs_of(p.get());
    }
    counts.end = slabs_of(p.get());
    EXPECT_TRUE(counts.bounded());
    for (auto &set : sets) free_all(p.get(), set);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

TEST(PoolExits, GenerationsFreeingMoreThanTheyRefillKeepTheSlabCountBoundedWithSlabsOfOneObject) {
    /* Each step frees two objects of threads gone, then allocates two: the
     * second free is remote (the thread adopted a slab at the first and
     * has not refilled since), into a full slab of the pool's. No purge
     * tick comes (a long delay): a heap that needs a slab must find those
     * the remote frees emptied among all the full ones. */
    PurgeDelay delay(60000);
    PoolPtr p = make_pool(200000, 0, 0, "one per slab");
    const size_t gens = scaled(60, 20), live = 64, steps = 64;
    std::vector<void *> set = alloc_n(p.get(), live);
    ASSERT_EQ(set.size(), live);
    /* the set's slabs the pool's, as a thread gone leaves them: a live
     * thread's would be freed into (and listed: HOT_FOREIGN) instead */
    pk_pool_trim(p.get());
    SlabCounts counts = generations(p.get(), gens, steps, [&](std::mt19937_64 &rng) {
        size_t a = rng() % live, b = (a + 1 + rng() % (live - 1)) % live;
        pk_pool_free(p.get(), set[a]);
        pk_pool_free(p.get(), set[b]);
        set[a] = pk_pool_alloc(p.get());
        set[b] = pk_pool_alloc(p.get());
        ASSERT_TRUE(set[a] && set[b]);
    });
    EXPECT_TRUE(counts.bounded());
    free_all(p.get(), set);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* Threads that exit with every object live, freed by a thread that never
 * refills, under a purge delay of `delay`: every slab goes back at the
 * first call after the delay. */
void slabs_freed_by_a_thread_that_never_refills_go_back(long delay) {
    PurgeDelay set(delay);
    PoolPtr p = make_pool(kSize, 0, 0, "left");
    PoolPtr other = make_pool(64, 0, 0, "other");
    const size_t gens = 8, per_thread = 3000; /* about six slabs a thread */
    std::vector<void *> left;
    for (size_t g = 0; g < gens; g++) {
        std::thread t([&] {
            std::vector<void *> objs = alloc_n(p.get(), per_thread);
            ASSERT_EQ(objs.size(), per_thread);
            left.insert(left.end(), objs.begin(), objs.end()); /* exits with every object live */
        });
        t.join();
    }
    const size_t held = slabs_of(p.get());
    ASSERT_GE(held, gens * per_thread * kSize / (size_t(64) << 10));
    free_all(p.get(), left); /* this thread has no slab of the pool: it adopts none */
    EXPECT_EQ(stats_of(p.get()).live, 0u);
    std::this_thread::sleep_for(std::chrono::milliseconds(3 * delay));
    pk_pool_free(other.get(), pk_pool_alloc(other.get())); /* a call after the silence: the sweep */
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.slabs, 0u) << "slabs with no live object kept past the purge delay (" << held << " held before)";
    EXPECT_EQ(s.bytes_reserved, 0u);
    EXPECT_GE(s.slabs_released, held);
}

TEST(PoolExits, SlabsWhoseObjectsAThreadThatNeverRefillsFreedGoBackAfterThePurgeDelay) {
    slabs_freed_by_a_thread_that_never_refills_go_back(slow_tool() ? 1000 : 100);
}

TEST(PoolExits, ADelayShortenedAfterASweepWasScheduledTakesEffect) {
    {
        PurgeDelay longer(60000);
        PoolPtr q = make_pool(64, 0, 0, "scheduler");
        pk_pool_free(q.get(), pk_pool_alloc(q.get())); /* a poll: the next sweep half a minute away */
    }
    slabs_freed_by_a_thread_that_never_refills_go_back(slow_tool() ? 1000 : 100);
}

/* The pool's slabs while a thread that makes n objects holds them all; the
 * thread then frees them and ends. */
static size_t slabs_of_a_thread_that_frees_and_ends(pk_pool *p, size_t n) {
    size_t held = 0;
    std::thread t([&] {
        std::vector<void *> objs = alloc_n(p, n);
        held = slabs_of(p);
        free_all(p, objs);
    });
    t.join();
    return held;
}

/* The purge tick runs only on calls that reach the library, and the threads
 * left may make none for long (their lists serve them): a thread's exit
 * gives back at once the empty slabs beyond as many as the pool's slabs in
 * use. The delay here is long, so nothing goes back by time. */
TEST(PoolExits, AThreadThatFreesWhatItMadeAndEndsLeavesNoEmptySlab) {
    PurgeDelay set(60000);
    PoolPtr p = make_pool(kSize, 0, 0, "made and freed");
    size_t held = slabs_of_a_thread_that_frees_and_ends(p.get(), 6000); /* about twelve slabs */
    ASSERT_GE(held, 10u);
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.live, 0u);
    EXPECT_EQ(s.slabs, 0u) << "empty slabs of a thread gone kept with no slab in use (" << held << " held)";
    EXPECT_GE(s.slabs_released, held);
}

/* A producer makes objects and ends; a consumer frees them all and ends
 * (their slabs no heap's, their objects freed remotely): the consumer's
 * exit brings those frees home and leaves no empty slab, though no thread
 * reaches the library again (the one left allocates from its own list). */
TEST(PoolExits, AThreadThatFreesWhatAnEndedThreadMadeAndEndsLeavesNoEmptySlab) {
    PurgeDelay set(60000);
    PoolPtr p = make_pool(kSize, 0, 0, "handed over");
    std::vector<void *> objs;
    std::thread([&] { objs = alloc_n(p.get(), 6000); }).join(); /* about twelve slabs */
    ASSERT_EQ(objs.size(), 6000u);
    size_t held = slabs_of(p.get());
    ASSERT_GE(held, 10u);
    std::thread([&] { free_all(p.get(), objs); }).join();
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.live, 0u);
    EXPECT_EQ(s.slabs, 0u) << "slabs whose objects a thread gone freed kept with no slab in use (" << held
                           << " held)";
}

TEST(PoolExits, AThreadsExitKeepsAsManyEmptySlabsAsThePoolHasInUse) {
    PurgeDelay set(60000);
    PoolPtr p = make_pool(kSize, 0, 0, "in use");
    std::vector<void *> mine = alloc_n(p.get(), 3000); /* about six slabs, kept in use */
    ASSERT_EQ(mine.size(), 3000u);
    const size_t in_use = slabs_of(p.get());
    std::thread t([&] {
        std::vector<void *> objs = alloc_n(p.get(), 6000);
        free_all(p.get(), objs);
    });
    t.join();
    size_t slabs = slabs_of(p.get());
    EXPECT_LE(slabs, 2 * in_use) << "more empty slabs kept than slabs in use (" << in_use << ")";
    EXPECT_GT(slabs, in_use) << "no empty slab kept for the next thread";
    free_all(p.get(), mine);
}

/* A slab of a huge slot is a mapping or a run of places of its own, which
 * no slab of one place can take: a thread's exit leaves such slabs to the pool's
 * next thread (the purge tick gives them back once unused for the delay). */
TEST(PoolExits, AThreadsExitKeepsTheEmptySlabsOfObjectsOverASlab) {
    PurgeDelay set(60000);
    PoolPtr p = make_pool(size_t(100) << 10, 0, 0, "huge");
    size_t held = slabs_of_a_thread_that_frees_and_ends(p.get(), 20); /* a slab each */
    ASSERT_GE(held, 20u);
    EXPECT_EQ(slabs_of(p.get()), held) << "a thread's exit gave back huge slabs that only this pool can reuse";
}

TEST(PoolExits, FreesIntoASlabAdoptedFromAThreadGoneAreTheAdoptersOwn) {
    PoolPtr p = make_pool(kSize, 0, 0, "adopted");
    std::vector<void *> objs;
    std::thread t([&] { objs = alloc_n(p.get(), 400); }); /* one slab, exits with every object live */
    t.join();
    ASSERT_EQ(objs.size(), 400u);
    void *mine = pk_pool_alloc(p.get()); /* a refill: this thread may adopt a slab */
    ASSERT_NE(mine, nullptr);
    const uint64_t remote = stats_of(p.get()).remote_frees;
    free_all(p.get(), objs); /* the first adopts the slab; the rest are the owner's frees */
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.remote_frees, remote) << "frees into an adopted slab counted as remote";
    EXPECT_EQ(s.live, 1u);
    pk_pool_free(p.get(), mine);
}

} // namespace
