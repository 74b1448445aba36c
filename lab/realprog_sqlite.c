/* realprog's SQLite workload (realprog.h), through SQLITE_CONFIG_MALLOC:
 * an in-memory database of users and their orders, filled in one
 * transaction with prepared statements, indexed, then queried the way an
 * application does: point lookups by key and by index, and a join grouped
 * and ordered. SQLite's defaults stay as Debian builds them (memory
 * statistics on, so xSize is asked after every allocation; lookaside on);
 * xRoundup rounds to 8 as SQLite's own system-malloc layer does, for every
 * allocator alike. The hash covers every result row as text. */
#include "lab.h"
#include "realprog.h"

#ifdef LAB_HAVE_SQLITE
#include <sqlite3.h>
#include <stdlib.h>

static const rp_alloc *cur;
static void *x_malloc(int n) { return cur->malloc((size_t)n); }
static void x_free(void *p) { cur->free(p); }
static void *x_realloc(void *p, int n) { return cur->realloc(p, (size_t)n); }
static int x_size(void *p) { return p ? (int)cur->usable(p) : 0; }
static int x_roundup(int n) { return (n + 7) & ~7; }
static int x_init(void *arg) { (void)arg; return SQLITE_OK; }
static void x_shutdown(void *arg) { (void)arg; }

static void must(int rc, sqlite3 *db, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "sqlite workload: %s: %s\n", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        exit(1);
    }
}

static void exec(sqlite3 *db, const char *sql) { must(sqlite3_exec(db, sql, NULL, NULL, NULL), db, sql); }

static sqlite3_stmt *prep(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    must(sqlite3_prepare_v2(db, sql, -1, &st, NULL), db, sql);
    return st;
}

/* Steps st to its end, hashing every column of every row as text. */
static uint64_t rows(sqlite3_stmt *st, uint64_t h) {
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            const unsigned char *t = sqlite3_column_text(st, c);
            h = t ? rp_hash(h, t, (size_t)sqlite3_column_bytes(st, c)) : rp_hash_u64(h, 0);
        }
    must(rc, sqlite3_db_handle(st), "step");
    sqlite3_reset(st);
    return h;
}

static uint64_t run(const rp_alloc *a, double scale, double *ns) {
    cur = a;
    static const sqlite3_mem_methods m = {x_malloc, x_free, x_realloc, x_size, x_roundup, x_init, x_shutdown, NULL};
    must(sqlite3_config(SQLITE_CONFIG_MALLOC, &m), NULL, "SQLITE_CONFIG_MALLOC");
    long users = (long)(60000 * scale), orders = 3 * users, lookups = users;
    if (users < 100) users = 100, orders = 300, lookups = 100;
    double t0 = lab_now_ns();
    sqlite3 *db = NULL;
    must(sqlite3_open(":memory:", &db), db, "open");
    exec(db, "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, city TEXT, score INTEGER);"
             "CREATE TABLE orders(id INTEGER PRIMARY KEY, user_id INTEGER, item TEXT, amount REAL);");
    exec(db, "BEGIN");
    sqlite3_stmt *iu = prep(db, "INSERT INTO users VALUES(?1, ?2, ?3, ?4)");
    char buf[64];
    shared_rng r = {0x51};
    for (long i = 1; i <= users; i++) {
        sqlite3_bind_int64(iu, 1, i);
        snprintf(buf, sizeof buf, "user %ld %lx", i, (unsigned long)(shared_rng_next(&r) & 0xffffff));
        sqlite3_bind_text(iu, 2, buf, -1, SQLITE_TRANSIENT);
        snprintf(buf, sizeof buf, "city%d", (int)(shared_rng_next(&r) % 40));
        sqlite3_bind_text(iu, 3, buf, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(iu, 4, (int)(shared_rng_next(&r) % 1000));
        must(sqlite3_step(iu), db, "insert user");
        sqlite3_reset(iu);
    }
    sqlite3_stmt *io = prep(db, "INSERT INTO orders(user_id, item, amount) VALUES(?1, ?2, ?3)");
    for (long i = 0; i < orders; i++) {
        sqlite3_bind_int64(io, 1, 1 + (long)(shared_rng_next(&r) % (uint64_t)users));
        snprintf(buf, sizeof buf, "item-%d colour %d", (int)(shared_rng_next(&r) % 500), (int)(i % 7));
        sqlite3_bind_text(io, 2, buf, -1, SQLITE_TRANSIENT);
        sqlite3_bind_double(io, 3, (double)(shared_rng_next(&r) % 100000) / 100.0);
        must(sqlite3_step(io), db, "insert order");
        sqlite3_reset(io);
    }
    sqlite3_finalize(iu);
    sqlite3_finalize(io);
    exec(db, "COMMIT");
    exec(db, "CREATE INDEX orders_user ON orders(user_id); CREATE INDEX users_city ON users(city);");
    uint64_t h = RP_HASH_INIT;
    sqlite3_stmt *by_id = prep(db, "SELECT name, score FROM users WHERE id = ?1");
    sqlite3_stmt *by_user = prep(db, "SELECT count(*), total(amount), max(item) FROM orders WHERE user_id = ?1");
    sqlite3_stmt *by_city = prep(db, "SELECT count(*), avg(score) FROM users WHERE city = ?1");
    for (long i = 0; i < lookups; i++) {
        long id = 1 + (long)(shared_rng_next(&r) % (uint64_t)users);
        sqlite3_bind_int64(by_id, 1, id);
        h = rows(by_id, h);
        sqlite3_bind_int64(by_user, 1, id);
        h = rows(by_user, h);
        if (i % 64 == 0) {
            snprintf(buf, sizeof buf, "city%d", (int)(i / 64 % 40));
            sqlite3_bind_text(by_city, 1, buf, -1, SQLITE_TRANSIENT);
            h = rows(by_city, h);
        }
    }
    sqlite3_finalize(by_id);
    sqlite3_finalize(by_user);
    sqlite3_finalize(by_city);
    sqlite3_stmt *join = prep(db, "SELECT u.city, count(*), total(o.amount), max(o.item) FROM users u "
                                  "JOIN orders o ON o.user_id = u.id WHERE u.score > 100 GROUP BY u.city "
                                  "ORDER BY u.city");
    h = rows(join, h);
    sqlite3_finalize(join);
    must(sqlite3_close(db), NULL, "close");
    *ns = lab_now_ns() - t0;
    return h;
}

const rp_hook_workload rp_sqlite = {
    "sqlite", "SQLite (SQLITE_CONFIG_MALLOC): in-memory users and orders, inserts, indexed lookups, a join",
    NULL, NULL, run};
#else
const rp_hook_workload rp_sqlite = {"sqlite", "SQLite (SQLITE_CONFIG_MALLOC)",
                                    "SQLite's headers were not found when pk-lab was built "
                                    "(apt-get install libsqlite3-dev, then rebuild)",
                                    NULL, NULL};
#endif
