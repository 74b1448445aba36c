/* The hot object of a hardened list, white-box: the one object of another
 * slab the list may hold (HOT_FREES), whose address the library's checks
 * of the list's links accept (heap.c, hot_link), is forgotten at the next
 * refill, also one that only carves the current slab's next fresh slots
 * (no slab changes), so that no link to it is accepted once it may be
 * handed out.
 *
 * The thread fills one slab of a hardened pool and the first fresh slots
 * of a second, until its list is empty, frees an object of the first
 * (onto the list: the heap remembers it), allocates it back, then
 * allocates once more (a refill from the second slab's fresh slots): the
 * heap remembers none. Exit 0: passed; 77: skipped (the pool's list is not
 * the hardened slot's in this build: a tool build). */
#include "pool/pool_internal.h"

#include <poolkit/poolkit.h>

#include "check.h"

#include <stdio.h>
#include <stdlib.h>

#define MAX_OBJECTS (2 * (int)(SLAB_BYTES / 64))

static void *objs[MAX_OBJECTS + 1];

static uintptr_t slab_bits(const void *p) { return (uintptr_t)p & ~(uintptr_t)(SLAB_BYTES - 1); }

int main(void) {
    pk_pool_config c = {0};
    c.name = "hot";
    c.size = 64;
    c.flags = PK_POOL_HARDENED;
    pk_pool *pool = pk_pool_create(&c);
    CHECK(pool != NULL, "pk_pool_create failed");
    int n = 0;
    objs[n++] = pk_pool_alloc(pool);
    heap *h = tc_slot_of(pool)->heap;
    CHECK(h != NULL, "no heap");
    if (h->list != (tc_list *)&tc_slot_of(pool)->hhead) {
        printf("skipped: the pool's list is not the hardened slot's in this build\n");
        return 77;
    }
    /* into the second slab, until its first fresh slots are used up */
    while (n < MAX_OBJECTS && (slab_bits(objs[n - 1]) == slab_bits(objs[0]) || tc_head(h->list)))
        objs[n++] = pk_pool_alloc(pool);
    CHECK(slab_bits(objs[n - 1]) != slab_bits(objs[0]) && !tc_head(h->list), "the list never ran out in the second slab");
    slab *second = h->cur;
    CHECK(second->bump < second->capacity, "the second slab has no fresh slot left");

    pk_pool_free(pool, objs[0]); /* onto the empty list */
    CHECK(h->hot_obj == objs[0], "the free onto the empty list is not the hot object (%p)", h->hot_obj);
    CHECK(pk_pool_alloc(pool) == objs[0], "the hot object did not come back first");
    objs[n++] = pk_pool_alloc(pool); /* a refill: the second slab's next fresh slots */
    CHECK(h->cur == second, "the refill changed slabs");
    CHECK(h->hot_obj == NULL, "a refill kept the hot object %p", h->hot_obj);

    for (int i = 0; i < n; i++) pk_pool_free(pool, objs[i]);
    pk_pool_stats st;
    pk_pool_stats_get(pool, &st);
    CHECK(st.live == 0, "%zu objects live at the end", st.live);
    pk_pool_destroy(pool);
    return 0;
}
