/* The fault handler: a crash on a broken free list says why.
 *
 * In default mode the inline allocation (pool.h) follows the thread's list
 * with no check: a write after free or an overflow that overwrote a free
 * object's link word leaves the list's head, once that object is handed
 * out, at whatever was written, and the next allocation reads it and
 * faults in the program's own code, with no message. Checking there would
 * cost every allocation; a handler costs nothing until the fault. On
 * SIGSEGV or SIGBUS it looks at the faulting thread's lists: a head that is
 * not a slot of its pool (found in the address map, never read) is the
 * broken link, and is reported as a corrupted free list naming the pool.
 * The library's own walks check each link before they read it (harden.h,
 * heap.c), so they report rather than fault.
 *
 * Any other fault is not poolkit's: the handler puts back the action it
 * replaced and returns, so the faulting instruction runs again and faults
 * into that action (the default's core dump, a sanitizer's report, the
 * program's own handler). It is installed when the first pool is made,
 * unless POOLKIT_FAULT_HANDLER=0; a program that installs its own handler
 * afterwards replaces it.
 *
 * The handler runs on the faulting thread: it reads that thread's table
 * (initial-exec TLS: the slots and heap records of tcache.c), the keys
 * given out so far and the address map, takes no lock but
 * the error handler's, and the report is fatal.
 */
#include "pool_internal.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static struct sigaction replaced[2]; /* SIGSEGV's, SIGBUS's */
static const int signals[2] = {SIGSEGV, SIGBUS};

/* The pool of a slot of the calling thread whose list's head is no slot of
 * that pool, and that head; NULL when every list is sound. */
static pk_pool *broken_list(void **head) {
    const tc_slot *t, *end;
    if (!tcache_table_range(&t, &end)) return NULL; /* the thread has no table yet, or is exiting */
    size_t keys = tcache_keys_used();
    for (size_t k = 1; k < keys && t + k < end; k++) {
        heap *h = __atomic_load_n(&t[k].heap, __ATOMIC_RELAXED);
        /* the list the thread allocates from: the slot's (default or
         * hardened) or the heap's own (pools no inline path serves) */
        void *first = h ? tc_head(h->list) : NULL;
        if (!first) continue;
        pk_pool *p = h->pool;
        if (p && !slab_of_slot(first, p)) {
            *head = first;
            return p;
        }
    }
    return NULL;
}

static void on_fault(int sig, siginfo_t *info, void *context) {
    (void)info;
    (void)context;
    void *head = NULL;
    pk_pool *p = broken_list(&head);
    if (p)
        error_report(PK_FATAL, "corrupted free list", p->name, head,
                     "%s while the thread's free list of pool '%s' starts at %p, which is not one of its "
                     "objects: the link word of a free object was overwritten, and the object was then "
                     "handed out (the last one allocated from pool '%s' on this thread): most likely a "
                     "write after free of it or an overflow into it from the object before, or a double "
                     "free of it (POOLKIT_HARDENED=1 or POOLKIT_DEBUG=1 report it where it happens)",
                     sig == SIGBUS ? "SIGBUS" : "SIGSEGV", pool_name(p), head, pool_name(p));
    /* Not poolkit's: the action it replaced handles the fault again. */
    sigaction(sig, &replaced[sig == SIGBUS], NULL);
}

static void install(void) {
    if (!options_fault_handler()) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 2; i++) sigaction(signals[i], &sa, &replaced[i]);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void install_once(void) { pthread_once(&once, install); }

__attribute__((constructor(INIT_PRIORITY))) static void register_install(void) {
    init_on(INIT_FIRST_POOL, install_once);
}
