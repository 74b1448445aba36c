/* libpoolkit-malloc: the C library's allocation family over poolkit's
 * size-class front end (alloc.h), for LD_PRELOAD or for linking in place
 * of the C library's allocator:
 *
 *   LD_PRELOAD=/usr/local/lib/libpoolkit-malloc.so.0 program ...
 *   cc ... -lpoolkit-malloc   (before the C library, as any malloc library)
 *
 * The library holds the whole of libpoolkit beside these functions (link
 * it instead of libpoolkit, never both). Every function is a call of the
 * front end: the malloc family's semantics on glibc, its limits in
 * docs/malloc.md (what glibc's malloc does that this does not: mallopt,
 * mallinfo and malloc_stats stay glibc's and see nothing of this heap;
 * malloc hooks do not exist; a pointer glibc's own malloc handed out
 * before this library was loaded cannot be freed here).
 *
 * The global operator new and delete are new.c's, beside these.
 *
 * Nothing here holds state: the front end makes its pools on first use,
 * serves the allocations the C library and poolkit itself make meanwhile
 * from its bootstrap buffer, and runs the pools' fork handlers (alloc.c).
 */
#include "base/internal.h"

#include <poolkit/alloc.h>
#include <poolkit/pool.h>

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* Tells the library inside that it is the malloc library, whose defaults
 * leave a program's signals alone (options.c). */
__attribute__((visibility("hidden"))) extern const char malloc_library_marker;
__attribute__((visibility("hidden"))) const char malloc_library_marker = 1;

/* The pools' fork handlers (pthread_atfork), installed while the library
 * loads. Installed at the first pool's making instead, as libpoolkit does,
 * they may be installed inside a malloc the C library makes while it holds
 * the lock pthread_atfork takes (its table of handlers growing, at a
 * program's 49th registration before its first malloc), where the install
 * would wait forever. The exit work needs no registration (destructors). A
 * malloc the C library or the loader makes before this runs finds no hook
 * registered yet (init.c), so nothing is installed inside it. No pool is
 * made here: the address space is laid out as the program's calls make it. */
__attribute__((constructor)) static void fork_handlers_now(void) { init_announce(INIT_SHARED_STATE); }

EXPORT void *malloc(size_t size) { return pk_alloc(size); }

EXPORT void free(void *ptr) { pk_free(ptr); }

EXPORT void *calloc(size_t n, size_t size) { return pk_calloc(n, size); }

EXPORT void *realloc(void *ptr, size_t size) { return pk_realloc(ptr, size); }

EXPORT void *reallocarray(void *ptr, size_t n, size_t size) { return pk_reallocarray(ptr, n, size); }

EXPORT void *aligned_alloc(size_t align, size_t size) { return pk_aligned_alloc(align, size); }

/* EINVAL unless align is a power of two and a multiple of sizeof(void *);
 * errno untouched, as POSIX has it return the error instead. */
EXPORT int posix_memalign(void **out, size_t align, size_t size) {
    if (!align || (align & (align - 1)) || align % sizeof(void *)) return EINVAL;
    int saved = errno;
    void *p = pk_aligned_alloc(align, size);
    if (!p) {
        errno = saved;
        return ENOMEM;
    }
    *out = p;
    return 0;
}

/* As glibc's: an alignment that is not a power of two is rounded up to one. */
EXPORT void *memalign(size_t align, size_t size) {
    size_t a = 1;
    while (a < align) {
        if (a > SIZE_MAX / 2) {
            errno = EINVAL;
            return NULL;
        }
        a <<= 1;
    }
    return pk_aligned_alloc(a, size);
}

EXPORT void *valloc(size_t size) { return pk_aligned_alloc((size_t)sysconf(_SC_PAGESIZE), size); }

EXPORT void *pvalloc(size_t size) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (size > SIZE_MAX - page) {
        errno = ENOMEM;
        return NULL;
    }
    return pk_aligned_alloc(page, (size + page - 1) & ~(page - 1));
}

EXPORT size_t malloc_usable_size(void *ptr) { return pk_usable_size(ptr); }

/* glibc's own names for the family, which it exports beside the standard
 * ones: a program or library that calls them (a wrapper of malloc that
 * reaches the C library's through them, an old profiler) would pass its
 * blocks between two allocators, and free of either's reports the other's
 * as foreign. Here they are the same calls. */
EXPORT void *__libc_malloc(size_t size) { return pk_alloc(size); }
EXPORT void __libc_free(void *ptr) { pk_free(ptr); }
EXPORT void *__libc_calloc(size_t n, size_t size) { return pk_calloc(n, size); }
EXPORT void *__libc_realloc(void *ptr, size_t size) { return pk_realloc(ptr, size); }
EXPORT void *__libc_memalign(size_t align, size_t size) { return memalign(align, size); }
EXPORT void *__libc_valloc(size_t size) { return valloc(size); }
EXPORT void *__libc_pvalloc(size_t size) { return pvalloc(size); }

/* What a program asks for when it calls it (after a spike, before it goes
 * idle): the free memory back to the system now, not after the purge delay.
 * pad, glibc's room left at the top of its heap, has nothing to apply to:
 * no slab is the top of anything. Other threads' caches stay theirs
 * (pk_collect). */
EXPORT int malloc_trim(size_t pad) {
    (void)pad;
    return pk_collect(1) > 0;
}
