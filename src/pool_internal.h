/* Everything of the pool layer, for the files that use several of its
 * modules (stats, fork, the bindings' glue): the types (pool_types.h) and
 * each module's header. A module's own file includes what it uses. */
#ifndef POOLKIT_POOL_INTERNAL_H
#define POOLKIT_POOL_INTERNAL_H

#include "pool_types.h"

#include "central.h"
#include "check.h"
#include "heap.h"
#include "pool_free.h"
#include "pool_valid.h"
#include "pools.h"
#include "purge.h"
#include "tcache.h"

#endif
