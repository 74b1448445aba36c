/* A pool a burst, after silences: each burst makes a pool, allocates COUNT
 * objects of SIZE bytes (each written in full), frees them and destroys
 * the pool (a pool per request or per batch); then the program sleeps
 * SILENCE milliseconds, making no call, and bursts again. The places of a
 * destroyed pool's slabs stay backed for the purge delay, for the next
 * pool's slabs; given back at the first call after a silence, every burst
 * would fault them in again.
 *
 * Prints one line per burst (time, minor page faults) and a summary: the
 * first two bursts, then the mean of the rest (plain_bursts.h).
 *
 * Usage: pool_bursts [COUNT (10000) SIZE (960) SILENCE_MS (700) BURSTS (6)]
 */
#include <poolkit/pool.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plain_bursts.h"

static long count;
static size_t size;
static void **objs;

/* One burst: a pool made, filled, emptied and destroyed; non-zero if it
 * failed. */
static int burst(void *unused) {
    (void)unused;
    pk_pool *p = pk_pool_create(&(pk_pool_config){.name = "request", .size = size});
    if (!p) return 1;
    for (long i = 0; i < count; i++) {
        if (!(objs[i] = pk_pool_alloc(p))) return 1;
        memset(objs[i], (int)i, size);
    }
    for (long i = count; i-- > 0;) pk_pool_free(p, objs[i]);
    pk_pool_destroy(p);
    return 0;
}

int main(int argc, char **argv) {
    count = argc > 1 ? atol(argv[1]) : 10000;
    size = argc > 2 ? (size_t)atol(argv[2]) : 960;
    long silence = argc > 3 ? atol(argv[3]) : 700;
    int bursts = argc > 4 ? atoi(argv[4]) : 6;
    objs = malloc((size_t)count * sizeof *objs);
    if (count < 1 || size < 1 || silence < 0 || bursts < 3 || !objs) {
        fprintf(stderr, "usage: %s [COUNT SIZE SILENCE_MS BURSTS (at least 3)]\n", argv[0]);
        return 2;
    }
    char what[64];
    snprintf(what, sizeof what, "%ld x %zu B", count, size);
    int rc = plain_bursts("pool bursts", what, silence, bursts, "", burst, NULL);
    free(objs);
    return rc;
}
