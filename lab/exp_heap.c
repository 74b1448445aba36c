/* heap: a request's worth of blocks, freed one by one or all at once
 * (heap.h; mimalloc's mi_heap_destroy, talloc's contexts, APR's pools).
 *
 * A request allocates BLOCKS blocks of sizes drawn from 16 B to 4 KiB
 * (uniform over the sizes), writes the first word of each, and frees about
 * a third of them on the way, each one a random block still live, right
 * after an allocation; at its end everything left goes. The sizes and the
 * frees are drawn once (a fixed seed), so every contender gets the same
 * requests. Contenders, each with its own way of ending a request:
 *   glibc malloc             malloc, free, and free of every block left
 *   poolkit pk_heap destroy  pk_heap_create, pk_heap_alloc, pk_heap_free,
 *                            pk_heap_destroy
 *   poolkit pk_heap reset    one heap; pk_heap_reset ends a request
 *   mimalloc 3 heap          mi_heap_new, mi_heap_malloc, mi_free,
 *                            mi_heap_destroy (PyPI's 3.4, dlopen'ed)
 *   talloc                   talloc_new(NULL), talloc_size, talloc_free of
 *                            a block, talloc_free of the context
 *   APR pools                one pool, apr_palloc; no free of one block
 *                            (APR has none), apr_pool_clear ends a request
 * A peer that did not load or was not built in has its row marked not
 * available. Reported: ns per request (the median of the repetitions,
 * contenders interleaved in each, their order rotated), and per repetition
 * the ratios of each pk_heap row to glibc's and to mimalloc 3's heap
 * measured in that same repetition (extras vs_malloc, vs_mi3_heap).
 *
 * Targets: pk_heap at most mimalloc 3's heap time, and at most 0.3x malloc
 * and free one by one (medians of the per-repetition ratios).
 */
#include "lab.h"

#include <poolkit/heap.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef LAB_HAVE_TALLOC
#  include <talloc.h>
#endif
#ifdef LAB_HAVE_APR
#  include <apr_general.h>
#  include <apr_pools.h>
#endif

#define EXP "heap"
#define BLOCKS 1000
#define MIN_SIZE 16
#define MAX_SIZE 4096
#define SEED 0x4ea9
#define NONE UINT32_MAX

/* The request, drawn once: the size of block i, and the block freed right
 * after block i's allocation (NONE: none). */
static size_t sizes[BLOCKS];
static uint32_t kill_after[BLOCKS];

static void draw_request(void) {
    static int drawn;
    if (drawn) return;
    drawn = 1;
    shared_rng r = {SEED};
    uint32_t live[BLOCKS];
    size_t nlive = 0;
    for (uint32_t i = 0; i < BLOCKS; i++) {
        sizes[i] = MIN_SIZE + shared_rng_below(&r, MAX_SIZE - MIN_SIZE + 1);
        live[nlive++] = i;
        kill_after[i] = NONE;
        if (nlive > 1 && shared_rng_below(&r, 3) == 0) { /* about a third */
            size_t k = shared_rng_below(&r, nlive - 1); /* not the block just made */
            kill_after[i] = live[k];
            live[k] = live[--nlive]; /* i, the last, takes its place */
        }
    }
}

static long requests(void) { return lab_pick(20, 200, 1000, 5000); }

/* The request loop, over one allocator's calls: CTX the request's
 * context, ALLOC and FREE its calls, blk room for the blocks (NULL where
 * freed). Each block's first word is written; an escape keeps the writes. */
#define REQUEST_LOOP(blk, CTX, ALLOC, FREE)                              \
    do {                                                                 \
        for (uint32_t i = 0; i < BLOCKS; i++) {                          \
            blk[i] = ALLOC(CTX, sizes[i]);                               \
            *(uint64_t *)blk[i] = i;                                     \
            if (kill_after[i] != NONE) {                                 \
                FREE(CTX, blk[kill_after[i]]);                           \
                blk[kill_after[i]] = NULL;                               \
            }                                                            \
        }                                                                \
        LAB_ESCAPE(blk);                                                 \
    } while (0)

/* ---- the contenders: n requests each, ns for all ---- */

#define M_ALLOC(c, sz) malloc(sz)
#define M_FREE(c, p) free(p)
static LAB_KERNEL double run_malloc(long n) {
    void *blk[BLOCKS];
    double t0 = lab_now_ns();
    for (long k = 0; k < n; k++) {
        REQUEST_LOOP(blk, NULL, M_ALLOC, M_FREE);
        for (uint32_t i = 0; i < BLOCKS; i++) free(blk[i]); /* NULL for the freed */
    }
    return lab_now_ns() - t0;
}

static LAB_KERNEL double run_pk_destroy(long n) {
    void *blk[BLOCKS];
    double t0 = lab_now_ns();
    for (long k = 0; k < n; k++) {
        pk_heap *h = pk_heap_create_ex("lab request", PK_HEAP_WHOLE);
        REQUEST_LOOP(blk, h, pk_heap_alloc, pk_heap_free);
        pk_heap_destroy(h);
    }
    return lab_now_ns() - t0;
}

static LAB_KERNEL double run_pk_reset(long n) {
    pk_heap *h = pk_heap_create_ex("lab request", PK_HEAP_WHOLE);
    void *blk[BLOCKS];
    double t0 = lab_now_ns();
    for (long k = 0; k < n; k++) {
        REQUEST_LOOP(blk, h, pk_heap_alloc, pk_heap_free);
        pk_heap_reset(h);
    }
    double t = lab_now_ns() - t0;
    pk_heap_destroy(h);
    return t;
}

static void *(*mi3_heap_new_p)(void);
static void *(*mi3_heap_malloc_p)(void *, size_t);
static void (*mi3_free_p)(void *);
static void (*mi3_heap_destroy_p)(void *);
#define MI_ALLOC(c, sz) mi3_heap_malloc_p((c), (sz))
#define MI_FREE(c, p) mi3_free_p(p)
static LAB_KERNEL double run_mi3(long n) {
    void *blk[BLOCKS];
    double t0 = lab_now_ns();
    for (long k = 0; k < n; k++) {
        void *h = mi3_heap_new_p();
        REQUEST_LOOP(blk, h, MI_ALLOC, MI_FREE);
        mi3_heap_destroy_p(h);
    }
    return lab_now_ns() - t0;
}

static int load_mi3(char *why, size_t len, char *version, size_t vlen) {
    snprintf(version, vlen, "mimalloc 3");
    const char *path = lab_mimalloc3_path(why, len);
    void *lib = path ? shared_dlopen(path, "cmeel-mimalloc from PyPI: scripts/lab-setup.sh", why, len) : NULL;
    if (!lib || !shared_dlsym(lib, "mi_heap_new", &mi3_heap_new_p, why, len) ||
        !shared_dlsym(lib, "mi_heap_malloc", &mi3_heap_malloc_p, why, len) ||
        !shared_dlsym(lib, "mi_free", &mi3_free_p, why, len) ||
        !shared_dlsym(lib, "mi_heap_destroy", &mi3_heap_destroy_p, why, len))
        return 0;
    lab_mimalloc3_version(lib, version, vlen);
    return 1;
}

#ifdef LAB_HAVE_TALLOC
#  define T_ALLOC(c, sz) talloc_size((c), (sz))
#  define T_FREE(c, p) talloc_free(p)
static LAB_KERNEL double run_talloc(long n) {
    void *blk[BLOCKS];
    double t0 = lab_now_ns();
    for (long k = 0; k < n; k++) {
        void *ctx = talloc_new(NULL);
        REQUEST_LOOP(blk, ctx, T_ALLOC, T_FREE);
        talloc_free(ctx);
    }
    return lab_now_ns() - t0;
}
#endif

#ifdef LAB_HAVE_APR
static apr_pool_t *apr_request_pool;
#  define A_ALLOC(c, sz) apr_palloc((c), (sz))
#  define A_FREE(c, p) ((void)(p))
static LAB_KERNEL double run_apr(long n) {
    void *blk[BLOCKS];
    double t0 = lab_now_ns();
    for (long k = 0; k < n; k++) {
        REQUEST_LOOP(blk, apr_request_pool, A_ALLOC, A_FREE);
        apr_pool_clear(apr_request_pool);
    }
    return lab_now_ns() - t0;
}
#endif

typedef struct contender {
    const char *subject, *family;
    double (*run)(long n);
    char version[128];
    char why[300];
    int loaded, available;
} contender;

#define PK_DESTROY "poolkit pk_heap destroy"
#define PK_RESET "poolkit pk_heap reset"
#define MALLOC "glibc malloc"
#define MI3_HEAP "mimalloc 3 heap"

static contender cont[] = {
    {MALLOC, "peer", run_malloc, "", "", 0, 0},
    {PK_DESTROY, "poolkit", run_pk_destroy, "", "", 0, 0},
    {PK_RESET, "poolkit", run_pk_reset, "", "", 0, 0},
    {MI3_HEAP, "peer", run_mi3, "", "", 0, 0},
#ifdef LAB_HAVE_TALLOC
    {"talloc", "peer", run_talloc, "", "", 0, 0},
#else
    {"talloc", "peer", NULL, "", "talloc not found when pk-lab was built (install libtalloc-dev)", 0, 0},
#endif
#ifdef LAB_HAVE_APR
    {"APR pools", "peer", run_apr, "", "", 0, 0},
#else
    {"APR pools", "peer", NULL, "", "APR not found when pk-lab was built (install libapr1-dev)", 0, 0},
#endif
};
#define NCONT ((int)(sizeof cont / sizeof cont[0]))

static void load(contender *c) {
    if (c->loaded) return;
    c->loaded = 1;
    if (!c->run) return;
    if (c->run == run_mi3) {
        c->available = load_mi3(c->why, sizeof c->why, c->version, sizeof c->version);
        return;
    }
    if (!strcmp(c->family, "poolkit")) snprintf(c->version, sizeof c->version, "%s", lab_poolkit_version());
    else snprintf(c->version, sizeof c->version, "%s", c->subject);
#ifdef LAB_HAVE_APR
    if (c->run == run_apr) {
        if (apr_initialize() != APR_SUCCESS || apr_pool_create(&apr_request_pool, NULL) != APR_SUCCESS) {
            snprintf(c->why, sizeof c->why, "apr_initialize or apr_pool_create failed");
            return;
        }
    }
#endif
    c->available = 1;
}

static lab_params params(void) {
    lab_params ps = {0};
    lab_pset_num(&ps, "blocks", BLOCKS);
    lab_pset_num(&ps, "min_size", MIN_SIZE);
    lab_pset_num(&ps, "max_size", MAX_SIZE);
    return ps;
}

static lab_row *row_of(const char *subject) { return lab_find(EXP, subject, "blocks", "1000", NULL); }
_Static_assert(BLOCKS == 1000, "row_of names the blocks param");

static void run(int rep) {
    draw_request();
    lab_params ps = params();
    long n = lab_warm(requests());
    double ns[NCONT];
    for (int j = 0; j < NCONT; j++) {
        int i = (j + (rep > 0 ? rep : 0)) % NCONT; /* rotated order */
        contender *c = &cont[i];
        load(c);
        ns[i] = NAN;
        lab_row *r = lab_warming ? NULL : lab_row_get(EXP, c->subject, c->family, &ps);
        if (!c->available) {
            if (r) lab_row_unavailable(r, c->why);
            continue;
        }
        lab_progress(c->subject, "requests");
        ns[i] = c->run(n) / (double)n;
        if (r) {
            lab_row_info(r, c->version, lab_flags());
            lab_row_sample(r, ns[i]);
        }
    }
    if (lab_warming) return;
    for (int i = 0; i < NCONT; i++) {
        if (strcmp(cont[i].family, "poolkit") || isnan(ns[i])) continue;
        lab_row *r = lab_row_get(EXP, cont[i].subject, cont[i].family, &ps);
        lab_row_extra(r, "vs_malloc", ns[i] / ns[0]);
        if (!isnan(ns[3])) lab_row_extra(r, "vs_mi3_heap", ns[i] / ns[3]);
    }
}

static void print(FILE *out) {
    char b[32];
    fprintf(out, "== heap: a request of %d blocks of %d B-%d B, about a third freed one by one, the rest "
                 "at the request's end; %ld requests\n",
            BLOCKS, MIN_SIZE, MAX_SIZE, requests());
    fprintf(out, "   ns per request (lower is better)\n\n");
    for (int i = 0; i < NCONT; i++) {
        lab_row *r = row_of(cont[i].subject);
        if (!r) continue;
        if (!r->available) fprintf(out, "  %-26s n/a: %s\n", cont[i].subject, r->why);
        else fprintf(out, "  %-26s %12s\n", cont[i].subject, lab_fmt_row(r, b));
    }
    for (int i = 0; i < NCONT; i++) {
        if (strcmp(cont[i].family, "poolkit")) continue;
        lab_row *r = row_of(cont[i].subject);
        double vm = r && r->available ? lab_extra_median(r, "vs_malloc") : NAN;
        double vh = r && r->available ? lab_extra_median(r, "vs_mi3_heap") : NAN;
        lab_target t = LAB_TARGET_INIT;
        char fh[32], fm[32]; /* "-" where not measured */
        lab_target_add(&t, "; ", vh, 1.0, "%sx mimalloc 3's heap", lab_fmt(vh, fh));
        lab_target_add(&t, "; ", vm, 0.3, "%sx malloc+free", lab_fmt(vm, fm));
        fprintf(out, "  target (heap): %s at most 1.0x mimalloc 3's heap and 0.3x malloc+free one by one: %s -> %s\n",
                cont[i].subject, t.line, lab_target_verdict(&t));
    }
}

const lab_experiment lab_exp_heap = {
    EXP, "Heaps: a request's blocks freed one by one or all at once (pk_heap, mi_heap, talloc, APR)",
    "ns/request", 2.0, NULL, run, print, NULL,
};
