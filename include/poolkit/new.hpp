/* poolkit's size-class front end as the program's operator new and delete.
 *
 * Include this header in exactly one source file of a program that links
 * libpoolkit (not the malloc library, which defines these operators
 * itself): every form of the global operator new and delete, throwing,
 * nothrow, sized and aligned, then allocates from pk_alloc's classes.
 * Sized delete gives pk_free_sized the size, so it needs no lookup of the
 * address; aligned forms use pk_aligned_alloc, and their deletes pk_free.
 *
 * Each operator tells the front end its form (new or new[]; alloc.h's
 * PK__FORM_*). In hardened mode (POOLKIT_HARDENED=1) each block keeps the
 * form it was made in, and a free in another is reported as a "mismatched
 * free" naming the block, its size and both forms: delete of new[]'s
 * block, delete[] of new's, pk_free of either, delete of pk_alloc's.
 * Default mode keeps no form and checks none, at no cost on the inline
 * paths; debug mode does not check forms either.
 *
 * A failed allocation calls the new handler (std::set_new_handler) and
 * tries again, and throws std::bad_alloc when there is none, as the
 * standard's operator new does; the nothrow forms return nullptr instead.
 * Memory from these operators must not go to free(), nor malloc's to
 * delete: a pointer pk_alloc did not hand out is reported ("foreign
 * pointer").
 */
#ifndef POOLKIT_NEW_HPP
#define POOLKIT_NEW_HPP

#ifndef __cplusplus
#  error "poolkit/new.hpp is C++"
#endif

#include <poolkit/alloc.h>

#include <cstddef>
#include <new>

namespace pk {
namespace detail {

/* The standard's loop: the new handler, while there is one, then
 * bad_alloc. Never returns nullptr. caller: the operator's own, the site
 * debug and hardened reports name. */
inline void *new_or_throw(std::size_t size, unsigned form, void *caller) {
    for (;;) {
        void *p = pk__alloc_at_inline(size, form, caller);
        if (p) return p;
        std::new_handler h = std::get_new_handler();
        if (!h) throw std::bad_alloc();
        h();
    }
}

inline void *new_nothrow(std::size_t size, unsigned form, void *caller) noexcept {
    try {
        return new_or_throw(size, form, caller);
    } catch (...) {
        return nullptr;
    }
}

#if __cpp_aligned_new
inline void *aligned_new_or_throw(std::size_t size, std::align_val_t al, unsigned form, void *caller) {
    for (;;) {
        void *p = pk__aligned_alloc_at(static_cast<std::size_t>(al), size, form, caller);
        if (p) return p;
        std::new_handler h = std::get_new_handler();
        if (!h) throw std::bad_alloc();
        h();
    }
}

inline void *aligned_new_nothrow(std::size_t size, std::align_val_t al, unsigned form, void *caller) noexcept {
    try {
        return aligned_new_or_throw(size, al, form, caller);
    } catch (...) {
        return nullptr;
    }
}
#endif

}  // namespace detail
}  // namespace pk

/* The operators pass their own return address: the line that said new,
 * which debug and hardened reports name; not inlined, or it would be the
 * caller's caller. */

__attribute__((noinline)) void *operator new(std::size_t size) {
    return pk::detail::new_or_throw(size, PK__FORM_NEW, __builtin_return_address(0));
}
__attribute__((noinline)) void *operator new[](std::size_t size) {
    return pk::detail::new_or_throw(size, PK__FORM_NEW_ARRAY, __builtin_return_address(0));
}
__attribute__((noinline)) void *operator new(std::size_t size, const std::nothrow_t &) noexcept {
    return pk::detail::new_nothrow(size, PK__FORM_NEW, __builtin_return_address(0));
}
__attribute__((noinline)) void *operator new[](std::size_t size, const std::nothrow_t &) noexcept {
    return pk::detail::new_nothrow(size, PK__FORM_NEW_ARRAY, __builtin_return_address(0));
}

void operator delete(void *p) noexcept { pk__free_as(p, PK__FORM_NEW); }
void operator delete[](void *p) noexcept { pk__free_as(p, PK__FORM_NEW_ARRAY); }
void operator delete(void *p, const std::nothrow_t &) noexcept { pk__free_as(p, PK__FORM_NEW); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { pk__free_as(p, PK__FORM_NEW_ARRAY); }

#if __cpp_sized_deallocation
void operator delete(void *p, std::size_t size) noexcept { pk__free_sized_as_inline(p, size, PK__FORM_NEW); }
void operator delete[](void *p, std::size_t size) noexcept { pk__free_sized_as_inline(p, size, PK__FORM_NEW_ARRAY); }
#endif

#if __cpp_aligned_new
__attribute__((noinline)) void *operator new(std::size_t size, std::align_val_t al) {
    return pk::detail::aligned_new_or_throw(size, al, PK__FORM_NEW, __builtin_return_address(0));
}
__attribute__((noinline)) void *operator new[](std::size_t size, std::align_val_t al) {
    return pk::detail::aligned_new_or_throw(size, al, PK__FORM_NEW_ARRAY, __builtin_return_address(0));
}
__attribute__((noinline)) void *operator new(std::size_t size, std::align_val_t al, const std::nothrow_t &) noexcept {
    return pk::detail::aligned_new_nothrow(size, al, PK__FORM_NEW, __builtin_return_address(0));
}
__attribute__((noinline)) void *operator new[](std::size_t size, std::align_val_t al, const std::nothrow_t &) noexcept {
    return pk::detail::aligned_new_nothrow(size, al, PK__FORM_NEW_ARRAY, __builtin_return_address(0));
}
void operator delete(void *p, std::align_val_t) noexcept { pk__free_as(p, PK__FORM_NEW); }
void operator delete[](void *p, std::align_val_t) noexcept { pk__free_as(p, PK__FORM_NEW_ARRAY); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { pk__free_as(p, PK__FORM_NEW); }
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { pk__free_as(p, PK__FORM_NEW_ARRAY); }
void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { pk__free_as(p, PK__FORM_NEW); }
void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept {
    pk__free_as(p, PK__FORM_NEW_ARRAY);
}
#endif

#endif
