/* No bug: uses every part of the API correctly and gives everything back.
 * It must run clean under memcheck (POOLKIT_VALGRIND build: no error, no
 * leak) and under AddressSanitizer (POOLKIT_ASAN build, leak detection on):
 * the tool hooks must not cry wolf. Covers pools of every flag (plain,
 * ZERO, hooks, LOCAL, HARDENED, DEBUG, a limit), objects kept in the pool
 * across free and alloc (hooks), bulk calls, reserve, trim, visit, arenas,
 * objects with a dealloc, autorelease pools, pk_defer and pk_scratch.
 * (region.c does the same for a region pool.) */
#include <poolkit/poolkit.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                          \
    do {                                                                  \
        if (!(c)) {                                                       \
            fprintf(stderr, "clean: check failed at line %d: %s\n", __LINE__, #c); \
            exit(3);                                                      \
        }                                                                 \
    } while (0)

static pk_pool_config config(const char *name, size_t size, unsigned flags) {
    pk_pool_config c;
    memset(&c, 0, sizeof c);
    c.name = name;
    c.size = size;
    c.flags = flags;
    return c;
}

static void construct(void *obj, void *arg) {
    (void)arg;
    memset(obj, 0x5C, 72);
}
static void destruct(void *obj, void *arg) {
    (void)obj;
    (void)arg;
}

static void count(void *obj, void *arg) {
    (void)obj;
    (*(size_t *)arg)++;
}

/* Allocates, writes, reads and frees n objects of a pool, twice over. */
static void churn(pk_pool *p, size_t size, size_t n, int zeroed) {
    void **objs = malloc(n * sizeof *objs);
    CHECK(objs);
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < n; i++) {
            unsigned char *o = pk_pool_alloc(p);
            CHECK(o);
            if (zeroed) CHECK(o[0] == 0 && o[size - 1] == 0);
            memset(o, (int)(i & 0xFF), size);
            objs[i] = o;
        }
        size_t seen = 0;
        pk_pool_visit(p, count, &seen);
        CHECK(seen == n);
        long sum = 0;
        for (size_t i = 0; i < n; i++) sum += ((unsigned char *)objs[i])[size / 2];
        CHECK(sum >= 0);
        if (round == 0) {
            for (size_t i = 0; i < n; i++) pk_pool_free(p, objs[n - 1 - i]);
        } else {
            pk_pool_free_bulk(p, objs, n);
        }
    }
    free(objs);
    pk_pool_trim(p);
}

static void pools(void) {
    static const struct {
        const char *name;
        size_t size;
        unsigned flags;
    } kinds[] = {
        {"plain", 48, 0},
        {"zero", 100, PK_POOL_ZERO},
        {"local", 24, PK_POOL_LOCAL},
        {"hardened", 64, PK_POOL_HARDENED},
        {"debug", 40, PK_POOL_DEBUG},
        {"debug-hardened", 200, PK_POOL_DEBUG | PK_POOL_HARDENED},
        {"big", 70000, 0},
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        pk_pool_config c = config(kinds[k].name, kinds[k].size, kinds[k].flags);
        pk_pool *p = pk_pool_create(&c);
        CHECK(p);
        churn(p, kinds[k].size, kinds[k].size > 4096 ? 20 : 3000,
              (kinds[k].flags & PK_POOL_ZERO) != 0);
        pk_pool_destroy(p);
    }

    /* Hooks: the state a user leaves stays in the object. */
    pk_pool_config c = config("hooked", 72, 0);
    c.construct = construct;
    c.destruct = destruct;
    pk_pool *h = pk_pool_create(&c);
    CHECK(h);
    unsigned char *o = pk_pool_alloc(h);
    CHECK(o && o[71] == 0x5C);
    pk_pool_free(h, o);
    churn(h, 72, 500, 0);
    pk_pool_destroy(h);

    /* A limit, bulk calls and a reserve. */
    c = config("limited", 32, 0);
    c.limit = 100;
    c.reserve = 50;
    pk_pool *l = pk_pool_create(&c);
    CHECK(l);
    void *objs[120];
    size_t got = pk_pool_alloc_bulk(l, objs, 120);
    CHECK(got == 100);
    for (size_t i = 0; i < got; i++) memset(objs[i], 1, 32);
    pk_pool_free_bulk(l, objs, got);
    CHECK(pk_pool_reserve(l, 80) >= 80);
    pk_pool_destroy(l);

}

static void arenas(void) {
    pk_arena *a = pk_arena_create(4096);
    CHECK(a);
    pk_arena_mark m = pk_arena_save(a);
    for (int i = 0; i < 200; i++) {
        char *s = pk_arena_strdup(a, "a string of some length");
        CHECK(s && s[0] == 'a');
        void *big = pk_arena_alloc(a, 10000, 64);
        CHECK(big);
        memset(big, 3, 10000);
    }
    pk_arena_rewind(a, m);
    CHECK(pk_arena_alloc(a, 100, 0));
    pk_arena_reset(a);
    pk_arena_destroy(a);
}

typedef struct node {
    struct node *next;
    char payload[40];
} node;

static void node_dealloc(void *obj) { pk_release(((node *)obj)->next); }
static const pk_class kNode = {"Node", sizeof(node), node_dealloc};

static void objects(void) {
    node *head = NULL;
    for (int i = 0; i < 500; i++) { /* a list freed by one release */
        node *n = pk_new(&kNode);
        CHECK(n);
        n->next = head;
        head = n;
    }
    pk_retain(head);
    pk_release(head);
    pk_release(head);

    pk_autorelease_pool outer = pk_autorelease_push();
    for (int i = 0; i < 300; i++) {
        pk_autorelease_pool inner = pk_autorelease_push();
        node *n = pk_autorelease(pk_new(&kNode));
        CHECK(n);
        char *s = pk_scratch(64);
        CHECK(s);
        memset(s, 4, 64);
        CHECK(pk_defer(malloc(32), free));
        if (i % 2) pk_autorelease_pop(inner);
    }
    pk_autorelease_pop(outer); /* pops the inner pools left open */
}

int main(void) {
    pools();
    arenas();
    objects();
    printf("clean: done\n");
    return 0;
}
