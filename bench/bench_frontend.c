/* The size-class front end's hot loop (poolkit/alloc.h): allocate, touch
 * one byte, free, one size at a time (the lab's hot kernel, lab/kernels.h),
 * against the typed pool of that size, all inline and static as users
 * compile them:
 *
 *   pk_alloc + pk_free         the class found from the size on alloc, from
 *                              the address on free (a call: the lookup is
 *                              the library's, alloc_internal.h)
 *   pk_alloc + pk_free_sized   the class from the size both ways: inline
 *   pk_pool                    the typed pool (the reference of the ratios)
 *   glibc malloc, mimalloc     for scale (mimalloc loaded at run time)
 *
 * Target: pk_alloc + pk_free at most 1.3x the typed pool's time, each ratio
 * the median over repetitions of the two measured side by side.
 *
 * Usage: bench_frontend [--reps N] [--quick] [--iters N] [--no-peers]
 */
#include "harness.h"

#include <poolkit/alloc.h>
#include <poolkit/pool.h>

#define K_NAME pk
#define K_ALLOC(c, sz) pk_pool_alloc((pk_pool *)(c))
#define K_FREE(c, p, sz) pk_pool_free((pk_pool *)(c), (p))
#include "kernels.h"
#undef K_NAME
#undef K_ALLOC
#undef K_FREE

#define K_NAME front
#define K_ALLOC(c, sz) pk_alloc(sz)
#define K_FREE(c, p, sz) pk_free(p)
#include "kernels.h"
#undef K_NAME
#undef K_ALLOC
#undef K_FREE

#define K_NAME sized
#define K_ALLOC(c, sz) pk_alloc(sz)
#define K_FREE(c, p, sz) pk_free_sized((p), (sz))
#include "kernels.h"
#undef K_NAME
#undef K_ALLOC
#undef K_FREE

static char empty_buf[64];
#define K_NAME empty
#define K_ALLOC(c, sz) ((void)(c), (void *)empty_buf)
#define K_FREE(c, p, sz) LAB_ESCAPE(p)
#include "kernels.h"

enum { C_EMPTY, C_POOL, C_FRONT, C_SIZED, C_GLIBC, C_MI, NCONT };
#define NSIZES 4
static const size_t sizes[NSIZES] = {16, 64, 256, 1024};

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 9);
    long iters = bench_arg_long(&o, "--iters", o.quick ? 2000000 : 10000000);
    int peers = !bench_arg_flag(&o, "--no-peers");
    bench_header("front end hot loop: pk_alloc/pk_free of one size against the typed pool (inline, static)", &o);
    printf("iterations per run: %ld; ns per alloc+free pair; ratio = median over repetitions of "
           "(contender / pk_pool in the same repetition)\n", iters);

    static lab_allocator here[4];
    empty_fill(&here[0]);
    pk_fill(&here[1]);
    front_fill(&here[2]);
    sized_fill(&here[3]);
    struct {
        const char *label;
        lab_allocator *a;
        const char *why;
    } cont[NCONT] = {
        {"empty loop (touch only)", &here[0], NULL},
        {"pk_pool (typed, one per size)", &here[1], NULL},
        {"pk_alloc + pk_free", &here[2], NULL},
        {"pk_alloc + pk_free_sized", &here[3], NULL},
        {"glibc malloc/free", NULL, NULL},
        {"mimalloc", NULL, NULL},
    };
    if (peers) {
        cont[C_GLIBC].a = lab_allocator_named("glibc malloc");
        cont[C_MI].a = lab_allocator_named("mimalloc");
        for (int c = C_GLIBC; c <= C_MI; c++)
            if (!cont[c].a || !cont[c].a->available) cont[c].why = cont[c].a ? cont[c].a->why : "not built";
    } else {
        cont[C_GLIBC].why = cont[C_MI].why = "skipped (--no-peers)";
    }
    void *ctx[NSIZES][NCONT] = {{0}};
    for (int s = 0; s < NSIZES; s++) {
        ctx[s][C_POOL] = pk_pool_create(&(pk_pool_config){.name = "typed", .size = sizes[s]});
        for (int c = C_GLIBC; c <= C_MI; c++)
            if (!cont[c].why && cont[c].a->open) ctx[s][c] = cont[c].a->open(sizes[s]);
    }

    static bench_series t[NSIZES][NCONT], ratio[NSIZES][NCONT];
    for (int rep = -1; rep < o.reps; rep++) {
        long n = rep < 0 ? iters / 4 : iters;
        for (int s = 0; s < NSIZES; s++) {
            double v[NCONT] = {0};
            for (int c = 0; c < NCONT; c++)
                if (!cont[c].why) v[c] = cont[c].a->hot(ctx[s][c], sizes[s], n) / (double)n;
            if (rep < 0) continue;
            for (int c = 0; c < NCONT; c++) {
                if (cont[c].why) continue;
                bench_add(&t[s][c], v[c]);
                bench_add(&ratio[s][c], v[c] / v[C_POOL]);
            }
        }
    }

    printf("\n  %-34s %10s %-5s %-25s  %s\n", "contender", "median", "", "[min - max]", "x pk_pool");
    for (int s = 0; s < NSIZES; s++) {
        printf("size %zu B\n", sizes[s]);
        for (int c = 0; c < NCONT; c++) {
            if (cont[c].why) {
                bench_row_na(cont[c].label, cont[c].why);
                continue;
            }
            char extra[64] = "";
            if (c != C_EMPTY) snprintf(extra, sizeof extra, "%6.2fx", bench_median(&ratio[s][c]));
            bench_row(cont[c].label, &t[s][c], "ns", extra);
        }
    }
    printf("\n");
    int pass = 1;
    for (int s = 0; s < NSIZES; s++) {
        double r = bench_median(&ratio[s][C_FRONT]), rs = bench_median(&ratio[s][C_SIZED]);
        pass &= bench_target(r <= 1.3, "front end hot loop %4zu B, pk_alloc + pk_free <= 1.3x the typed pool: "
                             "%.2fx (%.2f vs %.2f ns); pk_free_sized instead: %.2fx (informative)",
                             sizes[s], r, bench_median(&t[s][C_FRONT]), bench_median(&t[s][C_POOL]), rs);
    }
    printf("front end hot loop targets: %s\n", pass ? "all pass" : "some FAIL");
    for (int s = 0; s < NSIZES; s++) pk_pool_destroy(ctx[s][C_POOL]);
    return 0;
}
