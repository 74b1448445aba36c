/* autorelease-sweep: "Autorelease is Fast" (2006).
 *
 * 1,000,000 objects are created and autoreleased; the objects per
 * autorelease pool go 1,000,000, 100,000, ..., 1 (a fresh pool per batch,
 * popped at its end). Total time per row, in seconds for 1,000,000 objects
 * (the study's count; smaller scales make fewer and scale the time), beside
 * the study's four machines. The C rows: pk_new + pk_autorelease inside
 * pk_autorelease_push / pk_autorelease_pop. GNUstep (NSObject +
 * NSAutoreleasePool) and PKObject rows come from pk-lab-objc.
 *
 * The study's claim: creating and destroying a pool costs about as much as
 * creating and autoreleasing one object, so one pool per iteration is fine.
 * The two cost rows measure exactly that ratio: an empty push/pop against
 * one create+autorelease+release (objects autoreleased into pools of 1,000,
 * per object).
 */
#include "lab.h"

#include <math.h>
#include <poolkit/poolkit.h>
#include <string.h>

#define EXP "autorelease-sweep"
#define SUBJECT "poolkit pk_new"

static const long per_pool[] = {1000000, 100000, 10000, 1000, 100, 10, 1};
#define NROWS 7

static const struct {
    const char *machine;
    double s[NROWS];
} study[] = {
    {"PowerBook G4 1.5 GHz, Mac OS X 10.4", {1.65, 1.59, 1.48, 1.46, 1.43, 1.64, 2.91}},
    {"GNUstep, Pentium M 800 MHz", {0.741, 0.603, 0.589, 0.596, 0.604, 0.692, 1.491}},
    {"iPhone 3GS", {9.24, 9.07, 9.71, 8.52, 5.44, 6.31, 11.96}},
    {"MacBook Pro 2.26 GHz, 10.6.8", {0.353, 0.335, 0.329, 0.329, 0.333, 0.344, 0.396}},
};
#define NSTUDY 4

/* NSObject's one field: the class pointer (pk objects carry theirs in the
 * header, so this is what an object with one word of state costs). */
static const pk_class sweep_class = {"autorelease-sweep object", sizeof(void *), NULL};

static long objects(void) { return lab_pick(10000, 200000, 1000000, 1000000); }

static void published(void) {
    for (int m = 0; m < NSTUDY; m++)
        for (int i = 0; i < NROWS; i++) {
            lab_params ps = {0};
            lab_pset_num(&ps, "per_pool", (double)per_pool[i]);
            lab_row *r = lab_published(EXP, study[m].machine, &ps, NULL, study[m].s[i]);
            lab_row_info(r, "Autorelease is Fast (2006), published", NULL);
        }
}

static LAB_NOINLINE double sweep(long n, long batch) {
    double t0 = lab_now_ns();
    for (long done = 0; done < n; done += batch) {
        long k = n - done < batch ? n - done : batch;
        pk_autorelease_pool pool = pk_autorelease_push();
        for (long j = 0; j < k; j++) {
            void *o = pk_autorelease(pk_new(&sweep_class));
            LAB_ESCAPE(o);
        }
        pk_autorelease_pop(pool);
    }
    return lab_now_ns() - t0;
}

static LAB_NOINLINE double empty_push_pop(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        pk_autorelease_pool pool = pk_autorelease_push();
        LAB_CLOBBER();
        pk_autorelease_pop(pool);
    }
    return lab_now_ns() - t0;
}

static void run(int rep) {
    long n = lab_warm(objects());
    const char *ver = lab_poolkit_version();
    /* the sweep, interleaved with the cost rows in the same repetition */
    for (int i = 0; i < NROWS; i++) {
        char detail[48];
        snprintf(detail, sizeof detail, "%ld per pool", per_pool[i]);
        lab_progress(SUBJECT, detail);
        double ns = sweep(n, per_pool[i]);
        if (rep < 0) continue;
        lab_params ps = {0};
        lab_pset_num(&ps, "per_pool", (double)per_pool[i]);
        lab_pset_num(&ps, "objects", (double)n);
        lab_row *r = lab_row_get(EXP, SUBJECT, "poolkit", &ps);
        lab_row_info(r, ver, NULL);
        lab_row_sample(r, ns / (double)n * 1e6 / 1e9); /* seconds per 1,000,000 objects */
        lab_row_extra(r, "ns_per_object", ns / (double)n);
    }
    lab_progress(SUBJECT, "cost rows");
    double e = empty_push_pop(n) / (double)n;
    double c = sweep(n, 1000) / (double)n;
    if (rep < 0) return;
    lab_params pe = {0}, pc = {0};
    lab_pset_str(&pe, "op", "empty push/pop");
    lab_pset_str(&pc, "op", "create+autorelease+release");
    lab_row *re = lab_row_get(EXP, SUBJECT, "poolkit", &pe);
    lab_row *rc = lab_row_get(EXP, SUBJECT, "poolkit", &pc);
    snprintf(re->unit, sizeof re->unit, "ns/op");
    snprintf(rc->unit, sizeof rc->unit, "ns/op");
    lab_row_info(re, ver, NULL);
    lab_row_info(rc, ver, NULL);
    lab_row_sample(re, e);
    lab_row_sample(rc, c);
}

/* Subjects measured here or by a contender program (not published), in
 * the order their rows were made. */
static int subjects(const char **out, int max) {
    int n = 0;
    for (int i = 0; i < lab_row_count() && n < max; i++) {
        lab_row *r = lab_row_at(i);
        if (strcmp(r->experiment, EXP) || !strcmp(r->family, "published")) continue;
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= !strcmp(out[k], r->subject);
        if (!seen) out[n++] = r->subject;
    }
    return n;
}

static void print(FILE *out) {
    const char *subj[8];
    int ns = subjects(subj, 8);
    char b[32];
    fprintf(out, "== autorelease-sweep: \"Autorelease is Fast\" (2006)\n");
    fprintf(out, "   %s objects created and autoreleased; seconds per 1,000,000 objects (median of "
                 "%d)\n",
            lab_fmt((double)objects(), b), lab_opt.reps);
    fprintf(out, "  %-10s", "per pool");
    for (int s = 0; s < ns; s++) fprintf(out, " %16.16s", subj[s]);
    fprintf(out, "  | published:");
    for (int m = 0; m < NSTUDY; m++) fprintf(out, " %10.10s", study[m].machine);
    fprintf(out, "\n");
    for (int i = 0; i < NROWS; i++) {
        char pp[24];
        snprintf(pp, sizeof pp, "%ld", per_pool[i]);
        fprintf(out, "  %-10s", lab_fmt((double)per_pool[i], b));
        for (int s = 0; s < ns; s++) {
            lab_row *r = lab_find(EXP, subj[s], "per_pool", pp, NULL);
            fprintf(out, " %16s", lab_fmt_row(r, b));
        }
        fprintf(out, "  |           ");
        for (int m = 0; m < NSTUDY; m++) fprintf(out, " %10s", lab_fmt(study[m].s[i], b));
        fprintf(out, "\n");
    }
    for (int s = 0; s < ns; s++) {
        lab_row *r = lab_find(EXP, subj[s], NULL);
        if (r && !r->available) fprintf(out, "  %s: n/a: %s\n", subj[s], r->why);
    }
    fprintf(out, "\n  the claim: an empty pool costs about one create+autorelease+release\n");
    for (int s = 0; s < ns; s++) {
        lab_row *e = lab_find(EXP, subj[s], "op", "\"empty push/pop\"", NULL);
        lab_row *c = lab_find(EXP, subj[s], "op", "\"create+autorelease+release\"", NULL);
        if (!e || !c || !e->available || !c->available) continue;
        double ev = lab_median(&e->samples), cv = lab_median(&c->samples);
        char b2[32], b3[32];
        fprintf(out, "  %-22s empty push/pop %s ns, create+autorelease+release %s ns: ratio %s\n",
                subj[s], lab_fmt(ev, b), lab_fmt(cv, b2), lab_fmt(ev / cv, b3));
    }
    for (int m = 0; m < NSTUDY; m++) { /* the study's own: 1 per pool against 1,000 per pool */
        double one = study[m].s[6], many = study[m].s[3];
        fprintf(out, "  published %-32s pool overhead per object (1 vs 1,000 per pool): %+.0f%%\n",
                study[m].machine, (one / many - 1) * 100);
    }
    for (int s = 0; s < ns; s++) {
        lab_row *one = lab_find(EXP, subj[s], "per_pool", "1", NULL);
        lab_row *many = lab_find(EXP, subj[s], "per_pool", "1000", NULL);
        if (!one || !many || !one->available || !many->available) continue;
        if (!(lab_median(&many->samples) > 0)) continue;
        fprintf(out, "  here: %-36s pool overhead per object (1 vs 1,000 per pool): %+.0f%%\n",
                subj[s], (lab_median(&one->samples) / lab_median(&many->samples) - 1) * 100);
    }
}

const lab_experiment lab_exp_autorelease_sweep = {
    EXP, "Autorelease is Fast (2006)", "s", 3.0, published, run, print, NULL,
};
