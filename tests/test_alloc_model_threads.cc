/* The size-class front end against a model, with several threads at once.
 * Each slot's thread runs a seeded random walk of pk_alloc, pk_calloc,
 * pk_aligned_alloc, pk_realloc, pk_free and pk_free_sized over sizes from 0
 * to past the last class, and keeps a model of the blocks it holds; blocks
 * travel between slots through mailboxes, so most frees and reallocs happen
 * on a thread other than the one that allocated the block. Every block
 * carries a pattern keyed by a serial, written when it is made or resized
 * and checked before it is resized, passed on or freed.
 *
 * At checkpoints every slot waits at a barrier and the main thread checks
 * the world against the models: every class pool's live count equals the
 * blocks of its class the slots and mailboxes hold, the report's mapped
 * blocks equal the large ones, no two held blocks overlap and each still
 * holds its pattern. At some checkpoints a slot's thread exits and a new
 * thread takes over its model, so blocks of a thread gone are freed by
 * others. At the end the workers free everything, and every class pool is
 * at live 0.
 *
 * POOLKIT_TEST_SEED=<n> replays each thread's sequence of operations (not
 * the interleaving, which the scheduler picks); step counts follow
 * POOLKIT_TEST_SCALE (support.h). */
#include "support.h"

#include <poolkit/alloc.h>
#include <poolkit/stats.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

using namespace pktest;

namespace {

constexpr int kSlots = 4;

struct Held {
    void *p;
    size_t size;
    uint64_t key;
    bool aligned;
};

size_t draw_size(Rng &rng) {
    unsigned r = static_cast<unsigned>(rng.below(1000));
    if (r < 600) return rng.below(129);
    if (r < 900) return rng.below(2049);
    if (r < 997) return rng.below(70000);
    return PK_ALLOC_CLASS_MAX + rng.below(200000);
}

class World {
  public:
    explicit World(uint64_t seed) : seed_(seed) {}
    /* A failed check returns from run with the workers parked: they are
     * let go (each frees what it holds) and joined. */
    ~World() {
        bool any = false;
        for (auto &s : slot_) any |= s.thread.joinable();
        if (!any) return;
        wait_all_parked();
        for (auto &s : slot_) s.drain = true;
        release_all();
        for (auto &s : slot_)
            if (s.thread.joinable()) s.thread.join();
    }

    void run(size_t steps_per_phase, int phases) {
        for (int s = 0; s < kSlots; s++) slot_[s].rng = Rng(seed_ * 100 + static_cast<uint64_t>(s));
        for (int s = 0; s < kSlots; s++) start(s, steps_per_phase);
        for (int ph = 0; ph < phases; ph++) {
            wait_all_parked();
            ASSERT_NO_FATAL_FAILURE(check("phase " + std::to_string(ph)));
            /* One slot's thread exits at this checkpoint; a new one takes over. */
            int quit = ph % kSlots;
            slot_[quit].stop = true;
            release_all();
            slot_[quit].thread.join();
            slot_[quit].stop = false;
            start(quit, steps_per_phase);
        }
        wait_all_parked();
        ASSERT_NO_FATAL_FAILURE(check("last phase"));
        for (int s = 0; s < kSlots; s++) slot_[s].drain = true;
        release_all();
        for (int s = 0; s < kSlots; s++) slot_[s].thread.join();
        for (auto &s : slot_) ASSERT_EQ(s.failure, "") << s.failure;
        ASSERT_NO_FATAL_FAILURE(check("the end"));
    }

  private:
    struct Slot {
        std::thread thread;
        Rng rng{1};
        std::vector<Held> held;
        std::mutex box_lock;
        std::vector<Held> box;
        std::string failure;
        bool stop = false, drain = false;
    };

    void start(int s, size_t steps) {
        slot_[s].thread = std::thread([this, s, steps] { worker(s, steps); });
    }

    /* ---- the barrier ---- */
    void park() {
        std::unique_lock<std::mutex> g(m_);
        parked_++;
        cv_.notify_all();
        uint64_t gen = gen_;
        cv_.wait(g, [&] { return gen_ != gen; });
    }
    void wait_all_parked() {
        std::unique_lock<std::mutex> g(m_);
        cv_.wait(g, [&] { return parked_ == kSlots; });
    }
    void release_all() {
        std::lock_guard<std::mutex> g(m_);
        parked_ = 0;
        gen_++;
        cv_.notify_all();
    }

    /* ---- a slot's walk ---- */
    bool checked(const Held &h, Slot &me, const char *when) {
        size_t at = check_pattern(h.p, h.size, h.key);
        if (at != h.size && me.failure.empty())
            me.failure = std::string("block ") + ptr_str(h.p) + " of " + std::to_string(h.size) +
                         " bytes changed at byte " + std::to_string(at) + " (" + when + ")";
        return at == h.size;
    }

    Held make(Slot &me) {
        size_t size = draw_size(me.rng);
        unsigned how = static_cast<unsigned>(me.rng.below(10));
        Held h{nullptr, size, me.rng.next(), false};
        if (how < 6) {
            h.p = pk_alloc(size);
        } else if (how < 8) {
            h.p = pk_calloc(size, 1);
            if (h.p && !all_bytes(h.p, size, 0) && me.failure.empty()) me.failure = "pk_calloc's block not zero";
        } else {
            size_t align = size_t(1) << me.rng.below(13);
            h.p = pk_aligned_alloc(align, size);
            h.aligned = true;
            if (!aligned_to(h.p, align) && me.failure.empty()) me.failure = "pk_aligned_alloc misaligned";
        }
        if (!h.p && me.failure.empty()) me.failure = "allocation of " + std::to_string(size) + " failed";
        if (h.p) fill_pattern(h.p, size, h.key);
        return h;
    }

    void drop(Slot &me, const Held &h) {
        checked(h, me, "freed");
        if (!h.aligned && me.rng.chance(50)) pk_free_sized(h.p, h.size);
        else pk_free(h.p);
    }

    void step(int s) {
        Slot &me = slot_[s];
        unsigned op = static_cast<unsigned>(me.rng.below(100));
        if (op < 40 || me.held.empty()) {
            Held h = make(me);
            if (h.p) me.held.push_back(h);
            return;
        }
        size_t i = me.rng.below(me.held.size());
        Held h = me.held[i];
        if (op < 65) { /* free */
            me.held[i] = me.held.back();
            me.held.pop_back();
            drop(me, h);
        } else if (op < 80) { /* resize, often a block allocated elsewhere */
            if (!checked(h, me, "resized")) return;
            size_t to = me.rng.chance(50) ? 1 + draw_size(me.rng) : 1 + h.size + me.rng.below(100);
            void *q = pk_realloc(h.p, to);
            if (!q) {
                if (me.failure.empty())
                    me.failure = "pk_realloc(" + ptr_str(h.p) + ", " + std::to_string(to) + ") of a block of " +
                                 std::to_string(h.size) + " failed: " + std::strerror(errno);
                return;
            }
            size_t keep = h.size < to ? h.size : to;
            if (check_pattern(q, keep, h.key) != keep && me.failure.empty()) me.failure = "pk_realloc lost bytes";
            Held n{q, to, me.rng.next(), false};
            fill_pattern(q, to, n.key);
            me.held[i] = n;
        } else if (op < 95) { /* pass on */
            if (!checked(h, me, "passed on")) return;
            me.held[i] = me.held.back();
            me.held.pop_back();
            Slot &to = slot_[(s + 1 + static_cast<int>(me.rng.below(kSlots - 1))) % kSlots];
            std::lock_guard<std::mutex> g(to.box_lock);
            to.box.push_back(h);
        } else { /* take what others passed */
            std::lock_guard<std::mutex> g(me.box_lock);
            for (Held &b : me.box)
                if (checked(b, me, "received")) me.held.push_back(b);
            me.box.clear();
        }
    }

    void worker(int s, size_t steps) {
        Slot &me = slot_[s];
        for (;;) {
            size_t cap = 400;
            for (size_t k = 0; k < steps; k++) {
                step(s);
                while (me.held.size() > cap) { /* keep the live set bounded */
                    Held h = me.held.back();
                    me.held.pop_back();
                    drop(me, h);
                }
            }
            park();
            if (me.stop) return;
            if (me.drain) {
                std::lock_guard<std::mutex> g(me.box_lock);
                for (Held &h : me.held) drop(me, h);
                for (Held &h : me.box) drop(me, h);
                me.held.clear();
                me.box.clear();
                return;
            }
        }
    }

    /* ---- the main thread's check, every slot parked ---- */
    void check(const std::string &when) {
        for (auto &s : slot_) ASSERT_EQ(s.failure, "") << when << ": " << s.failure;
        std::map<uintptr_t, size_t> all;
        std::map<pk_pool *, size_t> want;
        size_t large = 0;
        for (auto &s : slot_) {
            std::lock_guard<std::mutex> g(s.box_lock);
            for (auto *list : {&s.held, &s.box})
                for (Held &h : *list) {
                    ASSERT_EQ(check_pattern(h.p, h.size, h.key), h.size) << when << ": " << ptr_str(h.p);
                    all[reinterpret_cast<uintptr_t>(h.p)] = h.size ? h.size : 1;
                    if (pk_pool *p = pk_pool_owner(h.p)) want[p]++;
                    else if (!hardened_ || h.size != 0) large++; /* hardened size 0: no memory */
                }
        }
        uintptr_t end = 0;
        for (auto &e : all) {
            ASSERT_LE(end, e.first) << when << ": blocks overlap at " << e.first;
            end = e.first + e.second;
        }
        for (size_t s : alloc_classes()) {
            void *probe = pk_alloc(s);
            pk_pool *p = pk_pool_owner(probe);
            pk_free(probe);
            /* hardened, the front end holds blocks back (its quarantine,
             * each slab's first slot), and maps its largest blocks alone */
            if (hardened_ && !p) break;
            if (hardened_) {
                ASSERT_GE(stats_of(p).live, want[p]) << when << ": class " << s;
            } else {
                ASSERT_EQ(stats_of(p).live, want[p]) << when << ": class " << s;
            }
        }
        ASSERT_EQ(mapped_blocks(), large) << when << ": mapped blocks";
    }

    uint64_t seed_;
    const bool hardened_ = env_on("POOLKIT_HARDENED");
    Slot slot_[kSlots];
    std::mutex m_;
    std::condition_variable cv_;
    int parked_ = 0;
    uint64_t gen_ = 0;
};

uint64_t seed() {
    const char *v = std::getenv("POOLKIT_TEST_SEED");
    uint64_t s = v && *v ? std::strtoull(v, nullptr, 10) : 7;
    std::printf("POOLKIT_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
    return s;
}

TEST(AllocModelThreads, BlocksPassedBetweenThreadsMatchTheModels) {
    World w(seed());
    ASSERT_NO_FATAL_FAILURE(w.run(scaled(6000, 300), 8));
}

} // namespace
