/* Every constant of poolkit's caching and memory-return policy, in one
 * place, with the reason for its value. Change them here and nowhere else.
 *
 * The policy in one paragraph: each thread owns slabs of each pool it uses
 * (its heap, heap.c, after mimalloc's pages) and allocates from one of them
 * at a time, in address order, so that after frees in any order the next
 * objects still come from one 64 KiB slab rather than from all over the
 * working set. The owner's frees go straight onto their slab's free list
 * (onto the list allocation pops, for the current slab: the object just
 * freed is the next one handed out); other threads' frees go home to the
 * slab by one atomic push per run of objects. Free memory (empty slabs,
 * slabs of destroyed pools, arena chunks) is kept while it is being reused
 * and goes back to the system once it has sat unused for the purge delay,
 * by time stamps: see PURGE_INTERVAL_MS. The checks run on poolkit's own
 * calls, whichever pool they serve; a background thread runs them too only
 * when asked for (POOLKIT_BACKGROUND_PURGE, pk_set_background_purge).
 */
#ifndef POOLKIT_POLICY_H
#define POOLKIT_POLICY_H

#include <stdbool.h>
#include <stddef.h>

/* A slab is SLAB_BYTES of address space aligned to its size (a slot too
 * big for one gets a slab of its own: region.h), so the inline free tells
 * an object of the thread's current slab by one or and one compare with a
 * constant (pool.h, PK__SLAB_MASK), and in regions of REGION_BYTES whose
 * first slab's place holds the records of the others, so any object's
 * record is found by masking its address. 64 KiB: 1,024 slots of 64 B, and
 * 16 places' records share a page; a slab is touched, and counted
 * resident, a page at a time (EXTEND_BYTES). 4 MiB regions: 63 slabs share
 * one header, the region map keeps a bit per region. */
#define SLAB_SHIFT 16
#define SLAB_BYTES ((size_t)1 << SLAB_SHIFT)
#define REGION_SHIFT 22
#define REGION_BYTES ((size_t)1 << REGION_SHIFT)

/* A slab of a slot too big for a place takes a mapping of its own while
 * the library holds fewer than HUGE_OWN_MAX of them: the mapping ends where
 * its slot does, so an overflow past the slot faults at once, in every
 * mode. Past that, such a slab (up to REGION_RUN_BYTES, region.h) takes a
 * run of places in a region it shares, so that a program holding many of
 * them stays far within the system's cap on a process's mappings
 * (vm.max_map_count, which thread stacks and libraries count against too):
 * with a mapping each, its allocations would fail at the cap. */
#define HUGE_OWN_MAX 1024

/* A guard page splits its mapping: a guarded pool's slab (PK_POOL_GUARD)
 * ends in one, a hardened guarded block (HARD_GUARDED_MIN) lies between
 * two, which merge with a neighbour's; each holds about two of the
 * process's mappings, which Linux caps (vm.max_map_count, which thread
 * stacks, libraries and HUGE_OWN_MAX count against too), and a program
 * holding many got NULL long before memory ran out. Past GUARDS_MAX held
 * at once (os_guard_room, both kinds together), a slab leaves its last
 * page open, unused still, and a hardened block that a class serves takes
 * a class block with its check word and check bytes (an overflow found at
 * the block's free, not at the access), a larger one a plain zeroed
 * mapping; guards come back as soon as fewer are held. */
#define GUARDS_MAX 8192

/* A heap links the never-used slots of its current slab about EXTEND_BYTES
 * at a time (at least one slot): a page, so a slab's memory is touched, and
 * counted resident, only as it is handed out, and a thread that uses a pool
 * for ten objects holds one page of it, not 64 KiB. */
#define EXTEND_BYTES 4096
static inline size_t policy_extend(size_t slot) {
    size_t k = EXTEND_BYTES / slot;
    return k ? k : 1;
}

/* A slab's first links take at most EXTEND_FIRST of its fresh slots, and
 * each link after as many as it has handed out, up to EXTEND_BYTES: a pool
 * per task that uses a few dozen small objects (a tree, a request) links a
 * few dozen slots, not a page of them (256 of 16 bytes), and one that goes
 * on links pages after a doubling or two. Slots of 64 bytes and more link
 * a page at once, as hardened pools' HARD_EXTEND slots at most. */
#define EXTEND_FIRST 64
static inline size_t policy_extend_next(size_t extend, size_t handed) {
    size_t k = handed > EXTEND_FIRST ? handed : EXTEND_FIRST;
    return k < extend ? k : extend;
}

/* Hardened pools link at most HARD_EXTEND fresh slots at a time: each is
 * shuffled and encoded as it is linked, and those still unused when the
 * list goes home (a trim, a thread's exit, a pool's destroy) are walked and
 * checked. A pool per task that uses a few dozen objects would otherwise
 * pay that for a whole EXTEND_BYTES run of small slots (binary-trees with a
 * hardened pool per tree); a smaller step gains nothing more
 * (docs/design/core4-prototypes.md has the measurements). */
#define HARD_EXTEND 64
static inline size_t policy_extend_hardened(size_t slot) {
    size_t k = policy_extend(slot);
    return k < HARD_EXTEND ? k : HARD_EXTEND;
}

/* Remote frees (another thread's objects) gather per slab in the freeing
 * thread, up to REMOTE_BATCH objects, and go home with one atomic push:
 * a consumer that frees a producer's objects in the order they were made
 * pays one compare-and-swap per run instead of one per object. At most
 * REMOTE_BATCH - 1 objects per thread per pool wait (sent on the thread's
 * next slab change, its trim and its exit). */
#define REMOTE_BATCH 64

/* The owner's free of an object of another of its slabs goes onto the list
 * allocation pops, not onto that slab's own list, when that list is empty
 * (its slab used up), so the next allocation reuses it while it is in
 * cache and no slab changes hands for one object: a server that frees a
 * random object of a large live set and allocates its replacement
 * (larson, the lab's steady state) would otherwise move to that object's
 * slab, and back, on every call, at several times mimalloc's cost a pair
 * (docs/design/core4-prototypes.md). Only onto an empty list, so at most
 * HOT_FREES such object is listed at a time, and a phase of frees leaves none that
 * would keep its slab from emptying. Hardened lists too: their inline
 * allocation follows a link only within the current slab or to the end, so
 * the object goes on as the end, and the library follows a link to it
 * (heap.c, hot_link). */
#define HOT_FREES 1

/* HOT_LIST: where a slab holds few objects (fewer than HOT_LIST: slots
 * over 1 KiB, and every slot with a slab of its own), the owner's frees
 * into its other slabs go onto the thread's list while it holds fewer than
 * HOT_LIST such objects, not only onto an empty one: the list is a free
 * list of the objects the thread freed last, as a typed pool's is, and the
 * next allocations take them back while they are in cache. With HOT_FREES
 * alone, a live set that spans many such slabs moves slab at almost every
 * call: the typed-pool study's pattern over 8 KiB objects, eight to a slab,
 * refilled from another slab at about every fourth allocation, and a freed
 * 1 MiB object (a slab of its own) went to the heap's spare and the pool's
 * lock (tests/test_pool_memory.cc, BigObjects). The free objects the
 * pattern leaves listed stay under HOT_LIST (bench/bench_pattern.c).
 * Those objects stay off their slabs, out of the purge's reach until the
 * thread refills, trims or exits (pk_collect), so the bound is in bytes
 * too: HOT_LIST_BYTES per thread per pool (at least one object), on top
 * of the HOT_FREES one; at 1 MiB, eight objects sent the pattern home and
 * back at 5% of its calls, 32 at 0.17% (its live set wanders by more than
 * eight). Where pk_free pushes onto the list too (the size classes: its own
 * count, OWN_FREES), the bound is a budget the heap renews at each refill
 * (its list then holds no object of another slab) and each such free onto
 * a non-empty list spends: the inline allocation keeps no count.
 *
 * HOT_COUNT: elsewhere the short path counts the objects listed, not the
 * frees: a budget of frees runs out in a few dozen at random, and then
 * sends every free home to its slab and refills the next allocation from
 * another while the list holds a few objects (1 MiB objects, a budget of
 * eight: 18% of the frees home, 18% of the allocations refilled). Each
 * object of another slab the short path lists carries in its second word
 * how many such objects the list held under it (keyed by a value the heap
 * changes at each refill, so that neither what the user wrote there nor a
 * count from before passes), so the list's head says how many lie under
 * it now, the first onto an empty list counted one; a head that carries
 * none (an object of the current slab) leaves the last count, an upper
 * bound. The list then holds at most the bound's objects of other slabs,
 * the HOT_FREES one among them. The slots are over 1 KiB (HOT_LIST's), so
 * the second word is theirs. */
#define HOT_LIST 64
#define HOT_LIST_BYTES ((size_t)32 << 20)
static inline size_t policy_hot_list(size_t capacity, size_t slot) {
    if (!(capacity == 1 || SLAB_BYTES / slot < HOT_LIST)) return 0;
    size_t n = HOT_LIST_BYTES / slot;
    return n < 1 ? 1 : n > HOT_LIST ? HOT_LIST : n;
}

/* HOT_FOREIGN: a free into a slab another live thread's heap holds goes
 * onto the freeing thread's list, not home to that slab, where the pool
 * spans HOT_FOREIGN_SLABS slabs or more, while the list is empty, and then
 * for at most HOT_FOREIGN more such frees before the list is next found
 * empty: the thread's next allocations take the objects back while they
 * are in cache, as a thread cache of freed objects does (jemalloc's and
 * tcmalloc's). A server whose live set outgrows the caches and whose
 * objects pass between threads (larson: a main thread fills the sets, each
 * worker frees what another made) would otherwise refill from slabs whose
 * free objects lie cold all over the set, a cache miss an allocation.
 * Below the bound a pool's slabs stay in cache, and an object sent home
 * once lets the freeing thread's set move into its own slabs, whose frees
 * the inline path serves; an object kept would take the short path at
 * every free. The objects so listed stay counted out on their slabs until
 * the thread allocates them, trims or exits, when they go home as remote
 * frees (heap.c, free_home_hot). Hardened lists take them by the same
 * rule, each past the first tagged (harden.h, hot_tag), which the
 * library checks before it follows a link to one. */
#define HOT_FOREIGN 64
#define HOT_FOREIGN_SLABS 16
/* Slots with a slab of their own are listed so too: where threads pass
 * such blocks to each other, nearly every free is another thread's, and
 * each block went to the pool with its slab and came back from it, under
 * the pool's lock, where the freeing thread now takes it back at its next
 * allocation (docs/design/passed-blocks-prototypes.md). What a list so
 * holds past its emptying is at most HOT_FOREIGN_BYTES of them (one
 * object at least). */
#define HOT_FOREIGN_BYTES ((size_t)4 << 20)
static inline size_t policy_hot_foreign(size_t slot) {
    size_t n = HOT_FOREIGN_BYTES / slot;
    return n < 1 ? 1 : n > HOT_FOREIGN ? HOT_FOREIGN : n;
}

/* OWN_FREES: pk_free pushes an object of any slab the thread's heap of
 * its class owns onto the class's list (the owned index, pool_types.h),
 * not only one of the current slab: one path whatever the slab, so a free
 * in random order mispredicts no branch on which slab it hit, and the next
 * allocations take the objects back while they are in cache, as a thread
 * cache's list does. The objects of other slabs stay off their slabs until
 * the list runs dry or is drained (heap_own_drain), so that their slabs can
 * still fill, move and empty: a drain is due once OWN_FREES such pushes
 * (at most OWN_FREES_BYTES of them, at least one object) were made since
 * the list was last empty or drained. */
#define OWN_FREES 64
#define OWN_FREES_BYTES ((size_t)64 << 10)
/* A thread that frees and allocates by turns (random replacement, a
 * server's requests) takes most of what it pushed back before the drain,
 * which then walks to the list's end, through the current slab's free
 * objects below the pushes, for the few left: in larson's shape every
 * drain did, finding about one in eight. Where a drain finds fewer than
 * one in OWN_FREES_TAKEN of those pushed since the last, the next drain's
 * budget doubles, up to OWN_FREES_REUSED times the pool's; one that finds
 * more restores it, so a thread that only frees keeps the first budget
 * (docs/results.md, "Drains that find little"). */
#define OWN_FREES_TAKEN 4
#define OWN_FREES_REUSED 4
static inline size_t policy_own_frees(size_t slot) {
    size_t n = OWN_FREES_BYTES / slot;
    return n < 1 ? 1 : n > OWN_FREES ? OWN_FREES : n;
}

/* OWN_DIRECT: a drain that found every object pushed since the last one
 * still listed (no allocation took one back: a thread tearing down what it
 * made) and met them in runs shorter than OWN_DIRECT_RUN objects of one
 * slab on average (freed in random order) makes pk_free send the next
 * objects of other slabs straight home, as the typed pools' short path
 * does, until the list next runs dry: a push, then a drain that walks the
 * object again and sends it home alone, cost about twice that
 * (docs/results.md, "Teardown in random order"). Frees in the order the
 * blocks were made keep the list: the drain sends them home a slab's run
 * at a time. */
#define OWN_DIRECT_RUN 2

/* HEAP_SPARE: a heap keeps the last slab its own frees emptied (one slab,
 * restarted as below) for its next slab, and gives the one before to the
 * pool: a working set that moves across a slab's edge, or objects few to a
 * slab (8 KiB: 16 a slab; 1 MiB: one), would otherwise take the pool's lock
 * twice per slab's worth of calls. Where a slab holds one object (a huge
 * slot), every object its owner frees past the list's budget (HOT_LIST)
 * empties a slab, and every allocation past the list takes one: there the
 * heap keeps up to SPARE_BYTES of such slabs (at least one, at most
 * SPARES_MAX), the last emptied first out, so a pattern that frees and
 * allocates big objects around its cap (the typed-pool study's,
 * bench/bench_pattern.c) takes the pool's lock only past them. The spares
 * go back to the pool at the thread's trim or exit: per thread per pool, one empty slab, or SPARE_BYTES of slabs of
 * one object, stay out of the purge's reach. */
#define SPARE_BYTES ((size_t)4 << 20)
#define SPARES_MAX 16

static inline size_t policy_spares(size_t capacity, size_t span) {
    if (capacity != 1) return 1;
    size_t n = SPARE_BYTES / span;
    return n < 1 ? 1 : n > SPARES_MAX ? SPARES_MAX : n;
}

/* EMPTY_AFFINITY: a heap that takes an empty slab from its pool takes one
 * it gave the pool itself if one lies among the first EMPTY_AFFINITY of
 * the pool's empty list (slab.left_by), else the first. The list is last
 * in, first out: threads that each fill and empty a few slabs of a pool in
 * turn otherwise took each other's, and every refill met slots whose lines
 * the other core held last (docs/results.md, "Empty slabs back to the
 * thread that emptied them"). */
#define EMPTY_AFFINITY 8

/* A slab whose objects all came home (the heap's spare, or the pool's); if more than
 * 1/RESTART_DISORDER of the last RESTART_SAMPLE frees on its list landed
 * away from the object freed just before (random order), it restarts in address order, its free list
 * dropped and its slots handed out from slot 0 again; a slab freed in
 * order (LIFO, FIFO) keeps its list, which is a stream already: restarting
 * every slab would slow LIFO and FIFO (every link written again), and never
 * restarting leaves random order chasing lines across the slab, several
 * times slower at large working sets (docs/design/core4-prototypes.md). */
#define RESTART_DISORDER 16
#define RESTART_SAMPLE 32

/* When a heap's current slab is used up and no owned slab has free slots,
 * it looks at up to FULL_SCAN of its full slabs for remote frees before it
 * asks the pool for a slab; the slabs looked at go to the back, so every
 * full slab is looked at in turn (a producer whose objects come back from
 * consumers finds them). A pool no thread has freed into remotely yet
 * (pk_pool.remote_any) has none to find: its heaps look at none, for each
 * look moves a slab on its list, writing the records of two other slabs
 * (for objects of a slab each, two regions' headers, out of cache). */
#define FULL_SCAN 4

/* A heap that asks the pool for a slab when the pool has only full ones
 * has a few of them looked at for remote frees (central_slab_for_heap),
 * or every one of them once the process has made more remote frees, since
 * the last such walk, than the pool's full slabs over ORPHAN_WALK: threads
 * that come and go, each freeing what those before it made, free into
 * more full slabs than a few looks find, and the pool mapped a new slab
 * for each allocation while the emptied ones waited for the purge tick
 * (slabs of one object grew without bound). A walk so costs at most
 * ORPHAN_WALK slab visits per remote free. */
#define ORPHAN_WALK 4

/* A heap that adopts a slab (pool_free.c, adopt) then collects the remote
 * frees of every slab it owns, once it owns OWNED_WALK times as many as
 * after its last such walk (and OWNED_WALK_MIN or more): slabs whose
 * objects all came home by other threads' frees become its spares or go to
 * the pool, those that gained free slots go to the front of its avail
 * list. Its refills look at its full slabs (FULL_SCAN) and the front of
 * avail only, so a thread that lives on while threads come and go, each
 * freeing objects of slabs it adopted from the ones before, kept adopting
 * slabs while those others emptied waited uncollected: its memory grew
 * with every generation of threads, its live objects level
 * (mimalloc-bench's mstress, where the main thread is one of the two that
 * work). A walk so costs at most one slab visit per slab adopted since the
 * last one. */
#define OWNED_WALK 2
#define OWNED_WALK_MIN 16

/* Each thread's table has a slot for each of TABLE_KEYS pools (backed a
 * page at a time as keys are used; its heap records come in chunks as the
 * thread uses pools: tcache.c), so a table never moves and the inline
 * fast paths need no bound check. A pool's key
 * is its record's index in the records' area (pool.c): at most
 * TABLE_KEYS - 1 pools exist at once; pk_pool_create fails with ENOMEM
 * beyond. */
#define TABLE_KEYS 65536

/* The purge delay: memory unused for this long goes back to the system
 * (pk_set_purge_delay, POOLKIT_PURGE_DELAY_MS). Half a second is long
 * enough that a program repeating phases every few milliseconds never
 * refaults, short enough that a program that shrinks is seen to shrink. */
#define PURGE_DELAY_DEFAULT_MS 500
#define PURGE_DELAY_MAX_MS 86400000L

/* IDLE_ADAPT: a pool that makes again, before its next silence, at least
 * half the slabs an idle return gave back had them taken too early: the
 * program repeats its work after silences about that long (a batch between
 * sleeps, a server between bursts), and each return cost it a page fault a
 * page at its next burst, where glibc, jemalloc, mimalloc and tcmalloc kept
 * the memory over silences of 0.7 s (docs/results.md, "Bursts after a
 * silence"). That pool's idle delay then doubles until it is over twice
 * the silence that led to the return, at most IDLE_SHIFT_MAX times (8 s at
 * the default delay); a return whose slabs were not made again halves it,
 * once per such return. The pool's ticks follow its delay (half of it
 * apart), so slabs emptied late in a burst wait as long. */
#define IDLE_SHIFT_MAX 4

/* The tick interval, for a delay d > 0: half the delay (at least 1 ms).
 * Each pool ticks at most once per interval on its own calls, and once per
 * interval process-wide any call that reaches the library sweeps every
 * shared pool and the retained memory (sweep.c).
 *
 * The rules a tick applies (central.c):
 * - Remote frees waiting on the pool's own slabs (those of threads that
 *   exited) are collected, so those slabs can empty.
 * - Slabs empty at the previous tick go back: memory leaves within one to
 *   two intervals while the program keeps making calls.
 * - Time stamp: a pool's empty slabs change only under its lock, so the
 *   time of the pool's last locked call bounds how long all of them have
 *   sat unused. When that is the delay or more, all of them go back at that
 *   tick: a program silent for longer than the delay gets its memory back
 *   at its first call, not an interval later. Retained mappings and arena
 *   spares carry their own time stamps.
 * What no tick can take: the slabs threads' heaps own while objects of them
 * are live, and each heap's current slab, which its thread alone touches
 * (given back at its trim or exit). A heap gives a slab to the pool the
 * moment the slab's last object comes home by its own frees. */
#define PURGE_INTERVAL_MS(d) ((d) / 2 > 0 ? (d) / 2 : 1)

/* SHARE_EMPTY (central.c): a pool about to map a fresh slab while no
 * backed place is kept first takes up to SHARE_EMPTY_SLABS of the empty
 * slabs other pools hold for the purge delay: they become kept places
 * (region.c), which the new slab and the next ones take without a page
 * fault, or, past RETAIN_BYTES, go back to the system. A program whose
 * objects change size between phases (many 64-byte blocks freed, then as
 * many of 48 bytes) otherwise grew by the second phase while the first's
 * slabs sat empty in their classes for the delay, where glibc and
 * mimalloc reuse that memory (bench/run.sh, malloc_bursts with sizes in
 * turn). Each pool keeps SHARE_EMPTY_KEEP empty slabs of its own, the
 * ones a pool that fills and empties around a slab boundary reuses at
 * once; a share is one pass over the pool list (trylocks only) for at
 * most 1 MiB of slabs. */
#define SHARE_EMPTY_SLABS 16
#define SHARE_EMPTY_KEEP 1

/* GIVE_EMPTY (central.c, give_empties): a large block, a slab of a
 * huge slot (a region of its own or a run of places, which no other
 * pool's empty slab of one place can be), or a slab of one place that
 * finds no kept place (a phase of small objects after one of big blocks:
 * glibc reuses the big blocks' memory), about to fault in fresh pages
 * first takes as many bytes of the other pools' empty slabs out of them,
 * past GIVE_EMPTY_FLOOR of such slabs, which stay for the purge delay: a
 * program whose buffers grow out of the classes into mapped blocks (all
 * of them at once: REALLOC_MAPPED_MIN), or whose blocks of 64-256 KiB
 * change size between phases, otherwise held every class's emptied slabs
 * beside what came next for the delay. The floor keeps the slabs a program
 * that trades blocks of several sizes reuses at its next ones. It is at
 * most 1 / GIVE_EMPTY_PART of the bytes the pools hold (empty slabs
 * included): the whole floor in a program whose pools hold a few dozen
 * MiB was a large part of its peak, which glibc, trimming as it goes, did
 * not keep (docs/alloc.md gives the figures). */
#define GIVE_EMPTY_FLOOR ((size_t)16 << 20)
#define GIVE_EMPTY_PART 4
static inline size_t policy_give_floor(size_t pool_bytes_held) {
    size_t f = pool_bytes_held / GIVE_EMPTY_PART;
    return f < GIVE_EMPTY_FLOOR ? f : GIVE_EMPTY_FLOOR;
}
/* The pools are looked at once per GIVE_EMPTY_STEP of fresh pages asked
 * for (a buffer that grows a page at a time asks at every page), for as
 * much as was asked since: each look tries every pool's lock, the cost of
 * a few faults, where a step faults in hundreds of pages. */
#define GIVE_EMPTY_STEP ((size_t)1 << 20)

/* FIT_GIVE_REGRET: the other way round, small objects' slabs that take
 * fresh places while freed large blocks' mappings wait give as many of
 * those pages back, once per GIVE_EMPTY_STEP (region.c, retain.c's
 * os_fit_owe): a program whose memory moved from large blocks to small
 * objects held both for the purge delay. Only mappings that waited at
 * least the purge delay shifted right by FIT_GIVE_IDLE_SHIFT go: threads
 * in turn that grow buffers through the classes into mapped blocks reuse
 * the mappings the last one left a moment later, and faulted them in again
 * where they went at once. The wait is short beside that of the purge:
 * while it runs, the small objects' pages and whatever else the program
 * writes (its own large blocks, which no give answers) add to the freed
 * mappings, and a phase of small objects right after one of large blocks
 * peaked that much over glibc's, which unmaps them at the free
 * (docs/alloc.md gives the figures). Where large blocks then map fresh pages for at
 * least half of what went since these gives began, the program trades its
 * memory between the two kinds in turn, and each give cost it faults in
 * both: the gives pause for the purge delay, doubled at each such regret
 * up to IDLE_SHIFT_MAX times, and the program keeps both kinds' memory
 * meanwhile, as it does with no give at all. */
#define FIT_GIVE_IDLE_SHIFT 6

/* The background purge (sweep.c): a thread that runs the sweep every
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

/* Freed large blocks (pk_alloc's blocks over the last class, each a
 * mapping of its own: alloc_large.c) wait among kept mappings of any
 * length (retain.c), apart from RETAIN_BYTES, and a later block of any
 * length takes one: the front of the smallest that holds it (the rest
 * stays kept), or, when none is long enough, the longest, grown by
 * mremap, so only the pages it lacks are faulted in. Lengths that vary
 * rarely repeat: a mapping kept for its own length alone would leave
 * nearly every block to be faulted in afresh, page by page
 * (bench_large: mimalloc-bench's malloc-large shape). The mappings kept
 * are at most four times as many as the most large blocks live at once
 * lately, at least LARGE_KEEP_COUNT_MIN, at most LARGE_KEEP_COUNT: a
 * program that replaces some of many live blocks of varied lengths leaves
 * a kept piece in nearly every gap between two of them, so the count
 * follows the live blocks'; the most lately, not those live now, or a
 * program that frees them all (a thread that exits, its work done) kept
 * the last few only, the count falling with each free; a table of a
 * fixed few dozen, the oldest going first, gave back most of what such a
 * program freed, to fault it in again (bench_large's
 * "replaced" part). Past the count the smallest goes (the fewest pages to
 * fault in again). The table finds a length and a neighbour by an
 * index (mem/fits.h), not by a look at every piece, so LARGE_KEEP_COUNT
 * bounds its memory, not a scan: a program that replaces some of
 * thousands of live blocks keeps a piece in each gap (when every request
 * and free scanned the table, its cap of a few hundred pieces left such a
 * program to fault most of its blocks in afresh). What waits holds at
 * most the larger of
 * LARGE_KEEP_FLOOR and LARGE_KEEP_PEAKS times the most bytes of large
 * blocks live at once since the fits were last empty, so what waits grows
 * with what the program uses (as glibc raises its trim threshold to twice
 * the largest mapped block freed, up to a cap of its own); each goes back
 * once it has waited the purge delay (the peak then starts again), and the
 * oldest goes first when that bound is reached; a mapping joined with its
 * neighbours past the bound keeps its front to it. Bounded by the bytes
 * live when each block left, a program's last frees, of its longest
 * blocks (a vector that doubles by a fresh block, a copy and a free), were
 * given back just before its next blocks would take them. The peak, not
 * the bytes live: blocks that do not fit one kept mapping take the longest
 * and grow it with fresh pages, so what is live and what waits together
 * pass the peak of what is live, and a bound of the peak alone cut what
 * the next round takes; LARGE_KEEP_PEAKS times it lets one round's pieces
 * wait for the next (bench_large's vectors). */
#define LARGE_KEEP_COUNT 4096
/* A request no kept piece holds maps LARGE_FIT_SLACK times its length
 * more, fresh pages that wait among the fits (within their bound, given
 * back after the purge delay like any): the pieces kept then grow until
 * most requests find one that holds them. Without it the fits hold only
 * what the live blocks' total swings by, and many requests gather several
 * pieces' pages into one mapping (retain.c, gather: system calls that
 * move page tables); docs/alloc.md gives the counts. */
#define LARGE_FIT_SLACK 1
#define LARGE_KEEP_COUNT_MIN 32
#define LARGE_KEEP_FLOOR ((size_t)64 << 20)
#define LARGE_KEEP_PEAKS 2
/* A freed mapping longer than LARGE_KEEP_MAX goes back at once, as
 * glibc's, jemalloc's and mimalloc 2.0.9's huge blocks do (3.4 keeps
 * them): kept, the pages of a
 * buffer of hundreds of MiB that a program freed before it went quiet (or
 * shrank by realloc into a class) stayed resident until its next call
 * into the library; the faults of such a block again cost little beside
 * the writes that fill it. Longer than the vectors bench_large doubles
 * and the blocks of its random lengths (5-25 MiB), which reuse theirs. */
#define LARGE_KEEP_MAX ((size_t)128 << 20)

/* Residue in the kept pieces (retain.c): a kept piece serves the fronts
 * of blocks of other lengths, so a program whose large blocks are written
 * in part (a buffer sized for the worst case) writes a page at each new
 * front, and the pieces' resident pages grew for as long as it ran, up to
 * the bytes kept, its live blocks the same (bench_heapchurn; figures in
 * docs/alloc.md). A block freed with some of its first LARGE_SPARSE_PAGES
 * pages resident, but fewer than 1/2^LARGE_SPARSE_SHIFT of them, leaves
 * residue (one free in LARGE_SPARSE_EVERY of each thread looks: mincore
 * is a system call);
 * once about LARGE_RESIDUE_MAX bytes of it came, the pieces that hold any
 * have their pages given back, the address space kept, one at each free
 * that follows. Blocks written in full leave none: their pages are what
 * the next block reuses without a fault. Neither the time the pieces
 * waited (jemalloc's decay) nor the bytes handed out since tells residue
 * from pages in use: the residue is reused all the time, each block
 * carrying what it was handed back to the pieces, and by the bytes handed
 * out, blocks written in full were faulted in again (bench_large's
 * replaced blocks). */
#define LARGE_SPARSE_SHIFT 2
#define LARGE_SPARSE_PAGES 256
#define LARGE_SPARSE_EVERY 64
#define LARGE_RESIDUE_MAX ((size_t)4 << 20)
/* What one free's look cannot see, the residue of many threads' blocks
 * in many pieces (a mark spreads only by joins) and residue past a
 * block's first pages, is found by a look at the pieces themselves every
 * RESIDUE_LOOK_MS (retain.c, sweep_residue; on a large block's free or
 * the purge's tick): each piece's pages, RESIDUE_GRANULE_PAGES at a time
 * (mincore reads page tables, not pages: docs/alloc.md gives its cost).
 * A granule with more than 1/2^RESIDUE_DENSE_SHIFT of its pages not
 * resident has its resident ones given back, the address space kept; a
 * fuller one stays, for the next block to take without a fault: a block
 * written in full, or in a prefix, leaves its granules full or empty,
 * while the pages scattered blocks' fronts and ends wrote fill few of
 * theirs in one interval. Below that, residue that stayed became pages a
 * granule holds for good: each block handed out over it carries it back
 * at its free. At most RESIDUE_SWEEP_BYTES are looked at a time, the lock
 * held over RESIDUE_STEP_BYTES of them at most. */
#define RESIDUE_LOOK_MS 100
#define RESIDUE_GRANULE_PAGES 64
#define RESIDUE_DENSE_SHIFT 3
#define RESIDUE_SWEEP_BYTES ((size_t)1 << 30)
#define RESIDUE_STEP_BYTES ((size_t)64 << 20)

/* A block that realloc grows past REALLOC_MAPPED_MIN moves into a mapped
 * block (alloc_large.c), whatever its size, and stays one while it keeps
 * over that size: its later growth moves its pages with mremap, no copy,
 * and a freed mapping serves a block of any length. Grown through the
 * classes instead, each class it passes above a slab (each slot a mapping
 * of its own, kept for the purge delay by its class alone) kept one more
 * copy of it: a thousand buffers grown together by realloc to 256 KiB held
 * several times their bytes, where glibc, which grows such blocks in its
 * heap or by mremap, held about their bytes; past half a slab, each of
 * those classes' slots takes a slab of its own too, whose emptied slabs
 * buffers that threads in turn grow left for the next thread beside the
 * mapped blocks (docs/alloc.md gives the figures). */
#define REALLOC_MAPPED_MIN (SLAB_BYTES / 2)
/* Each mapped block is one of the process's mappings, which Linux caps
 * (vm.max_map_count, 65,530 by default, thread stacks and libraries
 * counted too): past REALLOC_MAPPED_LIVE_MAX mapped blocks live, a block
 * realloc grows within the classes' sizes stays in the classes, and one
 * whose mapping cannot be had (the cap reached all the same) takes a
 * class's slot: a program that grew a hundred thousand buffers by realloc
 * past the bound ran out of mappings, where glibc's heap went on
 * (docs/alloc.md). */
#define REALLOC_MAPPED_LIVE_MAX 16384

/* A mapped block that realloc grows past its mapping takes a quarter
 * again (GROW_ROOM_SHIFT) where it has to ask the system or move, and a
 * resize within its mapping that leaves at most that quarter of it unused
 * stays where it is with no system call (mimalloc keeps a block shrunk
 * by up to half); a shrink past that gives its tail back. Grown page by
 * page instead, a buffer grown a few bytes at a time paid a system call
 * at every page, and one among others grown in turn moved at every page
 * (its neighbour took the pages after it). The
 * room's pages are fresh, untouched until the buffer grows into them, so
 * they cost address space, not memory; a quarter is the classes' step
 * (alloc_internal.h, ALLOC_PER_DOUBLING), the same slack a block of a
 * class has. */
#define GROW_ROOM_SHIFT 2
/* A mapped block of at most GROW_COPY_MAX bytes that has to move to grow
 * is copied into a kept mapping that holds it and its room, if one waits,
 * whose pages are faulted in already, and if the block's own pages are in
 * use (KEPT_DENSE_SHIFT); one where none waits moves by mremap (by its
 * mappings where it spans several) and faults its room in. Buffers of
 * 64-256 KiB grown in turn by threads that each take over from one that
 * exited faulted nearly every page in afresh by mremap while what the
 * last thread freed waited unused (docs/alloc.md); blocks of a few MiB
 * grown so ran faster copied than moved and faulted in, and the bound is
 * that of a zeroed block's clearing (LARGE_ZERO_REUSE_MAX), the same
 * trade. A longer one whose pages are in use, while kept mappings wait,
 * takes their pages for its room (retain.c's gather, after its own pages,
 * which move there): grown by fresh pages beside the kept ones, buffers
 * built again and again held what they held and as much again kept
 * (docs/alloc.md). Below the bound the gather's system calls cost more
 * than the faults they save (docs/alloc.md gives both measurements). */
#define GROW_COPY_MAX LARGE_ZERO_REUSE_MAX
/* The mapping's length for a block grown to len bytes (page-rounded). */
static inline size_t policy_grow_to(size_t len, size_t page) {
    size_t room = (len >> GROW_ROOM_SHIFT) & ~(page - 1);
    return len + room < len ? len : len + room;
}
/* The least size a mapping of len bytes serves in place. */
static inline size_t policy_grow_least(size_t len, size_t page) {
    return len - ((len >> GROW_ROOM_SHIFT) & ~(page - 1)) - page + 1;
}
/* Whether a mapping of have bytes serves a resize to len (page-rounded). */
static inline int policy_grow_serves(size_t have, size_t len) {
    return len <= have && have - len <= have >> GROW_ROOM_SHIFT;
}

/* A request no kept piece holds takes the pages of the longest few,
 * moved into one mapping (retain.c, gather), only while at most
 * LARGE_GATHER_LIVE_MAX large blocks were live at once lately. A moved
 * piece stays a mapping of its own, which never merges with its
 * neighbours (the system keeps the offset it was mapped at), so each
 * block gathered from pieces holds several of the process's mappings,
 * which Linux caps (vm.max_map_count): a program holding tens of
 * thousands of large blocks of lengths that never repeat would get NULL
 * at the cap, where fresh mappings beside each other merge. The gather
 * saves the faults of a few live blocks replaced at random (the lab's
 * large blocks); with many live, the pieces are many too, and most
 * requests find one that holds them. */
#define LARGE_GATHER_LIVE_MAX 1024

/* What the kept mappings may hold: bytes and entries; and whether a
 * request may gather pieces (LARGE_GATHER_LIVE_MAX). */
typedef struct fit_bound {
    size_t bytes, count;
    bool gather;
} fit_bound;

/* The bound on the kept mappings for a caller that held `peak` bytes in
 * them and `live` blocks at most lately: LARGE_KEEP_PEAKS times
 * the peak, at least the floor; four times the live blocks' count (a
 * piece beside each, and more cut from them: twice as many still left a
 * fresh process faulting pages in again, docs/alloc.md), within
 * LARGE_KEEP_COUNT_MIN and LARGE_KEEP_COUNT. */
static inline fit_bound policy_keep_bound(size_t peak, size_t live) {
    size_t count = live < LARGE_KEEP_COUNT / 4 ? 4 * live : LARGE_KEEP_COUNT;
    return (fit_bound){LARGE_KEEP_PEAKS * peak > LARGE_KEEP_FLOOR ? LARGE_KEEP_PEAKS * peak : LARGE_KEEP_FLOOR,
                       count > LARGE_KEEP_COUNT_MIN ? count : LARGE_KEEP_COUNT_MIN, live <= LARGE_GATHER_LIVE_MAX};
}

/* A zeroed large block (pk_calloc) of at most LARGE_ZERO_REUSE_MAX bytes
 * takes a kept mapping and clears it (where its pages are resident:
 * KEPT_DENSE_SHIFT, below); a longer one takes a kept mapping
 * with its pages given back, which the system zeroes as the program
 * touches them, so a huge table that is mostly never used costs none of
 * its length (and what waits still shrinks by it). glibc likewise
 * serves (and clears) calloc from its heap below its mmap threshold, whose
 * ceiling is this bound; above it, fresh pages. Fresh pages for every
 * zeroed block made a loop of filled callocs many times slower than
 * glibc's (bench_large's zeroed blocks): each page faulted in anew, twice
 * when read before written. */
#define LARGE_ZERO_REUSE_MAX ((size_t)32 << 20)

/* Kept pages are written over whole (a block copied into them as it
 * grows, a zeroed block cleared in them) only where at least
 * 1/2^KEPT_DENSE_SHIFT of the pages written are resident: writing every
 * page of a block the program wrote a few pages of (a table sized for
 * the worst case, mostly never filled) made it resident in full, and the
 * kept mapping it left later, so that such blocks resized or made again
 * at random held their whole length in memory where glibc held the pages
 * written (docs/alloc.md). Where fewer are, a block that grows moves its
 * pages (mremap: no copy) and a zeroed block gives the kept pages back to
 * come back zero (the system's cost is per resident page), so the
 * resident pages stay the ones the program wrote; a program that writes
 * its blocks whole keeps reusing them as they are. */
#define KEPT_DENSE_SHIFT 1
/* Up to KEPT_DENSE_MIN bytes are written over with no look (mincore, a
 * system call per resize or zeroed block; none where a zeroed block
 * cleared the pages whole before: retain.c's RESIDENT), as before: buffers of 64-256
 * KiB grown in turn by threads that each take over from one that exited
 * spent more time in the look than it could spare them (docs/alloc.md). */
#define KEPT_DENSE_MIN ((size_t)256 << 10)

/* PK_POOL_SHUFFLE pools (hardened, and more): fresh slots go out in an
 * unpredictable order, so one object's address does not tell an attacker
 * which slot comes next. A run of up to SHUFFLE_RUN fresh slots is cut into
 * SHUFFLE_SLICES slices, and each next object is the next slot of a slice
 * picked at random (mimalloc's secure mode extends its pages the same way):
 * a few ascending streams, which the hardware prefetcher still partly
 * follows; the more slices, the slower a working set walks them. Four
 * slices: two bits of uncertainty per object, at about half the cost of
 * eight (docs/design/core4-prototypes.md). Only slots never handed out
 * before are shuffled (central_carve, central_take): a slab that empties
 * and starts again from slot 0 hands its slots out in address order, as
 * its own free list would; shuffling those too cost a working set that
 * empties its slabs every phase a shuffle per object per phase. Even so
 * the order outlives the carve: free lists keep it, and every list walked
 * after it chases lines in four streams. The shuffle is most of what a
 * hardened pool would cost a pool per task and a producer's refill after
 * remote frees. So PK_POOL_HARDENED leaves it out and PK_POOL_SHUFFLE asks
 * for it, as Linux keeps CONFIG_SLAB_FREELIST_RANDOM apart from
 * CONFIG_SLAB_FREELIST_HARDENED. */
#define SHUFFLE_RUN 128
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

/* The hardened front end (alloc_harden.c). Each block of a class pool
 * carries HARD_TAIL bytes past what was asked for: a check word, the last
 * of the slot, that holds the requested size, and before it the slot's
 * slack filled with check bytes. A block is at least HARD_MIN_SLOT bytes
 * of slot, so that the check word never shares the two words a free slot
 * lends its lists (its link and a remote chain's mark), which the check of
 * the slot before (an underflow) reads. */
#define HARD_TAIL ((size_t)8)
#define HARD_MIN_SLOT ((size_t)32)
/* A freed block waits for the next HARD_QUARANTINE frees of its class
 * before its pool may hand it out again, so a use after free does not land
 * in the block's next owner at once (Scudo's and hardened_malloc's
 * quarantines), and a write after free is found before anyone holds the
 * block again (alloc_harden.c checks it then). What waits is bounded by
 * the classes that go to pools (below HARD_GUARDED_MIN): a few MiB at
 * most. */
#define HARD_QUARANTINE 8
/* A block that leaves a thread's quarantine waits for that thread's next
 * allocation of its class among at most HARD_READY others of the class,
 * HARD_READY_BYTES of them at most (a class too large for one goes back
 * to its pool at once), so that a program's steady alloc and free of one
 * size never calls into the pool: what a thread holds this way is bounded
 * by the classes below HARD_GUARDED_MIN, a few hundred KiB at most per
 * thread. A stack refills, and overflows, half of it at a
 * time, so each call into the pool (its purge poll, the thread's slot,
 * the bulk call's set-up) is shared by that many blocks: the small
 * classes, which HARD_READY_BYTES bounds least, hold enough that the
 * calls' fixed cost is small beside a block's checks. */
#define HARD_READY 64
#define HARD_READY_BYTES ((size_t)16 << 10)
/* Requests of at least HARD_GUARDED_MIN bytes get a mapping of their own
 * with a no-access page on each side, so an overflow or underflow faults
 * at once and the fault handler names the block: a page or two of
 * address space and a call to the system or two are small beside filling
 * such a block. Freed, a mapping stays no-access (its pages given back)
 * among the last HARD_FREED_BLOCKS freed, so a use after free faults too
 * and no new block takes its addresses at once. */
#define HARD_GUARDED_MIN ((size_t)64 << 10)
#define HARD_FREED_BLOCKS 64
/* A freed guarded block's pages stay resident, no-access all the same,
 * while the freed blocks' so kept come to at most HARD_WARM_BYTES or the
 * bytes of the large blocks live then, the more (at most as much again as
 * the program holds, past the floor: a mapping waits HARD_FREED_BLOCKS
 * frees before it serves again), and are cleared when the mapping serves
 * the next guarded block. Given back at each free, they cost a program
 * that replaces such blocks and fills them a page fault for every page of
 * every block, where a fault costs more than the page's clearing
 * (docs/design.md, "Guard pages"). Pages kept past the purge
 * delay go back on the next sweep; the floor is what the default mode
 * keeps of freed large blocks at least. */
#define HARD_WARM_BYTES LARGE_KEEP_FLOOR
/* A mapping that leaves the last freed waits, no-access whole, among the
 * last HARD_RECYCLED to leave, for a guarded block it holds with at most
 * as much again to spare (the block ends at its last guard page, the
 * pages before it stay no-access): a call to the system at the block's
 * allocation and one at its free, where a mapping of its own for each
 * block took a map, a protection per guard, a discard and an unmap, which
 * a program that replaces such blocks paid at every replacement
 * (bench/bench_mstress.c, generations). Its addresses come back no sooner
 * than they did: only after HARD_FREED_BLOCKS later frees. */
#define HARD_RECYCLED 16
/* Hardened blocks of size 0 point into a no-access reservation of
 * HARD_ZERO_BYTES, every HARD_ZERO_STEP bytes: any read or write of one
 * faults. Each address is handed out again only once its block is freed
 * (alloc_harden.c keeps a bit per address), so a live block's is unique. */
#define HARD_ZERO_BYTES ((size_t)64 << 20)
#define HARD_ZERO_STEP ((size_t)16)

#endif
