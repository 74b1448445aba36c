/* poolkit's own contenders: pk_pool (typed pools with per-thread caches;
 * the fast path is inline from <poolkit/pool.h>) and pk_arena (bump
 * allocation, freed in bulk by pk_arena_reset). */
#include "lab.h"

#include <poolkit/poolkit.h>

static void *pkpool_open(size_t size) {
    pk_pool_config c = {0};
    c.name = "pk-lab";
    c.size = size;
    return pk_pool_create(&c);
}
static void pkpool_close(void *ctx) { pk_pool_destroy((pk_pool *)ctx); }

#define K_NAME pkpool
#define K_ALLOC(c, sz) pk_pool_alloc((pk_pool *)(c))
#define K_FREE(c, p, sz) pk_pool_free((pk_pool *)(c), (p))
#define K_FREES_EACH 1
#define K_THREADS 1
#include "kernels.h"
#undef K_NAME
#undef K_ALLOC
#undef K_FREE
#undef K_FREES_EACH
#undef K_THREADS
#undef K_RESET

/* Chunks sized so that the hot loop's 1024 objects between resets fit one
 * chunk, as a user sizing an arena for a batch would. */
static void *pkarena_open(size_t size) {
    size_t chunk = 1024 * ((size + 15) & ~(size_t)15);
    if (chunk < 65536) chunk = 65536;
    if (chunk > ((size_t)16 << 20)) chunk = (size_t)16 << 20;
    return pk_arena_create(chunk);
}
static void pkarena_close(void *ctx) { pk_arena_destroy((pk_arena *)ctx); }

#define K_NAME pkarena
#define K_ALLOC(c, sz) pk_arena_alloc((pk_arena *)(c), (sz), 0)
#define K_FREE(c, p, sz) ((void)(p))
#define K_RESET(c) pk_arena_reset((pk_arena *)(c))
#define K_FREES_EACH 0
#define K_THREADS 0
/* kernels.h guards its per-allocator part only by K_NAME: include it again. */
#include "kernels.h"

void lab_adapter_pk_pool(lab_allocator *a) {
    a->subject = "poolkit pk_pool";
    a->family = "poolkit";
    a->open = pkpool_open;
    a->close = pkpool_close;
    pkpool_fill(a);
    snprintf(a->version, sizeof a->version, "%s", lab_poolkit_version());
    a->available = 1;
}

void lab_adapter_pk_arena(lab_allocator *a) {
    a->subject = "poolkit pk_arena";
    a->family = "poolkit";
    a->open = pkarena_open;
    a->close = pkarena_close;
    pkarena_fill(a);
    snprintf(a->version, sizeof a->version, "%s", lab_poolkit_version());
    a->available = 1;
}
