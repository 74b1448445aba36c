/* The front end's variants: calls made of pk_alloc's own (alloc.h), with
 * nothing of the classes' or the blocks' inside. */
#include "base/internal.h"

#include <poolkit/alloc.h>
#include <poolkit/heap.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>

static bool aligned_to(const void *p, size_t align) { return ((uintptr_t)p & (align - 1)) == 0; }

void *pk_zalloc(size_t size) { return pk_calloc(1, size); }

void *pk_aligned_zalloc(size_t align, size_t size) {
    void *p = pk_aligned_alloc(align, size);
    if (p) memset(p, 0, size);
    return p;
}

void *pk_reallocarray(void *ptr, size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return pk_realloc(ptr, total);
}

void *pk_expand(void *ptr, size_t size) {
    if (!ptr) return NULL;
    if (size <= pk_usable_size(ptr)) return ptr;
    errno = ENOMEM;
    return NULL;
}

void *pk_realloc_aligned(void *ptr, size_t align, size_t size) {
    if (!is_pow2(align)) {
        errno = EINVAL;
        return NULL;
    }
    if (!ptr) return pk_aligned_alloc(align, size);
    if (size == 0) {
        pk_free(ptr);
        return NULL;
    }
    size_t have = pk_usable_size(ptr);
    /* in place: aligned already, and size keeps the block its class (or,
     * mapped, its page-rounded length), as pk_realloc keeps it */
    if (aligned_to(ptr, align) && pk_good_size(size) == have) return ptr;
    pk_heap *h = pk_heap_of(ptr); /* a heap's block stays in its heap */
    void *to = h ? pk_heap_aligned_alloc(h, align, size) : pk_aligned_alloc(align, size);
    if (!to) return NULL;
    memcpy(to, ptr, have < size ? have : size);
    pk_free(ptr);
    return to;
}
