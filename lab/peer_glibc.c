/* Peer: glibc malloc, the C library's allocator (what every program gets). */
#include "lab.h"

#include <gnu/libc-version.h>
#include <stdlib.h>

static void *glibc_open(size_t size) {
    (void)size;
    return NULL;
}
static void glibc_close(void *ctx) { (void)ctx; }

#define K_NAME glibc
#define K_ALLOC(c, sz) malloc(sz)
#define K_FREE(c, p, sz) free(p)
#define K_FREES_EACH 1
#define K_THREADS 1
#include "kernels.h"

void lab_adapter_glibc(lab_allocator *a) {
    a->subject = "glibc malloc";
    a->family = "peer";
    a->open = glibc_open;
    a->close = glibc_close;
    K_FILL(a);
    const char *deb = lab_deb_version("libc6");
    snprintf(a->version, sizeof a->version, "glibc %s%s%s%s", gnu_get_libc_version(),
             *deb ? " (Debian " : "", deb, *deb ? ")" : "");
    a->available = 1;
}
