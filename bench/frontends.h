/* Malloc-shaped contenders for the programs that measure whole-program
 * shapes through malloc, free and realloc (bench_mstress, bench_larson),
 * from the lab's table (realprog.h's rp_allocs), whose loops they run: the
 * C library's malloc, mimalloc (Debian's libmimalloc2.0, loaded at run
 * time), poolkit's front end (pk_alloc, pk_free, pk_realloc) and mimalloc
 * 3 (the lab's, from PyPI: scripts/lab-setup.sh; last, so that the others
 * keep their numbers on the command lines that name one). Neither mimalloc
 * is the better everywhere: a target compares with the better of the two
 * in each repetition (frontends_best). */
#ifndef POOLKIT_BENCH_FRONTENDS_H
#define POOLKIT_BENCH_FRONTENDS_H

#include "harness.h"
#include "realprog.h"

typedef struct frontend {
    const rp_alloc *a;
    const char *label;
    char why[300]; /* non-empty: not available */
} frontend;

enum { FE_GLIBC, FE_MI, FE_POOLKIT, FE_MI3, FE_COUNT };

static inline void frontends_load(frontend *fe, int skip_peers) {
    static const int table[FE_COUNT] = {RP_GLIBC, RP_MI, RP_PK, RP_MI3};
    for (int i = 0; i < FE_COUNT; i++) {
        fe[i].a = &rp_allocs()[table[i]];
        fe[i].label = fe[i].a->subject;
        snprintf(fe[i].why, sizeof fe[i].why, "%s", fe[i].a->available ? "" : fe[i].a->why);
    }
    if (skip_peers) {
        snprintf(fe[FE_MI].why, sizeof fe[FE_MI].why, "skipped (--no-peers)");
        snprintf(fe[FE_MI3].why, sizeof fe[FE_MI3].why, "skipped (--no-peers)");
    }
}

/* Of the two mimallocs, the one with the lower value[f] (a time, or a
 * peak) among those that ran (value > 0): FE_MI, FE_MI3, or -1. */
static inline int frontends_best(const frontend *fe, const double *value) {
    int best = -1;
    const int mi[2] = {FE_MI, FE_MI3};
    for (int i = 0; i < 2; i++)
        if (!fe[mi[i]].why[0] && value[mi[i]] > 0 && (best < 0 || value[mi[i]] < value[best])) best = mi[i];
    return best;
}

/* frontends_best over medians: series[f * stride] is frontend f's (none
 * recorded counts as not run). */
static inline int frontends_best_median(const frontend *fe, const bench_series *series, size_t stride) {
    double med[FE_COUNT] = {0};
    for (int f = 0; f < FE_COUNT; f++) med[f] = series[f * stride].n ? bench_median(&series[f * stride]) : 0;
    return frontends_best(fe, med);
}

#endif
