/* Remote frees: objects freed into a slab another heap owns (or the pool
 * owns) go onto the slab's thread_free, a chain at a time (a heap's pending
 * chain, REMOTE_BATCH), for its owner to collect (central.c). */
#include "pool/remote.h"

/* Set with the first pool's remote_any, never cleared (remote.h). */
static bool any_pool;

bool remote_any_pool(void) { return __atomic_load_n(&any_pool, __ATOMIC_RELAXED); }

static void push_chain(pk_pool *p, slab *s, void *head, void *tail, size_t n) {
    if (unlikely(s->lost)) return; /* fork child: its objects stay counted as live */
    if (unlikely(!__atomic_load_n(&p->remote_any, __ATOMIC_RELAXED))) {
        __atomic_store_n(&any_pool, true, __ATOMIC_RELAXED);
        __atomic_store_n(&p->remote_any, true, __ATOMIC_RELAXED);
    }
    if (chains_counted(p)) { /* the chain's length and tail, in its head's second word */
        uintptr_t tail_at = ((uintptr_t)tail - (uintptr_t)s->objects) / p->geo.slot;
        chain_mark_store(p, head, tail_at << 32 | n);
    }
    void *old = __atomic_load_n(&s->thread_free, __ATOMIC_RELAXED);
    do link_store(p, tail, (uintptr_t)old);
    while (!__atomic_compare_exchange_n(&s->thread_free, &old, head, true, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
}

void remote_flush(pk_pool *p, heap *h) {
    BUMP(h->pushed, h->pend_n); /* before the push: the owner may collect at once */
    push_chain(p, h->pend_slab, h->pend_head, h->pend_tail, h->pend_n);
    h->pend_slab = NULL;
    h->pend_head = h->pend_tail = NULL;
    __atomic_store_n(&h->pend_n, 0, __ATOMIC_RELAXED);
}

void remote_push_one(pk_pool *p, slab *s, void *obj) {
    __atomic_add_fetch(&p->remote_frees, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&p->remote_base, 1, __ATOMIC_RELAXED);
    push_chain(p, s, obj, obj, 1);
}
