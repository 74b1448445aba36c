/* cache-scratch: passive false sharing, after Hoard's test (as mimalloc-bench
 * runs it).
 *
 * The main thread allocates one object per worker, one after the other (so
 * they are neighbours in memory), and hands them over. Each of 2 workers
 * frees its object (a remote free), then, iterations times, allocates one
 * object, writes every byte of it repetitions times and frees it. An
 * allocator that gives a worker back the object it was handed, or one next
 * to the other worker's, makes the two workers write one cache line: each
 * write then waits for the line to come back from the other core. Objects of
 * 8, 16, 32 and 64 B. Reported: CPU ns per byte written per worker (the
 * workers' CPU time, not the span: on a shared machine they often do not run
 * at once, and a write that waits for a line stalls its core, so it counts),
 * and how many workers ran at once on average (CPU time over the span). Each measurement in a forked child (lab_scratch_measure,
 * measure_shapes.c; the worker: kernels_shapes.h). Target: pk_pool at most 1.05x
 * the faster mimalloc (2 or 3) at every size.
 */
#include "lab.h"

#include <math.h>
#include <string.h>

#define EXP "cache-scratch"
#define THREADS 2
static const size_t sizes[] = {8, 16, 32, 64};
#define NSIZES 4

/* Writes per worker; Hoard's own run is 1,000 iterations of 2,000,000
 * repetitions of one byte. */
static long writes(void) { return lab_pick(200000, 2000000, 8000000, 64000000); }
static long iterations(void) { return lab_pick(100, 1000, 1000, 1000); }
static long repetitions(size_t size, long w) {
    long r = w / (iterations() * (long)size);
    return r > 0 ? r : 1;
}

/* The control rows: the same writes with no allocator, the workers' objects
 * side by side (sharing lines) or 256 B apart. If the first is no slower
 * than the second, this machine does not show false sharing (two vCPUs on
 * one core, or threads that do not run at once), and no allocator row can. */
static const char *const controls[] = {"control: side by side, no allocator",
                                       "control: 256 B apart, no allocator"};

/* The sample of the repetition in which the workers overlapped most, and
 * that overlap (workers at once) in *conc; NaN and 0 when none. */
static double overlapped(const char *subject, size_t size, double *conc) {
    char want[24];
    snprintf(want, sizeof want, "%zu", size);
    lab_row *r = lab_find(EXP, subject, "size", want, NULL);
    double best = NAN;
    *conc = 0;
    for (int e = 0; r && r->available && e < r->nextra; e++) {
        if (strcmp(r->extra[e].name, "concurrency")) continue;
        const lab_series *c = &r->extra[e].s;
        for (int k = 0; k < c->n && k < r->samples.n; k++)
            if (c->v[k] > *conc) *conc = c->v[k], best = r->samples.v[k];
    }
    return best;
}

/* One repetition's figures into row; after the last repetition, the
 * most-overlapped one as extras too (results.json keeps extras' medians only). */
static void record_size(lab_row *row, int rep, size_t size, const double *out) {
    lab_row_sample(row, out[0]);
    lab_row_extra(row, "span_ms", out[1] / 1e6);
    lab_row_extra(row, "concurrency", out[2]);
    if (rep == lab_opt.reps - 1) {
        double at, v = overlapped(row->subject, size, &at);
        lab_row_extra(row, "overlapped_ns", v);
        lab_row_extra(row, "overlapped_at_once", at);
    }
}

static void measure_control(int rep, int k, const lab_params *ps, size_t size, long w) {
    lab_progress(controls[k], "");
    double out[3];
    if (lab_scratch_measure(NULL, THREADS, size, iterations(), repetitions(size, w),
                            k == 0 ? LAB_SCRATCH_SIDE_BY_SIDE : LAB_SCRATCH_LINES_APART, out) != 0 ||
        rep < 0)
        return;
    lab_row *row = lab_row_get(EXP, controls[k], "peer", ps);
    lab_row_info(row, "the workers' writes alone, objects at fixed places", NULL);
    record_size(row, rep, size, out);
}

static int has(const lab_allocator *a) { return a->scratch != NULL; }

/* pt: sizes[i]. */
static int measure(lab_allocator *a, const lab_point *pt, double *out) {
    size_t size = sizes[pt->i];
    return lab_scratch_measure(a, THREADS, size, iterations(), repetitions(size, lab_warm(writes())),
                               LAB_SCRATCH_ALLOCATOR, out);
}

static void record(lab_row *row, int rep, const lab_point *pt, const double *out) {
    record_size(row, rep, sizes[pt->i], out);
}

static void run(int rep) {
    long w = lab_warm(writes());
    lab_point pt = {.experiment = EXP, .has = has, .measure = measure, .record = record};
    for (pt.i = 0; pt.i < NSIZES; pt.i++) {
        size_t size = sizes[pt.i];
        snprintf(pt.detail, sizeof pt.detail, "%zu B", size);
        pt.params = (lab_params){0};
        lab_pset_num(&pt.params, "threads", THREADS);
        lab_pset_num(&pt.params, "size", (double)size);
        lab_each_contender(&pt, lab_thread_contenders, LAB_THREAD_NCONT, rep);
        for (int k = 0; k < 2; k++) measure_control(rep, k, &pt.params, size, w);
    }
}

static double cell(const char *subject, size_t size) {
    char want[24];
    snprintf(want, sizeof want, "%zu", size);
    return lab_row_median(lab_find(EXP, subject, "size", want, NULL));
}

static void print(FILE *out) {
    char b[48];
    fprintf(out, "== cache-scratch: passive false sharing, %d workers, each frees an object the "
                 "main thread allocated, then writes its own (after Hoard)\n", THREADS);
    fprintf(out, "   CPU ns per byte written per worker (lower is better); %ld iterations, about "
                 "%ld writes per worker\n", iterations(), writes());
    fprintf(out, "\n  %-24s", "allocator \\ object size");
    for (int s = 0; s < NSIZES; s++) fprintf(out, " %8zu B", sizes[s]);
    fprintf(out, "\n");
    for (int i = 0; i < LAB_THREAD_NCONT; i++) {
        lab_allocator *a = lab_table_subject(out, lab_thread_contenders[i], 24);
        if (!a) continue;
        for (int s = 0; s < NSIZES; s++) fprintf(out, " %10s", lab_fmt(cell(a->subject, sizes[s]), b));
        fprintf(out, "\n");
    }
    for (int k = 0; k < 2; k++) {
        fprintf(out, "  %-24.24s", k == 0 ? "control: side by side" : "control: 256 B apart");
        for (int s = 0; s < NSIZES; s++) fprintf(out, " %10s", lab_fmt(cell(controls[k], sizes[s]), b));
        fprintf(out, "\n");
    }
    fprintf(out, "  %-24s\n", "pk_pool / each peer");
    for (int i = 0; i < LAB_THREAD_NCONT - 1; i++) {
        fprintf(out, "    %-22s", lab_thread_contenders[i]);
        for (int s = 0; s < NSIZES; s++) {
            double v = cell("poolkit pk_pool", sizes[s]) / cell(lab_thread_contenders[i], sizes[s]);
            snprintf(b, sizeof b, "%.2fx", v);
            fprintf(out, " %10s", isnan(v) ? "-" : b);
        }
        fprintf(out, "\n");
    }
    /* The medians mix runs in which the workers overlapped with runs in
     * which they took turns (no false sharing possible): the repetition in
     * which they overlapped most says what placement costs. */
    fprintf(out, "\n  in the repetition where the workers overlapped most: CPU ns per byte "
                 "(workers at once)\n");
    for (int i = 0; i < LAB_THREAD_NCONT + 2; i++) {
        const char *subject =
            i < LAB_THREAD_NCONT ? lab_thread_contenders[i] : controls[i - LAB_THREAD_NCONT];
        fprintf(out, "  %-24.24s", subject);
        for (int s = 0; s < NSIZES; s++) {
            double conc, v = overlapped(subject, sizes[s], &conc);
            snprintf(b, sizeof b, "%s (%.1f)", lab_fmt(v, b + 16), conc);
            fprintf(out, " %12s", isnan(v) ? "-" : b);
        }
        fprintf(out, "\n");
    }
    /* Whether false sharing shows here at all: the controls, overlapped. */
    double shared = 0, apart = 0, least = 2.0;
    for (int s = 0; s < NSIZES; s++) {
        double c1, c2;
        shared += overlapped(controls[0], sizes[s], &c1);
        apart += overlapped(controls[1], sizes[s], &c2);
        least = fmin(least, fmin(c1, c2));
    }
    int shows = shared / apart >= 1.5;
    fprintf(out, "  false sharing on this machine (the controls, overlapped): side by side / apart "
                 "= %.2fx (%s)\n", shared / apart,
            shows ? "it shows" : "it does not show: the allocators cannot be told apart here");
    /* The target, judged where pk_pool's and mimalloc's workers both ran at
     * once in some repetition. */
    lab_target t = LAB_TARGET_INIT;
    int decided = shows;
    for (int s = 0; s < NSIZES; s++) {
        /* the faster mimalloc (2 or 3) in its overlapped run */
        double cp, cm, c3;
        double m2 = overlapped(LAB_MIMALLOC, sizes[s], &cm), m3 = overlapped(LAB_MIMALLOC3, sizes[s], &c3);
        int three = isnan(m2) || m3 < m2;
        double v = overlapped("poolkit pk_pool", sizes[s], &cp) / (three ? m3 : m2);
        double m = cell("poolkit pk_pool", sizes[s]) / cell(three ? LAB_MIMALLOC3 : LAB_MIMALLOC, sizes[s]);
        lab_target_add(&t, ", ", v, 1.05, "%zu B %.2fx (%s; median %.2fx)", sizes[s], v,
                       three ? LAB_MIMALLOC3 : LAB_MIMALLOC, m);
        if (!isnan(v)) decided &= cp >= 1.5 && (three ? c3 : cm) >= 1.5;
    }
    fprintf(out, "  target (cache-scratch): pk_pool at most 1.05x the faster mimalloc, overlapped runs: %s -> "
                 "%s%s\n", t.line, lab_target_verdict(&t),
            t.any && !decided ? " (not decided here: the workers did not both run at once, or the "
                              "controls show no false sharing)" : "");
}

const lab_experiment lab_exp_cache_scratch = {
    EXP, "Passive false sharing: objects handed over, then written by two workers (after Hoard)",
    "CPU ns/byte written", 3.0, NULL, run, print, NULL,
};
