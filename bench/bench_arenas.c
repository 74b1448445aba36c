/* Arenas per task (a realistic-scale program): a task creates an arena, makes 4,096
 * allocations of 32 B (touching each: one word written), and destroys the
 * arena; repeated. Against the same task on an APR pool (apr_pool_create_ex
 * as a child of one long-lived pool, apr_palloc, apr_pool_destroy: the way
 * servers use a pool per request), loaded at run time from libapr-1.so.0
 * ("not available" when absent).
 *
 * Rows: pk_arena_create(0) / pk_arena_alloc(a, 32, 0) / pk_arena_destroy,
 * and APR as above, which the target compares; for information, one arena
 * kept and pk_arena_reset per task, one APR pool kept and apr_pool_clear per
 * task, and malloc(32) for each allocation with every block freed at the end
 * of the task. Contenders interleaved within each repetition (the first
 * rotates), after a warm-up; ns per task and per allocation. Target:
 * pk_arena per task no slower than an APR pool per task (median of
 * per-repetition ratios <= 1.0).
 *
 * Then big requests: a kept arena, reset per round, takes BIG_ROUND bytes in
 * requests of 1 B to BIG_MAX (a fixed sequence; one word written per page
 * of each), against malloc and free of the same blocks and a kept APR pool
 * cleared per round; interleaved, us per round. Requests larger than a
 * chunk get chunks of their own. Targets: pk_arena no slower than malloc
 * and free, and within 1.1x a kept APR pool cleared per round (both keep
 * their memory, so the round's page writes dominate); medians of
 * per-repetition ratios.
 *
 * Usage: bench_arenas [--reps N] [--quick] [--tasks N]
 */
#include "harness.h"

#include <poolkit/arena.h>

#define TASK_ALLOCS 4096
#define OBJ_SIZE 32

/* APR, loaded here rather than through the lab's adapter: the task needs
 * APR's pool calls themselves, which the adapter keeps inside its kernels.
 * The loading is lab/shared.h's, as for every peer. */
typedef struct bench_apr {
    /* apr_status_t is an int; pools and allocators are opaque. */
    int (*pool_create_ex)(void **newpool, void *parent, int (*abort_fn)(int), void *allocator);
    void *(*palloc)(void *pool, size_t size);
    void (*pool_clear)(void *pool);
    void (*pool_destroy)(void *pool);
    char name[64]; /* "APR 1.7.2" */
    char why[160]; /* why not available, or "" */
} bench_apr;

/* Loads APR and calls apr_initialize; on failure a->pool_create_ex is NULL
 * and a->why says why. */
static inline void bench_apr_load(bench_apr *a) {
    memset(a, 0, sizeof *a);
    snprintf(a->name, sizeof a->name, "APR");
    void *lib = shared_dlopen("libapr-1.so.0", "libapr1", a->why, sizeof a->why);
    int (*initialize)(void) = NULL;
    const char *(*version)(void) = NULL;
    if (!lib || !shared_dlsym(lib, "apr_initialize", &initialize, a->why, sizeof a->why) ||
        !shared_dlsym(lib, "apr_pool_create_ex", &a->pool_create_ex, a->why, sizeof a->why) ||
        !shared_dlsym(lib, "apr_palloc", &a->palloc, a->why, sizeof a->why) ||
        !shared_dlsym(lib, "apr_pool_clear", &a->pool_clear, a->why, sizeof a->why) ||
        !shared_dlsym(lib, "apr_pool_destroy", &a->pool_destroy, a->why, sizeof a->why)) {
        a->pool_create_ex = NULL;
        return;
    }
    if (initialize() != 0) {
        snprintf(a->why, sizeof a->why, "apr_initialize failed");
        a->pool_create_ex = NULL;
        return;
    }
    if (shared_dlsym(lib, "apr_version_string", &version, NULL, 0))
        snprintf(a->name, sizeof a->name, "APR %s", version());
}

static bench_apr apr;
static void *apr_root;
static void *malloc_objs[TASK_ALLOCS];

/* One task's allocations: ALLOC is an expression giving OBJ_SIZE bytes (it
 * may use i, the allocation's index). */
#define TASK_BODY(ALLOC)                                            \
    for (size_t i = 0; i < TASK_ALLOCS; i++) {                      \
        char *p = (char *)(ALLOC);                                  \
        memcpy(p, &i, sizeof i); /* the touch: one word */          \
        BENCH_ESCAPE(p);                                            \
    }

static BENCH_KERNEL void tasks_pk_arena(long tasks) {
    for (long t = 0; t < tasks; t++) {
        pk_arena *a = pk_arena_create(0);
        if (!a) abort();
        TASK_BODY(pk_arena_alloc(a, OBJ_SIZE, 0))
        pk_arena_destroy(a);
    }
}

static BENCH_KERNEL void tasks_apr_pool(long tasks) {
    for (long t = 0; t < tasks; t++) {
        void *pool = NULL;
        if (apr.pool_create_ex(&pool, apr_root, NULL, NULL) != 0) abort();
        TASK_BODY(apr.palloc(pool, OBJ_SIZE))
        apr.pool_destroy(pool);
    }
}

static pk_arena *kept_arena;
static BENCH_KERNEL void tasks_pk_reset(long tasks) {
    for (long t = 0; t < tasks; t++) {
        TASK_BODY(pk_arena_alloc(kept_arena, OBJ_SIZE, 0))
        pk_arena_reset(kept_arena);
    }
}

static void *kept_pool;
static BENCH_KERNEL void tasks_apr_clear(long tasks) {
    for (long t = 0; t < tasks; t++) {
        TASK_BODY(apr.palloc(kept_pool, OBJ_SIZE))
        apr.pool_clear(kept_pool);
    }
}

static BENCH_KERNEL void tasks_malloc(long tasks) {
    for (long t = 0; t < tasks; t++) {
        TASK_BODY((malloc_objs[i] = malloc(OBJ_SIZE)))
        for (size_t i = 0; i < TASK_ALLOCS; i++) free(malloc_objs[i]);
    }
}

enum { C_PK, C_APR, C_PK_RESET, C_APR_CLEAR, C_MALLOC, NCONT };
static const char *const label[NCONT] = {
    "pk_arena per task (create/destroy)", "APR pool per task (create/destroy)",
    "pk_arena kept, reset per task (info)", "APR pool kept, clear per task (info)",
    "malloc/free each (info)",
};
static void (*const kernel[NCONT])(long) = {tasks_pk_arena, tasks_apr_pool, tasks_pk_reset,
                                             tasks_apr_clear, tasks_malloc};

#define BIG_ROUND ((size_t)8 << 20)
#define BIG_MAX ((size_t)1 << 20)
#define BIG_REQS 64 /* at most: BIG_ROUND's worth at the sequence's mean */

static size_t big_sizes[BIG_REQS * 4];
static size_t big_n;
static void *big_objs[BIG_REQS * 4];

static void big_sequence(void) {
    uint64_t x = 88172645463325252ull;
    for (size_t tot = 0; tot < BIG_ROUND && big_n < BIG_REQS * 4;) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        big_sizes[big_n] = 1 + x % BIG_MAX;
        tot += big_sizes[big_n++];
    }
}

/* One round: each request made by ALLOC (of big_sizes[i] bytes), a word
 * written per page. */
#define BIG_BODY(ALLOC)                                                \
    for (size_t i = 0; i < big_n; i++) {                               \
        char *p = (char *)(ALLOC);                                     \
        for (size_t k = 0; k < big_sizes[i]; k += 4096) p[k] = (char)i; \
        BENCH_ESCAPE(p);                                               \
    }

static BENCH_KERNEL void big_pk(long rounds) {
    for (long r = 0; r < rounds; r++) {
        BIG_BODY(pk_arena_alloc(kept_arena, big_sizes[i], 0))
        pk_arena_reset(kept_arena);
    }
}

static BENCH_KERNEL void big_malloc(long rounds) {
    for (long r = 0; r < rounds; r++) {
        BIG_BODY((big_objs[i] = malloc(big_sizes[i])))
        for (size_t i = 0; i < big_n; i++) free(big_objs[i]);
    }
}

static BENCH_KERNEL void big_apr(long rounds) {
    for (long r = 0; r < rounds; r++) {
        BIG_BODY(apr.palloc(kept_pool, big_sizes[i]))
        apr.pool_clear(kept_pool);
    }
}

/* The big requests' part; APR's row when have_apr. */
static void big_requests(const bench_opts *o, int have_apr, long rounds) {
    enum { B_PK, B_MALLOC, B_APR, NBIG };
    static const char *const names[NBIG] = {"pk_arena kept, reset per round", "malloc/free each",
                                            "APR pool kept, clear per round"};
    void (*const run[NBIG])(long) = {big_pk, big_malloc, big_apr};
    big_sequence();
    printf("\nbig requests: %zu requests of 1 B to %zu KiB (%zu MiB a round), a word written per page\n", big_n,
           BIG_MAX >> 10, BIG_ROUND >> 20);
    bench_series t[NBIG] = {{{0}, 0}}, ratio = {{0}, 0}, vs_apr = {{0}, 0};
    for (int rep = -1; rep < o->reps; rep++) {
        double v[NBIG] = {0};
        for (int j = 0; j < NBIG; j++) {
            int c = (j + (rep > 0 ? rep : 0)) % NBIG;
            if (c == B_APR && !have_apr) continue;
            double s = bench_now_ns();
            run[c](rep < 0 ? rounds / 4 + 1 : rounds);
            v[c] = (bench_now_ns() - s) / 1e3 / (double)(rep < 0 ? rounds / 4 + 1 : rounds);
        }
        if (rep < 0) continue;
        for (int c = 0; c < NBIG; c++) bench_add(&t[c], v[c]);
        bench_add(&ratio, v[B_PK] / v[B_MALLOC]);
        if (have_apr) bench_add(&vs_apr, v[B_PK] / v[B_APR]);
    }
    for (int c = 0; c < NBIG; c++)
        if (c == B_APR && !have_apr) bench_row_na(names[c], apr.why);
        else bench_row(names[c], &t[c], "us", "");
    double r = bench_median(&ratio), ra = have_apr ? bench_median(&vs_apr) : 0;
    char vs_apr_text[64] = "an APR pool cleared not measured (not available)";
    if (have_apr) snprintf(vs_apr_text, sizeof vs_apr_text, "%.3gx an APR pool cleared", ra);
    bench_target(r <= 1.0 && (!have_apr || ra <= 1.1),
                 "big requests (1 B to %zu KiB), an arena reset per round: %.3gx malloc and free of the same blocks "
                 "(target <= 1.0x), %s (target <= 1.1x: both keep their memory, and the "
                 "round's page writes dominate)",
                 BIG_MAX >> 10, r, vs_apr_text);
}

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 9);
    long tasks = bench_arg_long(&o, "--tasks", o.quick ? 500 : 2000);
    bench_header("an arena per task: 4,096 allocations of 32 B, pk_arena vs APR pools",
                 &o);
    bench_apr_load(&apr);
    if (apr.pool_create_ex &&
        (apr.pool_create_ex(&apr_root, NULL, NULL, NULL) != 0 ||
         apr.pool_create_ex(&kept_pool, apr_root, NULL, NULL) != 0)) {
        snprintf(apr.why, sizeof apr.why, "apr_pool_create_ex failed");
        apr.pool_create_ex = NULL;
    }
    int have_apr = apr.pool_create_ex != NULL;
    kept_arena = pk_arena_create(0);
    if (!kept_arena) return 1;
    printf("%ld tasks per run, %d allocations of %d B per task; %s\n", tasks, TASK_ALLOCS,
           OBJ_SIZE, have_apr ? apr.name : "APR: not available");

    bench_series t[NCONT] = {{{0}, 0}}, ratio = {{0}, 0};
    for (int rep = -1; rep < o.reps; rep++) {
        long n = rep < 0 ? tasks / 4 + 1 : tasks;
        double v[NCONT] = {0};
        for (int j = 0; j < NCONT; j++) {
            int c = (j + (rep > 0 ? rep : 0)) % NCONT;
            if (!have_apr && (c == C_APR || c == C_APR_CLEAR)) continue;
            double s = bench_now_ns();
            kernel[c](n);
            v[c] = (bench_now_ns() - s) / (double)n;
        }
        if (rep < 0) continue;
        for (int c = 0; c < NCONT; c++) bench_add(&t[c], v[c]);
        if (have_apr) bench_add(&ratio, v[C_PK] / v[C_APR]);
    }

    printf("\n  %-38s %10s %-5s %-25s  %s\n", "per task", "median", "", "[min - max]",
           "ns per allocation");
    for (int c = 0; c < NCONT; c++) {
        if (!have_apr && (c == C_APR || c == C_APR_CLEAR)) {
            bench_row_na(label[c], apr.why);
            continue;
        }
        char extra[48];
        snprintf(extra, sizeof extra, "%.2f", bench_median(&t[c]) / TASK_ALLOCS);
        printf("  %-38s %10.0f %-5s [%9.0f - %9.0f]  %s\n", label[c], bench_median(&t[c]), "ns",
               bench_min(&t[c]), bench_max(&t[c]), extra);
    }

    printf("\n");
    if (have_apr) {
        double r = bench_median(&ratio);
        bench_target(r <= 1.0,
                                "arena per task (4,096 x 32 B): pk_arena no slower than an APR "
                                "pool: %.2fx (%.1f vs %.1f us per task)",
                                r, bench_median(&t[C_PK]) / 1e3, bench_median(&t[C_APR]) / 1e3);
    } else {
        printf("target: arena per task (4,096 x 32 B): pk_arena no slower than an APR pool: "
               "not available (%s)\n", apr.why);
    }
    big_requests(&o, have_apr, o.quick ? 100 : 300);
    if (have_apr) apr.pool_destroy(apr_root);
    pk_arena_destroy(kept_arena);
    return 0;
}
