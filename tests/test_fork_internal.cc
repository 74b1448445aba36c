/* Fork, white-box: every lock the fork handlers take (src/process/fork.c), held by
 * another thread at the very moment of the fork.
 *
 * test_fork.cc forks while threads hammer the slow paths: that catches
 * fork handlers missing as a whole, but seldom one lock left out of them, as
 * the fork must land inside that lock's short critical section. Here a
 * thread parks inside one, at its test point (src/base/internal.h), and the main
 * thread forks:
 *   - with the lock in the handlers, the fork waits for the thread to leave
 *     (the parked thread leaves as soon as it sees the forking thread wait
 *     for the lock), and the child finds the lock free;
 *   - without it, the fork goes ahead with the thread inside, and the
 *     child's first call that needs the lock waits for a thread that does
 *     not exist there: a deadlock, every time.
 * The child uses every call; the parent kills it after 10 s and fails,
 * naming the lock. Each case runs in a fresh copy of this program
 * (child.h), so locks taken once per process (the autorelease page pool's,
 * a class pool's) are still ahead of it whatever ran before. */
#include "child.h"

#include <pthread.h>
#include <semaphore.h>

#include <atomic>

extern "C" {
#include "base/internal.h"
}

using namespace pktest;

namespace {

/* ---- the parked thread ------------------------------------------------------ */

/* Milliseconds a parked thread waits for the fork to either wait for its
 * lock or finish before it gives up (a broken test, reported as such). */
constexpr double kParkLimitMs = 20000;

struct Park {
    hook_point point = HOOK_POINTS;
    std::atomic<bool> armed{false};
    std::atomic<bool> forked{false};   /* set by this test's atfork parent handler */
    std::atomic<bool> gave_up{false};
    sem_t parked;                      /* posted once the thread is inside */
} g_park;

thread_local bool t_parker = false; /* only the trigger thread parks */

/* True once another thread waits for `lock` (held by the caller). glibc
 * marks a contended mutex by setting its lock word to 2 before it sleeps. */
bool someone_waits_for(void *lock) {
#if defined(__GLIBC__)
    return __atomic_load_n(&static_cast<pthread_mutex_t *>(lock)->__data.__lock, __ATOMIC_RELAXED) > 1;
#else
    (void)lock;
    return false; /* then only the fork's end releases the thread */
#endif
}

/* fork_test_hook: parks the trigger thread at the armed point until the
 * forking thread waits for the lock held there, or the fork is done. */
void park_here(hook_point point, void *lock) {
    if (!t_parker || point != g_park.point || !g_park.armed.exchange(false)) return;
    sem_post(&g_park.parked);
    double t0 = now_ms();
    while (!g_park.forked.load() && !someone_waits_for(lock)) {
        if (now_ms() - t0 > kParkLimitMs) {
            g_park.gave_up = true;
            return;
        }
        usleep(500);
    }
}

void on_fork_parent() { g_park.forked = true; }

/* ---- what the test works with ---------------------------------------------- */

/* A class no pool exists for before the fork: the child's first pk_new of
 * it creates the class's pool (the class lock). */
const pk_class kFresh = {"Fresh", 200, nullptr};
pk_pool *g_shared; /* a pool the parent made; the trigger thread trims it */

void count_pool(pk_pool *, void *arg) { ++*static_cast<size_t *>(arg); }
void count_obj(void *, void *arg) { ++*static_cast<size_t *>(arg); }
void count_call(void *arg) { ++*static_cast<int *>(arg); }

/* One lock: the point inside it and the calls that take the trigger thread
 * there. */
struct Case {
    hook_point point;
    const char *lock; /* as the failure message names it */
    void (*enter)();
};

void make_and_destroy_pool() {
    pk_pool_config c = make_config(40, 0, 0, "trigger");
    pk_pool *p = pk_pool_create(&c);
    pk_pool_free(p, pk_pool_alloc(p));
    pk_pool_destroy(p);
}

const Case kCases[] = {
    {HOOK_ARP_PAGES, "the autorelease page pool's lock (autorelease.c page_lock)",
     [] { pk_autorelease_pop(pk_autorelease_push()); }},
    {HOOK_POOL_LIST, "the pool list's lock (pool.c pools_lock)", make_and_destroy_pool},
    {HOOK_REGISTRY, "the thread registry's lock (tcache.c registry)", make_and_destroy_pool},
    {HOOK_POOL, "a pool's own lock (pool.c, pk_pool_trim)", [] { pk_pool_trim(g_shared); }},
    {HOOK_POOL_RECORDS, "the pool records' lock (pool.c spare_lock)", make_and_destroy_pool},
    {HOOK_RETAINED, "the OS layer's retained-memory lock (retain.c retain_lock)",
     [] { pk_arena_destroy(pk_arena_create(0)); }},
    /* a LOCAL pool takes no pool lock: the thread holds the map's alone */
    {HOOK_ADDRESS_MAP, "the slab address map's lock (slab.c map_lock)",
     [] {
         pk_pool_config c = make_config(48, 0, PK_POOL_LOCAL, "trigger local");
         pk_pool *p = pk_pool_create(&c);
         pk_pool_free(p, pk_pool_alloc(p));
         pk_pool_destroy(p);
     }},
    {HOOK_ERROR_HANDLER, "the error handler's lock (error.c handler_lock)",
     [] { pk_set_error_handler(nullptr, nullptr); }},
    /* stopping a purge that does not run: the lock, no thread */
    {HOOK_PURGE_CONTROL, "the background purge's control lock (sweep.c control)",
     [] { pk_set_background_purge(0); }},
    /* a class no other case uses: its pool is made under the lock */
    {HOOK_ALLOC_CLASSES, "the size classes' lock (alloc.c class_lock)", [] { pk_free(pk_alloc(7000)); }},
    {HOOK_LARGE_BLOCKS, "the mapped blocks' lock (alloc_large.c large_lock)",
     [] { pk_free(pk_alloc(PK_ALLOC_CLASS_MAX + 1)); }},
};

/* Runs a case's calls, then stays until the fork is over: a thread that
 * ended unjoined before the fork is a thread leak in the child to
 * ThreadSanitizer. */
void *trigger_thread(void *arg) {
    t_parker = true;
    static_cast<const Case *>(arg)->enter();
    while (!g_park.forked.load()) usleep(500);
    return nullptr;
}

/* ---- the child: every call (write() only, no stdio) ---------------------------- */

#define USE_CHECK(cond)                                                                 \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            child_say("fork child: check failed: " #cond "\n");                         \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

int use_every_call() {
    child_say("fork child: the parent's pool (its lock)\n");
    pk_pool_stats s;
    pk_pool_stats_get(g_shared, &s);
    std::vector<void *> objs;
    for (int i = 0; i < 3000; i++) objs.push_back(pk_pool_alloc(g_shared));
    for (void *o : objs) USE_CHECK(o && pk_pool_owner(o) == g_shared);
    size_t visited = 0;
    pk_pool_visit(g_shared, count_obj, &visited);
    USE_CHECK(visited >= objs.size());
    for (void *o : objs) pk_pool_free(g_shared, o);
    pk_pool_trim(g_shared);

    child_say("fork child: new pools (records, registry, list, retained memory, address map)\n");
    for (unsigned flags : {0u, unsigned(PK_POOL_LOCAL), unsigned(PK_POOL_HARDENED)}) {
        pk_pool_config c = make_config(64, 0, flags, "child");
        pk_pool *p = pk_pool_create(&c);
        USE_CHECK(p != nullptr);
        USE_CHECK(pk_pool_reserve(p, 10) >= 10);
        objs.assign(4000, nullptr);
        USE_CHECK(pk_pool_alloc_bulk(p, objs.data(), 2000) == 2000);
        for (size_t i = 2000; i < objs.size(); i++) USE_CHECK((objs[i] = pk_pool_alloc(p)) != nullptr);
        for (void *o : objs) USE_CHECK(pk_pool_owner(o) == p);
        pk_pool_stats_get(p, &s);
        USE_CHECK(s.live == objs.size());
        pk_pool_free_bulk(p, objs.data(), 2000);
        for (size_t i = 2000; i < objs.size(); i++) pk_pool_free(p, objs[i]);
        pk_pool_trim(p);
        pk_pool_destroy(p);
    }
    pk_pool_release_cache();

    child_say("fork child: objects of a class with no pool yet (class lock)\n");
    void *obj = pk_new(&kFresh);
    USE_CHECK(obj != nullptr && pk_refcount(obj) == 1);
    pk_release(pk_retain(obj));
    pk_release(obj);

    child_say("fork child: pk_alloc's classes (class lock) and mapped blocks (their lock)\n");
    void *small = pk_alloc(7000), *large = pk_alloc(PK_ALLOC_CLASS_MAX + 1);
    USE_CHECK(small && large && pk_usable_size(small) >= 7000 && pk_usable_size(large) > PK_ALLOC_CLASS_MAX);
    pk_free(small);
    pk_free(large);

    child_say("fork child: autorelease pools (page pool)\n");
    int deferred = 0;
    pk_autorelease_pool ap = pk_autorelease_push();
    USE_CHECK(ap.token != PK_AUTORELEASE_NONE);
    USE_CHECK(pk_autorelease(pk_new(&kFresh)) != nullptr);
    USE_CHECK(pk_scratch(1000) != nullptr);
    USE_CHECK(pk_defer(&deferred, count_call) == &deferred);
    pk_autorelease_pop(ap);
    USE_CHECK(deferred == 1);

    child_say("fork child: arenas (retained memory)\n");
    pk_arena *a = pk_arena_create(0);
    USE_CHECK(a != nullptr);
    for (int i = 0; i < 100; i++) USE_CHECK(pk_arena_alloc(a, 3000, 0) != nullptr);
    pk_arena_reset(a);
    pk_arena_destroy(a);

    child_say("fork child: the error handler\n");
    pk_set_error_handler(nullptr, nullptr);

    child_say("fork child: the background purge (its control lock)\n");
    USE_CHECK(pk_set_background_purge(0) >= 0);
    if (!PKTEST_TSAN) { /* which cannot start a thread in the child of a threaded fork */
        USE_CHECK(pk_set_background_purge(1) == 0);
        USE_CHECK(pk_set_background_purge(0) == 1);
    }

    child_say("fork child: process-wide calls (pool list, stats)\n");
    size_t pools = 0;
    pk_pool_foreach(count_pool, &pools);
    USE_CHECK(pools >= 1);
    pk_process_stats st;
    pk_stats_get(&st);
    pk_set_purge_delay(pk_set_purge_delay(-1));
    child_say("fork child: done\n");
    return 0;
}

/* ---- one case, in a fresh copy of this program ------------------------------- */

/* Seconds the child of the fork may take: its work takes milliseconds. */
unsigned child_limit_s() { return slow_tool() ? 60 : 10; }

/* Waits for pid at most `seconds`; kills it past that. Returns its wait
 * status, or -1 when it had to be killed. */
int wait_or_kill(pid_t pid, unsigned seconds) {
    int status;
    double t0 = now_ms();
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return status;
        if (r < 0 && errno != EINTR) return -2;
        if (now_ms() - t0 > seconds * 1000.0) break;
        usleep(2000);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return -1;
}

int fork_while_parked(hook_point point) {
    const Case *k = nullptr;
    for (const Case &c : kCases)
        if (c.point == point) k = &c;
    CHILD_CHECK(k != nullptr, "no case for test point %d", int(point));

    pk_pool_config c = make_config(96, 0, 0, "parent");
    g_shared = pk_pool_create(&c); /* installs the library's fork handlers */
    CHILD_CHECK(g_shared != nullptr, "pk_pool_create failed");
    pk_pool_free(g_shared, pk_pool_alloc(g_shared));
    /* after the library's: its parent handler runs first, then this one */
    CHILD_CHECK(pthread_atfork(nullptr, on_fork_parent, nullptr) == 0, "pthread_atfork failed");
    sem_init(&g_park.parked, 0, 0);
    g_park.point = point;
    g_park.armed = true;
    fork_test_hook = park_here;

    pthread_t t;
    CHILD_CHECK(pthread_create(&t, nullptr, trigger_thread, const_cast<Case *>(k)) == 0, "pthread_create failed");
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    bool parked = sem_timedwait(&g_park.parked, &until) == 0;
    if (!parked) {
        g_park.forked = true; /* no fork: let the thread end */
        pthread_join(t, nullptr);
    }
    CHILD_CHECK(parked, "the thread never reached the test point inside %s", k->lock);

    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) _exit(use_every_call());
    CHILD_CHECK(pid > 0, "fork failed");
    int status = wait_or_kill(pid, child_limit_s());
    pthread_join(t, nullptr);
    fork_test_hook = nullptr;
    CHILD_CHECK(!g_park.gave_up, "the parked thread waited %.0f s inside %s and the fork neither waited for "
                "the lock nor went ahead", kParkLimitMs / 1000, k->lock);
    CHILD_CHECK(status != -1,
                "DEADLOCK: the child of a fork made while another thread held %s was still running after %u s "
                "(killed); the fork handlers (src/process/fork.c) must take that lock",
                k->lock, child_limit_s());
    CHILD_CHECK(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "the child of a fork made while another thread held %s failed (status %d)", k->lock, status);
    pk_pool_destroy(g_shared);
    return CHILD_PASS;
}

}  // namespace

PKTEST_CHILD(ForkInsideArpPagesLock) { return fork_while_parked(HOOK_ARP_PAGES); }
PKTEST_CHILD(ForkInsidePoolListLock) { return fork_while_parked(HOOK_POOL_LIST); }
PKTEST_CHILD(ForkInsideRegistryLock) { return fork_while_parked(HOOK_REGISTRY); }
PKTEST_CHILD(ForkInsidePoolLock) { return fork_while_parked(HOOK_POOL); }
PKTEST_CHILD(ForkInsidePoolRecordsLock) { return fork_while_parked(HOOK_POOL_RECORDS); }
PKTEST_CHILD(ForkInsideRetainedMemoryLock) { return fork_while_parked(HOOK_RETAINED); }
PKTEST_CHILD(ForkInsideAddressMapLock) { return fork_while_parked(HOOK_ADDRESS_MAP); }
PKTEST_CHILD(ForkInsideErrorHandlerLock) { return fork_while_parked(HOOK_ERROR_HANDLER); }
PKTEST_CHILD(ForkInsidePurgeControlLock) { return fork_while_parked(HOOK_PURGE_CONTROL); }
PKTEST_CHILD(ForkInsideAllocClassesLock) { return fork_while_parked(HOOK_ALLOC_CLASSES); }
PKTEST_CHILD(ForkInsideLargeBlocksLock) { return fork_while_parked(HOOK_LARGE_BLOCKS); }

TEST(ForkWhileAThreadHolds, TheAutoreleasePagePoolLock) { EXPECT_CHILD_PASSES("ForkInsideArpPagesLock"); }
TEST(ForkWhileAThreadHolds, ThePoolListLock) { EXPECT_CHILD_PASSES("ForkInsidePoolListLock"); }
TEST(ForkWhileAThreadHolds, TheThreadRegistryLock) { EXPECT_CHILD_PASSES("ForkInsideRegistryLock"); }
TEST(ForkWhileAThreadHolds, APoolsOwnLock) { EXPECT_CHILD_PASSES("ForkInsidePoolLock"); }
TEST(ForkWhileAThreadHolds, ThePoolRecordsLock) { EXPECT_CHILD_PASSES("ForkInsidePoolRecordsLock"); }
TEST(ForkWhileAThreadHolds, TheRetainedMemoryLock) { EXPECT_CHILD_PASSES("ForkInsideRetainedMemoryLock"); }
TEST(ForkWhileAThreadHolds, TheAddressMapLock) { EXPECT_CHILD_PASSES("ForkInsideAddressMapLock"); }
TEST(ForkWhileAThreadHolds, TheErrorHandlerLock) { EXPECT_CHILD_PASSES("ForkInsideErrorHandlerLock"); }
TEST(ForkWhileAThreadHolds, TheBackgroundPurgeControlLock) { EXPECT_CHILD_PASSES("ForkInsidePurgeControlLock"); }
TEST(ForkWhileAThreadHolds, TheSizeClassesLock) { EXPECT_CHILD_PASSES("ForkInsideAllocClassesLock"); }
TEST(ForkWhileAThreadHolds, TheMappedBlocksLock) { EXPECT_CHILD_PASSES("ForkInsideLargeBlocksLock"); }

/* Every test point has a case above: a lock added to the fork handlers
 * with a point of its own and no case here fails this. */
TEST(ForkWhileAThreadHolds, EveryTestPointHasACase) {
    for (int point = 0; point < HOOK_POINTS; point++) {
        bool found = false;
        for (const Case &c : kCases) found = found || c.point == point;
        EXPECT_TRUE(found) << "test point " << point << " has no case";
    }
}
