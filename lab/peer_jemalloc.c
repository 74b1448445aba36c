/* Peer: jemalloc, loaded at run time from Debian's libjemalloc2 with
 * dlopen(RTLD_LOCAL), so it never replaces the process's malloc. Called as
 * its users call it: malloc and free from the library. */
#include "lab.h"

#include <string.h>

static void *(*je_malloc)(size_t);
static void (*je_free)(void *);

static void *je_open(size_t size) {
    (void)size;
    return NULL;
}
static void je_close(void *ctx) { (void)ctx; }

#define K_NAME je
#define K_ALLOC(c, sz) je_malloc(sz)
#define K_FREE(c, p, sz) je_free(p)
#define K_FREES_EACH 1
#define K_THREADS 1
#include "kernels.h"

void lab_adapter_jemalloc(lab_allocator *a) {
    a->subject = "jemalloc";
    a->family = "peer";
    a->open = je_open;
    a->close = je_close;
    K_FILL(a);
    snprintf(a->version, sizeof a->version, "jemalloc");
    void *lib = shared_dlopen("libjemalloc.so.2", "libjemalloc2", a->why, sizeof a->why);
    if (!lib || !shared_dlsym(lib, "malloc", &je_malloc, a->why, sizeof a->why) ||
        !shared_dlsym(lib, "free", &je_free, a->why, sizeof a->why))
        return;
    char ver[48];
    shared_jemalloc_version(lib, ver, sizeof ver);
    lab_version_line(a->version, sizeof a->version, "jemalloc", ver, "libjemalloc2");
    a->available = 1;
}
