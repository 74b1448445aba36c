/* Runs of places (src/mem/region.c), white-box: once HUGE_OWN_MAX slabs of
 * more than a place hold mappings of their own, the next take a run of
 * places in a shared region. A run over places whose records old slabs
 * left behind has every record zero (a pointer into its later places reads
 * one: slab_of), and a run given back kept is counted kept, place by place,
 * and serves the next run as backed memory (tool builds keep no place:
 * there the run goes back at once). Exit 0: every check passed. */
#include "mem/region.h"
#include "base/track.h"

#include <poolkit/pool.h>

#include <stdio.h>
#include <string.h>

static int failed;

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "FAILED: %s\n", what);
        failed = 1;
    }
}

static int record_zero(const struct slab *s) {
    static const char zero[RECORD_BYTES];
    return memcmp(s, zero, RECORD_BYTES) == 0;
}

int main(void) {
    pk_set_purge_delay(60000); /* places are kept only with a delay */
    /* the mappings of their own first */
    static struct slab *own[HUGE_OWN_MAX];
    bool warm;
    char *base;
    for (size_t i = 0; i < HUGE_OWN_MAX; i++) {
        own[i] = region_take(2 * SLAB_BYTES, &warm, &base);
        if (!own[i]) {
            fprintf(stderr, "no mapping for slab %zu\n", i);
            return 1;
        }
    }
    /* a region's places each with a record an old slab wrote, all but the
     * first given back, which keeps the region */
    struct slab *one[REGION_SLABS - 1];
    char *bases[REGION_SLABS - 1];
    size_t n = 0;
    for (; n < REGION_SLABS - 1; n++) {
        one[n] = region_take(SLAB_BYTES, &warm, &bases[n]);
        check(one[n] != NULL, "a place");
        if (!one[n]) return 1;
        if (n && (uintptr_t)bases[n] >> REGION_SHIFT != (uintptr_t)bases[0] >> REGION_SHIFT) break;
        if (n) memset(one[n], 0xA5, RECORD_BYTES);
    }
    check(n == REGION_SLABS - 1, "a region's places taken in turn");
    for (size_t i = 1; i < n; i++) region_give(one[i], SLAB_BYTES, false);

    /* a run of four over them: every record of it zero */
    struct slab *run = region_take(4 * SLAB_BYTES, &warm, &base);
    check(run != NULL, "a run");
    if (!run) return 1;
    check((uintptr_t)base >> REGION_SHIFT == (uintptr_t)bases[0] >> REGION_SHIFT, "the run in the region with room");
    for (size_t j = 0; j < 4; j++) check(record_zero(slab_of((uintptr_t)base + j * SLAB_BYTES)), "a run's record zero");

    /* a second run beside it given back kept, the first not: four places
     * kept, and the next run takes them, warm, before the free ones */
    char *base2;
    struct slab *run2 = region_take(4 * SLAB_BYTES, &warm, &base2);
    check(run2 != NULL && base2 == base + 4 * SLAB_BYTES, "a second run beside the first");
    if (!run2) return 1;
    size_t kept = region_kept_bytes(), k = TRACK_ENABLED ? 0 : 1;
    region_give(run, 4 * SLAB_BYTES, false);
    region_give(run2, 4 * SLAB_BYTES, true);
    check(region_kept_bytes() == kept + k * 4 * SLAB_BYTES, "a run kept counts its places");
    char *again;
    run = region_take(3 * SLAB_BYTES, &warm, &again);
    check(run != NULL && again == (k ? base2 : base) && warm == (k == 1), "a kept run serves the next run, warm");
    check(region_kept_bytes() == kept + k * SLAB_BYTES, "the run taken from kept places counts them out");
    if (run) region_give(run, 3 * SLAB_BYTES, false);
    check(region_release_kept() == k * SLAB_BYTES, "the place left kept goes back");
    check(region_kept_bytes() == kept, "none kept");

    region_give(one[0], SLAB_BYTES, false);
    if (n < REGION_SLABS - 1) region_give(one[n], SLAB_BYTES, false);
    for (size_t i = 0; i < HUGE_OWN_MAX; i++) region_give(own[i], 2 * SLAB_BYTES, false);
    if (!failed) printf("runs over old records zero, kept runs counted\n");
    return failed;
}
