/* common-ops: "Performance Comparisons of Common Operations" (2007).
 *
 * What common operations cost, as the study's table: name, iterations,
 * total seconds, ns per operation, beside the published figure (2.66 GHz
 * Mac Pro). The C and C++ rows are measured here; the Objective-C rows
 * (message sends, NSInvocation, NSObject and NSAutoreleasePool, the delayed
 * perform) and PKObject come from pk-lab-objc; Linux has no AppKit, so the
 * NSButtonCell rows say so. poolkit's own rows sit next to the row they
 * replace (extra param "replaces").
 *
 * The sub-microsecond rows are net of an empty loop (the same loop skeleton
 * and barrier, no work), shown as its own row. Files live in a scratch
 * folder inside the report folder (the disk the report goes to, not a
 * tmpfs); nothing is fsync'ed, as in the study, so the write rows measure
 * the page cache and the filesystem's own flushing policy.
 */
#include "lab.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poolkit/poolkit.h>
#include <pthread.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define EXP "common-ops"
#define BIG (16L << 20)
#define MIB (1L << 20)

double lab_virtual_call_loop(long n);

/* ---- the operations -------------------------------------------------------- */

static volatile uint32_t v_seven = 7;
static volatile double v_seven_f = 7.0;
static volatile size_t v_sixteen = 16;

static LAB_NOINLINE double op_empty(long n) {
    long acc = 0;
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        acc += i;
        __asm__ __volatile__("" : "+r"(acc));
    }
    double t = lab_now_ns() - t0;
    LAB_ESCAPE(acc);
    return t;
}

static LAB_NOINLINE double op_int_div(long n) {
    uint32_t d = v_seven;
    uint64_t acc = 0;
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        acc += (uint32_t)i / d;
        __asm__ __volatile__("" : "+r"(acc));
    }
    double t = lab_now_ns() - t0;
    LAB_ESCAPE(acc);
    return t;
}

static LAB_NOINLINE double op_float_div(long n) {
    double d = v_seven_f, x = 1.0, acc = 0;
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        acc += x / d;
        x += 1.0;
        __asm__ __volatile__("" : "+x"(acc));
    }
    double t = lab_now_ns() - t0;
    long keep = (long)acc;
    LAB_ESCAPE(keep);
    return t;
}

static LAB_NOINLINE double op_float_div_int(long n) {
    double d = v_seven_f, x = 1.0;
    long acc = 0;
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        acc += (int)(x / d);
        x += 1.0;
        __asm__ __volatile__("" : "+r"(acc));
    }
    double t = lab_now_ns() - t0;
    LAB_ESCAPE(acc);
    return t;
}

static LAB_NOINLINE double op_memcpy16(long n) {
    char src[16] = "sixteen bytes..", dst[16];
    size_t len = v_sixteen; /* not a constant: a real call, as in the study */
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        memcpy(dst, src, len);
        LAB_ESCAPE(dst);
    }
    return lab_now_ns() - t0;
}

static LAB_NOINLINE double op_malloc16(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        void *p = malloc(16);
        LAB_ESCAPE(p);
        free(p);
    }
    return lab_now_ns() - t0;
}

static pk_pool *pool16;
static LAB_NOINLINE double op_pool16(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        void *p = pk_pool_alloc(pool16);
        LAB_ESCAPE(p);
        pk_pool_free(pool16, p);
    }
    return lab_now_ns() - t0;
}

static LAB_NOINLINE double op_arena16(long n) {
    pk_arena *a = pk_arena_create(0);
    pk_arena_mark m = pk_arena_save(a);
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        void *p = pk_arena_alloc(a, 16, 0);
        LAB_ESCAPE(p);
        if ((i & 1023) == 1023) pk_arena_rewind(a, m);
    }
    double t = lab_now_ns() - t0;
    pk_arena_destroy(a);
    return t;
}

static const pk_class ops_class = {"common-ops object", sizeof(void *), NULL};
static LAB_NOINLINE double op_pk_new(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        void *o = pk_new(&ops_class);
        LAB_ESCAPE(o);
        pk_release(o);
    }
    return lab_now_ns() - t0;
}

static LAB_NOINLINE double op_push_pop(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        pk_autorelease_pool p = pk_autorelease_push();
        LAB_CLOBBER();
        pk_autorelease_pop(p);
    }
    return lab_now_ns() - t0;
}

static LAB_NOINLINE double op_malloc16mb(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        void *p = malloc(BIG);
        LAB_ESCAPE(p);
        free(p);
    }
    return lab_now_ns() - t0;
}

static char *buf_a, *buf_b; /* 16 MiB each, touched */

static LAB_NOINLINE double op_memcpy1mb(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        memcpy(buf_b, buf_a, MIB);
        LAB_ESCAPE(buf_b);
    }
    return lab_now_ns() - t0;
}

static char path_small[4200], path_big[4200], path_out[4200], path_tmp[4200];

static int write_file(const char *path, const char *data, long len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    long done = 0;
    while (done < len) {
        ssize_t w = write(fd, data + done, (size_t)(len - done));
        if (w <= 0) {
            close(fd);
            return -1;
        }
        done += w;
    }
    return close(fd);
}

static long read_file(const char *path, char *into, long cap) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    long done = 0;
    for (;;) {
        ssize_t r = read(fd, into + done, (size_t)(cap - done));
        if (r <= 0) break;
        done += r;
        if (done == cap) break;
    }
    close(fd);
    return done;
}

static int files_ok;

static LAB_NOINLINE double op_read16(long n) {
    char b[64];
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        if (read_file(path_small, b, 16) != 16) files_ok = 0;
        LAB_ESCAPE(b);
    }
    return lab_now_ns() - t0;
}

static LAB_NOINLINE double op_write16(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++)
        if (write_file(path_out, "sixteen bytes!!\n", 16)) files_ok = 0;
    return lab_now_ns() - t0;
}

static LAB_NOINLINE double op_write16_atomic(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++)
        if (write_file(path_tmp, "sixteen bytes!!\n", 16) || rename(path_tmp, path_out))
            files_ok = 0;
    return lab_now_ns() - t0;
}

static LAB_NOINLINE double op_read16mb(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++)
        if (read_file(path_big, buf_b, BIG) != BIG) files_ok = 0;
    return lab_now_ns() - t0;
}

static LAB_NOINLINE double op_write16mb(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++)
        if (write_file(path_out, buf_a, BIG)) files_ok = 0;
    return lab_now_ns() - t0;
}

static LAB_NOINLINE double op_write16mb_atomic(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++)
        if (write_file(path_tmp, buf_a, BIG) || rename(path_tmp, path_out)) files_ok = 0;
    return lab_now_ns() - t0;
}

static void *nothing(void *arg) { return arg; }

static LAB_NOINLINE double op_pthread(long n) {
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, nothing, NULL) == 0) pthread_join(t, NULL);
    }
    return lab_now_ns() - t0;
}

static int spawn_ok = 1;
static LAB_NOINLINE double op_spawn(long n) {
    char *argv[] = {"/bin/true", NULL};
    double t0 = lab_now_ns();
    for (long i = 0; i < n; i++) {
        pid_t pid;
        int status;
        if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) != 0) {
            spawn_ok = 0;
            break;
        }
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    return lab_now_ns() - t0;
}

/* ---- the table --------------------------------------------------------------- */

enum { MINE, OBJC, NOT_HERE };

typedef struct op {
    const char *name;
    int who;              /* measured here, by pk-lab-objc, or not on Linux */
    const char *subject;  /* for MINE */
    const char *replaces; /* poolkit rows: the study's row they stand in for */
    long iters;           /* at default scale */
    int net;              /* less the empty loop */
    double published;     /* ns per op; 0 = none */
    double (*fn)(long);
} op;

static const op ops[] = {
    {"IMP-cached message send", OBJC, NULL, NULL, 0, 0, 0.9, NULL},
    {"C++ virtual method call", MINE, "C++", NULL, 60000000, 1, 1.4, lab_virtual_call_loop},
    {"integer division", MINE, "C", NULL, 60000000, 1, 2.3, op_int_div},
    {"Objective-C message send", OBJC, NULL, NULL, 0, 0, 5.0, NULL},
    {"float division with int conversion", MINE, "C", NULL, 60000000, 1, 9.2, op_float_div_int},
    {"floating-point division", MINE, "C", NULL, 60000000, 1, 9.3, op_float_div},
    {"16-byte memcpy", MINE, "C", NULL, 60000000, 1, 29.5, op_memcpy16},
    {"16-byte malloc/free", MINE, "C", NULL, 15000000, 1, 52.5, op_malloc16},
    {"pk_pool alloc/free (16 B)", MINE, "poolkit", "16-byte malloc/free", 30000000, 1, 0, op_pool16},
    {"pk_arena alloc (16 B)", MINE, "poolkit", "16-byte malloc/free", 30000000, 1, 0, op_arena16},
    {"NSInvocation message send", OBJC, NULL, NULL, 0, 0, 160.7, NULL},
    {"NSObject alloc/init/release", OBJC, NULL, NULL, 0, 0, 186.6, NULL},
    {"PKObject alloc/init/release", OBJC, NULL, "NSObject alloc/init/release", 0, 0, 0, NULL},
    {"pk_new/pk_release", MINE, "poolkit", "NSObject alloc/init/release", 15000000, 1, 0, op_pk_new},
    {"NSAutoreleasePool alloc/init/release", OBJC, NULL, NULL, 0, 0, 300.0, NULL},
    {"pk_autorelease push/pop", MINE, "poolkit", "NSAutoreleasePool alloc/init/release", 15000000,
     1, 0, op_push_pop},
    {"NSButtonCell creation", NOT_HERE, NULL, NULL, 0, 0, 5219, NULL},
    {"16 MB malloc/free", MINE, "C", NULL, 5000, 0, 10211, op_malloc16mb},
    {"read 16-byte file", MINE, "C", NULL, 10000, 0, 19905, op_read16},
    {"zero-second delayed perform", OBJC, NULL, NULL, 0, 0, 30374, NULL},
    {"NSButtonCell draw", NOT_HERE, NULL, NULL, 0, 0, 76167, NULL},
    {"pthread create/join", MINE, "C", NULL, 1000, 0, 114887, op_pthread},
    {"1 MB memcpy", MINE, "C", NULL, 500, 0, 124218, op_memcpy1mb},
    {"write 16-byte file", MINE, "C", NULL, 1000, 0, 503799, op_write16},
    {"write 16-byte file (atomic)", MINE, "C", NULL, 1000, 0, 989662, op_write16_atomic},
    {"process spawn", MINE, "C", NULL, 50, 0, 5504646, op_spawn},
    {"read 16 MB file", MINE, "C", NULL, 10, 0, 29116231, op_read16mb},
    {"write 16 MB file", MINE, "C", NULL, 5, 0, 334185067, op_write16mb},
    {"write 16 MB file (atomic)", MINE, "C", NULL, 5, 0, 334293782, op_write16mb_atomic},
};
#define NOPS (int)(sizeof ops / sizeof ops[0])
#define PUBLISHED_SUBJECT "published: 2.66 GHz Mac Pro (2007)"

static long iterations(const op *o) {
    long n = o->iters;
    switch (lab_opt.scale) {
    case LAB_SMOKE: n /= 200; break;
    case LAB_QUICK: n /= 4; break;
    case LAB_FULL: n *= 10; break;
    default: break;
    }
    return n < 2 ? 2 : n;
}

static lab_params params_of(const op *o, long n) {
    lab_params ps = {0};
    lab_pset_str(&ps, "op", o->name);
    if (n > 0) lab_pset_num(&ps, "iterations", (double)n);
    if (o->replaces) lab_pset_str(&ps, "replaces", o->replaces);
    return ps;
}

static void published(void) {
    for (int i = 0; i < NOPS; i++) {
        if (ops[i].published <= 0) continue;
        lab_params ps = {0};
        lab_pset_str(&ps, "op", ops[i].name);
        lab_row *r = lab_published(EXP, PUBLISHED_SUBJECT, &ps, NULL, ops[i].published);
        lab_row_info(r, "Performance Comparisons of Common Operations (2007), published", NULL);
    }
}

static void setup(void) {
    if (pool16) return;
    pk_pool_config c = {0};
    c.name = "common-ops 16 B";
    c.size = 16;
    pool16 = pk_pool_create(&c);
    buf_a = malloc(BIG);
    buf_b = malloc(BIG);
    memset(buf_a, 'a', BIG);
    memset(buf_b, 'b', BIG);
    const char *dir = lab_scratch_dir();
    snprintf(path_small, sizeof path_small, "%s/small.dat", dir);
    snprintf(path_big, sizeof path_big, "%s/big.dat", dir);
    snprintf(path_out, sizeof path_out, "%s/out.dat", dir);
    snprintf(path_tmp, sizeof path_tmp, "%s/out.dat.tmp", dir);
    files_ok = write_file(path_small, "sixteen bytes!!\n", 16) == 0 &&
               write_file(path_big, buf_a, BIG) == 0;
}

static void cleanup(void) {
    unlink(path_small);
    unlink(path_big);
    unlink(path_out);
    unlink(path_tmp);
}

static void run(int rep) {
    setup();
    if (!files_ok) setup();
    long ne = lab_warm(iterations(&ops[1]));
    lab_progress("C", "empty loop");
    double empty = op_empty(ne) / (double)ne;
    if (rep >= 0) {
        lab_params ps = {0};
        lab_pset_str(&ps, "op", "empty loop");
        lab_pset_num(&ps, "iterations", (double)ne);
        lab_row *r = lab_row_get(EXP, "C", "peer", &ps);
        lab_row_sample(r, empty);
        lab_row_info(r, "the loop alone (subtracted from the rows marked net)", NULL);
    }
    for (int i = 0; i < NOPS; i++) {
        const op *o = &ops[i];
        if (o->who == NOT_HERE && rep >= 0) {
            lab_params ps = params_of(o, 0);
            lab_row *r = lab_row_get(EXP, "AppKit", "peer", &ps);
            lab_row_unavailable(r, "Linux has no AppKit (NSButtonCell)");
            continue;
        }
        if (o->who != MINE) continue;
        long n = lab_warm(iterations(o));
        lab_progress(o->subject, o->name);
        int was_ok = files_ok;
        double ns = o->fn(n) / (double)n;
        double net = o->net ? ns - empty : ns;
        if (rep < 0) continue;
        lab_params ps = params_of(o, n);
        lab_row *r = lab_row_get(EXP, o->subject, !strcmp(o->subject, "poolkit") ? "poolkit" : "peer",
                                 &ps);
        if (!r->version[0])
            lab_row_info(r,
                         !strcmp(o->subject, "poolkit") ? lab_poolkit_version()
                         : strstr(o->name, "malloc")
                             ? lab_allocator_named("glibc malloc")->version
                             : "",
                         NULL);
        if (o->fn == op_spawn && !spawn_ok) {
            lab_row_unavailable(r, "posix_spawn of /bin/true failed");
            continue;
        }
        if (was_ok && !files_ok && strstr(o->name, "file")) {
            lab_row_unavailable(r, "file operations failed in the scratch folder");
            continue;
        }
        lab_row_sample(r, net);
        if (o->net) lab_row_extra(r, "gross", ns);
    }
    if (rep == lab_opt.reps - 1) cleanup();
}

static lab_row *row_of(const char *name) {
    char want[96];
    snprintf(want, sizeof want, "\"%s\"", name);
    for (int i = 0; i < lab_row_count(); i++) {
        lab_row *r = lab_row_at(i);
        if (strcmp(r->experiment, EXP) || !strcmp(r->family, "published")) continue;
        const char *v = lab_param_get(r, "op");
        if (v && !strcmp(v, want)) return r;
    }
    return NULL;
}

static void print(FILE *out) {
    char b1[32], b2[32], b3[32], b4[32];
    fprintf(out, "== common-ops: \"Performance Comparisons of Common Operations\" (2007)\n");
    fprintf(out, "   ns per operation (median of %d); * = net of the empty loop; published: "
                 "2.66 GHz Mac Pro\n",
            lab_opt.reps);
    fprintf(out, "  %-40s %12s %10s %14s %14s %9s\n", "name", "iterations", "total s", "ns/op",
            "published", "x study");
    /* the reason a contender program left for rows it did not give */
    lab_row *objc_na = NULL;
    for (int i = 0; i < lab_row_count(); i++) {
        lab_row *r = lab_row_at(i);
        if (!strcmp(r->experiment, EXP) && !r->available && !lab_param_get(r, "op")) objc_na = r;
    }
    for (int i = 0; i < NOPS; i++) {
        const op *o = &ops[i];
        lab_row *r = row_of(o->name);
        char name[64];
        snprintf(name, sizeof name, "%s%s%s", o->replaces ? "  > " : "", o->name,
                 o->net ? " *" : "");
        char pub[32] = "";
        if (o->published > 0) lab_fmt(o->published, pub);
        if (!r || !r->available) {
            const char *why = r ? r->why : o->who != OBJC ? "not measured" : lab_external_why(EXP);
            if (!why) why = objc_na ? objc_na->why : "pk-lab-objc did not measure it";
            fprintf(out, "  %-40s %12s %10s %14s %14s   not available: %.60s\n", name, "", "", "", pub,
                    why);
            continue;
        }
        double m = lab_median(&r->samples);
        const char *it = lab_param_get(r, "iterations");
        double iters = it ? strtod(it, NULL) : NAN;
        fprintf(out, "  %-40s %12s %10s %14s %14s %9s\n", name, lab_fmt(iters, b1),
                lab_fmt(m * iters / 1e9, b2), lab_fmt(m, b3), pub,
                o->published > 0 ? lab_fmt(m / o->published, b4) : "");
    }
    lab_row *e = row_of("empty loop");
    if (e && e->available)
        fprintf(out, "  (empty loop: %s ns per iteration, subtracted from the rows marked *)\n",
                lab_fmt(lab_median(&e->samples), b1));
}

const lab_experiment lab_exp_common_ops = {
    EXP, "Performance Comparisons of Common Operations (2007)", "ns/op", 10.0, published, run,
    print, NULL,
};
