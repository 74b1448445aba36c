/* The machine line and results.json (PROTOCOL.md). */
#include "lab.h"
#include "json.h"
#include "output.h"

#include <math.h>
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

static void put_key(FILE *f, const char *key) {
    json_put_string(f, key);
    fputc(':', f);
}

static void put_row(FILE *f, const lab_row *r) {
    fputs("{", f);
    put_key(f, "subject");
    json_put_string(f, r->subject);
    fputc(',', f);
    put_key(f, "family");
    json_put_string(f, r->family);
    int have = r->available && r->samples.n > 0;
    fputc(',', f);
    put_key(f, "median");
    json_put_number(f, have ? lab_median(&r->samples) : NAN);
    fputc(',', f);
    put_key(f, "min");
    json_put_number(f, have ? lab_min(&r->samples) : NAN);
    fputc(',', f);
    put_key(f, "max");
    json_put_number(f, have ? lab_max(&r->samples) : NAN);
    fputc(',', f);
    put_key(f, "reps");
    fprintf(f, "%d", r->published_reps || !have ? 0 : r->samples.n);
    fputc(',', f);
    put_key(f, "params");
    fputc('{', f);
    for (int i = 0; i < r->nparams; i++) {
        if (i) fputc(',', f);
        put_key(f, r->params[i].key);
        fputs(r->params[i].value, f);
    }
    fputc('}', f);
    if (r->unit[0]) {
        fputc(',', f);
        put_key(f, "unit");
        json_put_string(f, r->unit);
    }
    fputc(',', f);
    put_key(f, "version");
    json_put_string(f, r->version);
    fputc(',', f);
    put_key(f, "flags");
    json_put_string(f, r->flags);
    fputc(',', f);
    put_key(f, "extra");
    fputc('{', f);
    for (int i = 0; i < r->nextra; i++) {
        if (i) fputc(',', f);
        put_key(f, r->extra[i].name);
        json_put_number(f, lab_median(&r->extra[i].s));
    }
    fputc('}', f);
    fputc(',', f);
    put_key(f, "available");
    fputs(r->available ? "true" : "false", f);
    if (!r->available) {
        fputc(',', f);
        put_key(f, "why");
        json_put_string(f, r->why);
        if (r->failed) {
            fputc(',', f);
            put_key(f, "failed");
            fputs("true", f);
        }
    }
    if (have && !r->published_reps) { /* every repetition, for the charts' spread */
        fputc(',', f);
        put_key(f, "samples");
        fputc('[', f);
        for (int i = 0; i < r->samples.n; i++) {
            if (i) fputc(',', f);
            json_put_number(f, r->samples.v[i]);
        }
        fputc(']', f);
    }
    fputs("}", f);
}

int lab_write_results(const char *path, const lab_experiment *const *done, const double *secs,
                      int ndone, const char *command, double seconds) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    const lab_machine *m = &lab_machine_info;
    fputs("{\n", f);
    put_key(f, "machine");
    fputs("{", f);
    put_key(f, "cpu");
    json_put_string(f, m->cpu);
    fputc(',', f);
    put_key(f, "cores");
    fprintf(f, "%ld", m->cores);
    fputc(',', f);
    put_key(f, "os");
    json_put_string(f, m->os);
    fputc(',', f);
    put_key(f, "compiler");
    json_put_string(f, m->compiler);
    fputc(',', f);
    put_key(f, "flags");
    json_put_string(f, m->flags);
    fputc(',', f);
    put_key(f, "memory_gib");
    fprintf(f, "%.1f", m->memory_gib);
    fputc(',', f);
    put_key(f, "poolkit");
    json_put_string(f, lab_poolkit_version());
    fputs("},\n", f);
    put_key(f, "command");
    json_put_string(f, command);
    fputs(",\n", f);
    put_key(f, "scale");
    json_put_string(f, lab_scale_name(lab_opt.scale));
    fputs(",\n", f);
    put_key(f, "reps");
    fprintf(f, "%d,\n", lab_opt.reps);
    char when[64];
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    put_key(f, "date");
    json_put_string(f, when);
    fputs(",\n", f);
    put_key(f, "duration_s");
    fprintf(f, "%.1f,\n", seconds);
    put_key(f, "experiments");
    fputs("[\n", f);
    for (int e = 0; e < ndone; e++) {
        const lab_experiment *x = done[e];
        fputs(e ? ",\n{" : "{", f);
        put_key(f, "name");
        json_put_string(f, x->name);
        fputc(',', f);
        put_key(f, "title");
        json_put_string(f, x->title);
        fputc(',', f);
        put_key(f, "unit");
        json_put_string(f, x->unit);
        fputc(',', f);
        put_key(f, "duration_s");
        fprintf(f, "%.1f,", secs[e]);
        put_key(f, "rows");
        fputs("[\n", f);
        int first = 1;
        for (int i = 0; i < lab_row_count(); i++) {
            const lab_row *r = lab_row_at(i);
            if (strcmp(r->experiment, x->name)) continue;
            fputs(first ? "  " : ",\n  ", f);
            first = 0;
            put_row(f, r);
        }
        fputs("\n]}", f);
    }
    fputs("\n]\n}\n", f);
    if (fclose(f) != 0) return -1;
    return rename(tmp, path);
}
