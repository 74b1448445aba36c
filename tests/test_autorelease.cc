// Autorelease pool tests: one behaviour of push / pop / autorelease / defer /
// scratch per test, then a randomized run against a model.
#include "support.h"

#include <poolkit/poolkit.h>

#include <atomic>
#include <cerrno>
#include <csetjmp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sys/mman.h>
#include <string>
#include <thread>
#include <vector>

namespace {

using pktest::scaled;

// ---- a tracked class: each dealloc appends the object's id to a log ---------

struct Tracked {
    long id;
    long child; // > 0: the dealloc autoreleases a new Tracked with this id
};

thread_local std::vector<long> *t_log = nullptr;
std::atomic<long> g_deallocs{0};

void tracked_dealloc(void *obj);
const pk_class kTracked = {"Tracked", sizeof(Tracked), tracked_dealloc};

Tracked *make(long id, long child = 0) {
    Tracked *t = static_cast<Tracked *>(pk_new(&kTracked));
    t->id = id;
    t->child = child;
    return t;
}

void tracked_dealloc(void *obj) {
    Tracked *t = static_cast<Tracked *>(obj);
    g_deallocs++;
    if (t_log) t_log->push_back(t->id);
    if (t->child > 0) pk_autorelease(make(t->child));
}

void log_deferred(void *arg) {
    if (t_log) t_log->push_back(static_cast<long>(reinterpret_cast<intptr_t>(arg)));
}

void *as_ptr(long id) { return reinterpret_cast<void *>(static_cast<intptr_t>(id)); }

pk_autorelease_stats stats() {
    pk_autorelease_stats s;
    pk_autorelease_stats_get(&s);
    return s;
}

// Records the log of the calling thread while alive.
struct LogScope {
    std::vector<long> log;
    LogScope() { t_log = &log; }
    ~LogScope() { t_log = nullptr; }
};

// ---- a handler that records a report and jumps back into the test -----------

struct Report {
    int count = 0;
    pk_severity severity = PK_WARNING;
    std::string what, message;
    const void *ptr = nullptr;
};
thread_local Report t_report;
thread_local std::jmp_buf *t_escape = nullptr;

void record_and_escape(const pk_error *err, void *) {
    t_report.count++;
    t_report.severity = err->severity;
    t_report.what = err->what ? err->what : "";
    t_report.message = err->message ? err->message : "";
    t_report.ptr = err->ptr;
    if (t_escape) std::longjmp(*t_escape, 1);
}

// Pops the token and says whether poolkit reported it (then nothing changed).
bool pop_is_reported(pk_autorelease_pool token) {
    std::jmp_buf env;
    t_escape = &env;
    t_report = Report();
    pk_set_error_handler(record_and_escape, nullptr);
    bool reported = false;
    if (setjmp(env) == 0)
        pk_autorelease_pop(token);
    else
        reported = true;
    pk_set_error_handler(nullptr, nullptr);
    t_escape = nullptr;
    return reported;
}

// ---- pools and their order --------------------------------------------------

TEST(Autorelease, PopReleasesNewestFirst) {
    LogScope ls;
    pk_autorelease_pool p = pk_autorelease_push();
    for (long i = 1; i <= 5; i++) EXPECT_NE(pk_autorelease(make(i)), nullptr);
    EXPECT_TRUE(ls.log.empty());
    pk_autorelease_pop(p);
    EXPECT_EQ(ls.log, (std::vector<long>{5, 4, 3, 2, 1}));
}

TEST(Autorelease, AutoreleaseReturnsItsArgument) {
    pk_autorelease_pool p = pk_autorelease_push();
    Tracked *t = make(1);
    EXPECT_EQ(pk_autorelease(t), t);
    EXPECT_EQ(pk_autorelease(nullptr), nullptr);
    pk_autorelease_pop(p);
}

TEST(Autorelease, AnAutoreleasedObjectLivesUntilThePop) {
    long before = g_deallocs;
    pk_autorelease_pool p = pk_autorelease_push();
    Tracked *t = static_cast<Tracked *>(pk_autorelease(make(7)));
    EXPECT_EQ(pk_refcount(t), 1u);
    EXPECT_EQ(t->id, 7);
    EXPECT_EQ(g_deallocs, before);
    pk_retain(t); // one more reference survives the pop
    pk_autorelease_pop(p);
    EXPECT_EQ(g_deallocs, before);
    EXPECT_EQ(pk_refcount(t), 1u);
    pk_release(t);
    EXPECT_EQ(g_deallocs, before + 1);
}

/* A pool of one object takes a short way when the object's release runs
 * no code: it must still leave an object another reference holds alive,
 * and release one whose slab the thread did not touch last. */
const pk_class kQuiet = {"Quiet", 16, nullptr};
const pk_class kQuietOther = {"QuietOther", 48, nullptr};

size_t quiet_live(const pk_class *cls) {
    pk_pool_stats s;
    pk_pool_stats_get(pk_class_pool(cls), &s);
    return s.live;
}

TEST(Autorelease, APoolOfOneQuietObjectLeavesAnotherReferenceAlive) {
    void *o = pk_retain(pk_new(&kQuiet));
    size_t live = quiet_live(&kQuiet);
    pk_autorelease_pool p = pk_autorelease_push();
    pk_autorelease(o);
    pk_autorelease_pop(p);
    EXPECT_EQ(pk_refcount(o), 1u);
    EXPECT_EQ(quiet_live(&kQuiet), live);
    static_cast<char *>(o)[15] = 1;
    pk_release(o);
    EXPECT_EQ(quiet_live(&kQuiet), live - 1);
}

TEST(Autorelease, APoolOfOneQuietObjectIsReleasedWhateverSlabTheThreadTouchedLast) {
    for (int i = 0; i < 100; i++) {
        void *o = pk_new(&kQuiet);
        size_t live = quiet_live(&kQuiet);
        pk_release(pk_new(&kQuietOther)); /* another class's slab, last */
        pk_autorelease_pool p = pk_autorelease_push();
        pk_autorelease(o);
        pk_autorelease_pop(p);
        EXPECT_EQ(quiet_live(&kQuiet), live - 1) << "round " << i;
    }
}

/* Its short way reads no word of a pointer that is no object: one in a
 * page that cannot be read is reported, not followed (in a child: the
 * report ends the process, and the pool stays pushed). */
TEST(Autorelease, APoolOfOneForeignPointerIsReportedUnread) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            long page = sysconf(_SC_PAGESIZE);
            char *none =
                static_cast<char *>(mmap(nullptr, 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
            if (none == MAP_FAILED) std::exit(2);
            pk_release(pk_new(&kQuiet)); /* the thread's last slab: an object pool's */
            pk_autorelease_pool p = pk_autorelease_push();
            pk_autorelease(none + page + 16);
            pk_autorelease_pop(p);
        },
        "foreign pointer");
}

TEST(Autorelease, NestedPoolsDrainOnlyTheirOwn) {
    LogScope ls;
    pk_autorelease_pool outer = pk_autorelease_push();
    pk_autorelease(make(1));
    pk_autorelease_pool inner = pk_autorelease_push();
    pk_autorelease(make(2));
    pk_autorelease(make(3));
    pk_autorelease_pop(inner);
    EXPECT_EQ(ls.log, (std::vector<long>{3, 2}));
    pk_autorelease(make(4));
    pk_autorelease_pop(outer);
    EXPECT_EQ(ls.log, (std::vector<long>{3, 2, 4, 1}));
}

TEST(Autorelease, PoppingAnOuterPoolPopsTheInnerOnes) {
    LogScope ls;
    pk_autorelease_pool a = pk_autorelease_push();
    pk_autorelease(make(1));
    pk_autorelease_pool b = pk_autorelease_push();
    pk_autorelease(make(2));
    pk_autorelease_pool c = pk_autorelease_push();
    pk_autorelease(make(3));
    EXPECT_EQ(stats().depth, 3u);
    pk_autorelease_pop(b); // out of order: c goes with it
    EXPECT_EQ(ls.log, (std::vector<long>{3, 2}));
    EXPECT_EQ(stats().depth, 1u);
    EXPECT_TRUE(pop_is_reported(c)); // c is gone
    EXPECT_EQ(t_report.what, "bad autorelease token");
    pk_autorelease_pop(a);
    EXPECT_EQ(ls.log, (std::vector<long>{3, 2, 1}));
}

TEST(Autorelease, AutoreleaseDuringTheDrainIsDrainedByTheSamePop) {
    LogScope ls;
    pk_autorelease_pool outer = pk_autorelease_push();
    pk_autorelease_pool p = pk_autorelease_push();
    pk_autorelease(make(1, 10)); // its dealloc autoreleases object 10
    pk_autorelease(make(2, 20));
    pk_autorelease_pop(p);
    EXPECT_EQ(ls.log, (std::vector<long>{2, 20, 1, 10}));
    EXPECT_EQ(stats().pending, 0u);
    pk_autorelease_pop(outer);
    EXPECT_EQ(ls.log.size(), 4u);
}

TEST(Autorelease, DeallocsMayUseTheirOwnPoolsDuringADrain) {
    static const pk_class user = {"PoolUser", 16, [](void *) {
                                      pk_autorelease_pool q = pk_autorelease_push();
                                      pk_autorelease(make(100));
                                      pk_autorelease_pop(q);
                                      pk_autorelease(make(200)); // into the draining pool
                                  }};
    LogScope ls;
    pk_autorelease_pool p = pk_autorelease_push();
    pk_autorelease(make(1));
    pk_autorelease(pk_new(&user));
    pk_autorelease_pop(p);
    EXPECT_EQ(ls.log, (std::vector<long>{100, 200, 1}));
    EXPECT_EQ(stats().pending, 0u);
}

// ---- tokens -----------------------------------------------------------------

TEST(Autorelease, AStaleTokenIsReported) {
    pk_autorelease_pool p = pk_autorelease_push();
    pk_autorelease_pop(p);
    EXPECT_TRUE(pop_is_reported(p));
    EXPECT_EQ(t_report.severity, PK_FATAL);
    EXPECT_EQ(t_report.what, "bad autorelease token");
    // A new pool in the same place does not revive the old token.
    pk_autorelease_pool q = pk_autorelease_push();
    EXPECT_TRUE(pop_is_reported(p));
    EXPECT_EQ(stats().depth, 1u); // nothing changed
    pk_autorelease_pop(q);
}

TEST(Autorelease, AStaleTokenBelowTheTopIsReported) {
    pk_autorelease_pool outer = pk_autorelease_push();
    pk_autorelease_pool p = pk_autorelease_push();
    pk_autorelease_pop(p);
    for (int i = 0; i < 5; i++) pk_autorelease(make(i));
    EXPECT_TRUE(pop_is_reported(p)); // its slot now holds an object
    EXPECT_EQ(stats().pending, 5u);
    pk_autorelease_pop(outer);
}

TEST(Autorelease, ATokenFromAnotherThreadIsReported) {
    pk_autorelease_pool mine = pk_autorelease_push();
    pk_autorelease_pool foreign;
    std::thread th([&] {
        pk_autorelease_pool a = pk_autorelease_push();
        foreign = pk_autorelease_push();
        pk_autorelease_pop(foreign);
        pk_autorelease_pool b = pk_autorelease_push(); // same place, another generation
        EXPECT_TRUE(pop_is_reported(foreign));
        foreign = b;
        std::thread other([&] { EXPECT_TRUE(pop_is_reported(b)); }); // no stack at all there
        other.join();
        pk_autorelease_pop(a);
    });
    th.join();
    EXPECT_TRUE(pop_is_reported(foreign));
    EXPECT_EQ(stats().depth, 1u);
    pk_autorelease_pop(mine);
}

TEST(Autorelease, GarbageTokensAreReported) {
    pk_autorelease_pool p = pk_autorelease_push();
    EXPECT_TRUE(pop_is_reported(pk_autorelease_pool{0}));
    EXPECT_TRUE(pop_is_reported(pk_autorelease_pool{p.token + 1}));
    EXPECT_TRUE(pop_is_reported(pk_autorelease_pool{p.token ^ (uintptr_t{1} << 40)}));
    EXPECT_TRUE(pop_is_reported(pk_autorelease_pool{0x123456789abcdefull}));
    pk_autorelease_pop(p); // still live
    EXPECT_EQ(stats().depth, 0u);
}

TEST(Autorelease, TheFailedPushTokenPopsAsNothing) {
    pk_autorelease_pool p = pk_autorelease_push();
    pk_autorelease(make(1));
    pk_autorelease_pop(pk_autorelease_pool{PK_AUTORELEASE_NONE});
    EXPECT_EQ(stats().pending, 1u);
    pk_autorelease_pop(p);
}

TEST(Autorelease, BadTokenAbortsByDefault) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            pk_autorelease_pool p = pk_autorelease_push();
            pk_autorelease_pop(p);
            pk_autorelease_pop(p);
        },
        "bad autorelease token");
}

TEST(Autorelease, AMisalignedPointerIsReported) {
    alignas(16) static char buf[32];
    std::jmp_buf env;
    t_escape = &env;
    t_report = Report();
    pk_set_error_handler(record_and_escape, nullptr);
    if (setjmp(env) == 0) pk_autorelease(buf + 4);
    pk_set_error_handler(nullptr, nullptr);
    t_escape = nullptr;
    EXPECT_EQ(t_report.what, "foreign pointer");
}

// ---- defer ------------------------------------------------------------------

TEST(Autorelease, DeferredCallsRunInOrderWithTheObjects) {
    LogScope ls;
    pk_autorelease_pool p = pk_autorelease_push();
    pk_autorelease(make(1));
    EXPECT_EQ(pk_defer(as_ptr(2), log_deferred), as_ptr(2));
    pk_autorelease(make(3));
    pk_defer(as_ptr(4), log_deferred);
    pk_defer(as_ptr(5), log_deferred);
    EXPECT_EQ(stats().pending, 5u);
    pk_autorelease_pop(p);
    EXPECT_EQ(ls.log, (std::vector<long>{5, 4, 3, 2, 1}));
}

TEST(Autorelease, DeferFreesPlainMemory) {
    pk_autorelease_pool p = pk_autorelease_push();
    char *buf = static_cast<char *>(pk_defer(std::malloc(100), std::free));
    ASSERT_NE(buf, nullptr);
    std::memset(buf, 1, 100);
    pk_autorelease_pop(p); // the leak checkers would see it otherwise
}

TEST(Autorelease, DeferWithoutAFunctionFailsWithEinval) {
    pk_autorelease_pool p = pk_autorelease_push();
    errno = 0;
    EXPECT_EQ(pk_defer(as_ptr(1), nullptr), nullptr);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(stats().pending, 0u);
    pk_autorelease_pop(p);
}

// ---- threads ----------------------------------------------------------------

TEST(Autorelease, ThreadExitDrainsPoolsStillPushed) {
    long before = g_deallocs;
    std::atomic<long> deferred{0};
    std::thread th([&] {
        pk_autorelease_push();
        pk_autorelease(make(1));
        pk_autorelease_push();
        pk_autorelease(make(2, 3)); // and its dealloc autoreleases one more
        pk_defer(&deferred, [](void *a) { (*static_cast<std::atomic<long> *>(a))++; });
        EXPECT_EQ(stats().depth, 2u);
    });
    th.join();
    EXPECT_EQ(g_deallocs - before, 3);
    EXPECT_EQ(deferred, 1);
}

TEST(Autorelease, TheImplicitPoolIsDrainedAtThreadExit) {
    long before = g_deallocs;
    std::thread th([&] {
        pk_autorelease(make(1)); // no pool pushed
        pk_autorelease(make(2));
        pk_autorelease_stats s = stats();
        EXPECT_EQ(s.implicit, 2u);
        EXPECT_EQ(s.depth, 0u);
        PK_AUTORELEASE_POOL { pk_autorelease(make(3)); } // pools still work above it
        EXPECT_EQ(g_deallocs - before, 1);
        EXPECT_EQ(stats().implicit, 2u);
    });
    th.join();
    EXPECT_EQ(g_deallocs - before, 3);
}

TEST(Autorelease, TheImplicitPoolIsReportedInDebugMode) {
    GTEST_FLAG_SET(death_test_style, "threadsafe"); // the child reads POOLKIT_DEBUG afresh
    setenv("POOLKIT_DEBUG", "1", 1);
    EXPECT_EXIT(
        {
            std::thread th([] { pk_autorelease(make(1)); });
            th.join();
            std::exit(0);
        },
        ::testing::ExitedWithCode(0), "autorelease with no pool.*Tracked");
    unsetenv("POOLKIT_DEBUG");
}

TEST(Autorelease, DebugModeKeepsTheSameBehaviour) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    setenv("POOLKIT_DEBUG", "1", 1);
    EXPECT_EXIT(
        {
            std::vector<long> log;
            t_log = &log;
            pk_autorelease_pool a = pk_autorelease_push();
            pk_autorelease(make(1));
            pk_autorelease_pool b = pk_autorelease_push();
            pk_autorelease(make(2, 3));
            pk_autorelease_pop(b);
            pk_autorelease_pop(a);
            t_log = nullptr;
            std::exit(log == std::vector<long>{2, 3, 1} ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "");
    unsetenv("POOLKIT_DEBUG");
}

TEST(Autorelease, PoolsArePerThread) {
    const int threads = 4;
    const long per = static_cast<long>(scaled(20000, 1000));
    long before = g_deallocs;
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++)
        ts.emplace_back([per] {
            for (long i = 0; i < per; i += 10) {
                PK_AUTORELEASE_POOL {
                    for (int j = 0; j < 10; j++) pk_autorelease(make(i + j));
                }
            }
            EXPECT_EQ(stats().pending, 0u);
        });
    for (auto &t : ts) t.join();
    EXPECT_EQ(g_deallocs - before, threads * per);
}

// ---- pages ------------------------------------------------------------------

TEST(Autorelease, ManyEntriesSpanPagesAndGoBack) {
    long before = g_deallocs;
    const long n = static_cast<long>(scaled(100000, 5000));
    size_t pages_before = stats().pages;
    pk_autorelease_pool p = pk_autorelease_push();
    for (long i = 0; i < n; i++) pk_autorelease(make(i));
    EXPECT_EQ(stats().pending, static_cast<size_t>(n));
    EXPECT_GT(stats().pages, pages_before);
    pk_autorelease_pop(p);
    EXPECT_EQ(g_deallocs - before, n);
    EXPECT_LE(stats().pages, 2u); // the first page and one spare
}

TEST(Autorelease, DeepNestingSpansPages) {
    LogScope ls;
    const int depth = 3000;
    std::vector<pk_autorelease_pool> pools;
    for (int i = 0; i < depth; i++) {
        pools.push_back(pk_autorelease_push());
        pk_autorelease(make(i));
    }
    EXPECT_EQ(stats().depth, static_cast<size_t>(depth));
    pk_autorelease_pop(pools[depth / 2]);
    EXPECT_EQ(stats().depth, static_cast<size_t>(depth / 2));
    pk_autorelease_pop(pools[0]);
    ASSERT_EQ(ls.log.size(), static_cast<size_t>(depth));
    for (int i = 0; i < depth; i++) EXPECT_EQ(ls.log[i], depth - 1 - i);
}

TEST(Autorelease, APushPopLoopDoesNotAllocate) {
    // At every fill level of an outer pool across two page boundaries, a loop
    // of push, autorelease, pop takes no page once warm, even where each push
    // or autorelease has to start a new page.
    std::thread th([] {
        pk_autorelease_pool outer = pk_autorelease_push();
        long allocating_levels = 0;
        auto body = [](int i) {
            pk_autorelease_pool p = pk_autorelease_push();
            pk_autorelease(make(i));
            pk_defer(as_ptr(i), log_deferred);
            pk_autorelease_pop(p);
            pk_autorelease_pool q = pk_autorelease_push();
            pk_autorelease_pop(q);
        };
        for (int level = 0; level < 1100; level++) {
            body(0); // warm: the first crossing of a boundary may take the spare page
            uint64_t before = stats().page_allocs;
            for (int i = 0; i < 20; i++) body(i);
            if (stats().page_allocs != before) allocating_levels++;
            pk_autorelease(make(level)); // one more entry in the outer pool
        }
        EXPECT_EQ(allocating_levels, 0);
        pk_autorelease_pop(outer);
        EXPECT_LE(stats().pages, 2u);
    });
    th.join();
}

// ---- scratch ----------------------------------------------------------------

TEST(Autorelease, ScratchMemoryIsReclaimedInALoopOfScopes) {
    std::set<void *> firsts;
    for (int i = 0; i < static_cast<int>(scaled(20000, 2000)); i++) {
        PK_AUTORELEASE_POOL {
            char *a = static_cast<char *>(pk_scratch(1000));
            char *b = static_cast<char *>(pk_scratch(3000));
            ASSERT_NE(a, nullptr);
            ASSERT_NE(b, nullptr);
            std::memset(a, 1, 1000);
            std::memset(b, 2, 3000);
            firsts.insert(a);
        }
    }
    EXPECT_LE(firsts.size(), 2u); // the same memory every time
}

TEST(Autorelease, ScratchLivesUntilItsOwnPoolPops) {
    pk_autorelease_pool outer = pk_autorelease_push();
    char *keep = static_cast<char *>(pk_scratch(64));
    std::memset(keep, 'k', 64);
    pk_autorelease_pool inner = pk_autorelease_push();
    char *tmp = static_cast<char *>(pk_scratch(64));
    std::memset(tmp, 't', 64);
    pk_autorelease_pop(inner);
    EXPECT_TRUE(pktest::all_bytes(keep, 64, 'k'));
    char *next = static_cast<char *>(pk_scratch(64)); // reuses what inner had
    EXPECT_EQ(next, tmp);
    EXPECT_TRUE(pktest::all_bytes(keep, 64, 'k'));
    pk_autorelease_pop(outer);
}

TEST(Autorelease, ScratchIsStillThereForTheDrain) {
    static char seen[16];
    pk_autorelease_pool p = pk_autorelease_push();
    char *s = static_cast<char *>(pk_scratch(16));
    std::strcpy(s, "temporary");
    pk_defer(s, [](void *arg) { std::strcpy(seen, static_cast<char *>(arg)); });
    pk_autorelease_pop(p);
    EXPECT_STREQ(seen, "temporary");
}

TEST(Autorelease, ScratchAllocationsAreAligned) {
    PK_AUTORELEASE_POOL {
        for (size_t n : {1, 3, 17, 100, 5000, 100000}) {
            void *p = pk_scratch(n);
            ASSERT_NE(p, nullptr);
            EXPECT_TRUE(pktest::aligned_to(p, alignof(std::max_align_t)));
            std::memset(p, 0, n);
        }
    }
}

// ---- stats ------------------------------------------------------------------

TEST(Autorelease, StatsCountPendingDepthAndHighWater) {
    std::thread th([] {
        pk_autorelease_stats s = stats();
        EXPECT_EQ(s.pending, 0u);
        EXPECT_EQ(s.depth, 0u);
        pk_autorelease_pool a = pk_autorelease_push();
        for (int i = 0; i < 10; i++) pk_autorelease(make(i));
        pk_autorelease_pool b = pk_autorelease_push();
        pk_defer(as_ptr(1), log_deferred);
        s = stats();
        EXPECT_EQ(s.pending, 11u);
        EXPECT_EQ(s.depth, 2u);
        EXPECT_EQ(s.implicit, 0u);
        EXPECT_EQ(s.high_water, 11u);
        EXPECT_GE(s.pages, 1u);
        pk_autorelease_pop(b);
        pk_autorelease_pop(a);
        s = stats();
        EXPECT_EQ(s.pending, 0u);
        EXPECT_EQ(s.depth, 0u);
        EXPECT_EQ(s.high_water, 11u);
    });
    th.join();
}

// ---- the macros -------------------------------------------------------------

TEST(Autorelease, PoolMacroPopsAtTheEndOfItsBlock) {
    LogScope ls;
    PK_AUTORELEASE_POOL {
        pk_autorelease(make(1));
        PK_AUTORELEASE_POOL { pk_autorelease(make(2)); }
        EXPECT_EQ(ls.log, std::vector<long>{2});
    }
    EXPECT_EQ(ls.log, (std::vector<long>{2, 1}));
    EXPECT_EQ(stats().depth, 0u);
}

int scoped_early_return(bool early) {
    PK_AUTORELEASE_SCOPE();
    pk_autorelease(make(1));
    if (early) return 1;
    pk_autorelease(make(2));
    return 2;
}

TEST(Autorelease, ScopeMacroPopsOnEarlyReturn) {
    LogScope ls;
    size_t depth = stats().depth;
    EXPECT_EQ(scoped_early_return(true), 1);
    EXPECT_EQ(ls.log, std::vector<long>{1});
    EXPECT_EQ(stats().depth, depth);
    EXPECT_EQ(scoped_early_return(false), 2);
    EXPECT_EQ(ls.log, (std::vector<long>{1, 2, 1}));
    EXPECT_EQ(stats().depth, depth);
}

// ---- a randomized run against a model ---------------------------------------

// The model: the stack as a vector of entries. Popping pool k drains from the
// top, an object with a child pushing that child on top as its dealloc runs.
struct ModelEntry {
    enum Kind { POOL, OBJECT, DEFER } kind;
    long id;
    long child;
    uintptr_t token;
};

void model_drain_to(std::vector<ModelEntry> &m, size_t keep, std::vector<long> &log) {
    while (m.size() > keep) {
        ModelEntry e = m.back();
        m.pop_back();
        if (e.kind == ModelEntry::POOL) continue;
        log.push_back(e.id);
        if (e.kind == ModelEntry::OBJECT && e.child > 0)
            m.push_back({ModelEntry::OBJECT, e.child, 0, 0});
    }
}

TEST(Autorelease, RandomSequencesMatchTheModel) {
    const int steps = static_cast<int>(scaled(20000, 3000));
    std::vector<long> expected, actual;
    std::thread th([&] {
        t_log = &actual;
        pktest::Rng rng(20240611);
        std::vector<ModelEntry> model;
        long next_id = 1;
        size_t checked = 0;
        for (int step = 0; step < steps; step++) {
            unsigned r = static_cast<unsigned>(rng.below(100));
            std::vector<size_t> pools;
            for (size_t i = 0; i < model.size(); i++)
                if (model[i].kind == ModelEntry::POOL) pools.push_back(i);
            if (r < 15 || (r < 30 && pools.size() < 3)) {
                pk_autorelease_pool p = pk_autorelease_push();
                model.push_back({ModelEntry::POOL, 0, 0, p.token});
            } else if (r < 30 && !pools.empty()) {
                // Mostly the innermost pool; sometimes an outer one.
                size_t k = rng.chance(75) ? pools.back() : pools[rng.below(pools.size())];
                pk_autorelease_pop(pk_autorelease_pool{model[k].token});
                model_drain_to(model, k, expected);
            } else if (r < 80) {
                long id = next_id++;
                long child = rng.chance(20) ? next_id++ : 0;
                pk_autorelease(make(id, child));
                model.push_back({ModelEntry::OBJECT, id, child, 0});
            } else {
                long id = next_id++;
                pk_defer(as_ptr(id), log_deferred);
                model.push_back({ModelEntry::DEFER, id, 0, 0});
            }
            ASSERT_EQ(actual.size(), expected.size()) << "at step " << step;
            for (; checked < actual.size(); checked++)
                ASSERT_EQ(actual[checked], expected[checked]) << "entry " << checked << ", step " << step;
            if (step % 97 == 0) {
                size_t pending = 0, depth = 0;
                for (const ModelEntry &e : model) (e.kind == ModelEntry::POOL ? depth : pending)++;
                pk_autorelease_stats s = stats();
                ASSERT_EQ(s.pending, pending) << "at step " << step;
                ASSERT_EQ(s.depth, depth) << "at step " << step;
            }
        }
        // What is left (the implicit pool included) goes at thread exit.
        model_drain_to(model, 0, expected);
    });
    th.join();
    t_log = nullptr;
    EXPECT_EQ(actual, expected);
}

}  // namespace
