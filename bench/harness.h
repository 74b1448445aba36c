/* The front of poolkit's benchmarks: options, the header lines (command,
 * machine, method), table rows and target lines. What they measure is the
 * lab's: its allocator adapters and their kernels (lab/kernels.h, one loop
 * per workload), its measuring functions (lab/lab.h) and lab/shared.h
 * (time, random numbers, statistics, child processes, peer loading).
 *
 * Method (every program follows it): warm up first; repeat at least five
 * times; run the contenders interleaved inside each repetition (A B C A B C
 * ...) so that drift on a noisy machine hits all of them alike; report the
 * median and the min-max spread; keep the optimizer from deleting the work
 * with an escape barrier (never -O0). Every program prints the command that
 * reproduces it and the machine it ran on.
 *
 * The build defines _GNU_SOURCE (top-level CMakeLists.txt). */
#ifndef POOLKIT_BENCH_HARNESS_H
#define POOLKIT_BENCH_HARNESS_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab.h" /* the lab: adapters, kernels, measurements, lab/shared.h */

/* Passed by bench/CMakeLists.txt: the flags the program was compiled with. */
#ifndef BENCH_CFLAGS
#  define BENCH_CFLAGS "(unknown flags)"
#endif

/* The optimizer must believe that p is read and that any memory may change,
 * so the allocation it came from and the write into it stay. p goes in a
 * register ("r", not "g": given the choice, clang puts p in a stack slot,
 * adding a store that is no part of the work measured). */
#define BENCH_ESCAPE(p) SHARED_ESCAPE(p)
/* Any memory may have been read or written here. */
#define BENCH_CLOBBER() __asm__ __volatile__("" : : : "memory")

#define BENCH_NOINLINE __attribute__((noinline))
/* A kernel: a real function with its own name (for callgrind's
 * --toggle-collect and for profiles), never inlined, cloned or merged with
 * an identical twin. */
#if defined(__clang__)
#  define BENCH_KERNEL __attribute__((noinline, used))
#else
#  define BENCH_KERNEL __attribute__((noipa, used))
#endif

#define BENCH_MAX_REPS SHARED_MAX_REPS

/* ---- time ---- */

#define bench_now_ns shared_now_ns

/* ---- options shared by every program ---- */

typedef struct bench_opts {
    int reps;       /* recorded repetitions (--reps N, at least 5) */
    int quick;      /* --quick: fewer repetitions and smaller runs */
    const char *method; /* the method line, when not the usual one */
    int argc;
    char **argv;
} bench_opts;

/* Parses --reps N and --quick, leaving the others to the program: returns
 * the options; unknown arguments are left in argv for bench_arg_*. */
static inline bench_opts bench_parse(int argc, char **argv, int default_reps) {
    bench_opts o = {default_reps, 0, NULL, argc, argv};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            o.quick = 1;
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            o.reps = atoi(argv[++i]);
        }
    }
    if (o.quick && o.reps > 5) o.reps = 5;
    if (o.reps < 5) o.reps = 5; /* the method's floor */
    if (o.reps > BENCH_MAX_REPS) o.reps = BENCH_MAX_REPS;
    return o;
}

/* The integer after option name (e.g. "--depth"), or def when absent. */
static inline long bench_arg_long(const bench_opts *o, const char *name, long def) {
    for (int i = 1; i + 1 < o->argc; i++)
        if (strcmp(o->argv[i], name) == 0) return atol(o->argv[i + 1]);
    return def;
}

static inline int bench_arg_flag(const bench_opts *o, const char *name) {
    for (int i = 1; i < o->argc; i++)
        if (strcmp(o->argv[i], name) == 0) return 1;
    return 0;
}

/* ---- repetitions and their statistics: lab/shared.h's (0, not NaN, for
 * none, as the tables here print it) ---- */

typedef shared_series bench_series;
#define bench_add shared_series_add
static inline double bench__or0(double x) { return isnan(x) ? 0.0 : x; }
static inline double bench_median(const bench_series *s) { return bench__or0(shared_median(s)); }
static inline double bench_min(const bench_series *s) { return bench__or0(shared_min(s)); }
static inline double bench_max(const bench_series *s) { return bench__or0(shared_max(s)); }

/* ---- the machine line and the command ---- */

static inline const char *bench_compiler(void) {
#if defined(__clang__)
    return "clang " __clang_version__;
#elif defined(__GNUC__)
    return "gcc " __VERSION__;
#else
    return "unknown compiler";
#endif
}

/* Prints the title, the command that reproduces the run and the machine. */
static inline void bench_header(const char *title, const bench_opts *o) {
    char cpu[256];
    shared_cpu_model(cpu, sizeof cpu);
    printf("== %s\n", title);
    printf("command: ");
    for (int i = 0; i < o->argc; i++) printf("%s%s", i ? " " : "", o->argv[i]);
    printf("\n");
    double load = -1.0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &load) != 1) load = -1.0;
        fclose(f);
    }
    printf("machine: %s, %ld cores online, %s, flags: %s; load average %.2f at start\n", cpu,
           sysconf(_SC_NPROCESSORS_ONLN), bench_compiler(), BENCH_CFLAGS, load);
    if (o->method)
        printf("method: %s\n", o->method);
    else
        printf("method: median of %d interleaved repetitions after a warm-up, [min - max]\n",
               o->reps);
    fflush(stdout);
}

/* ---- memory readings ---- */

/* Resident set size of this process in bytes, from /proc/self/statm. */
static inline size_t bench_rss_bytes(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

/* ---- contenders: the lab's adapters ---- */

/* One contender of a bench program: the lab adapter named subject. An empty
 * label means a peer loaded at run time: it is labelled with its version
 * (without the Debian package's), and skipped with --no-peers. */
typedef struct bench_contender {
    const char *subject;
    char label[96];
    lab_allocator *a;
    const char *why; /* non-NULL: not available */
} bench_contender;

#define BENCH_CONTENDER(subject, label) {subject, label, NULL, NULL}

/* A peer's label: its version line without the package's ("jemalloc
 * 5.3.0 (Debian 5.3.0-1)" gives "jemalloc 5.3.0", "mimalloc 3.4.3 (PyPI
 * cmeel-mimalloc 3.4.3)" gives "mimalloc 3.4.3"). */
static inline void bench_peer_label(char *label, size_t len, const lab_allocator *a) {
    snprintf(label, len, "%.60s", a->version);
    char *pkg = strstr(label, " (Debian");
    if (!pkg) pkg = strstr(label, " (PyPI");
    if (pkg) *pkg = 0;
}

/* The faster of two contenders' figures in one repetition (v[a], v[b];
 * 0 or less: not measured): both mimallocs, Debian's 2.x and PyPI's 3.x,
 * of which neither is the faster everywhere. 0 when neither was measured. */
static inline double bench_faster(const double *v, int a, int b) {
    if (v[a] <= 0) return v[b] > 0 ? v[b] : 0;
    return v[b] > 0 && v[b] < v[a] ? v[b] : v[a];
}

/* Of contenders a and b, the one whose series in t has the lower median
 * (a where b has none): the faster mimalloc a target line names. */
static inline int bench_faster_of(const bench_series *t, int a, int b) {
    return t[b].n && (!t[a].n || bench_median(&t[b]) < bench_median(&t[a])) ? b : a;
}

static inline void bench_find(bench_contender *c, int n, int skip_peers) {
    for (int i = 0; i < n; i++) {
        int peer = !c[i].label[0];
        c[i].a = lab_allocator_named(c[i].subject);
        if (peer) bench_peer_label(c[i].label, sizeof c[i].label, c[i].a);
        if (peer && skip_peers) c[i].why = "skipped (--no-peers)";
        else if (!c[i].a->available) c[i].why = c[i].a->why;
    }
}

/* ---- tables ---- */

/* One row: label, median, [min - max], then free text (ratio, notes). */
static inline void bench_row(const char *label, const bench_series *s, const char *unit,
                             const char *extra) {
    printf("  %-34s %10.2f %-5s [%9.2f - %9.2f]  %s\n", label, bench_median(s), unit,
           bench_min(s), bench_max(s), extra ? extra : "");
}

static inline void bench_row_na(const char *label, const char *why) {
    printf("  %-34s %10s        not available: %s\n", label, "-", why);
}

/* A target line: "target: WHAT: measured ... PASS/FAIL". Returns pass. */
static inline int bench_target(int pass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int bench_target(int pass, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("target: ");
    vprintf(fmt, ap);
    printf("  -> %s\n", pass ? "PASS" : "FAIL");
    va_end(ap);
    return pass;
}

/* A target a peer this machine lacks leaves undecided: its line says so,
 * "-> SKIP", which is neither a pass nor a failure (run.sh counts it
 * apart). Returns 1: the program's other targets decide its status. */
static inline int bench_skip(const char *what, const char *why) {
    printf("target: %s: not measured: %s  -> SKIP\n", what, why);
    return 1;
}

#endif
