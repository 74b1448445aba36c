/* Peers with malloc's shape: glibc malloc, jemalloc, both mimallocs and
 * tcmalloc, one adapter shape over realprog's table of their entry points
 * (rp_allocs, realprog_allocs.c), which loads the libraries at run time with
 * dlopen(RTLD_LOCAL), so that none replaces the process's malloc, and calls
 * them as their users do (malloc and free, mi_malloc and mi_free, tc_malloc
 * and tc_free). Two mimallocs, since neither is best at everything (LAB.md:
 * compare against the faster of the two per workload): Debian's 2.0.9 and
 * PyPI's 3.4 (lab_mimalloc3_path).
 *
 * glibc's kernels call malloc and free directly; the loaded peers' kernels
 * are compiled once and call through the table entry that is their context,
 * as any call into a shared library goes through a pointer. */
#include "lab.h"
#include "realprog.h"

#include <stdlib.h>

static void *glibc_open(size_t size) {
    (void)size;
    return NULL;
}
static void malloc_close(void *ctx) { (void)ctx; }

#define K_NAME glibc
#define K_ALLOC(c, sz) malloc(sz)
#define K_FREE(c, p, sz) free(p)
#define K_FREES_EACH 1
#define K_THREADS 1
#include "kernels.h"
#undef K_NAME

#define K_NAME loaded
#define K_ALLOC(c, sz) ((const rp_alloc *)(c))->malloc(sz)
#define K_FREE(c, p, sz) ((const rp_alloc *)(c))->free(p)
#define K_FREES_EACH 1
#define K_THREADS 1
#include "kernels.h"

/* The adapter of table entry k: the table's subject, version and reason. */
static void malloc_peer(lab_allocator *a, int k, void *(*open)(size_t)) {
    const rp_alloc *r = &rp_allocs()[k];
    a->subject = r->subject;
    a->family = "peer";
    a->open = open;
    a->close = malloc_close;
    if (k == RP_GLIBC) glibc_fill(a);
    else loaded_fill(a);
    snprintf(a->version, sizeof a->version, "%s", r->version);
    snprintf(a->why, sizeof a->why, "%s", r->why);
    a->available = r->available;
}

/* A loaded peer's context: its table entry. */
#define TABLE_OPEN(NAME, K)          \
    static void *NAME(size_t size) { \
        (void)size;                  \
        return &rp_allocs()[K];      \
    }
TABLE_OPEN(je_open, RP_JE)
TABLE_OPEN(mi_open, RP_MI)
TABLE_OPEN(mi3_open, RP_MI3)
TABLE_OPEN(tc_open, RP_TC)

void lab_adapter_glibc(lab_allocator *a) { malloc_peer(a, RP_GLIBC, glibc_open); }
void lab_adapter_jemalloc(lab_allocator *a) { malloc_peer(a, RP_JE, je_open); }
void lab_adapter_mimalloc(lab_allocator *a) { malloc_peer(a, RP_MI, mi_open); }
void lab_adapter_mimalloc3(lab_allocator *a) { malloc_peer(a, RP_MI3, mi3_open); }
void lab_adapter_tcmalloc(lab_allocator *a) { malloc_peer(a, RP_TC, tc_open); }
