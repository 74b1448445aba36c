/* The fork handlers of a library a program links (malloc_atfork.c): each
 * allocates and frees a block of a size no class served before (3000
 * bytes) and one past the classes (1 MiB). The library's constructor
 * registers them, and runs before the malloc library's (a preloaded
 * library's constructors run after those of the program's own), so they
 * run between the malloc library's own prepare handler and its parent or
 * child handler (ctest malloc.atfork_allocating.*). */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

int malloc_atfork_ran;

static void allocating(void) {
    void *a = malloc(3000), *b = malloc(1 << 20);
    if (!a || !b) _exit(4);
    free(a);
    free(b);
    malloc_atfork_ran++;
}

__attribute__((constructor)) static void install(void) { pthread_atfork(allocating, allocating, allocating); }
