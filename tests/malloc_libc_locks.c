/* Mallocs the C library makes while it holds a lock of its own, before the
 * program has allocated anything (ctest malloc.libc_locks.*), under the
 * malloc library in each mode. glibc grows its table of exit functions
 * (atexit) with calloc under the lock atexit takes, and its table of fork
 * handlers (pthread_atfork) with malloc under the lock pthread_atfork
 * takes. A library that installs its own exit or fork hooks when it makes
 * its first pool, and makes that pool at the first malloc, waits on that
 * lock forever: a C++ program with many static objects (node) hung so.
 * The test's time limit turns a hang into a failure.
 *
 * Usage: malloc_libc_locks atexit|atfork|freed|leak
 *   atexit  40 exit functions before any malloc; the last to run (the
 *           first registered) writes how many ran
 *   atfork  200 fork handlers before any malloc; then a fork, whose child
 *           allocates; writes how many handlers ran in the parent
 *   freed   one block made and freed: debug mode's leak summary at exit
 *           must name none
 *   leak    one block of 40 bytes kept: the summary must name it alone
 *           (its own working memory once counted as two more)
 * Nothing but write(2) prints, so that no stdio buffer allocates first. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { EXIT_FUNCTIONS = 40, FORK_HANDLERS = 200 };

static int ran;
static void *volatile kept;

static void say(const char *what, int n) {
    char line[64];
    int len = snprintf(line, sizeof line, "%s: %d ran\n", what, n);
    if (write(1, line, (size_t)len) != len) _exit(3);
}

static void counted(void) { ran++; }

static void last_exit_function(void) { say("exit functions", ran + 1); }

static void parent_handler(void) { ran++; }

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "atexit") == 0) {
        atexit(last_exit_function);
        for (int i = 1; i < EXIT_FUNCTIONS; i++) atexit(counted);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "atfork") == 0) {
        for (int i = 0; i < FORK_HANDLERS; i++) pthread_atfork(NULL, parent_handler, NULL);
        pid_t child = fork();
        if (child == 0) {
            char *p = malloc(100);
            _exit(p ? 0 : 1);
        }
        int status = 0;
        if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return 1;
        say("fork handlers", ran);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "freed") == 0) {
        kept = malloc(40);
        free(kept);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "leak") == 0) {
        kept = malloc(40);
        return kept ? 0 : 1;
    }
    static const char usage[] = "usage: malloc_libc_locks atexit|atfork|freed|leak\n";
    if (write(2, usage, sizeof usage - 1) < 0) return 2;
    return 2;
}
