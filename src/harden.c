/* Hardening's out-of-line half (harden.h says what each check is): the
 * address-map check of a cache list's link (CHECKED NEXT, on the generic
 * and bulk paths; the lean path checks inline and comes here only for a
 * link its own checks cannot place) and the report every check shares,
 * with its wording.
 */
#include "pool_internal.h"

#include <stdlib.h>

char *harden_check_link(pk_pool *p, void *obj, char *n) {
    if (slab_owner(n) == p) return n;
    report_corrupted_link(p, obj, n, "not one of its objects");
}

void report_corrupted_link(const pk_pool *p, const void *holder, const void *link, const char *why) {
    error_report(PK_FATAL, "corrupted free list", p->name, holder,
                 "the free object %p of pool '%s' links to %p, which is %s: most likely a double "
                 "free or a write after free of object %p",
                 holder, pool_name(p), link, why, holder);
    abort(); /* error_report never returns from a fatal report */
}
