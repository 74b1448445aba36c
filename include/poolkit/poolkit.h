/* poolkit: fast object allocation and object lifetime for C.
 * Including this header brings the whole public API. */
#ifndef POOLKIT_H
#define POOLKIT_H

#define PK_VERSION_MAJOR 0        /* incompatible API changes */
#define PK_VERSION_MINOR 1        /* added functionality */
#define PK_VERSION_PATCH 0        /* fixes */
#define PK_VERSION_STRING "0.1.0" /* the three, as text */

#include <poolkit/error.h>
#include <poolkit/pool.h>
#include <poolkit/arena.h>
#include <poolkit/object.h>
#include <poolkit/fault.h>
#include <poolkit/stats.h>

#endif
