/* object-generation: "Optimized Object Generation" (Mulle kybernetiK, 2002).
 *
 * Five remedies for slow object creation, each against its baseline, as a
 * ratio. The study's way under GNUstep, the same remedy with poolkit, and
 * PKObject come from pk-lab-objc. Measured here, the C analogues of the
 * allocation remedies (create, initialise, release one 32-byte object,
 * N times; ns per object):
 *
 *   glibc malloc                  malloc / free: the baseline
 *   C ring buffer (10,000 slots)  freed objects kept in a fixed ring and
 *                                 reused; malloc only when it is empty
 *   C bunch (16 per malloc)       one malloc holds 16 objects; the block is
 *                                 freed when all 16 have been freed
 *   poolkit pk_pool               pk_pool_alloc / pk_pool_free
 *
 * and "avoid autorelease" with poolkit objects: pk_new + pk_autorelease
 * (pools of 1,000) against pk_new + pk_release.
 */
#include "lab.h"

#include <poolkit/poolkit.h>
#include <stdlib.h>
#include <string.h>

#define EXP "object-generation"
#define RING 10000
#define BUNCH 16

typedef struct bunch bunch;
typedef struct obj {
    const void *isa;
    long refcount;
    bunch *home; /* the bunch allocator's back pointer; a field otherwise */
    long value;
} obj;
struct bunch {
    int used, freed;
    obj objs[BUNCH];
};

static const char *const remedies[] = {"avoid autorelease", "allocWithZone", "custom new",
                                       "ring buffer", "bunches"};
#define NREMEDIES 5
/* published seconds, baseline and remedy (allocWithZone: "a very small amount") */
static const double pub[NREMEDIES][2] = {
    {11.0, 7.0}, {0, 0}, {7.4, 6.7}, {9.5, 3.6}, {9.5, 2.9}};

static const pk_class og_class = {"object-generation object", sizeof(obj) - 16, NULL};
static pk_pool *obj_pool;

static long objects(void) { return lab_pick(20000, 500000, 2000000, 10000000); }

static void published(void) {
    for (int i = 0; i < NREMEDIES; i++) {
        if (pub[i][0] == 0) continue;
        for (int v = 0; v < 2; v++) {
            lab_params ps = {0};
            lab_pset_str(&ps, "remedy", remedies[i]);
            lab_pset_str(&ps, "variant", v ? "remedy" : "baseline");
            lab_row *r = lab_published(EXP, "Mulle kybernetiK 2002 (Foundation)", &ps, "s",
                                       pub[i][v]);
            lab_row_info(r, "Optimized Object Generation (2002), published", NULL);
        }
    }
    lab_params ps = {0};
    lab_pset_str(&ps, "remedy", "headline");
    lab_row *r = lab_published(EXP, "Mulle kybernetiK 2002 (Foundation)", &ps, "x", 3.0);
    lab_row_info(r, "\"object allocation 300% faster than Foundation\"", NULL);
}

static inline void init(obj *o, long i) {
    o->isa = &og_class;
    o->refcount = 1;
    o->value = i;
}

static LAB_NOINLINE double g_malloc(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        obj *o = malloc(sizeof *o);
        init(o, i);
        LAB_ESCAPE(o);
        free(o);
    }
    return lab_now_ns() - t0;
}

static obj *ring[RING];
static long ring_head, ring_count;

static inline obj *ring_alloc(void) {
    if (ring_count == 0) return malloc(sizeof(obj));
    obj *o = ring[ring_head];
    ring_head = ring_head + 1 == RING ? 0 : ring_head + 1;
    ring_count--;
    return o;
}
static inline void ring_free(obj *o) {
    if (ring_count == RING) {
        free(o);
        return;
    }
    long tail = ring_head + ring_count;
    ring[tail >= RING ? tail - RING : tail] = o;
    ring_count++;
}

static LAB_NOINLINE double g_ring(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        obj *o = ring_alloc();
        init(o, i);
        LAB_ESCAPE(o);
        ring_free(o);
    }
    double t = lab_now_ns() - t0;
    while (ring_count) free(ring_alloc());
    return t;
}

static bunch *current;

static inline obj *bunch_alloc(void) {
    if (!current || current->used == BUNCH) {
        current = malloc(sizeof *current);
        current->used = current->freed = 0;
    }
    obj *o = &current->objs[current->used++];
    o->home = current;
    return o;
}
static inline void bunch_free(obj *o) {
    bunch *b = o->home;
    if (++b->freed == BUNCH) {
        if (b == current) current = NULL;
        free(b);
    }
}

static LAB_NOINLINE double g_bunch(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        obj *o = bunch_alloc();
        init(o, i);
        LAB_ESCAPE(o);
        bunch_free(o);
    }
    return lab_now_ns() - t0;
}

static LAB_NOINLINE double g_pool(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        obj *o = pk_pool_alloc(obj_pool);
        init(o, i);
        LAB_ESCAPE(o);
        pk_pool_free(obj_pool, o);
    }
    return lab_now_ns() - t0;
}

static LAB_NOINLINE double g_autorelease(long n) {
    double t0 = lab_now_ns();
    for (long done = 0; done < n; done += 1000) {
        pk_autorelease_pool pool = pk_autorelease_push();
        for (long j = 0; j < 1000 && done + j < n; j++) {
            long *o = pk_autorelease(pk_new(&og_class));
            o[1] = j;
            LAB_ESCAPE(o);
        }
        pk_autorelease_pop(pool);
    }
    return lab_now_ns() - t0;
}

static LAB_NOINLINE double g_release(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        long *o = pk_new(&og_class);
        o[1] = i;
        LAB_ESCAPE(o);
        pk_release(o);
    }
    return lab_now_ns() - t0;
}

static const struct {
    const char *subject, *family, *remedy, *variant;
    double (*fn)(long);
} c_rows[] = {
    {"glibc malloc", "peer", "C analogues", "malloc/free", g_malloc},
    {"C ring buffer (10,000 slots)", "peer", "C analogues", "ring buffer", g_ring},
    {"C bunch (16 per malloc)", "peer", "C analogues", "bunch", g_bunch},
    {"poolkit pk_pool", "poolkit", "C analogues", "pk_pool", g_pool},
    {"poolkit pk_new", "poolkit", "avoid autorelease", "baseline", g_autorelease},
    {"poolkit pk_new", "poolkit", "avoid autorelease", "remedy", g_release},
};
#define NC (int)(sizeof c_rows / sizeof c_rows[0])

static void run(int rep) {
    if (!obj_pool) {
        pk_pool_config c = {0};
        c.name = "object-generation objects";
        c.size = sizeof(obj);
        obj_pool = pk_pool_create(&c);
    }
    long n = lab_warm(objects());
    for (int j = 0; j < NC; j++) {
        int i = (j + (rep > 0 ? rep : 0)) % NC;
        lab_progress(c_rows[i].subject, c_rows[i].variant);
        double ns = c_rows[i].fn(n) / (double)n;
        if (rep < 0) continue;
        lab_params ps = {0};
        lab_pset_str(&ps, "remedy", c_rows[i].remedy);
        lab_pset_str(&ps, "variant", c_rows[i].variant);
        lab_pset_num(&ps, "objects", (double)n);
        lab_row *r = lab_row_get(EXP, c_rows[i].subject, c_rows[i].family, &ps);
        lab_row_info(r, c_rows[i].family[0] == 'p' && c_rows[i].family[1] == 'o'
                            ? lab_poolkit_version()
                            : lab_allocator_named("glibc malloc")->version,
                     NULL);
        lab_row_sample(r, ns);
    }
}

static double med(const char *subject, const char *remedy, const char *variant) {
    char r[48], v[48];
    snprintf(r, sizeof r, "\"%s\"", remedy);
    snprintf(v, sizeof v, "\"%s\"", variant);
    lab_row *row = lab_find(EXP, subject, "remedy", r, "variant", v, NULL);
    return row && row->available && row->samples.n ? lab_median(&row->samples) : 0.0 / 0.0;
}

static void print(FILE *out) {
    char b1[32], b2[32], b3[32];
    fprintf(out, "== object-generation: \"Optimized Object Generation\" (Mulle kybernetiK, 2002)\n");
    fprintf(out, "   each remedy against its baseline: ns per object, and the speed-up "
                 "(baseline / remedy)\n");
    const char *subj[8];
    int ns = 0;
    for (int i = 0; i < lab_row_count() && ns < 8; i++) {
        lab_row *r = lab_row_at(i);
        if (strcmp(r->experiment, EXP) || !strcmp(r->family, "published")) continue;
        const char *rem = lab_param_get(r, "remedy");
        if (rem && !strcmp(rem, "\"C analogues\"")) continue;
        int seen = 0;
        for (int k = 0; k < ns; k++) seen |= !strcmp(subj[k], r->subject);
        if (!seen) subj[ns++] = r->subject;
    }
    fprintf(out, "  %-18s %-20s", "remedy", "published (s)");
    for (int s = 0; s < ns; s++) fprintf(out, " %26.26s", subj[s]);
    fprintf(out, "\n");
    for (int i = 0; i < NREMEDIES; i++) {
        char pubs[48];
        if (pub[i][0] > 0)
            snprintf(pubs, sizeof pubs, "%s -> %s (x%s)", lab_fmt(pub[i][0], b1),
                     lab_fmt(pub[i][1], b2), lab_fmt(pub[i][0] / pub[i][1], b3));
        else
            snprintf(pubs, sizeof pubs, "\"a very small amount\"");
        fprintf(out, "  %-18s %-20s", remedies[i], pubs);
        for (int s = 0; s < ns; s++) {
            double b = med(subj[s], remedies[i], "baseline"), r = med(subj[s], remedies[i], "remedy");
            char cell[48];
            if (b == b && r == r)
                snprintf(cell, sizeof cell, "%s -> %s (x%s)", lab_fmt(b, b1), lab_fmt(r, b2),
                         lab_fmt(b / r, b3));
            else if (b == b || r == r)
                snprintf(cell, sizeof cell, "%s -> %s", lab_fmt(b, b1), lab_fmt(r, b2));
            else
                snprintf(cell, sizeof cell, "-");
            fprintf(out, " %26s", cell);
        }
        fprintf(out, "\n");
    }
    for (int s = 0; s < ns; s++) {
        lab_row *r = lab_find(EXP, subj[s], NULL);
        if (r && !r->available) fprintf(out, "  %s: n/a: %s\n", subj[s], r->why);
    }
    double base = med("glibc malloc", "C analogues", "malloc/free");
    fprintf(out, "\n  C analogues: create, initialise, release one 32-byte object (ns per object)\n");
    for (int i = 0; i < 4; i++) {
        double v = med(c_rows[i].subject, "C analogues", c_rows[i].variant);
        fprintf(out, "  %-30s %8s   x%s against malloc/free\n", c_rows[i].subject, lab_fmt(v, b1),
                lab_fmt(base / v, b2));
    }
    fprintf(out, "  published headline: object allocation 300%% faster than Foundation (x3)\n");
}

const lab_experiment lab_exp_object_generation = {
    EXP, "Optimized Object Generation (Mulle kybernetiK, 2002)", "ns/object", 2.0, published, run,
    print, NULL,
};
