/* A small JSON reader and writer: enough for the contender programs' result
 * lines (PROTOCOL.md) and for results.json. */
#ifndef PK_LAB_JSON_H
#define PK_LAB_JSON_H

#include <stdio.h>

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json {
    json_type type;
    double number;     /* JSON_NUMBER; JSON_BOOL: 0 or 1 */
    char *string;      /* JSON_STRING */
    char *key;         /* the member's name, inside an object */
    struct json *kids; /* JSON_ARRAY and JSON_OBJECT: n children */
    int n;
} json;

/* Parses text (one value, surrounding white space allowed); NULL if it is
 * not JSON. Free with json_free. */
json *json_parse(const char *text);
void json_free(json *j);
/* The member of an object, or NULL. */
const json *json_get(const json *obj, const char *key);
/* The string of a member, or NULL. */
const char *json_str(const json *obj, const char *key);
/* Writes j as compact JSON text into out (at most len bytes, NUL-ended). */
void json_write(const json *j, char *out, size_t len);

/* Writes s as a JSON string, quoted and escaped. */
void json_put_string(FILE *f, const char *s);
/* Writes a number, or null for NaN and infinities. */
void json_put_number(FILE *f, double v);

#endif
