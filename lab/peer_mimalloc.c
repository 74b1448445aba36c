/* Peer: mimalloc, loaded at run time from Debian's libmimalloc2.0 with
 * dlopen(RTLD_LOCAL): mi_malloc and mi_free. */
#include "lab.h"

static void *(*mi_malloc_p)(size_t);
static void (*mi_free_p)(void *);

static void *mi_open(size_t size) {
    (void)size;
    return NULL;
}
static void mi_close(void *ctx) { (void)ctx; }

#define K_NAME mi
#define K_ALLOC(c, sz) mi_malloc_p(sz)
#define K_FREE(c, p, sz) mi_free_p(p)
#define K_FREES_EACH 1
#define K_THREADS 1
#include "kernels.h"

void lab_adapter_mimalloc(lab_allocator *a) {
    a->subject = "mimalloc";
    a->family = "peer";
    a->open = mi_open;
    a->close = mi_close;
    K_FILL(a);
    snprintf(a->version, sizeof a->version, "mimalloc");
    void *lib = shared_dlopen("libmimalloc.so.2", "libmimalloc2.0", a->why, sizeof a->why);
    if (!lib || !shared_dlsym(lib, "mi_malloc", &mi_malloc_p, a->why, sizeof a->why) ||
        !shared_dlsym(lib, "mi_free", &mi_free_p, a->why, sizeof a->why))
        return;
    char v[32];
    shared_mimalloc_version(lib, v, sizeof v);
    lab_version_line(a->version, sizeof a->version, "mimalloc", v, "libmimalloc2.0");
    a->available = 1;
}
