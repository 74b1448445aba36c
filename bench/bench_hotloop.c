/* The hot loop: allocate, touch one byte, free, for object sizes 16 to 256 B
 * (the lab's hot kernel, lab/kernels.h).
 *
 * The reference is a naive free list inlined into the loop: about the least
 * a fixed-size allocator can do. Beside it: the same list
 * behind real calls, pk_pool (default, PK_POOL_LOCAL, HARDENED and DEBUG)
 * compiled the way users compile against the installed headers, glibc
 * malloc, and the peers mimalloc, jemalloc and tcmalloc (the lab's adapters,
 * loaded at run time).
 *
 * Built twice by bench/CMakeLists.txt:
 *   bench_hotloop         pk_pool's inline fast paths, static library;
 *                         targets: default <= 1.3x, LOCAL <= 1.1x the naive inlined list;
 *                         HARDENED <= 1.5x the default (its own inline
 *                         path; the median of per-repetition ratios to the
 *                         default pool, as every ratio here); DEBUG's cost beside,
 *                         for information
 *   bench_hotloop_shared  -DPK_NO_INLINE, shared library: every pk call is a real
 *                         call into libpoolkit.so; target: <= 1.2x the naive list
 *                         behind calls (no peers: it does not link the lab)
 *
 * Usage: bench_hotloop [--reps N] [--quick] [--iters N] [--no-peers]
 */
#include "harness.h"

#include <poolkit/pool.h>

#ifdef PK_NO_INLINE
#  define PK_MODE_CALLS 1
#else
#  define PK_MODE_CALLS 0
#endif

/* The lab's hot kernel compiled here four times: over pk_pool (inline or
 * calls, as this program is built), over nothing (the empty loop), and over
 * the reference below, inlined and behind calls. */
#define K_NAME pk
#define K_ALLOC(c, sz) pk_pool_alloc((pk_pool *)(c))
#define K_FREE(c, p, sz) pk_pool_free((pk_pool *)(c), (p))
#include "kernels.h"
#undef K_NAME

static char empty_buf[64];
#define K_NAME empty
#define K_ALLOC(c, sz) ((void)(c), (void *)empty_buf)
#define K_FREE(c, p, sz) LAB_ESCAPE(p)
#include "kernels.h"
#undef K_NAME

#include "naive_global.h"

#define K_NAME naive
#define K_ALLOC(c, sz) naive_alloc(sz)
#define K_FREE(c, p, sz) naive_free(p)
#include "kernels.h"
#undef K_NAME

static BENCH_KERNEL void *naive_alloc_call(size_t size) { return naive_alloc(size); }
static BENCH_KERNEL void naive_free_call(void *p) { naive_free(p); }
#define K_NAME naivecall
#define K_ALLOC(c, sz) naive_alloc_call(sz)
#define K_FREE(c, p, sz) naive_free_call(p)
#include "kernels.h"

enum { C_EMPTY, C_NAIVE, C_NAIVE_CALL, C_POOL, C_LOCAL, C_HARD, C_DEBUG, C_GLIBC, C_MI, C_JE, C_TC,
       NCONT };

#define NSIZES 5
static const size_t sizes[NSIZES] = {16, 32, 64, 128, 256};

static struct contender {
    char label[96];
    const char *lab_name;   /* the lab's adapter, or NULL: compiled here */
    unsigned pool_flags;    /* pk_pool contenders: the pool's flags */
    lab_allocator *a;
    void *ctx[NSIZES];
    const char *why;        /* non-NULL: not available */
} cont[NCONT] = {
    {"empty loop (touch only)", NULL, 0, NULL, {0}, NULL},
    {"naive free list, inlined", NULL, 0, NULL, {0}, NULL},
    {"naive free list, behind calls", NULL, 0, NULL, {0}, NULL},
    {"pk_pool default", NULL, 0, NULL, {0}, NULL},
    {"pk_pool LOCAL", NULL, PK_POOL_LOCAL, NULL, {0}, NULL},
    {"pk_pool HARDENED", NULL, PK_POOL_HARDENED, NULL, {0}, NULL},
    {"pk_pool DEBUG", NULL, PK_POOL_DEBUG, NULL, {0}, NULL},
    {"glibc malloc/free", "glibc malloc", 0, NULL, {0}, NULL},
    {"mimalloc", "mimalloc", 0, NULL, {0}, NULL},
    {"jemalloc", "jemalloc", 0, NULL, {0}, NULL},
    {"tcmalloc", "tcmalloc", 0, NULL, {0}, NULL},
};

static lab_allocator here[4]; /* pk, empty, naive, naivecall */

/* Finds or makes every contender's allocator and contexts. */
static void setup(int want_peers) {
    pk_fill(&here[0]);
    empty_fill(&here[1]);
    naive_fill(&here[2]);
    naivecall_fill(&here[3]);
    for (int c = 0; c < NCONT; c++) {
        struct contender *k = &cont[c];
        if (c >= C_POOL && c <= C_DEBUG) {
            k->a = &here[0];
            if (PK_MODE_CALLS) snprintf(k->label + strlen(k->label), 32, ", calls (.so)");
            if (PK_MODE_CALLS && (c == C_HARD || c == C_DEBUG)) k->why = "measured by bench_hotloop";
        } else if (c <= C_NAIVE_CALL) {
            k->a = &here[c + 1];
        } else if (PK_MODE_CALLS) {
            k->why = "measured by bench_hotloop";
        } else if (c >= C_MI && !want_peers) {
            k->why = "skipped (--no-peers)";
        } else {
            k->a = lab_allocator_named(k->lab_name);
            if (!k->a->available) k->why = k->a->why;
            else if (c >= C_MI) bench_peer_label(k->label, sizeof k->label, k->a);
        }
        for (int s = 0; s < NSIZES && !k->why; s++) {
            k->ctx[s] = k->a == &here[0]
                            ? pk_pool_create(&(pk_pool_config){.name = k->label, .size = sizes[s],
                                                               .flags = k->pool_flags})
                            : k->a->open ? k->a->open(sizes[s]) : NULL;
            if (k->a == &here[0] && !k->ctx[s]) {
                fprintf(stderr, "pk_pool_create(size %zu) failed: %s\n", sizes[s], strerror(errno));
                exit(2);
            }
        }
    }
}

#ifdef PK_NO_INLINE
/* The shared build does not link the lab: the adapters it names are not run. */
lab_allocator *lab_allocator_named(const char *subject) {
    (void)subject;
    return NULL;
}
#endif

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 9);
    long iters = bench_arg_long(&o, "--iters", o.quick ? 2000000 : 10000000);
    int want_peers = !PK_MODE_CALLS && !bench_arg_flag(&o, "--no-peers");
    if (want_peers) shared_reexec_for_tls(argv); /* jemalloc under dlopen */

    bench_header(PK_MODE_CALLS
                     ? "hot loop through calls: allocate, touch 1 byte, free (pk via libpoolkit.so)"
                     : "hot loop: allocate, touch 1 byte, free (pk inline, static library)",
                 &o);
    printf("iterations per run: %ld; ns per alloc+free pair; ratio = median over repetitions of "
           "(contender / reference in the same repetition)\n",
           iters);
    setup(want_peers);

    /* Reference of the ratios: the inlined list, or the list behind calls
     * when pk itself is called. */
    const int ref = PK_MODE_CALLS ? C_NAIVE_CALL : C_NAIVE;
    static bench_series t[NSIZES][NCONT], ratio[NSIZES][NCONT];
    /* HARDENED and DEBUG against the default pool, per repetition */
    static bench_series r_hard[NSIZES], r_debug[NSIZES];

    /* Warm-up (not recorded), then the repetitions: sizes and contenders
     * interleaved inside each one. The debug pool runs an eighth of the
     * pairs (it records call sites). */
    for (int rep = -1; rep < o.reps; rep++) {
        long n = rep < 0 ? iters / 4 : iters;
        for (int s = 0; s < NSIZES; s++) {
            double v[NCONT] = {0};
            for (int c = 0; c < NCONT; c++) {
                if (cont[c].why) continue;
                long m = c == C_DEBUG ? n / 8 : n;
                if (c == C_NAIVE || c == C_NAIVE_CALL) naive_reset();
                v[c] = cont[c].a->hot(cont[c].ctx[s], sizes[s], m) / (double)m;
            }
            if (rep < 0) continue;
            for (int c = 0; c < NCONT; c++) {
                if (cont[c].why) continue;
                bench_add(&t[s][c], v[c]);
                bench_add(&ratio[s][c], v[c] / v[ref]);
            }
            if (!cont[C_HARD].why) bench_add(&r_hard[s], v[C_HARD] / v[C_POOL]);
            if (!cont[C_DEBUG].why) bench_add(&r_debug[s], v[C_DEBUG] / v[C_POOL]);
        }
    }

    printf("\n  %-34s %10s %-5s %-25s  %s\n", "contender", "median", "", "[min - max]",
           PK_MODE_CALLS ? "x naive behind calls (net of empty loop)"
                         : "x naive inlined (net of empty loop)");
    for (int s = 0; s < NSIZES; s++) {
        printf("size %zu B\n", sizes[s]);
        double empty = bench_median(&t[s][C_EMPTY]);
        for (int c = 0; c < NCONT; c++) {
            if (cont[c].why) {
                bench_row_na(cont[c].label, cont[c].why);
                continue;
            }
            char extra[96] = "";
            if (c != C_EMPTY) {
                double net = bench_median(&t[s][c]) - empty;
                double ref_net = bench_median(&t[s][ref]) - empty;
                snprintf(extra, sizeof extra, "%6.2fx  (net %.2f ns, %.2fx)", bench_median(&ratio[s][c]),
                         net, ref_net > 0 ? net / ref_net : 0.0);
            }
            bench_row(cont[c].label, &t[s][c], "ns", extra);
        }
    }

    printf("\n");
    int pass = 1;
    const double bound_pool = PK_MODE_CALLS ? 1.2 : 1.3, bound_local = PK_MODE_CALLS ? 1.2 : 1.1;
    const char *how = PK_MODE_CALLS ? "through calls" : "inline", *refname =
        PK_MODE_CALLS ? "naive list behind calls" : "naive inlined list";
    for (int s = 0; s < NSIZES; s++) {
        double rp = bench_median(&ratio[s][C_POOL]), rl = bench_median(&ratio[s][C_LOCAL]);
        pass &= bench_target(rp <= bound_pool, "hot loop %3zu B, pk_pool default %s <= %.1fx %s: "
                             "%.2fx (%.2f vs %.2f ns)", sizes[s], how, bound_pool, refname, rp,
                             bench_median(&t[s][C_POOL]), bench_median(&t[s][ref]));
        pass &= bench_target(rl <= bound_local, "hot loop %3zu B, pk_pool LOCAL %s   <= %.1fx %s: "
                             "%.2fx (%.2f vs %.2f ns)", sizes[s], how, bound_local, refname, rl,
                             bench_median(&t[s][C_LOCAL]), bench_median(&t[s][ref]));
    }
    for (int s = 0; s < NSIZES && !PK_MODE_CALLS; s++) {
        double h = bench_median(&r_hard[s]), d = bench_median(&r_debug[s]);
        pass &= bench_target(h <= 1.5, "hot loop %3zu B, PK_POOL_HARDENED <= 1.5x the default pool"
                             ": %.2fx (%.2f vs %.2f ns); PK_POOL_DEBUG costs %.1fx "
                             "(%.2f ns, informative)", sizes[s], h, bench_median(&t[s][C_HARD]),
                             bench_median(&t[s][C_POOL]), d, bench_median(&t[s][C_DEBUG]));
    }
    printf("hot loop targets (%s): %s\n", PK_MODE_CALLS ? "calls" : "inline",
           pass ? "all pass" : "some FAIL");

    for (int c = 0; c < NCONT; c++)
        for (int s = 0; s < NSIZES && !cont[c].why; s++) {
            if (cont[c].a == &here[0]) pk_pool_destroy(cont[c].ctx[s]);
            else if (cont[c].a->close) cont[c].a->close(cont[c].ctx[s]);
        }
    return 0;
}
