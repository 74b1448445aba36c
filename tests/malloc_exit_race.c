/* exit() from one thread while others allocate and free (ctest
 * malloc.exit_race.*), under the malloc library in each mode: debug
 * mode's summary at exit walks the pools while the other threads' calls
 * go on, and must take each pool's lock to do so. Each of RUNS children
 * starts four threads that replace blocks of 1-4096 bytes, lets them run
 * a few milliseconds and calls exit(3); every child must end with status
 * 3 (a walk that met a list another thread was changing reported it as
 * corrupted and aborted, about one run in thirty). Writes how many did. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { RUNS = 150, THREADS = 4, SLOTS = 64 };

static void *churn(void *arg) {
    void *slot[SLOTS] = {0};
    unsigned s = (unsigned)(size_t)arg;
    for (;;) {
        s = s * 1103515245u + 12345u;
        unsigned i = (s >> 8) % SLOTS;
        size_t n = (s >> 16) % 4096 + 1;
        free(slot[i]);
        slot[i] = malloc(n);
        if (slot[i]) memset(slot[i], 1, n);
    }
    return NULL;
}

static void child(void) {
    pthread_t t;
    for (size_t i = 0; i < THREADS; i++)
        if (pthread_create(&t, NULL, churn, (void *)(i + 1)) != 0) _exit(4);
    struct timespec gap = {0, 15 * 1000 * 1000};
    nanosleep(&gap, NULL);
    exit(3);
}

int main(void) {
    int ended = 0;
    for (int r = 0; r < RUNS; r++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) child();
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid) return 2;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 3) ended++;
        else fprintf(stderr, "run %d: %s %d\n", r, WIFEXITED(status) ? "status" : "signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    }
    printf("exit while threads allocate: %d of %d runs ended with status 3\n", ended, RUNS);
    return ended == RUNS ? 0 : 1;
}
