/* Pools when the system runs out of memory, through fault injection
 * (<poolkit/fault.h>): pk_fault_fail_after(n) lets n more page requests
 * succeed and fails every later one until pk_fault_fail_after(-1).
 *
 * What must hold: a failing call returns NULL (or fewer objects) with errno
 * ENOMEM and never crashes; what was handed out before stays valid; stats
 * stay exact; nothing leaks (the pool's stats, and every byte poolkit maps
 * from the system is unmapped again: this program interposes mmap and
 * munmap to count them; valgrind and ASan check the heap); and the pool
 * works again once memory is back. */
#include "support.h"

#include <dlfcn.h>
#include <sys/mman.h>

#include <atomic>
#include <set>
#include <condition_variable>
#include <mutex>
#include <thread>

using namespace pktest;

/* ---- Counting what the library maps ------------------------------------
 * Every mmap and munmap of this program (poolkit's, as the library is linked
 * statically) passes through the two definitions below on its way to the
 * real ones: found with dlsym in plain builds; in sanitizer builds, whose
 * runtimes define mmap and munmap as weak interceptors (ours win) and are
 * not set up when the first call comes (dlsym allocates), the runtime's own
 * interceptor, or the system call where the runtime has none (ASan's
 * munmap). The runtimes map their own memory by system calls, unseen. */

namespace {
/* Plain words with atomic builtins: the counting below must not call into
 * std::atomic's (instrumented) members. */
long long mapped_net; /* bytes mapped minus bytes unmapped */
long map_calls;
long long mapped_bytes() { return __atomic_load_n(&mapped_net, __ATOMIC_SEQ_CST); }
long map_call_count() { return __atomic_load_n(&map_calls, __ATOMIC_SEQ_CST); }
}  // namespace

/* The sanitizer runtime's own start-up maps memory through these symbols
 * (ThreadSanitizer's symbolizer), before it could run any instrumented
 * code of ours. */
#if PKTEST_TSAN
#  define NOT_INSTRUMENTED __attribute__((no_sanitize("thread")))
#else
#  define NOT_INSTRUMENTED
#endif

#if PKTEST_ASAN || PKTEST_TSAN
#  include <sys/syscall.h>
#  include <unistd.h>
extern "C" void *__interceptor_mmap(void *, size_t, int, int, int, off_t) __attribute__((weak));
extern "C" int __interceptor_munmap(void *, size_t) __attribute__((weak));

namespace {
NOT_INSTRUMENTED void *forward_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    if (__interceptor_mmap) return __interceptor_mmap(addr, len, prot, flags, fd, off);
    long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    return r < 0 && r > -4096 ? MAP_FAILED : reinterpret_cast<void *>(r);
}
NOT_INSTRUMENTED int forward_munmap(void *addr, size_t len) {
    if (__interceptor_munmap) return __interceptor_munmap(addr, len);
    return static_cast<int>(syscall(SYS_munmap, addr, len));
}
}  // namespace
#else
namespace {
using mmap_fn = void *(*)(void *, size_t, int, int, int, off_t);
using munmap_fn = int (*)(void *, size_t);

mmap_fn real_mmap() {
    static std::atomic<mmap_fn> f{nullptr};
    mmap_fn r = f.load(std::memory_order_acquire);
    if (!r) {
        r = reinterpret_cast<mmap_fn>(dlsym(RTLD_NEXT, "mmap"));
        f.store(r, std::memory_order_release);
    }
    return r;
}
munmap_fn real_munmap() {
    static std::atomic<munmap_fn> f{nullptr};
    munmap_fn r = f.load(std::memory_order_acquire);
    if (!r) {
        r = reinterpret_cast<munmap_fn>(dlsym(RTLD_NEXT, "munmap"));
        f.store(r, std::memory_order_release);
    }
    return r;
}
void *forward_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return real_mmap()(addr, len, prot, flags, fd, off);
}
int forward_munmap(void *addr, size_t len) { return real_munmap()(addr, len); }
}  // namespace
#endif

extern "C" NOT_INSTRUMENTED void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) __THROW {
    void *p = forward_mmap(addr, len, prot, flags, fd, off);
    /* MAP_FIXED replaces pages mapped and counted already (a slab's place
     * given back under ThreadSanitizer, src/mem/region.c) */
    if (p != MAP_FAILED && (flags & MAP_ANONYMOUS) && !(flags & MAP_FIXED)) {
        __atomic_fetch_add(&mapped_net, static_cast<long long>(len), __ATOMIC_SEQ_CST);
        __atomic_fetch_add(&map_calls, 1, __ATOMIC_SEQ_CST);
    }
    return p;
}

extern "C" NOT_INSTRUMENTED int munmap(void *addr, size_t len) __THROW {
    int r = forward_munmap(addr, len);
    if (r == 0) __atomic_fetch_sub(&mapped_net, static_cast<long long>(len), __ATOMIC_SEQ_CST);
    return r;
}

namespace {

/* Disarms fault injection however the test ends. */
struct Disarm {
    ~Disarm() { pk_fault_fail_after(-1); }
};

/* Registers this thread and the address-map pages for the usual slab sizes,
 * so that later measurements see only the pools under test. */
void warm_up() {
    for (size_t size : {8u, 64u, 100u, 1000u, 4096u, 70000u, 1u << 20}) {
        PoolPtr p = make_pool(size);
        std::vector<void *> objs;
        for (int i = 0; i < (size >= 70000 ? 3 : 200); i++) objs.push_back(pk_pool_alloc(p.get()));
        for (void *o : objs) pk_pool_free(p.get(), o);
    }
}

/* True when this program sees poolkit's mappings (it maps through mmap).
 * The probe's pool must ask the system for pages, so nothing retained may
 * serve it: after warm_up the slabs and records of its destroyed pools wait
 * for the next pool, and a probe served from them sees no mmap at all. */
bool can_count_mappings() {
    pk_pool_release_cache();
    unsigned long requests = pk_fault_requests();
    long before = map_call_count();
    {
        /* a slot too big for a shared slab: its slab is a mapping of its own */
        PoolPtr p = make_pool(size_t(1) << 20);
        void *o = pk_pool_alloc(p.get());
        pk_pool_free(p.get(), o);
    }
    EXPECT_GT(pk_fault_requests(), requests) << "the probe asked for no page: it shows nothing";
    return map_call_count() > before;
}

/* Allocates until the pool says no; checks the refusal. Returns the objects. */
std::vector<void *> alloc_until_refused(pk_pool *p, size_t size, size_t cap) {
    std::vector<void *> objs;
    for (size_t i = 0; i < cap; i++) {
        errno = 0;
        void *o = pk_pool_alloc(p);
        if (!o) {
            EXPECT_EQ(errno, ENOMEM) << "after " << i << " allocations";
            break;
        }
        std::memset(o, 0x3C, size);
        objs.push_back(o);
    }
    return objs;
}

}  // namespace

/* ======================================================================
 * One call at a time
 * ==================================================================== */

TEST(PoolOom, AllocReturnsNullWithENOMEMWhenNoPageCanBeHad) {
    warm_up();
    Disarm disarm;
    for (size_t size : {16u, 200u, 5000u, 1u << 20}) {
        PoolPtr p = make_pool(size);
        ASSERT_NE(p.get(), nullptr);
        std::vector<void *> before;
        for (int i = 0; i < 3; i++) before.push_back(pk_pool_alloc(p.get()));
        ASSERT_NE(before.back(), nullptr);
        pk_fault_fail_after(0);
        std::vector<void *> more = alloc_until_refused(p.get(), size, 1000000);
        errno = 0;
        EXPECT_EQ(pk_pool_alloc(p.get()), nullptr) << "size " << size << ": still no memory";
        EXPECT_EQ(errno, ENOMEM);
        EXPECT_EQ(stats_of(p.get()).live, before.size() + more.size()) << "size " << size;
        pk_fault_fail_after(-1);
        void *o = pk_pool_alloc(p.get());
        EXPECT_NE(o, nullptr) << "size " << size << ": the pool works again once memory is back";
        if (o) pk_pool_free(p.get(), o);
        for (void *x : more) ASSERT_TRUE(all_bytes(x, size, 0x3C));
        for (void *x : more) pk_pool_free(p.get(), x);
        for (void *x : before) pk_pool_free(p.get(), x);
        EXPECT_EQ(stats_of(p.get()).live, 0u);
    }
}

TEST(PoolOom, CreateReturnsNullWithENOMEMWhenTheReserveCannotBeMade) {
    warm_up();
    Disarm disarm;
    bool counting = can_count_mappings();
    for (long n = 0; n < 6; n++) {
        pk_pool_config c = make_config(256, 0, 0, "reserved");
        c.reserve = 5000; /* several slabs */
        /* so the reserve needs pages, not earlier pools' slabs, and the start
         * is measured with nothing retained, as the end is */
        pk_pool_release_cache();
        long long mapped = mapped_bytes();
        pk_fault_fail_after(n);
        errno = 0;
        pk_pool *p = pk_pool_create(&c);
        int err = errno;
        pk_fault_fail_after(-1);
        EXPECT_EQ(p, nullptr) << "fail after " << n;
        EXPECT_EQ(err, ENOMEM) << "fail after " << n;
        if (p) pk_pool_destroy(p);
        if (counting) {
            pk_pool_release_cache(); /* the half-made pool's slabs wait there */
            EXPECT_LE(mapped_bytes(), mapped) << "fail after " << n << ": bytes left mapped";
        }
    }
    /* and with memory back the same config works */
    pk_pool_config c = make_config(256, 0, 0, "reserved");
    c.reserve = 5000;
    PoolPtr p = make_pool(c);
    EXPECT_NE(p.get(), nullptr);
}

TEST(PoolOom, CreateWithoutReserveFailsCleanlyToo) {
    warm_up();
    Disarm disarm;
    pk_fault_fail_after(0);
    pk_pool_config c = make_config(64);
    errno = 0;
    pk_pool *p = pk_pool_create(&c);
    int err = errno;
    pk_fault_fail_after(-1);
    if (p) {
        /* a pool that needs no page at creation is fine; it must then work */
        void *o = pk_pool_alloc(p);
        EXPECT_NE(o, nullptr);
        pk_pool_free(p, o);
        pk_pool_destroy(p);
    } else {
        EXPECT_EQ(err, ENOMEM);
    }
}

TEST(PoolOom, ReserveReturnsFewerWithENOMEMAndThoseAreReallyReady) {
    warm_up();
    Disarm disarm;
    PoolPtr p = make_pool(64);
    pk_fault_fail_after(3);
    errno = 0;
    size_t ready = pk_pool_reserve(p.get(), 1000000);
    int err = errno;
    EXPECT_LT(ready, 1000000u);
    EXPECT_EQ(err, ENOMEM);
    /* still armed: what reserve said is ready must come without a page */
    std::vector<void *> objs;
    for (size_t i = 0; i < ready; i++) {
        void *o = pk_pool_alloc(p.get());
        ASSERT_NE(o, nullptr) << "object " << i << " of the " << ready << " reserve said were ready";
        objs.push_back(o);
    }
    pk_fault_fail_after(-1);
    for (void *o : objs) pk_pool_free(p.get(), o);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

TEST(PoolOom, BulkAllocReturnsFewerWithENOMEM) {
    warm_up();
    Disarm disarm;
    pk_pool_config c = make_config(128, 0, 0, "bulk");
    c.reserve = 500;
    PoolPtr p = make_pool(c);
    ASSERT_NE(p.get(), nullptr);
    pk_fault_fail_after(0);
    std::vector<void *> objs(100000);
    errno = 0;
    size_t got = pk_pool_alloc_bulk(p.get(), objs.data(), objs.size());
    int err = errno;
    EXPECT_GE(got, 500u) << "the reserve was ready";
    EXPECT_LT(got, objs.size());
    EXPECT_EQ(err, ENOMEM);
    objs.resize(got);
    std::set<void *> distinct(objs.begin(), objs.end());
    EXPECT_EQ(distinct.size(), got);
    for (void *o : objs) std::memset(o, 1, 128);
    EXPECT_EQ(stats_of(p.get()).live, got);
    pk_fault_fail_after(-1);
    std::vector<void *> rest(1000);
    EXPECT_EQ(pk_pool_alloc_bulk(p.get(), rest.data(), rest.size()), rest.size());
    pk_pool_free_bulk(p.get(), rest.data(), rest.size());
    pk_pool_free_bulk(p.get(), objs.data(), objs.size());
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

TEST(PoolOom, LimitAndMemoryExhaustionBothSayENOMEM) {
    warm_up();
    Disarm disarm;
    pk_pool_config c = make_config(2000, 0, 0, "limited");
    c.limit = 100000;
    PoolPtr p = make_pool(c);
    pk_fault_fail_after(2);
    std::vector<void *> objs = alloc_until_refused(p.get(), 2000, 100000);
    EXPECT_LT(objs.size(), 100000u);
    pk_fault_fail_after(-1);
    for (void *o : objs) pk_pool_free(p.get(), o);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* Pools refused pages at every point of their growth, destroyed with
 * objects live: afterwards no more is mapped than before. Both ends are
 * measured with nothing retained (pk_pool_release_cache): the slabs and the
 * 4 KiB records of destroyed pools wait for the next pool, and a start
 * measured with one retained would end that much below it. Debug pools map
 * two things per slab (the slab, then its call sites), so a refusal can
 * come between them. The address map's leaves are never unmapped: a slab
 * in a new 4 GiB range adds one, which these few slabs are unlikely to
 * need (warm_up made the leaf for the range they come from). */
TEST(PoolOom, NothingLeaksAfterFailuresAndDestroy) {
    warm_up();
    Disarm disarm;
    if (!can_count_mappings()) GTEST_SKIP() << "poolkit's pages do not pass through this program's mmap";
    pk_pool_release_cache();
    long long mapped = mapped_bytes();
    unsigned long refused = 0;
    for (int round = 0; round < 20; round++) {
        unsigned flags = round % 2 ? unsigned(PK_POOL_DEBUG) : 0u;
        PoolPtr p = make_pool(300, 0, flags, "oom");
        unsigned long before = pk_fault_requests();
        pk_fault_fail_after(round / 2 % 5);
        std::vector<void *> objs = alloc_until_refused(p.get(), 300, 100000);
        pk_fault_fail_after(-1);
        refused += pk_fault_requests() > before;
        for (size_t i = 0; i < objs.size(); i += 2) pk_pool_free(p.get(), objs[i]);
        /* the odd ones are still live when the pool goes */
        ErrorCapture quiet;
        p.reset();
    }
    EXPECT_GT(refused, 0u) << "no page request was refused";
    pk_pool_release_cache(); /* destroyed pools' slabs wait there for the next pool */
    EXPECT_LE(mapped_bytes(), mapped) << "bytes still mapped after every pool is destroyed";
}

TEST(PoolOom, NewThreadCanAllocateWhileNoPageCanBeHad) {
    warm_up();
    Disarm disarm;
    pk_pool_config c = make_config(64, 0, 0, "ready");
    c.reserve = 1000;
    PoolPtr p = make_pool(c);
    ASSERT_NE(p.get(), nullptr);
    std::atomic<int> bad{0};
    pk_fault_fail_after(0);
    std::thread t([&] {
        /* the thread's own bookkeeping cannot be had either */
        std::vector<void *> objs;
        for (int i = 0; i < 300; i++) {
            errno = 0;
            void *o = pk_pool_alloc(p.get());
            if (!o && errno != ENOMEM) bad++;
            if (o) objs.push_back(o);
        }
        for (void *o : objs) pk_pool_free(p.get(), o);
    });
    t.join();
    pk_fault_fail_after(-1);
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(stats_of(p.get()).live, 0u);
    std::thread t2([&] {
        void *o = pk_pool_alloc(p.get());
        if (!o) bad++;
        pk_pool_free(p.get(), o);
    });
    t2.join();
    EXPECT_EQ(bad.load(), 0);
    pk_pool_trim(p.get());
    EXPECT_LE(stats_of(p.get()).slabs, 1u);
}

/* A slab a thread left at its exit remembers its free list's head, so that
 * a free of that object is reported as a double free. A thread with no
 * heap (its thread table refused) allocates from the pool's slabs directly
 * and may be handed that very object: its free is then no double free. (A
 * false report aborted the stress below about one Debug run in ten.) */
TEST(PoolOom, TheHeadAnExitedThreadLeftMayBeHandedOutAndFreedAgain) {
    warm_up();
    Disarm disarm;
    PoolPtr p = make_pool(512, 0, 0, "left head");
    pk_pool_free(p.get(), pk_pool_alloc(p.get())); /* this thread's heap has a slab apart */
    std::set<void *> freed;
    std::thread([&] {
        (void)pk_pool_alloc(p.get()); /* live: the slab stays partly used, the pool's */
        for (int i = 0; i < 4; i++) freed.insert(pk_pool_alloc(p.get()));
        for (void *o : freed) pk_pool_free(p.get(), o); /* the slab's free list as the thread exits */
    }).join();
    /* A live thread takes the thread table made ready beforehand, so the
     * next thread must map its own, and is refused. */
    std::mutex m;
    std::condition_variable cv;
    bool holding = false, release = false;
    PoolPtr other = make_pool(64, 0, 0, "holder");
    std::thread holder([&] {
        pk_pool_free(other.get(), pk_pool_alloc(other.get())); /* another pool: the slab stays the pool's */
        std::unique_lock<std::mutex> lock(m);
        holding = true;
        cv.notify_all();
        cv.wait(lock, [&] { return release; });
    });
    {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return holding; });
    }
    std::vector<void *> got;
    pk_fault_fail_after(0);
    std::thread([&] {
        for (int i = 0; i < 4; i++) got.push_back(pk_pool_alloc(p.get()));
    }).join();
    pk_fault_fail_after(-1);
    {
        std::lock_guard<std::mutex> lock(m);
        release = true;
    }
    cv.notify_all();
    holder.join();
    size_t again = 0;
    for (void *o : got) again += freed.count(o);
    ASSERT_EQ(again, freed.size()) << "the thread with no heap was not handed the objects the exited thread freed";
    for (void *o : got) pk_pool_free(p.get(), o); /* each freed once: no double free */
    EXPECT_EQ(stats_of(p.get()).live, 1u);
}

TEST(PoolOom, ThreadsRacingForTheLastPagesStress) {
    warm_up();
    Disarm disarm;
    PoolPtr p = make_pool(512, 0, 0, "racing");
    std::atomic<int> bad{0};
    const int rounds = static_cast<int>(scaled(50, 5));
    for (int round = 0; round < rounds; round++) {
        pk_fault_fail_after(round % 7);
        std::vector<std::thread> ts;
        std::vector<std::vector<void *>> got(3);
        for (int t = 0; t < 3; t++)
            ts.emplace_back([&, t] {
                for (int i = 0; i < 2000; i++) {
                    errno = 0;
                    void *o = pk_pool_alloc(p.get());
                    if (!o) {
                        if (errno != ENOMEM) bad++;
                        continue;
                    }
                    std::memset(o, t, 512);
                    got[static_cast<size_t>(t)].push_back(o);
                }
            });
        for (auto &t : ts) t.join();
        pk_fault_fail_after(-1);
        std::set<void *> all;
        size_t total = 0;
        for (size_t t = 0; t < got.size(); t++)
            for (void *o : got[t]) {
                if (!all_bytes(o, 512, static_cast<unsigned char>(t))) bad++;
                all.insert(o);
                total++;
            }
        EXPECT_EQ(all.size(), total) << "an object was handed to two threads";
        EXPECT_EQ(stats_of(p.get()).live, total);
        for (auto &v : got)
            for (void *o : v) pk_pool_free(p.get(), o);
    }
    EXPECT_EQ(bad.load(), 0);
    pk_pool_trim(p.get());
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}

/* ======================================================================
 * A sweep: the n-th page request fails, for every n a scenario makes
 * ==================================================================== */

namespace {

struct Scenario {
    std::vector<pk_pool *> pools;
    std::vector<std::vector<void *>> objs;
    std::vector<size_t> sizes;
    size_t refusals = 0;
    std::string problems;

    void note(const std::string &s) { problems += s + "; "; }

    /* Creates pools and allocates from them; any step may be refused. */
    void run() {
        struct Spec {
            size_t size;
            unsigned flags;
            size_t reserve;
            size_t allocs;
        };
        const Spec specs[] = {
            {64, 0, 300, 2000},          {1000, 0, 0, 500},           {1 << 20, 0, 0, 3},
            {48, PK_POOL_DEBUG, 0, 300}, {100, PK_POOL_HARDENED | PK_POOL_ZERO, 50, 400},
            {24, PK_POOL_LOCAL, 0, 3000}, {70000, 0, 2, 4},
        };
        for (const Spec &s : specs) {
            pk_pool_config c = make_config(s.size, 0, s.flags, "sweep");
            c.reserve = s.reserve;
            errno = 0;
            pk_pool *p = pk_pool_create(&c);
            if (!p) {
                if (errno != ENOMEM) note("create failed without ENOMEM");
                refusals++;
                continue;
            }
            pools.push_back(p);
            sizes.push_back(s.size);
            objs.emplace_back();
            std::vector<void *> &mine = objs.back();
            for (size_t i = 0; i < s.allocs; i++) {
                errno = 0;
                void *o = pk_pool_alloc(p);
                if (!o) {
                    if (errno != ENOMEM) note("alloc failed without ENOMEM");
                    refusals++;
                    continue;
                }
                std::memset(o, static_cast<int>(pools.size()), s.size);
                mine.push_back(o);
            }
            void *bulk[64];
            const size_t want = std::min<size_t>(64, s.allocs);
            errno = 0;
            size_t got = pk_pool_alloc_bulk(p, bulk, want);
            if (got < want && errno != ENOMEM) note("alloc_bulk short without ENOMEM");
            if (got < want) refusals++;
            for (size_t i = 0; i < got; i++) {
                std::memset(bulk[i], static_cast<int>(pools.size()), s.size);
                mine.push_back(bulk[i]);
            }
            const size_t more = s.allocs / 4 + 1;
            errno = 0;
            size_t ready = pk_pool_reserve(p, more);
            if (ready < more && errno != ENOMEM) note("reserve short without ENOMEM");
            if (ready < more) refusals++;
            if (stats_of(p).live != mine.size()) note("live count wrong after refusals");
        }
    }

    /* With memory back: everything handed out is intact, every pool works,
     * and all is freed and destroyed. */
    void finish() {
        for (size_t i = 0; i < pools.size(); i++) {
            for (void *o : objs[i])
                if (!all_bytes(o, sizes[i], static_cast<unsigned char>(i + 1))) {
                    note("contents lost");
                    break;
                }
            void *o = pk_pool_alloc(pools[i]);
            if (!o) note("pool does not work after memory came back");
            else objs[i].push_back(o);
            if (stats_of(pools[i]).live != objs[i].size()) note("live count wrong");
            for (void *x : objs[i]) pk_pool_free(pools[i], x);
            pk_pool_trim(pools[i]);
            if (stats_of(pools[i]).live != 0) note("objects still live");
            pk_pool_destroy(pools[i]);
        }
        pools.clear();
    }
};

}  // namespace

TEST(PoolOom, SweepEveryFailurePointOverCreatesAndAllocs) {
    warm_up();
    Disarm disarm;
    bool counting = can_count_mappings();
    /* how many page requests the scenario makes when nothing fails */
    unsigned long r0 = pk_fault_requests();
    {
        Scenario s;
        s.run();
        EXPECT_EQ(s.refusals, 0u);
        s.finish();
        EXPECT_EQ(s.problems, "");
    }
    unsigned long needed = pk_fault_requests() - r0;
    ASSERT_GT(needed, 0u);
    RecordProperty("page_requests", static_cast<int>(needed));
    long long mapped_before = mapped_bytes();
    long long mapped_after_first = 0;
    const long last = static_cast<long>(needed) + 2;
    const long step = slow_tool() ? std::max(1L, last / 12) : 1;
    for (int pass = 0; pass < 2; pass++) {
        for (long n = 0; n <= last; n += step) {
            Scenario s;
            pk_fault_fail_after(n);
            s.run();
            pk_fault_fail_after(-1);
            if (n == 0) {
                EXPECT_GT(s.refusals, 0u) << "no page at all, yet nothing was refused";
            }
            s.finish();
            EXPECT_EQ(s.problems, "") << "fail after " << n << " of " << needed << " page requests";
        }
        pk_pool_release_cache(); /* destroyed pools' slabs wait there for the next pool */
        if (pass == 0) mapped_after_first = mapped_bytes();
    }
    if (counting) {
        /* The first pass may leave address-map pages for new address ranges;
         * a second identical pass must leave nothing more. */
        EXPECT_LE(mapped_bytes(), mapped_after_first) << "the second sweep leaked";
        EXPECT_LE(mapped_after_first - mapped_before, 1 << 20) << "the first sweep left much mapped";
    }
}
