/* Runs of one byte value: whether a slot still holds what it was left
 * with, for the debug pools' fills (pool/check.c) and the hardened front
 * end's zeroed blocks (front/alloc_harden.c). */
#ifndef POOLKIT_BYTES_H
#define POOLKIT_BYTES_H

#include <stddef.h>
#include <stdint.h>

/* The index of the first byte of b[0, n) that is not v, or n. Words first,
 * four to a test, then the bytes of the first word that differs (loads of
 * any alignment: b need not start on a word; no memcpy, which gcc copies
 * through the stack here). A byte at a time, the debug fills' check
 * cost more than the rest of a debug allocation's path; memcmp a line at a
 * time cost more than it saved on the few lines most freed blocks have. */
typedef uint64_t __attribute__((may_alias, aligned(1))) bytes_word;
static inline size_t bytes_first_not(const void *p, size_t n, unsigned char v) {
    const unsigned char *b = (const unsigned char *)p;
    const uint64_t pat = 0x0101010101010101ull * v;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const bytes_word *w = (const bytes_word *)(b + i);
        if ((w[0] ^ pat) | (w[1] ^ pat) | (w[2] ^ pat) | (w[3] ^ pat)) break;
    }
    for (; i + 8 <= n; i += 8)
        if (*(const bytes_word *)(b + i) != pat) break;
    while (i < n && b[i] == v) i++;
    return i;
}

#endif
