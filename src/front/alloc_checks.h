/* The hardened front end's checks that its two kinds of block share: the
 * check bytes in a block's slack, written and compared here for the class
 * blocks (alloc_harden.c) and the guarded large ones (alloc_large.c), and
 * the report of a block freed in a form other than the one it was made in,
 * which both find at a free and alloc_forms.c finds at a delete.
 *
 * Apart from all three so that each calls down to it: alloc_large.c sits
 * below alloc_harden.c (whose fault explainer asks it about guarded
 * blocks), and alloc_forms.c above both.
 */
#ifndef POOLKIT_ALLOC_CHECKS_H
#define POOLKIT_ALLOC_CHECKS_H

#include "pool/pool_types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Blocks are any type's: the checks read and write them a word at a time. */
typedef uint64_t __attribute__((may_alias)) hard_word;

/* The check bytes' pattern drawn from the process's seed: once, before the
 * first hardened block (hard_setup). */
void hard_pattern_setup(void);
/* The check bytes: b[from, to) filled, or whether any changed (the first
 * and last that did). b is aligned to a word at least. */
void hard_fill(char *b, size_t from, size_t to);
bool hard_changed(const char *b, size_t from, size_t to, size_t *first, size_t *last);

/* The call that frees now (hardened mode: pk__free_as and
 * pk__free_sized_as set it around their free), for a report's name of it:
 * "free", "delete" or "delete[]". */
extern __thread unsigned alloc_freeing_form __attribute__((tls_model("initial-exec")));
const char *alloc_free_call(void);
/* A block (of pool p, NULL for a guarded one) of n bytes allocated in one
 * form (alloc.h's PK__FORM_*) and freed in another, reported (PK_FATAL). */
PK_COLD __attribute__((noreturn)) void alloc_report_form(const pk_pool *p, const void *obj, size_t n,
                                                          unsigned made, unsigned freed);

#endif
