/* The size classes of the front end (poolkit/alloc.h), measured: the
 * requests of real workloads (the lab's realprog hook workloads: SQLite,
 * libxml2, jansson, expat, at the lab's default size) recorded through
 * their allocator hooks, then replayed against several class spacings.
 * For each spacing:
 *   waste     bytes rounded away at the moment the live set peaks, over the
 *             live bytes then (internal fragmentation);
 *   classes   classes the workload touched;
 *   pages     one partly used page per touched class (the pools hand out
 *             memory a page at a time, per class), over the peak live
 *             bytes: the cost of spreading a program over more classes,
 *             the other side of reuse (objects of neighbouring sizes that
 *             share a class reuse each other's freed slots);
 *   total     waste + pages: what the spacing costs at the peak.
 * The spacings: the front end's (16-byte steps to 128, then four classes
 * per doubling), mimalloc's and jemalloc's shapes, finer and coarser ones.
 *
 * Usage: bench_classes [--quick]
 */
#include "harness.h"
#include "realprog.h"

#include <poolkit/alloc.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the trace: every request's size, +n for an allocation, -n for a free ---- */

static long *events;
static size_t nevents, capevents;

static void note(long v) {
    if (nevents == capevents) {
        capevents = capevents ? capevents * 2 : 1 << 20;
        events = realloc(events, capevents * sizeof *events);
        if (!events) abort();
    }
    events[nevents++] = v;
}

#define HDR 16
static void *t_malloc(size_t n) {
    char *p = malloc(n + HDR);
    if (!p) return NULL;
    *(size_t *)p = n;
    note((long)n);
    return p + HDR;
}
static void t_free(void *q) {
    if (!q) return;
    char *p = (char *)q - HDR;
    note(-(long)*(size_t *)p);
    free(p);
}
static void *t_realloc(void *q, size_t n) {
    if (!q) return t_malloc(n);
    char *p = (char *)q - HDR;
    note(-(long)*(size_t *)p);
    p = realloc(p, n + HDR);
    if (!p) abort();
    *(size_t *)p = n;
    note((long)n);
    return p + HDR;
}
static void *t_calloc(size_t k, size_t n) {
    void *p = t_malloc(k * n);
    if (p) memset(p, 0, k * n);
    return p;
}
static size_t t_usable(void *q) { return *(size_t *)((char *)q - HDR); }

/* ---- spacings ---- */

typedef struct spacing {
    const char *name;
    size_t step, step_to; /* classes every step bytes up to step_to (the first at step) */
    int per_doubling;     /* then this many per power of two */
    int eight;            /* an 8-byte class below the steps */
} spacing;

static const spacing spacings[] = {
    {"poolkit: 8, 16..128 by 16, 4 per doubling", 16, 128, 4, 1},
    {"jemalloc: 8, 16..128 by 16, 4 per doubling (the same)", 16, 128, 4, 1},
    {"mimalloc: 8..64 by 8, 4 per doubling (8-aligned)", 8, 64, 4, 0},
    {"16..512 by 16, 4 per doubling", 16, 512, 4, 1},
    {"16..128 by 16, 8 per doubling", 16, 128, 8, 1},
    {"16..128 by 16, 2 per doubling", 16, 128, 2, 1},
    {"powers of two from 16", 16, 16, 1, 1},
};
#define NSPACINGS (sizeof spacings / sizeof spacings[0])

static size_t class_of(const spacing *s, size_t n) {
    if (n <= 8 && s->eight) return 8;
    if (n <= s->step_to) return n <= s->step ? s->step : (n + s->step - 1) / s->step * s->step;
    size_t b = s->step_to;
    while (b * 2 < n) b *= 2;
    size_t q = b / (size_t)s->per_doubling;
    return (n + q - 1) / q * q;
}

typedef struct replay {
    double waste, pages, classes;
} replay;

static replay replay_with(const spacing *s) {
    size_t live = 0, rounded = 0, peak = 0, peak_rounded = 0;
    char *seen = calloc(1 << 22, 1); /* classes touched, by size / 8 (sizes here stay far below 32 MiB) */
    size_t touched = 0;
    for (size_t i = 0; i < nevents; i++) {
        long v = events[i];
        size_t n = (size_t)labs(v), c = n > PK_ALLOC_CLASS_MAX ? (n + 4095) / 4096 * 4096 : class_of(s, n ? n : 1);
        if (v >= 0) {
            live += n;
            rounded += c;
            if (c <= PK_ALLOC_CLASS_MAX && c / 8 < (1u << 22) && !seen[c / 8]) seen[c / 8] = 1, touched++;
            if (live > peak) peak = live, peak_rounded = rounded;
        } else {
            live -= n;
            rounded -= c;
        }
    }
    free(seen);
    replay r;
    r.waste = peak ? (double)(peak_rounded - peak) / (double)peak : 0;
    r.pages = peak ? (double)touched * 4096.0 / (double)peak : 0;
    r.classes = (double)touched;
    return r;
}

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 1);
    double scale = o.quick ? 0.03 : 0.15;
    bench_header("size classes: waste against reuse, on the requests of realprog's hook workloads", &o);
    static const rp_hook_workload *const w[] = {&rp_sqlite, &rp_libxml2, &rp_jansson, &rp_expat};
    rp_alloc tracer = {.subject = "trace", .family = "peer", .available = 1, .malloc = t_malloc, .free = t_free,
                       .realloc = t_realloc, .calloc = t_calloc, .usable = t_usable};
    printf("(a replay of recorded requests is exact: one run, no repetitions)\n");
    printf("scale %.2f of realprog's full sizes (the lab's default is 0.15); per spacing: waste / pages "
           "(one per class touched) / total, as %% of the peak live bytes; classes touched\n\n", scale);
    printf("  %-52s", "spacing \\ workload");
    for (size_t k = 0; k < 4; k++) printf(" %21s", w[k]->name);
    printf(" %12s\n", "mean total");
    replay r[NSPACINGS][4];
    int have[4] = {0};
    for (size_t k = 0; k < 4; k++) {
        if (w[k]->why) continue;
        nevents = 0;
        if (w[k]->input) w[k]->input(scale);
        double ns;
        /* in a child: the libraries take their allocator once per process */
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            w[k]->run(&tracer, scale, &ns);
            /* hand the trace back through a file */
            char path[64];
            snprintf(path, sizeof path, "/tmp/bench_classes.%d.%zu", (int)getppid(), k);
            FILE *out = fopen(path, "wb");
            if (!out || fwrite(events, sizeof *events, nevents, out) != nevents) _exit(1);
            fclose(out);
            _exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        char path[64];
        snprintf(path, sizeof path, "/tmp/bench_classes.%d.%zu", (int)getpid(), k);
        FILE *in = fopen(path, "rb");
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !in) continue;
        fseek(in, 0, SEEK_END);
        nevents = (size_t)ftell(in) / sizeof *events;
        rewind(in);
        capevents = nevents + 1;
        events = realloc(events, capevents * sizeof *events);
        if (fread(events, sizeof *events, nevents, in) != nevents) nevents = 0;
        fclose(in);
        remove(path);
        for (size_t s = 0; s < NSPACINGS; s++) r[s][k] = replay_with(&spacings[s]);
        have[k] = 1;
    }
    for (size_t s = 0; s < NSPACINGS; s++) {
        printf("  %-52s", spacings[s].name);
        double sum = 0;
        int n = 0;
        for (size_t k = 0; k < 4; k++) {
            if (!have[k]) {
                printf(" %21s", "n/a");
                continue;
            }
            char cell[40];
            snprintf(cell, sizeof cell, "%.1f/%.1f/%.1f%% %2.0f", 100 * r[s][k].waste, 100 * r[s][k].pages,
                     100 * (r[s][k].waste + r[s][k].pages), r[s][k].classes);
            printf(" %21s", cell);
            sum += r[s][k].waste + r[s][k].pages;
            n++;
        }
        printf(" %11.1f%%\n", n ? 100 * sum / n : NAN);
    }
    return 0;
}
