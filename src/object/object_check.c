/* The object layer's checks of the pointers it is given: is this an
 * object of pk_new?
 *
 * What counts as an object: a slot start, plus the header, of a pool made
 * for objects (POOL_KEEPS_HEADER), found in the address map without touching
 * the pointer's memory; or an object too large for the pools (from the C
 * heap), recorded in a set of addresses while it lives, since the address
 * map knows nothing of it. Anything else (a stack buffer, a malloc block,
 * another pool's object, an interior pointer) is a "foreign pointer". A
 * pointer that passes may still be a deallocated object: its count says
 * so, and the callers report an over-release.
 *
 * pk_retain and pk_release ask in every mode before they write the count
 * (object.c: the address map inline, the set only for pointers the map
 * does not place), so a pointer that is not an object is reported, never
 * written. Debug mode (POOLKIT_DEBUG=1, the switch that makes every pool a
 * debug pool, read once in object.c) also checks pk_autorelease's pointers
 * when they are handed over (object_check_slow), not only when the pool
 * pops.
 */
#include "object/object_internal.h"
#include "pool/pool_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- the objects too large for the pools: an open-addressing set of
 * header addresses, under heap_lock ---- */

#define HEAP_TOMB ((uintptr_t)1) /* a removed key; headers are 16-aligned */

static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t *heap_keys; /* 0 = empty */
static size_t heap_cap, heap_used, heap_live; /* used: keys and tombstones */

static size_t heap_hash(uintptr_t k, size_t cap) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

/* Twice the room for the live keys, tombstones dropped. */
static bool heap_rehash(void) {
    size_t cap = 64;
    while (cap < 4 * (heap_live + 1)) cap *= 2;
    uintptr_t *keys = calloc(cap, sizeof *keys);
    if (!keys) return false;
    for (size_t i = 0; i < heap_cap; i++) {
        uintptr_t k = heap_keys[i];
        if (k <= HEAP_TOMB) continue;
        size_t j = heap_hash(k, cap);
        while (keys[j]) j = (j + 1) & (cap - 1);
        keys[j] = k;
    }
    free(heap_keys);
    heap_keys = keys;
    heap_cap = cap;
    heap_used = heap_live;
    return true;
}

/* The slot holding k, or the empty slot that ends its probe. */
static size_t heap_find(uintptr_t k) {
    size_t i = heap_hash(k, heap_cap);
    while (heap_keys[i] && heap_keys[i] != k) i = (i + 1) & (heap_cap - 1);
    return i;
}

bool large_add(const void *h) {
    uintptr_t k = (uintptr_t)h;
    pthread_mutex_lock(&heap_lock);
    bool ok = 2 * (heap_used + 1) <= heap_cap || heap_rehash();
    if (ok) {
        size_t i = heap_hash(k, heap_cap);
        while (heap_keys[i] > HEAP_TOMB) i = (i + 1) & (heap_cap - 1);
        if (!heap_keys[i]) heap_used++;
        heap_keys[i] = k;
        heap_live++;
    }
    pthread_mutex_unlock(&heap_lock);
    return ok;
}

void large_remove(const void *h) {
    pthread_mutex_lock(&heap_lock);
    if (heap_cap) {
        size_t i = heap_find((uintptr_t)h);
        if (heap_keys[i]) {
            heap_keys[i] = HEAP_TOMB;
            heap_live--;
        }
    }
    pthread_mutex_unlock(&heap_lock);
}

bool large_has(const void *h) {
    pthread_mutex_lock(&heap_lock);
    bool has = heap_cap && heap_keys[heap_find((uintptr_t)h)] != 0;
    pthread_mutex_unlock(&heap_lock);
    return has;
}

void object_check_fork_lock(void) { pthread_mutex_lock(&heap_lock); }
void object_check_fork_unlock(void) { pthread_mutex_unlock(&heap_lock); }

/* ---- the check ---- */

bool object_in_pools(const void *obj) {
    pk_pool *owner = slab_owner(header_of(obj));
    return owner && (owner->flags & POOL_KEEPS_HEADER);
}

bool object_known(const void *obj) {
    if ((uintptr_t)obj & 15) return false;
    return object_in_pools(obj) || large_has(header_of(obj));
}

void object_report_foreign(const void *obj, const char *call) {
    pk_pool *owner = ((uintptr_t)obj & 15) ? NULL : slab_owner(header_of(obj));
    char why[128];
    if (owner)
        snprintf(why, sizeof why, "an object of pool '%s', not of pk_new",
                 owner->name ? owner->name : "(unnamed)");
    else
        snprintf(why, sizeof why, "not a poolkit object (no object pool holds it, and no live "
                                  "object too large for the pools starts there)");
    error_report(PK_FATAL, "foreign pointer", NULL, obj, "%s: %p is %s", call, obj, why);
    abort(); /* error_report never returns from a fatal report */
}

void object_check_slow(const void *obj, const char *call) {
    if (object_debug() && !object_known(obj)) object_report_foreign(obj, call);
}
