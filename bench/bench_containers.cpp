// Node-container churn: std::list, std::map and std::unordered_map with
// pk::pool_allocator against std::allocator, std::pmr::unsynchronized_pool_resource
// and boost::fast_pool_allocator.
//
// Each workload keeps a container at a steady size N and does OPS churn
// steps, each one erase plus one insert at random places (fixed seed, the
// same sequence for every contender):
//   list           erase the node at a random remembered position, insert a
//                  new one before another random position
//   map            erase a random present key, insert a fresh random key
//   unordered_map  the same, hashed
//   list FIFO      a queue: pop the oldest node from the front, push a new one
//                  at the back (N = --fifo-n, 50,000 by default: a realistic queue)
// Time per step (erase + insert): the container's own work is part of what a
// user sees, so no allocator can make a step cheaper than that work. The row
// "bare free list" measures it: a single-threaded intrusive free list with no
// checks, the floor for any allocator. The list also runs at N/10 and N*10,
// since how much of a step is allocation depends on how much of the list
// stays in cache. Containers are built and filled untimed.
//
// Method: a warm-up run of every contender, then --reps (>= 5) repetitions,
// contenders interleaved within each; median and [min - max] in ns/step.
// Targets are judged at size N (list FIFO: at its own N).
//
// Usage: bench_containers [--reps N] [--quick] [--n SIZE] [--ops STEPS] [--fifo-n SIZE]
#include "harness.h"

#include <poolkit/poolkit.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory_resource>
#include <unordered_map>
#include <vector>

#if __has_include(<boost/pool/pool_alloc.hpp>)
#  include <boost/pool/pool_alloc.hpp>
#  define HAVE_BOOST_POOL 1
#else
#  define HAVE_BOOST_POOL 0
#endif

namespace {

struct params {
    std::size_t n;   // steady container size
    std::size_t ops; // churn steps per timed run
};

// The random numbers of one run, drawn before the clock starts so that every
// contender sees the same sequence and none pays for drawing it.
struct script {
    std::vector<std::uint32_t> a, b; // positions (list) or indexes (maps)
    std::vector<std::uint64_t> keys; // fresh keys (maps)
};

script make_script(const params &p) {
    shared_rng rng{0x5eed0f0015ull};
    script s;
    s.a.resize(p.ops);
    s.b.resize(p.ops);
    s.keys.resize(p.n + p.ops);
    for (std::size_t i = 0; i < p.ops; i++) {
        s.a[i] = static_cast<std::uint32_t>(shared_rng_below(&rng, p.n));
        s.b[i] = static_cast<std::uint32_t>(shared_rng_below(&rng, p.n));
    }
    for (auto &k : s.keys) k = shared_rng_next(&rng);
    return s;
}

// ---- the three workloads, generic over the container type -------------------

// List churn: remembers an iterator per slot; each step erases the node of a
// random slot and inserts a new node before the node of another random slot.
template <class List>
BENCH_NOINLINE double list_churn(List &list, const params &p, const script &s) {
    std::vector<typename List::iterator> at;
    at.reserve(p.n);
    for (std::size_t i = 0; i < p.n; i++) at.push_back(list.insert(list.end(), static_cast<int>(i)));
    double t0 = bench_now_ns();
    for (std::size_t i = 0; i < p.ops; i++) {
        std::uint32_t victim = s.a[i], before = s.b[i];
        list.erase(at[victim]);
        if (before == victim) before = victim + 1 == p.n ? 0 : victim + 1;
        at[victim] = list.insert(at[before], static_cast<int>(i));
    }
    double t1 = bench_now_ns();
    BENCH_ESCAPE(&list);
    return (t1 - t0) / static_cast<double>(p.ops);
}

// FIFO churn: the list is a queue of N nodes; each step frees the oldest node
// and allocates a new one at the back.
template <class List>
BENCH_NOINLINE double list_fifo_churn(List &list, const params &p) {
    for (std::size_t i = 0; i < p.n; i++) list.push_back(static_cast<int>(i));
    double t0 = bench_now_ns();
    for (std::size_t i = 0; i < p.ops; i++) {
        list.pop_front();
        list.push_back(static_cast<int>(i));
    }
    double t1 = bench_now_ns();
    BENCH_ESCAPE(&list);
    return (t1 - t0) / static_cast<double>(p.ops);
}

// Map churn: keeps the present keys in a vector; each step erases one at a
// random index and inserts the next fresh key in its place.
template <class Map>
BENCH_NOINLINE double map_churn(Map &map, const params &p, const script &s) {
    std::vector<std::uint64_t> present(s.keys.begin(), s.keys.begin() + static_cast<std::ptrdiff_t>(p.n));
    for (std::uint64_t k : present) map.emplace(k, k);
    double t0 = bench_now_ns();
    for (std::size_t i = 0; i < p.ops; i++) {
        std::uint32_t slot = s.a[i];
        map.erase(present[slot]);
        std::uint64_t k = s.keys[p.n + i];
        map.emplace(k, i);
        present[slot] = k;
    }
    double t1 = bench_now_ns();
    BENCH_ESCAPE(&map);
    return (t1 - t0) / static_cast<double>(p.ops);
}

// ---- contenders --------------------------------------------------------------

using key = std::uint64_t;
using value = std::uint64_t;
using kv = std::pair<const key, value>;

enum workload { LIST, MAP, UMAP, LIST_FIFO, WORKLOADS };
const char *const workload_names[WORKLOADS] = {"std::list<int>", "std::map<u64,u64>",
                                               "std::unordered_map<u64,u64>",
                                               "std::list<int> FIFO (pop_front + push_back)"};

enum contender { STD, PK, PMR, BOOST, FLOOR, CONTENDERS };
const char *const contender_names[CONTENDERS] = {
    "std::allocator", "pk::pool_allocator", "pmr::unsynchronized_pool_resource",
    "boost::fast_pool_allocator", "(floor) bare free list, 1 thread"};

template <template <class> class Alloc>
double run_with(workload w, const params &p, const script &s) {
    switch (w) {
    case LIST: {
        std::list<int, Alloc<int>> c;
        return list_churn(c, p, s);
    }
    case LIST_FIFO: {
        std::list<int, Alloc<int>> c;
        return list_fifo_churn(c, p);
    }
    case MAP: {
        std::map<key, value, std::less<key>, Alloc<kv>> c;
        return map_churn(c, p, s);
    }
    default: {
        std::unordered_map<key, value, std::hash<key>, std::equal_to<key>, Alloc<kv>> c;
        c.reserve(p.n);
        return map_churn(c, p, s);
    }
    }
}

double run_pmr(workload w, const params &p, const script &s) {
    std::pmr::unsynchronized_pool_resource res;
    switch (w) {
    case LIST: {
        std::pmr::list<int> c(&res);
        return list_churn(c, p, s);
    }
    case LIST_FIFO: {
        std::pmr::list<int> c(&res);
        return list_fifo_churn(c, p);
    }
    case MAP: {
        std::pmr::map<key, value> c(&res);
        return map_churn(c, p, s);
    }
    default: {
        std::pmr::unordered_map<key, value> c(&res);
        c.reserve(p.n);
        return map_churn(c, p, s);
    }
    }
}

#if HAVE_BOOST_POOL
template <class T>
using boost_alloc = boost::fast_pool_allocator<T>;
#endif

// The floor: one thread, an intrusive free list per node size, no checks.
template <class T>
struct free_list_allocator {
    using value_type = T;
    free_list_allocator() = default;
    template <class U>
    free_list_allocator(const free_list_allocator<U> &) {}
    T *allocate(std::size_t n) {
        if (n == 1 && head) {
            void *p = head;
            head = *static_cast<void **>(p);
            return static_cast<T *>(p);
        }
        return static_cast<T *>(::operator new(n == 1 && sizeof(T) < sizeof(void *) ? sizeof(void *) : n * sizeof(T)));
    }
    void deallocate(T *p, std::size_t n) {
        if (n == 1) {
            *reinterpret_cast<void **>(p) = head;
            head = p;
        } else {
            ::operator delete(p);
        }
    }
    template <class U>
    bool operator==(const free_list_allocator<U> &) const { return true; }
    template <class U>
    bool operator!=(const free_list_allocator<U> &) const { return false; }
    static inline void *head = nullptr; // one list per T: nodes of one size
};

bool available(contender c) { return c != BOOST || HAVE_BOOST_POOL; }

double run(contender c, workload w, const params &p, const script &s) {
    switch (c) {
    case STD: return run_with<std::allocator>(w, p, s);
    case PK: return run_with<pk::pool_allocator>(w, p, s);
    case PMR: return run_pmr(w, p, s);
    case FLOOR: return run_with<free_list_allocator>(w, p, s);
    default:
#if HAVE_BOOST_POOL
        return run_with<boost_alloc>(w, p, s);
#else
        return 0.0;
#endif
    }
}

} // namespace

// One row of the table: a container kind at a size.
struct job {
    workload w;
    std::size_t n;
    params p;
    script s;
};

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 7);
    std::size_t n = static_cast<std::size_t>(bench_arg_long(&o, "--n", 10000));
    std::size_t ops = static_cast<std::size_t>(bench_arg_long(&o, "--ops", o.quick ? 200000 : 1000000));
    std::size_t fifo_n = static_cast<std::size_t>(bench_arg_long(&o, "--fifo-n", 50000));
    if (fifo_n < 1) fifo_n = 1;
    if (n < 20) n = 20;
    if (ops < 1) ops = 1;
    bench_header("node-container churn: pk::pool_allocator vs std::allocator, pmr, boost", &o);
    std::printf("workload: steady size N = %zu (list also N/10 and N*10), %zu churn steps "
                "(erase + insert at random places, fixed seed), ns per step; list FIFO: a queue "
                "of %zu, pop_front + push_back per step\n",
                n, ops, fifo_n);
    if (!HAVE_BOOST_POOL)
        std::printf("boost::fast_pool_allocator: not available (<boost/pool/pool_alloc.hpp> "
                    "missing; Debian: libboost-dev)\n");
    else
        std::printf("boost::fast_pool_allocator: default template arguments (singleton pool "
                    "behind a mutex)\n");

    enum { LIST_N, LIST_SMALL, LIST_LARGE, MAP_N, UMAP_N, FIFO_N, JOBS };
    const std::pair<workload, std::size_t> shapes[JOBS] = {
        {LIST, n}, {LIST, n / 10}, {LIST, n * 10}, {MAP, n}, {UMAP, n}, {LIST_FIFO, fifo_n}};
    std::vector<job> jobs;
    for (const auto &[w, size] : shapes) {
        params p{size, ops};
        jobs.push_back(job{w, size, p, make_script(p)});
    }

    for (const job &j : jobs)
        for (int c = 0; c < CONTENDERS; c++)
            if (available(static_cast<contender>(c))) run(static_cast<contender>(c), j.w, j.p, j.s);

    std::vector<std::array<bench_series, CONTENDERS>> t(JOBS);
    for (int r = 0; r < o.reps; r++)
        for (int j = 0; j < JOBS; j++)
            for (int c = 0; c < CONTENDERS; c++)
                if (available(static_cast<contender>(c)))
                    bench_add(&t[j][c], run(static_cast<contender>(c), jobs[j].w, jobs[j].p, jobs[j].s));

    std::vector<std::array<double, CONTENDERS>> med(JOBS);
    for (int j = 0; j < JOBS; j++) {
        std::printf("\n%s, N = %zu\n", workload_names[jobs[j].w], jobs[j].n);
        for (int c = 0; c < CONTENDERS; c++) {
            if (!available(static_cast<contender>(c))) {
                bench_row_na(contender_names[c], "boost headers not installed");
                continue;
            }
            med[j][c] = bench_median(&t[j][c]);
            char extra[96];
            std::snprintf(extra, sizeof extra, "std::allocator / this = %.2fx",
                          med[j][STD] / med[j][c]);
            bench_row(contender_names[c], &t[j][c], "ns", extra);
        }
    }

    std::printf("\n");
    const auto &list = med[LIST_N];
    const auto &map = med[MAP_N];
    bench_target(list[STD] / list[PK] >= 2.0,
                 "list churn (N = %zu), pk::pool_allocator >= 2x faster than std::allocator: "
                 "%.2fx (the floor allows %.2fx)",
                 n, list[STD] / list[PK], list[STD] / list[FLOOR]);
    bench_target(list[PK] < list[PMR],
                 "list churn, pk::pool_allocator faster than pmr::unsynchronized_pool_resource: "
                 "%.2f vs %.2f ns",
                 list[PK], list[PMR]);
    if (HAVE_BOOST_POOL)
        bench_target(list[PK] < list[BOOST],
                     "list churn, pk::pool_allocator faster than boost::fast_pool_allocator: "
                     "%.2f vs %.2f ns",
                     list[PK], list[BOOST]);
    else
        std::printf("target: list churn, pk::pool_allocator faster than "
                    "boost::fast_pool_allocator: not available\n");
    const auto &fifo = med[FIFO_N];
    // No "floor" quoted here: the bare free list keeps the nodes of every
    // earlier run (of all the list workloads) and hands them out newest-freed
    // first, which can scatter a queue over memory; in this workload it has
    // measured slower than std::allocator, so it is no floor for it.
    bench_target(fifo[STD] / fifo[PK] >= 2.0,
                 "list FIFO churn (N = %zu), pk::pool_allocator >= 2x faster than "
                 "std::allocator: %.2fx (%.2f vs %.2f ns)",
                 fifo_n, fifo[STD] / fifo[PK], fifo[PK], fifo[STD]);
    bench_target(map[STD] / map[PK] >= 1.3,
                 "map churn (N = %zu), pk::pool_allocator >= 1.3x faster than std::allocator: "
                 "%.2fx (the floor allows %.2fx)",
                 n, map[STD] / map[PK], map[STD] / map[FLOOR]);
    return 0;
}
