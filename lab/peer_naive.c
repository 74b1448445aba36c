/* The naive free list: about the least a fixed-size allocator can do, the
 * reference of bench/'s working-set and pattern targets. A heap struct with
 * a free list linked through the objects' first word, refilled by bumping
 * through 1 MiB blocks from malloc; it never gives memory back until it is
 * closed. Zig's std.heap.MemoryPool is the same algorithm (a free list in
 * front of an arena), so this stands in for it where Zig is not run. Not
 * thread-safe, so no thread workloads. (bench/bench_hotloop.c keeps a global
 * list of its own, and says why.) */
#include "lab.h"

#include <stdlib.h>

typedef struct naive_heap {
    void *head;       /* free objects, linked through their first word */
    char *bump, *end; /* the unused part of the current block */
    size_t size;
    void *blocks;     /* every block, linked through its first word */
} naive_heap;

#define NAIVE_BLOCK ((size_t)1 << 20)

static LAB_NOINLINE void *naive_refill(naive_heap *h) {
    size_t bytes = NAIVE_BLOCK > 64 + h->size ? NAIVE_BLOCK : 64 + h->size;
    char *b = (char *)malloc(bytes);
    if (!b) abort();
    *(void **)b = h->blocks;
    h->blocks = b;
    h->bump = b + 64 + h->size;
    h->end = b + bytes;
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
    naive_heap *h = (naive_heap *)calloc(1, sizeof *h);
    if (h) h->size = (size + 15) & ~(size_t)15;
    return h;
}

static void naive_close(void *ctx) {
    naive_heap *h = (naive_heap *)ctx;
    while (h->blocks) {
        void *next = *(void **)h->blocks;
        free(h->blocks);
        h->blocks = next;
    }
    free(h);
}

#define K_NAME naive
#define K_ALLOC(c, sz) naive_alloc((naive_heap *)(c))
#define K_FREE(c, p, sz) naive_free((naive_heap *)(c), (p))
#define K_FREES_EACH 1
#include "kernels.h"

void lab_adapter_naive(lab_allocator *a) {
    a->subject = "naive free list";
    a->family = "peer";
    a->open = naive_open;
    a->close = naive_close;
    K_FILL(a);
    snprintf(a->version, sizeof a->version, "naive free list (never gives memory back)");
    a->available = 1;
}
