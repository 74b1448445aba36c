/* Reference-counted objects with autorelease pools, deferred frees and
 * scratch strings.
 *
 * A "person" object owns a name (malloc'd) and a reference to another
 * person. Functions return objects autoreleased, the way Objective-C does: the
 * caller uses them without any release, and keeps one with pk_retain. Each
 * turn of the loop runs inside an autorelease pool, which releases what the
 * turn left behind, runs the turn's deferred frees and drops its scratch
 * memory. Build: cc autorelease_objects.c $(pkg-config --cflags --libs poolkit) */
#include <poolkit/poolkit.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct person {
    char *name;           /* owned: freed in dealloc */
    struct person *buddy; /* retained: released in dealloc */
} person;

static int people_alive;

static void person_dealloc(void *obj) {
    person *p = obj;
    free(p->name);
    pk_release(p->buddy); /* NULL is fine; a chain is freed without recursion */
    people_alive--;
}

static const pk_class person_class = {"person", sizeof(person), person_dealloc};

static char *copy_string(const char *s) {
    size_t len = strlen(s) + 1;
    char *c = malloc(len);
    return c ? memcpy(c, s, len) : NULL;
}

/* Returns a new person, autoreleased: valid until the current pool pops. */
static person *person_named(const char *name) {
    person *p = pk_new(&person_class);
    if (!p) return NULL;
    p->name = copy_string(name);
    people_alive++;
    return pk_autorelease(p);
}

/* A description in scratch memory: no free needed, gone when the pool pops. */
static const char *describe(const person *p) {
    const char *buddy = p->buddy ? p->buddy->name : "nobody";
    size_t len = strlen(p->name) + strlen(buddy) + 16;
    char *s = pk_scratch(len);
    if (!s) return "?";
    snprintf(s, len, "%s (buddy: %s)", p->name, buddy);
    return s;
}

int main(void) {
    static const char *const names[] = {"ada", "grace", "edsger", "barbara"};
    person *kept = NULL; /* survives the loop: retained */

    for (int turn = 0; turn < 4; turn++) {
        PK_AUTORELEASE_POOL {
            person *a = person_named(names[turn]);
            person *b = person_named(names[(turn + 1) % 4]);
            a->buddy = pk_retain(b);

            /* A plain malloc'd buffer freed when this pool pops. */
            char *log = pk_defer(malloc(64), free);
            if (log) snprintf(log, 64, "turn %d", turn);

            printf("%s: %s\n", log ? log : "turn", describe(a));
            if (turn == 3) kept = pk_retain(a);
        } /* a, b, the log and the scratch string go here */
    }

    printf("alive after the loop: %d (the kept one and its buddy)\n", people_alive);
    pk_release(kept);
    printf("alive at the end: %d\n", people_alive);
    return people_alive == 0 ? 0 : 1;
}
