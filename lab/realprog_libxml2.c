/* realprog's libxml2 workload (realprog.h), through xmlMemSetup: a
 * generated catalogue of tens of MB (realprog_input.c) parsed into a tree,
 * walked (attributes and text read with the library's getters, which
 * allocate), edited (a third of the items unlinked and freed), serialized
 * back to memory, and freed. The hash covers what the walk read and the
 * serialized document. */
#include "lab.h"
#include "realprog.h"

#ifdef LAB_HAVE_LIBXML2
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdlib.h>
#include <string.h>

static const rp_alloc *cur;

static char *x_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = cur->malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

static size_t doc_bytes(double scale) { return (size_t)(24e6 * scale) + 20000; }

static void input(double scale) {
    size_t len;
    rp_xml_document(doc_bytes(scale), &len);
}

static uint64_t walk(xmlNode *n, uint64_t h, xmlNode **drop, size_t *ndrop, size_t cap) {
    for (; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE) continue;
        h = rp_hash(h, n->name, strlen((const char *)n->name));
        if (strcmp((const char *)n->name, "item") == 0) {
            xmlChar *kind = xmlGetProp(n, (const xmlChar *)"kind");
            xmlChar *price = xmlGetProp(n, (const xmlChar *)"price");
            if (kind && price) {
                h = rp_hash(h, price, strlen((const char *)price));
                if (kind[0] == 'c' && *ndrop < cap) drop[(*ndrop)++] = n;
            }
            xmlFree(kind);
            xmlFree(price);
        } else if (strcmp((const char *)n->name, "desc") == 0 || strcmp((const char *)n->name, "tag") == 0) {
            xmlChar *text = xmlNodeGetContent(n);
            if (text) h = rp_hash_u64(h, strlen((const char *)text));
            xmlFree(text);
        }
        h = walk(n->children, h, drop, ndrop, cap);
    }
    return h;
}

static uint64_t run(const rp_alloc *a, double scale, double *ns) {
    cur = a;
    if (xmlMemSetup(cur->free, cur->malloc, cur->realloc, x_strdup) != 0) {
        fprintf(stderr, "libxml2 workload: xmlMemSetup failed\n");
        exit(1);
    }
    xmlInitParser();
    size_t len;
    const char *text = rp_xml_document(doc_bytes(scale), &len);
    size_t cap = len / 64;
    xmlNode **drop = malloc(cap * sizeof *drop);
    double t0 = lab_now_ns();
    xmlDoc *doc = xmlReadMemory(text, (int)len, "catalog.xml", NULL, XML_PARSE_NONET);
    if (!doc) {
        fprintf(stderr, "libxml2 workload: the document did not parse\n");
        exit(1);
    }
    size_t ndrop = 0;
    uint64_t h = walk(xmlDocGetRootElement(doc), RP_HASH_INIT, drop, &ndrop, cap);
    for (size_t i = 0; i < ndrop; i++) {
        xmlUnlinkNode(drop[i]);
        xmlFreeNode(drop[i]);
    }
    xmlChar *out = NULL;
    int outlen = 0;
    xmlDocDumpMemory(doc, &out, &outlen);
    h = rp_hash(h, out, (size_t)outlen);
    xmlFree(out);
    xmlFreeDoc(doc);
    *ns = lab_now_ns() - t0;
    free(drop);
    xmlCleanupParser();
    return h;
}

const rp_hook_workload rp_libxml2 = {
    "libxml2", "libxml2 (xmlMemSetup): parse a generated catalogue, walk, edit, serialize, free", NULL,
    input, run};
#else
const rp_hook_workload rp_libxml2 = {"libxml2", "libxml2 (xmlMemSetup)",
                                     "libxml2's headers were not found when pk-lab was built "
                                     "(apt-get install libxml2-dev, then rebuild)",
                                     NULL, NULL};
#endif
