/* Memory that pools hold free: kept across phases, given back when idle.
 *
 * pool.h (pk_set_purge_delay): memory whose objects are all free stays
 * mapped for the purge delay (POOLKIT_PURGE_DELAY_MS, else 500 ms), so a
 * program that builds and tears down the same structures again and again
 * never faults its memory back in; after the delay it goes back to the
 * system on poolkit's own calls, without pk_pool_trim.
 *
 * - PoolPhases: allocate, touch and free the same working set again and
 *   again (LIFO, FIFO, random frees); after the first phase a phase makes
 *   next to no minor page faults (getrusage).
 * - IdleMemory: with a short delay, 64 MiB of freed objects leave the
 *   resident set within about the delay while the program keeps making
 *   calls that reach the library; with delay 0 at once; with a long delay
 *   not within 300 ms, yet pk_pool_trim returns it at once.
 * - PurgeDelay: the environment variable and the call set the delay; the
 *   call returns the previous value and a negative argument only reads;
 *   a malformed value is reported once on stderr and the default is used.
 *
 * Settings and resident-size checks run in a fresh copy of this program
 * (child.h), so the delay each one sets leaks into no other test. Fault
 * counts are the tool's own under valgrind and ASan, so PoolPhases skips
 * there. The IdleMemory checks run under every tool: valgrind follows no
 * exec, so the fresh copy runs natively, and ASan and ThreadSanitizer give
 * the shadow of unmapped memory back with it, so resident size falls as
 * natively. */
#include "child.h"

#include <sys/resource.h>

#include <numeric>

using namespace pktest;

namespace {

/* ======================================================================
 * Helpers for the child bodies (stdio and poolkit only: no GoogleTest)
 * ==================================================================== */

constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kIdleObjSize = 256;
constexpr size_t kIdleCount = 262144; /* 64 MiB of objects */

/* Calls that reach the library on another pool: more objects than any
 * thread cache holds, allocated and freed, so batches move between the
 * cache and the pool (slow paths whatever the cache's size). */
void other_pool_work(pk_pool *other) {
    static void *buf[8192];
    for (auto &o : buf) o = pk_pool_alloc(other);
    for (void *o : buf)
        if (o) pk_pool_free(other, o);
}

/* The lightest calls into the library on the pool itself: one bulk
 * allocation and one bulk free of four objects (both are library calls,
 * never inline). */
void same_pool_bulk_work(pk_pool *p) {
    void *b[4];
    size_t n = pk_pool_alloc_bulk(p, b, 4);
    pk_pool_free_bulk(p, b, n);
}

enum class Work { OtherPool, SamePoolBulk };

void light_work(Work w, pk_pool *p, pk_pool *other) {
    if (w == Work::OtherPool) other_pool_work(other);
    else same_pool_bulk_work(p);
}

/* A pool with 64 MiB of objects allocated and touched, then all freed. */
struct FreedWorkingSet {
    pk_pool *pool = nullptr, *other = nullptr;
    std::vector<void *> objs;
    size_t base = 0, full = 0; /* resident bytes before and with the objects */

    /* Returns "" or why the working set could not be made. */
    std::string make() {
        pk_pool_config c = make_config(kIdleObjSize, 0, 0, "idle");
        pool = pk_pool_create(&c);
        pk_pool_config o = make_config(16, 0, 0, "other");
        other = pk_pool_create(&o);
        if (!pool || !other) return "pk_pool_create failed";
        objs.assign(kIdleCount, nullptr); /* touched before base is read */
        other_pool_work(other);           /* this thread's own bookkeeping, made now */
        same_pool_bulk_work(pool);
        base = rss_bytes();
        if (base == 0) return "no VmRSS in /proc/self/status";
        for (size_t i = 0; i < kIdleCount; i++) {
            objs[i] = pk_pool_alloc(pool);
            if (!objs[i]) return "allocation failed";
            std::memset(objs[i], static_cast<int>(i), kIdleObjSize);
        }
        full = rss_bytes();
        if (full < base + 48 * kMiB)
            return "resident size grew by only " + std::to_string((full - base) / 1024) + " KiB";
        for (size_t i = kIdleCount; i-- > 0;) pk_pool_free(pool, objs[i]);
        return "";
    }
    size_t grown() const { return full - base; }
    /* True when resident size has fallen back to within a quarter of what
     * the objects added. */
    bool returned(size_t rss) const { return rss <= base + grown() / 4; }
    std::string figures(size_t rss) const {
        char buf[160];
        std::snprintf(buf, sizeof buf, "resident %zu KiB before, %zu KiB with the objects, %zu KiB now",
                      base / 1024, full / 1024, rss / 1024);
        return buf;
    }
};

/* Keeps doing light work every millisecond until the memory is back or
 * limit_ms have passed; returns the milliseconds it took, or -1. */
double wait_for_return(FreedWorkingSet &ws, Work w, double limit_ms) {
    double t0 = now_ms();
    for (;;) {
        light_work(w, ws.pool, ws.other);
        double t = now_ms() - t0;
        if (ws.returned(rss_bytes())) return t;
        if (t > limit_ms) return -1;
        usleep(1000);
    }
}

#define CHILD_MAKE_WORKING_SET(ws)                                                         \
    FreedWorkingSet ws;                                                                    \
    do {                                                                                   \
        std::string why = ws.make();                                                       \
        if (!why.empty()) CHILD_SKIP("%s", why.c_str());                                   \
    } while (0)

int idle_memory_returns_within(Work w, double limit_ms) {
    CHILD_MAKE_WORKING_SET(ws);
    double took = wait_for_return(ws, w, limit_ms);
    size_t rss = rss_bytes();
    CHILD_CHECK(took >= 0, "freed memory still resident after %.0f ms of calls, without a trim: %s", limit_ms,
                ws.figures(rss).c_str());
    std::printf("freed memory went back after %.0f ms\n", took);
    return CHILD_PASS;
}

/* With a long delay, memory freed stays for 300 ms of calls; a trim then
 * returns it at once. */
int long_delay_keeps_memory_until_trim() {
    CHILD_MAKE_WORKING_SET(ws);
    double t0 = now_ms();
    size_t lowest = ws.full;
    while (now_ms() - t0 < 300) {
        other_pool_work(ws.other);
        same_pool_bulk_work(ws.pool);
        lowest = std::min(lowest, rss_bytes());
        usleep(1000);
    }
    CHILD_CHECK(lowest >= ws.base + ws.grown() / 2,
                "memory went back within 300 ms although the delay is 60 s: %s",
                ws.figures(lowest).c_str());
    size_t released = pk_pool_trim(ws.pool);
    size_t rss = rss_bytes();
    CHILD_CHECK(ws.returned(rss), "pk_pool_trim (released %zu bytes) did not give the memory back: %s", released,
                ws.figures(rss).c_str());
    CHILD_CHECK(released >= 48 * kMiB, "pk_pool_trim says it released only %zu bytes", released);
    return CHILD_PASS;
}

}  // namespace

/* ---- child bodies: resident memory ---------------------------------------- */

PKTEST_CHILD(IdleReturnWhileAnotherPoolIsUsed) { return idle_memory_returns_within(Work::OtherPool, 2000); }

PKTEST_CHILD(IdleReturnWhileTheSamePoolGetsBulkCalls) {
    return idle_memory_returns_within(Work::SamePoolBulk, 2000);
}

PKTEST_CHILD(IdleReturnOfADestroyedPool) {
    CHILD_MAKE_WORKING_SET(ws);
    pk_pool_destroy(ws.pool); /* every object free: its slabs go to the cache of destroyed pools */
    ws.pool = nullptr;
    double t0 = now_ms();
    size_t rss;
    for (;;) {
        other_pool_work(ws.other);
        rss = rss_bytes();
        if (rss <= ws.base + ws.grown() / 8) break;
        CHILD_CHECK(now_ms() - t0 < 2000,
                    "the slabs of a destroyed pool are still resident after 2 s of calls: %s "
                    "(a cache of destroyed pools' memory is kept only for the delay)",
                    ws.figures(rss).c_str());
        usleep(1000);
    }
    std::printf("a destroyed pool's memory went back after %.0f ms\n", now_ms() - t0);
    return CHILD_PASS;
}

PKTEST_CHILD(IdleReturnAtOnceWithDelayZero) {
    CHILD_MAKE_WORKING_SET(ws);
    for (int i = 0; i < 3; i++) {
        other_pool_work(ws.other);
        same_pool_bulk_work(ws.pool);
    }
    size_t rss = rss_bytes();
    CHILD_CHECK(ws.returned(rss), "with delay 0, freed memory is still resident right after the frees: %s",
                ws.figures(rss).c_str());
    return CHILD_PASS;
}

PKTEST_CHILD(LongDelayKeepsMemoryButTrimReturnsIt) { return long_delay_keeps_memory_until_trim(); }

PKTEST_CHILD(CallSetsAShortDelay) {
    long old = pk_set_purge_delay(50);
    CHILD_CHECK(old == 500, "pk_set_purge_delay(50) returned %ld, not the default 500", old);
    return idle_memory_returns_within(Work::OtherPool, 2000);
}

PKTEST_CHILD(CallSetsALongDelay) {
    long old = pk_set_purge_delay(60000);
    CHILD_CHECK(old == 500, "pk_set_purge_delay(60000) returned %ld, not the default 500", old);
    return long_delay_keeps_memory_until_trim();
}

/* ---- child bodies: the setting itself --------------------------------------- */

namespace {

/* Some use of every kind of memory the delay governs. */
void some_pool_work() {
    pk_pool_config c = make_config(64, 0, 0, "work");
    pk_pool *p = pk_pool_create(&c);
    std::vector<void *> objs;
    for (int i = 0; i < 5000; i++) objs.push_back(pk_pool_alloc(p));
    for (void *o : objs) pk_pool_free(p, o);
    pk_pool_trim(p);
    pk_pool_destroy(p);
    pk_arena *a = pk_arena_create(0);
    for (int i = 0; i < 100; i++) pk_arena_alloc(a, 4000, 0);
    pk_arena_reset(a);
    pk_arena_destroy(a);
}

}  // namespace

/* A busy pool's empty slab goes back within the delay: the pool ticks
 * every half delay (PURGE_INTERVAL_MS) on its own calls, and a slab empty
 * at one tick goes at the next, so between half a delay and a delay after
 * it emptied. A pool with a limit takes its lock, and ticks, on every call;
 * its first call ticks, so the slab empties just after a tick and goes
 * about a delay later (two intervals), far from the two delays that ticks
 * a whole delay apart would take. Calls every 2 ms keep it from ever being
 * idle for the delay (which would return everything at once). */
PKTEST_CHILD(EmptySlabOfABusyPoolGoesBackWithinTheDelay) {
    const long delay = slow_tool() ? 1000 : 200;
    pk_set_purge_delay(delay);
    pk_pool_config c = make_config(64, 0, 0, "ticking");
    c.limit = size_t(1) << 20;
    pk_pool *p = pk_pool_create(&c);
    CHILD_CHECK(p != nullptr, "pk_pool_create failed");
    std::vector<void *> a; /* the first slab's objects */
    void *b = nullptr;     /* the first of the second slab */
    while (!b) {
        void *o = pk_pool_alloc(p);
        CHILD_CHECK(o != nullptr, "allocation failed");
        if (!a.empty() && (reinterpret_cast<uintptr_t>(o) ^ reinterpret_cast<uintptr_t>(a[0])) >> 16) b = o;
        else a.push_back(o);
    }
    pk_pool_free(p, a.back()); /* the first slab partly used: the calls below use it */
    a.pop_back();
    double t0 = now_ms();
    pk_pool_free(p, b); /* the second slab empty */
    double released = -1;
    while (now_ms() - t0 < 4 * delay && released < 0) {
        pk_pool_free(p, pk_pool_alloc(p));
        if (stats_of(p).bytes_released > 0) released = now_ms() - t0;
        usleep(2000);
    }
    std::printf("empty slab released %.0f ms after it emptied (purge delay %ld ms)\n", released, delay);
    CHILD_CHECK(released >= 0, "the empty slab of a busy pool stayed for four delays");
    CHILD_CHECK(released <= 1.5 * (double)delay, "the empty slab went back %.0f ms after it emptied: more than "
                "one and a half delays (%ld ms)", released, delay);
    for (void *o : a) pk_pool_free(p, o);
    pk_pool_destroy(p);
    return CHILD_PASS;
}

PKTEST_CHILD(ReportDelay) {
    some_pool_work();
    std::printf("delay=%ld\n", pk_set_purge_delay(-1));
    return CHILD_PASS;
}

PKTEST_CHILD(SetReturnsThePreviousValueAndNegativeOnlyReads) {
    long d;
    CHILD_CHECK((d = pk_set_purge_delay(-1)) == 500, "the default is 500 ms, read %ld", d);
    CHILD_CHECK((d = pk_set_purge_delay(70)) == 500, "setting 70 returned %ld, not 500", d);
    CHILD_CHECK((d = pk_set_purge_delay(-1)) == 70, "reading after setting 70 gave %ld", d);
    CHILD_CHECK((d = pk_set_purge_delay(-5)) == 70, "-5 returned %ld, not 70", d);
    CHILD_CHECK((d = pk_set_purge_delay(-1)) == 70, "-5 changed the delay to %ld", d);
    CHILD_CHECK((d = pk_set_purge_delay(0)) == 70, "setting 0 returned %ld, not 70", d);
    CHILD_CHECK((d = pk_set_purge_delay(-1)) == 0, "reading after setting 0 gave %ld", d);
    some_pool_work();
    CHILD_CHECK((d = pk_set_purge_delay(1234)) == 0, "setting 1234 returned %ld, not 0", d);
    CHILD_CHECK((d = pk_set_purge_delay(-1)) == 1234, "reading after setting 1234 gave %ld", d);
    return CHILD_PASS;
}

/* ======================================================================
 * PoolPhases: no refaulting
 * ==================================================================== */

namespace {

long minor_faults() {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

enum class Order { Lifo, Fifo, Random };

/* One phase: allocate objs.size() objects, write every byte, free them all
 * in `order`. Returns the minor page faults it took, or -1 if an allocation
 * failed. Everything else it needs (objs, perm) is made before. */
long run_phase(pk_pool *p, size_t size, std::vector<void *> &objs, const std::vector<size_t> &perm, Order order) {
    long f0 = minor_faults();
    for (size_t i = 0; i < objs.size(); i++) {
        objs[i] = pk_pool_alloc(p);
        if (!objs[i]) return -1;
        std::memset(objs[i], static_cast<int>(i), size);
    }
    switch (order) {
    case Order::Lifo:
        for (size_t i = objs.size(); i-- > 0;) pk_pool_free(p, objs[i]);
        break;
    case Order::Fifo:
        for (void *o : objs) pk_pool_free(p, o);
        break;
    case Order::Random:
        for (size_t i : perm) pk_pool_free(p, objs[i]);
        break;
    }
    return minor_faults() - f0;
}

/* 262,144 objects of 48 bytes (12 MiB), four repeated phases after the
 * first: each may fault in at most 16 pages, where the first faults in
 * thousands. */
void expect_repeated_phases_fault_nothing_in(Order order) {
    if (running_under_valgrind() || PKTEST_ASAN) GTEST_SKIP() << "page faults are the tool's here";
    long delay = pk_set_purge_delay(-1);
    if (delay < 100) GTEST_SKIP() << "POOLKIT_PURGE_DELAY_MS is " << delay << " ms: phases may outlast it";
    const size_t size = 48;
    const size_t n = scaled(262144, 65536);
    pk_pool_release_cache(); /* so the first phase starts from memory that is not resident */
    PoolPtr p = make_pool(size, 0, 0, "phases");
    ASSERT_NE(p.get(), nullptr);
    std::vector<void *> objs(n, nullptr);
    std::vector<size_t> perm(n);
    std::iota(perm.begin(), perm.end(), size_t(0));
    Rng rng(9);
    for (size_t i = n - 1; i > 0; i--) std::swap(perm[i], perm[rng.below(i + 1)]);

    long first = run_phase(p.get(), size, objs, perm, order);
    ASSERT_GE(first, 0) << "allocation failed";
    const long pages = static_cast<long>(n * size / page_size());
    if (first < pages / 8)
        GTEST_SKIP() << "the first phase faulted only " << first << " times for " << pages
                     << " pages (huge pages? memory resident already?), so faults do not measure it here";
    for (int phase = 2; phase <= 5; phase++) {
        long faults = run_phase(p.get(), size, objs, perm, order);
        ASSERT_GE(faults, 0) << "allocation failed in phase " << phase;
        EXPECT_LE(faults, 16) << "phase " << phase << " faulted " << faults << " pages back in (the first phase, "
                              << pages << " pages of objects, faulted " << first << ")";
    }
    pk_pool_stats s = stats_of(p.get());
    EXPECT_EQ(s.live, 0u);
}

}  // namespace

TEST(PoolPhases, RepeatingAPhaseWithLifoFreesFaultsNoMemoryBackIn) {
    expect_repeated_phases_fault_nothing_in(Order::Lifo);
}

TEST(PoolPhases, RepeatingAPhaseWithFifoFreesFaultsNoMemoryBackIn) {
    expect_repeated_phases_fault_nothing_in(Order::Fifo);
}

TEST(PoolPhases, RepeatingAPhaseWithRandomFreesFaultsNoMemoryBackIn) {
    expect_repeated_phases_fault_nothing_in(Order::Random);
}

/* ======================================================================
 * IdleMemory: given back without a trim
 * ==================================================================== */

TEST(IdleMemory, GoesBackWithinTheDelayWhileAnotherPoolIsUsed) {
    EXPECT_CHILD_PASSES("IdleReturnWhileAnotherPoolIsUsed", {{"POOLKIT_PURGE_DELAY_MS", "50"}});
}

TEST(IdleMemory, GoesBackWithinTheDelayWhileTheSamePoolGetsBulkCalls) {
    EXPECT_CHILD_PASSES("IdleReturnWhileTheSamePoolGetsBulkCalls", {{"POOLKIT_PURGE_DELAY_MS", "50"}});
}

TEST(IdleMemory, OfADestroyedPoolGoesBackWithinTheDelay) {
    EXPECT_CHILD_PASSES("IdleReturnOfADestroyedPool", {{"POOLKIT_PURGE_DELAY_MS", "50"}});
}

TEST(IdleMemory, GoesBackAtOnceWithDelayZero) {
    EXPECT_CHILD_PASSES("IdleReturnAtOnceWithDelayZero", {{"POOLKIT_PURGE_DELAY_MS", "0"}});
}

TEST(IdleMemory, StaysForALongDelayButTrimReturnsItAtOnce) {
    EXPECT_CHILD_PASSES("LongDelayKeepsMemoryButTrimReturnsIt", {{"POOLKIT_PURGE_DELAY_MS", "60000"}});
}

TEST(IdleMemory, AnEmptySlabOfABusyPoolGoesBackWithinTheDelay) {
    EXPECT_CHILD_PASSES("EmptySlabOfABusyPoolGoesBackWithinTheDelay", {{"POOLKIT_PURGE_DELAY_MS", nullptr}});
}

TEST(IdleMemory, ShortDelaySetByTheCallIsHonoured) {
    EXPECT_CHILD_PASSES("CallSetsAShortDelay", {{"POOLKIT_PURGE_DELAY_MS", nullptr}});
}

TEST(IdleMemory, LongDelaySetByTheCallIsHonoured) {
    EXPECT_CHILD_PASSES("CallSetsALongDelay", {{"POOLKIT_PURGE_DELAY_MS", nullptr}});
}

/* ======================================================================
 * PurgeDelay: the setting
 * ==================================================================== */

namespace {

/* The lines of s that start with prefix. */
std::vector<std::string> lines_starting(const std::string &s, const char *prefix) {
    std::vector<std::string> v;
    size_t at = 0;
    while (at < s.size()) {
        size_t end = s.find('\n', at);
        if (end == std::string::npos) end = s.size();
        std::string line = s.substr(at, end - at);
        if (line.compare(0, std::strlen(prefix), prefix) == 0) v.push_back(line);
        at = end + 1;
    }
    return v;
}

/* Runs ReportDelay with POOLKIT_PURGE_DELAY_MS as given; checks the delay
 * it reads and how many "poolkit:" lines it wrote. */
void expect_delay_from_env(const char *value, long want, size_t reports) {
    ChildResult r = run_child("ReportDelay", {{"POOLKIT_PURGE_DELAY_MS", value}});
    ASSERT_TRUE(r.passed()) << r.describe();
    EXPECT_EQ(r.out, "delay=" + std::to_string(want) + "\n")
        << "POOLKIT_PURGE_DELAY_MS=" << (value ? value : "(unset)") << "\n" << r.describe();
    std::vector<std::string> lines = lines_starting(r.err, "poolkit:");
    EXPECT_EQ(lines.size(), reports) << "POOLKIT_PURGE_DELAY_MS=" << (value ? value : "(unset)") << "\n"
                                     << r.describe();
    for (const std::string &l : lines)
        EXPECT_NE(l.find("POOLKIT_PURGE_DELAY_MS"), std::string::npos) << "the report names the variable: " << l;
}

}  // namespace

TEST(PurgeDelay, DefaultIs500Milliseconds) { expect_delay_from_env(nullptr, 500, 0); }

TEST(PurgeDelay, EnvironmentVariableSetsIt) {
    expect_delay_from_env("1234", 1234, 0);
    expect_delay_from_env("0", 0, 0);
}

TEST(PurgeDelay, SetReturnsThePreviousValueAndNegativeOnlyReads) {
    EXPECT_CHILD_PASSES("SetReturnsThePreviousValueAndNegativeOnlyReads", {{"POOLKIT_PURGE_DELAY_MS", nullptr}});
}

TEST(PurgeDelay, MalformedValueIsReportedOnceAndTheDefaultUsed) {
    for (const char *bad : {"abc", "-5", "12ms", "5 0"}) {
        SCOPED_TRACE(std::string("POOLKIT_PURGE_DELAY_MS=") + bad);
        expect_delay_from_env(bad, 500, 1);
    }
}
