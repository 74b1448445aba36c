/* Each contender of an experiment's point measured in turn into its row
 * (lab_each_contender, lab.h), and the contenders of the thread experiments.
 * Apart from util.c because it reports progress (main.c), which bench/'s
 * programs, linking util.c, do not have. */
#include "lab.h"

const char *const lab_thread_contenders[LAB_THREAD_NCONT] = {
    "glibc malloc", "jemalloc", LAB_MIMALLOC, LAB_MIMALLOC3, "tcmalloc", LAB_PK_POOL,
};
const char *const lab_thread_contenders_hardened[LAB_THREAD_NCONT_HARDENED] = {
    "glibc malloc", "jemalloc", LAB_MIMALLOC, LAB_MIMALLOC3, "tcmalloc", LAB_PK_POOL, LAB_PK_HARDENED,
};

void lab_each_contender(const lab_point *pt, const char *const *contenders, int n, int rep) {
    for (int j = 0; j < n; j++) {
        lab_allocator *a = lab_allocator_named(contenders[(j + (rep > 0 ? rep : 0)) % n]);
        if (!a) continue;
        if (rep >= 0) lab_row_for(pt->experiment, a, &pt->params);
        if (!a->available || !pt->has(a)) continue;
        lab_progress(a->subject, pt->detail);
        double out[LAB_POINT_OUT];
        if (pt->measure(a, pt, out) != 0 || rep < 0) continue;
        pt->record(lab_row_for(pt->experiment, a, &pt->params), rep, pt, out);
    }
}

/* A row's samples so far (0 before it is made). */
static int samples_of(const lab_point *pt, const char *subject) {
    const lab_row *r = lab_row_lookup(pt->experiment, subject, &pt->params);
    return r ? r->samples.n : 0;
}

void lab_each_contender_vs_pool(const lab_point *pt, const char *const *contenders, int n,
                                int rep, int inverse) {
    int had_h = samples_of(pt, LAB_PK_HARDENED), had_d = samples_of(pt, LAB_PK_POOL);
    lab_each_contender(pt, contenders, n, rep);
    if (rep < 0) return;
    lab_row *h = lab_row_lookup(pt->experiment, LAB_PK_HARDENED, &pt->params);
    const lab_row *d = lab_row_lookup(pt->experiment, LAB_PK_POOL, &pt->params);
    /* only a pair measured in this repetition: one sample more each */
    if (!h || !d || h->samples.n != had_h + 1 || d->samples.n != had_d + 1) return;
    double x = h->samples.v[had_h], y = d->samples.v[had_d];
    lab_row_extra(h, LAB_VS_POOL, inverse ? y / x : x / y);
}
