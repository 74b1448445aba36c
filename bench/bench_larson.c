/* Threads that come and go, after larson (mimalloc-bench's larson-sized):
 * 2 lanes, each a live set of 5,000 blocks of 8 to 1,000 B; a lane's
 * thread replaces a random block 100,000 times (free, then malloc of a
 * random size, written), then starts the next thread of the lane, which
 * takes over the live set, and exits: 200 generations a lane, a new
 * thread every few milliseconds. The first live set is the main thread's.
 * A control runs the same replacements on one thread a lane (no handoff),
 * so what the handoffs cost shows apart from the steady state.
 *
 * The loop is the lab's larson-pace experiment's (lab_larson_run).
 * Contenders (bench/frontends.h): glibc malloc, mimalloc 2.0.9 and 3.4
 * (loaded at run time), poolkit's pk_alloc, each run in a forked child.
 * Reported: ns per replacement (both lanes' replacements over the run's
 * wall time), median of interleaved repetitions, and the child's peak RSS
 * growth. Target: pk_alloc at most 1.0x the faster mimalloc with handoffs
 * (median of per-repetition ratios, each to the faster in that
 * repetition), as the lab's larson-pace.
 *
 * Then a teardown, for the cost of frees with no allocation between
 * (informative, no target): blocks allocated on one thread, then all freed
 * in a random order (8-1,000 B, and 64 B) or in the order they were made
 * (64 B); ns per free, each contender in a forked child, medians of the
 * same interleaved repetitions.
 *
 * --in-process F runs contender F (0 glibc, 1 mimalloc, 2 poolkit, 3 mimalloc 3) alone,
 * without handoffs (--steps replacements a lane), in this process, and
 * prints its ns per replacement: for a tool that follows one process, as
 *   valgrind --tool=cachegrind --cache-sim=no --branch-sim=yes \
 *       build/bench/bench_larson --in-process 2 --steps 300000
 * (run at two --steps and take the difference for a figure per replacement).
 *
 * Usage: bench_larson [--reps N] [--quick] [--gens N] [--steps N] [--live N] [--teardown N] [--no-peers]
 *                     [--in-process F]
 */
#include "frontends.h"

static long live, steps;
static int gens;

typedef struct job {
    const frontend *fe;
    int handoff; /* 0: one thread a lane does every generation's replacements */
    int gens;
} job;

/* In a forked child: out[0] ns per replacement (the lab's loop,
 * lab_larson_run); out[1] (lab_in_child) peak RSS growth in KiB. */
static void child(void *arg, double *out) {
    const job *j = arg;
    out[0] = lab_larson_run(j->fe->a, j->handoff, j->gens, steps, live);
}

/* ---- teardown ---- */

static long teardown_n;

typedef struct teardown {
    const char *label;
    size_t min, max; /* block sizes */
    int shuffled;    /* random order, else the order of allocation */
} teardown;

static const teardown teardowns[] = {
    {"8-1000 B, random order", LAB_LARSON_MIN_SIZE, LAB_LARSON_MAX_SIZE, 1},
    {"64 B, random order", 64, 64, 1},
    {"64 B, in order", 64, 64, 0},
};
#define NTEARDOWN (int)(sizeof teardowns / sizeof teardowns[0])

typedef struct teardown_job {
    const frontend *fe;
    const teardown *td;
} teardown_job;

static uint64_t teardown_rng(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* In a forked child: out[0] ns per free of the frees' loop alone. */
static void teardown_child(void *arg, double *out) {
    const teardown_job *j = arg;
    const rp_alloc *a = j->fe->a;
    size_t n = (size_t)teardown_n;
    uint64_t rng = 42;
    void **blocks = malloc(n * sizeof *blocks);
    if (!blocks) abort();
    for (size_t i = 0; i < n; i++) {
        size_t size = j->td->min + teardown_rng(&rng) % (j->td->max - j->td->min + 1);
        char *b = a->malloc(size);
        if (!b) abort();
        b[0] = 1;
        blocks[i] = b;
    }
    if (j->td->shuffled)
        for (size_t i = n - 1; i > 0; i--) {
            size_t k = teardown_rng(&rng) % (i + 1);
            void *x = blocks[i];
            blocks[i] = blocks[k];
            blocks[k] = x;
        }
    double t0 = bench_now_ns();
    for (size_t i = 0; i < n; i++) a->free(blocks[i]);
    out[0] = (bench_now_ns() - t0) / (double)n;
    free(blocks);
}

static void run_teardowns(const bench_opts *o, frontend *fes) {
    printf("\nteardown: %ld blocks made on one thread, then all freed; ns per free (the frees' loop alone)\n",
           teardown_n);
    bench_series t[NTEARDOWN][FE_COUNT];
    memset(t, 0, sizeof t);
    for (int rep = -1; rep < o->reps; rep++)
        for (int d = 0; d < NTEARDOWN; d++)
            for (int c = 0; c < FE_COUNT; c++) {
                int f = (c + (rep > 0 ? rep : 0)) % FE_COUNT;
                if (fes[f].why[0]) continue;
                teardown_job j = {&fes[f], &teardowns[d]};
                double out[2];
                if (lab_in_child(teardown_child, &j, out, 1) != 0) {
                    snprintf(fes[f].why, sizeof fes[f].why, "the child process failed");
                    continue;
                }
                if (rep >= 0) bench_add(&t[d][f], out[0]);
            }
    for (int d = 0; d < NTEARDOWN; d++)
        for (int f = 0; f < FE_COUNT; f++) {
            char label[96];
            snprintf(label, sizeof label, "%s, %s", fes[f].label, teardowns[d].label);
            if (fes[f].why[0]) bench_row_na(label, fes[f].why);
            else bench_row(label, &t[d][f], "ns", "");
        }
}

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 5);
    gens = (int)bench_arg_long(&o, "--gens", o.quick ? 60 : 200);
    steps = bench_arg_long(&o, "--steps", 100000);
    live = bench_arg_long(&o, "--live", 5000);
    teardown_n = bench_arg_long(&o, "--teardown", 250000); /* the same at every scale: the blocks live at once stay few */
    bench_header("threads that come and go (larson shape): live sets handed to new threads", &o);
    printf("%d lanes x %d generations x %ld replacements of blocks of %d-%d B in a live set of %ld; "
           "each run a forked child; peak RSS = child's VmHWM - its VmRSS at start\n",
           LAB_LARSON_LANES, gens, steps, LAB_LARSON_MIN_SIZE, LAB_LARSON_MAX_SIZE, live);
    frontend fes[FE_COUNT];
    frontends_load(fes, bench_arg_flag(&o, "--no-peers"));
    long one = bench_arg_long(&o, "--in-process", -1);
    if (one >= 0) {
        if (one >= FE_COUNT || fes[one].why[0]) {
            printf("contender %ld not available\n", one);
            return 1;
        }
        printf("%s, no handoff, in this process: %.2f ns per replacement\n", fes[one].label,
               lab_larson_run(fes[one].a, 0, 1, steps, live));
        return 0;
    }
    bench_series t[2][FE_COUNT], rss[2][FE_COUNT], ratio = {{0}, 0};
    memset(t, 0, sizeof t);
    memset(rss, 0, sizeof rss);
    for (int rep = -1; rep < o.reps; rep++) {
        double v[FE_COUNT] = {0};
        for (int h = 1; h >= 0; h--)
            for (int c = 0; c < FE_COUNT; c++) {
                int f = (c + (rep > 0 ? rep : 0)) % FE_COUNT;
                if (fes[f].why[0]) continue;
                job j = {&fes[f], h, rep < 0 ? gens / 10 + 1 : gens};
                double out[2];
                if (lab_in_child(child, &j, out, 1) != 0) {
                    snprintf(fes[f].why, sizeof fes[f].why, "the child process failed");
                    continue;
                }
                if (rep < 0) continue;
                bench_add(&t[h][f], out[0]);
                bench_add(&rss[h][f], out[1]);
                if (h) v[f] = out[0];
            }
        int mi = frontends_best(fes, v);
        if (rep >= 0 && mi >= 0 && v[FE_POOLKIT] > 0) bench_add(&ratio, v[FE_POOLKIT] / v[mi]);
    }
    printf("\n  %-34s %10s %-5s %-25s  %s\n", "contender", "median", "", "[min - max]", "peak RSS growth (median)");
    for (int h = 1; h >= 0; h--)
        for (int f = 0; f < FE_COUNT; f++) {
            char label[80], extra[64];
            snprintf(label, sizeof label, "%s, %s", fes[f].label, h ? "handoffs" : "no handoff");
            if (fes[f].why[0]) {
                bench_row_na(label, fes[f].why);
                continue;
            }
            snprintf(extra, sizeof extra, "%8.1f MiB", bench_median(&rss[h][f]) / 1024.0);
            bench_row(label, &t[h][f], "ns", extra);
        }
    int mi = frontends_best_median(fes, t[1], 1);
    if (mi < 0 || ratio.n == 0) {
        printf("target: larson shape (handoffs): pk_alloc <= 1.0x the faster mimalloc: no mimalloc available  -> SKIP\n");
    } else {
        bench_target(bench_median(&ratio) <= 1.0,
                     "larson shape (handoffs): pk_alloc <= 1.0x the faster mimalloc: %.2fx per-run ratio median (%.1f "
                     "vs %.1f ns per replacement, %s; without handoffs %.1f vs %.1f)",
                     bench_median(&ratio), bench_median(&t[1][FE_POOLKIT]), bench_median(&t[1][mi]), fes[mi].label, bench_median(&t[0][FE_POOLKIT]),
                     bench_median(&t[0][mi]));
    }
    if (teardown_n > 0) run_teardowns(&o, fes);
    return 0;
}
