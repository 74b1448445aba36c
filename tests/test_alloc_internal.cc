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
#include "child.h"

#include <poolkit/alloc.h>
#include <poolkit/stats.h>
#include <poolkit/fault.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

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
void (*victim_free)(void *) = pk_free;

void reenter(hook_point point, void *) {
    if (point != HOOK_ALLOC_CLASSES || inner_block) return;
    inner_block = pk_alloc(5000); /* a class not made yet: the slow path, inside the library */
    victim_free(victim);
    live_inside = stats_of(victim_pool).live;
}

/* The victim: a block another thread made, whose free is remote (the
 * library's path, the pool's lists). */
TEST(AllocReentry, CallsFromInsideTheLibraryNeverEnterThePools) {
    std::vector<void *> objs;
    for (int i = 0; i < 4000; i++) objs.push_back(pk_alloc(40)); /* three slabs of the 48-byte class */
    std::thread([] { victim = pk_alloc(40); }).join();
    victim_free = pk_free;
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
    for (void *o : objs) pk_free(o);
}

/* The same guard in the hardened front end, whose frees pk_free sends to
 * the checks with the slab in hand: a free from inside the library waits
 * too. A hardened free zeroes the block at once, a waiting one leaves all
 * but its first word (the deferred list's link) as the caller wrote it. */
char *hard_victim;
int hard_victim_byte = -1;

void hard_reenter(hook_point point, void *) {
    if (point != HOOK_ALLOC_CLASSES || hard_victim_byte >= 0) return;
    pk_free(hard_victim);
    hard_victim_byte = static_cast<unsigned char>(hard_victim[16]);
}

PKTEST_CHILD(HardFreeFromInsideTheLibraryWaits) {
    hard_victim = static_cast<char *>(pk_alloc(40));
    CHILD_CHECK(hard_victim != nullptr, "no block");
    std::memset(hard_victim, 0xAB, 40);
    fork_test_hook = hard_reenter;
    pk_free(pk_alloc(9000)); /* makes the 10240-byte class's pool: the hook runs inside */
    fork_test_hook = nullptr;
    CHILD_CHECK(hard_victim_byte == 0xAB, "the free inside the library ran at once (byte 16 read %d, not 0xAB)",
                hard_victim_byte);
    CHILD_CHECK(hard_victim[16] == 0, "the waiting free was not made at the outer call's end (byte 16 %d)",
                static_cast<unsigned char>(hard_victim[16]));
    return CHILD_PASS;
}

TEST(AllocReentry, HardenedFreesFromInsideTheLibraryWait) {
    ChildResult r = run_child("HardFreeFromInsideTheLibraryWaits", kHardened);
    EXPECT_TRUE(r.passed()) << r.describe();
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

TEST(AllocLargeKept, PastTheCountTheSmallestGoesNotTheOldest) {
    KeptBlocks kept;
    /* A long block freed first, then more short ones than the table holds,
     * each between two live blocks: the long one, the oldest, stays (it
     * spares the most pages from being faulted in again). */
    const size_t n = 2 * LARGE_KEEP_COUNT + 6, len = MiB, long_len = 4 * MiB;
    std::vector<char *> blocks{static_cast<char *>(pk_alloc(long_len))};
    for (size_t i = 1; i < n; i++) blocks.push_back(static_cast<char *>(pk_alloc(len)));
    char *long_block = blocks[0];
    std::sort(blocks.begin(), blocks.end());
    size_t parity = size_t(std::find(blocks.begin(), blocks.end(), long_block) - blocks.begin()) % 2;
    pk_free(long_block);
    size_t freed = 0;
    for (size_t i = parity; i < n; i += 2)
        if (blocks[i] != long_block) {
            pk_free(blocks[i]);
            freed++;
        }
    ASSERT_GT(freed, size_t(LARGE_KEEP_COUNT)) << "the table was never full";
    EXPECT_EQ(kept_bytes(), long_len + (LARGE_KEEP_COUNT - 1) * len) << "the long block left before a short one";
    pk_pool_release_cache(); /* a full table goes back in batches, all of it */
    EXPECT_EQ(kept_bytes(), 0u) << "a release left kept mappings";
    for (size_t i = 1 - parity; i < n; i += 2) pk_free(blocks[i]);
}

/* n mappings of a MiB of the test's, in address order: each other one
 * given to the fits under bound lies between two that are not, so none
 * joins another; the rest are returned. */
std::vector<char *> kept_apart(size_t n, fit_bound bound) {
    std::vector<char *> maps;
    for (size_t i = 0; i < n; i++) maps.push_back(static_cast<char *>(os_map(MiB, 0)));
    std::sort(maps.begin(), maps.end());
    std::vector<char *> rest;
    for (size_t i = 0; i < n; i++)
        if (i % 2 == 0) os_unmap_later_fit(maps[i], MiB, bound);
        else rest.push_back(maps[i]);
    return rest;
}

TEST(AllocLargeKept, AMappingKeptUnderALowerBoundMakesRoomForItself) {
    KeptBlocks kept;
    /* More pieces than go back in one batch wait under a high bound; one
     * more kept under a bound of a few of them: the oldest go, down to it. */
    const size_t n = 80, few = 8;
    std::vector<char *> rest = kept_apart(n, {SIZE_MAX / 2, LARGE_KEEP_COUNT, true});
    ASSERT_EQ(kept_bytes(), n / 2 * MiB);
    os_unmap_later_fit(rest[0], MiB, {few * MiB, LARGE_KEEP_COUNT, true});
    EXPECT_EQ(kept_bytes(), few * MiB) << "what waits passed the bound it was kept under";
    for (size_t i = 1; i < rest.size(); i++) os_unmap(rest[i], MiB);
}

TEST(AllocLargeKept, AMappingKeptPastTheCountItWasGivenMakesRoomForItself) {
    KeptBlocks kept;
    const size_t n = 40, count = 8;
    std::vector<char *> rest = kept_apart(n, {SIZE_MAX / 2, count, true});
    EXPECT_EQ(kept_bytes(), count * MiB) << "more pieces kept than the count they were kept under";
    for (char *m : rest) os_unmap(m, MiB);
}

/* A mapping of the test's, total bytes long, of which the pieces (offset,
 * length) are kept, in that order, with no bound; gaps between them, not
 * kept, so that none joins another. */
char *keep_pieces(size_t total, std::initializer_list<std::pair<size_t, size_t>> pieces) {
    char *m = static_cast<char *>(os_map(total, 0));
    const fit_bound any = {SIZE_MAX / 2, LARGE_KEEP_COUNT, true};
    for (const auto &piece : pieces)
        if (m) os_unmap_later_fit(m + piece.first, piece.second, any);
    return m;
}

/* A freed block between two kept pieces joins both, also where its first
 * join takes the table under the size that keeps the index (fits.c): the
 * look for the second one then starts over, piece by piece. The right
 * piece is kept first (it stays at the table's front) and the left last;
 * short pieces between them in the table, apart in memory, are taken
 * back down to where the next removal drops the index. */
TEST(AllocLargeKept, ABlockBetweenTwoKeptPiecesJoinsBothWhenItsFirstJoinDropsTheIndex) {
    KeptBlocks kept;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE)), side = 2 * page, fillers = 70;
    const fit_bound any = {SIZE_MAX / 2, LARGE_KEEP_COUNT, true};
    char *m = static_cast<char *>(os_map(3 * side, 0));
    char *f = static_cast<char *>(os_map(2 * fillers * page, 0)); /* every other page kept */
    ASSERT_TRUE(m && f);
    os_unmap_later_fit(m + 2 * side, side, any); /* the right piece */
    for (size_t i = 0; i < fillers; i++) os_unmap_later_fit(f + 2 * i * page, page, any);
    os_unmap_later_fit(m, side, any); /* the left piece */
    for (size_t i = 0; i < fillers - 30; i++) ASSERT_NE(os_fit_take(page), nullptr); /* 32 pieces left */
    ASSERT_EQ(kept_bytes(), 2 * side + 30 * page) << "the table is not where the next removal drops the index";
    os_unmap_later_fit(m + side, side, any); /* the block between them */
    EXPECT_EQ(os_fit_take(3 * side), m) << "the block did not join both its neighbours";
    os_unmap(m, 3 * side);
    os_unmap(f, 2 * fillers * page);
}

TEST(AllocLargeKept, ARequestTakesTheFrontOfTheSmallestKeptMappingThatHoldsIt) {
    KeptBlocks kept;
    char *m = keep_pieces(12 * MiB, {{0, MiB}, {2 * MiB, 3 * MiB}, {6 * MiB, 2 * MiB}});
    ASSERT_NE(m, nullptr);
    char *p = static_cast<char *>(os_map_fit(MiB + MiB / 2));
    EXPECT_EQ(p, m + 6 * MiB) << "not the smallest mapping long enough";
    EXPECT_EQ(kept_bytes(), 4 * MiB + MiB / 2) << "the rest of the one taken did not wait on";
    os_unmap(m + MiB, MiB);
    os_unmap(m + 5 * MiB, MiB);
    os_unmap(p, MiB + MiB / 2);
    os_unmap(m + 8 * MiB, 4 * MiB);
}

/* The mapping kept last is looked at first, for a request of its length
 * only: a longer one kept last does not pass the smallest. */
TEST(AllocLargeKept, TheMappingKeptLastServesARequestOfItsLengthOnly) {
    KeptBlocks kept;
    char *m = keep_pieces(12 * MiB, {{0, MiB}, {2 * MiB, 2 * MiB}, {5 * MiB, 2 * MiB}, {8 * MiB, 4 * MiB}});
    ASSERT_NE(m, nullptr);
    char *p = static_cast<char *>(os_map_fit(2 * MiB));
    EXPECT_TRUE(p == m + 2 * MiB || p == m + 5 * MiB) << "not a mapping of the request's length";
    char *q = static_cast<char *>(os_map_fit(MiB));
    EXPECT_EQ(q, m) << "the longer mapping kept last passed the smallest";
    EXPECT_EQ(kept_bytes(), 6 * MiB);
    os_unmap(m + MiB, MiB);
    os_unmap(m + 4 * MiB, MiB);
    os_unmap(m + 7 * MiB, MiB);
    os_unmap(p, 2 * MiB);
    os_unmap(q, MiB); /* the pieces still kept go at the test's end */
}

/* A block aligned past a page takes its pages from inside a kept mapping
 * that holds it aligned, what lies either side waiting on: the mapping a
 * block of the same shape left, its pieces joined back, serves the next
 * with no system call. */
TEST(AllocLargeKept, AnAlignedBlockTakesItsPagesFromInsideAKeptMapping) {
    KeptBlocks kept;
    const size_t align = 2 * MiB, len = 3 * MiB;
    char *m = static_cast<char *>(os_map(16 * MiB, 0));
    ASSERT_NE(m, nullptr);
    char *a = reinterpret_cast<char *>(align_up(reinterpret_cast<uintptr_t>(m), align));
    const fit_bound any = {SIZE_MAX / 2, LARGE_KEEP_COUNT, true};
    char *piece = a + MiB; /* not aligned; holds an aligned block of len */
    os_unmap_later_fit(piece, 6 * MiB, any);
    char *p = static_cast<char *>(os_fit_take_aligned(len, align, false, false));
    EXPECT_EQ(p, a + align) << "not the aligned block inside the kept mapping";
    EXPECT_EQ(kept_bytes(), 3 * MiB) << "the front and the tail did not wait on";
    EXPECT_EQ(os_fit_take_aligned(len, align, false, false), nullptr) << "a request no kept mapping holds aligned";
    char *front = static_cast<char *>(os_map_fit(MiB));
    char *tail = static_cast<char *>(os_map_fit(2 * MiB));
    EXPECT_EQ(front, piece);
    EXPECT_EQ(tail, a + align + len);
    EXPECT_EQ(kept_bytes(), 0u);
    os_unmap(m, 16 * MiB);
}

TEST(AllocLargeKept, ThePiecesKeptFollowTheLiveBlocksWithinTheirBounds) {
    EXPECT_EQ(policy_keep_bound(0, 0).count, size_t(LARGE_KEEP_COUNT_MIN)) << "few live blocks, fewer pieces than the least";
    EXPECT_EQ(policy_keep_bound(0, LARGE_KEEP_COUNT / 8).count, size_t(LARGE_KEEP_COUNT / 2))
        << "not four times the live blocks";
    EXPECT_EQ(policy_keep_bound(0, 4 * LARGE_KEEP_COUNT).count, size_t(LARGE_KEEP_COUNT)) << "past the table";
    EXPECT_EQ(policy_keep_bound(MiB, 0).bytes, LARGE_KEEP_FLOOR) << "under the floor";
    EXPECT_EQ(policy_keep_bound(LARGE_KEEP_FLOOR, 0).bytes, LARGE_KEEP_PEAKS * LARGE_KEEP_FLOOR) << "not the peaks";
}

TEST(AllocLargeKept, WhatWaitsIsBoundedByTheMostBytesLiveAtOnce) {
    KeptBlocks kept;
    /* 2.25 floors live at the peak, then freed one by one: all of it waits
     * (bounded by the bytes live at each free, no more than a floor would) */
    const size_t len = LARGE_KEEP_FLOOR / 4 + MiB, n = 9;
    std::vector<void *> blocks;
    for (size_t i = 0; i < n; i++) blocks.push_back(pk_alloc(len));
    for (size_t i = 0; i < n; i++) {
        pk_free(blocks[i]);
        EXPECT_LE(kept_bytes(), n * len) << "after " << i + 1 << " frees: more waits than was ever live";
    }
    EXPECT_EQ(kept_bytes(), n * len) << "blocks freed after the peak were not all kept";
}

TEST(AllocLargeKept, ThePeakStartsAgainOnceNothingWaits) {
    KeptBlocks kept;
    /* a peak far past the floor, kept (at most LARGE_KEEP_MAX) */
    const size_t first = std::min(4 * LARGE_KEEP_FLOOR, LARGE_KEEP_MAX);
    void *big = pk_alloc(first);
    ASSERT_NE(big, nullptr);
    pk_free(big);
    ASSERT_EQ(kept_bytes(), first);
    pk_pool_release_cache(); /* nothing waits: the old peak bounds nothing */
    /* zeroed blocks are fresh mappings, not the fits', so what is live and
     * what waits together pass the peak of what is live: the fits stay
     * within LARGE_KEEP_PEAKS times it */
    const size_t len = LARGE_KEEP_FLOOR / 2 + 4 * MiB;
    void *a = pk_alloc(len), *b = pk_calloc(1, len);
    pk_free(a); /* the peak since: a and b, 2 len */
    for (int i = 0; i < 6; i++) {
        void *c = pk_calloc(1, len);
        pk_free(b);
        b = c;
    }
    pk_free(b);
    EXPECT_LE(kept_bytes(), LARGE_KEEP_PEAKS * 2 * len) << "the fits held more than the peak since they were last empty allows";
    EXPECT_GE(kept_bytes(), 2 * len) << "less kept than was live at once";
}

TEST(AllocLargeKept, AMappingJoinedPastTheBoundKeepsItsFront) {
    KeptBlocks kept;
    /* two halves of one mapping of the test's, given to the fits one after
     * the other, join; past the bound, the front up to the bound waits */
    const size_t len = 4 * MiB;
    char *m = static_cast<char *>(mmap(nullptr, 2 * len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(m, MAP_FAILED);
    os_unmap_later_fit(m, len, {2 * len, LARGE_KEEP_COUNT, true});
    os_unmap_later_fit(m + len, len, {len + len / 2, LARGE_KEEP_COUNT, true});
    EXPECT_EQ(kept_bytes(), len + len / 2) << "a joined mapping past the bound was not cut to it";
    void *p = os_map_fit(len + len / 2);
    EXPECT_EQ(p, m) << "the front of the joined mapping was not the one kept";
    os_unmap(p, len + len / 2);
}

/* A block of len bytes filled and freed, then pk_calloc's of the same
 * length: the freed block's address in *freed. */
static unsigned char *calloc_after_free(size_t len, uintptr_t *freed) {
    unsigned char *p = static_cast<unsigned char *>(pk_alloc(len));
    if (!p) return nullptr;
    memset(p, 0xAB, len);
    *freed = reinterpret_cast<uintptr_t>(p);
    pk_free(p);
    EXPECT_EQ(kept_bytes(), len);
    return static_cast<unsigned char *>(pk_calloc(1, len));
}

TEST(AllocLargeKept, AZeroedBlockTakesAKeptMappingCleared) {
    KeptBlocks kept;
    const size_t len = 2 * MiB;
    uintptr_t p;
    unsigned char *q = calloc_after_free(len, &p);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(q), p) << "pk_calloc took fresh pages, not the kept mapping";
    EXPECT_EQ(kept_bytes(), 0u);
    size_t dirty = 0;
    for (size_t i = 0; i < len; i++) dirty += q[i] != 0;
    EXPECT_EQ(dirty, 0u) << "pk_calloc's block holds its last user's bytes";
    pk_free(q);
}

/* Resident pages of [p, p + len), by mincore. */
static size_t resident_pages(void *p, size_t len) {
    size_t page = size_t(sysconf(_SC_PAGESIZE)), n = (len + page - 1) / page, in = 0;
    std::vector<unsigned char> v(n);
    if (mincore(p, len, v.data()) != 0) return SIZE_MAX;
    for (unsigned char c : v) in += c & 1;
    return in;
}

TEST(AllocLargeKept, AZeroedBlockPastTheClearingBoundGivesTheKeptPagesBack) {
    KeptBlocks kept;
    const size_t len = LARGE_ZERO_REUSE_MAX + MiB;
    uintptr_t p;
    unsigned char *q = calloc_after_free(len, &p);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(q), p) << "the kept mapping was left waiting beside a fresh one";
    EXPECT_EQ(kept_bytes(), 0u);
    EXPECT_EQ(resident_pages(q, len), 0u) << "a long zeroed block was cleared page by page, not given back";
    EXPECT_EQ(q[0], 0);
    EXPECT_EQ(q[len - 1], 0);
    pk_free(q);
}

/* A block past GROW_COPY_MAX that realloc grows past its mapping takes
 * its room from the kept mappings, their pages resident already, not
 * fresh pages beside them (what the program holds and what waits together
 * would pass the most it held): where a kept mapping holds the room, and
 * where none does. The room's kept pages were written whole: resident,
 * where fresh ones are not until written. */
void grows_over_kept_pages(size_t len, size_t kept_len) {
    KeptBlocks kept;
    char *b = static_cast<char *>(pk_alloc(len));
    ASSERT_NE(b, nullptr);
    /* a page no one may use right after it (where free): the kept mapping
     * must not lie there, where the block would grow over it in place */
    void *spacer = mmap(b + len, 1, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    char *k = static_cast<char *>(pk_alloc(kept_len));
    ASSERT_NE(k, nullptr);
    std::memset(k, 1, kept_len);
    std::memset(b, 2, len);
    pk_free(k);
    ASSERT_EQ(kept_bytes(), kept_len);
    const size_t grown = len + kept_len / 2;
    char *g = static_cast<char *>(pk_realloc(b, grown));
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(resident_pages(g + len, grown - len), (grown - len) / size_t(sysconf(_SC_PAGESIZE)))
        << "the room took fresh pages while kept ones waited";
    EXPECT_LT(kept_bytes(), kept_len) << "the kept pages still wait";
    size_t changed = 0;
    for (size_t i = 0; i < len; i += 512) changed += g[i] != 2;
    EXPECT_EQ(changed, 0u) << "the block's bytes did not move with it";
    EXPECT_EQ(g[len - 1], 2);
    pk_free(g);
    if (spacer != MAP_FAILED) munmap(spacer, 1);
}

TEST(AllocLargeKept, ALongBlockGrownTakesItsRoomFromAKeptMappingThatHoldsIt) {
    grows_over_kept_pages(GROW_COPY_MAX + MiB, GROW_COPY_MAX);
}

TEST(AllocLargeKept, ALongBlockGrownTakesItsRoomFromKeptMappingsThatHoldLess) {
    grows_over_kept_pages(GROW_COPY_MAX + MiB, 8 * MiB);
}

/* Small objects whose slabs fault fresh pages in while freed large
 * blocks' mappings wait unused give as many of the kept pages back:
 * a program whose memory moved from large blocks to small objects held
 * both (the kept mappings wait for the purge delay, a minute here). */
TEST(AllocLargeKept, FreshRegionsForSmallObjectsGiveTheKeptPagesBack) {
    KeptBlocks kept;
    const size_t blocks = 8, small = 48 * MiB / 64;
    std::vector<char *> big, objs;
    for (size_t i = 0; i < blocks; i++) {
        big.push_back(static_cast<char *>(pk_alloc(MiB)));
        ASSERT_NE(big.back(), nullptr);
        std::memset(big.back(), 1, MiB);
    }
    for (char *b : big) pk_free(b);
    ASSERT_EQ(kept_bytes(), blocks * MiB);
    /* only mappings that waited go (FIT_GIVE_IDLE_SHIFT): a delay of 1.6 s
     * makes that 100 ms, and the purge by age waits the 1.6 s */
    pk_set_purge_delay(1600);
    std::this_thread::sleep_for(std::chrono::milliseconds((1600 >> FIT_GIVE_IDLE_SHIFT) + 20));
    for (size_t i = 0; i < small; i++) {
        objs.push_back(static_cast<char *>(pk_alloc(64)));
        ASSERT_NE(objs.back(), nullptr);
        objs.back()[0] = 1;
    }
    EXPECT_EQ(kept_bytes(), 0u) << "kept pages waited while " << small * 64 / MiB << " MiB of fresh regions came";
    for (char *o : objs) pk_free(o);
}

/* FIT_GIVE_REGRET: kept pages given back for small objects, then as many
 * mapped afresh for large blocks, pause the next gives for the purge
 * delay (doubled at each regret, IDLE_SHIFT_MAX times at most); after it
 * they go again. The clock is the test's: os_fit_owe takes it. */
TEST(AllocLargeKept, KeptPagesGivenBackThenMappedAfreshPauseTheNextGives) {
    KeptBlocks kept; /* its release starts the gives afresh */
    const size_t n = 8;
    auto cycle = [&]() { /* n blocks written, then freed */
        std::vector<char *> big;
        for (size_t i = 0; i < n; i++) {
            big.push_back(static_cast<char *>(pk_alloc(MiB)));
            ASSERT_NE(big.back(), nullptr);
            std::memset(big.back(), 1, MiB);
        }
        for (char *b : big) pk_free(b);
    };
    cycle();
    ASSERT_EQ(kept_bytes(), n * MiB);
    EXPECT_EQ(os_fit_owe(n / 2 * MiB, os_now_ms()), 0u) << "mappings freed a moment ago wait (FIT_GIVE_IDLE_SHIFT)";
    /* the test's clock: past the wait of FIT_GIVE_IDLE_SHIFT for the mappings freed now */
    const uint64_t t0 = os_now_ms() + 60000, pause_max = uint64_t(pk_set_purge_delay(60000)) << IDLE_SHIFT_MAX;
    EXPECT_EQ(os_fit_owe(n / 2 * MiB, t0), n / 2 * MiB) << "no give before: none to regret";
    cycle(); /* half the blocks fresh: as much as went */
    ASSERT_EQ(kept_bytes(), n * MiB);
    EXPECT_EQ(os_fit_owe(MiB, t0 + 1), 0u) << "given back, then mapped afresh: the gives pause";
    EXPECT_EQ(kept_bytes(), n * MiB);
    EXPECT_EQ(os_fit_owe(MiB, t0 + 1 + pause_max), MiB) << "the pause is over";
    EXPECT_EQ(os_fit_owe(MiB, t0 + 2 + pause_max), MiB) << "no block mapped afresh since: no regret";
    EXPECT_EQ(kept_bytes(), (n - 2) * MiB);
    cycle(); /* mapped afresh again: a regret, judged at the next give */
    pk_pool_release_cache();
    cycle();
    EXPECT_EQ(os_fit_owe(MiB, t0 + 3 + pause_max), MiB) << "all given back by a call: the gives start afresh";
}

long minor_faults() {
    rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

/* A block whose room was gathered from kept pieces lies over several of
 * the system's mappings, which mremap refuses to grow: grown again where
 * nothing is kept, its pages move to the fresh mapping (no copy), where a
 * copy faulted every page of the fresh mapping in and wrote it. */
TEST(AllocLargeKept, ABlockOverSeveralMappingsGrownWhereNothingIsKeptMovesItsPages) {
    if (running_under_valgrind()) GTEST_SKIP() << "page faults are the tool's here";
    KeptBlocks kept;
    const size_t len = GROW_COPY_MAX + MiB, page = size_t(sysconf(_SC_PAGESIZE));
    char *b = static_cast<char *>(pk_alloc(len));
    ASSERT_NE(b, nullptr);
    void *spacer = mmap(b + len, 1, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    char *k = static_cast<char *>(pk_alloc(8 * MiB));
    ASSERT_NE(k, nullptr);
    std::memset(k, 1, 8 * MiB);
    std::memset(b, 2, len);
    pk_free(k);
    char *g = static_cast<char *>(pk_realloc(b, len + 4 * MiB)); /* the room gathered */
    ASSERT_NE(g, nullptr);
    size_t have = pk_usable_size(g);
    std::memset(g + len, 3, have - len);
    pk_pool_release_cache(); /* nothing kept */
    long before = minor_faults();
    char *h = static_cast<char *>(pk_realloc(g, have + MiB));
    long faults = minor_faults() - before;
    ASSERT_NE(h, nullptr);
    EXPECT_LT(faults, long(have / page / 8)) << "the block was copied into fresh pages, not moved";
    size_t changed = 0;
    for (size_t i = 0; i < have; i += 512) changed += h[i] != (i < len ? 2 : 3);
    EXPECT_EQ(changed, 0u) << "the block's bytes did not move with it";
    pk_free(h);
    if (spacer != MAP_FAILED) munmap(spacer, 1);
}

/* Whether the page at p is mapped (mincore fails with ENOMEM where not). */
bool mapped(const char *p) {
    unsigned char v;
    return mincore(const_cast<char *>(p), size_t(sysconf(_SC_PAGESIZE)), &v) == 0;
}

/* os_fit_owe takes the oldest kept mapping that holds pages whole, then
 * as much of the next one's tail as is still wanted: its front waits on. */
TEST(AllocLargeKept, KeptPagesGoBackTheOldestFirstAndTheLastCutToWhatIsWanted) {
    KeptBlocks kept;
    const fit_bound any = {SIZE_MAX / 2, LARGE_KEEP_COUNT, true};
    /* two mappings with a reserved gap between them, so they do not join */
    char *room = static_cast<char *>(os_reserve(12 * MiB, 0));
    ASSERT_NE(room, nullptr);
    char *older = room, *newer = room + 4 * MiB;
    ASSERT_TRUE(os_commit(older, 2 * MiB));
    ASSERT_TRUE(os_commit(newer, 8 * MiB));
    std::memset(older, 1, 2 * MiB);
    std::memset(newer, 1, 8 * MiB);
    os_unmap_later_fit(older, 2 * MiB, any);
    std::this_thread::sleep_for(std::chrono::milliseconds(3)); /* a later stamp */
    os_unmap_later_fit(newer, 8 * MiB, any);
    ASSERT_EQ(os_fit_bytes(), 10 * MiB);
    EXPECT_EQ(os_fit_owe(3 * MiB, os_now_ms() + 60000), 3 * MiB); /* both waited long enough */
    EXPECT_EQ(os_fit_bytes(), 7 * MiB);
    EXPECT_FALSE(mapped(older)) << "the older mapping waits on";
    EXPECT_TRUE(mapped(newer + 7 * MiB - size_t(sysconf(_SC_PAGESIZE)))) << "the newer one's front went";
    EXPECT_FALSE(mapped(newer + 7 * MiB)) << "the newer one's tail waits on";
    os_unmap(room + 2 * MiB, 2 * MiB); /* the gap; the rest is the fits' or gone */
}

TEST(AllocLargeKept, ABlockAlignedPastAPageTakesAKeptMapping) {
    KeptBlocks kept;
    const size_t len = 4 * MiB, align = 64 * 1024, size = MiB;
    char *p = static_cast<char *>(pk_alloc(len));
    ASSERT_NE(p, nullptr);
    pk_free(p);
    char *q = static_cast<char *>(pk_aligned_alloc(align, size));
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % align, 0u);
    EXPECT_TRUE(q >= p && q + size <= p + len) << "an aligned block took a fresh mapping beside a kept one";
    EXPECT_EQ(kept_bytes(), len - size) << "the pages either side of the aligned block were not kept";
    memset(q, 1, size);
    pk_free(q);
    /* an alignment past the length: the block keeps its bytes to the next
     * aligned address, 8 MiB, which the kept 4 MiB cannot hold: a fresh
     * mapping, the fits untouched, and it goes to them whole */
    char *r = static_cast<char *>(pk_aligned_alloc(8 * MiB, size));
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(r) % (8 * MiB), 0u);
    EXPECT_EQ(kept_bytes(), len);
    pk_free(r);
    EXPECT_EQ(kept_bytes(), len + 8 * MiB);
}

/* An aligned block resized keeps its bytes and its alignment: shrunk, it
 * keeps its slack to an aligned end and gives the rest to the fits; grown,
 * it moves to a mapping of the grown shape. */
TEST(AllocLargeKept, AnAlignedBlockShrunkAndGrownKeepsItsBytes) {
    KeptBlocks kept;
    for (size_t align : {size_t(8) << 10, size_t(128) << 10, size_t(2) << 20}) {
        size_t n = 3 * MiB + 12345;
        auto *p = static_cast<unsigned char *>(pk_aligned_alloc(align, n));
        ASSERT_NE(p, nullptr);
        for (size_t i = 0; i < n; i += 4093) p[i] = static_cast<unsigned char>(i / 4093);
        for (size_t to : {MiB + 1, 300000 + size_t(0), 5 * MiB, 70000 + size_t(0)}) {
            auto *q = static_cast<unsigned char *>(pk_realloc(p, to));
            ASSERT_NE(q, nullptr) << "pk_realloc(" << n << " aligned to " << align << ", " << to << ")";
            for (size_t i = 0; i < n && i < to; i += 4093)
                ASSERT_EQ(q[i], static_cast<unsigned char>(i / 4093)) << "byte " << i << " after a resize to " << to;
            for (size_t i = n; i < to; i += 4093) q[i] = static_cast<unsigned char>(i / 4093);
            p = q;
            n = to;
        }
        pk_free(p);
    }
}

/* Blocks of one aligned shape tile their addresses (each keeps its bytes
 * to the next aligned address), so their mappings merge: not a mapping
 * each, which the system caps (70,000 of 300,000 bytes aligned to 128 KiB
 * got NULL). Again from the kept mappings they leave. */
TEST(AllocLargeKept, BlocksOfOneAlignedShapeShareMappings) {
    if (PKTEST_ASAN || PKTEST_TSAN) GTEST_SKIP() << "the sanitizer's runtime maps its own memory between the blocks";
    KeptBlocks kept;
    for (size_t align : {size_t(8) << 10, size_t(128) << 10, size_t(1) << 20}) {
        for (int round = 0; round < 2; round++) {
            std::vector<void *> blocks(256);
            long before = mapping_count();
            for (void *&b : blocks) {
                b = pk_aligned_alloc(align, 300000);
                ASSERT_NE(b, nullptr);
                EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % align, 0u);
                static_cast<char *>(b)[299999] = 1;
            }
            long grew = mapping_count() - before;
            EXPECT_LT(grew, 32) << "256 blocks of 300,000 bytes aligned to " << align << " took " << grew << " mappings";
            for (void *b : blocks) pk_free(b);
        }
    }
}

TEST(AllocLargeKept, ABlockShrunkInPlaceGrowsBackOverItsOwnTail) {
    KeptBlocks kept;
    const size_t len = 8 * MiB;
    unsigned char *p = static_cast<unsigned char *>(pk_alloc(len));
    ASSERT_NE(p, nullptr);
    for (size_t i = 0; i < len; i += 4096) p[i] = static_cast<unsigned char>(i >> 12);
    unsigned char *q = static_cast<unsigned char *>(pk_realloc(p, len / 2));
    ASSERT_EQ(q, p);
    ASSERT_EQ(kept_bytes(), len / 2) << "the shrink did not keep its tail";
    unsigned char *r = static_cast<unsigned char *>(pk_realloc(q, len));
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r, q) << "the block moved instead of growing back over its kept tail";
    EXPECT_EQ(kept_bytes(), 0u) << "its tail still waits beside it";
    EXPECT_EQ(resident_pages(r + len / 2, len / 2), len / 2 / 4096) << "the tail's pages were not taken back as they were";
    size_t wrong = 0;
    for (size_t i = 0; i < len / 2; i += 4096) wrong += r[i] != static_cast<unsigned char>(i >> 12);
    EXPECT_EQ(wrong, 0u) << "the block's first half changed";
    pk_free(r);
}

/* ---- pieces gathered: pages moved, not faulted in again ---- */

const size_t kPage = 4096;

/* Each page of [p, p + len) written with its number from `first` (its
 * first word). */
void number_pages(char *p, size_t len, size_t first) {
    for (size_t i = 0; i < len; i += kPage) *reinterpret_cast<size_t *>(p + i) = first + i / kPage;
}

/* Pages of [p, p + len) whose first word is not their number from `first`. */
size_t misnumbered(const char *p, size_t len, size_t first) {
    size_t wrong = 0;
    for (size_t i = 0; i < len; i += kPage) wrong += *reinterpret_cast<const size_t *>(p + i) != first + i / kPage;
    return wrong;
}

/* [at, at + len) replaced by a mapping made and written elsewhere, so the
 * range and what lies before it are two of the system's mappings (each
 * faulted in before they met, they never merge). */
bool second_mapping_at(char *at, size_t len, size_t first) {
    char *b = static_cast<char *>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (b == MAP_FAILED) return false;
    number_pages(b, len, first);
    return mremap(b, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, at) == at;
}

bool is_mapped_at(void *p) {
    unsigned char v;
    return mincore(p, kPage, &v) == 0;
}

TEST(OsMovePages, TheFrontWithinOneMappingIsFoundWithoutChangingIt) {
    const size_t len = MiB;
    char *m = static_cast<char *>(os_map(2 * len, 0));
    ASSERT_NE(m, nullptr);
    number_pages(m, len, 0);
    ASSERT_TRUE(second_mapping_at(m + len, len, len / kPage));
    /* Valgrind serves mremap itself and keeps one account of the two, which
     * it moves whole: there the front may reach past the first */
    const bool one = running_under_valgrind();
    size_t front = os_mapping_front(m, 2 * len), inner = os_mapping_front(m + kPage, 2 * len - kPage);
    EXPECT_TRUE(front == len || (one && front == 2 * len)) << "not the first mapping's end: " << front;
    EXPECT_TRUE(inner == len - kPage || (one && inner == 2 * len - kPage)) << inner;
    EXPECT_EQ(os_mapping_front(m, len / 2), len / 2) << "a range within one mapping is its own front";
    EXPECT_EQ(os_mapping_front(m + len, len), len);
    EXPECT_EQ(misnumbered(m, 2 * len, 0), 0u) << "looking changed the pages";
    EXPECT_EQ(resident_pages(m, 2 * len), 2 * len / kPage);
    os_unmap(m, 2 * len);
}

/* Pages over two mappings move to a mapping of the caller's, whole (where
 * the system moves several mappings at once) or one mapping at a time
 * (what older systems need): none copied, none faulted in. */
void moves_over_two_mappings(bool whole) {
    const size_t len = MiB;
    char *m = static_cast<char *>(os_map(2 * len, 0)), *to = static_cast<char *>(os_map(2 * len, 0));
    ASSERT_TRUE(m && to);
    number_pages(m, len, 0);
    ASSERT_TRUE(second_mapping_at(m + len, len, len / kPage));
    size_t moved = 0, refused = 1;
    EXPECT_TRUE(os_move_pages(to, m, 2 * len, &moved, &refused, whole));
    EXPECT_EQ(moved, 2 * len);
    EXPECT_EQ(refused, 0u);
    EXPECT_EQ(misnumbered(to, 2 * len, 0), 0u) << "pages out of place";
    EXPECT_EQ(resident_pages(to, 2 * len), 2 * len / kPage) << "pages faulted in afresh, not moved";
    EXPECT_FALSE(is_mapped_at(m) || is_mapped_at(m + len)) << "the pages stayed where they were";
    os_unmap(to, 2 * len);
}

TEST(OsMovePages, PagesMoveOverTwoMappingsWhole) { moves_over_two_mappings(true); }
TEST(OsMovePages, PagesMoveOverTwoMappingsOneAtATime) { moves_over_two_mappings(false); }

/* Two pieces for the fits, apart (a gap of the test's between them): one
 * of len bytes at m, one of 2 len over two mappings at m + 2 len, every
 * page numbered (m's from 0, the long one's from 1,000). m spans 8 len. */
char *pieces_apart(size_t len, const fit_bound &bound) {
    char *m = static_cast<char *>(os_map(8 * len, 0));
    if (!m) return nullptr;
    number_pages(m, len, 0);
    number_pages(m + 2 * len, len, 1000);
    if (!second_mapping_at(m + 3 * len, len, 1000 + len / kPage)) return nullptr;
    os_unmap_later_fit(m, len, bound);
    os_unmap_later_fit(m + 2 * len, 2 * len, bound);
    return m;
}

TEST(AllocLargeKept, ARequestNoKeptPieceHoldsTakesThePiecesPagesAndSlackWaits) {
    KeptBlocks kept;
    const size_t len = MiB;
    char *m = pieces_apart(len, {SIZE_MAX / 2, LARGE_KEEP_COUNT, true});
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(kept_bytes(), 3 * len);
    /* 4 len: the long piece's pages first, then the short one's, then a
     * fresh len; LARGE_FIT_SLACK times 4 len past it wait for the next */
    char *p = static_cast<char *>(os_map_fit(4 * len));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(resident_pages(p, 3 * len), 3 * len / kPage) << "the pieces' pages were not moved in";
    EXPECT_EQ(misnumbered(p, 2 * len, 1000), 0u) << "the long piece is not at the front";
    EXPECT_EQ(misnumbered(p + 2 * len, len, 0), 0u) << "the short piece does not follow it";
    EXPECT_EQ(resident_pages(p + 3 * len, len), 0u) << "what no piece held is not fresh";
    EXPECT_EQ(kept_bytes(), LARGE_FIT_SLACK * 4 * len) << "no slack waits, or pieces were left";
    EXPECT_FALSE(is_mapped_at(m) || is_mapped_at(m + 2 * len) || is_mapped_at(m + 3 * len));
    os_unmap(p, 4 * len);
    os_unmap(m + len, len);
    os_unmap(m + 4 * len, 4 * len);
}

/* Past LARGE_GATHER_LIVE_MAX large blocks live (the bound says so), a
 * request no piece holds takes fresh pages: each piece moved stays a
 * mapping of its own, and many live blocks each gathered from pieces hold
 * more of the process's mappings than the system allows. */
TEST(AllocLargeKept, PastTheLiveBlocksThatGatherARequestTakesFreshPages) {
    static_assert(LARGE_GATHER_LIVE_MAX < LARGE_KEEP_COUNT, "the bound's count does not say it alone");
    KeptBlocks kept;
    const size_t len = MiB;
    fit_bound many = policy_keep_bound(SIZE_MAX / 4, LARGE_GATHER_LIVE_MAX + 1);
    EXPECT_FALSE(many.gather);
    EXPECT_TRUE(policy_keep_bound(SIZE_MAX / 4, LARGE_GATHER_LIVE_MAX).gather);
    char *m = pieces_apart(len, many);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(kept_bytes(), 3 * len);
    char *p = static_cast<char *>(os_map_fit(4 * len));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(resident_pages(p, 4 * len), 0u) << "pieces' pages were moved in";
    EXPECT_EQ(kept_bytes(), 3 * len) << "the pieces did not wait on, or slack was mapped";
    EXPECT_TRUE(is_mapped_at(m) && is_mapped_at(m + 2 * len) && is_mapped_at(m + 3 * len));
    os_unmap(p, 4 * len);
    pk_pool_release_cache(); /* the pieces */
    os_unmap(m + len, len);
    os_unmap(m + 4 * len, 4 * len);
}

TEST(AllocLargeKept, AGatherTheSystemRefusesGivesItsPiecesBack) {
    KeptBlocks kept;
    const size_t len = MiB;
    char *m = pieces_apart(len, {SIZE_MAX / 2, LARGE_KEEP_COUNT, true});
    ASSERT_NE(m, nullptr);
    /* the mapping granted (a request), the first move refused (a move takes
     * no memory from the system: it counts no request, and fails where the
     * next request would) */
    unsigned long before = pk_fault_requests();
    pk_fault_fail_after(1);
    void *p = os_map_fit(4 * len);
    pk_fault_fail_after(-1);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(pk_fault_requests() - before, 2u) << "not the gather's mapping and the fresh one refused";
    EXPECT_EQ(kept_bytes(), LARGE_FIT_SLACK * 4 * len) << "a piece of the refused gather still waits";
    EXPECT_FALSE(is_mapped_at(m) || is_mapped_at(m + 2 * len) || is_mapped_at(m + 3 * len)) << "a piece leaked";
    EXPECT_TRUE(is_mapped_at(m + len) && is_mapped_at(m + 4 * len)) << "the test's own pages were unmapped";
    os_unmap(m + len, len);
    os_unmap(m + 4 * len, 4 * len);
}

void free_sized_40(void *p) { pk_free_sized(p, 40); }

/* pk_free_sized of a block of another slab the thread owns lists it as
 * pk_free does (the owned index's push: no slab's list changed, so a
 * second free of it by either call is the head freed again), inside the
 * library too. */
TEST(AllocReentry, ASizedFreeOfAnotherSlabsObjectGoesOntoTheListInsideTheLibraryToo) {
    std::vector<void *> objs;
    for (int i = 0; i < 4000; i++) objs.push_back(pk_alloc(40));
    pk_free_sized(objs[1], 40); /* listed below the victim */
    inner_block = nullptr;
    live_inside = SIZE_MAX;
    victim = objs[0];
    victim_free = free_sized_40;
    victim_pool = pk_pool_owner(victim);
    ASSERT_NE(victim_pool, nullptr);
    size_t before = stats_of(victim_pool).live;
    fork_test_hook = reenter;
    pk_free(pk_alloc(30000)); /* a class of its own, made now (the other test made 9000's) */
    fork_test_hook = nullptr;
    ASSERT_NE(inner_block, nullptr);
    EXPECT_EQ(live_inside, before - 1) << "the sized free inside the library did not go onto the thread's list";
    EXPECT_EQ(stats_of(victim_pool).live, before - 1);
    EXPECT_EQ(pk_alloc(40), victim) << "the next allocation of the class did not take the block back";
    pk_free(inner_block);
    pk_free(victim);
    for (size_t i = 2; i < objs.size(); i++) pk_free(objs[i]);
}

/* pk_free of a block of a slab the thread owns, current or not, pushes it
 * onto the class's list (OWN_FREES), as the inline free does an object of
 * the current slab: no lock, no slab's list changed, so inside the library
 * too it goes at once, and the next allocation of the class takes it. */
TEST(AllocReentry, AFreeOntoTheThreadsOwnListGoesAtOnceInsideTheLibraryToo) {
    std::vector<void *> objs;
    for (int i = 0; i < 4000; i++) objs.push_back(pk_alloc(40));
    inner_block = nullptr;
    live_inside = SIZE_MAX;
    victim = objs[0]; /* of the first slab, not the current one */
    victim_free = pk_free;
    victim_pool = pk_pool_owner(victim);
    ASSERT_NE(victim_pool, nullptr);
    size_t before = stats_of(victim_pool).live;
    fork_test_hook = reenter;
    pk_free(pk_alloc(50000)); /* a class of its own, made now */
    fork_test_hook = nullptr;
    ASSERT_NE(inner_block, nullptr);
    EXPECT_EQ(live_inside, before - 1) << "the free inside the library did not go onto the thread's list";
    EXPECT_EQ(stats_of(victim_pool).live, before - 1);
    EXPECT_EQ(pk_alloc(40), victim) << "the next allocation of the class did not take the block back";
    pk_free(inner_block);
    for (void *o : objs) pk_free(o);
    EXPECT_EQ(stats_of(victim_pool).live, 0u);
}


/* A block realloc grows past REALLOC_MAPPED_MIN, half a slab, becomes a
 * mapped block: the classes past it hold one block to a slab, and a buffer
 * grown through them left each such slab empty behind it, kept for the
 * purge delay (buffers grown together: 300 by 8 threads in turn peaked at
 * 127 MB, 99 MB now). */
TEST(AllocReallocMapped, ABlockGrownPastHalfASlabIsMapped) {
    static_assert(REALLOC_MAPPED_MIN == SLAB_BYTES / 2, "the test grows a block across it");
    char *p = static_cast<char *>(pk_alloc(REALLOC_MAPPED_MIN - 1000));
    ASSERT_NE(pk_pool_owner(p), nullptr);
    memset(p, 7, REALLOC_MAPPED_MIN - 1000);
    char *q = static_cast<char *>(pk_realloc(p, REALLOC_MAPPED_MIN + 1000));
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(pk_pool_owner(q), nullptr) << "grown past half a slab, the block is still a class's";
    EXPECT_EQ(q[REALLOC_MAPPED_MIN - 1001], 7);
    pk_free(q);
}

/* Past REALLOC_MAPPED_LIVE_MAX mapped blocks live, a block realloc grows
 * within the classes' sizes stays a class's: each mapped block is one of
 * the process's mappings, which Linux caps (vm.max_map_count), and a
 * program with a hundred thousand such buffers got NULL at the cap. */
TEST(AllocReallocMapped, PastTheBoundOnMappedBlocksGrownBlocksStayInTheClasses) {
    const size_t n = REALLOC_MAPPED_LIVE_MAX + 500, grown = REALLOC_MAPPED_MIN + 4096;
    std::vector<char *> b(n);
    size_t mapped = 0;
    for (size_t i = 0; i < n; i++) {
        char *p = static_cast<char *>(pk_alloc(100));
        ASSERT_NE(p, nullptr);
        p[0] = static_cast<char>(i);
        b[i] = static_cast<char *>(pk_realloc(p, grown));
        ASSERT_NE(b[i], nullptr) << i;
        EXPECT_EQ(b[i][0], static_cast<char>(i));
        mapped += pk_pool_owner(b[i]) == nullptr;
    }
    /* the process's other mapped blocks counted too: at most the bound */
    EXPECT_LE(mapped, (size_t)REALLOC_MAPPED_LIVE_MAX);
    EXPECT_GT(mapped, (size_t)REALLOC_MAPPED_LIVE_MAX / 2) << "the blocks below the bound were not mapped";
    for (char *p : b) pk_free(p);
}

} // namespace
