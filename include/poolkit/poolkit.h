/* poolkit: fast object allocation and object lifetime for C.
 * Including this header brings the whole public API. */
#ifndef POOLKIT_H
#define POOLKIT_H

/* The version of these headers. This is its one home: CMake reads the
 * project's version (the shared library's, poolkit.pc's, the CMake
 * package's) from these lines, and refuses to configure when the string
 * does not spell the three numbers. */
#define PK_VERSION_MAJOR 0        /* incompatible API changes */
#define PK_VERSION_MINOR 1        /* added functionality */
#define PK_VERSION_PATCH 0        /* fixes */
#define PK_VERSION_STRING "0.1.0" /* the three, as text */
/* The three as one number, MAJOR * 10000 + MINOR * 100 + PATCH (0.1.0 is
 * 100), for preprocessor tests and for comparing with pk_version(). */
#define PK_VERSION (PK_VERSION_MAJOR * 10000 + PK_VERSION_MINOR * 100 + PK_VERSION_PATCH)

#include <poolkit/export.h>

#include <poolkit/error.h>
#include <poolkit/pool.h>
#include <poolkit/alloc.h>
#include <poolkit/heap.h>
#include <poolkit/arena.h>
#include <poolkit/object.h>
#include <poolkit/fault.h>
#include <poolkit/stats.h>
#include <poolkit/options.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the library the program runs with, as PK_VERSION counts
 * it: a program built with one version's headers and run with another's
 * shared library can tell (pk_version() != PK_VERSION). Thread-safe; never
 * fails. */
PK_API int pk_version(void);

/* The same as text, "MAJOR.MINOR.PATCH" (PK_VERSION_STRING of the
 * library's build): a static string. Thread-safe; never fails. */
PK_API const char *pk_version_string(void);

#ifdef __cplusplus
}
#endif

#endif
