/* Runs of bytes: records cleared (bytes_zero, for the records a pool's
 * create and destroy clear), and whether a slot still holds what it was
 * left with, for the debug pools' fills (pool/check.c), the hardened front
 * end's zeroed blocks (front/alloc_harden.c) and its check bytes
 * (front/alloc_checks.c). */
#ifndef POOLKIT_BYTES_H
#define POOLKIT_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* memset(p, 0, n) through the C library's call. gcc expands a memset of a
 * size it knows (a record of a few hundred bytes) into rep stos, which
 * takes tens of cycles to start on some processors (AMD's), where a pool
 * per task, made and destroyed around a few dozen objects, clears four
 * records; the library's memset stores vectors at those sizes
 * (docs/results.md, "A pool per task"). */
static inline void bytes_zero(void *p, size_t n) {
    __asm__("" : "+r"(n)); /* a size the compiler does not know: the call */
    memset(p, 0, n);
}

/* Where the words of b[from, to) first differ from pat: the start of the
 * first 8 bytes from `from` on that are not pat, or of the last fewer than
 * 8 (the caller compares those bytes, by its own rule for a byte). Four
 * words to a test, loads of any alignment (b need not start on a word; no
 * memcpy, which gcc copies through the stack here). A byte at a time, the
 * debug fills' check cost more than the rest of a debug allocation's path;
 * memcmp a line at a time cost more than it saved on the few lines most
 * freed blocks have. */
typedef uint64_t __attribute__((may_alias, aligned(1))) bytes_word;
static inline size_t bytes_words_same(const void *p, size_t from, size_t to, uint64_t pat) {
    const unsigned char *b = (const unsigned char *)p;
    size_t i = from;
    for (; i + 32 <= to; i += 32) {
        const bytes_word *w = (const bytes_word *)(b + i);
        if ((w[0] ^ pat) | (w[1] ^ pat) | (w[2] ^ pat) | (w[3] ^ pat)) break;
    }
    for (; i + 8 <= to; i += 8)
        if (*(const bytes_word *)(b + i) != pat) break;
    return i;
}

/* The index of the first byte of b[from, to) that is not v, or to (from
 * where from is past to). */
static inline size_t bytes_first_not_in(const void *p, size_t from, size_t to, unsigned char v) {
    const unsigned char *b = (const unsigned char *)p;
    size_t i = bytes_words_same(p, from, to, 0x0101010101010101ull * v);
    while (i < to && b[i] == v) i++;
    return i;
}

/* The index of the first byte of b[0, n) that is not v, or n. */
static inline size_t bytes_first_not(const void *p, size_t n, unsigned char v) {
    return bytes_first_not_in(p, 0, n, v);
}

#endif
