/* Loading a peer allocator at run time (peer_jemalloc.c, peer_mimalloc.c,
 * peer_tcmalloc.c): dlopen(RTLD_NOW | RTLD_LOCAL), so the peer never
 * replaces the process's malloc, and no header or link-time dependency;
 * and the version line every adapter writes. */
#ifndef PK_LAB_PEER_DL_H
#define PK_LAB_PEER_DL_H

#include <stddef.h>

#include "shared.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opening a library and looking up its functions: shared_dlopen and
 * shared_dlsym (shared.h, the same code bench/peers.h uses). */
#define lab_dlopen shared_dlopen
#define lab_dlsym shared_dlsym
/* "NAME VERSION (Debian X)" into out; version starts with a space or is "". */
void lab_version_line(char *out, size_t len, const char *name, const char *version,
                      const char *package);

#ifdef __cplusplus
}
#endif
#endif
