/* Thread caches: one word per (thread, pool) in static thread-local storage.
 *
 * Fast path protocol (pool.h): a cache is {head of free list, room left}.
 * Only its own thread writes a cache while the thread runs, with plain loads
 * and stores: no lock, no atomic instruction. Other threads touch a cache
 * only under the registry lock and only when the owner is quiescent for that
 * pool (stats count it; destroy and visit take its objects), as the
 * contract requires.
 *
 * Slots: each cached pool owns one slot, the same index in every thread's
 * array. Slot 0 is never given out: its head stays NULL and its room at or
 * below 0, so pools that must take the slow path point their tc_off at it.
 *
 * Locking order: registry lock, then a pool's lock. A thread registers on its
 * first slow path; at exit its pthread key destructor returns every cached
 * object to its pool, and later calls on that thread bypass the caches.
 *
 * The array is initial-exec TLS so that its offset from the thread pointer
 * is the same in every thread: the pool stores that offset and the inline
 * fast path adds it to the thread pointer. It costs TC_SLOTS * 16 bytes of
 * static TLS per thread.
 */
#include "pool_internal.h"

#include <pthread.h>
#include <string.h>

#define TC_SLOTS 128

typedef struct thread_rec {
    struct thread_rec *prev, *next;
    tc_slot *caches;           /* this thread's tc */
    int64_t balance[TC_SLOTS]; /* objects taken minus returned, per slot */
} thread_rec;

enum { THREAD_NEW, THREAD_LIVE, THREAD_EXITING };

static __thread tc_slot tc[TC_SLOTS] __attribute__((tls_model("initial-exec"), aligned(64)));
static __thread thread_rec *self __attribute__((tls_model("initial-exec")));
static __thread int state __attribute__((tls_model("initial-exec")));

static pthread_mutex_t registry = PTHREAD_MUTEX_INITIALIZER;
static thread_rec *threads, *spare_recs;
static pk_pool *slot_pool[TC_SLOTS];
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

intptr_t tcache_off(unsigned slot) { return (char *)&tc[slot] - thread_pointer(); }
intptr_t tcache_null_off(void) { return tcache_off(0); }

static void rec_stock(void);

bool tcache_attach(pk_pool *p) {
    bool ok = false;
    pthread_mutex_lock(&registry);
    rec_stock(); /* so the next thread to use a pool need not map a page */
    for (unsigned s = 1; s < TC_SLOTS; s++) {
        if (!slot_pool[s]) {
            slot_pool[s] = p;
            p->slot = s;
            ok = true;
            break;
        }
    }
    pthread_mutex_unlock(&registry);
    return ok;
}

/* Caller holds the registry lock. */
static void forget_slot(unsigned slot) {
    for (thread_rec *t = threads; t; t = t->next) {
        tc_set(&t->caches[slot], NULL, 0);
        t->balance[slot] = 0;
    }
}

void tcache_detach(pk_pool *p) {
    if (!p->slot) return;
    forget_slot(p->slot);
    slot_pool[p->slot] = NULL;
    p->slot = 0;
}

static void thread_exit(void *arg) {
    thread_rec *rec = arg;
    state = THREAD_EXITING;
    pthread_mutex_lock(&registry);
    for (unsigned s = 1; s < TC_SLOTS; s++) {
        pk_pool *p = slot_pool[s];
        void *head = tc_head(&tc[s]);
        intptr_t room = tc_room(&tc[s]);
        tc_set(&tc[s], NULL, 0);
        if (!p || !head) continue;
        pool_lock(p);
        tcache_account(p, -(long)(p->tc_cap - (size_t)room));
        central_give_chain(p, head);
        pool_unlock(p);
    }
    if (rec->prev) rec->prev->next = rec->next;
    else threads = rec->next;
    if (rec->next) rec->next->prev = rec->prev;
    rec->next = spare_recs;
    spare_recs = rec;
    pthread_mutex_unlock(&registry);
    self = NULL;
}

/* Thread records come from pages carved into several and are recycled when
 * threads exit, so a new thread's first call seldom asks the system for a
 * page (pk_pool_reserve's promise). Caller holds the registry lock. */
static void rec_stock(void) {
    if (spare_recs) return;
    size_t page = os_page_size(), bytes = align_up(sizeof(thread_rec), 64);
    size_t span = align_up(bytes * 4, page);
    char *mem = os_map(span, 0);
    if (!mem) return;
    for (size_t off = 0; off + bytes <= span; off += bytes) {
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
    rec->caches = tc;
    rec->next = threads;
    if (threads) threads->prev = rec;
    threads = rec;
    pthread_mutex_unlock(&registry);
    self = rec;
    state = THREAD_LIVE;
    pthread_setspecific(exit_key, rec);
    return true;
}

tc_slot *tcache_slot(pk_pool *p) {
    if (unlikely(state != THREAD_LIVE) && (state == THREAD_EXITING || !thread_register()))
        return NULL;
    tc_slot *c = &tc[p->slot];
    if (!tc_head(c) && tc_room(c) == 0) tc_set(c, NULL, (intptr_t)p->tc_cap);
    return c;
}

void tcache_undo_take(pk_pool *p) {
    tc_slot *c = &tc[p->fast_slot];
    tc_set(c, tc_head(c), tc_room(c) + 1);
}

void tcache_account(pk_pool *p, long n) {
    if (!self || n == 0) return;
    int64_t *b = &self->balance[p->slot];
    if (n < 0) {
        int64_t back = -n, own = *b > 0 ? *b : 0;
        if (back > own) p->remote_frees += (uint64_t)(back - own);
    }
    *b += n;
}

size_t tcache_cached(pk_pool *p) {
    size_t n = 0;
    if (!p->slot) return 0;
    for (thread_rec *t = threads; t; t = t->next) {
        tc_slot *c = &t->caches[p->slot];
        if (tc_head(c)) n += p->tc_cap - (size_t)tc_room(c);
    }
    return n;
}

void tcache_drain_all(pk_pool *p) {
    if (!p->slot) return;
    for (thread_rec *t = threads; t; t = t->next) {
        tc_slot *c = &t->caches[p->slot];
        void *head = tc_head(c);
        tc_set(c, NULL, 0);
        if (head) central_give_chain(p, head);
    }
}
