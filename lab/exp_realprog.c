/* realprog: does the allocator matter in a real program? (realprog.h)
 *
 * Workloads of two kinds, each run with glibc malloc, mimalloc (Debian's 2
 * and PyPI's 3), jemalloc, tcmalloc and poolkit's front end, every allocator once per repetition in
 * an order that rotates with the repetition:
 *   hooks    SQLite, libxml2, jansson and expat, each given the allocator
 *            through its own hook, in a pk-lab process of its own: the
 *            workload's time, its peak RSS growth;
 *   preload  jq, xmllint, sqlite3, perl and python3 as Debian ships them,
 *            with the allocator's preload library (LD_PRELOAD): wall time,
 *            peak RSS.
 * Every run's output hash must equal glibc's in the same repetition
 * (same_output). Rows: ms, with the extras peak_rss_kb, same_output, and
 * the ratios to each mimalloc measured in the same repetition (vs_mimalloc,
 * rss_vs_mimalloc; vs_mimalloc3, rss_vs_mimalloc3). A target compares to
 * the faster mimalloc of each workload (the lower median time; for peak
 * RSS, the smaller median peak), through the median of the per-repetition
 * ratios to it. The targets printed: through the hooks, poolkit at most
 * 0.9x the faster mimalloc's time on each workload, 0.85x in geometric
 * mean, and peak RSS at most 1.2x the smaller mimalloc's; with LD_PRELOAD,
 * every output identical and 1.0x the faster mimalloc's time in geometric
 * mean.
 */
#include "lab.h"
#include "realprog.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXP "realprog"
#define PK "poolkit pk_alloc"

static const rp_hook_workload *const hooks[] = {&rp_sqlite, &rp_libxml2, &rp_jansson, &rp_expat};

const rp_hook_workload *rp_hook_at(int w) { return w >= 0 && w < RP_NHOOKS ? hooks[w] : NULL; }

/* Sizes, as a fraction of the full ones (1.0: SQLite 240,000 rows and
 * 60,000 lookups, a 24 MB catalogue, 12 MB of records; the programs'
 * inputs alike): the default run takes about a minute on two cores
 * (warm-up and five repetitions of 45 runs), --smoke seconds. */
double rp_scale(void) {
    switch (lab_opt.scale) {
    case LAB_SMOKE: return 0.01;
    case LAB_QUICK: return 0.05;
    case LAB_FULL: return 1.0;
    default: return 0.15;
    }
}

/* One run's figures. */
typedef struct result {
    int ok;
    double ms, rss_kb;
    uint64_t hash;
    char why[600];
} result;

/* A hooks workload runs in a process of its own, pk-lab started afresh
 * (`pk-lab realprog-hook W K SCALE FD`, lab_realprog_hook_main): a forked
 * child would inherit what the lab's earlier experiments left in each
 * allocator (free memory, resident and reused without counting as
 * growth), and a library takes its allocator once per process. There it
 * makes the workload's input, makes the allocator's first call, resets the
 * kernel's peak to the resident size (clear_refs 5), runs the workload and
 * writes "NS HASH GROWTH_KIB" to FD (GROWTH -1: the peak could not be
 * reset). */
int lab_realprog_hook_main(int argc, char **argv) {
    if (argc != 4) return 2;
    int w = atoi(argv[0]), k = atoi(argv[1]), fd = atoi(argv[3]);
    double sc = strtod(argv[2], NULL);
    rp_alloc *al = rp_allocs();
    if (w < 0 || w >= RP_NHOOKS || k < 0 || k >= RP_NALLOC || hooks[w]->why || !al[k].available) return 2;
    if (hooks[w]->input) hooks[w]->input(sc);
    void *first = al[k].malloc(16);
    al[k].free(first);
    rp_peak peak;
    rp_peak_begin(&peak);
    double ns = 0;
    uint64_t hash = hooks[w]->run(&al[k], sc, &ns);
    double growth = rp_peak_kib(&peak);
    if (isnan(growth)) growth = -1;
    return dprintf(fd, "%.0f %llu %.3f\n", ns, (unsigned long long)hash, growth) > 0 ? 0 : 1;
}

static void run_hook(int w, int k, double sc, result *r) {
    memset(r, 0, sizeof *r);
    char wb[16], kb[16], sb[48];
    snprintf(wb, sizeof wb, "%d", w);
    snprintf(kb, sizeof kb, "%d", k);
    snprintf(sb, sizeof sb, "%.17g", sc);
    int rep[2];
    if (pipe(rep) != 0) {
        snprintf(r->why, sizeof r->why, "pipe: %s", strerror(errno));
        return;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(rep[0]);
        if (rep[1] != 3 && (dup2(rep[1], 3) != 3 || close(rep[1]) != 0)) _exit(126);
        execl("/proc/self/exe", "pk-lab", "realprog-hook", wb, kb, sb, "3", (char *)NULL);
        _exit(127);
    }
    char line[128];
    int status = lab_child_report(pid, rep, line, sizeof line);
    double ns, growth;
    unsigned long long hash;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        sscanf(line, "%lf %llu %lf", &ns, &hash, &growth) != 3) {
        snprintf(r->why, sizeof r->why, "the workload failed in its own process (see stderr)");
        return;
    }
    r->ok = 1;
    r->ms = ns / 1e6;
    r->rss_kb = growth >= 0 ? growth : NAN; /* no peak of its own where the kernel's could not be reset */
    r->hash = hash;
}

static void run_program(int p, const rp_alloc *a, result *r) {
    rp_program_result pr;
    memset(r, 0, sizeof *r);
    if (rp_program_run(p, a->preload, &pr) != 0) {
        snprintf(r->why, sizeof r->why, "%s", pr.why);
        return;
    }
    r->ok = 1;
    r->ms = pr.ns / 1e6;
    r->rss_kb = pr.peak_rss_kb;
    r->hash = pr.hash;
}

static void params_of(lab_params *ps, const char *kind, const char *workload) {
    *ps = (lab_params){0};
    lab_pset_str(ps, "kind", kind);
    lab_pset_str(ps, "workload", workload);
}

/* Records one repetition's results of a workload (in table order). */
static void record(const char *kind, const char *workload, const char *const why[RP_NALLOC], const result *res) {
    rp_alloc *al = rp_allocs();
    const result *glibc = &res[RP_GLIBC];
    for (int k = 0; k < RP_NALLOC; k++) {
        lab_params ps;
        params_of(&ps, kind, workload);
        lab_row *row = lab_row_get(EXP, al[k].subject, al[k].family, &ps);
        lab_row_info(row, al[k].version, lab_flags());
        if (why[k]) {
            lab_row_unavailable(row, why[k]);
            continue;
        }
        if (!res[k].ok) {
            row->failed = 1;
            lab_row_unavailable(row, res[k].why);
            continue;
        }
        if (!row->available) continue; /* failed in an earlier repetition */
        lab_row_sample(row, res[k].ms);
        lab_row_extra(row, "peak_rss_kb", res[k].rss_kb);
        if (glibc->ok) lab_row_extra(row, "same_output", res[k].hash == glibc->hash ? 1 : 0);
        for (int m = 0; m < 2; m++) { /* to each mimalloc, in the same repetition */
            const result *mi = &res[m ? RP_MI3 : RP_MI];
            if (!mi->ok || mi->ms <= 0) continue;
            lab_row_extra(row, m ? "vs_mimalloc3" : "vs_mimalloc", res[k].ms / mi->ms);
            if (mi->rss_kb > 0)
                lab_row_extra(row, m ? "rss_vs_mimalloc3" : "rss_vs_mimalloc", res[k].rss_kb / mi->rss_kb);
        }
    }
}

static void run(int rep) {
    rp_alloc *al = rp_allocs();
    double sc = rp_scale() * (lab_warming ? 0.1 : 1.0);
    static double inputs_for = -1;
    static char inputs_why[300];
    static int inputs_bad;
    if (inputs_for != sc) { /* the programs' files, once per size, before any timing (the hooks
                               workloads make theirs in their own process) */
        inputs_bad = rp_preload_inputs(sc, inputs_why, sizeof inputs_why) != 0;
        inputs_for = sc;
    }
    int turn = rep < 0 ? 0 : rep;
    for (int w = 0; w < RP_NHOOKS; w++) {
        const char *why[RP_NALLOC] = {0};
        result res[RP_NALLOC];
        memset(res, 0, sizeof res);
        for (int j = 0; j < RP_NALLOC; j++) {
            int k = (j + turn) % RP_NALLOC;
            why[k] = hooks[w]->why ? hooks[w]->why : !al[k].available ? al[k].why : NULL;
            if (why[k]) continue;
            lab_progress(al[k].subject, hooks[w]->name);
            run_hook(w, k, sc, &res[k]);
        }
        if (rep >= 0) record("hooks", hooks[w]->name, why, res);
    }
    for (int p = 0; p < RP_NPROGRAMS; p++) {
        const char *why[RP_NALLOC] = {0};
        result res[RP_NALLOC];
        memset(res, 0, sizeof res);
        static char missing[RP_NPROGRAMS][300];
        int found = rp_program_found(p, missing[p], sizeof missing[p]);
        for (int j = 0; j < RP_NALLOC; j++) {
            int k = (j + turn) % RP_NALLOC;
            why[k] = inputs_bad ? inputs_why : !found ? missing[p] : al[k].preload_why[0] ? al[k].preload_why : NULL;
            if (why[k]) continue;
            lab_progress(al[k].subject, rp_programs[p].name);
            run_program(p, &al[k], &res[k]);
        }
        if (rep >= 0) record("preload", rp_programs[p].name, why, res);
    }
}

/* ---- the table and the targets ---- */

static lab_row *row_of(const char *subject, const char *kind, const char *workload) {
    char k[40], w[40];
    snprintf(k, sizeof k, "\"%s\"", kind);
    snprintf(w, sizeof w, "\"%s\"", workload);
    return lab_find(EXP, subject, "kind", k, "workload", w, NULL);
}

static double extra_of(const char *subject, const char *kind, const char *workload, const char *name) {
    lab_row *r = row_of(subject, kind, workload);
    if (!r || !r->available || !r->samples.n) return NAN;
    return name ? lab_extra_median(r, name) : lab_median(&r->samples);
}

/* The faster mimalloc of a workload (lower median time; rss: smaller median
 * peak): 0 for Debian's, 1 for PyPI's 3, -1 for neither measured. */
static int better_mimalloc(const char *kind, const char *workload, int rss) {
    const char *what = rss ? "peak_rss_kb" : NULL;
    double m2 = extra_of(LAB_MIMALLOC, kind, workload, what), m3 = extra_of(LAB_MIMALLOC3, kind, workload, what);
    if (isnan(m2) && isnan(m3)) return -1;
    return isnan(m2) || m3 < m2;
}

/* subject's median ratio to the faster mimalloc of the workload (rss: of
 * peak RSS, to the smaller), or NaN. */
static double vs_better_mimalloc(const char *subject, const char *kind, const char *workload, int rss) {
    static const char *const names[2][2] = {{"vs_mimalloc", "vs_mimalloc3"},
                                            {"rss_vs_mimalloc", "rss_vs_mimalloc3"}};
    int m = better_mimalloc(kind, workload, rss);
    return m < 0 ? NAN : extra_of(subject, kind, workload, names[rss][m]);
}

/* Whether every run of every available allocator gave glibc's output. */
static int outputs_identical(const char *kind, const char *workload, int *measured) {
    rp_alloc *al = rp_allocs();
    int same = 1;
    *measured = 0;
    for (int k = 0; k < RP_NALLOC; k++) {
        lab_row *r = row_of(al[k].subject, kind, workload);
        if (!r || !r->available) continue;
        for (int e = 0; e < r->nextra; e++)
            if (!strcmp(r->extra[e].name, "same_output")) {
                *measured = 1;
                same &= lab_min(&r->extra[e].s) == 1;
            }
    }
    return same;
}

static void print_kind(FILE *out, const char *kind, const char *const *names, int n) {
    rp_alloc *al = rp_allocs();
    char b[32], c[32];
    fprintf(out, "\n  %-18s", kind[0] == 'h' ? "hooks: workload" : "LD_PRELOAD: program");
    for (int k = 0; k < RP_NALLOC; k++) fprintf(out, " %17.17s", al[k].subject);
    fprintf(out, "  output\n");
    for (int i = 0; i < n; i++) {
        fprintf(out, "  %-18s", names[i]);
        for (int k = 0; k < RP_NALLOC; k++) {
            lab_row *r = row_of(al[k].subject, kind, names[i]);
            char cell[64];
            if (!r || !r->available) snprintf(cell, sizeof cell, "%s", r && r->failed ? "failed" : "n/a");
            else snprintf(cell, sizeof cell, "%s ms %sx", lab_fmt(lab_median(&r->samples), b),
                          lab_fmt(vs_better_mimalloc(al[k].subject, kind, names[i], 0), c));
            fprintf(out, " %17.17s", cell);
        }
        int measured, same = outputs_identical(kind, names[i], &measured);
        fprintf(out, "  %s\n", !measured ? "-" : same ? "identical" : "DIFFERS");
        fprintf(out, "  %-18s", "  peak RSS");
        for (int k = 0; k < RP_NALLOC; k++) {
            double v = extra_of(al[k].subject, kind, names[i], "peak_rss_kb");
            char cell[64];
            snprintf(cell, sizeof cell, "%s MiB %sx", lab_fmt(v / 1024, b),
                     lab_fmt(vs_better_mimalloc(al[k].subject, kind, names[i], 1), c));
            fprintf(out, " %17.17s", isnan(v) ? "" : cell);
        }
        fprintf(out, "\n");
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < RP_NALLOC; k++) {
            lab_row *r = row_of(al[k].subject, kind, names[i]);
            if (r && !r->available && (r->failed || k == 0 || strcmp(r->why, al[k].why)))
                fprintf(out, "  %s / %s: %s: %.160s\n", names[i], al[k].subject, r->failed ? "failed" : "n/a",
                        r->why);
        }
}

static void print(FILE *out) {
    const char *hnames[RP_NHOOKS], *pnames[RP_NPROGRAMS];
    for (int w = 0; w < RP_NHOOKS; w++) hnames[w] = hooks[w]->name;
    for (int p = 0; p < RP_NPROGRAMS; p++) pnames[p] = rp_programs[p].name;
    fprintf(out, "== realprog: real programs, each allocator through the library's own hook and "
                 "under LD_PRELOAD\n");
    fprintf(out, "   time (median ms) and its ratio to the faster mimalloc (2 or 3) of the workload in the same "
                 "repetition; peak RSS, to the smaller mimalloc's; peak RSS "
                 "(hooks: the workload's growth in a process of its own; LD_PRELOAD: the program's); output: every allocator's "
                 "hash equal to glibc's\n");
    print_kind(out, "hooks", hnames, RP_NHOOKS);
    print_kind(out, "preload", pnames, RP_NPROGRAMS);

    char f[4][32];
    lab_target each = LAB_TARGET_INIT, rss = LAB_TARGET_INIT, gm = LAB_TARGET_INIT;
    double lsum = 0;
    int nlog = 0;
    for (int w = 0; w < RP_NHOOKS; w++) {
        double t = vs_better_mimalloc(PK, "hooks", hnames[w], 0);
        double m = vs_better_mimalloc(PK, "hooks", hnames[w], 1);
        int mt = better_mimalloc("hooks", hnames[w], 0), mr = better_mimalloc("hooks", hnames[w], 1);
        lab_target_add(&each, ", ", t, 0.9, "%s %sx%s", hnames[w], lab_fmt(t, f[0]), mt == 1 ? " (mimalloc 3)" : "");
        lab_target_add(&rss, ", ", m, 1.2, "%s %sx%s", hnames[w], lab_fmt(m, f[1]), mr == 1 ? " (mimalloc 3)" : "");
        if (!isnan(t) && t > 0) lsum += log(t), nlog++;
    }
    double g = nlog ? exp(lsum / nlog) : NAN;
    lab_target_add(&gm, "", g, 0.85, "%s over %d workloads", lab_fmt(g, f[2]), nlog);
    fprintf(out, "  target (realprog, hooks): poolkit's time <= 0.9x the faster mimalloc's on each workload: %s -> %s\n",
            each.line, lab_target_verdict(&each));
    fprintf(out, "  target (realprog, hooks): geometric mean <= 0.85x the faster mimalloc's: %s -> %s\n", gm.line,
            lab_target_verdict(&gm));
    fprintf(out, "  target (realprog, hooks): peak RSS <= 1.2x the smaller mimalloc's: %s -> %s\n", rss.line,
            lab_target_verdict(&rss));

    lab_target pgm = LAB_TARGET_INIT;
    lsum = 0;
    nlog = 0;
    int all_same = 1, any = 0;
    char diff[200] = "";
    for (int p = 0; p < RP_NPROGRAMS; p++) {
        double t = vs_better_mimalloc(PK, "preload", pnames[p], 0);
        if (!isnan(t) && t > 0) lsum += log(t), nlog++;
        int measured, same = outputs_identical("preload", pnames[p], &measured);
        any |= measured;
        if (measured && !same) {
            all_same = 0;
            snprintf(diff + strlen(diff), sizeof diff - strlen(diff), " %s", pnames[p]);
        }
    }
    g = nlog ? exp(lsum / nlog) : NAN;
    lab_target_add(&pgm, "", g, 1.0, "%s over %d programs", lab_fmt(g, f[3]), nlog);
    fprintf(out, "  target (realprog, LD_PRELOAD): every output identical: %s -> %s\n",
            !any ? "none measured" : all_same ? "all identical" : diff,
            !any ? "not measured" : all_same ? "met" : "not met");
    fprintf(out, "  target (realprog, LD_PRELOAD): geometric mean <= 1.0x the faster mimalloc's time: %s -> %s\n",
            pgm.line, lab_target_verdict(&pgm));
}

const lab_experiment lab_exp_realprog = {
    EXP, "Real programs: libraries' allocator hooks and LD_PRELOAD", "ms", 9.0, NULL, run, print, NULL,
};
