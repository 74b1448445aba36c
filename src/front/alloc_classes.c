/* The size classes' table, which alloc_class_of (alloc_internal.h) reads:
 * a file of its own, below every other of the front end's, because all of
 * them find a size's class with it (alloc.c's classes, the hardened front
 * end's, pk_heap's), and none may call up to alloc.c for it.
 */
#include "front/alloc_internal.h"

/* (size + 7) / 8 to the class, for sizes up to PK__ALLOC_SMALL_MAX: entry
 * i is the smallest class of at least 8 * i bytes (alloc_class_size's
 * rule; tests/test_alloc.cc checks every size against it). */
const unsigned char alloc_small_class[PK__ALLOC_SMALL_MAX / 8 + 1] = {
    [0 ... 1] = 0,     [2] = 1,           [3 ... 4] = 2,     [5 ... 6] = 3,     [7 ... 8] = 4,
    [9 ... 10] = 5,    [11 ... 12] = 6,   [13 ... 14] = 7,   [15 ... 16] = 8,   [17 ... 20] = 9,
    [21 ... 24] = 10,  [25 ... 28] = 11,  [29 ... 32] = 12,  [33 ... 40] = 13,  [41 ... 48] = 14,
    [49 ... 56] = 15,  [57 ... 64] = 16,  [65 ... 80] = 17,  [81 ... 96] = 18,  [97 ... 112] = 19,
    [113 ... 128] = 20,
};
_Static_assert(PK__ALLOC_SMALL_MAX / 8 == 128, "the table above ends at entry 128 (1024 bytes)");
