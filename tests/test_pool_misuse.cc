/* Pools: misuse detected in debug and hardened modes (death tests). The
 * reports of each kind of misuse, fields and message, are tests/test_safety.cc's;
 * here, what only these cover: a double free found among thousands of
 * frees, stack pointers, the default handler's line, a handler that
 * returns, and the pools that check on their slow paths. */
#include "child.h"
#include "support.h"

#include <sys/wait.h>

#include <csignal>
#include <atomic>
#include <set>
#include <thread>

#if PKTEST_ASAN
#  include <sanitizer/asan_interface.h>
#endif

using namespace pktest;

/* ======================================================================
 * PK_POOL_DEBUG and PK_POOL_HARDENED: detected misuse (death tests)
 * ==================================================================== */

namespace {
std::string fatal_line(const char *what, const char *pool, const void *ptr) {
    return std::string("HANDLER severity=FATAL what=") + what + " pool=" + pool + " ptr=" + ptr_str(ptr);
}
}  // namespace

TEST(PoolDebugDeathTest, DoubleFreeAfterManyOtherFreesIsFatal) {
    PoolPtr p = make_pool(32, 0, PK_POOL_DEBUG, "dbgpool");
    std::vector<void *> objs = alloc_n(p.get(), 5000);
    void *victim = objs[17];
    PKTEST_EXPECT_REPORT(
        {
            for (void *o : objs) pk_pool_free(p.get(), o);
            pk_pool_free(p.get(), victim);
        },
        fatal_line("double free", "dbgpool", victim));
    free_all(p.get(), objs);
}

TEST(PoolDebugDeathTest, FreeOfAStackPointerIsFatal) {
    PoolPtr p = make_pool(64, 0, PK_POOL_DEBUG, "dbgpool");
    alignas(64) char stack[64];
    PKTEST_EXPECT_REPORT(
        {
            pk_pool_free(p.get(), stack);
        },
        fatal_line("foreign pointer", "dbgpool", stack));
}

/* pool.h: NULL is no object; every mode reports it, inline paths included
 * (a pool with a current slab), rather than ignoring it as free(NULL) does. */
TEST(PoolDebugDeathTest, FreeOfNullIsFatalInEveryMode) {
    for (unsigned flags : {0u, unsigned(PK_POOL_LOCAL), unsigned(PK_POOL_DEBUG), unsigned(PK_POOL_HARDENED)}) {
        PoolPtr p = make_pool(32, 0, flags, "nullfree");
        void *live = pk_pool_alloc(p.get());
        ASSERT_NE(live, nullptr);
        PKTEST_EXPECT_REPORT(
            {
                pk_pool_free(p.get(), nullptr);
            },
            "HANDLER severity=FATAL what=null pointer pool=nullfree ptr=[(]nil[)]");
        pk_pool_free(p.get(), live);
    }
}

TEST(PoolDebugDeathTest, DefaultHandlerPrintsOneLineNamingFaultPoolAndPointer) {
    PoolPtr p = make_pool(64, 0, PK_POOL_DEBUG, "dbgpool");
    void *a = pk_pool_alloc(p.get());
    std::string ptr = ptr_str(a);
    EXPECT_DEATH(
        {
            pk_set_error_handler(nullptr, nullptr);
            pk_pool_free(p.get(), a);
            pk_pool_free(p.get(), a);
        },
        "poolkit: double free: [^\n]*(dbgpool[^\n]*" + ptr + "|" + ptr + "[^\n]*dbgpool)");
    pk_pool_free(p.get(), a);
}

namespace {
void silent_handler(const pk_error *, void *) {}
}  // namespace

TEST(PoolDebugDeathTest, FatalErrorWhoseHandlerReturnsStillAborts) {
    PoolPtr p = make_pool(64, 0, PK_POOL_DEBUG, "dbgpool");
    void *a = pk_pool_alloc(p.get());
    EXPECT_EXIT(
        {
            pk_set_error_handler(silent_handler, nullptr);
            pk_pool_free(p.get(), a);
            pk_pool_free(p.get(), a);
            std::fprintf(stderr, "returned after a double free\n");
            std::_Exit(0);
        },
        ::testing::KilledBySignal(SIGABRT), "");
    pk_pool_free(p.get(), a);
}

TEST(PoolHardenedDeathTest, FreeOfAnotherPoolsObjectIsFatal) {
    PoolPtr p = make_pool(64, 0, PK_POOL_HARDENED, "hardpool");
    PoolPtr q = make_pool(64, 0, 0, "otherpool");
    void *o = pk_pool_alloc(q.get());
    PKTEST_EXPECT_REPORT(
        {
            pk_pool_free(p.get(), o);
        },
        "HANDLER severity=FATAL what=[a-z -]+ pool=hardpool ptr=" + ptr_str(o));
    pk_pool_free(q.get(), o);
}

namespace {
alignas(64) char forged_target[64 * 64];

/* Frees objs, overwrites them with forged links, then allocates: exits 0 if
 * only genuine free objects came out, 1 if a forged one did (a detected
 * corruption aborts instead). */
void forge_links_then_allocate(pk_pool *p, std::vector<void *> objs, std::vector<void *> live) {
    std::set<void *> live_set(live.begin(), live.end());
    for (void *o : objs) pk_pool_free(p, o);
    const uintptr_t forged[3] = {reinterpret_cast<uintptr_t>(forged_target + 64),
                                 reinterpret_cast<uintptr_t>(live[3]), 0x4141414141414141ull};
    for (size_t i = 0; i < objs.size(); i++) {
        uintptr_t *w = static_cast<uintptr_t *>(objs[i]);
        for (size_t k = 0; k < 8; k++) w[k] = forged[(i + k) % 3];
    }
    for (int i = 0; i < 400; i++) {
        void *o = pk_pool_alloc(p);
        if (!o) continue;
        if (pk_pool_owner(o) != p || live_set.count(o)) {
            std::fprintf(stderr, "forged pointer %p handed out\n", o);
            std::_Exit(1);
        }
        live_set.insert(o);
    }
    std::_Exit(0);
}

bool exited_cleanly_or_aborted(int status) {
    return (WIFEXITED(status) && WEXITSTATUS(status) == 0) || (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
}
}  // namespace

/* Overwrites freed objects (a use after free) with pointers of the caller's
 * choosing; a hardened pool either reports it or hands out only its own free
 * objects, never a forged one. */
TEST(PoolHardenedDeathTest, ForgedFreeListLinkIsNeverHandedOut) {
    if (running_under_valgrind() || PKTEST_ASAN) GTEST_SKIP() << "writes to freed memory on purpose";
    PoolPtr p = make_pool(64, 0, PK_POOL_HARDENED, "hardpool");
    std::vector<void *> objs = alloc_n(p.get(), 200);
    std::vector<void *> live = alloc_n(p.get(), 10);
    EXPECT_EXIT(forge_links_then_allocate(p.get(), objs, live), exited_cleanly_or_aborted, "");
    free_all(p.get(), objs);
    free_all(p.get(), live);
}

/* ======================================================================
 * Default pools: a double free with other frees between (no cheap check
 * sees it) is reported when a list holding the object twice is walked,
 * never walked for ever
 * ==================================================================== */

namespace {
/* Two slabs' worth of 64-byte objects: the thread's current slab is the
 * second, so t and u, of the first, go home to an owned slab that is not
 * current. h goes first, onto the thread's empty list while hot
 * (HOT_FREES), so that t and u go onto their slab's own list, where t,
 * freed again under u, is not the head: the list holds it twice. (t freed
 * again while it is the head of either list is reported at once:
 * DoubleFreeOfTheHotObjectWithAFreeBetweenIsReportedAtOnce.) */
struct OtherSlabDoubleFree {
    PoolPtr p = make_pool(64, 0, 0, "twice");
    std::vector<void *> objs = alloc_n(p.get(), 2048);
    void *t = objs[10], *u = objs[11], *h = objs[12];
    void free_twice() {
        pk_pool_free(p.get(), h);
        pk_pool_free(p.get(), t);
        pk_pool_free(p.get(), u);
        pk_pool_free(p.get(), t);
    }
    ~OtherSlabDoubleFree() {
        for (void *o : objs)
            if (o != t && o != u) pk_pool_free(p.get(), o);
        pk_pool_free(p.get(), t);
        pk_pool_free(p.get(), u);
    }
};

void free_bulk_of(pk_pool *p, std::initializer_list<void *> objs) {
    std::vector<void *> v(objs);
    pk_pool_free_bulk(p, v.data(), v.size());
}

std::string double_free_of(const char *pool, const void *obj) {
    return "HANDLER severity=FATAL what=corrupted free list pool=" + std::string(pool) + " ptr=" + ptr_str(obj) +
           "\nMESSAGE [^\n]*most likely a double free of object " + ptr_str(obj) + " of pool '" + pool + "'";
}
}  // namespace

TEST(PoolDefaultDeathTest, DoubleFreeIntoAnotherSlabWithAFreeBetweenIsReportedByVisit) {
    OtherSlabDoubleFree d;
    PKTEST_EXPECT_REPORT(
        {
            alarm(10);
            d.free_twice();
            std::vector<void *> seen;
            pk_pool_visit(d.p.get(), collect, &seen);
            std::fprintf(stderr, "no report\n");
        },
        double_free_of("twice", d.t));
}

TEST(PoolDefaultDeathTest, DoubleFreeOfTheHotObjectWithAFreeBetweenIsReportedAtOnce) {
    OtherSlabDoubleFree d;
    PKTEST_EXPECT_REPORT(
        {
            alarm(10);
            pk_pool_free(d.p.get(), d.t); /* onto the thread's empty list (HOT_FREES) */
            pk_pool_free(d.p.get(), d.u); /* onto its slab's own list */
            pk_pool_free(d.p.get(), d.t); /* the thread's list's head again */
            std::fprintf(stderr, "no report\n");
        },
        "HANDLER severity=FATAL what=double free pool=twice ptr=" + ptr_str(d.t));
}

/* pk_pool_free_bulk sends the objects of one slab that follow each other
 * home in one move: each is checked against the run before it, the thread
 * list's head and the slab list's head, as single frees would be. h goes
 * onto the thread's empty list first (HOT_FREES), t home too with
 * t_home, then objs in one call. */
static void bulk_free_after(OtherSlabDoubleFree &d, bool t_home, std::initializer_list<void *> objs) {
    alarm(10);
    pk_pool_free(d.p.get(), d.h);
    if (t_home) pk_pool_free(d.p.get(), d.t); /* the head of its slab's list */
    free_bulk_of(d.p.get(), objs);
    std::fprintf(stderr, "no report\n");
}

TEST(PoolDefaultDeathTest, ABulkFreeOfAnObjectTwiceInARowIsReported) {
    OtherSlabDoubleFree d;
    PKTEST_EXPECT_REPORT(bulk_free_after(d, false, {d.t, d.u, d.u}),
                         "HANDLER severity=FATAL what=double free pool=twice ptr=" + ptr_str(d.u));
}

TEST(PoolDefaultDeathTest, ABulkFreeOfTheThreadListsHeadWithinARunIsReported) {
    OtherSlabDoubleFree d; /* h, of t's and u's slab, is the thread list's head */
    PKTEST_EXPECT_REPORT(bulk_free_after(d, false, {d.t, d.u, d.h}),
                         "HANDLER severity=FATAL what=double free pool=twice ptr=" + ptr_str(d.h));
}

TEST(PoolDefaultDeathTest, ABulkFreeWhoseRunStartsAtItsSlabListsHeadIsReported) {
    OtherSlabDoubleFree d;
    PKTEST_EXPECT_REPORT(bulk_free_after(d, true, {d.t, d.u}),
                         "HANDLER severity=FATAL what=double free pool=twice ptr=" + ptr_str(d.t));
}

TEST(PoolDefaultDeathTest, DoubleFreeIntoAnotherSlabWithAFreeBetweenIsReportedByDestroy) {
    OtherSlabDoubleFree d;
    PKTEST_EXPECT_REPORT(
        {
            alarm(10);
            d.free_twice();
            pk_pool_destroy(d.p.release()); /* with the others live: a leak warning first */
            std::fprintf(stderr, "no report\n");
        },
        double_free_of("twice", d.t));
}

/* A thread's remote free that fills its pending chain (REMOTE_BATCH, 64)
 * sends the chain home at once, that object at its head, at the head of
 * the slab's remote list; the same object freed again by that thread
 * would start a new chain and cut the one home short (its link), and is
 * reported there. The owner lives on and collects nothing meanwhile. */
TEST(PoolDefaultDeathTest, ARemoteFreeThatEndedAChainFreedAgainIsReported) {
    PKTEST_EXPECT_REPORT(
        {
            alarm(10);
            PoolPtr p = make_pool(64, 0, 0, "chain");
            std::vector<void *> objs = alloc_n(p.get(), 64);
            std::thread([&] {
                for (void *o : objs) pk_pool_free(p.get(), o);
                pk_pool_free(p.get(), objs.back());
            }).join();
            std::fprintf(stderr, "no report\n");
        },
        "HANDLER severity=FATAL what=double free pool=chain ptr=");
}

/* An object freed by a thread that then exited (its list went home with
 * it, that object at the head of its slab's list, the slab the pool's)
 * and freed again by another thread, which may not take the slab over
 * (it has not refilled): reported, where it went onto a chain for the
 * slab unseen. */
TEST(PoolDefaultDeathTest, AnObjectFreedByAThreadThatExitedFreedAgainIsReported) {
    PKTEST_EXPECT_REPORT(
        {
            alarm(10);
            PoolPtr p = make_pool(64, 0, 0, "exited");
            void *a = nullptr;
            std::thread([&] {
                std::vector<void *> objs = alloc_n(p.get(), 10);
                a = objs[3];
                pk_pool_free(p.get(), a);
            }).join();
            pk_pool_free(p.get(), a);
            std::fprintf(stderr, "no report\n");
        },
        "HANDLER severity=FATAL what=double free pool=exited ptr=");
}

/* A pool with a limit takes objects from its slabs' lists under its lock:
 * an object freed twice with another between loops its slab's list, and
 * the objects a bulk allocation takes come out of that loop, t and u again
 * and again, linked into a loop of their own. The bulk call copies as many
 * as it took, never more (it walked that loop past the caller's array). */
TEST(PoolDefaultDeathTest, BulkAllocationFromALoopedListStopsAtWhatItTook) {
    pk_pool_config c = make_config(64, 0, 0, "limited");
    c.limit = 1000;
    PoolPtr p = make_pool(c);
    std::vector<void *> objs = alloc_n(p.get(), 3);
    void *t = objs[1], *u = objs[2];
    EXPECT_EXIT(
        {
            alarm(10);
            pk_pool_free(p.get(), t);
            pk_pool_free(p.get(), u);
            pk_pool_free(p.get(), t);
            struct {
                void *objs[8];
                uintptr_t canary[8];
            } out;
            for (auto &w : out.canary) w = 0x5A5A5A5A5A5A5A5Aull;
            size_t n = pk_pool_alloc_bulk(p.get(), out.objs, 8);
            for (uintptr_t w : out.canary)
                if (n > 8 || w != 0x5A5A5A5A5A5A5A5Aull) {
                    std::fprintf(stderr, "the bulk allocation wrote past the array\n");
                    std::_Exit(3);
                }
            std::fprintf(stderr, "%zu objects, within the array\n", n);
            std::_Exit(0);
        },
        ::testing::ExitedWithCode(0), "objects, within the array");
    free_all(p.get(), objs);
}

/* Pools that always take the slow path (here: a limit) check every free. */
TEST(PoolSlowPathDeathTest, FreeOfAMallocPointerIsDetected) {
    pk_pool_config c = make_config(64, 0, 0, "limited");
    c.limit = 1000;
    PoolPtr p = make_pool(c);
    void *m = std::malloc(64);
    PKTEST_EXPECT_REPORT(
        {
            pk_pool_free(p.get(), m);
        },
        "HANDLER severity=FATAL what=[a-z -]+ pool=limited ptr=" + ptr_str(m));
    std::free(m);
}

/* Pools with per-object work (zeroing, hooks) take the slow path on every
 * call, and pool.h promises the check on every slow path. */
TEST(PoolSlowPathDeathTest, ZeroPoolDetectsAMallocPointer) {
    PoolPtr p = make_pool(64, 0, PK_POOL_ZERO, "zeroed");
    void *m = std::malloc(64);
    PKTEST_EXPECT_REPORT(
        {
            pk_pool_free(p.get(), m);
            void *o = pk_pool_alloc(p.get());
            std::fprintf(stderr, "alloc after the bad free returned %p\n", o);
        },
        "HANDLER severity=FATAL what=[a-z -]+ pool=zeroed ptr=" + ptr_str(m));
    std::free(m);
}

TEST(PoolSlowPathDeathTest, HookPoolDetectsAnotherPoolsObject) {
    HookPool h(64);
    PoolPtr q = make_pool(64, 0, 0, "otherpool");
    void *o = pk_pool_alloc(q.get());
    PKTEST_EXPECT_REPORT(
        {
            pk_pool_free(h.pool.get(), o);
            void *x = pk_pool_alloc(h.pool.get());
            std::fprintf(stderr, "alloc after the bad free returned %p\n", x);
        },
        "HANDLER severity=FATAL what=[a-z -]+ pool=hooked ptr=" + ptr_str(o));
    pk_pool_free(q.get(), o);
}

/* ======================================================================
 * Default pools, the owner's free into another of its slabs: the short
 * path (src/pool/pool_free.h) checks what it reads from the slab's record
 * before it links anything, and sends the rest to the library's report.
 * ==================================================================== */

namespace {
/* A default pool with two slabs of 64-byte objects used up and a third
 * current one (its list not empty): objs[0..1023] lie in another slab than
 * the current one. */
struct TwoOldSlabs {
    PoolPtr p = make_pool(64, 0, 0, "short");
    std::vector<void *> objs = alloc_n(p.get(), 2 * 1024 + 1);
    ~TwoOldSlabs() { free_all(p.get(), objs); }
};
}  // namespace

TEST(PoolShortPathDeathTest, AnInteriorPointerIntoAnotherSlabIsReported) {
    TwoOldSlabs t;
    char *inner = static_cast<char *>(t.objs[5]) + 8;
    pk_pool_free(t.p.get(), t.objs[6]); /* the slab's list: not empty, so its next free is a push */
    t.objs[6] = nullptr;
    PKTEST_EXPECT_REPORT({ pk_pool_free(t.p.get(), inner); }, fatal_line("interior pointer", "short", inner));
    t.objs[6] = pk_pool_alloc(t.p.get());
}

TEST(PoolShortPathDeathTest, TheHeadOfAnotherSlabsListFreedAgainIsReported) {
    TwoOldSlabs t;
    void *a = t.objs[7];
    pk_pool_free(t.p.get(), t.objs[6]);
    pk_pool_free(t.p.get(), a); /* a heads that slab's list now */
    PKTEST_EXPECT_REPORT({ pk_pool_free(t.p.get(), a); }, fatal_line("double free", "short", a));
    t.objs[6] = pk_pool_alloc(t.p.get());
    t.objs[7] = pk_pool_alloc(t.p.get());
}

TEST(PoolShortPathDeathTest, AMallocPointerIsReportedWithoutReadingPastIt) {
    TwoOldSlabs t;
    void *m = std::malloc(64);
    PKTEST_EXPECT_REPORT({ pk_pool_free(t.p.get(), m); },
                         "HANDLER severity=FATAL what=foreign pointer pool=short ptr=" + ptr_str(m));
    std::free(m);
}

/* A thread with a heap but no current slab in the pool (it only freed an
 * object another thread made) reaches the library's slow entry with no
 * slab word to compare, so the short path must ask the region map of
 * every pointer: a low address is reported, not read (the record of a
 * "region" at address 0). Thread-safe style: the thread runs in the
 * child. */
TEST(PoolShortPathDeathTest, ALowAddressFreedByAThreadWithNoCurrentSlabIsReported) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    void *low = reinterpret_cast<void *>(static_cast<uintptr_t>(0x40));
    for (unsigned flags : {0u, static_cast<unsigned>(PK_POOL_HARDENED)}) {
        PoolPtr p = make_pool(64, 0, flags, "short");
        void *theirs = pk_pool_alloc(p.get());
        PKTEST_EXPECT_REPORT(
            {
                std::thread t([&] {
                    pk_pool_free(p.get(), theirs);
                    pk_pool_free(p.get(), low);
                });
                t.join();
            },
            "HANDLER severity=FATAL what=foreign pointer pool=short ptr=" + ptr_str(low));
        pk_pool_free(p.get(), theirs);
    }
}

TEST(PoolShortPathDeathTest, AnotherPoolsObjectIsReportedAsWrongPool) {
    TwoOldSlabs t;
    PoolPtr q = make_pool(64, 0, 0, "other");
    std::vector<void *> theirs = alloc_n(q.get(), 2 * 1024 + 1);
    PKTEST_EXPECT_REPORT({ pk_pool_free(t.p.get(), theirs[3]); }, fatal_line("wrong pool", "short", theirs[3]));
    free_all(q.get(), theirs);
}

/* A thread's free into a slab another live thread owns (a remote free,
 * pool_free.c's free_foreign) checks that the pointer starts a slot before
 * it goes onto the thread's pending chain. The owner allocates and waits
 * while this thread, with a heap of its own, frees an interior pointer of
 * one of its objects. Thread-safe style: the child runs the test from the
 * start, so the owner is alive there too (a thread gone at the fork would
 * leave its slabs lost, which the dispatch checks anyway). */
TEST(PoolShortPathDeathTest, AnInteriorPointerIntoALiveThreadsSlabIsReported) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    PoolPtr p = make_pool(64, 0, 0, "short");
    void *mine = pk_pool_alloc(p.get()); /* this thread's heap and current slab */
    std::atomic<void *> theirs{nullptr};
    std::atomic<bool> done{false};
    std::thread owner([&] {
        void *o = pk_pool_alloc(p.get());
        theirs.store(o);
        while (!done.load()) std::this_thread::yield();
        pk_pool_free(p.get(), o);
    });
    while (!theirs.load()) std::this_thread::yield();
    char *inner = static_cast<char *>(theirs.load()) + 8;
    /* no address in the pattern: the child, run afresh, places its objects
     * where it will (under Valgrind, which runs the program whole, the
     * parent's lie elsewhere) */
    PKTEST_EXPECT_REPORT({ pk_pool_free(p.get(), inner); },
                         "HANDLER severity=FATAL what=interior pointer pool=short ptr=0x[0-9a-f]*8\n");
    done.store(true);
    owner.join();
    pk_pool_free(p.get(), mine);
}

/* A thread that only frees (no current slab) sends a live thread's
 * objects home by its pending chain, and an object of the slab the chain
 * waits for joins it without the record's look-up (pool_free.c,
 * free_pending): the pointer must still start a slot. Here the chain
 * waits for the owner's slab (its first object freed) when an interior
 * pointer of its second object comes. */
TEST(PoolShortPathDeathTest, AnInteriorPointerIntoTheSlabAChainWaitsForIsReported) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    PoolPtr p = make_pool(64, 0, 0, "chain");
    std::atomic<void *> first{nullptr}, second{nullptr};
    std::atomic<bool> done{false};
    std::thread owner([&] {
        void *a = pk_pool_alloc(p.get());
        second.store(pk_pool_alloc(p.get()));
        first.store(a);
        while (!done.load()) std::this_thread::yield();
    });
    while (!first.load()) std::this_thread::yield();
    pk_pool_free(p.get(), first.load()); /* this thread's heap, no current slab, a chain for the owner's slab */
    pk_pool_stats st;
    pk_pool_stats_get(p.get(), &st);
    EXPECT_EQ(st.remote_frees, 1u);
    char *inner = static_cast<char *>(second.load()) + 8;
    PKTEST_EXPECT_REPORT({ pk_pool_free(p.get(), inner); },
                         "HANDLER severity=FATAL what=interior pointer pool=chain ptr=0x[0-9a-f]*8\n");
    pk_pool_free(p.get(), second.load()); /* onto the chain */
    pk_pool_stats_get(p.get(), &st);
    EXPECT_EQ(st.remote_frees, 2u);
    done.store(true);
    owner.join();
}

/* ======================================================================
 * A pool used after pk_pool_destroy
 * ==================================================================== */

namespace {
/* A pool made and destroyed at once (with n objects left live, reported as
 * a leak and silenced here): the pointer is all the test keeps. */
pk_pool *destroyed_pool(unsigned flags, const char *name, void **live = nullptr) {
    pk_pool_config c = make_config(64, 0, flags, name);
    pk_pool *p = pk_pool_create(&c);
    EXPECT_NE(p, nullptr);
    if (live) *live = pk_pool_alloc(p);
    ErrorCapture quiet; /* the live object's leak report */
    pk_pool_destroy(p);
    return p;
}

std::string after_destroy(const std::string &call, const char *pool, const void *p) {
    return fatal_line("pool used after destroy", pool, p) + "\nMESSAGE poolkit: pool used after destroy: " +
           call + "[^\n]* on pool '" + pool + "' \\(" + ptr_str(p) + "\\)";
}
}  // namespace

TEST(PoolAfterDestroyDeathTest, AllocFromADestroyedDebugPoolIsReported) {
    pk_pool *p = destroyed_pool(PK_POOL_DEBUG, "gone");
    PKTEST_EXPECT_REPORT(
        {
            void *o = pk_pool_alloc(p);
            std::fprintf(stderr, "a destroyed pool handed out %p\n", o);
        },
        after_destroy("pk_pool_alloc", "gone", p));
}

TEST(PoolAfterDestroyDeathTest, FreeIntoADestroyedDebugPoolIsReportedNamingTheObject) {
    void *o = nullptr;
    pk_pool *p = destroyed_pool(PK_POOL_DEBUG, "gone", &o);
    PKTEST_EXPECT_REPORT(
        {
            pk_pool_free(p, o);
            std::fprintf(stderr, "no report\n");
        },
        after_destroy("pk_pool_free given " + ptr_str(o), "gone", p));
}

TEST(PoolAfterDestroyDeathTest, SecondDestroyOfADebugPoolIsReported) {
    pk_pool *p = destroyed_pool(PK_POOL_DEBUG, "gone");
    PKTEST_EXPECT_REPORT(
        {
            pk_pool_destroy(p);
            std::fprintf(stderr, "no report\n");
        },
        after_destroy("pk_pool_destroy", "gone", p));
}

/* The whole-pool calls check too. */
TEST(PoolAfterDestroyDeathTest, BulkAndWholePoolCallsOnADestroyedDebugPoolAreReported) {
    pk_pool *p = destroyed_pool(PK_POOL_DEBUG, "gone");
    void *objs[4];
    PKTEST_EXPECT_REPORT((void)pk_pool_alloc_bulk(p, objs, 4), after_destroy("pk_pool_alloc_bulk", "gone", p));
    PKTEST_EXPECT_REPORT((void)pk_pool_reserve(p, 10), after_destroy("pk_pool_reserve", "gone", p));
    PKTEST_EXPECT_REPORT((void)pk_pool_trim(p), after_destroy("pk_pool_trim", "gone", p));
    PKTEST_EXPECT_REPORT((void)stats_of(p), after_destroy("pk_pool_stats_get", "gone", p));
}

/* The name is copied at destroy: the caller's string may be gone by the
 * time the stale pointer is used. */
TEST(PoolAfterDestroyDeathTest, ReportNamesThePoolAfterItsNameStringIsGone) {
    char *name = strdup("transient");
    pk_pool *p = destroyed_pool(PK_POOL_DEBUG, name);
    std::memset(name, 'x', std::strlen(name));
    std::free(name);
    PKTEST_EXPECT_REPORT((void)pk_pool_alloc(p), after_destroy("pk_pool_alloc", "transient", p));
}

/* A destroyed debug pool's record is held back from reuse: pools made and
 * destroyed after it (more than the spare records kept) do not get it, so
 * the stale pointer is still reported instead of serving a new pool. */
TEST(PoolAfterDestroyDeathTest, DestroyedDebugPoolIsReportedAfterOtherPoolsComeAndGo) {
    pk_pool *p = destroyed_pool(PK_POOL_DEBUG, "gone");
    std::vector<pk_pool *> others;
    for (int i = 0; i < 200; i++) {
        pk_pool_config c = make_config(64, 0, i % 2 ? PK_POOL_DEBUG : 0, "other");
        others.push_back(pk_pool_create(&c));
    }
    for (pk_pool *q : others) {
        ASSERT_NE(q, p) << "a new pool got the destroyed debug pool's record";
        pk_pool_destroy(q);
    }
    PKTEST_EXPECT_REPORT((void)pk_pool_alloc(p), after_destroy("pk_pool_alloc", "gone", p));
}

/* Default mode: a second destroy used to walk the dead record and report
 * a leak of objects that never existed. Now the first report, and the only
 * one, is the use after destroy (the record waits among the spares, which
 * are emptied first so that it is kept, not unmapped). */
TEST(PoolAfterDestroyDeathTest, SecondDestroyOfADefaultPoolReportsNoLeak) {
    pk_pool_release_cache();
    pk_pool_config c = make_config(64, 0, 0, "plain");
    pk_pool *p = pk_pool_create(&c);
    ASSERT_NE(p, nullptr);
    std::vector<void *> objs = alloc_n(p, 10);
    free_all(p, objs);
    pk_pool_destroy(p);
    PKTEST_EXPECT_REPORT(pk_pool_destroy(p), "^" + after_destroy("pk_pool_destroy", "plain", p));
}

TEST(PoolAfterDestroyDeathTest, AllocFromADestroyedDefaultPoolIsReportedUntilItsRecordIsReused) {
    pk_pool_release_cache();
    pk_pool *p = destroyed_pool(0, "plain");
    PKTEST_EXPECT_REPORT(
        {
            void *o = pk_pool_alloc(p);
            std::fprintf(stderr, "a destroyed pool handed out %p\n", o);
        },
        after_destroy("pk_pool_alloc", "plain", p));
}

/* ======================================================================
 * Hardened pools: what a corrupted free list most likely is
 * ==================================================================== */

namespace {
/* Whether a tool watches a hardened pool's free objects (valgrind, or a
 * tool build that poisons them) and would report the writes below itself. */
bool tool_watches_free_objects() {
    if (running_under_valgrind()) return true;
#if PKTEST_ASAN
    PoolPtr p = make_pool(64, 0, PK_POOL_HARDENED, "probe");
    void *o = pk_pool_alloc(p.get());
    pk_pool_free(p.get(), o);
    return __asan_region_is_poisoned(o, sizeof(void *)) != nullptr;
#else
    return false;
#endif
}

std::string likely_cause(const char *pool, const void *obj) {
    return "HANDLER severity=FATAL what=corrupted free list pool=" + std::string(pool) + " ptr=" + ptr_str(obj) +
           "\nMESSAGE [^\n]*'" + pool + "'[^\n]*most likely a write after free of object " + ptr_str(obj) +
           "[^\n]*or a double free of it";
}
}  // namespace

/* a freed twice with b between (so not caught as the head freed again):
 * the list hands a out twice, and the first owner's write to it breaks the
 * link the second hand-out follows. */
TEST(PoolHardenedDeathTest, DoubleFreeIsReportedAsTheLikelyCauseNamingTheObject) {
    if (tool_watches_free_objects()) GTEST_SKIP() << "writes to freed memory on purpose";
    PoolPtr p = make_pool(64, 0, PK_POOL_HARDENED, "hardpool");
    void *keep = pk_pool_alloc(p.get());
    void *a = pk_pool_alloc(p.get());
    void *b = pk_pool_alloc(p.get());
    PKTEST_EXPECT_REPORT(
        {
            pk_pool_free(p.get(), a);
            pk_pool_free(p.get(), b);
            pk_pool_free(p.get(), a);
            std::memset(pk_pool_alloc(p.get()), 0x5a, 64);
            for (int i = 0; i < 8; i++) (void)pk_pool_alloc(p.get());
            std::fprintf(stderr, "no report\n");
        },
        likely_cause("hardpool", a));
    pk_pool_free(p.get(), b);
    pk_pool_free(p.get(), keep);
}

/* A write after free that moves a link of the thread's list off the
 * slots its slab has handed out (into a slot's middle, far away, or to a
 * slot not handed out yet) is reported when the list goes home at the
 * thread's exit, the bad link named, never followed. */
TEST(PoolDefaultDeathTest, AThreadsListBrokenByAWriteAfterFreeIsReportedAtItsExit) {
    if (tool_watches_free_objects()) GTEST_SKIP() << "writes to freed memory on purpose";
    static char elsewhere[64];
    enum { INTERIOR, FAR, UNHANDED };
    for (int to : {INTERIOR, FAR, UNHANDED}) {
        PKTEST_EXPECT_REPORT(
            {
                alarm(10);
                PoolPtr p = make_pool(64, 0, 0, "broken");
                std::thread([&] {
                    std::vector<void *> objs = alloc_n(p.get(), 10); /* of the first page's slots handed out */
                    pk_pool_free(p.get(), objs[3]);
                    pk_pool_free(p.get(), objs[5]); /* the list's head, linked to objs[3] */
                    /* UNHANDED: a slot of the same slab past the first page */
                    char *bad = to == INTERIOR ? static_cast<char *>(objs[3]) + 8
                                : to == FAR    ? elsewhere
                                               : static_cast<char *>(objs[9]) + 100 * 64;
                    std::memcpy(objs[5], &bad, sizeof bad); /* a plain pool's link is its first word */
                }).join();
                std::fprintf(stderr, "no report\n");
            },
            "what=corrupted free list.*\n.*which is not a free slot of its slab");
    }
}

/* An object freed twice with another between loops the thread's list:
 * reported when the list goes home at the thread's exit, never walked for
 * ever. */
TEST(PoolDefaultDeathTest, AThreadsListLoopedByADoubleFreeIsReportedAtItsExit) {
    PKTEST_EXPECT_REPORT(
        {
            alarm(10);
            PoolPtr p = make_pool(64, 0, 0, "looped");
            std::thread([&] {
                std::vector<void *> objs = alloc_n(p.get(), 10);
                pk_pool_free(p.get(), objs[3]);
                pk_pool_free(p.get(), objs[5]);
                pk_pool_free(p.get(), objs[3]); /* not the list's head: the inline free takes it */
            }).join();
            std::fprintf(stderr, "no report\n");
        },
        "what=corrupted free list pool=looped [^\n]*\nMESSAGE [^\n]*most likely a double free of object");
}

TEST(PoolHardenedDeathTest, WriteAfterFreeIsReportedAsTheLikelyCauseNamingTheObject) {
    if (tool_watches_free_objects()) GTEST_SKIP() << "writes to freed memory on purpose";
    PoolPtr p = make_pool(64, 0, PK_POOL_HARDENED, "hardpool");
    void *keep = pk_pool_alloc(p.get());
    void *a = pk_pool_alloc(p.get());
    PKTEST_EXPECT_REPORT(
        {
            pk_pool_free(p.get(), a);
            std::memset(a, 0x5a, 8);
            for (int i = 0; i < 8; i++) (void)pk_pool_alloc(p.get());
            std::fprintf(stderr, "no report\n");
        },
        likely_cause("hardpool", a));
    pk_pool_free(p.get(), keep);
}

/* The same in a slab's own free list (the caches trimmed home first). */
TEST(PoolHardenedDeathTest, WriteAfterFreeInASlabListIsReportedAsTheLikelyCause) {
    if (tool_watches_free_objects()) GTEST_SKIP() << "writes to freed memory on purpose";
    PoolPtr p = make_pool(64, 0, PK_POOL_HARDENED, "hardpool");
    std::vector<void *> objs = alloc_n(p.get(), 8);
    void *a = objs[3];
    PKTEST_EXPECT_REPORT(
        {
            pk_pool_free(p.get(), a);
            pk_pool_trim(p.get());
            std::memset(a, 0x5a, 8);
            for (int i = 0; i < 4000; i++) (void)pk_pool_alloc(p.get());
            std::fprintf(stderr, "no report\n");
        },
        likely_cause("hardpool", a));
    free_all(p.get(), objs);
}

/* ======================================================================
 * Debug pools: the double free report names the free that faulted
 * ==================================================================== */

/* Exported and kept out of line (tests/CMakeLists.txt), so the report can
 * name them. */
extern "C" {
__attribute__((noinline)) void *misuse_allocate_here(pk_pool *p) {
    void *o = pk_pool_alloc(p);
    __asm__ volatile("" : : "r"(o) : "memory");
    return o;
}
__attribute__((noinline)) void misuse_free_here(pk_pool *p, void *o) {
    pk_pool_free(p, o);
    __asm__ volatile("" : : "r"(o) : "memory");
}
__attribute__((noinline)) void misuse_free_again_here(pk_pool *p, void *o) {
    pk_pool_free(p, o);
    __asm__ volatile("" : : "r"(o) : "memory");
}
}

TEST(PoolDebugDeathTest, DoubleFreeNamesTheSecondFree) {
    PoolPtr p = make_pool(48, 0, PK_POOL_DEBUG, "dbgpool");
    void *o = misuse_allocate_here(p.get());
    misuse_free_here(p.get(), o);
    PKTEST_EXPECT_REPORT(misuse_free_again_here(p.get(), o),
                         fatal_line("double free", "dbgpool", o) +
                             "\nMESSAGE [^\n]*freed twice; allocated at misuse_allocate_here\\+0x[0-9a-f]+[^;]*; "
                             "freed at misuse_free_here\\+0x[0-9a-f]+[^;]*; "
                             "freed again at misuse_free_again_here\\+0x[0-9a-f]+");
    (void)pk_pool_alloc(p.get()); /* o again: live, so destroy reports one leak */
}

/* ======================================================================
 * Impossible sizes and reserves fail with errno, at once
 * ==================================================================== */

namespace {
/* Pages poolkit asked the system for during f (fault.h's counter). */
template <class F>
unsigned long page_requests_during(F f) {
    unsigned long before = pk_fault_requests();
    f();
    return pk_fault_requests() - before;
}

/* Creates a 64-byte pool with the given reserve; it must fail with ENOMEM
 * having asked the system for no more pages than a pool with no reserve
 * needs (the record), not slab after slab until the system gives out. */
void expect_reserve_refused_at_once(size_t reserve) {
    pk_pool_release_cache(); /* both creates map their record afresh */
    unsigned long plain = page_requests_during([] {
        pk_pool_config c = make_config(64, 0, 0, "reserved");
        pk_pool_destroy(pk_pool_create(&c));
    });
    pk_pool_release_cache();
    pk_pool *p = nullptr;
    int err = 0;
    unsigned long asked = page_requests_during([&] {
        pk_pool_config c = make_config(64, 0, 0, "reserved");
        c.reserve = reserve;
        errno = 0;
        p = pk_pool_create(&c);
        err = errno;
    });
    EXPECT_EQ(p, nullptr) << "reserve " << reserve;
    EXPECT_EQ(err, ENOMEM) << "reserve " << reserve;
    EXPECT_LE(asked, plain) << "reserve " << reserve << ": pages were mapped for a reserve that cannot fit";
    if (p) pk_pool_destroy(p);
}

size_t physical_bytes() {
    long pages = sysconf(_SC_PHYS_PAGES);
    return pages > 0 ? static_cast<size_t>(pages) * page_size() : SIZE_MAX;
}
}  // namespace

TEST(PoolImpossibleRequest, ReserveOfSizeMaxFailsWithEnomem) { expect_reserve_refused_at_once(SIZE_MAX); }

TEST(PoolImpossibleRequest, ReserveOfHalfSizeMaxFailsWithEnomem) { expect_reserve_refused_at_once(SIZE_MAX / 2); }

TEST(PoolImpossibleRequest, ReserveOf2To46ObjectsFailsWithEnomem) {
    expect_reserve_refused_at_once(static_cast<size_t>(1) << 46);
}

TEST(PoolImpossibleRequest, ReserveOverPhysicalMemoryFailsWithEnomem) {
    expect_reserve_refused_at_once(physical_bytes() / 64 * 2);
}

/* pk_pool_reserve on a working pool: nothing mapped, errno ENOMEM, what was
 * ready before still ready and the pool still serves. */
TEST(PoolImpossibleRequest, ReserveCallOfSizeMaxLeavesThePoolWorking) {
    PoolPtr p = make_pool(64, 0, 0, "reserved");
    size_t ready = pk_pool_reserve(p.get(), 100);
    ASSERT_GE(ready, 100u);
    errno = 0;
    size_t got = 0;
    unsigned long asked = page_requests_during([&] { got = pk_pool_reserve(p.get(), SIZE_MAX); });
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_EQ(got, ready);
    EXPECT_EQ(asked, 0u);
    void *o = pk_pool_alloc(p.get());
    EXPECT_NE(o, nullptr);
    pk_pool_free(p.get(), o);
}

/* Sizes near SIZE_MAX: a debug pool adds a redzone and a link word, a hook
 * pool a link word; the sums must not wrap to a small slot. */
TEST(PoolImpossibleRequest, NearlySizeMaxObjectsAreRefusedWithEinval) {
    for (unsigned flags : {0u, static_cast<unsigned>(PK_POOL_DEBUG), static_cast<unsigned>(PK_POOL_HARDENED)}) {
        for (size_t size : {SIZE_MAX, SIZE_MAX - 7, SIZE_MAX - 15, SIZE_MAX / 2 + 1}) {
            pk_pool_config c = make_config(size, 0, flags, "huge");
            c.destruct = [](void *, void *) {};
            errno = 0;
            pk_pool *p = pk_pool_create(&c);
            EXPECT_EQ(p, nullptr) << "size " << size << " flags " << flags;
            EXPECT_EQ(errno, EINVAL) << "size " << size << " flags " << flags;
            if (p) pk_pool_destroy(p);
        }
    }
}

/* Double frees across threads, after random histories: a thread makes n
 * objects (of a typed pool or the front end, sizes from 16 B to 60,000 B)
 * and lives on or exits; this thread frees a random share of them, in
 * random order, with allocations and frees of its own between, then frees
 * one left twice in a row: remote frees, chains that end full, slabs of an
 * exited thread, the front end's lists. Each history in a forked child
 * whose handler exits with 7 on a fatal report. */
namespace {
struct CrossHistory {
    pk_pool *p = nullptr;
    bool front = false, stays = false;
    size_t size = 0, made = 0;
    std::vector<void *> objs;
    void release(void *o) const {
        if (front) pk_free(o);
        else pk_pool_free(p, o);
    }
    void *take() const { return front ? pk_alloc(size) : pk_pool_alloc(p); }
};

int free_twice_across_threads(uint64_t seed) {
    pk_set_error_handler([](const pk_error *e, void *) { _exit(e->severity == PK_FATAL ? 7 : 8); }, nullptr);
    static const size_t sizes[] = {16, 64, 256, 4096, 10000, 60000};
    Rng rng(seed);
    CrossHistory h;
    h.size = sizes[rng.below(6)];
    h.front = rng.chance(50);
    h.stays = rng.chance(50);
    h.made = 10 + rng.below(5000);
    PoolPtr pool = h.front ? nullptr : make_pool(h.size, 0, 0, "across");
    h.p = pool.get();
    Gate made, done;
    std::thread maker([&] {
        for (size_t i = 0; i < h.made; i++) h.objs.push_back(h.take());
        made.open();
        if (h.stays) done.wait();
    });
    made.wait();
    if (!h.stays) maker.join();
    size_t n = h.objs.size();
    for (size_t i = 0, frees = rng.below(n); i < frees; i++) {
        size_t k = rng.below(n);
        h.release(h.objs[k]);
        h.objs[k] = h.objs[--n];
        if (rng.chance(25)) h.release(h.take());
    }
    void *a = h.objs[rng.below(n)];
    h.release(a);
    h.release(a);
    _exit(0); /* not reported; no destructor runs (a maker that waits, the pool's live objects) */
}
}  // namespace

TEST(PoolDefaultMisuse, AnObjectFreedTwiceAcrossThreadsIsReportedAfterAnyHistory) {
    const uint64_t histories = slow_tool() ? 10 : 200;
    for (uint64_t seed = 1; seed <= histories; seed++) {
        int st = fork_and_wait([&] { return free_twice_across_threads(seed); }, child_time_limit());
        ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 7)
            << "history " << seed << " (free_twice_across_threads(" << seed << ")): "
            << (WIFEXITED(st) ? WEXITSTATUS(st) == 0 ? "the second free was not reported" : "another exit"
                              : "a signal with no report");
    }
}
