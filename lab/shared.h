/* The measuring toolbox under the lab and bench/ (through lab.h): the
 * fixed-seed random source (splitmix64; PROTOCOL.md fixes it and the seed
 * 0x5eed, so a random order is the same order in `make bench` and in
 * `pk-lab`), the random permutation built from it, the machine's CPU name,
 * the child-process runner every memory figure comes from, the loading of
 * peer allocators, and time, repetitions and their statistics. Header-only,
 * so that code compiled without linking the lab (bench_hotloop_shared) has
 * it too. */
#ifndef PK_LAB_SHARED_H
#define PK_LAB_SHARED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <time.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <malloc.h>
#include <poolkit/pool.h>

typedef struct shared_rng {
    uint64_t state;
} shared_rng;

static inline uint64_t shared_rng_next(shared_rng *r) {
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double shared_rng_unit(shared_rng *r) {
    return (double)(shared_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform in [0, n), n > 0. */
static inline size_t shared_rng_below(shared_rng *r, size_t n) {
    return (size_t)(((shared_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* A random permutation of 0..n-1 from seed (Fisher-Yates). */
static inline void shared_permutation(uint32_t *order, long n, uint64_t seed) {
    shared_rng r = {seed};
    for (long i = 0; i < n; i++) order[i] = (uint32_t)i;
    for (long i = n - 1; i > 0; i--) {
        long j = (long)(shared_rng_next(&r) % (uint64_t)(i + 1));
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* The CPU's model name from /proc/cpuinfo, or "unknown CPU". */
static inline void shared_cpu_model(char *out, size_t len) {
    snprintf(out, len, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ' || *c == '\t') c++;
                c[strcspn(c, "\n")] = 0;
                snprintf(out, len, "%s", c);
            }
            break;
        }
    }
    fclose(f);
}

/* A "Vm...:" field of /proc/self/status (VmHWM, VmRSS), in bytes. */
static inline size_t shared_status_bytes(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    size_t n = strlen(field), kib = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            kib = (size_t)strtoull(line + n + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kib * 1024;
}

/* ---- time, repetitions and their statistics ---- */

/* Keeps p (and what it points to) alive to the compiler: the work that
 * produced it cannot be dropped. */
#define SHARED_ESCAPE(p) __asm__ __volatile__("" : : "r"(p) : "memory")

static inline double shared_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The repetitions of one measurement (at most SHARED_MAX_REPS kept). */
#define SHARED_MAX_REPS 64
typedef struct shared_series {
    double v[SHARED_MAX_REPS];
    int n;
} shared_series;

static inline void shared_series_add(shared_series *s, double x) {
    if (s->n < SHARED_MAX_REPS) s->v[s->n++] = x;
}

static inline int shared__cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median, least and most of the repetitions; NaN for none. */
static inline double shared_median(const shared_series *s) {
    if (s->n == 0) return NAN;
    double t[SHARED_MAX_REPS];
    memcpy(t, s->v, sizeof(double) * (size_t)s->n);
    qsort(t, (size_t)s->n, sizeof(double), shared__cmp_double);
    return s->n % 2 ? t[s->n / 2] : (t[s->n / 2 - 1] + t[s->n / 2]) / 2.0;
}

static inline double shared_min(const shared_series *s) {
    double m = s->n ? s->v[0] : NAN;
    for (int i = 1; i < s->n; i++)
        if (s->v[i] < m) m = s->v[i];
    return m;
}

static inline double shared_max(const shared_series *s) {
    double m = s->n ? s->v[0] : NAN;
    for (int i = 1; i < s->n; i++)
        if (s->v[i] > m) m = s->v[i];
    return m;
}

/* ---- running a contender in a child process ----
 *
 * fn runs in a forked child, so each measurement starts from a fresh heap
 * and its memory is its own; it fills out[0..n-1] (n <= SHARED_CHILD_MAX)
 * and the child adds its peak RSS growth in bytes as out[n] (VmHWM at the
 * end minus VmRSS at the start: the kernel starts the high-water mark
 * afresh at fork; shared_give_back_free first). Returns 0, or -1 if the child failed (out[] all zero). */
#define SHARED_CHILD_MAX 64

/* In a forked child: gives back what poolkit and the C library's malloc
 * hold free, then sets the kernel's high-water mark to the resident size
 * now (/proc/self/clear_refs 5; it starts at the fork's size, which the
 * give-back went under). False, nothing given back, where the mark cannot
 * be reset (the growth is then counted from the fork, as before). */
static inline int shared_give_back_free(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return 0;
#if !defined(PK_POOL_ABI) || PK_POOL_ABI >= 7 /* bench/refs.sh compiles these headers against earlier releases', which lack it */
    pk_collect(1);
#endif
    malloc_trim(0);
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}
typedef void (*shared_child_fn)(void *arg, double *out);

static inline int shared_in_child(shared_child_fn fn, void *arg, double *out, int n) {
    int fd[2];
    size_t want = sizeof(double) * (size_t)(n + 1), got = 0;
    memset(out, 0, want);
    if (n < 0 || n > SHARED_CHILD_MAX) return -1;
    fflush(stdout);
    fflush(stderr);
    if (pipe(fd) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        double res[SHARED_CHILD_MAX + 1];
        memset(res, 0, sizeof res);
        /* What the parent left free in poolkit's caches and in the C
         * library's malloc is resident in this copy, and reused it would
         * not count as growth (a pk-lab whose pools kept the memory of its
         * earlier experiments showed the steady state's poolkit rows at
         * 0.8 MiB where they grow 8): given back first, so that those rows
         * count their own. Allocators loaded at run time keep theirs. */
        size_t start = shared_status_bytes("VmRSS");
        if (shared_give_back_free()) start = shared_status_bytes("VmRSS");
        fn(arg, res);
        size_t hwm = shared_status_bytes("VmHWM");
        res[n] = hwm > start ? (double)(hwm - start) : 0.0;
        ssize_t w = write(fd[1], res, want);
        fflush(stdout);
        _exit(w == (ssize_t)want ? 0 : 1);
    }
    close(fd[1]);
    while (got < want) {
        ssize_t r = read(fd[0], (char *)out + got, want - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (got != want || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        memset(out, 0, want);
        return -1;
    }
    return 0;
}

/* ---- peer allocators loaded at run time ----
 *
 * dlopen(RTLD_NOW | RTLD_LOCAL), so a peer never replaces the process's
 * malloc and needs no header or link-time dependency: the lab's peer_*.c
 * load mimalloc, jemalloc and tcmalloc with these, bench_arenas APR. */

/* Opens file; on failure writes "FILE not loadable (install PACKAGE):
 * dlerror" into why and returns NULL. */
static inline void *shared_dlopen(const char *file, const char *package, char *why, size_t len) {
    void *lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *err = dlerror();
        snprintf(why, len, "%s not loadable (install %s): %s", file, package, err ? err : "dlopen failed");
    }
    return lib;
}

/* Looks name up into *fnptr (a pointer to a function pointer); on failure
 * writes dlerror into why (when not NULL) and returns 0. */
static inline int shared_dlsym_(void *lib, const char *name, void *fnptr, char *why, size_t len) {
    dlerror();
    void *s = dlsym(lib, name);
    if (!s) {
        if (why) {
            const char *err = dlerror();
            snprintf(why, len, "%s: %s", name, err ? err : "symbol not found");
        }
        return 0;
    }
    memcpy(fnptr, &s, sizeof s); /* object pointer to function pointer */
    return 1;
}
#define shared_dlsym(lib, name, fnptr, why, len) shared_dlsym_((lib), (name), (void *)(fnptr), (why), (len))

/* " 2.0.9" (a space, then the version) into out, or "" when the library
 * does not say: from mi_version, mallctl("version") and tc_version. */
static inline void shared_mimalloc_version(void *lib, char *out, size_t len) {
    int (*ver)(void) = NULL;
    out[0] = 0;
    if (shared_dlsym(lib, "mi_version", &ver, NULL, 0)) {
        int n = ver();
        if (n >= 10000) /* mimalloc 3: major*10000 + minor*100 + patch (30403) */
            snprintf(out, len, " %d.%d.%d", n / 10000, (n / 100) % 100, n % 100);
        else /* mimalloc 1 and 2: major*100 + minor*10 + patch (209) */
            snprintf(out, len, " %d.%d.%d", n / 100, (n / 10) % 10, n % 10);
    }
}

static inline void shared_jemalloc_version(void *lib, char *out, size_t len) {
    int (*ctl)(const char *, void *, size_t *, void *, size_t) = NULL;
    const char *v = NULL;
    size_t vlen = sizeof v;
    out[0] = 0;
    if (shared_dlsym(lib, "mallctl", &ctl, NULL, 0) && ctl("version", &v, &vlen, NULL, 0) == 0 && v) {
        snprintf(out, len, " %s", v);
        out[strcspn(out, "-")] = 0; /* "5.3.0-0-g54eaed1d..." */
    }
}

static inline void shared_tcmalloc_version(void *lib, char *out, size_t len) {
    const char *(*ver)(int *, int *, const char **) = NULL;
    out[0] = 0;
    if (shared_dlsym(lib, "tc_version", &ver, NULL, 0)) {
        int major = 0, minor = 0;
        const char *patch = "";
        ver(&major, &minor, &patch);
        snprintf(out, len, " %d.%d%s", major, minor, patch ? patch : "");
    }
}

/* jemalloc's library uses the initial-exec TLS model, which dlopen can only
 * satisfy from glibc's small surplus of static TLS ("cannot allocate memory
 * in static TLS block"). A program that loads it re-executes itself once,
 * first thing in main, with a larger surplus (a glibc tunable); nothing
 * else changes. */
#define SHARED_TLS_TUNABLE "glibc.rtld.optional_static_tls=65536"
static inline void shared_reexec_for_tls(char **argv) {
    const char *old = getenv("GLIBC_TUNABLES");
    if (old && strstr(old, "optional_static_tls")) return;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s%s%s", old ? old : "", old && *old ? ":" : "", SHARED_TLS_TUNABLE);
    setenv("GLIBC_TUNABLES", buf, 1);
    execv("/proc/self/exe", argv); /* returns only on failure: go on without */
}

#endif
