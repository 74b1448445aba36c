/* The size-class front end (alloc.h), call by call: the classes every size
 * lands in, alignment, zeroing, resizing, mapped blocks and their reuse
 * after a free, threads, fork, the stats report, and the misuse that must
 * be reported. */
#include "child.h"
#include "support.h"

#include <vector>
#include <poolkit/alloc.h>
#include <poolkit/fault.h>
#include <poolkit/stats.h>

#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <thread>

/* These tests hand the front end what a program must not (a pointer after
 * its free, a stack address, a size no block can have) to see it refused
 * or reported; alloc.h's attributes tell gcc what they are. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#  pragma GCC diagnostic ignored "-Wuse-after-free"
#  pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#  pragma GCC diagnostic ignored "-Walloc-size-larger-than="
#endif

using namespace pktest;

namespace {

std::string report_text(unsigned flags) {
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    EXPECT_EQ(pk_stats_print(f, flags), 0);
    fclose(f);
    std::string s(buf, len);
    free(buf);
    return s;
}

TEST(AllocClasses, ThereAreAsManyAsTheHeaderSays) {
    EXPECT_EQ(alloc_classes().size(), static_cast<size_t>(PK__ALLOC_CLASSES));
    EXPECT_EQ(alloc_classes().back(), PK_ALLOC_CLASS_MAX);
}

TEST(AllocClasses, EverySizeGetsTheSmallestClassThatHoldsIt) {
    /* every size up to 8 KiB, then a spread of sizes on and beside each class edge */
    std::vector<size_t> sizes;
    for (size_t s = 0; s <= 8192; s++) sizes.push_back(s);
    for (size_t c : alloc_classes())
        for (size_t d : {c - 1, c, c + 1})
            if (d > 8192 && d <= PK_ALLOC_CLASS_MAX) sizes.push_back(d);
    for (size_t s : sizes) {
        size_t want = alloc_class_for(s ? s : 1);
        ASSERT_EQ(pk_good_size(s), want) << "size " << s;
        void *p = pk_alloc(s);
        ASSERT_NE(p, nullptr) << "size " << s;
        ASSERT_EQ(pk_usable_size(p), want) << "size " << s;
        ASSERT_EQ(pk_pool_owner(p) != nullptr, true) << "size " << s;
        pk_free(p);
    }
}

TEST(AllocClasses, EachClassIsAPoolNamedForItsSize) {
    void *p = pk_alloc(40);
    pk_pool *pool = pk_pool_owner(p);
    ASSERT_NE(pool, nullptr);
    pk_pool_stats st = stats_of(pool);
    EXPECT_STREQ(st.name, "pk_alloc 48");
    EXPECT_EQ(st.size, 48u);
    EXPECT_EQ(pk_pool_owner(pk_alloc(33)), pool) << "33..48 share the class";
    pk_free(p);
}

TEST(AllocAlign, SmallBlocksAreAlignedForAnyObjectThatFits) {
    for (size_t s = 0; s <= 4096; s++) {
        void *p = pk_alloc(s);
        ASSERT_TRUE(aligned_to(p, s <= 8 ? 8 : 16)) << "size " << s << " at " << ptr_str(p);
        pk_free(p);
    }
}

TEST(AllocAlign, AlignedAllocHonoursEveryPowerOfTwo) {
    std::vector<void *> keep;
    for (size_t a = 1; a <= (size_t)1 << 20; a *= 2) {
        for (size_t s : {size_t(0), size_t(1), size_t(24), a - 1, a, a + 1, 3 * a, size_t(5000), size_t(300000)}) {
            void *p = pk_aligned_alloc(a, s);
            ASSERT_NE(p, nullptr) << "align " << a << " size " << s;
            ASSERT_TRUE(aligned_to(p, a)) << "align " << a << " size " << s << " at " << ptr_str(p);
            ASSERT_GE(pk_usable_size(p), s);
            memset(p, 0x5a, s);
            keep.push_back(p);
        }
    }
    for (void *p : keep) pk_free(p);
}

TEST(AllocAlign, AlignedAllocRefusesAnAlignmentThatIsNoPowerOfTwo) {
    for (size_t a : {size_t(0), size_t(3), size_t(24), size_t(100)}) {
        errno = 0;
        EXPECT_EQ(pk_aligned_alloc(a, 16), nullptr) << "align " << a;
        EXPECT_EQ(errno, EINVAL);
    }
}

TEST(AllocCalloc, ZeroesMemoryThatWasUsedBefore) {
    for (size_t s : {size_t(8), size_t(48), size_t(1000), size_t(5000), size_t(70000), size_t(500000)}) {
        std::vector<void *> dirty;
        for (int i = 0; i < 64; i++) {
            void *p = pk_alloc(s);
            memset(p, 0xff, s);
            dirty.push_back(p);
        }
        for (void *p : dirty) pk_free(p);
        for (int i = 0; i < 64; i++) {
            void *p = pk_calloc(1, s);
            ASSERT_TRUE(all_bytes(p, s, 0)) << "size " << s;
            dirty[i] = p;
        }
        for (void *p : dirty) pk_free(p);
    }
}

TEST(AllocCalloc, RefusesAnOverflowingProduct) {
    errno = 0;
    EXPECT_EQ(pk_calloc(SIZE_MAX / 2, 3), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    void *p = pk_calloc(0, 100);
    EXPECT_NE(p, nullptr);
    pk_free(p);
}

TEST(AllocRealloc, KeepsThePointerWithinTheClassAndMovesAcrossIt) {
    char *p = static_cast<char *>(pk_alloc(33));
    fill_pattern(p, 33, 7);
    EXPECT_EQ(pk_realloc(p, 48), p) << "33 and 48 share a class";
    char *q = static_cast<char *>(pk_realloc(p, 49));
    EXPECT_NE(q, p);
    EXPECT_EQ(check_pattern(q, 33, 7), 33u);
    char *r = static_cast<char *>(pk_realloc(q, 20));
    EXPECT_NE(r, q) << "a shrink to another class moves, so pk_free_sized(20) is right";
    EXPECT_EQ(pk_usable_size(r), 32u);
    pk_free_sized(r, 20);
}

TEST(AllocRealloc, ChainsThroughEveryKindKeepTheContents) {
    const size_t steps[] = {1, 17, 200, 4000, 70000, 300000, 5000000, 900000, 262144, 1000, 3, 600000, 40};
    char *p = nullptr;
    size_t have = 0;
    uint64_t key = 99;
    for (size_t s : steps) {
        p = static_cast<char *>(pk_realloc(p, s));
        ASSERT_NE(p, nullptr) << s;
        size_t keep = have < s ? have : s;
        ASSERT_EQ(check_pattern(p, keep & ~size_t(7), key), keep & ~size_t(7)) << "after resize to " << s;
        key++;
        fill_pattern(p, s & ~size_t(7), key);
        have = s & ~size_t(7);
        ASSERT_GE(pk_usable_size(p), s);
    }
    pk_free(p);
}

TEST(AllocRealloc, NullAllocatesAndZeroFrees) {
    void *p = pk_realloc(nullptr, 100);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(pk_realloc(p, 0), nullptr);
    pk_free(nullptr);
    pk_free_sized(nullptr, 10);
    EXPECT_EQ(pk_usable_size(nullptr), 0u);
}

TEST(AllocLarge, BlocksOverTheLastClassAreMappedAndCounted) {
    pk_process_stats before;
    pk_stats_get(&before);
    size_t page = page_size();
    void *p = pk_alloc(PK_ALLOC_CLASS_MAX + 1);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(aligned_to(p, page));
    EXPECT_EQ(pk_usable_size(p), (PK_ALLOC_CLASS_MAX + 1 + page - 1) / page * page);
    EXPECT_EQ(pk_pool_owner(p), nullptr);
    EXPECT_NE(report_text(0).find("1 mapped blocks"), std::string::npos) << report_text(0);
    memset(p, 1, PK_ALLOC_CLASS_MAX + 1);
    pk_free(p);
    EXPECT_NE(report_text(0).find("0 mapped blocks"), std::string::npos);
}

TEST(AllocLarge, AGrowingBufferIsResizedWithItsContents) {
    size_t size = PK_ALLOC_CLASS_MAX * 2;
    char *p = static_cast<char *>(pk_alloc(size));
    fill_pattern(p, size, 3);
    for (int i = 0; i < 6; i++) {
        size *= 2;
        p = static_cast<char *>(pk_realloc(p, size));
        ASSERT_NE(p, nullptr);
        ASSERT_EQ(check_pattern(p, size / 2, 3 + i), size / 2);
        fill_pattern(p, size, 4 + i);
    }
    pk_free(p);
}

TEST(AllocLarge, AnImpossibleSizeFailsWithENOMEM) {
    errno = 0;
    EXPECT_EQ(pk_alloc(SIZE_MAX - 100), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    void *p = pk_alloc(10);
    errno = 0;
    EXPECT_EQ(pk_realloc(p, SIZE_MAX / 2 + 1), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_EQ(pk_usable_size(p), 16u) << "a failed realloc leaves the block as it was";
    pk_free(p);
    EXPECT_EQ(pk_good_size(SIZE_MAX), 0u);
}

/* ---- large blocks freed and reused ----
 * A freed large block's mapping waits for the purge delay and serves a
 * later block of any length. Each test starts with nothing kept and a long
 * delay; "reused" is read from the address, from the pages already
 * resident (a fresh mapping has none) and from the page requests. */

constexpr size_t MiB = size_t(1) << 20;

size_t page_round(size_t n) { return (n + page_size() - 1) / page_size() * page_size(); }

/* Whether the page holding p is mapped: mincore fails with ENOMEM if not. */
bool is_mapped(const void *p) {
    uintptr_t page = reinterpret_cast<uintptr_t>(p) & ~(uintptr_t)(page_size() - 1);
    unsigned char v;
    return mincore(reinterpret_cast<void *>(page), page_size(), &v) == 0;
}

/* Pages of [p, p + len) resident now (p page-aligned). */
size_t resident_pages(const void *p, size_t len) {
    std::vector<unsigned char> v(page_round(len) / page_size());
    if (mincore(const_cast<void *>(p), len, v.data()) != 0) return 0;
    size_t n = 0;
    for (unsigned char c : v) n += c & 1;
    return n;
}

/* A large block of len bytes, written in full (its pages resident). */
char *written_block(size_t len, int byte = 1) {
    char *p = static_cast<char *>(pk_alloc(len));
    if (p) std::memset(p, byte, len);
    return p;
}

/* Nothing kept when the test starts or after it; delay_ms meanwhile. */
struct KeptBlocks {
    PurgeDelay delay;
    explicit KeptBlocks(long delay_ms = 60000) : delay(delay_ms) { pk_pool_release_cache(); }
    ~KeptBlocks() { pk_pool_release_cache(); } /* before delay puts the old delay back */
};

/* A page no one may use, mapped right after a block's mapping where it is
 * free: the system places mappings side by side (upward under Valgrind),
 * and a block followed by a kept mapping grows in place over it, which a
 * test of a block that must move would take for a move not made. */
struct Spacer {
    void *at;
    explicit Spacer(void *block) {
        size_t page = page_size();
        uintptr_t end = (reinterpret_cast<uintptr_t>(block) + pk_usable_size(block) + page - 1) & ~(page - 1);
        at = mmap(reinterpret_cast<void *>(end), page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    }
    ~Spacer() {
        if (at != MAP_FAILED) munmap(at, page_size());
    }
};

/* A block realloc grows past a slab (past REALLOC_MAPPED_MIN, policy.h) becomes
 * a mapped block and stays one while it keeps over that size; shrunk
 * below it, it is a class block again. Each step keeps the contents. */
TEST(AllocRealloc, ABlockGrownPastASlabIsMappedUntilItShrinksBelowIt) {
    size_t small = 40000, grown = 70000, shrunk = 66000, back = 30000;
    char *p = static_cast<char *>(pk_alloc(small));
    ASSERT_NE(p, nullptr);
    fill_pattern(p, small, 11);
    ASSERT_NE(pk_pool_owner(p), nullptr);
    char *q = static_cast<char *>(pk_realloc(p, grown));
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(pk_pool_owner(q), nullptr) << "grown past a slab, the block is still a class's";
    EXPECT_EQ(pk_usable_size(q), page_round(grown));
    EXPECT_EQ(check_pattern(q, small, 11), small);
    fill_pattern(q, grown, 12);
    char *r = static_cast<char *>(pk_realloc(q, shrunk));
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(pk_pool_owner(r), nullptr) << "a mapped block shrunk within the range left it";
    EXPECT_EQ(pk_usable_size(r), page_round(grown)) << "a shrink by a page left its mapping";
    EXPECT_EQ(check_pattern(r, shrunk, 12), shrunk);
    char *t = static_cast<char *>(pk_realloc(r, back));
    ASSERT_NE(t, nullptr);
    EXPECT_NE(pk_pool_owner(t), nullptr) << "shrunk below a slab, the block stayed mapped";
    EXPECT_EQ(check_pattern(t, back, 12), back);
    pk_free_sized(t, back);
    /* a sized free of a grown block of a class's size finds it mapped */
    char *m = static_cast<char *>(pk_realloc(pk_alloc(100), grown));
    ASSERT_NE(m, nullptr);
    EXPECT_NE(report_text(0).find("1 mapped blocks"), std::string::npos) << report_text(0);
    pk_free_sized(m, grown);
    EXPECT_NE(report_text(0).find("0 mapped blocks"), std::string::npos) << report_text(0);
}

/* Buffers grown together by realloc through every class up to past a slab:
 * what their classes emptied leaves the pools as the mapped blocks take
 * their place (central_give_empties), past a floor of 16 MiB (policy.h,
 * GIVE_EMPTY_FLOOR), where it all waited for the purge delay (kept long
 * here) while the blocks grew with fresh pages. */
TEST(AllocRealloc, BuffersGrownTogetherLeaveNoEmptySlabsBehind) {
    KeptBlocks kept;
    pk_collect(1); /* no empty slab of an earlier test in this process */
    pk_process_stats st;
    pk_stats_get(&st);
    const size_t n = 1000, step = 512, most = 96 * 1024, floor = 16 * MiB, start = st.pool_bytes_reserved;
    std::vector<char *> b(n, nullptr);
    for (size_t len = step; len <= most; len += step)
        for (size_t i = 0; i < n; i++) {
            b[i] = static_cast<char *>(pk_realloc(b[i], len));
            ASSERT_NE(b[i], nullptr);
            b[i][len - 1] = static_cast<char>(i);
        }
    pk_stats_get(&st);
    /* the floor, an empty slab per pool, the thread's lists of free slots
     * and its spares (policy.h, HOT_LIST, SPARE_BYTES), however many
     * buffers; not given, what the last classes emptied stayed beside
     * them, half as much again */
    EXPECT_LT(st.pool_bytes_reserved - start, floor + n * 64 * 1024 * 3 / 4) << report_text(0);
    for (size_t i = 0; i < n; i++) {
        EXPECT_EQ(b[i][most - 1], static_cast<char>(i));
        pk_free(b[i]);
    }
}

/* The same in a program a third that size, whose pools hold 40 MiB at
 * most: the empty slabs kept as the mapped blocks fault in fresh pages
 * are at most a quarter of what the pools hold (policy.h,
 * GIVE_EMPTY_PART), so some leave before the end; the whole 16 MiB floor
 * kept them all. */
TEST(AllocRealloc, ASmallerProgramKeepsEmptySlabsInProportion) {
    KeptBlocks kept;
    pk_collect(1);
    pk_process_stats st;
    pk_stats_get(&st);
    const size_t n = 300, step = 512, most = 256 * 1024, start = st.pool_bytes_reserved;
    std::vector<char *> b(n, nullptr);
    size_t peak = 0;
    for (size_t len = step; len <= most; len += step) {
        for (size_t i = 0; i < n; i++) {
            b[i] = static_cast<char *>(pk_realloc(b[i], len));
            ASSERT_NE(b[i], nullptr);
            b[i][len - 1] = static_cast<char>(i);
        }
        pk_stats_get(&st);
        if (st.pool_bytes_reserved - start > peak) peak = st.pool_bytes_reserved - start;
    }
    /* about 5 MiB given back here; with the whole floor kept, none */
    EXPECT_LT(st.pool_bytes_reserved - start + 2 * MiB, peak) << report_text(0);
    for (size_t i = 0; i < n; i++) {
        EXPECT_EQ(b[i][most - 1], static_cast<char>(i));
        pk_free(b[i]);
    }
}

static long minor_faults() {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

/* n buffers grown in turn by step bytes, each to its own length from 64
 * KiB to 256 KiB, every byte written; the minor faults it took. */
static long grown_in_turn(std::vector<char *> &b, size_t step) {
    long before = minor_faults();
    size_t n = b.size(), most = 0;
    std::vector<size_t> want(n);
    for (size_t i = 0; i < n; i++) most = std::max(most, want[i] = 64 * 1024 + (i * 7919) % (192 * 1024));
    for (size_t len = step; len <= most; len += step)
        for (size_t i = 0; i < n; i++) {
            if (len > want[i]) continue;
            char *to = static_cast<char *>(pk_realloc(b[i], len));
            if (!to) return -1;
            b[i] = to;
            std::memset(to + len - step, static_cast<int>(i), step);
        }
    return minor_faults() - before;
}

/* Buffers grown in turn, all freed, then as many grown again, round
 * after round (threads that take over from one that exited): a round
 * grows into the pages the one before freed, kept (alloc_large.c,
 * retain.c), where it faulted its own in. The kept pieces are as many as
 * the blocks live lately, not as those live when each left (down to none
 * at the last free), and a block that moves takes a kept piece that holds
 * it and its room. The pieces settle in a few rounds (each round's slack,
 * retain.c, joins them). */
TEST(AllocRealloc, BuffersGrownAgainAfterAllWereFreedReuseTheirPages) {
    if (running_under_valgrind() || PKTEST_ASAN || PKTEST_TSAN) GTEST_SKIP() << "page faults are the tool's here";
    KeptBlocks kept;
    const size_t n = 300, step = 512, rounds = 5;
    std::vector<char *> b(n, nullptr);
    long faults = 0;
    size_t bytes = 0;
    for (size_t r = 0; r < rounds; r++) {
        bytes = 0;
        for (char *&p : b) {
            bytes += p ? pk_usable_size(p) : 0;
            pk_free(p);
            p = nullptr;
        }
        faults = grown_in_turn(b, step);
        ASSERT_GE(faults, 0);
    }
    /* a fifth of the pages: the classes below a slab, the last pieces;
     * how many depends on where the system placed the mappings, which
     * changes from run to run (docs/results.md, "Buffers grown again:
     * the faults' spread"); with no kept piece reused, all of them */
    EXPECT_LT(static_cast<size_t>(faults), bytes / page_size() / 5)
        << faults << " faults in the last round for " << bytes << " bytes";
    for (char *p : b) pk_free(p);
}

/* A buffer grown a page at a time in turn with another (which takes the
 * pages after it) moves once per quarter it grows, not at every page. */
TEST(AllocRealloc, ABufferGrownAPageAtATimeMovesOncePerQuarter) {
    KeptBlocks kept;
    size_t page = page_size(), moves = 0;
    char *a = nullptr, *b = nullptr;
    for (size_t len = 128 * 1024; len <= 8 * MiB; len += page) {
        char *to = static_cast<char *>(pk_realloc(a, len));
        ASSERT_NE(to, nullptr);
        moves += a && to != a;
        a = to;
        a[len - 1] = 1;
        ASSERT_NE(b = static_cast<char *>(pk_realloc(b, len)), nullptr);
        b[len - 1] = 2;
    }
    /* grown 64 times over, a quarter at a time: ln 64 / ln 1.25 moves, about 19 */
    EXPECT_LE(moves, 40u) << "a buffer grown by 2,016 pages moved " << moves << " times";
    pk_free(a);
    pk_free(b);
}

/* Every entry of b a new block of size bytes, written whole with byte. */
static bool written_blocks(std::vector<char *> &b, size_t size, int byte) {
    for (char *&p : b) {
        if (!(p = static_cast<char *>(pk_alloc(size)))) return false;
        memset(p, byte, size);
    }
    return true;
}

/* Blocks of 64 to 256 KiB each take a slab of their own, which no other
 * class can use: when a phase of one size follows a phase of another, what
 * the first emptied leaves its pool as the second faults its slabs in
 * (central_give_empties), past a floor of 16 MiB (policy.h,
 * GIVE_EMPTY_FLOOR), where it all waited for the purge delay (kept long
 * here) beside the second phase. */
TEST(AllocClasses, APhaseOfBlocksOfOneSizeLeavesNoEmptySlabsToTheNext) {
    KeptBlocks kept;
    pk_collect(1); /* no empty slab of an earlier test in this process */
    pk_process_stats st;
    pk_stats_get(&st);
    const size_t n = 600, first = 100000, second = 200000, floor = 16 * MiB, start = st.pool_bytes_reserved;
    std::vector<char *> b(n, nullptr);
    ASSERT_TRUE(written_blocks(b, first, 1));
    for (size_t i = 0; i < n; i++) pk_free(b[i]);
    ASSERT_TRUE(written_blocks(b, second, 2));
    pk_stats_get(&st);
    size_t live = n * pk_usable_size(b[0]), before = n * pk_good_size(first);
    /* the second phase, the floor, the thread's lists of free slots and
     * its spares (policy.h, HOT_LIST, SPARE_BYTES); not given, the first
     * phase's slabs stayed whole beside it */
    EXPECT_LT(st.pool_bytes_reserved - start, live + floor + before / 4) << report_text(0);
    for (size_t i = 0; i < n; i++) pk_free(b[i]);
}

/* A phase of small objects after one of blocks that took a slab each:
 * what the blocks emptied leaves their pool as the small objects' slabs
 * fault in fresh pages (central.c, new_slab), past the floor, where it
 * all waited for the purge delay beside the small objects (a program
 * that parses big records, then builds a tree of small nodes). */
TEST(AllocClasses, APhaseOfSmallObjectsLeavesNoEmptySlabsOfBigBlocksBeside) {
    KeptBlocks kept;
    pk_collect(1); /* no empty slab of an earlier test in this process */
    pk_process_stats st;
    pk_stats_get(&st);
    const size_t n = 600, big = 100000, small = 48, m = 800000, floor = 16 * MiB, start = st.pool_bytes_reserved;
    std::vector<char *> b(n, nullptr);
    ASSERT_TRUE(written_blocks(b, big, 1));
    for (size_t i = 0; i < n; i++) pk_free(b[i]);
    size_t before = n * pk_good_size(big);
    std::vector<char *> o(m, nullptr);
    ASSERT_TRUE(written_blocks(o, small, 2));
    pk_stats_get(&st);
    size_t live = m * pk_usable_size(o[0]);
    /* the small objects, the floor, a slab per pool kept (SHARE_EMPTY_KEEP)
     * and the thread's spares; not given, the big blocks' slabs stayed
     * whole beside them */
    EXPECT_LT(st.pool_bytes_reserved - start, live * 9 / 8 + floor + before / 4) << report_text(0);
    for (size_t i = 0; i < m; i++) pk_free(o[i]);
}

/* The regions of blocks of a longer class that leave their pool as a
 * shorter class's phase faults its slabs in serve that class's slabs, cut
 * (retain.c), with no page request. */
TEST(AllocClasses, AShorterClassTakesTheRegionsALongerOneEmptied) {
    KeptBlocks kept;
    pk_collect(1); /* no empty slab of an earlier test in this process */
    const size_t n = 400, longer = 200000, shorter = 150000;
    std::vector<char *> b(n, nullptr);
    ASSERT_TRUE(written_blocks(b, longer, 1));
    for (size_t i = 0; i < n; i++) pk_free(b[i]);
    unsigned long before = pk_fault_requests();
    ASSERT_TRUE(written_blocks(b, shorter, 2));
    unsigned long asked = pk_fault_requests() - before;
    EXPECT_LT(asked, n * 3 / 4) << "a fresh region for each slab, those the longer class emptied given back";
    for (size_t i = 0; i < n; i++) pk_free(b[i]);
}

TEST(AllocLargeReuse, AFreedBlockServesAShorterOneWithoutAPageRequest) {
    KeptBlocks kept;
    char *p = written_block(8 * MiB);
    ASSERT_NE(p, nullptr);
    pk_free(p);
    unsigned long before = pk_fault_requests();
    void *q = pk_alloc(5 * MiB + 12345);
    EXPECT_EQ(q, p) << "the next block did not take the freed one's mapping";
    EXPECT_EQ(pk_fault_requests(), before) << "a block that fits in a kept mapping asked the system for pages";
    EXPECT_EQ(resident_pages(q, 5 * MiB), 5 * MiB / page_size());
    EXPECT_EQ(pk_usable_size(q), page_round(5 * MiB + 12345));
    pk_free(q);
    pk_pool_release_cache();
    EXPECT_FALSE(is_mapped(p + 8 * MiB - 1)) << "the rest of the kept mapping was lost, never given back";
}

/* A block aligned past its length and past a slab (a page aligned to
 * 128 KiB, 8 KiB to 1 MiB) has a mapping of its own; freed, that mapping
 * serves the next block of its shape, as any kept mapping does, instead of
 * a fresh aligned mapping per block. */
TEST(AllocLargeReuse, AFreedBlockAlignedPastItsLengthServesTheNextOfItsShape) {
    KeptBlocks kept;
    for (size_t align : {size_t(128) << 10, size_t(1) << 20}) {
        size_t size = align == MiB ? 8192 : 100;
        void *p = pk_aligned_alloc(align, size);
        ASSERT_NE(p, nullptr);
        pk_free(p);
        unsigned long before = pk_fault_requests();
        void *q = pk_aligned_alloc(align, size);
        ASSERT_NE(q, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % align, 0u);
        EXPECT_EQ(pk_fault_requests(), before) << "align " << align << ": a fresh mapping for a block of a freed one's shape";
        pk_free(q);
    }
}

/* A resize within a large block's mapping leaves it where it is, one past
 * it grows the mapping with room to grow on (a quarter, policy.h
 * GROW_ROOM_SHIFT), and a shrink past that room gives the tail back: the
 * in-place answer (remembered per thread for the blocks last resized,
 * alloc_large.c's large_fits) must not outlive the block's length. */
TEST(AllocLargeReuse, AResizeWithinTheMappingStaysAndOnePastItGrows) {
    KeptBlocks kept;
    size_t page = page_size(), first = PK_ALLOC_CLASS_MAX + 1, len = page_round(first);
    char *p = static_cast<char *>(pk_alloc(first));
    ASSERT_NE(p, nullptr);
    fill_pattern(p, first, 5);
    for (size_t n = first; n <= len; n += 97) ASSERT_EQ(pk_realloc(p, n), p) << n << " bytes moved the block";
    ASSERT_EQ(pk_realloc(p, len), p);
    EXPECT_EQ(pk_usable_size(p), len) << "a block allocated has room past its last page";
    char *q = static_cast<char *>(pk_realloc(p, len + 1));
    ASSERT_NE(q, nullptr);
    size_t have = pk_usable_size(q);
    EXPECT_GE(have, len + page) << "a resize one byte past the mapping did not grow it";
    EXPECT_LE(have, len + page + (len + page) / 4) << "grown past its room";
    EXPECT_EQ(check_pattern(q, first, 5), first);
    q[have - 1] = 1;
    ASSERT_EQ(pk_realloc(q, have), q);
    ASSERT_EQ(pk_realloc(q, len + 2), q);
    size_t half = have / 2; /* past the room, over a slab: the tail goes */
    char *shrunk = static_cast<char *>(pk_realloc(q, half));
    ASSERT_NE(shrunk, nullptr);
    EXPECT_EQ(pk_usable_size(shrunk), page_round(half)) << "a shrink by half was answered in place (remembered)";
    EXPECT_EQ(check_pattern(shrunk, half, 5), half);
    /* likewise when another block was resized last */
    char *other = static_cast<char *>(pk_alloc(first));
    ASSERT_NE(other, nullptr);
    ASSERT_EQ(pk_realloc(other, first + 1), other);
    shrunk = static_cast<char *>(pk_realloc(shrunk, have));
    ASSERT_NE(shrunk, nullptr);
    ASSERT_EQ(pk_realloc(other, first + 2), other);
    shrunk = static_cast<char *>(pk_realloc(shrunk, half));
    ASSERT_NE(shrunk, nullptr);
    EXPECT_EQ(pk_usable_size(shrunk), page_round(half)) << "a shrink by half was answered in place (looked up)";
    EXPECT_EQ(check_pattern(shrunk, half, 5), half);
    pk_free(other);
    pk_free(shrunk);
}

/* The address of a freed block may come back as a block of another
 * length: a resize must see that length, not the freed block's. */
TEST(AllocLargeReuse, AResizeOfABlockAtAFreedOnesAddressSeesItsOwnLength) {
    KeptBlocks kept;
    size_t page = page_size(), longer = PK_ALLOC_CLASS_MAX + 8 * page, shorter = PK_ALLOC_CLASS_MAX + 2 * page;
    char *p = written_block(longer);
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(pk_realloc(p, longer - 1), p); /* in place: its length remembered */
    pk_free(p);
    char *q = static_cast<char *>(pk_alloc(shorter));
    ASSERT_EQ(q, p) << "the shorter block did not take the freed one's mapping";
    fill_pattern(q, shorter, 6);
    ASSERT_EQ(pk_usable_size(q), shorter);
    char *r = static_cast<char *>(pk_realloc(q, longer - 1));
    ASSERT_NE(r, nullptr);
    EXPECT_GE(pk_usable_size(r), longer) << "the resize took the freed block's length for the new one's";
    EXPECT_EQ(check_pattern(r, shorter, 6), shorter);
    pk_free(r);
}

/* A block remembered before a resize changed its length must not be
 * trusted after it, though another block is remembered since: the count
 * of takes moved, and what the thread remembered goes with it. (A shrink
 * keeps the block's address in every build, tool builds included, where
 * no freed mapping is kept for a later block; one by half is past the
 * room a mapping keeps in place.) */
TEST(AllocLargeReuse, ABlockRememberedBeforeItShrankIsNotTrustedAfter) {
    size_t page = page_size(), longer = 4 * PK_ALLOC_CLASS_MAX, shorter = 2 * PK_ALLOC_CLASS_MAX;
    char *other = written_block(shorter + page);
    char *p = written_block(longer);
    ASSERT_NE(other, nullptr);
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(pk_realloc(other, shorter), other); /* within its room: remembered */
    ASSERT_EQ(pk_realloc(other, shorter - 1), other);
    ASSERT_EQ(pk_realloc(p, longer - 1), p); /* both remembered */
    ASSERT_EQ(pk_realloc(p, shorter), p);    /* shrunk in place: a take */
    ASSERT_EQ(pk_usable_size(p), shorter);
    ASSERT_EQ(pk_realloc(other, shorter - 2), other); /* looked up again, remembered afresh */
    char *r = static_cast<char *>(pk_realloc(p, longer - 1));
    ASSERT_NE(r, nullptr);
    EXPECT_GE(pk_usable_size(r), longer) << "the resize took the block's length from before its shrink";
    pk_free(r);
    pk_free(other);
}

/* A block grown past its mapping, with no kept pages after it, moves into
 * a kept mapping that holds it and its room (pages faulted in already),
 * where mremap gave it fresh pages to fault in. */
TEST(AllocLargeReuse, ABlockThatMustMoveTakesAKeptMappingThatHoldsIt) {
    KeptBlocks kept;
    size_t len = MiB;
    char *a = static_cast<char *>(pk_alloc(len));
    ASSERT_NE(a, nullptr);
    fill_pattern(a, len, 3);
    char *f = written_block(8 * MiB);
    ASSERT_NE(f, nullptr);
    pk_free(f);
    char *b = static_cast<char *>(pk_realloc(a, len + 1));
    ASSERT_NE(b, nullptr);
    size_t have = pk_usable_size(b);
    EXPECT_GT(have, len + page_size()) << "grown with no room";
    EXPECT_EQ(resident_pages(b, have), have / page_size()) << "its room is fresh pages: the kept mapping was not used";
    EXPECT_EQ(check_pattern(b, len, 3), len);
    pk_free(b);
}

/* A block whose pages are mostly never written (a table sized for the
 * worst case) that grows past its mapping is not copied into a kept
 * mapping: a copy writes every page, and the block came out resident in
 * full (KEPT_DENSE_SHIFT, policy.h). */
TEST(AllocLargeReuse, ABlockWrittenInPartThatMustMoveKeepsOnlyItsWrittenPages) {
    KeptBlocks kept;
    const size_t len = 4 * MiB, page = page_size();
    char *a = static_cast<char *>(pk_alloc(len));
    ASSERT_NE(a, nullptr);
    fill_pattern(a, page, 5);
    fill_pattern(a + len - page, page, 6);
    Spacer spacer(a); /* f does not follow a: a must move */
    char *f = written_block(16 * MiB);
    ASSERT_NE(f, nullptr);
    pk_free(f); /* a kept mapping that holds the block grown, its pages resident */
    char *b = static_cast<char *>(pk_realloc(a, len + 1));
    ASSERT_NE(b, nullptr);
    EXPECT_LE(resident_pages(b, len), 8u) << "the block's unwritten pages were copied into the kept mapping";
    EXPECT_EQ(check_pattern(b, page, 5), page);
    EXPECT_EQ(check_pattern(b + len - page, page, 6), page);
    pk_free(b);
}

/* A block written in its first part only, enough that it grows by a copy
 * into a kept mapping, is copied where its pages are resident: its other
 * pages come out zero and not resident, where a copy of every byte made
 * them resident, and the next copy of the block copied them again. */
TEST(AllocLargeReuse, ABlockCopiedIntoAKeptMappingKeepsOnlyItsWrittenPages) {
    KeptBlocks kept;
    const size_t len = 4 * MiB, written = 3 * MiB, page = page_size();
    char *a = static_cast<char *>(pk_alloc(len));
    ASSERT_NE(a, nullptr);
    fill_pattern(a, written, 5);
    Spacer spacer(a); /* f does not follow a: a must move */
    char *f = written_block(16 * MiB, 0x5a);
    ASSERT_NE(f, nullptr);
    pk_free(f); /* a kept mapping that holds the block grown, written in full */
    char *b = static_cast<char *>(pk_realloc(a, len + 1));
    ASSERT_NE(b, nullptr);
    ASSERT_EQ(b, f) << "the block did not move into the kept mapping (the test sees nothing)";
    /* before a read: a page read maps the system's zero page, which counts */
    EXPECT_EQ(resident_pages(b, len), written / page) << "the block's unwritten pages were copied";
    EXPECT_EQ(check_pattern(b, written, 5), written);
    EXPECT_TRUE(all_bytes(b + written, len - written, 0)) << "what the block never wrote holds the kept mapping's bytes";
    pk_free(b);
}

/* Pages that blocks written in part left in kept mappings, which no free's
 * look saw (past a block's first pages, which were written in full), go
 * back at the next look at the kept pieces (RESIDUE_LOOK_MS, policy.h);
 * the pages written in full stay, for the next block. */
TEST(AllocLargeReuse, ScatteredPagesLeftInAKeptMappingGoBackAtTheNextLook) {
    KeptBlocks kept;
    const size_t len = 16 * MiB, page = page_size();
    char *f = static_cast<char *>(pk_alloc(len));
    char *g = written_block(MiB);
    ASSERT_TRUE(f && g);
    std::memset(f, 1, MiB);
    for (size_t at = MiB; at < len; at += MiB / 2) f[at] = 2;
    pk_free(f);
    ASSERT_TRUE(is_mapped(f)) << "a freed block was not kept";
    std::this_thread::sleep_for(std::chrono::milliseconds(250)); /* a look is due */
    pk_free(g);
    EXPECT_EQ(resident_pages(f, MiB), MiB / page) << "the pages written in full were given back";
    EXPECT_EQ(resident_pages(f + MiB, len - MiB), 0u) << "the scattered pages stayed resident";
}

/* A zeroed block taken from kept pages is cleared in place where they
 * are resident (a block written whole left them), and where they are
 * mostly not (a block written in two bytes left them) given back to come
 * back zero, so that the few written pages do not make it resident in
 * full (KEPT_DENSE_SHIFT, policy.h). */
TEST(AllocLargeReuse, AZeroedBlockIsClearedInPlaceOnlyWhereTheKeptPagesAreResident) {
    const size_t len = 8 * MiB, page = page_size();
    for (bool whole : {true, false}) {
        KeptBlocks kept;
        char *f = static_cast<char *>(pk_alloc(2 * len));
        ASSERT_NE(f, nullptr);
        if (whole) std::memset(f, 3, 2 * len);
        f[0] = f[len - 1] = f[2 * len - 1] = 3;
        pk_free(f);
        char *z = static_cast<char *>(pk_calloc(1, len));
        ASSERT_NE(z, nullptr);
        EXPECT_EQ(z, f) << "the zeroed block did not take the kept pages";
        if (whole) EXPECT_EQ(resident_pages(z, len), len / page) << "resident kept pages were given back";
        else EXPECT_LE(resident_pages(z, len), 2u) << "kept pages mostly never written were cleared one by one";
        for (size_t at = 0; at < len; at += page / 2) ASSERT_EQ(z[at], 0) << at;
        ASSERT_EQ(z[len - 1], 0);
        pk_free(z);
    }
}

/* A zeroed block that a zeroed block's mapping serves next is cleared with
 * no look at its pages (a system call that cost a loop of 1 MiB callocs
 * more than a tenth of its time): the first one cleared every page, so
 * they are resident. The test takes the pages away behind the library's
 * back: cleared with no look, they are all resident again; a look would
 * have found none and given them back. */
TEST(AllocLargeReuse, AZeroedBlockInAMappingAZeroedBlockClearedIsClearedWithNoLook) {
    const size_t len = MiB, page = page_size();
    KeptBlocks kept;
    char *f = static_cast<char *>(pk_alloc(len));
    ASSERT_NE(f, nullptr);
    std::memset(f, 3, len);
    pk_free(f);
    char *z = static_cast<char *>(pk_calloc(1, len)); /* looked at: resident, cleared */
    ASSERT_EQ(z, f) << "the zeroed block did not take the kept pages";
    std::memset(z, 5, len);
    pk_free(z);
    ASSERT_EQ(madvise(z, len, MADV_DONTNEED), 0);
    char *y = static_cast<char *>(pk_calloc(1, len));
    ASSERT_EQ(y, z) << "the zeroed block did not take the kept pages";
    EXPECT_EQ(resident_pages(y, len), len / page) << "the pages were looked at, not cleared as known resident";
    for (size_t at = 0; at < len; at += page / 2) ASSERT_EQ(y[at], 0) << at;
    pk_free(y);
}

/* A mapping known resident that joins a kept mapping beside it of pages
 * not known so is looked at again before a zeroed block clears it: a
 * block written in a few pages beside it must not be made resident whole
 * (KEPT_DENSE_SHIFT, policy.h). */
TEST(AllocLargeReuse, AResidentMappingJoinedWithOneNotKnownSoIsLookedAtAgain) {
    const size_t len = 4 * MiB, page = page_size();
    KeptBlocks kept;
    char *f = static_cast<char *>(pk_alloc(len));
    ASSERT_NE(f, nullptr);
    std::memset(f, 3, len);
    pk_free(f);
    char *z = static_cast<char *>(pk_calloc(1, MiB)); /* the front, cleared: resident */
    ASSERT_EQ(z, f) << "the zeroed block did not take the kept pages' front";
    ASSERT_EQ(madvise(f + MiB, len - MiB, MADV_DONTNEED), 0); /* the rest, as if written in a page */
    f[MiB] = 1;
    pk_free(z); /* joins the rest */
    char *y = static_cast<char *>(pk_calloc(1, len));
    ASSERT_EQ(y, f) << "the zeroed block did not take the joined kept pages";
    EXPECT_LE(resident_pages(y, len), 2u) << "kept pages mostly not resident were cleared as if all were";
    for (size_t at = 0; at < len; at += page / 2) ASSERT_EQ(y[at], 0) << at;
    pk_free(y);
}

/* Whether [p, p + len) spans more than one of the system's mappings:
 * mremap refuses (EFAULT) to resize such a range. */
bool spans_mappings(char *p, size_t len) {
    void *q = mremap(p, len, len + page_size(), 0);
    if (q != MAP_FAILED) {
        mremap(p, len + page_size(), len, 0);
        return false;
    }
    return errno == EFAULT;
}

/* A block of 12 MiB written in three pages, whose pages are two kept
 * pieces of 4 MiB and fresh ones (gathered: over three mappings); *slack,
 * the block that took the fresh pages mapped past it to wait among the
 * kept ones (as long again), so that its growth cannot take them. */
char *gathered_block(char **slack) {
    const size_t piece = 4 * MiB;
    char *a = static_cast<char *>(pk_alloc(piece));
    char *apart = static_cast<char *>(pk_alloc(piece)); /* keeps a and c from joining */
    char *c = static_cast<char *>(pk_alloc(piece));
    if (!a || !apart || !c) return nullptr;
    a[0] = c[0] = 1;
    pk_free(a);
    pk_free(c);
    char *g = static_cast<char *>(pk_alloc(3 * piece));
    *slack = static_cast<char *>(pk_alloc(3 * piece));
    pk_free(apart);
    if (!g || !*slack) return nullptr;
    fill_pattern(g, page_size(), 7);
    fill_pattern(g + 5 * MiB, page_size(), 8);
    fill_pattern(g + 3 * piece - page_size(), page_size(), 9);
    return g;
}

bool gathered_contents_kept(const char *g) {
    size_t page = page_size();
    return check_pattern(g, page, 7) == page && check_pattern(g + 5 * MiB, page, 8) == page &&
           check_pattern(g + 12 * MiB - page, page, 9) == page;
}

/* Such a block, which mremap refuses to grow, moves by its mappings when
 * it grows past its length: no copy, so its unwritten pages stay
 * unwritten (copied, all 3,072 came out resident). */
TEST(AllocLargeReuse, ABlockOverSeveralMappingsGrowsByMovingItsPages) {
    KeptBlocks kept;
    char *slack, *g = gathered_block(&slack);
    ASSERT_NE(g, nullptr);
    if (!spans_mappings(g, 12 * MiB)) {
        pk_free(g);
        pk_free(slack);
        GTEST_SKIP() << "the system joined the gathered pieces into one mapping";
    }
    char *h = static_cast<char *>(pk_realloc(g, 12 * MiB + 1));
    ASSERT_NE(h, nullptr);
    EXPECT_TRUE(gathered_contents_kept(h)) << "the move lost the block's contents";
    EXPECT_LE(resident_pages(h, 12 * MiB), 16u) << "the block was copied, its unwritten pages with it";
    pk_free(h);
    pk_free(slack);
}

/* ... and where the system refuses a step of the growth (each request and
 * move in turn), the block is grown some other way or left as it was,
 * never lost in part. */
TEST(AllocLargeReuse, ABlockOverSeveralMappingsKeepsItsContentsWhereAGrowthStepFails) {
    for (long at = 0; at < 8; at++) {
        KeptBlocks kept;
        char *slack, *g = gathered_block(&slack);
        ASSERT_NE(g, nullptr);
        pk_fault_fail_after(at);
        char *h = static_cast<char *>(pk_realloc(g, 12 * MiB + 1));
        pk_fault_fail_after(-1);
        char *live = h ? h : g;
        EXPECT_TRUE(gathered_contents_kept(live)) << "a growth refused at request " << at << " lost the contents";
        pk_free(live);
        pk_free(slack);
    }
}

TEST(AllocLargeReuse, ALongerBlockGrowsAKeptMappingAndFaultsInOnlyWhatItLacks) {
    KeptBlocks kept;
    char *p = written_block(6 * MiB);
    ASSERT_NE(p, nullptr);
    pk_free(p);
    char *q = static_cast<char *>(pk_alloc(10 * MiB));
    ASSERT_NE(q, nullptr);
    EXPECT_GE(resident_pages(q, 10 * MiB), 6 * MiB / page_size())
        << "the longer block did not grow the kept mapping (its pages are not resident)";
    std::memset(q, 2, 10 * MiB);
    pk_free(q);
}

TEST(AllocLargeReuse, AShrunkBlockKeepsItsContentsAndItsTailServesTheNextBlock) {
    KeptBlocks kept;
    char *p = static_cast<char *>(pk_alloc(8 * MiB));
    ASSERT_NE(p, nullptr);
    fill_pattern(p, 8 * MiB, 7);
    char *q = static_cast<char *>(pk_realloc(p, 3 * MiB));
    ASSERT_EQ(q, p) << "a shrink moved the block or failed";
    EXPECT_EQ(check_pattern(q, 3 * MiB, 7), 3 * MiB);
    EXPECT_EQ(pk_usable_size(q), 3 * MiB);
    char *r = written_block(4 * MiB);
    EXPECT_EQ(r, p + 3 * MiB) << "the shrunk block's tail did not serve the next block";
    q = static_cast<char *>(pk_realloc(q, 12 * MiB)); /* past r: moved by mremap */
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(check_pattern(q, 3 * MiB, 7), 3 * MiB);
    EXPECT_GE(pk_usable_size(q), 12 * MiB);
    std::memset(q, 3, 12 * MiB);
    EXPECT_EQ(resident_pages(r, 4 * MiB), 4 * MiB / page_size());
    pk_free(r);
    pk_free(q);
}

/* A block grown over the kept pages after it (its own tail) takes its
 * room there too, so the next pages it grows into ask nothing. */
TEST(AllocLargeReuse, ABlockGrownOverItsKeptTailTakesItsRoomThere) {
    KeptBlocks kept;
    size_t page = page_size();
    char *p = written_block(8 * MiB);
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(pk_realloc(p, 2 * MiB), p); /* the tail [2, 8) MiB is kept */
    char *q = static_cast<char *>(pk_realloc(p, 2 * MiB + 1));
    ASSERT_EQ(q, p) << "grown over its kept tail, it moved";
    size_t have = pk_usable_size(q);
    EXPECT_GT(have, 2 * MiB + page) << "it took a page, not its room: the next page it crosses asks again";
    EXPECT_EQ(resident_pages(q, have), have / page);
    pk_free(q);
}

TEST(AllocLargeReuse, BlocksFreedSideBySideServeOneAsLongAsBoth) {
    KeptBlocks kept;
    char *p = written_block(8 * MiB);
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(pk_realloc(p, 4 * MiB), p); /* the tail [4, 8) MiB is kept */
    pk_free(p);                            /* and joined by its head */
    void *q = pk_alloc(8 * MiB);
    EXPECT_EQ(q, p) << "the two kept neighbours did not serve a block as long as both";
    EXPECT_EQ(resident_pages(q, 8 * MiB), 8 * MiB / page_size());
    pk_free(q);
}

/* Buffers sized for the worst case and written in their first bytes only:
 * each block that starts at a new place in a kept mapping writes one more
 * of its pages, and without a limit on that residue what is kept filled
 * with written pages while the blocks live stayed the same
 * (LARGE_RESIDUE_MAX, policy.h). */
TEST(AllocLargeReuse, BlocksWrittenInPartDoNotFillWhatIsKeptWithPages) {
    KeptBlocks kept;
    std::vector<char *> live(16, nullptr);
    Rng rng(7);
    const int rounds = 40000;
    size_t at_quarter = 0;
    for (int r = 0; r < rounds; r++) {
        char *&b = live[static_cast<size_t>(r) % live.size()];
        pk_free(b);
        b = static_cast<char *>(pk_alloc(MiB + rng.below(7 * MiB)));
        ASSERT_NE(b, nullptr);
        std::memset(b, 1, 64);
        if (r == rounds / 4) at_quarter = rss_bytes();
    }
    size_t end = rss_bytes();
    for (char *b : live) pk_free(b);
    EXPECT_LE(end, at_quarter + 8 * MiB) << "resident " << at_quarter / 1024 << " KiB a quarter in, " << end / 1024
                                          << " KiB at the end, the same blocks live";
    /* what was given back is taken as zero pages: zeroed blocks from it
     * hold no byte those blocks wrote */
    for (char *&b : live) {
        size_t len = MiB + rng.below(7 * MiB);
        b = static_cast<char *>(pk_calloc(1, len));
        ASSERT_NE(b, nullptr);
        for (size_t at = 0; at < len; at += page_size() / 2) ASSERT_EQ(b[at], 0) << at << " bytes into " << len;
    }
    for (char *b : live) pk_free(b);
}

/* An aligned block cut from the middle of a kept mapping leaves its tail
 * kept with what it held: a zeroed block taken there is cleared. */
TEST(AllocLargeReuse, TheTailAnAlignedBlockLeavesIsClearedForAZeroedOne) {
    KeptBlocks kept;
    char *p = written_block(8 * MiB, 0x5a);
    ASSERT_NE(p, nullptr);
    pk_free(p);
    void *front = pk_alloc(300 * 1024); /* off the 64 KiB grid */
    void *aligned = pk_aligned_alloc(64 * 1024, MiB);
    ASSERT_NE(aligned, nullptr);
    char *rest = static_cast<char *>(aligned) + MiB;
    size_t left = static_cast<size_t>(p + 8 * MiB - rest);
    char *z = static_cast<char *>(pk_calloc(1, left));
    ASSERT_NE(z, nullptr);
    EXPECT_EQ(z, rest) << "the zeroed block did not take the tail (the test sees nothing)";
    EXPECT_TRUE(all_bytes(z, left, 0));
    pk_free(z);
    pk_free(aligned);
    pk_free(front);
}

TEST(AllocLargeReuse, ReleaseCacheGivesKeptBlocksBack) {
    KeptBlocks kept;
    char *p = written_block(8 * MiB);
    ASSERT_NE(p, nullptr);
    pk_free(p);
    EXPECT_TRUE(is_mapped(p)) << "a freed block was not kept for reuse";
    pk_process_stats st;
    pk_stats_get(&st);
    EXPECT_GE(st.retained_bytes, 8 * MiB);
    EXPECT_GE(pk_pool_release_cache(), 8 * MiB);
    EXPECT_FALSE(is_mapped(p)) << "pk_pool_release_cache left a freed block mapped";
    pk_stats_get(&st);
    EXPECT_EQ(st.retained_bytes, 0u);
}

TEST(AllocLargeReuse, WithDelayZeroAFreedBlockGoesBackAtOnce) {
    KeptBlocks kept(0);
    char *p = written_block(8 * MiB);
    ASSERT_NE(p, nullptr);
    pk_free(p);
    EXPECT_FALSE(is_mapped(p));
}

/* The delay from the environment, so that the first poll's interval is
 * this delay's: a program that makes nothing but large blocks. */
PKTEST_CHILD(LargeBlocksGoBackAfterTheDelay) {
    char *p = written_block(8 * MiB);
    CHILD_CHECK(p != nullptr, "no block");
    pk_free(p);
    CHILD_CHECK(is_mapped(p), "a freed block was not kept for reuse");
    usleep(300 * 1000); /* the delay is 50 ms */
    char *q = static_cast<char *>(pk_alloc(8 * MiB));
    CHILD_CHECK(q != nullptr, "no block");
    CHILD_CHECK(resident_pages(q, 8 * MiB) == 0,
                "a block freed 300 ms before (delay 50 ms) was still kept at the next call: %zu pages resident",
                resident_pages(q, 8 * MiB));
    pk_process_stats st;
    pk_stats_get(&st);
    CHILD_CHECK(st.retained_bytes == 0, "%zu bytes still kept", st.retained_bytes);
    pk_free(q);
    return 0;
}

PKTEST_CHILD(LargeBlocksGoBackWithNoCallUnderTheBackgroundPurge) {
    char *p = written_block(8 * MiB);
    CHILD_CHECK(p != nullptr, "no block");
    pk_free(p);
    for (int ms = 0; is_mapped(p); ms += 10) {
        CHILD_CHECK(ms < 5000, "a freed block still mapped 5 s after its free (delay 50 ms)");
        usleep(10 * 1000);
    }
    return 0;
}

TEST(AllocLargeReuse, KeptBlocksGoBackAtTheFirstCallAfterThePurgeDelay) {
    EXPECT_CHILD_PASSES("LargeBlocksGoBackAfterTheDelay", {{"POOLKIT_PURGE_DELAY_MS", "50"}});
}

TEST(AllocLargeReuse, KeptBlocksGoBackWithNoCallUnderTheBackgroundPurge) {
    EXPECT_CHILD_PASSES("LargeBlocksGoBackWithNoCallUnderTheBackgroundPurge",
                        {{"POOLKIT_PURGE_DELAY_MS", "50"}, {"POOLKIT_BACKGROUND_PURGE", "1"}});
}

/* A block realloc grows past REALLOC_MAPPED_MIN (policy.h) where the
 * system refuses a mapping (a limit on the address space here; in a
 * program, the cap on its mappings) takes a slot of its class, whose slab
 * has room: a block, not NULL. So does a mapped block whose mapping
 * cannot grow. */
PKTEST_CHILD(ReallocTakesAClassSlotWhereNoMappingIsHad) {
    if (PKTEST_ASAN || PKTEST_TSAN || running_under_valgrind())
        CHILD_SKIP("the tool reserves address space of its own, past any such limit");
    const size_t small = 20000, grown = 40000, more = 200000;
    /* free slots of the grown sizes' classes, their slabs made before the
     * limit, and a mapped block */
    void *keep = pk_alloc(grown), *keep_more = pk_alloc(more);
    pk_free(pk_alloc(grown));
    pk_free(pk_alloc(more));
    char *p = static_cast<char *>(pk_alloc(small));
    char *m = static_cast<char *>(pk_realloc(pk_alloc(small), grown));
    CHILD_CHECK(keep && keep_more && p && m, "no block");
    CHILD_CHECK(!pk_pool_owner(m), "a block grown past %zu bytes is not mapped", grown);
    memset(p, 5, small);
    memset(m, 6, grown);
    struct rlimit was;
    CHILD_CHECK(getrlimit(RLIMIT_AS, &was) == 0, "getrlimit: %s", std::strerror(errno));
    size_t base = vm_bytes();
    CHILD_CHECK(base > 0, "no VmSize in /proc/self/status");
    struct rlimit rl = {base + 16 * 1024, was.rlim_max};
    CHILD_CHECK(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit: %s", std::strerror(errno));
    char *q = static_cast<char *>(pk_realloc(p, grown));
    int err = errno;
    char *n = q ? static_cast<char *>(pk_realloc(m, more)) : nullptr;
    int err_more = errno;
    CHILD_CHECK(setrlimit(RLIMIT_AS, &was) == 0, "setrlimit: %s", std::strerror(errno));
    CHILD_CHECK(q, "pk_realloc to %zu bytes: NULL (%s) with a class slot free", grown, std::strerror(err));
    CHILD_CHECK(pk_pool_owner(q), "a mapped block under a limit that leaves no room for one");
    for (size_t i = 0; i < small; i++) CHILD_CHECK(q[i] == 5, "byte %zu lost in the move", i);
    CHILD_CHECK(n, "a mapped block grown to %zu bytes: NULL (%s) with a class slot free", more,
                std::strerror(err_more));
    CHILD_CHECK(pk_pool_owner(n), "a mapped block grown past its mapping under the limit");
    for (size_t i = 0; i < grown; i++) CHILD_CHECK(n[i] == 6, "byte %zu lost in the move", i);
    pk_free(q);
    pk_free(n);
    pk_free(keep);
    pk_free(keep_more);
    return CHILD_PASS;
}

TEST(AllocRealloc, ABlockThatFindsNoMappingTakesAClassSlot) {
    EXPECT_CHILD_PASSES("ReallocTakesAClassSlotWhereNoMappingIsHad");
}

TEST(AllocSized, FreesWithTheSizeGiven) {
    std::vector<std::pair<void *, size_t>> v;
    for (size_t s = 1; s < 3000; s += 37) v.push_back({pk_alloc(s), s});
    v.push_back({pk_alloc(400000), 400000});
    v.push_back({pk_calloc(10, 30), 300});
    for (auto &e : v) pk_free_sized(e.first, e.second);
}

TEST(AllocThreads, ObjectsFreedOnAnotherThreadGoHome) {
    const size_t n = scaled(20000, 200);
    std::vector<void *> objs(n);
    std::thread producer([&] {
        for (size_t i = 0; i < n; i++) {
            objs[i] = pk_alloc(16 + i % 700);
            fill_pattern(objs[i], 16, i);
        }
    });
    producer.join();
    std::thread consumer([&] {
        for (size_t i = 0; i < n; i++) {
            ASSERT_EQ(check_pattern(objs[i], 16, i), 16u);
            pk_free(objs[i]);
        }
    });
    consumer.join();
    pk_pool_stats st = stats_of(pk_pool_owner(pk_alloc(16)));
    EXPECT_GT(st.remote_frees, 0u);
}

/* Blocks another thread made, freed by a thread that allocates from their
 * class too (its own current slab of the class): while their maker lives
 * (onto the freeing thread's list, or home by the pending chain) and after
 * it exited (its slabs the pool's: the library's dispatch, which may adopt
 * one). Every block comes home, and none is handed out twice after. */
TEST(AllocThreads, BlocksOfAnotherThreadFreedByOneThatAllocatesTheClassAllComeHome) {
    const size_t size = 3000, n = scaled(4000, 400);
    for (bool maker_lives : {true, false}) {
        void *first = pk_alloc(size); /* the class's pool made before its count is read */
        pk_pool *pool = pk_pool_owner(first);
        const size_t live = stats_of(pool).live;
        std::vector<void *> made(n);
        std::mutex m;
        std::condition_variable cv;
        bool made_all = false, done = false;
        std::thread maker([&] {
            for (size_t i = 0; i < n; i++) fill_pattern(made[i] = pk_alloc(size), 64, i);
            if (!maker_lives) return;
            std::unique_lock<std::mutex> lock(m);
            made_all = true;
            cv.notify_all();
            cv.wait(lock, [&] { return done; });
        });
        if (!maker_lives) {
            maker.join();
        } else {
            std::unique_lock<std::mutex> lock(m);
            cv.wait(lock, [&] { return made_all; });
        }
        std::thread freer([&] {
            void *mine = pk_alloc(size);
            ASSERT_NE(mine, nullptr);
            for (size_t i = 0; i < n; i++) {
                ASSERT_EQ(check_pattern(made[i], 64, i), 64u) << i;
                pk_free(made[i]);
            }
            pk_free(mine);
        });
        freer.join();
        {
            std::lock_guard<std::mutex> lock(m);
            done = true;
        }
        cv.notify_all();
        if (maker.joinable()) maker.join();
        EXPECT_EQ(stats_of(pool).live, live) << (maker_lives ? "maker alive" : "maker gone");
        std::set<void *> again;
        for (size_t i = 0; i < n; i++) {
            void *b = pk_alloc(size);
            EXPECT_TRUE(again.insert(b).second) << "a block handed out twice";
            made[i] = b;
        }
        for (void *b : made) pk_free(b);
        EXPECT_EQ(stats_of(pool).live, live);
        pk_free(first);
    }
}

/* A block of a class whose slabs hold one (128 KiB) that another live
 * thread made, freed here, is this thread's next block of the class
 * (HOT_FOREIGN, src/base/policy.h): threads passing buffers to each other
 * no longer send each block's slab through the pool. */
TEST(AllocThreads, ABlockOfASlabEachThatAnotherThreadMadeIsTheNextBlockOfItsClass) {
    const size_t size = size_t(128) << 10;
    std::vector<void *> made;
    for (int i = 0; i < 24; i++) made.push_back(pk_alloc(size)); /* more slabs than HOT_FOREIGN_SLABS */
    std::thread t([&] {
        void *mine = pk_alloc(size); /* the thread's heap of the class, its slab used up */
        ASSERT_NE(mine, nullptr);
        for (int round = 0; round < 3; round++) {
            void *x = made[round];
            pk_free(x);
            made[round] = pk_alloc(size);
            EXPECT_EQ(made[round], x) << round;
        }
        pk_free(mine);
    });
    t.join();
    pk_pool *pool = pk_pool_owner(made[0]);
    const size_t live = stats_of(pool).live;
    for (void *m : made) pk_free(m);
    EXPECT_EQ(stats_of(pool).live, live - made.size()) << "a block lost on the way";
}

TEST(AllocThreads, ManyThreadsAtOnceNeverShareAnObject) {
    const int threads = 4;
    const size_t rounds = scaled(20000, 200);
    std::atomic<int> bad{0};
    std::vector<std::thread> t;
    for (int k = 0; k < threads; k++)
        t.emplace_back([&, k] {
            Rng rng(k + 1);
            std::vector<std::pair<char *, size_t>> mine;
            for (size_t i = 0; i < rounds; i++) {
                if (mine.size() < 200 && rng.below(3) != 0) {
                    size_t s = 1 + rng.below(2000);
                    char *p = static_cast<char *>(pk_alloc(s));
                    memset(p, k + 1, s);
                    mine.push_back({p, s});
                } else if (!mine.empty()) {
                    size_t j = rng.below(mine.size());
                    if (!all_bytes(mine[j].first, mine[j].second, static_cast<unsigned char>(k + 1))) bad++;
                    pk_free(mine[j].first);
                    mine[j] = mine.back();
                    mine.pop_back();
                }
            }
            for (auto &e : mine) pk_free(e.first);
        });
    for (auto &th : t) th.join();
    EXPECT_EQ(bad.load(), 0);
}

/* Threads that each resize blocks of their own over a slab, in and out
 * of their mappings, while the others' frees, moves and new blocks
 * change the table (tombstones, rebuilds): a resize answered in place
 * without the table's lock (large_serves, a sequence count) keeps every
 * byte, and a block is never answered in place past its mapping (the
 * last byte written faults or lands in another thread's block). */
TEST(AllocThreads, BlocksResizedInPlaceWhileOthersChangeTheTableKeepTheirBytes) {
    const int threads = 4;
    const size_t rounds = scaled(10000, 300), blocks = 24, least = 64 * 1024 + 1, edge = 4096;
    std::atomic<int> bad{0};
    /* its first bytes and its last page: what a move or a wrong answer breaks */
    auto intact = [&](const char *p, size_t s, unsigned char byte) {
        return all_bytes(p, std::min(s, edge), byte) && all_bytes(p + s - std::min(s, edge), std::min(s, edge), byte);
    };
    std::vector<std::thread> t;
    for (int k = 0; k < threads; k++)
        t.emplace_back([&, k] {
            Rng rng(k + 7);
            const auto byte = static_cast<unsigned char>(k + 1);
            std::vector<std::pair<char *, size_t>> mine(blocks, {nullptr, 0});
            for (size_t i = 0; i < rounds; i++) {
                auto &[p, s] = mine[rng.below(blocks)];
                if (p && !intact(p, s, byte)) bad++;
                if (p && rng.below(8) == 0) {
                    pk_free(p);
                    p = nullptr, s = 0;
                    continue;
                }
                /* mostly a little either side, now and then far */
                size_t to = rng.below(4) ? (s ? s : least) + rng.below(2 * edge) - (s > least + edge ? edge : 0)
                                         : least + rng.below(512 * 1024);
                char *q = static_cast<char *>(pk_realloc(p, to));
                if (!q) {
                    bad++;
                    continue;
                }
                if (to > s) memset(q + s, byte, to - s);
                p = q, s = to;
            }
            for (auto &[p, s] : mine) {
                if (p && !intact(p, s, byte)) bad++;
                pk_free(p);
            }
        });
    for (auto &th : t) th.join();
    EXPECT_EQ(bad.load(), 0);
}

TEST(AllocStats, TheReportListsTheClassesAndTheMappedBlocks) {
    void *a = pk_alloc(100), *b = pk_alloc(PK_ALLOC_CLASS_MAX * 3);
    std::string text = report_text(0);
    EXPECT_NE(text.find("pk_alloc 112"), std::string::npos) << text;
    EXPECT_NE(text.find("size classes made"), std::string::npos) << text;
    std::string json = report_text(PK_STATS_JSON);
    EXPECT_NE(json.find("\"alloc\": {\"classes\": "), std::string::npos) << json;
    EXPECT_NE(json.find("\"large_blocks\": 1"), std::string::npos) << json;
    pk_free(a);
    pk_free(b);
}

/* ---- misuse ---- */

TEST(AllocMisuseDeathTest, AStackPointerIsReported) {
    int x = 0;
    PKTEST_EXPECT_REPORT(pk_free(&x), "what=foreign pointer.*\n.*pk_free\\(0x[0-9a-f]+\\): not a block pk_alloc handed out");
}

TEST(AllocMisuseDeathTest, AnObjectOfAUsersPoolIsReportedWithThePoolsName) {
    PKTEST_EXPECT_REPORT(
        {
            pk_pool_config c = make_config(48, 0, PK_POOL_DEBUG);
            c.name = "users";
            pk_pool *p = pk_pool_create(&c);
            pk_free(pk_pool_alloc(p));
        },
        "what=foreign pointer pool=users.*\n.*an object of pool 'users', which pk_alloc did not make");
}

/* A default pool's object in its thread's current slab: the inline free
 * would take it, so pk_free must ask whether the pool is a class's first,
 * and must not remember that pool's slot for the next frees. */
TEST(AllocMisuseDeathTest, AnObjectOfADefaultUsersPoolIsReportedAfterAClassFree) {
    PKTEST_EXPECT_REPORT(
        {
            pk_free(pk_alloc(48));
            pk_pool_config c = make_config(48, 0, 0);
            c.name = "users";
            pk_pool *p = pk_pool_create(&c);
            void *keep = pk_pool_alloc(p);
            pk_free(pk_pool_alloc(p));
            (void)keep;
        },
        "what=foreign pointer pool=users.*\n.*an object of pool 'users', which pk_alloc did not make");
}

/* free(a); free(a) of a block of an older slab, after the program freed
 * hundreds of that slab's blocks: the first free lists it (OWN_FREES, the
 * head of the class's list), the drains sent the others home, so its slab
 * has a free list of its own; the second free, past pk_free's short path,
 * must see the list's head before it pushes onto that slab's list, or the
 * block is handed out twice. */
TEST(AllocMisuseDeathTest, AnOlderSlabsBlockFreedTwiceInARowIsReported) {
    PKTEST_EXPECT_REPORT(
        {
            std::vector<void *> blocks(5000);
            for (void *&b : blocks) b = pk_alloc(64);
            for (size_t i = 1; i < 400; i++) pk_free(blocks[i]);
            pk_free(blocks[500]);
            pk_free(blocks[500]);
        },
        "what=double free pool=pk_alloc 64 ptr=");
}

/* A teardown in random order over four slabs of a class: after the first
 * drain met runs of about one block, pk_free sends the blocks of other
 * slabs straight home (OWN_DIRECT, policy.h); then `what` on a live block
 * of an older slab. */
void free_random_then(void (*what)(char *)) {
    std::vector<void *> blocks(5000);
    for (void *&b : blocks) b = pk_alloc(64);
    std::vector<void *> some(blocks.begin(), blocks.begin() + 4000);
    std::shuffle(some.begin(), some.end(), std::mt19937(7));
    for (size_t i = 0; i < 1000; i++)
        if (some[i] != blocks[2000]) pk_free(some[i]);
    what(static_cast<char *>(blocks[2000]));
}

/* The block went onto its slab's list, as its head: freed again, it is
 * that list's head given again. */
TEST(AllocMisuseDeathTest, ABlockFreedTwiceInARowInARandomTeardownIsReported) {
    PKTEST_EXPECT_REPORT(free_random_then([](char *b) {
                             pk_free(b);
                             pk_free(b);
                         }),
                         "what=double free pool=pk_alloc 64 ptr=");
}

/* The owned index vouches for the slab, not the slot: checked on the way
 * home. */
TEST(AllocMisuseDeathTest, AnInteriorPointerInARandomTeardownIsReported) {
    PKTEST_EXPECT_REPORT(free_random_then([](char *b) {
                             char *volatile inside = b + 8;
                             pk_free(inside);
                         }),
                         "what=interior pointer pool=pk_alloc 64 ptr=");
}

/* And the blocks so sent home are handed out again, each once. */
TEST(AllocMisuse, ARandomTeardownLeavesEveryBlockFreeOnce) {
    std::vector<void *> blocks(5000);
    for (void *&b : blocks) b = pk_alloc(64);
    std::vector<void *> order(blocks);
    std::shuffle(order.begin(), order.end(), std::mt19937(11));
    for (void *b : order) pk_free(b);
    std::set<void *> again;
    for (size_t i = 0; i < blocks.size(); i++) EXPECT_TRUE(again.insert(pk_alloc(64)).second) << i;
    for (void *b : again) pk_free(b);
}

/* Four blocks of a class of one block a slab, whose list takes one block
 * of another slab before its drain (OWN_FREES_BYTES): the second of two
 * such frees, of b[1] and then of the block at offset `at` into b[0],
 * makes the drain due. */
void drain_at_second_free(size_t at) {
    void *b[4];
    for (void *&x : b) x = pk_alloc(60000);
    char *volatile second = static_cast<char *>(b[0]) + at;
    pk_free(b[1]);
    pk_free(second);
    if (at == 0) pk_free(second);
}

/* The same when the first free is the one that makes the list's drain
 * due: the block it freed must stay the list's head, where sent home it
 * would be pushed again unseen. */
TEST(AllocMisuseDeathTest, ABlockWhoseFreeDrainedTheListFreedAgainIsReported) {
    PKTEST_EXPECT_REPORT(drain_at_second_free(0), "what=double free pool=pk_alloc 65536 ptr=");
}

/* The block that stays the list's head through the drain is checked as the
 * drain checks the others: an interior pointer, which pk_free pushes on
 * its slab's ownership alone, is reported there, not handed out. */
TEST(AllocMisuseDeathTest, AnInteriorPointerWhoseFreeDrainedTheListIsReported) {
    PKTEST_EXPECT_REPORT(drain_at_second_free(64), "what=interior pointer pool=pk_alloc 65536 ptr=");
}

/* The double free the default mode promises to report, after any history:
 * a random run of pk_alloc and frees (one size most of the time, any
 * class or a mapped block otherwise; frees of random live blocks, the
 * last one a third of the time, by pk_free or pk_free_sized), then two
 * frees of a random live block, each by either call. Each history runs in
 * a forked child whose handler exits with 7 on
 * the report: "double free", or for a mapped block, whose mapping the
 * first free gave back, "foreign pointer"; one that ends otherwise names
 * its seed. */
bool twice_mapped;
void exit_7_on_the_report() {
    pk_set_error_handler(
        [](const pk_error *e, void *) {
            bool said = e->what && (std::strcmp(e->what, "double free") == 0 ||
                                    (twice_mapped && std::strcmp(e->what, "foreign pointer") == 0));
            _exit(e->severity == PK_FATAL && said ? 7 : 8);
        },
        nullptr);
}

int free_twice_after(uint64_t seed, size_t ops) {
    exit_7_on_the_report();
    static const size_t sizes[] = {8, 16, 48, 64, 100, 256, 1000, 4096, 10000, 60000, 300000};
    constexpr size_t kinds = sizeof sizes / sizeof sizes[0];
    Rng rng(seed);
    size_t size = sizes[rng.below(kinds)], n = 0;
    static void *live[20000];
    static size_t len[20000];
    auto release = [&](size_t k) {
        if (rng.chance(50)) pk_free(live[k]);
        else pk_free_sized(live[k], len[k]);
    };
    for (size_t i = 0, steps = ops / 2 + rng.below(ops); i < steps; i++) {
        if ((n == 0 || rng.chance(55)) && n < 20000) {
            len[n] = rng.chance(25) ? sizes[rng.below(kinds)] : size;
            live[n] = pk_alloc(len[n]);
            n++;
        } else {
            size_t k = rng.chance(33) ? n - 1 : rng.below(n);
            release(k);
            live[k] = live[--n];
            len[k] = len[n];
        }
    }
    if (n == 0) len[n] = size, live[n++] = pk_alloc(size);
    size_t k = rng.below(n);
    twice_mapped = pk_usable_size(live[k]) > PK_ALLOC_CLASS_MAX;
    release(k);
    release(k);
    return 0;
}

/* Histories 1 to n of `history` (named `what`), each in a forked child
 * that must exit with 7 (exit_7_on_the_report). */
void expect_each_reported(const char *what, uint64_t n, const std::function<int(uint64_t)> &history) {
    for (uint64_t seed = 1; seed <= n; seed++) {
        int st = fork_and_wait([&] { return history(seed); }, child_time_limit());
        ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 7)
            << "history " << seed << " (" << what << "(" << seed << ")): "
            << (WIFEXITED(st) ? WEXITSTATUS(st) == 0 ? "the second free was not reported" : "another report"
                              : "a signal with no report");
    }
}

TEST(AllocMisuse, ABlockFreedTwiceInARowIsReportedAfterAnyHistory) {
    const size_t histories = slow_tool() ? 20 : 300, ops = slow_tool() ? 2000 : 20000;
    expect_each_reported("free_twice_after", histories, [&](uint64_t seed) { return free_twice_after(seed, ops); });
}

/* The same after a teardown in random order (OWN_DIRECT, policy.h: the
 * frees of other slabs' blocks go straight home once a drain found that
 * none was taken back): a few hundred to 20,000 blocks of one size, some
 * of another class, freed in random order by either call down to a random
 * share (a few allocations between), then two frees of a random block left,
 * each by either call. */
int free_twice_after_teardown(uint64_t seed) {
    exit_7_on_the_report();
    static const size_t sizes[] = {8, 16, 48, 64, 100, 256, 1000, 4096, 10000};
    constexpr size_t kinds = sizeof sizes / sizeof sizes[0];
    Rng rng(seed);
    size_t size = sizes[rng.below(kinds)];
    std::vector<void *> live;
    std::vector<size_t> len;
    for (size_t i = 0, n = 500 + rng.below(20000); i < n; i++) {
        len.push_back(rng.chance(25) ? sizes[rng.below(kinds)] : size);
        live.push_back(pk_alloc(len.back()));
    }
    for (size_t i = live.size(); i > 1; i--) {
        size_t j = rng.below(i);
        std::swap(live[i - 1], live[j]);
        std::swap(len[i - 1], len[j]);
    }
    auto release = [&](size_t k) {
        if (rng.chance(50)) pk_free(live[k]);
        else pk_free_sized(live[k], len[k]);
    };
    for (size_t keep = 1 + rng.below(live.size() / 3 + 1); live.size() > keep;) {
        release(live.size() - 1);
        live.pop_back();
        len.pop_back();
        if (rng.chance(3)) {
            live.insert(live.begin(), pk_alloc(size));
            len.insert(len.begin(), size);
        }
    }
    size_t k = rng.below(live.size());
    twice_mapped = pk_usable_size(live[k]) > PK_ALLOC_CLASS_MAX;
    release(k);
    release(k);
    return 0;
}

TEST(AllocMisuse, ABlockFreedTwiceInARowIsReportedAfterARandomTeardown) {
    expect_each_reported("free_twice_after_teardown", slow_tool() ? 20 : 200, free_twice_after_teardown);
}

/* A realloc that moves a block frees it; the stale pointer given to
 * pk_realloc again, for a size its class holds, would come back as it is,
 * live and on the class's list at once: reported, as its free would be. */
TEST(AllocMisuseDeathTest, ReallocOfTheBlockAReallocFreedIsReported) {
    PKTEST_EXPECT_REPORT(
        {
            void *a = pk_alloc(100);
            void *b = pk_realloc(a, 400);
            void *c = pk_realloc(a, 100);
            pk_free(b);
            pk_free(c);
        },
        "what=double free pool=pk_alloc 112 ptr=.*\n.*pk_realloc\\(0x[0-9a-f]+, 100\\): the block \\(pool 'pk_alloc "
        "112'\\) was freed already");
}

/* pk_collect(1) gives the thread's lists and slabs back: the block freed
 * last goes home at the head of its slab's list, which remembers it
 * (slab.left_head), and freed again it is reported there. */
TEST(AllocMisuseDeathTest, ABlockFreedAgainAfterACollectIsReported) {
    PKTEST_EXPECT_REPORT(
        {
            std::vector<void *> blocks(100);
            for (void *&b : blocks) b = pk_alloc(48);
            pk_free(blocks[40]);
            pk_collect(1);
            pk_free(blocks[40]);
        },
        "what=double free pool=pk_alloc 48 ptr=");
}

TEST(AllocMisuseDeathTest, AMappedBlockFreedTwiceIsReported) {
    PKTEST_EXPECT_REPORT(
        {
            void *p = pk_alloc(PK_ALLOC_CLASS_MAX * 2);
            pk_free(p);
            pk_free(p);
        },
        "what=foreign pointer.*\n.*or one already freed");
}

TEST(AllocMisuseDeathTest, AWrongSizeIsReportedNamingTheClass) {
    PKTEST_EXPECT_REPORT(pk_free_sized(pk_alloc(100), 20),
                         "what=wrong size pool=pk_alloc 112.*\n.*pk_free_sized\\(0x[0-9a-f]+, 20\\): the object "
                         "is of class 'pk_alloc 112', not of the class of 20 bytes \\(32\\)");
}

TEST(AllocMisuseDeathTest, ReallocAndUsableSizeOfAForeignPointerAreReported) {
    static char buf[64];
    PKTEST_EXPECT_REPORT(pk_realloc(buf + 16, 10), "what=foreign pointer.*\n.*pk_realloc\\(");
    PKTEST_EXPECT_REPORT(pk_usable_size(buf + 16), "what=foreign pointer.*\n.*pk_usable_size\\(");
}

/* Debug and hardened modes are the class pools' own: a process whose
 * pools were made with POOLKIT_DEBUG=1 or POOLKIT_HARDENED=1 set. The
 * child's handler exits with the verdict: a fatal report must not return. */
void exit_on_double_free(const pk_error *e, void *) {
    std::fprintf(stderr, "%s: %s\n", e->what, e->message);
    /* hardened, a block of 64 bytes lies in a larger class (its check word) */
    _exit(std::strcmp(e->what, "double free") == 0 && e->pool && std::strncmp(e->pool, "pk_alloc ", 9) == 0
              ? CHILD_PASS
              : CHILD_FAIL);
}

int double_free_in_child(bool immediate) {
    pk_set_error_handler(exit_on_double_free, nullptr);
    void *p = pk_alloc(64);
    void *q = pk_alloc(64);
    pk_free(p);
    if (!immediate) pk_free(q);
    pk_free(p);
    std::fprintf(stderr, "a double free went unreported\n");
    return CHILD_FAIL;
}

PKTEST_CHILD(DoubleFreeUnderDebug) { return double_free_in_child(false); }
PKTEST_CHILD(DoubleFreeUnderHardened) { return double_free_in_child(true); }

TEST(AllocModes, DebugModeReportsADoubleFree) {
    EXPECT_CHILD_PASSES("DoubleFreeUnderDebug", {{"POOLKIT_DEBUG", "1"}});
}

TEST(AllocModes, HardenedModeReportsTheHeadFreedAgain) {
    EXPECT_CHILD_PASSES("DoubleFreeUnderHardened", {{"POOLKIT_HARDENED", "1"}});
}

/* ---- fork ---- */

PKTEST_CHILD(ForkChildAllocatesWhileParentThreadsRun) {
    std::atomic<bool> stop{false};
    std::vector<std::thread> t;
    for (int k = 0; k < 3; k++)
        t.emplace_back([&] {
            while (!stop.load()) pk_free(pk_realloc(pk_alloc(100), 3000));
        });
    for (int i = 0; i < 20; i++) {
        pid_t pid = fork();
        CHILD_CHECK(pid >= 0, "fork failed");
        if (pid == 0) {
            std::vector<void *> v;
            for (int j = 0; j < 10000; j++) v.push_back(pk_alloc(1 + j % 5000));
            for (void *p : v) pk_free(p);
            pk_free(pk_alloc(PK_ALLOC_CLASS_MAX * 4));
            _exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        CHILD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork child %d failed (status %d)", i, status);
    }
    stop = true;
    for (auto &th : t) th.join();
    return 0;
}

TEST(AllocFork, AChildAllocatesWhileTheParentsThreadsRun) { EXPECT_CHILD_PASSES("ForkChildAllocatesWhileParentThreadsRun"); }

TEST(AllocFork, AChildReusesTheKeptBlocksItInheritsAndTheParentKeepsItsOwn) {
    KeptBlocks kept;
    char *p = written_block(8 * MiB, 1);
    ASSERT_NE(p, nullptr);
    pk_free(p);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        char *c = static_cast<char *>(pk_alloc(5 * MiB));
        bool ok = c == p && resident_pages(c, 5 * MiB) == 5 * MiB / page_size();
        if (c) std::memset(c, 2, 5 * MiB);
        pk_free(c);
        pk_free(pk_alloc(12 * MiB));
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child did not reuse the block kept at the fork";
    char *q = static_cast<char *>(pk_alloc(5 * MiB));
    ASSERT_EQ(q, p);
    EXPECT_EQ(q[0], 1) << "the child's writes reached the parent's kept block";
    EXPECT_EQ(q[5 * MiB - 1], 1);
    pk_free(q);
}

} // namespace
