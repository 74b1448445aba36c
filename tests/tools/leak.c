/* Seeded bug: a leaked pool object.
 *
 * Allocates a few objects from a pool that lives as long as the program,
 * frees all but one and loses the pointer to that one. Built with
 * POOLKIT_VALGRIND, memcheck's leak check reports it as "definitely lost"
 * (one block of the object's size), as it would a malloc block. */
#include <poolkit/poolkit.h>

#include <stdio.h>
#include <string.h>

typedef struct record {
    char key[40];
    long value;
} record;

static pk_pool *records;

/* Keeps object 5 of 8 and forgets it. */
static __attribute__((noinline)) void lose_one(void) {
    record *objs[8];
    for (int i = 0; i < 8; i++) {
        objs[i] = pk_pool_alloc(records);
        if (!objs[i]) return;
        snprintf(objs[i]->key, sizeof objs[i]->key, "record %d", i);
        objs[i]->value = i;
    }
    for (int i = 0; i < 8; i++)
        if (i != 5) pk_pool_free(records, objs[i]); /* BUG: objs[5] is never freed */
    for (int i = 0; i < 8; i++) ((record *volatile *)objs)[i] = NULL;
}

/* Overwrites the stack below the caller, where copies of the pointer could
 * linger and make the block look reachable. */
static __attribute__((noinline)) void scrub_stack(void) {
    volatile char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = 0;
}

int main(void) {
    pk_pool_config c;
    memset(&c, 0, sizeof c);
    c.name = "records";
    c.size = sizeof(record);
    records = pk_pool_create(&c);
    if (!records) return 2;
    lose_one();
    scrub_stack();
    printf("leak: done\n");
    return 0; /* the pool lives on until exit, as global pools do */
}
