/* expat on poolkit's size-class front end (poolkit/alloc.h), through its
 * allocator hook, XML_ParserCreate_MM: the parser's buffers and tables come
 * from class pools, as do the program's own records of what it read. */
#include <poolkit/alloc.h>
#include <poolkit/stats.h>

#include <expat.h>
#include <stdio.h>
#include <string.h>

typedef struct name {
    struct name *next;
    char text[]; /* an element's name */
} name;

static void XMLCALL on_start(void *arg, const XML_Char *el, const XML_Char **attrs) {
    (void)attrs;
    name **list = arg;
    size_t n = strlen(el) + 1;
    name *r = pk_alloc(sizeof *r + n); /* freed below with pk_free_sized */
    memcpy(r->text, el, n);
    r->next = *list;
    *list = r;
}

int main(void) {
    static const XML_Memory_Handling_Suite pk_expat_mem = {pk_alloc, pk_realloc, pk_free};
    XML_Parser p = XML_ParserCreate_MM(NULL, &pk_expat_mem, NULL);
    name *seen = NULL;
    XML_SetUserData(p, &seen);
    XML_SetStartElementHandler(p, on_start);
    static const char text[] = "<a><b/><c><d/></c><e/></a>";
    int ok = XML_Parse(p, text, (int)strlen(text), 1) == XML_STATUS_OK;
    pk_process_stats s;
    pk_stats_get(&s);
    XML_ParserFree(p);
    int count = 0;
    while (seen) {
        name *next = seen->next;
        printf("element %s\n", seen->text);
        pk_free_sized(seen, sizeof *seen + strlen(seen->text) + 1);
        seen = next;
        count++;
    }
    printf("poolkit held %zu live objects while parsing\n", s.pool_live);
    return ok && count == 5 && s.pool_live > 0 ? 0 : 1;
}
