/* Every constant of poolkit's caching and memory-return policy, in one
 * place, with the reason for its value. Change them here and nowhere else.
 *
 * The policy in one paragraph: each thread caches up to two batches of free
 * objects per pool (the list the inline fast path uses and one spare batch,
 * Bonwick's two magazines), so a thread that wanders around a batch
 * boundary swaps lists without a lock. Whole batches move between threads
 * and the pool's depot under the pool's lock. Free memory (depot batches,
 * empty slabs, slabs of destroyed pools, arena chunks) is kept while it is
 * being reused and goes back to the system once it has sat unused for the
 * purge delay, measured two ways: by a low-water mark over half-delay
 * intervals (what was never needed during a whole interval is surplus, while
 * the program keeps calling), and by time stamps (what has sat unused for the
 * delay goes back at the first call after it, however long the program was
 * silent: see PURGE_INTERVAL_MS). The checks run on poolkit's own calls,
 * whichever pool they serve; a background thread runs them too only when
 * asked for (POOLKIT_BACKGROUND_PURGE, pk_set_background_purge).
 */
#ifndef POOLKIT_POLICY_H
#define POOLKIT_POLICY_H

#include <stddef.h>

/* Thread caches. A batch is what one exchange with the pool moves: about
 * BATCH_BYTES so the lock is amortized over tens of objects (a lock pair
 * costs tens of ns, a fast-path pair about 2 ns); at most BATCH_MAX so that
 * a thread never strands much memory per pool (it holds at most two
 * batches: 32 KiB for objects up to 128 B); at least BATCH_MIN so that
 * large objects still get a cache. */
#define BATCH_BYTES 16384
#define BATCH_MAX 128
#define BATCH_MIN 4
/* Slots up to BATCH_MIN_UP_TO bytes get at least BATCH_MIN per batch;
 * larger ones one: four 1 MiB objects cached per batch, two batches per
 * thread per pool, would strand 8 MiB a thread. */
#define BATCH_MIN_UP_TO ((size_t)1 << 20)

/* The batch rule, the one place it is computed (pool.c, at creation):
 * about BATCH_BYTES per exchange, clamped to [BATCH_MIN, BATCH_MAX]
 * objects, the floor only up to BATCH_MIN_UP_TO, since a cache of a few
 * objects would send a workload that wanders (allocate a few, free a few)
 * to the lock on most calls. */
static inline size_t policy_batch(size_t slot) {
    size_t batch = BATCH_BYTES / slot;
    size_t least = slot <= BATCH_MIN_UP_TO ? BATCH_MIN : 1;
    return batch < least ? least : batch > BATCH_MAX ? BATCH_MAX : batch;
}

/* Each thread's cache table reserves room for TABLE_KEYS pools (32 bytes
 * each: 2 MiB of address space per thread, backed a page at a time as keys
 * are used), so a table never moves and the inline fast paths need no bound
 * check (17 instructions per pair, 23 with one: bench/gate.sh). Pools beyond
 * TABLE_KEYS - 1 live at once still work, locking on every call. */
#define TABLE_KEYS 65536

/* The purge delay: memory unused for this long goes back to the system
 * (pk_set_purge_delay, POOLKIT_PURGE_DELAY_MS). Half a second is long
 * enough that a program repeating phases every few milliseconds never
 * refaults, short enough that a program that shrinks is seen to shrink. */
#define PURGE_DELAY_DEFAULT_MS 500
#define PURGE_DELAY_MAX_MS 86400000L

/* The tick interval, for a delay d > 0: half the delay (at least 1 ms).
 * Each pool ticks at most once per interval on its own calls, and once per
 * interval process-wide any call that reaches the library sweeps every
 * shared pool and the retained memory (purge.c).
 *
 * The rules a tick applies:
 * - Low-water mark: depot chains never taken during a whole interval go
 *   home, and slabs empty at the previous tick go back: memory leaves within
 *   one to two intervals while the program keeps making calls.
 * - Time stamp: a pool's free memory (depot chains, empty slabs) changes
 *   only under its lock, so the time of the pool's last locked call bounds
 *   how long all of it has sat unused. When that is the delay or more, all
 *   of it goes back at that tick: a program silent for longer than the
 *   delay gets its memory back at its first call, not an interval later
 *   (the marks would need ticks during the silence to see it). Retained
 *   mappings and arena spares carry their own time stamps.
 * What no tick can take: objects in threads' caches (at most two batches
 * per thread per pool, BATCH_MAX and BATCH_BYTES below), which the owning
 * thread alone touches, and the slabs they keep partly in use. */
#define PURGE_INTERVAL_MS(d) ((d) / 2 > 0 ? (d) / 2 : 1)

/* The background purge (purge.c): a thread that runs the sweep every
 * interval, for programs that go fully idle. It sleeps at most
 * PURGE_BACKGROUND_MAX_SLEEP_MS at a time, so a delay changed by a call is
 * in force within a second, and wakes at most every
 * PURGE_BACKGROUND_MIN_SLEEP_MS, so a tiny delay costs little CPU. */
#define PURGE_BACKGROUND_MAX_SLEEP_MS 1000
#define PURGE_BACKGROUND_MIN_SLEEP_MS 5

/* Memory kept for reuse after a pool is destroyed or an arena gives back a
 * chunk: at most this many bytes process-wide (on top of the delay), so a
 * pool or an arena per request costs no system call, but a burst of
 * destroyed pools cannot pin unbounded memory. */
#define RETAIN_BYTES ((size_t)16 << 20)

/* Hardened pools: fresh slots go out in an unpredictable order, so one
 * object's address does not tell an attacker which slot comes next. A run
 * of up to SHUFFLE_RUN fresh slots is cut into SHUFFLE_SLICES slices, and
 * each next object is the next slot of a slice picked at random (mimalloc's
 * secure mode extends its pages the same way): a few ascending streams,
 * which the hardware prefetcher still partly follows. Measured in
 * bench_workset (LIFO and FIFO, a million 64-byte objects), hardened over
 * default: a full shuffle of the run 4.0-4.4x, 8 slices 2.9-3.7x, 4 slices
 * 1.7-1.9x, no shuffle 1.1-1.2x. Four slices: two bits of uncertainty per
 * object, at half the cost of eight. */
#define SHUFFLE_RUN 128 /* a uint8_t index (central.c's order[]) */
#define SHUFFLE_SLICES 4

/* Debug pools (central.c): the bytes the fills write. Each is no small
 * integer and no ASCII text, and a word of it is no canonical 64-bit
 * address, so a pointer read from a fill faults when followed and a fill
 * stands out in a debugger. An object without hooks is FILL_FREE while free
 * (checked when it is handed out again: a write after free) and FILL_ALLOC
 * when handed out until the user writes it (a read before any write shows);
 * the DEBUG_REDZONE bytes after every object are FILL_REDZONE (checked at
 * free: an overflow). 16 bytes of red zone catch the common overrun by a
 * few bytes at two words per object; Valgrind and ASan builds see every
 * byte anyway. */
#define FILL_FREE 0xDD
#define FILL_ALLOC 0xAA
#define FILL_REDZONE 0xFD
#define DEBUG_REDZONE 16

/* Pool records of destroyed pools kept for the next pk_pool_create. */
#define SPARE_RECORDS_MAX 64

/* Records of destroyed debug pools held back from reuse (pool.c), so a use
 * after destroy is reported: a record is a page, so 4 MiB at most, and only
 * for debug pools. */
#define QUARANTINE_RECORDS 1024

#endif
