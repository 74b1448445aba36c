/* Frees in the order objects were made, or in another: each round
 * allocates COUNT objects of SIZE bytes one at a time, puts them in ORDER's
 * order, and frees them BATCH objects a pk_pool_free_bulk call, or, with
 * BATCH 0, one pk_pool_free each (the owner's short path: docs/results.md,
 * "Random frees and the region map"). The instruction counts at two
 * COUNTs, under valgrind --tool=callgrind, differ by the work of the
 * objects between them (docs/results.md, "Hardened pools"); the program
 * prints the fastest round's ns a free.
 *
 * Usage: pool_bulkfree COUNT ORDER (0 as made, 1 shuffled, 2 two objects of
 *        each half in turn, 3 one of each) [HARDENED (1)]
 *        [SIZE (64) BATCH (64) ROUNDS (3)]
 */
#include <poolkit/pool.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The first half's objects and the second half's in turn, run objects of
 * each at a time (the halves' slabs differ once a half fills a slab). */
static void interleave(void **objs, size_t n, size_t run) {
    void **copy = malloc(n * sizeof *copy);
    if (!copy) exit(1);
    size_t half = n / 2 / run * run, a = 0, b = half, k = 0;
    for (size_t i = 0; i < n; i++) copy[i] = objs[i];
    while (a < half) {
        for (size_t j = 0; j < run; j++) objs[k++] = copy[a++];
        for (size_t j = 0; j < run; j++) objs[k++] = copy[b++];
    }
    while (b < n) objs[k++] = copy[b++];
    free(copy);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: pool_bulkfree COUNT ORDER [HARDENED SIZE BATCH ROUNDS]\n");
        return 2;
    }
    size_t n = strtoul(argv[1], NULL, 10), size = argc > 4 ? strtoul(argv[4], NULL, 10) : 64;
    size_t batch = argc > 5 ? strtoul(argv[5], NULL, 10) : 64, rounds = argc > 6 ? strtoul(argv[6], NULL, 10) : 3;
    int shuffled = atoi(argv[2]), hardened = argc > 3 && atoi(argv[3]);
    pk_pool_config cfg = {.name = "bulkfree", .size = size, .flags = hardened ? PK_POOL_HARDENED : 0u};
    pk_pool *p = pk_pool_create(&cfg);
    void **objs = malloc(n * sizeof *objs);
    if (!p || !objs) return 1;
    double best = 0;
    for (size_t r = 0; r < rounds; r++) {
        for (size_t i = 0; i < n; i++)
            if (!(objs[i] = pk_pool_alloc(p))) return 1;
        /* a fixed multiplicative shuffle: the same order in every run */
        for (size_t i = n; shuffled == 1 && i-- > 1;) {
            size_t j = (size_t)((i * UINT64_C(2654435761)) % (i + 1));
            void *t = objs[i];
            objs[i] = objs[j];
            objs[j] = t;
        }
        if (shuffled >= 2) interleave(objs, n, shuffled == 2 ? 2 : 1);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (!batch)
            for (size_t i = 0; i < n; i++) pk_pool_free(p, objs[i]);
        else
            for (size_t i = 0; i < n; i += batch) pk_pool_free_bulk(p, objs + i, n - i < batch ? n - i : batch);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)n;
        if (r == 0 || ns < best) best = ns;
    }
    printf("%.2f ns a free, the fastest of %zu rounds\n", best, rounds);
    pk_pool_destroy(p);
    free(objs);
    return 0;
}
