/* The loop of the burst programs (malloc_bursts, pool_bursts): bursts
 * separated by silences, each timed and its minor page faults counted
 * (getrusage ru_minflt), one line a burst and a summary: the first two
 * bursts, then the mean of the rest, and the process's peak resident size.
 * Header-only, so that a program that must link nothing but libc
 * (malloc_bursts, run under LD_PRELOAD) has it. */
#ifndef POOLKIT_BENCH_PLAIN_BURSTS_H
#define POOLKIT_BENCH_PLAIN_BURSTS_H

#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

static inline double plain_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The process's peak resident size (VmHWM), KiB; -1 where unknown. */
static inline long plain_peak_kib(void) {
    long kib = -1;
    char line[128];
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
    fclose(f);
    return kib;
}

static inline long plain_minflt(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/* bursts (at least 3) calls of burst(arg), silence ms apart; label and
 * what (the summary's words: "bursts", "1000000 x 32 B") and tail (after
 * it). 0, or 1 when a burst returned non-zero. */
static inline int plain_bursts(const char *label, const char *what, long silence, int bursts, const char *tail,
                               int (*burst)(void *), void *arg) {
    double rest_ms = 0, first_ms[2] = {0, 0};
    long rest_faults = 0, first_faults[2] = {0, 0};
    for (int b = 0; b < bursts; b++) {
        if (b) {
            struct timespec t = {silence / 1000, (silence % 1000) * 1000000L};
            while (nanosleep(&t, &t) != 0) {
            }
        }
        long f0 = plain_minflt();
        double t0 = plain_now_ms();
        if (burst(arg) != 0) return 1;
        double t = plain_now_ms() - t0;
        long f = plain_minflt() - f0;
        printf("  burst %d: %.2f ms, %ld minor faults\n", b + 1, t, f);
        if (b < 2) first_ms[b] = t, first_faults[b] = f;
        else rest_ms += t, rest_faults += f;
    }
    printf("%s: %s, silences of %ld ms: burst 1 %.2f ms %ld faults, burst 2 %.2f ms %ld faults, "
           "bursts 3-%d %.2f ms %.0f faults (mean)%s, peak RSS %ld KiB\n",
           label, what, silence, first_ms[0], first_faults[0], first_ms[1], first_faults[1], bursts,
           rest_ms / (bursts - 2), (double)rest_faults / (bursts - 2), tail, plain_peak_kib());
    return 0;
}

#endif
