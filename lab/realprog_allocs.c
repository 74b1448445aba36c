/* realprog's allocators (realprog.h): each one's malloc, free, realloc,
 * calloc and malloc_usable_size for the libraries' hooks, and the library
 * that LD_PRELOAD names for the programs. The peers are loaded at run time
 * as the lab's adapters load them (their versions come from there);
 * poolkit's front end is linked, and its preload library is the
 * libpoolkit-malloc.so of this build (LAB_MALLOC_LIB). */
#include "lab.h"
#include "realprog.h"

#include <poolkit/alloc.h>

#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t pk_usable(void *p) { return pk_usable_size(p); }

/* The peer's functions from its library (what dlopen gives the lab's
 * adapter); names[] in the order malloc, free, realloc, calloc, usable. */
static void load_peer(rp_alloc *a, const char *file, const char *package, const char *const names[5]) {
    lab_allocator *la = lab_allocator_named(a->subject);
    if (la) snprintf(a->version, sizeof a->version, "%s", la->version);
    void *lib = shared_dlopen(file, package, a->why, sizeof a->why);
    if (!lib || !shared_dlsym(lib, names[0], &a->malloc, a->why, sizeof a->why) ||
        !shared_dlsym(lib, names[1], &a->free, a->why, sizeof a->why) ||
        !shared_dlsym(lib, names[2], &a->realloc, a->why, sizeof a->why) ||
        !shared_dlsym(lib, names[3], &a->calloc, a->why, sizeof a->why) ||
        !shared_dlsym(lib, names[4], &a->usable, a->why, sizeof a->why)) {
        snprintf(a->preload_why, sizeof a->preload_why, "%s", a->why);
        return;
    }
    a->available = 1;
    snprintf(a->preload, sizeof a->preload, "%s", file); /* the dynamic loader finds it by name */
}

rp_alloc *rp_allocs(void) {
    static rp_alloc t[RP_NALLOC];
    static int loaded;
    if (loaded) return t;
    loaded = 1;
    t[0] = (rp_alloc){.subject = "glibc malloc", .family = "peer", .available = 1, .malloc = malloc,
                      .free = free, .realloc = realloc, .calloc = calloc, .usable = malloc_usable_size};
    lab_allocator *g = lab_allocator_named("glibc malloc");
    if (g) snprintf(t[0].version, sizeof t[0].version, "%s", g->version);

    t[RP_MI] = (rp_alloc){.subject = LAB_MIMALLOC, .family = "peer"};
    static const char *const mi[5] = {"mi_malloc", "mi_free", "mi_realloc", "mi_calloc", "mi_usable_size"};
    load_peer(&t[RP_MI], "libmimalloc.so.2", "libmimalloc2.0", mi);

    /* PyPI's libmimalloc.so.3 preloads as is, by its path in .venv */
    t[RP_MI3] = (rp_alloc){.subject = LAB_MIMALLOC3, .family = "peer"};
    const char *mi3 = lab_mimalloc3_path(t[RP_MI3].why, sizeof t[RP_MI3].why);
    if (mi3) load_peer(&t[RP_MI3], mi3, "cmeel-mimalloc from PyPI: scripts/lab-setup.sh", mi);
    else snprintf(t[RP_MI3].preload_why, sizeof t[RP_MI3].preload_why, "%s", t[RP_MI3].why);

    t[3] = (rp_alloc){.subject = "jemalloc", .family = "peer"};
    static const char *const je[5] = {"malloc", "free", "realloc", "calloc", "malloc_usable_size"};
    load_peer(&t[3], "libjemalloc.so.2", "libjemalloc2", je);

    t[4] = (rp_alloc){.subject = "tcmalloc", .family = "peer"};
    static const char *const tc[5] = {"tc_malloc", "tc_free", "tc_realloc", "tc_calloc", "tc_malloc_size"};
    load_peer(&t[4], "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", tc);

    t[RP_PK] = (rp_alloc){.subject = "poolkit pk_alloc", .family = "poolkit", .available = 1,
                      .malloc = pk_alloc, .free = pk_free, .realloc = pk_realloc, .calloc = pk_calloc,
                      .usable = pk_usable};
    snprintf(t[RP_PK].version, sizeof t[RP_PK].version, "%s", lab_poolkit_version());
#ifdef LAB_MALLOC_LIB
    if (access(LAB_MALLOC_LIB, R_OK) == 0)
        snprintf(t[RP_PK].preload, sizeof t[RP_PK].preload, "%s", LAB_MALLOC_LIB);
    else
        snprintf(t[RP_PK].preload_why, sizeof t[RP_PK].preload_why,
                 "%s not built (cmake --build BUILD --target poolkit_malloc)", LAB_MALLOC_LIB);
#else
    snprintf(t[RP_PK].preload_why, sizeof t[RP_PK].preload_why, "this build has no libpoolkit-malloc.so");
#endif
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
