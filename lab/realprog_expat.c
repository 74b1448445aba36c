/* realprog's expat workload (realprog.h), through XML_ParserCreate_MM: the
 * generated catalogue (realprog_input.c) streamed through the parser in
 * 64 KiB chunks while the program builds its own tree from the events, as
 * a SAX-style reader does (every node, name, attribute and text run from
 * the same allocator as the parser's), then walks it and frees it. The
 * hash covers the walk. */
#include "lab.h"
#include "realprog.h"

#ifdef LAB_HAVE_EXPAT
#include <expat.h>
#include <stdlib.h>
#include <string.h>

static const rp_alloc *cur;

typedef struct node {
    struct node *parent, *first, *last, *next;
    char *name;
    char **attrs; /* name, value, ..., NULL */
    char *text;
    size_t text_len;
} node;

typedef struct builder {
    node *root, *at;
} builder;

static char *copy_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = cur->malloc(n);
    memcpy(p, s, n);
    return p;
}

static void XMLCALL on_start(void *arg, const XML_Char *name, const XML_Char **atts) {
    builder *b = arg;
    node *n = cur->calloc(1, sizeof *n);
    n->name = copy_str(name);
    size_t k = 0;
    while (atts[k]) k++;
    n->attrs = cur->malloc((k + 1) * sizeof *n->attrs);
    for (size_t i = 0; i < k; i++) n->attrs[i] = copy_str(atts[i]);
    n->attrs[k] = NULL;
    n->parent = b->at;
    if (b->at) {
        if (b->at->last) b->at->last->next = n;
        else b->at->first = n;
        b->at->last = n;
    } else {
        b->root = n;
    }
    b->at = n;
}

static void XMLCALL on_end(void *arg, const XML_Char *name) {
    (void)name;
    builder *b = arg;
    b->at = b->at->parent;
}

static void XMLCALL on_text(void *arg, const XML_Char *s, int len) {
    builder *b = arg;
    node *n = b->at;
    if (!n) return;
    n->text = cur->realloc(n->text, n->text_len + (size_t)len + 1);
    memcpy(n->text + n->text_len, s, (size_t)len);
    n->text_len += (size_t)len;
    n->text[n->text_len] = 0;
}

static uint64_t walk(const node *n, uint64_t h) {
    for (; n; n = n->next) {
        h = rp_hash(h, n->name, strlen(n->name));
        for (char **a = n->attrs; *a; a++) h = rp_hash(h, *a, strlen(*a));
        h = rp_hash_u64(h, n->text_len);
        h = walk(n->first, h);
    }
    return h;
}

static void drop(node *n) {
    while (n) {
        node *next = n->next;
        drop(n->first);
        for (char **a = n->attrs; *a; a++) cur->free(*a);
        cur->free(n->attrs);
        cur->free(n->name);
        cur->free(n->text);
        cur->free(n);
        n = next;
    }
}

static size_t doc_bytes(double scale) { return (size_t)(24e6 * scale) + 20000; }

static void input(double scale) {
    size_t len;
    rp_xml_document(doc_bytes(scale), &len);
}

static uint64_t run(const rp_alloc *a, double scale, double *ns) {
    cur = a;
    size_t len;
    const char *text = rp_xml_document(doc_bytes(scale), &len);
    double t0 = lab_now_ns();
    XML_Memory_Handling_Suite ms = {a->malloc, a->realloc, a->free};
    XML_Parser p = XML_ParserCreate_MM(NULL, &ms, NULL);
    builder b = {NULL, NULL};
    XML_SetUserData(p, &b);
    XML_SetElementHandler(p, on_start, on_end);
    XML_SetCharacterDataHandler(p, on_text);
    const size_t chunk = 64 << 10;
    for (size_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        if (XML_Parse(p, text + off, (int)n, off + n == len) == XML_STATUS_ERROR) {
            fprintf(stderr, "expat workload: %s at line %lu\n", XML_ErrorString(XML_GetErrorCode(p)),
                    (unsigned long)XML_GetCurrentLineNumber(p));
            exit(1);
        }
    }
    XML_ParserFree(p);
    uint64_t h = walk(b.root, RP_HASH_INIT);
    drop(b.root);
    *ns = lab_now_ns() - t0;
    return h;
}

const rp_hook_workload rp_expat = {
    "expat", "expat (XML_ParserCreate_MM): stream the catalogue, build the program's own tree, walk, free",
    NULL, input, run};
#else
const rp_hook_workload rp_expat = {"expat", "expat (XML_ParserCreate_MM)",
                                   "expat's headers were not found when pk-lab was built "
                                   "(apt-get install libexpat1-dev, then rebuild)",
                                   NULL, NULL};
#endif
