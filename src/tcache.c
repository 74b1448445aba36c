/* Thread caches: a table of per-pool caches for each thread.
 *
 * Fast path protocol (pool.h): each thread's table header {slots, limit}
 * is initial-exec TLS, so its offset from the thread pointer is the same in
 * every thread and the pool stores it. A pool's cache is slots[key]; a
 * thread whose table is shorter than a key takes the slow path, which
 * grows the table. Any number of pools: the table doubles from TABLE_MIN
 * entries, and keys of destroyed pools are reused.
 *
 * Only its own thread writes a cache while the thread runs, with plain
 * loads and stores: no lock, no atomic instruction. Other threads touch a
 * cache only under the registry lock and only when the owner is quiescent
 * for that pool (stats count it; destroy and visit take its objects), as
 * the contract requires. A thread replaces its own table only under the
 * registry lock, so those readers never see a table being freed.
 *
 * A thread registers on its first slow path; at exit its pthread key
 * destructor returns every cached object to its pool, and later calls on
 * that thread bypass the caches.
 */
#include "pool_internal.h"

#include <pthread.h>
#include <string.h>

typedef struct tc_table {
    tc_slot *slots;
    uintptr_t limit; /* bytes: entries * sizeof(tc_slot) */
} tc_table;

_Static_assert(sizeof(tc_slot) == 32, "pool.h's inline paths index tables by key * 32");
_Static_assert(offsetof(tc_slot, head) == 0 && offsetof(tc_slot, room) == sizeof(void *),
               "pool.h's inline paths read head and room as the cache's first two words");
_Static_assert(offsetof(tc_table, limit) == sizeof(void *),
               "pool.h's inline paths read the table's limit in its second word");
_Static_assert(offsetof(struct pk_pool, tc_table) == 0 &&
                   offsetof(struct pk_pool, tc_key) == sizeof(intptr_t),
               "pool.h's inline paths read the table offset and key as the pool's first two words");

typedef struct thread_rec {
    struct thread_rec *prev, *next;
    tc_table *table; /* the thread's TLS table header */
} thread_rec;

enum { THREAD_NEW, THREAD_LIVE, THREAD_EXITING };

static __thread tc_table table __attribute__((tls_model("initial-exec")));
static __thread thread_rec *self __attribute__((tls_model("initial-exec")));
static __thread int state __attribute__((tls_model("initial-exec")));

static pthread_mutex_t registry = PTHREAD_MUTEX_INITIALIZER;
static thread_rec *threads, *spare_recs;
/* Under the registry lock: the pool of each key (NULL when free), and a
 * stack of free keys below key_count. */
static pk_pool **key_pool;
static size_t *free_keys;
static size_t key_count, key_cap, free_count;
/* Under the registry lock: one table kept ready for the next thread (made
 * when a pool is created, or left by a thread that exited), so a new
 * thread's first calls ask the system for nothing (pk_pool_reserve's
 * promise). */
static tc_slot *stock;
static size_t stock_cap;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static char *thread_pointer(void) {
#if defined(__x86_64__)
    char *tp;
    __asm__("mov %%fs:0, %0" : "=r"(tp));
    return tp;
#elif defined(__aarch64__)
    return __builtin_thread_pointer();
#else
    return NULL; /* no inline fast path: the offset is never used */
#endif
}

void tcache_registry_lock(void) { pthread_mutex_lock(&registry); }
void tcache_registry_unlock(void) { pthread_mutex_unlock(&registry); }

intptr_t tcache_table_off(void) { return (char *)&table - thread_pointer(); }

static size_t entries(const tc_table *t) { return t->limit / sizeof(tc_slot); }

static size_t array_bytes(size_t n, size_t elem) { return align_up(n * elem, os_page_size()); }

/* Grows an os_map'ed array of `*cap` elements to at least `need`. */
static bool grow_array(void **arr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t n = *cap ? *cap : TABLE_MIN;
    while (n < need) n *= 2;
    void *a = os_map(array_bytes(n, elem), 0);
    if (!a) return false;
    if (*arr) {
        memcpy(a, *arr, *cap * elem);
        os_unmap(*arr, array_bytes(*cap, elem));
    }
    *arr = a;
    *cap = n;
    return true;
}

static void rec_stock(void);

/* Keeps the stock table large enough for every key; caller holds the
 * registry lock. */
static void table_stock(void) {
    if (stock_cap >= key_count) return;
    void *t = stock;
    size_t cap = stock_cap;
    if (grow_array(&t, &cap, key_count, sizeof(tc_slot))) {
        stock = t;
        stock_cap = cap;
        memset(stock, 0, cap * sizeof(tc_slot));
    }
}

bool tcache_attach(pk_pool *p) {
    bool ok = true;
    pthread_mutex_lock(&registry);
    rec_stock(); /* so the next thread to use a pool need not map a page */
    if (free_count) {
        p->key = free_keys[--free_count];
    } else if (grow_array((void **)&key_pool, &key_cap, key_count + 1, sizeof *key_pool)) {
        p->key = key_count++;
    } else {
        ok = false;
    }
    if (ok) {
        key_pool[p->key] = p;
        table_stock();
    }
    pthread_mutex_unlock(&registry);
    return ok;
}

/* Caller holds the registry lock. */
static void forget_key(size_t key) {
    for (thread_rec *t = threads; t; t = t->next)
        if (key < entries(t->table)) memset(&t->table->slots[key], 0, sizeof(tc_slot));
}

void tcache_detach(pk_pool *p) {
    if (!p->cached) return;
    forget_key(p->key);
    key_pool[p->key] = NULL;
    /* The free-key stack has room for every key below key_count. */
    static size_t free_cap;
    if (grow_array((void **)&free_keys, &free_cap, free_count + 1, sizeof *free_keys))
        free_keys[free_count++] = p->key;
    p->cached = false;
    p->tc_key = TC_NO_KEY;
}

void tcache_account(pk_pool *p, tc_slot *c, long n) {
    if (n == 0) return;
    int64_t *b = &c->balance;
    if (n < 0) {
        int64_t back = -n, own = *b > 0 ? *b : 0;
        if (back > own) p->remote_frees += (uint64_t)(back - own);
    }
    *b += n;
}

static size_t cached_in(const pk_pool *p, const tc_slot *c) {
    size_t n = tc_head(c) ? p->batch - (size_t)tc_room(c) : 0;
    return n + (tc_spare(c) ? p->batch : 0);
}

/* Gives the objects of one cache back to its pool; caller holds the
 * registry lock (which keeps the pool alive) but not the pool's. */
static void give_back(pk_pool *p, tc_slot *c) {
    void *head = tc_head(c), *spare = tc_spare(c);
    size_t n = cached_in(p, c);
    if (head || spare) {
        pool_lock(p);
        tcache_account(p, c, -(long)n);
        if (head) central_give_chain(p, head);
        if (spare) central_give_chain(p, spare);
        pool_unlock(p);
    }
    memset(c, 0, sizeof *c);
}

static void thread_exit(void *arg) {
    thread_rec *rec = arg;
    state = THREAD_EXITING;
    pthread_mutex_lock(&registry);
    size_t n = entries(&table);
    for (size_t k = 0; k < n && k < key_count; k++) {
        if (key_pool[k]) give_back(key_pool[k], &table.slots[k]);
    }
    if (rec->prev) rec->prev->next = rec->next;
    else threads = rec->next;
    if (rec->next) rec->next->prev = rec->prev;
    rec->next = spare_recs;
    spare_recs = rec;
    if (table.slots && n > stock_cap) { /* every cache was emptied above */
        if (stock) os_unmap(stock, array_bytes(stock_cap, sizeof(tc_slot)));
        stock = table.slots;
        stock_cap = n;
    } else if (table.slots) {
        os_unmap(table.slots, array_bytes(n, sizeof(tc_slot)));
    }
    table.slots = NULL;
    table.limit = 0;
    pthread_mutex_unlock(&registry);
    self = NULL;
}

/* Thread records come from pages carved into several and are recycled when
 * threads exit, so a new thread's first call seldom asks the system for a
 * page (pk_pool_reserve's promise). Caller holds the registry lock. */
static void rec_stock(void) {
    if (spare_recs) return;
    size_t page = os_page_size(), bytes = align_up(sizeof(thread_rec), 64);
    char *mem = os_map(page, 0);
    if (!mem) return;
    for (size_t off = 0; off + bytes <= page; off += bytes) {
        thread_rec *r = (thread_rec *)(mem + off);
        r->next = spare_recs;
        spare_recs = r;
    }
}

static thread_rec *rec_get(void) {
    rec_stock();
    if (!spare_recs) return NULL;
    thread_rec *r = spare_recs;
    spare_recs = r->next;
    memset(r, 0, sizeof *r);
    return r;
}

static void make_exit_key(void) { pthread_key_create(&exit_key, thread_exit); }

static bool thread_register(void) {
    pthread_once(&exit_key_once, make_exit_key);
    pthread_mutex_lock(&registry);
    thread_rec *rec = rec_get();
    if (!rec) {
        pthread_mutex_unlock(&registry);
        return false;
    }
    rec->table = &table;
    rec->next = threads;
    if (threads) threads->prev = rec;
    threads = rec;
    pthread_mutex_unlock(&registry);
    self = rec;
    state = THREAD_LIVE;
    pthread_setspecific(exit_key, rec);
    return true;
}

/* Replaces the calling thread's table with one that holds `key`. */
static bool table_grow(size_t key) {
    pthread_mutex_lock(&registry);
    size_t cap = entries(&table);
    void *slots = table.slots;
    if (!slots && stock_cap > key) { /* a new thread: the stock table */
        slots = stock;
        cap = stock_cap;
        stock = NULL;
        stock_cap = 0;
    }
    bool ok = grow_array(&slots, &cap, key + 1, sizeof(tc_slot));
    if (ok) {
        __atomic_store_n(&table.slots, (tc_slot *)slots, __ATOMIC_RELAXED);
        __atomic_store_n(&table.limit, cap * sizeof(tc_slot), __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&registry);
    return ok;
}

tc_slot *tcache_slot(pk_pool *p) {
    if (unlikely(state != THREAD_LIVE) && (state == THREAD_EXITING || !thread_register()))
        return NULL;
    if (unlikely(p->key >= entries(&table)) && !table_grow(p->key)) return NULL;
    tc_slot *c = &table.slots[p->key];
    if (tc_room(c) < 0) tc_set(c, tc_head(c), tc_room(c) + 1); /* the inline free's failed take */
    if (!tc_head(c) && tc_room(c) == 0) tc_set(c, NULL, (intptr_t)p->batch);
    return c;
}

size_t tcache_cached(pk_pool *p) {
    size_t n = 0;
    if (!p->cached) return 0;
    for (thread_rec *t = threads; t; t = t->next)
        if (p->key < entries(t->table)) n += cached_in(p, &t->table->slots[p->key]);
    return n;
}

void tcache_drain_all(pk_pool *p) {
    if (!p->cached) return;
    for (thread_rec *t = threads; t; t = t->next) {
        if (p->key >= entries(t->table)) continue;
        tc_slot *c = &t->table->slots[p->key];
        void *head = tc_head(c), *spare = tc_spare(c);
        tc_set(c, NULL, 0);
        tc_set_spare(c, NULL);
        if (head) central_give_chain(p, head);
        if (spare) central_give_chain(p, spare);
    }
}

/* In a fork child only the forking thread exists. The others may have been
 * inside an inline fast path, their caches half-changed, so nothing may
 * follow them: their records go, and the objects they cached stay counted
 * as live (a leak in the child, never a corruption). */
void tcache_fork_child(void) {
    thread_rec *keep = NULL;
    for (thread_rec *t = threads, *next; t; t = next) {
        next = t->next;
        if (t == self) {
            keep = t;
            continue;
        }
        t->next = spare_recs;
        spare_recs = t;
    }
    threads = keep;
    if (keep) keep->prev = keep->next = NULL;
}
