/* A slab adopted from a thread gone is an ordinary owned slab, white-box:
 * the owner's frees into it take the short path (pool_free.h, free_short),
 * which alone counts in the heap's short_frees.
 *
 * A thread fills one slab and exits with every object live; the main
 * thread refills once (so it may adopt a slab: a new one, as the pool
 * has none with a free slot), frees one of them
 * (the heap path adopts the slab, which was full), then all but the last:
 * each is the short path's. Exit 0: passed; 77: skipped (no inline path
 * serves the pool in this build: a tool build). */
#include "pool/pool_internal.h"

#include <poolkit/poolkit.h>

#include "check.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define OBJECTS ((int)(SLAB_BYTES / 128)) /* one slab of 128-byte slots, full */

static pk_pool *pool;
static void *objs[OBJECTS];

static void *fill(void *arg) {
    (void)arg;
    for (int i = 0; i < OBJECTS; i++) objs[i] = pk_pool_alloc(pool);
    return NULL; /* exits with every object live */
}

int main(void) {
    pk_pool_config c = {0};
    c.name = "adopted";
    c.size = 128;
    pool = pk_pool_create(&c);
    CHECK(pool != NULL, "pk_pool_create failed");
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fill, NULL) == 0, "pthread_create failed");
    pthread_join(t, NULL);
    for (int i = 0; i < OBJECTS; i++) CHECK(objs[i] && slab_of((uintptr_t)objs[i]) == slab_of((uintptr_t)objs[0]), "object %d", i);
    CHECK(slab_of((uintptr_t)objs[0])->capacity == OBJECTS, "the slab holds %u", slab_of((uintptr_t)objs[0])->capacity);

    void *mine = pk_pool_alloc(pool); /* a refill: this thread may adopt a slab */
    CHECK(mine != NULL, "alloc failed");
    tc_slot *slot = tc_slot_of(pool);
    if (slot->low != 0) {
        printf("skipped: no inline path serves the pool in this build\n");
        return 77;
    }
    slab *s = slab_of((uintptr_t)objs[0]);
    CHECK(slab_of((uintptr_t)mine) != s, "the test needs the adopted slab to be another than the current one");

    uint64_t before = slot->heap->short_frees;
    pk_pool_free(pool, objs[0]); /* adopts the slab, on the heap path: it was full */
    CHECK(__atomic_load_n(&s->owner, __ATOMIC_RELAXED) == slot->heap, "the free did not adopt the slab");
    const int n = OBJECTS - 2; /* all but the first and the last, whose free empties the slab */
    for (int i = 1; i <= n; i++) pk_pool_free(pool, objs[i]);
    CHECK(slot->heap->short_frees - before == (uint64_t)n,
          "%llu of %d frees into the adopted slab took the short path",
          (unsigned long long)(slot->heap->short_frees - before), n);

    pk_pool_free(pool, objs[OBJECTS - 1]);
    pk_pool_free(pool, mine);
    pk_pool_stats st;
    pk_pool_stats_get(pool, &st);
    CHECK(st.live == 0, "%zu objects live at the end", st.live);
    pk_pool_destroy(pool);
    printf("passed: %d frees into an adopted slab took the short path\n", n);
    return 0;
}
