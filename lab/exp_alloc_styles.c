/* alloc-styles: "alloc, allocWithZone showdown" (2009).
 *
 * Create and release one object, 20,000,000 times (at --full), three ways:
 * [NSObject new], [[NSObject alloc] init], [[NSObject allocWithZone:NULL]
 * init]; ns per iteration. Those rows, for NSObject and PKObject under
 * GNUstep, come from pk-lab-objc. The C analogues are measured here:
 *
 *   glibc malloc     malloc + init (class pointer, count) + free
 *   poolkit pk_pool  pk_pool_alloc + init + pk_pool_free
 *   poolkit pk_new   pk_new + pk_release (zeroed, counted, pooled)
 *
 * The claim: skipping one message send (allocWithZone:) saves 1.5 to 7%.
 */
#include "lab.h"

#include <math.h>
#include <poolkit/poolkit.h>
#include <stdlib.h>
#include <string.h>

#define EXP "alloc-styles"

static const char *const styles[] = {"new", "alloc+init", "allocWithZone+init"};
static const struct {
    const char *machine;
    double ns[3];
} study[] = {
    {"1.83 GHz Core 2 Duo, 10.5.8, 32-bit", {420.7, 414.1, 401.5}},
    {"1.83 GHz Core 2 Duo, 10.5.8, 64-bit", {279.5, 267.0, 258.7}},
    {"2.4 GHz Core 2 Duo, 10.6.0, 32-bit", {322.0, 317.6, 298.6}},
    {"2.4 GHz Core 2 Duo, 10.6.0, 64-bit", {202.9, 193.7, 192.3}},
};
#define NSTUDY 4

typedef struct object16 {
    const void *isa;
    long refcount;
} object16;

static const pk_class c_class = {"alloc-styles object", sizeof(void *), NULL};
static pk_pool *pool16;

static long iterations(void) { return lab_pick(100000, 2000000, 10000000, 20000000); }

static void published(void) {
    for (int m = 0; m < NSTUDY; m++)
        for (int s = 0; s < 3; s++) {
            lab_params ps = {0};
            lab_pset_str(&ps, "style", styles[s]);
            lab_row *r = lab_published(EXP, study[m].machine, &ps, NULL, study[m].ns[s]);
            lab_row_info(r, "alloc, allocWithZone showdown (2009), published", NULL);
        }
}

static LAB_NOINLINE double c_malloc(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        object16 *o = malloc(sizeof *o);
        o->isa = &c_class;
        o->refcount = 1;
        LAB_ESCAPE(o);
        free(o);
    }
    return lab_now_ns() - t0;
}

static LAB_NOINLINE double c_pool(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        object16 *o = pk_pool_alloc(pool16);
        o->isa = &c_class;
        o->refcount = 1;
        LAB_ESCAPE(o);
        pk_pool_free(pool16, o);
    }
    return lab_now_ns() - t0;
}

static LAB_NOINLINE double c_object(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        void *o = pk_new(&c_class);
        LAB_ESCAPE(o);
        pk_release(o);
    }
    return lab_now_ns() - t0;
}

static const struct {
    const char *subject, *family, *style;
    double (*fn)(long);
} c_rows[] = {
    {"glibc malloc", "peer", "malloc+init+free", c_malloc},
    {"poolkit pk_pool", "poolkit", "pk_pool_alloc+init+pk_pool_free", c_pool},
    {"poolkit pk_new", "poolkit", "pk_new+pk_release", c_object},
};
#define NC 3

static void run(int rep) {
    if (!pool16) {
        pk_pool_config c = {0};
        c.name = "alloc-styles objects";
        c.size = sizeof(object16);
        pool16 = pk_pool_create(&c);
    }
    long n = lab_warm(iterations());
    for (int j = 0; j < NC; j++) {
        int i = (j + (rep > 0 ? rep : 0)) % NC;
        lab_progress(c_rows[i].subject, c_rows[i].style);
        double ns = c_rows[i].fn(n) / (double)n;
        if (rep < 0) continue;
        lab_params ps = {0};
        lab_pset_str(&ps, "style", c_rows[i].style);
        lab_pset_num(&ps, "iterations", (double)n);
        lab_row *r = lab_row_get(EXP, c_rows[i].subject, c_rows[i].family, &ps);
        lab_row_info(r, i == 0 ? lab_allocator_named("glibc malloc")->version
                               : lab_poolkit_version(),
                     NULL);
        lab_row_sample(r, ns);
    }
}

static void print(FILE *out) {
    char b[32], b2[32];
    fprintf(out, "== alloc-styles: \"alloc, allocWithZone showdown\" (2009)\n");
    fprintf(out, "   create and release one object, %s times; ns per iteration (median of %d)\n",
            lab_fmt((double)iterations(), b), lab_opt.reps);
    /* subjects from the contender program */
    const char *subj[8];
    int ns = 0;
    for (int i = 0; i < lab_row_count() && ns < 8; i++) {
        lab_row *r = lab_row_at(i);
        if (strcmp(r->experiment, EXP) || !strcmp(r->family, "published")) continue;
        int mine = 0, seen = 0;
        for (int k = 0; k < NC; k++) mine |= !strcmp(r->subject, c_rows[k].subject);
        for (int k = 0; k < ns; k++) seen |= !strcmp(subj[k], r->subject);
        if (!mine && !seen) subj[ns++] = r->subject;
    }
    fprintf(out, "  %-20s", "style");
    for (int s = 0; s < ns; s++) fprintf(out, " %17.17s", subj[s]);
    fprintf(out, "  | published:");
    for (int m = 0; m < NSTUDY; m++) fprintf(out, " %9.9s%s", study[m].machine + 0,
                                             strstr(study[m].machine, "64") ? "/64" : "/32");
    fprintf(out, "\n");
    for (int st = 0; st < 3; st++) {
        char want[40];
        snprintf(want, sizeof want, "\"%s\"", styles[st]);
        fprintf(out, "  %-20s", styles[st]);
        for (int s = 0; s < ns; s++)
            fprintf(out, " %17s", lab_fmt_row(lab_find(EXP, subj[s], "style", want, NULL), b));
        fprintf(out, "  |           ");
        for (int m = 0; m < NSTUDY; m++) fprintf(out, " %12s", lab_fmt(study[m].ns[st], b));
        fprintf(out, "\n");
    }
    for (int s = 0; s < ns; s++) {
        lab_row *r = lab_find(EXP, subj[s], NULL);
        if (r && !r->available) fprintf(out, "  %s: n/a: %s\n", subj[s], r->why);
    }
    fprintf(out, "\n  C analogues (ns per iteration):\n");
    for (int i = 0; i < NC; i++) {
        char want[48];
        snprintf(want, sizeof want, "\"%s\"", c_rows[i].style);
        lab_row *r = lab_find(EXP, c_rows[i].subject, "style", want, NULL);
        if (!r) continue;
        char range[48];
        snprintf(range, sizeof range, "[%s - %s]", lab_fmt(lab_min(&r->samples), b),
                 lab_fmt(lab_max(&r->samples), b2));
        fprintf(out, "  %-34s %8s %20s\n", c_rows[i].style, lab_fmt_row(r, b), range);
    }
    fprintf(out, "\n  the claim: allocWithZone+init saves 1.5 to 7%% against new (time, allocWithZone+init "
                 "against new; negative = saves)\n");
    for (int m = 0; m < NSTUDY; m++)
        fprintf(out, "  published %-38s %+.1f%%\n", study[m].machine,
                (study[m].ns[2] / study[m].ns[0] - 1) * 100);
    for (int s = 0; s < ns; s++) {
        lab_row *a = lab_find(EXP, subj[s], "style", "\"new\"", NULL);
        lab_row *z = lab_find(EXP, subj[s], "style", "\"allocWithZone+init\"", NULL);
        if (!a || !z || !a->available || !z->available) continue;
        fprintf(out, "  here: %-42s %+.1f%%\n", subj[s],
                (lab_median(&z->samples) / lab_median(&a->samples) - 1) * 100);
    }
}

const lab_experiment lab_exp_alloc_styles = {
    EXP, "alloc, allocWithZone showdown (2009)", "ns/iter", 2.5, published, run, print, NULL,
};
