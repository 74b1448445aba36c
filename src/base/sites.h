/* Call sites of debug pools: where each object was last allocated and
 * freed, for reports that say "allocated here / freed here" the way ASan and
 * Valgrind do.
 *
 * A debug pool's public entry points (pool_slow.c, pool_free.c, pool_bulk.c) capture the
 * calling thread's stack once, before any lock (sites_capture); the slab code then files that
 * capture under the slot it hands out or takes back (sites_keep), and
 * reports print a slot's captures (sites_format). How many frames: the
 * environment variable POOLKIT_DEBUG_FRAMES (0 to SITES_MAX_FRAMES, default
 * SITES_DEFAULT_FRAMES); 0 captures nothing. One frame is the entry
 * point's return address, free to take: the function that called the pool
 * (for pk_new's objects, pk_new). More frames come from glibc's backtrace(),
 * which unwinds with the DWARF tables: about 1 us a call, however few
 * frames (docs/design/core4-prototypes.md). Only debug pools pay for any of it.
 */
#ifndef POOLKIT_SITES_H
#define POOLKIT_SITES_H

#include "base/internal.h"

#define SITES_MAX_FRAMES 16
#define SITES_DEFAULT_FRAMES 1

enum { SITE_ALLOC, SITE_FREE, SITE_KINDS };

/* Room for sites_format's text in a report. */
#define SITES_TEXT 1400

/* Frames per capture in force (POOLKIT_DEBUG_FRAMES, read once). */
size_t sites_frames(void);

/* Captures the stack of the user's side of an entry point into the
 * calling thread's capture: `caller` is the entry point's
 * __builtin_return_address(0), all of it for one frame; more frames come
 * from backtrace(). Call it from the entry point itself, not from a
 * function it calls. */
void sites_capture(void *caller);

/* Files the thread's capture as the slot's site of `kind`: record points at
 * the slot's SITE_KINDS * sites_frames() words. */
void sites_keep(void **record, int kind);

/* Writes "allocated at f1 <- f2 <- ...; freed at ..." for the kinds that
 * were captured (nothing when none was) into buf, symbolized with dladdr
 * where the symbol is exported, else module+offset. Returns buf. */
char *sites_format(char *buf, size_t n, void *const *record);

/* Appends "; <label> f1 <- f2 <- ..." for the calling thread's capture (the
 * entry point in progress: the call that faulted) to the text in buf.
 * Returns buf. */
char *sites_append_capture(char *buf, size_t n, const char *label);

#endif
