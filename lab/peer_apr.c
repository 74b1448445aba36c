/* Peer: Apache Portable Runtime pools (apr_palloc; freed in bulk by
 * apr_pool_clear), linked from libapr1-dev when the build found it. */
#include "lab.h"

#ifdef LAB_HAVE_APR
#  include <apr_general.h>
#  include <apr_pools.h>
#  include <apr_version.h>

static void *apr_open(size_t size) {
    (void)size;
    apr_pool_t *p = NULL;
    return apr_pool_create(&p, NULL) == APR_SUCCESS ? p : NULL;
}
static void apr_close(void *ctx) { apr_pool_destroy((apr_pool_t *)ctx); }

#  define K_NAME aprp
#  define K_ALLOC(c, sz) apr_palloc((apr_pool_t *)(c), (sz))
#  define K_FREE(c, p, sz) ((void)(p))
#  define K_RESET(c) apr_pool_clear((apr_pool_t *)(c))
#  define K_FREES_EACH 0
#  include "kernels.h"
#endif

void lab_adapter_apr(lab_allocator *a) {
    a->subject = "APR pools";
    a->family = "peer";
#ifdef LAB_HAVE_APR
    a->open = apr_open;
    a->close = apr_close;
    K_FILL(a);
    if (apr_initialize() != APR_SUCCESS) {
        snprintf(a->why, sizeof a->why, "apr_initialize failed");
        return;
    }
    char v[48];
    snprintf(v, sizeof v, " %s", apr_version_string());
    lab_version_line(a->version, sizeof a->version, "APR pools", v, "libapr1");
    a->available = 1;
#else
    snprintf(a->version, sizeof a->version, "APR");
    snprintf(a->why, sizeof a->why,
             "APR not found when pk-lab was built (install libapr1-dev)");
#endif
}
