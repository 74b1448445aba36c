/* The random fill pattern of the typed memory pool benchmark (Zig, 2023;
 * LAB.md section 5).
 *
 * Keep a list `open`; each round, fill = len(open) / 256; if random() <= fill,
 * free a random element of open; if random() >= fill, allocate one object,
 * touch it (write its first byte) and append it. Fixed seed, so every
 * contender sees the same sequence of operations:
 *   small   1 B objects,    2,500,000 rounds
 *   medium  8 KiB objects,  1,000,000 rounds
 *   big     1 MiB objects,     25,000 rounds
 *
 * Contenders: the empty harness (same random numbers and list operations, no
 * allocation), a naive free list that never gives memory back (the algorithm
 * of Zig's std.heap.MemoryPool: a free list in front of an arena; it stands in
 * for it here), glibc malloc, pk_arena (frees are no-ops; reset after the
 * rounds) and pk_pool (default flags). Each run is a forked child, so that its
 * peak RSS is its own.
 *
 * Reported: ns per round (median [min - max]); net = the contender's minimum
 * minus the empty harness's minimum (a difference of two larger numbers, so
 * the minima of the repetitions are used); peak RSS growth of the child.
 *
 * Usage: bench_pattern [--reps N] [--quick] [--only small|medium|big]
 */
#include "harness.h"

#include <poolkit/arena.h>
#include <poolkit/pool.h>

typedef struct pattern {
    const char *name;
    size_t size;
    size_t rounds;
} pattern;

static pattern patterns[3] = {
    {"small", 1, 2500000},
    {"medium", 8192, 1000000},
    {"big", 1 << 20, 25000},
};

#define SEED 0x5EEDF00Dull
#define OPEN_MAX SHARED_PATTERN_OPEN_MAX /* lab/shared.h */

enum { C_EMPTY, C_NAIVE, C_GLIBC, C_ARENA, C_POOL, NCONT };
static const char *cont_label[NCONT] = {
    "empty harness (no allocation)",
    "naive free list (~Zig MemoryPool)",
    "glibc malloc/free",
    "pk_arena (free = no-op)",
    "pk_pool default",
};

/* What a child reports (beyond the peak RSS the harness adds). */
enum { R_NS, R_ALLOCS, R_PEAK, R_RESERVED, R_TRIMMED, R_RELEASED, R_SLABS, NRES };

/* ---- the naive free list: never gives memory back ---- */

typedef struct naive_node { struct naive_node *next; } naive_node;
typedef struct naive_list {
    naive_node *head;
    char *bump, *end; /* the current chunk */
    size_t size;      /* object size, rounded to hold a link */
} naive_list;

static BENCH_NOINLINE void *naive_refill(naive_list *l) {
    if (l->bump + l->size > l->end) {
        size_t chunk = l->size > 65536 ? l->size : 65536;
        l->bump = malloc(chunk); /* never freed, like an arena's chunks */
        if (!l->bump) abort();
        l->end = l->bump + chunk;
    }
    void *p = l->bump;
    l->bump += l->size;
    return p;
}

static inline void *naive_alloc(naive_list *l) {
    naive_node *n = l->head;
    if (__builtin_expect(n != NULL, 1)) {
        l->head = n->next;
        return n;
    }
    return naive_refill(l);
}

static inline void naive_free(naive_list *l, void *p) {
    naive_node *n = p;
    n->next = l->head;
    l->head = n;
}

/* ---- the pattern, one kernel per contender ---- */

static char empty_target[4096];

#define PATTERN_LOOP(ALLOC, FREE)                                    \
    do {                                                             \
        void *open[OPEN_MAX];                                        \
        size_t len = 0, peak = 0, allocs = 0;                        \
        shared_rng rng = {SEED};                                      \
        double t0 = bench_now_ns();                                  \
        for (size_t r = 0; r < rounds; r++) {                        \
            double fill = (double)len / 256.0;                       \
            if (shared_rng_unit(&rng) <= fill && len) {              \
                size_t i = shared_rng_below(&rng, len);              \
                void *p = open[i];                                   \
                open[i] = open[--len];                               \
                BENCH_ESCAPE(p);                                     \
                FREE;                                                \
            }                                                        \
            if (shared_rng_unit(&rng) >= fill) {                     \
                char *p = (char *)(ALLOC);                           \
                p[0] = (char)r; /* touch the new object */           \
                BENCH_ESCAPE(p);                                     \
                open[len++] = p;                                     \
                allocs++;                                            \
                if (len > peak) peak = len;                          \
            }                                                        \
        }                                                            \
        res[R_NS] = (bench_now_ns() - t0) / (double)rounds;          \
        res[R_ALLOCS] = (double)allocs;                              \
        res[R_PEAK] = (double)peak;                                  \
        for (size_t i = 0; i < len; i++) live_out[i] = open[i];      \
        *nlive = len;                                                \
    } while (0)

static void *live_out[OPEN_MAX];

static BENCH_KERNEL void run_empty(size_t rounds, double *res, size_t *nlive) {
    PATTERN_LOOP(empty_target, (void)0);
}

static BENCH_KERNEL void run_naive(naive_list *l, size_t rounds, double *res, size_t *nlive) {
    PATTERN_LOOP(naive_alloc(l), naive_free(l, p));
}

static BENCH_KERNEL void run_glibc(size_t size, size_t rounds, double *res, size_t *nlive) {
    PATTERN_LOOP(malloc(size), free(p));
}

static BENCH_KERNEL void run_arena(pk_arena *a, size_t size, size_t rounds, double *res,
                                   size_t *nlive) {
    PATTERN_LOOP(pk_arena_alloc(a, size, 0), (void)0);
}

static BENCH_KERNEL void run_pool(pk_pool *pool, size_t rounds, double *res, size_t *nlive) {
    PATTERN_LOOP(pk_pool_alloc(pool), pk_pool_free(pool, p));
}

typedef struct job {
    int pattern, contender;
    size_t rounds;
} job;

/* Runs in a forked child. */
static void child(void *arg, double *res) {
    const job *j = arg;
    const pattern *pt = &patterns[j->pattern];
    size_t n = 0;
    switch (j->contender) {
    case C_EMPTY:
        run_empty(j->rounds, res, &n);
        break;
    case C_NAIVE: {
        naive_list l = {NULL, NULL, NULL, (pt->size + 15) & ~(size_t)15};
        run_naive(&l, j->rounds, res, &n);
        break;
    }
    case C_GLIBC:
        run_glibc(pt->size, j->rounds, res, &n);
        for (size_t i = 0; i < n; i++) free(live_out[i]);
        break;
    case C_ARENA: {
        pk_arena *a = pk_arena_create(0);
        if (!a) _exit(3);
        run_arena(a, pt->size, j->rounds, res, &n);
        pk_arena_reset(a);
        pk_arena_destroy(a);
        break;
    }
    case C_POOL: {
        pk_pool *pool = pk_pool_create(&(pk_pool_config){.name = "pattern", .size = pt->size});
        if (!pool) _exit(3);
        run_pool(pool, j->rounds, res, &n);
        pk_pool_free_bulk(pool, live_out, n);
        pk_pool_stats st;
        pk_pool_stats_get(pool, &st);
        res[R_RESERVED] = (double)st.bytes_reserved;
        res[R_TRIMMED] = (double)pk_pool_trim(pool);
        pk_pool_stats_get(pool, &st);
        res[R_RELEASED] = (double)st.slabs_released;
        res[R_SLABS] = (double)st.slabs;
        pk_pool_destroy(pool);
        break;
    }
    }
}

static double mib(double b) { return b / (1024.0 * 1024.0); }

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 7);
    const char *only = NULL;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--only") == 0) only = argv[i + 1];
    bench_header("random fill pattern (LAB.md section 5, the Zig typed memory pool benchmark)",
                 &o);
    printf("rounds: fill = len(open)/256; free a random open object if random() <= fill; "
           "allocate and touch one if random() >= fill; seed 0x%llx\n",
           (unsigned long long)SEED);
    printf("each run is a forked child; net = contender min - empty harness min; peak RSS = "
           "child's VmHWM - its VmRSS at start\n");

    int pass_all = 1;
    for (int pi = 0; pi < 3; pi++) {
        const pattern *pt = &patterns[pi];
        if (only && strcmp(only, pt->name) != 0) continue;
        size_t rounds = o.quick ? pt->rounds / 5 : pt->rounds;
        bench_series t[NCONT] = {{{0}, 0}}, rss[NCONT] = {{{0}, 0}};
        double last[NCONT][NRES + 1];
        int failed[NCONT] = {0};
        memset(last, 0, sizeof last);

        for (int rep = -1; rep < o.reps; rep++) {
            for (int c = 0; c < NCONT; c++) {
                job j = {pi, c, rep < 0 ? rounds / 4 : rounds};
                double out[NRES + 1];
                if (bench_in_child(child, &j, out, NRES) != 0) {
                    failed[c] = 1;
                    continue;
                }
                if (rep < 0) continue;
                bench_add(&t[c], out[R_NS]);
                bench_add(&rss[c], out[NRES]);
                memcpy(last[c], out, sizeof out);
            }
        }

        printf("\npattern %s: %zu B objects, %zu rounds, %.0f allocations, peak %.0f live\n",
               pt->name, pt->size, rounds, last[C_EMPTY][R_ALLOCS], last[C_EMPTY][R_PEAK]);
        printf("  %-34s %10s %-5s %-25s  %s\n", "contender", "median", "", "[min - max]",
               "net per round | peak RSS growth");
        double empty_min = bench_min(&t[C_EMPTY]);
        double net[NCONT];
        for (int c = 0; c < NCONT; c++) {
            net[c] = bench_min(&t[c]) - empty_min;
            if (failed[c] && t[c].n == 0) {
                bench_row_na(cont_label[c], "the child process failed");
                continue;
            }
            char extra[128];
            snprintf(extra, sizeof extra, "net %8.2f ns | %8.1f MiB", c == C_EMPTY ? 0.0 : net[c],
                     mib(bench_median(&rss[c])));
            bench_row(cont_label[c], &t[c], "ns", extra);
        }
        printf("  pk_pool memory: %.1f MiB reserved after the rounds (all freed), pk_pool_trim "
               "released %.1f MiB; stats: slabs_released %.0f, slabs left %.0f\n",
               mib(last[C_POOL][R_RESERVED]), mib(last[C_POOL][R_TRIMMED]),
               last[C_POOL][R_RELEASED], last[C_POOL][R_SLABS]);

        int gives_back = last[C_POOL][R_RELEASED] > 0 || last[C_POOL][R_TRIMMED] > 0;
        if (pi < 2) {
            pass_all &= bench_target(net[C_POOL] <= net[C_NAIVE] + 0.5,
                                     "pattern %s: pk_pool net within 0.5 ns of the naive free "
                                     "list: %.2f vs %.2f ns (diff %+.2f)",
                                     pt->name, net[C_POOL], net[C_NAIVE],
                                     net[C_POOL] - net[C_NAIVE]);
        } else {
            pass_all &= bench_target(
                net[C_POOL] <= net[C_NAIVE] && gives_back,
                "pattern %s: pk_pool net no more than the naive free list's (standing in for Zig "
                "MemoryPool, the same algorithm): %.2f vs %.2f ns, and gives memory back "
                "(slabs_released %.0f, trim released %.1f MiB)",
                pt->name, net[C_POOL], net[C_NAIVE], last[C_POOL][R_RELEASED],
                mib(last[C_POOL][R_TRIMMED]));
        }
    }
    printf("pattern targets: %s\n", pass_all ? "all pass" : "some FAIL");
    return 0;
}
