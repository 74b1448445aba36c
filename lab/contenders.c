/* Each contender of an experiment's point measured in turn into its row
 * (lab_each_contender, lab.h), and the contenders of the thread experiments.
 * Apart from util.c because it reports progress (main.c), which bench/'s
 * programs, linking util.c, do not have. */
#include "lab.h"

const char *const lab_thread_contenders[LAB_THREAD_NCONT] = {
    "glibc malloc", "jemalloc", "mimalloc", "tcmalloc", "poolkit pk_pool",
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
