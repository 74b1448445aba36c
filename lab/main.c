/* pk-lab: poolkit's lab. Reruns five allocation studies and three
 * experiments of its own, with poolkit and its peers side by side, prints a
 * table per experiment beside the studies' published figures, and writes
 * results.json for lab/report.py.
 *
 *   pk-lab list
 *   pk-lab run [NAME...] [--smoke|--quick|--full] [--reps N] [--out DIR]
 *
 * Repetitions: 5 by default, 3 with --quick, 1 with --smoke (--reps N
 * overrides). Each experiment first runs a warm-up pass (shortened, not
 * recorded), then its repetitions; within one repetition every contender
 * runs once, in-process ones first and then the contender programs
 * (PROTOCOL.md), so that drift hits all of them alike.
 */
#include "lab.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern const lab_experiment lab_exp_autorelease_sweep, lab_exp_alloc_styles, lab_exp_common_ops,
    lab_exp_object_generation, lab_exp_pool_pattern, lab_exp_peers, lab_exp_threads,
    lab_exp_binary_trees, lab_exp_workset, lab_exp_steady_state, lab_exp_cache_scratch,
    lab_exp_remote_batches, lab_exp_many_pools, lab_exp_realprog, lab_exp_migrate,
    lab_exp_larson_pace, lab_exp_large, lab_exp_heap, lab_exp_advise;

const lab_experiment *const lab_experiments[] = {
    &lab_exp_autorelease_sweep, &lab_exp_alloc_styles, &lab_exp_common_ops,
    &lab_exp_object_generation, &lab_exp_pool_pattern, &lab_exp_peers,
    &lab_exp_threads,           &lab_exp_binary_trees,      &lab_exp_workset,
    /* threads: steady state, shared scratch, remote batches, many pools */
    &lab_exp_steady_state,      &lab_exp_cache_scratch,     &lab_exp_remote_batches,
    &lab_exp_many_pools,
    /* real programs: the size-class front end through hooks and LD_PRELOAD */
    &lab_exp_realprog,
    /* the edges real programs have, malloc-shaped: threads that come and go,
     * larson's pace, large blocks */
    &lab_exp_migrate,           &lab_exp_larson_pace,       &lab_exp_large,
    /* a request's blocks freed one by one or all at once */
    &lab_exp_heap,
    /* a program's own sites: pk-lab advise on a demo and the real programs */
    &lab_exp_advise,
};
const int lab_experiment_count = (int)(sizeof lab_experiments / sizeof lab_experiments[0]);

/* The most one `pk-lab child` measurement may take (lab_fresh_child). */
#define CHILD_LIMIT_S 300

/* ---- progress --------------------------------------------------------------- */

static struct {
    const lab_experiment *exp;
    int index, count; /* experiment index among those run */
    int rep;
    double start_ns, last_line_ns;
    double weight_total, weight_done, weight_now; /* ETA from weights */
    double rep_start_ns;
    int tty;
    int shown; /* a \r line is on screen */
} prog;

static double scale_factor(void) {
    switch (lab_opt.scale) {
    case LAB_SMOKE: return 0.01;
    case LAB_QUICK: return 0.2;
    case LAB_FULL: return 8.0;
    default: return 1.0;
    }
}

static void fmt_duration(double s, char *buf, size_t len) {
    if (!isfinite(s) || s < 0) snprintf(buf, len, "?");
    else if (s < 60) snprintf(buf, len, "%.0fs", s);
    else if (s < 3600) snprintf(buf, len, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, len, "%dh%02dm", (int)s / 3600, (int)s % 3600 / 60);
}

/* Seconds left: the weights not yet done, at the pace measured so far. */
static double eta_seconds(void) {
    double now = lab_now_ns();
    double elapsed = (now - prog.start_ns) / 1e9;
    double in_rep = prog.rep_start_ns > 0 ? (now - prog.rep_start_ns) / 1e9 : 0;
    double done = prog.weight_done + (in_rep < prog.weight_now ? in_rep : prog.weight_now * 0.9);
    double pace = done > 0.5 ? elapsed / done : 1.0;
    if (pace <= 0) pace = 1;
    return (prog.weight_total - done) * pace;
}

void lab_progress(const char *subject, const char *detail) {
    if (!prog.exp) return;
    double now = lab_now_ns();
    char eta[32], line[400];
    fmt_duration(eta_seconds(), eta, sizeof eta);
    char rep[32];
    if (prog.rep < 0) snprintf(rep, sizeof rep, "warm-up");
    else snprintf(rep, sizeof rep, "rep %d/%d", prog.rep + 1, lab_opt.reps);
    snprintf(line, sizeof line, "[%d/%d %s] %s  %s%s%s  ~%s left", prog.index + 1, prog.count,
             prog.exp->name, rep, subject, detail && *detail ? " " : "", detail ? detail : "", eta);
    if (prog.tty) {
        fprintf(stderr, "\r\033[K%.*s", 150, line);
        prog.shown = 1;
    } else if (now - prog.last_line_ns > 2e9) {
        fprintf(stderr, "%s\n", line);
        prog.last_line_ns = now;
    }
    fflush(stderr);
}

static void progress_clear(void) {
    if (prog.tty && prog.shown) fprintf(stderr, "\r\033[K");
    prog.shown = 0;
    fflush(stderr);
}

/* ---- commands --------------------------------------------------------------- */

static void usage(FILE *out) {
    fprintf(out,
            "usage: pk-lab list\n"
            "       pk-lab run [NAME...] [--smoke|--quick|--full] [--reps N] [--out DIR]\n"
            "       pk-lab compare OLD NEW   (two runs' results.json, or their folders)\n"
            "       pk-lab advise [--top N] [--out DIR] [--sample N] -- PROGRAM [ARGS...]\n"
            "                   where PROGRAM allocates, and what a pool, an arena or a scope\n"
            "                   would save there (lab/advise.py --help)\n"
            "\n"
            "  --smoke     every experiment in seconds (1 repetition)\n"
            "  --quick     smaller sizes, 3 repetitions\n"
            "  --full      the studies' original sizes\n"
            "  (default)   about five minutes on two cores, 5 repetitions\n"
            "  --reps N    repetitions (at least 1)\n"
            "  --out DIR   the report folder (default lab-report)\n");
}

static const lab_experiment *find_experiment(const char *name) {
    for (int i = 0; i < lab_experiment_count; i++)
        if (!strcmp(lab_experiments[i]->name, name)) return lab_experiments[i];
    return NULL;
}

static int cmd_list(void) {
    lab_allocator **all = lab_allocators();
    for (int i = 0; i < lab_experiment_count; i++) {
        const lab_experiment *x = lab_experiments[i];
        printf("%-18s %s (%s)\n", x->name, x->title, x->unit);
        lab_external_list(stdout, x->name);
    }
    printf("\nin-process allocators:\n");
    for (lab_allocator **a = all; *a; a++) {
        if ((*a)->available) printf("  %-26s %s\n", (*a)->subject, (*a)->version);
        else printf("  %-26s not available: %s\n", (*a)->subject, (*a)->why);
    }
    return 0;
}

static int cmd_run(int argc, char **argv, const char *command) {
    const lab_experiment *chosen[32];
    int nchosen = 0, reps = -1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--smoke")) lab_opt.scale = LAB_SMOKE;
        else if (!strcmp(a, "--quick")) lab_opt.scale = LAB_QUICK;
        else if (!strcmp(a, "--full")) lab_opt.scale = LAB_FULL;
        else if (!strcmp(a, "--default")) lab_opt.scale = LAB_DEFAULT;
        else if (!strcmp(a, "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strncmp(a, "--reps=", 7)) reps = atoi(a + 7);
        else if (!strcmp(a, "--out") && i + 1 < argc) lab_opt.out = argv[++i];
        else if (!strncmp(a, "--out=", 6)) lab_opt.out = a + 6;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-') {
            fprintf(stderr, "pk-lab: unknown option %s\n", a);
            usage(stderr);
            return 2;
        } else {
            const lab_experiment *x = find_experiment(a);
            if (!x) {
                fprintf(stderr, "pk-lab: no experiment named '%s' (pk-lab list shows them)\n", a);
                return 2;
            }
            if (nchosen < 32) chosen[nchosen++] = x;
        }
    }
    if (nchosen == 0)
        for (int i = 0; i < lab_experiment_count; i++) chosen[nchosen++] = lab_experiments[i];
    lab_opt.reps = reps > 0 ? reps
                   : lab_opt.scale == LAB_SMOKE ? 1
                   : lab_opt.scale == LAB_QUICK ? 3
                                                : 5;
    if (lab_opt.reps > LAB_MAX_REPS) lab_opt.reps = LAB_MAX_REPS;
    if (mkdir(lab_opt.out, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "pk-lab: cannot make %s: %s\n", lab_opt.out, strerror(errno));
        return 1;
    }
    char results[4200];
    snprintf(results, sizeof results, "%s/results.json", lab_opt.out);

    lab_machine_probe();
    printf("pk-lab: %s\n", command);
    lab_machine_line(stdout);
    printf("method: %s scale, warm-up then %d interleaved repetition%s per experiment; "
           "median [min - max]; escape barriers; net of the empty loop where marked\n",
           lab_scale_name(lab_opt.scale), lab_opt.reps, lab_opt.reps == 1 ? "" : "s");
    lab_allocator **all = lab_allocators();
    for (lab_allocator **a = all; *a; a++)
        if (!(*a)->available) printf("not available: %s: %s\n", (*a)->subject, (*a)->why);
    printf("\n");
    fflush(stdout);

    prog.tty = isatty(2);
    prog.count = nchosen;
    prog.start_ns = lab_now_ns();
    for (int i = 0; i < nchosen; i++)
        prog.weight_total += chosen[i]->weight * scale_factor() * (lab_opt.reps + 0.1);

    double secs[32] = {0};
    for (int e = 0; e < nchosen; e++) {
        const lab_experiment *x = chosen[e];
        double t_exp = lab_now_ns();
        prog.exp = x;
        prog.index = e;
        if (x->published) x->published();
        /* warm-up: shortened, nothing recorded */
        prog.rep = -1;
        prog.weight_now = x->weight * scale_factor() * 0.1;
        prog.rep_start_ns = lab_now_ns();
        lab_warming = 1;
        x->run(-1);
        lab_warming = 0;
        prog.weight_done += prog.weight_now;
        for (int rep = 0; rep < lab_opt.reps; rep++) {
            prog.rep = rep;
            prog.weight_now = x->weight * scale_factor();
            prog.rep_start_ns = lab_now_ns();
            lab_progress("", "");
            x->run(rep);
            lab_external_run(x->name, rep);
            prog.weight_done += prog.weight_now;
        }
        prog.rep_start_ns = 0;
        lab_external_fill(x->name);
        progress_clear();
        x->print(stdout);
        secs[e] = (lab_now_ns() - t_exp) / 1e9;
        char took[32];
        fmt_duration(secs[e], took, sizeof took);
        printf("  (%s: %s)\n\n", x->name, took);
        fflush(stdout);
        double total = (lab_now_ns() - prog.start_ns) / 1e9;
        const double *secs_of = secs;
        if (lab_write_results(results, chosen, secs_of, e + 1, command, total) != 0)
            fprintf(stderr, "pk-lab: cannot write %s: %s\n", results, strerror(errno));
    }
    prog.exp = NULL;
    char dur[32];
    fmt_duration((lab_now_ns() - prog.start_ns) / 1e9, dur, sizeof dur);
    rmdir(lab_scratch_dir());
    printf("pk-lab: %d experiment%s in %s; results: %s\n", nchosen, nchosen == 1 ? "" : "s", dur,
           results);
    return 0;
}

#ifndef LAB_SOURCE_DIR
#  define LAB_SOURCE_DIR "."
#endif

/* Two runs side by side: lab/compare.py does the work, with the report's
 * own computation of every ratio (lab/report.py). OLD and NEW are
 * results.json files or the folders that hold them. */
static int cmd_compare(int argc, char **argv) {
    if (argc != 2) {
        usage(stderr);
        return 2;
    }
    char paths[2][4096];
    for (int i = 0; i < 2; i++) {
        struct stat st;
        bool dir = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode);
        snprintf(paths[i], sizeof paths[i], "%s%s", argv[i], dir ? "/results.json" : "");
    }
    char *args[] = {"python3", LAB_SOURCE_DIR "/lab/compare.py", paths[0], paths[1], NULL};
    fflush(stdout);
    execvp("python3", args);
    fprintf(stderr, "pk-lab: cannot run python3 for compare: %s\n", strerror(errno));
    return 2;
}

#ifndef LAB_RECORD_LIB
#  define LAB_RECORD_LIB ""
#endif

/* A program's allocation sites and what each would gain from a pool, an
 * arena or a scope: lab/advise.py does the work, with the recording
 * library built beside pk-lab (lab/advise/record.c) and this pk-lab for
 * the costs (advise-costs). The project's .venv python where there is one
 * (matplotlib draws the lifetime chart). */
static int cmd_advise(int argc, char **argv) {
    if (!*LAB_RECORD_LIB) {
        fprintf(stderr, "pk-lab advise: not in this build (a sanitizer build has no recording library)\n");
        return 2;
    }
    char self[4096];
    lab_self_exe(self, sizeof self);
    const char *py = access(LAB_SOURCE_DIR "/.venv/bin/python", X_OK) == 0 ? LAB_SOURCE_DIR "/.venv/bin/python"
                                                                          : "python3";
    char **args = calloc((size_t)argc + 8, sizeof *args);
    if (!args) return 2;
    int k = 0;
    args[k++] = (char *)py;
    args[k++] = LAB_SOURCE_DIR "/lab/advise.py";
    args[k++] = "--record-lib";
    args[k++] = LAB_RECORD_LIB;
    args[k++] = "--lab";
    args[k++] = self;
    for (int i = 0; i < argc; i++) args[k++] = argv[i];
    args[k] = NULL;
    fflush(stdout);
    execvp(py, args);
    fprintf(stderr, "pk-lab advise: cannot run %s: %s\n", py, strerror(errno));
    return 2;
}

int main(int argc, char **argv) {
    shared_reexec_for_tls(argv); /* jemalloc under dlopen (lab/shared.h) */
    lab_opt.self = argv[0];
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    char command[1024] = "pk-lab";
    for (int i = 1; i < argc; i++) {
        size_t n = strlen(command);
        snprintf(command + n, sizeof command - n, " %s", argv[i]);
    }
    if (!strcmp(argv[1], "list")) return cmd_list();
    if (!strcmp(argv[1], "run")) return cmd_run(argc - 2, argv + 2, command);
    if (!strcmp(argv[1], "compare")) return cmd_compare(argc - 2, argv + 2);
    if (!strcmp(argv[1], "advise")) return cmd_advise(argc - 2, argv + 2);
    if (!strcmp(argv[1], "advise-costs")) return lab_advise_costs_main(argc - 2, argv + 2);
    /* one measurement in a process of its own (lab_fresh_child) */
    if (!strcmp(argv[1], "child") && argc >= 3) {
        const lab_experiment *x = find_experiment(argv[2]);
        if (!x || !x->child) {
            fprintf(stderr, "pk-lab child: no experiment '%s' with a child\n", argv[2]);
            return 2;
        }
        alarm(CHILD_LIMIT_S); /* a child that hangs fails its measurement, not the run */
        return x->child(argc - 3, argv + 3);
    }
    /* the real-program experiment's own processes (exp_realprog.c) */
    if (!strcmp(argv[1], "realprog-hook")) return lab_realprog_hook_main(argc - 2, argv + 2);
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "pk-lab: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
