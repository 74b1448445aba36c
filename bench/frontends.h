/* Malloc-shaped contenders for the programs that measure whole-program
 * shapes through malloc, free and realloc (bench_mstress, bench_larson):
 * the C library's malloc, mimalloc (Debian's libmimalloc2.0, loaded at run
 * time) and poolkit's front end (pk_alloc, pk_free, pk_realloc). */
#ifndef POOLKIT_BENCH_FRONTENDS_H
#define POOLKIT_BENCH_FRONTENDS_H

#include "harness.h"

#include <poolkit/alloc.h>

typedef struct frontend {
    const char *label;
    void *(*alloc)(size_t);
    void (*free)(void *);
    void *(*realloc)(void *, size_t);
    char why[300]; /* non-empty: not available */
} frontend;

enum { FE_GLIBC, FE_MI, FE_POOLKIT, FE_COUNT };

static inline void frontends_load(frontend *fe, int skip_peers) {
    fe[FE_GLIBC] = (frontend){"glibc malloc", malloc, free, realloc, ""};
    fe[FE_MI] = (frontend){"mimalloc", NULL, NULL, NULL, ""};
    fe[FE_POOLKIT] = (frontend){"poolkit pk_alloc", pk_alloc, pk_free, pk_realloc, ""};
    if (skip_peers) {
        snprintf(fe[FE_MI].why, sizeof fe[FE_MI].why, "skipped (--no-peers)");
        return;
    }
    void *lib = shared_dlopen("libmimalloc.so.2", "libmimalloc2.0", fe[FE_MI].why, sizeof fe[FE_MI].why);
    if (lib && (!shared_dlsym(lib, "mi_malloc", &fe[FE_MI].alloc, fe[FE_MI].why, sizeof fe[FE_MI].why) ||
                !shared_dlsym(lib, "mi_free", &fe[FE_MI].free, fe[FE_MI].why, sizeof fe[FE_MI].why) ||
                !shared_dlsym(lib, "mi_realloc", &fe[FE_MI].realloc, fe[FE_MI].why, sizeof fe[FE_MI].why)))
        lib = NULL;
    if (lib) fe[FE_MI].why[0] = 0;
    else if (!fe[FE_MI].why[0]) snprintf(fe[FE_MI].why, sizeof fe[FE_MI].why, "libmimalloc.so.2 not loaded");
}

#endif
