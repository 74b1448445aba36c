/* Memory the malloc library keeps for the purge delay goes back in a
 * program that goes quiet (ctest malloc.quiet.*), run with the library
 * preloaded and a purge delay of 100 ms:
 *
 *   calls  a 32 MiB block written and freed (kept for reuse), then 150
 *          pairs of malloc(100) and free, 10 ms apart, which all take the
 *          inline paths: free polls the purge every FREE_POLL_CALLS calls
 *          (policy.h), and the block goes back within the pairs
 *   huge   a 160 MiB block written and freed, no call after: a block past
 *          LARGE_KEEP_MAX goes back at its free
 *
 * Writes the resident size before and after and whether the block went
 * back; exit status 0 when it did. Nothing but write(2) prints, after the
 * block's free, so that no stdio buffer is made meanwhile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long resident_mib(void) {
    char buf[256];
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, pages = 0;
    if (!f) return -1;
    if (!fgets(buf, sizeof buf, f) || sscanf(buf, "%ld %ld", &size, &pages) != 2) pages = -1;
    fclose(f);
    return pages < 0 ? -1 : pages * sysconf(_SC_PAGESIZE) >> 20;
}

int main(int argc, char **argv) {
    int huge = argc == 2 && strcmp(argv[1], "huge") == 0;
    if (!huge && !(argc == 2 && strcmp(argv[1], "calls") == 0)) {
        fputs("usage: malloc_quiet calls|huge\n", stderr);
        return 2;
    }
    size_t len = (size_t)(huge ? 160 : 32) << 20;
    resident_mib(); /* stdio's buffers made before the measures */
    char *p = malloc(len);
    if (!p) return 3;
    memset(p, 1, len);
    __asm__ volatile("" : : "r"(p) : "memory");
    long before = resident_mib();
    free(p);
    if (!huge) {
        struct timespec gap = {0, 10 * 1000 * 1000};
        for (int i = 0; i < 150; i++) {
            nanosleep(&gap, NULL);
            void *x = malloc(100);
            __asm__ volatile("" : : "r"(x) : "memory");
            free(x);
        }
    }
    long after = resident_mib();
    int back = before - after >= (long)(len >> 20) * 3 / 4;
    char line[128];
    int n = snprintf(line, sizeof line, "resident %ld MiB with the block, %ld MiB after: %s\n", before, after,
                     back ? "it went back" : "it stayed");
    if (write(1, line, (size_t)n) != n) return 4;
    return back ? 0 : 1;
}
