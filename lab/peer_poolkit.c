/* poolkit's own contenders: pk_pool (typed pools with per-thread caches;
 * the fast path is inline from <poolkit/pool.h>) and pk_arena (bump
 * allocation, freed in bulk by pk_arena_reset). */
#include "lab.h"

#include <poolkit/poolkit.h>

static void *pkpool_create(size_t size, const char *name, unsigned flags) {
    pk_pool_config c = {0};
    c.name = name;
    c.size = size;
    c.flags = flags;
    return pk_pool_create(&c);
}
static void *pkpool_open(size_t size) { return pkpool_create(size, "pk-lab", 0); }
/* The other modes run the same kernels: only the pool differs. */
static void *pkpool_open_local(size_t size) { return pkpool_create(size, "pk-lab local", PK_POOL_LOCAL); }
static void *pkpool_open_hardened(size_t size) {
    return pkpool_create(size, "pk-lab hardened", PK_POOL_HARDENED);
}
static void *pkpool_open_debug(size_t size) { return pkpool_create(size, "pk-lab debug", PK_POOL_DEBUG); }
static void pkpool_close(void *ctx) { pk_pool_destroy((pk_pool *)ctx); }

#define K_NAME pkpool
#define K_ALLOC(c, sz) pk_pool_alloc((pk_pool *)(c))
#define K_FREE(c, p, sz) pk_pool_free((pk_pool *)(c), (p))
#define K_FREES_EACH 1
#define K_THREADS 1
#include "kernels.h"
#undef K_NAME

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

static void pk_pool_mode(lab_allocator *a, const char *subject, void *(*open)(size_t)) {
    a->subject = subject;
    a->family = "poolkit";
    a->open = open;
    a->close = pkpool_close;
    pkpool_fill(a);
    snprintf(a->version, sizeof a->version, "%s", lab_poolkit_version());
    a->available = 1;
}

void lab_adapter_pk_pool(lab_allocator *a) { pk_pool_mode(a, "poolkit pk_pool", pkpool_open); }
void lab_adapter_pk_pool_local(lab_allocator *a) {
    pk_pool_mode(a, "poolkit pk_pool LOCAL", pkpool_open_local);
}
void lab_adapter_pk_pool_hardened(lab_allocator *a) {
    pk_pool_mode(a, "poolkit pk_pool HARDENED", pkpool_open_hardened);
}
void lab_adapter_pk_pool_debug(lab_allocator *a) {
    pk_pool_mode(a, "poolkit pk_pool DEBUG", pkpool_open_debug);
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
