// poolkit.hpp in a program built with -fno-exceptions: what would throw
// std::bad_alloc prints "poolkit: out of memory in ..." and aborts; the try_
// calls return nullptr; everything else works as with exceptions.
//
// Meant to be compiled with -fno-exceptions (tests/CMakeLists.txt adds it to
// test_*_noexcept files). Compiled with exceptions, every test here skips.
// POOLKIT_TEST_LABELS: novalgrind
#include <poolkit/poolkit.hpp>

#include <gtest/gtest.h>

#include <list>
#include <map>
#include <memory_resource>

namespace {

class NoExceptions : public ::testing::Test {
protected:
    void SetUp() override {
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
        GTEST_SKIP() << "built with exceptions: compile this file with -fno-exceptions";
#endif
        GTEST_FLAG_SET(death_test_style, "threadsafe");
    }
    void TearDown() override { pk_fault_fail_after(-1); }
};

struct Rare {
    char bytes[1700]; // a size no other test uses: its pool is made in the test
};

TEST_F(NoExceptions, ContainersWork) {
    std::list<int, pk::pool_allocator<int>> list;
    std::map<int, int, std::less<int>, pk::pool_allocator<std::pair<const int, int>>> map;
    for (int i = 0; i < 100; i++) {
        list.push_back(i);
        map[i] = i;
    }
    EXPECT_EQ(list.size(), 100u);
    EXPECT_EQ(map.at(50), 50);
}

TEST_F(NoExceptions, PoolAllocatorFailureAbortsWithAMessage) {
    pk::pool_allocator<Rare> alloc;
    EXPECT_DEATH(
        {
            pk_fault_fail_after(0);
            (void)alloc.allocate(1);
        },
        "poolkit: out of memory in pk::pool_allocator");
}

TEST_F(NoExceptions, ObjectPoolCreateAtTheLimitAborts) {
    pk::object_pool<int> pool(pk::pool_options{"limited", 0, 1});
    int *one = pool.create(1);
    EXPECT_DEATH((void)pool.create(2), "poolkit: out of memory in pk::object_pool::create");
    pool.destroy(one);
}

TEST_F(NoExceptions, TryCreateReturnsNullAtTheLimit) {
    pk::object_pool<int> pool(pk::pool_options{"limited", 0, 1});
    int *one = pool.try_create(1);
    ASSERT_NE(one, nullptr);
    EXPECT_EQ(pool.try_create(2), nullptr);
    pool.destroy(one);
}

TEST_F(NoExceptions, ArenaFailureAbortsAndTryAllocateReturnsNull) {
    pk::arena arena(4096);
    pk_fault_fail_after(0);
    EXPECT_EQ(arena.try_allocate(1 << 20), nullptr);
    EXPECT_DEATH((void)arena.allocate(1 << 20), "poolkit: out of memory in pk::arena::allocate");
}

TEST_F(NoExceptions, PmrResourceFailureAborts) {
    pk::pool_resource res;
    EXPECT_DEATH(
        {
            pk_fault_fail_after(0);
            (void)res.allocate(2000);
        },
        "poolkit: out of memory in pk::pool_resource");
}

TEST_F(NoExceptions, RefsAndAutoreleaseWork) {
    pk::ref<int> kept;
    {
        pk::autorelease_scope scope;
        pk::ref<int> r = pk::make_ref<int>(3);
        kept = r;
        r.autorelease();
        EXPECT_EQ(kept.use_count(), 2u);
    }
    EXPECT_EQ(kept.use_count(), 1u);
    EXPECT_EQ(*kept, 3);
}

} // namespace
