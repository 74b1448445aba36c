/* Mixed sizes, batches freed by another thread, and threads that come and
 * go (the shape of rptest, rpmalloc's benchmark, in mimalloc-bench, with
 * the threads replaced as larson replaces them), as a plain C program that
 * knows nothing of poolkit, for running under LD_PRELOAD=libpoolkit-malloc.so
 * and without it (or under any other allocator).
 *
 * THREADS threads each keep SLOTS slots. A loop of a thread frees the
 * blocks of 30-99 slots (a stride apart), frees the batches other threads
 * sent it, and allocates 30-99 blocks into the slots its allocation stride
 * reaches (freeing what a slot still holds); every second loop it also
 * allocates a batch of as many blocks and sends it to the next thread,
 * which frees it (at most two batches wait for a thread, and none is sent
 * once a thread of the generation has finished its loops: the live set
 * does not depend on the allocator's speed). Sizes are 8 B to MAX B, the small ones more often (the
 * odds fall linearly with the size); each block's first and last bytes and
 * a byte of each page are written. After LOOPS loops a thread exits, and a
 * new one takes over its slots and its batches to free: GENERATIONS times.
 *
 * Prints ns per call (the run's wall time over the malloc and free calls of
 * every thread: the threads run at once) and the peak RSS. bench/run.sh runs
 * it under poolkit, glibc and each peer the system has:
 *   build/bench/malloc_cross 20 2 500 1000 16000
 *   LD_PRELOAD=build/libpoolkit-malloc.so.0 build/bench/malloc_cross 20 2 500 1000 16000
 *
 * Usage: malloc_cross [GENERATIONS (20) THREADS (2) LOOPS (500) SLOTS (1000) MAX (16000)]
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "plain_bursts.h" /* plain_now_ms */

typedef struct batch {
    struct batch *next;
    long n;
    char *blocks[];
} batch;

typedef struct lane {
    char **slots;
    uint64_t rng;
    long free_at, alloc_at;
    batch *inbox; /* batches sent to this lane, freed by its thread */
    long queued;  /* how many */
    long calls;
} lane;

enum { MAX_QUEUED = 2 };

static long threads = 2, loops = 500, nslots = 1000, maxsize = 16000;
static lane lanes[256];
static pthread_mutex_t mail = PTHREAD_MUTEX_INITIALIZER;
/* Set by the first thread of a generation to finish its loops: the others
 * send no more batches, which no one would free until the next generation
 * (rptest does the same). */
static int finished;

static uint64_t next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* 8 B to maxsize B, the odds falling linearly with the size. */
static size_t size_of(uint64_t r) {
    double u = (double)(r >> 11) / 9007199254740992.0;
    return 8 + (size_t)((double)(maxsize - 8) * (1.0 - sqrt(1.0 - u)));
}

static char *block(lane *l) {
    size_t n = size_of(next(&l->rng));
    char *b = malloc(n);
    if (!b) abort();
    for (size_t at = 0; at < n; at += 4096) b[at] = 1;
    b[n - 1] = 1;
    l->calls++;
    return b;
}

static void drain(lane *l) {
    pthread_mutex_lock(&mail);
    batch *b = l->inbox;
    l->inbox = NULL;
    __atomic_store_n(&l->queued, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&mail);
    while (b) {
        batch *after = b->next;
        l->calls += b->n + 1;
        for (long i = 0; i < b->n; i++) free(b->blocks[i]);
        free(b);
        b = after;
    }
}

static void *worker(void *arg) {
    long me = (long)(intptr_t)arg;
    lane *l = &lanes[me];
    for (long loop = 0; loop < loops; loop++) {
        long frees = 30 + (long)(next(&l->rng) % 70), allocs = 30 + (long)(next(&l->rng) % 70);
        for (long i = 0; i < frees; i++) {
            char **s = &l->slots[l->free_at];
            if (*s) free(*s), *s = NULL, l->calls++;
            l->free_at = (l->free_at + 7) % nslots;
        }
        drain(l);
        for (long i = 0; i < allocs; i++) {
            char **s = &l->slots[l->alloc_at];
            if (*s) free(*s), l->calls++;
            *s = block(l);
            l->alloc_at = (l->alloc_at + 13) % nslots;
        }
        if (loop % 2 == 0 && threads > 1 && !__atomic_load_n(&finished, __ATOMIC_RELAXED)) {
            batch *b = malloc(sizeof *b + (size_t)allocs * sizeof(char *));
            if (!b) abort();
            b->n = allocs;
            for (long i = 0; i < allocs; i++) b->blocks[i] = block(l);
            l->calls++;
            lane *to = &lanes[(me + 1) % threads];
            /* at most MAX_QUEUED batches wait (the live set is the same
             * whichever allocator runs it): this thread frees its own
             * while it waits, so two threads waiting on each other go on */
            while (__atomic_load_n(&to->queued, __ATOMIC_RELAXED) >= MAX_QUEUED &&
                   !__atomic_load_n(&finished, __ATOMIC_RELAXED)) {
                drain(l);
                sched_yield();
            }
            pthread_mutex_lock(&mail);
            b->next = to->inbox;
            to->inbox = b;
            __atomic_store_n(&to->queued, to->queued + 1, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&mail);
        }
    }
    __atomic_store_n(&finished, 1, __ATOMIC_RELAXED);
    return NULL;
}

int main(int argc, char **argv) {
    long generations = argc > 1 ? atol(argv[1]) : 20;
    if (argc > 2) threads = atol(argv[2]);
    if (argc > 3) loops = atol(argv[3]);
    if (argc > 4) nslots = atol(argv[4]);
    if (argc > 5) maxsize = atol(argv[5]);
    if (generations < 1 || threads < 1 || threads > 256 || loops < 1 || nslots < 1 || maxsize < 9) {
        fprintf(stderr, "usage: %s [GENERATIONS THREADS (1-256) LOOPS SLOTS MAX (9-)]\n", argv[0]);
        return 2;
    }
    for (long i = 0; i < threads; i++) {
        lanes[i].slots = calloc((size_t)nslots, sizeof(char *));
        if (!lanes[i].slots) abort();
        lanes[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    }
    pthread_t t[256];
    double t0 = plain_now_ms() / 1e3;
    for (long g = 0; g < generations; g++) {
        finished = 0;
        for (long i = 0; i < threads; i++)
            if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) != 0) return 1;
        for (long i = 0; i < threads; i++) pthread_join(t[i], NULL);
    }
    long calls = 0;
    for (long i = 0; i < threads; i++) {
        drain(&lanes[i]);
        for (long k = 0; k < nslots; k++)
            if (lanes[i].slots[k]) free(lanes[i].slots[k]), lanes[i].calls++;
        calls += lanes[i].calls;
    }
    double t1 = plain_now_ms() / 1e3;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("cross: %ld generations of %ld threads, %ld loops, %ld slots, 8-%ld B: %.2f ns a call, peak RSS %ld KiB\n",
           generations, threads, loops, nslots, maxsize, (t1 - t0) * 1e9 / (double)calls, ru.ru_maxrss);
    return 0;
}
