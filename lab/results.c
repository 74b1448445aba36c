/* Rows: one per (experiment, subject, params), holding every repetition's
 * sample; merged into median, min and max when results.json is written
 * (format: PROTOCOL.md). Then what the lab prints and writes from them:
 * the machine line, the lines that the experiments' tables share (a
 * contender's head, a target's verdict), and results.json. */
#include "lab.h"
#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static lab_row **rows;
static int nrows, caprows;

int lab_row_count(void) { return nrows; }
lab_row *lab_row_at(int i) { return rows[i]; }

int lab_row_first_of_subject(int i) {
    for (int k = 0; k < i; k++)
        if (!strcmp(rows[k]->experiment, rows[i]->experiment) && !strcmp(rows[k]->subject, rows[i]->subject))
            return 0;
    return 1;
}

void lab_pset_str(lab_params *ps, const char *key, const char *value) {
    if (ps->n >= LAB_MAX_PARAMS) return;
    json j = {0};
    j.type = JSON_STRING;
    j.string = (char *)value;
    snprintf(ps->p[ps->n].key, sizeof ps->p[ps->n].key, "%s", key);
    json_write(&j, ps->p[ps->n].value, sizeof ps->p[ps->n].value);
    ps->n++;
}

void lab_pset_num(lab_params *ps, const char *key, double value) {
    if (ps->n >= LAB_MAX_PARAMS) return;
    snprintf(ps->p[ps->n].key, sizeof ps->p[ps->n].key, "%s", key);
    snprintf(ps->p[ps->n].value, sizeof ps->p[ps->n].value, "%.10g", value);
    ps->n++;
}

static int same_params(const lab_row *r, const lab_params *ps) {
    if (r->nparams != (ps ? ps->n : 0)) return 0;
    for (int i = 0; i < r->nparams; i++)
        if (strcmp(r->params[i].key, ps->p[i].key) || strcmp(r->params[i].value, ps->p[i].value))
            return 0;
    return 1;
}

lab_row *lab_row_lookup(const char *experiment, const char *subject, const lab_params *ps) {
    for (int i = 0; i < nrows; i++) {
        lab_row *r = rows[i];
        if (!strcmp(r->experiment, experiment) && !strcmp(r->subject, subject) &&
            same_params(r, ps))
            return r;
    }
    return NULL;
}

lab_row *lab_row_get(const char *experiment, const char *subject, const char *family,
                     const lab_params *ps) {
    lab_row *r = lab_row_lookup(experiment, subject, ps);
    if (r) return r;
    if (nrows == caprows) {
        caprows = caprows ? caprows * 2 : 256;
        rows = realloc(rows, sizeof *rows * (size_t)caprows);
        if (!rows) abort();
    }
    r = calloc(1, sizeof *r);
    if (!r) abort();
    snprintf(r->experiment, sizeof r->experiment, "%s", experiment);
    snprintf(r->subject, sizeof r->subject, "%s", subject);
    snprintf(r->family, sizeof r->family, "%s", family);
    if (ps) {
        memcpy(r->params, ps->p, sizeof(lab_param) * (size_t)ps->n);
        r->nparams = ps->n;
    }
    r->available = 1;
    snprintf(r->flags, sizeof r->flags, "%s", lab_flags());
    rows[nrows++] = r;
    return r;
}

void lab_row_sample(lab_row *r, double v) {
    if (lab_warming || r->samples.n >= LAB_MAX_REPS) return;
    r->samples.v[r->samples.n++] = v;
}

void lab_row_extra(lab_row *r, const char *name, double v) {
    if (lab_warming) return;
    int i = 0;
    while (i < r->nextra && strcmp(r->extra[i].name, name)) i++;
    if (i == r->nextra) {
        if (r->nextra == LAB_MAX_EXTRA) return;
        snprintf(r->extra[i].name, sizeof r->extra[i].name, "%s", name);
        r->nextra++;
    }
    lab_series *s = &r->extra[i].s;
    if (s->n < LAB_MAX_REPS) s->v[s->n++] = v;
}

void lab_row_info(lab_row *r, const char *version, const char *flags) {
    if (version) snprintf(r->version, sizeof r->version, "%s", version);
    if (flags) snprintf(r->flags, sizeof r->flags, "%s", flags);
}

void lab_row_unavailable(lab_row *r, const char *why) {
    r->available = 0;
    snprintf(r->why, sizeof r->why, "%s", why && *why ? why : "not available");
}

lab_row *lab_published(const char *experiment, const char *subject, const lab_params *ps,
                       const char *unit, double v) {
    lab_row *r = lab_row_get(experiment, subject, "published", ps);
    r->samples.n = 1;
    r->samples.v[0] = v;
    r->published_reps = 1;
    r->flags[0] = 0;
    if (unit) snprintf(r->unit, sizeof r->unit, "%s", unit);
    return r;
}

const char *lab_param_get(const lab_row *r, const char *key) {
    for (int i = 0; i < r->nparams; i++)
        if (!strcmp(r->params[i].key, key)) return r->params[i].value;
    return NULL;
}

lab_row *lab_find(const char *experiment, const char *subject, ...) {
    for (int i = 0; i < nrows; i++) {
        lab_row *r = rows[i];
        if (strcmp(r->experiment, experiment) || strcmp(r->subject, subject)) continue;
        va_list ap;
        va_start(ap, subject);
        int ok = 1;
        const char *k;
        while (ok && (k = va_arg(ap, const char *))) {
            const char *want = va_arg(ap, const char *);
            const char *have = lab_param_get(r, k);
            ok = have && !strcmp(have, want);
        }
        va_end(ap);
        if (ok) return r;
    }
    return NULL;
}

double lab_median(const lab_series *s) { return shared_median(s); }
double lab_min(const lab_series *s) { return shared_min(s); }
double lab_max(const lab_series *s) { return shared_max(s); }

double lab_row_median(const lab_row *r) {
    return r && r->available && r->samples.n ? lab_median(&r->samples) : NAN;
}

double lab_vs_pool(const lab_row *r) {
    return r && r->available ? lab_extra_median(r, LAB_VS_POOL) : NAN;
}

double lab_extra_median(const lab_row *r, const char *name) {
    for (int i = 0; i < r->nextra; i++)
        if (!strcmp(r->extra[i].name, name)) return lab_median(&r->extra[i].s);
    return NAN;
}

lab_row *lab_row_for(const char *experiment, const lab_allocator *a, const lab_params *ps) {
    lab_row *r = lab_row_get(experiment, a->subject, a->family, ps);
    if (!r->version[0]) lab_row_info(r, a->version, NULL);
    if (!a->available) lab_row_unavailable(r, a->why);
    return r;
}

const char *lab_fmt(double v, char *buf) {
    if (isnan(v)) {
        snprintf(buf, 32, "-");
    } else if (fabs(v) >= 10000 || (v == floor(v) && fabs(v) >= 1 && fabs(v) < 1e15)) {
        char raw[32];
        snprintf(raw, sizeof raw, "%.0f", fabs(v));
        size_t n = strlen(raw), o = 0;
        if (v < 0) buf[o++] = '-';
        for (size_t i = 0; i < n && o < 30; i++) {
            buf[o++] = raw[i];
            if ((n - i - 1) % 3 == 0 && i + 1 < n) buf[o++] = ',';
        }
        buf[o] = 0;
    } else if (fabs(v) >= 100) {
        snprintf(buf, 32, "%.0f", v);
    } else if (fabs(v) >= 10) {
        snprintf(buf, 32, "%.1f", v);
    } else if (fabs(v) >= 1) {
        snprintf(buf, 32, "%.2f", v);
    } else {
        snprintf(buf, 32, "%.3g", v);
    }
    return buf;
}

const char *lab_fmt_row(const lab_row *r, char *buf) {
    if (!r) return snprintf(buf, 32, "-"), buf;
    if (!r->available) return snprintf(buf, 32, r->failed ? "failed" : "n/a"), buf;
    return lab_fmt(lab_median(&r->samples), buf);
}

/* ---- the machine line ---- */

typedef struct lab_machine {
    char cpu[160];
    long cores;
    char os[256];
    char compiler[160];
    char flags[256];
    double memory_gib;
} lab_machine;

static lab_machine lab_machine_info;

static void os_name(char *out, size_t len) {
    char pretty[128] = "Linux";
    FILE *f = fopen("/etc/os-release", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            if (!strncmp(line, "PRETTY_NAME=", 12)) {
                char *v = line + 12;
                v[strcspn(v, "\n")] = 0;
                if (*v == '"') {
                    v++;
                    v[strcspn(v, "\"")] = 0;
                }
                snprintf(pretty, sizeof pretty, "%.120s", v);
            }
        }
        fclose(f);
    }
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(out, len, "%.100s, %.30s %.60s %.20s", pretty, u.sysname, u.release, u.machine);
    else
        snprintf(out, len, "%s", pretty);
}

void lab_machine_probe(void) {
    lab_machine *m = &lab_machine_info;
    shared_cpu_model(m->cpu, sizeof m->cpu);
    m->cores = sysconf(_SC_NPROCESSORS_ONLN);
    os_name(m->os, sizeof m->os);
    snprintf(m->compiler, sizeof m->compiler, "%s", lab_compiler());
    snprintf(m->flags, sizeof m->flags, "%s", lab_flags());
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    m->memory_gib = pages > 0 && page > 0 ? (double)pages * (double)page / (1024.0 * 1024 * 1024) : 0;
}

void lab_machine_line(FILE *out) {
    const lab_machine *m = &lab_machine_info;
    fprintf(out, "machine: %s, %ld cores, %.0f GiB; %s; %s; %s\n", m->cpu, m->cores, m->memory_gib,
            m->os, m->flags, lab_poolkit_version());
}

/* ---- the tables' shared lines ---- */

lab_allocator *lab_table_subject(FILE *out, const char *subject, int width) {
    lab_allocator *a = lab_allocator_named(subject);
    if (!a) return NULL;
    fprintf(out, "  %-*s", width, a->subject);
    if (!a->available) {
        fprintf(out, " n/a: %.80s\n", a->why);
        return NULL;
    }
    return a;
}

void lab_target_add(lab_target *t, const char *sep, double ratio, double most, const char *fmt, ...) {
    size_t n = strlen(t->line);
    snprintf(t->line + n, sizeof t->line - n, "%s", n ? sep : "");
    n = strlen(t->line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->line + n, sizeof t->line - n, fmt, ap);
    va_end(ap);
    /* a figure not measured (a peer this machine lacks) reads "-", as
     * lab_fmt prints it, not printf's "nan" */
    for (char *q = t->line + n; (q = strstr(q, "nan")) != NULL;) {
        char *from = q > t->line && q[-1] == '-' ? q - 1 : q;
        char *rest = q + 3 + (q[3] == 'x'); /* a ratio's "x" with it */
        *from = '-';
        memmove(from + 1, rest, strlen(rest) + 1);
        q = from + 1;
    }
    if (isnan(ratio)) return;
    t->any = 1;
    t->met &= ratio <= most;
}

const char *lab_target_verdict(const lab_target *t) {
    return !t->any ? "not measured" : t->met ? "met" : "not met";
}

/* ---- results.json ---- */

static void put_row(json_writer *w, const lab_row *r) {
    int have = r->available && r->samples.n > 0;
    jw_object(w, NULL);
    jw_string(w, "subject", r->subject);
    jw_string(w, "family", r->family);
    jw_number(w, "median", have ? lab_median(&r->samples) : NAN);
    jw_number(w, "min", have ? lab_min(&r->samples) : NAN);
    jw_number(w, "max", have ? lab_max(&r->samples) : NAN);
    jw_int(w, "reps", r->published_reps || !have ? 0 : r->samples.n);
    jw_object(w, "params");
    for (int i = 0; i < r->nparams; i++) jw_raw(w, r->params[i].key, r->params[i].value);
    jw_end(w);
    if (r->unit[0]) jw_string(w, "unit", r->unit);
    jw_string(w, "version", r->version);
    jw_string(w, "flags", r->flags);
    jw_object(w, "extra");
    for (int i = 0; i < r->nextra; i++) jw_number(w, r->extra[i].name, lab_median(&r->extra[i].s));
    jw_end(w);
    jw_bool(w, "available", r->available);
    if (!r->available) {
        jw_string(w, "why", r->why);
        if (r->failed) jw_bool(w, "failed", 1);
    }
    if (have && !r->published_reps) { /* every repetition, for the charts' spread */
        jw_array(w, "samples");
        for (int i = 0; i < r->samples.n; i++) jw_number(w, NULL, r->samples.v[i]);
        jw_end(w);
    }
    jw_end(w);
}

int lab_write_results(const char *path, const lab_experiment *const *done, const double *secs,
                      int ndone, const char *command, double seconds) {
    char tmp[4200], when[64];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    const lab_machine *m = &lab_machine_info;
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    json_writer w;
    jw_begin(&w, f);
    jw_object(&w, NULL);
    jw_object(&w, "machine");
    jw_string(&w, "cpu", m->cpu);
    jw_int(&w, "cores", m->cores);
    jw_string(&w, "os", m->os);
    jw_string(&w, "compiler", m->compiler);
    jw_string(&w, "flags", m->flags);
    jw_number(&w, "memory_gib", round(m->memory_gib * 10) / 10);
    jw_string(&w, "poolkit", lab_poolkit_version());
    jw_end(&w);
    jw_string(&w, "command", command);
    jw_string(&w, "scale", lab_scale_name(lab_opt.scale));
    jw_int(&w, "reps", lab_opt.reps);
    jw_string(&w, "date", when);
    jw_number(&w, "duration_s", round(seconds * 10) / 10);
    jw_array(&w, "experiments");
    for (int e = 0; e < ndone; e++) {
        const lab_experiment *x = done[e];
        jw_object(&w, NULL);
        jw_string(&w, "name", x->name);
        jw_string(&w, "title", x->title);
        jw_string(&w, "unit", x->unit);
        jw_number(&w, "duration_s", round(secs[e] * 10) / 10);
        jw_array(&w, "rows");
        for (int i = 0; i < lab_row_count(); i++) {
            const lab_row *r = lab_row_at(i);
            if (!strcmp(r->experiment, x->name)) put_row(&w, r);
        }
        jw_end(&w);
        jw_end(&w);
    }
    jw_end(&w);
    jw_end(&w);
    if (fclose(f) != 0) return -1;
    return rename(tmp, path);
}
