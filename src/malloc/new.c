/* The global operator new and delete, every form (throwing, nothrow,
 * sized, aligned, array), over the front end with each call's form, so
 * that a C++ program under the preload comes to poolkit with them and
 * hardened mode reports a delete of new[]'s block and the like
 * (alloc_forms.c). The C++ library's own operators, which would only call
 * malloc and free, are interposed as malloc is.
 *
 * Written in C, with the operators' mangled names (the Itanium C++ ABI's,
 * size_t as unsigned long): a C++ file would link the library to
 * libstdc++ (std::bad_alloc's type, the new handler), a dependency every
 * C program under the preload would then load. What the operators need
 * of the C++ library they take through weak references, present only
 * where a C++ program has loaded it: std::get_new_handler, and
 * std::__throw_bad_alloc to throw (the library is built with -fexceptions
 * so that the exception unwinds through these frames). Without the C++
 * library, nothing can call them but by name; then a failure ends the
 * program with a message.
 *
 * The nothrow forms call the new handler as the standard's do and return
 * NULL when there is none; a handler that throws there cannot be caught in
 * C, so the exception leaves the nothrow operator, which ends the program
 * (std::terminate) where the C++ library's would return NULL.
 */
#include <poolkit/alloc.h>

#include <stdio.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

typedef void (*new_handler)(void);
extern new_handler _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

__attribute__((noreturn, cold)) static void no_memory(void) {
    if (_ZSt17__throw_bad_allocv) _ZSt17__throw_bad_allocv();
    fputs("poolkit: operator new: out of memory, and no C++ library to throw std::bad_alloc\n", stderr);
    abort();
}

/* The handler to call after a failure, or NULL. */
static new_handler handler(void) { return _ZSt15get_new_handlerv ? _ZSt15get_new_handlerv() : NULL; }

/* caller: the operator's own (__builtin_return_address in the operator,
 * where new_as is inlined), the site a report names. */
__attribute__((noinline)) static void *new_slow(size_t size, size_t align, unsigned form, int nothrow, void *caller) {
    for (;;) {
        void *p = align ? pk__aligned_alloc_at(align, size, form, caller) : pk__alloc_at(size, form, caller);
        if (p) return p;
        new_handler h = handler();
        if (!h) {
            if (nothrow) return NULL;
            no_memory();
        }
        h();
    }
}

static inline __attribute__((always_inline)) void *new_as(size_t size, unsigned form, void *caller) {
    void *p = pk__alloc_at_inline(size, form, caller);
    return __builtin_expect(p != NULL, 1) ? p : new_slow(size, 0, form, 0, caller);
}

#define CALLER __builtin_return_address(0)

#define NEW PK__FORM_NEW
#define ARR PK__FORM_NEW_ARRAY

/* new, new[] and their nothrow forms */
EXPORT void *_Znwm(size_t size) { return new_as(size, NEW, CALLER); }
EXPORT void *_Znam(size_t size) { return new_as(size, ARR, CALLER); }
EXPORT void *_ZnwmRKSt9nothrow_t(size_t size, const void *nt) {
    (void)nt;
    return new_slow(size, 0, NEW, 1, CALLER);
}
EXPORT void *_ZnamRKSt9nothrow_t(size_t size, const void *nt) {
    (void)nt;
    return new_slow(size, 0, ARR, 1, CALLER);
}

/* delete, delete[], nothrow and sized */
EXPORT void _ZdlPv(void *p) { pk__free_as(p, NEW); }
EXPORT void _ZdaPv(void *p) { pk__free_as(p, ARR); }
EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *nt) {
    (void)nt;
    pk__free_as(p, NEW);
}
EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *nt) {
    (void)nt;
    pk__free_as(p, ARR);
}
EXPORT void _ZdlPvm(void *p, size_t size) { pk__free_sized_as_inline(p, size, NEW); }
EXPORT void _ZdaPvm(void *p, size_t size) { pk__free_sized_as_inline(p, size, ARR); }

/* the aligned forms (std::align_val_t is a size_t) */
EXPORT void *_ZnwmSt11align_val_t(size_t size, size_t align) { return new_slow(size, align, NEW, 0, CALLER); }
EXPORT void *_ZnamSt11align_val_t(size_t size, size_t align) { return new_slow(size, align, ARR, 0, CALLER); }
EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt) {
    (void)nt;
    return new_slow(size, align, NEW, 1, CALLER);
}
EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt) {
    (void)nt;
    return new_slow(size, align, ARR, 1, CALLER);
}
EXPORT void _ZdlPvSt11align_val_t(void *p, size_t align) {
    (void)align;
    pk__free_as(p, NEW);
}
EXPORT void _ZdaPvSt11align_val_t(void *p, size_t align) {
    (void)align;
    pk__free_as(p, ARR);
}
EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align) {
    (void)size, (void)align;
    pk__free_as(p, NEW);
}
EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align) {
    (void)size, (void)align;
    pk__free_as(p, ARR);
}
EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt) {
    (void)align, (void)nt;
    pk__free_as(p, NEW);
}
EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt) {
    (void)align, (void)nt;
    pk__free_as(p, ARR);
}
