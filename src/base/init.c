/* Start-up hooks: how the library's lower layers reach the upper ones that
 * must act once before the first use of something, without calling up.
 *
 * fork.c (the pthread_atfork handlers) and stats.c (the report at exit)
 * sit above the pools and arenas they serve; each registers its install
 * function here at load time (a constructor that runs before any default-
 * priority constructor of the program, so before any static-initialization
 * code can make a pool), and the lower layers only announce events. Each
 * hook is idempotent (pthread_once), and once every hook has returned from
 * an announcement, announcing the event again is one load (done): a large
 * block's allocation announces at every call.
 *
 * An event may come before a hook is registered: the malloc library makes
 * pools for the allocations the C library and the dynamic loader make
 * before any constructor of the library has run. A hook registered after
 * its event has been announced runs at once, in its constructor.
 *
 * Invariant: the table is written only by constructors, while the process
 * has one thread, and read-only afterwards.
 */
#include "base/internal.h"

/* The fork test points' hook (internal.h): unset outside the white-box
 * test. Here, at the bottom, since every layer's locks have a point. */
void (*fork_test_hook)(hook_point point, void *lock);

/* Set by fork.c's handlers to the forking thread (internal.h, pk_lock):
 * here, below every layer that takes a lock. */
uintptr_t pk_fork_owner PK_FORK_LOCK;

#define INIT_HOOKS_MAX 4

static void (*hooks[INIT_EVENTS][INIT_HOOKS_MAX])(void);
static int hook_count[INIT_EVENTS];
static bool announced[INIT_EVENTS];
/* Every hook registered for the event has run to its end since it was
 * announced; a thread that finds it unset runs them (pthread_once waits
 * for another thread's run in progress). */
static bool done[INIT_EVENTS];

void init_on(init_event e, void (*fn)(void)) {
    if (hook_count[e] < INIT_HOOKS_MAX) hooks[e][hook_count[e]++] = fn;
    if (__atomic_load_n(&announced[e], __ATOMIC_ACQUIRE)) fn();
}

void init_announce(init_event e) {
    if (likely(__atomic_load_n(&done[e], __ATOMIC_ACQUIRE))) return;
    if (!__atomic_load_n(&announced[e], __ATOMIC_RELAXED)) __atomic_store_n(&announced[e], true, __ATOMIC_RELEASE);
    for (int i = 0; i < hook_count[e]; i++) hooks[e][i]();
    __atomic_store_n(&done[e], true, __ATOMIC_RELEASE);
}
