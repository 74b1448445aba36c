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

static inline void *bench__sym(void *lib, const char *name, char *why, size_t len) {
    void *s = dlsym(lib, name);
    if (!s) snprintf(why, len, "%s", dlerror());
    return s;
}

static inline void *bench__open(const char *file, char *why, size_t len) {
    void *lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!lib) snprintf(why, len, "%s", dlerror());
    return lib;
}

/* jemalloc's library uses the initial-exec TLS model, which dlopen can only
 * satisfy from glibc's small surplus of static TLS ("cannot allocate memory
 * in static TLS block"). The program re-executes itself once with a larger
 * surplus (the glibc tunable glibc.rtld.optional_static_tls); nothing else
 * changes. Call first thing in main. */
#define BENCH_TLS_TUNABLE "glibc.rtld.optional_static_tls=65536"
static inline void bench_peers_reexec(char **argv) {
    const char *old = getenv("GLIBC_TUNABLES");
    if (old && strstr(old, "optional_static_tls")) return;
    char buf[1024];
    if (old && *old)
        snprintf(buf, sizeof buf, "%s:%s", old, BENCH_TLS_TUNABLE);
    else
        snprintf(buf, sizeof buf, "%s", BENCH_TLS_TUNABLE);
    setenv("GLIBC_TUNABLES", buf, 1);
    execv("/proc/self/exe", argv); /* returns only on failure: go on without */
}

/* Loads every peer it can into *p. */
static inline void bench_peers_load(bench_peers *p) {
    memset(p, 0, sizeof *p);
    void *s, *t;

    snprintf(p->mi_name, sizeof p->mi_name, "mimalloc");
    void *mi = bench__open("libmimalloc.so.2", p->mi_why, sizeof p->mi_why);
    if (mi && (s = bench__sym(mi, "mi_malloc", p->mi_why, sizeof p->mi_why)) &&
        (t = bench__sym(mi, "mi_free", p->mi_why, sizeof p->mi_why))) {
        memcpy(&p->mi_malloc, &s, sizeof s);
        memcpy(&p->mi_free, &t, sizeof t);
        int (*ver)(void) = NULL;
        if ((s = dlsym(mi, "mi_version"))) {
            memcpy(&ver, &s, sizeof s);
            int v = ver(); /* major*100 + minor*10 + patch, e.g. 209 */
            snprintf(p->mi_name, sizeof p->mi_name, "mimalloc %d.%d.%d", v / 100,
                     (v / 10) % 10, v % 10);
        }
    }

    snprintf(p->je_name, sizeof p->je_name, "jemalloc");
    void *je = bench__open("libjemalloc.so.2", p->je_why, sizeof p->je_why);
    if (je && (s = bench__sym(je, "mallocx", p->je_why, sizeof p->je_why)) &&
        (t = bench__sym(je, "dallocx", p->je_why, sizeof p->je_why))) {
        memcpy(&p->mallocx, &s, sizeof s);
        memcpy(&p->dallocx, &t, sizeof t);
        int (*ctl)(const char *, void *, size_t *, void *, size_t) = NULL;
        if ((s = dlsym(je, "mallctl"))) {
            memcpy(&ctl, &s, sizeof s);
            const char *v = NULL;
            size_t len = sizeof v;
            if (ctl("version", &v, &len, NULL, 0) == 0 && v) {
                char ver[32];
                snprintf(ver, sizeof ver, "%s", v);
                ver[strcspn(ver, "-")] = 0; /* "5.3.0-0-g54eaed1d..." */
                snprintf(p->je_name, sizeof p->je_name, "jemalloc %s", ver);
            }
        }
    }

    snprintf(p->tc_name, sizeof p->tc_name, "tcmalloc");
    void *tc = bench__open("libtcmalloc_minimal.so.4", p->tc_why, sizeof p->tc_why);
    if (tc && (s = bench__sym(tc, "tc_malloc", p->tc_why, sizeof p->tc_why)) &&
        (t = bench__sym(tc, "tc_free", p->tc_why, sizeof p->tc_why))) {
        memcpy(&p->tc_malloc, &s, sizeof s);
        memcpy(&p->tc_free, &t, sizeof t);
        const char *(*ver)(int *, int *, const char **) = NULL;
        if ((s = dlsym(tc, "tc_version"))) {
            memcpy(&ver, &s, sizeof s);
            int major = 0, minor = 0;
            const char *patch = "";
            ver(&major, &minor, &patch);
            snprintf(p->tc_name, sizeof p->tc_name, "tcmalloc %d.%d%s", major, minor,
                     patch ? patch : "");
        }
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
    void *lib = bench__open("libapr-1.so.0", a->why, sizeof a->why);
    void *s[4] = {NULL, NULL, NULL, NULL}, *init, *ver;
    if (!lib || !(init = bench__sym(lib, "apr_initialize", a->why, sizeof a->why)) ||
        !(s[0] = bench__sym(lib, "apr_pool_create_ex", a->why, sizeof a->why)) ||
        !(s[1] = bench__sym(lib, "apr_palloc", a->why, sizeof a->why)) ||
        !(s[2] = bench__sym(lib, "apr_pool_clear", a->why, sizeof a->why)) ||
        !(s[3] = bench__sym(lib, "apr_pool_destroy", a->why, sizeof a->why))) {
        if (!a->why[0]) snprintf(a->why, sizeof a->why, "libapr-1.so.0 (apt-get install libapr1)");
        return;
    }
    int (*initialize)(void);
    memcpy(&initialize, &init, sizeof init);
    if (initialize() != 0) {
        snprintf(a->why, sizeof a->why, "apr_initialize failed");
        return;
    }
    memcpy(&a->pool_create_ex, &s[0], sizeof s[0]);
    memcpy(&a->palloc, &s[1], sizeof s[1]);
    memcpy(&a->pool_clear, &s[2], sizeof s[2]);
    memcpy(&a->pool_destroy, &s[3], sizeof s[3]);
    if ((ver = dlsym(lib, "apr_version_string"))) {
        const char *(*version)(void);
        memcpy(&version, &ver, sizeof ver);
        snprintf(a->name, sizeof a->name, "APR %s", version());
    }
}

#endif
