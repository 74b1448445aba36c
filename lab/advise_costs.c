/* pk-lab advise-costs [--reps N] [--ops N] SIZE...: what one allocation and
 * its free cost on this machine in each style `pk-lab advise` prices
 * (lab/advise.py), at each size, as JSON on stdout.
 *
 * Styles: glibc malloc, pk_pool, pk_pool with PK_POOL_LOCAL, pk_arena (no
 * free; reset every 1,024 objects in the hot loop, after each batch in the
 * batch loop: the reset is in the time), and an autorelease scope
 * (pk_scratch, memory valid until the scope pops; the scope popped after
 * every 16 blocks in the hot loop, after each batch in the batch loop).
 * Two loops from kernels.h, the lab's
 * own: hot (allocate, touch, free, n times) and batch (allocate 256,
 * touch each, free them in a fixed random order). Every figure is ns per
 * allocation net of the empty loop measured in the same repetition; the
 * repetitions run every style and size in an order that rotates, and the
 * figure is their median, with the minimum and maximum beside it.
 */
#include "lab.h"

#include <poolkit/poolkit.h>

#include <stdlib.h>
#include <string.h>

#define PER_BATCH 256
#define MAX_SIZES 32

enum { S_EMPTY, S_MALLOC, S_POOL, S_LOCAL, S_ARENA, S_AUTORELEASE, NSTYLES };
static const char *const style_name[NSTYLES] = {"empty", "malloc", "pool", "local", "arena", "autorelease"};
static const char *const style_subject[NSTYLES] = {"empty loop", "glibc malloc", "poolkit pk_pool",
                                                    "poolkit pk_pool LOCAL", "poolkit pk_arena", NULL};

/* The autorelease loops: a block of scratch memory per allocation
 * (pk_scratch: the thread's arena, rewound when the scope pops), a scope
 * pushed and popped around every `per_scope` blocks. */
static double autorelease_loop(size_t size, long n, long per_scope) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i += per_scope) {
        pk_autorelease_pool scope = pk_autorelease_push();
        for (long k = 0; k < per_scope; k++) {
            char *p = pk_scratch(size);
            p[0] = (char)k;
            LAB_ESCAPE(p);
        }
        pk_autorelease_pop(scope);
    }
    return lab_now_ns() - t0;
}

/* ns per allocation of style s at size, in loop 0 (hot) or 1 (batch). */
static double measure(int s, size_t size, int loop, long ops) {
    if (s == S_AUTORELEASE) return autorelease_loop(size, ops, loop ? PER_BATCH : 16) / (double)ops;
    lab_allocator *a = lab_allocator_named(style_subject[s]);
    if (!a || !a->available) return -1;
    void *ctx = a->open(size); /* glibc's is NULL: malloc needs none */
    if (!ctx && s != S_MALLOC) return -1;
    double ns = loop ? a->batch(ctx, size, ops, PER_BATCH, lab_workset_perm(PER_BATCH)) : a->hot(ctx, size, ops);
    a->close(ctx);
    return ns / (double)ops;
}

int lab_advise_costs_main(int argc, char **argv) {
    int reps = 5;
    long ops = 20000;
    size_t sizes[MAX_SIZES];
    int nsizes = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc) ops = atol(argv[++i]);
        else if (nsizes < MAX_SIZES && atol(argv[i]) > 0) sizes[nsizes++] = (size_t)atol(argv[i]);
        else {
            fprintf(stderr, "usage: pk-lab advise-costs [--reps N] [--ops N] SIZE...\n");
            return 2;
        }
    }
    if (reps < 1 || reps > LAB_MAX_REPS || ops < PER_BATCH || nsizes == 0) {
        fprintf(stderr, "pk-lab advise-costs: reps 1 to %d, ops at least %d, one size at least\n",
                LAB_MAX_REPS, PER_BATCH);
        return 2;
    }
    ops -= ops % PER_BATCH;
    static shared_series series[NSTYLES][MAX_SIZES][2];
    memset(series, 0, sizeof series);
    int ncells = NSTYLES * nsizes * 2;
    /* a warm-up pass, then the repetitions, each cell once in a rotated order;
     * a cell's figure is net of the empty loop at the same size and loop */
    for (int rep = -1; rep < reps; rep++) {
        double raw[NSTYLES][MAX_SIZES][2];
        for (int c = 0; c < ncells; c++) {
            int cell = (c + (rep < 0 ? 0 : rep) * 7) % ncells;
            int s = cell / (nsizes * 2), z = cell / 2 % nsizes, loop = cell % 2;
            raw[s][z][loop] = measure(s, sizes[z], loop, rep < 0 ? ops / 10 + PER_BATCH : ops);
        }
        if (rep < 0) continue;
        for (int s = 1; s < NSTYLES; s++)
            for (int z = 0; z < nsizes; z++)
                for (int loop = 0; loop < 2; loop++)
                    if (raw[s][z][loop] >= 0)
                        shared_series_add(&series[s][z][loop], raw[s][z][loop] - raw[S_EMPTY][z][loop]);
    }
    char cpu[256];
    shared_cpu_model(cpu, sizeof cpu);
    printf("{\"source\": \"pk-lab advise-costs --reps %d --ops %ld", reps, ops);
    for (int z = 0; z < nsizes; z++) printf(" %zu", sizes[z]);
    printf("\", \"cpu\": \"%s\", \"reps\": %d, \"ops\": %ld, \"per_batch\": %d, \"sizes\": [", cpu, reps, ops,
           PER_BATCH);
    for (int z = 0; z < nsizes; z++) printf("%s%zu", z ? ", " : "", sizes[z]);
    printf("],\n \"ns\": {");
    for (int s = 1; s < NSTYLES; s++) {
        printf("%s\n  \"%s\": {", s > 1 ? "," : "", style_name[s]);
        for (int loop = 0; loop < 2; loop++) {
            printf("%s\"%s\": [", loop ? ", " : "", loop ? "batch" : "hot");
            for (int z = 0; z < nsizes; z++) {
                const shared_series *x = &series[s][z][loop];
                if (x->n) printf("%s[%.3f, %.3f, %.3f]", z ? ", " : "", shared_median(x), shared_min(x), shared_max(x));
                else printf("%snull", z ? ", " : "");
            }
            printf("]");
        }
        printf("}");
    }
    printf("\n }}\n");
    return 0;
}
