/* The misuse matrix: the commonest memory bugs of a C program, each run in
 * a process of its own under a 5-second alarm, in each of the three modes
 * (default, POOLKIT_HARDENED=1, POOLKIT_DEBUG=1). Every case must end in a
 * fatal report of poolkit's, naming what the mode promises for it: never a
 * hang, never a crash with no message, never a clean exit.
 *
 * A case is a child body (run_child, child.h) chosen by PKTEST_MATRIX_CASE;
 * it installs print_fields_handler, so the report's fields come out as one
 * line the parent matches, then poolkit aborts. What the modes promise is
 * the table at the end of the file (README, "Debugging and hardening").
 *
 * The writes to freed memory and past objects are the program's own, into
 * memory no tool watches in these builds (the pools poison nothing unless
 * built with POOLKIT_ASAN or POOLKIT_VALGRIND, which skip them).
 */
#include "child.h"

#include <poolkit/poolkit.h>

#include <pthread.h>

#include <csignal>
#include <string>
#include <thread>

using namespace pktest;

namespace {

constexpr const char *kCaseVar = "PKTEST_MATRIX_CASE";

/* Seconds a case may run, more under a slow tool. */
unsigned case_time_limit() { return slow_tool() ? 60 : 5; }

pk_pool *matrix_pool(const char *name = "matrix") {
    pk_pool_config c;
    std::memset(&c, 0, sizeof c);
    c.name = name;
    c.size = 64;
    return pk_pool_create(&c);
}

/* The compiler must not drop a write to memory it thinks is dead. */
void touch(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

void *double_free_thread(void *arg) {
    pk_pool *p = static_cast<pk_pool *>(arg);
    void *t = pk_pool_alloc(p);
    pk_pool_free(p, t);
    pk_pool_free(p, t);
    return nullptr;
}

void *aba_thread(void *arg) {
    pk_pool *p = static_cast<pk_pool *>(arg);
    void *keep = pk_pool_alloc(p);
    void *t = pk_pool_alloc(p);
    void *u = pk_pool_alloc(p);
    pk_pool_free(p, t);
    pk_pool_free(p, u);
    pk_pool_free(p, t);
    (void)keep;
    return nullptr; /* the thread's list goes home at exit, and is walked */
}

struct TwoFrees {
    pk_pool *p;
    void *t;
};

void *free_once_thread(void *arg) {
    TwoFrees *f = static_cast<TwoFrees *>(arg);
    pk_pool_free(f->p, f->t);
    pk_pool_trim(f->p); /* its remote free goes home now */
    return nullptr;
}

const pk_class matrix_class = {"MatrixThing", 48, nullptr};

/* One case of the matrix; returns only if poolkit reported nothing. */
int run_case(const std::string &name) {
    pk_set_error_handler(print_fields_handler, nullptr);
    pk_pool *p = matrix_pool();
    if (!p) return CHILD_FAIL;
    if (name == "DoubleFree") {
        void *t = pk_pool_alloc(p);
        pk_pool_free(p, t);
        pk_pool_free(p, t);
        pk_pool_destroy(p);
    } else if (name == "DoubleFreeInAPoolWithALimit") { /* no thread heaps: the slabs' own lists */
        pk_pool_config c;
        std::memset(&c, 0, sizeof c);
        c.name = "matrix";
        c.size = 64;
        c.limit = 1000;
        pk_pool *q = pk_pool_create(&c);
        void *keep = pk_pool_alloc(q); /* so the slab's count does not say it */
        void *t = pk_pool_alloc(q);
        pk_pool_free(q, t);
        pk_pool_free(q, t);
        (void)keep;
        for (int i = 0; i < 16; i++) touch(pk_pool_alloc(q));
        pk_pool_destroy(q);
    } else if (name == "DoubleFreeInAThread") {
        pthread_t th;
        pthread_create(&th, nullptr, double_free_thread, p);
        pthread_join(th, nullptr);
        pk_pool_destroy(p);
    } else if (name == "DoubleFreeWithAFreeBetween") {
        void *keep = pk_pool_alloc(p);
        void *t = pk_pool_alloc(p);
        void *u = pk_pool_alloc(p);
        std::fprintf(stderr, "VICTIM %p\n", t);
        pk_pool_free(p, t);
        pk_pool_free(p, u);
        pk_pool_free(p, t);
        for (int i = 0; i < 16; i++) touch(pk_pool_alloc(p));
        (void)keep;
        pk_pool_destroy(p);
    } else if (name == "DoubleFreeWithAFreeBetweenInAThread") {
        pthread_t th;
        pthread_create(&th, nullptr, aba_thread, p);
        pthread_join(th, nullptr);
        pk_pool_destroy(p);
    } else if (name == "DoubleFreeByTwoThreads") {
        void *keep = pk_pool_alloc(p);
        TwoFrees f = {p, pk_pool_alloc(p)};
        for (int i = 0; i < 2; i++) {
            pthread_t th;
            pthread_create(&th, nullptr, free_once_thread, &f);
            pthread_join(th, nullptr);
        }
        for (int i = 0; i < 4000; i++) touch(pk_pool_alloc(p));
        (void)keep;
        pk_pool_destroy(p);
    } else if (name == "OverflowIntoAFreeNeighbour") {
        char *a = static_cast<char *>(pk_pool_alloc(p));
        char *b = static_cast<char *>(pk_pool_alloc(p));
        pk_pool_free(p, b);
        std::memset(a + 64, 'A', 8); /* 8 bytes past a's end */
        touch(a);
        for (int i = 0; i < 16; i++) touch(pk_pool_alloc(p));
        pk_pool_free(p, a);
        pk_pool_destroy(p);
    } else if (name == "OverflowIntoAFreeNeighbourThenABulkAllocation") {
        /* as above, the allocations in one bulk call, which follows the
         * list as the inline allocation does */
        char *a = static_cast<char *>(pk_pool_alloc(p));
        char *b = static_cast<char *>(pk_pool_alloc(p));
        pk_pool_free(p, b);
        std::memset(a + 64, 'A', 8);
        touch(a);
        void *got[16];
        size_t n = pk_pool_alloc_bulk(p, got, 16);
        for (size_t i = 0; i < n; i++) touch(got[i]);
        pk_pool_free(p, a);
        pk_pool_destroy(p);
    } else if (name == "WriteAfterFree") {
        void *keep = pk_pool_alloc(p);
        char *t = static_cast<char *>(pk_pool_alloc(p));
        pk_pool_free(p, t);
        std::memset(t, 'W', 16);
        touch(t);
        for (int i = 0; i < 16; i++) touch(pk_pool_alloc(p));
        (void)keep;
        pk_pool_destroy(p);
    } else if (name == "FreeOfAnInteriorPointer") {
        char *t = static_cast<char *>(pk_pool_alloc(p));
        pk_pool_free(p, t + 8);
        pk_pool_destroy(p);
    } else if (name == "ReleaseOfAMallocBlock") {
        void *m = std::malloc(64);
        std::memset(m, 0, 64);
        pk_release(m);
        std::free(m);
    } else if (name == "ReleaseOfAStackBuffer") {
        alignas(16) char buf[64];
        std::memset(buf, 0, sizeof buf);
        pk_release(buf + 32);
        touch(buf);
    } else if (name == "FreeOfAStackPointer") {
        alignas(64) char buf[64];
        pk_pool_free(p, buf);
        touch(buf);
    } else if (name == "FreeOfAMallocPointer") {
        void *m = std::malloc(64);
        pk_pool_free(p, m);
        std::free(m);
    } else if (name == "FreeIntoTheWrongPool") {
        pk_pool *q = matrix_pool("other");
        void *o = pk_pool_alloc(q);
        pk_pool_free(p, o);
    } else if (name == "AllocAfterDestroy") {
        pk_pool_destroy(p);
        touch(pk_pool_alloc(p));
    } else if (name == "DestroyTwice") {
        pk_pool_destroy(p);
        pk_pool_destroy(p);
    } else if (name == "OverRelease") {
        void *o = pk_new(&matrix_class);
        pk_release(o);
        pk_release(o);
    } else {
        std::fprintf(stderr, "unknown case %s\n", name.c_str());
        return CHILD_FAIL;
    }
    std::fprintf(stderr, "NO REPORT\n");
    return CHILD_PASS;
}

}  // namespace

/* A fault that is not poolkit's: with a pool made (so the fault handler is
 * in), a write through a made-up address. */
PKTEST_CHILD(FaultNotPoolkits) {
    alarm(case_time_limit());
    pk_set_error_handler(print_fields_handler, nullptr);
    pk_pool *p = matrix_pool();
    touch(pk_pool_alloc(p));
    *reinterpret_cast<volatile int *>(uintptr_t(4096)) = 1;
    return CHILD_FAIL;
}

/* The program's own SIGSEGV handler, installed before the first pool: a
 * fault that is not poolkit's still reaches it. */
void own_segv_handler(int) {
    const char msg[] = "THE PROGRAM'S OWN HANDLER\n";
    if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) { /* nothing to do */
    }
    _exit(7);
}

PKTEST_CHILD(FaultWithTheProgramsOwnHandler) {
    alarm(case_time_limit());
    std::signal(SIGSEGV, own_segv_handler);
    pk_set_error_handler(print_fields_handler, nullptr);
    pk_pool *p = matrix_pool();
    touch(pk_pool_alloc(p));
    *reinterpret_cast<volatile int *>(uintptr_t(4096)) = 1;
    return CHILD_FAIL;
}

PKTEST_CHILD(MisuseMatrixCase) {
    alarm(case_time_limit());
    const char *name = std::getenv(kCaseVar);
    return run_case(name ? name : "");
}

namespace {

enum Mode { DEFAULT, HARDENED, DEBUG };

struct Expect {
    const char *name;
    const char *what[3]; /* regex over the report's `what`, per mode */
    bool faults = false; /* default mode: the fault handler's report */
};

/* What each mode promises for each case. */
const Expect kMatrix[] = {
    {"DoubleFree", {"double free", "double free", "double free"}},
    {"DoubleFreeInAPoolWithALimit", {"double free", "double free", "double free"}},
    {"DoubleFreeInAThread", {"double free", "double free", "double free"}},
    /* t, u, t: no cheap check sees it at the free; the list is walked
     * (bounded) when it goes home at destroy, and the walk names t */
    {"DoubleFreeWithAFreeBetween",
     {"corrupted free list", "corrupted free list", "double free"}},
    {"DoubleFreeWithAFreeBetweenInAThread",
     {"corrupted free list", "corrupted free list", "double free"}},
    {"DoubleFreeByTwoThreads",
     {"corrupted free list|double free", "corrupted free list|double free", "double free"}},
    /* default mode: the allocation that follows the broken link faults,
     * and the fault handler names the list */
    {"OverflowIntoAFreeNeighbour", {"corrupted free list", "corrupted free list", "buffer overflow"}, true},
    {"OverflowIntoAFreeNeighbourThenABulkAllocation", {"corrupted free list", "corrupted free list", "buffer overflow"}, true},
    {"WriteAfterFree", {"corrupted free list", "corrupted free list", "write after free"}, true},
    {"FreeOfAnInteriorPointer", {"interior pointer", "interior pointer", "interior pointer"}},
    {"ReleaseOfAMallocBlock", {"foreign pointer", "foreign pointer", "foreign pointer"}},
    {"ReleaseOfAStackBuffer", {"foreign pointer", "foreign pointer", "foreign pointer"}},
    {"FreeOfAStackPointer", {"foreign pointer", "foreign pointer", "foreign pointer"}},
    {"FreeOfAMallocPointer", {"foreign pointer", "foreign pointer", "foreign pointer"}},
    {"FreeIntoTheWrongPool", {"wrong pool", "wrong pool", "wrong pool"}},
    {"AllocAfterDestroy", {"pool used after destroy", "pool used after destroy", "pool used after destroy"}},
    {"DestroyTwice", {"pool used after destroy", "pool used after destroy", "pool used after destroy"}},
    {"OverRelease", {"over-release", "over-release", "over-release"}},
};

const char *const kModeName[3] = {"default", "hardened", "debug"};

std::vector<std::pair<std::string, const char *>> mode_env(Mode m, const char *name) {
    return {{kCaseVar, name},
            {"POOLKIT_HARDENED", m == HARDENED ? "1" : "0"},
            {"POOLKIT_DEBUG", m == DEBUG ? "1" : "0"}};
}

class MisuseMatrix : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(MisuseMatrix, EndsInTheReportItsModePromises) {
    const Expect &e = kMatrix[std::get<0>(GetParam())];
    Mode m = static_cast<Mode>(std::get<1>(GetParam()));
    double t0 = now_ms();
    ChildResult r = run_child("MisuseMatrixCase", mode_env(m, e.name));
    double ms = now_ms() - t0;
    std::string where = std::string(e.name) + " in " + kModeName[m] + " mode";
    ASSERT_GE(r.status, 0) << where << ": child not started";
    ASSERT_FALSE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGALRM)
        << where << ": hung (no end within " << case_time_limit() << " s)\n" << r.describe();
    ASSERT_EQ(r.err.find("NO REPORT"), std::string::npos) << where << ": ended with no report\n" << r.describe();
    /* Built with UndefinedBehaviorSanitizer, the program's own code (the
     * inline allocation) loads the broken link, misaligned, and the tool
     * reports it before it can fault: a message, the tool's. */
    if (m == DEFAULT && e.faults && r.err.find(": runtime error: load of misaligned address") != std::string::npos) {
        std::printf("%-40s %-8s a sanitizer's report (the inline allocation's load of the broken link)\n", e.name,
                    kModeName[m]);
        return;
    }
    ASSERT_NE(r.err.find("HANDLER severity=FATAL"), std::string::npos)
        << where << ": ended with no report of poolkit's (a crash with no message?)\n" << r.describe();
    EXPECT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT) << where << "\n" << r.describe();
    EXPECT_TRUE(::testing::internal::RE::PartialMatch(
        r.err, ::testing::internal::RE(std::string("HANDLER severity=FATAL what=(") + e.what[m] + ") ")))
        << where << ": expected a report of " << e.what[m] << "\n" << r.describe();
    /* t, u, t: the report names t, the object freed twice */
    size_t v = r.err.find("VICTIM ");
    if (v != std::string::npos && m != DEBUG) {
        std::string victim = r.err.substr(v + 7, r.err.find('\n', v) - v - 7);
        EXPECT_NE(r.err.find("most likely a double free of object " + victim), std::string::npos)
            << where << ": the report must name " << victim << "\n" << r.describe();
    }
    std::printf("%-40s %-8s %6.0f ms: %s\n", e.name, kModeName[m], ms,
                r.err.substr(r.err.find("MESSAGE ") + 8, r.err.find('\n', r.err.find("MESSAGE ")) -
                                                             r.err.find("MESSAGE ") - 8)
                    .c_str());
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<int, int>> &info) {
    return std::string(kMatrix[std::get<0>(info.param)].name) + "_" + kModeName[std::get<1>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(Cases, MisuseMatrix,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(sizeof kMatrix / sizeof *kMatrix)),
                                            ::testing::Range(0, 3)),
                         case_name);

}  // namespace

/* ======================================================================
 * The fault handler (src/pool/crash.c)
 * ==================================================================== */

/* The report of a default pool's broken list comes from the fault handler:
 * switched off, the same program dies of the fault with no message. */
TEST(FaultHandler, OffWithPOOLKIT_FAULT_HANDLER0TheFaultHasNoMessage) {
    std::vector<std::pair<std::string, const char *>> env = mode_env(DEFAULT, "OverflowIntoAFreeNeighbour");
    env.push_back({"POOLKIT_FAULT_HANDLER", "0"});
    ChildResult r = run_child("MisuseMatrixCase", env);
    EXPECT_EQ(r.err.find("HANDLER"), std::string::npos) << r.describe();
    /* unless a sanitizer reported the load, or the fault, itself */
    if (r.err.find(": runtime error: ") == std::string::npos && r.err.find("Sanitizer") == std::string::npos) {
        EXPECT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGSEGV) << r.describe();
    }
}

/* A fault that is not poolkit's ends as it would without poolkit: the
 * handler puts the action it replaced back (here the default: death by
 * SIGSEGV; under a sanitizer, its own report). */
TEST(FaultHandler, AFaultThatIsNotPoolkitsKeepsItsAction) {
    ChildResult r = run_child("FaultNotPoolkits", mode_env(DEFAULT, ""));
    EXPECT_EQ(r.err.find("HANDLER"), std::string::npos) << "reported as poolkit's\n" << r.describe();
    EXPECT_FALSE(r.passed()) << r.describe();
    if (!PKTEST_ASAN && !PKTEST_TSAN) {
        EXPECT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGSEGV) << r.describe();
    }
}

TEST(FaultHandler, AProgramsOwnHandlerStillGetsTheFaultsThatAreNotPoolkits) {
    ChildResult r = run_child("FaultWithTheProgramsOwnHandler", mode_env(DEFAULT, ""));
    EXPECT_TRUE(r.exited_with(7)) << r.describe();
    EXPECT_NE(r.err.find("THE PROGRAM'S OWN HANDLER"), std::string::npos) << r.describe();
    EXPECT_EQ(r.err.find("HANDLER severity"), std::string::npos) << r.describe();
}
