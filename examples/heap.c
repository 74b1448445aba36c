/* A heap per request: blocks of any size, some freed as soon as they are
 * done with, the rest freed whole when the request ends.
 *
 * Each "request" reads a few header lines into strings of their own
 * length, builds a body buffer that grows with pk_heap_realloc, keeps a
 * large scratch block past the size classes, and frees the strings it no
 * longer needs one by one (pk_heap_free, or pk_free, which takes a heap's
 * block too). What is left (the body, the scratch block, the headers kept)
 * goes with pk_heap_destroy at the end of the request, in time that
 * depends on the heap's slabs, not on how many blocks were left. Build:
 * cc heap.c $(pkg-config --cflags --libs poolkit) */
#include <poolkit/poolkit.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *need(void *p, const char *what) {
    if (!p) {
        perror(what);
        exit(1);
    }
    return p;
}

static char *heap_strdup(pk_heap *h, const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(need(pk_heap_alloc(h, n), "pk_heap_alloc"), s, n);
}

static void serve(int id) {
    static const char *const headers[] = {"Host: example.org", "Accept: */*", "User-Agent: poolkit-example/1",
                                          "X-Trace: 7f3a9c"};
    /* PK_HEAP_WHOLE: blocks left at destroy are the plan, not a leak that
     * POOLKIT_DEBUG=1 should report. */
    pk_heap *h = need(pk_heap_create_ex("request", PK_HEAP_WHOLE), "pk_heap_create_ex");

    char *kept[4];
    for (int i = 0; i < 4; i++) kept[i] = heap_strdup(h, headers[i]);

    /* The body grows as data arrives; each resize stays in the heap. */
    size_t len = 0, cap = 16;
    char *body = need(pk_heap_alloc(h, cap), "pk_heap_alloc");
    for (int chunk = 0; chunk < 40 + id * 10; chunk++) {
        char piece[32];
        int n = snprintf(piece, sizeof piece, "chunk %d;", chunk);
        if (len + (size_t)n + 1 > cap) {
            cap *= 2;
            body = need(pk_heap_realloc(h, body, cap), "pk_heap_realloc");
        }
        memcpy(body + len, piece, (size_t)n + 1);
        len += (size_t)n;
    }

    /* A scratch block past the size classes: its own mapping, still the heap's. */
    char *scratch = need(pk_heap_calloc(h, 1, PK_ALLOC_CLASS_MAX + 1), "pk_heap_calloc");
    memcpy(scratch, body, len + 1);

    /* Done with two headers: freed now, one each way. */
    pk_heap_free(h, kept[1]);
    pk_free(kept[3]);

    pk_heap_stats st;
    pk_heap_stats_get(h, &st);
    printf("request %d: %s, body %zu bytes in a block of %zu; %zu blocks live (%zu large) in %zu pools\n", id,
           kept[0], len, pk_usable_size(body), st.blocks, st.large_blocks, st.pools);
    pk_heap_destroy(h); /* the rest, whole */
}

int main(void) {
    for (int id = 1; id <= 3; id++) serve(id);
    return 0;
}
