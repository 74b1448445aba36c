/* Whether the hot loop's speed depends on where things land: the lab's hot
 * kernel (allocate, touch 1 byte, free) over each of 1,000 pools of one
 * process, and over one pool in each of 20 fresh processes (each its own
 * address-space layout). A core whose inline paths reload words that the
 * caller's stores may alias runs some placements several times slower than
 * others; this prints min / median / max over pools and over processes,
 * and pool #1000 against pool #1.
 *
 * The naive inlined list (bench/naive_global.h) runs beside each pool in
 * the same repetition, and each pool's figure is also taken as the median
 * of its per-repetition ratios to it: on a shared machine a process can
 * run at half speed for its whole life (a busy neighbour), which moves
 * both alike. The targets are read from those ratios; the ns figures are
 * printed beside.
 *
 * Usage: bench_spread [--reps N] [--quick] [--pools N] [--procs N] [--size B]
 *                     [--iters N]
 */
#include "harness.h"

#include <poolkit/pool.h>

#include <spawn.h>

#define K_NAME pk
#define K_ALLOC(c, sz) pk_pool_alloc((pk_pool *)(c))
#define K_FREE(c, p, sz) pk_pool_free((pk_pool *)(c), (p))
#include "kernels.h"
#undef K_NAME
#undef K_ALLOC
#undef K_FREE

#include "naive_global.h"

#define K_NAME naive
#define K_ALLOC(c, sz) naive_alloc(sz)
#define K_FREE(c, p, sz) naive_free(p)
#include "kernels.h"

extern char **environ;

/* ns per pair of one run of the hot loop over pool (NULL: the naive list). */
static lab_allocator pk_a, naive_a;
static double hot(pk_pool *pool, size_t size, long iters) {
    if (!pool) {
        naive_reset();
        return naive_a.hot(NULL, size, iters) / (double)iters;
    }
    return pk_a.hot(pool, size, iters) / (double)iters;
}

static void summary(const char *what, const double *v, size_t n, const char *unit, double *med_out,
                    double *max_out) {
    double *s = malloc(n * sizeof *s);
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, shared__cmp_double);
    double med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    size_t slow = 0;
    for (size_t i = 0; i < n; i++) slow += v[i] > 1.5 * med;
    printf("  %-44s min %6.2f  median %6.2f  max %6.2f %-2s  max/median %.2fx  (%zu over 1.5x the median)\n",
           what, s[0], med, s[n - 1], unit, s[n - 1] / med, slow);
    if (med_out) *med_out = med;
    if (max_out) *max_out = s[n - 1] / med;
    free(s);
}

/* A child: one pool, reps interleaved with the naive list; prints both medians. */
static int child(const bench_opts *o, size_t size, long iters) {
    pk_pool *pool = pk_pool_create(&(pk_pool_config){.name = "spread", .size = size});
    bench_series tp = {0}, tn = {0}, tr = {0};
    for (int rep = -1; rep < o->reps; rep++) {
        double a = hot(pool, size, iters), b = hot(NULL, size, iters);
        if (rep >= 0) bench_add(&tp, a), bench_add(&tn, b), bench_add(&tr, a / b);
    }
    printf("%.4f %.4f %.4f\n", bench_median(&tp), bench_median(&tn), bench_median(&tr));
    pk_pool_destroy(pool);
    return 0;
}

/* Runs argv[0] --child ... and reads its three medians. */
static int run_child(char **argv, double *pool_ns, double *naive_ns, double *ratio) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if (rc != 0) {
        close(fd[0]);
        return -1;
    }
    char buf[128] = "";
    ssize_t got = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
    buf[got] = 0;
    return sscanf(buf, "%lf %lf %lf", pool_ns, naive_ns, ratio) == 3 ? 0 : -1;
}

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 7);
    pk_fill(&pk_a);
    naive_fill(&naive_a);
    size_t size = (size_t)bench_arg_long(&o, "--size", 64);
    long npools = bench_arg_long(&o, "--pools", 1000), nprocs = bench_arg_long(&o, "--procs", 20);
    if (bench_arg_flag(&o, "--child")) return child(&o, size, bench_arg_long(&o, "--iters", 1000000));
    long iters = bench_arg_long(&o, "--iters", o.quick ? 20000 : 50000);
    if (npools < 2 || nprocs < 1) return 2;

    bench_header("spread: the hot loop (allocate, touch 1 byte, free) over many pools and processes", &o);
    printf("%zu B objects, default pools, inline paths, static library; ns per pair, each pool's "
           "median of %d repetitions of %ld pairs (the naive inlined list beside each)\n",
           size, o.reps, iters);

    pk_pool **pools = malloc((size_t)npools * sizeof *pools);
    double *pool_med = malloc((size_t)npools * sizeof(double)), *naive_med = malloc((size_t)npools * sizeof(double));
    double *ratio_med = malloc((size_t)npools * sizeof(double));
    bench_series *tp = calloc((size_t)npools, sizeof *tp), *tn = calloc((size_t)npools, sizeof *tn);
    bench_series *tr = calloc((size_t)npools, sizeof *tr);
    for (long i = 0; i < npools; i++) {
        pools[i] = pk_pool_create(&(pk_pool_config){.name = "spread", .size = size});
        if (!pools[i]) return 1;
        hot(pools[i], size, 16); /* each pool's slab and slot set up before timing */
    }
    for (int rep = -1; rep < o.reps; rep++)
        for (long i = 0; i < npools; i++) {
            double a = hot(pools[i], size, iters), b = hot(NULL, size, iters);
            if (rep >= 0) bench_add(&tp[i], a), bench_add(&tn[i], b), bench_add(&tr[i], a / b);
        }
    for (long i = 0; i < npools; i++) {
        pool_med[i] = bench_median(&tp[i]);
        naive_med[i] = bench_median(&tn[i]);
        ratio_med[i] = bench_median(&tr[i]);
    }
    char what[96];
    double med_pools, spread_pools, med_procs = 0, spread_procs = 0;
    printf("\n%ld pools in one process\n", npools);
    snprintf(what, sizeof what, "pk_pool, over %ld pools", npools);
    summary(what, pool_med, (size_t)npools, "ns", NULL, NULL);
    summary("naive inlined list, beside each", naive_med, (size_t)npools, "ns", NULL, NULL);
    summary("pk_pool / naive list, each pool's median", ratio_med, (size_t)npools, "x", &med_pools, &spread_pools);
    double first = ratio_med[0], last = ratio_med[npools - 1];
    printf("  pool #%ld / pool #1 (each / the naive list): %.2fx / %.2fx = %.2fx (%.2f vs %.2f ns)\n", npools,
           last, first, last / first, pool_med[npools - 1], pool_med[0]);
    for (long i = 0; i < npools; i++) pk_pool_destroy(pools[i]);

    /* Processes: each a fresh exec, so a fresh layout of the pool, its slot and its slab. */
    char reps[16], sz[32];
    snprintf(reps, sizeof reps, "%d", o.reps);
    snprintf(sz, sizeof sz, "%zu", size);
    char *cargv[] = {argv[0], "--child", "--reps", reps, "--size", sz, NULL};
    double *pp = malloc((size_t)nprocs * sizeof(double)), *pn = malloc((size_t)nprocs * sizeof(double));
    double *pr = malloc((size_t)nprocs * sizeof(double));
    long got = 0;
    for (long i = 0; i < nprocs; i++)
        if (run_child(cargv, &pp[got], &pn[got], &pr[got]) == 0) got++;
    printf("\n%ld processes (%ld ran), one pool each\n", nprocs, got);
    if (got > 0) {
        snprintf(what, sizeof what, "pk_pool, over %ld processes", got);
        summary(what, pp, (size_t)got, "ns", NULL, NULL);
        summary("naive inlined list, in each", pn, (size_t)got, "ns", NULL, NULL);
        summary("pk_pool / naive list, each process's median", pr, (size_t)got, "x", &med_procs, &spread_procs);
    }

    printf("\n");
    bench_target(spread_pools <= 1.15, "hot loop spread over %ld pools in one process <= 1.15x "
                 "(max / median of each pool's ratio to the naive list): %.2fx (median %.2fx)", npools,
                 spread_pools, med_pools);
    if (got > 0)
        bench_target(spread_procs <= 1.15, "hot loop spread over %ld processes <= 1.15x (max / median "
                     "of each process's ratio to the naive list): %.2fx (median %.2fx)", got, spread_procs,
                     med_procs);
    bench_target(last / first <= 1.1, "hot loop pool #%ld <= 1.1x pool #1 (each against the naive list): "
                 "%.2fx", npools, last / first);
    return got == nprocs ? 0 : 1;
}
