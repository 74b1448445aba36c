/* binary-trees: the Computer Language Benchmarks Game program, single
 * threaded, with six ways to get the nodes:
 *
 *   glibc malloc        malloc per node, free per node (a post-order walk)
 *   APR pools           apr_palloc per node; one pool per tree, cleared
 *                       (as the Game's C programs do)
 *   poolkit pk_pool     a pool of nodes, pk_pool_free per node
 *   ... HARDENED        the same on a PK_POOL_HARDENED pool (target:
 *                       at most 1.15x the default pool's time,
 *                       the median of the repetitions' ratios)
 *   poolkit pk_arena    an arena per tree, rewound to a mark after each tree
 *   poolkit pk_new      reference-counted objects: releasing the root frees
 *                       the tree (each node's dealloc releases its children)
 *
 * The program: a stretch tree of depth max+1, a long-lived tree of depth
 * max, then for depth d = 4, 6, ..., max, 2^(max-d+4) trees of depth d,
 * each built, checked (node count) and freed. Time: the whole program, in
 * ms. The node counts are compared across variants (they must agree).
 */
#include "bintrees.h"
#include "lab.h"

#include <math.h>
#include <poolkit/poolkit.h>
#include <stdlib.h>
#include <string.h>

#ifdef LAB_HAVE_APR
#  include <apr_general.h>
#  include <apr_pools.h>
#endif

#define EXP "binary-trees"

typedef bt_node node; /* bintrees.h: the node, the trees, the program */

/* ---- the variants (bintrees.h's bt_variant) ---- */

/* The default pool and the hardened one (ctx: the pool). */
static pk_pool *node_pool, *hardened_pool;

static long p_one(void *ctx, int d) {
    node *t = bt_make_pool(ctx, d);
    long c = bt_check(t);
    bt_free_pool(ctx, t);
    return c;
}
static node *p_long(void *ctx, int d) { return bt_make_pool(ctx, d); }
static void p_free_long(void *ctx, node *t) { bt_free_pool(ctx, t); }

/* An arena for the short-lived trees, rewound to a mark after each, and one
 * for the long-lived tree. */
typedef struct arenas {
    pk_arena *a, *la;
    pk_arena_mark m;
} arenas;
static long a_one(void *ctx, int d) {
    arenas *x = ctx;
    long c = bt_check(bt_make_arena(x->a, d));
    pk_arena_rewind(x->a, x->m);
    return c;
}
static node *a_long(void *ctx, int d) { return bt_make_arena(((arenas *)ctx)->la, d); }
static void a_free_long(void *ctx, node *t) { (void)ctx, (void)t; }

#ifdef LAB_HAVE_APR
/* APR: a pool for the short-lived trees, cleared after each (as the Game's C
 * programs do), and one for the long-lived tree. */
typedef struct aprs {
    apr_pool_t *p, *lp;
} aprs;
static node *apr_make(apr_pool_t *p, int d) {
    node *n = apr_palloc(p, sizeof *n);
    return d > 0 ? bt_leaf_or_pair(n, apr_make(p, d - 1), apr_make(p, d - 1)) : bt_leaf_or_pair(n, NULL, NULL);
}
static long apr_one(void *ctx, int d) {
    aprs *x = ctx;
    long c = bt_check(apr_make(x->p, d));
    apr_pool_clear(x->p);
    return c;
}
static node *apr_long(void *ctx, int d) { return apr_make(((aprs *)ctx)->lp, d); }
static void apr_free_long(void *ctx, node *t) { (void)ctx, (void)t; }
#endif

enum { V_MALLOC, V_APR, V_POOL, V_HARDENED, V_ARENA, V_OBJECT, NV };
static const char *const subjects[NV] = {"glibc malloc",    "APR pools",        LAB_PK_POOL,
                                         LAB_PK_HARDENED,   "poolkit pk_arena", "poolkit pk_new"};

/* One whole program; returns the sum of all checks. */
static long program(int v, int max) {
    static const bt_variant p = {p_one, p_long, p_free_long}, a = {a_one, a_long, a_free_long};
    switch (v) {
    case V_MALLOC: return bt_program(&bt_malloc, NULL, max, 0);
    case V_POOL: return bt_program(&p, node_pool, max, 0);
    case V_HARDENED: return bt_program(&p, hardened_pool, max, 0);
    case V_OBJECT: return bt_program(&bt_objects, NULL, max, 0);
    case V_ARENA: {
        arenas x = {pk_arena_create(0), pk_arena_create(0), {0, 0}};
        if (!x.a || !x.la) abort();
        x.m = pk_arena_save(x.a);
        long sum = bt_program(&a, &x, max, 0);
        pk_arena_destroy(x.la);
        pk_arena_destroy(x.a);
        return sum;
    }
#ifdef LAB_HAVE_APR
    case V_APR: {
        static const bt_variant ap = {apr_one, apr_long, apr_free_long};
        aprs x = {NULL, NULL};
        apr_pool_create(&x.p, NULL);
        apr_pool_create(&x.lp, NULL);
        long sum = bt_program(&ap, &x, max, 0);
        apr_pool_destroy(x.lp);
        apr_pool_destroy(x.p);
        return sum;
    }
#endif
    default: return -1;
    }
}

static int depth(void) { return (int)lab_pick(10, 15, 17, 21); }

static pk_pool *node_pool_create(const char *name, unsigned flags) {
    pk_pool_config c = {0};
    c.name = name;
    c.size = sizeof(node);
    c.flags = flags;
    pk_pool *p = pk_pool_create(&c);
    if (!p) abort();
    return p;
}

static void run(int rep) {
    int max = depth();
    if (lab_warming) max = max > 12 ? max - 4 : max;
    if (!node_pool) {
        node_pool = node_pool_create("binary-trees nodes", 0);
        hardened_pool = node_pool_create("binary-trees nodes hardened", PK_POOL_HARDENED);
    }
    lab_params ps = {0};
    lab_pset_num(&ps, "depth", depth());
    long expect = -1;
    double ms_of[NV];
    for (int v = 0; v < NV; v++) ms_of[v] = NAN;
    for (int j = 0; j < NV; j++) {
        int v = (j + (rep > 0 ? rep : 0)) % NV;
        lab_row *r = rep >= 0 ? lab_row_get(EXP, subjects[v], v >= V_POOL ? "poolkit" : "peer", &ps)
                              : NULL;
        const char *ver = v == V_MALLOC ? lab_allocator_named("glibc malloc")->version
                          : v == V_APR  ? lab_allocator_named("APR pools")->version
                                        : lab_poolkit_version();
        if (r && !r->version[0]) lab_row_info(r, ver, NULL);
        if (v == V_APR && !lab_allocator_named("APR pools")->available) {
            if (r) lab_row_unavailable(r, lab_allocator_named("APR pools")->why);
            continue;
        }
        lab_progress(subjects[v], "");
        double t0 = lab_now_ns();
        long sum = program(v, max);
        double ms = (lab_now_ns() - t0) / 1e6;
        if (expect < 0) expect = sum;
        if (sum != expect) {
            fprintf(stderr, "pk-lab: binary-trees: %s counted %ld nodes, others %ld\n",
                    subjects[v], sum, expect);
            if (r) lab_row_unavailable(r, "wrong node count (a bug in the lab)");
            continue;
        }
        ms_of[v] = ms;
        if (r) {
            lab_row_sample(r, ms);
            lab_row_extra(r, "nodes_checked", (double)sum);
        }
    }
    /* the two pools measured in this repetition, side by side */
    if (rep >= 0 && !isnan(ms_of[V_HARDENED]) && !isnan(ms_of[V_POOL]))
        lab_row_extra(lab_row_get(EXP, subjects[V_HARDENED], "poolkit", &ps), LAB_VS_POOL,
                      ms_of[V_HARDENED] / ms_of[V_POOL]);
}

static void print(FILE *out) {
    char b1[32], b2[32], b3[32], b4[32];
    fprintf(out, "== binary-trees: the Benchmarks Game program, depth %d, single thread\n", depth());
    fprintf(out, "  %-24s %8s %25s %12s\n", "nodes from", "ms", "[min - max]", "vs malloc");
    lab_row *base = lab_find(EXP, "glibc malloc", NULL);
    double bm = base && base->available ? lab_median(&base->samples) : 0.0 / 0.0;
    for (int v = 0; v < NV; v++) {
        lab_row *r = lab_find(EXP, subjects[v], NULL);
        if (!r) continue;
        if (!r->available) {
            fprintf(out, "  %-24s n/a: %.90s\n", r->subject, r->why);
            continue;
        }
        char range[56];
        snprintf(range, sizeof range, "[%s - %s]", lab_fmt(lab_min(&r->samples), b1),
                 lab_fmt(lab_max(&r->samples), b2));
        double m = lab_median(&r->samples);
        fprintf(out, "  %-24s %8s %25s %11sx\n", r->subject, lab_fmt(m, b3), range,
                lab_fmt(bm / m, b4));
    }
    for (int i = 0; i < lab_row_count(); i++) { /* rows from a contender program */
        lab_row *r = lab_row_at(i);
        int mine = 0;
        for (int v = 0; v < NV; v++) mine |= !strcmp(r->subject, subjects[v]);
        if (strcmp(r->experiment, EXP) || mine) continue;
        if (!r->available) fprintf(out, "  %-24s n/a: %.90s\n", r->subject, r->why);
        else fprintf(out, "  %-24s %8s %25s %11sx\n", r->subject, lab_fmt_row(r, b1), "",
                     lab_fmt(bm / lab_median(&r->samples), b2));
    }
    lab_target t = LAB_TARGET_INIT;
    double v = lab_vs_pool(lab_find(EXP, LAB_PK_HARDENED, NULL));
    lab_target_add(&t, "", v, 1.15, "%.2fx", v);
    fprintf(out, "  target (hardened binary-trees): pk_pool HARDENED at most 1.15x the default pk_pool's "
                 "time for the whole program (median of the repetitions' ratios): %s -> %s\n",
            t.line, lab_target_verdict(&t));
}

const lab_experiment lab_exp_binary_trees = {
    EXP, "The Computer Language Benchmarks Game binary-trees", "ms", 4.0, NULL, run, print, NULL,
};
