/* Threads that each allocate a batch of blocks and free it, round after
 * round, at once, as a plain C program that knows nothing of poolkit, for
 * running under LD_PRELOAD=libpoolkit-malloc.so and without it (or under
 * any other allocator). Each of THREADS threads makes ROUNDS rounds of
 * COUNT blocks of 16 + (i * 7) % SPREAD bytes (i the block's place in the
 * round: sizes of many classes in turn), writes each block's first byte,
 * then frees them in the order made; GENERATIONS sets of threads run in
 * turn. Where the threads run on cores of their own, an allocator whose
 * threads reuse the memory they freed themselves scales with them; one
 * that hands each thread the slabs another just emptied makes every round
 * fetch lines the other core held last.
 *
 * Prints ns per allocation and free (the run's wall time over every pair of
 * every thread) and the peak RSS. bench/run.sh runs it under poolkit,
 * glibc and each peer the system has:
 *   build/bench/malloc_rounds 200 2 200 10000 300
 *   LD_PRELOAD=build/libpoolkit-malloc.so.0 build/bench/malloc_rounds 200 2 200 10000 300
 *
 * Usage: malloc_rounds [GENERATIONS (200) THREADS (2) ROUNDS (200) COUNT (10000) SPREAD (300)]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static long rounds = 200, count = 10000, spread = 300;

static void *worker(void *arg) {
    (void)arg;
    char **blocks = malloc((size_t)count * sizeof *blocks);
    if (!blocks) abort();
    for (long r = 0; r < rounds; r++) {
        for (long i = 0; i < count; i++) {
            blocks[i] = malloc(16 + (size_t)(i * 7 % spread));
            if (!blocks[i]) abort();
            blocks[i][0] = (char)i;
        }
        for (long i = 0; i < count; i++) free(blocks[i]);
    }
    free(blocks);
    return NULL;
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    long generations = argc > 1 ? atol(argv[1]) : 200, threads = argc > 2 ? atol(argv[2]) : 2;
    if (argc > 3) rounds = atol(argv[3]);
    if (argc > 4) count = atol(argv[4]);
    if (argc > 5) spread = atol(argv[5]);
    if (generations < 1 || threads < 1 || threads > 256 || rounds < 1 || count < 1 || spread < 1) {
        fprintf(stderr, "usage: %s [GENERATIONS THREADS (1-256) ROUNDS COUNT SPREAD]\n", argv[0]);
        return 2;
    }
    pthread_t t[256];
    double t0 = seconds();
    for (long g = 0; g < generations; g++) {
        for (long i = 0; i < threads; i++)
            if (pthread_create(&t[i], NULL, worker, NULL) != 0) return 1;
        for (long i = 0; i < threads; i++) pthread_join(t[i], NULL);
    }
    double pairs = (double)generations * (double)threads * (double)rounds * (double)count;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("rounds: %ld generations of %ld threads, %ld rounds of %ld blocks of 16-%ld B: %.2f ns a pair, peak RSS %ld KiB\n",
           generations, threads, rounds, count, 15 + spread, (seconds() - t0) / pairs * 1e9, ru.ru_maxrss);
    return 0;
}
