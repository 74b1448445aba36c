/* pk-lab-spawn FD PROGRAM [ARGS...]: runs PROGRAM as its child and writes
 * "NS KIB\n" to descriptor FD: the child's time from fork to exit in
 * nanoseconds and its peak resident size (wait4's ru_maxrss).
 *
 * Why a program of its own: a process's ru_maxrss also counts the image it
 * had before its exec, so a program forked from pk-lab (whose own resident
 * size is larger than most programs it runs) would report pk-lab's size.
 * Forked from this small process, the program's peak is its own. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s FD PROGRAM [ARGS...]\n", argv[0]);
        return 125;
    }
    int fd = atoi(argv[1]);
    double t0 = now_ns();
    pid_t pid = fork();
    if (pid < 0) return 126;
    if (pid == 0) {
        close(fd);
        execv(argv[2], argv + 2);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) return 126;
    dprintf(fd, "%.0f %ld\n", now_ns() - t0, ru.ru_maxrss);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
