/* Large blocks: mimalloc-bench's malloc-large shape (after glibc's
 * benchtests) through pk_alloc/pk_free and through the C library's malloc,
 * side by side, each run in a child forked from a process that measures
 * nothing itself (lab/shared.h's shared_in_child): every run of every
 * allocator starts from the same state, whatever ran before it (a peer's
 * cached memory, glibc's mmap threshold, which each large block it frees
 * moves).
 *
 * 20 slots; each iteration allocates a block of a random size from 5 to
 * 25 MiB (over the front end's last class: a mapping of its own), writes it
 * in full (malloc-large's make_unique<char[]> zeroes it) and frees the
 * block it replaces in a random slot, so up to 21 are live. Single thread,
 * a fixed seed: both allocators get the same requests. A run ends with
 * every block freed and the allocator's cache given back (pk_pool_release_
 * cache, malloc_trim), so each run starts alike. Each repetition runs both,
 * the first alternating; a run is timed (wall clock) and its minor page
 * faults counted (getrusage ru_minflt: every page of a block the system
 * maps afresh is faulted in by the write).
 *
 * The loop is the lab's large experiment's (lab_large_run).
 * Target: poolkit at most 1.2x glibc's time and 2x its minor faults, each
 * the median over repetitions of the two runs' ratio.
 * bench/malloc_large.c is the same loop as a program of its own, for
 * LD_PRELOAD=libpoolkit-malloc.so (bench/run.sh runs it both ways).
 *
 * Then a buffer grown a byte at a time, from 1 byte to 4 MiB (a reader
 * that appends what it reads with realloc): ns per realloc for poolkit and
 * each peer the lab loads, interleaved. Nearly every call stays within the
 * block's class or its mapping's last page. Target: poolkit at most 1.0x
 * glibc's (the median of the ratios) and printed beside the best peer.
 *
 * Then a vector that doubles by a fresh block, a copy and a free (C++'s
 * std::vector, no realloc) to VEC_BYTES, beside one that grows by half,
 * VEC_ROUNDS rounds after one untimed, each freeing both at its end: ms
 * per round and minor faults for poolkit and each peer the lab loads,
 * interleaved. The last frees of a round, of its longest blocks, are what
 * the next round's blocks take: kept, they are not faulted in again. Target: poolkit at
 * most 1.0x glibc's time (the median of the ratios), printed beside the
 * best peer.
 *
 * Then zeroed blocks: calloc of CALLOC_BYTES, each page read and then
 * written, the block freed CALLOC_LIVE calls later: us per call for
 * poolkit and each peer, interleaved. Target: poolkit at most 1.1x
 * glibc's (both clear reused memory), printed beside the best peer.
 *
 * Then a block of SHRINK_BYTES shrunk by realloc to half and grown back,
 * each page of the half it regains written: us per shrink and growth,
 * interleaved. Target: poolkit at most 1.1x glibc's (the same work: the
 * pages written), printed beside the best peer.
 *
 * Then blocks aligned past a page: aligned_alloc of ALIGNED_BYTES at
 * ALIGNED_TO, each page read then written, freed ALIGNED_LIVE calls later: us
 * per call, interleaved. Target: poolkit at most 1.0x the best peer.
 *
 * Then blocks replaced among many live (the lab's loop, lab_replaced_run):
 * LAB_REPL_LIVE blocks of 64 KiB to 8 MiB (lengths spread evenly over the
 * powers of two), a random one replaced by a new block of a random length
 * at each call, every page of the new block written (a cache of decoded
 * images, a server's request buffers), timed after as many calls untimed:
 * us per call and minor faults per call, interleaved. Every gap between two live blocks holds a
 * freed piece, more pieces than a table of a few dozen keeps. Target:
 * poolkit at most 1.1x the best peer's time (glibc's varies with what the
 * process did before: its mmap threshold moves), printed beside glibc's.
 *
 * Then threads that share the blocks: SHARED_THREADS threads at once
 * replace blocks of 64 KiB to 1 MiB (lengths spread evenly over the
 * powers of two), every page written, in one array of SHARED_SLOTS by an
 * atomic exchange, so most blocks are freed by another thread than the
 * one that made them, timed after a round untimed: ms per run, minor
 * faults and voluntary context switches per run, interleaved.
 * Target: poolkit at most 1.1x the best peer's time, printed beside
 * glibc's.
 *
 * Usage: bench_large [--reps N] [--quick] [--iters N]
 */
#include "harness.h"
#include "realprog.h"

#include <poolkit/alloc.h>
#include <poolkit/pool.h>

#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>

typedef struct run_result {
    double seconds;
    long faults;
} run_result;

enum { C_PK, C_GLIBC, NCONT };
static const char *const label[NCONT] = {"pk_alloc/pk_free", "glibc malloc/free"};

/* One run of the lab's loop (lab_large_run) with contender c, then the
 * allocator's cache given back, so each run starts alike. */
static run_result shape(int c, long iters) {
    run_result res;
    double ns;
    res.faults = lab_large_run(&rp_allocs()[c == C_PK ? RP_PK : RP_GLIBC], iters, &ns);
    res.seconds = ns / 1e9;
    if (c == C_PK) pk_pool_release_cache();
    else malloc_trim(0);
    return res;
}

#define GROW_BYTES ((size_t)4 << 20)

/* ns per call of a buffer grown a byte at a time through a's realloc. */
static double grow_ns(const rp_alloc *a) {
    char *p = NULL;
    double t0 = bench_now_ns();
    for (size_t n = 1; n <= GROW_BYTES; n++) {
        p = a->realloc(p, n);
        if (!p) abort();
        p[n - 1] = (char)n;
    }
    double ns = (bench_now_ns() - t0) / (double)GROW_BYTES;
    a->free(p);
    return ns;
}

/* shape() in a child (lab/shared.h's shared_in_child): out[0] its seconds,
 * out[1] its faults. */
static void shape_child(void *arg, double *out) {
    const long *ci = arg;
    run_result r = shape((int)ci[0], ci[1]);
    out[0] = r.seconds;
    out[1] = (double)r.faults;
}

/* shape(c, iters) in a child. Every run of every allocator here is a
 * child's, forked from this process, which measures nothing itself, so
 * that each starts from the same state, whatever ran before it: a peer's memory
 * (jemalloc's dirty pages, say) or glibc's mmap threshold, which moves with
 * every large block it frees, would otherwise carry one contender's history
 * into the next one's figures. */
static run_result shape_in_child(int c, long iters) {
    long arg[2] = {c, iters};
    double out[3];
    if (shared_in_child(shape_child, arg, out, 2) != 0) {
        fprintf(stderr, "bench_large: the child measuring %s failed\n", label[c]);
        exit(1);
    }
    return (run_result){out[0], (long)out[1]};
}

/* The voluntary context switches of each allocator's runs of shared(). */
static bench_series shared_switches[RP_NALLOC];

/* One peer measure in a child, after one untimed there: out[0] what the
 * timed one returns, out[1] and out[2] what it added to its extra series
 * and to the context switches' (NaN for none). */
typedef struct peer_run {
    double (*measure)(const rp_alloc *, bench_series *);
    const rp_alloc *a;
} peer_run;

static void peer_run_child(void *arg, double *out) {
    const peer_run *r = arg;
    bench_series extra = {{0}, 0}, *sw = &shared_switches[r->a - rp_allocs()];
    int had = sw->n;
    (void)r->measure(r->a, NULL); /* untimed: the allocator's steady state, its own history only */
    out[0] = r->measure(r->a, &extra);
    out[1] = extra.n ? extra.v[0] : NAN;
    out[2] = sw->n > had ? sw->v[sw->n - 1] : NAN;
}

static double peer_measure(double (*measure)(const rp_alloc *, bench_series *), const rp_alloc *a,
                           bench_series *extra) {
    peer_run r = {measure, a};
    double out[4];
    if (shared_in_child(peer_run_child, &r, out, 3) != 0) {
        fprintf(stderr, "bench_large: the child measuring %s failed\n", a->subject);
        exit(1);
    }
    if (!isnan(out[1])) bench_add(extra, out[1]);
    if (!isnan(out[2])) bench_add(&shared_switches[a - rp_allocs()], out[2]);
    return out[0];
}

/* Each available allocator's measure, interleaved, o->reps times, each
 * run a child's after one untimed there (peer_measure): rows of unit into t, the medians of poolkit's ratio to glibc's
 * and to the best peer's into *vs_glibc and *vs_best. */
static void peers_interleaved(const bench_opts *o, double (*measure)(const rp_alloc *, bench_series *),
                              bench_series t[RP_NALLOC], bench_series extra[RP_NALLOC], const char *unit,
                              double *vs_glibc, double *vs_best) {
    const rp_alloc *all = rp_allocs();
    bench_series rg = {{0}, 0}, rb = {{0}, 0};
    for (int rep = 0; rep < o->reps; rep++) { /* no warm-up here: each run is a child's */
        double v[RP_NALLOC], best = 0;
        for (int j = 0; j < RP_NALLOC; j++) {
            int c = (j + rep) % RP_NALLOC;
            v[c] = all[c].available ? peer_measure(measure, &all[c], &extra[c]) : 0;
        }
        for (int c = 0; c < RP_NALLOC; c++) {
            if (!all[c].available) continue;
            bench_add(&t[c], v[c]);
            if (c != RP_PK && (best == 0 || v[c] < best)) best = v[c];
        }
        bench_add(&rg, v[RP_PK] / v[RP_GLIBC]);
        bench_add(&rb, v[RP_PK] / best);
    }
    for (int c = 0; c < RP_NALLOC; c++)
        if (all[c].available) bench_row(all[c].subject, &t[c], unit, "");
        else bench_row_na(all[c].subject, all[c].why);
    *vs_glibc = bench_median(&rg);
    *vs_best = bench_median(&rb);
}

static double grow_measure(const rp_alloc *a, bench_series *unused) {
    (void)unused;
    return grow_ns(a);
}

static void grow(const bench_opts *o) {
    bench_series t[RP_NALLOC] = {{{0}, 0}}, unused[RP_NALLOC] = {{{0}, 0}};
    double r, best;
    printf("\na buffer grown a byte at a time, 1 B to %zu MiB: ns per realloc (median of %d, interleaved)\n",
           GROW_BYTES >> 20, o->reps);
    peers_interleaved(o, grow_measure, t, unused, "ns", &r, &best);
    bench_target(r <= 1.0,
                 "a buffer grown a byte at a time to 4 MiB: poolkit %.2fx glibc's realloc (target <= 1.0x); "
                 "%.2fx the best peer's",
                 r, best);
}

#define VEC_BYTES ((size_t)64 << 20)
#define VEC_ROUNDS 6

static long minor_faults(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

/* The process's voluntary context switches so far: a thread that waits
 * for a lock by sleeping makes one. */
static long switches(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_nvcsw;
}

/* What poolkit and glibc keep given back at the end of a run, so each run
 * starts alike (the peers keep theirs: they have no such call). */
static void release_kept(const rp_alloc *a) {
    if (a == &rp_allocs()[RP_PK]) pk_pool_release_cache();
    else if (a == &rp_allocs()[RP_GLIBC]) malloc_trim(0);
}

/* A table of one more figure per allocator, under its title. */
static void extra_rows(const char *title, const bench_series s[RP_NALLOC]) {
    const rp_alloc *all = rp_allocs();
    printf("  %-34s\n", title);
    for (int c = 0; c < RP_NALLOC; c++)
        if (all[c].available) bench_row(all[c].subject, &s[c], "", "");
}

/* A vector's append of up to chunk bytes of r: when full, it moves to a
 * fresh block of first bytes, or of its capacity plus grow times it
 * halved, copies and frees the old one (std::vector's way, no realloc). */
typedef struct vec {
    char *p;
    size_t cap, len, first, grow, chunk;
} vec;

static void vec_append(const rp_alloc *a, vec *v, int r) {
    if (v->len == v->cap) {
        size_t n = v->cap ? v->cap + v->grow * (v->cap / 2) : v->first;
        char *q = a->malloc(n);
        if (!q) abort();
        if (v->len) memcpy(q, v->p, v->len);
        a->free(v->p);
        v->p = q;
        v->cap = n;
    }
    size_t k = v->cap - v->len < v->chunk ? v->cap - v->len : v->chunk;
    memset(v->p + v->len, r, k);
    v->len += k;
}

/* One vector round: v doubles to VEC_BYTES, w grows by half beside it. */
static void vec_round(const rp_alloc *a, int r) {
    vec v = {NULL, 0, 0, 16, 2, 4096}, w = {NULL, 0, 0, 24, 1, 1000};
    while (v.len < VEC_BYTES) {
        vec_append(a, &v, r);
        vec_append(a, &w, r);
    }
    a->free(v.p);
    a->free(w.p);
}

/* ms per round of VEC_ROUNDS after one untimed; the minor faults per
 * round into *faults when given. */
static double vec_measure(const rp_alloc *a, bench_series *faults) {
    vec_round(a, 0); /* untimed: every allocator's pages faulted in once */
    long f0 = minor_faults();
    double t0 = bench_now_ns();
    for (int r = 0; r < VEC_ROUNDS; r++) vec_round(a, r);
    double ms = (bench_now_ns() - t0) / 1e6 / VEC_ROUNDS;
    if (faults) bench_add(faults, (double)(minor_faults() - f0) / VEC_ROUNDS);
    release_kept(a);
    return ms;
}

static void vectors(const bench_opts *o) {
    bench_series t[RP_NALLOC] = {{{0}, 0}}, f[RP_NALLOC] = {{{0}, 0}};
    double r, best;
    printf("\na vector doubled by a fresh block, a copy and a free to %zu MiB, one grown by half beside it, "
           "%d rounds after one untimed: ms per round and minor faults per round (median of %d, interleaved)\n",
           VEC_BYTES >> 20, VEC_ROUNDS, o->reps);
    peers_interleaved(o, vec_measure, t, f, "ms", &r, &best);
    extra_rows("minor faults per round", f);
    bench_target(r <= 1.0,
                 "vectors doubled by copy to %zu MiB: poolkit %.2fx glibc's time (target <= 1.0x); %.2fx the best "
                 "peer's",
                 VEC_BYTES >> 20, r, best);
}

#define CALLOC_BYTES ((size_t)1 << 20)
#define CALLOC_LIVE 4
#define CALLOC_CALLS 2000
#define ALIGNED_BYTES ((size_t)100000)
#define ALIGNED_TO ((size_t)64 << 10)
#define ALIGNED_LIVE 8
#define ALIGNED_CALLS 20000

/* us per call of calls blocks, each made by a's calloc (zeroed) or
 * aligned_alloc, every page of it read then written, and freed `live`
 * calls later. */
static volatile long ring_sum; /* what the reads saw, so that they are made */

static double ring_us(const rp_alloc *a, int zeroed, int calls, int live) {
    char *ring[ALIGNED_LIVE > CALLOC_LIVE ? ALIGNED_LIVE : CALLOC_LIVE] = {NULL};
    double t0 = bench_now_ns();
    for (int i = 0; i < calls; i++) {
        char *p = zeroed ? a->calloc(1, CALLOC_BYTES) : a->aligned(ALIGNED_TO, ALIGNED_BYTES);
        if (!p || (!zeroed && (uintptr_t)p % ALIGNED_TO)) abort();
        for (char *q = p; q < p + (zeroed ? CALLOC_BYTES : ALIGNED_BYTES); q = rp_next_page(q)) {
            ring_sum += *q;
            *q = 1;
        }
        a->free(ring[i % live]);
        ring[i % live] = p;
    }
    for (int k = 0; k < live; k++) a->free(ring[k]);
    return (bench_now_ns() - t0) / 1e3 / calls;
}

static double calloc_measure(const rp_alloc *a, bench_series *unused) {
    (void)unused;
    return ring_us(a, 1, CALLOC_CALLS, CALLOC_LIVE);
}

static double aligned_measure(const rp_alloc *a, bench_series *unused) {
    (void)unused;
    return ring_us(a, 0, ALIGNED_CALLS, ALIGNED_LIVE);
}

#define SHRINK_BYTES ((size_t)8 << 20)
#define SHRINK_PAIRS 300

static double shrink_measure(const rp_alloc *a, bench_series *unused) {
    (void)unused;
    char *p = a->malloc(SHRINK_BYTES);
    if (!p) abort();
    memset(p, 1, SHRINK_BYTES);
    double t0 = bench_now_ns();
    for (int i = 0; i < SHRINK_PAIRS; i++) {
        p = a->realloc(p, SHRINK_BYTES / 2);
        if (!p) abort();
        p = a->realloc(p, SHRINK_BYTES);
        if (!p) abort();
        for (char *q = p + SHRINK_BYTES / 2; q < p + SHRINK_BYTES; q = rp_next_page(q)) *q = (char)i;
    }
    double us = (bench_now_ns() - t0) / 1e3 / SHRINK_PAIRS;
    a->free(p);
    return us;
}

/* The zeroed blocks, the shrunk one and the aligned ones beside the peers. */
static void rings(const bench_opts *o) {
    bench_series t[RP_NALLOC] = {{{0}, 0}}, u[RP_NALLOC] = {{{0}, 0}}, w[RP_NALLOC] = {{{0}, 0}},
                 unused[RP_NALLOC] = {{{0}, 0}};
    double r, best;
    printf("\nzeroed blocks: calloc of %zu KiB, each page read then written, freed %d calls later: us per call "
           "(median of %d, interleaved)\n",
           CALLOC_BYTES >> 10, CALLOC_LIVE, o->reps);
    peers_interleaved(o, calloc_measure, t, unused, "us", &r, &best);
    bench_target(r <= 1.1, "zeroed blocks of %zu KiB: poolkit %.2fx glibc's calloc (target <= 1.1x); %.2fx the best peer's",
                 CALLOC_BYTES >> 10, r, best);
    printf("\na block of %zu MiB shrunk by realloc to half and grown back, each page it regains written: us per "
           "pair (median of %d, interleaved)\n",
           SHRINK_BYTES >> 20, o->reps);
    peers_interleaved(o, shrink_measure, w, unused, "us", &r, &best);
    bench_target(r <= 1.1, "a block shrunk to half and grown back: poolkit %.2fx glibc's (target <= 1.1x); %.2fx the best peer's",
                 r, best);
    printf("\nblocks aligned past a page: aligned_alloc of %zu bytes at %zu KiB, each page read then written, freed %d "
           "calls later: us per call (median of %d, interleaved)\n",
           ALIGNED_BYTES, ALIGNED_TO >> 10, ALIGNED_LIVE, o->reps);
    peers_interleaved(o, aligned_measure, u, unused, "us", &r, &best);
    bench_target(best <= 1.0, "aligned blocks of %zu bytes at %zu KiB: poolkit %.2fx the best peer's (target <= 1.0x); %.3gx glibc's",
                 ALIGNED_BYTES, ALIGNED_TO >> 10, best, r);
}

static int repl_calls;

/* us per call of the lab's loop (lab_replaced_run), repl_calls untimed
 * first (the steady state of a long run); minor faults per call into
 * *faults. */
static double repl_measure(const rp_alloc *a, bench_series *faults) {
    double ns;
    long f = lab_replaced_run(a, repl_calls, repl_calls, &ns);
    if (faults) bench_add(faults, (double)f / repl_calls);
    release_kept(a);
    return ns / 1e3 / repl_calls;
}

static void replaced(const bench_opts *o) {
    bench_series t[RP_NALLOC] = {{{0}, 0}}, f[RP_NALLOC] = {{{0}, 0}};
    double r, best;
    repl_calls = o->quick ? 1500 : 4000;
    printf("\nblocks replaced among %d live, of %zu KiB to %zu MiB, every page of each written, %d calls: us per "
           "call and minor faults per call (median of %d, interleaved)\n",
           LAB_REPL_LIVE, LAB_REPL_MIN >> 10, (LAB_REPL_MIN << LAB_REPL_DOUBLINGS) >> 20, repl_calls, o->reps);
    peers_interleaved(o, repl_measure, t, f, "us", &r, &best);
    extra_rows("minor faults per call", f);
    bench_target(best <= 1.1, "blocks replaced among %d live: poolkit %.2fx the best peer's time (target <= 1.1x); %.3gx glibc's",
                 LAB_REPL_LIVE, best, r);
}

#define SHARED_THREADS 4
#define SHARED_SLOTS 1024
#define SHARED_MIN ((size_t)64 << 10)
#define SHARED_DOUBLINGS 4 /* SHARED_MIN to SHARED_MIN << 4, 1 MiB */

static int shared_calls;
static char *shared_slot[SHARED_SLOTS];

typedef struct shared_job {
    const rp_alloc *a;
    uint64_t seed;
} shared_job;

static void *shared_thread(void *arg) {
    shared_job *j = arg;
    for (int i = 0; i < shared_calls; i++) {
        j->seed ^= j->seed << 13, j->seed ^= j->seed >> 7, j->seed ^= j->seed << 17;
        size_t k = (size_t)(j->seed >> 8) % SHARED_DOUBLINGS;
        size_t len = (SHARED_MIN << k) + (size_t)(j->seed >> 20) % (SHARED_MIN << k);
        char *p = j->a->malloc(len);
        if (!p) abort();
        for (char *q = p; q < p + len; q = rp_next_page(q)) *q = (char)(uintptr_t)q;
        j->a->free(__atomic_exchange_n(&shared_slot[(j->seed >> 40) % SHARED_SLOTS], p, __ATOMIC_ACQ_REL));
    }
    return NULL;
}

/* SHARED_THREADS threads of shared_calls replacements each, seeded by
 * round. */
static void shared_round(const rp_alloc *a, int round) {
    shared_job jobs[SHARED_THREADS];
    pthread_t t[SHARED_THREADS];
    for (int i = 0; i < SHARED_THREADS; i++) {
        jobs[i] = (shared_job){a, 0x9E3779B97F4A7C15u * (uint64_t)(round * SHARED_THREADS + i + 1)};
        if (pthread_create(&t[i], NULL, shared_thread, &jobs[i]) != 0) abort();
    }
    for (int i = 0; i < SHARED_THREADS; i++) pthread_join(t[i], NULL);
}

/* ms per run of a round of threads after one untimed (the array full,
 * the allocator in its steady state); minor faults per run into *faults. */
static double shared_measure(const rp_alloc *a, bench_series *faults) {
    shared_round(a, 0);
    long f0 = minor_faults(), s0 = switches();
    double t0 = bench_now_ns();
    shared_round(a, 1);
    double ms = (bench_now_ns() - t0) / 1e6;
    if (faults) {
        bench_add(faults, (double)(minor_faults() - f0));
        bench_add(&shared_switches[a - rp_allocs()], (double)(switches() - s0));
    }
    for (int i = 0; i < SHARED_SLOTS; i++) {
        a->free(shared_slot[i]);
        shared_slot[i] = NULL;
    }
    release_kept(a);
    return ms;
}

static void shared(const bench_opts *o) {
    bench_series t[RP_NALLOC] = {{{0}, 0}}, f[RP_NALLOC] = {{{0}, 0}};
    double r, best;
    shared_calls = o->quick ? 5000 : 20000;
    printf("\n%d threads at once replacing blocks of %zu KiB to %zu MiB in one array of %d (atomic exchange), every "
           "page written, %d calls each: ms per run and minor faults per run (median of %d, interleaved)\n",
           SHARED_THREADS, SHARED_MIN >> 10, (SHARED_MIN << SHARED_DOUBLINGS) >> 20, SHARED_SLOTS, shared_calls,
           o->reps);
    peers_interleaved(o, shared_measure, t, f, "ms", &r, &best);
    extra_rows("minor faults per run", f);
    extra_rows("voluntary context switches per run", shared_switches);
    bench_target(best <= 1.1, "threads sharing blocks of 64 KiB-1 MiB: poolkit %.2fx the best peer's time (target <= "
                 "1.1x); %.3gx glibc's",
                 best, r);
}

int main(int argc, char **argv) {
    shared_reexec_for_tls(argv); /* jemalloc under dlopen, among the peers */
    bench_opts o = bench_parse(argc, argv, 5);
    long iters = bench_arg_long(&o, "--iters", o.quick ? 300 : 1000);
    bench_header("large blocks: malloc-large's shape (5-25 MiB, 20 live, random replacement), "
                 "pk_alloc vs glibc malloc",
                 &o);
    printf("%ld iterations per run, each block written in full; seconds and minor faults per run; "
           "ratio = median over repetitions of (poolkit / glibc in the same repetition); purge "
           "delay %ld ms\n",
           iters, pk_set_purge_delay(-1));

    bench_series t[NCONT] = {{{0}, 0}}, f[NCONT] = {{{0}, 0}}, rt = {{0}, 0}, rf = {{0}, 0};
    for (int rep = 0; rep < o.reps; rep++) { /* no warm-up here: each run is a child's */
        run_result v[NCONT];
        for (int j = 0; j < NCONT; j++) {
            int c = (j + rep) % NCONT;
            v[c] = shape_in_child(c, iters);
        }
        for (int c = 0; c < NCONT; c++) {
            bench_add(&t[c], v[c].seconds);
            bench_add(&f[c], (double)v[c].faults);
        }
        bench_add(&rt, v[C_PK].seconds / v[C_GLIBC].seconds);
        bench_add(&rf, (double)v[C_PK].faults / (double)v[C_GLIBC].faults);
    }

    printf("\n  %-34s %10s %-5s %-25s  %s\n", "time", "median", "", "[min - max]", "");
    for (int c = 0; c < NCONT; c++) bench_row(label[c], &t[c], "s", "");
    printf("  %-34s %10s %-5s %-25s  %s\n", "minor faults", "", "", "", "");
    for (int c = 0; c < NCONT; c++) bench_row(label[c], &f[c], "", "");

    printf("\n");
    double tr = bench_median(&rt), fr = bench_median(&rf);
    bench_target(tr <= 1.2 && fr <= 2.0,
                 "large blocks 5-25 MiB: poolkit %.2fx glibc time (target <= 1.2x), faults %.2fx "
                 "(target <= 2x) (%.2f vs %.2f s, %.0f vs %.0f minor faults per run)",
                 tr, fr, bench_median(&t[C_PK]), bench_median(&t[C_GLIBC]), bench_median(&f[C_PK]),
                 bench_median(&f[C_GLIBC]));
    grow(&o);
    vectors(&o);
    rings(&o);
    replaced(&o);
    shared(&o);
    return 0;
}
