/* The run lists' index of a region (region.h, region_longest_run): the
 * longest run of set bits of a mask of free places, or REGION_RUN_MAX if
 * it is at least that long, against a count bit by bit, for every single
 * run of places and for masks of many runs (random, thinned, thickened).
 * A region put on too short a list is passed over by a slab whose run it
 * holds (a new region mapped instead); on too long a list, picked for a
 * run it does not hold. Exit 0: passed. */
#include "mem/region.h"

#include "check.h"

#include <stdint.h>

static uint32_t by_bits(uint64_t mask) {
    uint32_t n = 0, best = 0;
    for (int i = 0; i < 64; i++) {
        n = (mask >> i) & 1 ? n + 1 : 0;
        if (n > best) best = n;
    }
    return best < REGION_RUN_MAX ? best : REGION_RUN_MAX;
}

static void check_mask(uint64_t mask) {
    uint32_t got = region_longest_run(mask), want = by_bits(mask);
    CHECK(got == want, "mask %#llx: %u, not %u", (unsigned long long)mask, got, want);
}

int main(void) {
    check_mask(0);
    check_mask(~(uint64_t)0);
    for (int a = 0; a < 64; a++)
        for (int b = a; b < 64; b++) check_mask((~(uint64_t)0 >> (63 - b)) & (~(uint64_t)0 << a));
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (long i = 0; i < 200000; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        check_mask(s);
        check_mask(s & (s >> 3));
        check_mask(s | (s << 5) | (s >> 9));
    }
    return 0;
}
