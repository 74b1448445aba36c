/* Pools against a model: long random sequences of alloc, free, alloc_bulk,
 * free_bulk, trim, reserve, visit, owner and stats, over many pool
 * configurations, each step checked against a plain record of what should
 * be live:
 *   - every object is aligned, owned by its pool, and overlaps no other live
 *     object;
 *   - each live object keeps the pattern written into it when it was handed
 *     out; PK_POOL_ZERO objects come out zeroed;
 *   - with hooks: construct ran before hand-out, at most once per stay, and a
 *     freed object comes back with the state its user left (HookTracker);
 *   - stats.live equals the model's count after every step; the limit holds;
 *   - after reserve(n), n allocations make no page request;
 *   - visit sees exactly the live objects;
 *   - at the end (all freed, trimmed, destroyed) construct and destruct
 *     counts match.
 * Fixed seeds: a failure names its configuration and step, and repeats.
 *
 * Beyond the small configurations: large working sets (up to 10^5 live
 * objects, 10^6 operations, frees in random order), and many pools at once
 * (operations spread over 1,000 pools of every kind, objects of all of them
 * checked against each other: no overlap, each owned by its own pool). */
#include "support.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <sstream>

using namespace pktest;

namespace {

struct ModelConfig {
    std::string label;
    size_t size = 64;
    size_t align = 0;
    unsigned flags = 0;
    bool hooks = false;
    size_t limit = 0;
    size_t reserve = 0;
    size_t max_live = 2000;
    size_t ops = 100000;
    uint64_t seed = 1;
    /* how the target live count moves: a new random target about every
     * target_every steps, a drain to 0 about every drain_every steps */
    size_t target_every = 2000;
    size_t drain_every = 5000;
    bool grow_first = false;       /* the first target is max_live */
    size_t full_check_every = 4096; /* steps between checks of every live object */
};

std::ostream &operator<<(std::ostream &os, const ModelConfig &c) {
    return os << c.label << " (size " << c.size << ", align " << c.align << ", flags " << c.flags
              << (c.hooks ? ", hooks" : "") << ", limit " << c.limit << ", reserve " << c.reserve << ", seed "
              << c.seed << ")";
}

/* This thread's own bookkeeping is made on its first call; made here, it
 * does not count against the page-request checks below (a test of its own
 * covers it: test_pool.cc, PoolReserve). */
void warm_up_thread() {
    pk_pool_config c = make_config(8);
    pk_pool *p = pk_pool_create(&c);
    pk_pool_free(p, pk_pool_alloc(p));
    pk_pool_destroy(p);
}

/* The live objects of every pool in a test, by address (with their sizes):
 * objects of different pools must not overlap either. */
using AllLive = std::map<uintptr_t, size_t>;

class PoolModel {
  public:
    explicit PoolModel(const ModelConfig &c, AllLive *all = nullptr)
        : cfg_(c), tracker_(c.size), rng_(c.seed),
          align_(c.align ? c.align : natural_align(c.size, c.hooks)), all_(all) {}

    /* Runs the whole sequence; stops at the first failed check. */
    void run() {
        ASSERT_NO_FATAL_FAILURE(start());
        const size_t ops = scaled(cfg_.ops, 2000);
        while (step_ < ops) ASSERT_NO_FATAL_FAILURE(step());
        ASSERT_NO_FATAL_FAILURE(finish());
    }

    /* Makes the pool (and checks config.reserve). */
    void start() {
        warm_up_thread();
        pk_pool_config pc = make_config(cfg_.size, cfg_.align, cfg_.flags, "model");
        pc.limit = cfg_.limit;
        pc.reserve = cfg_.reserve;
        if (cfg_.hooks) tracker_.install(pc);
        errno = 0;
        pool_ = pk_pool_create(&pc);
        ASSERT_NE(pool_, nullptr) << "create failed, errno " << errno;
        ASSERT_NO_FATAL_FAILURE(check_stats());

        if (cfg_.reserve) {
            ASSERT_NO_FATAL_FAILURE(allocs_without_page_requests(cfg_.reserve, "config.reserve"));
        }
        target_ = rng_.below(cfg_.max_live + 1);
        if (cfg_.grow_first) target_ = cfg_.max_live;
    }

    /* One random operation, then the checks. */
    void step() {
        if (rng_.below(cfg_.target_every) == 0) target_ = rng_.below(cfg_.max_live + 1);
        if (rng_.below(cfg_.drain_every) == 0) target_ = 0; /* drain now and then so slabs empty */
        ASSERT_NO_FATAL_FAILURE(one_step(target_));
        ASSERT_NO_FATAL_FAILURE(check_live_count());
        if (step_ % cfg_.full_check_every == 0) {
            ASSERT_NO_FATAL_FAILURE(check_all_contents());
        }
        step_++;
    }

    /* Checks everything, frees everything, trims and destroys the pool. */
    void finish() {
        ASSERT_NO_FATAL_FAILURE(check_all_contents());
        ASSERT_NO_FATAL_FAILURE(do_visit());
        while (!live_.empty()) ASSERT_NO_FATAL_FAILURE(free_one(random_live()));
        pk_pool_trim(pool_);
        pk_pool_stats s = stats_of(pool_);
        EXPECT_EQ(s.live, 0u) << where();
        EXPECT_LE(s.slabs, 1u) << where() << ": slabs left after freeing everything and trimming";
        pk_pool_destroy(pool_);
        pool_ = nullptr;
        if (cfg_.hooks) {
            EXPECT_EQ(tracker_.constructs(), tracker_.destructs()) << where();
            EXPECT_EQ(tracker_.constructed_now(), 0u) << where();
            EXPECT_EQ(tracker_.violations(), "") << where();
        }
    }

    ~PoolModel() {
        if (pool_) {
            for (auto &e : live_) {
                pk_pool_free(pool_, reinterpret_cast<void *>(e.first));
                if (all_) all_->erase(e.first);
            }
            pk_pool_destroy(pool_);
        }
    }

  private:
    std::string where() const {
        std::ostringstream os;
        os << cfg_ << " step " << step_ << " live " << live_.size();
        return os.str();
    }

    void one_step(size_t target) {
        bool grow = live_.size() < target;
        unsigned r = static_cast<unsigned>(rng_.below(1000));
        if (r < 430) {
            /* mostly toward the target, sometimes against it */
            bool alloc = grow || live_.empty() || r < 150;
            ASSERT_NO_FATAL_FAILURE(alloc ? alloc_one() : free_random());
        } else if (r < 860) {
            bool free = !live_.empty() && (!grow || r < 600);
            ASSERT_NO_FATAL_FAILURE(free ? free_random() : alloc_one());
        } else if (r < 920) {
            size_t n = 1 + rng_.below(64);
            ASSERT_NO_FATAL_FAILURE(grow ? alloc_bulk(n) : free_bulk(n));
        } else if (r < 950) {
            ASSERT_NO_FATAL_FAILURE(check_owner());
        } else if (r < 975) {
            ASSERT_NO_FATAL_FAILURE(check_stats());
        } else if (r < 985) {
            ASSERT_NO_FATAL_FAILURE(free_bulk(1 + rng_.below(16)));
        } else if (r < 992) {
            ASSERT_NO_FATAL_FAILURE(do_trim());
        } else if (r < 997) {
            ASSERT_NO_FATAL_FAILURE(do_reserve(1 + rng_.below(300)));
        } else if (live_.size() <= 5000 || rng_.below(live_.size() / 5000) == 0) {
            /* a visit costs O(live): about as often per object with large sets */
            ASSERT_NO_FATAL_FAILURE(do_visit());
        }
    }

    bool at_limit() const { return cfg_.limit && live_.size() >= cfg_.limit; }

    /* Every check on an object just handed out, then writes its pattern. */
    void accept(void *o) {
        ASSERT_NE(o, nullptr) << where();
        uintptr_t a = reinterpret_cast<uintptr_t>(o);
        ASSERT_TRUE(aligned_to(o, align_)) << where() << ": " << o << " not aligned to " << align_;
        ASSERT_EQ(live_.count(a), 0u) << where() << ": " << o << " handed out while live";
        if (all_) {
            auto n = all_->lower_bound(a);
            if (n != all_->end()) {
                ASSERT_LE(a + cfg_.size, n->first)
                    << where() << ": " << o << " overlaps a live object of another pool, "
                    << ptr_str(reinterpret_cast<void *>(n->first));
            }
            if (n != all_->begin()) {
                auto p = std::prev(n);
                ASSERT_LE(p->first + p->second, a)
                    << where() << ": " << o << " overlaps a live object of another pool, "
                    << ptr_str(reinterpret_cast<void *>(p->first));
            }
        }
        auto next = live_.lower_bound(a);
        if (next != live_.end()) {
            ASSERT_LE(a + cfg_.size, next->first) << where() << ": " << o << " overlaps the next live object";
        }
        if (next != live_.begin()) {
            auto prev = std::prev(next);
            ASSERT_LE(prev->first + cfg_.size, a) << where() << ": " << o << " overlaps the previous live object";
        }
        if (cfg_.flags & PK_POOL_ZERO) {
            ASSERT_TRUE(all_bytes(o, cfg_.size, 0)) << where() << ": not zeroed";
        }
        if (cfg_.hooks) {
            ASSERT_EQ(tracker_.check_handed_out(o), "") << where() << ": " << o;
        }
        uint64_t key = next_key_++;
        fill_pattern(o, cfg_.size, key);
        if (cfg_.hooks) tracker_.set_state(o, key);
        live_[a] = Live{key, picks_.size()};
        picks_.push_back(a);
        if (all_) (*all_)[a] = cfg_.size;
    }

    void forget(uintptr_t a) {
        auto it = live_.find(a);
        uintptr_t last = picks_.back();
        picks_[it->second.at] = last;
        live_[last].at = it->second.at;
        picks_.pop_back();
        live_.erase(it);
        if (all_) all_->erase(a);
    }

    void alloc_one() {
        errno = 0;
        void *o = pk_pool_alloc(pool_);
        if (at_limit()) {
            ASSERT_EQ(o, nullptr) << where() << ": allocation past the limit";
            ASSERT_EQ(errno, ENOMEM) << where();
            return;
        }
        ASSERT_NO_FATAL_FAILURE(accept(o));
    }

    void free_one(uintptr_t a) {
        auto it = live_.find(a);
        ASSERT_NE(it, live_.end());
        size_t bad = check_pattern(reinterpret_cast<void *>(a), cfg_.size, it->second.key);
        ASSERT_EQ(bad, cfg_.size) << where() << ": contents of " << reinterpret_cast<void *>(a)
                                  << " changed at byte " << bad;
        forget(a);
        pk_pool_free(pool_, reinterpret_cast<void *>(a));
    }

    /* A live object, each as likely as any other (through picks_: a random
     * key's neighbour in live_ would almost always be its lowest address). */
    uintptr_t random_live() { return picks_[rng_.below(picks_.size())]; }

    void free_random() {
        if (live_.empty()) return;
        ASSERT_NO_FATAL_FAILURE(free_one(random_live()));
    }

    void alloc_bulk(size_t n) {
        std::vector<void *> objs(n, nullptr);
        size_t room = cfg_.limit ? (cfg_.limit > live_.size() ? cfg_.limit - live_.size() : 0) : n;
        size_t want = std::min(n, room);
        errno = 0;
        size_t got = pk_pool_alloc_bulk(pool_, objs.data(), n);
        ASSERT_EQ(got, want) << where() << ": alloc_bulk(" << n << ")";
        if (got < n) {
            ASSERT_EQ(errno, ENOMEM) << where();
        }
        for (size_t i = 0; i < got; i++) ASSERT_NO_FATAL_FAILURE(accept(objs[i]));
    }

    void free_bulk(size_t n) {
        std::vector<void *> objs;
        std::set<uintptr_t> picked;
        while (objs.size() < std::min(n, live_.size())) {
            uintptr_t a = random_live();
            if (picked.insert(a).second) objs.push_back(reinterpret_cast<void *>(a));
        }
        /* half the time in address order, as a program that frees what it
         * made in a row: runs of one slab, which go home in one move */
        if (rng_.chance(50)) std::sort(objs.begin(), objs.end());
        for (void *o : objs) {
            auto it = live_.find(reinterpret_cast<uintptr_t>(o));
            size_t bad = check_pattern(o, cfg_.size, it->second.key);
            ASSERT_EQ(bad, cfg_.size) << where() << ": contents of " << o << " changed at byte " << bad;
            forget(it->first);
        }
        pk_pool_free_bulk(pool_, objs.data(), objs.size());
    }

    void check_owner() {
        if (live_.empty()) return;
        uintptr_t a = random_live();
        ASSERT_EQ(pk_pool_owner(reinterpret_cast<void *>(a)), pool_) << where();
        if (cfg_.size > 1) {
            ASSERT_EQ(pk_pool_owner(reinterpret_cast<void *>(a + 1 + rng_.below(cfg_.size - 1))), nullptr)
                << where() << ": interior pointer owned";
        }
    }

    void check_live_count() {
        pk_pool_stats s = stats_of(pool_);
        ASSERT_EQ(s.live, live_.size()) << where();
    }

    void check_stats() {
        pk_pool_stats s = stats_of(pool_);
        ASSERT_EQ(s.live, live_.size()) << where();
        ASSERT_STREQ(s.name, "model") << where();
        ASSERT_EQ(s.align, align_) << where();
        ASSERT_GE(s.size, cfg_.size) << where();
        ASSERT_GE(s.bytes_reserved, live_.size() * cfg_.size) << where();
        ASSERT_GE(s.peak_live, live_.size()) << where();
        ASSERT_GE(s.taken, s.returned) << where();
        ASSERT_GE(s.taken - s.returned, live_.size()) << where();
        if (!live_.empty()) {
            ASSERT_GE(s.slabs, 1u) << where();
        }
        if (cfg_.limit) {
            ASSERT_LE(s.live, cfg_.limit) << where();
        }
    }

    void do_trim() {
        pk_pool_stats before = stats_of(pool_);
        size_t released = pk_pool_trim(pool_);
        pk_pool_stats after = stats_of(pool_);
        ASSERT_EQ(after.live, live_.size()) << where();
        ASSERT_EQ(released, before.bytes_reserved - after.bytes_reserved) << where() << ": trim's return";
        if (live_.empty()) {
            ASSERT_LE(after.slabs, 1u) << where();
        }
        /* a second trim has nothing left to give */
        ASSERT_EQ(pk_pool_trim(pool_), 0u) << where();
    }

    /* The next n allocations (or as many as the limit lets through) make no
     * page request. */
    void allocs_without_page_requests(size_t n, const char *why) {
        if (cfg_.limit) n = std::min(n, cfg_.limit - std::min(cfg_.limit, live_.size()));
        unsigned long before = pk_fault_requests();
        for (size_t i = 0; i < n; i++) {
            ASSERT_NO_FATAL_FAILURE(alloc_one());
            ASSERT_EQ(pk_fault_requests(), before)
                << where() << ": allocation " << i << " of " << n << " after " << why << " asked for pages";
        }
    }

    void do_reserve(size_t n) {
        errno = 0;
        size_t ready = pk_pool_reserve(pool_, n);
        if (!cfg_.limit) {
            ASSERT_GE(ready, n) << where() << ": reserve(" << n << ")";
        }
        if (ready < n) {
            ASSERT_EQ(errno, ENOMEM) << where() << ": reserve(" << n << ") returned " << ready;
        }
        ASSERT_NO_FATAL_FAILURE(allocs_without_page_requests(std::min(ready, n), "reserve"));
    }

    static void collect(void *obj, void *arg) {
        static_cast<std::vector<uintptr_t> *>(arg)->push_back(reinterpret_cast<uintptr_t>(obj));
    }

    void do_visit() {
        std::vector<uintptr_t> seen;
        pk_pool_visit(pool_, collect, &seen);
        std::sort(seen.begin(), seen.end());
        std::vector<uintptr_t> want;
        want.reserve(live_.size());
        for (auto &e : live_) want.push_back(e.first);
        ASSERT_EQ(seen.size(), want.size()) << where() << ": visit count";
        ASSERT_TRUE(seen == want) << where() << ": visit saw other objects than the live ones";
    }

    void check_all_contents() {
        for (auto &e : live_) {
            size_t bad = check_pattern(reinterpret_cast<void *>(e.first), cfg_.size, e.second.key);
            ASSERT_EQ(bad, cfg_.size) << where() << ": contents of " << reinterpret_cast<void *>(e.first)
                                      << " changed at byte " << bad;
        }
    }

    ModelConfig cfg_;
    HookTracker tracker_;
    Rng rng_;
    size_t align_;
    pk_pool *pool_ = nullptr;
    AllLive *all_;
    /* The live objects by address (overlap checks, visit), each with the
     * key of its pattern and its place in picks_, the same addresses in no
     * order, for uniform random picks. */
    struct Live {
        uint64_t key;
        size_t at;
    };
    std::map<uintptr_t, Live> live_;
    std::vector<uintptr_t> picks_;
    uint64_t next_key_ = 1;
    size_t step_ = 0;
    size_t target_ = 0;
};

ModelConfig cfg(const char *label, size_t size, size_t align = 0, unsigned flags = 0, bool hooks = false,
                size_t limit = 0, size_t reserve = 0, size_t max_live = 2000, uint64_t seed = 1) {
    ModelConfig c;
    c.label = label;
    c.size = size;
    c.align = align;
    c.flags = flags;
    c.hooks = hooks;
    c.limit = limit;
    c.reserve = reserve;
    c.max_live = max_live;
    c.seed = seed;
    return c;
}

ModelConfig with_ops(ModelConfig c, size_t ops) {
    c.ops = ops;
    return c;
}

const unsigned ZERO = PK_POOL_ZERO, LOCAL = PK_POOL_LOCAL, DEBUG = PK_POOL_DEBUG, HARD = PK_POOL_HARDENED;

std::vector<ModelConfig> fixed_configs() {
    return {
        cfg("Size1", 1),
        cfg("Size8", 8, 0, 0, false, 0, 0, 5000, 2),
        cfg("Size24", 24, 0, 0, false, 0, 0, 3000, 3),
        cfg("Size48Align16Zero", 48, 16, ZERO, false, 0, 0, 2000, 4),
        cfg("Size100Align4Hooks", 100, 4, 0, true, 0, 0, 2000, 5),
        cfg("Size200Align64", 200, 64, 0, false, 0, 0, 3000, 6),
        cfg("Size4096Align4096", 4096, 4096, 0, false, 0, 0, 600, 7),
        cfg("Size1000Debug", 1000, 0, DEBUG, false, 0, 0, 1000, 8),
        cfg("Size64Hardened", 64, 0, HARD, false, 0, 0, 3000, 9),
        cfg("Size32Local", 32, 0, LOCAL, false, 0, 0, 3000, 10),
        cfg("Size128Limit500", 128, 0, 0, false, 500, 0, 700, 11),
        cfg("Size72DebugHardenedHooksLimit300", 72, 0, DEBUG | HARD, true, 300, 0, 400, 12),
        cfg("Size333ZeroLocalDebug", 333, 0, ZERO | LOCAL | DEBUG, false, 0, 0, 1000, 13),
        cfg("Size16Reserve1000", 16, 0, 0, false, 0, 1000, 2000, 14),
        cfg("Size3000Align128HooksLocal", 3000, 128, LOCAL, true, 0, 0, 500, 15),
        cfg("Size2DebugZero", 2, 0, DEBUG | ZERO, false, 0, 0, 2000, 16),
        cfg("Size4095HardenedZero", 4095, 0, HARD | ZERO, false, 0, 50, 400, 17),
        cfg("Size40HooksHardened", 40, 0, HARD, true, 0, 0, 2000, 18),
        cfg("Size56DebugHooks", 56, 8, DEBUG, true, 0, 0, 1500, 19),
        cfg("Size9Align1LocalHardened", 9, 1, LOCAL | HARD, false, 0, 0, 3000, 20),
        cfg("Size256Limit1", 256, 0, 0, false, 1, 0, 3, 21),
        with_ops(cfg("Size70000", 70000, 0, 0, false, 0, 0, 40, 22), 10000),
        with_ops(cfg("Size20000HooksLimit30Reserve2", 20000, 0, 0, true, 30, 2, 40, 23), 20000),
    };
}

/* Configurations drawn from seeds: any size 1..4096, any alignment, any mix
 * of flags and hooks, sometimes a limit or a reserve. */
std::vector<ModelConfig> random_configs() {
    std::vector<ModelConfig> v;
    for (uint64_t seed = 100; seed < 112; seed++) {
        Rng r(seed);
        ModelConfig c;
        c.seed = seed;
        c.size = 1 + r.below(size_t(1) << (1 + r.below(12)));
        if (c.size > 4096) c.size = 4096;
        c.align = r.chance(40) ? 0 : size_t(1) << r.below(13);
        c.flags = static_cast<unsigned>(r.below(16));
        if ((c.flags & PK_POOL_HARDENED) && r.chance(50)) c.flags |= PK_POOL_SHUFFLE;
        c.hooks = !(c.flags & PK_POOL_ZERO) && r.chance(40);
        c.limit = r.chance(25) ? 1 + r.below(1500) : 0;
        c.reserve = r.chance(25) ? r.below(2000) : 0;
        size_t cap = std::min<size_t>(3000, std::max<size_t>(10, 4000000 / (c.size + 64)));
        c.max_live = 1 + r.below(cap);
        c.label = "Random" + std::to_string(seed);
        v.push_back(c);
    }
    return v;
}

class PoolModelTest : public ::testing::TestWithParam<ModelConfig> {};

TEST_P(PoolModelTest, RandomSequenceMatchesTheModel) {
    PoolModel m(GetParam());
    m.run();
}

std::string config_name(const ::testing::TestParamInfo<ModelConfig> &info) { return info.param.label; }

INSTANTIATE_TEST_SUITE_P(Fixed, PoolModelTest, ::testing::ValuesIn(fixed_configs()), config_name);
INSTANTIATE_TEST_SUITE_P(Seeded, PoolModelTest, ::testing::ValuesIn(random_configs()), config_name);

/* ======================================================================
 * Large working sets: up to 10^5 live objects, 10^6 operations
 * ==================================================================== */

/* The live count climbs to max_live first, then wanders between random
 * targets held for about max_live steps each, with a full drain now and
 * then; frees pick live objects at random, so slabs empty in any order. */
ModelConfig large(const char *label, size_t size, size_t max_live, size_t ops, unsigned flags = 0,
                  bool hooks = false, uint64_t seed = 1) {
    ModelConfig c = cfg(label, size, 0, flags, hooks, 0, 0, max_live, seed);
    c.ops = ops;
    c.grow_first = true;
    c.target_every = max_live;
    c.drain_every = 4 * max_live;
    c.full_check_every = std::max<size_t>(4096, max_live / 2);
    return c;
}

std::vector<ModelConfig> large_configs() {
    return {
        large("Size48Live100k", 48, 100000, 1000000, 0, false, 31),
        large("Size8Live100k", 8, 100000, 400000, 0, false, 32),
        large("Size200HooksLive50k", 200, 50000, 250000, 0, true, 33),
        large("Size64HardenedLive100k", 64, 100000, 400000, HARD, false, 34),
        large("Size1000DebugLive20k", 1000, 20000, 150000, DEBUG, false, 35),
        large("Size32LocalLive100k", 32, 100000, 400000, LOCAL, false, 36),
        large("Size4096Live10k", 4096, 10000, 100000, 0, false, 37),
    };
}

INSTANTIATE_TEST_SUITE_P(Large, PoolModelTest, ::testing::ValuesIn(large_configs()), config_name);

/* ======================================================================
 * Many pools at once
 * ==================================================================== */

/* A configuration drawn from a seed, as random_configs() draws them, with
 * a small working set. */
ModelConfig small_random_config(uint64_t seed, size_t index) {
    Rng r(seed);
    ModelConfig c;
    c.seed = seed;
    c.size = 1 + r.below(size_t(1) << (1 + r.below(12)));
    if (c.size > 4096) c.size = 4096;
    c.align = r.chance(40) ? 0 : size_t(1) << r.below(13);
    c.flags = static_cast<unsigned>(r.below(16));
    if ((c.flags & PK_POOL_HARDENED) && r.chance(50)) c.flags |= PK_POOL_SHUFFLE;
    c.hooks = !(c.flags & PK_POOL_ZERO) && r.chance(30);
    c.limit = r.chance(15) ? 1 + r.below(200) : 0;
    c.reserve = r.chance(15) ? r.below(300) : 0;
    if (c.limit && c.reserve > c.limit) c.reserve = c.limit; /* else the reserve cannot be made */
    c.max_live = 1 + r.below(std::min<size_t>(300, std::max<size_t>(4, 400000 / (c.size + 64))));
    c.target_every = 200;
    c.drain_every = 1000;
    c.label = "Pool" + std::to_string(index);
    return c;
}

/* Operations spread over `pools` pools, each checked against its own model
 * after every step, objects of all pools against each other; the pool for
 * each step is drawn at random, half the time from a few busy ones. */
void run_many_pools(size_t pools, size_t ops, uint64_t seed) {
    AllLive all;
    std::vector<std::unique_ptr<PoolModel>> models;
    for (size_t i = 0; i < pools; i++) {
        models.emplace_back(new PoolModel(small_random_config(seed * 100000 + i, i), &all));
        ASSERT_NO_FATAL_FAILURE(models.back()->start());
    }
    Rng pick(seed);
    const size_t busy = std::max<size_t>(1, pools / 50);
    size_t most_live = 0;
    for (size_t s = 0; s < ops; s++) {
        size_t i = pick.chance(50) ? pick.below(busy) : pick.below(pools);
        ASSERT_NO_FATAL_FAILURE(models[i]->step());
        most_live = std::max(most_live, all.size());
    }
    EXPECT_GT(most_live, pools) << "the pools held objects at once";
    for (auto &m : models) ASSERT_NO_FATAL_FAILURE(m->finish());
    EXPECT_TRUE(all.empty());
}

TEST(PoolModelManyPools, OperationsSpreadOverAThousandPoolsMatchTheModels) {
    run_many_pools(1000, scaled(500000, 20000), 7);
}

TEST(PoolModelManyPools, OperationsSpreadOverAHundredPoolsMatchTheModels) {
    run_many_pools(100, scaled(200000, 10000), 8);
}

}  // namespace
