/* realprog's allocators (realprog.h): each one's malloc, free, realloc,
 * calloc and malloc_usable_size for the libraries' hooks, and the library
 * that LD_PRELOAD names for the programs. The peers are loaded at run time
 * (dlopen(RTLD_LOCAL)); the lab's malloc-shaped adapters (peer_malloc.c)
 * call them through this table. poolkit's front end is linked, and its
 * preload library is the libpoolkit-malloc.so of this build
 * (LAB_MALLOC_LIB). */
#include "lab.h"
#include "realprog.h"

#include <poolkit/alloc.h>

#include <fcntl.h>
#include <gnu/libc-version.h>
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t pk_usable(void *p) { return pk_usable_size(p); }

/* The peers loaded at run time: each one's library (mimalloc 3's is
 * found by lab_mimalloc3_path), its Debian package (or how to get it), its
 * functions in the order malloc, free, realloc, calloc, usable, aligned
 * (C11's aligned_alloc: alignment, then size), and its
 * version (the library's own call, then the package's). */
typedef struct peer_lib {
    const char *subject, *file, *package;
    const char *names[6];
    const char *name; /* the version line's */
    void (*version)(void *lib, char *out, size_t len);
} peer_lib;

#define MI_NAMES {"mi_malloc", "mi_free", "mi_realloc", "mi_calloc", "mi_usable_size", "mi_aligned_alloc"}
static const peer_lib peer_libs[RP_NALLOC] = {
    [RP_MI] = {LAB_MIMALLOC, "libmimalloc.so.2", "libmimalloc2.0", MI_NAMES, "mimalloc", shared_mimalloc_version},
    [RP_MI3] = {LAB_MIMALLOC3, NULL, "cmeel-mimalloc from PyPI: scripts/lab-setup.sh", MI_NAMES, NULL, NULL},
    [RP_JE] = {"jemalloc", "libjemalloc.so.2", "libjemalloc2",
               {"malloc", "free", "realloc", "calloc", "malloc_usable_size", "aligned_alloc"}, "jemalloc",
               shared_jemalloc_version},
    [RP_TC] = {"tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4",
               {"tc_malloc", "tc_free", "tc_realloc", "tc_calloc", "tc_malloc_size", "tc_memalign"}, "tcmalloc (gperftools)",
               shared_tcmalloc_version},
};

/* Peer k's functions from its library, and its version line; where it
 * cannot be loaded, not available, with the reason in why and preload_why
 * (its version is then its subject). PyPI's libmimalloc.so.3 preloads as
 * is, by its path in .venv; the others by name (the dynamic loader finds
 * them). */
static void load_peer(rp_alloc *a, int k) {
    const peer_lib *p = &peer_libs[k];
    *a = (rp_alloc){.subject = p->subject, .family = "peer"};
    snprintf(a->version, sizeof a->version, "%s", p->subject);
    const char *file = p->file ? p->file : lab_mimalloc3_path(a->why, sizeof a->why);
    void *lib = file ? shared_dlopen(file, p->package, a->why, sizeof a->why) : NULL;
    void *fn[6] = {&a->malloc, &a->free, &a->realloc, &a->calloc, &a->usable, &a->aligned};
    int ok = lib != NULL;
    for (int i = 0; ok && i < 6; i++) ok = shared_dlsym(lib, p->names[i], fn[i], a->why, sizeof a->why);
    if (!ok) {
        snprintf(a->preload_why, sizeof a->preload_why, "%s", a->why);
        return;
    }
    a->available = 1;
    snprintf(a->preload, sizeof a->preload, "%s", file);
    if (!p->version) {
        lab_mimalloc3_version(lib, a->version, sizeof a->version);
        return;
    }
    char v[48];
    p->version(lib, v, sizeof v);
    lab_version_line(a->version, sizeof a->version, p->name, v, p->package);
}

static void load_glibc(rp_alloc *a) {
    *a = (rp_alloc){.subject = "glibc malloc", .family = "peer", .available = 1, .malloc = malloc,
                    .free = free, .realloc = realloc, .calloc = calloc, .usable = malloc_usable_size,
                    .aligned = aligned_alloc};
    const char *deb = lab_deb_version("libc6");
    snprintf(a->version, sizeof a->version, "glibc %s%s%s%s", gnu_get_libc_version(),
             *deb ? " (Debian " : "", deb, *deb ? ")" : "");
}

static void load_poolkit(rp_alloc *a) {
    *a = (rp_alloc){.subject = "poolkit pk_alloc", .family = "poolkit", .available = 1,
                    .malloc = pk_alloc, .free = pk_free, .realloc = pk_realloc, .calloc = pk_calloc,
                    .usable = pk_usable, .aligned = pk_aligned_alloc};
    snprintf(a->version, sizeof a->version, "%s", lab_poolkit_version());
#ifdef LAB_MALLOC_LIB
    if (access(LAB_MALLOC_LIB, R_OK) == 0)
        snprintf(a->preload, sizeof a->preload, "%s", LAB_MALLOC_LIB);
    else
        snprintf(a->preload_why, sizeof a->preload_why,
                 "%s not built (cmake --build BUILD --target poolkit_malloc)", LAB_MALLOC_LIB);
#else
    snprintf(a->preload_why, sizeof a->preload_why, "this build has no libpoolkit-malloc.so");
#endif
}

rp_alloc *rp_allocs(void) {
    static rp_alloc t[RP_NALLOC];
    static int loaded;
    if (loaded) return t;
    loaded = 1;
    load_glibc(&t[RP_GLIBC]);
    for (int k = RP_MI; k <= RP_TC; k++) load_peer(&t[k], k);
    load_poolkit(&t[RP_PK]);
    return t;
}

void rp_peak_begin(rp_peak *p) {
    p->reset = -1;
    int cr = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (cr >= 0) {
        p->reset = write(cr, "5", 1) == 1 ? 0 : -1;
        close(cr);
    }
    p->start = (double)shared_status_bytes("VmRSS");
}

double rp_peak_kib(const rp_peak *p) {
    double hwm = (double)shared_status_bytes("VmHWM");
    return p->reset != 0 ? NAN : hwm > p->start ? (hwm - p->start) / 1024.0 : 0.0;
}

const rp_alloc *rp_alloc_for_child(const char *arg) {
    char *end;
    long k = strtol(arg, &end, 10);
    if (*end || k < 0 || k >= RP_NALLOC) return NULL;
    const rp_alloc *a = &rp_allocs()[k];
    if (!a->available) return NULL;
    a->free(a->malloc(16));
    return a;
}
