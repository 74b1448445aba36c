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
 *
 * Then blocks replaced among many live (lab_replaced_run, bench_large's
 * "replaced" part): LAB_REPL_LIVE blocks of 64 KiB to 8 MiB, a random one
 * replaced at each call by a block of a random length, every page of it
 * written; as many calls untimed first, then the timed ones (smoke 300,
 * quick 1,500, default 3,000, full 10,000), each allocator a process of
 * its own again. Every gap between two live blocks holds a freed piece:
 * an allocator that keeps few of them faults most pages in again. Rows as
 * above (params slots 64, sizes "64 KiB-8 MiB"), with vs_best, the ratio
 * to the fastest other allocator of the repetition. Target: pk_alloc at
 * most 1.1x the fastest other allocator's time (glibc's varies with what
 * the process did before it: its mmap threshold moves).
 */
#include "lab.h"
#include "realprog.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXP "large"
#define PK "poolkit pk_alloc"

enum { SHAPE_BLOCKS, SHAPE_REPLACED, NSHAPES };
static const char *const shape_sizes[NSHAPES] = {"5-25 MiB", "64 KiB-8 MiB"};
static const char *const shape_sizes_json[NSHAPES] = {"\"5-25 MiB\"", "\"64 KiB-8 MiB\""};
static const int shape_slots[NSHAPES] = {LAB_LARGE_SLOTS, LAB_REPL_LIVE};

static long iterations(int shape) {
    return shape == SHAPE_BLOCKS ? lab_pick(20, 50, 100, 1000) : lab_pick(300, 1500, 3000, 10000);
}

/* `pk-lab child large K SHAPE ITERATIONS`: writes "NS MINOR_FAULTS PEAK_KIB". */
static int child(int argc, char **argv) {
    const rp_alloc *a;
    if (argc != 3 || !(a = rp_alloc_for_child(argv[0]))) return 2;
    rp_peak peak;
    rp_peak_begin(&peak);
    double ns;
    long n = atol(argv[2]);
    long faults = atoi(argv[1]) == SHAPE_BLOCKS ? lab_large_run(a, n, &ns) : lab_replaced_run(a, n, n, &ns);
    return dprintf(LAB_CHILD_FD, "%.0f %ld %.1f\n", ns, faults, rp_peak_kib(&peak)) > 0 ? 0 : 1;
}

static lab_params params_of(int shape) {
    lab_params ps = {0};
    lab_pset_num(&ps, "iterations", (double)iterations(shape));
    lab_pset_num(&ps, "slots", shape_slots[shape]);
    lab_pset_str(&ps, "sizes", shape_sizes[shape]);
    return ps;
}

static void run_shape(int rep, int shape) {
    rp_alloc *al = rp_allocs();
    lab_params ps = params_of(shape);
    double ns[RP_NALLOC], faults[RP_NALLOC], kib[RP_NALLOC];
    int ok[RP_NALLOC] = {0};
    for (int j = 0; j < RP_NALLOC; j++) {
        int k = (j + (rep > 0 ? rep : 0)) % RP_NALLOC;
        if (!al[k].available) continue;
        char ks[16], ss[8], is[24], line[128];
        snprintf(ks, sizeof ks, "%d", k);
        snprintf(ss, sizeof ss, "%d", shape);
        snprintf(is, sizeof is, "%ld", lab_warm(iterations(shape)));
        lab_progress(al[k].subject, shape_sizes[shape]);
        const char *args[] = {ks, ss, is};
        ok[k] = lab_fresh_child(EXP, 3, args, line, sizeof line) == 0 &&
                sscanf(line, "%lf %lf %lf", &ns[k], &faults[k], &kib[k]) == 3 && ns[k] > 0;
    }
    if (rep < 0) return;
    double best = NAN; /* the fastest other allocator's time */
    for (int k = 0; k < RP_NALLOC; k++)
        if (k != RP_PK && ok[k] && !(ns[k] >= best)) best = ns[k];
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
        if (k == RP_PK && !isnan(best)) lab_row_extra(row, "vs_best", ns[k] / best);
    }
}

static void run(int rep) {
    for (int shape = 0; shape < NSHAPES; shape++) run_shape(rep, shape);
}

static lab_row *point(const char *subject, int shape) {
    return lab_find(EXP, subject, "sizes", shape_sizes_json[shape], NULL);
}

/* The table of one shape's rows. */
static void print_rows(FILE *out, int shape) {
    rp_alloc *al = rp_allocs();
    char b[32], c[32], d[32], e[32];
    fprintf(out, "\n  %-24s %26s %8s %12s %8s %12s\n", "allocator", "ms [min - max]", "x glibc", "minor faults",
            "x glibc", "peak RSS MiB");
    for (int k = 0; k < RP_NALLOC; k++) {
        lab_row *r = point(al[k].subject, shape);
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
}

static void print(FILE *out) {
    char b[32], c[32], d[32], e[32];
    fprintf(out, "== large: blocks of 5-25 MiB, %d slots, random replacement, each written in full "
                 "(after malloc-large); %ld iterations per run\n", LAB_LARGE_SLOTS, iterations(SHAPE_BLOCKS));
    fprintf(out, "   ms per run [min - max] and minor page faults (lower is better); each run a process of "
                 "its own; ratios: median of the per-repetition ratios to glibc\n");
    print_rows(out, SHAPE_BLOCKS);
    lab_row *pk = point(PK, SHAPE_BLOCKS), *g = point("glibc malloc", SHAPE_BLOCKS);
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

    fprintf(out, "\n   then blocks replaced among %d live of 64 KiB to 8 MiB, every page of each written; "
                 "%ld calls untimed, then %ld timed per run\n", LAB_REPL_LIVE, iterations(SHAPE_REPLACED),
            iterations(SHAPE_REPLACED));
    print_rows(out, SHAPE_REPLACED);
    lab_row *pr = point(PK, SHAPE_REPLACED);
    double vb = pr && pr->available ? lab_extra_median(pr, "vs_best") : NAN;
    lab_target tr = LAB_TARGET_INIT;
    lab_target_add(&tr, "", vb, 1.1, "time %.2fx the fastest other allocator's (%s ms)", vb,
                   lab_fmt(lab_row_median(pr), b));
    fprintf(out, "  target (large): blocks replaced among many live: pk_alloc at most 1.1x the fastest "
                 "other allocator's time (median of the per-repetition ratios): %s -> %s\n",
            tr.line, lab_target_verdict(&tr));
}

const lab_experiment lab_exp_large = {
    EXP, "Large blocks of 5-25 MiB, up to 20 live, random replacement (after malloc-large); then 64 KiB-8 MiB "
    "among 64 live", "ms", 5.0,
    NULL, run, print, child,
};
