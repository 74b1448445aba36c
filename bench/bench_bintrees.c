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
 *   pk_pool HARDENED per tree, and one pool HARDENED: the two pk_pool
 *               variants above with the pools created PK_POOL_HARDENED (the
 *               per-tree pool keeps PK_POOL_REGION: what POOLKIT_HARDENED=1
 *               makes of it; its free lists are checked as its slabs go)
 * and, for information, one pk_arena reset after each tree. Targets:
 * pk_pool per tree <= 0.25x the malloc version's time; one pool, nodes freed,
 * <= 0.6x; each hardened variant <= 1.15x its default twin. Ratios are
 * medians of per-repetition ratios. (bench_objects adds the pk_new variant.)
 *
 * Usage: bench_bintrees [--depth N] [--reps N] [--quick]
 */
#include "harness.h"
#include "bintrees.h" /* the lab's (pk_lab_core's include directory) */

#include <poolkit/arena.h>
#include <poolkit/error.h>
#include <poolkit/pool.h>

typedef bt_node node; /* lab/bintrees.h: the node, the trees, the program */
#define MIN_DEPTH BT_MIN_DEPTH
#define check bt_check

/* ---- the program, once per variant ---- */

enum { V_MALLOC, V_POOL_TREE, V_POOL_TREE_FREE, V_ARENA_TREE, V_POOL_ONE, V_ARENA_RESET,
       V_POOL_TREE_HARD, V_POOL_ONE_HARD, NVAR };
static const char *var_label[NVAR] = {
    "malloc/free",
    "pk_pool per tree",
    "pk_pool per tree, nodes freed",
    "pk_arena per tree",
    "pk_pool, one pool, nodes freed",
    "pk_arena, reset per tree (info)",
    "pk_pool HARDENED per tree",
    "pk_pool HARDENED, one pool, freed",
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
/* The hardened twins of the two. */
static const pk_pool_config node_pool_hard = {
    .name = "binary-trees (hardened)", .size = sizeof(node), .flags = PK_POOL_HARDENED};
static const pk_pool_config tree_pool_hard = {.name = "binary-trees (per tree, hardened)",
                                              .size = sizeof(node),
                                              .flags = PK_POOL_REGION | PK_POOL_HARDENED};

/* Builds, checks and frees one tree of the given depth; returns its check. */
static long one_tree(int v, int depth, pk_pool *shared_pool, pk_arena *shared_arena) {
    long c;
    switch (v) {
    case V_MALLOC: {
        node *t = bt_make_malloc(depth);
        c = check(t);
        bt_free_malloc(t);
        return c;
    }
    case V_POOL_TREE: /* the pool goes with its tree, as APR's pools do */
    case V_POOL_TREE_HARD: {
        pk_pool *p = pk_pool_create(v == V_POOL_TREE ? &tree_pool_config : &tree_pool_hard);
        if (!p) abort();
        c = check(bt_make_pool(p, depth));
        pk_pool_destroy(p);
        return c;
    }
    case V_POOL_TREE_FREE: {
        pk_pool *p = pk_pool_create(&node_pool);
        if (!p) abort();
        node *t = bt_make_pool(p, depth);
        c = check(t);
        bt_free_pool(p, t);
        pk_pool_destroy(p);
        return c;
    }
    case V_ARENA_TREE: {
        pk_arena *a = pk_arena_create(0);
        if (!a) abort();
        c = check(bt_make_arena(a, depth));
        pk_arena_destroy(a);
        return c;
    }
    case V_POOL_ONE:
    case V_POOL_ONE_HARD: {
        node *t = bt_make_pool(shared_pool, depth);
        c = check(t);
        bt_free_pool(shared_pool, t);
        return c;
    }
    default: {
        c = check(bt_make_arena(shared_arena, depth));
        pk_arena_reset(shared_arena);
        return c;
    }
    }
}

/* One variant's context for bt_program: its shared pool or arena, and
 * where the long-lived tree lives. */
typedef struct run {
    int v;
    pk_pool *shared_pool, *long_pool;
    pk_arena *shared_arena, *long_arena;
} run;

static long run_one(void *ctx, int depth) {
    run *r = ctx;
    return one_tree(r->v, depth, r->shared_pool, r->shared_arena);
}

/* The long-lived tree, in its own pool or arena for those variants. */
static node *run_make_long(void *ctx, int depth) {
    run *r = ctx;
    if (r->v == V_MALLOC) return bt_make_malloc(depth);
    if (r->v == V_POOL_ONE || r->v == V_POOL_ONE_HARD) return bt_make_pool(r->shared_pool, depth);
    if (r->v == V_POOL_TREE || r->v == V_POOL_TREE_FREE || r->v == V_POOL_TREE_HARD) {
        if (!(r->long_pool = pk_pool_create(r->v == V_POOL_TREE_HARD ? &node_pool_hard : &node_pool)))
            abort();
        return bt_make_pool(r->long_pool, depth);
    }
    if (!(r->long_arena = pk_arena_create(0))) abort();
    return bt_make_arena(r->long_arena, depth);
}

static void run_free_long(void *ctx, node *t) {
    run *r = ctx;
    if (r->v == V_MALLOC) bt_free_malloc(t);
    else if (r->v == V_POOL_ONE || r->v == V_POOL_ONE_HARD) bt_free_pool(r->shared_pool, t);
    else if (r->long_pool) bt_free_pool(r->long_pool, t);
    pk_pool_destroy(r->long_pool);
    pk_arena_destroy(r->long_arena);
}

static const bt_variant variant = {run_one, run_make_long, run_free_long};

/* The whole benchmark program; returns its checksum (sum of all checks). */
static BENCH_KERNEL long binary_trees(int v, int max_depth, int print) {
    run r = {v, NULL, NULL, NULL, NULL};
    if (v == V_POOL_ONE && !(r.shared_pool = pk_pool_create(&node_pool))) abort();
    if (v == V_POOL_ONE_HARD && !(r.shared_pool = pk_pool_create(&node_pool_hard))) abort();
    if (v == V_ARENA_RESET && !(r.shared_arena = pk_arena_create(0))) abort();
    long sum = bt_program(&variant, &r, max_depth, print);
    pk_pool_destroy(r.shared_pool);
    pk_arena_destroy(r.shared_arena);
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
    bench_series hard_tree = {{0}, 0}, hard_one = {{0}, 0}; /* hardened / default twin */
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
        bench_add(&hard_tree, v[V_POOL_TREE_HARD] / v[V_POOL_TREE]);
        bench_add(&hard_one, v[V_POOL_ONE_HARD] / v[V_POOL_ONE]);
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
    int pass = bench_target(r <= 0.25, "binary-trees depth %d: pk_pool per tree <= 0.25x malloc: "
                            "%.2fx (%.1f vs %.1f ms)", depth, r, bench_median(&t[V_POOL_TREE]),
                            bench_median(&t[V_MALLOC]));
    r = bench_median(&ratio[V_POOL_ONE]);
    pass &= bench_target(r <= 0.6, "binary-trees depth %d: one pk_pool, nodes freed one by one "
                         "<= 0.6x malloc: %.2fx (%.1f vs %.1f ms)", depth, r,
                         bench_median(&t[V_POOL_ONE]), bench_median(&t[V_MALLOC]));
    r = bench_median(&hard_tree);
    pass &= bench_target(r <= 1.15, "binary-trees depth %d: PK_POOL_HARDENED <= 1.15x the default "
                         "pool, pool per tree: %.2fx (%.1f vs %.1f ms)", depth, r,
                         bench_median(&t[V_POOL_TREE_HARD]), bench_median(&t[V_POOL_TREE]));
    r = bench_median(&hard_one);
    pass &= bench_target(r <= 1.15, "binary-trees depth %d: PK_POOL_HARDENED <= 1.15x the default "
                         "pool, one pool, nodes freed: %.2fx (%.1f vs %.1f ms)", depth,
                         r, bench_median(&t[V_POOL_ONE_HARD]), bench_median(&t[V_POOL_ONE]));
    printf("binary-trees targets: %s\n", pass ? "all pass" : "some FAIL");
    return 0;
}
