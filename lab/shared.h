/* What bench/ and the lab share, written once: the fixed-seed random source
 * both use (splitmix64; PROTOCOL.md fixes it and the seed 0x5eed, so a
 * random order is the same order in `make bench` and in `pk-lab`), the
 * random permutation built from it, and the machine's CPU name for the
 * lines both print. Header-only: each builds it into its own programs
 * (workset.h, the working-set loop, is shared the same way). */
#ifndef PK_LAB_SHARED_H
#define PK_LAB_SHARED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct shared_rng {
    uint64_t state;
} shared_rng;

static inline uint64_t shared_rng_next(shared_rng *r) {
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double shared_rng_unit(shared_rng *r) {
    return (double)(shared_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform in [0, n), n > 0. */
static inline size_t shared_rng_below(shared_rng *r, size_t n) {
    return (size_t)(((shared_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* A random permutation of 0..n-1 from seed (Fisher-Yates). */
static inline void shared_permutation(uint32_t *order, long n, uint64_t seed) {
    shared_rng r = {seed};
    for (long i = 0; i < n; i++) order[i] = (uint32_t)i;
    for (long i = n - 1; i > 0; i--) {
        long j = (long)(shared_rng_next(&r) % (uint64_t)(i + 1));
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* The CPU's model name from /proc/cpuinfo, or "unknown CPU". */
static inline void shared_cpu_model(char *out, size_t len) {
    snprintf(out, len, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ' || *c == '\t') c++;
                c[strcspn(c, "\n")] = 0;
                snprintf(out, len, "%s", c);
            }
            break;
        }
    }
    fclose(f);
}

#endif
