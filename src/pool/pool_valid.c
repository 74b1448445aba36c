/* The pool's validator (mimalloc's _mi_page_is_valid): every identity that
 * pool_internal.h, slab.h and central.c state about a pool's counts,
 * checked against the structures themselves. Compiled into every build,
 * called only where POOLKIT_ASSERT is 3 (POOL_VALIDATE), at each state
 * change of a pool, under its lock.
 *
 * The identities (each failure names the one):
 *   - each of the pool's slab lists' count is its length; each slab on it
 *     names the pool, is owned by no heap, names the list, and links back
 *     to the one before;
 *   - a slab's counts: used <= bump <= high <= capacity; EMPTY slabs have
 *     used 0, FULL ones used == capacity, PARTIAL ones in between;
 *   - LOST slabs (fork child) have used == bump and no free list;
 *   - slabs_total is the number of slabs on the lists plus those heaps own
 *     (heap_slabs), and the number on the list of all slabs;
 *     bytes_reserved the sum of their spans;
 *   - out is the sum of the pool's own slabs' used counts; slab_free the
 *     sum of their capacity - used, LOST slabs left out;
 *   - the heaps: each names the pool, and their slab counts add up to
 *     heap_slabs (the counts change under the pool's lock);
 *   - deep only: a slab's free list holds bump - used objects, less those
 *     waiting on its thread_free (its other free slots were never handed
 *     out).
 * What it cannot check here: the slabs heaps own (their threads change
 * them without the lock), which heap.c's comments state and the owner's
 * own paths keep.
 */
#include "pool/pool_valid.h"
#include "pool/check.h"
#include "pool/harden.h"

#define VALID(cond)                                                        \
    do {                                                                   \
        if (unlikely(!(cond))) assert_fail(__FILE__, __LINE__, #cond);     \
    } while (0)

static void slab_is_valid(const pk_pool *p, const slab *s, int list, bool deep) {
    VALID(s->pool == p);
    VALID(s->owner == NULL);
    VALID(s->list == (uint32_t)list);
    VALID(s->used <= s->bump && s->bump <= s->high && s->high <= s->capacity);
    VALID(list != SLAB_EMPTY || s->used == 0);
    VALID(list != SLAB_FULL || s->used == s->capacity);
    VALID(list != SLAB_PARTIAL || (s->used > 0 && s->used < s->capacity));
    VALID(list != SLAB_LOST || (s->used == s->bump && !s->free));
    if (!deep || __atomic_load_n(&s->thread_free, __ATOMIC_ACQUIRE)) return;
    size_t n = 0;
    for (char *f = s->free; f; f = (char *)link_load(p, f))
        /* longer than the slab's slots handed out: an object listed twice,
         * the program's double free, reported as the walks report it */
        if (++n > s->bump) report_list_overrun(p, s, s->free, NULL, "a slab's free list");
    VALID(n == (size_t)(s->bump - s->used)); /* the free list: freed slots only */
}

bool pool_is_valid(const pk_pool *p, bool deep) {
    size_t slabs = 0, bytes = 0, used = 0, free_slots = 0, left = p->slabs_total;
    for (int l = 0; l < SLAB_LISTS; l++) {
        size_t n = 0;
        const slab *prev = NULL;
        for (const slab *s = p->lists[l].head; s; prev = s, s = s->next) {
            slab_walk_step(p, &left);
            VALID(s->prev == prev);
            slab_is_valid(p, s, l, deep);
            n++;
            bytes += s->span;
            used += s->used;
            if (l != SLAB_LOST) free_slots += s->capacity - s->used;
        }
        VALID(n == p->lists[l].count);
        VALID(p->lists[l].tail == prev);
        slabs += n;
    }
    size_t heap_slabs = 0, heap_bytes = 0;
    for (const heap *h = p->heaps; h; h = h->next) {
        VALID(h->pool == p);
        VALID(h->next == NULL || h->next->prev == h);
        heap_slabs += h->slabs;
        heap_bytes += h->bytes;
    }
    VALID(heap_slabs == p->heap_slabs && heap_bytes == p->heap_bytes);
    VALID(slabs + p->heap_slabs == p->slabs_total);
    VALID(bytes + p->heap_bytes == p->bytes_reserved);
    size_t all = 0;
    left = p->slabs_total;
    for (const slab *s = p->all; s; s = s->all_next) {
        slab_walk_step(p, &left);
        VALID(s->all_next == NULL || s->all_next->all_prev == s);
        all++;
    }
    VALID(all == p->slabs_total);
    VALID(used == p->out);
    VALID(free_slots == p->slab_free);
    return true;
}
