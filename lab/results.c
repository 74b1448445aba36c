/* Rows: one per (experiment, subject, params), holding every repetition's
 * sample; merged into median, min and max when results.json is written
 * (format: PROTOCOL.md). */
#include "lab.h"
#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static lab_row **rows;
static int nrows, caprows;

int lab_row_count(void) { return nrows; }
lab_row *lab_row_at(int i) { return rows[i]; }

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
