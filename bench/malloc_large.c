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
 * the loop alone, and the process's mappings at its end (the lines of
 * /proc/self/maps, which Linux caps: vm.max_map_count). bench/run.sh runs
 * it both ways, by hand:
 *   /usr/bin/time -f '%e s %R minor' build/bench/malloc_large
 *   LD_PRELOAD=build/libpoolkit-malloc.so.0 build/bench/malloc_large
 * bench_large runs the same shape through pk_alloc and malloc in one
 * process. Other counts and sizes make other shapes: 10,000 live blocks
 * of 64 KiB to 256 KiB, the size classes past a slab's place,
 *   build/bench/malloc_large 200000 10000 65537 262144
 * and with WRITE "ends" (a byte at each end of a block, not every byte),
 * many live blocks in little memory: the mappings they hold,
 *   build/bench/malloc_large 300000 40000 262145 1000000 ends
 * and with ALIGN, blocks from posix_memalign at that alignment:
 *   build/bench/malloc_large 300000 70000 300000 300000 ends 131072
 *
 * Usage: malloc_large [ITERATIONS (2000) [BUFFERS (20) [MIN_BYTES (5 MiB)
 *                     [MAX_BYTES (25 MiB) [WRITE (all | ends) [ALIGN]]]]]]
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>


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

static long mappings(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    long n = 0;
    for (int c; f && (c = fgetc(f)) != EOF;) n += c == '\n';
    if (f) fclose(f);
    return n;
}

int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 2000;
    size_t buffers = argc > 2 ? (size_t)atol(argv[2]) : 20;
    size_t min_bytes = argc > 3 ? (size_t)atol(argv[3]) : (size_t)5 << 20;
    size_t max_bytes = argc > 4 ? (size_t)atol(argv[4]) : (size_t)25 << 20;
    bool ends = argc > 5 && strcmp(argv[5], "ends") == 0;
    size_t align = argc > 6 ? (size_t)atol(argv[6]) : 0;
    if (buffers < 1 || min_bytes < 1 || max_bytes < min_bytes || (argc > 5 && !ends && strcmp(argv[5], "all")) ||
        (align & (align - 1)) || (align && align < sizeof(void *))) {
        fprintf(stderr, "usage: malloc_large [ITERATIONS [BUFFERS [MIN_BYTES [MAX_BYTES [all|ends [ALIGN]]]]]]\n");
        return 2;
    }
    char **buf = calloc(buffers, sizeof *buf);
    if (!buf) return 1;
    uint64_t seed = 42;
    long f0 = minflt();
    double t0 = now_s();
    for (long i = 0; i < iters; i++) {
        size_t slot = (size_t)(next(&seed) % buffers);
        size_t size = min_bytes + (size_t)(next(&seed) % (max_bytes - min_bytes + 1));
        void *m = NULL;
        if (align ? posix_memalign(&m, align, size) != 0 : (m = malloc(size)) == NULL) {
            perror("malloc");
            return 1;
        }
        char *p = m;
        /* The barrier keeps the compiler from turning malloc and a zeroing
         * memset into calloc (which a fresh mapping serves untouched). */
        __asm__ __volatile__("" : : "r"(p) : "memory");
        if (ends) p[0] = p[size - 1] = 0;
        else memset(p, 0, size);
        free(buf[slot]);
        buf[slot] = p;
    }
    double t = now_s() - t0;
    long f = minflt() - f0, maps = mappings();
    unsigned sum = 0;
    for (size_t i = 0; i < buffers; i++) {
        if (buf[i]) sum += (unsigned char)buf[i][0];
        free(buf[i]);
    }
    free(buf);
    printf("malloc-large: %ld iterations, %.3f s, %ld minor faults, %ld mappings%s\n", iters, t, f, maps,
           sum ? " (?)" : "");
    return 0;
}
