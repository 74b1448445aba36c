/* peers: every allocator on two plain loops, sizes 16 B to 4 KiB.
 *
 *   hot    allocate, touch, free: the cost of one round trip when the
 *          allocator's caches are hot (ns per allocate+free, net of the
 *          empty loop);
 *   batch  allocate 1024 objects (touching each), then free them in a fixed
 *          random order: ns per object, net of the empty loop.
 *
 * Allocators that cannot free one object (APR pools, pk_arena) free in bulk:
 * every 1024 objects in the hot loop, after each batch in the batch loop;
 * the bulk free is part of the time. Each measurement opens a fresh context
 * (a pool of that size, where the allocator has one), warms it with one
 * untimed batch, and runs the contenders interleaved, starting with a
 * different one each repetition.
 *
 * pk_pool's hardened mode runs beside the default pool (target:
 * in the hot loop at most 1.5x the default pool's time at every size, the
 * median of the repetitions' ratios of gross times; the ratio of the net
 * times is shown beside it), and its PK_POOL_LOCAL mode, whose target is
 * the fastest row of the hot loop at every size (a one-thread pool against
 * plain inline free lists: Boost.Pool's).
 */
#include "lab.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXP "peers"
#define PER_BATCH 1024

static const char *const contenders[] = {
    "empty loop",   "glibc malloc", "jemalloc", LAB_MIMALLOC, LAB_MIMALLOC3, "tcmalloc",
    "Boost.Pool pool", "GLib g_slice", "APR pools", "talloc", "poolkit pk_arena",
    LAB_PK_POOL,    LAB_PK_HARDENED, "poolkit pk_pool LOCAL",
};
#define NCONT (int)(sizeof contenders / sizeof contenders[0])

static int index_of(const char *subject) {
    for (int i = 0; i < NCONT; i++)
        if (!strcmp(contenders[i], subject)) return i;
    abort();
}

static const char *const loops[] = {"hot", "batch"};

static int sizes(size_t *out) {
    static const size_t all[] = {16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
    static const size_t some[] = {16, 64, 256, 1024, 4096};
    static const size_t few[] = {16, 256, 4096};
    const size_t *src = lab_opt.scale == LAB_FULL || lab_opt.scale == LAB_DEFAULT ? all
                        : lab_opt.scale == LAB_QUICK                              ? some
                                                                                  : few;
    int n = src == all ? 9 : src == some ? 5 : 3;
    memcpy(out, src, sizeof(size_t) * (size_t)n);
    return n;
}

static long ops(void) { return lab_pick(20000, 500000, 2000000, 5000000); }

static double measure(lab_allocator *a, int loop, size_t size, long n, const uint32_t *order) {
    void *ctx = a->open(size);
    double ns;
    if (loop == 0) {
        a->hot(ctx, size, PER_BATCH); /* warm the context */
        ns = a->hot(ctx, size, n);
    } else {
        a->batch(ctx, size, PER_BATCH, PER_BATCH, order);
        ns = a->batch(ctx, size, n, PER_BATCH, order);
    }
    a->close(ctx);
    return ns;
}

static void run(int rep) {
    static uint32_t order[PER_BATCH];
    if (!order[1]) shared_permutation(order, PER_BATCH, 0x5eed);
    size_t sz[9];
    int nsz = sizes(sz);
    long n = lab_warm(ops());
    n = (n + PER_BATCH - 1) / PER_BATCH * PER_BATCH;
    for (int loop = 0; loop < 2; loop++) {
        for (int k = 0; k < nsz; k++) {
            double per_op[NCONT];
            int ok[NCONT];
            char detail[48];
            snprintf(detail, sizeof detail, "%s loop, %zu B", loops[loop], sz[k]);
            for (int j = 0; j < NCONT; j++) {
                int i = (j + (rep > 0 ? rep : 0)) % NCONT;
                lab_allocator *a = lab_allocator_named(contenders[i]);
                ok[i] = 0;
                if (!a || !a->available || !a->hot) continue;
                lab_progress(a->subject, detail);
                per_op[i] = measure(a, loop, sz[k], n, order) / (double)n;
                ok[i] = 1;
            }
            if (rep < 0) continue;
            lab_params ps = {0};
            lab_pset_str(&ps, "loop", loops[loop]);
            lab_pset_num(&ps, "size", (double)sz[k]);
            lab_pset_num(&ps, "ops", (double)n);
            const int empty = index_of("empty loop"), pool = index_of(LAB_PK_POOL),
                      hardened = index_of(LAB_PK_HARDENED);
            for (int i = 0; i < NCONT; i++) {
                lab_allocator *a = lab_allocator_named(contenders[i]);
                if (!a) continue;
                lab_row *r = lab_row_for(EXP, a, &ps);
                if (!ok[i]) continue;
                lab_row_sample(r, per_op[i]);
                lab_row_extra(r, "net", per_op[i] - (ok[0] ? per_op[0] : 0));
                if (i == hardened && ok[pool]) { /* measured side by side in this repetition */
                    lab_row_extra(r, LAB_VS_POOL, per_op[i] / per_op[pool]);
                    if (ok[empty])
                        lab_row_extra(r, "net_vs_pk_pool",
                                      (per_op[i] - per_op[empty]) / (per_op[pool] - per_op[empty]));
                }
            }
        }
    }
}

static void print(FILE *out) {
    size_t sz[9];
    int nsz = sizes(sz);
    char b[32];
    fprintf(out, "== peers: hot loop and batch loop, every allocator\n");
    for (int loop = 0; loop < 2; loop++) {
        fprintf(out, "\n  %s loop: ns per %s, net of the empty loop (median of %d)\n",
                loops[loop], loop == 0 ? "allocate+touch+free" : "object (batches of 1024)",
                lab_opt.reps);
        fprintf(out, "  %-30s", "allocator \\ size (B)");
        for (int k = 0; k < nsz; k++) fprintf(out, " %7zu", sz[k]);
        fprintf(out, "\n");
        char want_loop[16];
        snprintf(want_loop, sizeof want_loop, "\"%s\"", loops[loop]);
        /* one line per subject, in the order rows were made */
        for (int i = 0; i < lab_row_count(); i++) {
            lab_row *r = lab_row_at(i);
            if (strcmp(r->experiment, EXP) || !lab_row_first_of_subject(i)) continue;
            if (!r->available && !lab_param_get(r, "loop")) {
                if (loop == 0) fprintf(out, "  %-30s n/a: %.80s\n", r->subject, r->why);
                continue;
            }
            fprintf(out, "  %-30s", r->subject);
            if (!r->available) {
                fprintf(out, " n/a: %.80s\n", r->why);
                continue;
            }
            for (int k = 0; k < nsz; k++) {
                char want_size[16];
                snprintf(want_size, sizeof want_size, "%zu", sz[k]);
                lab_row *c = lab_find(EXP, r->subject, "loop", want_loop, "size", want_size, NULL);
                double v = NAN;
                if (c && c->available) {
                    v = lab_extra_median(c, "net");
                    if (isnan(v)) v = lab_median(&c->samples);
                    if (!strcmp(c->subject, "empty loop")) v = lab_median(&c->samples);
                }
                fprintf(out, " %7s", lab_fmt(v, b));
            }
            fprintf(out, "\n");
        }
    }
    fprintf(out, "  (the empty loop's line is its own gross time: what was subtracted)\n");
    lab_target t = LAB_TARGET_INIT;
    for (int k = 0; k < nsz; k++) {
        char want_size[16];
        snprintf(want_size, sizeof want_size, "%zu", sz[k]);
        lab_row *h = lab_find(EXP, LAB_PK_HARDENED, "loop", "\"hot\"", "size", want_size, NULL);
        double v = lab_vs_pool(h);
        double net = h && h->available ? lab_extra_median(h, "net_vs_pk_pool") : NAN;
        lab_target_add(&t, ", ", v, 1.5, "%zu B %.2fx (net %.2fx)", sz[k], v, net);
    }
    fprintf(out, "  target (hardened peers): pk_pool HARDENED at most 1.5x the default pk_pool in the "
                 "hot loop at every size (median of the repetitions' ratios): %s -> %s\n",
            t.line, lab_target_verdict(&t));
    /* PK_POOL_LOCAL the fastest row of the hot loop: its net time against
     * the least of the other rows' (the empty loop aside), per size. */
    lab_target l = LAB_TARGET_INIT;
    for (int k = 0; k < nsz; k++) {
        char want_size[16];
        snprintf(want_size, sizeof want_size, "%zu", sz[k]);
        double local = NAN, best = INFINITY;
        const char *who = "";
        for (int i = 1; i < NCONT; i++) {
            lab_row *c = lab_find(EXP, contenders[i], "loop", "\"hot\"", "size", want_size, NULL);
            double v = c && c->available ? lab_extra_median(c, "net") : NAN;
            if (i == NCONT - 1) local = v;
            else if (v < best) best = v, who = contenders[i];
        }
        lab_target_add(&l, ", ", local / best, 1.0, "%zu B %.2f vs %.2f ns (%s)", sz[k], local, best, who);
    }
    fprintf(out, "  target: pk_pool LOCAL the fastest row of the hot loop at every size (net of the "
                 "empty loop, against the fastest other row): %s -> %s\n", l.line, lab_target_verdict(&l));
}

const lab_experiment lab_exp_peers = {
    EXP, "Hot loop and batch loop, every allocator (16 B to 4 KiB)", "ns/op", 20.0, NULL, run,
    print, NULL,
};
