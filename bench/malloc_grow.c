/* Buffers grown together by realloc, as a plain C program that knows
 * nothing of poolkit, for running under LD_PRELOAD=libpoolkit-malloc.so
 * and without it: BUFFERS buffers (a reader's lines, a server's
 * connections, a parser's strings), each with a length drawn once from a
 * quarter of MOST to MOST; round after round each buffer not yet at its
 * length grows by STEP bytes through realloc and the new bytes are written.
 * The buffers pass through every size class together, and most leave the
 * classes for mapped blocks: what an allocator keeps of the places they
 * left shows in its peak. Fixed seed.
 *
 * With THREADS, that many threads run one after another, each created
 * once the last has exited: each frees the buffers the last one grew and
 * grows as many of its own as above (a server whose workers come and go,
 * each taking over what the last one left): what an allocator does with
 * the pages a thread that exited freed shows in its faults and time.
 * With AT_ONCE as well, that many run at once, each with buffers of its
 * own, THREADS times over: resizes of blocks of their own on every
 * thread together, which a lock on every resize serializes.
 *
 * Prints one line: the loop's seconds, its minor page faults (getrusage
 * ru_minflt), the process's peak resident size (VmHWM) and the bytes live
 * at the end. bench/run.sh runs it with and without the preload:
 *   build/bench/malloc_grow
 *   LD_PRELOAD=build/libpoolkit-malloc.so.0 build/bench/malloc_grow
 *
 * Usage: malloc_grow [BUFFERS (1000) [MOST (262144) [STEP (256) [THREADS (0) [AT_ONCE (1)]]]]]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plain_bursts.h" /* its clock, fault count and peak */

static size_t n, step;
static char **all_buf; /* AT_ONCE sets of n, one a thread */
static size_t *all_len, *want;

/* Every buffer of a set (arg: its index) freed, then grown in turn by
 * step bytes to its length. */
static void *grow_all(void *arg) {
    size_t set = (size_t)(uintptr_t)arg;
    char **buf = all_buf + set * n;
    size_t *len = all_len + set * n;
    for (size_t i = 0; i < n; i++) {
        free(buf[i]);
        buf[i] = NULL;
        len[i] = 0;
    }
    for (int grew = 1; grew;) {
        grew = 0;
        for (size_t i = 0; i < n; i++) {
            if (len[i] + step > want[i]) continue;
            char *p = realloc(buf[i], len[i] + step);
            if (!p) {
                perror("realloc");
                exit(1);
            }
            memset(p + len[i], (int)i, step);
            buf[i] = p;
            len[i] += step;
            grew = 1;
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    n = argc > 1 ? (size_t)atol(argv[1]) : 1000;
    size_t most = argc > 2 ? (size_t)atol(argv[2]) : 262144;
    step = argc > 3 ? (size_t)atol(argv[3]) : 256;
    long threads = argc > 4 ? atol(argv[4]) : 0, at_once = argc > 5 ? atol(argv[5]) : 1;
    if (n == 0 || step == 0 || most < 4 * step || threads < 0 || at_once < 1 || at_once > 64) {
        fprintf(stderr, "usage: malloc_grow [BUFFERS [MOST [STEP [THREADS [AT_ONCE]]]]], MOST at least 4 STEPs, "
                        "AT_ONCE 1 to 64\n");
        return 2;
    }
    all_buf = calloc(n * (size_t)at_once, sizeof *all_buf);
    all_len = calloc(n * (size_t)at_once, sizeof *all_len), want = calloc(n, sizeof *want);
    if (!all_buf || !all_len || !want) return 1;
    uint64_t seed = 42;
    size_t live = 0;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u; /* Knuth's MMIX generator */
        want[i] = most / 4 + (size_t)((seed >> 33) % (most - most / 4 + 1));
        live += want[i] / step * step * (size_t)at_once;
    }
    long f0 = plain_minflt();
    double t0 = plain_now_ms();
    if (!threads) grow_all(NULL);
    for (long k = 0; k < threads; k++) {
        pthread_t t[64];
        for (long j = 0; j < at_once; j++)
            if (pthread_create(&t[j], NULL, grow_all, (void *)(uintptr_t)j) != 0) {
                perror("pthread_create");
                return 1;
            }
        for (long j = 0; j < at_once; j++) pthread_join(t[j], NULL);
    }
    double t = (plain_now_ms() - t0) / 1e3;
    long faults = plain_minflt() - f0, peak = plain_peak_kib();
    unsigned sum = 0;
    for (size_t i = 0; i < n * (size_t)at_once; i++) {
        if (all_buf[i]) sum += (unsigned char)(all_buf[i][all_len[i] - 1] - (unsigned char)(i % n));
        free(all_buf[i]);
    }
    char how[64] = "";
    if (threads && at_once > 1) snprintf(how, sizeof how, " by %ld threads in turn, %ld at once", threads, at_once);
    else if (threads) snprintf(how, sizeof how, " by %ld threads in turn", threads);
    printf("malloc-grow: %zu buffers by %zu B to %zu-%zu B%s, %.3f s, %ld minor faults, peak RSS %ld KiB, "
           "%zu KiB live%s\n",
           n, step, most / 4, most, how, t, faults, peak, live >> 10, sum ? " (?)" : "");
    return 0;
}
