/* Peer: GLib's slice allocator (g_slice_alloc / g_slice_free1), linked from
 * libglib2.0-dev when the build found it. */
#include "lab.h"

#ifdef LAB_HAVE_GLIB
#  include <glib.h>

static void *gslice_open(size_t size) {
    (void)size;
    return NULL;
}
static void gslice_close(void *ctx) { (void)ctx; }

#  define K_NAME gslice
#  define K_ALLOC(c, sz) g_slice_alloc(sz)
#  define K_FREE(c, p, sz) g_slice_free1((sz), (p))
#  define K_FREES_EACH 1
#  include "kernels.h"
#endif

void lab_adapter_gslice(lab_allocator *a) {
    a->subject = "GLib g_slice";
    a->family = "peer";
#ifdef LAB_HAVE_GLIB
    a->open = gslice_open;
    a->close = gslice_close;
    K_FILL(a);
    char v[48];
    snprintf(v, sizeof v, " %u.%u.%u", glib_major_version, glib_minor_version,
             glib_micro_version);
    lab_version_line(a->version, sizeof a->version, "GLib g_slice", v, "libglib2.0-0");
    a->available = 1;
#else
    snprintf(a->version, sizeof a->version, "GLib");
    snprintf(a->why, sizeof a->why,
             "GLib not found when pk-lab was built (install libglib2.0-dev)");
#endif
}
