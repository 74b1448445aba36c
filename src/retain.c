/* Retained memory: whole mappings (huge slabs' regions of destroyed pools,
 * arena chunks) kept mapped for the purge delay so the next pool or arena
 * of the same shape reuses them without a system call or a page fault,
 * then given back.
 *
 * Bounded by RETAIN_BYTES process-wide (policy.h), with the slabs' places
 * region.c keeps (retain_charge). Entries are keyed by
 * size and alignment; the first bytes of each mapping hold its entry while
 * it waits, so reused memory is not zero (callers that need zeros clear
 * what they use). Tool builds keep nothing, so that Valgrind and ASan see
 * every mapping fresh. */
#include "internal.h"
#include "policy.h"
#include "track.h"

#include <pthread.h>

typedef struct retained {
    struct retained *next;
    size_t size, align;
    uint64_t since; /* os_now_ms() when it was retained */
} retained;

static pthread_mutex_t retain_lock = PTHREAD_MUTEX_INITIALIZER;
static retained *head;
static size_t held;
/* When the oldest entry was retained (at most): a tick before it has
 * waited the delay has nothing to do and takes no lock. */
static uint64_t oldest;

void *os_map_reuse_near(void *want, size_t size, size_t align) {
    pthread_mutex_lock(&retain_lock);
    fork_test_point(HOOK_RETAINED, &retain_lock);
    retained **link = &head, *r;
    while ((r = *link) && (r->size != size || r->align != align)) link = &r->next;
    if (r) {
        *link = r->next;
        __atomic_store_n(&held, held - size, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&retain_lock);
    return r ? (void *)r : os_map_near(want, size, align);
}

void *os_map_reuse(size_t size, size_t align) { return os_map_reuse_near(NULL, size, align); }

void os_unmap_later(void *p, size_t size, size_t align) {
    bool keep = !TRACK_ENABLED && size >= sizeof(retained) && options_purge_delay_ms() > 0;
    if (keep) {
        retained *r = p;
        pthread_mutex_lock(&retain_lock);
        keep = held + size <= RETAIN_BYTES;
        if (keep) {
            r->size = size;
            r->align = align;
            r->since = os_now_ms();
            if (!head) __atomic_store_n(&oldest, r->since, __ATOMIC_RELAXED);
            r->next = head;
            head = r;
            __atomic_store_n(&held, held + size, __ATOMIC_RELAXED);
        }
        pthread_mutex_unlock(&retain_lock);
    }
    if (!keep) os_unmap(p, size);
}

/* Unlinks the entries retained before `before` (all with UINT64_MAX) and
 * unmaps them outside the lock; returns the bytes. */
static size_t release_older(uint64_t before) {
    retained *gone = NULL;
    size_t bytes = 0;
    uint64_t left = UINT64_MAX; /* the oldest entry kept */
    pthread_mutex_lock(&retain_lock);
    for (retained **link = &head, *r; (r = *link);) {
        if (before == UINT64_MAX || r->since < before) {
            *link = r->next;
            __atomic_store_n(&held, held - r->size, __ATOMIC_RELAXED);
            r->next = gone;
            gone = r;
        } else {
            if (r->since < left) left = r->since;
            link = &r->next;
        }
    }
    __atomic_store_n(&oldest, left, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&retain_lock);
    while (gone) {
        retained *next = gone->next;
        bytes += gone->size;
        os_unmap(gone, gone->size);
        gone = next;
    }
    return bytes;
}

void os_retain_tick(uint64_t now) {
    uint64_t delay = (uint64_t)options_purge_delay_ms();
    if (!__atomic_load_n(&held, __ATOMIC_RELAXED) || now < __atomic_load_n(&oldest, __ATOMIC_RELAXED) + delay)
        return;
    release_older(now - delay + 1);
}

size_t os_retain_release(void) { return release_older(UINT64_MAX); }

size_t os_retained_bytes(void) { return __atomic_load_n(&held, __ATOMIC_RELAXED); }

bool retain_charge(size_t size) {
    pthread_mutex_lock(&retain_lock);
    bool ok = held + size <= RETAIN_BYTES;
    if (ok) __atomic_store_n(&held, held + size, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&retain_lock);
    return ok;
}

void retain_uncharge(size_t size) {
    pthread_mutex_lock(&retain_lock);
    __atomic_store_n(&held, held - size, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&retain_lock);
}

void os_fork_lock(void) { pthread_mutex_lock(&retain_lock); }
void os_fork_unlock(void) { pthread_mutex_unlock(&retain_lock); }
