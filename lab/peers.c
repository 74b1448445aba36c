/* The allocator adapters: the list, in report order, and what they share
 * (loading a library at run time, the version line). */
#include "lab.h"

#include <dlfcn.h>
#include <glob.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef LAB_SOURCE_DIR
#  define LAB_SOURCE_DIR "."
#endif

void lab_adapter_glibc(lab_allocator *a);
void lab_adapter_jemalloc(lab_allocator *a);
void lab_adapter_mimalloc(lab_allocator *a);
void lab_adapter_mimalloc3(lab_allocator *a);
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
    lab_adapter_mimalloc3,  lab_adapter_tcmalloc,   lab_adapter_boost_pool, lab_adapter_boost_object_pool,
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


/* ---- mimalloc 3 from PyPI ---- */

/* The first match of pattern, or 0. */
static int glob_first(const char *pattern, char *out, size_t len) {
    glob_t g;
    int found = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0;
    if (found) snprintf(out, len, "%s", g.gl_pathv[g.gl_pathc - 1]); /* the newest python3.N */
    globfree(&g);
    return found;
}

#define MI3_SITE LAB_SOURCE_DIR "/.venv/lib/python3*/site-packages/"

const char *lab_mimalloc3_path(char *why, size_t len) {
    static char path[4096];
    const char *env = getenv("PK_LAB_MIMALLOC3");
    if (env && *env) {
        snprintf(path, sizeof path, "%s", env);
        return path;
    }
    if (glob_first(MI3_SITE "cmeel.prefix/lib/libmimalloc.so.3", path, sizeof path)) return path;
    snprintf(why, len, "libmimalloc.so.3 not found in %s/.venv (scripts/lab-setup.sh installs PyPI's "
             "cmeel-mimalloc, pinned in lab/requirements.txt; or set PK_LAB_MIMALLOC3)", LAB_SOURCE_DIR);
    return NULL;
}

void lab_mimalloc3_version(void *lib, char *out, size_t len) {
    char v[32], dist[4096], wheel[64] = "";
    shared_mimalloc_version(lib, v, sizeof v);
    if (glob_first(MI3_SITE "cmeel_mimalloc-*.dist-info", dist, sizeof dist)) {
        /* ".../cmeel_mimalloc-3.4.3.dist-info" */
        const char *v0 = strstr(dist, "cmeel_mimalloc-"), *end = strstr(dist, ".dist-info");
        if (v0 && end > v0 + 15) snprintf(wheel, sizeof wheel, "%.*s", (int)(end - v0 - 15), v0 + 15);
    }
    if (wheel[0]) snprintf(out, len, "mimalloc%s (PyPI cmeel-mimalloc %s)", v, wheel);
    else snprintf(out, len, "mimalloc%s (%s)", v, getenv("PK_LAB_MIMALLOC3") ? "PK_LAB_MIMALLOC3" : "PyPI cmeel-mimalloc");
}

lab_row *lab_better_row(lab_row *a, lab_row *b) {
    double x = lab_row_median(a), y = lab_row_median(b);
    if (isnan(x)) return isnan(y) ? NULL : b;
    return isnan(y) || x <= y ? a : b;
}
