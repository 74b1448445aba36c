/* binary-trees: the Computer Language Benchmarks Game program, single
 * threaded, with five ways to get the nodes:
 *
 *   glibc malloc        malloc per node, free per node (a post-order walk)
 *   APR pools           apr_palloc per node; one pool per tree, cleared
 *                       (as the Game's C programs do)
 *   poolkit pk_pool     a pool of nodes, pk_pool_free per node
 *   poolkit pk_arena    an arena per tree, rewound to a mark after each tree
 *   poolkit pk_new      reference-counted objects: releasing the root frees
 *                       the tree (each node's dealloc releases its children)
 *
 * The program: a stretch tree of depth max+1, a long-lived tree of depth
 * max, then for depth d = 4, 6, ..., max, 2^(max-d+4) trees of depth d,
 * each built, checked (node count) and freed. Time: the whole program, in
 * ms. The node counts are compared across variants (they must agree).
 */
#include "lab.h"

#include <poolkit/poolkit.h>
#include <stdlib.h>
#include <string.h>

#ifdef LAB_HAVE_APR
#  include <apr_general.h>
#  include <apr_pools.h>
#endif

#define EXP "binary-trees"

typedef struct node {
    struct node *l, *r;
} node;

static long check(const node *n) { return 1 + (n->l ? check(n->l) + check(n->r) : 0); }

/* ---- malloc ---- */
static node *m_make(int d) {
    node *n = malloc(sizeof *n);
    if (d > 0) {
        n->l = m_make(d - 1);
        n->r = m_make(d - 1);
    } else {
        n->l = n->r = NULL;
    }
    return n;
}
static void m_free(node *n) {
    if (n->l) {
        m_free(n->l);
        m_free(n->r);
    }
    free(n);
}

/* ---- pk_pool ---- */
static pk_pool *node_pool;
static node *p_make(int d) {
    node *n = pk_pool_alloc(node_pool);
    if (d > 0) {
        n->l = p_make(d - 1);
        n->r = p_make(d - 1);
    } else {
        n->l = n->r = NULL;
    }
    return n;
}
static void p_free(node *n) {
    if (n->l) {
        p_free(n->l);
        p_free(n->r);
    }
    pk_pool_free(node_pool, n);
}

/* ---- pk_arena ---- */
static node *a_make(pk_arena *a, int d) {
    node *n = pk_arena_alloc(a, sizeof *n, _Alignof(node));
    if (d > 0) {
        n->l = a_make(a, d - 1);
        n->r = a_make(a, d - 1);
    } else {
        n->l = n->r = NULL;
    }
    return n;
}

/* ---- pk_new ---- */
static void o_dealloc(void *obj) {
    node *n = obj;
    pk_release(n->l);
    pk_release(n->r);
}
static const pk_class node_class = {"binary-trees node", sizeof(node), o_dealloc};
static node *o_make(int d) {
    node *n = pk_new(&node_class);
    if (d > 0) {
        n->l = o_make(d - 1);
        n->r = o_make(d - 1);
    }
    return n;
}

#ifdef LAB_HAVE_APR
static node *apr_make(apr_pool_t *p, int d) {
    node *n = apr_palloc(p, sizeof *n);
    if (d > 0) {
        n->l = apr_make(p, d - 1);
        n->r = apr_make(p, d - 1);
    } else {
        n->l = n->r = NULL;
    }
    return n;
}
#endif

enum { V_MALLOC, V_APR, V_POOL, V_ARENA, V_OBJECT, NV };
static const char *const subjects[NV] = {"glibc malloc", "APR pools", "poolkit pk_pool",
                                         "poolkit pk_arena", "poolkit pk_new"};

/* One whole program; returns the sum of all checks. */
static long program(int v, int max) {
    long sum = 0;
    int stretch = max + 1;
    switch (v) {
    case V_MALLOC: {
        node *t = m_make(stretch);
        sum += check(t);
        m_free(t);
        node *ll = m_make(max);
        for (int d = 4; d <= max; d += 2) {
            long iters = 1L << (max - d + 4);
            for (long i = 0; i < iters; i++) {
                t = m_make(d);
                sum += check(t);
                m_free(t);
            }
        }
        sum += check(ll);
        m_free(ll);
        break;
    }
    case V_POOL: {
        node *t = p_make(stretch);
        sum += check(t);
        p_free(t);
        node *ll = p_make(max);
        for (int d = 4; d <= max; d += 2) {
            long iters = 1L << (max - d + 4);
            for (long i = 0; i < iters; i++) {
                t = p_make(d);
                sum += check(t);
                p_free(t);
            }
        }
        sum += check(ll);
        p_free(ll);
        break;
    }
    case V_ARENA: {
        pk_arena *a = pk_arena_create(0), *la = pk_arena_create(0);
        pk_arena_mark m = pk_arena_save(a);
        sum += check(a_make(a, stretch));
        pk_arena_rewind(a, m);
        node *ll = a_make(la, max);
        for (int d = 4; d <= max; d += 2) {
            long iters = 1L << (max - d + 4);
            for (long i = 0; i < iters; i++) {
                sum += check(a_make(a, d));
                pk_arena_rewind(a, m);
            }
        }
        sum += check(ll);
        pk_arena_destroy(la);
        pk_arena_destroy(a);
        break;
    }
    case V_OBJECT: {
        node *t = o_make(stretch);
        sum += check(t);
        pk_release(t);
        node *ll = o_make(max);
        for (int d = 4; d <= max; d += 2) {
            long iters = 1L << (max - d + 4);
            for (long i = 0; i < iters; i++) {
                t = o_make(d);
                sum += check(t);
                pk_release(t);
            }
        }
        sum += check(ll);
        pk_release(ll);
        break;
    }
#ifdef LAB_HAVE_APR
    case V_APR: {
        apr_pool_t *p = NULL, *lp = NULL;
        apr_pool_create(&p, NULL);
        apr_pool_create(&lp, NULL);
        sum += check(apr_make(p, stretch));
        apr_pool_clear(p);
        node *ll = apr_make(lp, max);
        for (int d = 4; d <= max; d += 2) {
            long iters = 1L << (max - d + 4);
            for (long i = 0; i < iters; i++) {
                sum += check(apr_make(p, d));
                apr_pool_clear(p);
            }
        }
        sum += check(ll);
        apr_pool_destroy(lp);
        apr_pool_destroy(p);
        break;
    }
#endif
    default: return -1;
    }
    return sum;
}

static int depth(void) { return (int)lab_pick(10, 15, 17, 21); }

static void run(int rep) {
    int max = depth();
    if (lab_warming) max = max > 12 ? max - 4 : max;
    if (!node_pool) {
        pk_pool_config c = {0};
        c.name = "binary-trees nodes";
        c.size = sizeof(node);
        node_pool = pk_pool_create(&c);
    }
    lab_params ps = {0};
    lab_pset_num(&ps, "depth", depth());
    long expect = -1;
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
        if (r) {
            lab_row_sample(r, ms);
            lab_row_extra(r, "nodes_checked", (double)sum);
        }
    }
}

static void print(FILE *out) {
    char b1[32], b2[32], b3[32], b4[32];
    fprintf(out, "== binary-trees: the Benchmarks Game program, depth %d, single thread\n", depth());
    fprintf(out, "  %-22s %10s %25s %12s\n", "nodes from", "ms", "[min - max]", "vs malloc");
    lab_row *base = lab_find(EXP, "glibc malloc", NULL);
    double bm = base && base->available ? lab_median(&base->samples) : 0.0 / 0.0;
    for (int v = 0; v < NV; v++) {
        lab_row *r = lab_find(EXP, subjects[v], NULL);
        if (!r) continue;
        if (!r->available) {
            fprintf(out, "  %-22s n/a: %.90s\n", r->subject, r->why);
            continue;
        }
        char range[56];
        snprintf(range, sizeof range, "[%s - %s]", lab_fmt(lab_min(&r->samples), b1),
                 lab_fmt(lab_max(&r->samples), b2));
        double m = lab_median(&r->samples);
        fprintf(out, "  %-22s %10s %25s %11sx\n", r->subject, lab_fmt(m, b3), range,
                lab_fmt(bm / m, b4));
    }
    for (int i = 0; i < lab_row_count(); i++) { /* rows from a contender program */
        lab_row *r = lab_row_at(i);
        int mine = 0;
        for (int v = 0; v < NV; v++) mine |= !strcmp(r->subject, subjects[v]);
        if (strcmp(r->experiment, EXP) || mine) continue;
        if (!r->available) fprintf(out, "  %-22s n/a: %.90s\n", r->subject, r->why);
        else fprintf(out, "  %-22s %10s %25s %11sx\n", r->subject, lab_fmt_row(r, b1), "",
                     lab_fmt(bm / lab_median(&r->samples), b2));
    }
}

const lab_experiment lab_exp_binary_trees = {
    EXP, "The Computer Language Benchmarks Game binary-trees", "ms", 4.0, NULL, run, print,
};
