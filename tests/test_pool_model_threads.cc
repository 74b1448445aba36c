/* Pools against a model, with several threads at once. Each thread slot runs
 * a seeded random walk over pools of every kind (the inline path, large
 * objects, construct/destruct hooks, PK_POOL_ZERO, hardened, debug, a
 * limit) and keeps a model of what it holds; objects travel between slots
 * through mailboxes, so most frees are remote (on a thread other than the
 * one that allocated the object). Every object carries a pattern keyed by
 * its pool, its holder's slot and a serial, written when it is handed out
 * (or changes hands) and checked before it is freed or passed on, so an
 * object handed out twice or written by the library while live is found.
 *
 * What the knobs of each test add:
 *   - exits: a slot's thread ends at a random step and a new thread takes
 *     over the slot's model (objects the dead thread allocated stay live,
 *     in its slot and in other slots' hands), while the other slots run on;
 *     the dead thread's caches must go home with nothing lost;
 *   - pool-wide calls: pk_pool_trim, pk_pool_reserve and pk_pool_stats_get
 *     on any pool while the other threads allocate and free in it.
 * Each thread also owns a PK_POOL_LOCAL pool for its life (created and
 * destroyed on that thread while the others run), checked against its own
 * model after every call on it.
 *
 * At checkpoints every slot waits at a barrier and the main thread checks
 * the world against the models: stats.live equals what the slots and the
 * mailboxes hold; every held object is aligned, owned by its pool, still
 * holds its pattern and overlaps no other; pk_pool_visit (some pools each
 * time) sees exactly the modelled objects; the limit holds. At the end every
 * object is freed (on the workers, mostly remotely), the threads are joined
 * and every pool must show live 0, allocs == frees, remote_frees no fewer
 * than the model's lower bound, no slab after a trim, and no leak report at
 * destroy; the hooks ran construct and destruct equally often.
 *
 * The seed is printed; POOLKIT_TEST_SEED=<n> replays each thread's sequence
 * of operations (not the interleaving, which the scheduler picks). Step
 * counts follow POOLKIT_TEST_SCALE (support.h: fewer under sanitizers and
 * valgrind). */
#include "support.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <map>
#include <sstream>
#include <thread>

using namespace pktest;

namespace {

struct PoolSpec {
    const char *label;
    size_t size;
    unsigned flags;
    bool hooks;
    size_t limit;
    /* remote_frees is counted between the thread caches and the pool.
     * Pools that lock on every call (debug checks, a limit: the "direct"
     * path of src/pool/pool.c) have no cache to count it in and report 0, short
     * of API.md's "objects freed on a thread other than the one that
     * allocated them"; so do all pools under POOLKIT_DEBUG=1. */
    bool counts_remote;
};

const PoolSpec kPools[] = {
    {"small", 24, 0, false, 0, true},
    {"large", 3000, 0, false, 0, true},
    {"hooked", 48, 0, true, 0, true},
    {"zero", 40, PK_POOL_ZERO, false, 0, true},
    {"hardened", 64, PK_POOL_HARDENED, false, 0, true},
    {"hardened-large", 5000, PK_POOL_HARDENED, false, 0, true},
    {"hardened-48", 48, PK_POOL_HARDENED, false, 0, true},       /* not a power of two: alignment checked inline */
    {"hardened-hooked", 40, PK_POOL_HARDENED, true, 0, true},    /* link past the object: the lean path */
    {"debug", 32, PK_POOL_DEBUG, false, 0, false},
    {"debug-large", 2000, PK_POOL_DEBUG, false, 0, false},
    {"limited", 16, 0, false, 300, false},
};
constexpr size_t kPoolCount = sizeof kPools / sizeof kPools[0];
constexpr size_t kLocalSize = 56;

struct Knobs {
    uint64_t seed;
    size_t slots;
    size_t rounds;          /* checkpoints */
    size_t steps_per_round; /* per slot, before scaling */
    size_t max_held;        /* per slot */
    bool exits;
    bool pool_wide;
};

/* An object in a model: the slot that holds it (or a mailbox) wrote the
 * pattern `key` into all of it. */
struct Held {
    uint32_t pool;
    void *obj;
    uint64_t key;
};

struct Mailbox {
    std::mutex m;
    std::deque<Held> items;
};

using Counts = std::array<uint64_t, kPoolCount>;

/* One thread slot: its model survives the threads that run it. Only the
 * thread running the slot touches it, except at checkpoints (every slot
 * waits at the barrier) and after the end; the mailbox has its own lock. */
struct Slot {
    size_t index = 0;
    Rng rng{1};
    std::vector<Held> held;
    Mailbox mailbox;
    size_t step = 0, arrived_step = 0, life_end = 0, lives = 0, target = 0;
    uint64_t serial = 0;
    Counts allocs{}, frees{};             /* over all lives, for the limited pool */
    Counts life_allocs{}, life_frees{};   /* this thread's, through its caches */
    Counts remote_floor{};                /* sum over lives of max(0, frees - allocs) */
    pk_pool *local = nullptr;             /* this life's PK_POOL_LOCAL pool */
    std::vector<Held> local_held;
    std::mutex thread_m; /* guards `thread` while a life hands over to the next */
    std::thread thread;
};

/* POOLKIT_DEBUG=1 makes every pool a debug pool (API.md). */
bool every_pool_debug() { return env_on("POOLKIT_DEBUG"); }

uint64_t seed_for(uint64_t fallback) {
    const char *v = std::getenv("POOLKIT_TEST_SEED");
    if (v && *v) return std::strtoull(v, nullptr, 0);
    return fallback;
}

class World {
  public:
    explicit World(const Knobs &k) : k_(k), steps_per_round_(scaled(k.steps_per_round, 200)) {}

    ~World() {
        /* after a failure the pools may be inconsistent: they are left as
         * they are rather than destroyed */
        if (failed()) return;
        for (pk_pool *p : pools_) pk_pool_destroy(p);
    }

    void run() {
        std::printf("seed %llu (POOLKIT_TEST_SEED=%llu replays each thread's operations), "
                    "%zu slots, %zu rounds of %zu steps\n",
                    (unsigned long long)k_.seed, (unsigned long long)k_.seed, k_.slots, k_.rounds,
                    steps_per_round_);
        ::testing::Test::RecordProperty("seed", std::to_string(k_.seed));
        ASSERT_NO_FATAL_FAILURE(create_pools());
        total_steps_ = k_.rounds * steps_per_round_;
        main_rng_ = Rng(k_.seed ^ 0xC0FFEEull);
        for (size_t i = 0; i < k_.slots; i++) {
            slots_.emplace_back(new Slot);
            Slot &s = *slots_.back();
            s.index = i;
            s.rng = Rng(k_.seed * 1000003ull + i);
            s.target = s.rng.below(k_.max_held + 1);
        }
        for (auto &s : slots_) {
            std::lock_guard<std::mutex> g(s->thread_m);
            s->thread = std::thread(&World::life, this, s.get(), std::thread());
        }
        for (size_t r = 1; r <= k_.rounds; r++) {
            wait_all_arrived();
            if (!failed()) checkpoint(r);
            release();
        }
        wait_all_done();
        for (auto &s : slots_) {
            std::lock_guard<std::mutex> g(s->thread_m);
            s->thread.join();
        }
        size_t lives = 0;
        for (auto &s : slots_) lives += s->lives;
        std::printf("%zu thread lives\n", lives);
        if (!failed()) finish();
    }

  private:
    /* ---- failures (from any thread) ---- */

    bool failed() const { return failures_.load(std::memory_order_relaxed) != 0; }

    void fail(const std::string &what) {
        if (failures_.fetch_add(1) < 20) ADD_FAILURE() << what;
    }

    std::string describe(const Held &h) const {
        std::ostringstream os;
        os << "object " << h.obj << " of pool '" << kPools[h.pool].label << "' (key slot "
           << ((h.key >> 48) & 0xFF) << " serial " << (h.key & 0xFFFFFFFFFFFFull) << ")";
        return os.str();
    }

    /* ---- pools ---- */

    void create_pools() {
        for (size_t i = 0; i < kPoolCount; i++) {
            const PoolSpec &ps = kPools[i];
            pk_pool_config c = make_config(ps.size, 0, ps.flags, ps.label);
            c.limit = ps.limit;
            trackers_[i].reset(ps.hooks ? new HookTracker(ps.size) : nullptr);
            if (ps.hooks) trackers_[i]->install(c);
            pk_pool *p = pk_pool_create(&c);
            ASSERT_NE(p, nullptr) << ps.label << ": errno " << errno;
            pools_.push_back(p);
            aligns_[i] = natural_align(ps.size, ps.hooks);
        }
    }

    /* ---- the checks each slot makes as it goes ---- */

    void check_intact(const Held &h, const char *when) {
        size_t size = kPools[h.pool].size;
        size_t bad = check_pattern(h.obj, size, h.key);
        if (bad != size) {
            std::ostringstream os;
            os << describe(h) << " " << when << ": byte " << bad << " of " << size
               << " changed while the object was live (handed out twice, or written by the pool)";
            fail(os.str());
        }
    }

    /* A new holder writes its own key into the object. */
    void stamp(Slot &s, Held &h) {
        h.key = (uint64_t)h.pool << 56 | (uint64_t)s.index << 48 | (++s.serial & 0xFFFFFFFFFFFFull);
        fill_pattern(h.obj, kPools[h.pool].size, h.key);
        if (trackers_[h.pool]) trackers_[h.pool]->set_state(h.obj, h.key);
    }

    void on_handout(Slot &s, uint32_t pool, void *obj) {
        const PoolSpec &ps = kPools[pool];
        Held h{pool, obj, 0};
        if (!aligned_to(obj, aligns_[pool]) || pk_pool_owner(obj) != pools_[pool])
            fail(describe(h) + ": handed out misaligned or not owned by its pool");
        if ((ps.flags & PK_POOL_ZERO) && !all_bytes(obj, ps.size, 0))
            fail(describe(h) + ": a PK_POOL_ZERO object came out not zeroed");
        if (trackers_[pool]) {
            std::string why = trackers_[pool]->check_handed_out(obj);
            if (!why.empty()) fail(describe(h) + ": " + why);
        }
        stamp(s, h);
        s.held.push_back(h);
        s.allocs[pool]++;
        s.life_allocs[pool]++;
    }

    void alloc_one(Slot &s, uint32_t pool) {
        errno = 0;
        void *obj = pk_pool_alloc(pools_[pool]);
        if (!obj) {
            if (!(kPools[pool].limit && errno == ENOMEM))
                fail(std::string("pk_pool_alloc of pool '") + kPools[pool].label + "' failed, errno " +
                     std::to_string(errno));
            return;
        }
        on_handout(s, pool, obj);
    }

    void alloc_bulk(Slot &s, uint32_t pool) {
        size_t n = 1 + s.rng.below(40);
        void *objs[40];
        errno = 0;
        size_t got = pk_pool_alloc_bulk(pools_[pool], objs, n);
        if (got < n && !(kPools[pool].limit && errno == ENOMEM))
            fail(std::string("pk_pool_alloc_bulk of pool '") + kPools[pool].label + "' gave " +
                 std::to_string(got) + " of " + std::to_string(n) + ", errno " + std::to_string(errno));
        for (size_t i = 0; i < got; i++) on_handout(s, pool, objs[i]);
    }

    Held take_held(Slot &s, size_t i) {
        std::swap(s.held[i], s.held.back());
        Held h = s.held.back();
        s.held.pop_back();
        return h;
    }

    void free_held(Slot &s, const Held &h) {
        check_intact(h, "before its free");
        pk_pool_free(pools_[h.pool], h.obj);
        s.frees[h.pool]++;
        s.life_frees[h.pool]++;
    }

    /* Frees up to n held objects of one pool in one pk_pool_free_bulk. */
    void free_bulk(Slot &s) {
        uint32_t pool = s.held[s.rng.below(s.held.size())].pool;
        size_t n = 1 + s.rng.below(40);
        std::vector<void *> objs;
        for (size_t i = s.held.size(); i-- > 0 && objs.size() < n;) {
            if (s.held[i].pool != pool) continue;
            Held h = take_held(s, i);
            check_intact(h, "before its bulk free");
            objs.push_back(h.obj);
        }
        /* in address order half the time: a slab's objects in a row go home as one run */
        if (s.rng.below(2)) std::sort(objs.begin(), objs.end());
        pk_pool_free_bulk(pools_[pool], objs.data(), objs.size());
        s.frees[pool] += objs.size();
        s.life_frees[pool] += objs.size();
    }

    void send(Slot &s) {
        Held h = take_held(s, s.rng.below(s.held.size()));
        check_intact(h, "before it was passed on");
        size_t to = (s.index + 1 + s.rng.below(k_.slots - 1)) % k_.slots;
        Mailbox &mb = slots_[to]->mailbox;
        std::lock_guard<std::mutex> g(mb.m);
        mb.items.push_back(h);
    }

    /* Takes a few objects from this slot's mailbox: each is freed here (a
     * remote free, mostly) or kept under a new key. */
    void receive(Slot &s) {
        size_t n = 1 + s.rng.below(4);
        for (size_t i = 0; i < n; i++) {
            Held h;
            {
                std::lock_guard<std::mutex> g(s.mailbox.m);
                if (s.mailbox.items.empty()) return;
                h = s.mailbox.items.front();
                s.mailbox.items.pop_front();
            }
            if (s.rng.chance(50)) {
                free_held(s, h);
            } else {
                check_intact(h, "when it arrived");
                stamp(s, h);
                s.held.push_back(h);
            }
        }
    }

    /* pk_pool_trim, pk_pool_reserve or pk_pool_stats_get on a pool the
     * other threads are using. */
    void pool_wide(Slot &s) {
        uint32_t pool = static_cast<uint32_t>(s.rng.below(kPoolCount));
        pk_pool *p = pools_[pool];
        switch (s.rng.below(3)) {
        case 0:
            pk_pool_trim(p);
            break;
        case 1: {
            size_t n = 1 + s.rng.below(64);
            errno = 0;
            size_t ready = pk_pool_reserve(p, n);
            if (ready < n && !(kPools[pool].limit && errno == ENOMEM))
                fail(std::string("pk_pool_reserve(") + std::to_string(n) + ") of pool '" +
                     kPools[pool].label + "' returned " + std::to_string(ready));
            break;
        }
        default: {
            pk_pool_stats st = stats_of(p);
            if (st.size != kPools[pool].size || st.align != aligns_[pool])
                fail(std::string("stats of pool '") + kPools[pool].label +
                     "' name another size or alignment");
        }
        }
    }

    /* This life's PK_POOL_LOCAL pool: one call, then its live count. */
    void local_step(Slot &s) {
        if (s.local_held.size() < 64 && (s.local_held.empty() || s.rng.chance(55))) {
            void *obj = pk_pool_alloc(s.local);
            if (!obj) return fail("pk_pool_alloc of a PK_POOL_LOCAL pool failed");
            /* its cache key is recycled from pools other threads destroyed */
            if (pk_pool_owner(obj) != s.local)
                return fail("a PK_POOL_LOCAL pool handed out another pool's object");
            Held h{0, obj, (uint64_t)s.index << 48 | ++s.serial};
            fill_pattern(obj, kLocalSize, h.key);
            s.local_held.push_back(h);
        } else {
            size_t i = s.rng.below(s.local_held.size());
            std::swap(s.local_held[i], s.local_held.back());
            Held h = s.local_held.back();
            s.local_held.pop_back();
            if (check_pattern(h.obj, kLocalSize, h.key) != kLocalSize)
                fail("an object of a PK_POOL_LOCAL pool changed while live");
            pk_pool_free(s.local, h.obj);
        }
        size_t live = stats_of(s.local).live;
        if (live != s.local_held.size())
            fail("PK_POOL_LOCAL pool: stats.live " + std::to_string(live) + ", model " +
                 std::to_string(s.local_held.size()));
    }

    void one_step(Slot &s) {
        if (s.rng.below(steps_per_round_ / 4 + 1) == 0) s.target = s.rng.below(k_.max_held + 1);
        if (s.rng.below(steps_per_round_ + 1) == 0) s.target = 0; /* drain now and then: slabs empty */
        uint32_t pool = static_cast<uint32_t>(s.rng.below(kPoolCount));
        size_t r = s.rng.below(100);
        bool grow = s.held.size() < s.target || s.held.empty();
        if (r < 45) {
            if (grow) {
                if (s.rng.chance(10)) alloc_bulk(s, pool);
                else alloc_one(s, pool);
            } else if (s.rng.chance(10)) {
                free_bulk(s);
            } else {
                free_held(s, take_held(s, s.rng.below(s.held.size())));
            }
        } else if (r < 60) {
            if (!s.held.empty()) free_held(s, take_held(s, s.rng.below(s.held.size())));
        } else if (r < 75) {
            if (!s.held.empty()) send(s);
        } else if (r < 90) {
            receive(s);
        } else if (r < 94) {
            if (!s.held.empty()) check_intact(s.held[s.rng.below(s.held.size())], "at a random check");
        } else if (r < 97) {
            local_step(s);
        } else if (k_.pool_wide) {
            pool_wide(s);
        } else {
            local_step(s);
        }
    }

    /* ---- one thread's life ---- */

    void open_life(Slot &s) {
        s.lives++;
        s.life_allocs.fill(0);
        s.life_frees.fill(0);
        s.life_end = k_.exits ? s.step + 1 + s.rng.below(2 * steps_per_round_) : SIZE_MAX;
        pk_pool_config c = make_config(kLocalSize, 0, PK_POOL_LOCAL, "local");
        s.local = pk_pool_create(&c);
        if (!s.local) fail("pk_pool_create of a PK_POOL_LOCAL pool failed");
    }

    /* Whatever this thread freed beyond what it allocated, it returned
     * beyond what it took: the least remote_frees can count for it. */
    void close_life(Slot &s) {
        for (size_t i = 0; i < kPoolCount; i++)
            if (s.life_frees[i] > s.life_allocs[i]) s.remote_floor[i] += s.life_frees[i] - s.life_allocs[i];
        if (!s.local) return;
        if (!failed()) {
            for (const Held &h : s.local_held) pk_pool_free(s.local, h.obj);
            s.local_held.clear();
            if (stats_of(s.local).live != 0) fail("PK_POOL_LOCAL pool: live objects after freeing all");
            pk_pool_destroy(s.local); /* with objects in this thread's cache */
        }
        s.local = nullptr;
    }

    void life(Slot *s, std::thread previous) {
        /* The last life's exit (its caches going home) ends before this
         * one starts, so no call is in progress at a checkpoint; it races
         * with the other slots' threads. */
        if (previous.joinable()) previous.join();
        open_life(*s);
        for (;;) {
            if (s->step == s->life_end && s->step < total_steps_) {
                close_life(*s);
                std::lock_guard<std::mutex> g(s->thread_m);
                std::thread me = std::move(s->thread);
                s->thread = std::thread(&World::life, this, s, std::move(me));
                return; /* this thread exits holding whatever its caches hold */
            }
            if (s->step % steps_per_round_ == 0 && s->step > 0 && s->arrived_step != s->step) {
                s->arrived_step = s->step;
                arrive();
            }
            if (s->step == total_steps_) break;
            if (!failed()) one_step(*s);
            s->step++;
        }
        /* The end: free everything this slot holds or was sent (no slot
         * sends after the last checkpoint). */
        if (!failed()) {
            while (!s->held.empty()) free_held(*s, take_held(*s, s->held.size() - 1));
            for (const Held &h : s->mailbox.items) free_held(*s, h);
            s->mailbox.items.clear();
        }
        close_life(*s);
        std::lock_guard<std::mutex> g(bm_);
        done_++;
        bcv_.notify_all();
    }

    /* ---- the barrier between the slots and the main thread ---- */

    void arrive() {
        std::unique_lock<std::mutex> g(bm_);
        uint64_t gen = generation_;
        if (++arrived_ == k_.slots) bcv_.notify_all();
        bcv_.wait(g, [&] { return generation_ != gen; });
    }

    void wait_all_arrived() {
        std::unique_lock<std::mutex> g(bm_);
        bcv_.wait(g, [&] { return arrived_ == k_.slots; });
    }

    void release() {
        std::lock_guard<std::mutex> g(bm_);
        arrived_ = 0;
        generation_++;
        bcv_.notify_all();
    }

    void wait_all_done() {
        std::unique_lock<std::mutex> g(bm_);
        bcv_.wait(g, [&] { return done_ == k_.slots; });
    }

    /* ---- checks with every slot at the barrier ---- */

    struct Where {
        Held h;
        size_t slot;
        bool mailbox;
    };

    void checkpoint(size_t round) {
        std::map<uintptr_t, Where> all;
        Counts model{};
        auto add = [&](const Held &h, size_t slot, bool mailbox) {
            model[h.pool]++;
            check_intact(h, mailbox ? "in a mailbox at a checkpoint" : "at a checkpoint");
            if (!aligned_to(h.obj, aligns_[h.pool]) || pk_pool_owner(h.obj) != pools_[h.pool])
                fail(describe(h) + ": not owned by its pool at a checkpoint");
            auto r = all.emplace(reinterpret_cast<uintptr_t>(h.obj), Where{h, slot, mailbox});
            if (!r.second)
                fail(describe(h) + " is held twice: by slot " + std::to_string(slot) + " and slot " +
                     std::to_string(r.first->second.slot) + " (" + describe(r.first->second.h) + ")");
        };
        for (auto &s : slots_) {
            for (const Held &h : s->held) add(h, s->index, false);
            for (const Held &h : s->mailbox.items) add(h, s->index, true);
        }
        /* no two live objects overlap, whatever their pools */
        const Where *prev = nullptr;
        for (auto &e : all) {
            if (prev && reinterpret_cast<uintptr_t>(prev->h.obj) + kPools[prev->h.pool].size > e.first)
                fail(describe(prev->h) + " overlaps " + describe(e.second.h));
            prev = &e.second;
        }
        for (size_t i = 0; i < kPoolCount; i++) {
            std::ostringstream at;
            at << "pool '" << kPools[i].label << "' at checkpoint " << round;
            pk_pool_stats st = stats_of(pools_[i]);
            EXPECT_EQ(st.live, model[i]) << at.str() << ": stats.live against the objects the slots hold";
            if (kPools[i].limit) {
                EXPECT_LE(st.live, kPools[i].limit) << at.str();
                uint64_t a = 0, f = 0;
                for (auto &s : slots_) a += s->allocs[i], f += s->frees[i];
                /* a pool that locks on every call counts each object */
                EXPECT_EQ(st.taken, a) << at.str();
                EXPECT_EQ(st.returned, f) << at.str();
            }
            if (st.live != model[i]) failures_++;
            if (main_rng_.chance(35)) check_visit(i, all, at.str());
            if (main_rng_.chance(20)) {
                pk_pool_trim(pools_[i]);
                EXPECT_EQ(stats_of(pools_[i]).live, model[i]) << at.str() << ", after a trim";
            }
        }
        for (size_t i = 0; i < kPoolCount; i++) {
            if (!trackers_[i]) continue;
            EXPECT_EQ(trackers_[i]->violations(), "") << "checkpoint " << round;
        }
    }

    void check_visit(size_t pool, const std::map<uintptr_t, Where> &all, const std::string &at) {
        std::vector<void *> seen, want;
        pk_pool_visit(pools_[pool], collect, &seen);
        for (auto &e : all)
            if (e.second.h.pool == pool) want.push_back(e.second.h.obj);
        std::sort(seen.begin(), seen.end());
        std::sort(want.begin(), want.end());
        if (seen != want) {
            std::ostringstream os;
            os << at << ": pk_pool_visit saw " << seen.size() << " objects, the model holds " << want.size();
            fail(os.str());
        }
    }

    /* ---- the end: threads joined, everything freed ---- */

    void finish() {
        for (size_t i = 0; i < kPoolCount; i++) {
            const PoolSpec &ps = kPools[i];
            pk_pool_stats st = stats_of(pools_[i]);
            EXPECT_EQ(st.live, 0u) << ps.label << ": every object was freed and every thread has exited";
            /* Where threads exit, a thread that frees into a slab of one
             * gone takes the slab over, and its frees into it are then its
             * own (pool.h, remote_frees): the floor holds only without exits. */
            if (ps.counts_remote && !every_pool_debug() && !k_.exits) {
                uint64_t floor = 0;
                for (auto &s : slots_) floor += s->remote_floor[i];
                EXPECT_GE(st.remote_frees, floor)
                    << ps.label << ": objects threads freed beyond those they allocated";
            }
            pk_pool_trim(pools_[i]);
            st = stats_of(pools_[i]);
            EXPECT_EQ(st.taken, st.returned) << ps.label << ": after the trim no object is outside the slabs";
            EXPECT_EQ(st.slabs, 0u) << ps.label << ": slabs left after freeing everything and trimming";
            EXPECT_EQ(st.bytes_reserved, 0u) << ps.label;
        }
        {
            ErrorCapture errors;
            for (pk_pool *p : pools_) pk_pool_destroy(p);
            pools_.clear();
            for (const RecordedError &e : errors.errors())
                ADD_FAILURE() << "destroy reported " << e.what << ": " << e.message;
        }
        for (size_t i = 0; i < kPoolCount; i++) {
            if (!trackers_[i]) continue;
            EXPECT_EQ(trackers_[i]->constructs(), trackers_[i]->destructs()) << kPools[i].label;
            EXPECT_EQ(trackers_[i]->constructed_now(), 0u) << kPools[i].label;
            EXPECT_EQ(trackers_[i]->violations(), "") << kPools[i].label;
        }
    }

    Knobs k_;
    size_t steps_per_round_, total_steps_ = 0;
    Rng main_rng_{1};
    std::vector<pk_pool *> pools_;
    std::array<std::unique_ptr<HookTracker>, kPoolCount> trackers_;
    std::array<size_t, kPoolCount> aligns_{};
    std::vector<std::unique_ptr<Slot>> slots_;
    std::atomic<int> failures_{0};
    std::mutex bm_;
    std::condition_variable bcv_;
    size_t arrived_ = 0, done_ = 0;
    uint64_t generation_ = 0;
};

Knobs knobs(uint64_t seed, bool exits, bool pool_wide, size_t steps_per_round = 6000) {
    Knobs k;
    k.seed = seed_for(seed);
    k.slots = 4;
    k.rounds = 12;
    k.steps_per_round = steps_per_round;
    k.max_held = 300;
    k.exits = exits;
    k.pool_wide = pool_wide;
    return k;
}

}  // namespace

TEST(PoolModelThreads, HandOffsAndRemoteFreesMatchTheModel) {
    World(knobs(1, false, false)).run();
}

TEST(PoolModelThreads, ThreadsExitingMidRunLoseNothing) {
    World(knobs(2, true, false)).run();
}

TEST(PoolModelThreads, TrimReserveAndStatsRacingWithAllocationMatchTheModel) {
    World(knobs(3, false, true)).run();
}

TEST(PoolModelThreads, EverythingAtOnceStress) {
    World(knobs(4, true, true, 12000)).run();
}
