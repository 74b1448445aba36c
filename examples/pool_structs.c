/* A pool of structs: particles that come and go.
 *
 * One pk_pool holds every particle. Allocation and free are a few
 * instructions on the thread's own slab; objects carry no header; the pool's
 * statistics say how much memory it holds. Build: cc pool_structs.c
 * $(pkg-config --cflags --libs poolkit) */
#include <poolkit/poolkit.h>

#include <stdio.h>
#include <stdlib.h>

typedef struct particle {
    float x, y, vx, vy;
    int ttl; /* steps left to live */
} particle;

#define MAX_LIVE 4096

int main(void) {
    pk_pool_config config = {0};
    config.name = "particles";
    config.size = sizeof(particle);
    config.reserve = 1024; /* ready before the first frame: no system call then */
    pk_pool *pool = pk_pool_create(&config);
    if (!pool) {
        perror("pk_pool_create");
        return 1;
    }

    particle *live[MAX_LIVE];
    size_t n = 0;
    unsigned seed = 1;
    for (int step = 0; step < 1000; step++) {
        /* Spawn a few. */
        for (int k = 0; k < 8 && n < MAX_LIVE; k++) {
            particle *p = pk_pool_alloc(pool);
            if (!p) {
                perror("pk_pool_alloc");
                return 1;
            }
            seed = seed * 1103515245u + 12345u;
            *p = (particle){0, 0, 1.0f, 0.5f, (int)(seed >> 16) % 200 + 1};
            live[n++] = p;
        }
        /* Move them; free the ones whose time is up. */
        for (size_t i = 0; i < n;) {
            particle *p = live[i];
            p->x += p->vx;
            p->y += p->vy;
            if (--p->ttl == 0) {
                pk_pool_free(pool, p);
                live[i] = live[--n];
            } else {
                i++;
            }
        }
    }

    pk_pool_stats stats;
    pk_pool_stats_get(pool, &stats);
    printf("pool '%s': %zu particles live, %zu-byte objects, %zu bytes reserved\n",
           stats.name, stats.live, stats.size, stats.bytes_reserved);

    while (n) pk_pool_free(pool, live[--n]);
    pk_pool_destroy(pool); /* with nothing live: no leak report */
    return 0;
}
