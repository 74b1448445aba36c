/* The size-class front end, white-box: its guard against re-entry, and the
 * bounds on the freed large blocks it keeps (policy.h).
 *
 * Re-entry: as malloc,
 * the front end is called again by the C library from inside poolkit (a
 * pool made on first use reads the environment, registers handlers; a
 * debug pool calls backtrace()). Such calls must never enter the pools:
 * an allocation is served from the bootstrap buffer, a free of a class
 * object waits until the outer call ends. Here the test point inside the
 * class lock (alloc.c, made for the fork tests) stands for the C library:
 * it allocates and frees while the library makes a class's pool. */
#include "support.h"

#include <poolkit/alloc.h>
#include <poolkit/stats.h>

#include <algorithm>

extern "C" {
#include "base/internal.h"
#include "base/policy.h"
}

using namespace pktest;

namespace {

void *inner_block;
void *victim;
pk_pool *victim_pool;
size_t live_inside = SIZE_MAX;

void reenter(hook_point point, void *) {
    if (point != HOOK_ALLOC_CLASSES || inner_block) return;
    inner_block = pk_alloc(5000); /* a class not made yet: the slow path, inside the library */
    pk_free(victim);              /* an object of another slab than the thread's current one */
    live_inside = stats_of(victim_pool).live;
}

TEST(AllocReentry, CallsFromInsideTheLibraryNeverEnterThePools) {
    std::vector<void *> objs;
    for (int i = 0; i < 4000; i++) objs.push_back(pk_alloc(40)); /* three slabs of the 48-byte class */
    victim = objs[0];
    victim_pool = pk_pool_owner(victim);
    ASSERT_NE(victim_pool, nullptr);
    size_t before = stats_of(victim_pool).live;
    fork_test_hook = reenter;
    pk_free(pk_alloc(9000)); /* makes the 10240-byte class's pool: the hook runs inside */
    fork_test_hook = nullptr;
    ASSERT_NE(inner_block, nullptr);
    EXPECT_EQ(live_inside, before) << "the free inside the library went into the pool at once";
    EXPECT_EQ(stats_of(victim_pool).live, before - 1) << "the deferred free was not sent at the outer call's end";
    EXPECT_EQ(pk_pool_owner(inner_block), nullptr) << "the allocation inside the library came from a pool";
    EXPECT_EQ(pk_usable_size(inner_block), 5000u) << "a bootstrap block knows its size";
    void *grown = pk_realloc(inner_block, 6000); /* out of the buffer, into a class */
    EXPECT_NE(pk_pool_owner(grown), nullptr);
    pk_free(grown);
    for (size_t i = 1; i < objs.size(); i++) pk_free(objs[i]);
}

/* ---- the bounds on freed large blocks kept for reuse ---- */

constexpr size_t MiB = size_t(1) << 20;

/* Nothing kept when the test starts or after it; a long delay meanwhile. */
struct KeptBlocks {
    long old = pk_set_purge_delay(60000);
    KeptBlocks() { pk_pool_release_cache(); }
    ~KeptBlocks() {
        pk_set_purge_delay(old);
        pk_pool_release_cache();
    }
};

size_t kept_bytes() {
    pk_process_stats st;
    pk_stats_get(&st);
    return st.retained_bytes;
}

TEST(AllocLargeKept, AtMostLargeKeepCountMappingsWait) {
    KeptBlocks kept;
    /* Every other block in address order is freed: a live one lies between
     * any two of them, so none joins another. */
    const size_t n = LARGE_KEEP_COUNT + 8, len = MiB;
    std::vector<char *> blocks;
    for (size_t i = 0; i < 2 * n; i++) blocks.push_back(static_cast<char *>(pk_alloc(len)));
    std::sort(blocks.begin(), blocks.end());
    for (size_t i = 0; i < 2 * n; i += 2) pk_free(blocks[i]);
    EXPECT_EQ(kept_bytes(), LARGE_KEEP_COUNT * len) << "freed blocks kept past the count";
    for (size_t i = 1; i < 2 * n; i += 2) pk_free(blocks[i]);
}

TEST(AllocLargeKept, WhatWaitsStaysWithinTheFloorWhenFewBlocksAreLive) {
    KeptBlocks kept;
    const size_t len = LARGE_KEEP_FLOOR / 4 + MiB, n = 9;
    std::vector<void *> blocks;
    for (size_t i = 0; i < n; i++) blocks.push_back(pk_alloc(len));
    pk_free(blocks[0]);
    EXPECT_EQ(kept_bytes(), len) << "a freed block was not kept";
    for (size_t i = 1; i < n; i++) {
        pk_free(blocks[i]);
        size_t live = (n - 1 - i) * len, bound = std::max(live, LARGE_KEEP_FLOOR);
        EXPECT_LE(kept_bytes(), bound) << "after " << i + 1 << " frees, " << live << " bytes live";
    }
}

TEST(AllocLargeKept, ABlockLongerThanTheBoundGoesBackAtOnce) {
    KeptBlocks kept;
    void *p = pk_alloc(LARGE_KEEP_FLOOR + MiB);
    ASSERT_NE(p, nullptr);
    pk_free(p);
    EXPECT_EQ(kept_bytes(), 0u);
}

TEST(AllocLargeKept, TheBoundFollowsTheBlocksLive) {
    KeptBlocks kept;
    const size_t len = LARGE_KEEP_FLOOR / 4;
    std::vector<void *> live, freed;
    for (int i = 0; i < 10; i++) live.push_back(pk_alloc(len)); /* 2.5 floors live */
    for (int i = 0; i < 6; i++) freed.push_back(pk_alloc(len));
    for (void *p : freed) pk_free(p);
    EXPECT_EQ(kept_bytes(), 6 * len) << "blocks freed while more were live than they came to were not all kept";
    for (void *p : live) pk_free(p);
    EXPECT_LE(kept_bytes(), LARGE_KEEP_FLOOR);
}

/* The same for an object whose slab has free slots already (the short
 * path's case, which pk_free takes without a call into the pool's slow
 * path): inside the library it waits too. */
TEST(AllocReentry, AFreeOfAnotherSlabsObjectWithFreeSlotsWaitsToo) {
    std::vector<void *> objs;
    for (int i = 0; i < 4000; i++) objs.push_back(pk_alloc(40));
    pk_free(objs[1]); /* the first slab now has a free slot */
    inner_block = nullptr;
    live_inside = SIZE_MAX;
    victim = objs[0];
    victim_pool = pk_pool_owner(victim);
    ASSERT_NE(victim_pool, nullptr);
    size_t before = stats_of(victim_pool).live;
    fork_test_hook = reenter;
    pk_free(pk_alloc(30000)); /* a class of its own, made now (the other test made 9000's) */
    fork_test_hook = nullptr;
    ASSERT_NE(inner_block, nullptr);
    EXPECT_EQ(live_inside, before) << "the free inside the library went into the pool at once";
    EXPECT_EQ(stats_of(victim_pool).live, before - 1) << "the deferred free was not sent at the outer call's end";
    pk_free(inner_block);
    for (size_t i = 2; i < objs.size(); i++) pk_free(objs[i]);
}

} // namespace
