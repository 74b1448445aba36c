/* libxml2 on poolkit's size-class front end (poolkit/alloc.h), through its
 * allocator hook, xmlMemSetup: the parser's nodes, names and text come from
 * class pools. libxml2 also wants a strdup. */
#include <poolkit/alloc.h>
#include <poolkit/stats.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdio.h>
#include <string.h>

static char *pk_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = pk_alloc(n);
    return p ? memcpy(p, s, n) : NULL;
}

int main(void) {
    /* Before the parser is first used. */
    if (xmlMemSetup(pk_free, pk_alloc, pk_realloc, pk_strdup) != 0) return 1;
    xmlInitParser();
    static const char text[] = "<list><item n='1'>one</item><item n='2'>two</item>"
                               "<item n='3'>three</item></list>";
    xmlDoc *doc = xmlReadMemory(text, (int)strlen(text), "list.xml", NULL, 0);
    if (!doc) return 1;
    int items = 0;
    for (xmlNode *n = xmlDocGetRootElement(doc)->children; n; n = n->next) {
        xmlChar *v = xmlNodeGetContent(n);
        printf("item: %s\n", (const char *)v);
        xmlFree(v);
        items++;
    }
    pk_process_stats s;
    pk_stats_get(&s);
    printf("poolkit holds %zu live objects for the document\n", s.pool_live);
    xmlFreeDoc(doc);
    xmlCleanupParser();
    return items == 3 && s.pool_live > 0 ? 0 : 1;
}
