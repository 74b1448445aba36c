/* A fork in a program that links a library whose fork handlers allocate
 * (malloc_atfork_handlers.c), under the malloc library in each mode: the
 * child exits with the count its handlers ran (prepare's and its own),
 * the parent writes the count its own saw (prepare's and the parent's) and
 * the child's. Nothing but write(2) prints. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

extern int malloc_atfork_ran;

int main(void) {
    pid_t child = fork();
    if (child == 0) _exit(malloc_atfork_ran);
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return 1;
    char line[64];
    int len = snprintf(line, sizeof line, "fork handlers that allocate: %d ran\n",
                       malloc_atfork_ran + (WEXITSTATUS(status) == 2 ? 1 : 0));
    return write(1, line, (size_t)len) == len ? 0 : 1;
}
