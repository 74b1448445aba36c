/* The library's exported pk_pool_alloc and pk_pool_free: the header's inline
 * bodies compiled once with external linkage, for callers that do not
 * inline them (PK_NO_INLINE, other languages, calls through the shared
 * library). Where the header has no inline fast path, they are the slow
 * paths themselves. */
#define PK__EMIT_EXTERN_INLINE 1
#include "pool/pool_internal.h"

#ifndef PK__HAVE_INLINE
void *pk_pool_alloc(pk_pool *pool) { return pk__pool_alloc_slow(pool); }
void pk_pool_free(pk_pool *pool, void *obj) { pk__pool_free_slow(pool, obj); }
#endif
