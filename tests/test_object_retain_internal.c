/* pk_retain's one compare after its add, white-box (object.c,
 * retain_known): the word the add returns must be a live object's, a
 * tagged count of one or more. A tagged count of zero is the word between
 * a last release's subtraction and its dead mark (object_release_contended
 * then dispose): a retain that lands there retains a deallocated object and
 * is reported as one, the count named zero, as is a dead mark. The word is
 * set by hand here (the race's window is a few instructions wide).
 * Exit 0: passed. */
#include "object/object_internal.h"

#include <poolkit/poolkit.h>

#include "check.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

static jmp_buf escape;
static char what[64], message[256];
static int reports;

static void record(const pk_error *e, void *arg) {
    (void)arg;
    reports++;
    snprintf(what, sizeof what, "%s", e->what ? e->what : "");
    snprintf(message, sizeof message, "%s", e->message ? e->message : "");
    longjmp(escape, 1);
}

static const pk_class plain = {"Plain", 16, NULL};

/* Retains obj with its count word set to word; whether it was reported. */
static int retain_reported(void *obj, uintptr_t word) {
    object_header *h = (object_header *)obj - 1;
    __atomic_store_n(&h->refs, word, __ATOMIC_RELAXED);
    reports = 0;
    what[0] = message[0] = 0;
    if (setjmp(escape) == 0) pk_retain(obj);
    return reports;
}

int main(void) {
    pk_set_error_handler(record, NULL);
    void *obj = pk_new(&plain);
    CHECK(obj != NULL, "pk_new failed");
    CHECK(pk_retain(obj) == obj && pk_refcount(obj) == 2, "a live object's retain: count %zu", pk_refcount(obj));

    CHECK(retain_reported(obj, REFS_TAG) == 1, "a tagged count of zero was retained unreported");
    CHECK(strcmp(what, "retain of a deallocated object") == 0, "reported as '%s'", what);
    CHECK(strstr(message, "reference count is zero") != NULL, "the count not named zero: %s", message);

    CHECK(retain_reported(obj, refs_dead(&plain)) == 1, "a dead mark was retained unreported");
    CHECK(strcmp(what, "retain of a deallocated object") == 0, "reported as '%s'", what);

    CHECK(retain_reported(obj, (REFS_MAX << REFS_SHIFT) | REFS_TAG) == 0,
          "the most references a live object has: reported as '%s'", what);
    CHECK(retain_reported(obj, REFS_LIVE1 + REFS_ONE) == 0, "two references: reported as '%s'", what);
    CHECK(pk_refcount(obj) == 3, "the add: count %zu", pk_refcount(obj));

    __atomic_store_n(&((object_header *)obj - 1)->refs, REFS_LIVE1, __ATOMIC_RELAXED);
    pk_set_error_handler(NULL, NULL);
    pk_release(obj);
    return 0;
}
