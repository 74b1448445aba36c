/* What the lab prints and writes: the machine line, the lines that the
 * experiments' tables share (a contender's head, a target's verdict), and
 * results.json (PROTOCOL.md). */
#include "lab.h"
#include "json.h"
#include "output.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

lab_machine lab_machine_info;

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
    if (isnan(ratio)) return;
    t->any = 1;
    t->met &= ratio <= most;
}

const char *lab_target_verdict(const lab_target *t) {
    return !t->any ? "not measured" : t->met ? "met" : "not met";
}

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
