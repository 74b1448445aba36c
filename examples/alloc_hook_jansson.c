/* jansson on poolkit's size-class front end (poolkit/alloc.h), through its
 * allocator hook, json_set_alloc_funcs: every value, key and string of a
 * parsed document from class pools (jansson frees without sizes). */
#include <poolkit/alloc.h>
#include <poolkit/stats.h>

#include <jansson.h>
#include <stdio.h>

int main(void) {
    json_set_alloc_funcs(pk_alloc, pk_free);
    json_error_t err;
    json_t *doc = json_loads("[{\"name\": \"ada\", \"langs\": [\"c\", \"ml\"]},"
                             " {\"name\": \"bo\", \"langs\": []}]", 0, &err);
    if (!doc) return 1;
    json_object_set_new(json_array_get(doc, 1), "langs", json_pack("[s]", "zig"));
    char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
    printf("%s\n", text);
    pk_process_stats s;
    pk_stats_get(&s);
    printf("poolkit holds %zu live objects for the document\n", s.pool_live);
    pk_free(text);
    json_decref(doc);
    return s.pool_live > 0 ? 0 : 1;
}
