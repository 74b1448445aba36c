/* Peer: tcmalloc (gperftools), loaded at run time from Debian's
 * libtcmalloc-minimal4 with dlopen(RTLD_LOCAL): tc_malloc and tc_free. */
#include "lab.h"

static void *(*tc_malloc_p)(size_t);
static void (*tc_free_p)(void *);

static void *tc_open(size_t size) {
    (void)size;
    return NULL;
}
static void tc_close(void *ctx) { (void)ctx; }

#define K_NAME tc
#define K_ALLOC(c, sz) tc_malloc_p(sz)
#define K_FREE(c, p, sz) tc_free_p(p)
#define K_FREES_EACH 1
#define K_THREADS 1
#include "kernels.h"

void lab_adapter_tcmalloc(lab_allocator *a) {
    a->subject = "tcmalloc";
    a->family = "peer";
    a->open = tc_open;
    a->close = tc_close;
    K_FILL(a);
    snprintf(a->version, sizeof a->version, "tcmalloc");
    void *lib = shared_dlopen("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", a->why,
                           sizeof a->why);
    if (!lib || !shared_dlsym(lib, "tc_malloc", &tc_malloc_p, a->why, sizeof a->why) ||
        !shared_dlsym(lib, "tc_free", &tc_free_p, a->why, sizeof a->why))
        return;
    char v[48];
    shared_tcmalloc_version(lib, v, sizeof v);
    lab_version_line(a->version, sizeof a->version, "tcmalloc (gperftools)", v,
                     "libtcmalloc-minimal4");
    a->available = 1;
}
