/* The misuse fuzzer: random programs of the C API (pools of every kind,
 * bulk calls, trim, stats, visit, pk_new objects, autorelease pools,
 * threads), each with at most one misuse injected at a random point, each
 * run in a process of its own with a time limit, in the three modes:
 * default, POOLKIT_HARDENED=1 and POOLKIT_DEBUG=1.
 *
 * A program is its seed: the same seed makes the same program in every
 * mode. It runs its operations, the misuse among them, a few more after
 * it, then frees what it holds and destroys its pools. The parent sorts how
 * each run ended: a fatal report of poolkit's (its handler writes the
 * fields: print_fields_handler), a clean end, a signal with no report, or
 * the time limit. It fails on
 *   - any run that hangs (the time limit), in any mode, whatever the misuse;
 *   - a run whose misuse its mode promises to report (promised() below, the
 *     table README's "Debugging and hardening" states) that ends with no
 *     report: cleanly, or in a signal with no message;
 *   - a program with no misuse that ends in a report, a signal, or with an
 *     object handed out twice or one that is not the pool's;
 *   - and, stricter than the promises, any run that ends in a signal with
 *     no message: the programs write only to objects a pool handed them
 *     (never to one handed out twice, or that is not the pool's), so a
 *     crash is the library's, and its walks and its fault handler (crash.c)
 *     say why.
 * Misuse its mode does not promise to report may otherwise end cleanly.
 *
 * The corpus (tests/fuzz/misuse-corpus.txt: a seed per line, one or more
 * per kind of misuse and every seed that ever found a fault) runs first,
 * then POOLKIT_MISUSE_PROGRAMS random programs per mode (default 100; fewer
 * under a slow tool) from a seed printed at the start, which
 * POOLKIT_MISUSE_SEED sets to repeat a run. A failure prints the seed, the
 * mode and the line that runs that one program again.
 *
 * The programs write to freed memory and past objects on purpose, into
 * memory no tool watches in the builds make test runs (pool slabs are
 * mapped, not malloc'd; the objects given where a pointer that is not one
 * is wanted lie inside larger buffers, so no header read leaves them). The
 * test is labeled novalgrind: its programs run in children that valgrind
 * does not follow (--trace-children=no), so a memcheck run would check the
 * driver only.
 *
 * POOLKIT_TEST_LABELS: novalgrind
 */
#include "child.h"

#include <poolkit/poolkit.h>

#include <pthread.h>

#include <array>
#include <csignal>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace pktest;

namespace {

/* ======================================================================
 * What is injected, and what each mode promises
 * ==================================================================== */

enum Kind {
    NONE,                  /* no misuse: a control */
    DOUBLE_FREE_NOW,       /* free x; free x */
    DOUBLE_FREE_LATER,     /* free x; free others; free x */
    DOUBLE_FREE_IN_THREAD, /* a thread allocates x, frees it twice, exits */
    INTERIOR,              /* free of x + k, 0 < k < size */
    FOREIGN_STACK,         /* free of a stack buffer */
    FOREIGN_MALLOC,        /* free of a block of malloc */
    WRONG_POOL,            /* free of another pool's object */
    USE_AFTER_DESTROY,     /* a call on a destroyed pool */
    OVERFLOW,              /* 1 to 16 bytes written past a live object */
    WRITE_AFTER_FREE,      /* 1 to 16 bytes written into a freed object */
    OVER_RELEASE,          /* pk_release once more than retained */
    RELEASE_NON_OBJECT,    /* pk_release of what pk_new did not make */
    KINDS
};

const char *const kKindName[KINDS] = {
    "none",     "double-free-now", "double-free-later", "double-free-in-thread", "interior",
    "foreign-stack", "foreign-malloc", "wrong-pool", "use-after-destroy", "overflow",
    "write-after-free", "over-release", "release-non-object"};

enum Mode { DEFAULT, HARDENED, DEBUG, MODES };
const char *const kModeName[MODES] = {"default", "hardened", "debug"};

/* Whether each mode promises a report for each kind (README, "Debugging and
 * hardening"). A double free with other frees between is reported in debug
 * mode; in the others the list that holds the object twice is reported
 * when it is next walked, which the program may outrun (a slab that
 * empties by count, one free early, drops its list unread), so only a hang
 * fails there; the matrix (test_misuse_matrix.cc) checks the walk. An
 * interior pointer is
 * promised in hardened mode where it is off an 8-byte boundary, which no
 * slot start is (one aligned as a slot may pass the inline free: README);
 * overflows and writes after free in
 * debug mode, whose redzones and fills are checked at the free, the next
 * hand-out, trim and destroy. */
bool promised(Kind k, Mode m, bool interior_misaligned) {
    switch (k) {
    case NONE: return false;
    case DOUBLE_FREE_NOW:
    case DOUBLE_FREE_IN_THREAD:
    case FOREIGN_STACK:
    case FOREIGN_MALLOC:
    case WRONG_POOL:
    case USE_AFTER_DESTROY:
    case OVER_RELEASE:
    case RELEASE_NON_OBJECT: return true;
    case DOUBLE_FREE_LATER: return m == DEBUG;
    case INTERIOR: return m == DEBUG || (m == HARDENED && interior_misaligned);
    case OVERFLOW:
    case WRITE_AFTER_FREE: return m == DEBUG;
    default: return false;
    }
}

/* ======================================================================
 * A program (runs in the child)
 * ==================================================================== */

constexpr const char *kSeedVar = "PKTEST_MISUSE_PROGRAM";

struct Pool {
    pk_pool *p = nullptr;
    size_t size = 0;
    unsigned flags = 0;
    bool region = false;
    std::vector<void *> live;
    std::set<void *> live_set;
};

struct Program {
    Rng rng;
    uint64_t seed;
    Kind kind = NONE;
    size_t misuse_at = 0, ops = 0;
    bool misused = false, clean_checks = true;
    std::vector<Pool> pools;
    std::vector<void *> objects; /* pk_new objects we hold one reference to */
    pk_class classes[3];
    unsigned char fill = 0xA0;

    static constexpr size_t kMostPools = 16;

    explicit Program(uint64_t s) : rng(s), seed(s) {
        for (int i = 0; i < 3; i++) classes[i] = pk_class{"FuzzThing", 16 + 16 * rng.below(12), nullptr};
        pools.reserve(kMostPools); /* a Pool * stays valid while pools are made */
    }

    /* A byte whose words are no address (0xA0 to 0xAF in every byte: not
     * canonical), so a pointer read from an object the program wrote
     * faults rather than leads somewhere. */
    int next_fill() {
        fill = static_cast<unsigned char>(0xA0 | ((fill + 1) & 0x0F));
        return fill;
    }

    /* ---- pools ---- */

    /* A pool of a random kind; shared: one any thread may use (not LOCAL). */
    Pool *create_pool(bool shared = false) {
        static const size_t sizes[] = {8, 16, 24, 40, 48, 64, 72, 100, 128, 256, 1000};
        if (pools.size() == kMostPools) return nullptr;
        Pool q;
        q.size = sizes[rng.below(sizeof sizes / sizeof *sizes)];
        pk_pool_config c;
        std::memset(&c, 0, sizeof c);
        c.name = "fuzz";
        c.size = q.size;
        if (rng.chance(15) && !shared) c.flags |= PK_POOL_LOCAL;
        if (rng.chance(10)) c.flags |= PK_POOL_ZERO;
        if (rng.chance(10)) c.flags |= PK_POOL_HARDENED;
        if (rng.chance(5)) c.flags |= PK_POOL_SHUFFLE;
        if (rng.chance(10)) c.limit = 1000 + rng.below(5000);
        if (rng.chance(8)) {
            c.flags |= PK_POOL_REGION;
            q.region = true;
        }
        q.flags = c.flags;
        q.p = pk_pool_create(&c);
        if (!q.p) return nullptr;
        pools.push_back(q);
        return &pools.back();
    }

    Pool *some_pool() { return pools.empty() ? nullptr : &pools[rng.below(pools.size())]; }

    /* Keeps o if it is a fresh object of q's: one handed out twice or that
     * is not the pool's is noted (and never written, so the program does
     * not corrupt what it does not own); with no misuse, it fails. */
    bool take(Pool &q, void *o) {
        if (!o) return false;
        if (q.live_set.count(o) || pk_pool_owner(o) != q.p) {
            std::fprintf(stderr, "%s %p\n", q.live_set.count(o) ? "HANDED OUT TWICE" : "NOT THE POOL'S", o);
            if (!misused) std::_Exit(5);
            return false;
        }
        q.live.push_back(o);
        q.live_set.insert(o);
        std::memset(o, next_fill(), q.size);
        return true;
    }

    void *take_random_live(Pool &q) {
        size_t k = rng.below(q.live.size());
        std::swap(q.live[k], q.live.back());
        void *o = q.live.back();
        q.live.pop_back();
        q.live_set.erase(o);
        return o;
    }

    void destroy_pool(size_t i, bool free_first) {
        Pool &q = pools[i];
        if (free_first || !q.region)
            while (!q.live.empty()) pk_pool_free(q.p, take_random_live(q));
        pk_pool_destroy(q.p);
        pools.erase(pools.begin() + long(i));
    }

    /* ---- one random operation ---- */

    static void *thread_body(void *arg) {
        auto *w = static_cast<std::pair<Program *, Pool *> *>(arg);
        Program &pr = *w->first;
        Pool &q = *w->second;
        std::vector<void *> mine;
        for (size_t i = 0, n = 1 + pr.rng.below(200); i < n; i++) {
            void *o = pk_pool_alloc(q.p);
            if (o) mine.push_back(o);
        }
        for (size_t i = 0; i < mine.size(); i += 2) pk_pool_free(q.p, mine[i]); /* its own frees */
        /* remote frees of the main thread's objects */
        for (size_t i = 0, n = pr.rng.below(q.live.size() + 1); i < n && !q.live.empty(); i++)
            pk_pool_free(q.p, pr.take_random_live(q));
        for (size_t i = 1; i < mine.size(); i += 2) pr.take(q, mine[i]); /* the rest outlive the thread */
        return nullptr;
    }

    void random_op() {
        Pool *q = some_pool();
        unsigned r = static_cast<unsigned>(rng.below(100));
        if (!q || (r < 3 && pools.size() < 4)) {
            create_pool();
            return;
        }
        if (r < 40) {
            take(*q, pk_pool_alloc(q->p));
        } else if (r < 65) {
            if (!q->live.empty()) pk_pool_free(q->p, take_random_live(*q));
        } else if (r < 70) {
            void *objs[16];
            size_t n = pk_pool_alloc_bulk(q->p, objs, 1 + rng.below(16));
            for (size_t i = 0; i < n; i++) take(*q, objs[i]);
        } else if (r < 74) {
            void *objs[16];
            size_t n = 0;
            while (n < 16 && !q->live.empty() && rng.chance(80)) objs[n++] = take_random_live(*q);
            pk_pool_free_bulk(q->p, objs, n);
        } else if (r < 76) {
            pk_pool_trim(q->p);
        } else if (r < 78) {
            pk_pool_stats s = stats_of(q->p);
            if (!misused && s.live != q->live.size()) {
                std::fprintf(stderr, "STATS live %zu, the program holds %zu\n", s.live, q->live.size());
                std::_Exit(6);
            }
        } else if (r < 80) {
            std::vector<void *> seen;
            pk_pool_visit(q->p, collect, &seen);
            if (!misused && seen.size() != q->live.size()) {
                std::fprintf(stderr, "VISIT %zu objects, the program holds %zu\n", seen.size(), q->live.size());
                std::_Exit(6);
            }
        } else if (r < 81) {
            pk_pool_reserve(q->p, rng.below(300));
        } else if (r < 83) {
            destroy_pool(static_cast<size_t>(q - pools.data()), rng.chance(80));
        } else if (r < 90) {
            void *o = pk_new(&classes[rng.below(3)]);
            if (o) objects.push_back(o);
        } else if (r < 95) {
            if (!objects.empty()) {
                size_t k = rng.below(objects.size());
                void *o = objects[k];
                objects.erase(objects.begin() + long(k));
                if (rng.chance(30)) {
                    PK_AUTORELEASE_POOL { pk_autorelease(o); }
                } else {
                    pk_retain(o);
                    pk_release(o);
                    pk_release(o);
                }
            }
        } else if (r < 97) {
            PK_AUTORELEASE_POOL {
                void *o = pk_new(&classes[rng.below(3)]);
                if (o) pk_autorelease(o);
                (void)pk_scratch(1 + rng.below(200));
            }
        } else if (!(q->flags & PK_POOL_LOCAL)) {
            std::pair<Program *, Pool *> w(this, q);
            pthread_t t;
            if (pthread_create(&t, nullptr, thread_body, &w) == 0) pthread_join(t, nullptr);
        }
    }

    /* ---- the misuse ---- */

    static void *double_free_thread(void *arg) {
        pk_pool *p = static_cast<pk_pool *>(arg);
        void *x = pk_pool_alloc(p);
        if (x) {
            pk_pool_free(p, x);
            pk_pool_free(p, x);
        }
        return nullptr;
    }

    /* A pool holding a live object (one made if need be; a new pool if
     * none has room), or null. */
    Pool *pool_with_live() {
        Pool *q = some_pool();
        if (!q) q = create_pool();
        if (q && q->live.empty()) take(*q, pk_pool_alloc(q->p));
        if (q && q->live.empty()) {
            q = create_pool();
            if (q) take(*q, pk_pool_alloc(q->p));
        }
        return q && !q->live.empty() ? q : nullptr;
    }

    /* Injects the misuse; false if there was nothing to misuse (the
     * program then stays a clean one). *interior_misaligned says, for an
     * interior pointer, whether it is off an 8-byte boundary. */
    bool misuse(bool *interior_misaligned) {
        Pool *q = pool_with_live();
        if (!q) return false;
        if (kind == DOUBLE_FREE_IN_THREAD && (q->flags & PK_POOL_LOCAL)) q = create_pool(true);
        if (kind == WRONG_POOL && pools.size() < 2) create_pool();
        if (!q || (kind == WRONG_POOL && pools.size() < 2)) return false;
        std::fprintf(stderr, "MISUSE %s at op %zu, pool of %zu bytes, flags %#x\n", kKindName[kind], misuse_at,
                     q->size, q->flags);
        misused = true;
        switch (kind) {
        case DOUBLE_FREE_NOW: {
            void *x = take_random_live(*q);
            pk_pool_free(q->p, x);
            pk_pool_free(q->p, x);
            break;
        }
        case DOUBLE_FREE_LATER: {
            void *x = take_random_live(*q);
            pk_pool_free(q->p, x);
            for (size_t i = 0, n = 1 + rng.below(20); i < n && !q->live.empty(); i++)
                pk_pool_free(q->p, take_random_live(*q));
            pk_pool_free(q->p, x);
            break;
        }
        case DOUBLE_FREE_IN_THREAD: {
            pthread_t t;
            if (pthread_create(&t, nullptr, double_free_thread, q->p) == 0) pthread_join(t, nullptr);
            break;
        }
        case INTERIOR: {
            void *x = q->live[rng.below(q->live.size())];
            size_t k = rng.chance(50) ? 1 + rng.below(7) : 1 + rng.below(q->size - 1);
            *interior_misaligned = k % 8 != 0;
            std::fprintf(stderr, "MISUSE interior offset %zu\n", k);
            pk_pool_free(q->p, static_cast<char *>(x) + k);
            break;
        }
        case FOREIGN_STACK: {
            alignas(64) char buf[256];
            std::memset(buf, 0, sizeof buf);
            pk_pool_free(q->p, buf + 64);
            __asm__ volatile("" : : "r"(buf) : "memory");
            break;
        }
        case FOREIGN_MALLOC: {
            char *m = static_cast<char *>(std::malloc(256));
            pk_pool_free(q->p, m + 64);
            std::free(m);
            break;
        }
        case WRONG_POOL: {
            Pool *other = &pools[0] == q ? &pools[1] : &pools[0];
            if (other->live.empty()) take(*other, pk_pool_alloc(other->p));
            if (other->live.empty()) {
                std::fprintf(stderr, "MISUSE none: no object of another pool\n");
                misused = false;
                return false;
            }
            pk_pool_free(q->p, take_random_live(*other));
            break;
        }
        case USE_AFTER_DESTROY: {
            pk_pool *p = q->p;
            destroy_pool(static_cast<size_t>(q - pools.data()), true);
            switch (rng.below(3)) {
            case 0: (void)pk_pool_alloc(p); break;
            case 1: pk_pool_trim(p); break;
            default: pk_pool_destroy(p); break;
            }
            break;
        }
        case OVERFLOW: {
            char *x = static_cast<char *>(q->live[rng.below(q->live.size())]);
            size_t n = 1 + rng.below(16);
            std::fprintf(stderr, "MISUSE %zu bytes past %p\n", n, static_cast<void *>(x));
            std::memset(x + q->size, next_fill(), n);
            break;
        }
        case WRITE_AFTER_FREE: {
            char *x = static_cast<char *>(take_random_live(*q));
            pk_pool_free(q->p, x);
            size_t n = 1 + rng.below(q->size < 16 ? q->size : 16);
            size_t at = rng.below(q->size - n + 1);
            std::fprintf(stderr, "MISUSE %zu bytes at %zu of freed %p\n", n, at, static_cast<void *>(x));
            std::memset(x + at, next_fill(), n);
            break;
        }
        case OVER_RELEASE: {
            void *o = pk_new(&classes[rng.below(3)]);
            if (!o) return false;
            pk_release(o);
            pk_release(o);
            break;
        }
        case RELEASE_NON_OBJECT: {
            static char buf[512] __attribute__((aligned(64)));
            void *targets[3] = {buf + 64, static_cast<char *>(q->live[0]) + 16, nullptr};
            size_t n = 2;
            void *o = pk_new(&classes[0]);
            if (o) {
                objects.push_back(o);
                targets[n++] = static_cast<char *>(o) + 16;
            }
            void *t = targets[rng.below(n)];
            std::fprintf(stderr, "MISUSE pk_release(%p)\n", t);
            pk_release(t);
            break;
        }
        default: break;
        }
        return true;
    }

    /* ---- the whole program ---- */

    int run() {
        ops = 20 + rng.below(300);
        kind = static_cast<Kind>(rng.below(KINDS));
        misuse_at = rng.below(ops);
        size_t after = rng.below(40);
        std::fprintf(stderr, "PROGRAM seed %llu: %zu operations, %s at %zu, %zu after it\n",
                     static_cast<unsigned long long>(seed), ops, kKindName[kind], misuse_at, after);
        bool misaligned = false;
        for (size_t i = 0; i < 1 + rng.below(3); i++) create_pool();
        for (size_t i = 0; i < ops; i++) {
            if (i == misuse_at && kind != NONE) {
                misuse(&misaligned);
                std::fprintf(stderr, "MISALIGNED %d\n", misaligned ? 1 : 0);
                std::fflush(stderr);
                ops = i + after; /* a few more, then the end */
            }
            random_op();
        }
        while (!pools.empty()) destroy_pool(pools.size() - 1, true);
        for (void *o : objects) pk_release(o);
        std::fprintf(stderr, "CLEAN END\n");
        return CHILD_PASS;
    }
};

}  // namespace

PKTEST_CHILD(MisuseProgram) {
    alarm(slow_tool() ? 60 : 5);
    pk_set_error_handler(print_fields_handler, nullptr);
    const char *s = std::getenv(kSeedVar);
    Program prog(s ? std::strtoull(s, nullptr, 10) : 0);
    return prog.run();
}

namespace {

/* ======================================================================
 * The driver
 * ==================================================================== */

/* TOOL: a sanitizer's report (the program built with one): the inline
 * paths, compiled into the program, store to or load from the misaligned
 * pointer a misuse gave them, which UndefinedBehaviorSanitizer reports
 * before poolkit sees it; ThreadSanitizer's check of a broken link's
 * address faults inside its own runtime, which reports it. A message all
 * the same, but not poolkit's. */
enum Outcome { REPORTED, CLEAN, TOOL, SIGNALED, HUNG, BROKE, OUTCOMES };
const char *const kOutcomeName[OUTCOMES] = {"reported", "clean", "a tool's report", "signal, no message", "hung",
                                            "broke"};

struct Run {
    uint64_t seed;
    Mode mode;
    Kind kind = NONE;
    bool misaligned = false;
    Outcome outcome = BROKE;
    ChildResult r;
};

Run run_program(uint64_t seed, Mode m) {
    Run run;
    run.seed = seed;
    run.mode = m;
    std::string s = std::to_string(seed);
    run.r = run_child("MisuseProgram", {{kSeedVar, s.c_str()},
                                        {"POOLKIT_HARDENED", m == HARDENED ? "1" : "0"},
                                        {"POOLKIT_DEBUG", m == DEBUG ? "1" : "0"},
                                        /* the programs are the subject, not their leaks */
                                        {"ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0"}});
    const std::string &err = run.r.err;
    for (int k = 0; k < KINDS; k++)
        if (err.find(std::string("MISUSE ") + kKindName[k] + " at op") != std::string::npos) run.kind = Kind(k);
    run.misaligned = err.find("MISALIGNED 1") != std::string::npos;
    int st = run.r.status;
    bool reported = err.find("HANDLER severity=FATAL") != std::string::npos;
    bool tool = err.find(": runtime error: ") != std::string::npos || err.find("Sanitizer") != std::string::npos;
    if (st < 0) run.outcome = BROKE;
    else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM) run.outcome = HUNG;
    else if (reported && WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT) run.outcome = REPORTED;
    else if (WIFEXITED(st) && WEXITSTATUS(st) == CHILD_PASS && err.find("CLEAN END") != std::string::npos)
        run.outcome = CLEAN;
    else if (tool && !reported) run.outcome = TOOL;
    else if (WIFSIGNALED(st) && !reported) run.outcome = SIGNALED;
    else run.outcome = BROKE;
    return run;
}

/* Why the run fails the test, or "". */
std::string failure(const Run &run) {
    if (run.outcome == HUNG) return "hung";
    if (run.outcome == BROKE) return "ended in a way the program does not (a fuzzer check failed)";
    if (run.kind == NONE && run.outcome != CLEAN) return "a program with no misuse did not end cleanly";
    if (run.outcome == SIGNALED) return "a crash with no message";
    if (promised(run.kind, run.mode, run.misaligned) && run.outcome != REPORTED)
        return std::string(kModeName[run.mode]) + " mode promises a report of " + kKindName[run.kind] +
               ", and the run ended " + kOutcomeName[run.outcome];
    return "";
}

std::vector<uint64_t> corpus() {
    std::vector<uint64_t> seeds;
    std::ifstream in(PKTEST_MISUSE_CORPUS);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line.substr(0, line.find('#')));
        uint64_t s;
        if (ls >> s) seeds.push_back(s);
    }
    return seeds;
}

uint64_t run_seed() {
    const char *v = std::getenv("POOLKIT_MISUSE_SEED");
    if (v && *v) return std::strtoull(v, nullptr, 10);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (static_cast<uint64_t>(ts.tv_nsec) ^ static_cast<uint64_t>(ts.tv_sec) << 20 ^
            static_cast<uint64_t>(getpid()) << 40) % 1000000000000ull;
}

size_t random_programs() {
    const char *v = std::getenv("POOLKIT_MISUSE_PROGRAMS");
    if (v && *v) return std::strtoull(v, nullptr, 10);
    return slow_tool() ? 24 : 100;
}

void check_all(const std::vector<uint64_t> &seeds, const char *what) {
    std::map<std::pair<int, int>, std::array<int, OUTCOMES>> table; /* (kind, mode) -> outcomes */
    double t0 = now_ms();
    size_t failed = 0;
    for (uint64_t seed : seeds)
        for (int m = 0; m < MODES; m++) {
            Run run = run_program(seed, Mode(m));
            table[{run.kind, m}][run.outcome]++;
            std::string why = failure(run);
            if (why.empty()) continue;
            failed++;
            ADD_FAILURE() << what << ": program " << seed << " in " << kModeName[m] << " mode ("
                          << kKindName[run.kind] << "): " << why << "\nrun it again: PKTEST_CHILD=MisuseProgram "
                          << kSeedVar << "=" << seed << " POOLKIT_HARDENED=" << int(m == HARDENED)
                          << " POOLKIT_DEBUG=" << int(m == DEBUG) << " " << self_exe() << "\n"
                          << run.r.describe();
        }
    std::printf("%s: %zu programs x 3 modes in %.1f s, %zu failed\n", what, seeds.size(), (now_ms() - t0) / 1000,
                failed);
    std::printf("  %-22s %-9s", "misuse", "mode");
    for (int o = 0; o < OUTCOMES; o++) std::printf(" %18s", kOutcomeName[o]);
    std::printf("\n");
    for (auto &row : table) {
        std::printf("  %-22s %-9s", kKindName[row.first.first], kModeName[row.first.second]);
        for (int o = 0; o < OUTCOMES; o++) std::printf(" %18d", row.second[o]);
        std::printf("\n");
    }
}

}  // namespace

TEST(MisuseFuzz, TheCorpusEndsAsEachModePromisesAndNeverHangs) {
    std::vector<uint64_t> seeds = corpus();
    ASSERT_FALSE(seeds.empty()) << "no seeds in " << PKTEST_MISUSE_CORPUS;
    check_all(seeds, "corpus");
}

TEST(MisuseFuzz, RandomProgramsEndAsEachModePromisesAndNeverHang) {
    uint64_t seed = run_seed();
    size_t n = random_programs();
    std::printf("misuse fuzzer: seed %llu (POOLKIT_MISUSE_SEED=%llu repeats this run), %zu programs\n",
                static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed), n);
    Rng rng(seed);
    std::vector<uint64_t> seeds;
    for (size_t i = 0; i < n; i++) seeds.push_back(rng.next() % 1000000000000ull);
    check_all(seeds, "random programs");
}
