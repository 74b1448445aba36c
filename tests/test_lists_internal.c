/* Slab lists, white-box: every walk of a pool's slab lists stops at the
 * pool's slab count (src/pool/pool_internal.h, slab_walk_step), so a list that
 * lists a slab twice (its records overwritten: a program cannot do it
 * through the API) is reported, never walked for ever.
 *
 * Each case links a slab of a pool's list to itself, in a forked child with
 * a 5-second alarm, then makes the call that walks that list; the child
 * must end in the report "corrupted slab list" (its error handler prints
 * the fields, then poolkit aborts), not in the alarm. Exit 0: every case
 * passed. */
#include "pool/pool_internal.h"

#include <poolkit/poolkit.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void print_what(const pk_error *e, void *arg) {
    (void)arg;
    char line[256];
    int n = snprintf(line, sizeof line, "REPORT what=%s\n", e->what);
    if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0) { /* nothing to do */
    }
}

typedef void (*walk_fn)(pk_pool *p);

static void walk_trim(pk_pool *p) { pk_pool_trim(p); }
static void walk_stats(pk_pool *p) {
    pk_pool_stats s;
    pk_pool_stats_get(p, &s);
}
static void walk_visit_none(void *obj, void *arg) {
    (void)obj;
    (void)arg;
}
static void walk_visit(pk_pool *p) { pk_pool_visit(p, walk_visit_none, NULL); }

/* Runs `walk` on a pool whose `list` holds a slab linked to itself; true
 * if the child ended in the report. */
static int expect_report(const char *name, slab_list_id list, walk_fn walk) {
    int err[2];
    if (pipe(err) != 0) return 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(err[1], STDERR_FILENO);
        close(err[0]);
        alarm(5);
        pk_pool_config c;
        memset(&c, 0, sizeof c);
        c.name = "looped";
        c.size = 64;
        c.limit = 100000; /* no thread heaps: every slab is on the pool's lists */
        pk_pool *p = pk_pool_create(&c);
        void *o = pk_pool_alloc(p);
        if (!p || !o) _exit(2);
        if (list == SLAB_EMPTY) pk_pool_free(p, o); /* the slab empties, and stays for the delay */
        slab *s = p->lists[list].head;
        if (!s) _exit(2);
        s->next = s; /* the list now runs for ever */
        pk_set_error_handler(print_what, NULL);
        walk(p);
        _exit(0);
    }
    close(err[1]);
    char buf[4096];
    size_t got = 0;
    ssize_t n;
    while ((n = read(err[0], buf + got, sizeof buf - 1 - got)) > 0) got += (size_t)n;
    buf[got] = '\0';
    close(err[0]);
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return 0;
    int ok = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && strstr(buf, "REPORT what=corrupted slab list");
    printf("%-44s %s\n", name,
           ok ? "reported"
           : WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? "FAILED: walked for ever (5 s alarm)"
                                                                 : "FAILED: no report");
    if (!ok) fprintf(stderr, "%s: child stderr:\n%s\n", name, buf);
    return ok;
}

int main(void) {
    pk_set_purge_delay(60000); /* an empty slab stays on its list */
    int ok = 1;
    ok &= expect_report("partial list, collected at trim", SLAB_PARTIAL, walk_trim);
    ok &= expect_report("partial list, resident bytes at stats", SLAB_PARTIAL, walk_stats);
    ok &= expect_report("partial list, visited", SLAB_PARTIAL, walk_visit);
    ok &= expect_report("empty list, released at trim", SLAB_EMPTY, walk_trim);
    return ok ? 0 : 1;
}
