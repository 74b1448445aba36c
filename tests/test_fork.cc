/* Fork: after fork() in a multithreaded program, the child may use every
 * poolkit call (API.md), whatever the other threads were doing at the fork.
 *
 * One or two threads hammer the slow paths (allocations and frees of many
 * objects across slab boundaries, pools created and destroyed, trims,
 * objects made and released, autorelease pools with scratch memory, arenas,
 * objects freed on another thread than the one that allocated them) while
 * the main thread forks again and again. Each child uses every call (child
 * checks below) and exits; it runs under alarm(), so a lock left held by a
 * thread that does not exist in the child shows up as SIGALRM, a failure,
 * not as a hung test. The parent stops at the first child that fails.
 *
 * Children keep to poolkit, malloc (glibc makes it safe after fork) and
 * write(): no stdio, no GoogleTest. */
#include "child.h"

#include <pthread.h>

#include <atomic>
#include <thread>

using namespace pktest;

namespace {

/* ---- a class whose deallocs are counted ------------------------------------ */

struct Cell {
    uint64_t key;
    Cell *next;
};
std::atomic<long> g_cell_deallocs{0};
void cell_dealloc(void *obj) {
    g_cell_deallocs++;
    pk_release(static_cast<Cell *>(obj)->next);
}
const pk_class kCell = {"Cell", sizeof(Cell), cell_dealloc};
const pk_class kBig = {"Big", 3000, nullptr};

void count_call(void *arg) { (*static_cast<std::atomic<long> *>(arg))++; }

/* ---- what the threads share --------------------------------------------------- */

struct Handed {
    pk_pool *pool;
    void *obj;
};

/* Objects handed from one thread to another, freed by the taker. Its room
 * is allocated up front (see Hammer). */
class Handoff {
  public:
    Handoff() : ring_(kCap) {}
    /* false when enough are waiting already (a thread that stopped to wait
     * for a child takes none meanwhile) */
    bool give(pk_pool *p, void *o) {
        std::lock_guard<std::mutex> g(m_);
        if (count_ == kCap) return false;
        ring_[(head_ + count_) % kCap] = Handed{p, o};
        count_++;
        return true;
    }
    size_t take(Handed *out, size_t n) {
        std::lock_guard<std::mutex> g(m_);
        size_t k = 0;
        for (; k < n && count_; k++, count_--, head_ = (head_ + 1) % kCap) out[k] = ring_[head_];
        return k;
    }

  private:
    static constexpr size_t kCap = 20000;
    std::mutex m_;
    std::vector<Handed> ring_;
    size_t head_ = 0, count_ = 0;
};

struct Shared {
    std::vector<pk_pool *> pools; /* long-lived: small, medium and large objects */
    std::atomic<bool> stop{false};
    std::atomic<long> rounds{0};
    std::atomic<long> bad{0};
    Handoff handoff;

    Shared() {
        for (size_t size : {24u, 200u, 4000u}) {
            pk_pool_config c = make_config(size, 0, 0, "forked");
            pools.push_back(pk_pool_create(&c));
        }
    }
    ~Shared() {
        for (pk_pool *p : pools) pk_pool_destroy(p);
    }
    /* Frees up to n objects that some thread handed off, taking them
     * through buf (room for cap). */
    void free_handed(size_t n, Handed *buf, size_t cap) {
        while (n) {
            size_t k = handoff.take(buf, std::min(n, cap));
            if (!k) break;
            for (size_t i = 0; i < k; i++) pk_pool_free(buf[i].pool, buf[i].obj);
            n -= k;
        }
    }
};

/* One round of slow paths, with objs (capacity 4000) as scratch. `hand`
 * says whether to hand objects to another thread (which frees them). */
void hammer_round(Shared &sh, Rng &rng, bool hand, std::vector<void *> &objs) {
    /* many objects of a long-lived pool: batches move, slabs fill and empty */
    pk_pool *p = sh.pools[rng.below(sh.pools.size())];
    objs.clear();
    size_t n = std::min<size_t>(500 + rng.below(3000), (size_t(2) << 20) / stats_of(p).size);
    for (size_t i = 0; i < n; i++) {
        void *o = pk_pool_alloc(p);
        if (!o) {
            sh.bad++;
            continue;
        }
        *static_cast<uint64_t *>(o) = i;
        objs.push_back(o);
    }
    for (size_t i = 0; i < objs.size(); i++)
        if (*static_cast<uint64_t *>(objs[i]) != i) sh.bad++;
    if (hand) {
        size_t given = 0;
        while (given < objs.size() / 4 && sh.handoff.give(p, objs[given])) given++;
        objs.erase(objs.begin(), objs.begin() + static_cast<long>(given));
    }
    if (rng.chance(50)) std::reverse(objs.begin(), objs.end());
    for (void *o : objs) pk_pool_free(p, o);
    if (rng.chance(30)) pk_pool_trim(p);
    if (rng.chance(20)) (void)stats_of(p);

    /* a pool made, used and destroyed */
    pk_pool_config c = make_config(16 + 8 * rng.below(64), 0, rng.chance(20) ? unsigned(PK_POOL_HARDENED) : 0u,
                                   "transient");
    pk_pool *t = pk_pool_create(&c);
    if (!t) {
        sh.bad++;
    } else {
        void *few[64];
        size_t got = pk_pool_alloc_bulk(t, few, 64);
        if (got != 64) sh.bad++;
        pk_pool_free_bulk(t, few, got);
        pk_pool_destroy(t);
    }

    /* objects: a chain released from its head, some retained twice */
    Cell *head = nullptr;
    for (int i = 0; i < 200; i++) {
        Cell *cell = static_cast<Cell *>(pk_new(&kCell));
        if (!cell) {
            sh.bad++;
            break;
        }
        cell->next = head;
        head = cell;
        if (i % 7 == 0) pk_release(pk_retain(cell));
    }
    pk_release(head);

    /* an autorelease pool with objects, deferred calls and scratch memory */
    std::atomic<long> deferred{0};
    {
        pk_autorelease_pool ap = pk_autorelease_push();
        for (int i = 0; i < 600; i++) pk_autorelease(pk_new(i % 50 ? &kCell : &kBig));
        for (int i = 0; i < 20; i++) {
            char *s = static_cast<char *>(pk_scratch(2000));
            if (s) std::memset(s, i, 2000);
        }
        pk_defer(&deferred, count_call);
        pk_autorelease_pop(ap);
    }
    if (deferred.load() != 1) sh.bad++;

    /* an arena across chunks */
    pk_arena *a = pk_arena_create(0);
    if (a) {
        pk_arena_mark m = pk_arena_save(a);
        for (int i = 0; i < 60; i++) pk_arena_alloc(a, 4000, 0);
        pk_arena_rewind(a, m);
        for (int i = 0; i < 60; i++) pk_arena_alloc(a, 4000, 0);
        pk_arena_destroy(a);
    }
    sh.rounds++;
}


/* A thread that runs hammer rounds until told to stop. A bare pthread whose
 * working memory is allocated before it starts and reachable from here:
 * under valgrind a forked child checks for leaks at exit, and heap memory
 * that only a thread missing from the child could reach (a std::thread's
 * state, a vector growing at the fork) would count as lost. */
struct Hammer {
    Shared *sh = nullptr;
    uint64_t seed = 0;
    bool frees_handed = false; /* also frees what others hand over */
    std::vector<void *> objs;
    std::vector<Handed> taken;
    pthread_t thread{};

    void start(Shared &shared, uint64_t s, bool frees) {
        sh = &shared;
        seed = s;
        frees_handed = frees;
        objs.reserve(4000);
        taken.resize(1024);
        ASSERT_EQ(pthread_create(&thread, nullptr, &Hammer::run, this), 0);
    }
    void join() { pthread_join(thread, nullptr); }
    static void *run(void *arg) {
        Hammer *h = static_cast<Hammer *>(arg);
        Rng rng(h->seed);
        while (!h->sh->stop.load()) {
            hammer_round(*h->sh, rng, true, h->objs);
            if (h->frees_handed) h->sh->free_handed(2000, h->taken.data(), h->taken.size());
        }
        return nullptr;
    }
};

/* ---- what a child does ------------------------------------------------------------ */

#define FORK_CHECK(cond, code)                                                          \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            child_say("fork child: check failed: " #cond "\n");                         \
            return code;                                                                \
        }                                                                               \
    } while (0)

void count_visit(void *, void *arg) { ++*static_cast<size_t *>(arg); }

/* Every kind of poolkit call; returns 0 or the number of the failed check. */
int use_everything(Shared &sh) {
    /* the long-lived pools, whatever state the other threads left them in */
    for (pk_pool *p : sh.pools) {
        pk_pool_stats s0 = stats_of(p);
        const size_t n = std::min<size_t>(3000, (size_t(1) << 20) / s0.size); /* many slabs' worth */
        std::vector<void *> objs;
        for (uint64_t i = 0; i < n; i++) {
            void *o = pk_pool_alloc(p);
            FORK_CHECK(o != nullptr, 10);
            FORK_CHECK(pk_pool_owner(o) == p, 11);
            *static_cast<uint64_t *>(o) = i;
            objs.push_back(o);
        }
        FORK_CHECK(stats_of(p).live == s0.live + n, 12);
        for (uint64_t i = 0; i < objs.size(); i++) FORK_CHECK(*static_cast<uint64_t *>(objs[i]) == i, 13);
        for (size_t i = objs.size(); i-- > 0;) pk_pool_free(p, objs[i]);
        FORK_CHECK(stats_of(p).live == s0.live, 14);
        pk_pool_trim(p);
        /* a thread that is gone may have been inside a call at the fork, so
         * its own objects are counted loosely; this thread's, exactly */
        size_t visited = 0;
        pk_pool_visit(p, count_visit, &visited);
        FORK_CHECK(visited + 2 >= s0.live && visited <= s0.live + 2, 15);
    }

    /* a new pool, through every call */
    {
        pk_pool_config c = make_config(72, 0, 0, "child");
        pk_pool *p = pk_pool_create(&c);
        FORK_CHECK(p != nullptr, 20);
        FORK_CHECK(pk_pool_reserve(p, 100) >= 100, 21);
        std::vector<void *> objs(5000);
        FORK_CHECK(pk_pool_alloc_bulk(p, objs.data(), 2500) == 2500, 22);
        for (size_t i = 2500; i < 5000; i++) {
            objs[i] = pk_pool_alloc(p);
            FORK_CHECK(objs[i] != nullptr, 23);
        }
        for (size_t i = 0; i < objs.size(); i++) {
            FORK_CHECK(pk_pool_owner(objs[i]) == p, 24);
            fill_pattern(objs[i], 72, i);
        }
        pk_pool_stats s = stats_of(p);
        FORK_CHECK(s.live == 5000, 25);
        size_t visited = 0;
        pk_pool_visit(p, count_visit, &visited);
        FORK_CHECK(visited == 5000, 26);
        for (size_t i = 0; i < objs.size(); i++) FORK_CHECK(check_pattern(objs[i], 72, i) == 72, 27);
        pk_pool_free_bulk(p, objs.data(), 2500);
        for (size_t i = 2500; i < 5000; i++) pk_pool_free(p, objs[i]);
        pk_pool_trim(p);
        s = stats_of(p);
        FORK_CHECK(s.live == 0, 28);
        FORK_CHECK(s.slabs <= 1, 29);
        pk_pool_destroy(p);
    }

    /* pools made and destroyed */
    for (int i = 0; i < 50; i++) {
        pk_pool_config c = make_config(8 + 8 * static_cast<size_t>(i), 0, 0, "child-many");
        pk_pool *p = pk_pool_create(&c);
        FORK_CHECK(p != nullptr, 30);
        void *o = pk_pool_alloc(p);
        FORK_CHECK(o != nullptr && pk_pool_owner(o) == p, 31);
        pk_pool_free(p, o);
        pk_pool_destroy(p);
    }

    /* objects */
    {
        long d0 = g_cell_deallocs.load();
        std::vector<Cell *> cells;
        for (int i = 0; i < 1000; i++) {
            Cell *cell = static_cast<Cell *>(pk_new(&kCell));
            FORK_CHECK(cell != nullptr, 40);
            FORK_CHECK(cell->key == 0 && cell->next == nullptr, 41);
            FORK_CHECK(pk_class_of(cell) == &kCell && pk_refcount(cell) == 1, 42);
            cell->key = static_cast<uint64_t>(i);
            cells.push_back(static_cast<Cell *>(pk_retain(cell)));
        }
        for (Cell *cell : cells) pk_release(cell);
        for (size_t i = 0; i < cells.size(); i++) {
            FORK_CHECK(pk_refcount(cells[i]) == 1 && cells[i]->key == i, 43);
            pk_release(cells[i]);
        }
        FORK_CHECK(g_cell_deallocs.load() == d0 + 1000, 44);
    }

    /* autorelease pools, deferred calls, scratch memory */
    {
        long d0 = g_cell_deallocs.load();
        std::atomic<long> deferred{0};
        pk_autorelease_pool outer = pk_autorelease_push();
        FORK_CHECK(outer.token != PK_AUTORELEASE_NONE, 50);
        for (int i = 0; i < 2000; i++) FORK_CHECK(pk_autorelease(pk_new(&kCell)) != nullptr, 51);
        pk_autorelease_pool inner = pk_autorelease_push();
        for (int i = 0; i < 100; i++) {
            char *s = static_cast<char *>(pk_scratch(512));
            FORK_CHECK(s != nullptr, 52);
            std::memset(s, i, 512);
        }
        FORK_CHECK(pk_defer(&deferred, count_call) == &deferred, 53);
        pk_autorelease_pop(inner);
        FORK_CHECK(deferred.load() == 1, 54);
        pk_autorelease_pop(outer);
        FORK_CHECK(g_cell_deallocs.load() == d0 + 2000, 55);
    }

    /* arenas */
    {
        pk_arena *a = pk_arena_create(0);
        FORK_CHECK(a != nullptr, 60);
        for (int i = 0; i < 300; i++) FORK_CHECK(pk_arena_alloc(a, 1000, 0) != nullptr, 61);
        char *s = pk_arena_strdup(a, "after fork");
        FORK_CHECK(s && std::strcmp(s, "after fork") == 0, 62);
        pk_arena_mark m = pk_arena_save(a);
        for (int i = 0; i < 100; i++) FORK_CHECK(pk_arena_alloc(a, 3000, 64) != nullptr, 63);
        pk_arena_rewind(a, m);
        FORK_CHECK(std::strcmp(s, "after fork") == 0, 64);
        pk_arena_reset(a);
        pk_arena_destroy(a);
    }
    return 0;
}

/* Seconds a forked child may take: its work takes milliseconds natively. */
unsigned fork_child_limit() { return slow_tool() ? 30 : 10; }

std::string describe_status(int status) {
    if (status < 0) return "fork failed";
    if (WIFEXITED(status))
        return "exited with " + std::to_string(WEXITSTATUS(status)) + " (the number of the check that failed)";
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        return "still running after " + std::to_string(fork_child_limit()) + " s: deadlocked";
    if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
    return "status " + std::to_string(status);
}

/* Forks `forks` times while the hammers run; each child uses everything.
 * Stops at the first child that fails. Between forks the main thread frees
 * what the hammers handed it (`main_frees`). */
void fork_repeatedly(Shared &sh, size_t forks, bool main_frees) {
    Rng rng(77);
    /* let the hammers get going */
    while (sh.rounds.load() < 2) std::this_thread::yield();
    size_t ok = 0;
    for (size_t i = 0; i < forks; i++) {
        usleep(static_cast<useconds_t>(rng.below(3000)));
        if (main_frees) {
            Handed buf[256];
            sh.free_handed(SIZE_MAX, buf, 256);
        }
        int status = fork_and_wait([&] { return use_everything(sh); }, fork_child_limit());
        if (!(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            ADD_FAILURE() << "child " << i + 1 << " of " << forks << " " << describe_status(status) << " ("
                          << ok << " children before it passed; the hammers had run " << sh.rounds.load()
                          << " rounds)";
            break;
        }
        ok++;
    }
}

/* After the threads are gone, the parent's pools are intact and empty. */
void expect_parent_intact(Shared &sh) {
    Handed buf[256];
    sh.free_handed(SIZE_MAX, buf, 256);
    EXPECT_EQ(sh.bad.load(), 0);
    for (pk_pool *p : sh.pools) {
        pk_pool_trim(p);
        pk_pool_stats s = stats_of(p);
        EXPECT_EQ(s.live, 0u) << s.size << "-byte pool";
        EXPECT_LE(s.slabs, 1u) << s.size << "-byte pool";
    }
}

}  // namespace

/* The child's work itself, with no other thread: it must pass on any core. */
TEST(Fork, ChildOfASingleThreadedParentCanUseEveryCall) {
    Shared sh;
    Rng rng(1);
    std::vector<void *> objs;
    objs.reserve(4000);
    hammer_round(sh, rng, false, objs);
    for (int i = 0; i < 3; i++) {
        int status = fork_and_wait([&] { return use_everything(sh); }, fork_child_limit());
        ASSERT_TRUE(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) << describe_status(status);
    }
    expect_parent_intact(sh);
}

/* Fork's handlers take and release every pool's lock from a table of the
 * listed pools' keys, each pool leaving its place to the last as it is
 * destroyed: after pools made and destroyed in a shuffled order, records
 * and keys reused, parent and child must each find every pool's lock free.
 * A pool whose lock is left out, or taken twice, hangs the fork or one
 * side after it: the whole runs in a child of its own, under the alarm. */
static int made_and_destroyed_then_forked() {
    Rng rng(7);
    std::vector<pk_pool *> pools;
    auto make = [&](int n) {
        for (int i = 0; i < n; i++) {
            pk_pool_config c{};
            c.name = "fork-listed";
            c.size = 16 + 8 * rng.below(8);
            c.flags = rng.below(4) == 0 ? PK_POOL_LOCAL : 0;
            pk_pool *p = pk_pool_create(&c);
            if (!p) return false;
            pk_pool_free(p, pk_pool_alloc(p));
            pools.push_back(p);
        }
        return true;
    };
    auto destroy_some = [&](size_t n) {
        for (size_t i = 0; i < n && !pools.empty(); i++) {
            size_t at = rng.below(pools.size());
            pk_pool_destroy(pools[at]);
            pools.erase(pools.begin() + static_cast<long>(at));
        }
    };
    if (!make(64)) return 10;
    destroy_some(40);
    if (!make(24)) return 11;
    destroy_some(20);
    if (!make(12)) return 12;
    auto use_all = [&] {
        for (pk_pool *p : pools) {
            void *o = pk_pool_alloc(p);
            if (!o) return 1;
            pk_pool_free(p, o);
            pk_pool_trim(p); /* the pool's lock */
        }
        pk_pool_config c{};
        c.name = "after-fork";
        c.size = 24;
        pk_pool *fresh = pk_pool_create(&c);
        if (!fresh) return 2;
        pk_pool_destroy(fresh);
        return 0;
    };
    for (int i = 0; i < 3; i++) {
        int status = fork_and_wait(use_all, fork_child_limit());
        if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 20 + i;
        if (use_all() != 0) return 30 + i;
    }
    for (pk_pool *p : pools) pk_pool_destroy(p);
    return 0;
}

TEST(Fork, PoolsMadeAndDestroyedInAnyOrderAreAllReleasedOnBothSides) {
    int status = fork_and_wait(made_and_destroyed_then_forked, 2 * fork_child_limit());
    ASSERT_TRUE(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) << describe_status(status);
}

TEST(Fork, ChildCanUseEveryCallWhileOneThreadHammersSlowPaths) {
    Shared sh;
    Hammer hammer;
    ASSERT_NO_FATAL_FAILURE(hammer.start(sh, 2, false)); /* the main thread frees what it hands over */
    fork_repeatedly(sh, scaled(100, 10), true);
    sh.stop = true;
    hammer.join();
    expect_parent_intact(sh);
}

TEST(Fork, ChildCanUseEveryCallWhileTwoThreadsFreeEachOthersObjects) {
    Shared sh;
    Hammer hammers[2];
    for (int t = 0; t < 2; t++) /* each frees what the other hands over, most of the time */
        ASSERT_NO_FATAL_FAILURE(hammers[t].start(sh, static_cast<uint64_t>(t) + 3, true));
    fork_repeatedly(sh, scaled(100, 10), false);
    sh.stop = true;
    for (auto &h : hammers) h.join();
    expect_parent_intact(sh);
}

/* A thread that does not survive the fork holds slabs of a pool that never
 * saw a remote free: the child still finds them (they go onto the pool's
 * lost list, their objects, and those its heap held ready, counted live: a
 * bounded leak), and allocates and frees in that pool as before. The
 * thread is a plain pthread: a std::thread's state, allocated by the
 * parent, would be a leak in the child under valgrind. */
struct Holder {
    static constexpr size_t kHeld = 3000; /* several slabs */
    pk_pool *pool;
    std::vector<void *> mine;
    std::mutex m;
    std::condition_variable cv;
    bool filled = false, done = false;

    static void *run(void *arg) {
        Holder *h = static_cast<Holder *>(arg);
        for (size_t i = 0; i < kHeld; i++) h->mine.push_back(pk_pool_alloc(h->pool));
        std::unique_lock<std::mutex> g(h->m);
        h->filled = true;
        h->cv.notify_all();
        h->cv.wait(g, [h] { return h->done; });
        g.unlock();
        for (void *o : h->mine) pk_pool_free(h->pool, o);
        return nullptr;
    }
};

/* fn, in a child forked while a Holder thread holds kHeld objects of a
 * pool named name; the thread then frees them and ends. fn's status. */
template <class Fn> int fork_beside_a_holder(Holder &h, const char *name, Fn fn) {
    const pk_pool_config cfg = make_config(64, 0, 0, name);
    h.pool = pk_pool_create(&cfg);
    if (!h.pool) return -1;
    h.mine.reserve(Holder::kHeld);
    pthread_t t;
    if (pthread_create(&t, nullptr, Holder::run, &h) != 0) return -1;
    {
        std::unique_lock<std::mutex> g(h.m);
        h.cv.wait(g, [&] { return h.filled; });
    }
    int status = fork_and_wait(fn, fork_child_limit());
    {
        std::lock_guard<std::mutex> g(h.m);
        h.done = true;
    }
    h.cv.notify_all();
    pthread_join(t, nullptr);
    return status;
}

TEST(Fork, ChildKeepsCountingTheObjectsOfAThreadThatDidNotSurvive) {
    Holder h;
    int status = fork_beside_a_holder(h, "fork.holder", [&] {
        size_t lost = stats_of(h.pool).live;
        if (lost < Holder::kHeld) return 1;
        std::vector<void *> objs;
        for (size_t i = 0; i < Holder::kHeld; i++) objs.push_back(pk_pool_alloc(h.pool));
        for (void *o : objs) pk_pool_free(h.pool, o);
        pk_pool_trim(h.pool);
        return stats_of(h.pool).live == lost ? 0 : 2;
    });
    EXPECT_TRUE(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) << describe_status(status);
    EXPECT_EQ(stats_of(h.pool).live, 0u);
    pk_pool_destroy(h.pool);
}

/* The child's destroy of that pool reports its own leak alone: the lost
 * slabs' slots (the thread's objects and the free ones it held) are named
 * as such, not counted as the program's live objects. */
TEST(Fork, ChildDestroyCountsNoneOfTheLostSlabsAsItsLeak) {
    Holder h;
    int status = fork_beside_a_holder(h, "fork.lost", [&] {
        ErrorCapture cap;
        void *mine = pk_pool_alloc(h.pool); /* the child's own leak */
        if (!mine) return 1;
        pk_pool_destroy(h.pool);
        std::vector<RecordedError> errs = cap.errors();
        if (errs.size() != 1 || errs[0].what != "leak") return 2;
        const std::string &m = errs[0].message;
        if (m.find("destroyed with 1 live object (and ") == std::string::npos) return 3;
        if (m.find("in slabs of threads that did not survive a fork") == std::string::npos) return 4;
        return 0;
    });
    EXPECT_TRUE(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) << describe_status(status);
    pk_pool_destroy(h.pool);
}
