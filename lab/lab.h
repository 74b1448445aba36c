/* pk-lab: the lab's shared vocabulary.
 *
 * The lab reruns five allocation studies, and three experiments of its own,
 * with poolkit and its peers side by side (../../shared/LAB.md has the list,
 * lab/PROTOCOL.md the interface to the contender programs in other
 * languages). This header is what every file of the lab shares:
 *
 *   - the run's options and scale (smoke, quick, default, full);
 *   - time, and the barriers that keep the optimizer from deleting the work;
 *   - rows: one per (experiment, subject, params), each holding the samples
 *     of every repetition, merged into median, min and max when written;
 *   - progress lines on stderr;
 *   - the allocator adapters (one file per peer) and their kernels.
 *
 * Method, for every experiment (LAB.md): warm up first; repeat; interleave
 * the contenders inside each repetition (A B C A B C ...), so that drift on a
 * noisy machine hits all of them alike; keep the work with an escape barrier
 * (never -O0); give per-operation figures net of the empty loop where the
 * experiment says so.
 */
#ifndef PK_LAB_H
#define PK_LAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "shared.h" /* the random source, permutations, the CPU name (shared with bench/) */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- barriers and time ---------------------------------------------------- */

/* The optimizer must believe p is read and any memory may have changed. */
#define LAB_ESCAPE(p) SHARED_ESCAPE(p)
/* Any memory may have been read or written here. */
#define LAB_CLOBBER() __asm__ __volatile__("" : : : "memory")
#define LAB_NOINLINE __attribute__((noinline))
#if defined(__clang__)
#  define LAB_KERNEL __attribute__((noinline, used))
#else
#  define LAB_KERNEL __attribute__((noipa, used))
#endif

/* Monotonic time in nanoseconds (inline: bench/'s programs compile the
 * kernels without linking the lab). */
static inline double lab_now_ns(void) { return shared_now_ns(); }

/* ---- options -------------------------------------------------------------- */

typedef enum { LAB_SMOKE, LAB_QUICK, LAB_DEFAULT, LAB_FULL } lab_scale;

#define LAB_MAX_REPS SHARED_MAX_REPS

typedef struct lab_opts {
    lab_scale scale;
    int reps;         /* recorded repetitions */
    const char *out;  /* the report folder */
    const char *self; /* the path of pk-lab's executable (for the contender programs) */
} lab_opts;

extern lab_opts lab_opt;

/* The scale's name as PROTOCOL.md spells it: "smoke", "quick", "default", "full". */
const char *lab_scale_name(lab_scale s);
/* One of four values, by scale. */
long lab_pick(long smoke, long quick, long def, long full);

/* ---- rows ----------------------------------------------------------------- */

#define LAB_MAX_PARAMS 6
#define LAB_MAX_EXTRA 10

typedef struct lab_param {
    char key[32];
    char value[96]; /* JSON text: a number, or a quoted string */
} lab_param;

typedef shared_series lab_series; /* shared.h */

typedef struct lab_row {
    char experiment[40];
    char subject[96];
    char family[16];   /* poolkit, peer or published */
    char unit[24];     /* "" = the experiment's */
    lab_param params[LAB_MAX_PARAMS];
    int nparams;
    lab_series samples;
    struct {
        char name[32];
        lab_series s;
    } extra[LAB_MAX_EXTRA];
    int nextra;
    char version[128];
    char flags[256];
    int available;     /* 0: "not available" (why says why) */
    int failed;        /* a contender program failed (why has its stderr's tail) */
    char why[600];
    int published_reps; /* published rows: reps is 0 */
} lab_row;

/* A row's params: what distinguishes it from the other rows of its
 * experiment (PROTOCOL.md names the keys). Built with lab_pset_str and
 * lab_pset_num, which store the values as JSON text. */
typedef struct lab_params {
    lab_param p[LAB_MAX_PARAMS];
    int n;
} lab_params;
void lab_pset_str(lab_params *ps, const char *key, const char *value);
void lab_pset_num(lab_params *ps, const char *key, double value);

/* The row of (experiment, subject, params), made on first use. */
lab_row *lab_row_get(const char *experiment, const char *subject, const char *family,
                     const lab_params *params);
/* The same row if it was made, else NULL (nothing is made). */
lab_row *lab_row_lookup(const char *experiment, const char *subject, const lab_params *params);
void lab_row_sample(lab_row *r, double v);
void lab_row_extra(lab_row *r, const char *name, double v);
void lab_row_info(lab_row *r, const char *version, const char *flags);
void lab_row_unavailable(lab_row *r, const char *why);
/* A published figure: reps 0, median = min = max = v. unit NULL = the experiment's. */
lab_row *lab_published(const char *experiment, const char *subject, const lab_params *params,
                       const char *unit, double v);

/* Lookup: the row of experiment and subject whose params contain every
 * (key, JSON value) pair given (NULL-terminated), or NULL. */
lab_row *lab_find(const char *experiment, const char *subject, ...);
double lab_median(const lab_series *s);
double lab_min(const lab_series *s);
double lab_max(const lab_series *s);
/* The median of extra metric name, or NAN. */
double lab_extra_median(const lab_row *r, const char *name);
/* The value of a param (JSON text), or NULL. */
const char *lab_param_get(const lab_row *r, const char *key);

/* The row of an in-process allocator: version and flags filled in, and "not
 * available" with the adapter's reason when it did not load. */
struct lab_allocator;
lab_row *lab_row_for(const char *experiment, const struct lab_allocator *a, const lab_params *ps);

/* v for a table: 3 significant digits (or a thousands-grouped integer for
 * large values); "-" for NaN. buf holds at least 32 bytes. */
const char *lab_fmt(double v, char *buf);
/* The median of a row as lab_fmt prints it; "n/a" for an unavailable row. */
const char *lab_fmt_row(const lab_row *r, char *buf);

/* Every row, in the order made. */
int lab_row_count(void);
lab_row *lab_row_at(int i);
/* Whether row i is the first of its experiment with its subject (a
 * table's line per subject, in the order rows were made). */
int lab_row_first_of_subject(int i);

/* The median of a row, or NaN where there is none (no row, not available,
 * nothing measured): a table's cell. */
double lab_row_median(const lab_row *r);

/* ---- the machine line, tables, results.json (results.c) ------------------- */

/* Reads the machine (CPU, cores, memory, OS, compiler and flags) once. */
void lab_machine_probe(void);
/* "machine: CPU, N cores, M GiB; OS; compiler, flags; poolkit VERSION" */
void lab_machine_line(FILE *out);
/* Writes results.json for the experiments done so far (atomically: a
 * temporary file renamed over path). 0 or -1. */
struct lab_experiment;
int lab_write_results(const char *path, const struct lab_experiment *const *done, const double *secs,
                      int ndone, const char *command, double seconds);

/* Starts a contender's line of a table: "  SUBJECT" padded to width. An
 * adapter that did not load gets " n/a: WHY" and the line ends there.
 * Returns the adapter when its cells follow, else NULL (an unknown subject
 * prints nothing). */
struct lab_allocator *lab_table_subject(FILE *out, const char *subject, int width);

/* A target judged over an experiment's points: the line of each point's
 * figures, and whether every ratio that was measured meets the bound. */
typedef struct lab_target {
    char line[512];
    int any; /* a ratio was measured */
    int met; /* every measured ratio is at most the bound */
} lab_target;
#define LAB_TARGET_INIT {"", 0, 1}
/* Adds a point: fmt's text to the line (after sep from the second point
 * on), and ratio against most unless it is NaN. */
void lab_target_add(lab_target *t, const char *sep, double ratio, double most, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* "not measured", "met" or "not met". */
const char *lab_target_verdict(const lab_target *t);

/* Hardened pools against the default pool, side by side in one
 * run. The experiments that judge it (peers' hot loop, workset,
 * steady-state, binary-trees, threads' producer/consumer) run the hardened
 * pool beside the default one and give its rows the extra LAB_VS_POOL: in
 * each repetition, its time over the default pool's time measured in that
 * same repetition (so the extra's median is the median of the
 * repetitions' ratios, each from two measurements made side by side). */
#define LAB_PK_POOL "poolkit pk_pool"
#define LAB_PK_HARDENED "poolkit pk_pool HARDENED"
#define LAB_VS_POOL "vs_pk_pool"
/* The median of row's LAB_VS_POOL, or NaN (no row, not available, none). */
double lab_vs_pool(const lab_row *row);

/* ---- the running experiment ------------------------------------------------- */

typedef struct lab_experiment {
    const char *name;
    const char *title;
    const char *unit;
    double weight;                     /* seconds per repetition at default scale, for the ETA */
    void (*published)(void);           /* adds the study's own figures */
    void (*run)(int rep);              /* one repetition (rep < 0: the warm-up) */
    void (*print)(FILE *out);          /* the table, in the study's style */
    /* `pk-lab child NAME ARG...` (lab_fresh_child): one measurement in a
     * process of its own; writes its line to LAB_CHILD_FD; 0 or an exit
     * status. NULL for the experiments that need none. */
    int (*child)(int argc, char **argv);
} lab_experiment;

extern const lab_experiment *const lab_experiments[];
extern const int lab_experiment_count;

/* The thread-safe allocators that the thread experiments compare
 * (exp_threads.c and the thread shapes), in table order: pk_pool last. */
extern const char *const lab_thread_contenders[];
#define LAB_THREAD_NCONT 6
/* The same, then LAB_PK_HARDENED: for the experiments that judge hardened
 * pools (steady-state, threads' producer/consumer), not the other shapes, which
 * it would only lengthen. */
extern const char *const lab_thread_contenders_hardened[];
#define LAB_THREAD_NCONT_HARDENED (LAB_THREAD_NCONT + 1)

/* One point of an experiment, to be measured for each contender in turn
 * (lab_each_contender, contenders.c). */
#define LAB_POINT_OUT 8
typedef struct lab_point {
    const char *experiment;
    lab_params params;  /* the rows' */
    char detail[64];    /* for the progress line */
    int i, j;           /* the point in the experiment's own tables */
    /* Whether a has the kernel that measure runs. */
    int (*has)(const struct lab_allocator *a);
    /* One measurement into out[0..LAB_POINT_OUT-1]: 0, or -1 if it failed. */
    int (*measure)(struct lab_allocator *a, const struct lab_point *pt, double *out);
    /* Fills row with a measurement (never called during the warm-up). */
    void (*record)(lab_row *row, int rep, const struct lab_point *pt, const double *out);
} lab_point;
/* Measures pt for each of the n contenders (subjects), in the order rotated
 * by rep (A B C, then B C A, ...), so that drift hits all of them alike.
 * Outside the warm-up (rep < 0: measured, not recorded) each contender gets
 * its row, "not available" for an adapter that did not load; one without
 * the kernel (has) is skipped; a failed measurement records nothing. */
void lab_each_contender(const lab_point *pt, const char *const *contenders, int n, int rep);
/* lab_each_contender, then, where LAB_PK_HARDENED and LAB_PK_POOL were
 * both measured at pt in this repetition, the hardened row gets LAB_VS_POOL
 * for it: its sample over the default pool's, or the default's over its own
 * where inverse (the samples are throughputs, and the ratio is of times). */
void lab_each_contender_vs_pool(const lab_point *pt, const char *const *contenders, int n,
                                int rep, int inverse);

/* Progress: what runs now (contender and detail), for the progress line. */
void lab_progress(const char *subject, const char *detail);
/* 1 during the warm-up pass: record nothing, and the run may be shortened. */
extern int lab_warming;
/* During the warm-up, n / 10 (at least 1); else n. */
long lab_warm(long n);

/* The flags pk-lab was compiled with, and the compiler ("gcc 12.2.0"). */
const char *lab_flags(void);
const char *lab_compiler(void);
/* The version of a Debian package ("5.3.0-1"), or "" (cached). */
const char *lab_deb_version(const char *package);
/* poolkit's version and how it is linked. */
const char *lab_poolkit_version(void);

/* A scratch folder inside the report folder (made on first use). */
const char *lab_scratch_dir(void);

/* pk-lab's executable's path (lab_opt.self where /proc/self/exe cannot be
 * read), into out. */
const char *lab_self_exe(char *out, size_t len);
/* The program `name` in the folder of pk-lab's executable, into out. */
const char *lab_beside_self(const char *name, char *out, size_t len);

/* Peak RSS in a forked child: fn(arg, out) runs in the child and fills
 * out[0..n-1]; out[n] gets the child's peak RSS growth in KiB. 0 or -1. */
typedef void (*lab_child_fn)(void *arg, double *out);
int lab_in_child(lab_child_fn fn, void *arg, double *out, int n);
/* After fork: closes the pipe's write end, reads what the child pid wrote
 * to it (up to len - 1 bytes, until its end) into line, closes it, and
 * reaps the child; returns waitpid's status (pid < 0: one of exit 127). */
int lab_child_report(pid_t pid, int pipe_fds[2], char *line, size_t len);
/* Starts path with argv, the child's descriptor to[i] a copy of from[i]
 * (i < n, each from[i] then closed in the child, as is close_fd when it is
 * not -1), in a process group of its own when group: posix_spawn, which
 * copies no page table (glibc starts the child as vfork does). A fork
 * would turn every page of pk-lab's own in-process rows copy-on-write, and
 * their next repetition would fault each page in again: the external
 * programs run between the repetitions of autorelease-sweep made its
 * 1,000,000-per-pool row 2.5-4x slower so. The pid, or -1 with errno. */
pid_t lab_spawn(const char *path, char *const argv[], const int *from, const int *to, int n, int close_fd,
                int group);
/* One measurement in a fresh pk-lab process: starts (lab_spawn) this program as
 * `pk-lab child EXPERIMENT ARG...` (its lab_experiment's child) with a
 * pipe on LAB_CHILD_FD, and reads the one line the child writes there into
 * line (up to len - 1 bytes). A forked child alone would inherit what the
 * lab's earlier experiments left in each allocator (free memory, resident
 * and reused without counting as growth); a fresh process starts from
 * nothing, as a program does. 0, or -1 if the child failed or wrote
 * nothing. pk-lab only (bench/'s programs have no `child` command). */
#define LAB_CHILD_FD 3
int lab_fresh_child(const char *experiment, int nargs, const char *const *args, char *line, size_t len);
/* A row of a measurement made by lab_fresh_child: marked not available,
 * with why, when its allocator is not (available 0), or failed when the
 * child was not ok; 1 when it takes the sample. */
int lab_child_row_ready(lab_row *row, int available, const char *why, int ok);

/* `pk-lab realprog-hook ...`: one hooks workload of the real-program
 * experiment in a process of its own (exp_realprog.c). */
int lab_realprog_hook_main(int argc, char **argv);
/* `pk-lab advise-costs SIZE...`: each style's cost per allocation, as JSON (advise_costs.c). */
int lab_advise_costs_main(int argc, char **argv);

/* poolkit's own account of a run, read back from its JSON report
 * (pk_stats_print, docs/stats.schema.json): begin before the contender
 * opens, end before it closes; end writes out[0], the most its pools and
 * arenas held from the system at once during the run, and out[1], what
 * they held at the end, in KiB, both net of what the process held at begin
 * (NaN when the report cannot be read). */
typedef struct lab_pk_memory {
    double base_kib;
} lab_pk_memory;
void lab_pk_memory_begin(lab_pk_memory *m);
void lab_pk_memory_end(const lab_pk_memory *m, double *out);

/* ---- allocators ------------------------------------------------------------
 *
 * One adapter per peer (peer_*.c): a name, what ran (version), whether it is
 * available and why not, and kernels compiled against it with direct calls
 * (kernels.h), so that no indirect call stands between the loop and the
 * allocator that the allocator itself does not bring (dlopen'ed peers are
 * called through a pointer, as any shared library is).
 */
struct lab_spsc;
struct lab_batchq; /* kernels_shapes.h */
struct workset_stats; /* workset.h */

typedef struct lab_pattern_stats {
    long allocs;
    long peak_live;
} lab_pattern_stats;

typedef struct lab_allocator {
    const char *subject;       /* "glibc malloc", "poolkit pk_pool" */
    const char *family;        /* "peer" or "poolkit" */
    char version[128];
    int available;
    char why[300];
    int frees_each;            /* 0: free is a no-op; the kernels reset in bulk */
    int thread_safe;           /* usable in the threads experiment */
    void (*load)(struct lab_allocator *self);
    /* A context for objects of size bytes (a pool, an arena, a heap handle). */
    void *(*open)(size_t size);
    void (*close)(void *ctx);
    /* Kernels: each returns nanoseconds for the timed part. */
    double (*hot)(void *ctx, size_t size, long n);
    double (*batch)(void *ctx, size_t size, long n, long per_batch, const uint32_t *order);
    double (*pattern)(void *ctx, size_t size, long rounds, lab_pattern_stats *st);
    /* The working-set kernel (workset.h): order is a workset_order, perm a
     * permutation of 0..n-1, objs room for n pointers (workset_objs). */
    double (*workset)(void *ctx, size_t size, long n, int order, const uint32_t *perm,
                      void **objs, long phases, double cap_ns, struct workset_stats *st);
    /* Thread workloads (thread_safe only; kernels.h and exp_threads.c). */
    void (*churn)(void *ctx, size_t size, long n, uint64_t seed);
    void (*pc)(void *ctx, size_t size, long n, struct lab_spsc *in, struct lab_spsc *out);
    /* The thread shapes (thread_safe only; kernels_shapes.h, measure_shapes.c). */
    double (*steady)(void *const *ctxs, void **objs, uint8_t *sizes, long n, long rounds,
                     unsigned lo, unsigned hi, uint64_t seed);
    double (*scratch)(void *ctx, size_t size, void *handed, long iterations, long repetitions);
    void (*xproduce)(void *ctx, size_t size, struct lab_batchq *q, long batches);
    void (*xconsume)(void *ctx, size_t size, struct lab_batchq *q);
    double (*manypools)(void *const *ctxs, long npools, long per_pool, size_t size, void **objs,
                        int release);
    void *(*one_alloc)(void *ctx, size_t size); /* untimed set-up: one object, touched */
    void (*one_free)(void *ctx, void *p, size_t size);
} lab_allocator;

/* "NAME VERSION (Debian X)" into out, for an adapter's version; version
 * starts with a space or is "". (Adapters load libraries at run time with
 * shared_dlopen and shared_dlsym, shared.h.) */
void lab_version_line(char *out, size_t len, const char *name, const char *version,
                      const char *package);

/* The two mimallocs (peer_malloc.c): Debian's 2.0.9 and PyPI's 3.4.
 * Neither is best at everything, so a target that compares to mimalloc
 * compares to the faster of the two at each point (lab_better_row). */
#define LAB_MIMALLOC "mimalloc"
#define LAB_MIMALLOC3 "mimalloc 3"
/* The libmimalloc.so.3 of PyPI's cmeel-mimalloc wheel in the project's
 * .venv (LAB_SOURCE_DIR/.venv/lib/python3.N/site-packages/cmeel.prefix/
 * lib/), or the file PK_LAB_MIMALLOC3 names; NULL with the reason in why
 * when there is none. */
const char *lab_mimalloc3_path(char *why, size_t len);
/* "mimalloc 3.4.3 (PyPI cmeel-mimalloc 3.4.3)": the library's own
 * version and the wheel's. */
void lab_mimalloc3_version(void *lib, char *out, size_t len);
/* Of two rows of one point, the one with the lower median (the faster for
 * a time, the smaller for memory), or the one measured; NULL if neither. */
lab_row *lab_better_row(lab_row *a, lab_row *b);

/* Every adapter, loaded (available or not), in report order. */
lab_allocator **lab_allocators(void);
/* By subject, or NULL. */
lab_allocator *lab_allocator_named(const char *subject);

/* ---- measurements bench/'s programs share -----------------------------------
 *
 * What an experiment measures for one point, callable alone, so that
 * `make bench` runs the lab's code and prints its own targets over it. */

/* The working set (exp_workset.c, workset.h), in a forked child: out[0] ns
 * per pair, [1] faults in the first phase, [2] faults per repeated phase,
 * [3] pairs timed, [4] and [5] poolkit's report of its memory
 * (lab_pk_memory_end; NaN for the peers), [6] peak RSS growth in KiB.
 * 0, or -1 if the child failed. */
int lab_workset_measure(lab_allocator *a, size_t size, long n, int order, const uint32_t *perm,
                        long phases, double cap_ns, double *out);
/* The fixed random order of n objects (seed 0x5eed), made once per n. */
const uint32_t *lab_workset_perm(long n);
/* The pool pattern (exp_pool_pattern.c), in a forked child: out[0] ns for
 * the rounds (median of at least 3 runs after a warm-up), [1] allocations
 * and [2] peak live objects per run, [3] and [4] poolkit's report as above,
 * [5] peak RSS growth in KiB. 0 or -1. */
int lab_pattern_measure(lab_allocator *a, size_t bytes, long rounds, double *out);
/* The threads experiment (exp_threads.c), in this process: workload 0 is
 * producer/consumer, 1 churn; threads threads on one context of a; n
 * objects per thread. Millions of objects per second, all threads together. */
double lab_threads_measure(lab_allocator *a, int workload, int threads, long n, size_t size);

/* The thread shapes (measure_shapes.c, kernels_shapes.h), each in a
 * forked child with threads threads on contexts opened there; 0, or -1 if
 * the child failed.
 *
 * Steady state after larson: each thread a live set of live objects of lo
 * to hi bytes (one context per 16-byte class), rounds random replacements,
 * then its set handed to a fresh thread, gens generations. out[0] ns per
 * pair per thread (the generations' spans over their rounds), [1] peak RSS
 * growth in KiB. */
int lab_steady_measure(lab_allocator *a, int threads, long live, unsigned lo, unsigned hi,
                       long rounds, int gens, double *out);
/* Hoard's cache-scratch: the main thread allocates one object of size bytes
 * per worker and hands it over; each worker frees it, then allocates,
 * writes and frees one object at a time (iterations x repetitions x size
 * writes). out[0] CPU ns per byte written per worker (a write that waits
 * for a line stalls the core, so it counts; a wait for a core does not),
 * [1] the span in ns, [2] the workers' CPU time over the span (about the
 * number that ran at once); of up to five runs, the one where the workers
 * overlapped most (false sharing needs them to run at once). control
 * (a ignored): the same writes with no allocator, each worker's object at a
 * fixed place, LAB_SCRATCH_SIDE_BY_SIDE (sharing lines) or
 * LAB_SCRATCH_LINES_APART: whether this machine shows false sharing. */
enum { LAB_SCRATCH_ALLOCATOR, LAB_SCRATCH_SIDE_BY_SIDE, LAB_SCRATCH_LINES_APART };
#define LAB_SCRATCH_APART 256
int lab_scratch_measure(lab_allocator *a, int threads, size_t size, long iterations,
                        long repetitions, int control, double *out);
/* xmalloc-test: pairs producers and pairs consumers, batches batches of
 * LAB_BATCH objects of size bytes per producer. out[0] ns per object (the
 * span over all objects), [1] peak RSS growth in KiB. */
int lab_xmalloc_measure(lab_allocator *a, int pairs, size_t size, long batches, double *out);
/* Many pools: npools contexts of size bytes, shared by threads threads that
 * each allocate per_pool objects from every one and hold them. out[0] RSS
 * growth, [1] and [2] poolkit's reserved and resident bytes (net of before;
 * NaN for the peers), all in bytes per thread per pool, measured while the
 * threads hold their objects (and their caches); [3] ns per allocation; [4]
 * peak RSS growth in KiB. */
int lab_manypools_measure(lab_allocator *a, int threads, long npools, long per_pool, size_t size,
                          double *out);

/* ---- the contender programs (external.c) ------------------------------------ */

/* Runs each contender program that lists experiment once (one repetition),
 * merging its lines into the rows. rep < 0: the warm-up call (results
 * dropped). */
void lab_external_run(const char *experiment, int rep);
/* Adds "not available" rows for the subjects of experiment that no program
 * provides (program missing, or not listing them). Called once per experiment. */
void lab_external_fill(const char *experiment);
/* Why the program that provides rows of experiment could not give them all
 * (missing, or its last failure), or NULL. */
const char *lab_external_why(const char *experiment);
/* Prints the experiments and subjects the programs list (for `pk-lab list`). */
void lab_external_list(FILE *out, const char *experiment);

#ifdef __cplusplus
}
#endif
#endif
