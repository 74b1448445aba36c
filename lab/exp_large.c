/* large: large blocks, after malloc-large (mimalloc-bench's, after glibc's
 * benchtests). The loop is lab_large_run (malloc_shapes.c), which
 * bench/bench_large.c runs too, poolkit against glibc in one process.
 *
 * 20 slots; each iteration allocates a block of a random size from 5 to
 * 25 MiB, writes it in full (malloc-large's make_unique<char[]> zeroes it;
 * an escape barrier keeps malloc+memset from becoming calloc) and frees the
 * block it replaces in a random slot, so up to 21 are live at once. Single
 * thread, a fixed seed: every allocator gets the same requests. Iterations
 * per run: smoke 20, quick 50, default 100, full 1,000 (bench_large's).
 *
 * Each allocator (realprog.h's malloc-shaped ones) runs in a pk-lab process
 * of its own (lab_fresh_child), its first call made before the loop: the
 * loop's wall time (and the final frees), its minor page faults
 * (getrusage(RUSAGE_SELF).ru_minflt around it: every page the system maps
 * afresh is faulted in by the write) and its peak RSS growth. Rows: ms per
 * run; extras minor_faults, peak_rss_kb, and in each repetition the ratio
 * to glibc's run of that repetition (vs_glibc, faults_vs_glibc).
 *
 * Target: pk_alloc at most 1.2x glibc's time and at most 2x its minor
 * faults, each the median of the per-repetition ratios.
 */
#include "lab.h"
#include "realprog.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXP "large"
#define PK "poolkit pk_alloc"

static long iterations(void) { return lab_pick(20, 50, 100, 1000); }

/* `pk-lab child large K ITERATIONS`: writes "NS MINOR_FAULTS PEAK_KIB". */
static int child(int argc, char **argv) {
    const rp_alloc *a;
    if (argc != 2 || !(a = rp_alloc_for_child(argv[0]))) return 2;
    rp_peak peak;
    rp_peak_begin(&peak);
    double ns;
    long faults = lab_large_run(a, atol(argv[1]), &ns);
    return dprintf(LAB_CHILD_FD, "%.0f %ld %.1f\n", ns, faults, rp_peak_kib(&peak)) > 0 ? 0 : 1;
}

static lab_params params_of(void) {
    lab_params ps = {0};
    lab_pset_num(&ps, "iterations", (double)iterations());
    lab_pset_num(&ps, "slots", LAB_LARGE_SLOTS);
    lab_pset_str(&ps, "sizes", "5-25 MiB");
    return ps;
}

static void run(int rep) {
    rp_alloc *al = rp_allocs();
    lab_params ps = params_of();
    double ns[RP_NALLOC], faults[RP_NALLOC], kib[RP_NALLOC];
    int ok[RP_NALLOC] = {0};
    for (int j = 0; j < RP_NALLOC; j++) {
        int k = (j + (rep > 0 ? rep : 0)) % RP_NALLOC;
        if (!al[k].available) continue;
        char ks[16], is[24], line[128];
        snprintf(ks, sizeof ks, "%d", k);
        snprintf(is, sizeof is, "%ld", lab_warm(iterations()));
        lab_progress(al[k].subject, "");
        const char *args[] = {ks, is};
        ok[k] = lab_fresh_child(EXP, 2, args, line, sizeof line) == 0 &&
                sscanf(line, "%lf %lf %lf", &ns[k], &faults[k], &kib[k]) == 3 && ns[k] > 0;
    }
    if (rep < 0) return;
    for (int k = 0; k < RP_NALLOC; k++) {
        lab_row *row = lab_row_get(EXP, al[k].subject, al[k].family, &ps);
        lab_row_info(row, al[k].version, lab_flags());
        if (!lab_child_row_ready(row, al[k].available, al[k].why, ok[k])) continue;
        lab_row_sample(row, ns[k] / 1e6);
        lab_row_extra(row, "minor_faults", faults[k]);
        if (!isnan(kib[k])) lab_row_extra(row, "peak_rss_kb", kib[k]);
        if (ok[RP_GLIBC]) {
            lab_row_extra(row, "vs_glibc", ns[k] / ns[RP_GLIBC]);
            if (faults[RP_GLIBC] > 0) lab_row_extra(row, "faults_vs_glibc", faults[k] / faults[RP_GLIBC]);
        }
    }
}

static lab_row *point(const char *subject) { return lab_find(EXP, subject, NULL); }

static void print(FILE *out) {
    rp_alloc *al = rp_allocs();
    char b[32], c[32], d[32], e[32];
    fprintf(out, "== large: blocks of 5-25 MiB, %d slots, random replacement, each written in full "
                 "(after malloc-large); %ld iterations per run\n", LAB_LARGE_SLOTS, iterations());
    fprintf(out, "   ms per run [min - max] and minor page faults (lower is better); each run a process of "
                 "its own; ratios: median of the per-repetition ratios to glibc\n");
    fprintf(out, "\n  %-24s %26s %8s %12s %8s %12s\n", "allocator", "ms [min - max]", "x glibc", "minor faults",
            "x glibc", "peak RSS MiB");
    for (int k = 0; k < RP_NALLOC; k++) {
        lab_row *r = point(al[k].subject);
        fprintf(out, "  %-24s", al[k].subject);
        if (!r || !r->available) {
            fprintf(out, " %s: %.90s\n", r && r->failed ? "failed" : "n/a", r ? r->why : "not run");
            continue;
        }
        char range[64];
        snprintf(range, sizeof range, "%s [%s - %s]", lab_fmt(lab_median(&r->samples), b),
                 lab_fmt(lab_min(&r->samples), c), lab_fmt(lab_max(&r->samples), d));
        fprintf(out, " %26s %8s", range, lab_fmt(lab_extra_median(r, "vs_glibc"), e));
        fprintf(out, " %12s %8s %12s\n", lab_fmt(lab_extra_median(r, "minor_faults"), b),
                lab_fmt(lab_extra_median(r, "faults_vs_glibc"), c),
                lab_fmt(lab_extra_median(r, "peak_rss_kb") / 1024, d));
    }
    lab_row *pk = point(PK), *g = point("glibc malloc");
    int have = pk && pk->available && g && g->available;
    double t = have ? lab_extra_median(pk, "vs_glibc") : NAN;
    double f = have ? lab_extra_median(pk, "faults_vs_glibc") : NAN;
    lab_target tt = LAB_TARGET_INIT;
    lab_target_add(&tt, "", t, 1.2, "time %.2fx (%s vs %s ms)", t, lab_fmt(lab_row_median(pk), b),
                   lab_fmt(lab_row_median(g), c));
    lab_target_add(&tt, ", ", f, 2.0, "faults %.2fx (%s vs %s)", f,
                   lab_fmt(have ? lab_extra_median(pk, "minor_faults") : NAN, d),
                   lab_fmt(have ? lab_extra_median(g, "minor_faults") : NAN, e));
    fprintf(out, "  target (large): pk_alloc at most 1.2x glibc's time and 2x its minor faults (medians of "
                 "the per-repetition ratios): %s -> %s\n", tt.line, lab_target_verdict(&tt));
}

const lab_experiment lab_exp_large = {
    EXP, "Large blocks of 5-25 MiB, up to 20 live, random replacement (after malloc-large)", "ms", 5.0,
    NULL, run, print, child,
};
