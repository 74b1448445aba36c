/* The hot loop against earlier builds of poolkit: today's library beside
 * the reference commits bench/refs.sh names (round one's, 28fd0a1, and
 * the previous release, 0.1.0, among them), so that a regression of the
 * fast path shows the day it happens.
 *
 * One source, compiled once per library by bench/refs.sh with the same
 * command line (only the include directory and the static library differ):
 * each copy measures a naive free list inlined in the caller and pk_pool,
 * default, PK_POOL_LOCAL and PK_POOL_HARDENED, at 16-256 B, allocating, touching one byte and
 * freeing (the body of the lab's hot kernel, lab/kernels.h; that header is
 * not included because its kernels need the lab, which links today's
 * library), and the object layer's pair, pk_new of a class with fields of
 * that size and pk_release. Every copy creates the same 21 pools (three
 * per size) and the same seven object size classes before it measures
 * anything.
 *
 * Today's copy also drives the run: each repetition starts every copy in
 * turn, each in a fresh process (A B C, then B C A, ...: the starting copy
 * rotates so that none is always first after a pause), and takes the
 * figures it prints. Ratios are medians of per-repetition ratios, so drift
 * on a noisy machine hits the copies alike. The API used (pk_pool_config
 * with .size and .flags, pk_pool_alloc/free inline, PK_POOL_LOCAL,
 * PK_POOL_HARDENED) is the same in every reference build. The
 * "no slower" targets judge the default and LOCAL pools; the hardened one's
 * ratios are printed beside them (its inline path is newer than the references).
 *
 * Usage (bench/refs.sh writes the command):
 *   hotloop_refs [--reps N] [--quick] [--iters N] [--lib LABEL=PROGRAM | --lib LABEL=!WHY | --lib LABEL=!!WHY]...
 *       the driver: today is this program, the --lib copies are references
 *       (LABEL a commit; "!WHY" prints the row as not available, "!!WHY" as
 *       a FAIL: a reference that should have run, its build or this
 *       program's compile against it broken)
 *   hotloop_refs --worker ITERS
 *       one pass over the sizes: "size naive default local hardened object" per line (ns)
 *   hotloop_refs --icount N SIZE
 *       for callgrind (--toggle-collect='refs_count_*', --dump-after=refs_count_X for each X):
 *       the empty loop, the naive list, default, LOCAL and HARDENED pools and
 *       pk_new+pk_release, N pairs each
 */
#include "harness.h"

#include <poolkit/object.h>
#include <poolkit/pool.h>

#define NSIZES 7
static const size_t sizes[NSIZES] = {16, 24, 48, 64, 72, 128, 256};

/* The reference: bench_hotloop.c's global free list (naive_global.h). */
#include "naive_global.h"

/* ---- the kernels: lab/kernels.h's hot loop over each contender ---- */

#define HOT_BODY(ALLOC, FREE)                                                                  \
    for (long i = 0; i < n; i++) {                                                             \
        char *p = (char *)(ALLOC);                                                             \
        p[0] = (char)i;                                                                        \
        BENCH_ESCAPE(p);                                                                       \
        FREE;                                                                                  \
    }

static BENCH_KERNEL double hot_naive(size_t size, long n) {
    double t0 = bench_now_ns();
    HOT_BODY(naive_alloc(size), naive_free(p))
    return bench_now_ns() - t0;
}
static BENCH_KERNEL double hot_pool(pk_pool *pool, long n) {
    double t0 = bench_now_ns();
    HOT_BODY(pk_pool_alloc(pool), pk_pool_free(pool, p))
    return bench_now_ns() - t0;
}
/* The object layer's pair over the same pools' code: pk_new of a class
 * whose fields are `size` bytes (zeroed, count 1), then pk_release. */
static BENCH_KERNEL double hot_object(const pk_class *cls, long n) {
    double t0 = bench_now_ns();
    HOT_BODY(pk_new(cls), pk_release(p))
    return bench_now_ns() - t0;
}

/* Untimed twins for callgrind: each call is counted alone (one dump each). */
static char empty_buf[64];
static BENCH_KERNEL void refs_count_empty(long n) { HOT_BODY((void *)empty_buf, (void)0) }
static BENCH_KERNEL void refs_count_naive(size_t size, long n) {
    HOT_BODY(naive_alloc(size), naive_free(p))
}
static BENCH_KERNEL void refs_count_default(pk_pool *pool, long n) {
    HOT_BODY(pk_pool_alloc(pool), pk_pool_free(pool, p))
}
static BENCH_KERNEL void refs_count_local(pk_pool *pool, long n) {
    HOT_BODY(pk_pool_alloc(pool), pk_pool_free(pool, p))
}
static BENCH_KERNEL void refs_count_hardened(pk_pool *pool, long n) {
    HOT_BODY(pk_pool_alloc(pool), pk_pool_free(pool, p))
}
static BENCH_KERNEL void refs_count_object(const pk_class *cls, long n) { HOT_BODY(pk_new(cls), pk_release(p)) }

/* ---- one copy's measurements ---- */

enum { K_NAIVE, K_DEFAULT, K_LOCAL, K_HARD, K_OBJECT, NKIND };
static const char *const kind_name[NKIND] = {"naive free list, inlined", "pk_pool default",
                                             "pk_pool LOCAL", "pk_pool HARDENED", "pk_new+pk_release"};
static const unsigned kind_flags[NKIND] = {0, 0, PK_POOL_LOCAL, PK_POOL_HARDENED, 0};

static pk_pool *pools[NSIZES][NKIND];
static pk_class classes[NSIZES];

static void make_pools(void) {
    for (int s = 0; s < NSIZES; s++) {
        classes[s] = (pk_class){"hotloop_refs", sizes[s], NULL};
        void *warm = pk_new(&classes[s]); /* its size class's pool, made now */
        pk_release(warm);
    }
    for (int s = 0; s < NSIZES; s++)
        for (int k = K_DEFAULT; k < K_OBJECT; k++) {
            pools[s][k] = pk_pool_create(&(pk_pool_config){
                .name = kind_name[k], .size = sizes[s], .flags = kind_flags[k]});
            if (!pools[s][k]) {
                fprintf(stderr, "pk_pool_create(size %zu) failed: %s\n", sizes[s], strerror(errno));
                exit(2);
            }
        }
}

static void drop_pools(void) {
    for (int s = 0; s < NSIZES; s++)
        for (int k = K_DEFAULT; k < K_OBJECT; k++) pk_pool_destroy(pools[s][k]);
}

/* The pairs of one contender at one size are run as CHUNKS short runs
 * (a fraction of a millisecond each), the contenders and sizes interleaved,
 * and the median chunk is printed: on a machine shared by more runnable
 * processes than cores, a run of several milliseconds loses whole
 * scheduler slices (a few ms each) to other processes, so its time jumps by
 * whole slices; a short chunk is either hit or not, and the median skips the
 * hit ones. A warm-up round (not printed) comes first. */
#define CHUNKS 31
static int worker(long iters) {
    static bench_series ns[NSIZES][NKIND];
    long n = iters / CHUNKS > 0 ? iters / CHUNKS : 1;
    make_pools();
    for (int round = -1; round < CHUNKS; round++)
        for (int s = 0; s < NSIZES; s++) {
            double v[NKIND];
            naive_reset();
            v[K_NAIVE] = hot_naive(sizes[s], n) / (double)n;
            v[K_DEFAULT] = hot_pool(pools[s][K_DEFAULT], n) / (double)n;
            v[K_LOCAL] = hot_pool(pools[s][K_LOCAL], n) / (double)n;
            v[K_HARD] = hot_pool(pools[s][K_HARD], n) / (double)n;
            v[K_OBJECT] = hot_object(&classes[s], n) / (double)n;
            for (int k = 0; k < NKIND && round >= 0; k++) bench_add(&ns[s][k], v[k]);
        }
    for (int s = 0; s < NSIZES; s++)
        printf("%zu %.4f %.4f %.4f %.4f %.4f\n", sizes[s], bench_median(&ns[s][K_NAIVE]),
               bench_median(&ns[s][K_DEFAULT]), bench_median(&ns[s][K_LOCAL]), bench_median(&ns[s][K_HARD]),
               bench_median(&ns[s][K_OBJECT]));
    drop_pools();
    return fflush(stdout) == 0 ? 0 : 1;
}

static int icount(long n, size_t size) {
    int s = 0;
    while (s < NSIZES - 1 && sizes[s] < size) s++;
    make_pools();
    /* Warm every path first (the first refills are not the loop's cost). */
    naive_reset();
    hot_naive(sizes[s], 1000);
    hot_pool(pools[s][K_DEFAULT], 1000);
    hot_pool(pools[s][K_LOCAL], 1000);
    hot_pool(pools[s][K_HARD], 1000);
    hot_object(&classes[s], 1000);
    refs_count_empty(n);
    refs_count_naive(sizes[s], n);
    refs_count_default(pools[s][K_DEFAULT], n);
    refs_count_local(pools[s][K_LOCAL], n);
    refs_count_hardened(pools[s][K_HARD], n);
    refs_count_object(&classes[s], n);
    drop_pools();
    return 0;
}

/* ---- the driver ---- */

#define MAX_LIBS 8
static struct lib {
    char label[64];
    const char *program; /* NULL: not available */
    const char *why;
    int broken; /* not available for a fault of this repository's: a FAIL */
} libs[MAX_LIBS];
static int nlibs;

/* Runs one copy's worker pass; fills ns[size][kind]. Returns 0 on success. */
static int run_worker(const char *program, long iters, double ns[NSIZES][NKIND]) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        char arg[32];
        snprintf(arg, sizeof arg, "%ld", iters);
        execl(program, program, "--worker", arg, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    FILE *in = fdopen(fd[0], "r");
    int got = 0;
    size_t size;
    double v[NKIND];
    while (in && fscanf(in, "%zu %lf %lf %lf %lf %lf", &size, &v[0], &v[1], &v[2], &v[3], &v[4]) == 6)
        if (got < NSIZES && size == sizes[got]) {
            memcpy(ns[got], v, sizeof v);
            got++;
        }
    if (in) fclose(in);
    else close(fd[0]);
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
    return got == NSIZES ? 0 : -1;
}

static int parse_lib(const char *arg) {
    const char *eq = strchr(arg, '=');
    if (!eq || nlibs == MAX_LIBS) return -1;
    struct lib *l = &libs[nlibs++];
    snprintf(l->label, sizeof l->label, "%.*s", (int)(eq - arg), arg);
    l->broken = eq[1] == '!' && eq[2] == '!';
    if (eq[1] == '!') l->why = eq + (l->broken ? 3 : 2);
    else l->program = eq + 1;
    return 0;
}

/* The worst (largest) median ratio over sizes and both pools, and where. */
typedef struct worst { double ratio; size_t size; int kind; } worst;
static void note_worst(worst *w, double r, size_t size, int kind) {
    if (r > w->ratio) *w = (worst){r, size, kind};
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--worker") == 0) return worker(atol(argv[2]));
    if (argc == 4 && strcmp(argv[1], "--icount") == 0)
        return icount(atol(argv[2]), (size_t)atol(argv[3]));

    bench_opts o = bench_parse(argc, argv, 9);
    long iters = bench_arg_long(&o, "--iters", o.quick ? 1000000 : 4000000);
    libs[nlibs++] = (struct lib){"today", "/proc/self/exe", NULL, 0};
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--lib") == 0 && (i + 1 >= argc || parse_lib(argv[++i]) != 0)) {
            fprintf(stderr, "usage: %s [--reps N] [--quick] [--iters N] [--lib LABEL=PROGRAM|LABEL=!WHY|LABEL=!!WHY]...\n",
                    argv[0]);
            return 2;
        }

    bench_header("hot loop against earlier builds: allocate, touch 1 byte, free (pk inline, static "
                 "library; one source compiled once per library)",
                 &o);
    printf("pairs per contender and size in each repetition: %ld, as %d interleaved chunks whose "
           "median is taken (a chunk that lost the CPU is skipped); ns per alloc+free pair; each "
           "repetition runs every build's copy in a fresh process, in turn; ratios are medians of "
           "per-repetition ratios\n",
           iters, CHUNKS);
    for (int l = 1; l < nlibs; l++)
        if (libs[l].program) printf("reference %s: %s\n", libs[l].label, libs[l].program);

    static bench_series t[MAX_LIBS][NSIZES][NKIND], vs_naive[MAX_LIBS][NSIZES][NKIND],
        vs_ref[MAX_LIBS][NSIZES][NKIND];
    for (int rep = 0; rep < o.reps; rep++) {
        static double ns[MAX_LIBS][NSIZES][NKIND];
        for (int j = 0; j < nlibs; j++) {
            int l = (rep + j) % nlibs;
            if (!libs[l].program) continue;
            if (run_worker(libs[l].program, iters, ns[l]) != 0) {
                fprintf(stderr, "%s --worker %ld failed\n", libs[l].program, iters);
                if (l == 0) return 1;
                libs[l].program = NULL;
                libs[l].why = "its program failed to run (run it with --worker 1000 to see why)";
                libs[l].broken = 1;
            }
        }
        for (int l = 0; l < nlibs; l++)
            for (int s = 0; s < NSIZES && libs[l].program; s++)
                for (int k = 0; k < NKIND; k++) {
                    bench_add(&t[l][s][k], ns[l][s][k]);
                    bench_add(&vs_naive[l][s][k], ns[l][s][k] / ns[0][s][K_NAIVE]);
                    /* today / this build, same pool kind, same repetition */
                    bench_add(&vs_ref[l][s][k], ns[0][s][k] / ns[l][s][k]);
                }
    }

    printf("\n  %-34s %10s %-5s %-25s  %s\n", "contender", "median", "", "[min - max]",
           "x naive inlined; today / this build");
    for (int s = 0; s < NSIZES; s++) {
        printf("size %zu B\n", sizes[s]);
        bench_row("naive free list, inlined", &t[0][s][K_NAIVE], "ns", "  1.00x");
        for (int l = 0; l < nlibs; l++)
            for (int k = K_DEFAULT; k < NKIND; k++) {
                char label[96], extra[96] = "";
                snprintf(label, sizeof label, "%.24s, %.60s", kind_name[k], libs[l].label);
                if (!libs[l].program) {
                    if (s == 0) bench_row_na(label, libs[l].why); /* once, not at every size */
                    continue;
                }
                int n = snprintf(extra, sizeof extra, "%6.2fx", bench_median(&vs_naive[l][s][k]));
                if (l > 0)
                    snprintf(extra + n, sizeof extra - (size_t)n, "  today %.2fx",
                             bench_median(&vs_ref[l][s][k]));
                bench_row(label, &t[l][s][k], "ns", extra);
            }
    }

    /* The naive list is the same code in every copy: its figures should
     * agree, or the copies differ in more than the library. */
    printf("\nnaive list in each copy, median over sizes of the median ns:");
    for (int l = 0; l < nlibs; l++) {
        if (!libs[l].program) continue;
        bench_series m = {0};
        for (int s = 0; s < NSIZES; s++) bench_add(&m, bench_median(&t[l][s][K_NAIVE]));
        printf(" %s %.2f", libs[l].label, bench_median(&m));
    }
    printf("\n\n");

    worst wn = {0, 0, 0};
    for (int s = 0; s < NSIZES; s++)
        for (int k = K_DEFAULT; k < K_HARD; k++) note_worst(&wn, bench_median(&vs_naive[0][s][k]), sizes[s], k);
    bench_target(wn.ratio <= 1.3, "hot loop, today <= 1.3x the naive inlined list, default and LOCAL, "
                 "16-256 B: worst %.2fx (%s, %zu B)", wn.ratio, kind_name[wn.kind], wn.size);
    /* "No slower": a median ratio within 3%, the spread of two identical
     * copies alternated on a shared machine. */
    for (int l = 1; l < nlibs; l++) {
        if (!libs[l].program) {
            printf("target: hot loop, today no slower than %s: not measured: %s%s\n", libs[l].label, libs[l].why,
                   libs[l].broken ? "  -> FAIL" : "");
            continue;
        }
        worst w = {0, 0, 0};
        for (int s = 0; s < NSIZES; s++)
            for (int k = K_DEFAULT; k < K_HARD; k++) note_worst(&w, bench_median(&vs_ref[l][s][k]), sizes[s], k);
        bench_target(w.ratio <= 1.03, "hot loop, today no slower than %s (today / it <= 1.03), default "
                     "and LOCAL, 16-256 B: worst %.2fx (%s, %zu B)", libs[l].label, w.ratio,
                     kind_name[w.kind], w.size);
        bench_series h = {{0}, 0};
        for (int s = 0; s < NSIZES; s++) bench_add(&h, bench_median(&vs_ref[l][s][K_HARD]));
        printf("  (informative) pk_pool HARDENED, today / %s, median over 16-256 B: %.2fx\n", libs[l].label,
               bench_median(&h));
        bench_series ob = {{0}, 0};
        for (int s = 0; s < NSIZES; s++) bench_add(&ob, bench_median(&vs_ref[l][s][K_OBJECT]));
        printf("  (informative) pk_new+pk_release (fields of the size), today / %s, median over 16-256 B: "
               "%.2fx\n", libs[l].label, bench_median(&ob));
    }
    return 0;
}
