/* Peer allocators for the benchmarks, loaded at run time from their Debian
 * libraries with dlopen(RTLD_NOW | RTLD_LOCAL), so they never replace the
 * process's malloc and no header or link-time dependency is needed. A peer
 * whose library does not load is reported as "not available" with dlerror's
 * reason, and the run goes on.
 *
 *   mimalloc: libmimalloc.so.2          mi_malloc / mi_free
 *   jemalloc: libjemalloc.so.2          mallocx / dallocx (flags 0)
 *   tcmalloc: libtcmalloc_minimal.so.4  tc_malloc / tc_free
 *   APR pools: libapr-1.so.0            apr_pool_create_ex / apr_palloc /
 *                                       apr_pool_destroy (bench_apr_load, apart:
 *                                       only the programs that compare pools load it)
 *
 * Install them with: apt-get install libmimalloc2.0 libjemalloc2 libtcmalloc-minimal4 libapr1
 * Include harness.h first. */
#ifndef POOLKIT_BENCH_PEERS_H
#define POOLKIT_BENCH_PEERS_H

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct bench_peers {
    void *(*mi_malloc)(size_t);
    void (*mi_free)(void *);
    void *(*mallocx)(size_t, int);
    void (*dallocx)(void *, int);
    void *(*tc_malloc)(size_t);
    void (*tc_free)(void *);
    char mi_name[64], je_name[64], tc_name[64]; /* "mimalloc 2.0.9" */
    char mi_why[160], je_why[160], tc_why[160]; /* why not available, or "" */
} bench_peers;

/* The re-execution jemalloc needs under dlopen: lab/shared.h. Call first
 * thing in main. */
#define BENCH_TLS_TUNABLE SHARED_TLS_TUNABLE
#define bench_peers_reexec shared_reexec_for_tls

/* Loads every peer it can into *p (shared_dlopen and the version readers
 * of lab/shared.h, which the lab's adapters use too). */
static inline void bench_peers_load(bench_peers *p) {
    char v[48];
    memset(p, 0, sizeof *p);
    snprintf(p->mi_name, sizeof p->mi_name, "mimalloc");
    void *mi = shared_dlopen("libmimalloc.so.2", "libmimalloc2.0", p->mi_why, sizeof p->mi_why);
    if (mi && shared_dlsym(mi, "mi_malloc", &p->mi_malloc, p->mi_why, sizeof p->mi_why) &&
        shared_dlsym(mi, "mi_free", &p->mi_free, p->mi_why, sizeof p->mi_why)) {
        shared_mimalloc_version(mi, v, sizeof v);
        snprintf(p->mi_name, sizeof p->mi_name, "mimalloc%s", v);
    } else {
        p->mi_malloc = NULL;
    }

    snprintf(p->je_name, sizeof p->je_name, "jemalloc");
    void *je = shared_dlopen("libjemalloc.so.2", "libjemalloc2", p->je_why, sizeof p->je_why);
    if (je && shared_dlsym(je, "mallocx", &p->mallocx, p->je_why, sizeof p->je_why) &&
        shared_dlsym(je, "dallocx", &p->dallocx, p->je_why, sizeof p->je_why)) {
        shared_jemalloc_version(je, v, sizeof v);
        snprintf(p->je_name, sizeof p->je_name, "jemalloc%s", v);
    } else {
        p->mallocx = NULL;
    }

    snprintf(p->tc_name, sizeof p->tc_name, "tcmalloc");
    void *tc = shared_dlopen("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", p->tc_why, sizeof p->tc_why);
    if (tc && shared_dlsym(tc, "tc_malloc", &p->tc_malloc, p->tc_why, sizeof p->tc_why) &&
        shared_dlsym(tc, "tc_free", &p->tc_free, p->tc_why, sizeof p->tc_why)) {
        shared_tcmalloc_version(tc, v, sizeof v);
        snprintf(p->tc_name, sizeof p->tc_name, "tcmalloc%s", v);
    } else {
        p->tc_malloc = NULL;
    }
}

/* ---- APR pools (libapr-1.so.0) ---- */

typedef struct bench_apr {
    /* apr_status_t is an int; pools and allocators are opaque. */
    int (*pool_create_ex)(void **newpool, void *parent, int (*abort_fn)(int), void *allocator);
    void *(*palloc)(void *pool, size_t size);
    void (*pool_clear)(void *pool);
    void (*pool_destroy)(void *pool);
    char name[64]; /* "APR 1.7.2" */
    char why[160]; /* why not available, or "" */
} bench_apr;

/* Loads APR and calls apr_initialize; on failure a->pool_create_ex is NULL
 * and a->why says why. */
static inline void bench_apr_load(bench_apr *a) {
    memset(a, 0, sizeof *a);
    snprintf(a->name, sizeof a->name, "APR");
    void *lib = shared_dlopen("libapr-1.so.0", "libapr1", a->why, sizeof a->why);
    int (*initialize)(void) = NULL;
    const char *(*version)(void) = NULL;
    if (!lib || !shared_dlsym(lib, "apr_initialize", &initialize, a->why, sizeof a->why) ||
        !shared_dlsym(lib, "apr_pool_create_ex", &a->pool_create_ex, a->why, sizeof a->why) ||
        !shared_dlsym(lib, "apr_palloc", &a->palloc, a->why, sizeof a->why) ||
        !shared_dlsym(lib, "apr_pool_clear", &a->pool_clear, a->why, sizeof a->why) ||
        !shared_dlsym(lib, "apr_pool_destroy", &a->pool_destroy, a->why, sizeof a->why)) {
        a->pool_create_ex = NULL;
        return;
    }
    if (initialize() != 0) {
        snprintf(a->why, sizeof a->why, "apr_initialize failed");
        a->pool_create_ex = NULL;
        return;
    }
    if (shared_dlsym(lib, "apr_version_string", &version, NULL, 0))
        snprintf(a->name, sizeof a->name, "APR %s", version());
}

#endif
