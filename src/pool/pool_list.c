/* The list of live pools (pool_list.h). Its lock comes before the thread
 * registry's and every pool's (fork.c). */
#include "pool/pool_list.h"

#include <poolkit/stats.h> /* pk_pool_foreach */

static pthread_mutex_t list_lock PK_FORK_LOCK = PTHREAD_MUTEX_INITIALIZER;
static pk_pool *pools;

/* The live pools, [0, listed), and their keys beside them, LISTED_LOCAL
 * marking a PK_POOL_LOCAL pool's (no lock in use), under the list's lock:
 * fork's handlers take and release the pools' locks by key (pool.c).
 * Through the list they read each pool's record, a page apart from the
 * next, which after the fork, in the parent and in the child, costs an
 * address translation from cold tables each. */
_Static_assert(TABLE_KEYS <= LISTED_LOCAL, "a key leaves the mark's bit clear");
static pk_pool *listed_pools[TABLE_KEYS] PK_BIG_TABLE;
static uint32_t listed_keys[TABLE_KEYS] PK_BIG_TABLE;
static size_t listed;

void pools_add(pk_pool *p) {
    pk_lock(&list_lock);
    fork_test_point(HOOK_POOL_LIST, &list_lock);
    p->prev = NULL;
    p->next = pools;
    if (pools) pools->prev = p;
    pools = p;
    p->listed_at = (uint32_t)listed;
    listed_pools[listed] = p;
    listed_keys[listed++] = (uint32_t)p->key | (p->locked ? 0 : LISTED_LOCAL);
    pk_unlock(&list_lock);
}

void pools_remove(pk_pool *p) {
    pk_lock(&list_lock);
    PK_ASSERT_INTERNAL(p->listed_at < listed && listed_pools[p->listed_at] == p);
    if (p->prev) p->prev->next = p->next;
    else pools = p->next;
    if (p->next) p->next->prev = p->prev;
    pk_pool *last = listed_pools[--listed];
    listed_pools[p->listed_at] = last;
    listed_keys[p->listed_at] = listed_keys[listed];
    last->listed_at = p->listed_at;
    pk_unlock(&list_lock);
}

bool pools_try_each_shared(void (*fn)(pk_pool *p, void *arg), void *arg) {
    if (pk_trylock(&list_lock) != 0) return false;
    for (pk_pool *p = pools; p; p = p->next) {
        if (!p->locked || !pool_trylock(p)) continue;
        fn(p, arg);
        pool_unlock(p);
    }
    pk_unlock(&list_lock);
    return true;
}

size_t pk_pool_foreach(void (*fn)(pk_pool *pool, void *arg), void *arg) {
    size_t n = 0;
    pk_lock(&list_lock);
    for (pk_pool *p = pools; p; p = p->next, n++) fn(p, arg);
    pk_unlock(&list_lock);
    return n;
}

void pools_lock_list(void) { pk_lock(&list_lock); }
void pools_unlock_list(void) { pk_unlock(&list_lock); }

void pools_each_held(void (*fn)(pk_pool *p, void *arg), void *arg) {
    for (pk_pool *p = pools; p; p = p->next) fn(p, arg);
}

const uint32_t *pools_listed_keys(size_t *n) {
    *n = listed;
    return listed_keys;
}
