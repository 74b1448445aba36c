/* libpoolkit-record.so: records where a program allocates, for
 * `pk-lab advise` (lab/advise.py). Measuring code of the lab, not part of
 * poolkit: under LD_PRELOAD it serves every allocation from the C library's
 * own allocator (glibc's __libc_malloc family) and notes, per allocation
 * site, what advise needs to choose a style and price it:
 *
 *   site       the caller of malloc and the few frames above it (backtrace,
 *              PK_ADVISE_DEPTH frames, default 4), hashed; symbolized once,
 *              after the run, from the dump's copy of /proc/self/maps
 *   per site   allocations, frees, resizes (realloc), bytes, up to four
 *              distinct sizes exactly and a log2 size histogram, the live
 *              count now and at its peak, the allocating threads, frees on
 *              another thread than the allocating one, lifetimes in
 *              nanoseconds and in allocations (the process's allocation
 *              count between the block's allocation and its free), each a
 *              log2 histogram, and how its blocks die: in runs (below)
 *
 * A run of a site is a sequence of frees of its blocks with no allocation
 * of the site between them and at most RUN_GAP allocations of any site
 * between one free and the next; blocks freed in runs of RUN_TOGETHER or
 * more "die together" (a phase's or a request's end). Blocks still live at
 * exit are counted apart (never freed).
 *
 * The environment: PK_ADVISE_OUT, a path prefix (required: without it the
 * library records nothing); the dump goes to PREFIX.PID at exit, one file
 * per process (a forked child writes its own). PK_ADVISE_DEPTH, frames per
 * site (1 to 8). PK_ADVISE_SAMPLE=N records one allocation in N on average
 * (a random gap per thread), to cut the cost of the stack walk; every
 * allocation is still counted (and RUN_GAP counts them all), the sampled
 * sites' counts scale, and a run needs RUN_TOGETHER / N sampled frees
 * (at least 2).
 *
 * Invariants: a block is in the block table from its allocation to the
 * moment before the C library frees it (removed first, so that no other
 * thread can be handed the address while it is still listed). The hooks
 * never allocate: tables come from mmap. A thread inside the recorder
 * (tl.busy) is served without recording, which covers backtrace's first
 * call (it loads libgcc_s, which allocates) and the dump itself. fork
 * takes every lock first (pthread_atfork), so the child's tables are whole.
 */
#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

/* ---- constants -------------------------------------------------------------- */

#define MAX_DEPTH 8
#define NBUCKETS 48        /* log2 histograms: bucket b holds [2^(b-1), 2^b) */
#define NSIZES 4           /* distinct sizes kept exactly per site */
#define SITE_CAP 32768     /* sites; the last one collects the overflow */
#define STRIPES 256        /* block table stripes, each its own lock */
#define RUN_GAP 16         /* allocations allowed between two frees of a run */
#define RUN_TOGETHER 8     /* a run this long: its blocks died together */
#define CACHE_SLOTS 256    /* per-thread direct-mapped site cache */

/* ---- locks ------------------------------------------------------------------ */

typedef atomic_flag spin;
static inline void spin_lock(spin *l) {
    while (atomic_flag_test_and_set_explicit(l, memory_order_acquire)) sched_yield();
}
static inline void spin_unlock(spin *l) { atomic_flag_clear_explicit(l, memory_order_release); }

/* ---- state ------------------------------------------------------------------ */

typedef struct site {
    spin lock;
    uint64_t hash;
    int nframes;
    uintptr_t frames[MAX_DEPTH];
    uint64_t allocs, frees, resized, bytes, usable, remote, live, peak, together, runs;
    uint64_t threads; /* bit (tid & 63) of each allocating thread */
    size_t minsize, maxsize;
    int nsizes; /* NSIZES + 1: more than NSIZES distinct sizes */
    size_t sizes[NSIZES];
    uint64_t hsize[NBUCKETS], hlife_ns[NBUCKETS], hlife_allocs[NBUCKETS], hrun[NBUCKETS];
    /* the current run */
    int last_was_free;
    uint64_t run_len, last_free_ordinal;
} site;

typedef struct block {
    uintptr_t ptr; /* 0: empty */
    uint32_t site, tid;
    uint64_t t_ns, ordinal;
} block;

typedef struct stripe {
    spin lock;
    block *slots;
    size_t cap, used; /* cap a power of two, 0 until the first insert */
} stripe;

static struct {
    int state; /* 0 not yet, 1 recording, 2 off */
    int depth;
    uint64_t sample;
    char out[4000];
    uint64_t t0_ns, walk_ns;
    uint64_t run_together; /* RUN_TOGETHER frees, in sampled ones */
    site *sites;
    atomic_uint nsites;
    spin sites_lock;
    uint32_t *index; /* open addressing over hashes: site number + 1, 0 empty */
    stripe stripes[STRIPES];
    atomic_uint_fast64_t allocs; /* every allocation, sampled or not */
    atomic_uint_fast64_t tracked;
    atomic_uint next_tid;
} g;

static TLS struct {
    int busy;
    uint32_t tid; /* 0 until assigned */
    uint64_t rng, skip;
    uint64_t cache_hash[CACHE_SLOTS];
    uint32_t cache_site[CACHE_SLOTS];
} tl;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int log2_bucket(uint64_t v) {
    int b = v ? 64 - __builtin_clzll(v) : 0;
    return b < NBUCKETS ? b : NBUCKETS - 1;
}

static inline uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static void *map(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* ---- fork ------------------------------------------------------------------- */

static void fork_prepare(void) {
    spin_lock(&g.sites_lock);
    for (int i = 0; i < STRIPES; i++) spin_lock(&g.stripes[i].lock);
}
static void fork_parent(void) {
    for (int i = STRIPES - 1; i >= 0; i--) spin_unlock(&g.stripes[i].lock);
    spin_unlock(&g.sites_lock);
}

/* ---- start ------------------------------------------------------------------ */

static void start(void) {
    g.state = 2;
    const char *out = getenv("PK_ADVISE_OUT");
    if (!out || !*out || strlen(out) >= sizeof g.out) return;
    snprintf(g.out, sizeof g.out, "%s", out);
    const char *d = getenv("PK_ADVISE_DEPTH"), *s = getenv("PK_ADVISE_SAMPLE");
    g.depth = d ? atoi(d) : 4;
    if (g.depth < 1) g.depth = 1;
    if (g.depth > MAX_DEPTH) g.depth = MAX_DEPTH;
    g.sample = s && atoll(s) > 1 ? (uint64_t)atoll(s) : 1;
    /* one free in N is seen: RUN_TOGETHER frees are RUN_TOGETHER / N seen
     * ones (at least 2; RUN_GAP still counts every allocation) */
    g.run_together = (RUN_TOGETHER + g.sample - 1) / g.sample;
    if (g.run_together < 2) g.run_together = 2;
    g.sites = map(sizeof(site) * SITE_CAP);
    g.index = map(sizeof(uint32_t) * SITE_CAP * 2);
    if (!g.sites || !g.index) return;
    g.t0_ns = now_ns();
    tl.busy = 1;
    void *warm[MAX_DEPTH + 3];
    backtrace(warm, 2); /* loads libgcc_s now, its allocations unrecorded */
    /* what one stack walk costs here: advise sizes its sampling by it */
    uint64_t t = now_ns();
    for (int i = 0; i < 32; i++) backtrace(warm, g.depth + 3);
    g.walk_ns = (now_ns() - t) / 32;
    pthread_atfork(fork_prepare, fork_parent, fork_parent);
    tl.busy = 0;
    g.state = 1;
}

/* Whether this call records: not inside the recorder, recording on. */
static inline int recording(void) {
    if (__builtin_expect(tl.busy, 0)) return 0;
    if (__builtin_expect(g.state == 0, 0)) {
        tl.busy = 1;
        start();
        tl.busy = 0;
    }
    return g.state == 1;
}

/* ---- sites ------------------------------------------------------------------ */

static uint32_t site_insert(uint64_t h, const uintptr_t *frames, int n) {
    spin_lock(&g.sites_lock);
    size_t mask = (size_t)SITE_CAP * 2 - 1;
    uint32_t found = SITE_CAP - 1; /* the overflow site */
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t k = g.index[i];
        if (k == 0) {
            uint32_t id = atomic_load(&g.nsites);
            if (id >= SITE_CAP - 1) break;
            site *s = &g.sites[id];
            s->hash = h;
            s->nframes = n;
            memcpy(s->frames, frames, sizeof(uintptr_t) * (size_t)n);
            s->minsize = SIZE_MAX;
            atomic_store(&g.nsites, id + 1);
            g.index[i] = id + 1;
            found = id;
            break;
        }
        site *s = &g.sites[k - 1];
        if (s->hash == h && s->nframes == n && !memcmp(s->frames, frames, sizeof(uintptr_t) * (size_t)n)) {
            found = k - 1;
            break;
        }
    }
    spin_unlock(&g.sites_lock);
    return found;
}

/* The site of the calling stack: frames from the caller of the allocating
 * function (ra) up. */
static uint32_t site_of(uintptr_t ra) {
    void *buf[MAX_DEPTH + 3]; /* site_of, note_alloc and malloc below the caller */
    int n = backtrace(buf, g.depth + 3);
    int first = -1;
    for (int i = 0; i < n; i++)
        if ((uintptr_t)buf[i] == ra) {
            first = i;
            break;
        }
    uintptr_t frames[MAX_DEPTH];
    int k = 0;
    if (first < 0) frames[k++] = ra; /* a frame the unwinder skipped: the caller alone */
    else
        for (int i = first; i < n && k < g.depth; i++) frames[k++] = (uintptr_t)buf[i];
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < k; i++) h = mix(h ^ frames[i]) + (uint64_t)i;
    unsigned slot = (unsigned)(h & (CACHE_SLOTS - 1));
    if (tl.cache_hash[slot] == h) {
        site *s = &g.sites[tl.cache_site[slot]];
        if (s->nframes == k && !memcmp(s->frames, frames, sizeof(uintptr_t) * (size_t)k))
            return tl.cache_site[slot];
    }
    uint32_t id = site_insert(h, frames, k);
    tl.cache_hash[slot] = h;
    tl.cache_site[slot] = id;
    return id;
}

static void run_end(site *s) {
    if (s->run_len == 0) return;
    s->hrun[log2_bucket(s->run_len)]++;
    if (s->run_len >= g.run_together) {
        s->together += s->run_len;
        s->runs++;
    }
    s->run_len = 0;
}

static void site_alloc(site *s, size_t size, size_t usable) {
    spin_lock(&s->lock);
    s->allocs++;
    s->bytes += size;
    s->usable += usable;
    s->hsize[log2_bucket(size)]++;
    if (size < s->minsize) s->minsize = size;
    if (size > s->maxsize) s->maxsize = size;
    if (s->nsizes <= NSIZES) {
        int i = 0;
        while (i < s->nsizes && s->sizes[i] != size) i++;
        if (i == s->nsizes) {
            if (s->nsizes < NSIZES) s->sizes[i] = size;
            s->nsizes++;
        }
    }
    if (++s->live > s->peak) s->peak = s->live;
    s->threads |= 1ull << (tl.tid & 63);
    if (s->last_was_free) run_end(s);
    s->last_was_free = 0;
    spin_unlock(&s->lock);
}

static void site_free(site *s, const block *b, uint64_t t, uint64_t ordinal, int resized) {
    spin_lock(&s->lock);
    if (s->live) s->live--;
    if (resized) {
        s->resized++;
    } else {
        s->frees++;
        s->hlife_ns[log2_bucket(t - b->t_ns)]++;
        s->hlife_allocs[log2_bucket(ordinal - b->ordinal)]++;
        if (b->tid != tl.tid) s->remote++;
        if (s->last_was_free && ordinal - s->last_free_ordinal <= RUN_GAP) s->run_len++;
        else {
            run_end(s);
            s->run_len = 1;
        }
        s->last_was_free = 1;
        s->last_free_ordinal = ordinal;
    }
    spin_unlock(&s->lock);
}

/* ---- blocks ----------------------------------------------------------------- */

static inline stripe *stripe_of(uintptr_t p, uint64_t *h) {
    *h = mix(p);
    return &g.stripes[*h >> 56];
}

static int stripe_grow(stripe *st) {
    size_t cap = st->cap ? st->cap * 2 : 1024;
    block *slots = map(sizeof(block) * cap);
    if (!slots) return -1;
    for (size_t i = 0; i < st->cap; i++) {
        if (!st->slots[i].ptr) continue;
        size_t j = mix(st->slots[i].ptr) & (cap - 1);
        while (slots[j].ptr) j = (j + 1) & (cap - 1);
        slots[j] = st->slots[i];
    }
    if (st->slots) munmap(st->slots, sizeof(block) * st->cap);
    st->slots = slots;
    st->cap = cap;
    return 0;
}

static void block_put(const block *b) {
    uint64_t h;
    stripe *st = stripe_of(b->ptr, &h);
    spin_lock(&st->lock);
    if ((st->used + 1) * 4 > st->cap * 3 && stripe_grow(st) != 0) {
        spin_unlock(&st->lock);
        return;
    }
    size_t j = h & (st->cap - 1);
    while (st->slots[j].ptr) j = (j + 1) & (st->cap - 1);
    st->slots[j] = *b;
    st->used++;
    spin_unlock(&st->lock);
}

/* Removes p's record into *out: 1, or 0 when p was not recorded. Linear
 * probing with backward-shift deletion (no tombstones). */
static int block_take(uintptr_t p, block *out) {
    uint64_t h;
    stripe *st = stripe_of(p, &h);
    /* a stripe that lists nothing needs no lock (sampling leaves most of
     * them empty); a block listed there was listed by this free's own
     * allocation, which happened before it */
    if (!__atomic_load_n(&st->used, __ATOMIC_RELAXED)) return 0;
    spin_lock(&st->lock);
    if (!st->cap) {
        spin_unlock(&st->lock);
        return 0;
    }
    size_t mask = st->cap - 1, j = h & mask;
    while (st->slots[j].ptr && st->slots[j].ptr != p) j = (j + 1) & mask;
    if (!st->slots[j].ptr) {
        spin_unlock(&st->lock);
        return 0;
    }
    *out = st->slots[j];
    for (size_t k = (j + 1) & mask; st->slots[k].ptr; k = (k + 1) & mask) {
        size_t home = mix(st->slots[k].ptr) & mask;
        /* move k into the hole j unless its home lies cyclically in (j, k] */
        if (((k - home) & mask) >= ((k - j) & mask)) {
            st->slots[j] = st->slots[k];
            j = k;
        }
    }
    st->slots[j].ptr = 0;
    st->used--;
    spin_unlock(&st->lock);
    return 1;
}

/* ---- the hooks' bodies ------------------------------------------------------ */

static inline int sampled(void) {
    if (g.sample <= 1) return 1;
    if (tl.skip > 1) {
        tl.skip--;
        return 0;
    }
    if (!tl.rng) tl.rng = mix((uintptr_t)&tl ^ now_ns()) | 1;
    tl.rng ^= tl.rng << 13;
    tl.rng ^= tl.rng >> 7;
    tl.rng ^= tl.rng << 17;
    /* a gap drawn uniformly from 1 to 2N - 1: N on average, never in step
     * with a loop of the program's */
    tl.skip = 1 + tl.rng % (2 * g.sample - 1);
    return 1;
}

static void note_alloc(void *p, size_t size, uintptr_t ra) {
    uint64_t ordinal = atomic_fetch_add_explicit(&g.allocs, 1, memory_order_relaxed);
    if (!p || !sampled()) return;
    tl.busy = 1;
    if (!tl.tid) tl.tid = atomic_fetch_add(&g.next_tid, 1) + 1;
    uint32_t id = site_of(ra);
    block b = {(uintptr_t)p, id, tl.tid, now_ns(), ordinal};
    block_put(&b);
    site_alloc(&g.sites[id], size, malloc_usable_size(p));
    atomic_fetch_add_explicit(&g.tracked, 1, memory_order_relaxed);
    tl.busy = 0;
}

/* Takes p out of the table before the C library frees or moves it. */
static int note_free(void *p, int resized, block *b) {
    if (!p) return 0;
    tl.busy = 1;
    if (!tl.tid) tl.tid = atomic_fetch_add(&g.next_tid, 1) + 1;
    int had = block_take((uintptr_t)p, b);
    if (had) {
        uint64_t ordinal = atomic_load_explicit(&g.allocs, memory_order_relaxed);
        site_free(&g.sites[b->site], b, now_ns(), ordinal, resized);
    }
    tl.busy = 0;
    return had;
}

#define RA ((uintptr_t)__builtin_return_address(0))

EXPORT void *malloc(size_t size) {
    void *p = __libc_malloc(size);
    if (recording()) note_alloc(p, size, RA);
    return p;
}

EXPORT void free(void *p) {
    block b;
    if (p && recording()) note_free(p, 0, &b);
    __libc_free(p);
}

EXPORT void *calloc(size_t n, size_t size) {
    void *p = __libc_calloc(n, size);
    if (recording()) note_alloc(p, n * size, RA);
    return p;
}

EXPORT void *realloc(void *old, size_t size) {
    if (!recording()) return __libc_realloc(old, size);
    uintptr_t ra = RA;
    block b;
    int had = old ? note_free(old, 1, &b) : 0;
    void *p = __libc_realloc(old, size);
    if (!p && size && had) { /* the old block stays: list it again */
        tl.busy = 1;
        block_put(&b);
        tl.busy = 0;
        return p;
    }
    if (p) note_alloc(p, size, ra);
    return p;
}

EXPORT void *reallocarray(void *old, size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(old, total);
}

EXPORT void *memalign(size_t align, size_t size) {
    void *p = __libc_memalign(align, size);
    if (recording()) note_alloc(p, size, RA);
    return p;
}

EXPORT void *aligned_alloc(size_t align, size_t size) {
    void *p = __libc_memalign(align, size);
    if (recording()) note_alloc(p, size, RA);
    return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t size) {
    if (!align || (align & (align - 1)) || align % sizeof(void *)) return EINVAL;
    void *p = __libc_memalign(align, size);
    if (!p) return ENOMEM;
    if (recording()) note_alloc(p, size, RA);
    *out = p;
    return 0;
}

EXPORT void *valloc(size_t size) {
    void *p = __libc_memalign((size_t)sysconf(_SC_PAGESIZE), size);
    if (recording()) note_alloc(p, size, RA);
    return p;
}

/* ---- the dump --------------------------------------------------------------- */

static void put_hist(FILE *f, const char *tag, uint32_t id, const uint64_t *h) {
    fprintf(f, "%s %u", tag, id);
    for (int b = 0; b < NBUCKETS; b++)
        if (h[b]) fprintf(f, " %d:%llu", b, (unsigned long long)h[b]);
    fputc('\n', f);
}

/* PREFIX.PID: a header, the executable mappings, one block of lines per
 * site (lab/advise.py reads it). */
static void dump(void) {
    char path[4100];
    snprintf(path, sizeof path, "%s.%d", g.out, (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) return;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    fprintf(f, "pk-record 1\npid %d\nexe %s\ndepth %d\nsample %llu\nwall_ns %llu\nallocs %llu\n"
               "tracked %llu\nrun_gap %d\nrun_together %d\nwalk_ns %llu\n",
            (int)getpid(), exe, g.depth, (unsigned long long)g.sample,
            (unsigned long long)(now_ns() - g.t0_ns), (unsigned long long)atomic_load(&g.allocs),
            (unsigned long long)atomic_load(&g.tracked), RUN_GAP, (int)g.run_together,
            (unsigned long long)g.walk_ns);
    FILE *m = fopen("/proc/self/maps", "r");
    char line[4400];
    while (m && fgets(line, sizeof line, m))
        if (strstr(line, " r-xp ") || strstr(line, " r--p 00000000 ")) fprintf(f, "map %s", line);
    if (m) fclose(m);
    uint32_t ns = atomic_load(&g.nsites);
    for (uint32_t id = 0; id < ns; id++) {
        site *s = &g.sites[id];
        run_end(s);
        fprintf(f, "site %u frames", id);
        for (int i = 0; i < s->nframes; i++) fprintf(f, " %#lx", (unsigned long)s->frames[i]);
        fprintf(f, "\nstat %u allocs %llu frees %llu resized %llu bytes %llu usable %llu remote %llu "
                   "live %llu peak %llu together %llu runs %llu threads %d min %zu max %zu nsizes %d sizes",
                id, (unsigned long long)s->allocs, (unsigned long long)s->frees,
                (unsigned long long)s->resized, (unsigned long long)s->bytes,
                (unsigned long long)s->usable, (unsigned long long)s->remote,
                (unsigned long long)s->live, (unsigned long long)s->peak,
                (unsigned long long)s->together, (unsigned long long)s->runs,
                __builtin_popcountll(s->threads), s->allocs ? s->minsize : 0, s->maxsize, s->nsizes);
        for (int i = 0; i < s->nsizes && i < NSIZES; i++) fprintf(f, " %zu", s->sizes[i]);
        fputc('\n', f);
        put_hist(f, "hsize", id, s->hsize);
        put_hist(f, "hlife_ns", id, s->hlife_ns);
        put_hist(f, "hlife_allocs", id, s->hlife_allocs);
        put_hist(f, "hrun", id, s->hrun);
    }
    fclose(f);
}

__attribute__((destructor)) static void record_end(void) {
    if (g.state != 1) return;
    tl.busy = 1; /* the dump's own allocations go unrecorded */
    g.state = 2;
    dump();
}
