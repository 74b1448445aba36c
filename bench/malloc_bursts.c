/* Bursts after silences, as a plain C program that knows nothing of
 * poolkit, for running under LD_PRELOAD=libpoolkit-malloc.so and without
 * it (or under any other allocator): a batch job between sleeps, a server
 * between requests. Each burst allocates COUNT blocks of SIZE bytes, writes
 * each in full, frees them newest first; then the program sleeps SILENCE
 * milliseconds, making no call, and bursts again. An allocator that gives
 * memory back at the first call after a silence makes every burst fault
 * its memory in again, page by page.
 *
 * Prints one line per burst (its time and minor page faults, getrusage
 * ru_minflt) and a summary: the first two bursts, then the mean of the
 * rest. bench/run.sh runs it with and without libpoolkit-malloc.so:
 *   build/bench/malloc_bursts 1000000 32 700 6
 *   LD_PRELOAD=build/libpoolkit-malloc.so.0 build/bench/malloc_bursts 1000000 32 700 6
 *
 * With THREADS 1, each burst runs in a thread of its own, which ends after
 * it (a thread per request or per batch): an allocator that gives back at
 * a thread's exit what the next thread makes again faults it in again.
 *
 * Usage: malloc_bursts [COUNT (1000000) SIZE (32) SILENCE_MS (700) BURSTS (6) THREADS (0)]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static long minflt(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

static long count;
static size_t size;
static char **blocks;

/* One burst; NULL, or a pointer to say that malloc failed. */
static void *burst(void *arg) {
    for (long i = 0; i < count; i++) {
        blocks[i] = malloc(size);
        if (!blocks[i]) return arg;
        memset(blocks[i], (int)i, size);
    }
    for (long i = count; i-- > 0;) free(blocks[i]);
    return NULL;
}

int main(int argc, char **argv) {
    count = argc > 1 ? atol(argv[1]) : 1000000;
    size = argc > 2 ? (size_t)atol(argv[2]) : 32;
    long silence = argc > 3 ? atol(argv[3]) : 700;
    int bursts = argc > 4 ? atoi(argv[4]) : 6;
    int threads = argc > 5 ? atoi(argv[5]) : 0;
    blocks = malloc((size_t)count * sizeof *blocks);
    if (count < 1 || size < 1 || silence < 0 || bursts < 3 || !blocks) {
        fprintf(stderr, "usage: %s [COUNT SIZE SILENCE_MS BURSTS (at least 3) THREADS (0 or 1)]\n", argv[0]);
        return 2;
    }
    double rest_ms = 0, first_ms[2] = {0, 0};
    long rest_faults = 0, first_faults[2] = {0, 0};
    for (int b = 0; b < bursts; b++) {
        if (b) sleep_ms(silence);
        long f0 = minflt();
        double t0 = now_ms();
        void *failed = NULL;
        pthread_t worker;
        if (!threads) failed = burst(&failed);
        else if (pthread_create(&worker, NULL, burst, &failed) != 0 || pthread_join(worker, &failed) != 0)
            failed = &worker;
        if (failed) {
            fprintf(stderr, "malloc_bursts: a burst failed (malloc or pthread_create)\n");
            return 1;
        }
        double t = now_ms() - t0;
        long f = minflt() - f0;
        printf("  burst %d: %.2f ms, %ld minor faults\n", b + 1, t, f);
        if (b < 2) first_ms[b] = t, first_faults[b] = f;
        else rest_ms += t, rest_faults += f;
    }
    int rest = bursts - 2;
    printf("bursts: %ld x %zu B, silences of %ld ms: burst 1 %.2f ms %ld faults, burst 2 %.2f ms %ld faults, "
           "bursts 3-%d %.2f ms %.0f faults (mean)%s\n",
           count, size, silence, first_ms[0], first_faults[0], first_ms[1], first_faults[1], bursts,
           rest_ms / rest, (double)rest_faults / rest, threads ? ", a thread each" : "");
    free(blocks);
    return 0;
}
