/* A pool's purge tick: when its empty slabs go back to the system (the
 * rules: policy.h, PURGE_INTERVAL_MS). Slabs go back through central.c;
 * the sweep (sweep.c) and the pools' own calls run the ticks.
 */
#include "pool/purge.h"
#include "pool/central.h"

/* ---- a pool's tick: idle return by time stamp ----
 * The pool's empty slabs change only under its lock (a heap gives one back
 * under it too), so used_ms, the last time a call for the pool's own work
 * held it, bounds how long all of them have sat unused. A call after a
 * silence of the delay or more finds it so before it changes anything
 * (purge_note_use), and so does any tick on the pool in between: a sweep
 * on another pool's call, or the background purge. Slabs threads' heaps own
 * are not the pool's to take and stay; so do the slots a reserve keeps. */

/* Whether the pool has had no call of its own for the delay (now may lag
 * used_ms: another thread may have read a later time before the lock). */
static bool idle_for_delay(const pk_pool *p, uint64_t now, uint64_t delay) {
    return delay && now > p->used_ms && now - p->used_ms >= delay;
}

/* Every empty slab goes back (their memory sat unused for the delay). */
static void release_idle(pk_pool *p, uint64_t now) {
    central_collect_own(p);
    if (p->lists[SLAB_EMPTY].head) central_release_empty(p, true, 0);
    /* The next interval starts now. */
    p->tick_ms = now;
    p->tick_no++;
}

void purge_note_use(pk_pool *p, uint64_t now) {
    ASSERT_POOL_LOCKED(p);
    if (idle_for_delay(p, now, (uint64_t)options_purge_delay_ms())) release_idle(p, now);
    if (now > p->used_ms) p->used_ms = now;
}

void purge_tick(pk_pool *p, uint64_t now) {
    ASSERT_POOL_LOCKED(p);
    uint64_t delay = (uint64_t)options_purge_delay_ms();
    if (idle_for_delay(p, now, delay)) {
        release_idle(p, now);
        return;
    }
    if (now - p->tick_ms < PURGE_INTERVAL_MS(delay)) return;
    p->tick_ms = now;
    central_collect_own(p);
    central_release_empty(p, false, p->tick_no - 1); /* empty since the last tick */
    p->tick_no++;
}
