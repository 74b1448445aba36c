/* The idle delay that adapts (policy.h, IDLE_ADAPT), white-box: a program
 * that comes back after each silence to make again what the silence gave
 * back keeps it over the next silence, and one that does not has the delay
 * fall again.
 *
 * Two stories in real time, with a purge delay of DELAY_MS:
 * - kept mappings (freed large blocks): a burst of large blocks, a silence
 *   of three delays, a call: the mappings go back; the same burst again,
 *   the same silence, a call: they stay; a silence past the longest delay
 *   the adaptation allows: they go back.
 * - kept places (a pool a burst, destroyed): the same story for the
 *   places a destroyed pool's slabs leave backed.
 * - a pool (objects of 960 B): a burst, a silence, a call: the slabs go
 *   back; a burst, a silence, a call: the pool's delay has grown past twice
 *   that silence (its shift: purge_idle_shift) and the slabs stay, also
 *   while the program uses the pool a little (its ticks follow the delay);
 *   a silence past the grown delay: they go back; a burst of a sixteenth,
 *   a silence: that return's slabs were not made again (a few of them), so
 *   the shift falls by one.
 * - threads that come and go (a pool of 960 B objects, a delay of
 *   THREAD_DELAY_MS): a thread allocates the burst, frees it and exits;
 *   the first exit gives back the surplus (the pool keeps no more empty
 *   slabs than slabs in use); the next thread makes it again, so its exit
 *   and the next keep it; ticks while the program uses the pool a little
 *   give the kept slabs back, and the exit after that gives back the
 *   surplus again; kept once more, a silence past the delay does the same.
 * The calls are stats calls, which poll the sweep (a silence is judged at
 * the first one after the pool's next use: its burst). Exit 0:
 * both passed (a tool build keeps no mapping: there the pool's story
 * alone). */
// POOLKIT_TEST_LABELS: novalgrind
#include "pool/purge.h"
#include "mem/region.h"
#include "base/track.h"

#include <poolkit/poolkit.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define DELAY_MS 50
#define BLOCKS 8
#define BLOCK ((size_t)1 << 20)
#define OBJECTS 4000
#define OBJECT 960
#define THREAD_DELAY_MS 500

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

/* A call that reaches the library: the sweep's poll. */
static void call(void) {
    pk_process_stats s;
    pk_stats_get(&s);
}

static void large_burst(void) {
    void *b[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) {
        b[i] = pk_alloc(BLOCK);
        if (b[i]) memset(b[i], i, 4096);
    }
    for (int i = 0; i < BLOCKS; i++) pk_free(b[i]);
}

static void kept_mappings(void) {
    large_burst();
    size_t full = os_fit_bytes();
    CHECK(full >= BLOCKS * BLOCK / 2, "the freed blocks' mappings are not kept: %zu bytes", full);
    sleep_ms(3 * DELAY_MS);
    call();
    CHECK(os_fit_bytes() == 0, "the first silence left %zu bytes kept", os_fit_bytes());
    large_burst(); /* mapped afresh: the return was too early */
    sleep_ms(3 * DELAY_MS);
    call();
    CHECK(os_fit_bytes() >= full / 2,
          "the same silence after the blocks came back gave them back again (%zu bytes kept of %zu)",
          os_fit_bytes(), full);
    sleep_ms((DELAY_MS << IDLE_SHIFT_MAX) + 2 * DELAY_MS);
    call();
    CHECK(os_fit_bytes() == 0, "a silence past the longest delay left %zu bytes kept", os_fit_bytes());
}

static void burst(pk_pool *p, int n) {
    static void *o[OBJECTS];
    for (int i = 0; i < n; i++) {
        o[i] = pk_pool_alloc(p);
        if (o[i]) memset(o[i], i, OBJECT);
    }
    for (int i = n; i-- > 0;) pk_pool_free(p, o[i]);
}

static size_t reserved(pk_pool *p) {
    pk_pool_stats s;
    pk_pool_stats_get(p, &s);
    return s.bytes_reserved;
}

static unsigned shift(pk_pool *p) { return purge_idle_shift(p); }

static void pool_story(void) {
    pk_pool_config c = {.name = "idle-adapt", .size = OBJECT};
    pk_pool *p = pk_pool_create(&c);
    CHECK(p != NULL, "pk_pool_create failed");
    if (!p) return;
    burst(p, OBJECTS);
    size_t full = reserved(p);
    CHECK(full >= (size_t)OBJECTS * OBJECT / 2, "the burst reserved only %zu bytes", full);
    sleep_ms(3 * DELAY_MS);
    CHECK(reserved(p) <= full / 4, "the first silence left %zu of %zu bytes", reserved(p), full);
    CHECK(shift(p) == 0, "the shift is %u before any return was judged", shift(p));
    burst(p, OBJECTS); /* slabs made again */
    sleep_ms(3 * DELAY_MS);
    size_t kept = reserved(p);
    unsigned s = shift(p);
    CHECK(((uint64_t)DELAY_MS << s) > 2 * 3 * DELAY_MS, "the delay grew to %u ms only, after a silence of %d ms",
          DELAY_MS << s, 3 * DELAY_MS);
    CHECK(kept >= full * 3 / 4, "the same silence after the slabs came back gave them back again (%zu of %zu)",
          kept, full);
    /* the program runs on, using the pool a little (each use takes its
     * lock): its ticks follow the grown delay, half of it apart, so the
     * burst's slabs stay over five uses (the set delay's ticks would have
     * given them back after two of its intervals) */
    burst(p, OBJECTS);
    for (int i = 0; i < 5; i++) {
        burst(p, OBJECTS / 16);
        sleep_ms(DELAY_MS * 3 / 5);
    }
    CHECK(reserved(p) >= full * 3 / 4, "ticks while the pool was used gave back %zu of %zu bytes within %d ms",
          full - reserved(p), full, 5 * DELAY_MS * 3 / 5);
    sleep_ms((DELAY_MS << s) + 2 * DELAY_MS);
    CHECK(reserved(p) <= full / 4, "a silence past the grown delay (%u ms) left %zu of %zu bytes", DELAY_MS << s,
          reserved(p), full);
    CHECK(shift(p) == s, "the shift moved from %u to %u before that return was judged", s, shift(p));
    burst(p, OBJECTS / 16); /* a use that makes a few slabs, not half of them */
    sleep_ms(3 * DELAY_MS);
    reserved(p); /* judged */
    CHECK(shift(p) + 1 == s, "a return whose slabs were not made again left the shift at %u (was %u)", shift(p), s);
    pk_pool_destroy(p);
}

/* A pool a burst: made, filled, emptied and destroyed; its slabs' places
 * stay backed for the delay (the next pool's slabs take them). */
static void pool_per_burst(void) {
    pk_pool_config c = {.name = "idle-adapt-request", .size = OBJECT};
    pk_pool *p = pk_pool_create(&c);
    CHECK(p != NULL, "pk_pool_create failed");
    if (!p) return;
    burst(p, OBJECTS);
    pk_pool_destroy(p);
}

static void places_story(void) {
    pool_per_burst();
    size_t full = region_kept_bytes();
    CHECK(full >= (size_t)OBJECTS * OBJECT * 3 / 4, "a destroyed pool's places were not kept: %zu bytes", full);
    sleep_ms(3 * DELAY_MS);
    call();
    CHECK(region_kept_bytes() == 0, "the first silence left %zu bytes of places kept", region_kept_bytes());
    pool_per_burst(); /* places taken unbacked: the return was too early */
    sleep_ms(3 * DELAY_MS);
    call();
    CHECK(region_kept_bytes() >= full * 3 / 4,
          "the same silence after the places came back gave them back again (%zu bytes kept of %zu)",
          region_kept_bytes(), full);
    sleep_ms((DELAY_MS << IDLE_SHIFT_MAX) + 2 * DELAY_MS);
    call();
    CHECK(region_kept_bytes() == 0, "a silence past the longest delay left %zu bytes of places kept",
          region_kept_bytes());
}

static void *thread_burst_body(void *p) {
    burst((pk_pool *)p, OBJECTS);
    return NULL;
}

/* A thread that allocates the burst, frees it and exits. */
static void thread_burst(pk_pool *p) {
    pthread_t t;
    if (pthread_create(&t, NULL, thread_burst_body, p) == 0) pthread_join(t, NULL);
}

/* Threads that come and go, each making what the last one freed: the
 * surplus the first exit gives back is made again by the next thread, so
 * later exits keep it; a silence that gives it back unused turns that off.
 * A delay long enough that no tick falls between the bursts. */
static void thread_story(void) {
    long was = pk_set_purge_delay(THREAD_DELAY_MS);
    pk_pool_config c = {.name = "idle-adapt-threads", .size = OBJECT};
    pk_pool *p = pk_pool_create(&c);
    CHECK(p != NULL, "pk_pool_create failed");
    if (!p) return;
    thread_burst(p);
    size_t full = (size_t)OBJECTS * OBJECT;
    CHECK(reserved(p) <= full / 4, "the first exit kept %zu bytes of a %zu-byte burst", reserved(p), full);
    thread_burst(p); /* made again: judged at its exit */
    CHECK(reserved(p) >= full * 3 / 4, "the exit after a thread made the surplus again kept only %zu of %zu bytes",
          reserved(p), full);
    thread_burst(p);
    CHECK(reserved(p) >= full * 3 / 4, "the next exit kept only %zu of %zu bytes", reserved(p), full);
    /* the program runs on, using the pool a little (a few slabs each
     * time, so that each use takes the pool's lock: no silence): its ticks
     * give back the kept slabs unused, and the next exit gives the surplus
     * back */
    for (int i = 0; i < 8; i++) {
        burst(p, OBJECTS / 16);
        sleep_ms(THREAD_DELAY_MS / 5);
    }
    CHECK(reserved(p) <= full / 4, "ticks over %d ms left %zu of %zu bytes", 8 * THREAD_DELAY_MS / 5, reserved(p),
          full);
    thread_burst(p);
    CHECK(reserved(p) <= full / 4, "an exit after ticks gave the kept slabs back kept %zu of %zu bytes",
          reserved(p), full);
    thread_burst(p); /* made again: kept */
    CHECK(reserved(p) >= full * 3 / 4, "the exit after the surplus was made again kept only %zu of %zu bytes",
          reserved(p), full);
    sleep_ms(THREAD_DELAY_MS + THREAD_DELAY_MS / 4);
    CHECK(reserved(p) <= full / 4, "a silence past the delay left %zu of %zu bytes", reserved(p), full);
    thread_burst(p); /* the silence gave the kept slabs back unused: exits give the surplus back again */
    CHECK(reserved(p) <= full / 4, "an exit after the kept slabs went unused kept %zu of %zu bytes", reserved(p),
          full);
    pk_pool_destroy(p);
    pk_set_purge_delay(was);
}

int main(void) {
    pk_set_purge_delay(DELAY_MS);
    if (!TRACK_ENABLED) {
        kept_mappings();
        places_story();
    }
    pool_story();
    thread_story();
    if (failures) return 1;
    printf("idle delays adapt: %s, and threads' exits\n",
           TRACK_ENABLED ? "a pool's slabs (no mapping kept in a tool build)"
                         : "kept mappings, kept places and a pool's slabs");
    return 0;
}
