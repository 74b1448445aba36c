/* The pool's validator (mimalloc's _mi_page_is_valid): every identity that
 * pool_internal.h, slab.h and central.c state about a pool's counts,
 * checked against the structures themselves. Compiled into every build,
 * called only where POOLKIT_ASSERT is 3 (POOL_VALIDATE), at each state
 * change of a pool, under its lock.
 *
 * The identities (each failure names the one):
 *   - each slab list's count is its length; each slab on it names the
 *     pool, names the list, and links back to the one before;
 *   - a slab's counts: used <= bump <= capacity; EMPTY slabs have used 0,
 *     FULL ones used == capacity, PARTIAL ones in between;
 *   - slabs_total is the number of slabs on the lists, bytes_reserved the
 *     sum of their spans;
 *   - out (objects outside slabs) is the sum of the slabs' used counts;
 *     slab_free (free slots in slabs) the sum of capacity - used;
 *   - the depot: depot_low <= depot_count <= depot_slots, and its objects
 *     are outside the slabs: depot_count * batch <= out;
 *   - deep only: a slab's free list holds bump - used objects (its other
 *     free slots were never handed out), and each depot chain has batch
 *     objects.
 * What it cannot check here: the objects in threads' caches (read without
 * the registry's lock, they may be moving), so live = out - depot - cached
 * is left to pk_pool_stats_get's callers.
 */
#include "pool_internal.h"

#define VALID(cond)                                                        \
    do {                                                                   \
        if (unlikely(!(cond))) assert_fail(__FILE__, __LINE__, #cond);     \
    } while (0)

static void slab_is_valid(const pk_pool *p, const slab *s, int list, bool deep) {
    VALID(s->pool == p);
    VALID(s->list == (uint32_t)list);
    VALID(s->used <= s->bump && s->bump <= s->capacity);
    VALID(list != SLAB_EMPTY || s->used == 0);
    VALID(list != SLAB_FULL || s->used == s->capacity);
    VALID(list != SLAB_PARTIAL || (s->used > 0 && s->used < s->capacity));
    if (!deep) return;
    size_t n = 0;
    for (char *f = s->free; f && n <= s->capacity; f = (char *)link_load(p, f)) n++;
    VALID(n == (size_t)(s->bump - s->used)); /* the free list: freed slots only */
}

bool pool_is_valid(const pk_pool *p, bool deep) {
    size_t slabs = 0, bytes = 0, used = 0, free_slots = 0;
    for (int l = 0; l < SLAB_LISTS; l++) {
        size_t n = 0;
        const slab *prev = NULL;
        for (const slab *s = p->lists[l].head; s; prev = s, s = s->next) {
            VALID(s->prev == prev);
            slab_is_valid(p, s, l, deep);
            n++;
            bytes += s->span;
            used += s->used;
            free_slots += s->capacity - s->used;
        }
        VALID(n == p->lists[l].count);
        slabs += n;
    }
    VALID(slabs == p->slabs_total);
    VALID(bytes == p->bytes_reserved);
    VALID(used == p->out);
    VALID(free_slots == p->slab_free);
    VALID(p->depot_low <= p->depot_count && p->depot_count <= p->depot_slots);
    VALID(p->depot_count * p->batch <= p->out);
    if (deep)
        for (size_t i = 0; i < p->depot_count; i++) {
            char *f = p->depot[i];
            for (size_t n = 1; f && n < p->batch; n++) f = (char *)link_load(p, f);
            VALID(f != NULL); /* a depot chain is one whole batch */
        }
    return true;
}
