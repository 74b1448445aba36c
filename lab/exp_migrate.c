/* migrate: threads that come and go, after mstress (mimalloc-bench's
 * `mstress 2 50 N`; the loop is malloc_shapes.c's lab_migrate_iteration,
 * which bench/bench_mstress.c runs over three allocators). Memory must not
 * grow while the live set does not.
 *
 * Each iteration 2 threads work, the main one (which lives on, as in
 * mstress) and a new one. Each allocates objects of 8 to 128 B
 * (powers of two; 1% of them 100 to 10,000 times larger, every word
 * written and checked at its free), keeps some to its end (retained),
 * frees most of the others at random, and swaps some with a shared array of
 * 1,000 slots, so that objects outlive the thread that made them and are
 * freed by the next iterations' threads; the new thread exits, and the main
 * thread frees about half the array. The live set is the same from one
 * iteration to the next.
 *
 * Each allocator (the malloc-shaped ones of realprog.h: glibc, both
 * mimallocs, jemalloc, tcmalloc, poolkit's pk_alloc) runs 250 iterations in
 * a pk-lab process of its own (lab_fresh_child), its first call made and
 * the kernel's peak reset before the first iteration; after iterations 10,
 * 25, 50, 100, 150, 200 and 250 it reads its peak RSS growth so far (VmHWM
 * over VmRSS at the start) and the time so far: the peak after N
 * iterations of one run is the peak a run of N iterations would have had.
 * Rows: one per allocator and iteration count, MiB of peak RSS growth, the
 * extra ms (time so far). Scale (allocations per thread, x100 x 1..2):
 * smoke 5, quick 20, default and full 50 (mstress's own).
 *
 * Target: pk_alloc's peak at most 1.5x the better (smaller) mimalloc's at
 * 25, 100 and 250 iterations, and flat: its largest peak of the three at
 * most 1.2x its smallest (medians).
 */
#include "lab.h"
#include "realprog.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXP "migrate"
#define PK "poolkit pk_alloc"

static const int marks[] = {10, 25, 50, 100, 150, 200, 250};
#define NMARKS 7
static const int judged[] = {25, 100, 250}; /* the target's points */
#define NJUDGED 3

static long scale_arg(void) { return lab_pick(5, 20, 50, 50); }

/* `pk-lab child migrate K SCALE ITERATIONS`: writes, for each mark up to
 * ITERATIONS, "MS KIB" (time and peak growth so far). */
static int child(int argc, char **argv) {
    const rp_alloc *a;
    if (argc != 3 || !(a = rp_alloc_for_child(argv[0]))) return 2;
    long sc = atol(argv[1]);
    int iterations = atoi(argv[2]);
    char line[512] = "";
    size_t used = 0;
    uint64_t r = 12345;
    rp_peak peak;
    rp_peak_begin(&peak);
    double t0 = lab_now_ns();
    for (int n = 0, m = 0; n < iterations; n++) {
        lab_migrate_iteration(a, sc, &r, n + 1 == iterations);
        if (m < NMARKS && n + 1 == marks[m]) {
            used += (size_t)snprintf(line + used, sizeof line - used, "%.3f %.1f ", (lab_now_ns() - t0) / 1e6,
                                     rp_peak_kib(&peak));
            m++;
        }
    }
    return dprintf(LAB_CHILD_FD, "%s\n", line) > 0 ? 0 : 1;
}

/* ---- the runner ---- */

static lab_params params_of(int iterations) {
    lab_params ps = {0};
    lab_pset_num(&ps, "iterations", iterations);
    lab_pset_num(&ps, "threads", LAB_MIGRATE_THREADS);
    lab_pset_num(&ps, "scale", (double)scale_arg());
    return ps;
}

static void run(int rep) {
    rp_alloc *al = rp_allocs();
    int iterations = lab_warming ? judged[0] : marks[NMARKS - 1];
    for (int j = 0; j < RP_NALLOC; j++) {
        int k = (j + (rep > 0 ? rep : 0)) % RP_NALLOC;
        if (rep >= 0)
            for (int m = 0; m < NMARKS; m++) {
                lab_params ps = params_of(marks[m]);
                lab_row *row = lab_row_get(EXP, al[k].subject, al[k].family, &ps);
                lab_row_info(row, al[k].version, lab_flags());
                if (!al[k].available) lab_row_unavailable(row, al[k].why);
            }
        if (!al[k].available) continue;
        char ks[16], ss[24], is[16], line[512];
        snprintf(ks, sizeof ks, "%d", k);
        snprintf(ss, sizeof ss, "%ld", scale_arg());
        snprintf(is, sizeof is, "%d", iterations);
        lab_progress(al[k].subject, lab_warming ? "25 iterations" : "250 iterations");
        const char *args[] = {ks, ss, is};
        int ok = lab_fresh_child(EXP, 3, args, line, sizeof line) == 0;
        if (rep < 0) continue;
        const char *p = line;
        for (int m = 0; m < NMARKS; m++) {
            lab_params ps = params_of(marks[m]);
            lab_row *row = lab_row_get(EXP, al[k].subject, al[k].family, &ps);
            double ms, kib;
            int used = 0;
            if (!ok || sscanf(p, "%lf %lf %n", &ms, &kib, &used) != 2) {
                row->failed = 1;
                lab_row_unavailable(row, "the run failed in its own process (see stderr)");
                continue;
            }
            p += used;
            if (isnan(kib)) {
                lab_row_unavailable(row, "no peak of its own: /proc/self/clear_refs could not reset it");
                continue;
            }
            if (!row->available) continue;
            lab_row_sample(row, kib / 1024.0);
            lab_row_extra(row, "ms", ms);
        }
    }
}

/* ---- the table and the target ---- */

static lab_row *point(const char *subject, int iterations) {
    char want[16];
    snprintf(want, sizeof want, "%d", iterations);
    return lab_find(EXP, subject, "iterations", want, NULL);
}

static void print(FILE *out) {
    rp_alloc *al = rp_allocs();
    char b[32], c[32];
    fprintf(out, "== migrate: threads that come and go (after mstress): %d threads per iteration, scale %ld, "
                 "a shared array of %d slots\n", LAB_MIGRATE_THREADS, scale_arg(), LAB_MIGRATE_TRANSFERS);
    fprintf(out, "   peak RSS growth in MiB after N iterations (lower is better; flat is the goal), "
                 "each allocator in a process of its own; time so far in ms\n");
    fprintf(out, "\n  %-24s", "allocator \\ iterations");
    for (int m = 0; m < NMARKS; m++) fprintf(out, " %7d", marks[m]);
    fprintf(out, " %12s\n", "ms at 250");
    for (int k = 0; k < RP_NALLOC; k++) {
        fprintf(out, "  %-24s", al[k].subject);
        lab_row *any = point(al[k].subject, marks[0]);
        if (any && !any->available) {
            fprintf(out, " %s: %.90s\n", any->failed ? "failed" : "n/a", any->why);
            continue;
        }
        for (int m = 0; m < NMARKS; m++) fprintf(out, " %7s", lab_fmt(lab_row_median(point(al[k].subject, marks[m])), b));
        lab_row *last = point(al[k].subject, marks[NMARKS - 1]);
        fprintf(out, " %12s\n", lab_fmt(last && last->available ? lab_extra_median(last, "ms") : NAN, c));
    }
    lab_target t = LAB_TARGET_INIT, flat = LAB_TARGET_INIT;
    double lo = INFINITY, hi = 0;
    for (int j = 0; j < NJUDGED; j++) {
        lab_row *mi = lab_better_row(point(LAB_MIMALLOC, judged[j]), point(LAB_MIMALLOC3, judged[j]));
        double pk = lab_row_median(point(PK, judged[j]));
        double v = pk / lab_row_median(mi);
        lab_target_add(&t, ", ", v, 1.5, "%d: %.2fx (%s vs %s MiB, %s)", judged[j], v, lab_fmt(pk, b),
                       lab_fmt(lab_row_median(mi), c), mi ? mi->subject : "-");
        if (!isnan(pk)) lo = fmin(lo, pk), hi = fmax(hi, pk);
    }
    double f = hi > 0 && isfinite(lo) ? hi / lo : NAN;
    lab_target_add(&flat, "", f, 1.2, "largest / smallest peak at 25, 100, 250 iterations: %.2fx (%s / %s MiB)",
                   f, lab_fmt(hi, b), lab_fmt(lo, c));
    fprintf(out, "  target (migrate): pk_alloc peak at most 1.5x the better mimalloc's: %s -> %s\n", t.line,
            lab_target_verdict(&t));
    fprintf(out, "  target (migrate): pk_alloc peak flat within 1.2x: %s -> %s\n", flat.line,
            lab_target_verdict(&flat));
}

const lab_experiment lab_exp_migrate = {
    EXP, "Threads that come and go, objects passed between them (after mstress): peak RSS per iteration",
    "MiB", 4.0, NULL, run, print, child,
};
