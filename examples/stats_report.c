/* The process report: what pk_stats_print and POOLKIT_STATS show.
 *
 * A small, fixed workload (the numbers below are what tests/stats_check.py
 * expects to read back): two pools, a few pk_new objects, an arena, an
 * autorelease pool; then the report as a table on stdout.
 *
 *   ./example_stats_report                         the table
 *   ./example_stats_report --json                  the same as JSON
 *   POOLKIT_STATS=report.json ./example_stats_report   also at exit, as JSON
 */
#include <poolkit/poolkit.h>

#include <stdio.h>
#include <string.h>

static const pk_class Order = {"Order", 40, NULL};
static const pk_class Customer = {"Customer", 100, NULL};

int main(int argc, char **argv) {
    unsigned flags = PK_STATS_CLASSES;
    if (argc > 1 && strcmp(argv[1], "--json") == 0) flags |= PK_STATS_JSON;

    /* 1,000 nodes made, 400 freed: 600 live. */
    pk_pool *nodes = pk_pool_create(&(pk_pool_config){.name = "nodes", .size = 48});
    void *node[1000];
    for (int i = 0; i < 1000; i++) node[i] = pk_pool_alloc(nodes);
    for (int i = 0; i < 400; i++) pk_pool_free(nodes, node[i]);

    /* 10 sessions, all live. */
    pk_pool *sessions = pk_pool_create(&(pk_pool_config){.name = "sessions", .size = 200});
    for (int i = 0; i < 10; i++) (void)pk_pool_alloc(sessions);

    /* Objects: 3 orders and 2 customers live; 5 orders made and released. */
    for (int i = 0; i < 3; i++) (void)pk_new(&Order);
    for (int i = 0; i < 2; i++) (void)pk_new(&Customer);
    for (int i = 0; i < 5; i++) pk_release(pk_new(&Order));

    /* An arena with 100,000 bytes in it. */
    pk_arena *scratch = pk_arena_create(0);
    pk_arena_alloc(scratch, 100000, 0);

    /* An autorelease pool holding one object while the report is made. */
    pk_autorelease_pool ap = pk_autorelease_push();
    pk_autorelease(pk_new(&Order));
    if (pk_stats_print(stdout, flags) != 0) return 1;
    pk_autorelease_pop(ap);
    return 0;
}
