/* PK_API marks the functions the library exports; everything else in it is
 * hidden. Private to poolkit's headers. */
#ifndef POOLKIT_EXPORT_H
#define POOLKIT_EXPORT_H
#if defined(__GNUC__)
#  define PK_API __attribute__((visibility("default")))
#else
#  define PK_API
#endif
#endif
