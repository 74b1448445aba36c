/* lab_spawn (util.c) leaves pk-lab's memory as it was: after a child is
 * started and reaped, writing again every page the parent had written
 * faults none of them in (a fork would make each copy-on-write: one minor
 * fault a page). The child's descriptor comes from the parent's pipe, as
 * lab_fresh_child's and the contender programs' do. Exit 0: it held. */
#include "lab.h"

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
    return 0;
}
