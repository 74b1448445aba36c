/* The malloc-shaped experiments' loops (realprog.h): migrate's (after
 * mstress), larson-pace's (after larson) and large's (after malloc-large),
 * each run with one allocator's malloc and free in the calling process.
 * The experiments run them in a pk-lab process of their own per allocator
 * (exp_migrate.c, exp_larson_pace.c, exp_large.c say what they measure);
 * bench_mstress, bench_larson and bench_large run them too. */
#include "lab.h"
#include "realprog.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define THREADS LAB_MIGRATE_THREADS
#define TRANSFERS LAB_MIGRATE_TRANSFERS
#define COOKIE 0xbf58476d1ce4e5b9ull
#define LANES LAB_LARSON_LANES
#define MIN_SIZE LAB_LARSON_MIN_SIZE
#define MAX_SIZE LAB_LARSON_MAX_SIZE
#define SLOTS LAB_LARGE_SLOTS
#define MIN_BYTES ((size_t)5 << 20)
#define MAX_BYTES ((size_t)25 << 20)
#define SEED 42

static const rp_alloc *fe; /* the allocator of the loop that runs */

/* splitmix64: the random source of mstress and larson's loops. */
static uint64_t pick(uint64_t *r) {
    uint64_t x = *r += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* ---- migrate ---- */

static long scale;
static void *volatile transfer[TRANSFERS];

static int chance(unsigned percent, uint64_t *r) { return pick(r) % 100 < percent; }

/* An object of items words, each written (and checked at its free). */
static void *alloc_items(size_t items, uint64_t *r) {
    if (chance(1, r)) items *= chance(1, r) ? 10000 : chance(10, r) ? 1000 : 100;
    uint64_t *p = fe->malloc(items * sizeof(uint64_t));
    if (!p) abort();
    for (size_t i = 0; i < items; i++) p[i] = (items - i) ^ COOKIE;
    return p;
}

static void free_items(void *p) {
    if (!p) return;
    uint64_t *q = p, items = q[0] ^ COOKIE;
    for (uint64_t i = 0; i < items; i++)
        if ((q[i] ^ COOKIE) != items - i) abort();
    fe->free(p);
}

static void *stress(void *arg) {
    long tid = (long)(intptr_t)arg;
    uint64_t r = (uint64_t)(tid + 1) * 43;
    size_t allocs = 100 * (size_t)scale * (size_t)(tid % 8 + 1), retain = allocs / 2;
    void **data = NULL, **retained = fe->malloc(retain * sizeof(void *));
    size_t data_size = 0, data_top = 0, retain_top = 0;
    while (allocs > 0 || retain > 0) {
        if (retain == 0 || (chance(50, &r) && allocs > 0)) {
            allocs--;
            if (data_top >= data_size) {
                data_size += 100000;
                data = fe->realloc(data, data_size * sizeof(void *));
                if (!data) abort();
            }
            data[data_top++] = alloc_items((size_t)1 << (pick(&r) % 5), &r);
        } else {
            retained[retain_top++] = alloc_items((size_t)1 << (pick(&r) % 7), &r);
            retain--;
        }
        if (chance(66, &r) && data_top > 0) {
            size_t i = pick(&r) % data_top;
            free_items(data[i]);
            data[i] = NULL;
        }
        if (chance(25, &r) && data_top > 0) {
            size_t i = pick(&r) % data_top;
            data[i] = __atomic_exchange_n(&transfer[pick(&r) % TRANSFERS], data[i], __ATOMIC_ACQ_REL);
        }
    }
    for (size_t i = 0; i < retain_top; i++) free_items(retained[i]);
    for (size_t i = 0; i < data_top; i++) free_items(data[i]);
    fe->free(retained);
    fe->free(data);
    return NULL;
}

void lab_migrate_iteration(const rp_alloc *a, long sc, uint64_t *r, int last) {
    fe = a;
    scale = sc;
    /* mstress's own: the calling thread is the first, living on while the
     * others come and go */
    pthread_t t[THREADS];
    for (long i = 1; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, stress, (void *)(intptr_t)i) != 0) abort();
    stress((void *)(intptr_t)0);
    for (int i = 1; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < TRANSFERS; i++)
        if (chance(50, r) || last) free_items(__atomic_exchange_n(&transfer[i], NULL, __ATOMIC_ACQ_REL));
}

/* ---- larson-pace ---- */

static long steps_each, live_each;

typedef struct lane {
    void **blocks;
    uint64_t rng;
    long gen, gens;
    pthread_t prev; /* the thread that started this one, joined by it */
    pthread_mutex_t m;
    pthread_cond_t done_cv;
    int done;
} lane;

static void *generation(void *arg) {
    lane *l = arg;
    if (l->gen > 0) pthread_join(l->prev, NULL);
    for (long i = 0; i < steps_each; i++) {
        uint64_t r = pick(&l->rng);
        long v = (long)(r % (uint64_t)live_each);
        fe->free(l->blocks[v]);
        char *p = fe->malloc(MIN_SIZE + (r >> 32) % (MAX_SIZE - MIN_SIZE + 1));
        if (!p) abort();
        p[0] = 'a';
        LAB_ESCAPE(p);
        l->blocks[v] = p;
    }
    pthread_mutex_lock(&l->m);
    l->prev = pthread_self();
    if (++l->gen < l->gens) {
        pthread_t next;
        if (pthread_create(&next, NULL, generation, l) != 0) abort();
    } else {
        l->done = 1;
        pthread_cond_signal(&l->done_cv);
    }
    pthread_mutex_unlock(&l->m);
    return NULL;
}

double lab_larson_run(const rp_alloc *a, int handover, long g, long steps, long live) {
    fe = a;
    live_each = live;
    long per_lane = g * steps;
    steps_each = handover ? steps : per_lane; /* the control: one generation of them all */
    lane ls[LANES];
    double t0 = lab_now_ns();
    for (int i = 0; i < LANES; i++) {
        lane *l = &ls[i];
        memset(l, 0, sizeof *l);
        l->rng = (uint64_t)i + 1;
        l->gens = handover ? g : 1;
        pthread_mutex_init(&l->m, NULL);
        pthread_cond_init(&l->done_cv, NULL);
        l->blocks = fe->malloc((size_t)live * sizeof(void *));
        if (!l->blocks) abort();
        for (long k = 0; k < live; k++) {
            l->blocks[k] = fe->malloc(MIN_SIZE + pick(&l->rng) % (MAX_SIZE - MIN_SIZE + 1));
            if (!l->blocks[k]) abort();
        }
        /* not detached: every thread is joined once, by the next one of
         * its lane or, the last, by the main thread (joining a detached
         * thread can wait for ever on a reused thread id) */
        pthread_t t;
        if (pthread_create(&t, NULL, generation, l) != 0) abort();
    }
    for (int i = 0; i < LANES; i++) {
        lane *l = &ls[i];
        pthread_mutex_lock(&l->m);
        while (!l->done) pthread_cond_wait(&l->done_cv, &l->m);
        pthread_mutex_unlock(&l->m);
        pthread_join(l->prev, NULL);
    }
    return (lab_now_ns() - t0) / ((double)per_lane * LANES);
}

/* ---- large ---- */

static long minor_faults(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

long lab_large_run(const rp_alloc *a, long iters, double *ns) {
    char *slot[SLOTS] = {0};
    shared_rng r = {SEED};
    long f0 = minor_faults();
    double t0 = lab_now_ns();
    for (long i = 0; i < iters; i++) {
        size_t k = shared_rng_below(&r, SLOTS);
        size_t size = MIN_BYTES + shared_rng_below(&r, MAX_BYTES - MIN_BYTES + 1);
        char *p = a->malloc(size);
        if (!p) abort();
        LAB_ESCAPE(p);
        memset(p, 0, size);
        a->free(slot[k]);
        slot[k] = p;
    }
    for (int k = 0; k < SLOTS; k++) a->free(slot[k]);
    *ns = lab_now_ns() - t0;
    return minor_faults() - f0;
}

long lab_replaced_run(const rp_alloc *a, long warm, long iters, double *ns) {
    char *live[LAB_REPL_LIVE] = {NULL};
    uint64_t seed = 0x9E3779B97F4A7C15u;
    long f0 = 0;
    double t0 = 0;
    for (long i = -LAB_REPL_LIVE - warm; i < iters; i++) {
        if (i == 0) {
            f0 = minor_faults();
            t0 = lab_now_ns();
        }
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        size_t k = (size_t)(seed >> 8) % LAB_REPL_DOUBLINGS;
        size_t len = (LAB_REPL_MIN << k) + (size_t)(seed >> 20) % (LAB_REPL_MIN << k);
        size_t at = i < -warm ? (size_t)(i + LAB_REPL_LIVE + warm) : (size_t)(seed >> 40) % LAB_REPL_LIVE;
        char *p = a->malloc(len);
        if (!p) abort();
        for (char *q = p; q < p + len; q = rp_next_page(q)) *q = (char)(uintptr_t)q;
        a->free(live[at]);
        live[at] = p;
    }
    *ns = lab_now_ns() - t0;
    long faults = minor_faults() - f0;
    for (int k = 0; k < LAB_REPL_LIVE; k++) a->free(live[k]);
    return faults;
}

