/* The lab's children, two promises:
 * - lab_spawn (util.c) leaves pk-lab's memory as it was: after a child is
 *   started and reaped, writing again every page the parent had written
 *   faults none of them in (a fork would make each copy-on-write: one
 *   minor fault a page). The child's descriptor comes from the parent's
 *   pipe, as lab_fresh_child's and the contender programs' do.
 * - a measuring child (lab_in_child, shared.h) counts its own growth: the
 *   parent frees GROWTH_MIB of pk_alloc's blocks (its size class keeps
 *   them, resident, for the purge delay), the child allocates as much of
 *   the same size and must count it, not reuse the parent's free memory
 *   unseen.
 * Exit 0: both held. */
#include "lab.h"

#include <poolkit/alloc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGES 2048

static long minor_faults(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_minflt;
}

#define GROWTH_MIB 16
#define BLOCK 4096

static void grow(void *arg, double *out) {
    (void)arg;
    size_t n = ((size_t)GROWTH_MIB << 20) / BLOCK;
    for (size_t i = 0; i < n; i++) {
        char *p = pk_alloc(BLOCK);
        if (p) memset(p, 1, BLOCK); /* kept: the child ends */
    }
    out[0] = 1;
}

/* The measuring child's growth, with the parent's free blocks of the same
 * class resident. 0 if it held. */
static int child_counts_its_own(void) {
    size_t n = ((size_t)GROWTH_MIB << 20) / BLOCK;
    void **blocks = malloc(n * sizeof *blocks);
    if (!blocks) return 2;
    for (size_t i = 0; i < n; i++) {
        blocks[i] = pk_alloc(BLOCK);
        if (blocks[i]) memset(blocks[i], 1, BLOCK);
    }
    for (size_t i = 0; i < n; i++) pk_free(blocks[i]);
    free(blocks);
    double out[2];
    if (lab_in_child(grow, NULL, out, 1) != 0 || out[0] != 1) {
        fprintf(stderr, "FAIL: the measuring child failed\n");
        return 1;
    }
    /* lab_in_child gives KiB; at least three quarters of what it wrote */
    if (out[1] < (double)(GROWTH_MIB * 1024 * 3 / 4)) {
        fprintf(stderr, "FAIL: a child that wrote %d MiB of new blocks counted %.0f KiB of growth\n", GROWTH_MIB,
                out[1]);
        return 1;
    }
    printf("lab_in_child: %.0f KiB of growth for %d MiB written beside the parent's free blocks\n", out[1],
           GROWTH_MIB);
    return 0;
}

int main(void) {
    long page = sysconf(_SC_PAGESIZE);
    char *mem = malloc((size_t)PAGES * (size_t)page);
    int fds[2];
    if (!mem || pipe(fds) != 0) return 2;
    memset(mem, 1, (size_t)PAGES * (size_t)page);
    char *argv[] = {"/bin/sh", "-c", "echo started >&3", NULL};
    int to = 3;
    pid_t pid = lab_spawn(argv[0], argv, &fds[1], &to, 1, fds[0], 0);
    char line[64];
    int status = lab_child_report(pid, fds, line, sizeof line);
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || strcmp(line, "started\n") != 0) {
        fprintf(stderr, "FAIL: the child did not run or write to its descriptor 3 (status %d, \"%s\")\n", status,
                line);
        return 1;
    }
    long before = minor_faults();
    for (long i = 0; i < PAGES; i++) mem[i * page] = 2;
    long faults = minor_faults() - before;
    /* a few for the loop's own stack and code, never one a page */
    if (faults > PAGES / 8) {
        fprintf(stderr, "FAIL: %ld minor faults writing %d pages written before the child started\n", faults,
                PAGES);
        return 1;
    }
    printf("lab_spawn: %ld minor faults writing %d pages after a child\n", faults, PAGES);
    free(mem);
    return child_counts_its_own();
}
