/* poolkit statistics: every pool of a running program, at exit and on
 * demand.
 *
 * pk_pool_stats_get (pool.h) gives one pool's figures; this header adds the
 * whole process: a walk over every live pool, the process totals, and one
 * report, as a table or as JSON (its schema is installed as
 * share/poolkit/stats.schema.json under the install prefix;
 * docs/stats.schema.json in the sources). Nothing
 * here costs anything on the allocation and free paths: the pools are
 * already on a list for their purge ticks, and every figure is one the
 * pools keep anyway.
 *
 * The environment variable POOLKIT_STATS prints the report at exit, with
 * the live pk_new objects per class (unless other threads are still
 * registered then, which the report says): POOLKIT_STATS=1 (or true, yes, on,
 * in any case) on stderr; a file name, which must hold a '/' or a '.'
 * (./stats, report.json), into that file (JSON when it ends in ".json");
 * 0, false, no or off, none. Any other word is reported as a "bad option"
 * warning and gives no report. POOLKIT_VERBOSE=1 reports notable events,
 * once per kind, as PK_NOTE errors (error.h): a pool that locks on every
 * call and why, the first memory given back to the system, the first
 * out-of-memory. With POOLKIT_DEBUG=1, a summary at exit reports what the
 * program left live, as PK_WARNING "leak" errors: objects per pool and per
 * class, arenas never destroyed, then the first few objects of each pool
 * with where they were allocated; the library's own pools are left out.
 */
#ifndef POOLKIT_STATS_H
#define POOLKIT_STATS_H

#include <poolkit/export.h>
#include <poolkit/pool.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Calls fn(pool, arg) for every live pool of the process, the object
 * layer's size-class pools ("pk_new 48", ...) included, newest first.
 * Returns how many it visited. The pool list's lock is held meanwhile, so
 * no pool can be created or destroyed until it returns: fn must not create
 * or destroy a pool (it would wait forever), but may call pk_pool_stats_get
 * or anything else on the pool it is given. Thread-safe. */
PK_API size_t pk_pool_foreach(void (*fn)(pk_pool *pool, void *arg), void *arg);

/* The process at a glance, filled by pk_stats_get. */
typedef struct pk_process_stats {
    size_t pools;               /* live pools (size-class pools of pk_new included) */
    size_t pool_live;           /* objects live in them */
    size_t pool_bytes_reserved; /* bytes their slabs hold from the system */
    size_t pool_bytes_resident; /* of which ever touched (see pk_pool_stats) */
    size_t pool_bytes_reserved_peak; /* the most every pool's slabs held at once, destroyed
                                        pools' included, since the process started */
    uint64_t pool_bytes_released; /* bytes live pools gave back to the system so far */
    size_t arenas;              /* live arenas */
    size_t arena_bytes_reserved; /* bytes their chunks hold from the system */
    size_t arena_bytes_reserved_peak; /* the most all arenas' chunks held at once */
    size_t retained_bytes;      /* memory of destroyed pools and arenas, and freed
                                   pk_alloc large blocks, kept for reuse
                                   (pk_pool_release_cache; hardened mode's freed
                                   guarded blocks' pages kept resident, which
                                   pk_collect(1) gives back) */
    size_t autorelease_depth;      /* the calling thread's autorelease pools, pushed and
                                      not yet popped (pk_autorelease_stats_get) */
    size_t autorelease_pending;    /* its entries waiting (objects and deferred calls) */
    size_t autorelease_high_water; /* the most pending at once on that thread so far */
} pk_process_stats;

/* Fills *out. Thread-safe; costs one pk_pool_stats_get per pool. */
PK_API void pk_stats_get(pk_process_stats *out);

/* Starts the two peaks of pk_process_stats afresh from what is reserved
 * now, so that a phase of a program (a benchmark run, a request) can read
 * its own peak. Thread-safe. */
PK_API void pk_stats_reset_peaks(void);

/* Flags for pk_stats_print. */
enum {
    PK_STATS_JSON = 1u << 0,   /* JSON (share/poolkit/stats.schema.json) instead of a table */
    PK_STATS_CLASSES = 1u << 1 /* also count live pk_new objects per class (pk_class
                                  name): walks every live object and, like
                                  pk_pool_visit, needs every other thread to be
                                  quiet in the object layer */
};

/* Writes the report: first the library's version and every POOLKIT_*
 * option in force with where its value came from (the default, the
 * environment, the call that set it: pk_set_purge_delay or
 * pk_set_background_purge), then every pool (name, object size,
 * live, slabs, bytes reserved, resident and given back, and the figures
 * that move per refill of a thread's slot list rather than per call, under
 * their pk_pool_stats names: taken, returned, remote_frees, peak_live), arenas, the calling thread's autorelease stack
 * and process totals. Returns 0, or -1 with errno set when writing failed
 * or flags has an unknown bit (EINVAL). Thread-safe (without
 * PK_STATS_CLASSES). */
PK_API int pk_stats_print(FILE *out, unsigned flags);

/* pk_stats_print's report handed to out(text, arg) in pieces instead of
 * written to a FILE: each piece is NUL-terminated text, the pieces in
 * order make the report (a logger, a buffer, a socket). out must not call
 * poolkit's stats or pool-creating calls. Returns 0, or -1 with errno
 * EINVAL for a NULL out or an unknown flag. Thread-safe as
 * pk_stats_print. */
PK_API int pk_stats_print_to(void (*out)(const char *text, void *arg), void *arg, unsigned flags);

#ifdef __cplusplus
}
#endif
#endif
