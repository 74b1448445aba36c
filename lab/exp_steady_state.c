/* steady-state: random replacement in a live set, after larson
 * (mimalloc-bench's server simulation).
 *
 * Two threads, each with a live set of 1,000 or 100,000 objects filled by
 * the main thread. Each round a thread frees a random object of its set and
 * allocates its replacement: a random size of 16 to 128 B (pk_pool: one pool
 * per 16-byte class, 16 to 128; the mallocs get the size itself), or a fixed
 * 64 B. After its rounds each thread exits and a fresh thread takes its set
 * over (larson's hand-over: it frees what a dead thread allocated), for a
 * number of generations. Reported: ns per free+allocate pair per thread
 * (each generation timed from its first thread's start to its last one's
 * end, summed, over the rounds of one thread), and the run's peak RSS
 * growth. Each measurement in a forked child (lab_steady_measure,
 * measure_shapes.c; the loop: kernels_shapes.h). Target: pk_pool at most
 * 0.8x the faster mimalloc's time (2 or 3) at every scale. The hardened pool runs beside the
 * default one (target: at most 1.15x its time at every scale,
 * the median of the repetitions' ratios).
 */
#include "lab.h"

#include <math.h>

#define EXP "steady-state"
#define THREADS 2

static const long lives[] = {1000, 100000};
static const struct {
    const char *name;
    unsigned lo, hi;
} mixes[] = {{"16-128 B", 16, 128}, {"64 B", 64, 64}};
#define NLIVE 2
#define NMIX 2

static long rounds(void) { return lab_pick(20000, 100000, 400000, 2000000); }
static int gens(void) { return (int)lab_pick(2, 3, 4, 8); }

static lab_params params(long live, int m) {
    lab_params ps = {0};
    lab_pset_num(&ps, "threads", THREADS);
    lab_pset_num(&ps, "live_per_thread", (double)live);
    lab_pset_str(&ps, "sizes", mixes[m].name);
    return ps;
}

static int has(const lab_allocator *a) { return a->steady != NULL; }

/* pt: lives[i], mixes[j]. */
static int measure(lab_allocator *a, const lab_point *pt, double *out) {
    return lab_steady_measure(a, THREADS, lives[pt->i], mixes[pt->j].lo, mixes[pt->j].hi,
                              lab_warm(rounds()), gens(), out);
}

static void record(lab_row *row, int rep, const lab_point *pt, const double *out) {
    (void)rep, (void)pt;
    lab_row_sample(row, out[0]);
    lab_row_extra(row, "mops_all_threads", THREADS * 1e3 / out[0]);
    lab_row_extra(row, "peak_rss_kb", out[1]);
}

static void run(int rep) {
    lab_point pt = {.experiment = EXP, .has = has, .measure = measure, .record = record};
    for (pt.i = 0; pt.i < NLIVE; pt.i++) {
        for (pt.j = 0; pt.j < NMIX; pt.j++) {
            snprintf(pt.detail, sizeof pt.detail, "live %ld, %s", lives[pt.i], mixes[pt.j].name);
            pt.params = params(lives[pt.i], pt.j);
            lab_each_contender_vs_pool(&pt, lab_thread_contenders_hardened,
                                       LAB_THREAD_NCONT_HARDENED, rep, 0);
        }
    }
}

static lab_row *point(const char *subject, long live, int m) {
    char want_live[24], want_mix[32];
    snprintf(want_live, sizeof want_live, "%ld", live);
    snprintf(want_mix, sizeof want_mix, "\"%s\"", mixes[m].name);
    return lab_find(EXP, subject, "live_per_thread", want_live, "sizes", want_mix, NULL);
}

static double cell(const char *subject, long live, int m) {
    return lab_row_median(point(subject, live, m));
}

/* The faster mimalloc's row at a point (LAB.md: the faster of the two per workload). */
static lab_row *faster_mimalloc(long live, int m) {
    return lab_better_row(point(LAB_MIMALLOC, live, m), point(LAB_MIMALLOC3, live, m));
}

static void print(FILE *out) {
    char b[32];
    fprintf(out, "== steady-state: random replacement in a live set, %d threads, sets handed to "
                 "new threads (after larson)\n", THREADS);
    fprintf(out, "   ns per free+allocate pair per thread (lower is better); %ld rounds per "
                 "thread per generation, %d generations\n", rounds(), gens());
    fprintf(out, "\n  %-24s", "allocator \\ live, sizes");
    for (int l = 0; l < NLIVE; l++)
        for (int m = 0; m < NMIX; m++) {
            char h[32];
            snprintf(h, sizeof h, "%ld, %s", lives[l], mixes[m].name);
            fprintf(out, " %16s", h);
        }
    fprintf(out, "\n");
    for (int i = 0; i < LAB_THREAD_NCONT_HARDENED; i++) {
        lab_allocator *a = lab_table_subject(out, lab_thread_contenders_hardened[i], 24);
        if (!a) continue;
        for (int l = 0; l < NLIVE; l++)
            for (int m = 0; m < NMIX; m++) fprintf(out, " %16s", lab_fmt(cell(a->subject, lives[l], m), b));
        fprintf(out, "\n");
    }
    fprintf(out, "  %-24s", "pk_pool / each peer");
    fprintf(out, "\n");
    for (int i = 0; i < LAB_THREAD_NCONT - 1; i++) {
        fprintf(out, "    %-22s", lab_thread_contenders[i]);
        for (int l = 0; l < NLIVE; l++)
            for (int m = 0; m < NMIX; m++) {
                double v = cell("poolkit pk_pool", lives[l], m) /
                           cell(lab_thread_contenders[i], lives[l], m);
                snprintf(b, sizeof b, "%.2fx", v);
                fprintf(out, " %16s", isnan(v) ? "-" : b);
            }
        fprintf(out, "\n");
    }
    /* The target: at most 0.8x the faster mimalloc at every scale. */
    lab_target t = LAB_TARGET_INIT;
    for (int l = 0; l < NLIVE; l++)
        for (int m = 0; m < NMIX; m++) {
            lab_row *mi = faster_mimalloc(lives[l], m);
            double v = cell("poolkit pk_pool", lives[l], m) / lab_row_median(mi);
            lab_target_add(&t, " / ", v, 0.8, "%.2fx (%s)", v, mi ? mi->subject : "-");
        }
    fprintf(out, "  target (steady-state): pk_pool at most 0.8x the faster mimalloc at every scale "
                 "(1,000 and 100,000 live, 16-128 B and 64 B): %s -> %s\n",
            t.line, lab_target_verdict(&t));
    lab_target h = LAB_TARGET_INIT;
    for (int l = 0; l < NLIVE; l++)
        for (int m = 0; m < NMIX; m++) {
            double v = lab_vs_pool(point(LAB_PK_HARDENED, lives[l], m));
            lab_target_add(&h, " / ", v, 1.15, "%.2fx", v);
        }
    fprintf(out, "  target (hardened steady-state): pk_pool HARDENED at most 1.15x the default pk_pool at "
                 "every scale (median of the repetitions' ratios): %s -> %s\n",
            h.line, lab_target_verdict(&h));
}

const lab_experiment lab_exp_steady_state = {
    EXP, "Steady state of random replacement, sets handed to new threads (after larson)",
    "ns/pair", 4.0, NULL, run, print, NULL,
};
