/* A program outside poolkit, built against an installed copy: it sees only
 * the installed headers and libraries, as a user's project would. */
#include <poolkit/poolkit.h>

#include <stdio.h>
#include <string.h>

struct point { double x, y, z; };

int main(void) {
    pk_pool_config config;
    memset(&config, 0, sizeof config);
    config.name = "points";
    config.size = sizeof(struct point);

    pk_pool *pool = pk_pool_create(&config);
    if (!pool) {
        perror("pk_pool_create");
        return 1;
    }
    enum { N = 1000 };
    static struct point *points[N];
    for (int i = 0; i < N; i++) {
        points[i] = pk_pool_alloc(pool);
        if (!points[i]) {
            perror("pk_pool_alloc");
            return 1;
        }
        points[i]->x = i;
        points[i]->y = 2.0 * i;
        points[i]->z = 3.0 * i;
    }
    for (int i = 0; i < N; i++) {
        if (points[i]->y != 2.0 * i || pk_pool_owner(points[i]) != pool) {
            fprintf(stderr, "consumer: object %d damaged or not owned\n", i);
            return 1;
        }
    }
    for (int i = 0; i < N; i++)
        pk_pool_free(pool, points[i]);
    pk_pool_destroy(pool);
    printf("consumer: poolkit %s, %d objects allocated and freed\n", PK_VERSION_STRING, N);
    return 0;
}
