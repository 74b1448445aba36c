/* A slab's first links, white-box (heap.c's extend, EXTEND_FIRST in
 * policy.h): a fresh slab of small slots links EXTEND_FIRST of them, each
 * link after as many as the slab has handed out, up to a page's worth;
 * slots of 64 bytes and more, and hardened pools', a page's worth (at most
 * HARD_EXTEND) from the first. The slab's bump (its slots linked so far)
 * says how many went. Exit 0: passed. */
#include "pool/pool_internal.h"

#include <poolkit/poolkit.h>

#include "check.h"

/* The bump of obj's slab. */
static size_t linked(const void *obj) { return slab_of((uintptr_t)obj)->bump; }

/* A fresh pool of size-byte objects; flags as given. After each of the
 * counts of allocations in want_after (in turn, cumulative), the slab's
 * bump is the matching figure of want. */
static void links(size_t size, unsigned flags, const size_t *after, const size_t *want, size_t steps) {
    pk_pool *p = pk_pool_create(&(pk_pool_config){.name = "first links", .size = size, .flags = flags});
    CHECK(p != NULL, "pk_pool_create failed");
    void *objs[1024];
    size_t n = 0;
    for (size_t k = 0; k < steps; k++) {
        CHECK(after[k] <= sizeof objs / sizeof objs[0], "too many objects for the test");
        while (n < after[k]) {
            objs[n] = pk_pool_alloc(p);
            CHECK(objs[n] != NULL, "alloc %zu failed", n);
            n++;
        }
        CHECK(linked(objs[0]) == want[k], "%zu-byte objects%s: %zu slots linked after %zu allocations, not %zu",
              size, flags ? " (hardened)" : "", linked(objs[0]), n, want[k]);
    }
    for (size_t i = 0; i < n; i++) pk_pool_free(p, objs[i]);
    pk_pool_destroy(p);
}

int main(void) {
    /* 16 bytes: 64, then 64 more, then 128, then the page's 256 */
    static const size_t after16[] = {1, 64, 65, 128, 129, 256, 257}, want16[] = {64, 64, 128, 128, 256, 256, 512};
    links(16, 0, after16, want16, sizeof after16 / sizeof after16[0]);
    /* 32 bytes: 64, 64 more, then the page's 128 */
    static const size_t after32[] = {1, 65, 129}, want32[] = {64, 128, 256};
    links(32, 0, after32, want32, sizeof after32 / sizeof after32[0]);
    /* 64 bytes: a page at once */
    static const size_t after64[] = {1, 65}, want64[] = {64, 128};
    links(64, 0, after64, want64, sizeof after64 / sizeof after64[0]);
    /* hardened, 16 bytes: HARD_EXTEND at a time, from the first */
    static const size_t afterh[] = {1, 65, 129}, wanth[] = {HARD_EXTEND, 2 * HARD_EXTEND, 3 * HARD_EXTEND};
    links(16, PK_POOL_HARDENED, afterh, wanth, sizeof afterh / sizeof afterh[0]);
    return 0;
}
