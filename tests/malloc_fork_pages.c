/* The pages a fork copies because of the allocator: a program holding
 * blocks of some forty size classes forks again and again, each child
 * exiting at once, and prints the minor faults per fork of the parent and
 * of the child. Each page written after a fork is copied, so an allocator
 * whose fork handlers write a page per pool (a lock in each pool's record)
 * pays a fault per pool on each side; malloc_fork_pages.sh compares the
 * counts with the same program's under the C library's malloc.
 *
 *     malloc_fork_pages [FORKS (64) [LIVE (1000)]]
 * prints "parent N.N child N.N us N.N": faults per fork on each side,
 * microseconds per fork from fork to the child's reaping. With
 * MALLOC_FORK_PAGES_PAUSE=S in the environment it waits S seconds after its
 * allocations, before the forks, for a look at /proc/PID. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAX_BYTES = 4000 };

int main(int argc, char **argv) {
    int forks = argc > 1 ? atoi(argv[1]) : 64;
    int count = argc > 2 ? atoi(argv[2]) : 1000;
    if (count < 1) return 2;
    void **live = malloc(sizeof *live * (size_t)count);
    if (!live) return 2;
    unsigned s = 1;
    for (int i = 0; i < count; i++) {
        s = s * 1103515245u + 12345u;
        live[i] = malloc(16 + (s >> 16) % MAX_BYTES);
        if (!live[i]) return 2;
    }
    const char *pause = getenv("MALLOC_FORK_PAGES_PAUSE");
    if (pause) sleep((unsigned)atoi(pause));
    struct rusage self0, self1, kids0, kids1;
    getrusage(RUSAGE_SELF, &self0);
    getrusage(RUSAGE_CHILDREN, &kids0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < forks; i++) {
        pid_t pid = fork();
        if (pid < 0) return 2;
        if (pid == 0) _exit(0);
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    getrusage(RUSAGE_SELF, &self1);
    getrusage(RUSAGE_CHILDREN, &kids1);
    double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3 / forks;
    printf("parent %.1f child %.1f us %.1f\n", (double)(self1.ru_minflt - self0.ru_minflt) / forks,
           (double)(kids1.ru_minflt - kids0.ru_minflt) / forks, us);
    for (int i = 0; i < count; i++) free(live[i]);
    free(live);
    return 0;
}
