/* larson-pace: larson at its own pace (mimalloc-bench's larson-sized; the
 * loop is malloc_shapes.c's lab_larson_run, which bench/bench_larson.c runs
 * over three allocators). Where steady-state hands each live set over a few
 * times, larson's server threads hand over every few milliseconds for
 * hundreds of generations, so most frees are of blocks whose allocating
 * thread has exited.
 *
 * 2 lanes, each a live set of 5,000 blocks of 8 to 1,000 B made by the main
 * thread. A lane's thread replaces a random block `steps` times (free, then
 * allocate a random size and write its first byte), then starts the lane's
 * next thread, which joins it and takes the set over: `gens` generations a
 * lane. A control does the same replacements on one thread a lane (no
 * hand-over), so that the cost of the hand-overs shows apart from the
 * steady state. Sizes (generations x replacements per generation): smoke
 * 20 x 5,000, quick 40 x 50,000, default 100 x 50,000 (a new thread every
 * millisecond or few), full 200 x 100,000 (bench_larson's).
 *
 * Each allocator (realprog.h's malloc-shaped ones) runs in a pk-lab process
 * of its own (lab_fresh_child). Rows: ns per replacement (both lanes'
 * replacements over the run's wall time), key `handover` ("every
 * generation" or "none (control)"); extras peak_rss_kb and the ratio to
 * each mimalloc in the same repetition (vs_mimalloc, vs_mimalloc3).
 *
 * Target: pk_alloc at most 1.0x the faster mimalloc (the lower median) with
 * hand-overs, the median of the per-repetition ratios to it.
 */
#include "lab.h"
#include "realprog.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXP "larson-pace"
#define LIVE 5000
#define PK "poolkit pk_alloc"

static const char *const handovers[] = {"every generation", "none (control)"};
#define NHAND 2

static long gens(void) { return lab_pick(20, 40, 100, 200); }
static long steps(void) { return lab_pick(5000, 50000, 50000, 100000); }

/* `pk-lab child larson-pace K HANDOVER GENS STEPS`: writes "NS_PER_REPLACEMENT PEAK_KIB". */
static int child(int argc, char **argv) {
    const rp_alloc *a;
    if (argc != 4 || !(a = rp_alloc_for_child(argv[0]))) return 2;
    rp_peak peak;
    rp_peak_begin(&peak);
    double ns = lab_larson_run(a, atoi(argv[1]), atol(argv[2]), atol(argv[3]), LIVE);
    return dprintf(LAB_CHILD_FD, "%.4f %.1f\n", ns, rp_peak_kib(&peak)) > 0 ? 0 : 1;
}

/* ---- the runner ---- */

static lab_params params_of(int h) {
    lab_params ps = {0};
    lab_pset_str(&ps, "handover", handovers[h]);
    lab_pset_num(&ps, "lanes", LAB_LARSON_LANES);
    lab_pset_num(&ps, "live_per_lane", LIVE);
    lab_pset_str(&ps, "sizes", "8-1000 B");
    lab_pset_num(&ps, "generations", (double)gens());
    lab_pset_num(&ps, "replacements_per_generation", (double)steps());
    return ps;
}

static void run(int rep) {
    rp_alloc *al = rp_allocs();
    long g = lab_warming ? gens() / 10 + 1 : gens();
    for (int h = 0; h < NHAND; h++) {
        lab_params ps = params_of(h);
        double ns[RP_NALLOC], kib[RP_NALLOC];
        int ok[RP_NALLOC] = {0};
        for (int j = 0; j < RP_NALLOC; j++) {
            int k = (j + (rep > 0 ? rep : 0)) % RP_NALLOC;
            if (!al[k].available) continue;
            char ks[16], hs[8], gs[24], ss[24], line[128];
            snprintf(ks, sizeof ks, "%d", k);
            snprintf(hs, sizeof hs, "%d", h == 0);
            snprintf(gs, sizeof gs, "%ld", g);
            snprintf(ss, sizeof ss, "%ld", steps());
            lab_progress(al[k].subject, h == 0 ? "hand-overs" : "control");
            const char *args[] = {ks, hs, gs, ss};
            ok[k] = lab_fresh_child(EXP, 4, args, line, sizeof line) == 0 &&
                    sscanf(line, "%lf %lf", &ns[k], &kib[k]) == 2 && ns[k] > 0;
        }
        if (rep < 0) continue;
        for (int k = 0; k < RP_NALLOC; k++) {
            lab_row *row = lab_row_get(EXP, al[k].subject, al[k].family, &ps);
            lab_row_info(row, al[k].version, lab_flags());
            if (!lab_child_row_ready(row, al[k].available, al[k].why, ok[k])) continue;
            lab_row_sample(row, ns[k]);
            if (!isnan(kib[k])) lab_row_extra(row, "peak_rss_kb", kib[k]);
            if (ok[RP_MI]) lab_row_extra(row, "vs_mimalloc", ns[k] / ns[RP_MI]);
            if (ok[RP_MI3]) lab_row_extra(row, "vs_mimalloc3", ns[k] / ns[RP_MI3]);
        }
    }
}

/* ---- the table and the target ---- */

static lab_row *point(const char *subject, int h) {
    char want[48];
    snprintf(want, sizeof want, "\"%s\"", handovers[h]);
    return lab_find(EXP, subject, "handover", want, NULL);
}

static void print(FILE *out) {
    rp_alloc *al = rp_allocs();
    char b[32], c[32], d[32], e[32];
    fprintf(out, "== larson-pace: larson at its own pace: %d lanes x %ld generations x %ld replacements of "
                 "%d-%d B blocks, live sets of %d\n", LAB_LARSON_LANES, gens(), steps(), LAB_LARSON_MIN_SIZE, LAB_LARSON_MAX_SIZE, LIVE);
    fprintf(out, "   ns per replacement, both lanes over the wall time (lower is better); a new thread per "
                 "generation, and the control without; each run a process of its own\n");
    fprintf(out, "\n  %-24s %22s %22s %14s\n", "allocator", "hand-overs: ns", "control: ns", "peak RSS MiB");
    for (int k = 0; k < RP_NALLOC; k++) {
        lab_row *r = point(al[k].subject, 0), *ctl = point(al[k].subject, 1);
        fprintf(out, "  %-24s", al[k].subject);
        if (!r || !r->available) {
            fprintf(out, " %s: %.90s\n", r && r->failed ? "failed" : "n/a", r ? r->why : "not run");
            continue;
        }
        char cell[2][48];
        lab_row *rs[2] = {r, ctl};
        for (int i = 0; i < 2; i++) {
            if (!rs[i] || !rs[i]->available) snprintf(cell[i], sizeof cell[i], "-");
            else snprintf(cell[i], sizeof cell[i], "%s [%s-%s]", lab_fmt(lab_median(&rs[i]->samples), b),
                          lab_fmt(lab_min(&rs[i]->samples), c), lab_fmt(lab_max(&rs[i]->samples), d));
        }
        fprintf(out, " %22s %22s %14s\n", cell[0], cell[1], lab_fmt(lab_extra_median(r, "peak_rss_kb") / 1024, b));
    }
    lab_row *mi = lab_better_row(point(LAB_MIMALLOC, 0), point(LAB_MIMALLOC3, 0));
    lab_row *pk = point(PK, 0);
    int three = mi && !strcmp(mi->subject, LAB_MIMALLOC3);
    double v = pk && pk->available ? lab_extra_median(pk, three ? "vs_mimalloc3" : "vs_mimalloc") : NAN;
    lab_row *pkc = point(PK, 1), *mic = mi ? point(mi->subject, 1) : NULL;
    double vc = pkc && pkc->available ? lab_extra_median(pkc, three ? "vs_mimalloc3" : "vs_mimalloc") : NAN;
    lab_target t = LAB_TARGET_INIT;
    lab_target_add(&t, "", v, 1.0, "%.2fx, median of the repetitions' ratios (%s vs %s ns per replacement, %s; "
                   "the control without hand-overs %.2fx: %s vs %s ns)", v, lab_fmt(lab_row_median(pk), b),
                   lab_fmt(lab_row_median(mi), c), mi ? mi->subject : "-", vc,
                   lab_fmt(lab_row_median(pkc), d), lab_fmt(lab_row_median(mic), e));
    fprintf(out, "  target (larson-pace): pk_alloc at most 1.0x the faster mimalloc with hand-overs: %s -> %s\n",
            t.line, lab_target_verdict(&t));
}

const lab_experiment lab_exp_larson_pace = {
    EXP, "Larson at its own pace: live sets handed to a new thread every few milliseconds",
    "ns/replacement", 6.0, NULL, run, print, child,
};
