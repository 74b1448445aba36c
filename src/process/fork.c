/* fork() from a multithreaded program: whatever other threads were doing,
 * the child gets every lock free and every structure whole.
 *
 * Before the fork the forking thread takes every lock of the library in
 * the one order the library nests them (outermost first), so no other
 * thread is inside a critical section; after it, parent and child release
 * them (the child's one thread is their owner). In the child the other
 * threads' heaps and records go (pools_fork_child, tcache_fork_child):
 * those threads may have been inside a fast or slow path, their slots and
 * heaps half-changed, so nothing follows their lists; their slabs stay
 * mapped and unused and their objects counted as live in the child (a leak
 * there, never an object handed out twice). Handlers of other libraries
 * that run between prepare and parent or child (registered before ours)
 * may allocate: the forking thread takes no lock meanwhile (internal.h,
 * pk_fork_owner).
 *
 * A page either side writes after the fork is copied, and the child's
 * first touch of each page costs it an address translation from tables
 * just made: the handlers write the fork locks' page and the pools' lock
 * table, and read no pool's record where nothing needs it (pools.h). */
#include "pool/pool_internal.h"

#include <pthread.h>

static void prepare(void) {
    purge_fork_lock();       /* held across the purge thread's start and stop */
    alloc_fork_lock();       /* held around pk_pool_create of a class pool (pk_alloc's and pk_new's) */
    arp_fork_lock();         /* held around pk_pool_create of the page pool */
    pools_fork_lock_list();  /* the pool list: pk_pool_foreach's callbacks take the registry */
    tcache_registry_lock();  /* then a pool's lock (thread exit, stats) */
    pools_fork_lock_each();  /* every pool, pool records */
    os_fork_lock();          /* retained memory: a leaf */
    region_fork_lock();      /* the regions and the maps: a leaf */
    large_fork_lock();       /* pk_alloc's mapped blocks: a leaf */
    arena_fork_lock();       /* arenas' records: a leaf */
    error_fork_lock();       /* the error handler: a leaf */
    /* the handlers that run next take none (internal.h) */
    __atomic_store_n(&pk_fork_owner, (uintptr_t)pthread_self(), __ATOMIC_RELAXED);
}

static void release_library(void) {
    error_fork_unlock();
    arena_fork_unlock();
    large_fork_unlock();
    region_fork_unlock();
    os_fork_unlock();
    tcache_registry_unlock();
    pools_fork_unlock();
    arp_fork_unlock();
    alloc_fork_unlock();
}

static void parent(void) {
    __atomic_store_n(&pk_fork_owner, 0, __ATOMIC_RELAXED);
    release_library();
    purge_fork_unlock();
}

/* The child has one thread: no purge thread (sweep.c makes its state
 * afresh and starts it again lazily). */
static void child(void) {
    __atomic_store_n(&pk_fork_owner, 0, __ATOMIC_RELAXED);
    const tc_slot *lo = NULL, *hi = NULL;
    tcache_table_range(&lo, &hi); /* none: every heap belonged to a thread gone */
    pools_fork_child(lo, hi);
    tcache_fork_child();
    release_library();
    purge_fork_child();
}

static void install(void) { pthread_atfork(prepare, parent, child); }

static void install_once(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install);
}

/* The handlers are installed when a module first makes something a fork
 * could catch half-changed (init.c), not at load: a program that never
 * uses the library pays nothing at fork. */
__attribute__((constructor(INIT_PRIORITY))) static void register_install(void) {
    init_on(INIT_SHARED_STATE, install_once);
}
