/* When memory goes back: the sweep that runs every pool's purge tick
 * (purge.c) and the kept places' and mappings' (region.c, retain.c), on
 * poolkit's own calls and, when asked for, on a background thread.
 *
 * The poll (pool_purge_poll) sits on every slow path and whole-pool call,
 * never on the inline fast paths: one read of a coarse clock and a compare.
 * Once per tick interval process-wide it sweeps every shared pool and the
 * retained memory. After a silence the first call that reaches the library
 * sweeps at once, and the pools' time stamps send back everything that sat
 * unused for the delay.
 *
 * The background purge (POOLKIT_BACKGROUND_PURGE=1, pk_set_background_purge)
 * is one thread that runs the same sweep every tick interval, for programs
 * that go fully idle, as jemalloc's background_thread and tcmalloc's
 * background release do. Between sweeps it sleeps on a condition variable;
 * it blocks every signal, so signals go to the program's threads; it is
 * stopped and joined at exit; and when it is the last thread left (main
 * called pthread_exit and the others ended) it ends the process with
 * exit(0), as the last thread's own exit would have, instead of keeping it
 * alive. Off (the default), there is no thread.
 *
 * Locks: `control` serializes starting and stopping and is held across
 * pthread_create and pthread_join (the thread never takes it); `state`
 * guards the stop flag and the condition variable and is a leaf. fork.c
 * takes control before every other lock, so a fork waits for a start or
 * stop in progress, and for a sweep through the pool locks. The child has
 * no thread: its state lock and condition variable are made afresh (the
 * parent's thread may have held the one or waited on the other), and if the
 * thread ran in the parent, the child's first poll starts one.
 */
#include "pool/sweep.h"
#include "pool/pool_list.h"
#include "pool/pool_valid.h"
#include "pool/purge.h"
#include "mem/region.h"

#include <poolkit/pool.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the poll on poolkit's calls ---- */

/* The next time any thread should sweep; 0 = now. */
static uint64_t next_poll_ms;

/* The background purge should start on the next poll: until the first poll
 * has read POOLKIT_BACKGROUND_PURGE, and in a fork child of a process that
 * ran it. */
static bool start_due = true;

static void start_if_due(void);

/* A shared pool's tick on a sweep (the pool's lock held). */
static void tick_one(pk_pool *p, void *arg) {
    purge_tick(p, *(const uint64_t *)arg);
    POOL_VALIDATE(p);
}

static void (*sweep_also)(uint64_t now);

void pool_sweep_with(void (*fn)(uint64_t now)) { __atomic_store_n(&sweep_also, fn, __ATOMIC_RELEASE); }

void pool_sweep_release(void) {
    void (*also)(uint64_t) = __atomic_load_n(&sweep_also, __ATOMIC_ACQUIRE);
    if (also) also(UINT64_MAX);
}

/* Returns false when the pool list was busy (the pools not swept). */
static bool sweep(uint64_t now) {
    void (*also)(uint64_t) = __atomic_load_n(&sweep_also, __ATOMIC_ACQUIRE);
    os_retain_tick(now);
    region_tick(now);
    if (also) also(now);
    return pools_try_each_shared(tick_one, &now);
}

uint64_t pool_purge_poll(void) {
    uint64_t now = os_now_ms(), next = __atomic_load_n(&next_poll_ms, __ATOMIC_RELAXED);
    /* A sweep scheduled further away than the delay in force allows was
     * scheduled under a longer one (pk_set_purge_delay shortened it): due
     * now, else memory waited up to half the old delay. */
    if (likely(now < next) && likely(next - now <= PURGE_INTERVAL_MS((uint64_t)options_purge_delay_ms())))
        return now;
    if (unlikely(__atomic_load_n(&start_due, __ATOMIC_RELAXED))) start_if_due();
    uint64_t delay = (uint64_t)options_purge_delay_ms();
    /* With delay 0 memory goes back on the calls that free it and nothing is
     * retained: no sweep to make. */
    if (delay == 0) return now;
    if (!__atomic_compare_exchange_n(&next_poll_ms, &next, now + PURGE_INTERVAL_MS(delay), false,
                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return now; /* another thread sweeps this interval */
    /* The list busy (this very thread may hold it, in a pk_pool_foreach
     * callback): the next poll tries again. */
    if (!sweep(now)) __atomic_store_n(&next_poll_ms, next, __ATOMIC_RELAXED);
    return now;
}

/* ---- the background purge ---- */

static pthread_mutex_t control PK_FORK_LOCK = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t state PK_FORK_LOCK = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake; /* on CLOCK_MONOTONIC, made by the first start */
static bool wake_made;      /* under control */
static bool running;        /* a thread exists; under control */
static bool stop;           /* under state */
static bool started;        /* the thread runs its own code; under state */
static pthread_t thread;    /* under control */

static void make_wake(void) {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&wake, &a);
    pthread_condattr_destroy(&a);
}

/* Whether the calling thread is the process's last, from /proc/self/stat
 * (the main thread's): num_threads (field 20) is 1, or 2 with the main
 * thread a zombie (state Z, field 3: it called pthread_exit, and stays
 * listed until the whole process ends). False when it cannot tell. */
static bool last_thread_left(void) {
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return false;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p) return false;
    char main_state = p[1] == ' ' ? p[2] : '?';
    int field = 2;
    for (p++; *p && field < 20; p++)
        if (*p == ' ') field++;
    long threads = field == 20 ? strtol(p, NULL, 10) : 0;
    return threads == 1 || (threads == 2 && main_state == 'Z');
}

/* The sleep before the next sweep: one tick interval, within bounds. */
static uint64_t sleep_ms(uint64_t delay) {
    uint64_t ms = delay ? PURGE_INTERVAL_MS(delay) : PURGE_BACKGROUND_MAX_SLEEP_MS;
    if (ms > PURGE_BACKGROUND_MAX_SLEEP_MS) ms = PURGE_BACKGROUND_MAX_SLEEP_MS;
    if (ms < PURGE_BACKGROUND_MIN_SLEEP_MS) ms = PURGE_BACKGROUND_MIN_SLEEP_MS;
    return ms;
}

/* Sleeps ms or until asked to stop; caller holds state. True to go on. */
static bool sleep_unless_stopped(uint64_t ms) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int rc = 0;
    while (!stop && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&wake, &state, &until);
    return !stop;
}

static void *purge_main(void *arg) {
    (void)arg;
    uint64_t checked_alone = 0;
    pthread_mutex_lock(&state);
    started = true;
    pthread_cond_broadcast(&wake);
    for (;;) {
        uint64_t delay = (uint64_t)options_purge_delay_ms();
        if (!sleep_unless_stopped(sleep_ms(delay))) break;
        pthread_mutex_unlock(&state);
        uint64_t now = os_now_ms();
        if (delay) {
            /* The callers' polls need not sweep again this interval. */
            __atomic_store_n(&next_poll_ms, now + PURGE_INTERVAL_MS(delay), __ATOMIC_RELAXED);
            sweep(now); /* a busy list: the next wake tries again */
        }
        if (now - checked_alone >= PURGE_BACKGROUND_MAX_SLEEP_MS) {
            checked_alone = now;
            if (last_thread_left()) exit(0);
        }
        pthread_mutex_lock(&state);
    }
    pthread_mutex_unlock(&state);
    return NULL;
}

static bool ever_started; /* written under control, read at exit */

/* Caller holds control and no thread runs. Returns 0 or an errno value. */
static int start_thread(void) {
    if (!wake_made) {
        make_wake();
        wake_made = true;
    }
    __atomic_store_n(&ever_started, true, __ATOMIC_RELEASE);
    stop = false;
    started = false;
    /* Every signal blocked in the thread (it inherits the mask it is created
     * with), so none is delivered to it instead of the program's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&thread, NULL, purge_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) return rc;
#ifdef __GLIBC__
    pthread_setname_np(thread, "poolkit-purge");
#endif
    /* Back only once the thread runs its own code: a fork from here on
     * finds it in no runtime's start (a sanitizer's allocates and frees
     * there, and its allocator takes no lock at fork, so a child forked in
     * that window inherits an allocator lock held by a thread it has not). */
    pthread_mutex_lock(&state);
    while (!started) pthread_cond_wait(&wake, &state);
    pthread_mutex_unlock(&state);
    running = true;
    return 0;
}

/* Caller holds control. At exit the wait is bounded: a thread that called
 * exit while holding a lock the sweep needs (the pool list's, from a
 * pk_pool_foreach callback) must not hang the exit; the process ends the
 * thread anyway. */
static void stop_thread(bool at_exit) {
    if (!running) return;
    pthread_mutex_lock(&state);
    stop = true;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&state);
    running = false;
    /* exit(0) from the thread itself (the last thread left) runs this too. */
    if (pthread_equal(thread, pthread_self())) return;
#ifdef __GLIBC__
    if (at_exit) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 2;
        pthread_timedjoin_np(thread, NULL, &until);
        return;
    }
#endif
    (void)at_exit;
    pthread_join(thread, NULL);
}

/* A destructor, not atexit: the thread may start inside a malloc the C
 * library makes under the lock atexit takes (stats.c says when). A
 * process that never started it takes no lock here. */
__attribute__((destructor)) static void stop_at_exit(void) {
    if (!__atomic_load_n(&ever_started, __ATOMIC_ACQUIRE)) return;
    pk_lock(&control);
    stop_thread(true);
    pk_unlock(&control);
}

/* Caller holds control: the start the environment (first poll) or the
 * parent (a fork child) asked for, if still due. */
static void settle_due_start(void) {
    if (!__atomic_load_n(&start_due, __ATOMIC_RELAXED)) return;
    __atomic_store_n(&start_due, false, __ATOMIC_RELAXED);
    if (!running && options_background_purge()) {
        int rc = start_thread();
        if (rc != 0)
            error_report(PK_WARNING, "background purge", NULL, NULL,
                         "POOLKIT_BACKGROUND_PURGE: the purge thread could not start (%s); memory "
                         "goes back on poolkit's calls only",
                         strerror(rc));
    }
}

/* A poll never waits: a start or stop in progress settles it instead. */
static PK_COLD void start_if_due(void) {
    if (pk_trylock(&control) != 0) return;
    settle_due_start();
    pk_unlock(&control);
}

int pk_set_background_purge(int on) {
    init_announce(INIT_SHARED_STATE); /* fork handlers (fork.c) */
    pk_lock(&control);
    fork_test_point(HOOK_PURGE_CONTROL, &control);
    /* A read counts as a first call (a due start happens first); a setting
     * overrides the start that was due. */
    if (on < 0) settle_due_start();
    else __atomic_store_n(&start_due, false, __ATOMIC_RELAXED);
    int was = running;
    if (on > 0 && !running) {
        int rc = start_thread();
        if (rc != 0) {
            pk_unlock(&control);
            errno = rc;
            return -1;
        }
    } else if (on == 0) {
        stop_thread(false);
    }
    if (on >= 0) options_set_background_purge(on > 0);
    pk_unlock(&control);
    return was;
}

/* ---- fork (fork.c) ---- */

static bool ran_before_fork; /* under control, from prepare to the child */

void purge_fork_lock(void) {
    pk_lock(&control);
    PK_SET_IF_CHANGED(ran_before_fork, running); /* the last fork left its page to be copied */
}

void purge_fork_unlock(void) { pk_unlock(&control); }

void purge_fork_child(void) {
    PK_SET_IF_CHANGED(running, false);
    PK_SET_IF_CHANGED(stop, false);
    PK_SET_IF_CHANGED(started, false);
    pthread_mutex_init(&state, NULL);
    if (wake_made) make_wake();
    if (ran_before_fork) __atomic_store_n(&start_due, true, __ATOMIC_RELAXED);
    purge_fork_unlock();
}

/* pk_option_set's background_purge goes through pk_set_background_purge,
 * which options.c, below this layer, cannot call. */
__attribute__((constructor(INIT_PRIORITY))) static void register_setter(void) {
    options_on_background_set(pk_set_background_purge);
}
