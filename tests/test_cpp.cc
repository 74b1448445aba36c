// The C++ interface, <poolkit/poolkit.hpp>: one test per behaviour.
#include <poolkit/poolkit.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <memory_resource>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

// ---- helpers ---------------------------------------------------------------

// Counts constructions and destructions of Tracked.
struct Counts {
    int made = 0;
    int gone = 0;
    int live() const { return made - gone; }
};

struct Tracked {
    Counts *counts;
    int value;
    Tracked(Counts *c, int v) : counts(c), value(v) { counts->made++; }
    ~Tracked() { counts->gone++; }
};

// Disarms fault injection whatever the test's outcome.
struct FaultGuard {
    ~FaultGuard() { pk_fault_fail_after(-1); }
};

// Counts the warnings and fatal errors poolkit reports while alive.
struct ErrorCounter {
    int warnings = 0;
    int fatals = 0;
    ErrorCounter() { pk_set_error_handler(&record, this); }
    ~ErrorCounter() { pk_set_error_handler(nullptr, nullptr); }
    static void record(const pk_error *err, void *arg) {
        auto *self = static_cast<ErrorCounter *>(arg);
        (err->severity == PK_FATAL ? self->fatals : self->warnings)++;
    }
};

// The pool holding the object slot that contains elem, for a pointer into a
// container node: the node starts at most 64 bytes before its value, and
// pk_pool_owner is non-null only at a slot's start, so the first hit walking
// down is this node's slot. nullptr when the node is not pool memory.
pk_pool *pool_of_node(const void *elem) {
    const char *p = static_cast<const char *>(elem);
    for (std::size_t back = 0; back <= 64; back += alignof(void *))
        if (pk_pool *pool = pk_pool_owner(p - back)) return pool;
    return nullptr;
}

std::size_t live_in(pk_pool *pool) {
    pk_pool_stats s;
    pk_pool_stats_get(pool, &s);
    return s.live;
}

// ---- object_pool -----------------------------------------------------------

TEST(ObjectPool, CreateConstructsAndDestroyRunsTheDestructor) {
    Counts counts;
    pk::object_pool<Tracked> pool;
    Tracked *a = pool.create(&counts, 1);
    Tracked *b = pool.create(&counts, 2);
    EXPECT_EQ(a->value, 1);
    EXPECT_EQ(b->value, 2);
    EXPECT_EQ(counts.made, 2);
    EXPECT_EQ(pool.size(), 2u);
    pool.destroy(a);
    EXPECT_EQ(counts.gone, 1);
    EXPECT_EQ(pool.size(), 1u);
    pool.destroy(b);
    EXPECT_EQ(counts.live(), 0);
    EXPECT_EQ(pool.size(), 0u);
}

TEST(ObjectPool, ObjectsComeFromThePool) {
    pk::object_pool<std::uint64_t> pool;
    std::uint64_t *p = pool.create(std::uint64_t{42});
    EXPECT_EQ(pk_pool_owner(p), pool.get());
    EXPECT_EQ(*p, 42u);
    pool.destroy(p);
}

TEST(ObjectPool, AggregatesAreBraceInitialized) {
    struct Point {
        int x, y;
    };
    pk::object_pool<Point> pool;
    Point *p = pool.create(3, 4);
    EXPECT_EQ(p->x, 3);
    EXPECT_EQ(p->y, 4);
    pool.destroy(p);
}

TEST(ObjectPool, OverAlignedTypesAreAligned) {
    struct alignas(256) Page {
        char bytes[256];
    };
    pk::object_pool<Page> pool;
    Page *p = pool.create();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u);
    pool.destroy(p);
}

TEST(ObjectPool, DestroyOfNullDoesNothing) {
    pk::object_pool<int> pool;
    pool.destroy(nullptr);
    EXPECT_EQ(pool.size(), 0u);
}

TEST(ObjectPool, DestroyingThePoolDestroysLiveObjectsWithoutALeakReport) {
    Counts counts;
    ErrorCounter errors;
    {
        pk::object_pool<Tracked> pool;
        for (int i = 0; i < 1000; i++) pool.create(&counts, i);
        pool.destroy(pool.create(&counts, -1));
        EXPECT_EQ(counts.live(), 1000);
    }
    EXPECT_EQ(counts.made, 1001);
    EXPECT_EQ(counts.gone, 1001);
    EXPECT_EQ(errors.warnings, 0);
}

TEST(ObjectPool, ClearDestroysEveryObjectOnceAndKeepsThePool) {
    Counts counts;
    pk::object_pool<Tracked> pool;
    for (int i = 0; i < 100; i++) pool.create(&counts, i);
    pool.clear();
    EXPECT_EQ(counts.gone, 100);
    EXPECT_EQ(pool.size(), 0u);
    Tracked *again = pool.create(&counts, 7);
    EXPECT_EQ(again->value, 7);
    pool.destroy(again);
}

// A tree whose nodes destroy their children through the same pool.
struct TreeNode {
    pk::object_pool<TreeNode> *pool;
    TreeNode *left = nullptr, *right = nullptr;
    int *destroyed;
    TreeNode(pk::object_pool<TreeNode> *p, int *d) : pool(p), destroyed(d) {}
    ~TreeNode() {
        pool->destroy(left);
        pool->destroy(right);
        ++*destroyed;
    }
};

TEST(ObjectPool, DestructorsMayDestroyOtherObjectsOfThePoolDuringClear) {
    int destroyed = 0;
    pk::object_pool<TreeNode> pool;
    std::vector<TreeNode *> level{pool.create(&pool, &destroyed)};
    for (int depth = 0; depth < 6; depth++) {
        std::vector<TreeNode *> next;
        for (TreeNode *n : level) {
            n->left = pool.create(&pool, &destroyed);
            n->right = pool.create(&pool, &destroyed);
            next.push_back(n->left);
            next.push_back(n->right);
        }
        level = next;
    }
    const std::size_t nodes = pool.size();
    EXPECT_EQ(nodes, 127u);
    pool.clear();
    EXPECT_EQ(destroyed, 127);
    EXPECT_EQ(pool.size(), 0u);
}

TEST(ObjectPool, UniquePtrDeleterDestroysThroughThePool) {
    Counts counts;
    pk::object_pool<Tracked> pool;
    {
        pk::object_pool<Tracked>::unique_ptr p = pool.make_unique(&counts, 5);
        EXPECT_EQ(p->value, 5);
        EXPECT_EQ(p.get_deleter().pool(), pool.get());
        std::unique_ptr<Tracked, pk::object_pool<Tracked>::deleter> q(pool.create(&counts, 6),
                                                                    pool.get_deleter());
        EXPECT_EQ(pool.size(), 2u);
    }
    EXPECT_EQ(counts.gone, 2);
    EXPECT_EQ(pool.size(), 0u);
}

TEST(ObjectPool, MovingThePoolKeepsObjectsAndDeletersValid) {
    Counts counts;
    pk::object_pool<Tracked> first;
    auto kept = first.make_unique(&counts, 1);
    Tracked *raw = first.create(&counts, 2);
    pk::object_pool<Tracked> second(std::move(first));
    EXPECT_EQ(first.get(), nullptr);
    EXPECT_EQ(second.size(), 2u);
    kept.reset();
    second.destroy(raw);
    EXPECT_EQ(counts.live(), 0);
}

TEST(ObjectPool, CreateThrowsBadAllocAtTheLimit) {
    pk::object_pool<int> pool(pk::pool_options{"limited", 0, 2, 0});
    int *a = pool.create(1);
    int *b = pool.create(2);
    EXPECT_THROW(pool.create(3), std::bad_alloc);
    pool.destroy(a);
    pool.destroy(b);
}

TEST(ObjectPool, TryCreateReturnsNullAtTheLimit) {
    pk::object_pool<int> pool(pk::pool_options{"limited", 0, 1, 0});
    int *a = pool.try_create(1);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(pool.try_create(2), nullptr);
    pool.destroy(a);
}

struct ThrowsOnConstruct {
    explicit ThrowsOnConstruct(int) { throw std::runtime_error("no"); }
};

TEST(ObjectPool, AConstructorThatThrowsGivesTheMemoryBack) {
    pk::object_pool<ThrowsOnConstruct> pool;
    EXPECT_THROW(pool.create(1), std::runtime_error);
    EXPECT_EQ(pool.size(), 0u);
}

// ---- pool_allocator --------------------------------------------------------

template <class T>
using pool_list = std::list<T, pk::pool_allocator<T>>;

TEST(PoolAllocator, ListNodesComeFromAPool) {
    pool_list<int> list;
    for (int i = 0; i < 1000; i++) list.push_back(i);
    pk_pool *pool = pool_of_node(&list.front());
    ASSERT_NE(pool, nullptr);
    const std::size_t with_list = live_in(pool);
    int expect = 0;
    for (int &v : list) {
        EXPECT_EQ(pool_of_node(&v), pool);
        EXPECT_EQ(v, expect++);
    }
    list.remove_if([](int v) { return v % 2 == 0; });
    EXPECT_EQ(list.size(), 500u);
    EXPECT_EQ(live_in(pool), with_list - 500);
    list.clear();
    EXPECT_EQ(live_in(pool), with_list - 1000);
}

TEST(PoolAllocator, MapNodesComeFromAPool) {
    using alloc = pk::pool_allocator<std::pair<const int, std::string>>;
    std::map<int, std::string, std::less<int>, alloc> map;
    for (int i = 0; i < 500; i++) map.emplace(i, std::to_string(i));
    for (auto &kv : map) {
        ASSERT_NE(pool_of_node(&kv), nullptr);
        EXPECT_EQ(kv.second, std::to_string(kv.first));
    }
    for (int i = 0; i < 500; i += 2) map.erase(i);
    EXPECT_EQ(map.size(), 250u);
    EXPECT_EQ(map.at(1), "1");
}

TEST(PoolAllocator, SetNodesComeFromAPool) {
    std::set<long, std::less<long>, pk::pool_allocator<long>> set;
    for (long i = 999; i >= 0; i--) set.insert(i * 7 % 1000);
    EXPECT_EQ(set.size(), 1000u);
    long expect = 0;
    for (const long &v : set) {
        ASSERT_NE(pool_of_node(&v), nullptr);
        EXPECT_EQ(v, expect++);
    }
}

TEST(PoolAllocator, UnorderedMapNodesComeFromAPoolAndBucketsFromTheHeap) {
    using alloc = pk::pool_allocator<std::pair<const int, int>>;
    std::unordered_map<int, int, std::hash<int>, std::equal_to<int>, alloc> map;
    for (int i = 0; i < 10000; i++) map[i] = i * i;
    EXPECT_EQ(map.size(), 10000u);
    for (int i = 0; i < 10000; i += 97) EXPECT_EQ(map.at(i), i * i);
    for (auto &kv : map) ASSERT_NE(pool_of_node(&kv), nullptr);
    for (int i = 0; i < 10000; i += 2) map.erase(i);
    EXPECT_EQ(map.size(), 5000u);
}

TEST(PoolAllocator, AllocateSharedPutsTheControlBlockInAPool) {
    Counts counts;
    {
        auto p = std::allocate_shared<Tracked>(pk::pool_allocator<Tracked>(), &counts, 9);
        EXPECT_EQ(p->value, 9);
        EXPECT_NE(pool_of_node(p.get()), nullptr);
        std::shared_ptr<Tracked> q = p;
        EXPECT_EQ(p.use_count(), 2);
    }
    EXPECT_EQ(counts.live(), 0);
}

TEST(PoolAllocator, AllocatorsOfAnyTypeAreEqual) {
    pk::pool_allocator<int> a;
    pk::pool_allocator<double> b;
    pk::pool_allocator<int> c(b);
    EXPECT_TRUE(a == b);
    EXPECT_FALSE(a != c);
    static_assert(std::allocator_traits<pk::pool_allocator<int>>::is_always_equal::value);
    static_assert(std::is_same_v<
                  std::allocator_traits<pk::pool_allocator<int>>::rebind_alloc<double>,
                  pk::pool_allocator<double>>);
}

TEST(PoolAllocator, MemoryMayBeFreedThroughAnotherTypesAllocator) {
    struct Sixteen {
        double a, b;
    };
    struct AlsoSixteen { // another type of the same size and alignment
        std::uint64_t x, y;
    };
    static_assert(!std::is_same_v<Sixteen, AlsoSixteen>);
    static_assert(sizeof(Sixteen) == sizeof(AlsoSixteen) && alignof(Sixteen) == alignof(AlsoSixteen));
    pk_pool *pool = pk::pool_allocator<Sixteen>::type_pool();
    ASSERT_EQ(pk::pool_allocator<AlsoSixteen>::type_pool(), pool);
    std::size_t before = live_in(pool);
    pk::pool_allocator<Sixteen> typed;
    Sixteen *p = typed.allocate(1);
    EXPECT_EQ(live_in(pool), before + 1);
    pk::pool_allocator<Sixteen>::rebind<AlsoSixteen>::other other{typed};
    other.deallocate(reinterpret_cast<AlsoSixteen *>(p), 1);
    EXPECT_EQ(live_in(pool), before);
}

TEST(PoolAllocator, OneObjectComesFromThePoolOfItsSizeAndAlignment) {
    struct alignas(32) Wide {
        char bytes[96];
    };
    pk::pool_allocator<Wide> alloc;
    Wide *p = alloc.allocate(1);
    EXPECT_EQ(pk_pool_owner(p), alloc.pool());
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 32, 0u);
    pk_pool_stats s;
    pk_pool_stats_get(pk::pool_allocator<Wide>::type_pool(), &s);
    EXPECT_EQ(s.size, 96u);
    EXPECT_EQ(s.align, 32u);
    alloc.deallocate(p, 1);
}

/* A container's nodes are not its value type: c.get_allocator().pool() must
 * name the pool its nodes come from, which holds one live object per
 * element, not the pool of sizeof(value_type). */
template <class Container, class Fill>
void expect_allocator_names_the_node_pool(Container &c, Fill fill, const char *what) {
    fill(c, 0, 10);
    pk_pool *pool = c.get_allocator().pool();
    ASSERT_NE(pool, nullptr) << what;
    std::size_t before = live_in(pool);
    fill(c, 10, 510);
    EXPECT_EQ(live_in(pool), before + 500) << what << ": 500 more elements, 500 more nodes in the named pool";
    pk_pool_stats s;
    pk_pool_stats_get(pool, &s);
    EXPECT_GT(s.size, sizeof(typename Container::value_type)) << what << ": a node holds links besides the value";
    c.clear();
    EXPECT_EQ(live_in(pool), before - 10) << what;
}

TEST(PoolAllocator, AContainersAllocatorNamesThePoolItsNodesComeFrom) {
    using V = std::pair<const int, int>;
    std::map<int, int, std::less<int>, pk::pool_allocator<V>> m;
    expect_allocator_names_the_node_pool(
        m, [](auto &c, int from, int to) { for (int i = from; i < to; i++) c.emplace(i, i); }, "std::map");
    std::unordered_map<int, int, std::hash<int>, std::equal_to<int>, pk::pool_allocator<V>> u;
    expect_allocator_names_the_node_pool(
        u, [](auto &c, int from, int to) { for (int i = from; i < to; i++) c.emplace(i, i); }, "std::unordered_map");
    pool_list<double> l;
    expect_allocator_names_the_node_pool(
        l, [](auto &c, int from, int to) { for (int i = from; i < to; i++) c.push_back(i); }, "std::list");
}

TEST(PoolAllocator, AnAllocatorMadeDirectlyNamesThePoolOfItsType) {
    struct Forty {
        char bytes[40];
    };
    pk::pool_allocator<Forty> alloc;
    EXPECT_EQ(alloc.pool(), pk::pool_allocator<Forty>::type_pool());
    Forty *p = alloc.allocate(1);
    EXPECT_EQ(pk_pool_owner(p), alloc.pool());
    alloc.deallocate(p, 1);
}

TEST(PoolAllocator, AVectorsBuffersComeFromTheSizeClassesNotTheTypesPool) {
    std::vector<int, pk::pool_allocator<int>> v;
    for (int i = 0; i < 100; i++) v.push_back(i);
    pk_pool *owner = pk_pool_owner(v.data());
    ASSERT_NE(owner, nullptr) << "arrays come from pk_alloc's classes (the header says so)";
    EXPECT_NE(owner, pk::pool_allocator<int>::type_pool());
    pk_pool_stats st;
    pk_pool_stats_get(owner, &st);
    EXPECT_EQ(std::string(st.name).rfind("pk_alloc ", 0), 0u) << st.name;
    EXPECT_EQ(v[99], 99);
}

TEST(PoolAllocator, ArraysComeFromTheSizeClassFrontEnd) {
    pk::pool_allocator<int> alloc;
    int *p = alloc.allocate(3);
    pk_pool *owner = pk_pool_owner(p);
    ASSERT_NE(owner, nullptr);
    pk_pool_stats st;
    pk_pool_stats_get(owner, &st);
    EXPECT_STREQ(st.name, "pk_alloc 16"); // 12 bytes: pk_alloc's 16-byte class
    p[0] = p[1] = p[2] = 1;
    alloc.deallocate(p, 3);
}

TEST(PoolAllocator, NodesMayBeFreedOnAnotherThread) {
    pool_list<int> list;
    std::thread([&list] {
        for (int i = 0; i < 10000; i++) list.push_back(i);
    }).join();
    EXPECT_EQ(list.size(), 10000u);
    list.clear();
}

TEST(PoolAllocator, AllocationFailureThrowsBadAlloc) {
    // A size no other test uses, so its pool is made here: the page request
    // it needs is the one made to fail.
    struct Unusual {
        char bytes[3000];
    };
    pk::pool_allocator<Unusual> alloc;
    FaultGuard disarm;
    pk_pool_release_cache(); // else the new pool's slab comes from earlier tests' pools
    pk_fault_fail_after(0);
    EXPECT_THROW((void)alloc.allocate(1), std::bad_alloc);
    pk_fault_fail_after(-1);
    Unusual *p = alloc.allocate(1);
    EXPECT_NE(p, nullptr);
    alloc.deallocate(p, 1);
}

TEST(PoolAllocator, AContainerThatCannotAllocateThrowsAndStaysIntact) {
    struct Odd {
        char bytes[2008];
    };
    pool_list<Odd> list;
    FaultGuard disarm;
    pk_fault_fail_after(0);
    EXPECT_THROW(list.emplace_back(), std::bad_alloc);
    EXPECT_TRUE(list.empty());
    pk_fault_fail_after(-1);
    list.emplace_back();
    EXPECT_EQ(list.size(), 1u);
}

// ---- arena and arena_allocator --------------------------------------------

TEST(Arena, AllocateReturnsAlignedMemory) {
    pk::arena arena;
    for (std::size_t align = 1; align <= 256; align *= 2) {
        void *p = arena.allocate(3, align);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % align, 0u);
        std::memset(p, 0xab, 3);
    }
}

TEST(Arena, ScopeRewindsToWhereItBegan) {
    pk::arena arena;
    void *first;
    {
        pk::arena::scope tmp(arena);
        first = arena.allocate(64);
        (void)arena.allocate(100000); // a chunk of its own
    }
    EXPECT_EQ(arena.allocate(64), first);
}

TEST(Arena, SaveAndRewindFreeWhatCameAfter) {
    pk::arena arena;
    pk::arena::mark m = arena.save();
    void *a = arena.allocate(32);
    arena.rewind(m);
    EXPECT_EQ(arena.allocate(32), a);
}

TEST(Arena, ResetFreesEverything) {
    pk::arena arena;
    void *a = arena.allocate(16);
    for (int i = 0; i < 1000; i++) (void)arena.allocate(1000);
    arena.reset();
    EXPECT_EQ(arena.allocate(16), a);
}

TEST(Arena, MakeAndStrdupCopyIntoTheArena) {
    struct Pair {
        int a;
        double b;
    };
    pk::arena arena;
    Pair *p = arena.make<Pair>(1, 2.5);
    EXPECT_EQ(p->a, 1);
    EXPECT_EQ(p->b, 2.5);
    const char *s = arena.strdup("hello");
    EXPECT_STREQ(s, "hello");
    EXPECT_STREQ(arena.strndup("world!", 5), "world");
}

TEST(Arena, MovingTransfersTheArena) {
    pk::arena a;
    pk_arena *raw = a.get();
    pk::arena b(std::move(a));
    EXPECT_EQ(a.get(), nullptr);
    EXPECT_EQ(b.get(), raw);
    (void)b.allocate(8);
}

TEST(Arena, AllocationFailureThrowsBadAllocAndTryAllocateReturnsNull) {
    pk::arena arena(4096);
    FaultGuard disarm;
    pk_fault_fail_after(0);
    EXPECT_THROW((void)arena.allocate(1 << 20), std::bad_alloc);
    EXPECT_EQ(arena.try_allocate(1 << 20), nullptr);
    pk_fault_fail_after(-1);
    EXPECT_NE(arena.try_allocate(1 << 20), nullptr);
}

TEST(ArenaAllocator, VectorGrowsInTheArena) {
    pk::arena arena;
    pk::arena_vector<int> v(arena);
    for (int i = 0; i < 10000; i++) v.push_back(i);
    for (int i = 0; i < 10000; i++) ASSERT_EQ(v[i], i);
    EXPECT_EQ(v.get_allocator().get_arena(), &arena);
}

TEST(ArenaAllocator, StringLivesInTheArena) {
    pk::arena arena;
    pk::arena_string s("a string long enough to leave the small-string buffer", arena);
    s += " and then some more";
    EXPECT_EQ(s.size(), std::strlen("a string long enough to leave the small-string buffer") +
                            std::strlen(" and then some more"));
    EXPECT_EQ(std::string_view(s).substr(0, 8), "a string");
}

TEST(ArenaAllocator, AllocatorsAreEqualForTheSameArena) {
    pk::arena a, b;
    pk::arena_allocator<int> x(a), y(a), z(b);
    pk::arena_allocator<double> w(x);
    EXPECT_TRUE(x == y);
    EXPECT_TRUE(x == w);
    EXPECT_TRUE(x != z);
}

TEST(ArenaAllocator, DeallocateIsANoOp) {
    pk::arena arena;
    pk::arena_allocator<int> alloc(arena);
    int *p = alloc.allocate(4);
    alloc.deallocate(p, 4);
    int *q = alloc.allocate(4);
    EXPECT_NE(p, q);
}

TEST(ArenaAllocator, VectorsOfStringsInOneArena) {
    pk::arena arena;
    std::vector<pk::arena_string, pk::arena_allocator<pk::arena_string>> words(arena);
    for (int i = 0; i < 100; i++)
        words.emplace_back(std::string(50, static_cast<char>('a' + i % 26)).c_str(), arena);
    EXPECT_EQ(words[27], pk::arena_string(std::string(50, 'b').c_str(), arena));
}

// ---- std::pmr adapters -----------------------------------------------------

// An upstream resource that counts what reaches it.
class CountingResource : public std::pmr::memory_resource {
public:
    int allocs = 0, frees = 0;

private:
    void *do_allocate(std::size_t bytes, std::size_t align) override {
        allocs++;
        return std::pmr::new_delete_resource()->allocate(bytes, align);
    }
    void do_deallocate(void *p, std::size_t bytes, std::size_t align) override {
        frees++;
        std::pmr::new_delete_resource()->deallocate(p, bytes, align);
    }
    bool do_is_equal(const std::pmr::memory_resource &o) const noexcept override {
        return this == &o;
    }
};

TEST(PoolResource, PmrListAndMapNodesComeFromItsPools) {
    CountingResource upstream;
    pk::pool_resource res(&upstream);
    {
        std::pmr::list<int> list(&res);
        std::pmr::map<int, int> map(&res);
        for (int i = 0; i < 1000; i++) {
            list.push_back(i);
            map[i] = -i;
        }
        EXPECT_NE(pool_of_node(&list.front()), nullptr);
        EXPECT_EQ(pool_of_node(&list.front()), res.pool_for(sizeof(void *) * 2 + sizeof(int)));
        EXPECT_EQ(map.at(500), -500);
    }
    EXPECT_EQ(upstream.allocs, 0);
}

TEST(PoolResource, PmrUnorderedMapAndStrings) {
    pk::pool_resource res;
    std::pmr::unordered_map<int, std::pmr::string> map(&res);
    for (int i = 0; i < 2000; i++)
        map.emplace(i, std::pmr::string("a string that does not fit in place, number ") +
                           std::to_string(i).c_str());
    EXPECT_EQ(map.size(), 2000u);
    EXPECT_EQ(map.at(1999).substr(0, 8), "a string");
    for (int i = 0; i < 2000; i += 3) map.erase(i);
    EXPECT_EQ(map.size(), 1333u);
}

TEST(PoolResource, BlocksRoundUpToTheirSizeClass) {
    pk::pool_resource res;
    void *p = res.allocate(17);
    pk_pool_stats s;
    pk_pool_stats_get(res.pool_for(17), &s);
    EXPECT_EQ(s.size, 32u);
    EXPECT_EQ(res.pool_for(17), res.pool_for(32));
    void *q = res.allocate(1000);
    pk_pool_stats_get(res.pool_for(1000), &s);
    EXPECT_EQ(s.size, 1024u);
    res.deallocate(q, 1000);
    res.deallocate(p, 17);
}

TEST(PoolResource, LargeAndOverAlignedRequestsGoUpstream) {
    CountingResource upstream;
    pk::pool_resource res(pk::pool_resource::options{512}, &upstream);
    void *big = res.allocate(513);
    void *aligned = res.allocate(64, 64);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(aligned) % 64, 0u);
    void *small = res.allocate(512);
    EXPECT_EQ(upstream.allocs, 2);
    res.deallocate(big, 513);
    res.deallocate(aligned, 64, 64);
    res.deallocate(small, 512);
    EXPECT_EQ(upstream.frees, 2);
}

TEST(PoolResource, EqualsOnlyItself) {
    pk::pool_resource a, b;
    EXPECT_TRUE(a.is_equal(a));
    EXPECT_FALSE(a.is_equal(b));
}

TEST(PoolResource, AllocationFailureThrowsBadAlloc) {
    pk::pool_resource res;
    FaultGuard disarm;
    pk_pool_release_cache(); // else the new pool's slab comes from earlier tests' pools
    pk_fault_fail_after(0);
    EXPECT_THROW((void)res.allocate(48), std::bad_alloc);
    pk_fault_fail_after(-1);
    res.deallocate(res.allocate(48), 48);
}

TEST(PoolResource, ReleaseFreesEveryPooledBlockAndGivesTheMemoryBack) {
    ErrorCounter errors;
    {
        pk::pool_resource res;
        std::vector<void *> blocks;
        for (int i = 0; i < 300; i++) {
            blocks.push_back(res.allocate(32));
            blocks.push_back(res.allocate(1000));
        }
        pk_pool *small = res.pool_for(32), *large = res.pool_for(1000);
        EXPECT_EQ(live_in(small), 300u);
        EXPECT_EQ(live_in(large), 300u);
        res.release();
        pk_pool_stats s;
        for (pk_pool *pool : {small, large}) {
            pk_pool_stats_get(pool, &s);
            EXPECT_EQ(s.live, 0u);
            EXPECT_EQ(s.bytes_reserved, 0u);
        }
        EXPECT_EQ(res.pool_for(32), small); // the pools stay, ready for more
        res.deallocate(res.allocate(32), 32);
    } // destroyed with nothing live: no leak reported
    EXPECT_EQ(errors.warnings, 0);
    EXPECT_EQ(errors.fatals, 0);
}

TEST(PoolResource, ReleaseLeavesBlocksFromUpstream) {
    CountingResource upstream;
    pk::pool_resource res(pk::pool_resource::options{512}, &upstream);
    void *big = res.allocate(513);
    void *pooled = res.allocate(64);
    (void)pooled;
    res.release();
    EXPECT_EQ(upstream.frees, 0);
    std::memset(big, 1, 513); // still the caller's
    res.deallocate(big, 513);
    EXPECT_EQ(upstream.frees, 1);
}

TEST(ArenaResource, PmrVectorAndStringComeFromTheArena) {
    pk::arena arena;
    pk::arena_resource res(arena);
    pk::arena::mark start = arena.save();
    void *first;
    {
        std::pmr::vector<std::pmr::string> v(&res);
        v.reserve(10);
        first = v.data();
        for (int i = 0; i < 10; i++) v.emplace_back("a string longer than the small buffer");
        EXPECT_EQ(v[9], "a string longer than the small buffer");
    }
    arena.rewind(start);
    EXPECT_EQ(res.allocate(sizeof(std::pmr::string) * 10, alignof(std::pmr::string)), first);
}

TEST(ArenaResource, DeallocateIsANoOpAndEqualityIsIdentity) {
    pk::arena arena;
    pk::arena_resource a(arena), b(arena);
    void *p = a.allocate(16);
    a.deallocate(p, 16);
    EXPECT_NE(a.allocate(16), p);
    EXPECT_TRUE(a.is_equal(a));
    EXPECT_FALSE(a.is_equal(b));
}

// ---- ref and make_ref ------------------------------------------------------

TEST(Ref, MakeRefConstructsWithACountOfOne) {
    Counts counts;
    pk::ref<Tracked> r = pk::make_ref<Tracked>(&counts, 3);
    EXPECT_EQ(r->value, 3);
    EXPECT_EQ(r.use_count(), 1u);
    EXPECT_EQ(pk_refcount(r.get()), 1u);
    EXPECT_EQ(counts.made, 1);
}

TEST(Ref, TheLastReleaseRunsTheDestructor) {
    Counts counts;
    {
        pk::ref<Tracked> r = pk::make_ref<Tracked>(&counts, 3);
        {
            pk::ref<Tracked> copy = r;
            EXPECT_EQ(r.use_count(), 2u);
        }
        EXPECT_EQ(counts.gone, 0);
    }
    EXPECT_EQ(counts.gone, 1);
}

TEST(Ref, CopyRetainsMoveTransfersAssignmentReleases) {
    Counts counts;
    pk::ref<Tracked> a = pk::make_ref<Tracked>(&counts, 1);
    pk::ref<Tracked> b = a;
    EXPECT_EQ(a.use_count(), 2u);
    pk::ref<Tracked> c = std::move(b);
    EXPECT_FALSE(b);
    EXPECT_EQ(a.use_count(), 2u);
    c = pk::make_ref<Tracked>(&counts, 2);
    EXPECT_EQ(a.use_count(), 1u);
    EXPECT_EQ(c->value, 2);
    c = nullptr;
    EXPECT_EQ(counts.gone, 1);
    a.reset();
    EXPECT_EQ(counts.gone, 2);
}

TEST(Ref, DetachAdoptAndRetainHandRawReferences) {
    Counts counts;
    pk::ref<Tracked> a = pk::make_ref<Tracked>(&counts, 1);
    Tracked *raw = a.detach();
    EXPECT_FALSE(a);
    EXPECT_EQ(pk_refcount(raw), 1u);
    pk::ref<Tracked> b = pk::ref<Tracked>::retain(raw);
    EXPECT_EQ(b.use_count(), 2u);
    pk::ref<Tracked> c = pk::ref<Tracked>::adopt(raw);
    EXPECT_EQ(b.use_count(), 2u);
    c.reset();
    b.reset();
    EXPECT_EQ(counts.gone, 1);
}

TEST(Ref, ObjectsAreOfTheClassNamedAfterTheirType) {
    Counts counts;
    pk::ref<Tracked> r = pk::make_ref<Tracked>(&counts, 1);
    const pk_class *cls = pk_class_of(r.get());
    EXPECT_EQ(cls, pk::class_of<Tracked>());
    EXPECT_EQ(cls->size, sizeof(Tracked));
    EXPECT_NE(std::strstr(cls->name, "Tracked"), nullptr) << cls->name;
}

struct ThrowsInRef {
    Counts *counts;
    ThrowsInRef(Counts *c, bool fail) : counts(c) {
        if (fail) throw std::runtime_error("no");
        counts->made++;
    }
    ~ThrowsInRef() { counts->gone++; }
};

TEST(Ref, AConstructorThatThrowsGivesTheMemoryBackWithoutTheDestructor) {
    Counts counts;
    pk_pool *pool = pk_class_pool(pk::class_of<ThrowsInRef>());
    ASSERT_NE(pool, nullptr);
    pk::ref<ThrowsInRef> keep = pk::make_ref<ThrowsInRef>(&counts, false);
    const std::size_t before = live_in(pool);
    EXPECT_THROW(pk::make_ref<ThrowsInRef>(&counts, true), std::runtime_error);
    EXPECT_EQ(live_in(pool), before);
    EXPECT_EQ(counts.gone, 0);
    keep.reset();
    EXPECT_EQ(counts.gone, 1);
}

TEST(Ref, WrapsObjectsMadeInC) {
    struct CPoint {
        int x, y;
    };
    static const pk_class point_class = {"CPoint", sizeof(CPoint), nullptr};
    auto r = pk::ref<CPoint>::adopt(static_cast<CPoint *>(pk_new(&point_class)));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->x, 0);
    pk::ref<CPoint> s = r;
    EXPECT_EQ(pk_refcount(r.get()), 2u);
}

TEST(Ref, CountsStayRightAcrossThreads) {
    Counts counts;
    pk::ref<Tracked> r = pk::make_ref<Tracked>(&counts, 1);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++)
        threads.emplace_back([r] {
            for (int i = 0; i < 10000; i++) {
                pk::ref<Tracked> copy = r;
                (void)copy;
            }
        });
    for (auto &t : threads) t.join();
    EXPECT_EQ(r.use_count(), 1u);
    EXPECT_EQ(counts.gone, 0);
}

// A class hierarchy for conversions: Animal is polymorphic; Pet is a second
// polymorphic base, so in Dog it sits at an offset; Plain and Tag are bases
// without virtual functions, Tag at an offset in Tagged.
struct Animal {
    Counts *counts;
    explicit Animal(Counts *c) : counts(c) { counts->made++; }
    virtual ~Animal() { counts->gone++; }
    virtual int legs() const { return 0; }
};
struct Pet {
    virtual ~Pet() = default;
    virtual const char *name() const { return "pet"; }
};
struct Dog : Animal, Pet {
    explicit Dog(Counts *c) : Animal(c) {}
    int legs() const override { return 4; }
    const char *name() const override { return "dog"; }
};
struct Plain {
    int a = 1;
};
struct PlainDerived : Plain {
    int b = 2;
};
struct Tag {
    int t = 3;
};
struct Tagged : Plain, Tag {};

TEST(Ref, ConvertsToABaseByCopySharingTheCount) {
    Counts counts;
    pk::ref<Dog> dog = pk::make_ref<Dog>(&counts);
    pk::ref<Animal> animal = dog;
    EXPECT_EQ(animal.get(), static_cast<Animal *>(dog.get()));
    EXPECT_TRUE(animal == dog);
    EXPECT_EQ(dog.use_count(), 2u);
    EXPECT_EQ(animal.use_count(), 2u);
    EXPECT_EQ(animal->legs(), 4);
    dog.reset();
    EXPECT_EQ(counts.gone, 0);
    EXPECT_EQ(animal.use_count(), 1u);
    animal.reset();
    EXPECT_EQ(counts.gone, 1);
}

TEST(Ref, ConvertsToABaseByMoveTakingTheReference) {
    Counts counts;
    pk::ref<Dog> dog = pk::make_ref<Dog>(&counts);
    Dog *raw = dog.get();
    pk::ref<Animal> animal = std::move(dog);
    EXPECT_FALSE(dog);
    EXPECT_EQ(animal.get(), static_cast<Animal *>(raw));
    EXPECT_EQ(animal.use_count(), 1u);
    animal.reset();
    EXPECT_EQ(counts.gone, 1);
}

TEST(Ref, ConvertingAssignmentReleasesTheObjectHeldBefore) {
    Counts counts;
    pk::ref<Animal> animal = pk::make_ref<Animal>(&counts);
    pk::ref<Dog> dog = pk::make_ref<Dog>(&counts);
    animal = dog; // copy: the first Animal goes
    EXPECT_EQ(counts.gone, 1);
    EXPECT_EQ(dog.use_count(), 2u);
    pk::ref<Dog> other = pk::make_ref<Dog>(&counts);
    animal = std::move(other); // move: the count of the first dog drops back
    EXPECT_FALSE(other);
    EXPECT_EQ(dog.use_count(), 1u);
    EXPECT_EQ(animal.use_count(), 1u);
    EXPECT_EQ(animal->legs(), 4);
    EXPECT_EQ(counts.gone, 1);
}

TEST(Ref, ConvertsToAPolymorphicBaseAtAnOffset) {
    Counts counts;
    pk::ref<Dog> dog = pk::make_ref<Dog>(&counts);
    pk::ref<Pet> pet = dog;
    pk::ref<Pet> moved = pk::ref<Dog>(dog); // by move, from a temporary
    ASSERT_NE(static_cast<void *>(pet.get()), static_cast<void *>(dog.get())); // an offset
    EXPECT_STREQ(pet->name(), "dog");
    EXPECT_EQ(pet.use_count(), 3u);
    EXPECT_EQ(dog.use_count(), 3u);
    {
        pk::autorelease_scope scope;
        Pet *p = pk::ref<Pet>(pet).autorelease();
        EXPECT_EQ(p, pet.get());
        EXPECT_EQ(pet.use_count(), 4u);
    }
    EXPECT_EQ(pet.use_count(), 3u);
    dog.reset();
    moved.reset();
    EXPECT_EQ(counts.gone, 0);
    pet.reset();
    EXPECT_EQ(counts.gone, 1);
}

TEST(Ref, ConvertsToANonPolymorphicBaseThatStartsTheObject) {
    pk::ref<PlainDerived> derived = pk::make_ref<PlainDerived>();
    pk::ref<Plain> plain = derived;
    pk::ref<const PlainDerived> constant = derived;
    EXPECT_EQ(plain->a, 1);
    EXPECT_EQ(constant->b, 2);
    EXPECT_EQ(derived.use_count(), 3u);
}

TEST(Ref, ConversionToANonPolymorphicBaseAtAnOffsetAborts) {
    pk::ref<Tagged> tagged = pk::make_ref<Tagged>();
    EXPECT_DEATH(
        {
            pk::ref<Tag> tag = tagged;
            (void)tag;
        },
        "the base does not start the object");
    EXPECT_EQ(tagged.use_count(), 1u);
}

TEST(Ref, ConvertsOnlyTowardsBasesAndConst) {
    static_assert(std::is_convertible_v<pk::ref<Dog>, pk::ref<Animal>>);
    static_assert(std::is_convertible_v<pk::ref<Dog> &&, pk::ref<Pet>>);
    static_assert(std::is_convertible_v<pk::ref<Dog>, pk::ref<const Dog>>);
    static_assert(std::is_assignable_v<pk::ref<Animal> &, const pk::ref<Dog> &>);
    // Never from a base to a derived class, not even explicitly, nor away
    // from const, nor between unrelated classes.
    static_assert(!std::is_convertible_v<pk::ref<Animal>, pk::ref<Dog>>);
    static_assert(!std::is_constructible_v<pk::ref<Dog>, pk::ref<Animal>>);
    static_assert(!std::is_assignable_v<pk::ref<Dog> &, pk::ref<Animal>>);
    static_assert(!std::is_constructible_v<pk::ref<Dog>, const pk::ref<const Dog> &>);
    static_assert(!std::is_constructible_v<pk::ref<Pet>, pk::ref<Animal>>);
    static_assert(!std::is_constructible_v<pk::ref<Tracked>, pk::ref<Dog>>);
    pk::ref<Animal> animal = pk::ref<Dog>();
    EXPECT_FALSE(animal);
}

TEST(Ref, HashFollowsTheObjectAsEqualityDoes) {
    Counts counts;
    pk::ref<Tracked> a = pk::make_ref<Tracked>(&counts, 1);
    pk::ref<Tracked> copy = a;
    std::hash<pk::ref<Tracked>> hash;
    EXPECT_EQ(hash(a), std::hash<Tracked *>()(a.get()));
    EXPECT_EQ(hash(copy), hash(a));
    EXPECT_EQ(hash(pk::ref<Tracked>()), std::hash<Tracked *>()(nullptr));
    static_assert(noexcept(hash(a)));
}

TEST(Ref, RefsKeyUnorderedSetsAndMaps) {
    Counts counts;
    pk::ref<Tracked> a = pk::make_ref<Tracked>(&counts, 1);
    pk::ref<Tracked> b = pk::make_ref<Tracked>(&counts, 2);
    std::unordered_set<pk::ref<Tracked>> set{a, b, pk::ref<Tracked>(a)};
    EXPECT_EQ(set.size(), 2u);
    EXPECT_EQ(set.count(pk::ref<Tracked>::retain(b.get())), 1u);
    std::unordered_map<pk::ref<Tracked>, int> map;
    map[a] = 10;
    map[pk::ref<Tracked>(b)] = 20;
    map[pk::ref<Tracked>(a)] += 1;
    EXPECT_EQ(map.size(), 2u);
    EXPECT_EQ(map.at(a), 11);
    EXPECT_EQ(a.use_count(), 3u); // the ref in the set, the key in the map, a
    set.clear();
    map.clear();
    EXPECT_EQ(a.use_count(), 1u);
    EXPECT_EQ(counts.gone, 0);
}

// ---- autorelease -----------------------------------------------------------

TEST(Autorelease, AnAutoreleasedRefLivesUntilItsScopeEnds) {
    Counts counts;
    {
        pk::autorelease_scope pool;
        Tracked *t = pk::make_ref<Tracked>(&counts, 4).autorelease();
        EXPECT_EQ(t->value, 4);
        EXPECT_EQ(counts.gone, 0);
        EXPECT_EQ(pk_refcount(t), 1u);
    }
    EXPECT_EQ(counts.gone, 1);
}

TEST(Autorelease, PkAutoreleaseOfARefsObjectDropsOneReference) {
    Counts counts;
    pk::ref<Tracked> r = pk::make_ref<Tracked>(&counts, 1);
    {
        pk::autorelease_scope pool;
        pk_autorelease(pk_retain(r.get()));
        EXPECT_EQ(r.use_count(), 2u);
    }
    EXPECT_EQ(r.use_count(), 1u);
    EXPECT_EQ(counts.gone, 0);
}

TEST(Autorelease, NestedScopesReleaseInnermostFirst) {
    Counts outer_counts, inner_counts;
    {
        pk::autorelease_scope outer;
        pk::make_ref<Tracked>(&outer_counts, 1).autorelease();
        {
            pk::autorelease_scope inner;
            pk::make_ref<Tracked>(&inner_counts, 2).autorelease();
        }
        EXPECT_EQ(inner_counts.gone, 1);
        EXPECT_EQ(outer_counts.gone, 0);
    }
    EXPECT_EQ(outer_counts.gone, 1);
}

TEST(Autorelease, DrainReleasesAndTheScopeGoesOn) {
    Counts counts;
    pk::autorelease_scope pool;
    for (int turn = 0; turn < 3; turn++) {
        pk::make_ref<Tracked>(&counts, turn).autorelease();
        pool.drain();
        EXPECT_EQ(counts.gone, turn + 1);
    }
}

TEST(Autorelease, ScopeIsNeitherCopyableNorMovable) {
    static_assert(!std::is_copy_constructible_v<pk::autorelease_scope>);
    static_assert(!std::is_copy_assignable_v<pk::autorelease_scope>);
    static_assert(!std::is_move_constructible_v<pk::autorelease_scope>);
    pk::autorelease_scope pool;
    EXPECT_NE(pool.token().token, PK_AUTORELEASE_NONE);
}

} // namespace
