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
 * SIZE may list sizes, "64,48,128": the bursts take them in turn (a program
 * whose objects change size between phases); an allocator that keeps the
 * memory one size freed for that size alone holds the sum of the phases,
 * where the peak resident size (VmHWM, the summary's last figure) could
 * stay at the largest phase. A size may carry its own count, "102400x10000":
 * phases of big blocks and of many small ones (a parser's records, then a
 * tree of small nodes), whose peak could stay at the larger phase's.
 *
 * Usage: malloc_bursts [COUNT (1000000) SIZE[xCOUNT][,SIZE[xCOUNT]...] (32) SILENCE_MS (700) BURSTS (6) THREADS (0)]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plain_bursts.h"

static long count, counts[7]; /* this burst's; each size's */
static size_t sizes[7], size; /* the sizes in turn; this burst's */
static int nsizes, done;
static char **blocks;
static int threads;

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

/* One burst, on this thread or a thread of its own; non-zero if it failed. */
static int run_burst(void *unused) {
    (void)unused;
    void *failed = NULL;
    pthread_t worker;
    count = counts[done % nsizes];
    size = sizes[done++ % nsizes];
    if (!threads) failed = burst(&failed);
    else if (pthread_create(&worker, NULL, burst, &failed) != 0 || pthread_join(worker, &failed) != 0)
        failed = &worker;
    if (failed) fprintf(stderr, "malloc_bursts: a burst failed (malloc or pthread_create)\n");
    return failed != NULL;
}

/* "64,48x20,128" into sizes and counts (COUNT where a size has none); 0 if
 * it is not a list of up to 7 sizes. */
static int parse_sizes(const char *arg, long all) {
    for (char *at = (char *)arg; nsizes < 7;) {
        unsigned long v = strtoul(at, &at, 10);
        if (v < 1) return 0;
        counts[nsizes] = *at == 'x' ? strtol(at + 1, &at, 10) : all;
        if (counts[nsizes] < 1) return 0;
        sizes[nsizes++] = v;
        if (*at == '\0') return 1;
        if (*at++ != ',') return 0;
    }
    return 0;
}

int main(int argc, char **argv) {
    count = argc > 1 ? atol(argv[1]) : 1000000;
    int sizes_ok = count >= 1 && parse_sizes(argc > 2 ? argv[2] : "32", count);
    for (int i = 0; i < nsizes; i++)
        if (counts[i] > count) count = counts[i]; /* the blocks' array holds the most */
    long silence = argc > 3 ? atol(argv[3]) : 700;
    int bursts = argc > 4 ? atoi(argv[4]) : 6;
    threads = argc > 5 ? atoi(argv[5]) : 0;
    blocks = malloc((size_t)count * sizeof *blocks);
    if (count < 1 || !sizes_ok || silence < 0 || bursts < 3 || !blocks) {
        fprintf(stderr, "usage: %s [COUNT SIZE[,SIZE...] (up to 7) SILENCE_MS BURSTS (at least 3) THREADS (0 or 1)]\n",
                argv[0]);
        return 2;
    }
    char what[64];
    snprintf(what, sizeof what, "%ld x %s B", count, argc > 2 ? argv[2] : "32");
    int rc = plain_bursts("bursts", what, silence, bursts, threads ? ", a thread each" : "", run_burst, NULL);
    free(blocks);
    return rc;
}
