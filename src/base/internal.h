/* What every layer of the library shares: branch hints, assertion levels,
 * the system page source (os.c), error reporting (error.c), start-up hooks
 * (init.c) and process-wide options (options.c). Nothing here is visible
 * outside the library.
 *
 * The layers are the folders of src/, listed lowest first in
 * src/layers.txt, which scripts/layers.py checks (make test).
 *
 * The one public-facing layer is include/poolkit/; fastpath.c and
 * version.c only instantiate its inline functions and version. */
#ifndef POOLKIT_INTERNAL_H
#define POOLKIT_INTERNAL_H

#include "base/policy.h"

#include <poolkit/error.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A process-wide lock that every thread takes several times per large
 * block (the large blocks' table, the kept mappings): it spins a little
 * before it sleeps (glibc's adaptive mutex), so a waiter whose holder is
 * running spares the futex wake and the context switch (threads that
 * share large blocks switch far less: docs/alloc.md). */
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
#  define PK_SPIN_MUTEX_INITIALIZER PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
#else
#  define PK_SPIN_MUTEX_INITIALIZER PTHREAD_MUTEX_INITIALIZER
#endif

/* The locks fork's handlers take and release (process/fork.c) lie
 * together in one section: a page written after a fork is copied, in the
 * parent and in the child, so the handlers write one page of locks rather
 * than one in each file's data. A cache line each: no two slow paths that
 * take different locks share a line. */
#define PK_FORK_LOCK __attribute__((section("pk_fork_locks"), aligned(64)))

/* Tables of a fixed size, zeroed, of which a program touches the first
 * pages (or a few): gcc puts them in .lbss, which the linker places after
 * every other variable, so that the small ones lie on a few pages
 * together. Spread among the tables, they took a page table (a 2 MiB span)
 * each here and there, which every fork copies and the process holds.
 * clang makes such a section hold its zeros in the file: there they stay
 * in .bss. */
#if defined(__GNUC__) && !defined(__clang__)
#  define PK_BIG_TABLE __attribute__((section(".lbss")))
#else
#  define PK_BIG_TABLE
#endif

/* A fork's window (process/fork.c): from the library's prepare handler to
 * its parent or child handler, the forking thread holds every lock above.
 * Handlers other libraries registered before the library's own run inside
 * that window (prepare handlers in the reverse order of registration,
 * parent and child handlers in it), and one that allocates or frees would
 * wait on a lock its own thread holds, for ever; in the window the
 * forking thread takes none, its own holding them all already. Every lock
 * of the library goes through these but the purge thread's state (sweep.c),
 * which the window does not hold. The window's owner (the forking thread's
 * pthread_self, 0 outside a window) lies among the fork locks, on the page
 * the handlers write anyway: a flag in thread-local storage, cleared by
 * the parent's handler, cost the parent a copied page at every fork. */
extern uintptr_t pk_fork_owner;
static inline bool pk_in_fork_window(void) {
    uintptr_t owner = __atomic_load_n(&pk_fork_owner, __ATOMIC_RELAXED);
    return __builtin_expect(owner != 0, 0) && owner == (uintptr_t)pthread_self();
}
static inline void pk_lock(pthread_mutex_t *m) {
    if (!pk_in_fork_window()) pthread_mutex_lock(m);
}
static inline void pk_unlock(pthread_mutex_t *m) {
    if (!pk_in_fork_window()) pthread_mutex_unlock(m);
}
static inline int pk_trylock(pthread_mutex_t *m) {
    return !pk_in_fork_window() ? pthread_mutex_trylock(m) : 0;
}
/* For the same reason a fork's child compares a word before it writes it,
 * where the forking thread's own state is usually unchanged. */
#define PK_SET_IF_CHANGED(lvalue, value)           \
    do {                                           \
        if ((lvalue) != (value)) (lvalue) = value; \
    } while (0)

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define PK_NOINLINE __attribute__((noinline))
#define PK_COLD __attribute__((cold, noinline))
#define PK_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* Assertion levels (mimalloc's mi_assert, mi_assert_internal,
 * mi_assert_expensive), chosen by the build: CMake's POOLKIT_ASSERT, 0 in
 * Release builds, 3 in Debug ones (make test's ASan and TSan trees).
 *   1 PK_ASSERT           cheap checks of what a caller handed in
 *   2 PK_ASSERT_INTERNAL  cheap checks of the library's own state (a
 *                         slab's counts against its list)
 *   3 PK_ASSERT_EXPENSIVE whole-structure validators (pool_is_valid) at
 *                         every state change of a pool
 * A level compiles in the ones below it; a failed assertion is a fatal
 * report, "poolkit: internal assertion: file:line: condition". Release
 * builds compile none in: the condition is not evaluated. */
#ifndef POOLKIT_ASSERT
#  define POOLKIT_ASSERT 0
#endif
PK_COLD __attribute__((noreturn)) void assert_fail(const char *file, int line, const char *cond);
#define PK_ASSERT_AT_(level, x) \
    ((void)(POOLKIT_ASSERT >= (level) && !(x) ? (assert_fail(__FILE__, __LINE__, #x), 0) : 0))
#if POOLKIT_ASSERT >= 1
#  define PK_ASSERT(x) PK_ASSERT_AT_(1, x)
#else
#  define PK_ASSERT(x) ((void)0)
#endif
#if POOLKIT_ASSERT >= 2
#  define PK_ASSERT_INTERNAL(x) PK_ASSERT_AT_(2, x)
#else
#  define PK_ASSERT_INTERNAL(x) ((void)0)
#endif
#if POOLKIT_ASSERT >= 3
#  define PK_ASSERT_EXPENSIVE(x) PK_ASSERT_AT_(3, x)
#else
#  define PK_ASSERT_EXPENSIVE(x) ((void)0)
#endif

/* ---- os.c: memory from the system, and nothing else. ---- */

/* size bytes (a multiple of the page size) aligned to align (a power of two,
 * at least a page), zero-filled, from mmap. NULL with errno ENOMEM when the
 * system refuses or a fault was injected (fault.h). */
void *os_map(size_t size, size_t align);
void os_unmap(void *p, size_t size);
/* os_map, at want if the system grants it (an address given back before,
 * so address space is reused), else wherever os_map puts it. */
void *os_map_near(void *want, size_t size, size_t align);
/* A request for pages that needs no system call (a place in a region
 * mapped earlier): counted like the others, and false with errno ENOMEM
 * where a fault is injected (fault.h). */
bool os_request(void);
/* Address space only: size bytes aligned to align, no access, backed by
 * nothing until os_commit; NULL with errno ENOMEM. */
void *os_reserve(size_t size, size_t align);
/* os_reserve's, at an address offset bytes past a multiple of align
 * (offset below align). */
void *os_reserve_at(size_t size, size_t align, size_t offset);
/* Pages of a reservation made usable (zero-filled); false with errno
 * ENOMEM (or an injected fault). os_decommit gives them back, no access. */
bool os_commit(void *p, size_t size);
/* Gives a private mapping's pages back: zero when next touched. */
void os_zero_pages(void *p, size_t size);
void os_decommit(void *p, size_t size);
/* How many of the n pages from p (page aligned, mapped) are resident now
 * (0 where the system will not say). */
size_t os_resident_pages(void *p, size_t n);
/* Which of the n pages from p are resident: bit 0 of vec[i] for page i;
 * false where the system will not say. */
bool os_resident_map(void *p, size_t n, unsigned char *vec);
/* The len bytes (a page multiple) of src, page aligned, private and
 * anonymous, in dst, page aligned, written only where src's pages hold
 * data (resident, or swapped out: /proc/self/pagemap; all of them where
 * it cannot be read): dst's pages where src's are zero are given back,
 * zero as src's read. A copy of a block written in part leaves as few
 * pages resident as the block had, where memcpy made every page resident
 * (and the next copy of it, every page again). */
void os_copy_resident(void *dst, const void *src, size_t len);
/* A mapping from os_map resized to new_size bytes (page multiples), moved
 * with its contents where it cannot grow in place; NULL when the system
 * refuses (p unchanged). The address it returns is page-aligned only. */
void *os_remap(void *p, size_t size, size_t new_size);
/* Moves the pages of [src, src + len) to dst (page-aligned; dst's range,
 * mapped by the caller, is replaced), without copying or faulting them,
 * over as many of the system's mappings as the range spans (two blocks
 * mapped apart and kept side by side stay two): whole first (systems since
 * Linux 6.17 move such a range at once), else, or where whole is false
 * (the tests' way to the older systems' path), one mapping at a time.
 * *moved: the bytes moved before any refusal. False if the system refuses
 * a move: then the *refused bytes at dst + *moved may be unmapped (mremap
 * unmaps its target first), and another thread may map there, or still be
 * the caller's; src's range from *moved on is as it was. */
bool os_move_pages(void *dst, void *src, size_t len, size_t *moved, size_t *refused, bool whole);
/* Moves the pages of [src, src + len), within one of the system's
 * mappings, to dst (dst's range, mapped by the caller, is replaced), and
 * leaves src's range mapped, its pages gone (zero when next touched); false
 * where the system refuses (Linux before 5.7), nothing changed. */
bool os_move_pages_keep(void *dst, void *src, size_t len);
/* The longest front of [p, p + len) (page multiples) within one of the
 * system's mappings: at least a page. */
size_t os_mapping_front(void *p, size_t len);
/* Makes whole pages no-access (guard pages); false if the system refuses. */
bool os_protect_none(void *p, size_t size);
/* Undoes it; false if the system refuses (no memory to commit). */
bool os_protect_rw(void *p, size_t size);
/* The guards held: no-access pages that split a mapping (a guarded pool's
 * slab, a hardened guarded block), each about two of the process's
 * mappings, which Linux caps. Whether fewer than GUARDS_MAX are held
 * (policy.h): past them a caller goes on without its guard; and the count
 * changed by delta where one is made or opened again. */
bool os_guard_room(void);
void os_guards_add(long delta);
/* Address space of size bytes (a page multiple), no access, to be made
 * usable by os_protect_rw; NULL with errno ENOMEM (or an injected fault). */
void *os_map_none(size_t size);
size_t os_page_size(void);
/* The machine's physical memory in bytes (SIZE_MAX if unknown): a bound on
 * what any request can be given. */
size_t os_physical_bytes(void);

/* Milliseconds from a coarse monotonic clock (a few ns to read): for purge
 * ticks, which need no precision. */
uint64_t os_now_ms(void);

/* ---- retain.c: whole mappings kept for the purge delay. ---- */

/* A mapping of size bytes aligned to align: one retained earlier (not
 * zero) or a fresh one from os_map. */
void *os_map_reuse(size_t size, size_t align);
/* The same, a fresh mapping at want if the system grants it. */
void *os_map_reuse_near(void *want, size_t size, size_t align);
/* Keeps the mapping for reuse until the purge delay passes (within
 * RETAIN_BYTES), or unmaps it now; whether it kept it. */
bool os_unmap_later(void *p, size_t size, size_t align);
/* size bytes (a multiple of the page size), page-aligned: part of a freed
 * large block's mapping kept by os_unmap_later_fit (not zero), or one
 * grown to size, or a fresh one from os_map. NULL with errno ENOMEM. */
void *os_map_fit(size_t size);
/* The same; *written gets how many of its first bytes are kept pages a
 * user may have written (0: fresh pages, or ones given back). */
void *os_map_fit_written(size_t size, size_t *written);
/* The same, zero: what was kept is cleared (clear: a kept mapping's pages
 * are faulted in already, so clearing them costs less than the two faults
 * a read and then a write of a fresh page take) or given back to the
 * system, to come back zero as they are touched (a long block the program
 * may use little of: the fits still shrink by it); pages fresh or grown
 * are not touched. *resident: whether every page of it is resident now
 * (cleared whole), which os_unmap_later_fit_resident passes on. */
void *os_map_fit_zero(size_t size, bool clear, bool *resident);
/* len bytes (a multiple of the page size) at a multiple of align (a power
 * of two past the page size) from a kept mapping that holds them so, the
 * newest that does, what lies either side of them waiting on; NULL where
 * none does (or no room is left for a second piece). With zero, zero as
 * os_map_fit_zero makes them (clear: cleared, else given back). */
void *os_fit_take_aligned(size_t len, size_t align, bool zero, bool clear);
/* size bytes (a multiple of the page size), a fresh mapping whose pages
 * past its first `front` bytes are the kept mappings' (moved there as
 * os_map_fit gathers them: no copy, no fault), the rest fresh; NULL where
 * none is kept or the system refuses. */
void *os_map_fit_after(size_t size, size_t front);
/* size bytes (a multiple of the page size) from the front of the smallest
 * kept mapping that holds them, the rest waiting on; NULL where none does
 * (nothing is mapped: os_map_fit's gather is not tried). */
void *os_fit_take(size_t size);
/* Takes bytes at `at` out of the fits, at least `least` and at most
 * `most`, if a kept mapping starts there and holds `least` (a block grows
 * over the pages kept after it, its own tail or a neighbour's, still
 * faulted in): how many it took, 0 if none. */
size_t os_fit_claim(void *at, size_t least, size_t most);
/* Keeps a page-aligned mapping of len bytes (or part of one) for
 * os_map_fit until the purge delay passes, within bound.count mappings
 * (the smallest unmapped first) of at most bound.bytes together (the
 * oldest unmapped first), or unmaps it now. */
void os_unmap_later_fit(void *p, size_t len, fit_bound bound);
/* The same for a mapping whose every page is resident (a zeroed block
 * cleared whole, os_map_fit_zero): a zeroed block that takes it next
 * clears it with no look at its pages (os_kept_in_use's system call). */
void os_unmap_later_fit_resident(void *p, size_t len, fit_bound bound);
/* Whether enough of the pages of [p, p + len) (page-aligned, mapped) are
 * resident to be written over whole (KEPT_DENSE_SHIFT, policy.h), or len
 * is at most KEPT_DENSE_MIN. */
bool os_kept_in_use(void *p, size_t len);
/* Unmaps what has been retained longer than the delay. */
void os_retain_tick(uint64_t now_ms);
/* Unmaps everything retained; returns the bytes. */
size_t os_retain_release(void);
/* Bytes retained now (region.c's kept places included). */
size_t os_retained_bytes(void);
/* Bytes of freed large blocks' mappings kept now (os_unmap_later_fit). */
size_t os_fit_bytes(void);
/* At least bytes of the kept fits' pages that waited since before now
 * less the purge delay shifted right by FIT_GIVE_IDLE_SHIFT (where that
 * many are kept), the oldest first, given back to the system with their
 * address space: what a program that faults fresh pages in for its small
 * objects (region.c) no longer uses of its large blocks', at os_now_ms()
 * now, unless paused (FIT_GIVE_REGRET, policy.h): nothing goes back for a
 * while once large blocks have mapped fresh pages for at least half of
 * what the last gives took. The bytes given. */
size_t os_fit_owe(size_t bytes, uint64_t now);
/* Fresh bytes a large block took where no fit served (os_map_fit and
 * os_map_fit_after count their own): what os_fit_owe judges by. */
void os_fit_note_fresh(size_t bytes);
/* region.c's kept places count against the same bound: true (and counted)
 * if size more bytes fit it. */
bool retain_charge(size_t size);
void retain_uncharge(size_t size);

/* ---- process-wide figures (stats.h), kept where memory comes and goes,
 * never on an allocation ---- */

/* Bytes held now and the most held at once, from any thread. */
typedef struct gauge {
    size_t now, peak;
} gauge;
/* Every pool's slabs (central.c) and every arena's chunks (arena.c). */
extern gauge pool_bytes, arena_bytes;

/* bytes mapped (+) or given back (-); racing raisers keep the highest peak. */
static inline void gauge_add(gauge *g, long bytes) {
    size_t now = __atomic_add_fetch(&g->now, (size_t)bytes, __ATOMIC_RELAXED);
    size_t old = __atomic_load_n(&g->peak, __ATOMIC_RELAXED);
    while (bytes > 0 && now > old &&
           !__atomic_compare_exchange_n(&g->peak, &old, now, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}
/* Starts the peak afresh from what is held now (pk_stats_reset_peaks). */
static inline void gauge_reset_peak(gauge *g) {
    __atomic_store_n(&g->peak, __atomic_load_n(&g->now, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
}

/* Live arenas (arena.c). */
size_t arena_count(void);
/* Of those, the library's own (the threads' scratch arenas, autorelease.c,
 * which counts them here as it makes and destroys them): what is live at
 * exit is no leak of the program's (the main thread's is never
 * destroyed). */
size_t arena_count_library(long change);
/* The arena records' lock (arena.c, a leaf), for fork's handlers. */
void arena_fork_lock(void);
void arena_fork_unlock(void);

static inline size_t align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }
static inline bool is_pow2(size_t n) { return n && !(n & (n - 1)); }

/* ---- error.c: every detected fault goes through here. ---- */

/* Formats one line "poolkit: <what> ...", hands it to the error handler and,
 * for PK_FATAL, aborts once the handler returns. */
void error_report(pk_severity sev, const char *what, const char *pool, const void *ptr,
                  const char *fmt, ...) PK_PRINTF(5, 6);

/* ---- options.c: switches read once from the environment. ---- */

/* POOLKIT_DEBUG=1: every pool as if created with PK_POOL_DEBUG, plus the
 * object and autorelease checks. */
bool options_debug(void);
/* POOLKIT_HARDENED=1 (or a build with POOLKIT_HARDENED_DEFAULT): every pool
 * as if created with PK_POOL_HARDENED. */
bool options_hardened(void);
/* How long memory no pool uses stays mapped, in ms (pk_set_purge_delay). */
long options_purge_delay_ms(void);
/* POOLKIT_BACKGROUND_PURGE=1, or pk_set_background_purge: whether the
 * background purge is wanted (sweep.c); the call stores what it set. */
bool options_background_purge(void);
void options_set_background_purge(bool on);
/* The call that starts or stops the background purge (sweep.c registers
 * pk_set_background_purge at load: the option's setter calls it). */
void options_on_background_set(int (*fn)(int on));
/* POOLKIT_DEBUG_FRAMES: stack frames debug pools keep per call site (sites.h). */
size_t options_debug_frames(void);
/* POOLKIT_FAULT_HANDLER (on unless 0): crash.c's handler of SIGSEGV and
 * SIGBUS, which names a broken free list, is installed with the first pool. */
bool options_fault_handler(void);
/* POOLKIT_VERBOSE=1: notable events are reported (note_once). */
bool options_verbose(void);
/* POOLKIT_STATS: where the report at exit goes; *path is the file's name
 * for STATS_FILE, else NULL. */
enum { STATS_OFF, STATS_STDERR, STATS_FILE };
int options_stats(const char **path);
/* crash.c: a layer above the pools that maps memory of its own (the
 * hardened front end's guarded blocks) explains a fault in it: fn reports
 * a fault at addr that is its own (and never returns then), or returns
 * false. At most one; set before the first fault it may explain. */
void crash_explain_with(bool (*fn)(int sig, const void *addr));

/* Every option with its value in force, for the report (stats.c). */
typedef enum { OPTION_SWITCH, OPTION_COUNT, OPTION_DEST } option_kind;
typedef enum {
    OPTION_DEFAULT,     /* unset or empty */
    OPTION_ENVIRONMENT, /* from its environment variable */
    OPTION_BAD,         /* the variable's value was malformed (reported); the default */
    OPTION_CALL         /* set by a call (option_info.setter names it) */
} option_source;
typedef struct option_info {
    const char *name; /* the environment variable */
    option_kind kind;
    long value;       /* a switch 0 or 1; a count; OPTION_DEST: STATS_* */
    const char *path; /* OPTION_DEST with STATS_FILE: the file's name */
    const char *setter; /* the call that also sets it, or NULL */
    option_source source;
} option_info;
/* Fills out with up to max options (reading any not read yet); returns
 * how many. */
#define OPTIONS_MAX 16
size_t options_list(option_info *out, size_t max);

/* Reports a notable event through the error handler as a PK_NOTE, only
 * with POOLKIT_VERBOSE=1 and only the first time for each kind. */
enum { NOTE_LOCKED_POOL, NOTE_MEMORY_RETURNED, NOTE_OUT_OF_MEMORY, NOTE_KINDS };
void note_once(int kind, const char *pool, const char *fmt, ...) PK_PRINTF(3, 4);

/* ---- init.c: start-up hooks, so that no layer calls up. ---- */

typedef enum init_event {
    /* A module first makes something a fork could catch half-changed (a
     * pool, an arena, the background purge): fork.c installs its handlers. */
    INIT_SHARED_STATE,
    /* A pool is made: stats.c registers the report at exit (POOLKIT_STATS,
     * debug mode's leak summary), crash.c its fault handler. */
    INIT_FIRST_POOL,
    INIT_EVENTS
} init_event;
/* An upper layer's install function for e, registered from a constructor
 * (INIT_PRIORITY); it must be idempotent. */
void init_on(init_event e, void (*fn)(void));
/* A lower layer's announcement: runs every function registered for e. */
void init_announce(init_event e);
/* Constructors that register hooks run before the program's own (default
 * priority) ones, so a pool made during static initialization sees them. */
#define INIT_PRIORITY 101

/* ---- fork.c: locks every module's locks around fork(). ---- */

/* fork.c registers its pthread_atfork install for INIT_SHARED_STATE, and
 * calls each module's part, in lock order (fork.c lists it). */
void arp_fork_lock(void);
void arp_fork_unlock(void);
void error_fork_lock(void);
void error_fork_unlock(void);
void os_fork_lock(void);
void os_fork_unlock(void);
void region_fork_lock(void);
void region_fork_unlock(void);
/* alloc.c: the size-class front end's class lock (held around
 * pk_pool_create, so taken before the pools'), and its block table's
 * lock, a leaf. */
void alloc_fork_lock(void);
void alloc_fork_unlock(void);
void large_fork_lock(void);
void large_fork_unlock(void);

/* Test points: one critical section of each lock the fork handlers take.
 * A white-box test (tests/test_fork_internal.cc) sets fork_test_hook to park a
 * thread inside one while another thread forks, so a lock the handlers
 * leave out deadlocks the child every time, not once in a while. `lock` is
 * the mutex held there. Unset (always, outside that test), a point costs a
 * load and a predicted branch on a path that takes a mutex anyway; never on
 * a fast path. */
typedef enum hook_point {
    HOOK_ARP_PAGES,     /* autorelease.c page_lock: the page pool being made */
    HOOK_POOL_LIST,     /* pool.c pools_lock: a pool joining the list */
    HOOK_REGISTRY,      /* tcache.c registry: a pool taking a cache key */
    HOOK_POOL,          /* a pool's own lock: pk_pool_trim */
    HOOK_POOL_RECORDS,  /* pool.c spare_lock: a pool record being taken */
    HOOK_RETAINED,      /* retain.c retain_lock: retained memory looked up */
    HOOK_ADDRESS_MAP,   /* region.c lock: a slab being placed and recorded */
    HOOK_ERROR_HANDLER, /* error.c handler_lock: the handler being set */
    HOOK_PURGE_CONTROL, /* sweep.c control: the background purge set */
    HOOK_ALLOC_CLASSES, /* alloc.c class_lock: a size class's pool being made (pk_alloc, pk_new) */
    HOOK_LARGE_BLOCKS,  /* alloc_large.c large_lock: a mapped block recorded */
    HOOK_POINTS
} hook_point;
extern void (*fork_test_hook)(hook_point point, void *lock);
static inline void fork_test_point(hook_point point, void *lock) {
    void (*h)(hook_point, void *) = __atomic_load_n(&fork_test_hook, __ATOMIC_ACQUIRE);
    if (unlikely(h != NULL)) h(point, lock);
}

#endif
