/* binary-trees, the Computer Language Benchmarks Game program, written once
 * for bench/bench_bintrees.c and the lab's binary-trees experiment (as
 * workset.h is for the working sets): the node, the check, the trees made
 * from malloc, a pool, an arena or pk_new objects, and the program's shape.
 *
 * The program: a stretch tree of depth max+1 is made, checked and freed; a
 * long-lived tree of depth max stays; then for d = 4, 6, ..., max,
 * 2^(max-d+4) trees of depth d are made, checked (nodes counted) and freed;
 * last the long-lived tree is checked and freed. A variant says how a tree
 * is made and freed (bt_variant); the sum of every check is the program's
 * result, the same for every variant of one depth. */
#ifndef PK_LAB_BINTREES_H
#define PK_LAB_BINTREES_H

#include <poolkit/arena.h>
#include <poolkit/object.h>
#include <poolkit/pool.h>

#include <stdio.h>
#include <stdlib.h>

#define BT_MIN_DEPTH 4

typedef struct bt_node {
    struct bt_node *left, *right;
} bt_node;

static inline long bt_check(const bt_node *n) {
    return 1 + (n->left ? bt_check(n->left) + bt_check(n->right) : 0);
}

static inline bt_node *bt_leaf_or_pair(bt_node *n, bt_node *left, bt_node *right) {
    n->left = left;
    n->right = right;
    return n;
}

static inline bt_node *bt_make_malloc(int depth) {
    bt_node *n = (bt_node *)malloc(sizeof *n);
    if (!n) abort();
    return depth > 0 ? bt_leaf_or_pair(n, bt_make_malloc(depth - 1), bt_make_malloc(depth - 1))
                     : bt_leaf_or_pair(n, NULL, NULL);
}

static inline void bt_free_malloc(bt_node *n) {
    if (n->left) {
        bt_free_malloc(n->left);
        bt_free_malloc(n->right);
    }
    free(n);
}

static inline bt_node *bt_make_pool(pk_pool *p, int depth) {
    bt_node *n = (bt_node *)pk_pool_alloc(p);
    if (!n) abort();
    return depth > 0 ? bt_leaf_or_pair(n, bt_make_pool(p, depth - 1), bt_make_pool(p, depth - 1))
                     : bt_leaf_or_pair(n, NULL, NULL);
}

static inline void bt_free_pool(pk_pool *p, bt_node *n) {
    if (n->left) {
        bt_free_pool(p, n->left);
        bt_free_pool(p, n->right);
    }
    pk_pool_free(p, n);
}

static inline bt_node *bt_make_arena(pk_arena *a, int depth) {
    bt_node *n = (bt_node *)pk_arena_alloc(a, sizeof *n, 0);
    if (!n) abort();
    return depth > 0 ? bt_leaf_or_pair(n, bt_make_arena(a, depth - 1), bt_make_arena(a, depth - 1))
                     : bt_leaf_or_pair(n, NULL, NULL);
}

/* How one variant makes and frees trees; ctx is its own. */
typedef struct bt_variant {
    /* Makes, checks and frees a short-lived tree; returns its check. */
    long (*one_tree)(void *ctx, int depth);
    /* Makes the long-lived tree, and frees it at the end. */
    bt_node *(*make_long)(void *ctx, int depth);
    void (*free_long)(void *ctx, bt_node *tree);
} bt_variant;

/* The program at depth max; returns the sum of every check. With print,
 * the Game's output lines go to stdout. */
static inline long bt_program(const bt_variant *v, void *ctx, int max, int print) {
    long sum = 0, c = v->one_tree(ctx, max + 1);
    sum += c;
    if (print) printf("    stretch tree of depth %d\t check: %ld\n", max + 1, c);
    bt_node *long_lived = v->make_long(ctx, max);
    for (int d = BT_MIN_DEPTH; d <= max; d += 2) {
        long iterations = 1L << (max - d + BT_MIN_DEPTH), total = 0;
        for (long i = 0; i < iterations; i++) total += v->one_tree(ctx, d);
        sum += total;
        if (print) printf("    %ld\t trees of depth %d\t check: %ld\n", iterations, d, total);
    }
    c = bt_check(long_lived);
    sum += c;
    if (print) printf("    long lived tree of depth %d\t check: %ld\n", max, c);
    v->free_long(ctx, long_lived);
    return sum;
}


/* Two variants every user of this header runs: nodes from malloc, freed one
 * by one; and pk_new objects, where releasing the root frees the tree (each
 * node's dealloc releases its children). */
static inline long bt__malloc_one(void *ctx, int d) {
    (void)ctx;
    bt_node *t = bt_make_malloc(d);
    long c = bt_check(t);
    bt_free_malloc(t);
    return c;
}
static inline bt_node *bt__malloc_long(void *ctx, int d) { return (void)ctx, bt_make_malloc(d); }
static inline void bt__malloc_free_long(void *ctx, bt_node *t) { (void)ctx, bt_free_malloc(t); }
static const bt_variant bt_malloc = {bt__malloc_one, bt__malloc_long, bt__malloc_free_long};

static inline void bt__object_dealloc(void *obj) {
    bt_node *n = (bt_node *)obj;
    pk_release(n->left);
    pk_release(n->right);
}
static const pk_class bt_object_class = {"binary-trees node", sizeof(bt_node), bt__object_dealloc};

static inline bt_node *bt_make_object(int depth) {
    bt_node *n = (bt_node *)pk_new(&bt_object_class); /* fields come zeroed */
    if (!n) abort();
    if (depth > 0) {
        n->left = bt_make_object(depth - 1);
        n->right = bt_make_object(depth - 1);
    }
    return n;
}
static inline long bt__object_one(void *ctx, int d) {
    (void)ctx;
    bt_node *t = bt_make_object(d);
    long c = bt_check(t);
    pk_release(t);
    return c;
}
static inline bt_node *bt__object_long(void *ctx, int d) { return (void)ctx, bt_make_object(d); }
static inline void bt__object_free_long(void *ctx, bt_node *t) { (void)ctx, pk_release(t); }
static const bt_variant bt_objects = {bt__object_one, bt__object_long, bt__object_free_long};

#endif
