/* A user's program for the ABI test (tests/CMakeLists.txt): creates a pool,
 * allocates and frees through the inline paths, and says so. Built three
 * ways against libpoolkit.so: on this release's headers (it must run), on a
 * copy of them whose PK_POOL_ABI is an earlier release's (its first call
 * must stop with poolkit's "ABI mismatch"), and on that copy with
 * PK_NO_INLINE (no inline path, so no layout to disagree on: it must run). */
#include <poolkit/poolkit.h>

#include <stdio.h>

int main(void) {
    pk_pool_config config = {.name = "abi", .size = 32};
    pk_pool *pool = pk_pool_create(&config);
    if (!pool) {
        perror("pk_pool_create");
        return 1;
    }
    for (int round = 0; round < 1000; round++) {
        void *obj = pk_pool_alloc(pool);
        if (!obj) {
            perror("pk_pool_alloc");
            return 1;
        }
        pk_pool_free(pool, obj);
    }
    pk_pool_destroy(pool);
    printf("abi program: built with pool ABI %d, ran with libpoolkit %s\n", PK_POOL_ABI, pk_version_string());
    return 0;
}
