/* poolkit's options at run time: the POOLKIT_* environment variables'
 * table, read and set by name.
 *
 * Names are the variables' without the POOLKIT_ prefix (the prefix is
 * accepted too), in any case: "DEBUG", "HARDENED", "VERBOSE",
 * "PURGE_DELAY_MS", "BACKGROUND_PURGE", "DEBUG_FRAMES", "STATS",
 * "FAULT_HANDLER". Switches are 0 or 1; counts 0 up to their maximum;
 * STATS is 0 or 1 (the report at exit on stderr; a file is named only by
 * the environment). An unknown name is an error, reported through the
 * error handler as a PK_WARNING "unknown option" naming the closest one.
 * The stats report lists every option with where its value came from.
 */
#ifndef POOLKIT_OPTIONS_H
#define POOLKIT_OPTIONS_H

#include <poolkit/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Stores the option's value in force in *value (reading the environment
 * first if nothing has yet). Returns 0, or -1 with errno EINVAL for an
 * unknown name or a NULL value. Thread-safe. */
PK_API int pk_option_get(const char *name, long *value);

/* Sets the option. PURGE_DELAY_MS and BACKGROUND_PURGE take effect at once
 * (as pk_set_purge_delay and pk_set_background_purge); VERBOSE and STATS at
 * once too. DEBUG, HARDENED, DEBUG_FRAMES and FAULT_HANDLER decide how the
 * library sets itself up and are read once, at its first use: a call
 * before then wins over the environment; after it, a call that would
 * change the value fails with errno EBUSY (one that repeats it succeeds).
 * Returns 0, or -1 with errno EINVAL (unknown name, value out of range),
 * EBUSY, or pk_set_background_purge's error. Thread-safe. */
PK_API int pk_option_set(const char *name, long value);

#ifdef __cplusplus
}
#endif
#endif
