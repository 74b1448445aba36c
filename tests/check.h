/* CHECK for the tests written in C (the white-box test_*_internal.c): the
 * condition, its place and a message on stderr, then exit status 1, which
 * ctest counts as a failure. */
#ifndef POOLKIT_TESTS_CHECK_H
#define POOLKIT_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                              \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond);         \
            fprintf(stderr, __VA_ARGS__);                                             \
            fprintf(stderr, "\n");                                                    \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#endif
