/* The process report (stats.h): every pool, arenas, the autorelease stack
 * and totals, as a table or as JSON; POOLKIT_STATS at exit; and, in debug
 * mode, a summary of what is still live at exit.
 *
 * Everything here reads figures the pools keep anyway, through
 * pk_pool_foreach and pk_pool_stats_get, so nothing costs anything on the
 * allocation and free paths. The report is written with stdio into the
 * caller's FILE: unlike error reports it may use the heap (the PK_STATS_CLASSES
 * walk does), since it is asked for, not raised by a fault.
 */
#include "front/alloc_internal.h"
#include "object/object_internal.h"
#include "pool/pool_internal.h"
#include "base/sites.h"

#include <poolkit/poolkit.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- process-wide figures ---- */

void pk_stats_reset_peaks(void) {
    gauge_reset_peak(&pool_bytes);
    gauge_reset_peak(&arena_bytes);
}

/* ---- gathering ---- */

typedef struct rows {
    pk_pool_stats *row;
    size_t n, cap;
    bool short_of_memory;
} rows;

/* The rows come from the system, not the C heap: pk_pool_foreach holds the
 * pool list's lock, and where libpoolkit-malloc is the C heap, a malloc
 * here could need a new size class's pool, which takes that lock. */
static size_t rows_bytes(size_t cap) { return align_up(cap * sizeof(pk_pool_stats), os_page_size()); }

static void rows_free(rows *r) {
    if (r->row) os_unmap(r->row, rows_bytes(r->cap));
}

static void add_row(pk_pool *p, void *arg) {
    rows *r = arg;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        pk_pool_stats *more = os_map(rows_bytes(cap), 0);
        if (!more) {
            r->short_of_memory = true;
            return;
        }
        if (r->n) memcpy(more, r->row, r->n * sizeof *more);
        rows_free(r);
        r->row = more;
        r->cap = cap;
    }
    pk_pool_stats_get(p, &r->row[r->n++]);
}

static void totals_of(const rows *r, pk_process_stats *out) {
    memset(out, 0, sizeof *out);
    out->pools = r->n;
    for (size_t i = 0; i < r->n; i++) {
        const pk_pool_stats *st = &r->row[i];
        out->pool_live += st->live;
        out->pool_bytes_reserved += st->bytes_reserved;
        out->pool_bytes_resident += st->bytes_resident;
        out->pool_bytes_released += st->bytes_released;
    }
    out->pool_bytes_reserved_peak = __atomic_load_n(&pool_bytes.peak, __ATOMIC_RELAXED);
    out->arenas = arena_count();
    out->arena_bytes_reserved = __atomic_load_n(&arena_bytes.now, __ATOMIC_RELAXED);
    out->arena_bytes_reserved_peak = __atomic_load_n(&arena_bytes.peak, __ATOMIC_RELAXED);
    out->retained_bytes = os_retained_bytes() + large_warm_bytes();
    pk_autorelease_stats a;
    pk_autorelease_stats_get(&a);
    out->autorelease_depth = a.depth;
    out->autorelease_pending = a.pending;
    out->autorelease_high_water = a.high_water;
}

static void gather(rows *r) {
    memset(r, 0, sizeof *r);
    pk_pool_foreach(add_row, r);
}

void pk_stats_get(pk_process_stats *out) {
    pool_purge_poll(); /* a call that reaches the library: idle memory goes first */
    rows r;
    gather(&r);
    totals_of(&r, out);
    rows_free(&r);
}

/* Live pooled objects per class (PK_STATS_CLASSES). */
typedef struct class_row {
    const pk_class *cls;
    size_t live;
} class_row;

typedef struct classes {
    class_row row[OBJECT_CENSUS_MAX + 1];
    size_t n;
} classes;

static void add_class(const pk_class *cls, size_t live, void *arg) {
    classes *c = arg;
    if (c->n < OBJECT_CENSUS_MAX + 1) c->row[c->n++] = (class_row){cls, live};
}

/* Live pk_new objects per class now, or NULL (free it). */
static classes *census(void) {
    classes *c = calloc(1, sizeof *c);
    if (c) object_census(add_class, c);
    return c;
}

/* ---- writing ---- */

static const char *name_or(const char *name, const char *dflt) { return name ? name : dflt; }

/* A census row's class name; classes past OBJECT_CENSUS_MAX share one row. */
static const char *class_name(const class_row *r) {
    return r->cls ? name_or(r->cls->name, "(unnamed)") : "(other classes)";
}

/* "12.3 MiB" into buf (24 bytes). */
static const char *human(size_t bytes, char *buf) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) v /= 1024, u++;
    if (u == 0) snprintf(buf, 24, "%zu B", bytes);
    else snprintf(buf, 24, "%.1f %s", v, unit[u]);
    return buf;
}

/* ---- the options in force, first in every report ---- */

typedef struct options_in_force {
    option_info row[OPTIONS_MAX];
    size_t n;
} options_in_force;

static const char *source_text(const option_info *o) {
    switch (o->source) {
    case OPTION_ENVIRONMENT: return "environment";
    case OPTION_BAD: return "default (the environment's value was malformed)";
    case OPTION_CALL: return o->setter ? o->setter : "a call";
    default: return "default";
    }
}

/* A destination's value as text: off, stderr or the file's name. */
static const char *dest_text(const option_info *o) {
    return o->value == STATS_FILE ? (o->path ? o->path : "?") : o->value == STATS_STDERR ? "stderr" : "off";
}

static void print_options(FILE *f, const options_in_force *o) {
    fprintf(f, "options in force (the environment variables, or the call named as the source):\n");
    for (size_t i = 0; i < o->n; i++) {
        const option_info *r = &o->row[i];
        char num[24];
        const char *v = r->kind == OPTION_SWITCH ? (r->value ? "on" : "off")
                        : r->kind == OPTION_DEST ? dest_text(r)
                                                 : (snprintf(num, sizeof num, "%ld", r->value), num);
        fprintf(f, "  %-24s %-10s %s\n", r->name, v, source_text(r));
    }
}

/* why: why the class rows are missing (at exit), or NULL. */
static void print_table(FILE *f, const rows *r, const pk_process_stats *t, const options_in_force *o,
                        const classes *c, const char *why) {
    char b1[24], b2[24], b3[24], b4[24];
    fprintf(f, "poolkit %s report (pid %ld)\n", pk_version_string(), (long)getpid());
    print_options(f, o);
    fprintf(f, "%zu pools, %zu live objects, %s reserved, %s resident, %s given back\n", t->pools,
            t->pool_live, human(t->pool_bytes_reserved, b1), human(t->pool_bytes_resident, b2),
            human((size_t)t->pool_bytes_released, b3));
    fprintf(f, "%-24s %7s %9s %6s %10s %10s %10s %11s %11s %12s %9s\n", "pool", "size", "live", "slabs",
            "reserved", "resident", "released", "taken", "returned", "remote_frees", "peak_live");
    for (size_t i = 0; i < r->n; i++) {
        const pk_pool_stats *s = &r->row[i];
        fprintf(f, "%-24.24s %7zu %9zu %6zu %10s %10s %10s %11llu %11llu %12llu %9zu\n",
                name_or(s->name, "(unnamed)"), s->size, s->live, s->slabs, human(s->bytes_reserved, b1),
                human(s->bytes_resident, b2), human((size_t)s->bytes_released, b3),
                (unsigned long long)s->taken, (unsigned long long)s->returned,
                (unsigned long long)s->remote_frees, s->peak_live);
    }
    fprintf(f, "live: objects in use now. The last four move per refill, not per call (the inline "
               "fast path serves most calls alone):\n"
               "  taken, returned: objects moved from the slabs' free lists to the threads' slot lists "
               "and back; remote_frees:\n"
               "  objects freed by a thread into a slab it does not own; peak_live: the most out at once, "
               "estimated per refill\n"
               "  (pk_pool_stats)\n");
    large_stats ls;
    large_stats_get(&ls);
    fprintf(f, "pk_alloc: %zu size classes made (the pools named \"pk_alloc SIZE\"), %zu mapped blocks "
               "(over %zu KiB, or grown past %zu KiB by realloc): %s (at most %s)\n",
            alloc_classes_made(), ls.blocks, PK_ALLOC_CLASS_MAX >> 10, (size_t)REALLOC_MAPPED_MIN >> 10,
            human(ls.bytes, b1),
            human(ls.peak_bytes, b2));
    if (c) {
        fprintf(f, "%-24s %7s %9s\n", "pk_new class", "size", "live");
        for (size_t i = 0; i < c->n; i++)
            fprintf(f, "%-24.24s %7zu %9zu\n", class_name(&c->row[i]),
                    c->row[i].cls ? c->row[i].cls->size : 0, c->row[i].live);
    } else if (why) {
        fprintf(f, "pk_new classes: not counted (%s)\n", why);
    }
    fprintf(f, "arenas: %zu live, %s reserved (at most %s at once)\n", t->arenas,
            human(t->arena_bytes_reserved, b1), human(t->arena_bytes_reserved_peak, b2));
    fprintf(f, "pools' slabs at most at once: %s\n", human(t->pool_bytes_reserved_peak, b3));
    fprintf(f, "autorelease (this thread): depth %zu, pending %zu, high water %zu\n",
            t->autorelease_depth, t->autorelease_pending, t->autorelease_high_water);
    fprintf(f, "retained for reuse (destroyed pools and arenas, freed large blocks): %s\n", human(t->retained_bytes, b4));
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_string(FILE *f, const char *s) {
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

static void print_json_options(FILE *f, const options_in_force *o) {
    fputs(" \"options\": {", f);
    for (size_t i = 0; i < o->n; i++) {
        const option_info *r = &o->row[i];
        fprintf(f, "%s\n  ", i ? "," : "");
        json_string(f, r->name);
        fputs(": {\"value\": ", f);
        if (r->kind == OPTION_SWITCH) fputs(r->value ? "true" : "false", f);
        else if (r->kind == OPTION_COUNT) fprintf(f, "%ld", r->value);
        else json_string(f, dest_text(r));
        fputs(", \"source\": ", f);
        json_string(f, source_text(r));
        fputc('}', f);
    }
    fputs("\n },\n", f);
}

static void print_json(FILE *f, const rows *r, const pk_process_stats *t, const options_in_force *o,
                       const classes *c) {
    fprintf(f, "{\"schema\": \"poolkit-stats/2\", \"version\": ");
    json_string(f, pk_version_string());
    fprintf(f, ", \"pid\": %ld,\n", (long)getpid());
    print_json_options(f, o);
    fprintf(f, " \"per_refill\": [\"taken\", \"returned\", \"peak_live\", \"remote_frees\"],\n");
    fprintf(f, " \"pools\": [");
    for (size_t i = 0; i < r->n; i++) {
        const pk_pool_stats *s = &r->row[i];
        fprintf(f, "%s\n  {\"name\": ", i ? "," : "");
        json_string(f, s->name);
        fprintf(f, ", \"size\": %zu, \"align\": %zu, \"live\": %zu, \"peak_live\": %zu, "
                   "\"slabs\": %zu, \"bytes_reserved\": %zu, \"bytes_resident\": %zu, "
                   "\"taken\": %llu, \"returned\": %llu, \"remote_frees\": %llu, "
                   "\"slabs_released\": %llu, \"bytes_released\": %llu}",
                s->size, s->align, s->live, s->peak_live, s->slabs, s->bytes_reserved,
                s->bytes_resident, (unsigned long long)s->taken, (unsigned long long)s->returned,
                (unsigned long long)s->remote_frees, (unsigned long long)s->slabs_released,
                (unsigned long long)s->bytes_released);
    }
    fprintf(f, "\n ],\n \"classes\": ");
    if (!c) {
        fputs("null", f);
    } else {
        fputc('[', f);
        for (size_t i = 0; i < c->n; i++) {
            fprintf(f, "%s\n  {\"name\": ", i ? "," : "");
            json_string(f, class_name(&c->row[i]));
            fprintf(f, ", \"size\": %zu, \"live\": %zu}", c->row[i].cls ? c->row[i].cls->size : 0,
                    c->row[i].live);
        }
        fputs("\n ]", f);
    }
    large_stats ls;
    large_stats_get(&ls);
    fprintf(f, ",\n \"alloc\": {\"classes\": %zu, \"large_blocks\": %zu, \"large_bytes\": %zu, "
               "\"large_bytes_peak\": %zu}",
            alloc_classes_made(), ls.blocks, ls.bytes, ls.peak_bytes);
    fprintf(f, ",\n \"arenas\": {\"live\": %zu, \"bytes_reserved\": %zu, \"bytes_reserved_peak\": %zu},\n",
            t->arenas, t->arena_bytes_reserved, t->arena_bytes_reserved_peak);
    fprintf(f, " \"autorelease\": {\"depth\": %zu, \"pending\": %zu, \"high_water\": %zu},\n",
            t->autorelease_depth, t->autorelease_pending, t->autorelease_high_water);
    fprintf(f, " \"totals\": {\"pools\": %zu, \"live\": %zu, \"bytes_reserved\": %zu, "
               "\"bytes_reserved_peak\": %zu, \"bytes_resident\": %zu, \"bytes_released\": %llu, "
               "\"retained_bytes\": %zu}}\n",
            t->pools, t->pool_live, t->pool_bytes_reserved, t->pool_bytes_reserved_peak,
            t->pool_bytes_resident, (unsigned long long)t->pool_bytes_released, t->retained_bytes);
}

/* The report; why says, at exit, why the class rows are left out. */
static int print_report(FILE *out, unsigned flags, const char *why) {
    rows r;
    gather(&r);
    pk_process_stats t;
    totals_of(&r, &t);
    options_in_force o;
    o.n = options_list(o.row, OPTIONS_MAX);
    classes *c = flags & PK_STATS_CLASSES ? census() : NULL;
    if (flags & PK_STATS_JSON) print_json(out, &r, &t, &o, c);
    else print_table(out, &r, &t, &o, c, why);
    free(c);
    rows_free(&r);
    int bad = ferror(out) || fflush(out) != 0 || r.short_of_memory;
    if (bad && !errno) errno = ENOMEM;
    return bad ? -1 : 0;
}

static bool flags_known(unsigned flags) { return !(flags & ~(unsigned)(PK_STATS_JSON | PK_STATS_CLASSES)); }

int pk_stats_print(FILE *out, unsigned flags) {
    if (!out || !flags_known(flags)) {
        errno = EINVAL;
        return -1;
    }
    return print_report(out, flags, NULL);
}

/* ---- the report to a callback ---- */

typedef struct sink {
    void (*out)(const char *text, void *arg);
    void *arg;
} sink;

/* The stream's writes, in pieces of a buffer on the stack: nothing is
 * allocated for the text, which may be long. */
static ssize_t sink_write(void *cookie, const char *buf, size_t n) {
    const sink *k = cookie;
    char piece[512];
    for (size_t done = 0; done < n;) {
        size_t m = n - done < sizeof piece - 1 ? n - done : sizeof piece - 1;
        memcpy(piece, buf + done, m);
        piece[m] = '\0';
        k->out(piece, k->arg);
        done += m;
    }
    return (ssize_t)n;
}

int pk_stats_print_to(void (*out)(const char *text, void *arg), void *arg, unsigned flags) {
    if (!out || !flags_known(flags)) {
        errno = EINVAL;
        return -1;
    }
    sink k = {out, arg};
    FILE *f = fopencookie(&k, "w", (cookie_io_functions_t){.write = sink_write});
    if (!f) return -1;
    int rc = print_report(f, flags, NULL);
    return fclose(f) != 0 ? -1 : rc;
}

/* ---- at exit ---- */

/* Debug mode's summary at exit: what the program left live (objects per
 * pool and per pk_new class, arenas never destroyed), then, for the first
 * few pools, the first few objects with where they were allocated, as
 * pk_pool_destroy reports a debug pool's leaks. The library's own pools
 * (POOL_LIBRARY) are left out. The class walk, and the class names of the
 * objects listed, need every other thread quiet: they are left out while
 * another thread is registered. */
#define LEAK_POOLS_SHOWN 8   /* pools whose objects are listed */
#define LEAK_OBJECTS_SHOWN 4 /* objects listed per pool */
#define LEAK_LINE 1400

typedef struct leaks {
    bool quiet;          /* no other thread: class names may be read */
    size_t live;         /* objects the program left live */
    char head[1600];     /* "pool 'a' 3, pool 'b' 1" */
    size_t head_used;
    char (*lines)[LEAK_LINE]; /* LEAK_POOLS_SHOWN lines of objects (NULL if no memory) */
    size_t lines_used, pools_more;
} leaks;

/* Appends to buf[*used], keeping it terminated; false (and nothing
 * appended) when it does not fit. */
static PK_PRINTF(4, 5) bool append(char *buf, size_t n, size_t *used, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *used, n - *used, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= n - *used) {
        buf[*used] = '\0';
        return false;
    }
    *used += (size_t)w;
    return true;
}

typedef struct object_line {
    char *buf;
    size_t used, shown;
    bool objects;   /* a front end class pool: its pk_new objects shown as pk_new returned them, with their class */
    bool quiet;
} object_line;

static bool add_object(void *slot, void *const *sites, void *arg) {
    object_line *l = arg;
    char where[SITES_TEXT] = "";
    if (sites) sites_format(where, sizeof where, sites);
    const char *cls = "";
    void *obj = slot;
    const object_header *h = slot;
    if (l->objects && l->quiet && !refs_invalid(h->refs) && h->cls) { /* an object: its count word is tagged */
        obj = (char *)slot + sizeof *h;
        cls = name_or(h->cls->name, "(unnamed)");
    }
    bool ok = append(l->buf, LEAK_LINE, &l->used, "%s%s%s%p%s%s%s",
                     l->shown ? ", " : "", cls, *cls ? " " : "", obj, *where ? " (" : "", where,
                     *where ? ")" : "");
    return ok && ++l->shown < LEAK_OBJECTS_SHOWN;
}

static void count_object(void *slot, void *arg) {
    if (!refs_invalid(((const object_header *)slot)->refs)) ++*(size_t *)arg;
}

static void add_leaking_pool(pk_pool *p, void *arg) {
    leaks *k = arg;
    if (p->flags & POOL_LIBRARY) return;
    pk_pool_stats st;
    pk_pool_stats_get(p, &st);
    if (!st.live) return;
    k->live += st.live;
    const char *name = name_or(st.name, "(unnamed)");
    bool objects = alloc_is_front_class(p);
    /* pk_new's objects, which share the front end's class pools with
     * pk_alloc's blocks, are counted per class instead, where the walk can
     * run: the pool's entry counts its blocks alone. */
    size_t blocks = st.live, in_objects = 0;
    if (objects && k->quiet) {
        pool_visit_held(p, count_object, &in_objects); /* other threads may run on: their calls wait */
        blocks -= in_objects < blocks ? in_objects : blocks;
    }
    if (blocks)
        append(k->head, sizeof k->head, &k->head_used, "%spool '%s' %zu", k->head_used ? ", " : "", name,
               blocks);
    if (!k->lines || !p->debug) return;
    if (k->lines_used == LEAK_POOLS_SHOWN) {
        k->pools_more++;
        return;
    }
    char *buf = k->lines[k->lines_used];
    object_line l = {buf, 0, 0, objects, k->quiet};
    if (!append(buf, sizeof k->lines[0], &l.used, "%s '%s', %zu live at exit, the first: ",
                "pool", name, st.live))
        return;
    pool_each_live_debug(p, add_object, &l);
    if (l.shown < st.live) append(buf, sizeof k->lines[0], &l.used, " ... (%zu more)", st.live - l.shown);
    k->lines_used++;
}

/* The summary's own memory is mapped, not allocated: under the malloc
 * library a calloc here is a block of a class pool, live while the walk
 * counts, and every program in debug mode was told of two leaks of its
 * own at exit, allocated by this function. */
static void *scratch(size_t n) { return os_map(align_up(n, os_page_size()), 0); }
static void scratch_free(void *p, size_t n) {
    if (p) os_unmap(p, align_up(n, os_page_size()));
}

static void leak_summary(void) {
    leaks *k = scratch(sizeof *k);
    if (!k) return;
    k->quiet = tcache_live_threads() <= 1;
    k->lines = scratch(LEAK_POOLS_SHOWN * sizeof *k->lines);
    pk_pool_foreach(add_leaking_pool, k);
    if (k->quiet) {
        classes *c = census();
        for (size_t i = 0; c && i < c->n; i++)
            append(k->head, sizeof k->head, &k->head_used, "%sclass %s %zu", k->head_used ? ", " : "",
                   class_name(&c->row[i]), c->row[i].live);
        free(c);
    }
    size_t arenas = arena_count() - arena_count_library(0); /* the threads' scratch arenas are the library's */
    char bytes[24], tail[120] = "";
    if (arenas)
        snprintf(tail, sizeof tail, "%s%zu arena%s never destroyed (%s reserved)", k->live ? " and " : "",
                 arenas, arenas == 1 ? "" : "s",
                 human(__atomic_load_n(&arena_bytes.now, __ATOMIC_RELAXED), bytes));
    if (k->live)
        error_report(PK_WARNING, "leak", NULL, NULL, "at exit, %zu live object%s (%s)%s", k->live,
                     k->live == 1 ? "" : "s", k->head, tail);
    else if (arenas)
        error_report(PK_WARNING, "leak", NULL, NULL, "at exit, %s", tail);
    for (size_t i = 0; k->lines && i < k->lines_used; i++)
        error_report(PK_WARNING, "leak", NULL, NULL, "%s", k->lines[i]);
    if (k->pools_more)
        error_report(PK_WARNING, "leak", NULL, NULL, "and %zu more pool%s with live objects at exit",
                     k->pools_more, k->pools_more == 1 ? "" : "s");
    scratch_free(k->lines, LEAK_POOLS_SHOWN * sizeof *k->lines);
    scratch_free(k, sizeof *k);
}

static void report_at_exit(void) {
    const char *path;
    int dest = options_stats(&path);
    if (dest != STATS_OFF) {
        FILE *f = dest == STATS_FILE ? fopen(path, "w") : stderr;
        if (!f) {
            error_report(PK_WARNING, "bad option", NULL, NULL,
                         "POOLKIT_STATS=%s: cannot open it for writing (%s); no report", path,
                         strerror(errno));
        } else {
            size_t n = dest == STATS_FILE ? strlen(path) : 0;
            unsigned flags = n > 5 && strcmp(path + n - 5, ".json") == 0 ? PK_STATS_JSON : 0;
            /* The class rows belong in the report; their walk needs the
             * other threads quiet. */
            size_t threads = tcache_live_threads();
            char why[80] = "";
            if (threads <= 1) flags |= PK_STATS_CLASSES;
            else snprintf(why, sizeof why, "%zu threads hold caches at exit; the walk needs one", threads);
            print_report(f, flags, why);
            if (f != stderr) fclose(f);
        }
    }
    if (options_debug()) leak_summary();
}

static bool report_due; /* set once a pool is made */

static void install(void) {
    /* Read now, so that a malformed value is reported at once. */
    const char *path;
    (void)options_verbose();
    (void)options_stats(&path);
    __atomic_store_n(&report_due, true, __ATOMIC_RELEASE);
}

/* A destructor, not atexit: the install runs inside the first pool's
 * making, which under the malloc library may be inside a malloc the C
 * library makes while it holds the lock atexit takes (its table of exit
 * functions growing at a program's 33rd registration before its first
 * malloc); atexit there would wait forever. A destructor needs no
 * registration, and runs after every exit function, so the report and the
 * leak summary see what those freed. */
__attribute__((destructor)) static void report_if_due(void) {
    if (__atomic_load_n(&report_due, __ATOMIC_ACQUIRE)) report_at_exit();
}

static void install_once(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install);
}

/* Registered at load, installed when the first pool is made (init.c). */
__attribute__((constructor(INIT_PRIORITY))) static void register_install(void) {
    init_on(INIT_FIRST_POOL, install_once);
}
