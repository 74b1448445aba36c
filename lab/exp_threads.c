/* threads: throughput and scaling from one thread to the number of cores.
 *
 *   producer/consumer  T threads in a ring: each allocates objects and hands
 *                      them, through a single-producer single-consumer
 *                      queue, to the next thread, which frees them; so every
 *                      object is freed on a thread other than the one that
 *                      allocated it (with one thread, the ring closes on
 *                      itself and the same thread frees: the baseline);
 *   churn              each thread keeps 256 live objects and replaces a
 *                      random one per step (no sharing).
 *
 * 64-byte objects. Throughput: objects allocated and freed per second, all
 * threads together, from the moment the threads are released at a barrier
 * until the last one is joined. One context (one pool) per measurement,
 * shared by all the threads (lab_threads_measure, measure.c). The hardened
 * pool runs producer/consumer beside the default one (target:
 * at most 1.15x its time, that is the default's throughput over its own,
 * the median of the repetitions' ratios, at every thread count).
 */
#include "lab.h"

#include <string.h>
#include <unistd.h>

#define EXP "threads"
#define OBJ 64
static const char *const workloads[] = {"producer/consumer", "churn"};

/* The contenders of workload wl, and how many: the hardened pool runs
 * producer/consumer only (its target judges that one). */
static const char *const *contenders(int wl, int *n) {
    *n = wl == 0 ? LAB_THREAD_NCONT_HARDENED : LAB_THREAD_NCONT;
    return wl == 0 ? lab_thread_contenders_hardened : lab_thread_contenders;
}

static int max_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > 64) n = 64;
    return (int)n;
}

static long per_thread(void) { return lab_pick(20000, 500000, 4000000, 10000000); }

static int has(const lab_allocator *a) { return a->pc != NULL; }

/* pt: workloads[i], j threads. */
static int measure(lab_allocator *a, const lab_point *pt, double *out) {
    out[0] = lab_threads_measure(a, pt->i, pt->j, lab_warm(per_thread()), OBJ);
    return out[0] > 0 ? 0 : -1;
}

static void record(lab_row *row, int rep, const lab_point *pt, const double *out) {
    (void)rep, (void)pt;
    lab_row_sample(row, out[0]);
}

static void run(int rep) {
    int maxt = max_threads();
    long n = lab_warm(per_thread());
    lab_point pt = {.experiment = EXP, .has = has, .measure = measure, .record = record};
    for (pt.i = 0; pt.i < 2; pt.i++) {
        for (pt.j = 1; pt.j <= maxt; pt.j++) {
            int t = pt.j;
            snprintf(pt.detail, sizeof pt.detail, "%s, %d thread%s", workloads[pt.i], t,
                     t == 1 ? "" : "s");
            pt.params = (lab_params){0};
            lab_pset_str(&pt.params, "workload", workloads[pt.i]);
            lab_pset_num(&pt.params, "threads", t);
            lab_pset_num(&pt.params, "objects_per_thread", (double)n);
            int nc;
            const char *const *c = contenders(pt.i, &nc);
            lab_each_contender_vs_pool(&pt, c, nc, rep, 1);
        }
    }
}

static void print(FILE *out) {
    int maxt = max_threads();
    char b[32];
    fprintf(out, "== threads: producer/consumer and per-thread churn, 64 B objects\n");
    fprintf(out, "   million objects allocated and freed per second, all threads (higher is "
                 "better); x = scaling from 1 thread\n");
    for (int wl = 0; wl < 2; wl++) {
        char want[32];
        snprintf(want, sizeof want, "\"%s\"", workloads[wl]);
        fprintf(out, "\n  %s\n  %-24s", workloads[wl], "allocator \\ threads");
        for (int t = 1; t <= maxt; t++) fprintf(out, " %9d", t);
        fprintf(out, "   scaling\n");
        int nc;
        const char *const *c = contenders(wl, &nc);
        for (int i = 0; i < nc; i++) {
            lab_allocator *a = lab_table_subject(out, c[i], 24);
            if (!a) continue;
            double first = 0, last = 0;
            for (int t = 1; t <= maxt; t++) {
                char tt[8];
                snprintf(tt, sizeof tt, "%d", t);
                lab_row *r = lab_find(EXP, a->subject, "workload", want, "threads", tt, NULL);
                double v = r && r->available ? lab_median(&r->samples) : 0.0 / 0.0;
                if (t == 1) first = v;
                last = v;
                fprintf(out, " %9s", lab_fmt(v, b));
            }
            fprintf(out, "   x%s\n", lab_fmt(first > 0 ? last / first : 0.0 / 0.0, b));
        }
    }
    lab_target t = LAB_TARGET_INIT;
    for (int n = 1; n <= maxt; n++) {
        char tt[8];
        snprintf(tt, sizeof tt, "%d", n);
        double v = lab_vs_pool(lab_find(EXP, LAB_PK_HARDENED, "workload", "\"producer/consumer\"",
                                        "threads", tt, NULL));
        lab_target_add(&t, " / ", v, 1.15, "%d thread%s %.2fx", n, n == 1 ? "" : "s", v);
    }
    fprintf(out, "  target (hardened threads): pk_pool HARDENED at most 1.15x the default pk_pool's "
                 "time in producer/consumer (its throughput over HARDENED's, median of the "
                 "repetitions' ratios): %s -> %s\n", t.line, lab_target_verdict(&t));
}

const lab_experiment lab_exp_threads = {
    EXP, "Producer/consumer and per-thread churn, 1 thread to the number of cores", "Mops/s",
    4.0, NULL, run, print, NULL,
};
