/* The hot loop's reference for bench_hotloop.c and hotloop_refs.c: a naive
 * free list inlined in the caller. Include after harness.h. */
#ifndef POOLKIT_BENCH_NAIVE_GLOBAL_H
#define POOLKIT_BENCH_NAIVE_GLOBAL_H

/* The reference: a global free list, refilled from a static slab. Not the
 * lab's naive list (lab/peer_naive.c, a heap struct reached through a
 * register): with one object going round, a core that renames memory
 * (recent Intel) forwards that struct's stores to its loads for free and
 * runs the loop in 2 cycles, or, when the struct and the object alias in
 * the low 12 address bits, in 10; a global's address does not get that
 * treatment, so this reference measures the same on every run. */
typedef struct naive_node { struct naive_node *next; } naive_node;
static naive_node *naive_head;
static _Alignas(64) char naive_slab[1 << 16];
static size_t naive_bump;

static BENCH_NOINLINE void *naive_refill(size_t size) {
    if (naive_bump + size > sizeof naive_slab) abort();
    void *p = naive_slab + naive_bump;
    naive_bump += size;
    return p;
}
static inline void *naive_alloc(size_t size) {
    naive_node *n = naive_head;
    if (__builtin_expect(n != NULL, 1)) {
        naive_head = n->next;
        return n;
    }
    return naive_refill(size);
}
static inline void naive_free(void *p) {
    naive_node *n = p;
    n->next = naive_head;
    naive_head = n;
}
/* One size at a time: the list starts empty for each run. */
static void naive_reset(void) {
    naive_head = NULL;
    naive_bump = 0;
}

#endif
