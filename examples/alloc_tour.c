/* The size-class front end (poolkit/alloc.h): malloc-shaped calls over
 * pools, one pool per size class, found again from the address on free.
 * Also the contract's corners: pk_free_sized, pk_realloc within and across
 * classes, an aligned block, a block too large for any class, and the
 * classes in the stats report. */
#include <poolkit/alloc.h>
#include <poolkit/stats.h>

#include <stdio.h>
#include <string.h>

int main(void) {
    /* Strings of any length, freed without their size. */
    char *words[100];
    for (int i = 0; i < 100; i++) {
        char buf[64];
        int n = snprintf(buf, sizeof buf, "word number %d", i * 7);
        words[i] = pk_alloc((size_t)n + 1);
        memcpy(words[i], buf, (size_t)n + 1);
    }
    printf("%s .. %s: %zu usable bytes in a 15-byte string's class\n", words[0], words[99],
           pk_usable_size(words[99]));
    for (int i = 0; i < 100; i++) pk_free(words[i]);

    /* A record whose size the caller knows: no lookup on free. */
    struct point { double x, y, z; } *p = pk_alloc(sizeof *p);
    p->x = 1;
    pk_free_sized(p, sizeof *p);

    /* A growing array: in place within its class, moved across. */
    int *v = NULL;
    size_t cap = 0;
    for (int i = 0; i < 1000; i++) {
        if ((size_t)i == cap) {
            cap = cap ? cap * 2 : 4;
            v = pk_realloc(v, cap * sizeof *v);
        }
        v[i] = i;
    }
    printf("grew an array to %zu ints (last %d), usable %zu bytes\n", cap, v[999], pk_usable_size(v));
    pk_free(v);

    void *aligned = pk_aligned_alloc(256, 100);
    void *big = pk_calloc(1, (size_t)1 << 20); /* over the last class: its own mapping */
    printf("aligned to 256: %s; a 1 MiB zeroed block: %zu usable bytes\n",
           ((size_t)aligned & 255) == 0 ? "yes" : "no", pk_usable_size(big));
    pk_free(aligned);
    pk_free(big);

    pk_process_stats st;
    pk_stats_get(&st);
    printf("%zu pools hold the classes used so far; %zu objects live\n", st.pools, st.pool_live);
    return st.pool_live == 0 ? 0 : 1;
}
