/* Cross-thread producer/consumer: one thread allocates 32-byte objects and
 * fills them, another frees them; the objects are handed over through a
 * single-producer/single-consumer ring. Every object is freed on a thread
 * other than the one that allocated it, so an allocator's remote-free path
 * is all that is measured.
 *
 * Contenders, interleaved in one run: the ring alone (no allocation), glibc
 * malloc, jemalloc, tcmalloc, mimalloc (loaded with dlopen, peers.h) and
 * pk_pool (default flags, and PK_POOL_HARDENED). Each run is a forked child, so its peak RSS is
 * its own. Reported: ns per object (median [min - max]) and the child's peak
 * RSS growth. Targets: pk_pool no slower than mimalloc, and memory bounded
 * (peak RSS growth under a quarter of what the objects would take if memory
 * were never reused); the hardened pool at most 1.2x the default (issue 10).
 *
 * Usage: bench_xthread [--reps N] [--quick] [--objects N]
 */
#include "harness.h"
#include "peers.h"

#include <poolkit/pool.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define OBJ_SIZE 32
#define RING_SLOTS 1024 /* a power of two */

/* ---- the ring: single producer, single consumer ----
 *
 * Each side publishes its index every RING_BATCH objects (the producer also
 * at the end), so the two cores exchange cache lines once per batch rather
 * than once per object: the ring alone then costs a few ns per object and
 * what is measured is the allocators. */

#define RING_BATCH 16 /* divides RING_SLOTS */

typedef struct ring {
    _Alignas(64) _Atomic size_t tail; /* written by the producer */
    _Alignas(64) _Atomic size_t head; /* written by the consumer */
    _Alignas(64) void *slot[RING_SLOTS];
} ring;

static inline void cpu_relax(unsigned *spins) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (++*spins % 1024 == 0) sched_yield(); /* 2 cores: let the other side run */
}

static inline void ring_push(ring *r, size_t *tail, size_t *head_seen, void *p) {
    unsigned spins = 0;
    while (*tail - *head_seen == RING_SLOTS) {
        *head_seen = atomic_load_explicit(&r->head, memory_order_acquire);
        if (*tail - *head_seen == RING_SLOTS) cpu_relax(&spins);
    }
    r->slot[*tail & (RING_SLOTS - 1)] = p;
    if (++*tail % RING_BATCH == 0) atomic_store_explicit(&r->tail, *tail, memory_order_release);
}

static inline void ring_flush(ring *r, size_t tail) {
    atomic_store_explicit(&r->tail, tail, memory_order_release);
}

static inline void *ring_pop(ring *r, size_t *head, size_t *tail_seen) {
    unsigned spins = 0;
    while (*head == *tail_seen) {
        *tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (*head == *tail_seen) cpu_relax(&spins);
    }
    void *p = r->slot[*head & (RING_SLOTS - 1)];
    if (++*head % RING_BATCH == 0) atomic_store_explicit(&r->head, *head, memory_order_release);
    return p;
}

/* ---- contenders ---- */

enum { C_RING, C_GLIBC, C_JE, C_TC, C_MI, C_POOL, C_HARD, NCONT };
static char cont_label[NCONT][96];
static const char *cont_why[NCONT];

static bench_peers peers;
static pk_pool *pool;
static ring the_ring;
static _Alignas(64) char ring_objs[2 * RING_SLOTS][OBJ_SIZE]; /* the ring alone's "objects" */

#define PRODUCER(NAME, ALLOC)                                         \
    static BENCH_KERNEL void NAME(size_t n) {                         \
        size_t tail = 0, head_seen = 0;                               \
        for (size_t i = 0; i < n; i++) {                              \
            char *p = (char *)(ALLOC);                                \
            memset(p, (int)(i & 0xff), OBJ_SIZE); /* fill it */      \
            BENCH_ESCAPE(p);                                          \
            ring_push(&the_ring, &tail, &head_seen, p);               \
        }                                                             \
        ring_flush(&the_ring, tail);                                  \
    }
#define CONSUMER(NAME, FREE)                                          \
    static BENCH_KERNEL void NAME(size_t n) {                         \
        size_t head = 0, tail_seen = 0;                               \
        for (size_t i = 0; i < n; i++) {                              \
            void *p = ring_pop(&the_ring, &head, &tail_seen);         \
            BENCH_ESCAPE(p);                                          \
            FREE;                                                     \
        }                                                             \
    }

PRODUCER(produce_ring, ring_objs[i & (2 * RING_SLOTS - 1)])
CONSUMER(consume_ring, (void)0)
PRODUCER(produce_glibc, malloc(OBJ_SIZE))
CONSUMER(consume_glibc, free(p))
PRODUCER(produce_je, peers.mallocx(OBJ_SIZE, 0))
CONSUMER(consume_je, peers.dallocx(p, 0))
PRODUCER(produce_tc, peers.tc_malloc(OBJ_SIZE))
CONSUMER(consume_tc, peers.tc_free(p))
PRODUCER(produce_mi, peers.mi_malloc(OBJ_SIZE))
CONSUMER(consume_mi, peers.mi_free(p))
PRODUCER(produce_pool, pk_pool_alloc(pool))
CONSUMER(consume_pool, pk_pool_free(pool, p))

typedef void (*kernel_fn)(size_t);
static const kernel_fn producers[NCONT] = {produce_ring, produce_glibc, produce_je,  produce_tc,
                                           produce_mi,   produce_pool,  produce_pool};
static const kernel_fn consumers[NCONT] = {consume_ring, consume_glibc, consume_je,  consume_tc,
                                           consume_mi,   consume_pool,  consume_pool};

typedef struct job {
    int contender;
    size_t n;
} job;

static void *consumer_main(void *arg) {
    const job *j = arg;
    consumers[j->contender](j->n);
    return NULL;
}

enum { R_NS, R_RESERVED, R_REMOTE, NRES };

/* Runs in a forked child: a fresh process for every run. */
static void child(void *arg, double *res) {
    const job *j = arg;
    if (j->contender == C_POOL || j->contender == C_HARD) {
        pool = pk_pool_create(&(pk_pool_config){
            .name = "xthread", .size = OBJ_SIZE, .flags = j->contender == C_HARD ? PK_POOL_HARDENED : 0});
        if (!pool) _exit(3);
    }
    pthread_t th;
    double t0 = bench_now_ns();
    if (pthread_create(&th, NULL, consumer_main, (void *)j) != 0) _exit(3);
    producers[j->contender](j->n);
    pthread_join(th, NULL);
    res[R_NS] = (bench_now_ns() - t0) / (double)j->n;
    if (pool) {
        pk_pool_stats st;
        pk_pool_stats_get(pool, &st);
        res[R_RESERVED] = (double)st.bytes_reserved;
        res[R_REMOTE] = (double)st.remote_frees;
        pk_pool_destroy(pool);
    }
}

static double mib(double b) { return b / (1024.0 * 1024.0); }

int main(int argc, char **argv) {
    bench_peers_reexec(argv);
    bench_opts o = bench_parse(argc, argv, 5);
    size_t n = (size_t)bench_arg_long(&o, "--objects", o.quick ? 500000 : 2000000);
    bench_header("cross-thread producer/consumer: 32 B objects allocated on one thread, freed "
                 "on another",
                 &o);
    bench_peers_load(&peers);
    if (!peers.mallocx) cont_why[C_JE] = peers.je_why;
    if (!peers.tc_malloc) cont_why[C_TC] = peers.tc_why;
    if (!peers.mi_malloc) cont_why[C_MI] = peers.mi_why;
    if (peers.mallocx)
        printf("note: re-executed with GLIBC_TUNABLES=%s so jemalloc loads under dlopen\n",
               BENCH_TLS_TUNABLE);
    printf("objects: %zu through a %d-slot ring; each run is a forked child; peak RSS = child's "
           "VmHWM - its VmRSS at start\n",
           n, RING_SLOTS);
    snprintf(cont_label[C_RING], sizeof cont_label[0], "ring alone (no allocation)");
    snprintf(cont_label[C_GLIBC], sizeof cont_label[0], "glibc malloc/free");
    snprintf(cont_label[C_JE], sizeof cont_label[0], "%s mallocx/dallocx", peers.je_name);
    snprintf(cont_label[C_TC], sizeof cont_label[0], "%s tc_malloc/tc_free", peers.tc_name);
    snprintf(cont_label[C_MI], sizeof cont_label[0], "%s mi_malloc/mi_free", peers.mi_name);
    snprintf(cont_label[C_POOL], sizeof cont_label[0], "pk_pool default");
    snprintf(cont_label[C_HARD], sizeof cont_label[0], "pk_pool HARDENED");

    bench_series t[NCONT] = {{{0}, 0}}, rss[NCONT] = {{{0}, 0}}, ratio_mi = {{0}, 0};
    bench_series ratio_hard = {{0}, 0};
    double last[NCONT][NRES + 1];
    int failed[NCONT] = {0};
    memset(last, 0, sizeof last);
    for (int rep = -1; rep < o.reps; rep++) {
        double v[NCONT] = {0};
        for (int c = 0; c < NCONT; c++) {
            if (cont_why[c]) continue;
            job j = {c, rep < 0 ? n / 4 : n};
            double out[NRES + 1];
            if (bench_in_child(child, &j, out, NRES) != 0) {
                failed[c] = 1;
                continue;
            }
            if (rep < 0) continue;
            v[c] = out[R_NS];
            bench_add(&t[c], out[R_NS]);
            bench_add(&rss[c], out[NRES]);
            memcpy(last[c], out, sizeof out);
        }
        if (rep >= 0 && v[C_MI] > 0 && v[C_POOL] > 0) bench_add(&ratio_mi, v[C_POOL] / v[C_MI]);
        if (rep >= 0 && v[C_HARD] > 0 && v[C_POOL] > 0) bench_add(&ratio_hard, v[C_HARD] / v[C_POOL]);
    }

    printf("\n  %-34s %10s %-5s %-25s  %s\n", "contender", "median", "", "[min - max]",
           "peak RSS growth (median)");
    for (int c = 0; c < NCONT; c++) {
        if (cont_why[c]) {
            bench_row_na(cont_label[c], cont_why[c]);
            continue;
        }
        if (failed[c] && t[c].n == 0) {
            bench_row_na(cont_label[c], "the child process failed");
            continue;
        }
        char extra[80];
        if (c == C_RING)
            snprintf(extra, sizeof extra, "%8.1f MiB", mib(bench_median(&rss[c])));
        else
            snprintf(extra, sizeof extra, "%8.1f MiB   (net of the ring %6.1f ns)",
                     mib(bench_median(&rss[c])), bench_median(&t[c]) - bench_median(&t[C_RING]));
        bench_row(cont_label[c], &t[c], "ns", extra);
    }
    printf("  pk_pool after the last run: %.2f MiB reserved, stats.remote_frees %.0f\n",
           mib(last[C_POOL][R_RESERVED]), last[C_POOL][R_REMOTE]);

    double bound = (double)n * OBJ_SIZE / 4.0;
    int pass = 1;
    if (cont_why[C_MI] || t[C_MI].n == 0) {
        printf("target: pk_pool no slower than mimalloc: mimalloc not available  -> SKIP\n");
    } else {
        pass &= bench_target(bench_median(&t[C_POOL]) <= bench_median(&t[C_MI]),
                             "cross-thread: pk_pool no slower than mimalloc: %.1f vs %.1f ns per "
                             "object (per-run ratio median %.2fx)",
                             bench_median(&t[C_POOL]), bench_median(&t[C_MI]),
                             bench_median(&ratio_mi));
    }
    pass &= bench_target(t[C_POOL].n > 0 && bench_max(&rss[C_POOL]) <= bound,
                         "cross-thread: pk_pool memory bounded: peak RSS growth %.1f MiB (max of "
                         "runs) <= %.1f MiB (a quarter of %zu x %d B)",
                         mib(bench_max(&rss[C_POOL])), mib(bound), n, OBJ_SIZE);
    pass &= bench_target(ratio_hard.n > 0 && bench_median(&ratio_hard) <= 1.2,
                         "cross-thread: PK_POOL_HARDENED <= 1.2x the default pool: %.2fx per-run "
                         "ratio median (%.1f vs %.1f ns per object)",
                         bench_median(&ratio_hard), bench_median(&t[C_HARD]), bench_median(&t[C_POOL]));
    printf("cross-thread targets: %s\n", pass ? "all pass" : "some FAIL");
    return 0;
}
