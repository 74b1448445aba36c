/* The forms a block is allocated and freed in (alloc.h's PK__FORM_*):
 * malloc's, freed by free; new's, by delete; new[]'s, by delete[].
 * <poolkit/new.hpp> and the malloc library's operators call the entries
 * below with theirs.
 *
 * Hardened mode keeps the form with each block: a class block's in its
 * check word's top bits (alloc_harden.c, FORM), a guarded block's in its
 * entry of alloc_large.c's table. The block is made as malloc's and its
 * form set here; a free in another form is reported (alloc_checks.c's
 * report, which the free paths below share), and a free in the right one
 * sets the form back to malloc's before pk_free, whose own check (a block
 * not of malloc's form) then catches free() of new's block. Only a
 * hardened class pool's calls all reach the library (it has no inline
 * path: pool.c, choose_path), so the headers' inline paths in front of
 * these entries serve default-mode blocks only.
 *
 * Default mode keeps no form and checks none: an allocation's cost is
 * pk_alloc's (the inline path, then one load of the mode here on its
 * slow path), a delete's one load of the mode more than pk_free's. Debug
 * mode (which takes precedence over hardened) keeps none either: its
 * per-object records have no spare field, so a mismatch there is a plain
 * free. Blocks the front end does not check (size 0, the bootstrap
 * buffer's, blocks aligned past a page) keep no form.
 */
#include "front/alloc_internal.h"
#include "front/alloc_checks.h"

/* Forms are kept in hardened mode alone. */
static inline bool forms_kept(void) { return alloc_hardened(); }

/* A hardened block just made (malloc's form) given form. */
static void *with_form(void *obj, unsigned form) {
    if (!obj || form == PK__FORM_MALLOC) return obj;
    pk_pool *p = alloc_pool_of(obj);
    unsigned was;
    size_t n;
    if (alloc_owns(p, obj) && alloc_hard(p)) {
        if (hard_class_form(p, obj, &was, &n)) hard_class_set_form(p, obj, n, form);
    } else {
        large_set_form(obj, form);
    }
    return obj;
}

/* Checks that ptr, freed in form, was made in it, and gives it malloc's
 * form for pk_free. A pointer that is no live hardened block is left to
 * pk_free, which says what it is. */
static void check_form(void *ptr, unsigned form) {
    pk_pool *p = alloc_pool_of(ptr);
    unsigned made;
    size_t n;
    if (alloc_owns(p, ptr) && alloc_hard(p)) {
        if (!hard_class_form(p, ptr, &made, &n)) return;
        if (made != form) alloc_report_form(p, ptr, n, made, form);
        if (made != PK__FORM_MALLOC) hard_class_set_form(p, ptr, n, PK__FORM_MALLOC);
    } else if (!alloc_is_class(p) && large_form(ptr, &made, &n)) {
        if (made != form) alloc_report_form(NULL, ptr, n, made, form);
        if (made != PK__FORM_MALLOC) large_set_form(ptr, PK__FORM_MALLOC);
    }
}

void *pk__alloc_at(size_t size, unsigned form, void *caller) {
    if (likely(!forms_kept())) return alloc_at(size, caller);
    return with_form(alloc_at(size, caller), form);
}

void *pk__aligned_alloc_at(size_t align, size_t size, unsigned form, void *caller) {
    if (likely(!forms_kept())) return aligned_alloc_at(align, size, caller);
    return with_form(aligned_alloc_at(align, size, caller), form);
}

/* The entries programs built against an earlier <poolkit/new.hpp> call. */
void *pk__alloc_as(size_t size, unsigned form) { return pk__alloc_at(size, form, __builtin_return_address(0)); }

void *pk__aligned_alloc_as(size_t align, size_t size, unsigned form) {
    return pk__aligned_alloc_at(align, size, form, __builtin_return_address(0));
}

/* Hardened: the form named by a report of the free (alloc_free_call). */
void pk__free_as(void *ptr, unsigned form) {
    if (ptr && unlikely(forms_kept())) {
        check_form(ptr, form);
        alloc_freeing_form = form;
        pk_free(ptr);
        alloc_freeing_form = PK__FORM_MALLOC;
        return;
    }
    pk_free(ptr);
}

void pk__free_sized_as(void *ptr, size_t size, unsigned form) {
    if (ptr && unlikely(forms_kept())) {
        check_form(ptr, form);
        alloc_freeing_form = form;
        pk_free_sized(ptr, size);
        alloc_freeing_form = PK__FORM_MALLOC;
        return;
    }
    pk_free_sized(ptr, size);
}
