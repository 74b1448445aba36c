/* The size-class front end against a model: long random sequences of
 * pk_alloc, pk_calloc, pk_aligned_alloc, pk_realloc, pk_free and
 * pk_free_sized over sizes from 0 to past the last class, each step checked
 * against a plain record of what should be live:
 *   - every block is aligned as asked (16, or 8 up to 8 bytes), holds at
 *     least its size (pk_usable_size), and overlaps no other live block;
 *   - each live block keeps the pattern written into it; pk_calloc's comes
 *     out zeroed; pk_realloc keeps the smaller of the two sizes;
 *   - at checkpoints, each class pool's live count (pk_pool_stats_get)
 *     equals the model's count of its blocks, and the mapped blocks the
 *     report counts equal the model's large ones;
 *   - at the end, everything freed, every class pool is at live 0.
 * Fixed seeds; a failure names its seed and step. The same program runs
 * with POOLKIT_HARDENED=1 and POOLKIT_DEBUG=1 (tests/CMakeLists.txt:
 * alloc_model.hardened, alloc_model.debug), which apply to the class pools
 * of the whole process. */
#include "support.h"

#include <poolkit/alloc.h>
#include <poolkit/stats.h>

#include <map>

using namespace pktest;

namespace {

struct Block {
    size_t size, align;
    uint64_t key;
    bool aligned; /* from pk_aligned_alloc: freed by pk_free alone (alloc.h) */
};

/* A size: mostly small, as programs allocate, some medium, a few past the
 * last class. */
size_t draw_size(Rng &rng) {
    unsigned r = static_cast<unsigned>(rng.below(1000));
    if (r < 600) return rng.below(129);
    if (r < 900) return rng.below(2049);
    if (r < 997) return rng.below(70000);
    return PK_ALLOC_CLASS_MAX - 4096 + rng.below(300000);
}

class AllocModel {
  public:
    explicit AllocModel(uint64_t seed) : rng_(seed), seed_(seed) {}

    void run(size_t steps, size_t max_live) {
        for (step_ = 0; step_ < steps; step_++) {
            bool grow = live_.size() < max_live / 2 || (live_.size() < max_live && rng_.chance(50));
            if (live_.empty() || grow) {
                ASSERT_NO_FATAL_FAILURE(allocate());
            } else if (rng_.chance(30)) {
                ASSERT_NO_FATAL_FAILURE(resize());
            } else {
                ASSERT_NO_FATAL_FAILURE(release());
            }
            if (step_ % 4096 == 4095) {
                ASSERT_NO_FATAL_FAILURE(check_counts());
            }
        }
        ASSERT_NO_FATAL_FAILURE(check_counts());
        while (!live_.empty()) ASSERT_NO_FATAL_FAILURE(release());
        ASSERT_NO_FATAL_FAILURE(check_counts());
    }

  private:
    std::string where() const { return "seed " + std::to_string(seed_) + " step " + std::to_string(step_); }

    void add(void *p, size_t size, size_t align, bool zeroed, bool aligned = false) {
        ASSERT_NE(p, nullptr) << where() << ": size " << size;
        ASSERT_TRUE(aligned_to(p, align)) << where() << ": " << ptr_str(p) << " not aligned to " << align;
        ASSERT_GE(pk_usable_size(p), size) << where();
        if (zeroed) {
            ASSERT_TRUE(all_bytes(p, size, 0)) << where() << ": pk_calloc's block is not zero";
        }
        uintptr_t a = reinterpret_cast<uintptr_t>(p);
        auto next = live_.lower_bound(a);
        if (next != live_.end()) {
            ASSERT_LE(a + (size ? size : 1), next->first) << where() << ": overlap";
        }
        if (next != live_.begin()) {
            auto prev = std::prev(next);
            ASSERT_LE(prev->first + (prev->second.size ? prev->second.size : 1), a) << where() << ": overlap";
        }
        Block b{size, align, rng_.next(), aligned};
        fill_pattern(p, size, b.key);
        live_[a] = b;
    }

    void allocate() {
        size_t size = draw_size(rng_);
        unsigned how = static_cast<unsigned>(rng_.below(10));
        if (how < 6) {
            ASSERT_NO_FATAL_FAILURE(add(pk_alloc(size), size, size <= 8 ? 8 : 16, false));
        } else if (how < 8) {
            ASSERT_NO_FATAL_FAILURE(add(pk_calloc(1, size), size, size <= 8 ? 8 : 16, true));
        } else if (rng_.chance(90)) {
            size_t align = size_t(1) << rng_.below(14);
            ASSERT_NO_FATAL_FAILURE(add(pk_aligned_alloc(align, size), size, align, false, true));
        } else { /* a large block aligned past a page, up to 1 MiB: its own mapping's shape */
            size = PK_ALLOC_CLASS_MAX + rng_.below(300000);
            size_t align = size_t(8192) << rng_.below(8);
            ASSERT_NO_FATAL_FAILURE(add(pk_aligned_alloc(align, size), size, align, false, true));
        }
    }

    std::map<uintptr_t, Block>::iterator pick() {
        auto it = live_.lower_bound(static_cast<uintptr_t>(rng_.next()));
        return it == live_.end() ? live_.begin() : it;
    }

    void release() {
        auto it = pick();
        void *p = reinterpret_cast<void *>(it->first);
        Block b = it->second;
        ASSERT_EQ(check_pattern(p, b.size, b.key), b.size) << where() << ": block of " << b.size << " changed";
        live_.erase(it);
        /* free_sized needs the size's class: not for aligned blocks */
        if (!b.aligned && rng_.chance(50)) pk_free_sized(p, b.size);
        else pk_free(p);
    }

    void resize() {
        auto it = pick();
        void *p = reinterpret_cast<void *>(it->first);
        Block b = it->second;
        ASSERT_EQ(check_pattern(p, b.size, b.key), b.size) << where();
        size_t to = rng_.chance(50) ? draw_size(rng_) : b.size + rng_.below(64);
        live_.erase(it);
        if (to == 0) {
            EXPECT_EQ(pk_realloc(p, 0), nullptr) << where();
            return;
        }
        void *q = pk_realloc(p, to);
        ASSERT_NE(q, nullptr) << where();
        size_t keep = b.size < to ? b.size : to;
        ASSERT_EQ(check_pattern(q, keep, b.key), keep) << where() << ": realloc " << b.size << " -> " << to;
        ASSERT_NO_FATAL_FAILURE(add(q, to, to <= 8 ? 8 : 16, false));
    }

    /* Each class pool's live count against the model's blocks in it. */
    /* Hardened, the front end holds blocks of its pools back (the freed
     * ones waiting in its quarantine, each slab's first slot), so a pool
     * counts at least the model's; its largest requests are mapped alone
     * and blocks of size 0 point at no memory (neither a pool's nor
     * mapped). */
    void check_counts() {
        std::map<pk_pool *, size_t> want;
        size_t large = 0;
        for (auto &e : live_) {
            pk_pool *p = pk_pool_owner(reinterpret_cast<void *>(e.first));
            if (p) want[p]++;
            else if (!hardened_ || e.second.size != 0 || e.second.align > 16) large++;
        }
        for (size_t s : alloc_classes()) {
            void *probe = pk_alloc(s);
            pk_pool *p = pk_pool_owner(probe);
            pk_free(probe);
            if (hardened_ && !p) break; /* mapped alone from here on */
            ASSERT_NE(p, nullptr) << where() << ": no class pool for " << s;
            pk_pool_stats st = stats_of(p);
            if (hardened_) {
                ASSERT_GE(st.live, want[p]) << where() << ": class " << s << " counts " << st.live << " live";
            } else {
                ASSERT_EQ(st.live, want[p]) << where() << ": class " << s << " counts " << st.live << " live";
            }
        }
        ASSERT_EQ(mapped_blocks(), large) << where() << ": mapped blocks";
    }

    std::map<uintptr_t, Block> live_;
    const bool hardened_ = env_on("POOLKIT_HARDENED");
    Rng rng_;
    uint64_t seed_;
    size_t step_ = 0;
};

class AllocModelTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(AllocModelTest, RandomSequenceMatchesTheModel) {
    AllocModel m(GetParam());
    ASSERT_NO_FATAL_FAILURE(m.run(scaled(60000, 3000), 3000));
}

TEST_P(AllocModelTest, LargeWorkingSetMatchesTheModel) {
    AllocModel m(GetParam() + 1000);
    ASSERT_NO_FATAL_FAILURE(m.run(scaled(120000, 5000), scaled(30000, 1000)));
}

INSTANTIATE_TEST_SUITE_P(Seeds, AllocModelTest, ::testing::Values(1, 2, 3));

/* Blocks aligned past a page, up to a slab's 64 KiB, come from the classes
 * whose slots are laid out so aligned (a power-of-two class), many to a
 * mapping: one mapping a block would fail at vm.max_map_count's 65,530
 * live, where glibc, jemalloc and mimalloc go on. Debug mode's slots carry
 * a redzone, so no class is aligned past a page there, and hardened mode
 * puts every block of 64 KiB and up between guard pages: those blocks keep
 * a mapping each (docs/alloc.md says so), and only their alignment and
 * contents are checked. */
TEST(AllocAlignedPastAPage, ManyLiveBlocksShareTheirMappings) {
    const size_t n = scaled(2000, 300);
    const bool debug = env_on("POOLKIT_DEBUG"), hardened = !debug && env_on("POOLKIT_HARDENED");
    for (size_t align : {size_t(8192), size_t(16384), size_t(65536)}) {
        for (size_t size : {size_t(1), size_t(100), align / 2 + 1, align}) {
            std::vector<char *> live;
            long before = mapping_count();
            for (size_t i = 0; i < n; i++) {
                char *p = static_cast<char *>(pk_aligned_alloc(align, size));
                ASSERT_NE(p, nullptr) << "align " << align << " size " << size << " block " << i;
                ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << "align " << align << " size " << size;
                ASSERT_GE(pk_usable_size(p), size);
                p[size - 1] = static_cast<char>(i >> 8);
                p[0] = static_cast<char>(i);
                live.push_back(p);
            }
            long grew = mapping_count() - before; /* signed: other mappings come and go too (Valgrind's among them) */
            if (!debug && !(hardened && size >= 65536)) {
                EXPECT_LT(grew, static_cast<long>(n / 4)) << "align " << align << " size " << size << ": " << n
                                       << " blocks took " << grew << " mappings";
            }
            for (size_t i = 0; i < n; i++) {
                ASSERT_EQ(live[i][0], static_cast<char>(i));
                if (size > 1) {
                    ASSERT_EQ(live[i][size - 1], static_cast<char>(i >> 8));
                }
                pk_free(live[i]);
            }
        }
    }
}

} // namespace
