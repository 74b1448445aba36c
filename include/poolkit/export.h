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
#endif
