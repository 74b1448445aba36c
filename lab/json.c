/* A small JSON reader and writer (json.h). Recursive descent; strings keep
 * their UTF-8 bytes; \u escapes are decoded to UTF-8. */
#include "json.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct reader {
    const char *p;
    int depth;
} reader;

static int parse_value(reader *r, json *out);

static void skip_ws(reader *r) {
    while (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r') r->p++;
}

static void put_utf8(char **w, unsigned cp) {
    unsigned char *o = (unsigned char *)*w;
    if (cp < 0x80) {
        *o++ = (unsigned char)cp;
    } else if (cp < 0x800) {
        *o++ = (unsigned char)(0xc0 | (cp >> 6));
        *o++ = (unsigned char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *o++ = (unsigned char)(0xe0 | (cp >> 12));
        *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (unsigned char)(0x80 | (cp & 0x3f));
    } else {
        *o++ = (unsigned char)(0xf0 | (cp >> 18));
        *o++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (unsigned char)(0x80 | (cp & 0x3f));
    }
    *w = (char *)o;
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

static char *parse_string(reader *r) {
    if (*r->p != '"') return NULL;
    const char *s = ++r->p;
    size_t len = 0;
    while (s[len] && s[len] != '"') len += s[len] == '\\' && s[len + 1] ? 2 : 1;
    if (s[len] != '"') return NULL;
    char *out = malloc(len + 1), *w = out;
    if (!out) return NULL;
    const char *p = s, *end = s + len;
    while (p < end) {
        if (*p != '\\') {
            *w++ = *p++;
            continue;
        }
        p++;
        switch (*p) {
        case 'n': *w++ = '\n'; break;
        case 't': *w++ = '\t'; break;
        case 'r': *w++ = '\r'; break;
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'u': {
            unsigned cp;
            if (end - p < 5 || !hex4(p + 1, &cp)) {
                free(out);
                return NULL;
            }
            p += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && end - p >= 7 && p[1] == '\\' && p[2] == 'u') {
                unsigned lo;
                if (hex4(p + 3, &lo) && lo >= 0xdc00 && lo < 0xe000) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    p += 6;
                }
            }
            put_utf8(&w, cp); /* 4 bytes at most, never more than the 6 read */
            break;
        }
        default: *w++ = *p; break; /* \" \\ \/ */
        }
        p++;
    }
    *w = 0;
    r->p = end + 1;
    return out;
}

static int parse_container(reader *r, json *out, char close) {
    int cap = 0;
    out->kids = NULL;
    out->n = 0;
    r->p++;
    skip_ws(r);
    if (*r->p == close) {
        r->p++;
        return 1;
    }
    for (;;) {
        if (out->n == cap) {
            cap = cap ? cap * 2 : 8;
            json *k = realloc(out->kids, sizeof(json) * (size_t)cap);
            if (!k) return 0;
            out->kids = k;
        }
        json *kid = &out->kids[out->n];
        memset(kid, 0, sizeof *kid);
        skip_ws(r);
        if (close == '}') {
            kid->key = parse_string(r);
            if (!kid->key) return 0;
            skip_ws(r);
            if (*r->p++ != ':') {
                out->n++;
                return 0;
            }
        }
        out->n++;
        if (!parse_value(r, kid)) return 0;
        skip_ws(r);
        if (*r->p == ',') {
            r->p++;
            continue;
        }
        if (*r->p == close) {
            r->p++;
            return 1;
        }
        return 0;
    }
}

static int parse_value(reader *r, json *out) {
    skip_ws(r);
    if (++r->depth > 64) return 0;
    int ok = 1;
    char c = *r->p;
    if (c == '{') {
        out->type = JSON_OBJECT;
        ok = parse_container(r, out, '}');
    } else if (c == '[') {
        out->type = JSON_ARRAY;
        ok = parse_container(r, out, ']');
    } else if (c == '"') {
        out->type = JSON_STRING;
        ok = (out->string = parse_string(r)) != NULL;
    } else if (strncmp(r->p, "true", 4) == 0) {
        out->type = JSON_BOOL;
        out->number = 1;
        r->p += 4;
    } else if (strncmp(r->p, "false", 5) == 0) {
        out->type = JSON_BOOL;
        r->p += 5;
    } else if (strncmp(r->p, "null", 4) == 0) {
        out->type = JSON_NULL;
        r->p += 4;
    } else if (c == '-' || isdigit((unsigned char)c)) {
        char *end;
        out->type = JSON_NUMBER;
        out->number = strtod(r->p, &end);
        ok = end != r->p;
        r->p = end;
    } else {
        ok = 0;
    }
    r->depth--;
    return ok;
}

static void free_kids(json *j) {
    for (int i = 0; i < j->n; i++) free_kids(&j->kids[i]);
    free(j->kids);
    free(j->string);
    free(j->key);
}

void json_free(json *j) {
    if (!j) return;
    free_kids(j);
    free(j);
}

json *json_parse(const char *text) {
    json *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    reader r = {text, 0};
    if (!parse_value(&r, j)) {
        json_free(j);
        return NULL;
    }
    skip_ws(&r);
    if (*r.p) {
        json_free(j);
        return NULL;
    }
    return j;
}

const json *json_get(const json *obj, const char *key) {
    if (!obj || obj->type != JSON_OBJECT) return NULL;
    for (int i = 0; i < obj->n; i++)
        if (obj->kids[i].key && strcmp(obj->kids[i].key, key) == 0) return &obj->kids[i];
    return NULL;
}

const char *json_str(const json *obj, const char *key) {
    const json *j = json_get(obj, key);
    return j && j->type == JSON_STRING ? j->string : NULL;
}

static void put_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void put_number(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.10g", v);
    else fputs("null", f);
}

/* j as compact JSON text. */
static void put_value(FILE *f, const json *j) {
    switch (j->type) {
    case JSON_NULL: fputs("null", f); break;
    case JSON_BOOL: fputs(j->number ? "true" : "false", f); break;
    case JSON_NUMBER: put_number(f, j->number); break;
    case JSON_STRING: put_string(f, j->string); break;
    case JSON_ARRAY:
    case JSON_OBJECT:
        fputc(j->type == JSON_ARRAY ? '[' : '{', f);
        for (int i = 0; i < j->n; i++) {
            if (i) fputc(',', f);
            if (j->type == JSON_OBJECT) {
                put_string(f, j->kids[i].key);
                fputc(':', f);
            }
            put_value(f, &j->kids[i]);
        }
        fputc(j->type == JSON_ARRAY ? ']' : '}', f);
        break;
    }
}

void json_write(const json *j, char *out, size_t len) {
    if (!len) return;
    out[0] = 0;
    FILE *f = fmemopen(out, len, "w");
    if (!f) return;
    put_value(f, j);
    fclose(f);
    out[len - 1] = 0; /* text longer than out is cut */
}

void jw_begin(json_writer *w, FILE *f) {
    memset(w, 0, sizeof *w);
    w->f = f;
}

/* The separator and the key before a value. */
static void jw_lead(json_writer *w, const char *key) {
    if (w->depth > 0) {
        if (w->count[w->depth - 1]++) fputc(',', w->f);
        if (w->depth <= 4) fputs("\n", w->f);
    }
    if (key) {
        put_string(w->f, key);
        fputc(':', w->f);
    }
}

static void jw_open(json_writer *w, const char *key, char open, char close) {
    jw_lead(w, key);
    fputc(open, w->f);
    if (w->depth < JSON_WRITER_DEPTH) {
        w->count[w->depth] = 0;
        w->close[w->depth] = close;
    }
    w->depth++;
}

void jw_object(json_writer *w, const char *key) { jw_open(w, key, '{', '}'); }
void jw_array(json_writer *w, const char *key) { jw_open(w, key, '[', ']'); }

void jw_end(json_writer *w) {
    if (w->depth == 0) return;
    w->depth--;
    if (w->depth < 4 && w->count[w->depth]) fputc('\n', w->f);
    fputc(w->depth < JSON_WRITER_DEPTH ? w->close[w->depth] : '}', w->f);
    if (w->depth == 0) fputc('\n', w->f);
}

void jw_string(json_writer *w, const char *key, const char *v) {
    jw_lead(w, key);
    put_string(w->f, v);
}

void jw_number(json_writer *w, const char *key, double v) {
    jw_lead(w, key);
    put_number(w->f, v);
}

void jw_int(json_writer *w, const char *key, long v) {
    jw_lead(w, key);
    fprintf(w->f, "%ld", v);
}

void jw_bool(json_writer *w, const char *key, int v) {
    jw_lead(w, key);
    fputs(v ? "true" : "false", w->f);
}

void jw_raw(json_writer *w, const char *key, const char *text) {
    jw_lead(w, key);
    fputs(text, w->f);
}
