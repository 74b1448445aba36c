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
/* fn runs on every sweep from now on, with the time, no lock held: a layer
 * above that keeps memory of its own for the purge delay (the hardened
 * front end's freed guarded blocks); with UINT64_MAX it gives back all it
 * keeps (pk_collect(1): pool_sweep_release). One at most. */
void pool_sweep_with(void (*fn)(uint64_t now));
void pool_sweep_release(void);
/* Fork handlers' part (fork.c): the background purge's control lock (the
 * outermost lock of all), and the child's reset: no thread in the child; it
 * starts again on the child's first poll if it ran in the parent. */
void purge_fork_lock(void);
void purge_fork_unlock(void);
void purge_fork_child(void);

#endif
