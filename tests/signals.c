/* A program's signals under poolkit (tests/signals.sh): each scenario sends
 * or takes a SIGSEGV or SIGBUS the way programs do, and must end as it ends
 * without poolkit. Built twice: plain (it knows nothing of poolkit; run
 * alone for the reference, and under the preload library) and linked with
 * libpoolkit (PK_LINKED), where the first pool installs poolkit's fault
 * handler.
 *
 * Usage: signals SCENARIO. What a run prints on stdout is part of what the
 * script compares; a handler of the program's exits 7 once it has seen what
 * it must, 8 when it saw something else.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef PK_LINKED
#  include <poolkit/pool.h>
#endif

#define OBJ 64

/* Allocation enough to have poolkit set up (its pools made, its handler
 * installed where it installs one). */
static void start(void) {
#ifdef PK_LINKED
    pk_pool *p = pk_pool_create(&(pk_pool_config){.name = "signals", .size = OBJ});
    if (!p) exit(2);
    for (int i = 0; i < 100; i++) pk_pool_free(p, pk_pool_alloc(p));
#else
    static void *volatile kept; /* a pair the compiler may not drop */
    for (int i = 0; i < 100; i++) {
        kept = malloc(OBJ + i);
        free(kept);
    }
#endif
}

static void say(const char *s) { (void)!write(1, s, strlen(s)); }

/* ---- the program's own handlers ---- */

static volatile sig_atomic_t depth, nested_ran, calls;
static char *fix_page;

static void own_siginfo(int sig, siginfo_t *info, void *ctx) {
    (void)ctx;
    if (sig == SIGSEGV && info->si_signo == SIGSEGV && info->si_code == SI_TKILL) {
        say("own handler: SIGSEGV from tgkill\n");
        _exit(7);
    }
    _exit(8);
}

static void own_resethand(int sig) {
    (void)sig;
    calls++;
    say("own handler once\n");
}

static void own_nodefer(int sig, siginfo_t *info, void *ctx) {
    (void)info;
    (void)ctx;
    if (depth++ == 0) {
        raise(sig); /* SA_NODEFER: runs this handler again, inside raise */
        say(nested_ran ? "nested inside\n" : "nested deferred\n");
        _exit(nested_ran ? 7 : 8);
    }
    nested_ran = 1;
}

static void own_mask(int sig) {
    sigset_t now;
    pthread_sigmask(SIG_SETMASK, NULL, &now);
    bool ok = sigismember(&now, SIGUSR1) == 1 && sigismember(&now, sig) == 1;
    say(ok ? "mask as installed\n" : "mask not as installed\n");
    _exit(ok ? 7 : 8);
}

static void own_fix(int sig, siginfo_t *info, void *ctx) {
    (void)ctx;
    if (sig != SIGSEGV || info->si_code <= 0 || (char *)info->si_addr != fix_page) _exit(8);
    mprotect(fix_page, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE); /* then the write runs again */
}

static void install(int sig, void (*fn)(int), void (*fn3)(int, siginfo_t *, void *), int flags, int masked) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    if (fn3) {
        sa.sa_sigaction = fn3;
        flags |= SA_SIGINFO;
    } else {
        sa.sa_handler = fn;
    }
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    if (masked) sigaddset(&sa.sa_mask, masked);
    if (sigaction(sig, &sa, NULL) != 0) exit(2);
}

/* ---- faults of the program's own ---- */

static char *page_none(void) {
    char *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) exit(2);
    return p;
}

/* A SIGBUS: a file's mapping touched past the file's end. */
static void bus_fault(void) {
    char name[] = "/tmp/pk-signals-XXXXXX";
    int fd = mkstemp(name);
    if (fd < 0) exit(2);
    unlink(name);
    char *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) exit(2);
    *(volatile char *)p = 1;
}

/* ---- a thread to send the signal to ---- */

static void *waiter(void *arg) {
    (void)arg;
    static void *volatile kept;
    kept = malloc(OBJ); /* a table of its own in poolkit */
    free(kept);
    for (;;) pause();
    return NULL;
}

/* ---- a free list broken by a write after free ---- */

#ifndef PK_LINKED
static void *volatile hidden;
#endif

static void corrupt(void) {
#ifdef PK_LINKED
    pk_pool *p = pk_pool_create(&(pk_pool_config){.name = "signals.corrupt", .size = OBJ});
    if (!p) exit(2);
    void *a = pk_pool_alloc(p), *b = pk_pool_alloc(p);
    pk_pool_free(p, b);
    *(void *volatile *)b = (void *)0xdead00000000; /* b's link word */
    void *c = pk_pool_alloc(p), *d = pk_pool_alloc(p);
#else
    void *a = malloc(OBJ), *b = malloc(OBJ);
    hidden = b; /* read back through a volatile: a store the compiler may not drop */
    free(b);
    *(void **)hidden = (void *)0xdead00000000;
    void *c = malloc(OBJ), *d = malloc(OBJ);
#endif
    printf("no fault: %p %p %p\n", a, c, d);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: signals SCENARIO\n");
        return 2;
    }
    const char *s = argv[1];
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(s, "raise-segv")) {
        start();
        raise(SIGSEGV);
    } else if (!strcmp(s, "raise-bus")) {
        start();
        raise(SIGBUS);
    } else if (!strcmp(s, "kill-segv")) {
        start();
        kill(getpid(), SIGSEGV);
    } else if (!strcmp(s, "kill-bus")) {
        start();
        kill(getpid(), SIGBUS);
    } else if (!strcmp(s, "thread-kill")) {
        start();
        pthread_t t;
        if (pthread_create(&t, NULL, waiter, NULL)) return 2;
        usleep(20000);
        pthread_kill(t, SIGSEGV);
        pthread_join(t, NULL);
    } else if (!strcmp(s, "fault-segv")) {
        start();
        *(volatile char *)page_none() = 1;
    } else if (!strcmp(s, "fault-bus")) {
        start();
        bus_fault();
    } else if (!strcmp(s, "own-before")) {
        install(SIGSEGV, NULL, own_siginfo, 0, 0);
        start();
        raise(SIGSEGV);
    } else if (!strcmp(s, "own-after")) {
        start();
        install(SIGSEGV, NULL, own_siginfo, 0, 0);
        raise(SIGSEGV);
    } else if (!strcmp(s, "own-resethand")) {
        install(SIGSEGV, own_resethand, NULL, SA_RESETHAND, 0);
        start();
        raise(SIGSEGV);
        say(calls == 1 ? "back from the handler\n" : "handler not called\n");
        raise(SIGSEGV); /* the default now */
    } else if (!strcmp(s, "own-nodefer")) {
        install(SIGSEGV, NULL, own_nodefer, SA_NODEFER, 0);
        start();
        raise(SIGSEGV);
    } else if (!strcmp(s, "own-mask")) {
        install(SIGBUS, own_mask, NULL, 0, SIGUSR1);
        start();
        raise(SIGBUS);
    } else if (!strcmp(s, "own-fixes-fault")) {
        fix_page = page_none();
        install(SIGSEGV, NULL, own_fix, 0, 0);
        start();
        fix_page[0] = 42;
        say(fix_page[0] == 42 ? "the fault was fixed\n" : "not fixed\n");
    } else if (!strcmp(s, "ignored")) {
        signal(SIGSEGV, SIG_IGN);
        start();
        raise(SIGSEGV);
        say("ignored\n");
    } else if (!strcmp(s, "ignored-fault")) {
        signal(SIGSEGV, SIG_IGN); /* a fault cannot be ignored: the kernel's default ends it */
        start();
        *(volatile char *)page_none() = 1;
    } else if (!strcmp(s, "disposition")) {
        start();
        struct sigaction now;
        sigaction(SIGSEGV, NULL, &now);
        say(!(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_DFL ? "SIGSEGV: default\n"
                                                                      : "SIGSEGV: a handler\n");
        return 0;
    } else if (!strcmp(s, "corrupt")) {
        start();
        corrupt();
    } else {
        fprintf(stderr, "signals: no scenario '%s'\n", s);
        return 2;
    }
    say("alive\n");
    return 0;
}
