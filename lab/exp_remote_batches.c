/* remote-batches: producers allocate, consumers free, in batches, after
 * xmalloc-test (mimalloc-bench's `xmalloc-test -w N -s 64`).
 *
 * P producer threads each allocate batches of 4,096 objects of 64 B (each
 * touched) and queue them; P consumer threads take whole batches and free
 * every object, so every free is remote. At most 64 batches (262,144
 * objects) are queued at once, so memory is bounded whatever the speed. P = 1
 * and 2 (2 and 4 threads). Reported: ns per object (from the first thread's
 * start to the last one's end, over all objects), and the run's peak RSS
 * growth. Each measurement in a forked child (lab_xmalloc_measure,
 * measure_shapes.c; the loops and the queue: kernels_shapes.h). Target:
 * pk_pool at most 0.6x the faster mimalloc's time (2 or 3).
 */
#include "lab.h"
#include "kernels_shapes.h" /* LAB_BATCH */

#include <math.h>

#define EXP "remote-batches"
#define OBJ 64
static const int pairs[] = {1, 2};
#define NPAIRS 2

static long batches(void) { return lab_pick(8, 64, 200, 1000); }

static int has(const lab_allocator *a) { return a->xproduce != NULL; }

/* pt: pairs[i]. */
static int measure(lab_allocator *a, const lab_point *pt, double *out) {
    return lab_xmalloc_measure(a, pairs[pt->i], OBJ, lab_warm(batches()), out);
}

static void record(lab_row *row, int rep, const lab_point *pt, const double *out) {
    (void)rep, (void)pt;
    lab_row_sample(row, out[0]);
    lab_row_extra(row, "mfrees_per_s", 1e3 / out[0]);
    lab_row_extra(row, "peak_rss_kb", out[1]);
}

static void run(int rep) {
    lab_point pt = {.experiment = EXP, .has = has, .measure = measure, .record = record};
    for (pt.i = 0; pt.i < NPAIRS; pt.i++) {
        int p = pairs[pt.i];
        snprintf(pt.detail, sizeof pt.detail, "%d+%d threads", p, p);
        pt.params = (lab_params){0};
        lab_pset_num(&pt.params, "producers", p);
        lab_pset_num(&pt.params, "consumers", p);
        lab_pset_num(&pt.params, "size", OBJ);
        lab_each_contender(&pt, lab_thread_contenders, LAB_THREAD_NCONT, rep);
    }
}

static lab_row *point(const char *subject, int pair) {
    char want[24];
    snprintf(want, sizeof want, "%d", pair);
    return lab_find(EXP, subject, "producers", want, NULL);
}

static double cell(const char *subject, int pair) { return lab_row_median(point(subject, pair)); }

static void print(FILE *out) {
    char b[32], c[32];
    fprintf(out, "== remote-batches: producers allocate batches of %d x %d B, consumers free "
                 "them (after xmalloc-test)\n", LAB_BATCH, OBJ);
    fprintf(out, "   ns per object, all threads together (lower is better); peak RSS growth in "
                 "MiB; %ld batches per producer\n", batches());
    fprintf(out, "\n  %-24s", "allocator \\ threads");
    for (int p = 0; p < NPAIRS; p++) {
        char h[32];
        snprintf(h, sizeof h, "%d+%d: ns", pairs[p], pairs[p]);
        fprintf(out, " %12s %9s", h, "MiB");
    }
    fprintf(out, "\n");
    for (int i = 0; i < LAB_THREAD_NCONT; i++) {
        lab_allocator *a = lab_table_subject(out, lab_thread_contenders[i], 24);
        if (!a) continue;
        for (int p = 0; p < NPAIRS; p++) {
            lab_row *r = point(a->subject, pairs[p]);
            double kib = r && r->available ? lab_extra_median(r, "peak_rss_kb") : NAN;
            fprintf(out, " %12s %9s", lab_fmt(cell(a->subject, pairs[p]), b), lab_fmt(kib / 1024, c));
        }
        fprintf(out, "\n");
    }
    lab_target t = LAB_TARGET_INIT;
    for (int p = 0; p < NPAIRS; p++) {
        lab_row *mi = lab_better_row(point(LAB_MIMALLOC, pairs[p]), point(LAB_MIMALLOC3, pairs[p]));
        double v = cell("poolkit pk_pool", pairs[p]) / lab_row_median(mi);
        double g = cell("poolkit pk_pool", pairs[p]) / cell("glibc malloc", pairs[p]);
        lab_target_add(&t, "; ", v, 0.6, "%d+%d: %.2fx (%s; glibc %.2fx)", pairs[p], pairs[p], v,
                       mi ? mi->subject : "-", g);
    }
    fprintf(out, "  target (remote-batches): pk_pool at most 0.6x the faster mimalloc's time: %s -> %s\n", t.line,
            lab_target_verdict(&t));
}

const lab_experiment lab_exp_remote_batches = {
    EXP, "Remote frees in batches: producers allocate, consumers free (after xmalloc-test)",
    "ns/object", 3.0, NULL, run, print, NULL,
};
