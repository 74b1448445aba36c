/* An arena for a parser: every node of a parse lives in one arena, and one
 * rewind frees the whole tree.
 *
 * Parses arithmetic expressions ("1 + 2 * (3 - 4)") into trees, evaluates and
 * prints them. The arena is marked before each line and rewound after it, so
 * however many nodes a line needs, the parser never frees one by one and the
 * memory is reused line after line. Build: cc arena_parser.c
 * $(pkg-config --cflags --libs poolkit) */
#include <poolkit/poolkit.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct node {
    char op; /* '+', '-', '*', '/', or 0 for a number */
    long value;
    struct node *left, *right;
} node;

typedef struct parser {
    const char *s;
    pk_arena *arena;
} parser;

static node *make(parser *p, char op, long value, node *l, node *r) {
    node *n = pk_arena_alloc(p->arena, sizeof *n, _Alignof(node));
    if (!n) {
        perror("pk_arena_alloc");
        exit(1);
    }
    *n = (node){op, value, l, r};
    return n;
}

static void skip(parser *p) {
    while (isspace((unsigned char)*p->s)) p->s++;
}

static node *expr(parser *p);

static node *atom(parser *p) {
    skip(p);
    if (*p->s == '(') {
        p->s++;
        node *n = expr(p);
        skip(p);
        if (*p->s == ')') p->s++;
        return n;
    }
    char *end;
    long v = strtol(p->s, &end, 10);
    p->s = end;
    return make(p, 0, v, NULL, NULL);
}

static node *term(parser *p) {
    node *n = atom(p);
    for (skip(p); *p->s == '*' || *p->s == '/'; skip(p)) {
        char op = *p->s++;
        n = make(p, op, 0, n, atom(p));
    }
    return n;
}

static node *expr(parser *p) {
    node *n = term(p);
    for (skip(p); *p->s == '+' || *p->s == '-'; skip(p)) {
        char op = *p->s++;
        n = make(p, op, 0, n, term(p));
    }
    return n;
}

static long eval(const node *n) {
    switch (n->op) {
    case '+': return eval(n->left) + eval(n->right);
    case '-': return eval(n->left) - eval(n->right);
    case '*': return eval(n->left) * eval(n->right);
    case '/': {
        long d = eval(n->right);
        return d ? eval(n->left) / d : 0;
    }
    default: return n->value;
    }
}

/* Prints n fully parenthesized into the arena, to show strings live there too. */
static char *show(pk_arena *a, const node *n) {
    char buf[32];
    if (!n->op) {
        snprintf(buf, sizeof buf, "%ld", n->value);
        return pk_arena_strdup(a, buf);
    }
    char *l = show(a, n->left), *r = show(a, n->right);
    size_t len = strlen(l) + strlen(r) + 6;
    char *s = pk_arena_alloc(a, len, 1);
    snprintf(s, len, "(%s %c %s)", l, n->op, r);
    return s;
}

int main(void) {
    static const char *const lines[] = {"1 + 2 * 3", "(1 + 2) * 3", "100 / (7 - 2) - 4 * (2 + 1)"};
    pk_arena *arena = pk_arena_create(0);
    if (!arena) {
        perror("pk_arena_create");
        return 1;
    }
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        pk_arena_mark mark = pk_arena_save(arena);
        parser p = {lines[i], arena};
        node *tree = expr(&p);
        printf("%-28s = %-5ld %s\n", lines[i], eval(tree), show(arena, tree));
        pk_arena_rewind(arena, mark); /* the tree and its strings, gone at once */
    }
    pk_arena_destroy(arena);
    return 0;
}
