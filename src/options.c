/* Process-wide switches, read once from the environment.
 *
 * A malformed value is reported once on stderr (as a PK_WARNING through the
 * error handler) and the default is used: a switch is never ignored
 * silently. */
#include "internal.h"
#include "policy.h"
#include "sites.h"

#include <poolkit/pool.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>


static int debug_state = -1; /* -1 = not read yet */
static int hardened_state = -1;
static int verbose_state = -1;
static long purge_delay = -1; /* ms; -1 = not read yet */

/* A switch: unset or empty is the default; "0" and "1" set it; anything
 * else is reported once and the default used. */
static PK_COLD int read_switch(const char *name, int dflt) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    if (strcmp(v, "0") == 0) return 0;
    if (strcmp(v, "1") == 0) return 1;
    error_report(PK_WARNING, "bad option", NULL, NULL, "%s=%s is not 0 or 1; using %d", name, v, dflt);
    return dflt;
}

static int read_once(int *state, const char *name, int dflt) {
    int s = __atomic_load_n(state, __ATOMIC_RELAXED);
    if (unlikely(s < 0)) {
        s = read_switch(name, dflt);
        int unset = -1;
        /* Whoever stores first wins, so a racing reader reports nothing twice
         * in a row, and every caller sees one value. */
        if (!__atomic_compare_exchange_n(state, &unset, s, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            s = unset;
    }
    return s;
}

bool options_debug(void) { return read_once(&debug_state, "POOLKIT_DEBUG", 0); }
bool options_verbose(void) { return read_once(&verbose_state, "POOLKIT_VERBOSE", 0); }

/* A build made with -DPOOLKIT_HARDENED_DEFAULT=ON hardens every pool unless
 * POOLKIT_HARDENED=0. */
#ifndef PK_HARDENED_DEFAULT
#  define PK_HARDENED_DEFAULT 0
#endif
bool options_hardened(void) { return read_once(&hardened_state, "POOLKIT_HARDENED", PK_HARDENED_DEFAULT); }

/* A count from the environment: digits only, 0 to max; unset or empty is
 * dflt, anything else is reported once and dflt used. The first reader (or
 * pk_set_purge_delay) to store into *state wins, so a racing caller is not
 * undone and every caller sees one value. */
static PK_COLD long read_count(long *state, const char *name, const char *what, long max, long dflt) {
    const char *v = getenv(name);
    long k = dflt;
    if (v && *v) {
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || *end || n < 0 || n > max || v[0] == '-' || v[0] == '+' || v[0] == ' ')
            error_report(PK_WARNING, "bad option", NULL, NULL,
                         "%s=%s is not a count of %s (0 to %ld); using %ld", name, v, what, max, dflt);
        else
            k = n;
    }
    long unset = -1;
    if (!__atomic_compare_exchange_n(state, &unset, k, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        k = unset;
    return k;
}

long options_purge_delay_ms(void) {
    long ms = __atomic_load_n(&purge_delay, __ATOMIC_RELAXED);
    if (unlikely(ms < 0))
        ms = read_count(&purge_delay, "POOLKIT_PURGE_DELAY_MS", "milliseconds", PURGE_DELAY_MAX_MS,
                        PURGE_DELAY_DEFAULT_MS);
    return ms;
}

static long frames_state = -1; /* POOLKIT_DEBUG_FRAMES; -1 = not read yet */

size_t options_debug_frames(void) {
    long k = __atomic_load_n(&frames_state, __ATOMIC_RELAXED);
    if (unlikely(k < 0))
        k = read_count(&frames_state, "POOLKIT_DEBUG_FRAMES", "frames", SITES_MAX_FRAMES, SITES_DEFAULT_FRAMES);
    return (size_t)k;
}

long pk_set_purge_delay(long ms) {
    long old = options_purge_delay_ms();
    if (ms >= 0) {
        if (ms > PURGE_DELAY_MAX_MS) ms = PURGE_DELAY_MAX_MS;
        old = __atomic_exchange_n(&purge_delay, ms, __ATOMIC_RELAXED);
    }
    return old;
}
