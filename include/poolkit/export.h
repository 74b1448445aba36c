/* PK_API marks the functions the library exports; everything else in it is
 * hidden. Private to poolkit's headers. */
#ifndef POOLKIT_EXPORT_H
#define POOLKIT_EXPORT_H
#if defined(__GNUC__)
#  define PK_API __attribute__((visibility("default")))
#else
#  define PK_API
#endif

/* The casts of the headers' inline code and macros: C++'s named casts when a
 * C++ compiler reads them, so that users' strict warnings (-Wold-style-cast,
 * -Wuseless-cast) stay quiet, and C's cast otherwise. Both compile to the
 * same code. Private to poolkit's headers. */
#ifdef __cplusplus
#  define PK__STATIC_CAST(T, x) (static_cast<T>(x))
#  define PK__REINTERPRET_CAST(T, x) (reinterpret_cast<T>(x))
#else
#  define PK__STATIC_CAST(T, x) ((T)(x))
#  define PK__REINTERPRET_CAST(T, x) ((T)(x))
#endif
/* The null pointer in the reader's language (NULL needs <stddef.h> where it
 * is used). */
#ifdef __cplusplus
#  define PK__NULL nullptr
#else
#  define PK__NULL NULL
#endif

/* The allocating calls' attributes (alloc.h), where the compiler has them:
 * malloc (the block aliases nothing), alloc_size and alloc_align (what
 * __builtin_object_size and _FORTIFY_SOURCE read), and gcc's pairing of an
 * allocator with its deallocators (-Wmismatched-dealloc). Private to
 * poolkit's headers. */
#ifdef __has_attribute
#  define PK__HAS_ATTRIBUTE(x) __has_attribute(x)
#else
#  define PK__HAS_ATTRIBUTE(x) 0
#endif
#if PK__HAS_ATTRIBUTE(__malloc__)
#  define PK__ATTR_MALLOC __attribute__((__malloc__))
#else
#  define PK__ATTR_MALLOC
#endif
#if PK__HAS_ATTRIBUTE(__alloc_size__)
#  define PK__ATTR_SIZE(n) __attribute__((__alloc_size__(n)))
#  define PK__ATTR_SIZE2(n, m) __attribute__((__alloc_size__(n, m)))
#else
#  define PK__ATTR_SIZE(n)
#  define PK__ATTR_SIZE2(n, m)
#endif
#if PK__HAS_ATTRIBUTE(__nothrow__)
#  define PK__ATTR_NOTHROW __attribute__((__nothrow__))
#else
#  define PK__ATTR_NOTHROW
#endif
#if PK__HAS_ATTRIBUTE(__alloc_align__)
#  define PK__ATTR_ALIGN(n) __attribute__((__alloc_align__(n)))
#else
#  define PK__ATTR_ALIGN(n)
#endif
/* malloc(deallocator, argument): gcc 11 and later; clang has no such form */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#  define PK__ATTR_DEALLOC(f) __attribute__((__malloc__(f, 1)))
#else
#  define PK__ATTR_DEALLOC(f)
#endif
#endif
