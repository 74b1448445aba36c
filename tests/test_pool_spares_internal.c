/* A heap's spares, white-box (heap.c, HEAP_SPARE in policy.h): where a slab
 * holds one object, the heap keeps several of the slabs its own frees
 * empty, the last emptied first out, and its next allocations take them
 * without the pool; where a slab holds many, one.
 *
 * Objects of 1 MiB (one per slab): the main thread allocates more than its
 * list, its spares and its current slab can take back, frees them all, and
 * allocates again; while the spares last, no slab comes from the pool, and
 * they come in the reverse order of their emptying; the thread's trim, and
 * a thread's exit then a trim, give every spare back. Then a pool of
 * 64-byte objects keeps one spare. Exit 0: passed. */
#include "pool/pool_internal.h"

#include <poolkit/poolkit.h>

#include "check.h"

#include <pthread.h>

#define BIG ((size_t)1 << 20)
#define MORE 3

/* The pool's fields past its lock differ between a build with assertions
 * and one without (pool_types.h): the test reads slabs' owners only. */
static heap *owner_of(const void *obj) {
    return __atomic_load_n(&slab_of((uintptr_t)obj)->owner, __ATOMIC_RELAXED);
}

/* On a thread of its own: as many objects as the list, the spares and
 * more take, all freed, so the thread ends with its spares full. */
static void *fill_and_free(void *arg) {
    pk_pool *pool = arg;
    size_t n = pool->hot_list + pool->spares + MORE + 1;
    void *objs[64];
    CHECK(n <= sizeof objs / sizeof objs[0], "too many objects for the test: %zu", n);
    for (size_t i = 0; i < n; i++) {
        objs[i] = pk_pool_alloc(pool);
        CHECK(objs[i] != NULL, "alloc %zu failed", i);
    }
    for (size_t i = 0; i < n; i++) pk_pool_free(pool, objs[i]);
    heap *h = tc_slot_of(pool)->heap;
    CHECK(h && h->spares == pool->spares, "the thread ends with %zu spares", h ? h->spares : 0);
    return NULL;
}

static void run_on_thread(void *(*fn)(void *), void *arg) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fn, arg) == 0, "pthread_create failed");
    CHECK(pthread_join(t, NULL) == 0, "pthread_join failed");
}

int main(void) {
    pk_pool_config c = {0};
    c.name = "spares";
    c.size = BIG;
    pk_pool *pool = pk_pool_create(&c);
    CHECK(pool != NULL, "pk_pool_create failed");
    CHECK(pool->geo.capacity == 1, "the test needs slabs of one slot: %zu", (size_t)pool->geo.capacity);
    CHECK(pool->spares >= 2, "a pool of 1 MiB objects keeps %zu spares", pool->spares);

    size_t n = pool->hot_list + pool->spares + MORE + 1;
    void **objs = calloc(n, sizeof *objs);
    CHECK(objs != NULL, "calloc failed");
    for (size_t i = 0; i < n; i++) {
        objs[i] = pk_pool_alloc(pool);
        CHECK(objs[i] != NULL, "alloc %zu failed", i);
    }
    heap *h = tc_slot_of(pool)->heap;
    CHECK(h != NULL, "no heap");
    for (size_t i = 0; i < n; i++) pk_pool_free(pool, objs[i]);

    /* The spares are full, each an owned slab with no object out; the ones
     * the frees emptied past them went to the pool. */
    CHECK(h->spares == pool->spares, "the heap keeps %zu spares, the pool says %zu", h->spares, pool->spares);
    size_t k = 0;
    for (slab *s = h->spare; s; s = s->next, k++) {
        CHECK(k < h->spares, "the spares' chain is longer than their count");
        CHECK(s->owner == h && s->used == 0 && s->list == SLAB_NOWHERE, "spare %zu: owner %p used %u list %d", k,
              (void *)s->owner, s->used, s->list);
    }
    CHECK(k == h->spares, "the chain holds %zu spares, the count %zu", k, h->spares);
    /* the newest spare is the slab emptied last: the one before the
     * current slab (the last object's, whose free went onto the list) */
    CHECK(h->spare == slab_of((uintptr_t)objs[n - 2]), "the newest spare is not the slab emptied last");
    /* the slabs emptied past the spares went to the pool (no owner) */
    slab *pooled[64];
    size_t npooled = 0;
    for (size_t i = 0; i < n; i++)
        if (!owner_of(objs[i]) && npooled < sizeof pooled / sizeof pooled[0])
            pooled[npooled++] = slab_of((uintptr_t)objs[i]);
    CHECK(npooled > 0, "no slab went to the pool past the spares");

    /* The list's objects first, then the spares, newest first, none from
     * the pool. */
    size_t spares = h->spares;
    slab *want[64];
    CHECK(spares <= sizeof want / sizeof want[0], "too many spares for the test: %zu", spares);
    k = 0;
    for (slab *s = h->spare; s; s = s->next) want[k++] = s;
    size_t taken = 0, i = 0;
    for (; i < n && h->spares; i++) {
        objs[i] = pk_pool_alloc(pool);
        CHECK(objs[i] != NULL, "alloc %zu failed", i);
        slab *s = slab_of((uintptr_t)objs[i]);
        for (size_t j = 0; j < npooled; j++)
            CHECK(s != pooled[j], "allocation %zu took a slab from the pool while the heap had %zu spares", i,
                  h->spares);
        if (taken < spares && s == want[taken]) taken++;
    }
    CHECK(taken == spares, "%zu of %zu spares came out in order", taken, spares);
    while (i > 0) pk_pool_free(pool, objs[--i]);

    /* The spares go back with the rest at the thread's trim: nothing of
     * the pool stays reserved. */
    CHECK(h->spares > 0, "the frees left no spare to give back");
    pk_pool_trim(pool);
    pk_pool_stats st;
    pk_pool_stats_get(pool, &st);
    CHECK(st.live == 0 && st.bytes_reserved == 0, "after the trim: %zu live, %zu bytes reserved", st.live,
          st.bytes_reserved);

    /* A thread that empties slabs past its list and exits leaves its
     * spares to the pool, which the next trim gives back. */
    run_on_thread(fill_and_free, pool);
    pk_pool_trim(pool);
    pk_pool_stats_get(pool, &st);
    CHECK(st.live == 0 && st.bytes_reserved == 0, "after a thread's exit and a trim: %zu live, %zu bytes reserved",
          st.live, st.bytes_reserved);
    pk_pool_destroy(pool);
    free(objs);

    /* Slabs of many objects: one spare. */
    c.name = "one spare";
    c.size = 64;
    pool = pk_pool_create(&c);
    CHECK(pool != NULL, "pk_pool_create failed");
    CHECK(pool->spares == 1, "a pool of 64-byte objects keeps %zu spares", pool->spares);
    size_t per = pool->geo.capacity;
    n = 6 * per;
    objs = calloc(n, sizeof *objs);
    CHECK(objs != NULL, "calloc failed");
    for (size_t i = 0; i < n; i++) {
        objs[i] = pk_pool_alloc(pool);
        CHECK(objs[i] != NULL, "alloc %zu failed", i);
    }
    h = tc_slot_of(pool)->heap;
    for (size_t i = 0; i < n; i++) pk_pool_free(pool, objs[i]);
    CHECK(h->spares == 1 && h->spare && !h->spare->next, "a heap of a pool of small objects keeps %zu spares",
          h->spares);
    pk_pool_destroy(pool);
    free(objs);
    return 0;
}
