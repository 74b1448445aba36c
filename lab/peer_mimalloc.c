/* Peers: mimalloc twice, since neither version is best at everything
 * (LAB.md: compare against the faster of the two per workload):
 *
 *   "mimalloc"    Debian's libmimalloc2.0 (2.0.9), libmimalloc.so.2;
 *   "mimalloc 3"  mimalloc 3.4 from PyPI's cmeel-mimalloc wheel, whose
 *                 cmeel.prefix/lib/libmimalloc.so.3 lab/requirements.txt
 *                 pins into the project's .venv (lab_mimalloc3_path).
 *
 * Each is loaded at run time with dlopen(RTLD_LOCAL), so it never replaces
 * the process's malloc, and called as its users call it: mi_malloc and
 * mi_free. */
#include "lab.h"

static void *mi_open(size_t size) {
    (void)size;
    return NULL;
}
static void mi_close(void *ctx) { (void)ctx; }

/* ---- Debian's mimalloc 2 ---- */

static void *(*mi_malloc_p)(size_t);
static void (*mi_free_p)(void *);

#define K_NAME mi
#define K_ALLOC(c, sz) mi_malloc_p(sz)
#define K_FREE(c, p, sz) mi_free_p(p)
#define K_FREES_EACH 1
#define K_THREADS 1
#include "kernels.h"
#undef K_NAME

void lab_adapter_mimalloc(lab_allocator *a) {
    a->subject = LAB_MIMALLOC;
    a->family = "peer";
    a->open = mi_open;
    a->close = mi_close;
    mi_fill(a);
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

/* ---- PyPI's mimalloc 3 ---- */

static void *(*mi3_malloc_p)(size_t);
static void (*mi3_free_p)(void *);

#define K_NAME mi3
#define K_ALLOC(c, sz) mi3_malloc_p(sz)
#define K_FREE(c, p, sz) mi3_free_p(p)
#define K_FREES_EACH 1
#define K_THREADS 1
#include "kernels.h"

void lab_adapter_mimalloc3(lab_allocator *a) {
    a->subject = LAB_MIMALLOC3;
    a->family = "peer";
    a->open = mi_open;
    a->close = mi_close;
    mi3_fill(a);
    snprintf(a->version, sizeof a->version, "mimalloc 3");
    const char *path = lab_mimalloc3_path(a->why, sizeof a->why);
    if (!path) return;
    void *lib = shared_dlopen(path, "cmeel-mimalloc from PyPI: scripts/lab-setup.sh", a->why, sizeof a->why);
    if (!lib || !shared_dlsym(lib, "mi_malloc", &mi3_malloc_p, a->why, sizeof a->why) ||
        !shared_dlsym(lib, "mi_free", &mi3_free_p, a->why, sizeof a->why))
        return;
    lab_mimalloc3_version(lib, a->version, sizeof a->version);
    a->available = 1;
}
