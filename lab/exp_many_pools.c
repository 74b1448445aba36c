/* many-pools: memory with many threads and many pools.
 *
 * 1,000 contexts of 64-byte objects (pk_pool: 1,000 pools; the mallocs have
 * no pools, so theirs is the same objects from one heap: the reference), and
 * 1, 2 or 8 threads that each allocate 10 objects from every one of them
 * (touching each in full) and hold them. While they hold them, with their
 * caches alive, the main thread reads the process's RSS growth since before
 * the pools were created, and poolkit's own account (pk_stats_get: bytes
 * its slabs reserve from the system, and of those the bytes ever touched).
 * Reported in bytes per thread per pool, against the 640 B live in each.
 * Each measurement in a forked child (lab_manypools_measure,
 * measure_shapes.c; the loop: kernels_shapes.h) of a fresh pk-lab process
 * (lab_fresh_child): a child of the lab's own process would inherit what
 * earlier experiments left in each allocator, and an allocator that gives
 * that back while it runs (mimalloc 3 does) would show RSS shrinking. No
 * timing target: the issue
 * asks for the figures and a bound on them (docs/results.md).
 */
#include "lab.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXP "many-pools"
#define OBJ 64
#define PER_POOL 10
static const int threads[] = {1, 2, 8};
#define NTHREADS 3

static long pools(void) { return 1000; }

static int has(const lab_allocator *a) { return a->manypools != NULL; }

/* `pk-lab child many-pools SUBJECT THREADS`: lab_manypools_measure's five
 * figures on one line ("nan" for the peers' poolkit figures). */
static int child(int argc, char **argv) {
    lab_allocator *a = argc == 2 ? lab_allocator_named(argv[0]) : NULL;
    double out[5];
    if (!a || !a->available || lab_manypools_measure(a, atoi(argv[1]), pools(), PER_POOL, OBJ, out) != 0)
        return 2;
    return dprintf(LAB_CHILD_FD, "%.17g %.17g %.17g %.17g %.17g\n", out[0], out[1], out[2], out[3], out[4]) > 0
               ? 0 : 1;
}

/* pt: threads[i], measured in a fresh pk-lab process. */
static int measure(lab_allocator *a, const lab_point *pt, double *out) {
    char t[16], line[512];
    snprintf(t, sizeof t, "%d", threads[pt->i]);
    const char *args[] = {a->subject, t};
    if (lab_fresh_child(EXP, 2, args, line, sizeof line) != 0) return -1;
    return sscanf(line, "%lf %lf %lf %lf %lf", &out[0], &out[1], &out[2], &out[3], &out[4]) == 5 ? 0 : -1;
}

static void record(lab_row *row, int rep, const lab_point *pt, const double *out) {
    (void)rep, (void)pt;
    lab_row_sample(row, out[0]);
    if (!isnan(out[1])) {
        lab_row_extra(row, "pk_reserved_b", out[1]);
        lab_row_extra(row, "pk_resident_b", out[2]);
    }
    lab_row_extra(row, "ns_per_alloc", out[3]);
    lab_row_extra(row, "peak_rss_kb", out[4]);
}

static void run(int rep) {
    lab_point pt = {.experiment = EXP, .has = has, .measure = measure, .record = record};
    for (pt.i = 0; pt.i < NTHREADS; pt.i++) {
        int t = threads[pt.i];
        snprintf(pt.detail, sizeof pt.detail, "%d thread%s x %ld pools", t, t == 1 ? "" : "s",
                 pools());
        pt.params = (lab_params){0};
        lab_pset_num(&pt.params, "threads", t);
        lab_pset_num(&pt.params, "pools", (double)pools());
        lab_pset_num(&pt.params, "objects_per_pool", PER_POOL);
        lab_pset_num(&pt.params, "size", OBJ);
        lab_each_contender(&pt, lab_thread_contenders, LAB_THREAD_NCONT, rep);
    }
}

static lab_row *point(const char *subject, int t) {
    char want[24];
    snprintf(want, sizeof want, "%d", t);
    return lab_find(EXP, subject, "threads", want, NULL);
}

static double val(const char *subject, int t, const char *extra) {
    lab_row *r = point(subject, t);
    if (!r || !r->available || !r->samples.n) return NAN;
    return extra ? lab_extra_median(r, extra) : lab_median(&r->samples);
}

static void print(FILE *out) {
    char b[32];
    fprintf(out, "== many-pools: %ld pools x %d objects of %d B per thread, held by every thread "
                 "at once\n", pools(), PER_POOL, OBJ);
    fprintf(out, "   bytes per thread per pool (live: %d B); RSS growth from before the pools "
                 "were made, read while the threads hold their objects\n", PER_POOL * OBJ);
    fprintf(out, "\n  %-34s", "allocator \\ threads");
    for (int t = 0; t < NTHREADS; t++) fprintf(out, " %10d", threads[t]);
    fprintf(out, "\n");
    for (int i = 0; i < LAB_THREAD_NCONT; i++) {
        lab_allocator *a = lab_table_subject(out, lab_thread_contenders[i], 34);
        if (!a) continue;
        for (int t = 0; t < NTHREADS; t++) fprintf(out, " %10s", lab_fmt(val(a->subject, threads[t], NULL), b));
        fprintf(out, "   RSS growth\n");
    }
    static const char *const extras[] = {"pk_reserved_b", "pk_resident_b"};
    static const char *const names[] = {"  reserved (its own account)", "  resident (ever touched)"};
    for (int e = 0; e < 2; e++) {
        fprintf(out, "  %-34s", names[e]);
        for (int t = 0; t < NTHREADS; t++)
            fprintf(out, " %10s", lab_fmt(val("poolkit pk_pool", threads[t], extras[e]), b));
        fprintf(out, "\n");
    }
    int tmax = threads[NTHREADS - 1];
    double res = val("poolkit pk_pool", tmax, "pk_reserved_b");
    double rsd = val("poolkit pk_pool", tmax, "pk_resident_b");
    double rss = val("poolkit pk_pool", tmax, NULL);
    double mi = fmin(val(LAB_MIMALLOC, tmax, NULL), val(LAB_MIMALLOC3, tmax, NULL)); /* the smaller */
    char f[4][32];
    fprintf(out, "  target (many-pools): %d threads x %ld pools x %d objects: pk_pool reserves "
                 "%s B and has touched %s B per thread per pool (RSS growth %s B; the smaller mimalloc's "
                 "%s B; live %d B) -> reported (the bound: docs/results.md)\n",
            tmax, pools(), PER_POOL, lab_fmt(res, f[0]), lab_fmt(rsd, f[1]), lab_fmt(rss, f[2]),
            lab_fmt(mi, f[3]), PER_POOL * OBJ);
}

const lab_experiment lab_exp_many_pools = {
    EXP, "Memory with many threads and many pools: bytes per thread per pool", "B/thread/pool",
    2.0, NULL, run, print, child,
};
