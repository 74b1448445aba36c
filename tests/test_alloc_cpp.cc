/* C++ over the size-class front end: pk::alloc_resource for std::pmr
 * containers, and pk::pool_allocator's arrays (a vector's storage, an
 * unordered_map's buckets), which come from pk_alloc's classes. */
#include "support.h"

#include <poolkit/poolkit.hpp>

#include <cstring>
#include <map>
#include <memory_resource>
#include <string>
#include <unordered_map>
#include <vector>

using namespace pktest;

namespace {

/* The front end's class pool that holds p, by its name, or "" for none. */
std::string class_of(const void *p) {
    pk_pool *pool = pk_pool_owner(p);
    if (!pool) return "";
    pk_pool_stats st = stats_of(pool);
    return st.name ? st.name : "";
}

TEST(AllocResource, PmrContainersTakeTheirMemoryFromTheClasses) {
    pk::alloc_resource *r = pk::alloc_resource::instance();
    EXPECT_EQ(r, pk::alloc_resource::instance());
    std::pmr::vector<std::pmr::string> v(r);
    for (int i = 0; i < 2000; i++) v.emplace_back("a string longer than the small buffer, number " + std::to_string(i));
    std::pmr::map<int, std::pmr::string> m(r);
    for (int i = 0; i < 2000; i++) m.emplace(i, v[static_cast<size_t>(i)]);
    EXPECT_EQ(m.at(1234), v[1234]);
    EXPECT_EQ(class_of(v.data()).rfind("pk_alloc ", 0), 0u) << class_of(v.data());
    EXPECT_EQ(class_of(v[7].data()).rfind("pk_alloc ", 0), 0u);
}

TEST(AllocResource, EveryAlignmentAndSizeRoundTrips) {
    pk::alloc_resource r;
    std::vector<std::tuple<void *, size_t, size_t>> blocks;
    for (size_t a = 1; a <= 8192; a *= 2)
        for (size_t s : {size_t(1), size_t(7), size_t(8), size_t(15), size_t(100), size_t(5000), size_t(400000)}) {
            void *p = r.allocate(s, a);
            ASSERT_TRUE(aligned_to(p, a)) << "size " << s << " align " << a;
            std::memset(p, 0x33, s);
            blocks.emplace_back(p, s, a);
        }
    for (auto &[p, s, a] : blocks) r.deallocate(p, s, a); /* a wrong size would be reported */
    EXPECT_TRUE(r.is_equal(r));
    EXPECT_FALSE(r.is_equal(*std::pmr::new_delete_resource()));
}

struct alignas(64) Line {
    char bytes[64];
};

TEST(PoolAllocatorArrays, AVectorsStorageComesFromTheFrontEnd) {
    std::vector<int, pk::pool_allocator<int>> v;
    for (int i = 0; i < 100000; i++) v.push_back(i);
    EXPECT_EQ(v[99999], 99999);
    EXPECT_EQ(pk_usable_size(v.data()) >= v.capacity() * sizeof(int), true);
    std::vector<int, pk::pool_allocator<int>> small(10, 7);
    EXPECT_EQ(class_of(small.data()), "pk_alloc 48") << "10 ints: the 48-byte class";
}

TEST(PoolAllocatorArrays, OverAlignedArraysAreAligned) {
    std::vector<Line, pk::pool_allocator<Line>> v(37);
    EXPECT_TRUE(aligned_to(v.data(), 64));
    v.resize(5000);
    EXPECT_TRUE(aligned_to(v.data(), 64));
}

TEST(PoolAllocatorArrays, UnorderedMapBucketsAndNodesBothPool) {
    std::unordered_map<int, int, std::hash<int>, std::equal_to<int>,
                       pk::pool_allocator<std::pair<const int, int>>> m;
    for (int i = 0; i < 50000; i++) m[i] = i * 2;
    EXPECT_EQ(m[777], 1554);
    m.clear();
    m.rehash(0);
}

} // namespace
