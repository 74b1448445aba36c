/* No bug: a region pool (PK_POOL_REGION), destroyed whole with its objects
 * still in it, which is how a region is meant to be freed. It must run
 * clean under memcheck and AddressSanitizer: the objects went away with the
 * pool, so neither may call them leaked. */
#include <poolkit/poolkit.h>

#include <stdio.h>
#include <string.h>

typedef struct token {
    const char *text;
    struct token *next;
    int kind;
} token;

int main(void) {
    for (int request = 0; request < 20; request++) {
        pk_pool_config c;
        memset(&c, 0, sizeof c);
        c.name = "request tokens";
        c.size = sizeof(token);
        c.flags = PK_POOL_REGION;
        pk_pool *region = pk_pool_create(&c);
        if (!region) return 2;
        token *list = NULL;
        for (int i = 0; i < 500; i++) {
            token *t = pk_pool_alloc(region);
            if (!t) return 2;
            t->text = "word";
            t->kind = i;
            t->next = list;
            list = t;
        }
        long sum = 0;
        for (token *t = list; t; t = t->next) sum += t->kind;
        if (sum != 500L * 499 / 2) return 3;
        pk_pool_destroy(region); /* every token goes with it */
    }
    printf("region: done\n");
    return 0;
}
