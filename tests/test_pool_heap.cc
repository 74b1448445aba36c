/* Pools: each thread's heap (src/pool/heap.c). A thread owns slabs of each pool
 * it uses and allocates from one of them at a time; its own frees go to
 * their slab, other threads' frees go home to the owner's slab in batches;
 * a slab whose last object comes home goes back to the pool, restarted in
 * address order; thread exit and trim give a heap's slabs to the pool.
 *
 * "Block" below is an object's 64 KiB-aligned address range: a slab of
 * small objects is one block, so consecutive allocations in different
 * blocks are a switch from one slab to another.
 *
 * Public API only. POOLKIT_TEST_SCALE scales the larger loops down for
 * sanitizer and valgrind runs (support.h). */
#include "support.h"

#include <atomic>
#include <condition_variable>
#include <set>
#include <thread>

using namespace pktest;

namespace {

constexpr unsigned kBlockShift = 16; /* 64 KiB */

uintptr_t block_of(const void *p) { return reinterpret_cast<uintptr_t>(p) >> kBlockShift; }

/* How often consecutive objects of objs lie in different blocks. */
size_t block_switches(const std::vector<void *> &objs) {
    size_t n = 0;
    for (size_t i = 1; i < objs.size(); i++) n += block_of(objs[i]) != block_of(objs[i - 1]);
    return n;
}

size_t distinct_blocks(const std::vector<void *> &objs) {
    std::set<uintptr_t> b;
    for (void *o : objs) b.insert(block_of(o));
    return b.size();
}

/* Of the consecutive pairs within one block after the first run of objs
 * in one block, the share in ascending order. (The first run is the
 * thread's current slab, whose own list keeps its free order.) */
double ascending_share_after_first_run(const std::vector<void *> &objs) {
    size_t same = 0, up = 0, i = 1;
    while (i < objs.size() && block_of(objs[i]) == block_of(objs[i - 1])) i++;
    for (; i < objs.size(); i++) {
        if (block_of(objs[i]) != block_of(objs[i - 1])) continue;
        same++;
        up += objs[i] > objs[i - 1];
    }
    return same ? static_cast<double>(up) / static_cast<double>(same) : 0.0;
}

void shuffle(std::vector<void *> &v, uint64_t seed) {
    Rng rng(seed);
    for (size_t i = v.size(); i > 1; i--) std::swap(v[i - 1], v[rng.below(i)]);
}

/* How many of objs are in set. */
size_t count_in(const std::vector<void *> &objs, const std::set<void *> &set) {
    size_t n = 0;
    for (void *o : objs) n += set.count(o);
    return n;
}

/* Counts every report and prints it (a fatal one still aborts: the test
 * then dies with the report on stderr). */
std::atomic<int> reports{0};
void count_and_print(const pk_error *e, void *arg) {
    reports++;
    print_fields_handler(e, arg);
}

std::string fatal_line(const char *what, const char *pool, const void *ptr) {
    return std::string("HANDLER severity=FATAL what=") + what + " pool=" + pool + " ptr=" + ptr_str(ptr);
}

}  // namespace

/* ======================================================================
 * Address order: objects go out slab by slab, ascending within a slab
 * ==================================================================== */

TEST(PoolHeap, AllFreedInRandomOrderComeBackSlabBySlabInAddressOrder) {
    PoolPtr p = make_pool(64, 0, 0, "order");
    const size_t n = scaled(20000, 5000);
    std::vector<void *> first = alloc_n(p.get(), n);
    ASSERT_EQ(first.size(), n);
    shuffle(first, 1);
    free_all(p.get(), first);

    std::vector<void *> again = alloc_n(p.get(), n);
    ASSERT_EQ(again.size(), n);
    size_t switches = block_switches(again), blocks = distinct_blocks(again);
    double up = ascending_share_after_first_run(again);
    std::printf("%zu objects again: %zu blocks, %zu block switches, %.3f ascending within a block "
                "after the current slab\n", n, blocks, switches, up);
    /* Reused in the order freed, nearly every allocation would switch slabs
     * and half the pairs would descend; restarted slabs hand out a stream. */
    EXPECT_LE(switches, blocks + 2) << "objects do not come slab by slab";
    EXPECT_GE(up, 0.95) << "emptied slabs are not handed out again in address order";
    EXPECT_TRUE(no_overlap(again, 64));
    free_all(p.get(), again);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

TEST(PoolHeap, HalfFreedInRandomOrderComesBackOneSlabAtATime) {
    PoolPtr p = make_pool(64, 0, 0, "half");
    const size_t n = scaled(20000, 5000);
    std::vector<void *> objs = alloc_n(p.get(), n);
    ASSERT_EQ(objs.size(), n);
    size_t slabs = distinct_blocks(objs);
    shuffle(objs, 2);
    std::vector<void *> freed(objs.begin(), objs.begin() + static_cast<long>(n / 2));
    std::vector<void *> kept(objs.begin() + static_cast<long>(n / 2), objs.end());
    free_all(p.get(), freed);

    std::vector<void *> again = alloc_n(p.get(), n / 2);
    ASSERT_EQ(again.size(), n / 2);
    size_t switches = block_switches(again);
    std::printf("%zu of %zu objects (%zu blocks) freed at random and taken again: %zu block switches\n",
                n / 2, n, slabs, switches);
    EXPECT_LE(switches, slabs + 2) << "the objects freed come back in free order, across slabs";
    std::vector<void *> all = kept;
    all.insert(all.end(), again.begin(), again.end());
    EXPECT_TRUE(no_overlap(all, 64));
    free_all(p.get(), kept);
    free_all(p.get(), again);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* ======================================================================
 * Remote frees go home to the owner's slabs
 * ==================================================================== */

/* The owner's free of an object of another of its slabs (the short path,
 * src/pool/pool_free.h) puts it on that slab's own list; only when the list the
 * thread allocates from is empty (its slab used up) does it go there, so
 * the next allocation takes it (HOT_FREES, policy.h). */
TEST(PoolHeap, AFreeIntoAnotherSlabGoesToTheNextAllocationOnlyWhenTheListIsEmpty) {
    PoolPtr p = make_pool(64);
    const size_t per_slab = (size_t(1) << kBlockShift) / 64;
    std::vector<void *> objs = alloc_n(p.get(), 2 * per_slab); /* two slabs, the second used up */
    ASSERT_EQ(distinct_blocks(objs), 2u);
    void *o1 = objs[3], *o2 = objs[4];
    pk_pool_free(p.get(), o1); /* the list is empty: o1 onto it */
    pk_pool_free(p.get(), o2); /* not empty now: o2 onto its slab's own list */
    void *x = pk_pool_alloc(p.get()), *y = pk_pool_alloc(p.get());
    EXPECT_EQ(x, o1) << "the object freed onto the empty list comes first";
    EXPECT_EQ(y, o2) << "then its slab's own list (o2 freed last would head it)";
    objs[3] = x;
    objs[4] = y;
    void *fresh = pk_pool_alloc(p.get()); /* a third slab: its list holds its free objects */
    EXPECT_NE(block_of(fresh), block_of(o1));
    pk_pool_free(p.get(), objs[5]);
    void *next = pk_pool_alloc(p.get());
    EXPECT_NE(next, objs[5]) << "the list was not empty: the freed object went to its own slab";
    EXPECT_EQ(block_of(next), block_of(fresh));
    objs[5] = next;
    objs.push_back(fresh);
    free_all(p.get(), objs);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* When the list runs out, the heap refills from the slab its thread last
 * freed into (its list starts with the object freed last, still in cache),
 * not from the front of its slabs with free slots (the slab that left full
 * first): heap.c, next_slab. */
TEST(PoolHeap, ARefillTakesTheSlabFreedIntoLast) {
    PoolPtr p = make_pool(64);
    const size_t per_slab = (size_t(1) << kBlockShift) / 64;
    std::vector<void *> objs = alloc_n(p.get(), 3 * per_slab); /* three slabs, the third used up */
    ASSERT_EQ(distinct_blocks(objs), 3u);
    void *a = objs[2], *c = objs[3], *d = objs[4], *b = objs[per_slab + 3];
    ASSERT_EQ(block_of(a), block_of(objs[0]));
    ASSERT_EQ(block_of(b), block_of(objs[per_slab]));
    pk_pool_free(p.get(), a); /* the list is empty: a onto it (HOT_FREES) */
    pk_pool_free(p.get(), c); /* the first slab leaves full */
    pk_pool_free(p.get(), b); /* the second leaves full after it: the front of the slabs with free slots */
    pk_pool_free(p.get(), d); /* the first slab again: the slab freed into last */
    void *x = pk_pool_alloc(p.get()), *y = pk_pool_alloc(p.get()), *z = pk_pool_alloc(p.get());
    EXPECT_EQ(x, a) << "the list's object first";
    EXPECT_EQ(y, d) << "then the slab freed into last, from the object freed last";
    EXPECT_EQ(z, c);
    objs[2] = x;
    objs[4] = y;
    objs[3] = z;
    objs.erase(objs.begin() + static_cast<std::ptrdiff_t>(per_slab + 3)); /* b, freed */
    free_all(p.get(), objs);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* The same when the free last made leaves its slab full (the library's
 * path, heap_free_home). */
TEST(PoolHeap, ARefillTakesTheSlabThatLeftFullLast) {
    PoolPtr p = make_pool(64);
    const size_t per_slab = (size_t(1) << kBlockShift) / 64;
    std::vector<void *> objs = alloc_n(p.get(), 3 * per_slab);
    ASSERT_EQ(distinct_blocks(objs), 3u);
    void *a = objs[2], *c = objs[3], *d = objs[4], *b = objs[per_slab + 3];
    pk_pool_free(p.get(), a); /* onto the empty list */
    pk_pool_free(p.get(), c); /* the first slab leaves full */
    pk_pool_free(p.get(), d); /* onto its own list */
    pk_pool_free(p.get(), b); /* the second slab leaves full: freed into last */
    void *x = pk_pool_alloc(p.get()), *y = pk_pool_alloc(p.get());
    EXPECT_EQ(x, a);
    EXPECT_EQ(y, b) << "the slab freed into last";
    objs[2] = x;
    objs[per_slab + 3] = y;
    objs.erase(objs.begin() + 4); /* d, freed */
    objs.erase(objs.begin() + 3); /* c, freed */
    free_all(p.get(), objs);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* The object freed onto the empty list (HOT_FREES) is an object of another
 * slab on the thread's list: a trim, which walks the list home, sends it to
 * its own slab rather than reporting it, and the counts stay exact. */
TEST(PoolHeap, AnObjectOfAnotherSlabOnTheListGoesHomeAtTrim) {
    PoolPtr p = make_pool(64);
    const size_t per_slab = (size_t(1) << kBlockShift) / 64;
    std::vector<void *> objs = alloc_n(p.get(), 2 * per_slab);
    void *hot = objs[3];
    objs.erase(objs.begin() + 3);
    pk_pool_free(p.get(), hot); /* onto the empty list */
    EXPECT_EQ(stats_of(p.get()).live, objs.size());
    pk_pool_trim(p.get());
    EXPECT_EQ(stats_of(p.get()).live, objs.size());
    void *again = pk_pool_alloc(p.get());
    EXPECT_EQ(block_of(again), block_of(hot)) << "it went home to its slab, whose free slot comes first";
    objs.push_back(again);
    free_all(p.get(), objs);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* Frees into other slabs by the owner, in every order, through the short
 * path: every object comes back exactly once, and the counts agree. */
TEST(PoolHeap, OwnerFreesIntoOtherSlabsKeepEveryObjectOnce) {
    PoolPtr p = make_pool(48);
    Rng rng(7);
    for (int round = 0; round < 4; round++) {
        std::vector<void *> objs = alloc_n(p.get(), 20000);
        std::set<void *> seen(objs.begin(), objs.end());
        ASSERT_EQ(seen.size(), objs.size()) << "an object handed out twice";
        if (round % 2) shuffle(objs, rng.next());
        std::vector<void *> half(objs.begin(), objs.begin() + 10000);
        free_all(p.get(), half);
        EXPECT_EQ(stats_of(p.get()).live, 10000u);
        std::set<void *> live(objs.begin() + 10000, objs.end());
        std::vector<void *> more = alloc_n(p.get(), 10000);
        for (void *o : more) ASSERT_EQ(live.count(o), 0u) << "a live object handed out again";
        std::set<void *> again(more.begin(), more.end());
        ASSERT_EQ(again.size(), more.size()) << "an object handed out twice";
        free_all(p.get(), more);
        std::vector<void *> rest(objs.begin() + 10000, objs.end());
        free_all(p.get(), rest);
        EXPECT_EQ(stats_of(p.get()).live, 0u);
    }
    pk_pool_trim(p.get());
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.taken, s.returned) << "after trim every object taken from a slab came back";
}

TEST(PoolHeap, RemoteFreesGoHomeToTheOwnerNotToTheFreeingThread) {
    PoolPtr p = make_pool(64, 0, 0, "home");
    const size_t k = 4000; /* a few slabs: the owner looks at all of them (FULL_SCAN) */
    std::vector<void *> mine = alloc_n(p.get(), k); /* main is the owner, A */
    ASSERT_EQ(mine.size(), k);
    const std::set<void *> mine_set(mine.begin(), mine.end());
    std::set<uintptr_t> my_blocks;
    for (void *o : mine) my_blocks.insert(block_of(o));

    std::vector<void *> theirs;
    std::thread b([&] {
        for (void *o : mine) pk_pool_free(p.get(), o);
        theirs = alloc_n(p.get(), k);
        std::vector<void *> copy = theirs;
        free_all(p.get(), copy);
        pk_pool_trim(p.get()); /* B's waiting frees home, its own empty slabs to the system */
    });
    b.join();
    ASSERT_EQ(theirs.size(), k);
    size_t taken = count_in(theirs, mine_set), in_my_slabs = 0;
    for (void *o : theirs) in_my_slabs += my_blocks.count(block_of(o));
    EXPECT_EQ(taken, 0u) << "the freeing thread got the owner's objects back";
    EXPECT_EQ(in_my_slabs, 0u) << "the freeing thread allocated from the owner's slabs";
    EXPECT_EQ(stats_of(p.get()).live, 0u);

    size_t reserved = stats_of(p.get()).bytes_reserved;
    std::vector<void *> again = alloc_n(p.get(), k);
    ASSERT_EQ(again.size(), k);
    size_t back = count_in(again, mine_set), outside = 0;
    for (void *o : again) outside += !my_blocks.count(block_of(o));
    std::printf("owner's second %zu: %zu of its freed objects, %zu outside its slabs\n", k, back, outside);
    EXPECT_EQ(outside, 0u) << "the owner left its own slabs while they held its freed objects";
    EXPECT_GE(back, k / 2) << "the owner did not get its remotely freed objects back";
    EXPECT_EQ(stats_of(p.get()).bytes_reserved, reserved) << "the owner mapped memory it already had";
    EXPECT_EQ(stats_of(p.get()).live, k);
    free_all(p.get(), again);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* ======================================================================
 * Slabs emptied by other threads, and heaps of exited threads
 * ==================================================================== */

/* The owner's exit collects what the other thread freed into its slabs and,
 * no slab of the pool being in use, gives them all back (heap.c,
 * heap_thread_exit): no purge tick or trim needed. */
TEST(PoolHeap, SlabsEmptiedByAnotherThreadGoBackWhenTheirOwnerExits) {
    PoolPtr p = make_pool(64, 0, 0, "emptied");
    const size_t k = 3000;
    std::vector<void *> objs;
    Gate made, leave;
    std::thread a([&] {
        objs = alloc_n(p.get(), k);
        made.open();
        leave.wait(); /* owns its slabs while B frees everything */
    });
    made.wait();
    ASSERT_EQ(objs.size(), k);
    const size_t held = stats_of(p.get()).slabs;
    ASSERT_GT(held, 0u);
    std::thread b([&] { for (void *o : objs) pk_pool_free(p.get(), o); });
    b.join();
    EXPECT_EQ(stats_of(p.get()).live, 0u) << "remote frees sent home at B's exit count as free";
    EXPECT_EQ(stats_of(p.get()).slabs, held) << "the owner's slabs went before it left";
    leave.open();
    a.join();
    pk_pool_stats after = stats_of(p.get());
    EXPECT_EQ(after.live, 0u);
    EXPECT_EQ(after.slabs, 0u) << "a slab emptied by remote frees stayed after its owner left";
    EXPECT_EQ(after.bytes_reserved, 0u);
    EXPECT_GE(after.slabs_released, held);
    EXPECT_EQ(pk_pool_trim(p.get()), 0u);
}

TEST(PoolHeap, ObjectsOfAnExitedThreadFreedElsewhereLeaveNoLiveObjectOrSlab) {
    PoolPtr p = make_pool(64, 0, 0, "abandoned");
    const size_t k = 3000;
    std::vector<void *> objs;
    std::thread t([&] { objs = alloc_n(p.get(), k); }); /* exits with every object in use */
    t.join();
    ASSERT_EQ(objs.size(), k);
    EXPECT_EQ(stats_of(p.get()).live, k);
    for (size_t i = 0; i < k; i++) {
        pk_pool_free(p.get(), objs[i]);
        if (i == k / 3) {
            EXPECT_EQ(stats_of(p.get()).live, k - i - 1);
        }
    }
    EXPECT_EQ(stats_of(p.get()).live, 0u) << "remote frees into abandoned slabs not counted";
    EXPECT_EQ(stats_of(p.get()).remote_frees, k);
    pk_pool_trim(p.get());
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.live, 0u);
    EXPECT_EQ(s.slabs, 0u) << "the exited thread's slabs stayed after every object came home";
}

/* The objects of a slab of a pool of 64-byte objects, counted on a pool
 * of the same kind: allocated until one lies in another slab. */
size_t objects_per_slab() {
    PoolPtr probe = make_pool(64, 0, 0, "probe");
    std::vector<void *> v;
    for (void *o; (o = pk_pool_alloc(probe.get())) != nullptr; v.push_back(o))
        if (!v.empty() && block_of(o) != block_of(v[0])) {
            pk_pool_free(probe.get(), o);
            break;
        }
    const size_t n = v.size();
    free_all(probe.get(), v); /* empties v */
    return n;
}

/* A thread fills `slabs` slabs and exits with every object out, while
 * this thread holds `home` objects of the slab at `home_slab`, freed into
 * its pending chain (fewer than a batch) before the exit: the chain goes
 * onto that slab, now one of the pool's full slabs, after it. */
struct CameHomeAfterExit {
    PoolPtr pool;
    std::vector<std::vector<void *>> slab_objs; /* by slab, in the order carved */
    size_t per_slab = 0;

    /* "" when made; else why not. */
    std::string make(size_t slabs, size_t home_slab, size_t home) {
        per_slab = objects_per_slab();
        pool = make_pool(64, 0, 0, "camehome");
        std::vector<void *> objs;
        Gate made, leave;
        std::thread a([&] {
            objs = alloc_n(pool.get(), slabs * per_slab);
            made.open();
            leave.wait();
        });
        made.wait();
        slab_objs.assign(slabs, {});
        for (size_t i = 0; i < objs.size(); i++) slab_objs[i / per_slab].push_back(objs[i]);
        for (auto &v : slab_objs)
            if (v.size() != per_slab || distinct_blocks(v) != 1) {
                leave.open();
                a.join();
                return "the thread's objects did not fill whole slabs in order";
            }
        for (size_t i = 0; i < home; i++) pk_pool_free(pool.get(), slab_objs[home_slab][i]);
        leave.open();
        a.join(); /* its slabs go to the pool, all full */
        slab_objs[home_slab].erase(slab_objs[home_slab].begin(), slab_objs[home_slab].begin() + long(home));
        return "";
    }
    ~CameHomeAfterExit() {
        for (auto &v : slab_objs) free_all(pool.get(), v);
    }
};

/* A thread that needs a slab looks at the full slabs threads left for
 * objects that came home before it maps a new one (FULL_SCAN), whichever of
 * them the objects went to: a program that starts and stops threads reuses
 * their slabs rather than growing. */
TEST(PoolHeap, FullSlabsOfAnExitedThreadAreScannedForObjectsThatCameHomeBeforeANewSlab) {
    for (size_t home_slab = 0; home_slab < 3; home_slab++) {
        CameHomeAfterExit c;
        std::string why = c.make(3, home_slab, 8);
        if (!why.empty()) GTEST_SKIP() << why;
        ASSERT_EQ(stats_of(c.pool.get()).slabs, 3u);
        void *o = pk_pool_alloc(c.pool.get()); /* sends the chain home, then needs a slab */
        ASSERT_NE(o, nullptr);
        EXPECT_EQ(stats_of(c.pool.get()).slabs, 3u)
            << "a new slab was mapped while slab " << home_slab << " of the exited thread had 8 free objects";
        EXPECT_EQ(block_of(o), block_of(c.slab_objs[home_slab][0])) << "slab " << home_slab;
        pk_pool_free(c.pool.get(), o);
    }
}

/* Objects that came home to a full slab the pool holds are free to visit,
 * to the live count and to destroy: the pool collects the remote frees of
 * its full slabs, not only of its partly used ones. */
TEST(PoolHeap, ObjectsThatCameHomeToAnExitedThreadsFullSlabAreFreeToVisitAndDestroy) {
    for (size_t home_slab = 0; home_slab < 3; home_slab++) {
        CameHomeAfterExit c;
        std::string why = c.make(3, home_slab, 8);
        if (!why.empty()) GTEST_SKIP() << why;
        size_t live = 3 * c.per_slab - 8;
        std::vector<void *> visited;
        pk_pool_visit(c.pool.get(), collect, &visited);
        EXPECT_EQ(visited.size(), live) << "slab " << home_slab << ": objects on a full slab's remote frees visited";
        EXPECT_EQ(stats_of(c.pool.get()).live, live);
        for (auto &v : c.slab_objs) free_all(c.pool.get(), v);
        std::vector<RecordedError> errs;
        {
            ErrorCapture cap;
            c.pool.reset();
            errs = cap.errors();
        }
        EXPECT_TRUE(errs.empty()) << "slab " << home_slab << ": " << errs[0].message;
    }
}

/* A thread that allocates one object of p and lives on, and a thread
 * that frees that object, then the first n of objs, and lives on, until
 * finish(): the second only frees, and its chains go home out of step
 * with its count of remote frees (every 64th of which takes the long
 * way). */
struct OnlyFrees {
    Gate made, freed, leave;
    void *third = nullptr;
    std::thread c, b;
    OnlyFrees(pk_pool *p, const std::vector<void *> &objs, size_t n) {
        c = std::thread([this, p] {
            third = pk_pool_alloc(p);
            made.open();
            leave.wait();
        });
        made.wait();
        b = std::thread([this, p, &objs, n] {
            pk_pool_free(p, third);
            for (size_t i = 0; i < n; i++) pk_pool_free(p, objs[i]);
            freed.open();
            leave.wait();
        });
        freed.wait();
    }
    void finish() {
        leave.open();
        b.join();
        c.join();
    }
};

/* A thread that only frees sends its pending chain home as the chain
 * reaches REMOTE_BATCH (64) objects, not later: the owner, whose slab the
 * objects fill, finds them at its next refill while that thread lives on.
 * One fewer waits in the chain, and the refill takes a new slab
 * (OnlyFrees: its chains out of step with its count). */
TEST(PoolHeap, AThreadThatOnlyFreesSendsEachFullBatchHome) {
    const size_t batch = 64; /* REMOTE_BATCH */
    const size_t per_slab = objects_per_slab();
    ASSERT_GT(per_slab, batch);
    for (size_t freed : {batch - 1, batch}) {
        PoolPtr p = make_pool(64, 0, 0, "batch");
        std::vector<void *> objs = alloc_n(p.get(), per_slab); /* this thread's current slab, used up */
        ASSERT_EQ(distinct_blocks(objs), 1u);
        OnlyFrees t(p.get(), objs, freed);
        void *o = pk_pool_alloc(p.get()); /* a refill: the current slab's remote frees first */
        bool back = std::count(objs.begin(), objs.begin() + long(freed), o) > 0;
        EXPECT_EQ(back, freed == batch) << freed << " freed by a thread that lives on";
        t.finish();
        pk_pool_free(p.get(), o);
        objs.erase(objs.begin(), objs.begin() + long(freed));
        free_all(p.get(), objs);
    }
}

/* A thread that only frees has no refills, where a heap tells the pool's
 * peak estimate what it holds: it tells it every REMOTE_BATCH (64) remote
 * frees instead. Here it frees all that the owner made (OnlyFrees) and
 * lives on while the owner makes as many again: the peak stays about one
 * set (with the owner's list), not two. */
TEST(PoolHeap, AThreadThatOnlyFreesKeepsThePeakEstimateTrue) {
    const size_t n = 4096;
    PoolPtr p = make_pool(64, 0, 0, "peak");
    std::vector<void *> objs = alloc_n(p.get(), n);
    OnlyFrees t(p.get(), objs, n);
    objs = alloc_n(p.get(), n);
    pk_pool_stats st = stats_of(p.get());
    EXPECT_EQ(st.live, n);
    EXPECT_LT(st.peak_live, n + n / 2) << "the frees of a thread that only frees were never counted";
    t.finish();
    free_all(p.get(), objs);
}

/* ======================================================================
 * stats: exact while threads are quiescent
 * ==================================================================== */

TEST(PoolHeap, LiveCountsObjectsWaitingInPendingChainsAndThreadFreeAsFree) {
    PoolPtr p = make_pool(64, 0, 0, "exact");
    /* Main (the owner) takes 300 objects: one slab. B frees 100 of them: a
     * batch of 64 (REMOTE_BATCH) goes onto the slab's thread_free, which the
     * owner has not collected yet, and 36 wait in B's pending chain. */
    const size_t k = 300, remote = 100;
    std::vector<void *> objs = alloc_n(p.get(), k);
    ASSERT_EQ(objs.size(), k);
    ASSERT_EQ(distinct_blocks(objs), 1u);
    Gate freed, leave;
    std::thread b([&] {
        for (size_t i = 0; i < remote; i++) pk_pool_free(p.get(), objs[i]);
        freed.open();
        leave.wait();
    });
    freed.wait();
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.live, k - remote) << "objects sent home but not collected, or waiting in a chain";
    EXPECT_EQ(s.remote_frees, remote);

    for (size_t i = remote; i < remote + 50; i++) pk_pool_free(p.get(), objs[i]); /* the owner's own */
    s = stats_of(p.get());
    EXPECT_EQ(s.live, k - remote - 50);
    EXPECT_EQ(s.remote_frees, remote) << "an owner's own frees are not remote";

    leave.open();
    b.join(); /* B's chain goes home at its exit */
    s = stats_of(p.get());
    EXPECT_EQ(s.live, k - remote - 50);
    EXPECT_EQ(s.remote_frees, remote);

    std::vector<void *> more = alloc_n(p.get(), 1000); /* collects the remote frees */
    ASSERT_EQ(more.size(), 1000u);
    s = stats_of(p.get());
    EXPECT_EQ(s.live, k - remote - 50 + 1000);
    EXPECT_EQ(s.remote_frees, remote);
    for (size_t i = remote + 50; i < k; i++) pk_pool_free(p.get(), objs[i]);
    free_all(p.get(), more);
    s = stats_of(p.get());
    EXPECT_EQ(s.live, 0u);
    EXPECT_EQ(s.remote_frees, remote);
}

/* ======================================================================
 * Many pools x threads: a heap per thread per pool stays small
 * ==================================================================== */

TEST(PoolHeap, ThousandsOfPoolsTimesThreadsEachHoldLittleMemory) {
    const size_t threads = 4, pools_n = scaled(2000, 50), per = 10;
    std::vector<PoolPtr> pools;
    for (size_t i = 0; i < pools_n; i++) {
        pools.push_back(make_pool(64, 0, 0, "many"));
        ASSERT_NE(pools.back(), nullptr);
    }
    std::vector<std::vector<void *>> got(threads);
    std::vector<Gate> made(threads);
    Gate release;
    std::vector<std::thread> ts;
    for (size_t t = 0; t < threads; t++)
        ts.emplace_back([&, t] {
            for (auto &pp : pools)
                for (size_t j = 0; j < per; j++) got[t].push_back(pk_pool_alloc(pp.get()));
            made[t].open();
            release.wait();
            for (size_t i = 0; i < pools.size(); i++)
                for (size_t j = 0; j < per; j++) pk_pool_free(pools[i].get(), got[t][i * per + j]);
        });
    for (auto &g : made) g.wait();

    std::vector<void *> all;
    for (auto &v : got) all.insert(all.end(), v.begin(), v.end());
    size_t nulls = static_cast<size_t>(std::count(all.begin(), all.end(), nullptr));
    EXPECT_EQ(nulls, 0u);
    EXPECT_TRUE(no_overlap(all, 64));
    size_t max_reserved = 0, max_resident = 0, bad_live = 0;
    for (auto &pp : pools) {
        pk_pool_stats s = stats_of(pp.get());
        bad_live += s.live != threads * per;
        max_reserved = std::max(max_reserved, s.bytes_reserved);
        max_resident = std::max(max_resident, s.bytes_resident);
    }
    std::printf("%zu threads x %zu pools x %zu objects: per pool at most %zu bytes reserved, %zu resident\n",
                threads, pools_n, per, max_reserved, max_resident);
    EXPECT_EQ(bad_live, 0u) << "pools whose live count is not the objects held";
    EXPECT_LE(max_reserved, threads * ((64u << 10) + (4u << 10))) << "more than a slab per thread per pool";
    /* A heap touches a page of slots at a time (EXTEND_BYTES), plus the
     * slab header's page, with a page to spare. */
    EXPECT_LE(max_resident, threads * 3 * page_size()) << "a thread's heap touched more than it used";

    release.open();
    for (auto &t : ts) t.join();
    size_t not_empty = 0;
    for (auto &pp : pools) {
        pk_pool_trim(pp.get());
        pk_pool_stats s = stats_of(pp.get());
        not_empty += s.live != 0 || s.slabs != 0;
    }
    EXPECT_EQ(not_empty, 0u) << "pools left with objects or slabs after the threads freed, exited and trim";
}

/* ======================================================================
 * Restart: skipped for pools with hooks
 * ==================================================================== */

TEST(PoolHeap, EmptiedSlabsOfAHookPoolKeepTheirConstructedObjects) {
    HookPool hp(64);
    ASSERT_NE(hp.pool, nullptr);
    pk_pool *p = hp.pool.get();
    const size_t n = 3000; /* three slabs: two empty by their owner's frees */
    std::vector<void *> objs;
    for (size_t i = 0; i < n; i++) {
        void *o = pk_pool_alloc(p);
        ASSERT_NE(o, nullptr);
        ASSERT_EQ(hp.tracker.check_handed_out(o), "");
        fill_pattern(o, 64, i);
        hp.tracker.set_state(o, i);
        objs.push_back(o);
    }
    shuffle(objs, 3);
    free_all(p, objs);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        void *o = pk_pool_alloc(p);
        ASSERT_NE(o, nullptr);
        bad += !hp.tracker.check_handed_out(o).empty();
        objs.push_back(o);
    }
    EXPECT_EQ(bad, 0u) << "objects lost the state their last user left";
    EXPECT_EQ(hp.tracker.double_constructs(), 0) << "a slot constructed twice: the slab was restarted";
    EXPECT_EQ(hp.tracker.violations(), "");
    free_all(p, objs);
    long constructs = hp.tracker.constructs();
    hp.pool.reset();
    EXPECT_EQ(hp.tracker.destructs(), constructs) << "destruct not once per constructed slot at destroy";
    EXPECT_EQ(hp.tracker.constructed_now(), 0u);
    EXPECT_EQ(hp.tracker.violations(), "");
}

/* ======================================================================
 * Hardened pools
 * ==================================================================== */

TEST(PoolHeap, HardenedRemoteFreesComeHomeWithoutAReport) {
    reports = 0;
    pk_set_error_handler(count_and_print, nullptr);
    PoolPtr p = make_pool(64, 0, PK_POOL_HARDENED, "hardpool");
    const size_t k = 3000;
    std::vector<void *> mine = alloc_n(p.get(), k);
    ASSERT_EQ(mine.size(), k);
    const std::set<void *> mine_set(mine.begin(), mine.end());
    std::thread b([&] { for (void *o : mine) pk_pool_free(p.get(), o); });
    b.join();
    EXPECT_EQ(stats_of(p.get()).live, 0u);
    size_t reserved = stats_of(p.get()).bytes_reserved;
    std::vector<void *> again = alloc_n(p.get(), k);
    ASSERT_EQ(again.size(), k);
    EXPECT_GE(count_in(again, mine_set), k / 2) << "the owner did not get its remotely freed objects back";
    EXPECT_EQ(stats_of(p.get()).bytes_reserved, reserved);
    EXPECT_TRUE(no_overlap(again, 64));
    free_all(p.get(), again);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
    p.reset();
    pk_set_error_handler(nullptr, nullptr);
    EXPECT_EQ(reports.load(), 0);
}

/* A hardened list takes the owner's free into another of its slabs when
 * it is empty (HOT_FREES, policy.h), as a default one does: a server that
 * frees a random object and allocates its replacement otherwise refills
 * on every allocation. The objects of the current slab freed after it link
 * to it, which the inline allocation does not follow (its links stay in
 * the current slab): the library does, for that one object, with no
 * report. Three ways there: into a full slab and into one with free slots
 * (the short path, pool_free.h), and a pool with a construct hook (its
 * link word after the object: the library's lean and heap paths,
 * pool_free.c and heap.c). */
void construct_nothing(void *, void *) {}

TEST(PoolHeap, AHardenedListTakesAFreeIntoAnotherSlabWhenEmpty) {
    for (int way = 0; way < 3; way++) {
        SCOPED_TRACE(way == 0 ? "into a full slab" : way == 1 ? "into a slab with free slots" : "a construct hook");
        reports = 0;
        pk_set_error_handler(count_and_print, nullptr);
        pk_pool_config c = make_config(64, 0, PK_POOL_HARDENED, "hardpool");
        if (way == 2) c.construct = construct_nothing;
        PoolPtr p = make_pool(c);
        std::vector<void *> objs{pk_pool_alloc(p.get())};
        while (block_of(objs.back()) == block_of(objs.front())) objs.push_back(pk_pool_alloc(p.get()));
        const size_t per_slab = objs.size() - 1;
        for (size_t i = 1; i < per_slab; i++) objs.push_back(pk_pool_alloc(p.get()));
        ASSERT_EQ(distinct_blocks(objs), 2u); /* two slabs, the second used up, its list empty */
        const uintptr_t second = block_of(objs.back());
        std::vector<void *> first_slab, second_slab;
        for (void *o : objs) (block_of(o) == second ? second_slab : first_slab).push_back(o);
        ASSERT_GE(first_slab.size(), 3u);
        ASSERT_GE(second_slab.size(), 2u);
        void *o1 = first_slab[0], *o3 = first_slab[1], *o4 = first_slab[2], *q = second_slab[0], *q2 = second_slab[1];
        if (way == 1) {
            pk_pool_free(p.get(), q2);             /* the current slab's: onto the list */
            pk_pool_free(p.get(), o3);             /* not empty: onto its slab's own list */
            EXPECT_EQ(pk_pool_alloc(p.get()), q2); /* the list empty again */
        }
        pk_pool_free(p.get(), o1); /* the list is empty: o1 onto it */
        pk_pool_free(p.get(), o4); /* not empty now: onto its slab's own list */
        pk_pool_free(p.get(), q);  /* the current slab's: onto the list, linking to o1 */
        void *x = pk_pool_alloc(p.get()), *y = pk_pool_alloc(p.get()), *z = pk_pool_alloc(p.get());
        EXPECT_EQ(x, q);
        EXPECT_EQ(y, o1) << "the object freed onto the empty list comes before any refill";
        EXPECT_EQ(z, o4) << "then the slab freed into last, from the object freed last";
        for (void *&o : objs) {
            if (o == o1) o = y;
            else if (o == o4) o = z;
            else if (o == q) o = x;
            else if (way == 1 && o == o3) o = nullptr;
        }
        for (void *o : objs)
            if (o) pk_pool_free(p.get(), o);
        EXPECT_EQ(stats_of(p.get()).live, 0u);
        p.reset();
        pk_set_error_handler(nullptr, nullptr);
        EXPECT_EQ(reports.load(), 0);
    }
}

TEST(PoolHeapDeathTest, HardenedFreeOfTheObjectJustFreedIsADoubleFree) {
    PoolPtr p = make_pool(64, 0, PK_POOL_HARDENED, "hardpool");
    void *o = pk_pool_alloc(p.get());
    ASSERT_NE(o, nullptr);
    PKTEST_EXPECT_REPORT(
        {
            pk_pool_free(p.get(), o);
            pk_pool_free(p.get(), o);
        },
        fatal_line("double free", "hardpool", o));
    pk_pool_free(p.get(), o);
}

TEST(PoolHeapDeathTest, HardenedRemoteFreeOfTheObjectJustFreedIsADoubleFree) {
    PoolPtr p = make_pool(64, 0, PK_POOL_HARDENED, "hardpool");
    void *o = pk_pool_alloc(p.get());
    ASSERT_NE(o, nullptr);
    PKTEST_EXPECT_REPORT(
        {
            std::thread([&] {
                pk_pool_free(p.get(), o); /* into this thread's pending chain */
                pk_pool_free(p.get(), o);
            }).join();
        },
        fatal_line("double free", "hardpool", o));
    pk_pool_free(p.get(), o);
}
