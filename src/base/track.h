/* What Valgrind and AddressSanitizer are told about pool objects. Every hook
 * lives here, so the rest of the library calls track_* and never tests for a
 * tool itself.
 *
 * Built with POOLKIT_VALGRIND, memcheck sees each handed-out object as a heap
 * block (leaks, reads after free, uninitialised reads); with POOLKIT_ASAN,
 * free objects are poisoned so ASan reports a use after free. Otherwise every
 * hook is empty. In both tool builds pools skip the inline fast paths (the
 * library must see each call), and the library opens a free object's link
 * word only for the instant it reads or writes it.
 */
#ifndef POOLKIT_TRACK_H
#define POOLKIT_TRACK_H

#include <stddef.h>

#if defined(POOLKIT_VALGRIND)
#  include <valgrind/memcheck.h>
#  define TRACK_ENABLED 1
/* An object handed out: undefined contents unless they were made (zeroing,
 * a construct hook, a state kept from the last use). */
static inline void track_alloc(void *p, size_t size, int defined) {
    VALGRIND_MALLOCLIKE_BLOCK(p, size, 0, defined);
}
static inline void track_free(void *p, size_t size) {
    (void)size;
    VALGRIND_FREELIKE_BLOCK(p, 0);
}
static inline void track_open(void *p, size_t size) { VALGRIND_MAKE_MEM_DEFINED(p, size); }
static inline void track_close(void *p, size_t size) { VALGRIND_MAKE_MEM_NOACCESS(p, size); }
#elif defined(POOLKIT_ASAN)
#  include <sanitizer/asan_interface.h>
#  define TRACK_ENABLED 1
#  define track_alloc(p, size, defined) ASAN_UNPOISON_MEMORY_REGION((p), (size))
#  define track_free(p, size) ASAN_POISON_MEMORY_REGION((p), (size))
#  define track_open(p, size) ASAN_UNPOISON_MEMORY_REGION((p), (size))
#  define track_close(p, size) ASAN_POISON_MEMORY_REGION((p), (size))
#else
#  define TRACK_ENABLED 0
#  define track_alloc(p, size, defined) ((void)(p), (void)(size), (void)(defined))
#  define track_free(p, size) ((void)(p), (void)(size))
#  define track_open(p, size) ((void)(p), (void)(size))
#  define track_close(p, size) ((void)(p), (void)(size))
#endif

#endif
