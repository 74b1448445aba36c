/* The size-class front end's guard against re-entry, white-box: as malloc,
 * the front end is called again by the C library from inside poolkit (a
 * pool made on first use reads the environment, registers handlers; a
 * debug pool calls backtrace()). Such calls must never enter the pools:
 * an allocation is served from the bootstrap buffer, a free of a class
 * object waits until the outer call ends. Here the test point inside the
 * class lock (alloc.c, made for the fork tests) stands for the C library:
 * it allocates and frees while the library makes a class's pool. */
#include "support.h"

#include <poolkit/alloc.h>

extern "C" {
#include "internal.h"
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
