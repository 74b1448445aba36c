/* The object layer's checks of the pointers it is given: is this an
 * object of pk_new?
 *
 * What counts as an object: a block of the front end whose count word is
 * tagged (object_internal.h), live or dead. The block is found without
 * touching the pointer's memory: a slot start, plus the header, of one of
 * the front end's class pools, by the address map; or the start, plus the
 * header, of a live large block, by the front end's table. Only then is
 * the count word read. Anything else (a stack buffer, a pk_alloc block,
 * another pool's object, an interior pointer) is a "foreign pointer". A
 * pointer that passes may still be a deallocated object: its count says
 * so, and the callers report an over-release.
 *
 * pk_retain and pk_release ask in every mode before they write the count
 * (object.c: the address map inline, the large blocks' table only for
 * pointers the map does not place, then the tag), so a pointer that is
 * not an object is reported, never written. Debug mode (POOLKIT_DEBUG=1, the switch that makes every pool a
 * debug pool, read once in object.c) also checks pk_autorelease's pointers
 * when they are handed over (object_check_slow), not only when the pool
 * pops.
 */
#include "object/object_internal.h"
#include "pool/pool_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- the check ---- */

bool object_in_pools(const void *obj) { return alloc_is_front_class(slab_owner(header_of(obj))); }

bool object_known(const void *obj) {
    size_t usable;
    if ((uintptr_t)obj & 15) return false;
    if (!object_in_pools(obj) && !large_usable(header_of(obj), &usable)) return false;
    return refs_tagged(__atomic_load_n(&header_of(obj)->refs, __ATOMIC_RELAXED));
}

void object_report_foreign(const void *obj, const char *call) {
    pk_pool *owner = ((uintptr_t)obj & 15) ? NULL : slab_owner(header_of(obj));
    char why[128];
    if (alloc_is_front_class(owner))
        snprintf(why, sizeof why, "a block of pool '%s' with no object header (pk_alloc's, "
                 "not pk_new's)", owner->name ? owner->name : "(unnamed)");
    else if (owner)
        snprintf(why, sizeof why, "an object of pool '%s', not of pk_new",
                 owner->name ? owner->name : "(unnamed)");
    else
        snprintf(why, sizeof why, "not a poolkit object (no class pool holds it, and no live "
                                  "large block of pk_new starts there)");
    error_report(PK_FATAL, "foreign pointer", NULL, obj, "%s: %p is %s", call, obj, why);
    abort(); /* error_report never returns from a fatal report */
}

/* object_slow_below is 0 (only NULL goes slow) once POOLKIT_DEBUG is known
 * to be off, UINTPTR_MAX (everything) in debug mode and until the switch
 * is read. */
static signed char debug_state = -1; /* -1 until read, then 0 or 1 */
uintptr_t object_slow_below = UINTPTR_MAX;

bool object_debug(void) {
    signed char s = __atomic_load_n(&debug_state, __ATOMIC_RELAXED);
    if (unlikely(s < 0)) {
        s = options_debug() ? 1 : 0;
        __atomic_store_n(&debug_state, s, __ATOMIC_RELAXED);
        __atomic_store_n(&object_slow_below, s ? UINTPTR_MAX : 0, __ATOMIC_RELAXED);
    }
    return s != 0;
}

void object_check_slow(const void *obj, const char *call) {
    if (object_debug() && !object_known(obj)) object_report_foreign(obj, call);
}
