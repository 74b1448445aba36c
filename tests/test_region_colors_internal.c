/* Records in colors (src/mem/region.h, RECORD_COLORS), white-box: a
 * region's records lie in the array its address's low region bits name, so
 * slab_of finds, for every byte of a place, the record region_take handed
 * out for it; regions of different colors put the same place's record in
 * different arrays; a pointer into any region's header place reads a
 * record of no slab (its first REGION_INERT bytes zero); and the times of
 * kept places, written into another color's array, leave the region's own
 * records as they were; a slab of its own mapping lies at color 0, its
 * record in the header's first page, and taken in a mapping kept from
 * before has a zero record. Exit 0: every check passed. */
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

static size_t color_of_address(uintptr_t x) { return (x >> REGION_SHIFT) & (RECORD_COLORS - 1); }

/* The array a record lies in, from its offset in the region's header. */
static size_t array_of_record(const struct slab *s) { return ((uintptr_t)s & (SLAB_BYTES - 1)) / RECORD_ARRAY; }

static int inert(const struct slab *s) {
    static const char zero[REGION_INERT];
    return memcmp(s, zero, REGION_INERT) == 0;
}

#define REGIONS (RECORD_COLORS + 2)
#define PLACES (REGION_SLABS - 1)

int main(void) {
    pk_set_purge_delay(60000); /* places are kept only with a delay */
    static struct slab *rec[REGIONS][PLACES];
    static char *base[REGIONS][PLACES];
    bool warm;
    /* every place of REGIONS regions, taken in turn: the library fills a
     * region before it maps the next */
    size_t regions = 0, n = 0;
    uintptr_t region_of[REGIONS] = {0};
    while (regions < REGIONS) {
        struct slab *s;
        char *b;
        s = region_take(SLAB_BYTES, &warm, &b);
        check(s != NULL, "a place");
        if (!s) return 1;
        uintptr_t r = (uintptr_t)b >> REGION_SHIFT;
        if (n == 0 || r != region_of[regions]) {
            if (n != 0) regions++;
            if (regions == REGIONS) {
                region_give(s, SLAB_BYTES, false);
                break;
            }
            region_of[regions] = r;
            n = 0;
        }
        check(n < PLACES, "a region's places");
        if (n >= PLACES) return 1;
        rec[regions][n] = s;
        base[regions][n] = b;
        memset(s, 0xA5, RECORD_BYTES); /* as a slab would: every byte of its record written */
        n++;
        if (n == PLACES) {
            regions++;
            n = 0;
        }
    }

    size_t colors_seen = 0;
    for (size_t g = 0; g < REGIONS; g++) {
        if (!rec[g][0]) continue;
        uintptr_t rb = (uintptr_t)base[g][0] & ~(uintptr_t)(REGION_BYTES - 1);
        colors_seen |= (size_t)1 << color_of_address(rb);
        for (size_t i = 0; i < PLACES && rec[g][i]; i++) {
            uintptr_t b = (uintptr_t)base[g][i];
            check(slab_of(b) == rec[g][i], "a place's first byte finds its record");
            check(slab_of(b + SLAB_BYTES - 1) == rec[g][i], "a place's last byte finds its record");
            check(array_of_record(rec[g][i]) == color_of_address(b), "a record in its region's color's array");
        }
        /* the header's place reads a record of no slab, whatever the color */
        check(inert(slab_of(rb)), "a region's header place: no slab");
        check(inert(slab_of(rb + SLAB_BYTES - 1)), "the header place's last byte: no slab");
    }
    /* consecutive mappings are neighbours, whose colors differ: at least two
     * colors among REGIONS regions however the system placed them */
    check(__builtin_popcountll(colors_seen) >= 2, "regions of two colors or more");
    /* one place's records of two regions of different colors: in different arrays */
    for (size_t g = 1; g < REGIONS; g++) {
        if (!rec[g][0] || color_of_address((uintptr_t)base[g][0]) == color_of_address((uintptr_t)base[0][0]))
            continue;
        check(((uintptr_t)rec[g][0] & (SLAB_BYTES - 1)) != ((uintptr_t)rec[0][0] & (SLAB_BYTES - 1)),
              "the same place's records of two colors apart");
        break;
    }

    /* in each region, the last place given back kept: its time goes to
     * another color's array, and the region's other records stay as they
     * were written */
    for (size_t g = 0; g < REGIONS; g++) {
        if (!rec[g][PLACES - 1]) continue;
        region_give(rec[g][PLACES - 1], SLAB_BYTES, true);
        rec[g][PLACES - 1] = NULL;
        for (size_t i = 0; i < PLACES - 1 && rec[g][i]; i++) {
            static unsigned char pattern[RECORD_BYTES];
            memset(pattern, 0xA5, sizeof pattern);
            check(memcmp(rec[g][i], pattern, RECORD_BYTES) == 0, "a live record left as written by a kept place's time");
        }
        check(inert(slab_of((uintptr_t)base[g][0] & ~(uintptr_t)(REGION_BYTES - 1))),
              "the header place still no slab once a place is kept");
    }

    /* slabs of their own mappings: at addresses of color 0, their record in
     * the header's first page (one page resident for both); one given back
     * kept with its header's place written all over (as a large block's
     * data would be), then taken again: the mapping comes back (tool builds
     * keep none), its record zero */
    char *hb = NULL, *hb2;
    struct slab *h = NULL;
    for (size_t i = 0; i < 2 * RECORD_COLORS; i++) {
        char *b;
        struct slab *o = region_take(2 * SLAB_BYTES, &warm, &b);
        check(o != NULL, "a slab of its own mapping");
        if (!o) break;
        uintptr_t rb = (uintptr_t)b & ~(uintptr_t)(REGION_BYTES - 1);
        check(color_of_address(rb) == 0, "a slab of its own mapping at color 0");
        check(((uintptr_t)o & ~(uintptr_t)4095) == rb, "its record in the header's first page");
        check(slab_of((uintptr_t)b) == o, "a slab of its own mapping: its record");
        if (h) region_give(h, 2 * SLAB_BYTES, false);
        h = o;
        hb = b;
    }
    if (h) {
        char *hr = (char *)((uintptr_t)hb & ~(uintptr_t)(REGION_BYTES - 1));
        memset(hr + 2 * RECORD_BYTES, 0xA5, SLAB_BYTES - 2 * RECORD_BYTES);
        memset(h, 0xA5, RECORD_BYTES);
        region_give(h, 2 * SLAB_BYTES, true);
        struct slab *h2 = region_take(2 * SLAB_BYTES, &warm, &hb2);
        check(h2 != NULL, "a slab of its own mapping again");
        if (h2) {
            if (!TRACK_ENABLED) check(hb2 == hb, "the kept mapping serves the next slab of that length");
            static const char zero[RECORD_BYTES];
            check(memcmp(h2, zero, RECORD_BYTES) == 0, "a reused mapping's record zero");
            check(slab_of((uintptr_t)hb2) == h2, "its slot's record");
            region_give(h2, 2 * SLAB_BYTES, false);
        }
    }

    for (size_t g = 0; g < REGIONS; g++)
        for (size_t i = 0; i < PLACES; i++)
            if (rec[g][i]) region_give(rec[g][i], SLAB_BYTES, false);
    region_release_kept();
    if (!failed) printf("records in their colors' arrays, headers of no slab, kept times apart\n");
    return failed;
}
