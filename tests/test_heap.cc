/* Heaps (heap.h): blocks of any size from a heap, freed one by one through
 * the heap or the front end, or all at once by reset and destroy.
 *
 * The model test runs random mixes of every allocating call over sizes
 * from 0 to past the last class, frees through pk_heap_free, pk_free and
 * pk_free_sized, resizes through pk_heap_realloc and pk_realloc, and
 * resets, against a record of what is live: every block keeps its pattern,
 * holds its size (pk_usable_size), belongs to its heap (pk_heap_of), and
 * the heap's stats count the model's blocks. The same program runs with
 * POOLKIT_DEBUG=1 and POOLKIT_HARDENED=1 (tests/CMakeLists.txt: heap.debug,
 * heap.hardened). */
#include "child.h"
#include "support.h"

#include <poolkit/heap.h>
#include <poolkit/poolkit.hpp>
#include <poolkit/stats.h>

#include <atomic>
#include <map>
#include <memory_resource>
#include <thread>
#include <vector>

using namespace pktest;

namespace {

constexpr size_t MiB = size_t{1} << 20;

/* Mostly small, some medium, a few past the last class (up to 1 MiB and
 * more). */
size_t draw_size(Rng &rng) {
    unsigned r = static_cast<unsigned>(rng.below(1000));
    if (r < 550) return rng.below(129);
    if (r < 880) return rng.below(4097);
    if (r < 985) return rng.below(70000);
    return PK_ALLOC_CLASS_MAX - 4096 + rng.below(MiB + 100000);
}

struct Block {
    size_t size;
    uint64_t key;
    bool aligned; /* from pk_heap_aligned_alloc: freed by pk_free alone (alloc.h) */
};

class HeapModel {
  public:
    explicit HeapModel(uint64_t seed) : rng_(seed), seed_(seed) { h_ = pk_heap_create("model"); }

    void run(size_t steps, size_t max_live) {
        ASSERT_NE(h_, nullptr);
        for (size_t step = 0; step < steps; step++) {
            SCOPED_TRACE("seed " + std::to_string(seed_) + " step " + std::to_string(step));
            unsigned r = static_cast<unsigned>(rng_.below(1000));
            if (r < 2) {
                pk_heap_reset(h_);
                live_.clear();
                check_stats();
            } else if (live_.size() < max_live && r < 560) {
                allocate();
            } else if (!live_.empty() && r < 700) {
                resize();
            } else if (!live_.empty()) {
                free_one();
            }
            if (step % 997 == 0) check_all();
            if (::testing::Test::HasFatalFailure()) return;
        }
        check_all();
        pk_heap_destroy(h_);
    }

  private:
    void allocate() {
        size_t size = draw_size(rng_);
        unsigned how = static_cast<unsigned>(rng_.below(4));
        size_t align = 0;
        void *p = nullptr;
        if (how == 0) p = pk_heap_alloc(h_, size);
        if (how == 1) p = pk_heap_zalloc(h_, size);
        if (how == 2) p = pk_heap_calloc(h_, 1 + size % 7, size / (1 + size % 7));
        if (how == 2) size = (1 + size % 7) * (size / (1 + size % 7));
        if (how == 3) {
            align = size_t{1} << rng_.below(14);
            p = pk_heap_aligned_alloc(h_, align, size);
        }
        ASSERT_NE(p, nullptr) << "size " << size;
        if (align) {
            ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << "align " << align;
        }
        if (how == 1 || how == 2) {
            const unsigned char *b = static_cast<const unsigned char *>(p);
            for (size_t i = 0; i < size; i += 61) ASSERT_EQ(b[i], 0) << "a zeroed block of " << size;
        }
        add(p, size, how == 3);
    }

    void add(void *p, size_t size, bool aligned) {
        uint64_t key = next_key_++;
        fill_pattern(p, size, key);
        ASSERT_TRUE(live_.emplace(p, Block{size, key, aligned}).second) << "a live block handed out twice: " << p;
    }

    std::map<void *, Block>::iterator pick() {
        auto it = live_.lower_bound(reinterpret_cast<void *>(rng_.next()));
        return it == live_.end() ? live_.begin() : it;
    }

    void resize() {
        auto it = pick();
        Block b = it->second;
        void *old = it->first;
        live_.erase(it);
        size_t size = rng_.chance(50) ? draw_size(rng_) : b.size + rng_.below(64);
        if (size == 0) size = 1;
        void *p = rng_.chance(50) ? pk_heap_realloc(h_, old, size) : pk_realloc(old, size);
        ASSERT_NE(p, nullptr);
        size_t keep = std::min(b.size, size);
        ASSERT_EQ(check_pattern(p, keep, b.key), keep) << "contents lost resizing " << b.size << " to " << size;
        ASSERT_EQ(pk_heap_of(p), h_) << "a resized block left its heap";
        add(p, size, b.aligned && p == old);
    }

    void free_one() {
        auto it = pick();
        void *p = it->first;
        size_t size = it->second.size;
        bool aligned = it->second.aligned;
        live_.erase(it);
        unsigned how = static_cast<unsigned>(rng_.below(aligned ? 2 : 3));
        if (how == 0) pk_heap_free(h_, p);
        if (how == 1) pk_free(p);
        if (how == 2) pk_free_sized(p, size);
    }

    void check_stats() {
        pk_heap_stats st;
        pk_heap_stats_get(h_, &st);
        ASSERT_EQ(st.blocks, live_.size());
        size_t want = 0;
        for (auto &e : live_) want += e.second.size;
        ASSERT_GE(st.bytes, want);
        ASSERT_GE(st.bytes_reserved, st.bytes);
        ASSERT_STREQ(st.name, "model");
    }

    void check_all() {
        for (auto &e : live_) {
            ASSERT_EQ(check_pattern(e.first, e.second.size, e.second.key), e.second.size)
                << "block " << e.first << " of " << e.second.size << " bytes changed";
            ASSERT_GE(pk_usable_size(e.first), e.second.size);
            ASSERT_EQ(pk_heap_of(e.first), h_);
        }
        check_stats();
    }

    Rng rng_;
    uint64_t seed_;
    pk_heap *h_ = nullptr;
    std::map<void *, Block> live_;
    uint64_t next_key_ = 1;
};

} // namespace

TEST(HeapModel, RandomMixesMatchTheModel) {
    size_t blocks_before = mapped_blocks();
    for (uint64_t seed = 1; seed <= 3; seed++) {
        HeapModel m(seed);
        m.run(scaled(20000, 2000), 400);
        if (HasFatalFailure()) return;
    }
    EXPECT_EQ(mapped_blocks(), blocks_before) << "a destroyed heap left large blocks mapped";
}

TEST(HeapFree, PkFreeTakesAHeapBlockOfEverySize) {
    pk_heap *h = pk_heap_create("frees");
    ASSERT_NE(h, nullptr);
    std::vector<void *> v;
    for (size_t s : {size_t{1}, size_t{8}, size_t{100}, size_t{4000}, size_t{200000}, 3 * MiB}) {
        void *p = pk_heap_alloc(h, s);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(pk_heap_of(p), h);
        EXPECT_GE(pk_usable_size(p), s);
        v.push_back(p);
    }
    for (void *p : v) pk_free(p);
    pk_heap_stats st;
    pk_heap_stats_get(h, &st);
    EXPECT_EQ(st.blocks, 0u);
    EXPECT_EQ(st.large_blocks, 0u);
    pk_heap_destroy(h); /* the large block freed by pk_free is not freed again */
}

TEST(HeapFree, AFrontEndBlockBelongsToNoHeap) {
    void *p = pk_alloc(48);
    void *q = pk_alloc(2 * MiB);
    EXPECT_EQ(pk_heap_of(p), nullptr);
    EXPECT_EQ(pk_heap_of(q), nullptr);
    EXPECT_EQ(pk_heap_of(nullptr), nullptr);
    pk_free(p);
    pk_free(q);
}

TEST(HeapRealloc, FrontEndResizesKeepTheBlockInItsHeap) {
    pk_heap *h = pk_heap_create("resize");
    char *p = static_cast<char *>(pk_heap_alloc(h, 10));
    std::memcpy(p, "abcdefghi", 10);
    p = static_cast<char *>(pk_realloc(p, 3 * MiB)); /* to a large block */
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(pk_heap_of(p), h);
    EXPECT_STREQ(p, "abcdefghi");
    p = static_cast<char *>(pk_realloc(p, 100)); /* back to a class */
    EXPECT_EQ(pk_heap_of(p), h);
    EXPECT_STREQ(p, "abcdefghi");
    p = static_cast<char *>(pk_realloc_aligned(p, 256, 300));
    EXPECT_EQ(pk_heap_of(p), h);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
    EXPECT_STREQ(p, "abcdefghi");
    p = static_cast<char *>(pk_reallocarray(p, 3, 1000));
    EXPECT_EQ(pk_heap_of(p), h);
    pk_heap_stats st;
    pk_heap_stats_get(h, &st);
    EXPECT_EQ(st.blocks, 1u);
    pk_heap_destroy(h);
}

/* A heap's mapped block resized to a class's size leaves its mapping for
 * the heap's class, though the mapping would serve it in place (a
 * resize that leaves little of it unused stays, for any other block). */
TEST(HeapRealloc, AMappedBlockResizedToAClassSizeGoesToTheHeapsClass) {
    pk_heap *h = pk_heap_create("resize down");
    size_t big = PK_ALLOC_CLASS_MAX + 16 * 1024, small = PK_ALLOC_CLASS_MAX - 8 * 1024;
    char *p = static_cast<char *>(pk_heap_alloc(h, big));
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(pk_pool_owner(p), nullptr);
    std::memset(p, 7, small);
    char *q = static_cast<char *>(pk_realloc(p, small));
    ASSERT_NE(q, nullptr);
    EXPECT_NE(pk_pool_owner(q), nullptr) << "a heap's block of a class's size stayed mapped";
    EXPECT_EQ(pk_heap_of(q), h);
    EXPECT_EQ(q[small - 1], 7);
    pk_heap_destroy(h);
}

TEST(HeapDestroy, FreesEveryBlockLargeOnesIncluded) {
    size_t before = mapped_blocks();
    pk_heap *h = pk_heap_create("whole");
    for (int i = 0; i < 100; i++) ASSERT_NE(pk_heap_alloc(h, static_cast<size_t>(i) * 97 + 1), nullptr);
    for (int i = 0; i < 5; i++) ASSERT_NE(pk_heap_alloc(h, MiB + static_cast<size_t>(i) * 4096), nullptr);
    ASSERT_NE(pk_heap_calloc(h, 2, MiB), nullptr);
    EXPECT_EQ(mapped_blocks(), before + 6);
    pk_heap_stats st;
    pk_heap_stats_get(h, &st);
    EXPECT_EQ(st.blocks, 106u);
    EXPECT_EQ(st.large_blocks, 6u);
    pk_heap_destroy(h);
    EXPECT_EQ(mapped_blocks(), before);
}

TEST(HeapReset, FreesEveryBlockAndKeepsTheHeap) {
    size_t before = mapped_blocks();
    pk_heap *h = pk_heap_create("reset");
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 300; i++) ASSERT_NE(pk_heap_alloc(h, static_cast<size_t>(i) * 13 + 1), nullptr);
        ASSERT_NE(pk_heap_alloc(h, 2 * MiB), nullptr);
        pk_heap_stats st;
        pk_heap_stats_get(h, &st);
        EXPECT_EQ(st.blocks, 301u);
        pk_heap_reset(h);
        pk_heap_stats_get(h, &st);
        EXPECT_EQ(st.blocks, 0u);
        EXPECT_EQ(st.large_blocks, 0u);
        EXPECT_EQ(mapped_blocks(), before);
    }
    pk_heap_destroy(h);
}

/* A destroyed heap's pools may serve the next heap (emptied): it starts
 * with no block, and its pools carry its own name. */
TEST(HeapCreate, AHeapAfterADestroyStartsEmptyUnderItsOwnName) {
    for (int round = 0; round < 6; round++) {
        std::string name = "round-" + std::to_string(round % 2);
        pk_heap *h = pk_heap_create(name.c_str());
        pk_heap_stats st;
        pk_heap_stats_get(h, &st);
        EXPECT_EQ(st.blocks, 0u);
        for (int i = 0; i < 200; i++) {
            void *p = pk_heap_alloc(h, static_cast<size_t>(i) * 11 + 1);
            ASSERT_NE(p, nullptr);
            EXPECT_EQ(pk_heap_of(p), h);
        }
        std::string r = stats_report(0);
        EXPECT_NE(r.find(name + " 48"), std::string::npos) << r;
        pk_heap_destroy(h); /* blocks left, freed whole */
    }
}

/* The records of destroyed heaps come back last destroyed first, so that
 * each keeps serving one kind of heap (blockheap.c, "spare heaps"): a
 * program's big heap, destroyed last of a round, gets its own record and
 * its pools' empty slabs back at the next round's start. */
TEST(HeapCreate, TheHeapDestroyedLastIsTheFirstMadeAgain) {
    pk_heap *a = pk_heap_create("spare a");
    pk_heap *b = pk_heap_create("spare b");
    pk_heap *c = pk_heap_create("spare c");
    ASSERT_TRUE(a && b && c);
    pk_heap_destroy(a);
    pk_heap_destroy(b);
    pk_heap_destroy(c);
    pk_heap *d = pk_heap_create("spare d");
    pk_heap *e = pk_heap_create("spare e");
    pk_heap_destroy(d); /* now the top again: the next is d's record */
    pk_heap *f = pk_heap_create("spare f");
    if (env_on("POOLKIT_DEBUG")) { /* destroyed debug heaps stay dead, for the report of a later call */
        for (pk_heap *made : {d, e, f})
            for (pk_heap *gone : {a, b, c}) EXPECT_NE(made, gone);
    } else {
        EXPECT_EQ(d, c);
        EXPECT_EQ(e, b);
        EXPECT_EQ(f, c);
    }
    pk_heap_destroy(e);
    pk_heap_destroy(f);
    /* the spares as the test found them, a's record (a spare already
     * then, with pools of its own) on top: the tests after it make no more
     * pools, whose locks a fork takes all at once (ThreadSanitizer's
     * deadlock detector holds 64 at most: docs/design.md, "Fork") */
    pk_heap *top = pk_heap_create("spare top"), *mid = pk_heap_create("spare mid"),
            *low = pk_heap_create("spare low");
    pk_heap_destroy(top);
    pk_heap_destroy(mid);
    pk_heap_destroy(low);
}

TEST(HeapCreate, RejectsAnUnknownFlag) {
    errno = 0;
    EXPECT_EQ(pk_heap_create_ex("x", 1u << 20), nullptr);
    EXPECT_EQ(errno, EINVAL);
    pk_heap *h = pk_heap_create(nullptr);
    pk_heap_stats st;
    pk_heap_stats_get(h, &st);
    EXPECT_STREQ(st.name, "pk_heap");
    pk_heap_destroy(h);
    pk_heap_destroy(nullptr);
}

TEST(HeapAlloc, AlignmentsAndErrors) {
    pk_heap *h = pk_heap_create("align");
    for (size_t a = 1; a <= 65536; a *= 2) {
        void *p = pk_heap_aligned_alloc(h, a, 24);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % a, 0u) << a;
    }
    errno = 0;
    volatile size_t odd = 24; /* clang warns of a constant that is no power of two */
    EXPECT_EQ(pk_heap_aligned_alloc(h, odd, 8), nullptr);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    volatile size_t huge = SIZE_MAX / 2; /* not a constant the compiler checks */
    EXPECT_EQ(pk_heap_calloc(h, huge, 3), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_EQ(pk_heap_realloc(h, pk_heap_alloc(h, 5), 0), nullptr);
    pk_heap_destroy(h);
}

/* A heap's blocks aligned past a page share mappings as pk_alloc's do
 * (test_alloc_model.cc's AllocAlignedPastAPage); in debug mode each keeps a
 * mapping of its own. */
TEST(HeapAlloc, ManyBlocksAlignedPastAPageShareTheirMappings) {
    pk_heap *h = pk_heap_create("aligned");
    const size_t n = scaled(2000, 300);
    long before = mapping_count();
    std::vector<char *> live;
    for (size_t i = 0; i < n; i++) {
        char *p = static_cast<char *>(pk_heap_aligned_alloc(h, 16384, 100));
        ASSERT_NE(p, nullptr) << i;
        ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 16384, 0u);
        EXPECT_EQ(pk_heap_of(p), h);
        p[99] = 1;
        live.push_back(p);
    }
    long grew = mapping_count() - before; /* signed: other mappings come and go too (Valgrind's among them) */
    if (!env_on("POOLKIT_DEBUG")) {
        EXPECT_LT(grew, static_cast<long>(n / 4)) << n << " blocks took " << grew << " mappings";
    }
    for (size_t i = 0; i < n; i += 2) pk_heap_free(h, live[i]);
    pk_heap_destroy(h); /* the rest with the heap */
}

TEST(HeapStats, TheReportListsTheHeapsPoolsUnderItsName) {
    pk_heap *h = pk_heap_create("request-42");
    void *p = pk_heap_alloc(h, 40);
    std::string r = stats_report(0);
    EXPECT_NE(r.find("request-42 48"), std::string::npos) << r;
    pk_heap_free(h, p);
    pk_heap_destroy(h);
}

/* Any thread allocates and frees (its own blocks and other threads');
 * reset and destroy once the threads are done. */
TEST(HeapThreads, ThreadsAllocateAndFreeAtOnceThenOneResetsAndDestroys) {
    pk_heap *h = pk_heap_create("threads");
    constexpr int kThreads = 4;
    const size_t n = scaled(20000, 500);
    std::vector<std::vector<void *>> kept(kThreads);
    std::vector<std::thread> ts;
    std::mutex m;
    std::vector<void *> handed; /* blocks one thread made and another frees */
    for (int t = 0; t < kThreads; t++)
        ts.emplace_back([&, t] {
            Rng rng(static_cast<uint64_t>(t) + 100);
            std::vector<void *> mine;
            for (size_t i = 0; i < n; i++) {
                size_t size = rng.chance(1) ? PK_ALLOC_CLASS_MAX + rng.below(100000) : rng.below(5000);
                void *p = pk_heap_alloc(h, size);
                if (!p) std::abort();
                std::memset(p, t, size < 64 ? size : 64);
                if (rng.chance(20)) {
                    std::lock_guard<std::mutex> g(m);
                    handed.push_back(p);
                } else {
                    mine.push_back(p);
                }
                if (mine.size() > 200) pk_heap_free(h, take_random(mine, rng));
                if (rng.chance(10)) {
                    void *o = nullptr;
                    {
                        std::lock_guard<std::mutex> g(m);
                        if (!handed.empty()) o = take_random(handed, rng);
                    }
                    if (o) pk_free(o);
                }
            }
            kept[static_cast<size_t>(t)] = mine;
        });
    for (auto &t : ts) t.join();
    size_t left = handed.size();
    for (auto &k : kept) left += k.size();
    pk_heap_stats st;
    pk_heap_stats_get(h, &st);
    EXPECT_EQ(st.blocks, left);
    pk_heap_reset(h);
    pk_heap_stats_get(h, &st);
    EXPECT_EQ(st.blocks, 0u);
    std::thread([&] { EXPECT_NE(pk_heap_alloc(h, 100), nullptr); }).join();
    pk_heap_destroy(h);
}

/* A reset keeps the pools and their slabs: a thread that allocated
 * before it, and is still alive, allocates after it from the emptied slabs
 * (its cache of each pool was forgotten by the reset). */
TEST(HeapThreads, AThreadAliveAcrossAResetAllocatesAgain) {
    /* Long: the pools of the sizes allocated first may sit unused for a
     * default delay under Valgrind, and the reset's sweep would give their
     * emptied slabs back as idle memory. */
    PurgeDelay keep(60000);
    pk_heap *h = pk_heap_create("across");
    Gate allocated, reset_done;
    std::vector<void *> before, after;
    std::thread t([&] {
        for (size_t i = 0; i < 3000; i++) before.push_back(pk_heap_alloc(h, 8 + i % 2000));
        allocated.open();
        reset_done.wait();
        for (size_t i = 0; i < 3000; i++) {
            void *p = pk_heap_alloc(h, 8 + i % 2000);
            std::memset(p, 0x5a, 8 + i % 2000);
            after.push_back(p);
        }
    });
    allocated.wait();
    pk_heap_stats st;
    pk_heap_stats_get(h, &st);
    EXPECT_EQ(st.blocks, 3000u);
    size_t reserved = st.bytes_reserved;
    pk_heap_reset(h);
    pk_heap_stats_get(h, &st);
    EXPECT_EQ(st.blocks, 0u);
    if (!env_on("POOLKIT_DEBUG")) { /* debug pools are made again instead (heap.h) */
        EXPECT_EQ(st.bytes_reserved, reserved) << "the reset gave the slabs back instead of keeping them";
    }
    reset_done.open();
    t.join();
    pk_heap_stats_get(h, &st);
    EXPECT_EQ(st.blocks, 3000u);
    for (void *p : after) EXPECT_EQ(pk_heap_of(p), h);
    for (size_t i = 0; i < after.size(); i += 2) pk_free(after[i]);
    pk_heap_stats_get(h, &st);
    EXPECT_EQ(st.blocks, 1500u);
    for (size_t i = 1; i < after.size(); i += 2) pk_heap_free(h, after[i]);
    pk_heap_destroy(h);
}

/* Blocks of sizes 1 + 37 k (every class up to 4 KiB) of heap h, each
 * filled with its own pattern (the round's tag and its index): a block
 * handed out twice, in one round or across threads, breaks the pattern of
 * one of the two. */
namespace {
struct Filled {
    pk_heap *heap = nullptr;
    uint64_t tag = 0;
    std::vector<std::pair<unsigned char *, size_t>> blocks;
    void fill(pk_heap *h, size_t n, uint64_t round_tag) {
        heap = h;
        tag = round_tag;
        for (size_t i = 0; i < n; i++) {
            size_t size = 1 + (i * 37) % 4096;
            auto *p = static_cast<unsigned char *>(pk_heap_alloc(h, size));
            ASSERT_NE(p, nullptr);
            fill_pattern(p, size, key(i));
            blocks.emplace_back(p, size);
        }
    }
    /* Every block keeps its pattern and is its heap's. */
    bool intact() const {
        for (size_t i = 0; i < blocks.size(); i++)
            if (check_pattern(blocks[i].first, blocks[i].second, key(i)) != blocks[i].second ||
                pk_heap_of(blocks[i].first) != heap)
                return false;
        return true;
    }
    uint64_t key(size_t i) const { return tag << 32 | i; }
};
} // namespace

/* A reset by the one thread that used the heap keeps that thread's cache
 * of each class (the current slab, emptied in place): the blocks after it
 * are the heap's, counted, each handed out once, and the same holds over
 * many resets, in no more memory than the first round's. */
TEST(HeapReset, TheOnlyThreadsResetsReuseItsSlabs) {
    pk_heap *h = pk_heap_create("own reset");
    Filled first;
    first.fill(h, 2000, 1000);
    pk_heap_stats st;
    pk_heap_stats_get(h, &st);
    size_t reserved = st.bytes_reserved;
    for (int round = 0; round < 20; round++) {
        pk_heap_reset(h);
        pk_heap_stats_get(h, &st);
        ASSERT_EQ(st.blocks, 0u);
        Filled f;
        f.fill(h, 2000, static_cast<uint64_t>(round));
        ASSERT_TRUE(f.intact()) << "a block was handed out twice, or is not the heap's, round " << round;
        pk_heap_stats_get(h, &st);
        ASSERT_EQ(st.blocks, 2000u);
        for (size_t i = 0; i < f.blocks.size(); i += 3) pk_heap_free(h, f.blocks[i].first);
        pk_heap_stats_get(h, &st);
        ASSERT_EQ(st.blocks, 2000u - (2000u + 2) / 3);
        EXPECT_LE(st.bytes_reserved, reserved) << "round " << round << " holds more memory than the first";
    }
    pk_heap_destroy(h);
}

/* A reset while two living threads have used the heap forgets both
 * threads' caches: after it each thread's blocks are distinct from the
 * other's and counted. The resetting thread allocates last, so its cache
 * is the first each pool lists. */
TEST(HeapThreads, AResetWithTwoThreadsCachesForgetsBoth) {
    pk_heap *h = pk_heap_create("two caches");
    Gate allocated, reset_done, refilled;
    Filled theirs;
    std::thread t([&] {
        Filled before;
        before.fill(h, 1000, 1);
        allocated.open();
        reset_done.wait();
        theirs.fill(h, 1000, 2);
        refilled.open();
    });
    allocated.wait();
    Filled mine_before;
    mine_before.fill(h, 1000, 3);
    pk_heap_reset(h);
    pk_heap_stats st;
    pk_heap_stats_get(h, &st);
    EXPECT_EQ(st.blocks, 0u);
    reset_done.open();
    Filled mine;
    mine.fill(h, 1000, 4);
    refilled.wait();
    t.join();
    EXPECT_TRUE(mine.intact());
    EXPECT_TRUE(theirs.intact());
    pk_heap_stats_get(h, &st);
    EXPECT_EQ(st.blocks, 2000u);
    pk_heap_destroy(h);
}

/* ---- debug mode: in a child, with POOLKIT_DEBUG=1 ---- */

namespace {
std::string child_what, child_pool, child_message;
void record_error(const pk_error *e, void *) {
    child_what = e->what ? e->what : "";
    child_pool = e->pool ? e->pool : "";
    child_message = e->message ? e->message : "";
    if (e->severity == PK_FATAL) {
        std::fprintf(stderr, "%s: %s\n", e->what, e->message);
        _exit(child_what == "heap used after destroy" && child_pool == "parse" ? CHILD_PASS : CHILD_FAIL);
    }
}
} // namespace

PKTEST_CHILD(HeapLeftBlocksAreReportedAtDestroy) {
    pk_set_error_handler(record_error, nullptr);
    pk_heap *h = pk_heap_create("frame");
    pk_heap_alloc(h, 10);
    pk_heap_alloc(h, 3000);
    pk_heap_alloc(h, 2 * MiB);
    pk_heap_free(h, pk_heap_alloc(h, 10));
    pk_heap_destroy(h);
    CHILD_CHECK(child_what == "leak", "no leak report, got '%s'", child_what.c_str());
    CHILD_CHECK(child_pool == "frame", "the report names '%s', not the heap", child_pool.c_str());
    CHILD_CHECK(child_message.find("3 live blocks") != std::string::npos, "message: %s", child_message.c_str());
    child_what.clear();
    h = pk_heap_create_ex("whole", PK_HEAP_WHOLE);
    pk_heap_alloc(h, 10);
    pk_heap_alloc(h, 2 * MiB);
    pk_heap_destroy(h);
    CHILD_CHECK(child_what.empty(), "a heap made to be freed whole reported '%s'", child_what.c_str());
    return 0;
}

PKTEST_CHILD(HeapUsedAfterDestroyIsReported) {
    pk_set_error_handler(record_error, nullptr);
    pk_heap *h = pk_heap_create_ex("parse", PK_HEAP_WHOLE);
    pk_heap_alloc(h, 10);
    pk_heap_destroy(h);
    pk_heap_alloc(h, 10);
    std::fprintf(stderr, "an allocation from a destroyed heap went unreported\n");
    return CHILD_FAIL;
}

PKTEST_CHILD(HeapDestroyedTwiceIsReported) {
    pk_set_error_handler(record_error, nullptr);
    pk_heap *h = pk_heap_create("parse");
    pk_heap_destroy(h);
    pk_heap_destroy(h);
    std::fprintf(stderr, "a second destroy went unreported\n");
    return CHILD_FAIL;
}

TEST(HeapDebug, BlocksLeftAtDestroyAreReportedNamingTheHeap) {
    EXPECT_CHILD_PASSES("HeapLeftBlocksAreReportedAtDestroy", {{"POOLKIT_DEBUG", "1"}});
}

TEST(HeapDebug, AllocationFromADestroyedHeapIsReportedNamingIt) {
    EXPECT_CHILD_PASSES("HeapUsedAfterDestroyIsReported", {{"POOLKIT_DEBUG", "1"}});
}

TEST(HeapDebug, ASecondDestroyIsReportedNamingTheHeap) {
    EXPECT_CHILD_PASSES("HeapDestroyedTwiceIsReported", {{"POOLKIT_DEBUG", "1"}});
}

TEST(HeapDebugDeathTest, ABlockOfAnotherHeapIsReported) {
    pk_heap *a = pk_heap_create_ex("a", PK_HEAP_DEBUG);
    pk_heap *b = pk_heap_create_ex("b", PK_HEAP_DEBUG);
    void *p = pk_heap_alloc(b, 32);
    PKTEST_EXPECT_REPORT(pk_heap_free(a, p), "what=wrong heap pool=a .*\n.*the block is of heap 'b'");
    pk_heap_free(b, p);
    pk_heap_destroy(a);
    pk_heap_destroy(b);
}

/* ---- C++ ---- */

TEST(HeapResource, PmrContainersAllocateFromTheHeap) {
    pk::heap_resource r("pmr");
    {
        std::pmr::vector<std::pmr::string> v(&r);
        for (int i = 0; i < 1000; i++) v.emplace_back(std::string(static_cast<size_t>(i % 300), 'x'));
        EXPECT_EQ(pk_heap_of(v.data()), r.heap());
        EXPECT_EQ(v[299].size(), 299u);
        pk_heap_stats st;
        pk_heap_stats_get(r.heap(), &st);
        EXPECT_GT(st.blocks, 900u);
    }
    pk_heap_stats st;
    pk_heap_stats_get(r.heap(), &st);
    EXPECT_EQ(st.blocks, 0u);
    void *p = r.allocate(24, 64);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    EXPECT_NE(r.allocate(5000), nullptr);
    pk_heap_stats_get(r.heap(), &st);
    EXPECT_EQ(st.blocks, 2u);
    r.release(); /* both freed at once */
    pk_heap_stats_get(r.heap(), &st);
    EXPECT_EQ(st.blocks, 0u);
    EXPECT_TRUE(r.is_equal(r));
    pk::heap_resource other;
    EXPECT_FALSE(r.is_equal(other));
}
