/* advise: `pk-lab advise` (lab/advise.py) on a demo program and on
 * realprog's programs, and the proof that its advice is right.
 *
 *   demo      advise-demo (examples/advise_demo.c: a request loop written
 *             with malloc) and advise-demo-pooled (the same source with
 *             the top advice applied: its token site from a pk_pool with
 *             PK_POOL_LOCAL), each run once per repetition, the order
 *             alternating; wall ms from fork to wait, and the
 *             repetition's saving (malloc's ms less the pooled one's).
 *             In the last repetition, `pk-lab advise` on advise-demo
 *             (report in OUT/advise/demo/): its prediction for the token
 *             site. Target: the measured saving (the median of the
 *             repetitions' savings) within 30% of the predicted one.
 *   programs  `pk-lab advise` on jq, xmllint, sqlite3, perl and python3
 *             over realprog's inputs at realprog's scale, and on the hooks
 *             workloads (SQLite, libxml2, jansson, expat with glibc's
 *             malloc through their hooks: `pk-lab realprog-hook W 0 SCALE
 *             1`, a pk-lab process that makes its input and runs the
 *             workload), reports in OUT/advise/NAME/, once, in the last
 *             repetition: the recording's overhead (median recorded over
 *             median plain run), its sampling, the top site, its advice
 *             and the predicted saving; "leave it" where nothing gains.
 *
 * Every advise call prices with one run of `pk-lab advise-costs`
 * (OUT/advise/costs.json: 16 B to 64 KiB, as many repetitions as the
 * lab's), measured in that repetition before them.
 */
#include "json.h"
#include "lab.h"
#include "realprog.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXP "advise"
#define DEMO_MALLOC "advise-demo (malloc)"
#define DEMO_POOLED "advise-demo (top advice applied)"
#define PREDICTION "pk-lab advise prediction"
#define ADVISE "pk-lab advise"
#define DEMO_SITE "token_new"

static long demo_requests(void) { return lab_pick(20000, 100000, 200000, 1000000); }

/* Runs argv with stdout to out_path (or /dev/null; with log, stderr too)
 * and stdin from in_path (or /dev/null); its wall ms, or NaN if it failed. */
static double run_program(const char *const *argv, const char *in_path, const char *out_path, int log) {
    fflush(stdout);
    fflush(stderr);
    double t0 = lab_now_ns();
    pid_t pid = fork();
    if (pid == 0) {
        int fi = open(in_path ? in_path : "/dev/null", O_RDONLY);
        int fo = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fi < 0 || fo < 0) _exit(126);
        dup2(fi, 0);
        dup2(fo, 1);
        if (log) dup2(fo, 2); /* a log: what it says on stderr too */
        unsetenv("GLIBC_TUNABLES"); /* pk-lab's own, for jemalloc under dlopen */
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return NAN;
    double ms = (lab_now_ns() - t0) / 1e6;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? ms : NAN;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text && fread(text, 1, (size_t)n, f) != (size_t)n) {
        free(text);
        text = NULL;
    }
    if (text) text[n] = 0;
    fclose(f);
    return text;
}

/* ---- pk-lab advise, and what it found ---- */

typedef struct advised {
    int ok;
    char why[300];
    double overhead, sample, allocs, run_ms, worth;
    char site[96], advice[32];
    double saving_ms, saving_share;
    double demo_saving_ms; /* the demo's token site, wherever it ranks */
} advised;

static double num(const json *o, const char *key) {
    const json *v = json_get(o, key);
    return v && v->type == JSON_NUMBER ? v->number : NAN;
}

static void read_advice(const char *dir, advised *a) {
    char path[4300];
    snprintf(path, sizeof path, "%s/advise.json", dir);
    char *text = read_file(path);
    json *root = text ? json_parse(text) : NULL;
    free(text);
    const json *sum = root ? json_get(root, "summary") : NULL;
    const json *top = sum ? json_get(sum, "top") : NULL;
    if (!sum || !top || top->type != JSON_ARRAY) {
        snprintf(a->why, sizeof a->why, "%.250s: no summary", path);
        json_free(root);
        return;
    }
    a->ok = 1;
    a->overhead = num(sum, "overhead");
    a->sample = num(sum, "sample");
    a->allocs = num(sum, "allocs");
    a->run_ms = num(sum, "run_ms");
    a->worth = num(sum, "worth");
    a->saving_ms = a->saving_share = a->demo_saving_ms = NAN;
    snprintf(a->site, sizeof a->site, "-");
    snprintf(a->advice, sizeof a->advice, "-");
    for (int i = 0; i < top->n; i++) {
        const json *s = &top->kids[i];
        const char *fn = json_str(s, "function"), *advice = json_str(s, "advice");
        if (i == 0) {
            snprintf(a->site, sizeof a->site, "%s", json_str(s, "site") ? json_str(s, "site") : "?");
            snprintf(a->advice, sizeof a->advice, "%s", advice ? advice : "?");
            if (advice && strcmp(advice, "leave")) {
                a->saving_ms = num(s, "saving_ms");
                a->saving_share = num(s, "saving_share");
            }
        }
        if (fn && !strcmp(fn, DEMO_SITE) && isnan(a->demo_saving_ms)) a->demo_saving_ms = num(s, "saving_ms");
    }
    json_free(root);
}

/* `pk-lab advise --costs COSTS --out DIR ... -- ARGV` */
static void run_advise(const char *const *argv, const char *in_path, const char *dir, const char *costs, int runs,
                       advised *a) {
    memset(a, 0, sizeof *a);
    const char *args[32];
    char runs_text[16], log_path[4300];
    snprintf(runs_text, sizeof runs_text, "%d", runs);
    int k = 0;
    args[k++] = "/proc/self/exe";
    args[k++] = "advise";
    args[k++] = "--quiet";
    args[k++] = "--runs";
    args[k++] = runs_text;
    args[k++] = "--out";
    args[k++] = dir;
    args[k++] = "--costs";
    args[k++] = costs;
    if (in_path) {
        args[k++] = "--stdin";
        args[k++] = in_path;
    }
    args[k++] = "--";
    for (int i = 0; argv[i] && k < 31; i++) args[k++] = argv[i];
    args[k] = NULL;
    snprintf(log_path, sizeof log_path, "%s/advise.log", dir);
    if (isnan(run_program(args, NULL, log_path, 1))) { /* its last line says why */
        char *text = read_file(log_path), *last = text;
        for (char *p = text; p && *p; p++)
            if (*p == '\n' && p[1] && p[1] != '\n') last = p + 1;
        if (last) last[strcspn(last, "\n")] = 0;
        snprintf(a->why, sizeof a->why, "%.200s (%.90s)", last && *last ? last : "pk-lab advise failed", log_path);
        free(text);
        return;
    }
    read_advice(dir, a);
}

/* ---- the repetitions ---- */

/* What advise runs besides the demo: realprog's programs, then its hooks
 * workloads. */
#define NTARGETS (RP_NPROGRAMS + RP_NHOOKS)
static advised demo_advice, program_advice[NTARGETS];
static char program_why[NTARGETS][300];

/* The name of target i, as its row and its report folder say it. */
static const char *target_name(int i) {
    static char names[RP_NHOOKS][48];
    if (i < RP_NPROGRAMS) return rp_programs[i].name;
    snprintf(names[i - RP_NPROGRAMS], sizeof names[0], "%s-hook", rp_hook_at(i - RP_NPROGRAMS)->name);
    return names[i - RP_NPROGRAMS];
}

static void make_dir(const char *path) {
    if (mkdir(path, 0755) != 0 && errno != EEXIST) fprintf(stderr, "pk-lab: cannot make %s\n", path);
}

static void record_demo(double ms_malloc, double ms_pooled) {
    lab_params ps = {0};
    lab_pset_num(&ps, "requests", (double)demo_requests());
    lab_row *m = lab_row_get(EXP, DEMO_MALLOC, "peer", &ps);
    lab_row *p = lab_row_get(EXP, DEMO_POOLED, "poolkit", &ps);
    lab_row_info(m, "glibc malloc", lab_flags());
    lab_row_info(p, "poolkit pk_pool LOCAL at the token site", lab_flags());
    if (isnan(ms_malloc) || isnan(ms_pooled)) {
        lab_row_unavailable(isnan(ms_malloc) ? m : p, "the demo failed (build pk-lab: advise-demo beside it)");
        return;
    }
    lab_row_sample(m, ms_malloc);
    lab_row_sample(p, ms_pooled);
    lab_row_extra(p, "saving_ms", ms_malloc - ms_pooled);
}

/* pk-lab advise on target i, its report in OUT/advise/NAME/. */
static void advise_one(int i, const char *const *argv, const char *in, const char *costs) {
    char sub[4300];
    snprintf(sub, sizeof sub, "%s/advise/%s", lab_opt.out, target_name(i));
    make_dir(sub);
    lab_progress(ADVISE, target_name(i));
    run_advise(argv, in, sub, costs, lab_opt.scale == LAB_SMOKE ? 1 : 2, &program_advice[i]);
    if (!program_advice[i].ok) snprintf(program_why[i], sizeof program_why[i], "%s", program_advice[i].why);
}

static void advise_all(void) {
    char dir[4200], costs[4300], demo[4200];
    snprintf(dir, sizeof dir, "%s/advise", lab_opt.out);
    make_dir(dir);
    /* the costs, once, at the sizes from 16 B to 64 KiB */
    snprintf(costs, sizeof costs, "%s/costs.json", dir);
    char reps[16];
    snprintf(reps, sizeof reps, "%d", lab_opt.reps);
    const char *cargs[] = {"/proc/self/exe", "advise-costs", "--reps", reps, "16", "32", "64", "128", "256",
                           "512", "1024", "2048", "4096", "8192", "16384", "32768", "65536", NULL};
    if (isnan(run_program(cargs, NULL, costs, 0))) fprintf(stderr, "pk-lab: advise-costs failed\n");
    /* the demo */
    char requests[32], sub[4300];
    snprintf(requests, sizeof requests, "%ld", demo_requests());
    const char *dargs[] = {lab_beside_self("advise-demo", demo, sizeof demo), requests, NULL};
    snprintf(sub, sizeof sub, "%s/demo", dir);
    make_dir(sub);
    lab_progress(ADVISE, "advise-demo");
    run_advise(dargs, NULL, sub, costs, lab_opt.scale == LAB_SMOKE ? 1 : 3, &demo_advice);
    /* realprog's programs */
    char why[300];
    int inputs_ok = rp_preload_inputs(rp_scale(), why, sizeof why) == 0;
    for (int i = 0; i < RP_NPROGRAMS; i++) {
        if (!inputs_ok) {
            snprintf(program_why[i], sizeof program_why[i], "%s", why);
            continue;
        }
        if (!rp_program_found(i, program_why[i], sizeof program_why[i])) continue;
        const char *pargs[10], *in;
        rp_program_argv(i, pargs, &in);
        advise_one(i, pargs, in, costs);
    }
    char self[4096], scale[48];
    lab_self_exe(self, sizeof self);
    snprintf(scale, sizeof scale, "%.17g", rp_scale());
    for (int w = 0; w < RP_NHOOKS; w++) {
        const rp_hook_workload *h = rp_hook_at(w);
        if (h->why) {
            snprintf(program_why[RP_NPROGRAMS + w], sizeof program_why[0], "%s", h->why);
            continue;
        }
        char wtext[16];
        snprintf(wtext, sizeof wtext, "%d", w);
        /* allocator 0: glibc's malloc through the hook; its line on stdout */
        const char *hargs[] = {self, "realprog-hook", wtext, "0", scale, "1", NULL};
        advise_one(RP_NPROGRAMS + w, hargs, NULL, costs);
    }
}

static void record_advice(void) {
    lab_params ps = {0};
    lab_pset_str(&ps, "program", "advise-demo");
    lab_pset_str(&ps, "site", DEMO_SITE);
    lab_row *r = lab_row_get(EXP, PREDICTION, "poolkit", &ps);
    snprintf(r->unit, sizeof r->unit, "ms saved");
    lab_row_info(r, "lab/advise.py", lab_flags());
    if (!demo_advice.ok || isnan(demo_advice.demo_saving_ms))
        lab_row_unavailable(r, demo_advice.ok ? "advise did not rank the token site among its top three"
                                              : demo_advice.why);
    else {
        lab_row_sample(r, demo_advice.demo_saving_ms);
        lab_row_extra(r, "overhead", demo_advice.overhead);
        lab_row_extra(r, "sample", demo_advice.sample);
    }
    for (int i = 0; i < NTARGETS; i++) {
        const advised *a = &program_advice[i];
        lab_params pp = {0};
        lab_pset_str(&pp, "program", target_name(i));
        lab_row *row = lab_row_get(EXP, ADVISE, "poolkit", &pp);
        snprintf(row->unit, sizeof row->unit, "x recording");
        lab_row_info(row, "lab/advise.py", lab_flags());
        if (!a->ok) {
            lab_row_unavailable(row, program_why[i][0] ? program_why[i] : "not run");
            continue;
        }
        lab_row_sample(row, a->overhead);
        lab_row_extra(row, "sample", a->sample);
        lab_row_extra(row, "allocs", a->allocs);
        lab_row_extra(row, "run_ms", a->run_ms);
        lab_row_extra(row, "sites_worth", a->worth);
        lab_row_extra(row, "top_saving_ms", isnan(a->saving_ms) ? 0 : a->saving_ms);
        lab_row_extra(row, "top_saving_share", isnan(a->saving_share) ? 0 : a->saving_share);
    }
}

static void run(int rep) {
    char demo[4200], pooled[4200], requests[32];
    snprintf(requests, sizeof requests, "%ld", lab_warming ? demo_requests() / 10 : demo_requests());
    const char *m[] = {lab_beside_self("advise-demo", demo, sizeof demo), requests, NULL};
    const char *p[] = {lab_beside_self("advise-demo-pooled", pooled, sizeof pooled), requests, NULL};
    double ms[2];
    for (int j = 0; j < 2; j++) {
        int k = (j + (rep < 0 ? 0 : rep)) % 2;
        lab_progress(k ? DEMO_POOLED : DEMO_MALLOC, "");
        ms[k] = run_program(k ? p : m, NULL, NULL, 0);
    }
    if (rep < 0) return;
    record_demo(ms[0], ms[1]);
    if (rep == lab_opt.reps - 1) {
        advise_all();
        record_advice();
    }
}

/* ---- the table ---- */

static void print(FILE *out) {
    char b[4][32];
    lab_params ps = {0};
    lab_pset_num(&ps, "requests", (double)demo_requests());
    lab_row *m = lab_row_lookup(EXP, DEMO_MALLOC, &ps), *p = lab_row_lookup(EXP, DEMO_POOLED, &ps);
    lab_row *pred = lab_find(EXP, PREDICTION, NULL);
    fprintf(out, "== advise: pk-lab advise on a demo and on real programs (reports in %s/advise/)\n", lab_opt.out);
    fprintf(out, "   demo: examples/advise_demo.c, %ld requests; wall ms per run, median [min - max]\n",
            demo_requests());
    fprintf(out, "  %-36s %s\n", DEMO_MALLOC, lab_fmt_row(m, b[0]));
    fprintf(out, "  %-36s %s\n", DEMO_POOLED, lab_fmt_row(p, b[1]));
    double measured = p && p->available ? lab_extra_median(p, "saving_ms") : NAN;
    double predicted = lab_row_median(pred);
    fprintf(out, "  saving at %s: predicted %s ms (advise, %s), measured %s ms (median of the repetitions' "
                 "differences)\n",
            DEMO_SITE, lab_fmt(predicted, b[0]),
            demo_advice.ok ? "top site" : "not run", lab_fmt(measured, b[1]));
    lab_target t = LAB_TARGET_INIT;
    double ratio = measured / predicted;
    lab_target_add(&t, "", isnan(ratio) ? NAN : fabs(ratio - 1), 0.3, "measured/predicted %s",
                   lab_fmt(ratio, b[2]));
    fprintf(out, "  target (advise): the demo's measured saving within 30%% of the predicted: %s -> %s\n", t.line,
            lab_target_verdict(&t));
    fprintf(out, "\n  %-16s %9s %7s %12s %10s  %-44s %-10s %s\n", "program", "overhead", "sample", "allocations",
            "run ms", "top site", "advice", "saving");
    for (int i = 0; i < NTARGETS; i++) {
        const advised *a = &program_advice[i];
        if (!a->ok) {
            fprintf(out, "  %-16s n/a: %.150s\n", target_name(i), program_why[i]);
            continue;
        }
        char saving[64];
        if (isnan(a->saving_ms)) snprintf(saving, sizeof saving, "nothing to gain");
        else snprintf(saving, sizeof saving, "%s ms (%.1f%%)", lab_fmt(a->saving_ms, b[3]), 100 * a->saving_share);
        fprintf(out, "  %-16s %8.2fx %7.0f %12.0f %10s  %-44.44s %-10s %s\n", target_name(i), a->overhead,
                a->sample, a->allocs, lab_fmt(a->run_ms, b[0]), a->site, a->advice, saving);
    }
}

const lab_experiment lab_exp_advise = {
    .name = EXP,
    .title = "pk-lab advise: a demo's predicted and measured saving, and real programs' top sites",
    .unit = "ms",
    .weight = 40,
    .published = NULL,
    .run = run,
    .print = print,
};
