/* SQLite on poolkit's size-class front end (poolkit/alloc.h), through its
 * allocator hook, SQLITE_CONFIG_MALLOC: every allocation SQLite makes comes
 * from a class pool, and is freed without its size (SQLite asks xSize for
 * it, which pk_usable_size answers). */
#include <poolkit/alloc.h>
#include <poolkit/stats.h>

#include <sqlite3.h>
#include <stdio.h>

static void *x_malloc(int n) { return pk_alloc((size_t)n); }
static void x_free(void *p) { pk_free(p); }
static void *x_realloc(void *p, int n) { return pk_realloc(p, (size_t)n); }
static int x_size(void *p) { return (int)pk_usable_size(p); }
static int x_roundup(int n) { return (int)pk_good_size((size_t)n); }
static int x_init(void *arg) { (void)arg; return SQLITE_OK; }
static void x_shutdown(void *arg) { (void)arg; }

static const sqlite3_mem_methods pk_sqlite_mem = {x_malloc, x_free, x_realloc, x_size,
                                                   x_roundup, x_init, x_shutdown, NULL};

int main(void) {
    /* Before anything else of SQLite's: the allocator is set once per process. */
    if (sqlite3_config(SQLITE_CONFIG_MALLOC, &pk_sqlite_mem) != SQLITE_OK) return 1;
    sqlite3 *db;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) return 1;
    sqlite3_exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT);"
                     "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000)"
                     "  INSERT INTO t SELECT x, 'name ' || x FROM c;",
                 NULL, NULL, NULL);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "SELECT count(*), max(name) FROM t WHERE id % 7 = 0", -1, &st, NULL);
    int rows = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        rows = sqlite3_column_int(st, 0);
        printf("sqlite on pk_alloc: %d rows, max %s\n", rows, sqlite3_column_text(st, 1));
    }
    sqlite3_finalize(st);
    pk_process_stats s;
    pk_stats_get(&s);
    printf("poolkit holds %zu live objects for SQLite\n", s.pool_live);
    sqlite3_close(db);
    sqlite3_shutdown();
    return rows == 714 && s.pool_live > 0 ? 0 : 1;
}
