/* A short tour of the C API: a pool, an arena, and reference-counted objects
 * in an autorelease pool. The README's "A short tour" shows these lines
 * (tests/readme_excerpts.py keeps the two the same). Build: cc tour.c
 * $(pkg-config --cflags --libs poolkit) */
#include <poolkit/poolkit.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct point { double x, y; } point;

/* A pool of fixed-size objects. */
static int pool_tour(void) {
    pk_pool_config cfg = { .name = "points", .size = sizeof(point) };
    pk_pool *points = pk_pool_create(&cfg);       /* NULL + errno on failure */
    if (!points) { perror("pk_pool_create"); return 1; }

    point *p = pk_pool_alloc(points);             /* any thread */
    if (!p) { perror("pk_pool_alloc"); pk_pool_destroy(points); return 1; }
    p->x = 1; p->y = 2;
    pk_pool_free(points, p);                      /* any thread, too */

    pk_pool_stats st;
    pk_pool_stats_get(points, &st);               /* live, slabs, bytes, ... */
    printf("pool '%s': %zu live, %zu bytes reserved\n", st.name, st.live, st.bytes_reserved);
    pk_pool_destroy(points);                      /* reports leaks, if any */
    return st.live == 0 ? 0 : 1;
}

/* An arena for temporary memory. */
static int arena_tour(void) {
    pk_arena *a = pk_arena_create(0);             /* 0: the default chunk size */
    if (!a) { perror("pk_arena_create"); return 1; }
    pk_arena_mark m = pk_arena_save(a);
    char *s = pk_arena_strdup(a, "temporary");
    if (!s) { perror("pk_arena_strdup"); pk_arena_destroy(a); return 1; }
    printf("arena: \"%s\"\n", s);
    pk_arena_rewind(a, m);                        /* frees everything since m */
    pk_arena_destroy(a);
    return 0;
}

/* A reference-counted string: pk_new gives it a count of 1, pk_retain and
 * pk_release move the count, and at 0 the class's dealloc runs. */
struct string { size_t len; char *chars; };       /* chars: malloc'd, owned */

static int strings_alive;

static void string_dealloc(void *obj) {           /* frees what s owns, not s */
    struct string *s = obj;
    free(s->chars);
    strings_alive--;
}

static const pk_class string_class = { "string", sizeof(struct string), string_dealloc };

static struct string *string_new(const char *text) {  /* NULL + errno on failure */
    struct string *s = pk_new(&string_class);     /* fields zeroed, count 1 */
    if (!s) return NULL;
    s->len = strlen(text);
    s->chars = malloc(s->len + 1);
    if (s->chars) memcpy(s->chars, text, s->len + 1);
    strings_alive++;
    return s;
}

/* Objects and autorelease pools. */
static int object_tour(void) {
    PK_AUTORELEASE_POOL {
        struct string *s = pk_autorelease(string_new("hello"));
        char *tmp = pk_scratch(256);              /* lives until the pool pops */
        char *buf = pk_defer(malloc(64), free);   /* free() runs at the pop */
        if (s && tmp && buf) {
            snprintf(tmp, 256, "%s, %zu bytes", s->chars ? s->chars : "?", s->len);
            printf("object: %s\n", tmp);
        }
    }                                             /* everything released here */
    printf("strings alive after the pool: %d\n", strings_alive);
    return strings_alive == 0 ? 0 : 1;
}

int main(void) {
    return pool_tour() | arena_tour() | object_tour();
}
