/* The malloc-large shape (mimalloc-bench's malloc-large, after glibc's
 * benchtests) as a plain C program that knows nothing of poolkit, for
 * running under LD_PRELOAD=libpoolkit-malloc.so and without it:
 * 20 buffers, each iteration allocates a buffer of a random size from 5 to
 * 25 MiB, writes it in full (malloc-large's make_unique<char[]> zeroes it)
 * and then frees the buffer it replaces in a random slot, so that up to 21
 * are live at once. Single thread, fixed seed: every allocator sees the
 * same requests.
 *
 * Prints one line: seconds and minor page faults (getrusage ru_minflt) of
 * the loop alone. bench/run.sh runs it both ways, by hand:
 *   /usr/bin/time -f '%e s %R minor' build/bench/malloc_large
 *   LD_PRELOAD=build/libpoolkit-malloc.so.0 build/bench/malloc_large
 * bench_large runs the same shape through pk_alloc and malloc in one
 * process.
 *
 * Usage: malloc_large [ITERATIONS (2000)]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define BUFFERS 20
#define MIN_BYTES ((size_t)5 << 20)
#define MAX_BYTES ((size_t)25 << 20)

static uint64_t next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long minflt(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 2000;
    char *buf[BUFFERS] = {0};
    uint64_t seed = 42;
    long f0 = minflt();
    double t0 = now_s();
    for (long i = 0; i < iters; i++) {
        size_t slot = (size_t)(next(&seed) % BUFFERS);
        size_t size = MIN_BYTES + (size_t)(next(&seed) % (MAX_BYTES - MIN_BYTES + 1));
        char *p = malloc(size);
        if (!p) {
            perror("malloc");
            return 1;
        }
        /* The barrier keeps the compiler from turning malloc and a zeroing
         * memset into calloc (which a fresh mapping serves untouched). */
        __asm__ __volatile__("" : : "r"(p) : "memory");
        memset(p, 0, size);
        free(buf[slot]);
        buf[slot] = p;
    }
    double t = now_s() - t0;
    long f = minflt() - f0;
    unsigned sum = 0;
    for (int i = 0; i < BUFFERS; i++) {
        if (buf[i]) sum += (unsigned char)buf[i][0];
        free(buf[i]);
    }
    printf("malloc-large: %ld iterations, %.3f s, %ld minor faults%s\n", iters, t, f, sum ? " (?)" : "");
    return 0;
}
