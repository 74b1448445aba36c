/* realprog: does the allocator matter in a real program? (exp_realprog.c)
 *
 * Two kinds of workload, each run once per allocator in a process of its
 * own, the allocators interleaved within each repetition:
 *
 *   hooks    a library that takes an allocator (SQLite's SQLITE_CONFIG_MALLOC,
 *            libxml2's xmlMemSetup, jansson's json_set_alloc_funcs, expat's
 *            XML_ParserCreate_MM) driven by a workload written here the way
 *            programs use it (realprog_*.c), with the allocator's own
 *            functions plugged in: glibc's, mimalloc's (Debian's 2 and
 *            PyPI's 3), jemalloc's and tcmalloc's (loaded at run time) and
 *            poolkit's front end
 *            (pk_alloc, linked); the time of the workload in a forked child
 *            and the child's peak RSS growth.
 *   preload  an unchanged Debian program (jq, xmllint, sqlite3, perl,
 *            python3) over a generated input, with LD_PRELOAD naming each
 *            allocator's own preload library (none for glibc): wall time
 *            from spawn to exit, and the process's peak RSS.
 *
 * Every run's output is hashed (64-bit FNV-1a): a workload hashes what it
 * computed, a program its stdout. Every allocator must give glibc's hash.
 */
#ifndef PK_LAB_REALPROG_H
#define PK_LAB_REALPROG_H

#include <stddef.h>
#include <stdint.h>

/* One allocator's malloc-shaped functions, for the libraries' hooks. */
typedef struct rp_alloc {
    const char *subject; /* the lab's subject: "glibc malloc", "mimalloc", "mimalloc 3", ..., "poolkit pk_alloc" */
    const char *family;  /* "peer" or "poolkit" */
    char version[128];
    int available;
    char why[300];
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*realloc)(void *, size_t);
    void *(*calloc)(size_t, size_t);
    size_t (*usable)(void *); /* malloc_usable_size */
    void *(*aligned)(size_t, size_t); /* aligned_alloc: alignment, then size */
    /* LD_PRELOAD value for the preload workloads ("" for glibc), and why it
     * cannot be used (then the preload rows are "not available"). */
    char preload[512];
    char preload_why[300];
} rp_alloc;

#define RP_NALLOC 6
/* The allocators, in table order (glibc first: every hash is checked
 * against its own; then mimalloc 2 and 3, jemalloc, tcmalloc, poolkit),
 * loaded on first call. The malloc-shaped experiments (migrate,
 * larson-pace, large) compare the same ones, and the lab's malloc-shaped
 * adapters (peer_malloc.c) call the peers through this table. */
enum { RP_GLIBC, RP_MI, RP_MI3, RP_JE, RP_TC, RP_PK = RP_NALLOC - 1 };
rp_alloc *rp_allocs(void);

/* A process's own peak: rp_peak_begin resets the kernel's high-water mark
 * to the resident size now (/proc/self/clear_refs 5) and notes that size;
 * rp_peak_kib is how far the peak rose above it since, in KiB (NaN where
 * the mark could not be reset). For processes of their own: realprog's
 * hooks workloads and the malloc-shaped experiments' children. */
typedef struct rp_peak {
    double start; /* VmRSS at the reset, bytes */
    int reset;    /* 0: the mark was reset */
} rp_peak;
void rp_peak_begin(rp_peak *p);
double rp_peak_kib(const rp_peak *p);

/* In a fresh pk-lab child of a malloc-shaped experiment: allocator number
 * arg (a decimal index into rp_allocs()), available, its first call made
 * (so that its start-up is not counted), or NULL. */
const rp_alloc *rp_alloc_for_child(const char *arg);

/* The malloc-shaped experiments' loops (malloc_shapes.c), which bench's
 * programs run too (bench_mstress, bench_larson, bench_large), each in the
 * calling process with allocator a.
 *
 * migrate (exp_migrate.c): one iteration of mstress's loop at scale sc
 * (allocations per thread, x100 x 1..2); r is the main thread's random
 * state; last frees every object left in the shared array. */
#define LAB_MIGRATE_THREADS 2
#define LAB_MIGRATE_TRANSFERS 1000 /* the shared array's slots */
void lab_migrate_iteration(const rp_alloc *a, long sc, uint64_t *r, int last);
/* larson-pace (exp_larson_pace.c): 2 lanes of live blocks of 8-1,000 B,
 * steps replacements per generation, g generations a lane, each handed to
 * a new thread (handover) or all on one thread (the control). Returns ns
 * per replacement. */
#define LAB_LARSON_LANES 2
#define LAB_LARSON_MIN_SIZE 8
#define LAB_LARSON_MAX_SIZE 1000
double lab_larson_run(const rp_alloc *a, int handover, long g, long steps, long live);
/* large (exp_large.c): iters replacements of random blocks of 5-25 MiB in
 * 20 slots, each written in full, then every block freed. Sets *ns to the
 * loop's time; returns its minor page faults. */
#define LAB_LARGE_SLOTS 20
long lab_large_run(const rp_alloc *a, long iters, double *ns);
/* The large experiment's second shape, blocks replaced among many live
 * (exp_large.c, bench_large's "replaced" part): LAB_REPL_LIVE blocks of
 * LAB_REPL_MIN to LAB_REPL_MIN << LAB_REPL_DOUBLINGS bytes (lengths spread
 * evenly over the powers of two), made, then warm replacements untimed and
 * iters timed, each a random block replaced by a new one of a random
 * length with every page written; then every block freed (untimed). Sets
 * *ns to the timed loop's time; returns its minor page faults. */
#define LAB_REPL_LIVE 64
#define LAB_REPL_MIN ((size_t)64 << 10)
#define LAB_REPL_DOUBLINGS 7
long lab_replaced_run(const rp_alloc *a, long warm, long iters, double *ns);

/* The pages a loop writes one byte of, to have each page of a block in use:
 * p itself, then the first byte of each page after it up to p + len
 * (for (q = p; q < p + len; q = rp_next_page(q))). A loop that wrote at
 * p + k * RP_PAGE_STEP would write each allocator's pages at the place in
 * the page where its block starts, and that place alone decides the loop's
 * time, with no allocator in it (docs/results.md, "Where in its page a
 * write lands"); so every allocator's blocks are written at the same place
 * of each page but the first. */
#define RP_PAGE_STEP 4096
static inline char *rp_next_page(char *q) {
    return (char *)(((uintptr_t)q | (RP_PAGE_STEP - 1)) + 1);
}

/* FNV-1a over bytes, continuing from h (start with RP_HASH_INIT). */
#define RP_HASH_INIT 0xcbf29ce484222325ull
static inline uint64_t rp_hash(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}
static inline uint64_t rp_hash_u64(uint64_t h, uint64_t v) { return rp_hash(h, &v, sizeof v); }

/* A workload through a library's hook. scale multiplies the default size
 * (the lab's --smoke / --quick / --full). run installs a's functions as
 * the library's allocator (in a pk-lab process of its own: a library takes
 * its allocator once per process), does the work and returns its hash;
 * *ns gets the time of the work alone. input makes (untimed, in that
 * process, before run) what run reads, or is NULL. */
typedef struct rp_hook_workload {
    const char *name;     /* "sqlite", "libxml2", ... */
    const char *what;     /* one line for the report */
    const char *why;      /* NULL when built; else why it is not available */
    void (*input)(double scale);
    uint64_t (*run)(const rp_alloc *a, double scale, double *ns);
} rp_hook_workload;

extern const rp_hook_workload rp_sqlite, rp_libxml2, rp_jansson, rp_expat;
/* The hooks workloads in `pk-lab realprog-hook`'s numbering (W), NULL past
 * the last (RP_NHOOKS). */
#define RP_NHOOKS 4
const rp_hook_workload *rp_hook_at(int w);

/* Generated inputs shared by the workloads and the programs (realprog_input.c):
 * deterministic for a scale. A document of about `bytes` bytes. */
const char *rp_xml_document(size_t bytes, size_t *len);
const char *rp_json_document(size_t bytes, size_t *len);

/* ---- the programs (realprog_preload.c) ---- */

#define RP_NPROGRAMS 5
typedef struct rp_program {
    const char *name;    /* its name in the report */
    const char *path;    /* the executable Debian installs */
    const char *package; /* the Debian package that installs it */
    const char *what;    /* one line for the report */
} rp_program;
extern const rp_program rp_programs[RP_NPROGRAMS];

typedef struct rp_program_result {
    double ns;          /* fork to the end of wait4 */
    double peak_rss_kb; /* wait4's ru_maxrss */
    uint64_t hash;      /* of stdout */
    char why[600];      /* a failed run: what it said */
} rp_program_result;

/* Program i's argv (at most 8 words and NULL) and the file on its stdin
 * (or NULL), over the inputs rp_preload_inputs wrote: what pk-lab advise
 * runs (exp_advise.c). */
void rp_program_argv(int i, const char **argv, const char **stdin_path);

/* Writes every program's input into the run's scratch folder; 0, or -1
 * with the reason in why. */
int rp_preload_inputs(double scale, char *why, size_t len);
/* The programs' and workloads' sizes, as a fraction of the full ones, at
 * the run's scale (exp_realprog.c). */
double rp_scale(void);
/* Whether program i is installed; if not, why says which package. */
int rp_program_found(int i, char *why, size_t len);
/* Runs program i over its input with LD_PRELOAD=preload ("" for none);
 * 0, or -1 with res->why filled. */
int rp_program_run(int i, const char *preload, rp_program_result *res);

#endif
