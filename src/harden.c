/* Hardening's out-of-line half (harden.h says what each check is): the
 * report every check shares, with its wording.
 */
#include "pool_internal.h"

#include <stdlib.h>

void report_corrupted_link(const pk_pool *p, const void *holder, const void *link, const char *why) {
    error_report(PK_FATAL, "corrupted free list", p->name, holder,
                 "the free object %p of pool '%s' links to %p, which is %s: most likely a double "
                 "free or a write after free of object %p",
                 holder, pool_name(p), link, why, holder);
    abort(); /* error_report never returns from a fatal report */
}
