/* A C program on the Conan package: a pool, a thousand objects, and the
 * library's version, which must be the package's. */
#include <poolkit/poolkit.h>

#include <stdio.h>
#include <string.h>

int main(void) {
    pk_pool_config config = {.name = "conan", .size = 24};
    pk_pool *pool = pk_pool_create(&config);
    if (!pool) {
        perror("pk_pool_create");
        return 1;
    }
    void *objs[1000];
    for (int i = 0; i < 1000; i++)
        if (!(objs[i] = pk_pool_alloc(pool))) return 1;
    for (int i = 0; i < 1000; i++) pk_pool_free(pool, objs[i]);
    pk_pool_stats st;
    pk_pool_stats_get(pool, &st);
    pk_pool_destroy(pool);
    if (st.live != 0 || strcmp(pk_version_string(), PK_VERSION_STRING) != 0) {
        fprintf(stderr, "conan consumer: live %zu, library %s, headers %s\n", st.live, pk_version_string(),
                PK_VERSION_STRING);
        return 1;
    }
    printf("conan consumer: poolkit %s, 1000 objects allocated and freed\n", pk_version_string());
    return 0;
}
