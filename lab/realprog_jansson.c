/* realprog's JSON workload (realprog.h), through jansson's
 * json_set_alloc_funcs: a generated array of many small records
 * (realprog_input.c) parsed, every record changed (a field added, one
 * removed, one rewritten), serialized with sorted keys, and freed; then
 * each record serialized on its own, as a server answers one request per
 * record. The hash covers every serialized text. */
#include "lab.h"
#include "realprog.h"

#ifdef LAB_HAVE_JANSSON
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static size_t doc_bytes(double scale) { return (size_t)(12e6 * scale) + 20000; }

static void input(double scale) {
    size_t len;
    rp_json_document(doc_bytes(scale), &len);
}

static uint64_t run(const rp_alloc *a, double scale, double *ns) {
    json_set_alloc_funcs(a->malloc, a->free);
    size_t len;
    const char *text = rp_json_document(doc_bytes(scale), &len);
    double t0 = lab_now_ns();
    json_error_t err;
    json_t *all = json_loadb(text, len, 0, &err);
    if (!all) {
        fprintf(stderr, "jansson workload: line %d: %s\n", err.line, err.text);
        exit(1);
    }
    uint64_t h = RP_HASH_INIT;
    size_t i;
    json_t *rec;
    json_array_foreach(all, i, rec) {
        json_int_t score = json_integer_value(json_object_get(rec, "score"));
        json_object_set_new(rec, "rank", json_integer(score / 100));
        json_object_del(rec, "note");
        json_t *tags = json_object_get(rec, "tags");
        json_array_append_new(tags, json_string("seen"));
        char *one = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
        h = rp_hash(h, one, strlen(one));
        a->free(one);
    }
    char *out = json_dumps(all, JSON_COMPACT | JSON_SORT_KEYS);
    h = rp_hash(h, out, strlen(out));
    a->free(out);
    json_decref(all);
    *ns = lab_now_ns() - t0;
    return h;
}

const rp_hook_workload rp_jansson = {
    "jansson", "jansson (json_set_alloc_funcs): parse many small records, change, serialize each and all",
    NULL, input, run};
#else
const rp_hook_workload rp_jansson = {"jansson", "jansson (json_set_alloc_funcs)",
                                     "jansson's headers were not found when pk-lab was built "
                                     "(apt-get install libjansson-dev, then rebuild)",
                                     NULL, NULL};
#endif
