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
#include "object_internal.h"
#include "pool_internal.h"

#include <poolkit/arena.h>
#include <poolkit/object.h>
#include <poolkit/stats.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- process-wide figures ---- */

gauge pool_bytes;

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

static void add_row(pk_pool *p, void *arg) {
    rows *r = arg;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        pk_pool_stats *more = realloc(r->row, cap * sizeof *more);
        if (!more) {
            r->short_of_memory = true;
            return;
        }
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
    out->retained_bytes = os_retained_bytes();
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
    rows r;
    gather(&r);
    totals_of(&r, out);
    free(r.row);
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

static void print_table(FILE *f, const rows *r, const pk_process_stats *t, const classes *c) {
    char b1[24], b2[24], b3[24], b4[24];
    fprintf(f, "poolkit report (pid %ld): %zu pools, %zu live objects, %s reserved, %s resident, "
               "%s given back\n",
            (long)getpid(), t->pools, t->pool_live, human(t->pool_bytes_reserved, b1),
            human(t->pool_bytes_resident, b2), human((size_t)t->pool_bytes_released, b3));
    fprintf(f, "%-24s %7s %9s %9s %6s %10s %10s %11s %11s %9s %10s\n", "pool", "size", "live",
            "peak*", "slabs", "reserved", "resident", "allocs*", "frees*", "remote*", "released");
    for (size_t i = 0; i < r->n; i++) {
        const pk_pool_stats *s = &r->row[i];
        fprintf(f, "%-24.24s %7zu %9zu %9zu %6zu %10s %10s %11llu %11llu %9llu %10s\n",
                name_or(s->name, "(unnamed)"), s->size, s->live, s->peak_live, s->slabs,
                human(s->bytes_reserved, b1), human(s->bytes_resident, b2),
                (unsigned long long)s->allocs, (unsigned long long)s->frees,
                (unsigned long long)s->remote_frees, human((size_t)s->bytes_released, b3));
    }
    fprintf(f, "* per batch: counted when objects cross between a thread cache and the pool "
               "(pk_pool_stats)\n");
    if (c) {
        fprintf(f, "%-24s %7s %9s\n", "pk_new class", "size", "live");
        for (size_t i = 0; i < c->n; i++)
            fprintf(f, "%-24.24s %7zu %9zu\n", class_name(&c->row[i]),
                    c->row[i].cls ? c->row[i].cls->size : 0, c->row[i].live);
    }
    fprintf(f, "arenas: %zu live, %s reserved (at most %s at once)\n", t->arenas,
            human(t->arena_bytes_reserved, b1), human(t->arena_bytes_reserved_peak, b2));
    fprintf(f, "pools' slabs at most at once: %s\n", human(t->pool_bytes_reserved_peak, b3));
    fprintf(f, "autorelease (this thread): depth %zu, pending %zu, high water %zu\n",
            t->autorelease_depth, t->autorelease_pending, t->autorelease_high_water);
    fprintf(f, "retained for reuse (destroyed pools and arenas): %s\n", human(t->retained_bytes, b4));
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

static void print_json(FILE *f, const rows *r, const pk_process_stats *t, const classes *c) {
    fprintf(f, "{\"schema\": \"poolkit-stats/1\", \"pid\": %ld,\n", (long)getpid());
    fprintf(f, " \"per_batch\": [\"allocs\", \"frees\", \"peak_live\", \"remote_frees\"],\n");
    fprintf(f, " \"pools\": [");
    for (size_t i = 0; i < r->n; i++) {
        const pk_pool_stats *s = &r->row[i];
        fprintf(f, "%s\n  {\"name\": ", i ? "," : "");
        json_string(f, s->name);
        fprintf(f, ", \"size\": %zu, \"align\": %zu, \"live\": %zu, \"peak_live\": %zu, "
                   "\"slabs\": %zu, \"bytes_reserved\": %zu, \"bytes_resident\": %zu, "
                   "\"allocs\": %llu, \"frees\": %llu, \"remote_frees\": %llu, "
                   "\"slabs_released\": %llu, \"bytes_released\": %llu}",
                s->size, s->align, s->live, s->peak_live, s->slabs, s->bytes_reserved,
                s->bytes_resident, (unsigned long long)s->allocs, (unsigned long long)s->frees,
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

int pk_stats_print(FILE *out, unsigned flags) {
    if (!out || (flags & ~(unsigned)(PK_STATS_JSON | PK_STATS_CLASSES))) {
        errno = EINVAL;
        return -1;
    }
    rows r;
    gather(&r);
    pk_process_stats t;
    totals_of(&r, &t);
    classes *c = flags & PK_STATS_CLASSES ? census() : NULL;
    if (flags & PK_STATS_JSON) print_json(out, &r, &t, c);
    else print_table(out, &r, &t, c);
    free(c);
    free(r.row);
    int bad = ferror(out) || fflush(out) != 0 || r.short_of_memory;
    if (bad && !errno) errno = ENOMEM;
    return bad ? -1 : 0;
}

/* ---- at exit ---- */

/* Debug mode: pools and classes with live objects, with counts, instead of
 * silence. The class walk runs only when no other thread is registered,
 * since it takes every thread's cached objects home. */
static void leak_summary(void) {
    rows r;
    gather(&r);
    size_t pools = 0, live = 0;
    for (size_t i = 0; i < r.n; i++)
        if (r.row[i].live) pools++, live += r.row[i].live;
    if (live) {
        char list[2000] = "";
        size_t used = 0;
        for (size_t i = 0; i < r.n && used + 64 < sizeof list; i++)
            if (r.row[i].live)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s'%s' %zu",
                                         used ? ", " : ": ", name_or(r.row[i].name, "(unnamed)"),
                                         r.row[i].live);
        if (tcache_live_threads() <= 1) {
            classes *c = census();
            for (size_t i = 0; c && i < c->n && used + 64 < sizeof list; i++)
                used += (size_t)snprintf(list + used, sizeof list - used, "%sclass %s %zu",
                                         i ? ", " : "; ", class_name(&c->row[i]), c->row[i].live);
            free(c);
        }
        error_report(PK_WARNING, "leak", NULL, NULL,
                     "at exit, %zu live object%s in %zu pool%s%s", live, live == 1 ? "" : "s",
                     pools, pools == 1 ? "" : "s", list);
    }
    free(r.row);
}

static void report_at_exit(void) {
    const char *v = getenv("POOLKIT_STATS");
    if (v && *v && strcmp(v, "0") != 0) {
        FILE *f = stderr;
        bool own = strcmp(v, "1") != 0;
        if (own && !(f = fopen(v, "w"))) {
            error_report(PK_WARNING, "bad option", NULL, NULL,
                         "POOLKIT_STATS=%s: cannot open it for writing (%s); no report", v,
                         strerror(errno));
        } else {
            size_t n = strlen(v);
            bool json = own && n > 5 && strcmp(v + n - 5, ".json") == 0;
            pk_stats_print(f, json ? PK_STATS_JSON : 0);
            if (own) fclose(f);
        }
    }
    if (options_debug()) leak_summary();
}

static void install(void) {
    (void)options_verbose(); /* read now, so a malformed value is reported at once */
    atexit(report_at_exit);
}

void stats_at_exit_install(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install);
}
