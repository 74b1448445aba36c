/* Process-wide switches, read once from the environment: every POOLKIT_*
 * variable the library reads is a row of the table below, and nothing else
 * in the library calls getenv.
 *
 * A value is read the first time it is needed, and stays: the first reader
 * (or the call that sets it: pk_option_set, pk_set_purge_delay,
 * pk_set_background_purge) to store it wins, so racing readers agree and a
 * malformed value is reported once (a PK_WARNING "bad option" through the
 * error handler), the default then used: a switch is never ignored
 * silently. Switches take 1/true/yes/on and 0/false/no/off in any case, as
 * mimalloc's options do. The report (stats.c) lists every row with where
 * its value came from, through options_list.
 *
 * A POOLKIT_* variable that is no row (a typo: POOLKIT_STAT=1) would pass
 * in silence, so the first read of any row also looks through the whole
 * environment once and reports each unknown name (a PK_WARNING "unknown
 * option"), naming the closest row, as jemalloc warns about unknown keys. */
#include "base/internal.h"
#include "base/policy.h"
#include "base/sites.h"

#include <poolkit/options.h>
#include <poolkit/pool.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifndef PK_HARDENED_DEFAULT
#  define PK_HARDENED_DEFAULT 0 /* -DPOOLKIT_HARDENED_DEFAULT=ON builds set 1 */
#endif

enum {
    OPT_DEBUG,
    OPT_HARDENED,
    OPT_VERBOSE,
    OPT_PURGE_DELAY,
    OPT_BACKGROUND_PURGE,
    OPT_DEBUG_FRAMES,
    OPT_STATS,
    OPT_FAULT_HANDLER,
    OPT_COUNT
};

typedef struct option {
    const char *name;  /* the environment variable */
    option_kind kind;
    long dflt, max;    /* counts: 0 to max */
    const char *unit;  /* counts: what they count, for the warning */
    const char *setter; /* the public call that also sets it, or NULL */
    long value;        /* -1 until read; then the value in force */
    int source;        /* option_source, stored by whoever stored value */
} option;

/* Every switch. OPTION_DEST values are STATS_OFF, STATS_STDERR, STATS_FILE. */
static option table[OPT_COUNT] = {
    [OPT_DEBUG] = {"POOLKIT_DEBUG", OPTION_SWITCH, 0, 1, NULL, "pk_option_set", -1, 0},
    [OPT_HARDENED] = {"POOLKIT_HARDENED", OPTION_SWITCH, PK_HARDENED_DEFAULT, 1, NULL, "pk_option_set", -1, 0},
    [OPT_VERBOSE] = {"POOLKIT_VERBOSE", OPTION_SWITCH, 0, 1, NULL, "pk_option_set", -1, 0},
    [OPT_PURGE_DELAY] = {"POOLKIT_PURGE_DELAY_MS", OPTION_COUNT, PURGE_DELAY_DEFAULT_MS,
                         PURGE_DELAY_MAX_MS, "milliseconds", "pk_set_purge_delay", -1, 0},
    [OPT_BACKGROUND_PURGE] = {"POOLKIT_BACKGROUND_PURGE", OPTION_SWITCH, 0, 1, NULL,
                              "pk_set_background_purge", -1, 0},
    [OPT_DEBUG_FRAMES] = {"POOLKIT_DEBUG_FRAMES", OPTION_COUNT, SITES_DEFAULT_FRAMES, SITES_MAX_FRAMES,
                          "frames", "pk_option_set", -1, 0},
    [OPT_STATS] = {"POOLKIT_STATS", OPTION_DEST, STATS_OFF, STATS_FILE, NULL, "pk_option_set", -1, 0},
    [OPT_FAULT_HANDLER] = {"POOLKIT_FAULT_HANDLER", OPTION_SWITCH, 1, 1, NULL, "pk_option_set", -1, 0},
};

/* Defined by the malloc library alone (src/malloc/malloc.c); its address
 * is NULL everywhere else. */
extern const char malloc_library_marker __attribute__((weak, visibility("hidden")));

static long option_get(int id);

/* A row's default. The malloc library is loaded into programs that never
 * asked for poolkit, and a preload must change nothing else in them: it
 * takes no signal unless POOLKIT_FAULT_HANDLER=1 says so, or
 * POOLKIT_HARDENED=1, whose faults (guard pages, blocks of size 0) are
 * reported by the handler. */
static long default_of(int id) {
    if (id == OPT_FAULT_HANDLER && &malloc_library_marker) return option_get(OPT_HARDENED);
    return table[id].dflt;
}

/* POOLKIT_STATS's file name, copied (the environment may change later);
 * published before the value that says there is one. */
static char *stats_path;

static const char *const truthy[] = {"1", "true", "yes", "on"};
static const char *const falsy[] = {"0", "false", "no", "off"};

/* 1 or 0 for a word of either list (any case), else -1. */
static int switch_word(const char *v) {
    for (size_t i = 0; i < sizeof truthy / sizeof *truthy; i++) {
        if (strcasecmp(v, truthy[i]) == 0) return 1;
        if (strcasecmp(v, falsy[i]) == 0) return 0;
    }
    return -1;
}

/* A count: digits only, 0 to max; else -1. */
static long count_of(const char *v, long max) {
    if (v[0] < '0' || v[0] > '9') return -1;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    return errno || *end || n > max ? -1 : n;
}

/* POOLKIT_STATS: a switch word, or a file name, which must hold a '/' or a
 * '.' (./stats, report.json), so that a mistyped word (POOLKIT_STATS=ys) is
 * reported rather than written to as a file. -1 for neither. */
static long dest_of(const char *v) {
    int w = switch_word(v);
    if (w >= 0) return w ? STATS_STDERR : STATS_OFF;
    if (!strchr(v, '/') && !strchr(v, '.')) return -1;
    char *copy = strdup(v);
    if (!copy) return -1;
    char *none = NULL;
    if (!__atomic_compare_exchange_n(&stats_path, &none, copy, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        free(copy); /* a racing reader copied the same name first */
    return STATS_FILE;
}

static PK_COLD void bad_value(const option *o, const char *v, long dflt) {
    switch (o->kind) {
    case OPTION_SWITCH:
        error_report(PK_WARNING, "bad option", NULL, NULL,
                     "%s=%s is not a switch (1, true, yes, on or 0, false, no, off); using %ld",
                     o->name, v, dflt);
        break;
    case OPTION_COUNT:
        error_report(PK_WARNING, "bad option", NULL, NULL, "%s=%s is not a count of %s (0 to %ld); using %ld",
                     o->name, v, o->unit, o->max, dflt);
        break;
    case OPTION_DEST:
        error_report(PK_WARNING, "bad option", NULL, NULL,
                     "%s=%s is neither a switch (1, true, yes, on or 0, false, no, off) nor a file "
                     "name (which needs a '/' or a '.', as in ./%s); no report at exit",
                     o->name, v, v);
        break;
    }
}

/* Variables that poolkit's own scripts and tests read, not the library:
 * known, so that no run of the build's scripts warns about them. */
static const char *const tool_names[] = {
    "POOLKIT_TEST_SCALE",  "POOLKIT_TEST_SEED",     "POOLKIT_SETUP_PEERS",
    "POOLKIT_LAB_SETUP_PACKAGES", "POOLKIT_FRESH_CACHE", "POOLKIT_ROOT",
    "POOLKIT_OBJC_OPTIONAL", "POOLKIT_LIB",         "POOLKIT_INCLUDE",
};

/* Edit distance between a[0..na) and b (insertions, deletions,
 * substitutions), for naming the row closest to an unknown variable. */
static size_t distance(const char *a, size_t na, const char *b) {
    size_t nb = strlen(b), row[64];
    if (na >= sizeof row / sizeof *row || nb >= sizeof row / sizeof *row) return SIZE_MAX;
    for (size_t j = 0; j <= nb; j++) row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb];
}

static bool known_name(const char *name, size_t len) {
    for (int id = 0; id < OPT_COUNT; id++)
        if (strlen(table[id].name) == len && !memcmp(name, table[id].name, len)) return true;
    for (size_t i = 0; i < sizeof tool_names / sizeof *tool_names; i++)
        if (strlen(tool_names[i]) == len && !memcmp(name, tool_names[i], len)) return true;
    return false;
}

/* The row whose variable is nearest name[0..len) (a full variable name). */
static int closest_row(const char *name, size_t len) {
    int closest = 0;
    size_t best = SIZE_MAX;
    for (int id = 0; id < OPT_COUNT; id++) {
        size_t d = distance(name, len, table[id].name);
        if (d < best) best = d, closest = id;
    }
    return closest;
}

static PK_COLD void check_environment(void) {
    extern char **environ;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "POOLKIT_", 8) != 0) continue;
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        if (known_name(*e, len)) continue;
        error_report(PK_WARNING, "unknown option", NULL, NULL,
                     "%.*s is not a poolkit variable (did you mean %s?); it is ignored", (int)len, *e,
                     table[closest_row(*e, len)].name);
    }
}

/* Reads row `id` from the environment and stores it, unless another reader
 * or pk_set_purge_delay stored first; returns the value in force. */
static PK_COLD long option_read(int id) {
    static int environment_checked;
    if (!__atomic_exchange_n(&environment_checked, 1, __ATOMIC_RELAXED)) check_environment();
    option *o = &table[id];
    const char *v = getenv(o->name);
    long k = default_of(id);
    int source = OPTION_DEFAULT;
    if (v && *v) {
        long got = o->kind == OPTION_SWITCH ? switch_word(v)
                   : o->kind == OPTION_COUNT ? count_of(v, o->max)
                                             : dest_of(v);
        if (got < 0) {
            bad_value(o, v, k);
            source = OPTION_BAD;
        } else {
            k = got;
            source = OPTION_ENVIRONMENT;
        }
    }
    long unset = -1;
    if (!__atomic_compare_exchange_n(&o->value, &unset, k, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return unset;
    __atomic_store_n(&o->source, source, __ATOMIC_RELAXED);
    return k;
}

static inline long option_get(int id) {
    long v = __atomic_load_n(&table[id].value, __ATOMIC_ACQUIRE);
    return likely(v >= 0) ? v : option_read(id);
}

bool options_debug(void) { return option_get(OPT_DEBUG); }
bool options_hardened(void) { return option_get(OPT_HARDENED); }
bool options_verbose(void) { return option_get(OPT_VERBOSE); }
long options_purge_delay_ms(void) { return option_get(OPT_PURGE_DELAY); }
bool options_background_purge(void) { return option_get(OPT_BACKGROUND_PURGE); }
size_t options_debug_frames(void) { return (size_t)option_get(OPT_DEBUG_FRAMES); }
bool options_fault_handler(void) { return option_get(OPT_FAULT_HANDLER); }

int options_stats(const char **path) {
    long v = option_get(OPT_STATS);
    *path = v == STATS_FILE ? __atomic_load_n(&stats_path, __ATOMIC_ACQUIRE) : NULL;
    return (int)v;
}

long pk_set_purge_delay(long ms) {
    long old = options_purge_delay_ms();
    if (ms >= 0) {
        if (ms > PURGE_DELAY_MAX_MS) ms = PURGE_DELAY_MAX_MS;
        old = __atomic_exchange_n(&table[OPT_PURGE_DELAY].value, ms, __ATOMIC_RELAXED);
        __atomic_store_n(&table[OPT_PURGE_DELAY].source, OPTION_CALL, __ATOMIC_RELAXED);
    }
    return old;
}

static int (*background_set)(int on);

void options_on_background_set(int (*fn)(int on)) { background_set = fn; }

void options_set_background_purge(bool on) {
    __atomic_store_n(&table[OPT_BACKGROUND_PURGE].value, (long)on, __ATOMIC_RELAXED);
    __atomic_store_n(&table[OPT_BACKGROUND_PURGE].source, OPTION_CALL, __ATOMIC_RELAXED);
}

size_t options_list(option_info *out, size_t max) {
    size_t n = 0;
    for (int id = 0; id < OPT_COUNT && n < max; id++, n++) {
        out[n].name = table[id].name;
        out[n].kind = table[id].kind;
        out[n].value = option_get(id);
        out[n].path = NULL;
        out[n].setter = table[id].setter;
        if (id == OPT_STATS) options_stats(&out[n].path);
        out[n].source = (option_source)__atomic_load_n(&table[id].source, __ATOMIC_RELAXED);
    }
    return n;
}

/* Notes live here, not in error.c, so that the error layer reads no
 * option: options.c reports through error.c, never the reverse. */
static int noted[NOTE_KINDS];

void note_once(int kind, const char *pool, const char *fmt, ...) {
    if (!options_verbose() || __atomic_exchange_n(&noted[kind], 1, __ATOMIC_RELAXED)) return;
    char body[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    error_report(PK_NOTE, "note", pool, NULL, "%s", body);
}

/* ---- pk_option_get and pk_option_set ---- */

#define PREFIX "POOLKIT_"

/* The row of name, with or without the prefix, in any case; -1 (reported,
 * naming the closest row, errno EINVAL) when none. */
static int row_named(const char *name, const char *call) {
    if (!name) {
        errno = EINVAL;
        return -1;
    }
    const char *bare = strncasecmp(name, PREFIX, strlen(PREFIX)) == 0 ? name + strlen(PREFIX) : name;
    for (int id = 0; id < OPT_COUNT; id++)
        if (strcasecmp(bare, table[id].name + strlen(PREFIX)) == 0) return id;
    char full[64];
    snprintf(full, sizeof full, PREFIX "%s", bare); /* a longer name is cut: its nearest row still */
    for (char *ch = full; *ch; ch++) *ch = (char)toupper((unsigned char)*ch);
    error_report(PK_WARNING, "unknown option", NULL, NULL, "%s(\"%s\"): no such option (did you mean \"%s\"?)",
                 call, name, table[closest_row(full, strlen(full))].name + strlen(PREFIX));
    errno = EINVAL;
    return -1;
}

int pk_option_get(const char *name, long *value) {
    int id = row_named(name, "pk_option_get");
    if (id < 0) return -1;
    if (!value) {
        errno = EINVAL;
        return -1;
    }
    *value = option_get(id);
    return 0;
}

/* Rows read once, where they decide how the library is set up (pools made,
 * a handler installed): a call may set them only before that first read. */
static bool read_once(int id) {
    return id == OPT_DEBUG || id == OPT_HARDENED || id == OPT_DEBUG_FRAMES || id == OPT_FAULT_HANDLER;
}

int pk_option_set(const char *name, long value) {
    int id = row_named(name, "pk_option_set");
    if (id < 0) return -1;
    option *o = &table[id];
    long most = o->kind == OPTION_DEST ? 1 : o->max; /* a report's file: the environment only */
    if (value < 0 || value > most) {
        errno = EINVAL;
        return -1;
    }
    if (id == OPT_PURGE_DELAY) {
        pk_set_purge_delay(value);
        return 0;
    }
    if (id == OPT_BACKGROUND_PURGE) {
        if (background_set) return background_set(value != 0) < 0 ? -1 : 0;
        options_set_background_purge(value != 0);
        return 0;
    }
    if (read_once(id)) {
        long unset = -1;
        if (!__atomic_compare_exchange_n(&o->value, &unset, value, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            if (unset == value) return 0;
            errno = EBUSY; /* already in force since the library's first use */
            return -1;
        }
    } else {
        __atomic_store_n(&o->value, value, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&o->source, OPTION_CALL, __ATOMIC_RELAXED);
    return 0;
}
