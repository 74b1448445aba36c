/* workset: working sets at realistic scale, every allocator.
 *
 * Allocate N objects (touching each: one word written), free all N in LIFO,
 * FIFO or random order, repeat (the kernel is lab/workset.h, shared with
 * bench/bench_workset.c). N goes from 1,000 to 1,000,000, so the working
 * set runs from the first-level cache to main memory; one object size
 * (48 B; --full adds 16 and 256 B). Figures: ns per allocate+free pair,
 * gross (the empty loop's line shows what the loop itself costs), and the
 * minor page faults of a repeated phase: an allocator that keeps its memory
 * faults nothing once the first phase has brought it in.
 *
 * Each measurement runs in a forked child with a fresh context (a pool of
 * that size, where the allocator has one): one untimed first phase, then
 * repeated phases, about 500,000 pairs in all (at least one phase; fewer
 * once 100 ms have passed), so that every contender starts from the same
 * clean process and its peak RSS (the extra peak_rss_kb, less the array of
 * object pointers) is its own. Contenders are interleaved, starting with a
 * different one each repetition; the warm-up pass runs the small N only
 * (each measurement has its own untimed first phase). APR pools and pk_arena cannot free one
 * object: they free the whole phase at its end (an apr_pool_clear or
 * pk_arena_reset), whatever the order; their rows say so (extra frees_each
 * 0). Boost's object_pool keeps its free list sorted, so that a free costs
 * O(free objects): it runs FIFO and random orders only up to N = 4,000 (a
 * phase of 16,000 takes a third of a second, of 1,000,000 hours), and LIFO
 * up to 16,000 (its first phase, over several blocks, is quadratic too).
 *
 * Zig's MemoryPool (and its empty harness) come from pk-lab-zig, which runs
 * the same loop (lab/zig/workset.zig).
 *
 * pk_pool's hardened mode runs beside the default pool (target: at
 * most 1.15x the default pool's time at every N and order, the
 * median of the repetitions' ratios).
 */
#include "lab.h"
#include "workset.h"


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXP "workset"

static const char *const contenders[] = {
    "empty loop",       "glibc malloc",  "jemalloc",          LAB_MIMALLOC,
    LAB_MIMALLOC3,      "tcmalloc",         "Boost.Pool pool", "Boost.Pool object_pool", "GLib g_slice",
    "APR pools",        "talloc",        "poolkit pk_arena",  LAB_PK_POOL,
    LAB_PK_HARDENED,
};
#define NCONT (int)(sizeof contenders / sizeof contenders[0])

static int index_of(const char *subject) {
    for (int i = 0; i < NCONT; i++)
        if (!strcmp(contenders[i], subject)) return i;
    abort();
}

/* object_pool's free is O(free objects): the largest N it runs, LIFO and otherwise */
#define OBJECT_POOL_MAX_N_LIFO 16000
#define OBJECT_POOL_MAX_N 4000

#define MAX_NS 11 /* the most sizes of N a scale has */
static int counts(long *out) {
    static const long smoke[] = {1000, 16000};
    static const long quick[] = {1000, 16000, 1000000};
    static const long def[] = {1000, 4000, 16000, 64000, 256000, 1000000};
    static const long full[] = {1000,   2000,   4000,   8000,    16000,  32000,
                                64000,  128000, 256000, 512000, 1000000};
    const long *src;
    int n;
    switch (lab_opt.scale) {
    case LAB_SMOKE: src = smoke, n = 2; break;
    case LAB_QUICK: src = quick, n = 3; break;
    case LAB_FULL: src = full, n = 11; break;
    default: src = def, n = 6; break;
    }
    memcpy(out, src, sizeof(long) * (size_t)n);
    return n;
}

static int sizes(size_t *out) {
    out[0] = 48;
    if (lab_opt.scale != LAB_FULL) return 1;
    out[0] = 16, out[1] = 48, out[2] = 256;
    return 3;
}

/* Pairs per measurement (timed phases), and the time cap of the timed part. */
static long pairs_wanted(void) { return lab_pick(20000, 200000, 500000, 2000000); }
static double cap_ns(void) { return 1e6 * (double)lab_pick(20, 50, 100, 500); }

static lab_params params_of(int order, long n, size_t size) {
    lab_params ps = {0};
    lab_pset_str(&ps, "order", workset_order_names[order]);
    lab_pset_num(&ps, "n", (double)n);
    lab_pset_num(&ps, "size", (double)size);
    return ps;
}

/* Why contender a does not run this point, or NULL. */
static const char *skip_reason(const lab_allocator *a, int order, long n) {
    if (strcmp(a->subject, "Boost.Pool object_pool")) return NULL;
    if (order == WORKSET_LIFO && n > OBJECT_POOL_MAX_N_LIFO)
        return "not run: object_pool::free keeps the free list sorted (O(free objects) per "
               "free); once the pool has several blocks even LIFO frees are quadratic in the "
               "first phase (67 us per pair at N = 256,000); run up to N = 16,000";
    if (order != WORKSET_LIFO && n > OBJECT_POOL_MAX_N)
        return "not run: object_pool::free keeps the free list sorted (O(free objects) per "
               "free), so FIFO and random orders are quadratic; run up to N = 4,000";
    return NULL;
}

static void run(int rep) {
    long ns_[MAX_NS];
    size_t sz[3];
    int nn = counts(ns_), nsz = sizes(sz);
    long want = lab_warm(pairs_wanted());
    for (int s = 0; s < nsz; s++) {
        for (int k = 0; k < nn; k++) {
            long n = ns_[k];
            if (lab_warming && n > 16000) continue; /* the warm-up: the small N only */
            const uint32_t *perm = lab_workset_perm(n);
            long phases = want / n > 0 ? want / n : 1;
            for (int order = 0; order < WORKSET_ORDERS; order++) {
                double res[NCONT][7];
                int ok[NCONT];
                char detail[64];
                snprintf(detail, sizeof detail, "%s, N = %ld, %zu B", workset_order_names[order],
                         n, sz[s]);
                for (int j = 0; j < NCONT; j++) {
                    int i = (j + (rep > 0 ? rep : 0)) % NCONT;
                    lab_allocator *a = lab_allocator_named(contenders[i]);
                    ok[i] = 0;
                    if (!a || !a->available || !a->workset || skip_reason(a, order, n)) continue;
                    lab_progress(a->subject, detail);
                    ok[i] = lab_workset_measure(a, sz[s], n, order, perm, phases, cap_ns(),
                                                res[i]) == 0;
                }
                if (rep < 0) continue;
                lab_params ps = params_of(order, n, sz[s]);
                const int pool = index_of(LAB_PK_POOL), hardened = index_of(LAB_PK_HARDENED);
                for (int i = 0; i < NCONT; i++) {
                    lab_allocator *a = lab_allocator_named(contenders[i]);
                    if (!a) continue;
                    lab_row *r = lab_row_for(EXP, a, &ps);
                    if (!a->available) continue;
                    const char *skip = skip_reason(a, order, n);
                    if (skip) {
                        lab_row_unavailable(r, skip);
                        continue;
                    }
                    if (!ok[i]) {
                        if (r->samples.n == 0)
                            lab_row_unavailable(r, "the contender failed in its child process");
                        continue;
                    }
                    double objs_kib = (double)n * sizeof(void *) / 1024.0;
                    lab_row_sample(r, res[i][0]);
                    lab_row_extra(r, "faults_first", res[i][1]);
                    lab_row_extra(r, "faults_repeat", res[i][2]);
                    lab_row_extra(r, "pairs", res[i][3]);
                    lab_row_extra(r, "peak_rss_kb", res[i][6] > objs_kib ? res[i][6] - objs_kib : 0);
                    if (!isnan(res[i][4])) {
                        lab_row_extra(r, "pk_reserved_peak_kb", res[i][4]);
                        lab_row_extra(r, "pk_reserved_end_kb", res[i][5]);
                    }
                    lab_row_extra(r, "frees_each", a->frees_each);
                    if (i == hardened && ok[pool]) /* side by side in this repetition */
                        lab_row_extra(r, LAB_VS_POOL, res[i][0] / res[pool][0]);
                }
            }
        }
    }
}

/* One line per subject measured in this experiment, in the order rows were
 * made; fn prints the cells. */
static void each_subject(FILE *out, void (*fn)(FILE *, const lab_row *, const void *),
                         const void *arg) {
    for (int i = 0; i < lab_row_count(); i++) {
        lab_row *r = lab_row_at(i);
        if (!strcmp(r->experiment, EXP) && lab_row_first_of_subject(i)) fn(out, r, arg);
    }
}

typedef struct cells {
    const char *order; /* JSON text, e.g. "\"LIFO\"" */
    char size[16];
    long ns_[MAX_NS];
    int nn;
    int faults; /* 0: ns/pair; 1: faults per repeated phase (most over the orders) */
} cells;

static lab_row *find_point(const char *subject, const char *order, long n, const char *size) {
    char want_n[24];
    snprintf(want_n, sizeof want_n, "%ld", n);
    return lab_find(EXP, subject, "order", order, "n", want_n, "size", size, NULL);
}

static int any_available(const char *subject) {
    for (int i = 0; i < lab_row_count(); i++) {
        lab_row *r = lab_row_at(i);
        if (!strcmp(r->experiment, EXP) && !strcmp(r->subject, subject) && r->available) return 1;
    }
    return 0;
}

static void print_cells(FILE *out, const lab_row *r, const void *argp) {
    const cells *c = (const cells *)argp;
    char b[32];
    if (!any_available(r->subject)) {
        fprintf(out, "  %-26s n/a: %.80s\n", r->subject, r->why);
        return;
    }
    fprintf(out, "  %-26s", r->subject);
    for (int k = 0; k < c->nn; k++) {
        double v = NAN;
        if (!c->faults) {
            lab_row *p = find_point(r->subject, c->order, c->ns_[k], c->size);
            if (p && p->available) v = lab_median(&p->samples);
        } else {
            for (int o = 0; o < WORKSET_ORDERS; o++) {
                char want[16];
                snprintf(want, sizeof want, "\"%s\"", workset_order_names[o]);
                lab_row *p = find_point(r->subject, want, c->ns_[k], c->size);
                double f = p && p->available ? lab_extra_median(p, "faults_repeat") : NAN;
                if (!isnan(f) && (isnan(v) || f > v)) v = f;
            }
        }
        fprintf(out, " %8s", lab_fmt(v, b));
    }
    if (c->faults) { /* bytes per object at the largest N: peak RSS net of the empty loop's */
        char want[16];
        long n = c->ns_[c->nn - 1];
        snprintf(want, sizeof want, "\"%s\"", workset_order_names[WORKSET_LIFO]);
        lab_row *p = find_point(r->subject, want, n, c->size);
        lab_row *e = find_point("empty loop", want, n, c->size);
        double kib = p && p->available ? lab_extra_median(p, "peak_rss_kb") : NAN;
        double base = e && e->available ? lab_extra_median(e, "peak_rss_kb") : 0;
        fprintf(out, "   %8s", lab_fmt((kib - base) * 1024.0 / (double)n, b));
        /* poolkit's own report, read back: the most it reserved at once */
        double pk = p && p->available ? lab_extra_median(p, "pk_reserved_peak_kb") : NAN;
        if (!isnan(pk)) fprintf(out, "   %8s", lab_fmt(pk * 1024.0 / (double)n, b));
    }
    fprintf(out, "\n");
}

/* The worst point of one order (want: its quoted name) over every size and
 * N, by ratio(want, n, size) (NAN where a row is missing): the ratio, its N
 * and size. The worst point meets a bound exactly when every point does. */
typedef double point_ratio(const char *want, long n, const char *size);
static double worst_point(const cells *c, const size_t *sz, int nsz, const char *want, point_ratio *ratio,
                          long *worst_n, size_t *worst_size) {
    char size[16];
    double worst = NAN;
    *worst_n = 0;
    *worst_size = 0;
    for (int s = 0; s < nsz; s++) {
        snprintf(size, sizeof size, "%zu", sz[s]);
        for (int k = 0; k < c->nn; k++) {
            double v = ratio(want, c->ns_[k], size);
            if (!isnan(v) && (isnan(worst) || v > worst)) worst = v, *worst_n = c->ns_[k], *worst_size = sz[s];
        }
    }
    return worst;
}

static double hardened_ratio(const char *want, long n, const char *size) {
    return lab_vs_pool(find_point(LAB_PK_HARDENED, want, n, size));
}

/* The hardened pool over the default one at every point (the
 * median of the repetitions' ratios), then the target, judged at every
 * point and shown by the worst point of each order. */
static void print_hardened(FILE *out, const cells *c, const size_t *sz, int nsz) {
    char b[32], size[16], want[WORKSET_ORDERS][16];
    for (int o = 0; o < WORKSET_ORDERS; o++)
        snprintf(want[o], sizeof want[o], "\"%s\"", workset_order_names[o]);
    for (int s = 0; s < nsz; s++) {
        snprintf(size, sizeof size, "%zu", sz[s]);
        fprintf(out, "\n  pk_pool HARDENED / the default pk_pool, %zu B (median of the "
                     "repetitions' ratios)\n  %-26s", sz[s], "order \\ N");
        for (int k = 0; k < c->nn; k++) fprintf(out, " %8s", lab_fmt((double)c->ns_[k], b));
        fprintf(out, "\n");
        for (int o = 0; o < WORKSET_ORDERS; o++) {
            fprintf(out, "  %-26s", workset_order_names[o]);
            for (int k = 0; k < c->nn; k++) {
                lab_row *p = find_point(LAB_PK_HARDENED, want[o], c->ns_[k], size);
                fprintf(out, " %8s", lab_fmt(lab_vs_pool(p), b));
            }
            fprintf(out, "\n");
        }
    }
    lab_target t = LAB_TARGET_INIT;
    for (int o = 0; o < WORKSET_ORDERS; o++) {
        long worst_n;
        size_t worst_size;
        double worst = worst_point(c, sz, nsz, want[o], hardened_ratio, &worst_n, &worst_size);
        lab_target_add(&t, "; ", worst, 1.15, "%s %.2fx (N = %s, %zu B)", workset_order_names[o],
                       worst, lab_fmt((double)worst_n, b), worst_size);
    }
    fprintf(out, "  target (hardened workset): pk_pool HARDENED at most 1.15x the default pk_pool at "
                 "every N and order (median of the repetitions' ratios; the worst N of each "
                 "order): %s -> %s\n", t.line, lab_target_verdict(&t));
}

/* pk_pool against the fastest malloc at every point (medians), judged per
 * order at its worst point: LIFO and FIFO at most 0.8x, random at most 1x. */
static double vs_fastest_malloc(const char *want, long n, const char *size) {
    static const char *const mallocs[] = {"glibc malloc", "jemalloc", LAB_MIMALLOC, LAB_MIMALLOC3, "tcmalloc"};
    lab_row *p = find_point(LAB_PK_POOL, want, n, size);
    double best = INFINITY;
    for (int m = 0; m < (int)(sizeof mallocs / sizeof mallocs[0]); m++) {
        lab_row *r = find_point(mallocs[m], want, n, size);
        if (r && r->available && lab_median(&r->samples) < best) best = lab_median(&r->samples);
    }
    return p && p->available && isfinite(best) ? lab_median(&p->samples) / best : NAN;
}

static void print_vs_mallocs(FILE *out, const cells *c, const size_t *sz, int nsz) {
    char b[32], want[16];
    lab_target t = LAB_TARGET_INIT;
    for (int o = 0; o < WORKSET_ORDERS; o++) {
        snprintf(want, sizeof want, "\"%s\"", workset_order_names[o]);
        long worst_n;
        size_t worst_size;
        double worst = worst_point(c, sz, nsz, want, vs_fastest_malloc, &worst_n, &worst_size);
        lab_target_add(&t, "; ", worst, o == WORKSET_RANDOM ? 1.0 : 0.8, "%s %.2fx (N = %s, %zu B)",
                       workset_order_names[o], worst, lab_fmt((double)worst_n, b), worst_size);
    }
    fprintf(out, "  target: pk_pool at most 0.8x the fastest malloc (LIFO, FIFO) and 1.0x (random) at "
                 "every N and size (medians; the worst point of each order): %s -> %s\n", t.line,
            lab_target_verdict(&t));
}

static void print(FILE *out) {
    cells c;
    size_t sz[3];
    int nsz = sizes(sz);
    c.nn = counts(c.ns_);
    char b[32];
    fprintf(out, "== workset: allocate N, touch each, free all (LIFO, FIFO, random), repeat\n");
    fprintf(out, "   ns per allocate+free pair, gross (median of %d); each measurement in a child "
                 "process\n", lab_opt.reps);
    for (int s = 0; s < nsz; s++) {
        snprintf(c.size, sizeof c.size, "%zu", sz[s]);
        for (int o = 0; o < WORKSET_ORDERS; o++) {
            char want[16];
            snprintf(want, sizeof want, "\"%s\"", workset_order_names[o]);
            c.order = want;
            c.faults = 0;
            fprintf(out, "\n  %s, %zu B objects\n  %-26s", workset_order_names[o], sz[s],
                    "allocator \\ N");
            for (int k = 0; k < c.nn; k++) fprintf(out, " %8s", lab_fmt((double)c.ns_[k], b));
            fprintf(out, "\n");
            each_subject(out, print_cells, &c);
        }
        c.faults = 1;
        fprintf(out, "\n  minor page faults per repeated phase (the most over the three orders), "
                     "%zu B;\n  peak RSS growth per object at the largest N, LIFO, net of the empty "
                     "loop's\n  %-26s", sz[s],
                "allocator \\ N");
        for (int k = 0; k < c.nn; k++) fprintf(out, " %8s", lab_fmt((double)c.ns_[k], b));
        fprintf(out, "   %8s   %8s\n", "B/object", "reserved");
        each_subject(out, print_cells, &c);
    }
    print_hardened(out, &c, sz, nsz);
    print_vs_mallocs(out, &c, sz, nsz);
    fprintf(out, "  (APR pools and pk_arena free a whole phase at once, whatever the order)\n");
    fprintf(out, "  (reserved: poolkit rows only, from poolkit's own JSON report of the run read "
                 "back: the most its pools\n   and arenas held from the system at once, per object "
                 "at the largest N, LIFO)\n");
}

const lab_experiment lab_exp_workset = {
    EXP, "Working sets: N objects allocated, touched, freed LIFO/FIFO/random (1,000 to 1,000,000)",
    "ns/pair", 10.0, NULL, run, print, NULL,
};
