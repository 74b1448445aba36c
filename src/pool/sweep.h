/* sweep.c: when the purge ticks run, on poolkit's calls and on the
 * background purge's thread. */
#ifndef POOLKIT_POOL_SWEEP_H
#define POOLKIT_POOL_SWEEP_H

#include "base/internal.h"

/* Purge ticks for every pool and retained memory, at most once per tick
 * interval process-wide (and the background purge's start, when asked for
 * and not running); called on slow paths and whole-pool calls with no lock
 * held. Returns the time it read (os_now_ms), for the caller's own tick. */
uint64_t pool_purge_poll(void);
/* Fork handlers' part (fork.c): the background purge's control lock (the
 * outermost lock of all), and the child's reset: no thread in the child; it
 * starts again on the child's first poll if it ran in the parent. */
void purge_fork_lock(void);
void purge_fork_unlock(void);
void purge_fork_child(void);

#endif
