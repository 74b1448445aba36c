// Arena tests: one behaviour of <poolkit/arena.h> per test.
#include <poolkit/poolkit.h>
#include <poolkit/fault.h>

#include "support.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csetjmp>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

namespace {

constexpr size_t kDefaultAlign = alignof(std::max_align_t);

bool is_aligned(const void *p, size_t align) {
    return (reinterpret_cast<uintptr_t>(p) & (align - 1)) == 0;
}

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// Whether the page holding p is mapped: mincore fails with ENOMEM otherwise.
bool is_mapped(const void *p) {
    uintptr_t base = reinterpret_cast<uintptr_t>(p) & ~(uintptr_t)(page_size() - 1);
    unsigned char v;
    return mincore(reinterpret_cast<void *>(base), page_size(), &v) == 0;
}

unsigned char *alloc_bytes(pk_arena *a, size_t size, size_t align = 0) {
    return static_cast<unsigned char *>(pk_arena_alloc(a, size, align));
}

bool all_bytes_are(const unsigned char *p, size_t n, unsigned char v) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != v) return false;
    return true;
}

// A fault handler that records the error and jumps back out of poolkit, so
// that a fatal report can be observed without aborting the test process.
struct Report {
    int count;
    std::string what, message;
    const void *ptr;
} report;
std::jmp_buf escape;

void record_and_escape(const pk_error *err, void *) {
    report.count++;
    report.what = err->what;
    report.message = err->message;
    report.ptr = err->ptr;
    std::longjmp(escape, 1);
}

// Rewinds and says whether poolkit reported the mark.
bool rewind_is_reported(pk_arena *a, pk_arena_mark m) {
    report = Report{};
    pk_set_error_handler(record_and_escape, nullptr);
    if (setjmp(escape) == 0) {
        pk_arena_rewind(a, m);
        pk_set_error_handler(nullptr, nullptr);
        return false;
    }
    pk_set_error_handler(nullptr, nullptr);
    return true;
}

std::string hex(const void *p) {
    char buf[32];
    snprintf(buf, sizeof buf, "%p", p);
    return buf;
}

}  // namespace

TEST(Arena, CreateWithDefaultAndOddChunkSizes) {
    for (size_t chunk : {size_t(0), size_t(1), size_t(4096), size_t(5000), size_t(1) << 20}) {
        pk_arena *a = pk_arena_create(chunk);
        ASSERT_NE(a, nullptr) << chunk;
        EXPECT_NE(pk_arena_alloc(a, 100, 0), nullptr);
        pk_arena_destroy(a);
    }
}

TEST(Arena, EveryPowerOfTwoAlignmentUpTo4096) {
    pk_arena *a = pk_arena_create(4096);  // small chunks: alignment across chunk boundaries too
    ASSERT_NE(a, nullptr);
    for (int round = 0; round < 3; round++) {
        for (size_t align = 1; align <= 4096; align *= 2) {
            for (size_t size : {size_t(1), size_t(3), size_t(17), size_t(100), size_t(3000)}) {
                unsigned char *p = alloc_bytes(a, size, align);
                ASSERT_NE(p, nullptr) << "align " << align << " size " << size;
                EXPECT_TRUE(is_aligned(p, align)) << "align " << align << " size " << size;
                memset(p, 0xab, size);
            }
        }
    }
    pk_arena_destroy(a);
}

TEST(Arena, ZeroAlignmentMeansMaxAlign) {
    pk_arena *a = pk_arena_create(0);
    for (size_t size = 1; size < 200; size += 7) {
        void *p = pk_arena_alloc(a, size, 0);
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(is_aligned(p, kDefaultAlign)) << size;
    }
    pk_arena_destroy(a);
}

TEST(Arena, SizeZeroReturnsUniquePointers) {
    pk_arena *a = pk_arena_create(4096);
    std::set<void *> seen;
    for (int i = 0; i < 10000; i++) {  // crosses many chunks
        void *p = pk_arena_alloc(a, 0, i % 2 ? 1 : 0);
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(seen.insert(p).second) << "pointer handed out twice: " << p;
        void *q = pk_arena_alloc(a, 1, 1);
        ASSERT_NE(q, nullptr);
        EXPECT_TRUE(seen.insert(q).second) << "pointer handed out twice: " << q;
    }
    pk_arena_destroy(a);
}

TEST(Arena, LargeAllocationGetsAChunkOfItsOwn) {
    pk_arena *a = pk_arena_create(0);
    unsigned char *small = alloc_bytes(a, 64);
    memset(small, 1, 64);

    unsigned long before = pk_fault_requests();
    size_t big_size = (size_t(1) << 20) + 123;
    unsigned char *big = alloc_bytes(a, big_size);
    ASSERT_NE(big, nullptr);
    EXPECT_EQ(pk_fault_requests() - before, 1u) << "a large request is one page request";
    memset(big, 2, big_size);

    unsigned char *huge_aligned = alloc_bytes(a, 200000, size_t(1) << 16);
    ASSERT_NE(huge_aligned, nullptr);
    EXPECT_TRUE(is_aligned(huge_aligned, size_t(1) << 16));
    memset(huge_aligned, 3, 200000);

    unsigned char *after = alloc_bytes(a, 64);  // small allocations go on as before
    ASSERT_NE(after, nullptr);
    memset(after, 4, 64);

    EXPECT_TRUE(all_bytes_are(small, 64, 1));
    EXPECT_TRUE(all_bytes_are(big, big_size, 2));
    EXPECT_TRUE(all_bytes_are(huge_aligned, 200000, 3));
    EXPECT_TRUE(all_bytes_are(after, 64, 4));
    pk_arena_destroy(a);
}

TEST(Arena, ImpossibleSizeOrAlignmentFailsWithENOMEM) {
    pk_arena *a = pk_arena_create(0);
    struct { size_t size, align; } cases[] = {
        {SIZE_MAX, 0}, {SIZE_MAX - 4096, 1}, {SIZE_MAX / 2, 16}, {size_t(1) << 62, 4096},
        {1, size_t(1) << 63}, {SIZE_MAX / 2, size_t(1) << 62},
    };
    for (auto c : cases) {
        errno = 0;
        EXPECT_EQ(pk_arena_alloc(a, c.size, c.align), nullptr) << c.size << " " << c.align;
        EXPECT_EQ(errno, ENOMEM) << c.size << " " << c.align;
    }
    EXPECT_NE(pk_arena_alloc(a, 100, 0), nullptr);
    errno = 0;
    EXPECT_EQ(pk_arena_create(SIZE_MAX), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    pk_arena_destroy(a);
}

TEST(Arena, BadAlignmentFailsWithEINVAL) {
    pk_arena *a = pk_arena_create(0);
    for (size_t align : {size_t(3), size_t(6), size_t(12), size_t(24), size_t(4097), SIZE_MAX}) {
        errno = 0;
        EXPECT_EQ(pk_arena_alloc(a, 8, align), nullptr) << align;
        EXPECT_EQ(errno, EINVAL) << align;
    }
    EXPECT_NE(pk_arena_alloc(a, 8, 8), nullptr);
    pk_arena_destroy(a);
}

TEST(Arena, StrdupCopiesTheStringAndItsNul) {
    pk_arena *a = pk_arena_create(0);
    const char *src = "poolkit arenas";
    char *s = pk_arena_strdup(a, src);
    ASSERT_NE(s, nullptr);
    EXPECT_NE(s, src);
    EXPECT_STREQ(s, src);
    char *empty = pk_arena_strdup(a, "");
    ASSERT_NE(empty, nullptr);
    EXPECT_EQ(empty[0], '\0');
    EXPECT_NE(empty, s);
    std::string long_one(100000, 'x');  // longer than a chunk
    char *l = pk_arena_strdup(a, long_one.c_str());
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(long_one, l);
    EXPECT_STREQ(s, src);
    pk_arena_destroy(a);
}

TEST(Arena, RewindRestoresThePositionAndMemoryIsReusable) {
    pk_arena *a = pk_arena_create(0);
    unsigned char *kept = alloc_bytes(a, 32);
    memset(kept, 7, 32);
    pk_arena_mark m = pk_arena_save(a);
    unsigned char *first = alloc_bytes(a, 100);
    memset(first, 8, 100);
    alloc_bytes(a, 1000);
    pk_arena_rewind(a, m);
    unsigned char *again = alloc_bytes(a, 100);
    EXPECT_EQ(again, first);
    memset(again, 9, 100);
    EXPECT_TRUE(all_bytes_are(kept, 32, 7));
    pk_arena_mark now = pk_arena_save(a);
    pk_arena_rewind(a, m);  // a mark can be used again
    pk_arena_mark back = pk_arena_save(a);
    EXPECT_EQ(back.chunk, m.chunk);
    EXPECT_EQ(back.used, m.used);
    EXPECT_NE(now.used, m.used);
    pk_arena_destroy(a);
}

TEST(Arena, MarksNest) {
    pk_arena *a = pk_arena_create(0);  // one chunk holds it all: positions are exact
    std::vector<pk_arena_mark> marks;
    std::vector<unsigned char *> next;  // what the allocation right after each mark returned
    for (int depth = 0; depth < 20; depth++) {
        marks.push_back(pk_arena_save(a));
        next.push_back(alloc_bytes(a, 300));
        memset(next.back(), depth, 300);
        alloc_bytes(a, 500);
    }
    for (int depth = 19; depth >= 0; depth--) {
        pk_arena_rewind(a, marks[depth]);
        for (int outer = 0; outer < depth; outer++)
            EXPECT_TRUE(all_bytes_are(next[outer], 300, (unsigned char)outer)) << outer;
        EXPECT_EQ(alloc_bytes(a, 300), next[depth]) << depth;
        pk_arena_rewind(a, marks[depth]);
    }
    pk_arena_destroy(a);
}

/* With purge delay 0 (nothing kept for later) a rewind gives the newer
 * chunks back at once, but one. */
TEST(Arena, RewindAcrossChunkBoundariesFreesTheNewerChunks) {
    long old = pk_set_purge_delay(0);
    pk_arena *a = pk_arena_create(4096);  // one page per chunk: a page is a chunk
    unsigned char *before = alloc_bytes(a, 64);
    memset(before, 5, 64);
    pk_arena_mark m = pk_arena_save(a);
    unsigned char *first = alloc_bytes(a, 100);
    std::set<uintptr_t> pages;
    for (int i = 0; i < 400; i++) {
        unsigned char *p = alloc_bytes(a, 100);
        ASSERT_NE(p, nullptr);
        pages.insert(reinterpret_cast<uintptr_t>(p) & ~(uintptr_t)(page_size() - 1));
    }
    pages.erase(reinterpret_cast<uintptr_t>(first) & ~(uintptr_t)(page_size() - 1));
    ASSERT_GE(pages.size(), 8u);
    pk_arena_rewind(a, m);
    int still_mapped = 0;
    for (uintptr_t page : pages) still_mapped += is_mapped(reinterpret_cast<void *>(page));
    EXPECT_LE(still_mapped, 1) << "rewind keeps at most one spare chunk";
    EXPECT_EQ(alloc_bytes(a, 100), first);
    EXPECT_TRUE(all_bytes_are(before, 64, 5));
    pk_arena_destroy(a);
    pk_set_purge_delay(old);
}

/* An arena reset once per phase: the next phase's chunks are the last
 * one's, with no page request, for as long as the purge delay; then they go
 * back to the system on the next reset. */
TEST(Arena, PhasesAfterAResetReuseTheChunksUntilThePurgeDelay) {
    long old = pk_set_purge_delay(60000);
    pk_arena *a = pk_arena_create(4096);
    auto phase = [&] {
        std::vector<unsigned char *> got;
        for (int i = 0; i < 200; i++) got.push_back(alloc_bytes(a, 1000));
        return got;
    };
    std::vector<unsigned char *> first = phase();
    pk_arena_reset(a);
    unsigned long before = pk_fault_requests();
    for (int round = 0; round < 5; round++) {
        phase();
        pk_arena_reset(a);
    }
    EXPECT_EQ(pk_fault_requests(), before) << "a phase after a reset asked the system for memory";
    pk_arena_stats st;
    pk_arena_stats_get(a, &st);
    EXPECT_GE(st.chunks, 40u) << "the spares are counted";

    pk_set_purge_delay(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pk_arena_reset(a); /* the spares idle past the delay go now */
    pk_arena_stats_get(a, &st);
    EXPECT_EQ(st.chunks, 1u);
    size_t gone = 0;
    for (unsigned char *p : first) gone += !is_mapped(p);
    EXPECT_GT(gone, first.size() / 2) << "the spares' pages are still mapped";
    pk_arena_destroy(a);
    pk_set_purge_delay(old);
}

TEST(Arena, RewindLoopAcrossABoundaryReusesASpareChunk) {
    pk_arena *a = pk_arena_create(4096);
    alloc_bytes(a, 2000);  // what is left of the first chunk cannot hold 3000 bytes
    unsigned long before = pk_fault_requests();
    for (int i = 0; i < 1000; i++) {
        pk_arena_mark m = pk_arena_save(a);
        unsigned char *p = alloc_bytes(a, 3000);
        ASSERT_NE(p, nullptr);
        unsigned char *chunk = static_cast<unsigned char *>(m.chunk);
        ASSERT_TRUE(p < chunk || p >= chunk + 4096) << "did not cross a chunk boundary";
        memset(p, i, 3000);
        pk_arena_rewind(a, m);
    }
    EXPECT_LE(pk_fault_requests() - before, 1u);
    pk_arena_destroy(a);
}

TEST(Arena, ResetKeepsOneChunk) {
    pk_arena *a = pk_arena_create(0);
    unsigned long before = pk_fault_requests();
    unsigned char *first = alloc_bytes(a, 256);
    size_t fit = 1;  // how many 256-byte blocks the kept chunk holds
    while (alloc_bytes(a, 256) && pk_fault_requests() == before) fit++;
    for (int i = 0; i < 1000; i++) alloc_bytes(a, 256);  // several more chunks
    unsigned char *big = alloc_bytes(a, size_t(1) << 20);
    ASSERT_NE(big, nullptr);

    pk_arena_reset(a);
    EXPECT_TRUE(is_mapped(big)) << "reset gave a large chunk back to the system, to be faulted in anew";
    unsigned long after_reset = pk_fault_requests();
    EXPECT_EQ(alloc_bytes(a, 256), first);
    for (size_t i = 1; i < fit; i++) ASSERT_NE(alloc_bytes(a, 256), nullptr);
    EXPECT_EQ(pk_fault_requests(), after_reset) << "a chunk's worth needs no page request";
    EXPECT_EQ(alloc_bytes(a, size_t(1) << 20), big) << "the next large request did not take the kept chunk";
    EXPECT_EQ(pk_fault_requests(), after_reset) << "a kept large chunk needs no page request";
    pk_arena_destroy(a);
}

TEST(Arena, ResetWithDelayZeroGivesLargeChunksBackAtOnce) {
    pktest::PurgeDelay none(0);
    pk_arena *a = pk_arena_create(0);
    unsigned char *big = alloc_bytes(a, size_t(1) << 20);
    ASSERT_NE(big, nullptr);
    pk_arena_reset(a);
    EXPECT_FALSE(is_mapped(big)) << "with delay 0, reset kept a large chunk";
    pk_arena_destroy(a);
}

TEST(Arena, DestroyGivesEveryChunkBack) {
    pk_arena_destroy(nullptr);  // no-op
    pk_arena *a = pk_arena_create(4096);
    std::vector<void *> probes = {pk_arena_save(a).chunk, pk_arena_alloc(a, 10, 0), pk_arena_alloc(a, 100000, 0)};
    for (int i = 0; i < 10; i++) probes.push_back(pk_arena_alloc(a, 1000, 0));
    pk_arena_mark m = pk_arena_save(a);
    std::vector<void *> rewound;
    for (int i = 0; i < 50; i++) rewound.push_back(pk_arena_alloc(a, 1000, 0));
    pk_arena_rewind(a, m);  // leaves a spare chunk behind
    int spares = 0;
    for (void *p : rewound)
        if (is_mapped(p)) probes.push_back(p), spares++;
    EXPECT_GE(spares, 1);
    for (void *p : probes) ASSERT_TRUE(is_mapped(p)) << p;
    pk_arena_destroy(a);
    /* Destroy keeps the chunks for the next arena for the purge delay;
     * pk_pool_release_cache gives retained memory back now. */
    pk_pool_release_cache();
    for (void *p : probes) EXPECT_FALSE(is_mapped(p)) << p;
}

TEST(Arena, AnArenaPerTaskReusesTheLastOnesChunks) {
    /* Create, allocate a few thousand small blocks, destroy: the next
     * arena's chunks come from the last one's, with no page request. */
    auto task = [] {
        pk_arena *a = pk_arena_create(0);
        ASSERT_NE(a, nullptr);
        for (int i = 0; i < 4096; i++) ASSERT_NE(pk_arena_alloc(a, 32, 0), nullptr);
        pk_arena_destroy(a);
    };
    long old = pk_set_purge_delay(60000);
    task();
    unsigned long before = pk_fault_requests();
    for (int i = 0; i < 100; i++) task();
    EXPECT_EQ(pk_fault_requests(), before) << "an arena per task asked the system for pages";
    pk_set_purge_delay(0);
    pk_pool_release_cache();
    pk_arena *a = pk_arena_create(0);
    void *home = pk_arena_save(a).chunk;
    pk_arena_destroy(a);
    EXPECT_FALSE(is_mapped(home)) << "with delay 0 destroy keeps nothing";
    pk_set_purge_delay(old);
}

TEST(Arena, AnArenasRecordLiesApartFromItsChunks) {
    /* Each allocation stores to a chunk and to the arena's record, and the
     * next loads the record back: with the record near the chunks (at the
     * end of the home chunk, once), an Intel Xeon made that load wait on
     * the stores for stretches of a run (src/arena/arena.c). The record is
     * a pool's object: not in a chunk, nor in the 16 MiB of address around
     * one (the distance docs/results.md measured). */
    pk_arena *a = pk_arena_create(0);
    ASSERT_NE(a, nullptr);
    std::vector<uintptr_t> chunks = {reinterpret_cast<uintptr_t>(pk_arena_save(a).chunk)};
    for (int i = 0; i < 5000; i++) {
        ASSERT_NE(pk_arena_alloc(a, 32, 0), nullptr);
        uintptr_t c = reinterpret_cast<uintptr_t>(pk_arena_save(a).chunk);
        if (c != chunks.back()) chunks.push_back(c);
    }
    EXPECT_GE(chunks.size(), 2u);
    uintptr_t rec = reinterpret_cast<uintptr_t>(a);
    for (uintptr_t c : chunks)
        EXPECT_GE(rec > c ? rec - c : c - rec, uintptr_t{16} << 20) << "record " << a << ", chunk " << std::hex << c;
    pk_arena_destroy(a);
    pk_pool_release_cache(); /* nothing kept for the tests after it (out of memory's) */
}

TEST(Arena, AThreadThatExitsHandsItsKeptRecordBack) {
    /* A thread keeps the record of the arena it destroyed last for its
     * next one; at its exit the record goes to the others, so threads that
     * come and go, an arena each, reuse one record rather than leave one
     * behind apiece. */
    pk_arena *mine = pk_arena_create(0); /* takes whatever this thread kept */
    ASSERT_NE(mine, nullptr);
    pk_arena *theirs = nullptr;
    std::thread([&] {
        theirs = pk_arena_create(0);
        pk_arena_destroy(theirs);
    }).join();
    pk_arena *next = pk_arena_create(0);
    EXPECT_EQ(next, theirs) << "the exited thread's record was not handed back";
    pk_arena_destroy(next);
    pk_arena_destroy(mine);
    pk_pool_release_cache(); /* nothing kept for the tests after it (out of memory's) */
}

TEST(Arena, OutOfMemoryReturnsNullAndTheArenaRecovers) {
    pk_fault_fail_after(0);
    errno = 0;
    EXPECT_EQ(pk_arena_create(0), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    pk_fault_fail_after(-1);

    pk_arena *a = pk_arena_create(4096);
    ASSERT_NE(a, nullptr);
    std::vector<unsigned char *> blocks;
    pk_fault_fail_after(0);
    unsigned char *p;
    while ((p = alloc_bytes(a, 64)) != nullptr) {  // fills the first chunk, then fails
        memset(p, (int)blocks.size(), 64);
        blocks.push_back(p);
    }
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_GT(blocks.size(), 10u);
    pk_arena_mark at_failure = pk_arena_save(a);
    errno = 0;
    EXPECT_EQ(pk_arena_alloc(a, 100000, 0), nullptr);  // large: a chunk of its own
    EXPECT_EQ(errno, ENOMEM);
    errno = 0;
    EXPECT_EQ(pk_arena_alloc(a, 1, 8192), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    pk_arena_mark still = pk_arena_save(a);
    EXPECT_EQ(still.chunk, at_failure.chunk);
    EXPECT_EQ(still.used, at_failure.used);
    pk_fault_fail_after(-1);

    unsigned char *more = alloc_bytes(a, 64);
    ASSERT_NE(more, nullptr);
    memset(more, 0xee, 64);
    unsigned char *large = alloc_bytes(a, 100000);
    ASSERT_NE(large, nullptr);
    memset(large, 0xdd, 100000);
    pk_arena_rewind(a, at_failure);
    for (size_t i = 0; i < blocks.size(); i++)
        EXPECT_TRUE(all_bytes_are(blocks[i], 64, (unsigned char)i)) << i;
    pk_arena_destroy(a);
}

TEST(Arena, RandomSequencesMatchAModel) {
    struct Block { unsigned char *p; size_t size; unsigned char fill; };
    struct Saved { pk_arena_mark mark; size_t live; };
    std::mt19937 rng(20240601);
    auto below = [&](size_t n) { return static_cast<size_t>(rng() % n); };

    pk_arena *a = pk_arena_create(8192);
    std::vector<Block> live;
    std::vector<Saved> marks;
    auto intact = [&](const Block &b) { return all_bytes_are(b.p, b.size, b.fill); };
    auto check_all = [&](int step) {
        for (const Block &b : live) ASSERT_TRUE(intact(b)) << "step " << step;
    };

    for (int step = 0; step < 20000; step++) {
        size_t op = below(100);
        if (op < 60) {
            size_t kind = below(100), size;
            if (kind < 5) size = 0;
            else if (kind < 65) size = 1 + below(64);
            else if (kind < 90) size = 65 + below(2000);
            else size = 2065 + below(20000);  // up to several chunks
            size_t align = below(4) ? size_t(1) << below(13) : 0;
            unsigned char *p = alloc_bytes(a, size, align);
            ASSERT_NE(p, nullptr) << "step " << step;
            ASSERT_TRUE(is_aligned(p, align ? align : kDefaultAlign)) << "step " << step;
            // A size-0 block is a point: it must not fall inside or on another block.
            uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + (size ? size : 1);
            for (const Block &b : live) {
                uintptr_t blo = reinterpret_cast<uintptr_t>(b.p), bhi = blo + (b.size ? b.size : 1);
                ASSERT_TRUE(hi <= blo || bhi <= lo) << "overlap at step " << step;
            }
            unsigned char fill = static_cast<unsigned char>(below(256));
            memset(p, fill, size);
            live.push_back({p, size, fill});
        } else if (op < 75) {
            marks.push_back({pk_arena_save(a), live.size()});
        } else if (op < 90) {
            if (marks.empty()) continue;
            size_t k = below(marks.size());
            pk_arena_rewind(a, marks[k].mark);
            live.resize(marks[k].live);
            marks.resize(k + 1);  // marks after k are gone; k itself stays usable
            check_all(step);
        } else if (op < 91) {
            pk_arena_reset(a);
            live.clear();
            marks.clear();
        } else if (!live.empty()) {
            ASSERT_TRUE(intact(live[below(live.size())])) << "step " << step;
        }
        if (HasFatalFailure()) break;
    }
    check_all(-1);
    pk_arena_destroy(a);
}

TEST(Arena, MarkRewoundPastIsReported) {
    pk_arena *a = pk_arena_create(4096);
    pk_arena_mark outer = pk_arena_save(a);
    for (int i = 0; i < 20; i++) alloc_bytes(a, 1000);  // into newer chunks
    pk_arena_mark inner = pk_arena_save(a);
    ASSERT_NE(inner.chunk, outer.chunk);
    pk_arena_rewind(a, outer);

    EXPECT_TRUE(rewind_is_reported(a, inner));
    EXPECT_EQ(report.count, 1);
    EXPECT_EQ(report.what, "bad arena mark");
    EXPECT_EQ(report.ptr, inner.chunk);
    EXPECT_NE(report.message.find("bad arena mark"), std::string::npos) << report.message;
    EXPECT_NE(report.message.find(hex(a)), std::string::npos) << report.message;
    EXPECT_NE(report.message.find(hex(inner.chunk)), std::string::npos) << report.message;

    // Detection changes nothing: the arena is where the good rewind left it.
    pk_arena_mark now = pk_arena_save(a);
    EXPECT_EQ(now.chunk, outer.chunk);
    EXPECT_EQ(now.used, outer.used);
    EXPECT_NE(pk_arena_alloc(a, 10, 0), nullptr);
    pk_arena_destroy(a);
}

TEST(Arena, MarkPastThePositionInItsChunkIsReported) {
    pk_arena *a = pk_arena_create(0);
    pk_arena_mark start = pk_arena_save(a);
    alloc_bytes(a, 100);
    pk_arena_mark later = pk_arena_save(a);
    pk_arena_rewind(a, start);
    EXPECT_TRUE(rewind_is_reported(a, later));
    EXPECT_EQ(report.what, "bad arena mark");
    pk_arena_mark forged = {start.chunk, 0};  // would point into the chunk header
    EXPECT_TRUE(rewind_is_reported(a, forged));
    pk_arena_destroy(a);
}

TEST(Arena, MarkFromBeforeResetIsReported) {
    pk_arena *a = pk_arena_create(4096);
    for (int i = 0; i < 20; i++) alloc_bytes(a, 1000);
    pk_arena_mark m = pk_arena_save(a);
    pk_arena_reset(a);
    EXPECT_TRUE(rewind_is_reported(a, m));
    EXPECT_EQ(report.what, "bad arena mark");
    pk_arena_destroy(a);
}

TEST(Arena, MarkFromAnotherArenaIsReported) {
    pk_arena *a = pk_arena_create(0), *b = pk_arena_create(0);
    pk_arena_mark from_b = pk_arena_save(b);
    EXPECT_TRUE(rewind_is_reported(a, from_b));
    pk_arena_mark null_mark = {nullptr, 0};
    EXPECT_TRUE(rewind_is_reported(a, null_mark));
    pk_arena_destroy(a);
    pk_arena_destroy(b);
}

TEST(ArenaDeathTest, BadMarkAbortsWithTheDefaultHandler) {
    pk_arena *a = pk_arena_create(4096);
    pk_arena_mark outer = pk_arena_save(a);
    for (int i = 0; i < 20; i++) alloc_bytes(a, 1000);
    pk_arena_mark inner = pk_arena_save(a);
    pk_arena_rewind(a, outer);
    EXPECT_DEATH(pk_arena_rewind(a, inner), "poolkit: bad arena mark: arena " + hex(a));
    pk_arena_destroy(a);
}

/* A destroyed arena's home chunk is kept, still mapped, for the next arena
 * (the purge delay): a second destroy of the handle put it among the kept
 * mappings twice, and two later arenas got the same memory. The handle's
 * calls are reported instead. Under ASan and Valgrind the chunk goes back at
 * once (nothing is kept), so the handle's memory is gone and the call
 * faults. */
class ArenaDestroyedDeathTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (pktest::running_under_valgrind() || PKTEST_ASAN) GTEST_SKIP() << "the tool's build keeps no chunk";
        old_delay_ = pk_set_purge_delay(60000);
        pk_collect(1); /* room among the kept mappings for the arena's chunk */
        arena_ = pk_arena_create(0);
        ASSERT_NE(arena_, nullptr);
        ASSERT_NE(pk_arena_alloc(arena_, 100, 0), nullptr);
        pk_arena_destroy(arena_);
    }
    void TearDown() override {
        if (arena_) pk_set_purge_delay(old_delay_);
    }
    std::string reported(const char *call) {
        return "poolkit: arena used after destroy: " + std::string(call) + " on arena " + hex(arena_) +
               ", which was destroyed";
    }
    pk_arena *arena_ = nullptr;
    long old_delay_ = 0;
};

TEST_F(ArenaDestroyedDeathTest, ASecondDestroyIsReported) {
    EXPECT_DEATH(pk_arena_destroy(arena_), reported("pk_arena_destroy"));
}

TEST_F(ArenaDestroyedDeathTest, AnAllocationFromADestroyedArenaIsReported) {
    EXPECT_DEATH(pk_arena_alloc(arena_, 10, 0), reported("pk_arena_alloc"));
    EXPECT_DEATH(pk_arena_reset(arena_), reported("pk_arena_reset"));
}
