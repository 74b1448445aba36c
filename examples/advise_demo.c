/* advise_demo: a small request server's inner loop, written with malloc,
 * the program `pk-lab advise` studies in docs/advise.md and in the lab.
 *
 * Each request is a line such as
 *     GET /shop/item?id=42&colour=red&size=9 HTTP/1.1
 * The server splits it into tokens (each a small struct from malloc, which
 * the parser consumes and frees at once), keeps the query's parameters in
 * a list (a node and two strings each, freed when the request is
 * answered), and writes a response line into a buffer it reuses.
 *
 * Built twice: as is (example_advise_demo, and advise-demo beside pk-lab),
 * and with -DADVICE_APPLIED (advise-demo-pooled), where the token site
 * takes `pk-lab advise`'s top advice for it: a pool with PK_POOL_LOCAL.
 * The lab runs both and compares the measured saving with the predicted
 * one (lab/exp_advise.c).
 *
 *   advise_demo [REQUESTS]     (default 2,000)
 * Prints the number of requests, tokens and parameters, and a checksum of
 * the responses (the same for both builds).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ADVICE_APPLIED
#  include <poolkit/pool.h>
static pk_pool *token_pool;
#endif

enum token_kind { T_WORD, T_SLASH, T_QUERY, T_AND, T_EQUALS, T_SPACE, T_END };

typedef struct token {
    enum token_kind kind;
    const char *start;
    size_t len;
    uint64_t hash;
} token;

typedef struct param {
    char *key, *value;
    struct param *next;
} param;

/* ---- the tokens: one allocation per token, freed by the parser at once ---- */

static token *token_new(enum token_kind kind, const char *start, size_t len) {
#ifdef ADVICE_APPLIED
    token *t = pk_pool_alloc(token_pool);
#else
    token *t = malloc(sizeof *t);
#endif
    if (!t) abort();
    t->kind = kind;
    t->start = start;
    t->len = len;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)start[i]) * 1099511628211ull;
    t->hash = h;
    return t;
}

static void token_free(token *t) {
#ifdef ADVICE_APPLIED
    pk_pool_free(token_pool, t);
#else
    free(t);
#endif
}

/* The next token at *cur, which it advances. */
static token *next_token(const char **cur) {
    const char *p = *cur;
    enum token_kind k;
    switch (*p) {
    case 0: return token_new(T_END, p, 0);
    case '/': k = T_SLASH; break;
    case '?': k = T_QUERY; break;
    case '&': k = T_AND; break;
    case '=': k = T_EQUALS; break;
    case ' ': k = T_SPACE; break;
    default: {
        const char *s = p;
        while (*p && !strchr("/?&= ", *p)) p++;
        *cur = p;
        return token_new(T_WORD, s, (size_t)(p - s));
    }
    }
    *cur = p + 1;
    return token_new(k, p, 1);
}

static char *copy(const token *t) {
    char *s = malloc(t->len + 1);
    if (!s) abort();
    memcpy(s, t->start, t->len);
    s[t->len] = 0;
    return s;
}

/* ---- one request ---- */

static void append(char *out, size_t room, size_t *n, const char *s, size_t len) {
    if (*n + len + 17 > room) len = room > *n + 17 ? room - *n - 17 : 0;
    memcpy(out + *n, s, len);
    *n += len;
}

typedef struct stats {
    long tokens, params;
    uint64_t checksum;
} stats;

static void serve(const char *line, char *response, size_t room, stats *st) {
    const char *cur = line;
    param *params = NULL;
    uint64_t path = 0;
    int in_query = 0;
    char *key = NULL;
    for (;;) {
        token *t = next_token(&cur);
        st->tokens++;
        enum token_kind kind = t->kind;
        if (kind == T_QUERY) in_query = 1;
        else if (kind == T_SPACE && in_query) in_query = 0;
        else if (kind == T_WORD && !in_query) path = path * 31 + t->hash;
        else if (kind == T_WORD && in_query && !key) key = copy(t);
        else if (kind == T_WORD && in_query) {
            param *p = malloc(sizeof *p);
            if (!p) abort();
            p->key = key;
            p->value = copy(t);
            p->next = params;
            params = p;
            key = NULL;
            st->params++;
        }
        token_free(t);
        if (kind == T_END) break;
    }
    /* the response: the path's hash and the parameters, appended by hand */
    size_t n = 0;
    append(response, room, &n, "200 OK ", 7);
    for (int i = 0; i < 16; i++) response[n++] = "0123456789abcdef"[(path >> (60 - 4 * i)) & 15];
    for (param *p = params; p; p = p->next) {
        append(response, room, &n, " ", 1);
        append(response, room, &n, p->key, strlen(p->key));
        append(response, room, &n, "=", 1);
        append(response, room, &n, p->value, strlen(p->value));
    }
    response[n] = 0;
    for (size_t i = 0; i < n; i++) st->checksum = (st->checksum ^ (unsigned char)response[i]) * 1099511628211ull;
    while (params) {
        param *next = params->next;
        free(params->key);
        free(params->value);
        free(params);
        params = next;
    }
    free(key);
}

/* ---- the requests: generated, the same for every run ---- */

static const char *const words[] = {"shop", "item", "cart", "user", "search", "api", "v2", "orders", "list", "view"};
static const char *const keys[] = {"id", "colour", "size", "page", "sort", "q", "limit", "lang"};

static char *make_request(uint64_t *rng, char *buf, size_t room) {
    int n = snprintf(buf, room, "GET");
    int depth = 2 + (int)(*rng % 4);
    for (int i = 0; i < depth; i++) {
        *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
        n += snprintf(buf + n, room - (size_t)n, "%c%s", i ? '/' : ' ', words[(*rng >> 33) % 10]);
    }
    int nparams = 1 + (int)((*rng >> 40) % 6);
    for (int i = 0; i < nparams; i++) {
        *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
        n += snprintf(buf + n, room - (size_t)n, "%c%s=%llu", i ? '&' : '?', keys[(*rng >> 33) % 8],
                      (unsigned long long)((*rng >> 20) % 100000));
    }
    snprintf(buf + n, room - (size_t)n, " HTTP/1.1");
    return buf;
}

int main(int argc, char **argv) {
    long requests = argc > 1 ? atol(argv[1]) : 2000;
#ifdef ADVICE_APPLIED
    pk_pool_config config = {.name = "tokens", .size = sizeof(token), .flags = PK_POOL_LOCAL};
    token_pool = pk_pool_create(&config);
    if (!token_pool) abort();
#endif
    /* the requests that arrive: LINES different lines, in turn */
    enum { LINES = 1024, WIDTH = 256 };
    static char lines[LINES][WIDTH];
    uint64_t rng = 42;
    for (int i = 0; i < LINES; i++) make_request(&rng, lines[i], WIDTH);
    char response[1024];
    stats st = {0, 0, 1469598103934665603ull};
    for (long r = 0; r < requests; r++) serve(lines[r % LINES], response, sizeof response, &st);
    printf("%ld requests, %ld tokens, %ld parameters, checksum %016llx\n", requests, st.tokens, st.params,
           (unsigned long long)st.checksum);
#ifdef ADVICE_APPLIED
    pk_pool_destroy(token_pool);
#endif
    return 0;
}
