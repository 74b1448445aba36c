/* The error handler: one line per fault, then abort for fatal ones.
 *
 * Reports are formatted into a stack buffer, never the heap, because the
 * heap (or a pool) may be what is broken. */
#include "base/internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t handler_lock PK_FORK_LOCK = PTHREAD_MUTEX_INITIALIZER;
static pk_error_handler handler;
static void *handler_arg;

void pk_set_error_handler(pk_error_handler h, void *arg) {
    pk_lock(&handler_lock);
    fork_test_point(HOOK_ERROR_HANDLER, &handler_lock);
    handler = h;
    handler_arg = arg;
    pk_unlock(&handler_lock);
}

static void default_handler(const pk_error *err, void *arg) {
    (void)arg;
    char line[3200];
    int n = snprintf(line, sizeof line, "%s\n", err->message);
    if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
    if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0) { /* nothing more to do */ }
}

void error_report(pk_severity sev, const char *what, const char *pool, const void *ptr,
                  const char *fmt, ...) {
    char body[3000], message[3100];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(message, sizeof message, "poolkit: %s: %s", what, body);
    pk_error err = {sev, what, pool, ptr, message};

    pk_lock(&handler_lock);
    pk_error_handler h = handler;
    void *arg = handler_arg;
    pk_unlock(&handler_lock);
    (h ? h : default_handler)(&err, arg);
    if (sev == PK_FATAL) abort();
}

void assert_fail(const char *file, int line, const char *cond) {
    error_report(PK_FATAL, "internal assertion", NULL, NULL, "%s:%d: %s", file, line, cond);
    abort(); /* error_report never returns from a fatal report */
}

void error_fork_lock(void) { pk_lock(&handler_lock); }
void error_fork_unlock(void) { pk_unlock(&handler_lock); }
