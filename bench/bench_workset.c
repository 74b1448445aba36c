/* Working sets at realistic scale (issue 9, targets 1 and 2).
 *
 * Allocate N objects (N = 1,000 to 1,000,000), touch each (one word
 * written), free all of them newest first (LIFO), oldest first (FIFO) or in a
 * fixed random order, and repeat. The loop is lab/workset.h, the same one the
 * lab's `workset` experiment runs. Contenders, each with the same loop body:
 *
 *   empty loop        the loop alone: "allocation" returns one static buffer
 *   naive free list   a malloc'd struct {head, bump, end} (never a global the
 *                     compiler could keep in a register), refilled from 1 MiB
 *                     blocks from malloc, inlined; never gives memory back
 *   pk_pool           a pool of that size, inline fast paths, static library
 *   glibc malloc/free, and mimalloc, jemalloc (mallocx/dallocx), tcmalloc
 *                     loaded at run time (peers.h)
 *
 * Each measurement runs in a forked child (bench_in_child) with a fresh
 * context: the code warm-up (workset.h), one untimed first phase that brings
 * the memory in, then repeated phases, about --pairs pairs in all (500,000;
 * at least one phase; fewer when they pass 250 ms). A warm-up repetition over
 * the small N comes first (not recorded). Figures: ns per allocate+free
 * pair, gross (the empty loop's line shows the loop's own cost), and minor
 * page faults (getrusage ru_minflt) per repeated phase. Contenders are
 * interleaved within each repetition, starting with a different one each
 * time; ratios are medians of per-repetition ratios.
 *
 * Targets (issue 9):
 *   LIFO, FIFO  pk_pool <= the larger of 0.75x the fastest of glibc,
 *               mimalloc, jemalloc and tcmalloc, and 1.3x the naive list
 *   random      pk_pool <= 1.0x the fastest of the four
 *   faults      pk_pool: no page faults in a repeated phase (goal 0; the
 *               peers' counts are printed beside)
 * judged at every N, at the worst size (one line per order and N).
 *
 * Sizes 16, 64 and 256 B, N = 1k, 10k, 100k, 1M (--quick: 64 B; 1k, 100k,
 * 1M; 200,000 pairs). About a minute and a half on a quiet 2-core machine,
 * --quick a quarter of that.
 *
 * Usage: bench_workset [--reps N] [--quick] [--pairs N] [--no-peers]
 */
#include "harness.h"
#include "peers.h"
#include "../lab/workset.h"

#include <math.h>
#include <poolkit/pool.h>

#define CAP_NS 250e6

/* ---- the naive free list, in a heap struct ---- */

typedef struct naive_heap {
    void *head;        /* free objects, linked through their first word */
    char *bump, *end;  /* the unused part of the current block */
    size_t size;
    void *blocks;      /* every block, linked through its first word */
} naive_heap;

#define NAIVE_BLOCK ((size_t)1 << 20)

static BENCH_NOINLINE void *naive_refill(naive_heap *h) {
    char *b = malloc(NAIVE_BLOCK);
    if (!b) abort();
    *(void **)b = h->blocks;
    h->blocks = b;
    h->bump = b + 64 + h->size;
    h->end = b + NAIVE_BLOCK;
    return b + 64;
}

static inline void *naive_alloc(naive_heap *h) {
    void *p = h->head;
    if (__builtin_expect(p != NULL, 1)) {
        h->head = *(void **)p;
        return p;
    }
    if (__builtin_expect(h->bump + h->size <= h->end, 1)) {
        p = h->bump;
        h->bump += h->size;
        return p;
    }
    return naive_refill(h);
}

static inline void naive_free(naive_heap *h, void *p) {
    *(void **)p = h->head;
    h->head = p;
}

static void *naive_open(size_t size) {
    naive_heap *h = calloc(1, sizeof *h);
    if (h) h->size = (size + 15) & ~(size_t)15;
    return h;
}

static void naive_close(void *ctx) {
    naive_heap *h = ctx;
    while (h->blocks) {
        void *next = *(void **)h->blocks;
        free(h->blocks);
        h->blocks = next;
    }
    free(h);
}

/* ---- the contenders' kernels: the same loop, one function each ---- */

static bench_peers peers;
static char empty_target[64];

#define NO_END(c) ((void)(c))
#define KERNEL(name, ALLOC, FREE)                                                             \
    static BENCH_KERNEL double ws_##name(void *ctx, size_t size, long n, int order,           \
                                         const uint32_t *perm, void **objs, long phases,      \
                                         workset_stats *st) {                                 \
        (void)ctx;                                                                            \
        (void)size;                                                                           \
        double ns = 0;                                                                        \
        WORKSET_RUN(ALLOC, FREE, NO_END, ctx, size, n, order, perm, objs, phases, CAP_NS,     \
                    bench_now_ns, ns, st);                                                    \
        return ns;                                                                            \
    }

#define A_EMPTY(c, sz) ((void)(sz), (void *)empty_target)
#define F_EMPTY(c, p, sz) BENCH_ESCAPE(p)
#define A_NAIVE(c, sz) naive_alloc((naive_heap *)(c))
#define F_NAIVE(c, p, sz) naive_free((naive_heap *)(c), (p))
#define A_POOL(c, sz) pk_pool_alloc((pk_pool *)(c))
#define F_POOL(c, p, sz) pk_pool_free((pk_pool *)(c), (p))
#define A_GLIBC(c, sz) malloc(sz)
#define F_GLIBC(c, p, sz) free(p)
#define A_MI(c, sz) peers.mi_malloc(sz)
#define F_MI(c, p, sz) peers.mi_free(p)
#define A_JE(c, sz) peers.mallocx((sz), 0)
#define F_JE(c, p, sz) peers.dallocx((p), 0)
#define A_TC(c, sz) peers.tc_malloc(sz)
#define F_TC(c, p, sz) peers.tc_free(p)

KERNEL(empty, A_EMPTY, F_EMPTY)
KERNEL(naive, A_NAIVE, F_NAIVE)
KERNEL(pool, A_POOL, F_POOL)
KERNEL(glibc, A_GLIBC, F_GLIBC)
KERNEL(mimalloc, A_MI, F_MI)
KERNEL(jemalloc, A_JE, F_JE)
KERNEL(tcmalloc, A_TC, F_TC)

static void *pool_open(size_t size) {
    return pk_pool_create(&(pk_pool_config){.name = "bench workset", .size = size});
}
static void *hard_open(size_t size) {
    return pk_pool_create(
        &(pk_pool_config){.name = "bench workset hardened", .size = size, .flags = PK_POOL_HARDENED});
}
static void pool_close(void *ctx) { pk_pool_destroy(ctx); }
static void *no_open(size_t size) {
    (void)size;
    return NULL;
}
static void no_close(void *ctx) { (void)ctx; }

typedef double (*ws_kernel)(void *, size_t, long, int, const uint32_t *, void **, long,
                            workset_stats *);

enum { C_EMPTY, C_NAIVE, C_POOL, C_HARD, C_GLIBC, C_MI, C_JE, C_TC, NCONT };
static struct contender {
    char label[96];
    void *(*open)(size_t);
    void (*close)(void *);
    ws_kernel kernel;
    const char *why; /* non-NULL: not available */
} cont[NCONT] = {
    {"empty loop (no allocator)", no_open, no_close, ws_empty, NULL},
    {"naive free list (heap struct)", naive_open, naive_close, ws_naive, NULL},
    {"pk_pool", pool_open, pool_close, ws_pool, NULL},
    {"pk_pool HARDENED", hard_open, pool_close, ws_pool, NULL},
    {"glibc malloc", no_open, no_close, ws_glibc, NULL},
    {"mimalloc", no_open, no_close, ws_mimalloc, NULL},
    {"jemalloc", no_open, no_close, ws_jemalloc, NULL},
    {"tcmalloc", no_open, no_close, ws_tcmalloc, NULL},
};
static const int mallocs[] = {C_GLIBC, C_MI, C_JE, C_TC};
#define NMALLOCS 4

/* ---- one measurement, in a child ---- */

typedef struct child_arg {
    int c;
    size_t size;
    long n, phases;
    int order;
    const uint32_t *perm;
} child_arg;

/* out[0] ns per pair, [1] faults in the first phase, [2] faults per repeated
 * phase; out[3] (bench_in_child) peak RSS growth in bytes. */
static void child(void *argp, double *out) {
    child_arg *a = argp;
    struct contender *k = &cont[a->c];
    void **objs = workset_objs(a->n);
    void *ctx = k->open(a->size);
    if (!objs || ((a->c == C_POOL || a->c == C_HARD) && !ctx)) {
        out[0] = -1;
        return;
    }
    workset_stats st = {0, 0, 0};
    k->kernel(ctx, a->size, WORKSET_WARM_N, a->order, workset_warm_perm(), objs, 1, &st);
    double ns = k->kernel(ctx, a->size, a->n, a->order, a->perm, objs, a->phases, &st);
    k->close(ctx);
    workset_objs_free(objs, a->n);
    out[0] = ns / ((double)st.phases * (double)a->n);
    out[1] = (double)st.faults_first;
    out[2] = (double)st.faults_repeat / (double)st.phases;
}

/* ---- the driver ---- */

static double max2(double a, double b) { return a > b ? a : b; }

#define MAXS 3
#define MAXN 4

/* The random order for N: the lab's (lab/shared.h, seed 0x5eed). */
static uint32_t *make_perm(long n) {
    uint32_t *p = malloc(sizeof *p * (size_t)n);
    if (!p) abort();
    shared_permutation(p, n, 0x5eed);
    return p;
}

static bench_series t[MAXS][MAXN][WORKSET_ORDERS][NCONT];
static bench_series faults[MAXS][MAXN][WORKSET_ORDERS][NCONT];
static bench_series first_faults[MAXS][MAXN][NCONT], rss[MAXS][MAXN][NCONT];
/* per-repetition ratios of pk_pool: to the LIFO/FIFO bound, to the fastest malloc */
static bench_series r_bound[MAXS][MAXN][WORKSET_ORDERS], r_malloc[MAXS][MAXN][WORKSET_ORDERS];
static bench_series r_naive[MAXS][MAXN][WORKSET_ORDERS];
/* per-repetition ratios of the hardened pool to the default one (issue 10) */
static bench_series r_hard[MAXS][MAXN][WORKSET_ORDERS];

/* "1k", "10k", "1M": buf holds 24 bytes. */
static const char *fmt_n(long n, char *buf) {
    if (n >= 1000000 && n % 1000000 == 0) snprintf(buf, 24, "%ldM", n / 1000000);
    else if (n >= 1000 && n % 1000 == 0) snprintf(buf, 24, "%ldk", n / 1000);
    else snprintf(buf, 24, "%ld", n);
    return buf;
}

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 5);
    int want_peers = !bench_arg_flag(&o, "--no-peers");
    if (want_peers) bench_peers_reexec(argv);
    long pairs = bench_arg_long(&o, "--pairs", o.quick ? 200000 : 500000);
    static const size_t all_sizes[MAXS] = {16, 64, 256};
    static const long all_ns[MAXN] = {1000, 10000, 100000, 1000000};
    size_t sizes[MAXS];
    long ns_[MAXN];
    int nsz, nn;
    if (o.quick) {
        sizes[0] = 64, nsz = 1;
        ns_[0] = 1000, ns_[1] = 100000, ns_[2] = 1000000, nn = 3;
    } else {
        memcpy(sizes, all_sizes, sizeof sizes), nsz = MAXS;
        memcpy(ns_, all_ns, sizeof ns_), nn = MAXN;
    }

    bench_header("working sets: allocate N objects, touch each, free all (LIFO, FIFO, random), "
                 "repeat (issue 9)", &o);
    printf("sizes:");
    for (int s = 0; s < nsz; s++) printf(" %zu", sizes[s]);
    printf(" B; N:");
    for (int k = 0; k < nn; k++) printf(" %ld", ns_[k]);
    printf("; about %ld pairs timed per measurement (at least one phase, at most %.0f ms), each "
           "in a fresh child process after an untimed first phase\n", pairs, CAP_NS / 1e6);

    if (want_peers) {
        bench_peers_load(&peers);
        snprintf(cont[C_MI].label, sizeof cont[0].label, "%s", peers.mi_name);
        snprintf(cont[C_JE].label, sizeof cont[0].label, "%s mallocx/dallocx", peers.je_name);
        snprintf(cont[C_TC].label, sizeof cont[0].label, "%s", peers.tc_name);
        if (!peers.mi_malloc) cont[C_MI].why = peers.mi_why;
        if (!peers.mallocx) cont[C_JE].why = peers.je_why;
        if (!peers.tc_malloc) cont[C_TC].why = peers.tc_why;
    } else {
        cont[C_MI].why = cont[C_JE].why = cont[C_TC].why = "skipped (--no-peers)";
    }

    uint32_t *perm[MAXN];
    for (int k = 0; k < nn; k++) perm[k] = make_perm(ns_[k]);

    int failed = 0;
    for (int rep = -1; rep < o.reps; rep++) {
        for (int s = 0; s < nsz; s++) {
            for (int k = 0; k < nn; k++) {
                long n = ns_[k];
                if (rep < 0 && n > 10000) continue; /* the warm-up: small N only */
                long want = rep < 0 ? pairs / 4 : pairs;
                long phases = want / n > 0 ? want / n : 1;
                for (int ord = 0; ord < WORKSET_ORDERS; ord++) {
                    double v[NCONT][4];
                    int ok[NCONT] = {0};
                    for (int j = 0; j < NCONT; j++) {
                        int c = (j + (rep > 0 ? rep : 0)) % NCONT;
                        if (cont[c].why) continue;
                        child_arg a = {c, sizes[s], n, phases, ord, perm[k]};
                        ok[c] = bench_in_child(child, &a, v[c], 3) == 0 && v[c][0] > 0;
                        if (!ok[c] && rep < 0) {
                            fprintf(stderr, "%s failed (N = %ld, %zu B)\n", cont[c].label, n, sizes[s]);
                            failed = 1;
                        }
                    }
                    if (rep < 0) continue;
                    for (int c = 0; c < NCONT; c++) {
                        if (!ok[c]) continue;
                        bench_add(&t[s][k][ord][c], v[c][0]);
                        bench_add(&faults[s][k][ord][c], v[c][2]);
                        if (ord == WORKSET_LIFO) {
                            bench_add(&first_faults[s][k][c], v[c][1]);
                            bench_add(&rss[s][k][c], v[c][3]);
                        }
                    }
                    if (ok[C_POOL] && ok[C_HARD])
                        bench_add(&r_hard[s][k][ord], v[C_HARD][0] / v[C_POOL][0]);
                    double fastest = INFINITY;
                    for (int m = 0; m < NMALLOCS; m++)
                        if (ok[mallocs[m]] && v[mallocs[m]][0] < fastest) fastest = v[mallocs[m]][0];
                    if (!ok[C_POOL] || !ok[C_NAIVE] || !isfinite(fastest)) continue;
                    double bound = max2(0.75 * fastest, 1.3 * v[C_NAIVE][0]);
                    bench_add(&r_bound[s][k][ord], v[C_POOL][0] / bound);
                    bench_add(&r_malloc[s][k][ord], v[C_POOL][0] / fastest);
                    bench_add(&r_naive[s][k][ord], v[C_POOL][0] / v[C_NAIVE][0]);
                }
            }
        }
    }

    char b1[24];
    for (int s = 0; s < nsz; s++) {
        for (int ord = 0; ord < WORKSET_ORDERS; ord++) {
            printf("\n%s, %zu B: ns per allocate+free pair (median of %d)\n  %-34s",
                   workset_order_names[ord], sizes[s], o.reps, "contender \\ N");
            for (int k = 0; k < nn; k++) printf(" %9s", fmt_n(ns_[k], b1));
            printf("   spread (max-min)/median, worst N\n");
            for (int c = 0; c < NCONT; c++) {
                if (cont[c].why) {
                    bench_row_na(cont[c].label, cont[c].why);
                    continue;
                }
                printf("  %-34s", cont[c].label);
                double worst = 0;
                for (int k = 0; k < nn; k++) {
                    const bench_series *x = &t[s][k][ord][c];
                    printf(" %9.2f", bench_median(x));
                    double m = bench_median(x);
                    if (m > 0 && (bench_max(x) - bench_min(x)) / m > worst)
                        worst = (bench_max(x) - bench_min(x)) / m;
                }
                printf("   %5.0f%%\n", worst * 100);
            }
            printf("  %-34s", "pk_pool / fastest of the mallocs");
            for (int k = 0; k < nn; k++) printf(" %8.2fx", bench_median(&r_malloc[s][k][ord]));
            printf("\n  %-34s", "HARDENED / default pk_pool");
            for (int k = 0; k < nn; k++) printf(" %8.2fx", bench_median(&r_hard[s][k][ord]));
            printf("\n  %-34s", "pk_pool / naive free list");
            for (int k = 0; k < nn; k++) printf(" %8.2fx", bench_median(&r_naive[s][k][ord]));
            if (ord != WORKSET_RANDOM) {
                printf("\n  %-34s", "pk_pool / bound (target <= 1)");
                for (int k = 0; k < nn; k++) printf(" %8.2fx", bench_median(&r_bound[s][k][ord]));
            }
            printf("\n");
            if (ord != WORKSET_RANDOM)
                printf("  (bound: the larger of 0.75x the fastest malloc and 1.3x the naive list, "
                       "per repetition)\n");
        }
        printf("\n%zu B: minor page faults per repeated phase (median; the most over the three "
               "orders), faults in the first phase (LIFO), peak RSS growth per object at N = %s "
               "(LIFO, net of the empty loop's)\n  %-34s", sizes[s], fmt_n(ns_[nn - 1], b1),
               "contender \\ N");
        for (int k = 0; k < nn; k++) printf(" %9s", fmt_n(ns_[k], b1));
        printf(" %11s %9s\n", "first phase", "B/object");
        double empty_rss = bench_median(&rss[s][nn - 1][C_EMPTY]);
        for (int c = 0; c < NCONT; c++) {
            if (cont[c].why) continue;
            printf("  %-34s", cont[c].label);
            for (int k = 0; k < nn; k++) {
                double worst = 0;
                for (int ord = 0; ord < WORKSET_ORDERS; ord++)
                    worst = max2(worst, bench_median(&faults[s][k][ord][c]));
                printf(" %9.2f", worst);
            }
            printf(" %11.0f %9.1f\n", bench_median(&first_faults[s][nn - 1][c]),
                   (bench_median(&rss[s][nn - 1][c]) - empty_rss) / (double)ns_[nn - 1]);
        }
    }

    /* Targets: one line per order and N, judged at the worst size. */
    printf("\n");
    int pass = 1;
    for (int ord = 0; ord < WORKSET_ORDERS; ord++) {
        for (int k = 0; k < nn; k++) {
            int ws = 0; /* the worst size */
            double worst = -1;
            for (int s = 0; s < nsz; s++) {
                double r = bench_median(ord == WORKSET_RANDOM ? &r_malloc[s][k][ord]
                                                              : &r_bound[s][k][ord]);
                if (r > worst) worst = r, ws = s;
            }
            double pk = bench_median(&t[ws][k][ord][C_POOL]);
            double nv = bench_median(&t[ws][k][ord][C_NAIVE]);
            int fm = -1;
            for (int m = 0; m < NMALLOCS; m++)
                if (!cont[mallocs[m]].why &&
                    (fm < 0 || bench_median(&t[ws][k][ord][mallocs[m]]) <
                                   bench_median(&t[ws][k][ord][fm])))
                    fm = mallocs[m];
            if (fm < 0) {
                printf("target: working set %s, N = %s: not available (no malloc peer)\n",
                       workset_order_names[ord], fmt_n(ns_[k], b1));
                continue;
            }
            double fmv = bench_median(&t[ws][k][ord][fm]);
            if (ord == WORKSET_RANDOM)
                pass &= bench_target(worst <= 1.0,
                                     "working set random, N = %-4s pk_pool <= 1.0x the fastest "
                                     "malloc, every size: worst %zu B: %.2fx (%.2f ns vs %s %.2f)",
                                     fmt_n(ns_[k], b1), sizes[ws], worst, pk, cont[fm].label, fmv);
            else
                pass &= bench_target(
                    worst <= 1.0,
                    "working set %s,   N = %-4s pk_pool <= max(0.75x fastest malloc, 1.3x naive "
                    "list), every size: worst %zu B: %.2fx the bound (%.2f ns; %s %.2f, naive %.2f)",
                    workset_order_names[ord], fmt_n(ns_[k], b1), sizes[ws], worst, pk,
                    cont[fm].label, fmv, nv);
        }
    }
    /* Issue 10: hardened pools cost at most 1.15x the default, judged at
     * the worst size for each order and N. */
    for (int ord = 0; ord < WORKSET_ORDERS; ord++) {
        for (int k = 0; k < nn; k++) {
            int ws = 0;
            double worst = -1;
            for (int s = 0; s < nsz; s++)
                if (bench_median(&r_hard[s][k][ord]) > worst) worst = bench_median(&r_hard[s][k][ord]), ws = s;
            pass &= bench_target(worst <= 1.15,
                                 "working set %-6s N = %-4s PK_POOL_HARDENED <= 1.15x the default "
                                 "pool, every size: worst %zu B: %.2fx (%.2f vs %.2f ns)",
                                 workset_order_names[ord], fmt_n(ns_[k], b1), sizes[ws], worst,
                                 bench_median(&t[ws][k][ord][C_HARD]),
                                 bench_median(&t[ws][k][ord][C_POOL]));
        }
    }
    double pk_faults = 0;
    char where[96] = "";
    for (int s = 0; s < nsz; s++)
        for (int k = 0; k < nn; k++)
            for (int ord = 0; ord < WORKSET_ORDERS; ord++) {
                double f = bench_median(&faults[s][k][ord][C_POOL]);
                if (f > pk_faults) {
                    pk_faults = f;
                    snprintf(where, sizeof where, " (%s, N = %s, %zu B)", workset_order_names[ord],
                             fmt_n(ns_[k], b1), sizes[s]);
                }
            }
    char peers_line[256] = "";
    for (int m = 0; m < NMALLOCS; m++) {
        int c = mallocs[m];
        if (cont[c].why) continue;
        double f = 0;
        for (int s = 0; s < nsz; s++)
            for (int k = 0; k < nn; k++)
                for (int ord = 0; ord < WORKSET_ORDERS; ord++)
                    f = max2(f, bench_median(&faults[s][k][ord][c]));
        size_t len = strlen(peers_line);
        snprintf(peers_line + len, sizeof peers_line - len, "%s%s %.0f", len ? ", " : "",
                 cont[c].label, f);
    }
    pass &= bench_target(pk_faults <= 0.01,
                         "working sets, no refaulting: pk_pool minor faults per repeated phase, "
                         "most at any N, order, size: %.2f%s (goal 0; peers' most: %s)",
                         pk_faults, where, peers_line);
    printf("working-set targets: %s\n", pass ? "all pass" : "some FAIL");
    for (int k = 0; k < nn; k++) free(perm[k]);
    return failed;
}
