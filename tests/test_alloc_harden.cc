/* The hardened front end (POOLKIT_HARDENED=1, src/front/alloc_harden.c): one
 * behaviour of each check, in a child of its own (the mode is read once per
 * process). A misuse case ends in poolkit's fatal report, printed by
 * print_fields_handler, and the parent matches its `what` and message; a
 * property case checks what it promises and passes or fails.
 *
 * The writes past blocks and into freed ones are the test's own, into
 * memory no tool watches in these builds; the cases that fault on purpose
 * (guard pages, blocks of size 0) need poolkit's fault handler, which a
 * sanitizer's own handler or Valgrind stands in front of: skipped there.
 */
#include "child.h"

#include <poolkit/alloc.h>
#include <poolkit/stats.h>

#include <atomic>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include <limits.h>
#include <pthread.h>
#include <sys/resource.h>

using namespace pktest;

namespace {

constexpr size_t kGuarded = size_t(256) << 10; /* mapped alone, between guard pages */

/* The compiler must not drop a write to memory it thinks is dead. */
char *hide(void *p) {
    __asm__ volatile("" : "+r"(p) : : "memory");
    return static_cast<char *>(p);
}

/* A block of n bytes, freed: the stale pointer a write after free goes
 * through. */
char *freed(size_t n) {
    char *t = hide(pk_alloc(n)), *stale = hide(t);
    pk_free(t);
    return stale;
}

bool faults_unwatched() { return !PKTEST_ASAN && !PKTEST_TSAN && !slow_tool(); }

}  // namespace

/* ---- CHECK BYTES and CHECK WORD: overflows, found at the block's free ---- */

PKTEST_CHILD(HardOverflowByOne8) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *p = hide(pk_alloc(8));
    p[8] = 'A';
    pk_free(hide(p));
    return no_report();
}

PKTEST_CHILD(HardOverflowByOne4096) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *p = hide(pk_alloc(4096));
    p[4096] = 'A';
    pk_free(hide(p));
    return no_report();
}

PKTEST_CHILD(HardOverflowIntoTheCheckWord) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *p = hide(pk_alloc(24)); /* a 32-byte slot: no slack, the word follows at once */
    std::memset(p + 24, 'A', 2);
    pk_free(hide(p));
    return no_report();
}

PKTEST_CHILD(HardStrayWriteIntoTheSlack) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *p = hide(pk_alloc(4097)); /* a class a quarter larger: KiBs of check bytes, read a word at a time */
    p[4097 + 47] = 'A';
    pk_free(hide(p));
    return no_report();
}

TEST(HardenedFrontEnd, AStrayWriteAnywhereInTheSlackIsReportedAtTheBlocksFree) {
    expect_report("HardStrayWriteIntoTheSlack", "buffer overflow", "bytes 47 to 47 past it changed (check bytes)");
}

TEST(HardenedFrontEnd, AOneByteOverflowIsReportedAtTheBlocksFree) {
    expect_report("HardOverflowByOne8", "buffer overflow", "of 8 bytes (pool 'pk_alloc 32') was written past its end: "
                                                           "bytes 0 to 0 past it changed");
    expect_report("HardOverflowByOne4096", "buffer overflow", "of 4096 bytes");
}

TEST(HardenedFrontEnd, AnOverflowIntoTheCheckWordIsReported) {
    expect_report("HardOverflowIntoTheCheckWord", "buffer overflow", "its check word");
}

/* ---- UNDERFLOW: the check word of the slot before ---- */

PKTEST_CHILD(HardUnderflowByOne) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *p = hide(pk_alloc(8)); /* the first block of its class: the slot before is kept back */
    p[-1] = 'A';
    pk_free(hide(p));
    return no_report();
}

PKTEST_CHILD(HardUnderflowIntoALiveBlock) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *a = hide(pk_alloc(100));
    char *b = hide(pk_alloc(100));
    std::fprintf(stderr, "ADJACENT %d\n", b - a == 128 || a - b == 128);
    char *later = b > a ? b : a;
    std::memset(later - 32, 'A', 32);
    pk_free(hide(later));
    return no_report();
}

TEST(HardenedFrontEnd, AnUnderflowIsReportedAtTheBlocksFree) {
    expect_report("HardUnderflowByOne", "buffer underflow", "up to 1 bytes before it changed");
    expect_report("HardUnderflowIntoALiveBlock", "buffer underflow", "the check word of the block before");
}

/* ---- CHECK WORD: double frees ---- */

PKTEST_CHILD(HardInterleavedDoubleFree) {
    pk_set_error_handler(print_fields_handler, nullptr);
    void *t = pk_alloc(48), *u = pk_alloc(48), *stale = hide(t);
    pk_free(t);
    pk_free(u);
    pk_free(stale);
    return no_report();
}

TEST(HardenedFrontEnd, ADoubleFreeWithAFreeBetweenIsReportedAtTheSecondFree) {
    expect_report("HardInterleavedDoubleFree", "double free", "freed already");
}

/* A pointer into a block, not its start: the class pool's own checks name
 * it, before any of the block's words is read as a check word. */
PKTEST_CHILD(HardInteriorFree) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *t = hide(pk_alloc(64));
    pk_free(t + 16);
    return no_report();
}

TEST(HardenedFrontEnd, AFreeOfAPointerIntoABlockIsReportedAsSuch) {
    expect_report("HardInteriorFree", "interior pointer", "is not the start of one of its objects");
}

/* ---- ZERO ON FREE and QUARANTINE ---- */

PKTEST_CHILD(HardWriteAfterFree) {
    pk_set_error_handler(print_fields_handler, nullptr);
    freed(64)[40] = 'W';
    for (int i = 0; i < 64; i++) pk_free(hide(pk_alloc(64))); /* the block leaves the quarantine */
    return no_report();
}

TEST(HardenedFrontEnd, AWriteAfterFreeInTheQuarantineIsReportedWhenTheBlockIsHandedOutAgain) {
    expect_report("HardWriteAfterFree", "write after free", "byte 40 of it changed, found when it was handed out again");
}

/* A write at byte at of an n-byte block after it left the quarantine,
 * while it waits on the thread's ready stack, then its handout. */
static int write_while_ready(size_t n, size_t at) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *t = hide(pk_alloc(n)), *stale = hide(t), *later[8];
    for (char *&b : later) b = hide(pk_alloc(n));
    pk_free(t);
    for (char *b : later) pk_free(b); /* t leaves the quarantine and waits to be handed out */
    stale[at] = 'W';
    pk_free(hide(pk_alloc(n)));
    return no_report();
}

/* Past the first line, which a block its pool gave back is checked in
 * alone: one the quarantine let go is checked whole when it is handed out,
 * so a write while it waited on the thread's ready stack is found too. */
PKTEST_CHILD(HardWriteAfterFreePastTheFirstLine) { return write_while_ready(256, 200); }

TEST(HardenedFrontEnd, AWriteAfterFreePastTheFirstLineIsReportedWhenTheBlockIsHandedOutAgain) {
    expect_report("HardWriteAfterFreePastTheFirstLine", "write after free",
                  "byte 200 of it changed, found when it was handed out again");
}

/* The ready stack of the 256-byte class holds 64 blocks: freed 41st (after
 * 40 others, and 8 more to let it go), the block is in the stack's newer
 * half when it fills, which goes back to the pool, where no one would
 * check it past its first line. */
PKTEST_CHILD(HardWriteAfterFreeSentBackToItsPool) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *t = hide(pk_alloc(256)), *stale = hide(t), *others[80];
    for (char *&b : others) b = hide(pk_alloc(256));
    for (int i = 0; i < 40; i++) pk_free(others[i]);
    pk_free(t);
    stale[200] = 'W';
    for (int i = 40; i < 80; i++) pk_free(others[i]);
    return no_report();
}

TEST(HardenedFrontEnd, AWriteAfterFreeIsReportedWhenTheBlockGoesBackToItsPool) {
    expect_report("HardWriteAfterFreeSentBackToItsPool", "write after free",
                  "byte 200 of it changed, found when it went back to its pool");
}

PKTEST_CHILD(HardWriteAfterFreeInAThread) {
    pk_set_error_handler(print_fields_handler, nullptr);
    std::thread([] { freed(64)[40] = 'W'; }).join(); /* its quarantine is checked at its exit */
    return no_report();
}

TEST(HardenedFrontEnd, AWriteAfterFreeIsReportedAtItsThreadsExit) {
    expect_report("HardWriteAfterFreeInAThread", "write after free", "byte 40 of it changed, found at its thread's exit");
}

PKTEST_CHILD(HardWriteAfterTheQuarantine) { return write_while_ready(64, 0); }

TEST(HardenedFrontEnd, AWriteAfterFreeIntoItsFirstWordIsReportedWhenTheBlockIsHandedOutAgain) {
    expect_report("HardWriteAfterTheQuarantine", "write after free", "byte 0 of it changed, found when it was handed out again");
}

PKTEST_CHILD(HardWriteAfterFreeBackInItsPool) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *t = hide(pk_alloc(64)), *stale = hide(t), *others[24];
    for (char *&b : others) b = hide(pk_alloc(64));
    for (int i = 0; i < 8; i++) pk_free(others[i]);
    pk_free(t);
    for (int i = 8; i < 24; i++) pk_free(others[i]); /* t leaves the quarantine, then the thread's ready blocks */
    stale[40] = 'W';
    for (int i = 0; i < 64; i++) hide(pk_alloc(64));
    return no_report();
}

TEST(HardenedFrontEnd, AWriteAfterFreeIsReportedWhenTheBlockComesBackFromItsPool) {
    expect_report("HardWriteAfterFreeBackInItsPool", "write after free", "byte 40 of it changed, found when it was handed out again");
}

PKTEST_CHILD(HardFreedBlockIsZero) {
    for (size_t n : {size_t(8), size_t(100), size_t(4096)}) {
        char *p = hide(pk_alloc(n)), *stale = hide(p);
        std::memset(p, 'X', n);
        pk_free(p);
        for (size_t i = 0; i < n; i++) CHILD_CHECK(stale[i] == 0, "byte %zu of a freed %zu-byte block kept", i, n);
    }
    return CHILD_PASS;
}

TEST(HardenedFrontEnd, AFreedBlockKeepsNoneOfItsContents) { EXPECT_CHILD_PASSES("HardFreedBlockIsZero", kHardened); }

PKTEST_CHILD(HardNoReuseAtOnce) {
    for (size_t n : {size_t(8), size_t(4096), kGuarded}) {
        void *p = pk_alloc(n), *stale = hide(p);
        pk_free(p);
        p = stale;
        /* the next allocations of the class, with frees between them too */
        for (int i = 0; i < 4; i++) {
            void *q = pk_alloc(n), *r = pk_alloc(n);
            CHILD_CHECK(q != p && r != p, "a %zu-byte block freed came back after %d allocations", n, 2 * i);
            pk_free(q);
        }
    }
    return CHILD_PASS;
}

TEST(HardenedFrontEnd, AFreedBlockIsNotHandedOutAgainAtOnce) { EXPECT_CHILD_PASSES("HardNoReuseAtOnce", kHardened); }

PKTEST_CHILD(HardReallocShrinkMoves) {
    for (size_t n : {size_t(8), size_t(4096), kGuarded}) {
        char *p = hide(pk_alloc(n));
        std::memset(p, 'k', n);
        char *q = hide(pk_realloc(p, n / 2));
        CHILD_CHECK(q && q != p, "realloc of %zu bytes to %zu kept the block", n, n / 2);
        for (size_t i = 0; i < n / 2; i++) CHILD_CHECK(q[i] == 'k', "realloc lost byte %zu", i);
        CHILD_CHECK(pk_usable_size(q) == n / 2, "usable %zu, not the size asked for", pk_usable_size(q));
        pk_free(q);
    }
    return CHILD_PASS;
}

TEST(HardenedFrontEnd, ReallocMovesABlockItShrinks) { EXPECT_CHILD_PASSES("HardReallocShrinkMoves", kHardened); }

/* A guarded block shrunk moves too, its pages moved to the new block
 * (large_shrink_guarded), not copied: a copy faulted in every page of the
 * new block. The stale pointer faults, named; the new block's check bytes
 * catch an overflow past its new size at its free. */
constexpr size_t kShrinkFrom = size_t(8) << 20, kShrinkTo = (size_t(4) << 20) + 100;

static long minor_faults() {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

PKTEST_CHILD(HardGuardedShrinkMovesPages) {
    char *p = hide(pk_alloc(kShrinkFrom));
    std::memset(p, 'm', kShrinkFrom);
    long before = minor_faults();
    char *q = hide(pk_realloc(p, kShrinkTo));
    long faults = minor_faults() - before;
    CHILD_CHECK(q && q != p, "the shrunk block stayed");
    for (size_t i = 0; i < kShrinkTo; i += 4093) CHILD_CHECK(q[i] == 'm', "byte %zu lost", i);
    CHILD_CHECK(q[kShrinkTo - 1] == 'm', "its last byte lost");
    CHILD_CHECK(pk_usable_size(q) == kShrinkTo, "usable %zu", pk_usable_size(q));
    std::fprintf(stderr, "%ld minor faults to shrink %zu bytes to %zu\n", faults, kShrinkFrom, kShrinkTo);
    CHILD_CHECK(faults < 64, "%ld minor faults: its pages were copied", faults);
    pk_free(q);
    /* within its last page: the check bytes it had there move with it */
    char *r = hide(pk_alloc(kShrinkFrom - 100));
    std::memset(r, 'n', kShrinkFrom - 100);
    char *t = hide(pk_realloc(r, kShrinkFrom - 200));
    CHILD_CHECK(t && t != r && t[kShrinkFrom - 201] == 'n', "shrunk within its last page");
    pk_free(t);
    return CHILD_PASS;
}

PKTEST_CHILD(HardGuardedShrunkStaleWrite) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *p = hide(pk_alloc(kShrinkFrom)), *stale = hide(p);
    std::memset(p, 'm', kShrinkFrom);
    char *q = hide(pk_realloc(p, kShrinkTo));
    CHILD_CHECK(q && q != p, "the shrunk block stayed");
    stale[100] = 1;
    return no_report();
}

PKTEST_CHILD(HardGuardedShrunkOverflow) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *p = hide(pk_alloc(kShrinkFrom));
    std::memset(p, 'm', kShrinkFrom);
    char *q = hide(pk_realloc(p, kShrinkTo));
    q[kShrinkTo] = 'A';
    pk_free(q);
    return no_report();
}

TEST(HardenedFrontEnd, AGuardedBlockShrunkMovesItsPagesNotACopy) {
    EXPECT_CHILD_PASSES("HardGuardedShrinkMovesPages", kHardened);
    expect_report("HardGuardedShrunkOverflow", "buffer overflow", "of 4194404 bytes was written past its end: bytes 0 to 0");
}

TEST(HardenedFrontEnd, AGuardedBlockShrunkLeavesItsOldPlaceNoAccess) {
    if (!faults_unwatched()) GTEST_SKIP() << "a tool's own fault handler stands first";
    expect_report("HardGuardedShrunkStaleWrite", "use after free", "byte 100 of the 8388608-byte block");
}

/* A buffer grown 16 bytes at a time, as programs build strings: in place
 * within a slot or a guarded block's mapping, moved past them to room for
 * half as much again, so it moves a few times per doubling. Moved at every
 * call, it was copied whole at each of them (quadratic in its length). */
PKTEST_CHILD(HardReallocGrowthMovesRarely) {
    const size_t most = size_t(4) << 20;
    char *p = nullptr;
    size_t moves = 0, calls = 0;
    for (size_t n = 16; n <= most; n += 16, calls++) {
        char *q = hide(pk_realloc(p, n));
        CHILD_CHECK(q, "realloc to %zu failed", n);
        if (q != p) moves++;
        q[n - 16] = static_cast<char>(n / 16);
        p = q;
    }
    for (size_t n = 16; n <= most; n += 16)
        CHILD_CHECK(p[n - 16] == static_cast<char>(n / 16), "byte %zu lost in a move", n - 16);
    std::fprintf(stderr, "%zu moves in %zu calls\n", moves, calls);
    CHILD_CHECK(moves <= 100, "%zu moves in %zu calls", moves, calls);
    pk_free(p);
    return CHILD_PASS;
}

TEST(HardenedFrontEnd, ABufferGrownAFewBytesAtATimeMovesRarely) {
    EXPECT_CHILD_PASSES("HardReallocGrowthMovesRarely", kHardened);
}

/* Grown in place, the block's checks follow its new size: an overflow of
 * one byte past it is reported at the free, naming that size. */
PKTEST_CHILD(HardGrownInPlaceOverflow) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *p = hide(pk_alloc(8));
    char *q = hide(pk_realloc(p, 12));
    CHILD_CHECK(q == p, "a block of 8 bytes grown to 12 moved (its slot holds 24)");
    q[12] = 'A';
    pk_free(q);
    return no_report();
}

PKTEST_CHILD(HardGrownGuardedOverflow) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *p = hide(pk_alloc(kGuarded));
    char *q = hide(pk_realloc(p, kGuarded + 1));  /* past its pages: moved, with room */
    char *r = hide(pk_realloc(q, kGuarded + 100)); /* within the room */
    CHILD_CHECK(q != p && r == q, "moved %d, then in place %d", q != p, r == q);
    r[kGuarded + 100] = 'A';
    pk_free(r);
    return no_report();
}

TEST(HardenedFrontEnd, ABlockGrownInPlaceIsCheckedAtItsNewSize) {
    expect_report("HardGrownInPlaceOverflow", "buffer overflow", "of 12 bytes (pool 'pk_alloc 32') was written past "
                                                                 "its end: bytes 0 to 0 past it changed");
    expect_report("HardGrownGuardedOverflow", "buffer overflow", "of 262244 bytes was written past its end: bytes 0 to 0");
}

/* ---- SIZE 0 and GUARDED: faults the handler names ---- */

PKTEST_CHILD(HardWriteOfASizeZeroBlock) {
    pk_set_error_handler(print_fields_handler, nullptr);
    /* the smallest class's pool made first: size 0 is not its request,
     * though the class holds the check word that a 0-byte block would
     * need, and the path that serves a made class comes first */
    pk_free(hide(pk_alloc(1)));
    char *z = hide(pk_alloc(0));
    z[0] = 1;
    return no_report();
}

PKTEST_CHILD(HardWriteOfACallocSizeZeroBlock) {
    pk_set_error_handler(print_fields_handler, nullptr);
    pk_free(hide(pk_calloc(1, 1)));
    char *z = hide(pk_calloc(0, 8));
    z[0] = 1;
    return no_report();
}

PKTEST_CHILD(HardGuardedOverflow) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *p = hide(pk_alloc(kGuarded));
    p[kGuarded] = 1;
    return no_report();
}

PKTEST_CHILD(HardGuardedUnderflow) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *p = hide(pk_alloc(kGuarded));
    p[-32] = 1;
    return no_report();
}

PKTEST_CHILD(HardGuardedUseAfterFree) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *p = hide(pk_alloc(kGuarded)), *stale = hide(p);
    pk_free(p);
    stale[100] = 1;
    return no_report();
}

PKTEST_CHILD(HardGuardedSlackOverflow) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *p = hide(pk_alloc(kGuarded - 100)); /* the last page's rest holds check bytes */
    p[kGuarded - 100] = 1;
    pk_free(hide(p));
    return no_report();
}

TEST(HardenedFrontEnd, AReadOrWriteOfASizeZeroBlockFaultsAndIsNamed) {
    if (!faults_unwatched()) GTEST_SKIP() << "a tool's own fault handler stands first";
    expect_report("HardWriteOfASizeZeroBlock", "size-0 block used", "a block of size 0");
    expect_report("HardWriteOfACallocSizeZeroBlock", "size-0 block used", "a block of size 0");
}

/* Blocks of size 0 are addresses of a reservation, taken in turn: past
 * its end they wrap, and skip the addresses of blocks still live (C's
 * malloc(0) and C++'s new of 0 bytes give a unique pointer each). */
PKTEST_CHILD(HardSizeZeroBlocksStayUnique) {
    void *kept[3] = {pk_alloc(0), pk_alloc(0), nullptr};
    void *first = pk_alloc(0);
    pk_free(first);
    kept[2] = pk_alloc(0);
    /* the reservation's addresses, each block 16 bytes apart */
    size_t lap = (size_t(64) << 20) / 16;
    bool wrapped = false;
    for (size_t i = 0; i < lap + 16; i++) {
        void *z = pk_alloc(0);
        CHILD_CHECK(z != nullptr, "pk_alloc(0) failed at %zu", i);
        for (void *k : kept) CHILD_CHECK(z != k, "pk_alloc(0) #%zu gave %p, a live block's address", i, z);
        wrapped |= z == first;
        pk_free(z);
    }
    CHILD_CHECK(wrapped, "the addresses did not wrap (a lap of %zu)", lap);
    for (void *k : kept) pk_free(k);
    return CHILD_PASS;
}

TEST(HardenedFrontEnd, BlocksOfSizeZeroStayUniqueWhileTheyLive) {
    if (slow_tool()) GTEST_SKIP() << "four million calls, slow under the tool (the plain build runs it)";
    EXPECT_CHILD_PASSES("HardSizeZeroBlocksStayUnique", kHardened);
}

PKTEST_CHILD(HardSizeZeroDoubleFree) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *z = hide(pk_alloc(0)), *stale = hide(z);
    pk_free(z);
    pk_free(stale);
    return no_report();
}

TEST(HardenedFrontEnd, ABlockOfSizeZeroFreedTwiceIsReported) {
    expect_report("HardSizeZeroDoubleFree", "double free", "a block of size 0 freed already");
}

TEST(HardenedFrontEnd, AnOverflowOfALargeBlockFaultsAtItsGuardAndIsNamed) {
    if (!faults_unwatched()) GTEST_SKIP() << "a tool's own fault handler stands first";
    expect_report("HardGuardedOverflow", "buffer overflow", "0 bytes past the 262144-byte block");
    expect_report("HardGuardedUnderflow", "buffer underflow", "32 bytes before the 262144-byte block");
}

TEST(HardenedFrontEnd, AUseAfterFreeOfALargeBlockFaultsAndIsNamed) {
    if (!faults_unwatched()) GTEST_SKIP() << "a tool's own fault handler stands first";
    expect_report("HardGuardedUseAfterFree", "use after free", "byte 100 of the 262144-byte block");
}

/* A guarded block's mapping, once HARD_FREED_BLOCKS (64) later frees let
 * it go, serves the next guarded block that fits it, at its end (against
 * its last guard page): the returned block is the first one's end less
 * its own length, zero, usable whole and checked at its free with no
 * report; the no-access pages before it are named as its underflow. */
constexpr size_t kFreedBlocks = 64;

char *recycled_block(size_t first, size_t then) {
    char *a = hide(pk_alloc(first));
    uintptr_t end = reinterpret_cast<uintptr_t>(a) + first;
    pk_free(a);
    for (size_t i = 0; i < kFreedBlocks; i++) pk_free(hide(pk_alloc(kGuarded)));
    char *b = hide(pk_alloc(then));
    return reinterpret_cast<uintptr_t>(b) + then == end ? b : nullptr;
}

PKTEST_CHILD(HardGuardedMappingRecycled) {
    char *b = recycled_block(kGuarded, kGuarded - (size_t(40) << 10));
    CHILD_CHECK(b != nullptr, "the next guarded block took a new mapping, not the one freed 65 frees before");
    size_t n = kGuarded - (size_t(40) << 10);
    for (size_t i = 0; i < n; i += 4096) CHILD_CHECK(b[i] == 0, "byte %zu of a recycled block", i);
    std::memset(b, 0x5A, n);
    pk_free(b);
    return CHILD_PASS;
}

PKTEST_CHILD(HardGuardedRecycledUnderflow) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *b = recycled_block(kGuarded, kGuarded - (size_t(40) << 10));
    if (!b) return CHILD_FAIL;
    b[-(40 << 10)] = 1; /* in the recycled mapping's spare front, past the page a new one has */
    return no_report();
}

TEST(HardenedFrontEnd, AGuardedBlocksMappingServesALaterBlockOnceItLeavesTheFreed) {
    EXPECT_CHILD_PASSES("HardGuardedMappingRecycled", kHardened);
}

TEST(HardenedFrontEnd, AnUnderflowIntoARecycledMappingsSpareFrontIsNamed) {
    if (!faults_unwatched()) GTEST_SKIP() << "a tool's own fault handler stands first";
    expect_report("HardGuardedRecycledUnderflow", "buffer underflow", "40960 bytes before the 221184-byte block");
}

TEST(HardenedFrontEnd, AnOverflowIntoALargeBlocksLastPageIsReportedAtItsFree) {
    expect_report("HardGuardedSlackOverflow", "buffer overflow", "bytes 0 to 0 past it changed");
}

/* ---- GUARDED past the system's cap on mappings ---- */

/* Each guarded block holds two mappings, and Linux caps a process's at
 * 65,530 by default: past GUARDS_MAX (8,192, policy.h) guarded
 * mappings held, a block that a class serves takes a class block with its
 * check word, a larger one a plain mapping, so a program holding tens of
 * thousands of such blocks gets them (it got NULL at the cap). */
constexpr size_t kGuardedMax = 8192;
constexpr size_t kPastCap = kGuardedMax + 4000;

std::vector<char *> blocks_past_the_cap(long *grew) {
    long before = mapping_count();
    std::vector<char *> v;
    for (size_t i = 0; i < kPastCap; i++) {
        char *p = hide(pk_alloc(70000));
        if (!p) break;
        p[0] = 1;
        p[69999] = 2;
        v.push_back(p);
    }
    *grew = mapping_count() - before;
    return v;
}

PKTEST_CHILD(HardGuardedPastTheCap) {
    long grew;
    std::vector<char *> v = blocks_past_the_cap(&grew);
    CHILD_CHECK(v.size() == kPastCap, "pk_alloc(70000) returned NULL after %zu blocks", v.size());
    /* two a guarded block, and the class slabs of slots past a place
     * take a mapping each up to HUGE_OWN_MAX (1,024), then share regions */
    CHILD_CHECK(grew >= long(kGuardedMax) && grew < long(2 * kGuardedMax + 1024 + 500),
                "%zu blocks of 70,000 bytes took %ld mappings", v.size(), grew);
    /* past it: a block the classes hold, one past them, zeroed ones, resized ones */
    for (size_t n : {size_t(65536), size_t(200000), size_t(1) << 20, size_t(5) << 20}) {
        char *p = hide(pk_calloc(1, n));
        CHILD_CHECK(p != nullptr, "pk_calloc(1, %zu) past the cap", n);
        for (size_t i = 0; i < n; i += 4093) CHILD_CHECK(p[i] == 0, "byte %zu of %zu", i, n);
        CHILD_CHECK(pk_usable_size(p) >= n, "usable %zu of %zu", pk_usable_size(p), n);
        std::memset(p, 0x5A, n);
        pk_free(p);
    }
    v[0] = hide(pk_realloc(v[0], 150000));
    v[1] = hide(pk_realloc(v[1], 65600));
    CHILD_CHECK(v[0] && v[0][0] == 1 && v[0][69999] == 2, "a block grown past the cap kept its bytes");
    CHILD_CHECK(v[1] && v[1][0] == 1, "a block shrunk past the cap kept its bytes");
    for (char *p : v) pk_free(p);
    /* all freed, the guarded mappings held are the last freed and the
     * recycled: the next blocks are guarded again, a mapping or two each */
    long before = mapping_count();
    for (int i = 0; i < 200; i++) v[i] = hide(pk_alloc(70000));
    long again = mapping_count() - before;
    CHILD_CHECK(again >= 100, "200 blocks after the rest were freed took %ld mappings: not guarded", again);
    for (int i = 0; i < 200; i++) pk_free(v[i]);
    return CHILD_PASS;
}

PKTEST_CHILD(HardOverflowPastTheCap) {
    pk_set_error_handler(print_fields_handler, nullptr);
    long grew;
    std::vector<char *> v = blocks_past_the_cap(&grew);
    char *p = hide(pk_alloc(70000));
    p[70000] = 'A'; /* no guard page after it: its check bytes */
    pk_free(hide(p));
    return no_report();
}

TEST(HardenedFrontEnd, BlocksPastTheCapOnGuardedMappingsComeFromTheClassesAndPlainMappings) {
    if (slow_tool()) GTEST_SKIP() << "twelve thousand mappings counted, beside the tool's own, under a slow tool";
    EXPECT_CHILD_PASSES("HardGuardedPastTheCap", kHardened);
    expect_report("HardOverflowPastTheCap", "buffer overflow", "of 70000 bytes (pool 'pk_alloc");
}

/* ---- the blocks themselves ---- */

PKTEST_CHILD(HardBlocksAreSound) {
    /* every size class, aligned ones, calloc's: usable as asked, checked
     * at free without a report (the error handler would abort) */
    for (size_t n = 0; n < 70000; n = n < 64 ? n + 1 : n * 5 / 4) {
        char *p = hide(pk_alloc(n));
        CHILD_CHECK(p != nullptr, "pk_alloc(%zu)", n);
        CHILD_CHECK(pk_usable_size(p) == n, "usable %zu of %zu", pk_usable_size(p), n);
        std::memset(p, 0x5A, n);
        char *q = hide(pk_aligned_alloc(64, n + 1));
        CHILD_CHECK(q && reinterpret_cast<uintptr_t>(q) % 64 == 0, "pk_aligned_alloc(64, %zu)", n + 1);
        std::memset(q, 0x5A, n + 1);
        char *z = hide(pk_calloc(1, n + 3));
        for (size_t i = 0; i < n + 3; i++) CHILD_CHECK(z[i] == 0, "calloc byte %zu", i);
        pk_free_sized(p, n);
        pk_free(q);
        pk_free(z);
    }
    return CHILD_PASS;
}

TEST(HardenedFrontEnd, BlocksOfEverySizeAreUsableAndCheckCleanly) {
    EXPECT_CHILD_PASSES("HardBlocksAreSound", kHardened);
}

PKTEST_CHILD(HardBlocksOnAPlaceAnotherPoolUsed) {
    pk_set_error_handler(print_fields_handler, nullptr);
    /* a typed pool's slabs, written all over, go back (kept warm for the
     * purge delay) and the class pool's next slabs take their places */
    pk_pool_config c;
    std::memset(&c, 0, sizeof c);
    c.name = "scribbled";
    c.size = 200;
    pk_pool *p = pk_pool_create(&c);
    std::vector<void *> objs;
    for (int i = 0; i < 4000; i++) {
        objs.push_back(pk_pool_alloc(p));
        std::memset(objs.back(), 0xAB, 200);
    }
    for (void *o : objs) pk_pool_free(p, o);
    pk_pool_destroy(p);
    for (int i = 0; i < 8000; i++) {
        char *b = hide(pk_alloc(40));
        for (size_t k = 0; k < 40; k++) CHILD_CHECK(b[k] == 0, "byte %zu of block %d is not zero", k, i);
    }
    return CHILD_PASS;
}

TEST(HardenedFrontEnd, BlocksOnAPlaceAnotherPoolUsedComeOutZeroWithNoReport) {
    EXPECT_CHILD_PASSES("HardBlocksOnAPlaceAnotherPoolUsed", kHardened);
}

/* A class slab's first block has its slab's lead before it, zero, where
 * the slab before in the region may hold anything: here a typed pool's
 * live objects, which fill their slabs to the last byte. Freed cleanly,
 * no block is reported (read past its slab's start, the word before the
 * first block would be the other slab's bytes: an underflow reported). */
PKTEST_CHILD(HardFirstBlocksAfterAFullSlab) {
    pk_set_error_handler(print_fields_handler, nullptr);
    pk_pool_config c;
    std::memset(&c, 0, sizeof c);
    c.name = "full to the end";
    c.size = 256; /* 256 to a slab: no byte left over */
    pk_pool *p = pk_pool_create(&c);
    std::vector<void *> objs, blocks;
    for (int round = 0; round < 8; round++) {
        for (int i = 0; i < 2000; i++) {
            objs.push_back(pk_pool_alloc(p));
            std::memset(objs.back(), 0xAB, 256);
        }
        for (int i = 0; i < 2000; i++) blocks.push_back(hide(pk_alloc(48)));
    }
    for (void *b : blocks) pk_free(b);
    for (void *o : objs) pk_pool_free(p, o);
    pk_pool_destroy(p);
    return CHILD_PASS;
}

TEST(HardenedFrontEnd, TheFirstBlockOfASlabIsCheckedAgainstItsLeadNotTheSlabBefore) {
    EXPECT_CHILD_PASSES("HardFirstBlocksAfterAFullSlab", kHardened);
}

/* ---- memory: a slab whose blocks all came home empties ---- */

/* A field of pk_pool_stats summed over every pool. */
struct PoolsSum {
    size_t pk_pool_stats::*field;
    size_t n;
};

static void add_field(pk_pool *pool, void *arg) {
    pk_pool_stats st;
    pk_pool_stats_get(pool, &st);
    auto *sum = static_cast<PoolsSum *>(arg);
    sum->n += st.*sum->field;
}

static size_t pools_sum(size_t pk_pool_stats::*field) {
    PoolsSum sum = {field, 0};
    pk_pool_foreach(add_field, &sum);
    return sum.n;
}

static size_t slabs_now() { return pools_sum(&pk_pool_stats::slabs); }

static size_t live_now() { return pools_sum(&pk_pool_stats::live); }

/* A thread's block freed in its key destructors' last round: what the C
 * library does with blocks of its own once the destructors are done (a
 * thread's TLS of other threads' modules). */
struct LateFree {
    pthread_key_t key;
    int rounds = 0;
    void *block = nullptr;
};

static void late_free(void *arg) {
    auto *f = static_cast<LateFree *>(arg);
    if (++f->rounds < PTHREAD_DESTRUCTOR_ITERATIONS) {
        pthread_setspecific(f->key, f); /* another round */
        return;
    }
    pk_free(f->block);
}

PKTEST_CHILD(HardFreesPastTheLastDestructorRound) {
    pk_free(pk_alloc(64)); /* the front end set up, its key made before the test's */
    pthread_key_t key;
    CHILD_CHECK(pthread_key_create(&key, late_free) == 0, "no key");
    size_t before = live_now();
    for (int t = 0; t < 200; t++) {
        LateFree f;
        f.key = key;
        std::thread([&f] {
            pk_free(pk_alloc(64)); /* the thread's queues made */
            f.block = pk_alloc(64);
            pthread_setspecific(f.key, &f);
        }).join();
        CHILD_CHECK(f.rounds == PTHREAD_DESTRUCTOR_ITERATIONS, "%d destructor rounds", f.rounds);
    }
    size_t after = live_now();
    CHILD_CHECK(after <= before + 8, "live blocks %zu -> %zu over 200 threads that freed one each at their exit",
                before, after);
    return CHILD_PASS;
}

TEST(HardenedFrontEnd, ABlockFreedPastAThreadsLastDestructorRoundGoesBack) {
    if (PKTEST_TSAN) GTEST_SKIP() << "the tool ends the thread's state in a destructor of its own: later calls fault in it";
    EXPECT_CHILD_PASSES("HardFreesPastTheLastDestructorRound", kHardened);
}

/* mstress's shape: the main thread and a thread that comes and goes each
 * allocate, free at random and swap blocks through a shared array. Every
 * slab's lead (no block held back in it) lets a slab whose blocks all came
 * home empty: the slab count levels off (after about 60 generations here,
 * as the threads' quarantines and ready blocks fill), where a slab that
 * could not empty made it grow with every generation (62, 198 and 705
 * slabs after 20, 100 and 400). The most slabs over the second quarter of
 * the generations and over the last one are compared. */
PKTEST_CHILD(HardGenerationsBesideALongLivedThread) {
    const size_t gens = 400, per_thread = 3000, transfers = 500;
    std::vector<std::atomic<void *>> transfer(transfers);
    for (auto &t : transfer) t.store(nullptr);
    auto work = [&](uint64_t seed) {
        uint64_t r = seed;
        std::vector<void *> objs;
        for (size_t i = 0; i < per_thread; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            void *o = pk_alloc(16 + (r >> 33) % 240);
            if (i % 4 == 0) o = transfer[(r >> 20) % transfers].exchange(o);
            if (o) objs.push_back(o);
            if (objs.size() > 64) {
                size_t k = (r >> 40) % objs.size();
                pk_free(objs[k]);
                objs[k] = objs.back();
                objs.pop_back();
            }
        }
        for (void *o : objs) pk_free(o);
    };
    size_t early = 0, end = 0;
    for (size_t g = 0; g < gens; g++) {
        std::thread([&, g] { work(2 * g + 1); }).join();
        work(2 * g + 2);
        size_t n = slabs_now();
        if (g >= gens / 4 && g < gens / 2 && n > early) early = n;
        if (g >= gens - gens / 4 && n > end) end = n;
    }
    CHILD_CHECK(end <= early + early / 5 + 2,
                "slabs grew with the generations: at most %zu over the second quarter, %zu over the last", early, end);
    for (auto &t : transfer) pk_free(t.exchange(nullptr));
    return CHILD_PASS;
}

TEST(HardenedFrontEnd, ALongLivedThreadBesideThreadsThatComeAndGoKeepsTheSlabCountBounded) {
    EXPECT_CHILD_PASSES("HardGenerationsBesideALongLivedThread", kHardened);
}

/* What pk_good_size says a block of n bytes makes usable, it does: the
 * check bytes start past it, so writing all of it is no overflow, at every
 * size up to past the class pools and at sizes mapped alone. */
PKTEST_CHILD(HardGoodSizeIsUsable) {
    std::vector<size_t> sizes;
    for (size_t n = 0; n <= 4200; n++) sizes.push_back(n);
    for (size_t c : alloc_classes())
        for (size_t d : {c - 1, c, c + 1}) sizes.push_back(d);
    for (size_t n : {size_t(100000), size_t(1) << 20, (size_t(5) << 20) + 3}) sizes.push_back(n);
    for (size_t n : sizes) {
        size_t good = pk_good_size(n);
        char *p = hide(static_cast<char *>(pk_alloc(n)));
        CHILD_CHECK(p != nullptr, "pk_alloc(%zu) failed", n);
        CHILD_CHECK(pk_usable_size(p) == good, "pk_alloc(%zu): usable %zu, good size %zu", n, pk_usable_size(p), good);
        std::memset(p, 'g', good);
        pk_free(p); /* reports an overflow past the usable bytes */
    }
    return CHILD_PASS;
}

TEST(HardenedFrontEnd, GoodSizeIsWhatABlockMakesUsable) { EXPECT_CHILD_PASSES("HardGoodSizeIsUsable", kHardened); }

PKTEST_CHILD(HardAndDebugBlocks) {
    for (size_t n : {size_t(8), size_t(100), size_t(4096)}) {
        for (int i = 0; i < 100; i++) {
            char *p = hide(pk_alloc(n));
            std::memset(p, 'd', n);
            pk_free(p);
        }
        void *p = pk_alloc(n);
        CHILD_CHECK(pk_usable_size(p) == pk_good_size(n), "usable %zu of %zu: not debug mode's class",
                    pk_usable_size(p), n);
        pk_free(p);
    }
    return CHILD_PASS;
}

/* Freed guarded blocks hold their address space while they wait (named
 * at a use after free, then recycled); where a limit on the process's
 * address space (RLIMIT_AS) refuses a new one, they let it go: a block
 * freed to make room for the next makes it. With room for one 1 MiB block
 * and a half, each of 50 blocks freed before the next is made; none
 * fails. */
PKTEST_CHILD(HardFreedBlocksLetGoUnderALimit) {
    if (PKTEST_ASAN || PKTEST_TSAN || running_under_valgrind())
        CHILD_SKIP("the tool reserves address space of its own, past any such limit");
    const size_t len = size_t(1) << 20;
    pk_free(pk_alloc(len)); /* the front end's own records, before the limit */
    struct rlimit was;
    CHILD_CHECK(getrlimit(RLIMIT_AS, &was) == 0, "getrlimit: %s", std::strerror(errno));
    size_t base = vm_bytes();
    CHILD_CHECK(base > 0, "no VmSize in /proc/self/status");
    struct rlimit rl = {base + len * 3 / 2, was.rlim_max};
    CHILD_CHECK(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit: %s", std::strerror(errno));
    for (int i = 0; i < 50; i++) {
        char *p = static_cast<char *>(pk_alloc(len));
        CHILD_CHECK(p, "block %d of %zu bytes: NULL under a limit %zu KiB over the process's", i, len,
                    len * 3 / 2 >> 10);
        p[0] = 1;
        pk_free(p);
    }
    CHILD_CHECK(setrlimit(RLIMIT_AS, &was) == 0, "setrlimit: %s", std::strerror(errno));
    return CHILD_PASS;
}

TEST(HardenedFrontEnd, FreedBlocksLetTheirAddressSpaceGoWhereALimitRefusesMore) {
    EXPECT_CHILD_PASSES("HardFreedBlocksLetGoUnderALimit", kHardened);
}

TEST(HardenedFrontEnd, DebugModeTakesPrecedenceOverIt) {
    EXPECT_CHILD_PASSES("HardAndDebugBlocks", {{"POOLKIT_HARDENED", "1"}, {"POOLKIT_DEBUG", "1"}});
}

PKTEST_CHILD(DefaultUsableIsTheClass) {
    void *p = pk_alloc(20);
    CHILD_CHECK(pk_usable_size(p) == 32, "usable %zu", pk_usable_size(p));
    pk_free(p);
    void *q = pk_alloc(20);
    CHILD_CHECK(q == p, "default mode hands the block freed last out again (LIFO), got another");
    pk_free(q);
    return CHILD_PASS;
}

TEST(HardenedFrontEnd, DefaultModeKeepsItsClassesAndItsOrder) {
    EXPECT_CHILD_PASSES("DefaultUsableIsTheClass", {{"POOLKIT_HARDENED", "0"}, {"POOLKIT_DEBUG", "0"}});
}

/* ---- WARM: a freed guarded block's pages serve the next block its
 * mapping holds, cleared, with no page fault (HARD_WARM_BYTES) ---- */

/* Eight live guarded blocks of kGuarded bytes replaced in turn, each filled:
 * the blocks made after the freed ones' mappings came round again (past
 * the last freed, HARD_FREED_BLOCKS) fault in at most a page in eight,
 * and every one reads zero before its fill. The pages given back at each
 * free faulted in every page of every block. */
PKTEST_CHILD(HardGuardedBlocksReplacedReusePages) {
    const size_t live = 8, rounds = 400, warmup = 200, pages = kGuarded / page_size();
    char *slot[live] = {};
    long before = 0;
    for (size_t r = 0; r < rounds; r++) {
        if (r == warmup) before = minor_faults();
        size_t i = r % live;
        pk_free(slot[i]);
        char *p = hide(pk_alloc(kGuarded));
        CHILD_CHECK(p, "pk_alloc(%zu) failed", kGuarded);
        for (size_t k = 0; k < kGuarded; k += 512)
            CHILD_CHECK(p[k] == 0 && p[kGuarded - 1 - k] == 0, "round %zu: byte %zu of a new block not zero", r, k);
        std::memset(p, 'w', kGuarded);
        slot[i] = p;
    }
    long faults = minor_faults() - before;
    for (char *p : slot) pk_free(p);
    std::printf("%zu blocks of %zu KiB replaced: %ld page faults (%zu pages filled)\n", rounds - warmup,
                kGuarded >> 10, faults, (rounds - warmup) * pages);
    CHILD_CHECK(faults <= long((rounds - warmup) * pages / 8), "%ld page faults for %zu blocks of %zu pages", faults,
                rounds - warmup, pages);
    return CHILD_PASS;
}

TEST(HardenedFrontEnd, GuardedBlocksReplacedReuseTheFreedOnesPages) {
    if (!faults_unwatched()) GTEST_SKIP() << "the tool's own mappings and page faults stand beside the blocks'";
    EXPECT_CHILD_PASSES("HardGuardedBlocksReplacedReusePages", kHardened);
}

/* The freed blocks' pages kept resident go back once no guarded block was
 * freed for the purge delay (on the next sweep, here a small block's slow
 * path), and at pk_collect(1). */
PKTEST_CHILD(HardWarmPagesGoBackWhenIdle) {
    const size_t n = 64;
    for (int how = 0; how < 2; how++) {
        std::vector<char *> blocks;
        for (size_t i = 0; i < n; i++) {
            blocks.push_back(hide(pk_alloc(kGuarded)));
            std::memset(blocks.back(), 'i', kGuarded);
        }
        for (char *p : blocks) pk_free(p);
        size_t held = rss_bytes();
        pk_process_stats st;
        pk_stats_get(&st);
        size_t retained = st.retained_bytes;
        CHILD_CHECK(retained >= n * kGuarded / 2, "the report's retained bytes, %zu, leave out the %zu freed blocks",
                    retained, n);
        if (how == 0) {
            usleep(150 * 1000); /* past POOLKIT_PURGE_DELAY_MS */
            for (int i = 0; i < 2000; i++) pk_free(pk_alloc(size_t(1) << (4 + i % 12)));
        } else {
            pk_collect(1);
        }
        size_t after = rss_bytes();
        std::printf("%s: resident %zu MiB -> %zu MiB\n", how ? "pk_collect(1)" : "idle", held >> 20, after >> 20);
        CHILD_CHECK(held > after + n * kGuarded / 2, "%s: resident %zu -> %zu bytes with %zu freed blocks of %zu",
                    how ? "pk_collect(1)" : "idle", held, after, n, kGuarded);
        pk_stats_get(&st);
        CHILD_CHECK(st.retained_bytes + n * kGuarded / 2 <= retained, "%s: retained %zu -> %zu bytes",
                    how ? "pk_collect(1)" : "idle", retained, st.retained_bytes);
    }
    return CHILD_PASS;
}

TEST(HardenedFrontEnd, FreedBlocksPagesKeptResidentGoBackWhenIdle) {
    if (!faults_unwatched()) GTEST_SKIP() << "resident size is the tool's too";
    EXPECT_CHILD_PASSES("HardWarmPagesGoBackWhenIdle",
                        {{"POOLKIT_HARDENED", "1"}, {"POOLKIT_DEBUG", "0"}, {"POOLKIT_PURGE_DELAY_MS", "50"}});
}

/* With a purge delay of 0 nothing waits: a freed guarded block's pages go
 * back at its free (no sweep runs to give them back later). */
PKTEST_CHILD(HardWarmNoneWithDelayZero) {
    const size_t n = 64;
    std::vector<char *> blocks;
    for (size_t i = 0; i < n; i++) {
        blocks.push_back(hide(pk_alloc(kGuarded)));
        std::memset(blocks.back(), 'z', kGuarded);
    }
    size_t held = rss_bytes();
    for (char *p : blocks) pk_free(p);
    size_t after = rss_bytes();
    CHILD_CHECK(held > after + n * kGuarded / 2, "resident %zu -> %zu bytes at the frees of %zu blocks of %zu",
                held, after, n, kGuarded);
    return CHILD_PASS;
}

TEST(HardenedFrontEnd, WithAPurgeDelayOfZeroFreedBlocksPagesGoBackAtTheirFree) {
    if (!faults_unwatched()) GTEST_SKIP() << "resident size is the tool's too";
    EXPECT_CHILD_PASSES("HardWarmNoneWithDelayZero",
                        {{"POOLKIT_HARDENED", "1"}, {"POOLKIT_DEBUG", "0"}, {"POOLKIT_PURGE_DELAY_MS", "0"}});
}
