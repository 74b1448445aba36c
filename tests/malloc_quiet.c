/* A huge block goes back at its free (ctest malloc.quiet.huge), run with
 * the malloc library preloaded: a 160 MiB block written and freed, no call
 * after, in a program that goes quiet (a buffer of hundreds of MiB freed
 * before a long wait): past LARGE_KEEP_MAX (policy.h) a freed mapping is
 * not kept for the purge delay, which runs on the library's calls.
 *
 * Writes the resident size before and after the free and whether the block
 * went back; exit status 0 when it did. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void) {
    const size_t len = (size_t)160 << 20;
    resident_mib(); /* stdio's buffers made before the measures */
    char *p = malloc(len);
    if (!p) return 3;
    memset(p, 1, len);
    __asm__ volatile("" : : "r"(p) : "memory");
    long before = resident_mib();
    free(p);
    long after = resident_mib();
    int back = before - after >= (long)(len >> 20) * 3 / 4;
    char line[128];
    int n = snprintf(line, sizeof line, "resident %ld MiB with the block, %ld MiB after its free: %s\n", before,
                     after, back ? "it went back" : "it stayed");
    if (write(1, line, (size_t)n) != n) return 4;
    return back ? 0 : 1;
}
