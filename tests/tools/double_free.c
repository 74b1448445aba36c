/* Seeded bug: an object given back to its pool twice, with another free in
 * between (so it is not at the head of the free list).
 *
 * Built with POOLKIT_VALGRIND, memcheck reports the second free as an
 * invalid free. With POOLKIT_DEBUG=1 in the environment, poolkit itself
 * reports "double free" (naming the pool and the object) and aborts, in any
 * build. */
#include <poolkit/poolkit.h>

#include <stdio.h>
#include <string.h>

int main(void) {
    pk_pool_config c;
    memset(&c, 0, sizeof c);
    c.name = "sessions";
    c.size = 96;
    pk_pool *pool = pk_pool_create(&c);
    if (!pool) return 2;
    void *a = pk_pool_alloc(pool);
    void *b = pk_pool_alloc(pool);
    if (!a || !b) return 2;
    pk_pool_free(pool, a);
    pk_pool_free(pool, b);
    pk_pool_free(pool, a); /* BUG: a was freed already */
    printf("double_free: not detected\n");
    void *x = pk_pool_alloc(pool), *y = pk_pool_alloc(pool);
    printf("double_free: the pool now hands out %p and %p\n", x, y);
    return 0;
}
