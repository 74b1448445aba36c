/* The page source: the only place poolkit asks the system for memory.
 *
 * An aligned request first asks for the next aligned address of a range
 * kept for poolkit, as a hint: when the kernel grants it (the usual case),
 * the mapping costs one system call. Otherwise it maps size + align and
 * unmaps the slack on both sides, so alignment costs address space, never
 * physical memory. Fault injection (fault.h) sits here so that every layer
 * above sees a failing system the same way. */
#include "base/internal.h"

#include <poolkit/fault.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static long fail_at = -1;             /* request number that starts failing; -1 = never */
static unsigned long requests;        /* page requests so far */

size_t os_page_size(void) {
    static size_t page;
    size_t p = __atomic_load_n(&page, __ATOMIC_RELAXED);
    if (unlikely(p == 0)) {
        p = (size_t)sysconf(_SC_PAGESIZE);
        __atomic_store_n(&page, p, __ATOMIC_RELAXED);
    }
    return p;
}

size_t os_physical_bytes(void) {
    static size_t bytes;
    size_t b = __atomic_load_n(&bytes, __ATOMIC_RELAXED);
    if (unlikely(b == 0)) {
        long pages = sysconf(_SC_PHYS_PAGES);
        size_t page = os_page_size();
        b = pages > 0 && (size_t)pages <= SIZE_MAX / page ? (size_t)pages * page : SIZE_MAX;
        __atomic_store_n(&bytes, b, __ATOMIC_RELAXED);
    }
    return b;
}

static bool fault_injected(void) {
    unsigned long n = __atomic_fetch_add(&requests, 1, __ATOMIC_RELAXED);
    long at = __atomic_load_n(&fail_at, __ATOMIC_RELAXED);
    return at >= 0 && n >= (unsigned long)at;
}

/* Whether the next request would fail, without counting one: a move of
 * pages the library holds takes no memory from the system (fault.h counts
 * what does), yet a test may refuse it with the next request. */
static bool fault_due(void) {
    long at = __atomic_load_n(&fail_at, __ATOMIC_RELAXED);
    return at >= 0 && __atomic_load_n(&requests, __ATOMIC_RELAXED) >= (unsigned long)at;
}

bool os_request(void) {
    if (!fault_injected()) return true;
    errno = ENOMEM;
    return false;
}

/* The hint range: 4 TiB up, a random start within its first TiB (so slab
 * addresses are not the same in every run), wrapping after 64 TiB. */
#define HINT_BASE ((uintptr_t)4 << 40)
#define HINT_SPAN ((uintptr_t)64 << 40)
static uintptr_t hint_next;

static uintptr_t hint_take(size_t size, size_t align) {
    uintptr_t seen = __atomic_load_n(&hint_next, __ATOMIC_RELAXED), start, next;
    do {
        uintptr_t cur = seen;
        if (cur == 0) {
            uintptr_t seed = (uintptr_t)&cur ^ __atomic_load_n(&requests, __ATOMIC_RELAXED) * 0x9E3779B97F4A7C15ull;
            cur = HINT_BASE + ((seed >> 12) & (((uintptr_t)1 << 40) - 1));
        }
        start = align_up(cur, align);
        if (start + size > HINT_BASE + HINT_SPAN) start = align_up(HINT_BASE, align);
        next = start + size;
    } while (!__atomic_compare_exchange_n(&hint_next, &seen, next, true, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return start;
}

/* size bytes offset past a multiple of align, at the hint, with prot and
 * flags (beside private anonymous), or NULL where the system puts them
 * elsewhere. */
static void *map_at_hint(size_t size, size_t align, size_t offset, int prot, int flags) {
    if (sizeof(void *) < 8) return NULL;
    void *want = (void *)(hint_take(offset + size, align) + offset);
    void *p = mmap(want, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (p == want) return p;
    if (p != MAP_FAILED) munmap(p, size);
    return NULL;
}

void *os_map(size_t size, size_t align) {
    size_t page = os_page_size();
    if (align < page) align = page;
    if (fault_injected()) {
        errno = ENOMEM;
        return NULL;
    }
    if (align > page) {
        void *p = map_at_hint(size, align, 0, PROT_READ | PROT_WRITE, 0);
        if (p) return p;
    }
    size_t span = size + (align > page ? align : 0);
    if (span < size) {
        errno = ENOMEM;
        return NULL;
    }
    char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        errno = ENOMEM;
        return NULL;
    }
    char *p = (char *)align_up((uintptr_t)raw, align);
    if (p > raw) munmap(raw, (size_t)(p - raw));
    size_t tail = (size_t)(raw + span - (p + size));
    if (tail) munmap(p + size, tail);
    return p;
}

void *os_reserve_at(size_t size, size_t align, size_t offset) {
    size_t page = os_page_size();
    if (align < page) align = page;
    /* at the hint first: no more address space than the request, even for
     * a moment (a limit on it, RLIMIT_AS, counts every byte mapped), where
     * mapping size + align and trimming it would ask for twice as much */
    void *hinted = map_at_hint(size, align, offset, PROT_NONE, MAP_NORESERVE);
    if (hinted) return hinted;
    size_t span = size + align;
    if (span < size) {
        errno = ENOMEM;
        return NULL;
    }
    char *raw = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) {
        errno = ENOMEM;
        return NULL;
    }
    char *p = (char *)(align_up((uintptr_t)raw - offset, align) + offset);
    if (p > raw) munmap(raw, (size_t)(p - raw));
    if (raw + span > p + size) munmap(p + size, (size_t)(raw + span - (p + size)));
    return p;
}

void *os_reserve(size_t size, size_t align) { return os_reserve_at(size, align, 0); }

bool os_commit(void *p, size_t size) {
    if (fault_injected() || mprotect(p, size, PROT_READ | PROT_WRITE) != 0) {
        errno = ENOMEM;
        return false;
    }
    return true;
}

void os_zero_pages(void *p, size_t size) { madvise(p, size, MADV_DONTNEED); }

bool os_resident_map(void *p, size_t n, unsigned char *vec) { return mincore(p, n * os_page_size(), vec) == 0; }

/* Pages of a private anonymous mapping the system says are not resident
 * are zero unless swapped out: /proc/self/pagemap tells which (bit 62),
 * and one that became resident since (bit 63). */
#define PAGEMAP_HOLDS ((UINT64_C(1) << 62) | (UINT64_C(1) << 63))

/* n pages of src, not resident when looked at, into dst: copied where
 * they hold data (fd: the pagemap, -1 when it cannot be read: copied
 * all), given back elsewhere. */
static void copy_absent(int fd, char *dst, const char *src, size_t n) {
    uint64_t entry[128];
    size_t page = os_page_size();
    for (size_t at = 0; at < n;) {
        size_t k = n - at < 128 ? n - at : 128;
        off_t where = (off_t)((uintptr_t)(src + at * page) / page * sizeof entry[0]);
        if (fd < 0 || pread(fd, entry, k * sizeof entry[0], where) != (ssize_t)(k * sizeof entry[0]))
            for (size_t i = 0; i < k; i++) entry[i] = PAGEMAP_HOLDS;
        for (size_t i = 0, j; i < k; i = j) {
            bool holds = entry[i] & PAGEMAP_HOLDS;
            for (j = i + 1; j < k && (bool)(entry[j] & PAGEMAP_HOLDS) == holds; j++) {}
            char *d = dst + (at + i) * page;
            if (holds) memcpy(d, src + (at + i) * page, (j - i) * page);
            else os_zero_pages(d, (j - i) * page);
        }
        at += k;
    }
}

void os_copy_resident(void *dst, const void *src, size_t len) {
    unsigned char vec[1024];
    size_t page = os_page_size(), pages = len / page;
    char *to = dst;
    const char *from = src;
    int fd = -2; /* opened at the first page not resident */
    for (size_t at = 0; at < pages; at += sizeof vec) {
        size_t k = pages - at < sizeof vec ? pages - at : sizeof vec;
        if (!os_resident_map((void *)(from + at * page), k, vec)) memset(vec, 1, k);
        for (size_t i = 0, j; i < k; i = j) {
            bool in = vec[i] & 1;
            for (j = i + 1; j < k && (vec[j] & 1) == in; j++) {}
            char *d = to + (at + i) * page;
            const char *s = from + (at + i) * page;
            if (in) {
                memcpy(d, s, (j - i) * page);
                continue;
            }
            if (fd == -2) fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
            copy_absent(fd, d, s, j - i);
        }
    }
    if (fd >= 0) close(fd);
}

size_t os_resident_pages(void *p, size_t n) {
    unsigned char vec[1024];
    size_t page = os_page_size(), resident = 0;
    for (size_t at = 0; at < n; at += sizeof vec) {
        size_t k = n - at < sizeof vec ? n - at : sizeof vec;
        if (!os_resident_map((char *)p + at * page, k, vec)) return 0;
        for (size_t i = 0; i < k; i++) resident += vec[i] & 1;
    }
    return resident;
}

void os_decommit(void *p, size_t size) {
    /* Its pages go back (zero when committed again), and a stray access
     * faults: new no-access pages over the range, one call (as a
     * reservation's, so that they join it again); where the system refuses
     * (its count of mappings, say), the pages given back, then protected. */
    if (mmap(p, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) != MAP_FAILED)
        return;
    madvise(p, size, MADV_DONTNEED);
    mprotect(p, size, PROT_NONE);
}

void *os_remap(void *p, size_t size, size_t new_size) {
    if (fault_injected()) return NULL;
    void *q = mremap(p, size, new_size, MREMAP_MAYMOVE);
    return q == MAP_FAILED ? NULL : q;
}

/* Whether [p, p + len) lies within one of the system's mappings, without
 * changing any: mremap refuses to grow a range that spans two (EFAULT)
 * before it looks whether it could; ENOMEM says it could not grow one in
 * place, and a range that did grow into a free page gives it back. */
static bool one_mapping(char *p, size_t len) {
    size_t page = os_page_size();
    void *q = mremap(p, len, len + page, 0);
    if (q != MAP_FAILED) {
        mremap(p, len + page, len, 0);
        return true;
    }
    return errno == ENOMEM;
}

size_t os_mapping_front(void *at, size_t len) {
    char *p = at;
    size_t page = os_page_size(), lo = page, hi = len;
    if (one_mapping(p, len)) return len;
    while (hi - lo > page) {
        size_t mid = lo + ((hi - lo) / 2 & ~(page - 1));
        if (one_mapping(p, mid)) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* The range [to, to + n) mapped again (fresh) after a refused move
 * unmapped it, unless someone mapped there meanwhile. */
static bool remap_target(char *to, size_t n) {
    void *q = mmap(to, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (q == to) return true;
    if (q != MAP_FAILED) munmap(q, n); /* a system that took the address as a hint */
    return false;
}

/* The system refused to move a range over two mappings at once (Linux
 * before 6.17): from then on each goes one mapping at a time. */
static bool whole_refused;

bool os_move_pages(void *dst, void *src, size_t len, size_t *moved, size_t *refused, bool whole) {
    char *to = dst, *from = src;
    *moved = 0;
    *refused = 0;
    if (fault_due()) return false;
    whole = whole && !__atomic_load_n(&whole_refused, __ATOMIC_RELAXED);
    while (*moved < len) {
        size_t n = len - *moved;
        /* Whole first: systems since Linux 6.17 move a range over several
         * mappings at once; older ones refuse it (EFAULT) after unmapping
         * the target, which is mapped again, and the range goes over one
         * mapping at a time, found without changing any (os_mapping_front),
         * as every later move does. */
        if (!whole || mremap(from, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, to) != to) {
            if (whole && errno == EFAULT) __atomic_store_n(&whole_refused, true, __ATOMIC_RELAXED);
            if (whole && (errno != EFAULT || !remap_target(to, n))) {
                *refused = n;
                return false;
            }
            whole = false;
            n = os_mapping_front(from, n);
            if (mremap(from, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, to) != to) {
                *refused = n;
                return false;
            }
        }
        to += n, from += n, *moved += n;
    }
    return true;
}

#ifndef MREMAP_DONTUNMAP
#  define MREMAP_DONTUNMAP 4 /* Linux 5.7 */
#endif

bool os_move_pages_keep(void *dst, void *src, size_t len) {
    if (fault_due()) return false;
    return mremap(src, len, len, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, dst) == dst;
}

void os_unmap(void *p, size_t size) {
    if (p && size) munmap(p, size);
}

void *os_map_near(void *want, size_t size, size_t align) {
    if (want) {
        if (fault_injected()) {
            errno = ENOMEM;
            return NULL;
        }
        void *p = mmap(want, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == want) return p;
        if (p != MAP_FAILED) munmap(p, size);
        __atomic_fetch_sub(&requests, 1, __ATOMIC_RELAXED); /* not granted: os_map counts the request */
    }
    return os_map(size, align);
}

void pk_fault_fail_after(long n) {
    long at = -1;
    if (n >= 0) at = (long)__atomic_load_n(&requests, __ATOMIC_RELAXED) + n;
    __atomic_store_n(&fail_at, at, __ATOMIC_RELAXED);
}

unsigned long pk_fault_requests(void) {
    return __atomic_load_n(&requests, __ATOMIC_RELAXED);
}

uint64_t os_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

bool os_protect_none(void *p, size_t size) { return mprotect(p, size, PROT_NONE) == 0; }
bool os_protect_rw(void *p, size_t size) { return mprotect(p, size, PROT_READ | PROT_WRITE) == 0; }

/* GUARDS_MAX: relaxed, outside any lock (a few past it in a race are
 * nothing beside the system's cap). */
static size_t guards_held;

bool os_guard_room(void) { return __atomic_load_n(&guards_held, __ATOMIC_RELAXED) < GUARDS_MAX; }

void os_guards_add(long delta) { __atomic_fetch_add(&guards_held, (size_t)delta, __ATOMIC_RELAXED); }

void *os_map_none(size_t size) {
    if (fault_injected()) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        errno = ENOMEM;
        return NULL;
    }
    return p;
}
