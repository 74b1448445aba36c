/* Memory back after the program goes quiet: at its first call, or with no
 * call at all when the background purge runs.
 *
 * pool.h (pk_set_purge_delay, pk_set_background_purge): memory unused for
 * the purge delay goes back at the program's first call that reaches the
 * library after it, however long the silence (time stamps, not low-water
 * marks that need ticks during the silence); with the background purge on,
 * without any call. The story: a burst of 100,000 objects of
 * 200 B allocated and freed, then no poolkit call for longer than the delay,
 * then one call.
 *
 * - IdleReturn: resident size falls at that one call, whichever call it is
 *   (another pool's slow path, a stats call, the pool's own first call for a
 *   PK_POOL_LOCAL pool), and not before it when no thread runs; calls made
 *   inside a pk_pool_foreach callback do not wait for the pool list.
 * - BackgroundPurge: with POOLKIT_BACKGROUND_PURGE=1 or the call, resident
 *   size falls with no call; off, no thread exists; the call starts and
 *   stops exactly one thread; a fork child can allocate, gets its memory
 *   back and exits; the thread sweeps safely beside threads that use and
 *   destroy pools; it does not keep a process alive whose main thread
 *   called pthread_exit.
 *
 * Every check runs in a fresh copy of this program (child.h), so the delay
 * and the thread stay out of the other tests. Resident-size checks run
 * under every tool, as IdleMemory's do (test_pool_purge.cc): valgrind
 * follows no exec, so the fresh copy runs natively, and ASan and TSan give
 * the shadow of unmapped memory back with it. Thread counts are compared
 * before and after, and purge threads are counted by name, so a tool's
 * own threads do not count. */
#include "child.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>

using namespace pktest;

namespace {

constexpr size_t kMiB = size_t(1) << 20;
/* About 22 MiB in objects of under 1 KiB (no thread's hot list keeps any
 * off its slab), few enough that their frees take less than a purge
 * interval under ThreadSanitizer on a loaded machine: a free loop longer
 * than that gives the first slabs back while it runs, as it should. */
constexpr size_t kBurstCount = 24000;
constexpr size_t kBurstSize = 960;
constexpr long kDelayMs = 100; /* pk_set_purge_delay in every story */

/* Threads of this process now (entries of /proc/self/task), 0 if unknown. */
size_t thread_count() {
    DIR *d = opendir("/proc/self/task");
    if (!d) return 0;
    size_t n = 0;
    while (struct dirent *e = readdir(d))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* Purge threads of this process now: threads named "poolkit-purge" (pool.h),
 * so that a tool's own threads (ThreadSanitizer starts one with the first
 * thread) do not count; -1 if /proc cannot tell. */
long purge_threads() {
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    long n = 0;
    while (struct dirent *e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        char path[300], name[32] = "";
        std::snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        if (FILE *f = std::fopen(path, "r")) {
            if (!std::fgets(name, sizeof name, f)) name[0] = '\0';
            std::fclose(f);
        }
        if (std::strcmp(name, "poolkit-purge\n") == 0) n++;
    }
    closedir(d);
    return n;
}

/* purge_threads(), read again until it gives want or 2 s have passed:
 * pthread_join returns once the thread has left user space, and the kernel
 * lists it under /proc/self/task until it has reaped it, a little later. */
long purge_threads_settled(long want) {
    long n = purge_threads();
    for (int i = 0; i < 2000 && n != want; i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, nullptr);
        n = purge_threads();
    }
    return n;
}

/* The burst: 100,000 objects of 200 B from one pool, each written in full,
 * then freed (last first, so the thread's cache keeps the first slab's). */
struct Burst {
    pk_pool *pool = nullptr;
    std::vector<void *> objs;
    size_t base = 0, full = 0; /* resident bytes before and with the objects */
    size_t freed = 0;          /* and once they are freed, before any silence */

    /* Returns "" or why the burst could not be made. */
    std::string run(unsigned flags = 0) {
        pk_pool_config c = make_config(kBurstSize, 0, flags, "burst");
        pool = pk_pool_create(&c);
        if (!pool) return "pk_pool_create failed";
        objs.assign(kBurstCount, nullptr); /* touched before base is read */
        base = rss_bytes();
        if (base == 0) return "no VmRSS in /proc/self/status";
        for (size_t i = 0; i < kBurstCount; i++) {
            objs[i] = pk_pool_alloc(pool);
            if (!objs[i]) return "allocation failed";
            std::memset(objs[i], static_cast<int>(i), kBurstSize);
        }
        full = rss_bytes();
        if (full < base + 16 * kMiB)
            return "resident size grew by only " + std::to_string((full - base) / 1024) + " KiB";
        for (size_t i = kBurstCount; i-- > 0;) pk_pool_free(pool, objs[i]);
        freed = rss_bytes();
        return "";
    }
    /* Back: resident size within a quarter of what the objects added. */
    bool returned(size_t rss) const { return rss <= base + (full - base) / 4; }
    /* Fell since the frees by over a quarter of what the objects added. */
    bool fell_since_freed(size_t rss) const { return rss + (full - base) / 4 < freed; }
    std::string figures(size_t rss) const {
        char buf[160];
        std::snprintf(buf, sizeof buf, "resident %zu KiB before the burst, %zu KiB with it, %zu KiB now",
                      base / 1024, full / 1024, rss / 1024);
        return buf;
    }
};

#define CHILD_BURST(b, ...)                                                                \
    Burst b;                                                                               \
    do {                                                                                   \
        std::string why = b.run(__VA_ARGS__);                                              \
        if (!why.empty()) CHILD_SKIP("%s", why.c_str());                                   \
    } while (0)

/* No poolkit call for three delays. */
void silence() { usleep(3 * kDelayMs * 1000); }

/* Reads resident size (no poolkit call) every 5 ms until the burst's memory
 * is back or limit_ms pass; returns the milliseconds it took, or -1. */
double wait_without_calls(const Burst &b, double limit_ms) {
    double t0 = now_ms();
    for (;;) {
        double t = now_ms() - t0;
        if (b.returned(rss_bytes())) return t;
        if (t > limit_ms) return -1;
        usleep(5000);
    }
}

/* Up to 30 delays (3 s) for the background purge (it wakes every half
 * delay); more under a slow tool. */
double background_limit_ms() { return (slow_tool() ? 100 : 30) * kDelayMs; }

/* The story up to the call: delay set, burst, silence; checks that nothing
 * went back during the silence. */
#define CHILD_STORY_BEFORE_THE_CALL(b, ...)                                                \
    pk_set_purge_delay(kDelayMs);                                                          \
    CHILD_BURST(b, ##__VA_ARGS__);                                                         \
    if (b.returned(b.freed))                                                               \
        CHILD_SKIP("the burst's memory went back while its frees ran (they took over a "   \
                   "purge interval here): no silence left to test: %s",                    \
                   b.figures(b.freed).c_str());                                            \
    silence();                                                                             \
    size_t rss_silent = rss_bytes();                                                       \
    CHILD_CHECK(!b.fell_since_freed(rss_silent),                                           \
                "memory went back during the silence, with no call and no thread: %s "     \
                "(%zu KiB once freed)",                                                    \
                b.figures(rss_silent).c_str(), b.freed / 1024)

}  // namespace

/* ---- child bodies: the first call after a silence ---------------------------- */

/* The call: the first allocation from another pool (its thread cache is
 * empty: a slow path), as a request that wakes the program would make. */
PKTEST_CHILD(ReturnAtAnotherPoolsSlowPath) {
    pk_pool_config c = make_config(64, 0, 0, "request");
    pk_pool *request = pk_pool_create(&c);
    CHILD_CHECK(request != nullptr, "pk_pool_create failed");
    CHILD_STORY_BEFORE_THE_CALL(b);
    void *obj = pk_pool_alloc(request);
    size_t rss = rss_bytes();
    CHILD_CHECK(obj != nullptr, "allocation failed");
    CHILD_CHECK(b.returned(rss), "the first call after %ld ms of silence (delay %ld ms) left the memory: %s",
                3 * kDelayMs, kDelayMs, b.figures(rss).c_str());
    std::printf("%s\n", b.figures(rss).c_str());
    return CHILD_PASS;
}

/* The call: pk_pool_stats_get on the burst's pool; its bytes_reserved falls
 * with the resident size. */
PKTEST_CHILD(ReturnAtAStatsCall) {
    pk_set_purge_delay(kDelayMs);
    CHILD_BURST(b);
    pk_pool_stats before;
    pk_pool_stats_get(b.pool, &before); /* a call, but before the silence */
    silence();
    pk_pool_stats after;
    pk_pool_stats_get(b.pool, &after);
    size_t rss = rss_bytes();
    CHILD_CHECK(b.returned(rss), "a stats call after the silence left the memory: %s", b.figures(rss).c_str());
    CHILD_CHECK(after.bytes_reserved <= before.bytes_reserved / 4,
                "bytes_reserved %zu before the silence, %zu at the first call after it", before.bytes_reserved,
                after.bytes_reserved);
    return CHILD_PASS;
}

/* The call: a bulk allocation from the burst's own pool, a PK_POOL_LOCAL
 * one (no call on another pool sweeps it: only its own calls), of more
 * objects than the thread's cache holds, so that it takes the pool's path. */
PKTEST_CHILD(ReturnAtALocalPoolsOwnCall) {
    CHILD_STORY_BEFORE_THE_CALL(b, PK_POOL_LOCAL);
    std::vector<void *> objs(1000);
    size_t n = pk_pool_alloc_bulk(b.pool, objs.data(), objs.size());
    size_t rss = rss_bytes();
    CHILD_CHECK(n == objs.size(), "pk_pool_alloc_bulk gave %zu of %zu", n, objs.size());
    CHILD_CHECK(b.returned(rss), "the local pool's first call after the silence left the memory: %s",
                b.figures(rss).c_str());
    pk_pool_free_bulk(b.pool, objs.data(), n);
    return CHILD_PASS;
}

/* The first calls after the silence are made inside a pk_pool_foreach
 * callback, which holds the pool list (stats calls on every pool, as a
 * report does): they must not wait for the list, and the return they could
 * not make happens at the next call instead. */
void stats_of_each(pk_pool *p, void *) {
    pk_pool_stats s;
    pk_pool_stats_get(p, &s);
}

PKTEST_CHILD(ReturnAfterCallsInsideForeach) {
    CHILD_STORY_BEFORE_THE_CALL(b);
    size_t pools = pk_pool_foreach(stats_of_each, nullptr);
    CHILD_CHECK(pools >= 1, "pk_pool_foreach saw no pool");
    pk_process_stats ps;
    pk_stats_get(&ps); /* the next call */
    size_t rss = rss_bytes();
    CHILD_CHECK(b.returned(rss), "the call after the foreach left the memory: %s", b.figures(rss).c_str());
    return CHILD_PASS;
}

/* ---- child bodies: the background purge --------------------------------------- */

/* Burst, then no call at all: resident size must fall. */
int background_story() {
    pk_set_purge_delay(kDelayMs);
    CHILD_BURST(b);
    double took = wait_without_calls(b, background_limit_ms());
    size_t rss = rss_bytes();
    CHILD_CHECK(took >= 0, "no memory back %.0f ms after the burst with the background purge on: %s",
                background_limit_ms(), b.figures(rss).c_str());
    std::printf("memory back %.0f ms after the burst, with no call\n", took);
    return CHILD_PASS;
}

PKTEST_CHILD(BackgroundFromTheEnvironment) { return background_story(); }

PKTEST_CHILD(BackgroundFromTheCall) {
    int was = pk_set_background_purge(1);
    CHILD_CHECK(was == 0, "pk_set_background_purge(1) returned %d, not 0 (off before)", was);
    return background_story();
}

/* Off: no thread ever (none at all besides the program's), and nothing
 * back without a call. */
PKTEST_CHILD(BackgroundOffNoThread) {
    size_t before = thread_count();
    CHILD_CHECK(before > 0, "cannot count threads in /proc/self/task");
    CHILD_STORY_BEFORE_THE_CALL(b);
    size_t during = thread_count();
    pk_pool_stats s;
    pk_pool_stats_get(b.pool, &s); /* a call: the thread would have started by now */
    size_t after = thread_count();
    CHILD_CHECK(during == before && after == before && purge_threads() == 0,
                "%zu threads before poolkit was used, %zu after the burst, %zu after a call (%ld purge)", before,
                during, after, purge_threads());
    int on = pk_set_background_purge(-1);
    CHILD_CHECK(on == 0, "pk_set_background_purge(-1) says %d with the purge off", on);
    return CHILD_PASS;
}

PKTEST_CHILD(BackgroundCallStartsAndStopsOneThread) {
    CHILD_CHECK(purge_threads() == 0, "cannot count threads in /proc/self/task, or one runs already");
    int r;
    CHILD_CHECK((r = pk_set_background_purge(-1)) == 0, "off at first, read %d", r);
    CHILD_CHECK((r = pk_set_background_purge(1)) == 0, "starting returned %d, not 0", r);
    CHILD_CHECK(purge_threads() == 1, "%ld purge threads after the start", purge_threads());
    CHILD_CHECK((r = pk_set_background_purge(1)) == 1, "starting again returned %d, not 1", r);
    CHILD_CHECK(purge_threads() == 1, "%ld purge threads after a second start", purge_threads());
    CHILD_CHECK((r = pk_set_background_purge(-1)) == 1, "reading while on gave %d", r);
    CHILD_CHECK((r = pk_set_background_purge(0)) == 1, "stopping returned %d, not 1", r);
    long left = purge_threads_settled(0);
    CHILD_CHECK(left == 0, "%ld purge threads 2 s after the stop", left);
    CHILD_CHECK((r = pk_set_background_purge(-1)) == 0, "reading after the stop gave %d", r);
    return CHILD_PASS;
}

/* Forks while the thread sweeps (delay 1 ms: it sweeps every 5 ms, racing
 * the forks for the library's locks); each child starts with no purge
 * thread, gets it back at its first call, gets a burst's memory back with
 * no call, and exits through exit() (the thread stopped at exit). Under
 * ThreadSanitizer, which cannot start a thread in the child of a threaded
 * fork (it dies, or mistakes the new thread for the parent's), the child
 * turns the purge off first and gets the memory back at a call instead.
 * The first fork follows the purge thread's start at once: under
 * AddressSanitizer, whose allocator takes no lock at fork, a child forked
 * while the thread was still in the runtime's start (which frees) would
 * wait forever on the lock it held (sweep.c returns from the start only
 * once the thread runs its own code). */
constexpr bool kNoThreadInForkChild = PKTEST_TSAN;

PKTEST_CHILD(BackgroundAcrossFork) {
    pk_set_purge_delay(1);
    CHILD_CHECK(pk_set_background_purge(1) == 0, "could not start the background purge");
    PoolPtr warm = make_pool(48, 0, 0, "warm");
    std::vector<void *> objs;
    for (int i = 0; i < 1000; i++) objs.push_back(pk_pool_alloc(warm.get()));
    const int forks = slow_tool() ? 3 : 10;
    for (int k = 0; k < forks; k++) {
        for (void *&o : objs) pk_pool_free(warm.get(), o);
        for (void *&o : objs) o = pk_pool_alloc(warm.get());
        std::fflush(nullptr);
        pid_t pid = fork();
        CHILD_CHECK(pid >= 0, "fork failed");
        if (pid == 0) {
            alarm(60);
            long alone = purge_threads();
            if (kNoThreadInForkChild) pk_set_background_purge(0);
            pk_set_purge_delay(kDelayMs);
            Burst b;
            if (!b.run().empty()) _exit(10);
            long with = purge_threads();
            if (kNoThreadInForkChild) {
                silence();
                pk_process_stats ps;
                pk_stats_get(&ps); /* the call that gives it back */
            }
            if (wait_without_calls(b, background_limit_ms()) < 0) {
                std::fprintf(stderr, "fork child %d: no memory back: %s; purge threads: %ld after the burst, %ld now\n",
                             k, b.figures(rss_bytes()).c_str(), with, purge_threads());
                _exit(11);
            }
            if (alone != 0) _exit(12);
            if (with != (kNoThreadInForkChild ? 0 : 1)) _exit(13);
            std::exit(0);
        }
        int status;
        CHILD_CHECK(waitpid(pid, &status, 0) == pid, "waitpid failed");
        CHILD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                    "fork child %d: status %#x (exit 10 burst failed, 11 no memory back, 12 a purge thread "
                    "right after the fork, 13 none after its first call; signal 14: deadlock)",
                    k, status);
    }
    for (void *o : objs) pk_pool_free(warm.get(), o);
    return CHILD_PASS;
}

/* Two threads make bursts on pools they create and destroy while the
 * background purge sweeps every 5 ms (delay 1 ms): for ThreadSanitizer,
 * and for the pool list's and pools' locks. */
void *churn(void *arg) {
    size_t rounds = *static_cast<size_t *>(arg);
    std::vector<void *> objs(2000);
    for (size_t r = 0; r < rounds; r++) {
        pk_pool_config c = make_config(32 + 16 * (r % 4), 0, 0, "churn");
        pk_pool *p = pk_pool_create(&c);
        if (!p) return arg;
        for (void *&o : objs) o = pk_pool_alloc(p);
        for (void *o : objs) pk_pool_free(p, o);
        if (r % 3 == 0) usleep(2000); /* idle for the delay: the sweep gives it back */
        for (void *&o : objs) o = pk_pool_alloc(p);
        for (void *o : objs) pk_pool_free(p, o);
        pk_pool_destroy(p);
    }
    return nullptr;
}

PKTEST_CHILD(BackgroundBesideThreads) {
    pk_set_purge_delay(1);
    CHILD_CHECK(pk_set_background_purge(1) == 0, "could not start the background purge");
    size_t rounds = scaled(300, 20);
    pthread_t t[2];
    for (pthread_t &x : t) CHILD_CHECK(pthread_create(&x, nullptr, churn, &rounds) == 0, "pthread_create failed");
    for (pthread_t &x : t) {
        void *rc;
        pthread_join(x, &rc);
        CHILD_CHECK(rc == nullptr, "a churn thread could not create a pool");
    }
    CHILD_CHECK(pk_set_background_purge(0) == 1, "the background purge stopped on its own");
    return CHILD_PASS;
}

/* main's thread leaves as with pthread_exit while the purge thread runs:
 * the process must end (exit 0, as when the last thread ends), not live on.
 * The body runs inside a static initializer, which pthread_exit cannot
 * unwind, so the thread ends with the exit system call itself (what
 * pthread_exit ends with). A watchdog process kills the child after 30 s so
 * a failure cannot hang the test (the purge thread blocks every signal, the
 * alarm's included). */
PKTEST_CHILD(BackgroundMainCallsPthreadExit) {
    pid_t self = getpid();
    pid_t dog = fork();
    CHILD_CHECK(dog >= 0, "fork failed");
    if (dog == 0) {
        for (int fd = 0; fd < 1024; fd++) close(fd); /* the test's pipes close when the child ends */
        for (int i = 0; i < 300 && getppid() == self; i++) usleep(100000);
        if (getppid() == self) kill(self, SIGKILL);
        _exit(0);
    }
    pk_set_purge_delay(kDelayMs);
    CHILD_CHECK(pk_set_background_purge(1) == 0, "could not start the background purge");
    PoolPtr p = make_pool(64, 0, 0, "left");
    (void)pk_pool_alloc(p.get());
    std::fflush(nullptr);
    alarm(0); /* the watchdog is the limit here */
    syscall(SYS_exit, 0);
    return CHILD_FAIL; /* not reached */
}

/* Stopping the background purge wakes the thread, which may be asleep for
 * up to a second (with a delay of 60 s): the stop takes as long as the
 * thread needs to see it, not the rest of its sleep. The best of three. */
PKTEST_CHILD(BackgroundStopWakesTheThread) {
    pk_set_purge_delay(60000);
    double best = 1e9;
    for (int i = 0; i < 3; i++) {
        CHILD_CHECK(pk_set_background_purge(1) == 0, "could not start the background purge");
        usleep(50000); /* asleep in its wait by now */
        double t0 = now_ms();
        CHILD_CHECK(pk_set_background_purge(0) == 1, "the purge was not running");
        double ms = now_ms() - t0;
        if (ms < best) best = ms;
    }
    std::printf("pk_set_background_purge(0), best of 3: %.3f ms\n", best);
    CHILD_CHECK(best < 250, "stopping took %.1f ms: the thread slept on rather than waking to stop", best);
    return CHILD_PASS;
}

/* ======================================================================
 * IdleReturn: the first call after a silence longer than the delay
 * ==================================================================== */

TEST(IdleReturn, MemoryGoesBackAtTheFirstSlowPathOnAnotherPool) {
    EXPECT_CHILD_PASSES("ReturnAtAnotherPoolsSlowPath",
                        {{"POOLKIT_PURGE_DELAY_MS", nullptr}, {"POOLKIT_BACKGROUND_PURGE", nullptr}});
}

TEST(IdleReturn, MemoryGoesBackAtTheFirstStatsCall) {
    EXPECT_CHILD_PASSES("ReturnAtAStatsCall",
                        {{"POOLKIT_PURGE_DELAY_MS", nullptr}, {"POOLKIT_BACKGROUND_PURGE", nullptr}});
}

TEST(IdleReturn, ALocalPoolsMemoryGoesBackAtItsOwnFirstCall) {
    EXPECT_CHILD_PASSES("ReturnAtALocalPoolsOwnCall",
                        {{"POOLKIT_PURGE_DELAY_MS", nullptr}, {"POOLKIT_BACKGROUND_PURGE", nullptr}});
}

TEST(IdleReturn, CallsInsideAPoolForeachCallbackNeitherWaitNorLoseTheReturn) {
    EXPECT_CHILD_PASSES("ReturnAfterCallsInsideForeach",
                        {{"POOLKIT_PURGE_DELAY_MS", nullptr}, {"POOLKIT_BACKGROUND_PURGE", nullptr}});
}

/* ======================================================================
 * BackgroundPurge
 * ==================================================================== */

TEST(BackgroundPurge, TheEnvironmentSwitchGivesIdleMemoryBackWithNoCall) {
    EXPECT_CHILD_PASSES("BackgroundFromTheEnvironment",
                        {{"POOLKIT_PURGE_DELAY_MS", nullptr}, {"POOLKIT_BACKGROUND_PURGE", "yes"}});
}

TEST(BackgroundPurge, TheCallGivesIdleMemoryBackWithNoCall) {
    EXPECT_CHILD_PASSES("BackgroundFromTheCall",
                        {{"POOLKIT_PURGE_DELAY_MS", nullptr}, {"POOLKIT_BACKGROUND_PURGE", nullptr}});
}

TEST(BackgroundPurge, OffByDefaultNoThreadExists) {
    EXPECT_CHILD_PASSES("BackgroundOffNoThread",
                        {{"POOLKIT_PURGE_DELAY_MS", nullptr}, {"POOLKIT_BACKGROUND_PURGE", nullptr}});
}

TEST(BackgroundPurge, OffByTheEnvironmentNoThreadExists) {
    EXPECT_CHILD_PASSES("BackgroundOffNoThread",
                        {{"POOLKIT_PURGE_DELAY_MS", nullptr}, {"POOLKIT_BACKGROUND_PURGE", "off"}});
}

TEST(BackgroundPurge, TheCallStartsAndStopsExactlyOneThread) {
    EXPECT_CHILD_PASSES("BackgroundCallStartsAndStopsOneThread",
                        {{"POOLKIT_PURGE_DELAY_MS", nullptr}, {"POOLKIT_BACKGROUND_PURGE", nullptr}});
}

TEST(BackgroundPurge, AForkChildAllocatesGetsItsMemoryBackAndExits) {
    EXPECT_CHILD_PASSES("BackgroundAcrossFork",
                        {{"POOLKIT_PURGE_DELAY_MS", nullptr}, {"POOLKIT_BACKGROUND_PURGE", nullptr}});
}

TEST(BackgroundPurge, SweepsSafelyBesideThreadsThatCreateUseAndDestroyPools) {
    EXPECT_CHILD_PASSES("BackgroundBesideThreads",
                        {{"POOLKIT_PURGE_DELAY_MS", nullptr}, {"POOLKIT_BACKGROUND_PURGE", nullptr}});
}

TEST(BackgroundPurge, StoppingItWakesTheThreadRatherThanWaitingOutItsSleep) {
    EXPECT_CHILD_PASSES("BackgroundStopWakesTheThread",
                        {{"POOLKIT_PURGE_DELAY_MS", nullptr}, {"POOLKIT_BACKGROUND_PURGE", nullptr}});
}

TEST(BackgroundPurge, DoesNotKeepAProcessAliveWhoseMainThreadCalledPthreadExit) {
    if (PKTEST_TSAN) GTEST_SKIP() << "ThreadSanitizer's own thread counts among the process's threads";
    ChildResult r = run_child("BackgroundMainCallsPthreadExit",
                              {{"POOLKIT_PURGE_DELAY_MS", nullptr}, {"POOLKIT_BACKGROUND_PURGE", nullptr}});
    if (r.skipped()) GTEST_SKIP() << r.err;
    EXPECT_TRUE(r.passed()) << "the process should end as when its last thread ends (exit 0); "
                            << r.describe();
}
