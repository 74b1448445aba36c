/* The hardened front end's shared checks (alloc_checks.h): the check bytes
 * and the report of a mismatched form.
 *
 * CHECK BYTES (alloc_harden.c's list): bytes drawn from a secret of their
 * own, each with its top bit set and none 0xFF, so that no ASCII text, no
 * zero and no all-ones, the common values of a stray write, leaves them as
 * they were. Set once, before the first hardened block, and read only after.
 */
#include "front/alloc_checks.h"
#include "base/bytes.h"
#include "pool/pools.h"

#include <poolkit/alloc.h>

/* ---- the check bytes ---- */

static uint64_t pattern; /* set once (hard_pattern_setup) */

static uint64_t pattern_from(uint64_t secret) {
    uint64_t w = 0;
    for (int i = 0; i < 8; i++) {
        uint64_t b = ((secret >> (8 * i)) & 0x7F) | 0x80;
        if (b == 0xFF) b = 0xFE;
        w |= b << (8 * i);
    }
    return w;
}

void hard_pattern_setup(void) {
    /* the check bytes' own secret: the process's seed, mixed apart from
     * the pools' */
    uint64_t seed = (pool_secret_seed() ^ 0xC4CEB9FE1A85EC53ull) * 0xBF58476D1CE4E5B9ull;
    pattern = pattern_from(seed ^ (seed >> 29));
}

static inline unsigned char pattern_byte(size_t i) { return (unsigned char)(pattern >> (8 * (i & 7))); }

/* The bytes at and past from in from's word, as a mask of that word: the
 * head of the check bytes, filled or compared in one word where the word
 * ends within them (a block's slack ends on a word). The bytes before from
 * are the block's, kept as they are: the caller owns the block. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HEAD_WORD 1
static inline uint64_t head_mask(size_t from) { return ~(uint64_t)0 << (8 * (from & 7)); }
#else
#define HEAD_WORD 0
static inline uint64_t head_mask(size_t from) { return (void)from, 0; }
#endif

/* The pattern's bytes sit at offsets from the block's start, which is
 * aligned to a word at least; b[from, to) is filled or compared a word at
 * a time: those before the first word boundary as one word (head_mask),
 * then whole words, four to a test where they compare: a call to the C
 * library's memcmp a line at a time cost more than its vector loop saved
 * on the blocks most programs free (a few lines). */
void hard_fill(char *b, size_t from, size_t to) {
    size_t i = from;
    if (HEAD_WORD && (i & 7) && (i | 7) < to) {
        hard_word *w = (hard_word *)(b + (i & ~(size_t)7));
        uint64_t m = head_mask(i);
        *w = (*w & ~m) | (pattern & m);
        i = (i | 7) + 1;
    }
    for (; i < to && (i & 7); i++) b[i] = (char)pattern_byte(i);
    for (; i + 8 <= to; i += 8) *(hard_word *)(b + i) = pattern;
    for (; i < to; i++) b[i] = (char)pattern_byte(i);
}

bool hard_changed(const char *b, size_t from, size_t to, size_t *first, size_t *last) {
    size_t i = from;
    /* a head that changed is left to the byte loop, which finds which byte */
    if (HEAD_WORD && (i & 7) && (i | 7) < to &&
        !((*(const hard_word *)(b + (i & ~(size_t)7)) ^ pattern) & head_mask(i)))
        i = (i | 7) + 1;
    for (; i < to && (i & 7); i++)
        if ((unsigned char)b[i] != pattern_byte(i)) goto found;
    /* the pattern's words lie on the block's, which i is on now */
    for (i = bytes_words_same(b, i, to, pattern); i < to; i++)
        if ((unsigned char)b[i] != pattern_byte(i)) goto found;
    return false;
found:
    *first = i;
    *last = i;
    for (size_t j = to; j-- > i;)
        if ((unsigned char)b[j] != pattern_byte(j)) {
            *last = j;
            break;
        }
    return true;
}

/* ---- the forms' report ---- */

static const char *made_by(unsigned form) {
    return form == PK__FORM_NEW ? "new" : form == PK__FORM_NEW_ARRAY ? "new[]" : "malloc";
}
static const char *freed_by(unsigned form) {
    return form == PK__FORM_NEW ? "delete" : form == PK__FORM_NEW_ARRAY ? "delete[]" : "free";
}

__thread unsigned alloc_freeing_form __attribute__((tls_model("initial-exec")));

const char *alloc_free_call(void) { return freed_by(alloc_freeing_form); }

void alloc_report_form(const pk_pool *p, const void *obj, size_t n, unsigned made, unsigned freed) {
    error_report(PK_FATAL, "mismatched free", p ? p->name : NULL, obj,
                 "%s(%p): block %p of %zu bytes%s%s%s was allocated with %s and freed with %s, not %s",
                 freed_by(freed), obj, obj, n, p ? " (pool '" : "", p ? pool_name(p) : "", p ? "')" : "",
                 made_by(made), freed_by(freed), freed_by(made));
    __builtin_unreachable();
}
