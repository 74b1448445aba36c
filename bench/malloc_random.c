/* Random lifetimes and random sizes, each thread on its own (the shape of
 * alloc-test, from node-dot-cpp, in mimalloc-bench), as a plain C program
 * that knows nothing of poolkit, for running under
 * LD_PRELOAD=libpoolkit-malloc.so and without it (or under any other
 * allocator). Each of THREADS threads keeps SLOTS slots, about half of them
 * holding a block at any time, and makes OPS steps: it picks a slot, most
 * picks among a few slots (80% of the picks in 20% of the slots, six levels
 * deep), and frees the block there after reading each of its bytes, or
 * allocates one there and writes each byte. Sizes are 5 B to 2^MAXEXP B,
 * half of them at most 8 B, a quarter 9-16 B, and so on: most blocks small,
 * a few of every class up to the largest.
 *
 * Prints ns per step (the run's wall time, the set-up excluded, over OPS:
 * the threads step at once) and the peak RSS. bench/run.sh runs it under
 * poolkit, glibc and each peer the system has:
 *   build/bench/malloc_random 2 131072 20000000 10
 *   LD_PRELOAD=build/libpoolkit-malloc.so.0 build/bench/malloc_random 2 131072 20000000 10
 *
 * Usage: malloc_random [THREADS (2) SLOTS (131072) OPS (20000000) MAXEXP (10)]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "plain_bursts.h" /* plain_now_ms */

static long slots = 131072, ops = 20000000, maxexp = 10;
static pthread_barrier_t ready;
static volatile unsigned long sink;

static uint64_t next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A slot: 80% of picks among the first 20% of the range, six times over. */
static long pick(uint64_t *s) {
    long lo = 0, n = slots;
    for (int level = 0; level < 6 && n >= 5; level++) {
        uint64_t r = next(s);
        if (r % 10 < 8) n /= 5;
        else {
            lo += n / 5;
            n -= n / 5;
            break;
        }
    }
    return lo + (long)(next(s) % (uint64_t)n);
}

/* 5 B to 2^maxexp B: the class (at most 8 B, 9-16 B, ...) with half the
 * odds of the one below it, a size uniform within it. */
static size_t size_of(uint64_t r) {
    unsigned bits = (unsigned)maxexp - 3;
    unsigned k = (unsigned)__builtin_ctzll((r & ((1u << bits) - 1)) + 1) + 2;
    return ((r >> bits) & ((1u << k) - 1)) + 1 + ((size_t)1 << k);
}

static void *worker(void *arg) {
    uint64_t s = 0x9e3779b97f4a7c15ull ^ (uintptr_t)arg;
    unsigned char **ptr = calloc((size_t)slots, sizeof *ptr);
    size_t *len = calloc((size_t)slots, sizeof *len);
    if (!ptr || !len) abort();
    unsigned long sum = 0;
    for (long i = 0; i < slots; i++)
        if (next(&s) & 1) {
            len[i] = size_of(next(&s));
            if (!(ptr[i] = malloc(len[i]))) abort();
            memset(ptr[i], (int)i, len[i]);
        }
    pthread_barrier_wait(&ready);
    for (long k = 0; k < ops; k++) {
        long i = pick(&s);
        if (ptr[i]) {
            for (size_t b = 0; b < len[i]; b++) sum += ptr[i][b];
            free(ptr[i]);
            ptr[i] = NULL;
        } else {
            len[i] = size_of(next(&s));
            if (!(ptr[i] = malloc(len[i]))) abort();
            memset(ptr[i], (int)k, len[i]);
        }
    }
    pthread_barrier_wait(&ready);
    for (long i = 0; i < slots; i++) free(ptr[i]);
    free(ptr);
    free(len);
    sink += sum;
    return NULL;
}

int main(int argc, char **argv) {
    long threads = argc > 1 ? atol(argv[1]) : 2;
    if (argc > 2) slots = atol(argv[2]);
    if (argc > 3) ops = atol(argv[3]);
    if (argc > 4) maxexp = atol(argv[4]);
    if (threads < 1 || threads > 256 || slots < 1 || ops < 1 || maxexp < 4 || maxexp > 30) {
        fprintf(stderr, "usage: %s [THREADS (1-256) SLOTS OPS MAXEXP (4-30)]\n", argv[0]);
        return 2;
    }
    pthread_t t[256];
    pthread_barrier_init(&ready, NULL, (unsigned)threads + 1);
    for (long i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0) return 1;
    pthread_barrier_wait(&ready);
    double t0 = plain_now_ms() / 1e3;
    pthread_barrier_wait(&ready);
    double t1 = plain_now_ms() / 1e3;
    for (long i = 0; i < threads; i++) pthread_join(t[i], NULL);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("random: %ld threads, %ld slots, %ld steps, 5 B-%ld B: %.2f ns a step, peak RSS %ld KiB\n", threads, slots, ops,
           1L << maxexp, (t1 - t0) * 1e9 / (double)ops, ru.ru_maxrss);
    return 0;
}
