/* Everything of the pool layer, for the files that use several of its
 * modules (stats, fork, the bindings' glue): the types (pool_types.h) and
 * each module's header. A module's own file includes what it uses. */
#ifndef POOLKIT_POOL_INTERNAL_H
#define POOLKIT_POOL_INTERNAL_H

#include "pool/pool_types.h"
#include "pool/harden.h"

#include "pool/central.h"
#include "pool/check.h"
#include "pool/heap.h"
#include "pool/pool_free.h"
#include "pool/remote.h"
#include "pool/pool_valid.h"
#include "pool/pool_list.h"
#include "pool/pools.h"
#include "pool/purge.h"
#include "pool/sweep.h"
#include "pool/tcache.h"

#endif
