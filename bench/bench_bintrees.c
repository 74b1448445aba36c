/* binary-trees, the Computer Language Benchmarks Game program (LAB.md,
 * "Beyond the studies"), single-threaded, depth 16 by default.
 *
 * A stretch tree of depth max+1 is built, checked and freed; a long-lived
 * tree of depth max stays; then for depth d = 4, 6, ..., max, 2^(max - d + 4)
 * trees of depth d are built, checked (nodes counted) and freed. Variants:
 *   malloc      every node from malloc, freed node by node
 *   pk_pool     a pool created for each tree and destroyed with the tree in
 *               it (the way the benchmark's APR version uses its pools;
 *               pk_pool_destroy reports the live nodes as a warning, which a
 *               handler here counts instead of printing)
 *   pk_pool, nodes freed: the same, with every node freed before the destroy
 *   pk_arena    an arena created for each tree and destroyed with it
 *   pk_pool, one pool: every tree, the long-lived one too, from one pool
 *               for the whole program, freed node by node as malloc's are
 * and, for information, one pk_arena reset after each tree. Targets:
 * pk_pool per tree <= 0.3x the malloc version's time; one pool, nodes freed,
 * <= 0.6x (issue 9). (bench_objects adds the pk_new variant.)
 *
 * Usage: bench_bintrees [--depth N] [--reps N] [--quick]
 */
#include "harness.h"

#include <poolkit/arena.h>
#include <poolkit/error.h>
#include <poolkit/pool.h>

typedef struct node {
    struct node *left, *right;
} node;

#define MIN_DEPTH 4

/* ---- malloc ---- */

static node *tree_malloc(int depth) {
    node *n = malloc(sizeof *n);
    if (!n) abort();
    if (depth > 0) {
        n->left = tree_malloc(depth - 1);
        n->right = tree_malloc(depth - 1);
    } else {
        n->left = n->right = NULL;
    }
    return n;
}

static void free_malloc(node *n) {
    if (n->left) {
        free_malloc(n->left);
        free_malloc(n->right);
    }
    free(n);
}

/* ---- pk_pool ---- */

static node *tree_pool(pk_pool *p, int depth) {
    node *n = pk_pool_alloc(p);
    if (!n) abort();
    if (depth > 0) {
        n->left = tree_pool(p, depth - 1);
        n->right = tree_pool(p, depth - 1);
    } else {
        n->left = n->right = NULL;
    }
    return n;
}

static void free_pool(pk_pool *p, node *n) {
    if (n->left) {
        free_pool(p, n->left);
        free_pool(p, n->right);
    }
    pk_pool_free(p, n);
}

/* ---- pk_arena ---- */

static node *tree_arena(pk_arena *a, int depth) {
    node *n = pk_arena_alloc(a, sizeof *n, _Alignof(node));
    if (!n) abort();
    if (depth > 0) {
        n->left = tree_arena(a, depth - 1);
        n->right = tree_arena(a, depth - 1);
    } else {
        n->left = n->right = NULL;
    }
    return n;
}

static long check(const node *n) {
    return 1 + (n->left ? check(n->left) + check(n->right) : 0);
}

/* ---- the program, once per variant ---- */

enum { V_MALLOC, V_POOL_TREE, V_POOL_TREE_FREE, V_ARENA_TREE, V_POOL_ONE, V_ARENA_RESET, NVAR };
static const char *var_label[NVAR] = {
    "malloc/free",
    "pk_pool per tree",
    "pk_pool per tree, nodes freed",
    "pk_arena per tree",
    "pk_pool, one pool, nodes freed",
    "pk_arena, reset per tree (info)",
};

/* pk_pool_destroy reports the live objects it frees as a PK_WARNING; the
 * pool-per-tree variant destroys each pool with its tree in it on purpose,
 * so warnings are counted here instead of printed. Fatal errors still print
 * (and poolkit aborts). */
static unsigned long destroy_warnings;
static void count_warnings(const pk_error *err, void *arg) {
    (void)arg;
    if (err->severity == PK_WARNING)
        destroy_warnings++;
    else
        fprintf(stderr, "%s\n", err->message);
}

static const pk_pool_config node_pool = {.name = "binary-trees", .size = sizeof(node)};
/* A pool that goes with its tree, nodes and all, is a region: no leak report. */
static const pk_pool_config tree_pool_config = {
    .name = "binary-trees (per tree)", .size = sizeof(node), .flags = PK_POOL_REGION};

/* Builds, checks and frees one tree of the given depth; returns its check. */
static long one_tree(int v, int depth, pk_pool *shared_pool, pk_arena *shared_arena) {
    long c;
    switch (v) {
    case V_MALLOC: {
        node *t = tree_malloc(depth);
        c = check(t);
        free_malloc(t);
        return c;
    }
    case V_POOL_TREE: { /* the pool goes with its tree, as APR's pools do */
        pk_pool *p = pk_pool_create(&tree_pool_config);
        if (!p) abort();
        c = check(tree_pool(p, depth));
        pk_pool_destroy(p);
        return c;
    }
    case V_POOL_TREE_FREE: {
        pk_pool *p = pk_pool_create(&node_pool);
        if (!p) abort();
        node *t = tree_pool(p, depth);
        c = check(t);
        free_pool(p, t);
        pk_pool_destroy(p);
        return c;
    }
    case V_ARENA_TREE: {
        pk_arena *a = pk_arena_create(0);
        if (!a) abort();
        c = check(tree_arena(a, depth));
        pk_arena_destroy(a);
        return c;
    }
    case V_POOL_ONE: {
        node *t = tree_pool(shared_pool, depth);
        c = check(t);
        free_pool(shared_pool, t);
        return c;
    }
    default: {
        c = check(tree_arena(shared_arena, depth));
        pk_arena_reset(shared_arena);
        return c;
    }
    }
}

/* The whole benchmark program; returns its checksum (sum of all checks). */
static BENCH_KERNEL long binary_trees(int v, int max_depth, int print) {
    pk_pool *shared_pool = NULL, *long_pool = NULL;
    pk_arena *shared_arena = NULL, *long_arena = NULL;
    if (v == V_POOL_ONE && !(shared_pool = pk_pool_create(&node_pool))) abort();
    if (v == V_ARENA_RESET && !(shared_arena = pk_arena_create(0))) abort();
    long sum = 0;

    long c = one_tree(v, max_depth + 1, shared_pool, shared_arena);
    sum += c;
    if (print) printf("    stretch tree of depth %d\t check: %ld\n", max_depth + 1, c);

    /* The long-lived tree, in its own pool or arena for those variants. */
    node *long_lived;
    if (v == V_MALLOC) {
        long_lived = tree_malloc(max_depth);
    } else if (v == V_POOL_ONE) {
        long_lived = tree_pool(shared_pool, max_depth);
    } else if (v == V_POOL_TREE || v == V_POOL_TREE_FREE) {
        if (!(long_pool = pk_pool_create(&node_pool))) abort();
        long_lived = tree_pool(long_pool, max_depth);
    } else {
        if (!(long_arena = pk_arena_create(0))) abort();
        long_lived = tree_arena(long_arena, max_depth);
    }

    for (int d = MIN_DEPTH; d <= max_depth; d += 2) {
        long iterations = 1L << (max_depth - d + MIN_DEPTH), total = 0;
        for (long i = 0; i < iterations; i++) total += one_tree(v, d, shared_pool, shared_arena);
        sum += total;
        if (print) printf("    %ld\t trees of depth %d\t check: %ld\n", iterations, d, total);
    }

    c = check(long_lived);
    sum += c;
    if (print) printf("    long lived tree of depth %d\t check: %ld\n", max_depth, c);
    if (v == V_MALLOC) {
        free_malloc(long_lived);
    } else if (v == V_POOL_ONE) {
        free_pool(shared_pool, long_lived);
    } else if (long_pool) {
        free_pool(long_pool, long_lived);
        pk_pool_destroy(long_pool);
    } else {
        pk_arena_destroy(long_arena);
    }
    pk_pool_destroy(shared_pool);
    pk_arena_destroy(shared_arena);
    return sum;
}

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 5);
    int depth = (int)bench_arg_long(&o, "--depth", o.quick ? 14 : 16);
    if (depth < MIN_DEPTH + 2) depth = MIN_DEPTH + 2;
    bench_header("binary-trees (Computer Language Benchmarks Game), single thread", &o);
    printf("depth %d; node %zu B; the program's output (malloc variant):\n", depth, sizeof(node));
    long expect = binary_trees(V_MALLOC, depth, 1); /* also the warm-up of malloc */
    pk_set_error_handler(count_warnings, NULL);

    bench_series t[NVAR] = {{{0}, 0}}, ratio[NVAR] = {{{0}, 0}};
    for (int rep = -1; rep < o.reps; rep++) {
        double v[NVAR];
        for (int k = 0; k < NVAR; k++) {
            double t0 = bench_now_ns();
            long sum = binary_trees(k, depth, 0);
            v[k] = (bench_now_ns() - t0) / 1e6;
            if (sum != expect) {
                fprintf(stderr, "%s: checksum %ld, expected %ld\n", var_label[k], sum, expect);
                return 1;
            }
        }
        if (rep < 0) continue;
        for (int k = 0; k < NVAR; k++) {
            bench_add(&t[k], v[k]);
            bench_add(&ratio[k], v[k] / v[V_MALLOC]);
        }
    }

    printf("\n  %-34s %10s %-5s %-25s  %s\n", "variant", "median", "", "[min - max]",
           "x malloc (median of per-repetition ratios)");
    for (int k = 0; k < NVAR; k++) {
        char extra[32];
        snprintf(extra, sizeof extra, "%6.2fx", bench_median(&ratio[k]));
        bench_row(var_label[k], &t[k], "ms", extra);
    }
    pk_set_error_handler(NULL, NULL);
    printf("  (pk_pool_destroy warnings about live nodes, counted by the handler: %lu)\n",
           destroy_warnings);
    printf("  pk_pool per tree with every node freed first: %.2fx malloc\n",
           bench_median(&ratio[V_POOL_TREE_FREE]));
    double r = bench_median(&ratio[V_POOL_TREE]);
    int pass = bench_target(r <= 0.3, "binary-trees depth %d: pk_pool per tree <= 0.3x malloc: "
                            "%.2fx (%.1f vs %.1f ms)", depth, r, bench_median(&t[V_POOL_TREE]),
                            bench_median(&t[V_MALLOC]));
    r = bench_median(&ratio[V_POOL_ONE]);
    pass &= bench_target(r <= 0.6, "binary-trees depth %d: one pk_pool, nodes freed one by one "
                         "<= 0.6x malloc: %.2fx (%.1f vs %.1f ms)", depth, r,
                         bench_median(&t[V_POOL_ONE]), bench_median(&t[V_MALLOC]));
    printf("binary-trees targets: %s\n", pass ? "all pass" : "some FAIL");
    return 0;
}
