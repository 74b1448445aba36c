/* slab_has_slot (src/mem/slab.h), the short path's check that a freed pointer
 * starts one of its slab's slots with one multiply and one compare: for
 * slots of many sizes (powers of two, multiples of 16, odd ones, a slab's
 * whole place, huge ones), every address from a slab's place below slot 0
 * to the end of its region is taken exactly when it starts a slot. */
#include "mem/slab.h"

#include <stdio.h>
#include <string.h>

int main(void) {
    static const uint64_t slots[] = {8, 16, 24, 32, 48, 64, 80, 96, 104, 112, 128, 160, 192, 224, 256, 320,
                                     1000, 1024, 4096, 5120, 8192, 10240, 32768, 65536, 98304, 262144,
                                     (uint64_t)4 << 20};
    const int64_t below = (int64_t)SLAB_BYTES, past = (int64_t)REGION_BYTES;
    size_t wrong = 0;
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        uint64_t slot = slots[i];
        slab s;
        memset(&s, 0, sizeof s);
        uint32_t capacity = slot <= SLAB_BYTES ? (uint32_t)(SLAB_BYTES / slot) : 1;
        s.objects = (char *)((uintptr_t)0x7f1234400000 + (slot > SLAB_BYTES ? SLAB_BYTES : 0));
        slab_grid_set(&s, slot, capacity);
        int64_t step = slot >= 4096 ? 8 : 1; /* every address for small slots; large ones every 8 */
        for (int64_t off = -below; off < past; off += step) {
            int want = off >= 0 && (uint64_t)off % slot == 0 && (uint64_t)off / slot < capacity;
            int got = slab_has_slot(&s, (uintptr_t)s.objects + (uintptr_t)off);
            if (got != want && wrong++ < 5)
                fprintf(stderr, "slot %llu, offset %lld: %s\n", (unsigned long long)slot, (long long)off,
                        want ? "a slot start refused" : "taken, though no slot starts there");
        }
    }
    if (wrong) {
        fprintf(stderr, "%zu addresses judged wrong\n", wrong);
        return 1;
    }
    printf("every address judged right\n");
    return 0;
}
