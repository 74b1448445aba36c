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

/* A streaming writer (results.json): values go in order and the writer
 * puts the commas, the colons and the brackets. key is the member's name
 * inside an object, NULL inside an array or at the top. Objects and arrays
 * nest up to JSON_WRITER_DEPTH; the first four levels (down to results.json's
 * rows) put each member on a line of its own. */
#define JSON_WRITER_DEPTH 8
typedef struct json_writer {
    FILE *f;
    int depth;
    int count[JSON_WRITER_DEPTH]; /* members written at each level */
    char close[JSON_WRITER_DEPTH]; /* '}' or ']' */
} json_writer;

void jw_begin(json_writer *w, FILE *f);
void jw_object(json_writer *w, const char *key);
void jw_array(json_writer *w, const char *key);
void jw_end(json_writer *w); /* closes the innermost object or array */
void jw_string(json_writer *w, const char *key, const char *v);
/* A number, or null for NaN and infinities. */
void jw_number(json_writer *w, const char *key, double v);
void jw_int(json_writer *w, const char *key, long v);
void jw_bool(json_writer *w, const char *key, int v);
/* Text that is JSON already (a parameter's value). */
void jw_raw(json_writer *w, const char *key, const char *text);

#endif
