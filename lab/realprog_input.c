/* realprog's generated inputs (realprog.h): an XML catalogue and a JSON
 * array of records, from a fixed seed, made once per size and kept for the
 * run. Their shape is what the workloads' libraries see in use: many small
 * elements and objects with short strings, numbers, a few nested ones. */
#include "lab.h"
#include "realprog.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct text {
    char *p;
    size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = t->cap * 2 + 4096;
        t->p = realloc(t->p, t->cap);
        if (!t->p) abort();
    }
}

static const char *const words[] = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
                                    "hotel", "india", "juliet", "kilo", "lima", "mike", "november",
                                    "oscar", "papa", "quebec", "romeo", "sierra", "tango"};
#define NWORDS (sizeof words / sizeof words[0])

static void phrase(text *t, shared_rng *r, int n) {
    for (int i = 0; i < n; i++) put(t, "%s%s", i ? " " : "", words[shared_rng_next(r) % NWORDS]);
}

const char *rp_xml_document(size_t bytes, size_t *len) {
    static text t;
    static size_t made;
    if (made != bytes) {
        free(t.p);
        memset(&t, 0, sizeof t);
        shared_rng r = {0x5eed};
        put(&t, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<catalog version=\"3\">\n");
        for (long i = 0; t.len < bytes; i++) {
            put(&t, " <item id=\"%ld\" kind=\"%c\" price=\"%ld.%02ld\">", i, "abc"[shared_rng_next(&r) % 3],
                (long)(shared_rng_next(&r) % 1000), (long)(shared_rng_next(&r) % 100));
            put(&t, "<name>");
            phrase(&t, &r, 2);
            put(&t, " %ld</name><tags>", i);
            for (int k = (int)(shared_rng_next(&r) % 4); k >= 0; k--)
                put(&t, "<tag>t%d</tag>", (int)(shared_rng_next(&r) % 50));
            put(&t, "</tags><desc>");
            phrase(&t, &r, 3 + (int)(shared_rng_next(&r) % 12));
            put(&t, "</desc></item>\n");
        }
        put(&t, "</catalog>\n");
        made = bytes;
    }
    *len = t.len;
    return t.p;
}

const char *rp_json_document(size_t bytes, size_t *len) {
    static text t;
    static size_t made;
    if (made != bytes) {
        free(t.p);
        memset(&t, 0, sizeof t);
        shared_rng r = {0x150f};
        put(&t, "[");
        for (long i = 0; t.len < bytes; i++) {
            put(&t, "%s\n{\"id\":%ld,\"name\":\"", i ? "," : "", i);
            phrase(&t, &r, 2);
            put(&t, "\",\"city\":\"city%d\",\"score\":%d,\"active\":%s,\"tags\":[", (int)(shared_rng_next(&r) % 40),
                (int)(shared_rng_next(&r) % 1000), shared_rng_next(&r) % 2 ? "true" : "false");
            for (int k = (int)(shared_rng_next(&r) % 4); k >= 0; k--)
                put(&t, "\"t%d\"%s", (int)(shared_rng_next(&r) % 50), k ? "," : "");
            put(&t, "],\"pos\":{\"x\":%d.5,\"y\":-%d.25},\"note\":\"", (int)(shared_rng_next(&r) % 100),
                (int)(shared_rng_next(&r) % 100));
            phrase(&t, &r, 1 + (int)(shared_rng_next(&r) % 6));
            put(&t, "\"}");
        }
        put(&t, "\n]\n");
        made = bytes;
    }
    *len = t.len;
    return t.p;
}
