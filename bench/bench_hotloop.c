/* The hot loop: allocate, touch one byte, free, for object sizes 16 to 256 B.
 *
 * The reference is a naive free list inlined into the loop (a global singly
 * linked list refilled from a static slab): about the least a fixed-size
 * allocator can do. Beside it: the same list behind real calls, pk_pool
 * (default and PK_POOL_LOCAL) compiled the way users compile against the
 * installed headers, glibc malloc, and the peers mimalloc, jemalloc and
 * tcmalloc, loaded at run time (peers.h).
 *
 * Built twice by bench/CMakeLists.txt:
 *   bench_hotloop         pk_pool's inline fast paths, static library;
 *                         targets: default <= 1.3x, LOCAL <= 1.1x the naive inlined list
 *   bench_hotloop_shared  -DPK_NO_INLINE, shared library: every pk call is a real
 *                         call into libpoolkit.so; target: <= 1.2x the naive list
 *                         behind calls
 *
 * Usage: bench_hotloop [--reps N] [--quick] [--iters N] [--peers|--no-peers]
 */
#include "harness.h"
#include "peers.h"

#include <poolkit/pool.h>

#ifdef PK_NO_INLINE
#  define PK_MODE_CALLS 1
#else
#  define PK_MODE_CALLS 0
#endif

/* ---- the reference: a naive free list ---- */

typedef struct naive_node { struct naive_node *next; } naive_node;

static naive_node *naive_head;
static _Alignas(64) char naive_slab[1 << 16];
static size_t naive_bump, naive_size;

static void naive_reset(size_t size) {
    naive_head = NULL;
    naive_bump = 0;
    naive_size = size;
}

static BENCH_NOINLINE void *naive_refill(void) {
    if (naive_bump + naive_size > sizeof naive_slab) abort();
    void *p = naive_slab + naive_bump;
    naive_bump += naive_size;
    return p;
}

static inline void *naive_alloc(void) {
    naive_node *n = naive_head;
    if (__builtin_expect(n != NULL, 1)) {
        naive_head = n->next;
        return n;
    }
    return naive_refill();
}

static inline void naive_free(void *p) {
    naive_node *n = p;
    n->next = naive_head;
    naive_head = n;
}

/* The same list behind real calls. */
static BENCH_KERNEL void *naive_alloc_call(void) { return naive_alloc(); }
static BENCH_KERNEL void naive_free_call(void *p) { naive_free(p); }

/* ---- the loops: one kernel per contender, identical bodies ---- */

#define HOT_LOOP(ALLOC, FREE) BENCH_HOT_LOOP(n, ALLOC, FREE)

static char empty_target[64];
static bench_peers peers;

static BENCH_KERNEL void loop_empty(size_t n) { HOT_LOOP(empty_target, (void)0) }
static BENCH_KERNEL void loop_naive(size_t n) { HOT_LOOP(naive_alloc(), naive_free(p)) }
static BENCH_KERNEL void loop_naive_call(size_t n) {
    HOT_LOOP(naive_alloc_call(), naive_free_call(p))
}
static BENCH_KERNEL void loop_pool(size_t n, pk_pool *pool) {
    HOT_LOOP(pk_pool_alloc(pool), pk_pool_free(pool, p))
}
static BENCH_KERNEL void loop_malloc(size_t n, size_t size) { HOT_LOOP(malloc(size), free(p)) }
static BENCH_KERNEL void loop_mimalloc(size_t n, size_t size) {
    HOT_LOOP(peers.mi_malloc(size), peers.mi_free(p))
}
static BENCH_KERNEL void loop_jemalloc(size_t n, size_t size) {
    HOT_LOOP(peers.mallocx(size, 0), peers.dallocx(p, 0))
}
static BENCH_KERNEL void loop_tcmalloc(size_t n, size_t size) {
    HOT_LOOP(peers.tc_malloc(size), peers.tc_free(p))
}

enum { C_EMPTY, C_NAIVE, C_NAIVE_CALL, C_POOL, C_LOCAL, C_HARD, C_DEBUG, C_GLIBC, C_MI, C_JE, C_TC, NCONT };

static char cont_label[NCONT][96];
static const char *cont_why[NCONT]; /* non-NULL: not available */

#define NSIZES 5
static const size_t sizes[NSIZES] = {16, 32, 64, 128, 256};

/* Runs contender c once for n pairs at the given size; ns per pair. */
static double run_once(int c, size_t size, size_t n, pk_pool *pool, pk_pool *local,
                       pk_pool *hard, pk_pool *debug) {
    double t0 = bench_now_ns();
    switch (c) {
    case C_EMPTY: loop_empty(n); break;
    case C_NAIVE: naive_reset(size); loop_naive(n); break;
    case C_NAIVE_CALL: naive_reset(size); loop_naive_call(n); break;
    case C_POOL: loop_pool(n, pool); break;
    case C_LOCAL: loop_pool(n, local); break;
    case C_HARD: loop_pool(n, hard); break;
    case C_DEBUG: loop_pool(n / 8, debug); return (bench_now_ns() - t0) / (double)(n / 8);
    case C_GLIBC: loop_malloc(n, size); break;
    case C_MI: loop_mimalloc(n, size); break;
    case C_JE: loop_jemalloc(n, size); break;
    case C_TC: loop_tcmalloc(n, size); break;
    }
    return (bench_now_ns() - t0) / (double)n;
}

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 9);
    size_t iters = (size_t)bench_arg_long(&o, "--iters", o.quick ? 2000000 : 10000000);
    /* The shared build compares calls with calls; the peers, measured by the
     * static build, are skipped there unless asked for. */
    int want_peers = PK_MODE_CALLS ? bench_arg_flag(&o, "--peers") : !bench_arg_flag(&o, "--no-peers");
    if (want_peers) bench_peers_reexec(argv);

    bench_header(PK_MODE_CALLS
                     ? "hot loop through calls: allocate, touch 1 byte, free (pk via libpoolkit.so)"
                     : "hot loop: allocate, touch 1 byte, free (pk inline, static library)",
                 &o);
    printf("iterations per run: %zu; ns per alloc+free pair; ratio = median over repetitions of "
           "(contender / reference in the same repetition)\n",
           iters);

    if (want_peers) {
        bench_peers_load(&peers);
        if (!peers.mi_malloc) cont_why[C_MI] = peers.mi_why;
        if (!peers.mallocx) cont_why[C_JE] = peers.je_why;
        if (!peers.tc_malloc) cont_why[C_TC] = peers.tc_why;
        if (peers.mallocx) printf("note: re-executed with GLIBC_TUNABLES=%s so jemalloc loads "
                                  "under dlopen\n", BENCH_TLS_TUNABLE);
    } else {
        cont_why[C_MI] = cont_why[C_JE] = cont_why[C_TC] = "skipped (run with --peers)";
    }
    snprintf(cont_label[C_EMPTY], sizeof cont_label[0], "empty loop (touch only)");
    snprintf(cont_label[C_NAIVE], sizeof cont_label[0], "naive free list, inlined");
    snprintf(cont_label[C_NAIVE_CALL], sizeof cont_label[0], "naive free list, behind calls");
    snprintf(cont_label[C_POOL], sizeof cont_label[0], PK_MODE_CALLS ? "pk_pool default, calls (.so)"
                                                   : "pk_pool default, inline");
    snprintf(cont_label[C_LOCAL], sizeof cont_label[0], PK_MODE_CALLS ? "pk_pool LOCAL, calls (.so)"
                                                    : "pk_pool LOCAL, inline");
    snprintf(cont_label[C_HARD], sizeof cont_label[0], "pk_pool HARDENED");
    snprintf(cont_label[C_DEBUG], sizeof cont_label[0], "pk_pool DEBUG");
    snprintf(cont_label[C_GLIBC], sizeof cont_label[0], "glibc malloc/free");
    snprintf(cont_label[C_MI], sizeof cont_label[0], "%s mi_malloc/mi_free", peers.mi_name[0] ? peers.mi_name : "mimalloc");
    snprintf(cont_label[C_JE], sizeof cont_label[0], "%s mallocx/dallocx", peers.je_name[0] ? peers.je_name : "jemalloc");
    snprintf(cont_label[C_TC], sizeof cont_label[0], "%s tc_malloc/tc_free", peers.tc_name[0] ? peers.tc_name : "tcmalloc");

    pk_pool *pool[NSIZES], *local[NSIZES], *hard[NSIZES], *debug[NSIZES];
    for (int s = 0; s < NSIZES; s++) {
        pool[s] = pk_pool_create(&(pk_pool_config){.name = "bench default", .size = sizes[s]});
        local[s] = pk_pool_create(
            &(pk_pool_config){.name = "bench local", .size = sizes[s], .flags = PK_POOL_LOCAL});
        hard[s] = pk_pool_create(
            &(pk_pool_config){.name = "bench hardened", .size = sizes[s], .flags = PK_POOL_HARDENED});
        debug[s] = pk_pool_create(
            &(pk_pool_config){.name = "bench debug", .size = sizes[s], .flags = PK_POOL_DEBUG});
        if (!pool[s] || !local[s] || !hard[s] || !debug[s]) {
            fprintf(stderr, "pk_pool_create(size %zu) failed: %s\n", sizes[s], strerror(errno));
            return 2;
        }
    }

    /* Reference of the ratios: the inlined list, or the list behind calls
     * when pk itself is called. */
    const int ref = PK_MODE_CALLS ? C_NAIVE_CALL : C_NAIVE;
    static bench_series t[NSIZES][NCONT], ratio[NSIZES][NCONT];

    /* Warm-up (not recorded), then the repetitions: sizes and contenders
     * interleaved inside each one. */
    for (int rep = -1; rep < o.reps; rep++) {
        size_t n = rep < 0 ? iters / 4 : iters;
        for (int s = 0; s < NSIZES; s++) {
            double v[NCONT] = {0};
            for (int c = 0; c < NCONT; c++) {
                if (cont_why[c]) continue;
                v[c] = run_once(c, sizes[s], n, pool[s], local[s], hard[s], debug[s]);
            }
            if (rep < 0) continue;
            for (int c = 0; c < NCONT; c++) {
                if (cont_why[c]) continue;
                bench_add(&t[s][c], v[c]);
                bench_add(&ratio[s][c], v[c] / v[ref]);
            }
        }
    }

    printf("\n  %-34s %10s %-5s %-25s  %s\n", "contender", "median", "", "[min - max]",
           PK_MODE_CALLS ? "x naive behind calls (net of empty loop)"
                         : "x naive inlined (net of empty loop)");
    for (int s = 0; s < NSIZES; s++) {
        printf("size %zu B\n", sizes[s]);
        double empty = bench_median(&t[s][C_EMPTY]);
        for (int c = 0; c < NCONT; c++) {
            if (cont_why[c]) {
                bench_row_na(cont_label[c], cont_why[c]);
                continue;
            }
            char extra[96] = "";
            if (c != C_EMPTY) {
                double net = bench_median(&t[s][c]) - empty;
                double ref_net = bench_median(&t[s][ref]) - empty;
                snprintf(extra, sizeof extra, "%6.2fx  (net %.2f ns, %.2fx)", bench_median(&ratio[s][c]),
                         net, ref_net > 0 ? net / ref_net : 0.0);
            }
            bench_row(cont_label[c], &t[s][c], "ns", extra);
        }
    }

    printf("\n");
    int pass = 1;
    for (int s = 0; s < NSIZES; s++) {
        double rp = bench_median(&ratio[s][C_POOL]), rl = bench_median(&ratio[s][C_LOCAL]);
        if (PK_MODE_CALLS) {
            pass &= bench_target(rp <= 1.2, "hot loop %3zu B, pk_pool default through calls <= 1.2x "
                                 "naive list behind calls: %.2fx (%.2f vs %.2f ns)", sizes[s], rp,
                                 bench_median(&t[s][C_POOL]), bench_median(&t[s][C_NAIVE_CALL]));
            pass &= bench_target(rl <= 1.2, "hot loop %3zu B, pk_pool LOCAL through calls   <= 1.2x "
                                 "naive list behind calls: %.2fx (%.2f vs %.2f ns)", sizes[s], rl,
                                 bench_median(&t[s][C_LOCAL]), bench_median(&t[s][C_NAIVE_CALL]));
        } else {
            pass &= bench_target(rp <= 1.3, "hot loop %3zu B, pk_pool default inline <= 1.3x naive "
                                 "inlined list: %.2fx (%.2f vs %.2f ns)", sizes[s], rp,
                                 bench_median(&t[s][C_POOL]), bench_median(&t[s][C_NAIVE]));
            pass &= bench_target(rl <= 1.1, "hot loop %3zu B, pk_pool LOCAL inline   <= 1.1x naive "
                                 "inlined list: %.2fx (%.2f vs %.2f ns)", sizes[s], rl,
                                 bench_median(&t[s][C_LOCAL]), bench_median(&t[s][C_NAIVE]));
        }
    }
    for (int s = 0; s < NSIZES && !PK_MODE_CALLS; s++) {
        double h = bench_median(&t[s][C_HARD]) / bench_median(&t[s][C_POOL]);
        double d = bench_median(&t[s][C_DEBUG]) / bench_median(&t[s][C_POOL]);
        pass &= bench_target(h <= 1.3, "hot loop %3zu B, PK_POOL_HARDENED <= 1.3x the default pool: "
                             "%.2fx (%.2f ns); PK_POOL_DEBUG costs %.1fx (%.2f ns, informative)",
                             sizes[s], h, bench_median(&t[s][C_HARD]), d, bench_median(&t[s][C_DEBUG]));
    }
    printf("hot loop targets (%s): %s\n", PK_MODE_CALLS ? "calls" : "inline",
           pass ? "all pass" : "some FAIL");

    for (int s = 0; s < NSIZES; s++) {
        pk_pool_destroy(pool[s]);
        pk_pool_destroy(local[s]);
        pk_pool_destroy(hard[s]);
        pk_pool_destroy(debug[s]);
    }
    return 0;
}
