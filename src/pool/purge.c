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

/* pool.h and README.md: at most 16 times the delay set; design.md and
 * policy.h: 8 s at the default. */
_Static_assert(IDLE_SHIFT_MAX == 4 && (PURGE_DELAY_DEFAULT_MS << IDLE_SHIFT_MAX) == 8000,
               "the longest adapted delay the docs give");

/* The slabs the pool has made so far (released ones included). */
static uint64_t slabs_made(const pk_pool *p) { return p->slabs_total + p->slabs_released; }

/* IDLE_ADAPT (policy.h): the pool's idle delay, base doubled p->idle's
 * shift times; at the first silence of base that follows a use after an
 * idle return, that return is judged first (adapt_judge: its slabs made
 * again, at least half of them, raise the shift until the delay is over
 * twice the silence that led to it, else the shift falls by one). */
static uint64_t idle_delay(pk_pool *p, uint64_t now, uint64_t base) {
    if (p->used_ms >= p->idle_ms && idle_for_delay(p, now, base)) adapt_judge(&p->idle, slabs_made(p), base);
    return base << p->idle.shift;
}

/* Every empty slab goes back (their memory sat unused for the delay). */
static void release_idle(pk_pool *p, uint64_t now) {
    uint64_t before = p->slabs_released;
    central_collect_own(p);
    if (p->lists[SLAB_EMPTY].head) central_release_empty(p, true, 0);
    /* a second look in the same silence (a sweep's, then the pool's own
     * call) finds nothing more and leaves the first one's figures */
    if (p->slabs_released != before) {
        adapt_gave(&p->idle, p->slabs_released - before, slabs_made(p), now - p->used_ms);
        p->idle_ms = now;
        p->exit_keep = false; /* what exits kept waited the delay unused */
    }
    /* The next interval starts now. */
    p->tick_ms = now;
    p->tick_no++;
}

void purge_note_use(pk_pool *p, uint64_t now) {
    ASSERT_POOL_LOCKED(p);
    uint64_t base = (uint64_t)options_purge_delay_ms();
    if (idle_for_delay(p, now, idle_delay(p, now, base))) release_idle(p, now);
    if (now > p->used_ms) p->used_ms = now;
}

void purge_tick(pk_pool *p, uint64_t now) {
    ASSERT_POOL_LOCKED(p);
    uint64_t delay = idle_delay(p, now, (uint64_t)options_purge_delay_ms());
    if (idle_for_delay(p, now, delay)) {
        release_idle(p, now);
        return;
    }
    if (now - p->tick_ms < PURGE_INTERVAL_MS(delay)) return;
    p->tick_ms = now;
    central_collect_own(p);
    /* empty since the last tick; what exits kept among them was not needed */
    if (central_release_empty(p, false, p->tick_no - 1)) p->exit_keep = false;
    p->tick_no++;
}

void purge_thread_exit(pk_pool *p) {
    ASSERT_POOL_LOCKED(p);
    if (p->exit_gone) {
        p->exit_keep = 2 * (size_t)(slabs_made(p) - p->exit_mark) >= p->exit_gone;
        p->exit_gone = 0;
    }
    if (p->exit_keep) return;
    uint64_t before = p->slabs_released;
    /* the objects other threads freed into the pool's own slabs (the
     * slabs of threads gone) come home first: a thread that freed what an
     * ended thread made, and then ended too, left them uncollected, and
     * the tick that collects them runs only on a call that reaches the
     * library */
    central_collect_own(p);
    central_release_surplus(p);
    if (p->slabs_released != before) {
        p->exit_gone = (size_t)(p->slabs_released - before);
        p->exit_mark = (size_t)slabs_made(p);
    }
}

uint32_t purge_idle_shift(pk_pool *p) {
    pool_lock(p);
    uint32_t s = p->idle.shift;
    pool_unlock(p);
    return s;
}
