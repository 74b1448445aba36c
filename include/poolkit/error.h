/* poolkit: how misuse is reported.
 *
 * Every fault poolkit detects (a double free, a pointer from elsewhere, a
 * corrupted free list, a bad autorelease token, live objects at destroy, a
 * malformed or unknown POOLKIT_* variable) is described by one pk_error and
 * passed to the error handler, and so is each notable event that
 * POOLKIT_VERBOSE=1 asks for. Three severities: PK_NOTE (an event, not a
 * fault), PK_WARNING (the call goes on), PK_FATAL (the process aborts). The
 * default handler prints err->message as one line on stderr; a PK_FATAL
 * error then aborts the process. A handler may record or log the error; if
 * it returns from a PK_FATAL error, poolkit aborts anyway, because the
 * pool's state can no longer be trusted.
 *
 * Faults the fast paths cannot check for are reported too: a free list that
 * runs past the most it can hold (a double free) when it is walked, and,
 * through a handler of SIGSEGV and SIGBUS installed with the first pool, a
 * fault on a free list whose link was overwritten ("corrupted free list",
 * from the signal handler). Every other SIGSEGV or SIGBUS, a fault or a
 * signal sent by raise, kill or pthread_kill, reaches what the program had
 * before as if poolkit were not there (its handler, called with the
 * signal's arguments, mask and flags; or the default action, at once).
 * POOLKIT_FAULT_HANDLER=0 leaves the signals alone; the malloc library
 * (libpoolkit-malloc.so) installs no handler unless POOLKIT_FAULT_HANDLER=1. Debug reports name call sites as module+offset or symbol+offset:
 * run `addr2line -f -i -e MODULE OFFSET` on them (-i: the site lies inside
 * a pool call inlined into your function).
 */
#ifndef POOLKIT_ERROR_H
#define POOLKIT_ERROR_H

#include <poolkit/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How bad it is: a note is an event, not a fault; a warning is reported and
 * the program goes on; after a fatal error the program aborts. */
typedef enum {
    PK_WARNING, /* reported; the call goes on (live objects at destroy, ...) */
    PK_FATAL,   /* reported, then abort() (double free, foreign pointer, ...) */
    PK_NOTE     /* not a fault: a notable event, reported only with POOLKIT_VERBOSE=1
                   (stats.h), once per kind */
} pk_severity;

/* One detected fault (or, as PK_NOTE, event), as the error handler
 * receives it. */
typedef struct pk_error {
    pk_severity severity; /* PK_NOTE, PK_WARNING or PK_FATAL */
    const char *what;    /* short fault name: "double free", "foreign pointer", ... */
    const char *pool;    /* pool or class name, or NULL */
    const void *ptr;     /* the pointer at fault, or NULL */
    const char *message; /* the whole human-readable line, without a newline */
} pk_error;

/* A function that receives every fault; arg is what pk_set_error_handler
 * was given. */
typedef void (*pk_error_handler)(const pk_error *err, void *arg);

/* Installs handler for the whole process; NULL restores the default.
 * Thread-safe. The handler may be called from any thread that uses poolkit,
 * possibly with a pool's lock held: it must not call back into that pool. */
PK_API void pk_set_error_handler(pk_error_handler handler, void *arg);

#ifdef __cplusplus
}
#endif
#endif
