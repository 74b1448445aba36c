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
 * Every other signal is the program's, and reaches what the program had
 * before, as if poolkit were not there (forward()): the action poolkit
 * replaced is called with the signal's own arguments and under the mask
 * and flags it was installed with; a default action is taken at once; an
 * ignored signal is dropped. Not only faults arrive here: raise, kill and
 * pthread_kill send SIGSEGV and SIGBUS too, and such a signal, unlike a
 * bad access, happens once: returning would lose it.
 *
 * It is installed when the first pool is made, unless
 * POOLKIT_FAULT_HANDLER=0; the malloc library, loaded into programs that
 * never asked for poolkit, installs it only with POOLKIT_FAULT_HANDLER=1
 * or POOLKIT_HARDENED=1 (options.c). A program that installs its own handler afterwards replaces
 * it, and a handler that passes on what it does not handle to the action
 * it replaced (as chaining handlers do) still lets poolkit explain its own.
 *
 * A layer above may explain faults in memory of its own
 * (crash_explain_with): the hardened front end's guarded blocks and blocks
 * of size 0.
 *
 * The handler runs on the faulting thread: it reads that thread's table
 * (initial-exec TLS: the slots and heap records of tcache.c), the keys
 * given out so far and the address map, takes no lock but
 * the error handler's, and the report is fatal.
 */
#include "pool/pool_internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

static const int signals[2] = {SIGSEGV, SIGBUS};
static struct sigaction replaced[2]; /* what each signal had before poolkit's */

static struct sigaction *replaced_of(int sig) { return &replaced[sig == SIGBUS]; }

/* The pool of a slot of the calling thread whose list's head is no slot of
 * that pool, and that head; NULL when every list is sound. */
static bool (*explainer)(int sig, const void *addr); /* crash_explain_with */

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

static PK_COLD void report_broken_list(int sig, pk_pool *p, void *head) {
    error_report(PK_FATAL, "corrupted free list", p->name, head,
                 "%s while the thread's free list of pool '%s' starts at %p, which is not one of its "
                 "objects: the link word of a free object was overwritten, and the object was then "
                 "handed out (the last one allocated from pool '%s' on this thread): most likely a "
                 "write after free of it or an overflow into it from the object before, or a double "
                 "free of it (POOLKIT_HARDENED=1 or POOLKIT_DEBUG=1 report it where it happens)",
                 sig == SIGBUS ? "SIGBUS" : "SIGSEGV", pool_name(p), head, pool_name(p));
}

/* A signal the kernel raised for an access (si_code > 0) comes back when
 * the access runs again; one that raise, kill, sigqueue or pthread_kill
 * sent (si_code <= 0) happens once. */
static bool sent(const siginfo_t *info) { return !info || info->si_code <= 0; }

/* The signal's action set back to the default, in the kernel and here. */
static void reset_to_default(int sig) {
    struct sigaction *old = replaced_of(sig);
    memset(old, 0, sizeof *old);
    old->sa_handler = SIG_DFL;
    sigemptyset(&old->sa_mask);
    sigaction(sig, old, NULL);
}

/* The default action, taken at once. A fault runs its access again on
 * return and dies of it where it happened (a core shows the program's own
 * frame); a sent signal is sent again and, once unblocked, kills before
 * this returns. */
static void take_default(int sig, const siginfo_t *info) {
    reset_to_default(sig);
    if (!sent(info)) return;
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    raise(sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
}

/* The program's handler, called as the kernel would have called it: under
 * the mask in force when the signal came plus its own sa_mask and, unless
 * SA_NODEFER, the signal; reset to the default first for SA_RESETHAND. It
 * runs on the stack this handler runs on: poolkit's is installed with
 * SA_ONSTACK only when the program's was (install()). */
static void call_handler(struct sigaction *old, int sig, siginfo_t *info, void *context) {
    struct sigaction act = *old;
    if (act.sa_flags & SA_RESETHAND) reset_to_default(sig); /* as the kernel does at delivery */
    sigset_t mask, saved;
    if (context) mask = ((ucontext_t *)context)->uc_sigmask;
    else pthread_sigmask(SIG_SETMASK, NULL, &mask);
    for (int s = 1; s < NSIG; s++)
        if (sigismember(&act.sa_mask, s) == 1) sigaddset(&mask, s);
    if (act.sa_flags & SA_NODEFER) sigdelset(&mask, sig);
    else sigaddset(&mask, sig);
    pthread_sigmask(SIG_SETMASK, &mask, &saved);
    if (act.sa_flags & SA_SIGINFO) act.sa_sigaction(sig, info, context);
    else act.sa_handler(sig);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
}

/* The signal given to what the program had before poolkit's handler. */
static void forward(int sig, siginfo_t *info, void *context) {
    struct sigaction *old = replaced_of(sig);
    if (!(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_IGN) {
        /* dropped, as the kernel drops an ignored signal; a fault cannot
         * be ignored and runs again into the kernel's default */
        if (!sent(info)) take_default(sig, info);
        return;
    }
    if (!(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_DFL) {
        take_default(sig, info);
        return;
    }
    call_handler(old, sig, info, context);
}


static void on_fault(int sig, siginfo_t *info, void *context) {
    int saved_errno = errno;
    void *head = NULL;
    pk_pool *p = sent(info) ? NULL : broken_list(&head);
    if (p) report_broken_list(sig, p, head);
    bool (*explain)(int, const void *) = __atomic_load_n(&explainer, __ATOMIC_ACQUIRE);
    if (explain && !sent(info)) explain(sig, info->si_addr);
    forward(sig, info, context);
    errno = saved_errno;
}

static void install(void) {
    if (!options_fault_handler()) return;
    for (int i = 0; i < 2; i++) {
        if (sigaction(signals[i], NULL, &replaced[i]) != 0) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fault;
        sa.sa_flags = SA_SIGINFO;
        /* the program's handler runs on the stack it asked for; a default
         * action runs no code, and a report needs little stack */
        bool program_handler = (replaced[i].sa_flags & SA_SIGINFO) ||
                               (replaced[i].sa_handler != SIG_DFL && replaced[i].sa_handler != SIG_IGN);
        if (!program_handler || (replaced[i].sa_flags & SA_ONSTACK)) sa.sa_flags |= SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(signals[i], &sa, NULL);
    }
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void install_once(void) { pthread_once(&once, install); }

/* A layer with faults of its own to explain may come before any pool (a
 * first block that is mapped alone): the handler goes in now. */
void crash_explain_with(bool (*fn)(int sig, const void *addr)) {
    __atomic_store_n(&explainer, fn, __ATOMIC_RELEASE);
    install_once();
}

__attribute__((constructor(INIT_PRIORITY))) static void register_install(void) {
    init_on(INIT_FIRST_POOL, install_once);
}
