/* Peer: talloc, Samba's hierarchical allocator (talloc_size / talloc_free
 * under one context), linked from libtalloc-dev when the build found it. */
#include "lab.h"

#ifdef LAB_HAVE_TALLOC
#  include <talloc.h>

static void *talloc_open(size_t size) {
    (void)size;
    return talloc_new(NULL);
}
static void talloc_close(void *ctx) { talloc_free(ctx); }

#  define K_NAME tal
#  define K_ALLOC(c, sz) talloc_size((c), (sz))
#  define K_FREE(c, p, sz) talloc_free(p)
#  define K_FREES_EACH 1
#  include "kernels.h"
#endif

void lab_adapter_talloc(lab_allocator *a) {
    a->subject = "talloc";
    a->family = "peer";
#ifdef LAB_HAVE_TALLOC
    a->open = talloc_open;
    a->close = talloc_close;
    K_FILL(a);
    char v[48];
    snprintf(v, sizeof v, " %d.%d", talloc_version_major(), talloc_version_minor());
    lab_version_line(a->version, sizeof a->version, "talloc", v, "libtalloc2");
    a->available = 1;
#else
    snprintf(a->version, sizeof a->version, "talloc");
    snprintf(a->why, sizeof a->why,
             "talloc not found when pk-lab was built (install libtalloc-dev)");
#endif
}
