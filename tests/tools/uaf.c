/* Seeded bug: a use after free of a pool object.
 *
 * Usage: uaf read | write
 * Reads (or writes) an object after giving it back to its pool. Built with
 * POOLKIT_VALGRIND, memcheck reports an invalid read (write) inside a freed
 * block; built with POOLKIT_ASAN, AddressSanitizer reports a
 * use-after-poison. Without a tool build the bug goes unseen: the pool keeps
 * the memory. */
#include <poolkit/poolkit.h>

#include <stdio.h>
#include <string.h>

typedef struct point {
    double x, y, z;
    int id;
} point;

int main(int argc, char **argv) {
    int write_it = argc > 1 && strcmp(argv[1], "write") == 0;
    pk_pool_config c;
    memset(&c, 0, sizeof c);
    c.name = "points";
    c.size = sizeof(point);
    pk_pool *pool = pk_pool_create(&c);
    if (!pool) return 2;
    point *keep = pk_pool_alloc(pool); /* the object's slab stays */
    point *p = pk_pool_alloc(pool);
    if (!keep || !p) return 2;
    p->id = 42;
    pk_pool_free(pool, p);
    volatile point *stale = p;
    int seen = 0;
    if (write_it)
        stale->id = 7; /* BUG: write after free */
    else
        seen = stale->id; /* BUG: read after free */
    printf("uaf: %s done (%d)\n", write_it ? "write" : "read", seen);
    pk_pool_free(pool, keep);
    pk_pool_destroy(pool);
    return 0;
}
