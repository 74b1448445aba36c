/* A slab of one slot whose object other threads free leaves its heap when
 * its next object goes out, white-box (heap.c, leaves_when_full): the next
 * thread to free that object takes the slab (pool_free.c, adopt), where it
 * waited on its owner's full list while other threads mapped new ones. A
 * slab whose object its owner frees stays.
 *
 * Objects of 128 KiB (one per slab). The main thread allocates x, then y
 * (x's slab onto its full list); a thread frees x (a remote free); the main
 * thread's next allocation collects it (the slab is migrated) and hands
 * the slot out again as z; the one after leaves the slab to the pool; a
 * thread that has refilled frees z and takes the slab. Exit 0: passed. */
#include "pool/pool_internal.h"

#include <poolkit/poolkit.h>

#include "check.h"

#include <pthread.h>
#include <stdio.h>

#define SIZE ((size_t)128 << 10)

static pk_pool *pool;
static void *given;
static bool taken;

static void *free_it(void *arg) {
    pk_pool_free(pool, arg);
    return NULL; /* its pending chain goes home at its exit */
}

static void *refill_then_free(void *arg) {
    void *own = pk_pool_alloc(pool); /* a refill: this thread may take a slab */
    pk_pool_free(pool, arg);
    heap *h = tc_slot_of(pool)->heap;
    taken = h && __atomic_load_n(&slab_of((uintptr_t)arg)->owner, __ATOMIC_RELAXED) == h;
    given = own;
    return NULL; /* its slabs go to the pool at its exit */
}

static void run_on_thread(void *(*fn)(void *), void *arg) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fn, arg) == 0, "pthread_create failed");
    pthread_join(t, NULL);
}

int main(void) {
    pk_pool_config c = {0};
    c.name = "migrated";
    c.size = SIZE;
    pool = pk_pool_create(&c);
    CHECK(pool != NULL, "pk_pool_create failed");

    /* The owner's own frees: its slab stays with it. */
    void *a = pk_pool_alloc(pool), *b = pk_pool_alloc(pool);
    CHECK(a && b, "alloc failed");
    slab *sa = slab_of((uintptr_t)a);
    CHECK(sa->capacity == 1, "the test needs slabs of one slot: %u", sa->capacity);
    heap *mine = tc_slot_of(pool)->heap;
    CHECK(__atomic_load_n(&sa->owner, __ATOMIC_RELAXED) == mine, "a slab no other thread freed into left the heap");
    pk_pool_free(pool, a);
    void *a2 = pk_pool_alloc(pool), *b2 = pk_pool_alloc(pool);
    CHECK(a2 && b2, "alloc failed");
    CHECK(__atomic_load_n(&sa->owner, __ATOMIC_RELAXED) == mine, "a slab its owner freed into left the heap");

    /* Another thread's free: the slab leaves once its slot is out again. */
    void *x = pk_pool_alloc(pool), *y = pk_pool_alloc(pool);
    CHECK(x && y, "alloc failed");
    slab *sx = slab_of((uintptr_t)x);
    run_on_thread(free_it, x);
    void *z = pk_pool_alloc(pool);
    CHECK(z == x, "the remote free of x did not serve the next allocation (%p, x %p)", z, x);
    CHECK(__atomic_load_n(&sx->owner, __ATOMIC_RELAXED) == mine, "x's slab left before its slot went out again");
    void *w = pk_pool_alloc(pool);
    CHECK(w != NULL, "alloc failed");
    CHECK(__atomic_load_n(&sx->owner, __ATOMIC_RELAXED) == NULL,
          "a slab whose object another thread freed stayed on its owner's full list");
    CHECK(!sx->migrated, "the slab left with its mark: its next owner would pass it on at once");

    /* The next thread to free its object takes it. */
    run_on_thread(refill_then_free, z);
    CHECK(taken, "the freeing thread did not take the slab the owner left");

    pk_pool_free(pool, given);
    void *left[] = {b, a2, b2, y, w};
    for (size_t i = 0; i < sizeof left / sizeof *left; i++) pk_pool_free(pool, left[i]);
    pk_pool_stats st;
    pk_pool_stats_get(pool, &st);
    CHECK(st.live == 0, "%zu objects live at the end", st.live);
    pk_pool_destroy(pool);
    printf("passed: a slab of one slot that other threads free leaves its heap for the next to free into it\n");
    return 0;
}
