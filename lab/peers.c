/* The allocator adapters: the list, in report order, and what they share
 * (loading a library at run time, the version line). */
#include "lab.h"

#include <dlfcn.h>
#include <string.h>

void lab_adapter_glibc(lab_allocator *a);
void lab_adapter_jemalloc(lab_allocator *a);
void lab_adapter_mimalloc(lab_allocator *a);
void lab_adapter_tcmalloc(lab_allocator *a);
void lab_adapter_boost_pool(lab_allocator *a);
void lab_adapter_boost_object_pool(lab_allocator *a);
void lab_adapter_gslice(lab_allocator *a);
void lab_adapter_apr(lab_allocator *a);
void lab_adapter_talloc(lab_allocator *a);
void lab_adapter_pk_pool(lab_allocator *a);
void lab_adapter_pk_arena(lab_allocator *a);
void lab_adapter_empty(lab_allocator *a);
void lab_adapter_naive(lab_allocator *a);
void lab_adapter_pk_pool_local(lab_allocator *a);
void lab_adapter_pk_pool_hardened(lab_allocator *a);
void lab_adapter_pk_pool_debug(lab_allocator *a);

static void (*const adapters[])(lab_allocator *) = {
    lab_adapter_glibc,      lab_adapter_jemalloc,   lab_adapter_mimalloc,
    lab_adapter_tcmalloc,   lab_adapter_boost_pool, lab_adapter_boost_object_pool,
    lab_adapter_gslice,     lab_adapter_apr,        lab_adapter_talloc,
    lab_adapter_pk_pool,    lab_adapter_pk_arena,   lab_adapter_empty,
    /* for bench/'s programs: its reference and poolkit's other modes */
    lab_adapter_naive,      lab_adapter_pk_pool_local, lab_adapter_pk_pool_hardened,
    lab_adapter_pk_pool_debug,
};
#define NADAPTERS (int)(sizeof adapters / sizeof adapters[0])

static lab_allocator table[NADAPTERS];
static lab_allocator *list[NADAPTERS + 1];

lab_allocator **lab_allocators(void) {
    if (!list[0]) {
        for (int i = 0; i < NADAPTERS; i++) {
            adapters[i](&table[i]);
            if (!table[i].available && !table[i].why[0])
                snprintf(table[i].why, sizeof table[i].why, "could not be loaded");
            list[i] = &table[i];
        }
    }
    return list;
}

lab_allocator *lab_allocator_named(const char *subject) {
    for (lab_allocator **a = lab_allocators(); *a; a++)
        if (strcmp((*a)->subject, subject) == 0) return *a;
    return NULL;
}

void lab_version_line(char *out, size_t len, const char *name, const char *version,
                      const char *package) {
    const char *deb = package ? lab_deb_version(package) : "";
    snprintf(out, len, "%s%s%s%s%s", name, version, *deb ? " (Debian " : "", deb,
             *deb ? ")" : "");
}

