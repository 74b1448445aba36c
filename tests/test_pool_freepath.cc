/* The owner's free into another of its slabs (src/pool/pool_free.h, the short
 * path; its one-multiply slot check is test_slab_grid_internal.c's),
 * through the public calls: the frees that change a slab's lists on that path (a full slab
 * that gets a free slot, a slab whose last object comes home), for typed
 * pools (pk_pool_free) and the size-class front end (pk_free, whose blocks
 * of any slab the thread owns go onto the class's list by the owned index
 * and home in drains: OWN_FREES, policy.h), and the restart of a slab
 * emptied out of address order, read from its list at the end rather than
 * counted on every free. Each test runs in a process of its own (ctest),
 * so the front end's class pools start empty; under memcheck they share
 * one, which the counts allow for. */
#include "support.h"

#include <poolkit/alloc.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <thread>
#include <unistd.h>

using namespace pktest;

namespace {

constexpr unsigned kBlockShift = 16; /* a slab of small objects: SLAB_BYTES (policy.h) */
constexpr size_t SLAB_BYTES = size_t(1) << kBlockShift;
uintptr_t block_of(const void *p) { return reinterpret_cast<uintptr_t>(p) >> kBlockShift; }

/* v in a random order drawn from seed. */
void shuffle(std::vector<void *> &v, uint64_t seed) {
    Rng rng(seed);
    for (size_t i = v.size(); i > 1; i--) std::swap(v[i - 1], v[rng.below(i)]);
}

/* ---- the lists a free on the short path changes ---- */

using FreeFn = std::function<void(void *)>;
using AllocFn = std::function<void *()>;

/* The slabs wholly made of objs (so full, and not the current one),
 * in address order, each with its objects. */
std::vector<std::vector<void *>> full_slabs(const std::vector<void *> &objs, size_t per_slab) {
    std::map<uintptr_t, std::vector<void *>> m;
    for (void *o : objs) m[block_of(o)].push_back(o);
    std::vector<std::vector<void *>> full;
    for (auto &b : m)
        if (b.second.size() == per_slab && b.first != block_of(objs.back())) full.push_back(b.second);
    return full;
}

/* Three slabs used up and a fourth begun: a free into the first, a full
 * slab that is not the current one, makes it a slab with a free slot, which
 * the heap's next refill takes before the current slab's fresh slots. */
void full_slab_serves_next_refill(const AllocFn &alloc, const FreeFn &release, size_t size) {
    const size_t per_slab = SLAB_BYTES / size;
    std::vector<void *> objs;
    for (size_t i = 0; i < 3 * per_slab + 1; i++) objs.push_back(alloc());
    auto slabs = full_slabs(objs, per_slab);
    ASSERT_GE(slabs.size(), 2u);
    void *o = slabs[0][5];
    uintptr_t current = block_of(objs.back());
    release(o); /* the current slab's list is not empty: onto the full slab's own list */
    std::vector<void *> again;
    bool found = false;
    for (size_t i = 0; i < per_slab && !found; i++) {
        void *q = alloc();
        found = q == o;
        if (!found) {
            EXPECT_EQ(block_of(q), current) << "a slab other than the current one before the freed slot";
            again.push_back(q);
        }
    }
    EXPECT_TRUE(found) << "the slab that got a free slot was not taken by the next refill";
    if (!found) objs.erase(std::find(objs.begin(), objs.end(), o)); /* still free */
    for (void *q : again) release(q);
    for (void *q : objs) release(q);
}

/* A slab whose last object comes home by its owner's frees becomes the
 * heap's spare, and the spare before it goes to the pool, whose purge
 * gives it back after the delay. pk_free's blocks of slabs other than the
 * current one wait on the thread's list until a drain (OWN_FREES,
 * policy.h, at most a slab's worth of small blocks): the frees of a whole
 * third slab make one, which sends the second slab's last blocks home. */
void emptied_slab_goes_back(const AllocFn &alloc, const FreeFn &release, pk_pool *pool_of_objs, size_t size) {
    pk_set_purge_delay(20);
    const size_t per_slab = SLAB_BYTES / size;
    std::vector<void *> objs;
    for (size_t i = 0; i < 5 * per_slab + 1; i++) objs.push_back(alloc());
    pk_pool *p = pool_of_objs ? pool_of_objs : pk_pool_owner(objs[0]);
    ASSERT_NE(p, nullptr);
    auto slabs = full_slabs(objs, per_slab);
    ASSERT_GE(slabs.size(), 4u);
    size_t before = stats_of(p).slabs;
    std::vector<void *> first = slabs[0], second = slabs[1], third = slabs[2];
    Rng rng(3);
    shuffle(first, rng.next());
    for (void *o : first) release(o);  /* the last one empties it: the heap's spare */
    for (void *o : second) release(o); /* the new spare; the first goes to the pool */
    for (void *o : third) release(o);  /* pk_free's: a drain, the second's last ones home */
    size_t live = stats_of(p).live;
    PoolPtr other = make_pool(16, 0, 0, "other");
    size_t now = before;
    for (int ms = 0; ms < 3000 && now >= before; ms += 2) {
        void *b[4];
        pk_pool_free_bulk(other.get(), b, pk_pool_alloc_bulk(other.get(), b, 4)); /* calls into the library */
        usleep(2000);
        now = stats_of(p).slabs;
    }
    EXPECT_LT(now, before) << "the emptied slab did not go back after the purge delay";
    std::vector<void *> rest(objs.begin(), objs.end());
    rest.erase(std::remove_if(rest.begin(), rest.end(),
                              [&](void *o) {
                                  return block_of(o) == block_of(first[0]) || block_of(o) == block_of(second[0]) ||
                                         block_of(o) == block_of(third[0]);
                              }),
               rest.end());
    for (void *o : rest) release(o);
    EXPECT_EQ(stats_of(p).live, live - rest.size());
}

constexpr size_t kSize = 64;

TEST(PoolFreeShortPath, AFullSlabThatGetsAFreeSlotServesTheNextRefill) {
    PoolPtr p = make_pool(kSize);
    full_slab_serves_next_refill([&] { return pk_pool_alloc(p.get()); }, [&](void *o) { pk_pool_free(p.get(), o); },
                                 kSize);
}

TEST(PoolFreeShortPath, ASlabEmptiedByItsOwnersFreesGoesBackAfterThePurgeDelay) {
    PoolPtr p = make_pool(kSize);
    emptied_slab_goes_back([&] { return pk_pool_alloc(p.get()); }, [&](void *o) { pk_pool_free(p.get(), o); },
                           p.get(), kSize);
}

TEST(AllocFreeShortPath, AFullSlabThatGetsAFreeSlotServesTheNextRefill) {
    full_slab_serves_next_refill([] { return pk_alloc(kSize); }, [](void *o) { pk_free(o); }, kSize);
}

TEST(AllocFreeShortPath, ASlabEmptiedByItsOwnersFreesGoesBackAfterThePurgeDelay) {
    emptied_slab_goes_back([] { return pk_alloc(kSize); }, [](void *o) { pk_free(o); }, nullptr, kSize);
}

TEST(AllocFreeShortPath, SizedFreesTakeTheSamePath) {
    full_slab_serves_next_refill([] { return pk_alloc(kSize); }, [](void *o) { pk_free_sized(o, kSize); }, kSize);
}

/* ---- pk_free's one path: onto the class's list, whatever the slab ---- */

/* A block of an owned slab other than the current one goes onto the
 * class's list (OWN_FREES, policy.h), so the next allocation of the class
 * takes it back, although the list still holds the current slab's free
 * objects (the short path would have put it on its own slab's list). */
TEST(AllocFreeOwnPath, ABlockOfAnotherOwnedSlabIsTheNextAllocation) {
    const size_t per_slab = SLAB_BYTES / kSize;
    std::vector<void *> objs;
    /* a count no carving of fresh slots ends on, so the list holds some */
    for (size_t i = 0; i < 2 * per_slab + 101; i++) objs.push_back(pk_alloc(kSize));
    auto slabs = full_slabs(objs, per_slab);
    ASSERT_GE(slabs.size(), 1u);
    void *o = slabs[0][5];
    pk_free(o);
    void *q = pk_alloc(kSize);
    EXPECT_EQ(q, o) << "the block of another slab was not the next allocation";
    if (q != o) objs.erase(std::find(objs.begin(), objs.end(), o)), pk_free(q); /* o is free already */
    for (void *x : objs) pk_free(x);
}

/* The class pool of size-byte blocks, and its live blocks now (other
 * tests' where they share the process, as under memcheck). */
pk_pool *class_pool_live(size_t *live, size_t size = kSize) {
    void *probe = pk_alloc(size);
    pk_pool *p = pk_pool_owner(probe);
    pk_free(probe);
    *live = p ? stats_of(p).live : 0;
    return p;
}

/* n slabs' worth of size-byte blocks from pk_alloc into objs, and the
 * slabs wholly made of them. */
std::vector<std::vector<void *>> alloc_slabs(size_t size, size_t n, std::vector<void *> &objs) {
    const size_t per_slab = SLAB_BYTES / size;
    for (size_t i = 0; i < n * per_slab; i++) objs.push_back(pk_alloc(size));
    return full_slabs(objs, per_slab);
}

/* More frees of other slabs' blocks than a drain's budget, with no
 * allocation between, by a thread that then exits: every drain sends home
 * all that pk_free pushed since the one before, so the list never holds
 * more such objects than its walks allow (a thread's exit checks each one
 * it meets), and the counts end exact. */
TEST(AllocFreeOwnPath, DrainsSendHomeEveryBlockPushedSinceTheLastOne) {
    const size_t per_slab = SLAB_BYTES / kSize;
    size_t before, kept = 0;
    pk_pool *p = class_pool_live(&before);
    ASSERT_NE(p, nullptr);
    std::thread([&] {
        std::vector<void *> objs;
        auto slabs = alloc_slabs(kSize, 8, objs);
        ASSERT_GE(slabs.size(), 7u);
        std::vector<void *> gone;
        for (size_t s = 0; s < 6; s++)
            for (size_t i = 0; i < per_slab; i += 2) gone.push_back(slabs[s][i]); /* half of each: none empties */
        shuffle(gone, 5);
        for (void *o : gone) pk_free(o);
        kept = objs.size() - gone.size();
    }).join();
    EXPECT_EQ(stats_of(p).live, before + kept) << "the counts after the thread's exit";
}

/* Frees by other paths keep no count (pk_free_sized's inline push of a
 * block of the current slab) and bury the blocks pk_free pushed under
 * theirs: a drain walks until it has met every block of another slab
 * pushed since the last one, so none stays listed past the bound the
 * list's walks (stats, exit) rely on, and the counts stay exact. */
TEST(AllocFreeOwnPath, DrainsFindBlocksBuriedUnderOtherPathsFrees) {
    const size_t size = 112; /* a class of its own in this program: its slabs start empty */
    const size_t per_slab = SLAB_BYTES / size;
    size_t before;
    pk_pool *p = class_pool_live(&before, size);
    ASSERT_NE(p, nullptr);
    std::vector<void *> objs;
    auto slabs = alloc_slabs(size, 6, objs);
    ASSERT_GE(slabs.size(), 5u);
    std::vector<void *> gone;
    for (size_t s = 0; s < 4; s++)
        for (size_t i = 0; i < per_slab; i += 4) gone.push_back(slabs[s][i]);
    std::vector<void *> mine(50);
    size_t next = 0;
    while (next < gone.size()) {
        for (void *&b : mine) b = pk_alloc(size);
        for (size_t k = 0; k < 10 && next < gone.size(); k++) pk_free(gone[next++]); /* counted */
        for (void *b : mine) pk_free_sized(b, size);                                /* not */
    }
    EXPECT_EQ(stats_of(p).live, before + objs.size() - gone.size()) << "free blocks counted live";
    std::sort(gone.begin(), gone.end());
    for (void *o : objs)
        if (!std::binary_search(gone.begin(), gone.end(), o)) pk_free(o);
    EXPECT_EQ(stats_of(p).live, before);
}

/* A trim gives the thread's slabs back to the pool, and the index forgets
 * them: the blocks of those slabs the thread frees afterwards go to their
 * slabs by the pool's paths (its next refill takes such a slab over), not
 * onto a list of a heap that no longer owns them, and the counts end
 * exact. */
TEST(AllocFreeOwnPath, SlabsGivenBackLeaveTheIndex) {
    const size_t per_slab = SLAB_BYTES / kSize;
    size_t before;
    pk_pool *p = class_pool_live(&before);
    ASSERT_NE(p, nullptr);
    std::vector<void *> objs;
    for (size_t i = 0; i < 3 * per_slab; i++) objs.push_back(pk_alloc(kSize));
    pk_pool_trim(p); /* the heap's slabs to the pool, the thread's slot cleared */
    for (void *o : objs) pk_free(o);
    EXPECT_EQ(stats_of(p).live, before) << "blocks freed after the trim were not counted free";
}

/* A drain's budget (OWN_FREES_REUSED, policy.h): 64 blocks of other slabs
 * at this size, doubled by each drain that finds fewer than a quarter of
 * those pushed since the last one still listed (the allocations took them
 * back), up to four times, and 64 again after a drain that finds most. A
 * block freed and allocated again by turns is such a pattern: each push is
 * taken back at once. A drain keeps the block freed last as the list's
 * head (a double free of it is then the head freed again) and counts it
 * for the next drain, which sends it home with the others. `returned`
 * counts the blocks that reached their slabs, so it says whether a drain
 * ran. */
constexpr size_t kBudgetSize = 192; /* a class no other test here uses */
constexpr size_t kBudget = 64;

/* b, a block of another slab, freed and allocated again by turns: each
 * drain meets b alone of the pushes (the allocations took the others
 * back), so the budget doubles at each. From room pushes left before the
 * next drain, (room + 1) + 2 * kBudget turns make two drains, after which
 * the budget is four times the pool's, all of it left but the kept b. */
void grow_budget(void *b, size_t room) {
    for (size_t turns = 0; turns < room + 1 + 2 * kBudget; turns++) {
        pk_free(b);
        void *q = pk_alloc(kBudgetSize);
        ASSERT_EQ(q, b) << "the block freed last was not the list's head at turn " << turns;
    }
}

/* body on a thread of its own, which then exits, with `objs` (its live
 * blocks of kBudgetSize), three whole slabs of them in `slabs` and, in
 * `gone`, n blocks of slabs[1] and slabs[2], which body frees; then the
 * counts. A current slab whose free slots are on the thread's list stays,
 * so the allocation after a drain takes one of them. */
using BudgetBody = std::function<void(pk_pool *, std::vector<void *> &, const std::vector<std::vector<void *>> &,
                                      const std::vector<void *> &)>;
void budget_case(size_t n, const BudgetBody &body) {
    size_t before, kept = 0;
    pk_pool *p = class_pool_live(&before, kBudgetSize);
    ASSERT_NE(p, nullptr);
    std::thread([&] {
        std::vector<void *> objs;
        auto slabs = alloc_slabs(kBudgetSize, 8, objs); /* slabs a thread before left may be part used */
        for (size_t i = 0; i < 10; i++) objs.push_back(pk_alloc(kBudgetSize));
        std::vector<void *> gone;
        for (size_t s = 1; s < 3 && s < slabs.size(); s++) gone.insert(gone.end(), slabs[s].begin(), slabs[s].end());
        if (slabs.size() < 3 || gone.size() < n) {
            ADD_FAILURE() << "too few whole slabs";
            return;
        }
        gone.resize(n);
        body(p, objs, slabs, gone);
        kept = objs.size() - gone.size();
    }).join(); /* the exit takes every block listed */
    EXPECT_EQ(stats_of(p).live, before + kept) << "the counts after the thread's exit";
}

TEST(AllocFreeOwnPath, ABudgetGrowsWhileTheAllocationsTakeThePushedBlocksBack) {
    budget_case(4 * kBudget - 1, [](pk_pool *p, std::vector<void *> &, const std::vector<std::vector<void *>> &slabs,
                                    const std::vector<void *> &gone) {
        grow_budget(slabs[0][0], kBudget); /* a thread that has freed nothing: the whole budget left */
        std::vector<void *> order(gone);
        shuffle(order, 7);
        uint64_t returned = stats_of(p).returned;
        for (void *o : order) pk_free(o); /* within the grown budget, more than the first's */
        EXPECT_EQ(stats_of(p).returned, returned) << "a drain ran: the budget did not grow";
    });
}

TEST(AllocFreeOwnPath, ADrainThatFindsMostOfWhatWasPushedRestoresTheBudget) {
    budget_case(6 * kBudget + 1, [](pk_pool *p, std::vector<void *> &, const std::vector<std::vector<void *>> &slabs,
                                    const std::vector<void *> &gone) {
        /* n blocks freed: the last makes the drain due, which sends home
         * the others and, carried, the block the drain before kept, if it
         * is still listed */
        auto drain_at = [&](size_t from, size_t n, size_t carried, const char *what) {
            uint64_t returned = stats_of(p).returned;
            for (size_t i = from; i < from + n - 1; i++) pk_free(gone[i]);
            EXPECT_EQ(stats_of(p).returned, returned) << "a drain before " << what;
            pk_free(gone[from + n - 1]);
            EXPECT_EQ(stats_of(p).returned, returned + n - 1 + carried) << "no drain at " << what;
        };
        drain_at(0, kBudget + 1, 0, "the first budget"); /* a thread that only frees keeps it */
        grow_budget(slabs[0][0], kBudget - 1);           /* its first drain sends gone[kBudget] home */
        drain_at(kBudget + 1, 4 * kBudget, 0, "the grown budget"); /* that drain finds them all */
        drain_at(5 * kBudget + 1, kBudget, 1, "the first budget again");
    });
}

/* The block just pushed, freed again: reported, as the head of a list is. */
TEST(AllocFreeOwnPathDeathTest, ABlockOfAnotherSlabFreedTwiceInARowIsReported) {
    std::vector<void *> objs;
    auto slabs = alloc_slabs(kSize, 3, objs);
    ASSERT_GE(slabs.size(), 1u);
    void *volatile o = slabs[0][7]; /* read afresh for each call: no use after free the compiler sees */
    PKTEST_EXPECT_REPORT(
        {
            pk_free(o);
            pk_free(o);
        },
        "what=double free");
}

/* An interior pointer into another owned slab: the index names its slab,
 * not its slot, so pk_free pushes it, and the drain, which checks each
 * block of another slab against its slab's slots before it reads the
 * link, reports it (docs/alloc.md: checked at the drain, not the free). */
TEST(AllocFreeOwnPathDeathTest, AnInteriorPointerIntoAnotherOwnedSlabIsReportedAtTheDrain) {
    std::vector<void *> objs;
    auto slabs = alloc_slabs(kSize, 4, objs);
    ASSERT_GE(slabs.size(), 2u);
    char *volatile in = static_cast<char *>(slabs[0][3]) + 8;
    PKTEST_EXPECT_REPORT(
        {
            pk_free(in);
            for (size_t i = 0; i < 64; i++) pk_free(slabs[1][i]); /* the 65th push: a drain (OWN_FREES) */
        },
        "what=corrupted free list.*\n.*which is not a free slot of its slab");
}

/* ---- restarts: read from the emptied slab's list ---- */

/* The objects of a slab freed in address order (FIFO) leave a list that
 * is a stream already: the slab keeps it, so they come back newest first;
 * freed at random, it restarts from slot 0 in address order. */
void emptied_slab_order(bool in_order, const AllocFn &alloc, const FreeFn &release, size_t size) {
    const size_t per_slab = SLAB_BYTES / size;
    std::vector<void *> objs;
    for (size_t i = 0; i < 2 * per_slab + 1; i++) objs.push_back(alloc());
    auto slabs = full_slabs(objs, per_slab);
    ASSERT_GE(slabs.size(), 2u);
    std::vector<void *> first = slabs[0];
    std::vector<void *> order = first;
    std::sort(order.begin(), order.end());
    if (!in_order) shuffle(order, 11);
    for (void *o : order) release(o); /* the slab empties: the heap's spare */
    /* and, where pk_free lists them (OWN_FREES), once they went home: a
     * drain is due within 65 blocks of another slab, and keeps only the
     * block freed last listed */
    std::set<void *> extra(slabs[1].begin(), slabs[1].begin() + 65);
    for (void *o : extra) release(o);
    /* the current slab's list, then the spare */
    std::vector<void *> again, from_first;
    for (size_t i = 0; i < 2 * per_slab && from_first.size() < 64; i++) {
        void *q = alloc();
        again.push_back(q);
        if (block_of(q) == block_of(first[0])) from_first.push_back(q);
    }
    ASSERT_EQ(from_first.size(), 64u) << "the emptied slab was not taken again";
    bool ascending = std::is_sorted(from_first.begin(), from_first.end());
    bool descending = std::is_sorted(from_first.rbegin(), from_first.rend());
    if (in_order) EXPECT_TRUE(descending) << "a slab freed in address order was restarted (or reordered)";
    else EXPECT_TRUE(ascending) << "a slab freed at random was not restarted in address order";
    for (void *q : again) release(q);
    for (void *q : objs)
        if (block_of(q) != block_of(first[0]) && !extra.count(q)) release(q);
}

TEST(PoolFreeShortPath, ASlabFreedInAddressOrderKeepsItsList) {
    PoolPtr p = make_pool(48);
    emptied_slab_order(true, [&] { return pk_pool_alloc(p.get()); }, [&](void *o) { pk_pool_free(p.get(), o); }, 48);
}

TEST(PoolFreeShortPath, ASlabFreedAtRandomRestartsInAddressOrder) {
    PoolPtr p = make_pool(48);
    emptied_slab_order(false, [&] { return pk_pool_alloc(p.get()); }, [&](void *o) { pk_pool_free(p.get(), o); }, 48);
}

TEST(AllocFreeShortPath, ASlabFreedAtRandomRestartsInAddressOrder) {
    emptied_slab_order(false, [] { return pk_alloc(48); }, [](void *o) { pk_free(o); }, 48);
}

} // namespace

/* ---- frees into slabs another live thread holds (HOT_FOREIGN, policy.h) ---- */

namespace {

constexpr size_t kForeignSize = 64;
constexpr size_t kForeignBudget = 64; /* HOT_FOREIGN */
constexpr size_t kForeignSlabs = 16;  /* HOT_FOREIGN_SLABS */

/* A pool whose slabs the main thread holds, `slabs` of them full. */
std::vector<void *> fill_slabs(pk_pool *p, size_t slabs) {
    std::vector<void *> objs = alloc_n(p, slabs * (SLAB_BYTES / kForeignSize));
    EXPECT_GE(stats_of(p).slabs, slabs);
    return objs;
}

/* fn on a thread of its own that has a current slab of p (one object
 * allocated first, freed last), joined. */
template <class Fn>
void on_a_thread_with_a_slab(pk_pool *p, Fn fn) {
    std::thread t([&] {
        void *mine = pk_pool_alloc(p);
        ASSERT_NE(mine, nullptr);
        fn();
        pk_pool_free(p, mine);
    });
    t.join();
}

/* Objects allocated onto mine until the thread's list of p is empty: a
 * refill shows in stats' taken, which counts what it took onto the list. */
void empty_the_list(pk_pool *p, std::vector<void *> &mine) {
    uint64_t before = stats_of(p).taken;
    for (size_t i = 0; i < 4 * SLAB_BYTES / kForeignSize; i++) {
        mine.push_back(pk_pool_alloc(p));
        uint64_t now = stats_of(p).taken;
        if (now == before) continue;
        for (uint64_t k = 1; k < now - before; k++) mine.push_back(pk_pool_alloc(p));
        return;
    }
    ADD_FAILURE() << "no refill seen";
}

/* A free of an object a live thread made, given twice in a row by a thread
 * whose list was empty (so the first goes onto it): reported, on a pool of
 * `flags`. */
void expect_foreign_double_free_reported(unsigned flags, const char *name) {
    PoolPtr p = make_pool(kForeignSize, 0, flags, name);
    std::vector<void *> objs = fill_slabs(p.get(), kForeignSlabs + 4);
    void *volatile o = objs[300];
    PKTEST_EXPECT_REPORT(on_a_thread_with_a_slab(p.get(),
                                                 [&] {
                                                     std::vector<void *> mine;
                                                     empty_the_list(p.get(), mine);
                                                     pk_pool_free(p.get(), o);
                                                     pk_pool_free(p.get(), o);
                                                 }),
                         "what=double free");
    free_all(p.get(), objs);
}

/* The owner's free of an object of another of its slabs, given twice in a
 * row while its list was empty (the first goes onto it: HOT_FREES, and on
 * a hardened list its one such object): reported, on a pool of `flags`. */
void expect_owner_double_free_reported(unsigned flags, const char *name) {
    PoolPtr p = make_pool(kForeignSize, 0, flags, name);
    std::vector<void *> objs = fill_slabs(p.get(), 4);
    void *volatile o = objs[300];
    PKTEST_EXPECT_REPORT(
        {
            std::vector<void *> mine;
            empty_the_list(p.get(), mine);
            pk_pool_free(p.get(), o);
            pk_pool_free(p.get(), o);
            std::fprintf(stderr, "no report\n");
        },
        "what=double free");
    free_all(p.get(), objs);
}

} // namespace

/* A server whose live set outgrows the caches: the thread that frees an
 * object the main thread made takes it back at its next allocation, in the
 * order freed last, first out. */
TEST(PoolFreeForeign, ALiveThreadsObjectsFreedHereAreTheNextAllocationsInALargePool) {
    PoolPtr p = make_pool(kForeignSize, 0, 0, "foreign, large");
    std::vector<void *> objs = fill_slabs(p.get(), kForeignSlabs + 4);
    on_a_thread_with_a_slab(p.get(), [&] {
        for (size_t round = 0; round < 3; round++) {
            const size_t at[3] = {100 + round, 5000 + round, 10000 + round};
            void *freed[3];
            for (int i = 0; i < 3; i++) pk_pool_free(p.get(), freed[i] = objs[at[i]]);
            for (int i = 2; i >= 0; i--) {
                objs[at[i]] = pk_pool_alloc(p.get()); /* the set stays whole whatever comes */
                EXPECT_EQ(objs[at[i]], freed[i]) << round << ", " << i;
            }
        }
    });
    EXPECT_EQ(stats_of(p.get()).live, objs.size());
    free_all(p.get(), objs);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* Below HOT_FOREIGN_SLABS the object goes home, so that the freeing
 * thread's set moves into its own slabs. */
TEST(PoolFreeForeign, InASmallPoolTheObjectGoesHome) {
    PoolPtr p = make_pool(kForeignSize, 0, 0, "foreign, small");
    std::vector<void *> objs = fill_slabs(p.get(), 2);
    ASSERT_LT(stats_of(p.get()).slabs, kForeignSlabs);
    on_a_thread_with_a_slab(p.get(), [&] {
        pk_pool_free(p.get(), objs[100]);
        void *next = pk_pool_alloc(p.get());
        EXPECT_NE(next, objs[100]);
        objs[100] = next;
    });
    free_all(p.get(), objs);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* Onto a list that is not empty, at most HOT_FOREIGN such objects before
 * the list is next found empty: the rest go home, so a thread that only
 * frees keeps no more of other threads' objects off their slabs; on a pool
 * of `flags`. */
void expect_foreign_budget(unsigned flags, const char *name) {
    PoolPtr p = make_pool(kForeignSize, 0, flags, name);
    std::vector<void *> objs = fill_slabs(p.get(), kForeignSlabs + 4);
    const size_t n = kForeignBudget + 10;
    on_a_thread_with_a_slab(p.get(), [&] {
        void *own = pk_pool_alloc(p.get()); /* freed back: the list is not empty */
        ASSERT_NE(own, nullptr);
        pk_pool_free(p.get(), own);
        std::vector<void *> freed;
        for (size_t i = 0; i < n; i++) freed.push_back(objs[i * 97]);
        for (void *o : freed) pk_pool_free(p.get(), o);
        for (size_t i = 0; i < n; i++) {
            void *got = pk_pool_alloc(p.get());
            if (i < kForeignBudget) EXPECT_EQ(got, freed[kForeignBudget - 1 - i]) << i;
            else if (i == kForeignBudget) EXPECT_EQ(got, own);
            else EXPECT_EQ(std::count(freed.begin(), freed.end(), got), 0) << i << ": went home";
            objs[i * 97] = got; /* every freed one replaced: the set stays whole */
        }
    });
    EXPECT_EQ(stats_of(p.get()).live, objs.size());
    free_all(p.get(), objs);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

TEST(PoolFreeForeign, AtMostTheBudgetGoesOntoAListThatIsNotEmpty) { expect_foreign_budget(0, "foreign, budget"); }

/* A hardened list by the same rule: each object freed onto it after the
 * first links to another of them, a link out of the current slab that the
 * library follows (each carries its tag), and the allocations take them
 * back last freed first, then the thread's own object. */
TEST(PoolFreeForeign, AtMostTheBudgetGoesOntoAHardenedListThatIsNotEmpty) {
    expect_foreign_budget(PK_POOL_HARDENED, "foreign, hardened, budget");
}

/* A hardened list's objects past its end carry a tag in their second
 * word: slots of one word (8 B) take the end alone, and a free of another
 * thread's object onto a list that is not empty goes home, its neighbour's
 * first word untouched. */
TEST(PoolFreeForeign, AHardenedListOfOneWordSlotsTakesTheEndAlone) {
    const size_t size = sizeof(void *);
    PoolPtr p = make_pool(size, 0, PK_POOL_HARDENED, "foreign, hardened, one word");
    std::vector<void *> objs = alloc_n(p.get(), (kForeignSlabs + 4) * (SLAB_BYTES / size));
    ASSERT_GE(stats_of(p.get()).slabs, kForeignSlabs);
    on_a_thread_with_a_slab(p.get(), [&] {
        void *own = pk_pool_alloc(p.get()); /* freed back: the list is not empty */
        ASSERT_NE(own, nullptr);
        pk_pool_free(p.get(), own);
        void *o = objs[1000];
        pk_pool_free(p.get(), o);
        void *got = pk_pool_alloc(p.get());
        EXPECT_EQ(got, own);
        EXPECT_NE(got, o);
        objs[1000] = got; /* the set stays whole */
    });
    free_all(p.get(), objs);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* Objects of a slab each (1 MiB) are listed too (a server's buffers passed
 * between threads): the freeing thread's next allocation takes the last one
 * freed back; onto a list that is not empty, at most HOT_FOREIGN_BYTES of
 * them (4 MiB: four) before the list is next found empty, the rest home. */
TEST(PoolFreeForeign, ObjectsOfASlabEachAreListedWithinTheBytesBudget) {
    const size_t size = size_t(1) << 20, budget = 4;
    PoolPtr p = make_pool(size, 0, 0, "foreign, a slab each");
    std::vector<void *> objs = alloc_n(p.get(), kForeignSlabs + 8);
    ASSERT_EQ(objs.size(), kForeignSlabs + 8);
    on_a_thread_with_a_slab(p.get(), [&] {
        /* onto an empty list: the next allocation */
        void *o = objs[0];
        pk_pool_free(p.get(), o);
        objs[0] = pk_pool_alloc(p.get());
        EXPECT_EQ(objs[0], o);
        void *own = pk_pool_alloc(p.get()); /* freed back: the list is not empty */
        ASSERT_NE(own, nullptr);
        pk_pool_free(p.get(), own);
        std::vector<void *> freed(objs.begin() + 1, objs.begin() + 1 + budget + 3);
        for (void *f : freed) pk_pool_free(p.get(), f);
        for (size_t i = 0; i < freed.size(); i++) {
            void *got = pk_pool_alloc(p.get());
            ASSERT_NE(got, nullptr);
            if (i < budget) EXPECT_EQ(got, freed[budget - 1 - i]) << i;
            else if (i == budget) EXPECT_EQ(got, own);
            else EXPECT_EQ(std::count(freed.begin(), freed.end(), got), 0) << i << ": went home";
            objs[1 + i] = got; /* every freed one replaced: the set stays whole */
        }
    });
    EXPECT_EQ(stats_of(p.get()).live, objs.size());
    free_all(p.get(), objs);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* Objects on the list of a thread that exits go home (remote frees): live
 * falls by as many, and the main thread's slabs get them back; on a pool
 * of `flags`. */
void expect_listed_go_home_at_exit(unsigned flags, const char *name) {
    PoolPtr p = make_pool(kForeignSize, 0, flags, name);
    std::vector<void *> objs = fill_slabs(p.get(), kForeignSlabs + 4);
    const pk_pool_stats before = stats_of(p.get());
    const size_t k = 5;
    on_a_thread_with_a_slab(p.get(), [&] {
        for (size_t i = 0; i < k; i++) pk_pool_free(p.get(), objs[1000 + i]);
    });
    pk_pool_stats after = stats_of(p.get());
    EXPECT_EQ(after.live, before.live - k);
    /* onto their slabs' remote frees, for the slabs' owner to collect, never
     * onto a list another thread may be taking objects from */
    EXPECT_EQ(after.remote_frees, before.remote_frees + k);
    objs.erase(objs.begin() + 1000, objs.begin() + 1000 + k);
    free_all(p.get(), objs);
    pk_collect(1);
    pk_pool_stats st = stats_of(p.get());
    EXPECT_EQ(st.live, 0u);
    EXPECT_EQ(st.slabs, 0u) << "a slab kept a listed object after its thread exited";
}

TEST(PoolFreeForeign, ObjectsListedByAThreadThatExitsGoHome) { expect_listed_go_home_at_exit(0, "foreign, exit"); }

/* On a hardened list the objects listed over objects of the current slab
 * carry their tags: the walk that sends the list home at the thread's exit
 * accepts them, each checked, and sends them home. */
TEST(PoolFreeForeign, ObjectsListedOnAHardenedListGoHomeAtItsThreadsExit) {
    expect_listed_go_home_at_exit(PK_POOL_HARDENED, "foreign, hardened, exit");
}

TEST(PoolFreeForeignDeathTest, AnObjectFreedTwiceInARowIsReported) {
    expect_foreign_double_free_reported(0, "foreign, twice");
}

/* A hardened list takes such an object onto an empty list as the end (the
 * hot object), and onto one that is not empty as the head: the next
 * allocations return them, last freed first, whether the inline path
 * follows the link (into the current slab) or the library does (to
 * another such object, or to the hot object under objects of the current
 * slab freed after it). */
TEST(PoolFreeForeign, AHardenedListTakesThemBackLastFreedFirst) {
    PoolPtr p = make_pool(kForeignSize, 0, PK_POOL_HARDENED, "foreign, hardened");
    std::vector<void *> objs = fill_slabs(p.get(), kForeignSlabs + 4);
    on_a_thread_with_a_slab(p.get(), [&] {
        std::vector<void *> mine;
        empty_the_list(p.get(), mine);
        for (int round = 0; round < 3; round++) {
            void *x = objs[200 + round];
            pk_pool_free(p.get(), x);
            objs[200 + round] = pk_pool_alloc(p.get());
            EXPECT_EQ(objs[200 + round], x) << round;
        }
        void *x = objs[300], *y = objs[301], *z = objs[302];
        pk_pool_free(p.get(), x); /* the end */
        pk_pool_free(p.get(), y); /* over x: a link out of the current slab */
        objs[301] = pk_pool_alloc(p.get());
        EXPECT_EQ(objs[301], y);
        void *own = mine.back(); /* of the current slab, over x */
        mine.pop_back();
        pk_pool_free(p.get(), own);
        pk_pool_free(p.get(), z); /* over own: its link leads into the current slab */
        EXPECT_EQ(pk_pool_alloc(p.get()), z);
        EXPECT_EQ(pk_pool_alloc(p.get()), own);
        EXPECT_EQ(pk_pool_alloc(p.get()), x);
        objs[302] = z;
        mine.push_back(own);
        free_all(p.get(), mine);
    });
    free_all(p.get(), objs);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* The one object a hardened list holds of another heap's slab goes home
 * with the list at the thread's exit: the walk that checks every listed
 * object accepts it, and no other of that slab. */
TEST(PoolFreeForeign, AHardenedListsObjectGoesHomeAtItsThreadsExit) {
    PoolPtr p = make_pool(kForeignSize, 0, PK_POOL_HARDENED, "foreign, hardened, exit");
    std::vector<void *> objs = fill_slabs(p.get(), kForeignSlabs + 4);
    const pk_pool_stats before = stats_of(p.get());
    std::vector<void *> mine;
    on_a_thread_with_a_slab(p.get(), [&] {
        empty_the_list(p.get(), mine);
        pk_pool_free(p.get(), objs[400]);
    });
    pk_pool_stats after = stats_of(p.get());
    EXPECT_EQ(after.live, before.live - 1 + mine.size());
    EXPECT_EQ(after.remote_frees, before.remote_frees + 1);
    objs.erase(objs.begin() + 400);
    free_all(p.get(), objs);
    free_all(p.get(), mine);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* An object of another heap's slab listed over an object of the current
 * slab carries its tag in its second word; another object of the current
 * slab freed over it links to it. A write after free into that word makes
 * the link one the library no longer follows: the allocation that meets
 * it reports a corrupted list, where it would hand out whatever slot the
 * link named (a live object of another thread, with a leaked secret). */
TEST(PoolFreeForeignDeathTest, AHardenedListsForeignObjectWrittenAfterItsFreeIsReported) {
    PoolPtr p = make_pool(kForeignSize, 0, PK_POOL_HARDENED, "foreign, hardened, written");
    std::vector<void *> objs = fill_slabs(p.get(), kForeignSlabs + 4);
    if (running_under_valgrind()) GTEST_SKIP() << "writes to freed memory on purpose";
    void *volatile a = objs[500];
    PKTEST_EXPECT_REPORT(on_a_thread_with_a_slab(p.get(),
                                                 [&] {
                                                     void *own = pk_pool_alloc(p.get());
                                                     void *own2 = pk_pool_alloc(p.get());
                                                     pk_pool_free(p.get(), own);
                                                     pk_pool_free(p.get(), a); /* over own: tagged */
                                                     pk_pool_free(p.get(), own2); /* links to a */
                                                     static_cast<volatile uintptr_t *>(a)[1] = 0x1234;
                                                     (void)pk_pool_alloc(p.get());
                                                     (void)pk_pool_alloc(p.get());
                                                     std::fprintf(stderr, "no report\n");
                                                 }),
                         "what=corrupted free list.*\n.*which is not a free slot of its slab");
    free_all(p.get(), objs);
}

TEST(PoolFreeForeignDeathTest, AnObjectFreedTwiceInARowIsReportedOnAHardenedList) {
    expect_foreign_double_free_reported(PK_POOL_HARDENED, "foreign, hardened, twice");
}

TEST(PoolFreeOwnerDeathTest, AnObjectOfAnotherSlabFreedTwiceInARowIsReported) {
    expect_owner_double_free_reported(0, "owner, twice");
}

TEST(PoolFreeOwnerDeathTest, AnObjectOfAnotherSlabFreedTwiceInARowIsReportedOnAHardenedList) {
    expect_owner_double_free_reported(PK_POOL_HARDENED, "owner, hardened, twice");
}

/* ---- empty slabs back to the heap that gave them (EMPTY_AFFINITY, policy.h) ---- */

namespace {

/* A thread that runs what it is given, one call at a time, until it is
 * destroyed: two heaps whose steps interleave in a set order. */
class Worker {
  public:
    Worker() : thread_([this] { loop(); }) {}
    ~Worker() {
        run(nullptr);
        thread_.join();
    }
    /* Runs f on the thread and returns when it is done; nullptr ends it. */
    void run(std::function<void()> f) {
        std::unique_lock<std::mutex> g(m_);
        job_ = std::move(f);
        quit_ = !job_;
        has_ = true;
        cv_.notify_all();
        cv_.wait(g, [this] { return !has_; });
    }

  private:
    void loop() {
        std::unique_lock<std::mutex> g(m_);
        for (;;) {
            cv_.wait(g, [this] { return has_; });
            if (!quit_) {
                std::function<void()> f = std::move(job_);
                g.unlock();
                f();
                g.lock();
            }
            has_ = false;
            cv_.notify_all();
            if (quit_) return;
        }
    }
    std::mutex m_;
    std::condition_variable cv_;
    std::function<void()> job_;
    bool has_ = false, quit_ = false;
    std::thread thread_; /* last: it starts once the rest is made */
};

} // namespace

/* Two threads each fill a few slabs and free them, one after the other:
 * each keeps its current slab and a spare, and gives the rest to the pool,
 * whose empty list then holds the second thread's on top of the first's.
 * The first thread's next slabs are its own again, not the ones the other
 * core touched last (without EMPTY_AFFINITY it took the list's head). */
TEST(PoolHeapSlabs, AThreadTakesBackTheEmptySlabsItGaveThePool) {
    PurgeDelay delay(60000); /* the empty slabs stay the pool's over a slow run */
    PoolPtr p = make_pool(64, 0, 0, "affinity");
    const size_t n = 4 * (SLAB_BYTES / 64);
    std::vector<void *> mine, theirs, again;
    Worker a, b;
    a.run([&] { mine = alloc_n(p.get(), n); });
    b.run([&] { theirs = alloc_n(p.get(), n); });
    ASSERT_EQ(mine.size(), n);
    ASSERT_EQ(theirs.size(), n);
    std::set<uintptr_t> my_slabs;
    for (void *o : mine) my_slabs.insert(block_of(o));
    a.run([&] { free_all(p.get(), mine); });
    b.run([&] { free_all(p.get(), theirs); });
    EXPECT_GE(stats_of(p.get()).slabs, 2 * my_slabs.size() - 4) << "the slabs went back to the system";
    a.run([&] { again = alloc_n(p.get(), n); });
    size_t other = 0;
    for (void *o : again) other += my_slabs.count(block_of(o)) == 0;
    EXPECT_EQ(other, 0u) << "objects of slabs the other thread emptied, of " << n;
    a.run([&] { free_all(p.get(), again); });
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}
