/* adapt.h: a purge delay that grows for memory that came back soon after
 * it went, and falls for memory that did not (IDLE_ADAPT, policy.h). One
 * such state per pool (pool/purge.c), one for the kept mappings
 * (mem/retain.c), one for the regions' kept places (mem/region.c); each
 * under the lock of what it guards. Counts are in the caller's unit
 * (slabs, bytes), "made" a running total of what it made afresh. */
#ifndef POOLKIT_ADAPT_H
#define POOLKIT_ADAPT_H

#include "base/policy.h"

#include <stdint.h>

typedef struct idle_adapt {
    uint64_t gone;  /* what the last return gave back (0 once judged) */
    uint64_t mark;  /* the running total made by then */
    uint64_t age;   /* how long what it gave back had waited */
    unsigned shift; /* the doublings of the delay */
} idle_adapt;

/* The last return judged (once): at least half as much made since raises
 * the shift until base, doubled, is over twice its age (at most
 * IDLE_SHIFT_MAX doublings); else the shift falls by one. */
static inline void adapt_judge(idle_adapt *a, uint64_t made, uint64_t base) {
    if (!a->gone) return;
    if (2 * (made - a->mark) >= a->gone) {
        while (a->shift < IDLE_SHIFT_MAX && base << a->shift <= 2 * a->age) a->shift++;
    } else if (a->shift) {
        a->shift--;
    }
    a->gone = 0;
}

/* A return of gone (nothing if 0), made so far, of memory that had waited
 * age: judged later by adapt_judge. */
static inline void adapt_gave(idle_adapt *a, uint64_t gone, uint64_t made, uint64_t age) {
    if (!gone) return;
    a->gone = gone;
    a->mark = made;
    a->age = age;
}

#endif
