/* Malloc-shaped contenders for the programs that measure whole-program
 * shapes through malloc, free and realloc (bench_mstress, bench_larson),
 * from the lab's table (realprog.h's rp_allocs), whose loops they run: the
 * C library's malloc, mimalloc (Debian's libmimalloc2.0, loaded at run
 * time) and poolkit's front end (pk_alloc, pk_free, pk_realloc). */
#ifndef POOLKIT_BENCH_FRONTENDS_H
#define POOLKIT_BENCH_FRONTENDS_H

#include "harness.h"
#include "realprog.h"

typedef struct frontend {
    const rp_alloc *a;
    const char *label;
    char why[300]; /* non-empty: not available */
} frontend;

enum { FE_GLIBC, FE_MI, FE_POOLKIT, FE_COUNT };

static inline void frontends_load(frontend *fe, int skip_peers) {
    static const int table[FE_COUNT] = {RP_GLIBC, RP_MI, RP_PK};
    for (int i = 0; i < FE_COUNT; i++) {
        fe[i].a = &rp_allocs()[table[i]];
        fe[i].label = fe[i].a->subject;
        snprintf(fe[i].why, sizeof fe[i].why, "%s", fe[i].a->available ? "" : fe[i].a->why);
    }
    if (skip_peers) snprintf(fe[FE_MI].why, sizeof fe[FE_MI].why, "skipped (--no-peers)");
}

#endif
