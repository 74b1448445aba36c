/* Pools: misuse detected in debug and hardened modes (death tests). The
 * reports of each kind of misuse, fields and message, are tests/test_safety.cc's;
 * here, what only these cover: a double free found among thousands of
 * frees, stack pointers, the default handler's line, a handler that
 * returns, and the pools that check on their slow paths. */
#include "support.h"

#include <sys/wait.h>

#include <csignal>
#include <set>

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
