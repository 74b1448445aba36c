/* Threads and lines, the steady state, many pools: the lab's four thread
 * shapes (lab/kernels_shapes.h, measured by lab/measure_shapes.c, each
 * point in a forked child), over the lab's adapters: glibc malloc,
 * jemalloc, both mimallocs (Debian's 2.x, and PyPI's 3.x where the lab's
 * set-up installed it), tcmalloc (loaded at run time) and pk_pool. Each
 * target that names mimalloc compares with the faster of the two.
 *
 *   steady state    after larson: 2 threads, each with a live set of 1,000
 *                   or 100,000 objects (16-128 B, one pool per 16-byte
 *                   class; or 64 B), freeing a random one and allocating its
 *                   replacement, sets handed to fresh threads; ns per pair
 *                   per thread. Target: pk_pool <= 0.8x the faster mimalloc at every
 *                   scale. A PK_POOL_HARDENED pool runs here
 *                   too (in this shape only: the others have no hardened
 *                   target), at most 1.15x the default pool at every scale.
 *   cache-scratch   after Hoard: objects of 8-64 B handed to 2 workers, who
 *                   free them and write objects of their own; CPU ns per
 *                   byte written per worker, and a control with no allocator (the workers'
 *                   objects side by side, and apart) that says whether this
 *                   machine shows false sharing at all. Target: pk_pool
 *                   at most 1.05x the faster mimalloc.
 *   remote batches  after xmalloc-test: 1 producer and 1 consumer, batches of
 *                   4,096 x 64 B; ns per object. Target: pk_pool <= 0.6x
 *                   the faster mimalloc.
 *   many pools      1,000 pools x 10 objects of 64 B per thread, 1, 2 and 8
 *                   threads holding them: RSS growth and pk_pool's own
 *                   reserved and resident bytes, per thread per pool.
 *                   Target 8: within the bound the README states for
 *                   today's core (live + two cached batches per thread + one
 *                   64 KiB slab per pool shared by the threads).
 *
 * Contenders interleaved within each repetition, the first one rotating;
 * ratios are medians of per-repetition ratios. About a minute on a quiet
 * 2-core machine, --quick a third of that.
 *
 * Usage: bench_threads [--reps N] [--quick] [--only steady|scratch|batches|pools]
 *                      [--gens N] [--rounds N]   (the steady state's generations and
 *                      rounds per thread per generation)
 */
#include "harness.h"

#include <math.h>

/* C_HARD, after NCONT, runs in the steady state only. */
enum { C_GLIBC, C_JE, C_MI, C_MI3, C_TC, C_POOL, NCONT, C_HARD = NCONT, NALL };
static bench_contender cont[NALL] = {
    BENCH_CONTENDER("glibc malloc", "glibc malloc"), BENCH_CONTENDER("jemalloc", ""),
    BENCH_CONTENDER("mimalloc", ""),                 BENCH_CONTENDER(LAB_MIMALLOC3, ""),
    BENCH_CONTENDER("tcmalloc", ""),
    BENCH_CONTENDER("poolkit pk_pool", "pk_pool"),
    BENCH_CONTENDER("poolkit pk_pool HARDENED", "pk_pool HARDENED"),
};

static bench_opts o;

static int wanted(const char *part) {
    for (int i = 1; i + 1 < o.argc; i++)
        if (!strcmp(o.argv[i], "--only")) return !strcmp(o.argv[i + 1], part);
    return 1;
}

/* The rotating order of repetition rep among n contenders: contender k runs j-th. */
static int nth_of(int n, int rep, int j) { return (j + (rep > 0 ? rep : 0)) % n; }
static int nth(int rep, int j) { return nth_of(NCONT, rep, j); }

/* Both mimallocs (Debian's 2.x and, where the lab's set-up installed it,
 * PyPI's 3.x): each target compares with the faster of them in each
 * repetition (bench_faster), as neither is the faster everywhere. */
static int is_mi(int c) { return c == C_MI || c == C_MI3; }
/* Why neither mimalloc is measured, or NULL. */
static const char *mi_why(void) { return cont[C_MI].why && cont[C_MI3].why ? cont[C_MI].why : NULL; }

/* A row of medians with the per-repetition ratio to the faster mimalloc
 * beside (and, given, to the default pool). */
static void row2(int c, const bench_series *s, const bench_series *ratio,
                 const bench_series *ratio_pool, const char *unit) {
    char extra[64] = "";
    if (ratio && ratio->n) snprintf(extra, sizeof extra, "%.2fx the faster mimalloc", bench_median(ratio));
    if (ratio_pool && ratio_pool->n)
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), ", %.2fx the default pool",
                 bench_median(ratio_pool));
    if (cont[c].why) bench_row_na(cont[c].label, cont[c].why);
    else if (!s->n) bench_row_na(cont[c].label, "the child process failed");
    else bench_row(cont[c].label, s, unit, extra);
}

static void row(int c, const bench_series *s, const bench_series *ratio, const char *unit) {
    row2(c, s, ratio, NULL, unit);
}

/* ---- the steady state (the default and the hardened pool) ---- */

static int steady(void) {
    static const long lives[] = {1000, 100000};
    static const unsigned lo[] = {16, 64}, hi[] = {128, 64};
    /* --gens and --rounds: a long run, whose peak RSS growth must not grow
     * with the generations while the live sets do not */
    long rounds = bench_arg_long(&o, "--rounds", o.quick ? 60000 : 200000);
    int gens = (int)bench_arg_long(&o, "--gens", o.quick ? 2 : 3);
    /* ratio: to the faster mimalloc; hard: the hardened pool to the default one */
    bench_series t[4][NALL], ratio[4][NALL], hard[4], rss[4][NALL];
    memset(t, 0, sizeof t);
    memset(rss, 0, sizeof rss);
    memset(ratio, 0, sizeof ratio);
    memset(hard, 0, sizeof hard);
    for (int rep = -1; rep < o.reps; rep++) {
        for (int p = 0; p < 4; p++) {
            double v[NALL] = {0};
            for (int j = 0; j < NALL; j++) {
                int c = nth_of(NALL, rep, j);
                double out[2];
                if (cont[c].why ||
                    lab_steady_measure(cont[c].a, 2, lives[p / 2], lo[p % 2], hi[p % 2],
                                       rep < 0 ? rounds / 10 : rounds, gens, out) != 0)
                    continue;
                v[c] = out[0];
                if (rep >= 0) bench_add(&rss[p][c], out[1] / 1024);
            }
            if (rep < 0) continue;
            double mi = bench_faster(v, C_MI, C_MI3);
            for (int c = 0; c < NALL; c++) {
                if (v[c] > 0) bench_add(&t[p][c], v[c]);
                if (v[c] > 0 && mi > 0 && !is_mi(c)) bench_add(&ratio[p][c], v[c] / mi);
            }
            if (v[C_HARD] > 0 && v[C_POOL] > 0) bench_add(&hard[p], v[C_HARD] / v[C_POOL]);
        }
    }
    printf("\nsteady state (after larson): 2 threads, sets handed to fresh threads, %ld rounds "
           "per thread x %d generations; ns per free+allocate pair per thread\n", rounds, gens);
    int pass = 1, pass_hard = 1;
    char line[200] = "", line_hard[320] = "";
    for (int p = 0; p < 4; p++) {
        printf("  live %ld, %s\n", lives[p / 2], p % 2 ? "64 B" : "16-128 B (a pool per 16-byte class)");
        for (int c = 0; c < NALL; c++)
            row2(c, &t[p][c], is_mi(c) ? NULL : &ratio[p][c], c == C_HARD ? &hard[p] : NULL, "ns");
        printf("    peak RSS growth, MiB (median):");
        for (int c = 0; c < NALL; c++)
            if (rss[p][c].n) printf(" %s %.1f;", cont[c].subject, bench_median(&rss[p][c]));
        printf("\n");
        double r = bench_median(&ratio[p][C_POOL]);
        pass &= ratio[p][C_POOL].n > 0 && r <= 0.8;
        size_t n = strlen(line);
        snprintf(line + n, sizeof line - n, "%s%ld/%s %.2fx", n ? ", " : "", lives[p / 2],
                 p % 2 ? "64 B" : "16-128 B", r);
        double h = bench_median(&hard[p]);
        pass_hard &= hard[p].n > 0 && h <= 1.15;
        n = strlen(line_hard);
        snprintf(line_hard + n, sizeof line_hard - n, "%s%ld/%s %.2fx (%.1f vs %.1f ns)",
                 n ? ", " : "", lives[p / 2], p % 2 ? "64 B" : "16-128 B", h,
                 bench_median(&t[p][C_HARD]), bench_median(&t[p][C_POOL]));
    }
    if (mi_why()) pass = bench_skip("steady state: pk_pool <= 0.8x the faster mimalloc at every scale", mi_why());
    else pass = bench_target(pass, "steady state: pk_pool <= 0.8x the faster mimalloc at every "
                                   "scale: %s", line);
    pass_hard = bench_target(pass_hard, "steady state: PK_POOL_HARDENED <= 1.15x the "
                                        "default pool at every scale: %s", line_hard);
    return pass && pass_hard;
}

/* ---- target 7: cache-scratch ---- */

static int scratch(void) {
    static const size_t sizes[] = {8, 16, 32, 64};
    long writes = o.quick ? 2000000 : 8000000, iters = 1000;
    /* medians, and the run in which the workers overlapped most (best[]:
     * its CPU ns per byte, at[]: how many workers ran at once in it) */
    bench_series t[4][NCONT + 2];
    double best[4][NCONT + 2], at[4][NCONT + 2];
    memset(t, 0, sizeof t);
    memset(at, 0, sizeof at);
    for (int rep = -1; rep < o.reps; rep++) {
        for (int s = 0; s < 4; s++) {
            long reps = writes / (iters * (long)sizes[s]);
            for (int j = 0; j < NCONT + 2; j++) {
                int c = j < NCONT ? nth(rep, j) : j; /* the two controls last */
                int control = c < NCONT ? LAB_SCRATCH_ALLOCATOR
                              : c == NCONT ? LAB_SCRATCH_SIDE_BY_SIDE
                                           : LAB_SCRATCH_LINES_APART;
                double out[3];
                if ((c < NCONT && cont[c].why) ||
                    lab_scratch_measure(c < NCONT ? cont[c].a : NULL, 2, sizes[s],
                                        rep < 0 ? iters / 10 : iters, reps, control, out) != 0 ||
                    rep < 0)
                    continue;
                bench_add(&t[s][c], out[0]);
                if (out[2] > at[s][c]) at[s][c] = out[2], best[s][c] = out[0];
            }
        }
    }
    printf("\ncache-scratch (after Hoard): 2 workers free an object the main thread allocated, "
           "then write objects of their own, %ld iterations, about %ld writes each; CPU ns per "
           "byte written per worker; last column: the run in which the workers overlapped most "
           "(workers at once)\n", iters, writes);
    int met = 1, decided = 1;
    double side = 0, apart = 0;
    char line[240] = "";
    for (int s = 0; s < 4; s++) {
        printf("  %zu B objects\n", sizes[s]);
        for (int c = 0; c < NCONT + 2; c++) {
            const char *label = c < NCONT ? cont[c].label
                                : c == NCONT ? "control: side by side, no allocator"
                                             : "control: 256 B apart, no allocator";
            char extra[64];
            snprintf(extra, sizeof extra, "overlapped: %.2f ns (%.1f at once)", best[s][c], at[s][c]);
            if (c < NCONT && (cont[c].why || !t[s][c].n)) row(c, &t[s][c], NULL, "ns");
            else bench_row(label, &t[s][c], "ns", at[s][c] > 0 ? extra : "");
        }
        side += best[s][NCONT];
        apart += best[s][NCONT + 1];
        /* the faster mimalloc in its most overlapped run */
        double bm[NCONT + 2] = {0};
        for (int c = C_MI; c <= C_MI3; c++) bm[c] = at[s][c] > 0 ? best[s][c] : 0;
        int m = bm[C_MI3] > 0 && (bm[C_MI] <= 0 || bm[C_MI3] < bm[C_MI]) ? C_MI3 : C_MI;
        double r = best[s][C_POOL] / best[s][m];
        met &= at[s][C_POOL] > 0 && at[s][m] > 0 && r <= 1.05;
        decided &= at[s][C_POOL] >= 1.5 && at[s][m] >= 1.5;
        size_t n = strlen(line);
        snprintf(line + n, sizeof line - n, "%s%zu B %.2fx (median %.2fx)", n ? ", " : "",
                 sizes[s], r, bench_median(&t[s][C_POOL]) / bench_median(&t[s][m]));
    }
    int shows = apart > 0 && side / apart >= 1.5;
    printf("  false sharing on this machine (the controls, overlapped runs): side by side / apart "
           "= %.2fx: %s\n", apart > 0 ? side / apart : NAN,
           shows ? "it shows" : "it does not show, so the rows above cannot tell allocators apart");
    if (mi_why()) return bench_skip("cache-scratch: pk_pool <= 1.05x the faster mimalloc", mi_why());
    return bench_target(met, "cache-scratch: pk_pool <= 1.05x the faster mimalloc, in "
                             "the runs where the workers overlapped most: %s%s", line,
                        shows && decided ? "" : " (not decided here: the workers did not both "
                                                "run at once, or no false sharing shows)");
}

/* ---- target 7: remote batches ---- */

static int batches(void) {
    long nb = o.quick ? 32 : 100;
    bench_series t[NCONT], rss[NCONT], ratio = {{0}, 0};
    memset(t, 0, sizeof t);
    memset(rss, 0, sizeof rss);
    for (int rep = -1; rep < o.reps; rep++) {
        double v[NCONT] = {0};
        for (int j = 0; j < NCONT; j++) {
            int c = nth(rep, j);
            double out[2];
            if (cont[c].why || lab_xmalloc_measure(cont[c].a, 1, 64, rep < 0 ? nb / 4 : nb, out) != 0)
                continue;
            v[c] = out[0];
            if (rep >= 0) bench_add(&rss[c], out[1] / 1024.0);
        }
        if (rep < 0) continue;
        for (int c = 0; c < NCONT; c++)
            if (v[c] > 0) bench_add(&t[c], v[c]);
        double mi = bench_faster(v, C_MI, C_MI3);
        if (v[C_POOL] > 0 && mi > 0) bench_add(&ratio, v[C_POOL] / mi);
    }
    printf("\nremote batches (after xmalloc-test): 1 producer, 1 consumer, %ld batches of 4,096 x "
           "64 B; ns per object (peak RSS growth, MiB)\n", nb);
    for (int c = 0; c < NCONT; c++) {
        char extra[64];
        snprintf(extra, sizeof extra, "(%.1f MiB)", bench_median(&rss[c]));
        if (cont[c].why || !t[c].n) row(c, &t[c], NULL, "ns");
        else bench_row(cont[c].label, &t[c], "ns", extra);
    }
    if (mi_why()) return bench_skip("remote batches: pk_pool <= 0.6x the faster mimalloc", mi_why());
    int m = bench_faster_of(t, C_MI, C_MI3);
    return bench_target(ratio.n > 0 && bench_median(&ratio) <= 0.6,
                        "remote batches: pk_pool <= 0.6x the faster mimalloc: %.2fx (%.1f ns per "
                        "object; %s %.1f)", bench_median(&ratio), bench_median(&t[C_POOL]), cont[m].label,
                        bench_median(&t[m]));
}

/* ---- target 8: many pools ---- */

/* Today's core, from src/base/policy.h: a thread caches at most two batches per
 * pool (a batch: 16 KiB of objects, 4 to 128 of them), and a pool's slabs
 * come in 64 KiB granules, the first of which the threads share. So per
 * thread per pool: live + two batches + 64 KiB / threads. A redesign states
 * its own bound here and in the README. */
/* The third core's bound per thread per pool (docs/results.md; "Memory with many
 * pools"): each thread owns a slab of each pool it uses, 64 KiB of address
 * space (reserved), touched a page at a time as its objects are handed out
 * (EXTEND_BYTES), plus the thread's heap record, the slab's record and its
 * address-map entry (under 1 KiB together), and its share of the pool's
 * own record (a page per pool). So resident stays within the live bytes
 * rounded up to pages, RSS growth within that plus 1 KiB and a page over
 * the threads, and reserved within the live bytes rounded up to 64 KiB
 * slabs. */
static double resident_bound(int threads, size_t size, long per_pool) {
    double page = (double)sysconf(_SC_PAGESIZE), live = (double)per_pool * (double)size;
    return ceil(live / page) * page + 1024.0 + page / threads;
}

static double reserved_bound(size_t size, long per_pool) {
    double live = (double)per_pool * (double)size;
    return ceil(live / 65536.0) * 65536.0;
}

static int pools(void) {
    static const int threads[] = {1, 2, 8};
    const long npools = 1000, per_pool = 10;
    const size_t size = 64;
    bench_series rss[3][NCONT], res[3], rsd[3];
    memset(rss, 0, sizeof rss);
    memset(res, 0, sizeof res);
    memset(rsd, 0, sizeof rsd);
    for (int rep = 0; rep < o.reps; rep++) { /* memory: no warm-up needed */
        for (int k = 0; k < 3; k++) {
            for (int j = 0; j < NCONT; j++) {
                int c = nth(rep, j);
                double out[5];
                if (cont[c].why ||
                    lab_manypools_measure(cont[c].a, threads[k], npools, per_pool, size, out) != 0)
                    continue;
                bench_add(&rss[k][c], out[0]);
                if (c == C_POOL) {
                    bench_add(&res[k], out[1]);
                    bench_add(&rsd[k], out[2]);
                }
            }
        }
    }
    printf("\nmany pools: %ld pools x %ld objects of %zu B per thread, held by every thread; "
           "bytes per thread per pool (live %ld B)\n", npools, per_pool, size, per_pool * (long)size);
    for (int k = 0; k < 3; k++) {
        printf("  %d thread%s: RSS growth\n", threads[k], threads[k] == 1 ? "" : "s");
        for (int c = 0; c < NCONT; c++) row(c, &rss[k][c], NULL, "B");
        bench_row("pk_pool reserved (its own account)", &res[k], "B", "");
        bench_row("pk_pool resident (ever touched)", &rsd[k], "B", "");
    }
    double bound = resident_bound(8, size, per_pool), rbound = reserved_bound(size, per_pool);
    double r = bench_median(&res[2]), d = bench_median(&rsd[2]), g = bench_median(&rss[2][C_POOL]);
    return bench_target(res[2].n > 0 && r <= rbound && d <= bound && g <= bound,
                        "many pools: 8 threads x 1,000 pools x 10 x 64 B: pk_pool "
                        "reserved %.0f B (bound %.0f: a slab per thread per pool), resident %.0f B, "
                        "RSS growth %.0f B per thread per pool (bound %.0f: live in pages + 1 KiB + a page / 8; "
                        "mimalloc's RSS growth %.0f B; live 640 B) (docs/results.md)",
                        r, rbound, d, g, bound, bench_median(&rss[2][C_MI]));
}

int main(int argc, char **argv) {
    shared_reexec_for_tls(argv); /* jemalloc under dlopen */
    o = bench_parse(argc, argv, 5);
    bench_header("threads and lines, the steady state, many pools (and the hardened steady "
                 "state)", &o);
    bench_find(cont, NALL, 0);
    int pass = 1;
    if (wanted("steady")) pass &= steady();
    if (wanted("scratch")) pass &= scratch();
    if (wanted("batches")) pass &= batches();
    if (wanted("pools")) pass &= pools();
    printf("threads targets: %s\n", pass ? "all pass" : "some FAIL");
    return 0;
}
