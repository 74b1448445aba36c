/* What misuse.c and misuse_cxx.cc share: the lines a case ends with and the
 * C++ cases, which need new and delete. */
#ifndef POOLKIT_TESTS_MISUSE_H
#define POOLKIT_TESTS_MISUSE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* p, with the compiler unable to tell where it points. */
void *misuse_hide(void *p);
/* Blocks of n bytes taken and freed, for the allocator's checks to run. */
void misuse_settle(size_t n);
/* The last words of a case (misuse.c's comment at the top). */
__attribute__((noreturn)) void misuse_unnoticed(void);
__attribute__((noreturn)) void misuse_property(int held);
__attribute__((noreturn)) void misuse_setup_failed(const char *what);

/* An array of n chars from new[], freed with delete. */
void misuse_delete_of_new_array(size_t n);
/* One object of n bytes with a destructor from new, freed with delete[]. */
void misuse_delete_array_of_new(size_t n);

#ifdef __cplusplus
}
#endif

#endif
