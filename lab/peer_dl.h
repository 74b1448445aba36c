/* Loading a peer allocator at run time (peer_jemalloc.c, peer_mimalloc.c,
 * peer_tcmalloc.c): dlopen(RTLD_NOW | RTLD_LOCAL), so the peer never
 * replaces the process's malloc, and no header or link-time dependency;
 * and the version line every adapter writes. */
#ifndef PK_LAB_PEER_DL_H
#define PK_LAB_PEER_DL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens file; on failure writes "FILE not loadable (install PACKAGE):
 * dlerror" into why and returns NULL. */
void *lab_dlopen(const char *file, const char *package, char *why, size_t len);
/* Looks name up into *fnptr (a pointer to a function pointer); on failure
 * writes dlerror into why (when not NULL) and returns 0. */
#define lab_dlsym(lib, name, fnptr, why, len) \
    lab_dlsym_((lib), (name), (void *)(fnptr), (why), (len))
int lab_dlsym_(void *lib, const char *name, void *fnptr, char *why, size_t len);
/* "NAME VERSION (Debian X)" into out; version starts with a space or is "". */
void lab_version_line(char *out, size_t len, const char *name, const char *version,
                      const char *package);

#ifdef __cplusplus
}
#endif
#endif
