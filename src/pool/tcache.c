/* Thread tables: a slot and a heap record per pool for each thread.
 *
 Fast path protocol (pool.h): each thread's table pointer is initial-exec
 * TLS (pk__tc_table); a pool's slot is at a fixed byte offset (its key
 * times the slot size) in every table, and its key is the index of its record in the
 * records' area (pool.c), so the inline paths find the slot from the
 * pool's handle. A table is a mapping of TABLE_KEYS slots, then the
 * owned index (pool_types.h, pk_free's), then the directory of the
 * thread's heap records (heap.c), which the system backs a page at a time
 * as keys are used, so it never moves and the inline paths need no bound
 * check. The heap records, most of a thread's bytes, are reached only from
 * a slot's heap word, so they come in chunks of HEAP_CHUNK mapped as the
 * thread first uses a key of the chunk: a thread holds address space for
 * the pools it uses, not for every key (a limit on address space,
 * RLIMIT_AS, counts what is mapped, touched or not). A thread that has not registered points at
 * `unregistered`, a shared table whose slots stay all zero: no list, no
 * current slab, so its first alloc or free goes to the slow path, which
 * registers it. A pool with no heaps (debug, a limit) never has its slot
 * set up, and key 0 is never given out.
 *
 * Only its own thread writes a slot or a heap while the thread runs, with
 * plain loads and stores: no lock, no atomic instruction. Other threads
 * read them only under the registry lock (stats), and change them only when
 * the owner is quiescent for that pool (destroy and visit take its
 * objects), as the contract requires.
 *
 * A thread registers on its first slow path; at exit its pthread key
 * destructor gives every heap back to its pool, and later calls on that
 * thread bypass the heaps.
 */
#include "pool/tcache.h"

#include <pthread.h>
#include <string.h>

_Static_assert(TABLE_KEYS == (size_t)1 << PK__KEY_BITS, "a handle's key bits index the whole table");

/* Heap records a chunk (touched a page at a time): a program with fewer
 * pools maps one chunk per thread, one with every key TABLE_KEYS /
 * HEAP_CHUNK, few beside the system's cap on a process's mappings. */
#define HEAP_CHUNK 1024
#define DIR_OFF ((size_t)TABLE_KEYS * sizeof(tc_slot) + OWN_INDEX_BYTES)
#define TABLE_BYTES (DIR_OFF + (size_t)TABLE_KEYS / HEAP_CHUNK * sizeof(heap *))
_Static_assert(TABLE_KEYS % HEAP_CHUNK == 0, "the directory covers every key");
_Static_assert(OWN_INDEX_OFF == (size_t)TABLE_KEYS * sizeof(tc_slot) && OWN_INDEX_BYTES % 64 == 0,
               "the owned index lies between the slots and the heap records' directory");

typedef struct thread_rec {
    struct thread_rec *prev, *next;
    tc_slot *slots; /* the thread's table */
} thread_rec;

enum { THREAD_NEW, THREAD_LIVE, THREAD_EXITING };

/* The table of threads that have not registered (or have exited). Only
 * ever read, and all zero: the inline paths write a slot only after finding
 * an object on its list or its current slab matching. */
static tc_slot unregistered[TABLE_KEYS + OWN_INDEX_BYTES / sizeof(tc_slot)] PK_BIG_TABLE; /* and an empty index */

__thread char *pk__tc_table __attribute__((tls_model("initial-exec"), aligned(64))) = (char *)unregistered;
static __thread thread_rec *self __attribute__((tls_model("initial-exec")));
static __thread int state __attribute__((tls_model("initial-exec")));

static pthread_mutex_t registry PK_FORK_LOCK = PTHREAD_MUTEX_INITIALIZER;
static thread_rec *threads, *spare_recs;
/* Under the registry lock: the pool with heaps of each key (NULL when
 * none), keys below key_high. */
static pk_pool *key_pool[TABLE_KEYS] PK_BIG_TABLE;
static size_t key_high = 1;
/* Under the registry lock: a table kept ready for the next thread (made when
 * a pool is created, or left by a thread that exited), so a new thread's
 * first calls ask the system for nothing (pk_pool_reserve's promise). */
static tc_slot *stock;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

void tcache_registry_lock(void) { pk_lock(&registry); }
void tcache_registry_unlock(void) { pk_unlock(&registry); }

static void rec_stock(void);

static heap **heap_dir(tc_slot *table) { return (heap **)((char *)table + DIR_OFF); }
static size_t heap_chunk_bytes(void) { return align_up(HEAP_CHUNK * sizeof(heap), os_page_size()); }

/* The chunk of table's heap records that holds key's mapped: the calling
 * thread's own table (no lock), or the stock, under the registry lock, so
 * that the thread that takes it asks the system for nothing for the pools
 * that exist when it does (pk_pool_reserve's promise). */
static bool heap_chunk_ready(tc_slot *table, size_t key) {
    heap **d = &heap_dir(table)[key / HEAP_CHUNK];
    if (likely(*d != NULL)) return true;
    *d = os_map(heap_chunk_bytes(), 0);
    return *d != NULL;
}

/* Caller holds the registry lock. */
static void table_stock(void) {
    if (stock || !(stock = os_map(TABLE_BYTES, 0))) return;
    for (size_t k = 1; k < key_high; k++)
        if (key_pool[k]) (void)heap_chunk_ready(stock, k);
}

/* What a thread's exit does with each of its heaps (the heap layer's, given
 * at attach: one for every pool). */
static void (*heap_exit)(pk_pool *p, tc_slot *c);

void tcache_attach(pk_pool *p, void (*on_exit)(pk_pool *p, tc_slot *c)) {
    pk_lock(&registry);
    heap_exit = on_exit;
    fork_test_point(HOOK_REGISTRY, &registry);
    rec_stock(); /* so the next thread to use a pool need not map a page */
    table_stock();
    key_pool[p->key] = p;
    if (stock) (void)heap_chunk_ready(stock, p->key);
    if (p->key >= key_high) __atomic_store_n(&key_high, p->key + 1, __ATOMIC_RELAXED); /* the fault handler reads it */
    pk_unlock(&registry);
}

void tcache_detach(pk_pool *p) {
    if (!p->cached) return;
    for (thread_rec *t = threads; t; t = t->next) memset(&t->slots[p->key], 0, sizeof(tc_slot));
    key_pool[p->key] = NULL;
    p->cached = false;
}

heap *tcache_heap(size_t key) { return heap_dir(tc_table)[key / HEAP_CHUNK] + key % HEAP_CHUNK; }

/* A table and its heap records back to the system. */
static void table_unmap(tc_slot *table) {
    heap **d = heap_dir(table);
    for (size_t i = 0; i < TABLE_KEYS / HEAP_CHUNK; i++)
        if (d[i]) os_unmap(d[i], heap_chunk_bytes());
    os_unmap(table, TABLE_BYTES);
}

bool tcache_table_range(const tc_slot **lo, const tc_slot **hi) {
    if (state != THREAD_LIVE) return false;
    *lo = tc_table;
    *hi = tc_table + TABLE_KEYS;
    return true;
}

bool tcache_alone(void) { return !threads || (threads == self && !self->next && state == THREAD_LIVE); }

/* Thread exit: the heap's slabs go back to the pool and the slot is
 * forgotten; caller holds the registry lock (which keeps the pool alive). */
static void give_back(pk_pool *p, tc_slot *c) {
    if (c->heap) heap_exit(p, c);
    memset(c, 0, sizeof *c);
}

static void thread_exit(void *arg) {
    thread_rec *rec = arg;
    state = THREAD_EXITING;
    pk_lock(&registry);
    for (size_t k = 1; k < key_high; k++)
        if (key_pool[k]) give_back(key_pool[k], &tc_table[k]);
    if (rec->prev) rec->prev->next = rec->next;
    else threads = rec->next;
    if (rec->next) rec->next->prev = rec->prev;
    rec->next = spare_recs;
    spare_recs = rec;
    tc_slot *mine = tc_table;
    pk__tc_table = (char *)unregistered;
    if (!stock) { /* every slot and heap was cleared above; slot 0 was never set up */
        memset(mine, 0, sizeof *mine);
        stock = mine; /* with its heap records' chunks */
    } else {
        table_unmap(mine);
    }
    pk_unlock(&registry);
    self = NULL;
}

/* Thread records come from pages carved into several and are recycled when
 * threads exit, so a new thread's first call seldom asks the system for a
 * page. Caller holds the registry lock. */
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

static void make_exit_key(void) { pthread_key_create(&exit_key, thread_exit); }

static bool thread_register(void) {
    pthread_once(&exit_key_once, make_exit_key);
    pk_lock(&registry);
    rec_stock();
    table_stock();
    thread_rec *rec = spare_recs;
    if (!rec || !stock) {
        pk_unlock(&registry);
        return false;
    }
    spare_recs = rec->next;
    memset(rec, 0, sizeof *rec);
    rec->slots = stock;
    stock = NULL;
    rec->next = threads;
    if (threads) threads->prev = rec;
    threads = rec;
    pk__tc_table = (char *)rec->slots;
    pk_unlock(&registry);
    self = rec;
    state = THREAD_LIVE;
    pthread_setspecific(exit_key, rec);
    return true;
}

tc_slot *tcache_slot(pk_pool *p) {
    if (unlikely(state != THREAD_LIVE) && (state == THREAD_EXITING || !thread_register()))
        return NULL;
    if (unlikely(!heap_chunk_ready(tc_table, p->key))) return NULL;
    return &tc_table[p->key];
}

void tcache_prepare(pk_pool *p) {
    if (state == THREAD_LIVE) (void)heap_chunk_ready(tc_table, p->key);
}

size_t tcache_keys_used(void) { return __atomic_load_n(&key_high, __ATOMIC_RELAXED); }

size_t tcache_live_threads(void) {
    size_t n = 0;
    pk_lock(&registry);
    for (thread_rec *t = threads; t; t = t->next) n++;
    pk_unlock(&registry);
    return n;
}

/* In a fork child only the forking thread exists. The others may have been
 * inside a fast or slow path, their slots and heaps half-changed, so nothing
 * may follow them: their records go (the pools dropped their heaps first,
 * pools_fork_child), their tables stay mapped, unused. */
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
    PK_SET_IF_CHANGED(threads, keep);
    if (keep) {
        PK_SET_IF_CHANGED(keep->prev, NULL);
        PK_SET_IF_CHANGED(keep->next, NULL);
    }
}
