/* poolkit pools: typed, fixed-size object caches.
 *
 * A pool hands out objects of one size and alignment. Objects live in slabs
 * taken from the system with mmap; the slab of an object is found from its
 * address, so objects carry no header. Each thread owns slabs of each pool
 * it uses (its heap; any number of pools) and allocates from one of them at
 * a time, so pk_pool_alloc and pk_pool_free normally touch only memory of
 * the calling thread: no lock and no atomic instruction. An object freed by
 * another thread goes home to its slab with others of that slab, one atomic
 * instruction per run; a slab passes between a thread and the pool under
 * the pool's lock. Free memory goes back to the system once unused for the
 * purge delay (pk_set_purge_delay, pk_set_background_purge).
 *
 * Errors: calls that can fail return NULL (or 0) and set errno to EINVAL for
 * bad arguments or ENOMEM when memory or the pool's limit runs out. Misuse
 * that poolkit detects goes to the error handler (see error.h).
 */
#ifndef POOLKIT_POOL_H
#define POOLKIT_POOL_H

#include <poolkit/export.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A pool of objects of one size and alignment (opaque). */
typedef struct pk_pool pk_pool;

/* Flags for pk_pool_config.flags. */
enum {
    PK_POOL_ZERO     = 1u << 0, /* objects come out zeroed (no construct hook with it) */
    PK_POOL_LOCAL    = 1u << 1, /* one thread only: no lock on the slow paths */
    PK_POOL_DEBUG    = 1u << 2, /* poisoning, redzones, double-free and foreign-pointer checks */
    PK_POOL_HARDENED = 1u << 3, /* every pointer checked against its slab before it is used;
                                   POOLKIT_HARDENED=1 sets it for every pool */
    PK_POOL_REGION   = 1u << 4, /* a region: destroy frees live objects without reporting them */
    PK_POOL_GUARD    = 1u << 5, /* a no-access page after each slab: an overflow past it faults */
    PK_POOL_SHUFFLE  = 1u << 6  /* hardened, and fresh slots handed out in an unpredictable
                                   order (costs more: docs/results.md, "Hardened pools") */
};

/* How to make a pool: pass to pk_pool_create. Zero-initialise it and set
 * what you need; only size is required. */
typedef struct pk_pool_config {
    const char *name;                        /* for stats and reports; may be NULL */
    size_t size;                             /* object size in bytes, >= 1 */
    size_t align;                            /* power of two up to 4096; 0 = natural for the size:
                                                the largest power of two dividing it, up to 4096,
                                                so a 64-byte object fills one cache line; up to
                                                16 with a construct or destruct hook (a link word
                                                follows each object; ask for more here) */
    void (*construct)(void *obj, void *arg); /* runs when memory enters the pool */
    void (*destruct)(void *obj, void *arg);  /* runs when memory leaves the pool */
    void *arg;                               /* passed to both hooks */
    size_t reserve;                          /* objects made ready at creation */
    size_t limit;                            /* most objects live at once; 0 = none */
    unsigned flags;                          /* PK_POOL_* */
} pk_pool_config;

/* A pool's figures, filled by pk_pool_stats_get. */
typedef struct pk_pool_stats {
    const char *name;        /* the config's name (may be NULL) */
    size_t size;             /* object size in bytes */
    size_t align;            /* object alignment the pool uses */
    size_t live;             /* objects handed out and not yet freed */
    size_t peak_live;        /* most objects out at once, an estimate updated per
                                refill (see pk_pool_stats_get) */
    size_t slabs;            /* slabs the pool holds */
    size_t bytes_reserved;   /* bytes the pool holds from the system */
    uint64_t taken;          /* objects taken from slabs (their free lists or never-used
                                slots) onto threads' slot lists, a refill's worth at a
                                time, or handed to callers by pools without thread
                                heaps: not a count of pk_pool_alloc calls */
    uint64_t returned;       /* objects returned onto slabs' free lists, by refills and
                                by frees that reach the library: not a count of
                                pk_pool_free calls */
    uint64_t remote_frees;   /* objects freed by a thread into a slab its heap does
                                not own */
    uint64_t slabs_released; /* slabs given back to the system so far */
    size_t bytes_resident;   /* of bytes_reserved, the pages ever touched: slots
                                handed out at least once (and a debug pool's live
                                bits), what the system holds in memory unless it
                                swapped */
    uint64_t bytes_released; /* bytes given back to the system so far */
} pk_pool_stats;

/* Creates a pool. The config is copied; name must outlive the pool.
 * Returns NULL with errno EINVAL (size 0, align not a power of two or over
 * 4096, an unknown flag, PK_POOL_ZERO with a construct hook, too large a size) or ENOMEM
 * (the reserve could not be made ready; a reserve whose slabs would not fit
 * in the machine's physical memory, SIZE_MAX say, fails at once, mapping
 * nothing; 65,535 pools exist already, destroyed ones whose records are
 * held back not counted). Thread-safe. */
PK_API pk_pool *pk_pool_create(const pk_pool_config *config);

/* Destroys the pool and gives all its memory back, running destruct on every
 * constructed object. Live objects are reported through the error handler as
 * a PK_WARNING (their count; their addresses in debug mode), unless the pool
 * was made with PK_POOL_REGION (a pool per request or per tree, freed whole). May be called
 * from any thread, but no other thread may be using the pool. NULL is a no-op.
 * The pointer is dead afterwards. A call on it (alloc, free, the bulk calls,
 * reserve, trim, stats, visit, destroy again) is reported as "pool used after
 * destroy" (PK_FATAL), naming the pool, for as long as poolkit still holds
 * the pool's record unused: a debug pool's record is held back from reuse
 * until 1024 more debug pools have been destroyed; another pool's record
 * waits among up to 64 spare records for the next pk_pool_create (none are
 * kept in tool builds); pk_pool_release_cache gives both back to the
 * system. Once the record is reused, the call acts on the pool that got it;
 * once it is unmapped, the call faults. Never a leak report of a dead pool. */
PK_API void pk_pool_destroy(pk_pool *pool);

/* pk_pool_alloc and pk_pool_free are inline functions (defined at the end of
 * this header) where the compiler allows, and are also exported by the
 * library; their contracts follow. */
#if !defined(PK_NO_INLINE) && defined(__GNUC__) && \
    (defined(__x86_64__) || defined(__aarch64__))
#  define PK__HAVE_INLINE 1
#endif
#if !defined(PK__HAVE_INLINE) || defined(PK__DOXYGEN)
/* Returns an object, or NULL with errno ENOMEM when memory or the limit runs
 * out. Its contents are the state the last user left (or construct made), or
 * zero with PK_POOL_ZERO. Any thread unless PK_POOL_LOCAL. */
PK_API void *pk_pool_alloc(pk_pool *pool);
/* Gives obj back. obj must be a live object of this pool. NULL is not
 * ignored as free(NULL) is: every mode reports it ("null pointer",
 * PK_FATAL). The object check is made in debug and hardened modes and
 * whenever the call reaches
 * the library (an object of a slab other than the calling thread's current
 * one, hooks, zeroing): against the address map, or against a slab of the
 * thread's heap. An inline free of an object of the current slab is
 * checked only not to be the object freed last (the head of the thread's
 * list: a double free, reported); any other pointer into that slab is
 * checked when the thread's list goes home (trim, thread exit, destroy),
 * if still listed. Any thread unless PK_POOL_LOCAL. */
PK_API void pk_pool_free(pk_pool *pool, void *obj);
#endif

/* Allocates up to n objects into objs; returns how many (fewer than n only
 * with errno ENOMEM). Takes no lock unless a slab passes between the
 * calling thread and the pool; pools without thread heaps (debug, a limit)
 * take the pool's lock once. */
PK_API size_t pk_pool_alloc_bulk(pk_pool *pool, void **objs, size_t n);

/* Frees n objects, as n calls of pk_pool_free: no lock unless a slab
 * passes between the calling thread and the pool (one whose last object
 * came home); pools without thread heaps (debug, a limit) take the pool's
 * lock once. */
PK_API void pk_pool_free_bulk(pk_pool *pool, void **objs, size_t n);

/* Makes memory ready so that n more allocations need no system call.
 * Returns how many objects are now ready; fewer than n sets errno ENOMEM.
 * An n whose slabs would not fit in the machine's physical memory maps
 * nothing and returns at once. */
PK_API size_t pk_pool_reserve(pk_pool *pool, size_t n);

/* Gives back to the pool everything the calling thread's heap holds (its
 * slot list, its remote frees waiting to go home, its slabs), then gives
 * back to the system every slab of the pool's own with no live object.
 * Returns the bytes released. Slabs other live threads own stay theirs
 * (empty or not) until they refill from the pool, trim or exit. */
PK_API size_t pk_pool_trim(pk_pool *pool);

/* Destroyed pools and arenas leave their memory mapped for the purge delay
 * (at most 16 MiB process-wide), together with up to 64 pool records, so
 * that the next pool or arena needs no system call (a pool or an arena per
 * request or per tree); so do pk_alloc's freed large blocks, for the next
 * large block of any length (alloc.h). This gives all of it back to the
 * system now and returns the bytes released, the records debug pools hold
 * back included (see pk_pool_destroy). Thread-safe. */
PK_API size_t pk_pool_release_cache(void);

/* Memory back now, for a program about to go idle or to fork, as
 * mimalloc's mi_collect: every pool's calling-thread cache goes home (its
 * slot list, its remote frees waiting, its slabs: what pk_pool_trim gives
 * back of that thread), so empty slabs go back to the system after the
 * purge delay; with force, every empty slab of every pool goes back at
 * once, and so does everything pk_pool_release_cache gives back. Other
 * threads' caches stay theirs, and PK_POOL_LOCAL pools are left to their
 * thread (pk_pool_trim). Returns the bytes given back to the system by
 * this call. Thread-safe; must not be called from a pk_pool_foreach
 * callback. */
PK_API size_t pk_collect(int force);

/* Memory whose objects are all free (an empty slab, a spare arena chunk, the
 * slabs of a destroyed pool, a large block pk_free gave back) stays mapped
 * for this
 * many milliseconds before it goes back to the system, so a program that
 * builds and tears down the same structures again and again does not fault
 * its memory back in. 0 gives it back at once. The initial value comes from
 * the environment variable POOLKIT_PURGE_DELAY_MS (a count of milliseconds),
 * else 500.
 *
 * When it goes back: on poolkit's own calls, or on the background purge
 * (pk_set_background_purge). While the program keeps calling, memory unused
 * for the delay leaves within about one and a half delays. A program silent
 * for longer than the delay gets it back at its first call that reaches the
 * library: a slow path (a thread's slot list found empty, a free of an
 * object of another slab, a pool without thread heaps, pk_new's refill),
 * any pool or arena create or destroy, trim, stats, reserve or bulk call.
 * An alloc or free the inline fast path serves runs no library code and
 * returns nothing. The delay is the least wait: a pool whose program, after
 * a silence gave its memory back, made at least half of it again before
 * its next silence (a program that works in bursts) has its own delay
 * doubled until it exceeds twice that silence, at most 16 times the delay
 * set, so its next bursts find their memory still there; a return whose
 * memory was not made again halves it. The mappings of freed large blocks
 * and of destroyed pools and arenas, and the backed places a destroyed
 * pool's slabs leave (for the next pool's), adapt their delay the same way. A
 * thread's exit gives back at once the empty slabs beyond those in use,
 * unless the threads after it made what the last exit gave back again:
 * then exits keep them, for the purge delay like any empty slab. PK_POOL_LOCAL pools return theirs on their own thread's
 * calls only, arenas their spares on their own reset or rewind. What stays:
 * the slabs each thread's heap owns, until that thread calls pk_pool_trim or
 * exits: its current slab (whose free objects are its slot list) and its
 * other slabs with live objects, or emptied by other threads' frees (which
 * the owner collects when it next needs memory); a slab whose last object
 * comes home by its owner's own free stays as the heap's spare, the spare
 * before it going back to the pool (one spare per thread and pool; where a
 * slab holds one object, objects over 32 KiB, up to 4 MiB of spares, at
 * most 16). On pools of objects over 1 KiB, up to 64 objects (at most 32
 * MiB) the thread freed into its other slabs, on its slot list until it
 * allocates them again, refills, trims or exits. Also up to 63 objects per
 * thread and pool freed into other threads' slabs, waiting to go home
 * (sent when that thread frees into another slab, refills, trims or
 * exits); in a pool of 16 slabs (1 MiB) or more, up to 65 objects per
 * thread (at most 4 MiB of them and one more) freed into slabs other live
 * threads hold, on its slot list until it allocates them again, trims or
 * exits; and, on pk_alloc's size classes up to 32 KiB, the blocks of
 * the thread's other slabs its pk_free put on the class's list, at most 64
 * of them (64 KiB) since the list was last empty or drained, or 256 (256
 * KiB) while its allocations take back most of what it frees, until it
 * allocates them again, runs dry, frees more (a drain sends them home),
 * trims or exits.
 * pk_pool_trim returns the pool's empty slabs at once whatever the delay.
 *
 * ms >= 0 sets the delay; a negative ms only reads it. Returns the delay in
 * force before the call. Thread-safe. */
PK_API long pk_set_purge_delay(long ms);

/* The background purge: one thread that gives back memory unused for the
 * purge delay without any call from the program (it wakes every half delay,
 * at least every second), for programs that go fully idle. on > 0 starts it,
 * 0 stops it (waiting for the thread to end), a negative on only reads.
 * Returns whether it ran before the call (1 or 0), or -1 with errno EAGAIN
 * (or another pthread_create error) when the thread could not be started.
 * The environment variable POOLKIT_BACKGROUND_PURGE (a switch: 1, true,
 * yes, on or 0, false, no, off) starts it at the library's first call that
 * reaches it (a read with this function included; a setting made before
 * then wins). Off by default: no thread exists.
 *
 * The thread (named "poolkit-purge") blocks every signal, never touches a
 * thread's heap, a PK_POOL_LOCAL pool or an arena, takes pool locks only
 * with a trylock (a busy pool is left to its own calls), is stopped at
 * exit, and ends the process with exit(0) if it is the last thread left
 * (main called pthread_exit). A fork child has no thread; if it ran in the
 * parent, it starts again at the child's first call that reaches the
 * library. Thread-safe. */
PK_API int pk_set_background_purge(int on);

/* Fills *out. live and bytes_reserved are exact whenever no call on the pool
 * is in progress. taken and returned count objects moved between a slab's
 * free list (or its never-used slots) and a thread's slot list, or the
 * caller for pools without thread heaps (debug, a limit), which count every
 * call: they move per refill and per free that reaches the library, so a
 * loop the inline fast path serves does not change them, and taken -
 * returned is live plus the free objects waiting on threads' slot lists.
 * Counting calls would cost the inline paths an instruction each. remote_frees counts objects
 * freed by a thread into a slab its heap does not own (exact for a pure
 * producer/consumer pair); a slab of a thread that exited, once a thread
 * freeing into it has taken it over, is that thread's own, and its frees
 * into it are not remote. Pools without thread heaps (debug pools, pools
 * with a limit) own no slab per thread and count no remote frees: 0.
 * peak_live is the most objects out at once as estimated at each refill
 * (and every 64 remote frees of a thread that only frees), never less
 * than live. */
PK_API void pk_pool_stats_get(pk_pool *pool, pk_pool_stats *out);

/* Calls fn on each live object, in address order within a slab. No other
 * call on the pool may run meanwhile (fn may not use the pool either). */
PK_API void pk_pool_visit(pk_pool *pool, void (*fn)(void *obj, void *arg), void *arg);

/* The pool whose slab holds an object slot starting at ptr (live or not),
 * or NULL for any other pointer: stack, malloc, interior, garbage. Never
 * dereferences ptr; thread-safe. */
PK_API pk_pool *pk_pool_owner(const void *ptr);

/* ------------------------------------------------------------------------
 * Inline fast paths. What follows is private: it may change with
 * PK_POOL_ABI.
 *
 * Each thread has a table of 64-byte slots, one per pool, found through
 * pk__tc_table (initial-exec TLS). Pool records lie 1 << PK__RECORD_SHIFT
 * bytes apart in one area aligned to its size, so a pool's handle alone
 * gives its slot: bits PK__RECORD_SHIFT and up of the handle are the
 * pool's key, and its slot is the key times 64 bytes into the table. The
 * inline paths read no word of the pool's record: nothing that a store of
 * the caller's (a char store may alias anything) could force them to load
 * again, or that a processor could mistake for the target of such a store.
 *
 * A slot's words 1 to 6 are what the inline paths read (word 0 is the
 * library's, written once, so that no store of theirs lands on a line's
 * first word, where the table pointer lies in its own line):
 *   1 head    the list allocation pops (each free object's first word links
 *             to the next): the free objects of the thread's current slab
 *             for the pool; 0 for pools the default paths do not serve
 *   2 cur     that slab's address | PK__SLAB_MASK (0 when none: no pointer
 *             or'ed with the mask gives 0); a slab is PK__SLAB_MASK + 1
 *             bytes aligned to its size, and every slot of it starts there
 *   3 low     a hardened pool's mask (PK__SLAB_MASK less the slot's
 *             alignment bits)
 *   4 hhead   a hardened pool's list, links stored as
 *             rot32(next ^ secret ^ object); 0 for every other pool
 *   5 hcur    its current slab as in word 2, under word 3's mask; 0 for
 *             every other pool
 *   6 secret  a hardened pool's secret
 * Allocation pops word 1; a free of an object of the current slab that is
 * not the list's head pushes onto it; anything else goes to the library.
 * The hardened allocation follows a link only to its current slab, aligned
 * as a slot, or to the end; the hardened free pushes an object of its
 * current slab, so aligned, that is not the head (freed again). Everything
 * else, the exact slot grid included, is checked in the library. Only the
 * owning thread writes a slot; the paths read it with plain loads.
 *
 * A thread that has not called the library yet points at a table whose
 * slots are all zero, so its first call goes there. Tables never move once
 * a thread has one.
 *
 * Define PK_NO_INLINE before including this header to call the library's
 * exported functions instead.
 */
#define PK_POOL_ABI 8
#define PK__RECORD_SHIFT 12 /* pool records are 4096 bytes apart */
#define PK__KEY_BITS 16     /* in an area of 65,536 of them */
#define PK__SLOT_SHIFT 6    /* 64-byte slots */
#define PK__SLAB_SHIFT 16
#define PK__SLAB_MASK ((PK__STATIC_CAST(uintptr_t, 1) << PK__SLAB_SHIFT) - 1) /* a slab's bytes, less one */

PK_API void *pk__pool_alloc_slow(pk_pool *pool);
PK_API void pk__pool_free_slow(pk_pool *pool, void *obj);
/* The inline free's misses, with the thread's slot c for the pool: where
 * its word 2, cur, names a default pool's current slab, and where it is 0
 * (a hardened pool's slot, or one with no current slab: the steps of
 * pk__pool_free_slow, which finds the slot itself). */
PK_API void pk__pool_free_other(void *c, void *obj, uintptr_t cur, pk_pool *pool);
PK_API void pk__pool_free_slot(void *c, void *obj, pk_pool *pool);

/* A program that inlines the fast paths creates its pools through
 * pk__pool_create_abi with the PK_POOL_ABI of the headers it was compiled
 * with: a library of another layout reports "ABI mismatch" (PK_FATAL) at
 * that first call, before an inline path can read a pool it does not
 * understand. pk_pool_create itself (PK_NO_INLINE, other languages) stays
 * exported; every future release keeps pk__pool_create_abi. */
PK_API pk_pool *pk__pool_create_abi(const pk_pool_config *config, int abi);
#if defined(PK__HAVE_INLINE) && !defined(PK__DOXYGEN)
#  define pk_pool_create(...) pk__pool_create_abi((__VA_ARGS__), PK_POOL_ABI) /* a compound literal's commas too */
#endif

#ifdef PK__HAVE_INLINE
typedef uintptr_t __attribute__((may_alias)) pk__link;
/* The calling thread's table; the library replaces it when the thread
 * registers or exits (inside its calls). The slot's words are read and
 * written with relaxed atomics: plain moves, which ThreadSanitizer also
 * knows for what they are, since stats read other threads' slots. */
PK_API extern __thread char *pk__tc_table __attribute__((tls_model("initial-exec")));
#  define PK__LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#  define PK__STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#  ifdef PK__EMIT_EXTERN_INLINE /* the library's one external definition */
#    define PK__INLINE PK_API
#  else
#    define PK__INLINE static inline __attribute__((always_inline))
#  endif

/* The calling thread's slot for pool: the handle's key bits, shifted into
 * place, into the table. */
static inline pk__link *pk__slot(const pk_pool *pool) {
    uintptr_t key_bits = ((PK__STATIC_CAST(uintptr_t, 1) << PK__KEY_BITS) - 1) << PK__SLOT_SHIFT;
    uintptr_t off = (PK__REINTERPRET_CAST(uintptr_t, pool) >> (PK__RECORD_SHIFT - PK__SLOT_SHIFT)) & key_bits;
    return PK__REINTERPRET_CAST(pk__link *, pk__tc_table + off);
}

/* Hardened pools' link words: rot32(link ^ secret ^ object) (src/pool/harden.h). */
static inline uintptr_t pk__rot32(uintptr_t v) {
    return v << 32 | v >> 32;
}

/* The two inline paths without their calls into the library: the object,
 * or NULL (allocation), and whether it was done (free). pk_pool_alloc and
 * pk_pool_free below add the library's slow paths; the size-class front end
 * (alloc.h) adds its own, which guard against the library's re-entry when
 * it serves as malloc; it finds a size's slot from a table, and calls the
 * slot's halves, pk__slot_alloc_try and pk__slot_free_try. Private, like
 * everything here.
 *
 * ahead (a constant): the line of the list's next object is asked for now,
 * the front end's choice. A malloc-shaped program takes its blocks from
 * many size classes in turn, so the next allocation of a class comes
 * several allocations later: where the lists have left the caches and the
 * classes outnumber the streams the hardware prefetcher follows, each
 * allocation otherwise waits on the line of the block it hands out. A
 * typed pool keeps its pair at the instruction count its gate holds. */
static inline __attribute__((always_inline)) void *pk__slot_alloc_try(pk__link *c, int ahead) {
    uintptr_t obj = PK__LOAD(c[1]);
    if (__builtin_expect(obj != 0, 1)) {
        uintptr_t next = *PK__REINTERPRET_CAST(const pk__link *, obj);
        PK__STORE(c[1], next);
        if (ahead) __builtin_prefetch(PK__REINTERPRET_CAST(const void *, next));
        return PK__REINTERPRET_CAST(void *, obj);
    }
    obj = PK__LOAD(c[4]); /* a hardened pool's list: its link must name the current slab, or end */
    if (__builtin_expect(obj != 0, 1)) {
        uintptr_t next = pk__rot32(*PK__REINTERPRET_CAST(const pk__link *, obj)) ^ (PK__LOAD(c[6]) ^ obj);
        if (__builtin_expect((next | PK__LOAD(c[3])) == PK__LOAD(c[5]), 1) || next == 0) {
            PK__STORE(c[4], next);
            return PK__REINTERPRET_CAST(void *, obj);
        }
    }
    return PK__NULL;
}

static inline __attribute__((always_inline)) void *pk__pool_alloc_inline(pk_pool *pool) {
    return pk__slot_alloc_try(pk__slot(pool), 0);
}

/* obj, an object of the current slab of the thread's slot c, onto the
 * default list unless it is the list's head (freed again): whether it
 * went. pk__slot_free_try below, and the library's pk_free, which knows
 * the slab another way. */
static inline __attribute__((always_inline)) int pk__slot_push(pk__link *c, void *obj) {
    uintptr_t x = PK__REINTERPRET_CAST(uintptr_t, obj), head = PK__LOAD(c[1]);
    if (__builtin_expect(x == head, 0)) return 0;
    *PK__STATIC_CAST(pk__link *, obj) = head;
    PK__STORE(c[1], x);
    return 1;
}

/* The free's inline part, on the thread's slot c of the object's pool;
 * *curp gets the slot's word 2 (not zero: a default pool's, whose miss the
 * library's short path takes). */
static inline __attribute__((always_inline)) int pk__slot_free_try(pk__link *c, void *obj, uintptr_t *curp) {
    uintptr_t x = PK__REINTERPRET_CAST(uintptr_t, obj), cur = PK__LOAD(c[2]);
    *curp = cur;
    /* the current slab, not the head freed again */
    if (__builtin_expect((x | PK__SLAB_MASK) == cur, 1) && __builtin_expect(pk__slot_push(c, obj), 1)) return 1;
    if (cur) return 0; /* a default pool's: an object of another slab, or the head freed again */
    if (__builtin_expect((x | PK__LOAD(c[3])) == PK__LOAD(c[5]), 1)) { /* a hardened pool's current slab, not its head */
        uintptr_t head = PK__LOAD(c[4]);
        if (__builtin_expect(x != head, 1)) {
            /* rot32(head ^ secret ^ obj), the secret and the object joined
             * first: head is what the last allocation stored, and a loop
             * that frees what it just allocated waits on it, so it meets
             * one xor and the rotation on the way to the next allocation,
             * not two xors (written as one rotation, the compiler puts
             * the xor with head first) */
            *PK__STATIC_CAST(pk__link *, obj) = pk__rot32(head) ^ pk__rot32(PK__LOAD(c[6]) ^ x);
            PK__STORE(c[4], x);
            return 1;
        }
    }
    return 0;
}

static inline __attribute__((always_inline)) int pk__slot_free_inline(pk__link *c, void *obj) {
    uintptr_t cur;
    return pk__slot_free_try(c, obj, &cur);
}

/* pk__slot_free_try on the pool's slot; *cp gets the slot. */
static inline __attribute__((always_inline)) int pk__pool_free_try(pk_pool *pool, void *obj, pk__link **cp,
                                                                     uintptr_t *curp) {
    *cp = pk__slot(pool);
    return pk__slot_free_try(*cp, obj, curp);
}

static inline __attribute__((always_inline)) int pk__pool_free_inline(pk_pool *pool, void *obj) {
    pk__link *c;
    uintptr_t cur;
    return pk__pool_free_try(pool, obj, &c, &cur);
}

PK__INLINE void *pk_pool_alloc(pk_pool *pool) {
    void *obj = pk__pool_alloc_inline(pool);
    if (__builtin_expect(obj != PK__NULL, 1)) return obj;
    return pk__pool_alloc_slow(pool);
}

PK__INLINE void pk_pool_free(pk_pool *pool, void *obj) {
    pk__link *c;
    uintptr_t cur;
    if (__builtin_expect(pk__pool_free_try(pool, obj, &c, &cur), 1)) return;
    if (cur) {
        pk__pool_free_other(c, obj, cur, pool);
        return;
    }
    pk__pool_free_slot(c, obj, pool);
}
#  undef PK__LOAD
#  undef PK__STORE
#endif

#ifdef __cplusplus
}
#endif
#endif
