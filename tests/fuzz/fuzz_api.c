/* fuzz_api: a libFuzzer target that drives the whole C API against a model.
 *
 * The input is a program. Each operation is an opcode byte followed by its
 * argument bytes (an argument past the end of the input reads as 0), and one
 * opcode ("burst") runs up to 255 more operations whose bytes come from a
 * generator seeded by the input, so a short input can do a lot. The
 * interpreter keeps a model of everything it holds:
 *
 *   pools     six slots, each a pool of a configuration drawn from the input
 *             (sizes 1..70000, every alignment, ZERO, LOCAL, HARDENED, DEBUG,
 *             REGION, a limit, construct/destruct hooks, invalid ones that
 *             must fail with EINVAL); alloc, free, bulk alloc and free,
 *             reserve, trim, stats, visit, owner, destroy (with live objects:
 *             a leak warning, none for a region)
 *   arenas    two, with marks: alloc (every alignment, invalid ones, larger
 *             than a chunk), strdup, save, rewind, reset
 *   objects   pk_new of classes with and without dealloc, pooled and from the
 *             heap; retain, release, autorelease; objects that hold others
 *             (chains deeper than the dealloc nesting), a dealloc that
 *             autoreleases what it held; push and pop of nested autorelease
 *             pools, pk_defer, pk_scratch
 *   faults    pk_fault_fail_after: every failure must be NULL (or a short
 *             count) with ENOMEM, and everything must work again afterwards
 *
 * and checks, as it goes: no two live blocks overlap (pool objects, arena
 * blocks, scratch, objects), what was written into a block is still there
 * when it is freed or checked, ZERO objects come out zeroed, a hooked pool
 * hands out only constructed objects in the state the user left, destruct
 * sees exactly what construct made, stats.live equals the model's count,
 * visit sees exactly the live objects, pk_pool_owner answers right (and does
 * not crash on garbage), reference counts and deallocs match the model, the
 * deferred calls of a pop run newest first, and pk_pool_reserve's promise
 * holds (the next allocations succeed, with no page request, even with
 * faults armed). The program never misuses the API, so any report from
 * poolkit's error handler other than an expected warning is a finding: the
 * handler prints it and aborts.
 *
 * The number of operations executed over the whole run is printed at exit
 * ("fuzz_api: N operations in M inputs"). PK_FUZZ_TRACE=1 in the
 * environment prints each operation's name as it runs (to read a crash
 * input: ./fuzz_api crash-...).
 *
 * The seed corpus (tests/fuzz/corpus/) holds a few programs written by
 * hand: pools of every kind, arenas with marks, objects and autorelease
 * pools, faults inside a reserve, and bursts.
 *
 * Build (scripts/fuzz.sh does this):
 *   clang -fsanitize=fuzzer,address,undefined -Iinclude tests/fuzz/fuzz_api.c
 *         <the library compiled with -fsanitize=fuzzer-no-link,address,undefined>
 * With -DPK_FUZZ_STANDALONE it has its own main instead of libFuzzer's: it
 * runs each file named on the command line (every file of a directory named,
 * README.md and other *.md files left out), or, with none, N random inputs
 * (N = $PK_FUZZ_RUNS, default 1000), so the model also runs under gcc or
 * valgrind. ctest replays the committed corpus that way (fuzz.corpus, in
 * tests/CMakeLists.txt).
 */
#include <poolkit/poolkit.h>

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Failure, counting, input
 * ---------------------------------------------------------------------- */

/* The model's own loops (scans, pattern checks) give the fuzzer no useful
 * coverage: left out of the instrumentation, an operation costs several
 * times less, so a run executes several times more of them. */
#if defined(__clang__)
#  define MODEL __attribute__((no_sanitize("coverage"), noinline))
#else
#  define MODEL
#endif

static uint64_t g_ops;    /* operations executed, all inputs */
static uint64_t g_inputs; /* inputs run */
static uint64_t g_key;    /* source of content patterns */

static void fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "fuzz_api: model mismatch after %llu operations: ",
            (unsigned long long)g_ops);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

#define CHECK(cond, ...)                  \
    do {                                  \
        if (!(cond)) fail(__VA_ARGS__);   \
    } while (0)

MODEL static uint64_t mix64(uint64_t x) { /* splitmix64's finalizer */
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Where operation bytes come from: the input, or during a burst a
 * generator seeded by it. */
typedef struct src {
    const uint8_t *p;
    size_t n;
    uint64_t rng;
    unsigned burst; /* operations left in the current burst */
} src;

MODEL static uint8_t byte(src *s) {
    if (s->burst) {
        s->rng += 0x9E3779B97F4A7C15ull;
        return (uint8_t)(mix64(s->rng) >> 56);
    }
    if (!s->n) return 0;
    s->n--;
    return *s->p++;
}

MODEL static unsigned u16(src *s) { return (unsigned)byte(s) | (unsigned)byte(s) << 8; }

/* ------------------------------------------------------------------------
 * Content patterns: whole block up to 64 bytes, else its first and last 32.
 * ---------------------------------------------------------------------- */

static inline uint8_t pat(uint64_t key, size_t i) {
    return (uint8_t)((key >> ((i & 7) * 8)) + (uint8_t)i);
}

MODEL static void fill(unsigned char *p, size_t size, uint64_t key) {
    if (size <= 64) {
        for (size_t i = 0; i < size; i++) p[i] = pat(key, i);
        return;
    }
    for (size_t i = 0; i < 32; i++) p[i] = pat(key, i);
    for (size_t i = size - 32; i < size; i++) p[i] = pat(key, i);
}

/* Index of the first byte that differs, or size. */
MODEL static size_t intact(const unsigned char *p, size_t size, uint64_t key) {
    if (size <= 64) {
        for (size_t i = 0; i < size; i++)
            if (p[i] != pat(key, i)) return i;
        return size;
    }
    for (size_t i = 0; i < 32; i++)
        if (p[i] != pat(key, i)) return i;
    for (size_t i = size - 32; i < size; i++)
        if (p[i] != pat(key, i)) return i;
    return size;
}

MODEL static bool all_bytes(const unsigned char *p, size_t n, unsigned char v) {
    /* every byte is v iff the first is and each equals the next */
    return n == 0 || (p[0] == v && memcmp(p, p + 1, n - 1) == 0);
}

MODEL static uint64_t new_key(void) { return mix64(++g_key); }

/* ------------------------------------------------------------------------
 * The error handler: fatal reports are findings; warnings only where the
 * operation expects one.
 * ---------------------------------------------------------------------- */

static int g_expect_warning; /* > 0 while a warning may come */
static struct {
    int count;
    char what[48], pool[48];
    const void *ptr;
    char message[256];
} g_warn;

static void handler(const pk_error *e, void *arg) {
    (void)arg;
    if (e->severity == PK_FATAL || g_expect_warning <= 0) {
        fprintf(stderr, "fuzz_api: poolkit reported %s (no misuse was made): %s\n",
                e->severity == PK_FATAL ? "a fatal error" : "an unexpected warning",
                e->message ? e->message : "(no message)");
        abort();
    }
    g_warn.count++;
    snprintf(g_warn.what, sizeof g_warn.what, "%s", e->what ? e->what : "");
    snprintf(g_warn.pool, sizeof g_warn.pool, "%s", e->pool ? e->pool : "");
    snprintf(g_warn.message, sizeof g_warn.message, "%s", e->message ? e->message : "");
    g_warn.ptr = e->ptr;
}

static void warn_reset(void) {
    g_warn.count = 0;
    g_warn.what[0] = g_warn.pool[0] = g_warn.message[0] = 0;
    g_warn.ptr = NULL;
}

/* ------------------------------------------------------------------------
 * Fault injection
 * ---------------------------------------------------------------------- */

static bool g_fault; /* pk_fault_fail_after armed */
static bool g_under_valgrind; /* the standalone build under memcheck */

/* A failed call: allowed only as ENOMEM while faults are armed. */
static void check_oom(const char *call) {
    CHECK(g_fault, "%s failed (errno %d) with no fault injected", call, errno);
    CHECK(errno == ENOMEM, "%s failed with errno %d, not ENOMEM", call, errno);
}

/* ------------------------------------------------------------------------
 * Pools
 * ---------------------------------------------------------------------- */

#define NPOOLS 6
#define POOL_LIVE_MAX 192
#define BULK_MAX 32

typedef struct pobj {
    unsigned char *p;
    uint64_t key;
} pobj;

typedef struct mpool {
    pk_pool *pool;
    char name[32];
    size_t size, align; /* align: the one objects get */
    unsigned flags;
    size_t limit;
    bool hooks, zero, debug;
    size_t promise;              /* allocations pk_pool_reserve promised */
    long constructs, destructs;  /* counted by the hooks */
    bool destroying;             /* destruct may meet objects in use */
    size_t nlive;
    pobj live[POOL_LIVE_MAX];
} mpool;

static mpool pools[NPOOLS];

static const size_t kSizes[32] = {0,    1,    2,    7,    8,    12,   16,   24,
                                  31,   32,   40,   48,   64,   72,   96,   100,
                                  128,  200,  255,  256,  512,  1000, 1024, 2048,
                                  4000, 4096, 5000, 8192, 16384, 65536, 65537, 70000};
static const size_t kAligns[16] = {0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 4096, 3, 8192};

/* pool.h: the largest power of two dividing size, up to 4096, or up to
 * alignof(max_align_t) in a pool with hooks. */
static size_t natural_align(size_t size, bool hooks) {
    size_t a = size & (~size + 1);
    size_t most = hooks ? _Alignof(max_align_t) : 4096;
    return a > most ? most : a;
}

/* What construct leaves in an object (its first 16 bytes at most). */
static inline uint8_t ctor_byte(const void *obj, size_t i) {
    return (uint8_t)(((uintptr_t)obj >> 3) ^ (0xC3 + 7 * i));
}
MODEL static size_t ctor_len(const mpool *m) { return m->size < 16 ? m->size : 16; }
MODEL static void ctor_fill(const mpool *m, unsigned char *obj) {
    for (size_t i = 0; i < ctor_len(m); i++) obj[i] = ctor_byte(obj, i);
}
MODEL static bool ctor_intact(const mpool *m, const unsigned char *obj) {
    for (size_t i = 0; i < ctor_len(m); i++)
        if (obj[i] != ctor_byte(obj, i)) return false;
    return true;
}

static void construct_hook(void *obj, void *arg) {
    mpool *m = arg;
    m->constructs++;
    ctor_fill(m, obj);
}

static void destruct_hook(void *obj, void *arg) {
    mpool *m = arg;
    m->destructs++;
    CHECK(m->destructs <= m->constructs, "pool %s: destruct without construct (%p)", m->name, obj);
    /* Objects come home in their constructed state; at a destroy with live
     * objects, those hold what the user wrote. */
    CHECK(m->destroying || ctor_intact(m, obj),
          "pool %s: destruct of %p, which is not in the state it was left in", m->name, obj);
}

MODEL static void pool_check_stats(mpool *m) {
    pk_pool_stats st;
    memset(&st, 0xEE, sizeof st);
    pk_pool_stats_get(m->pool, &st);
    CHECK(st.live == m->nlive, "pool %s: stats.live %zu, model %zu", m->name, st.live, m->nlive);
    CHECK(st.size == m->size, "pool %s: stats.size %zu, config %zu", m->name, st.size, m->size);
    CHECK(st.align == m->align, "pool %s: stats.align %zu, expected %zu", m->name, st.align,
          m->align);
    CHECK(st.peak_live >= st.live, "pool %s: peak_live %zu < live %zu", m->name, st.peak_live,
          st.live);
    CHECK(!m->limit || st.live <= m->limit, "pool %s: live %zu over the limit %zu", m->name,
          st.live, m->limit);
    CHECK(st.name == m->name, "pool %s: stats.name is not the config's", m->name);
    CHECK((st.slabs == 0) == (st.bytes_reserved == 0), "pool %s: %zu slabs, %zu bytes", m->name,
          st.slabs, st.bytes_reserved);
}

/* Takes a fresh object into the model, checking what the pool promises. */
MODEL static void pool_took(mpool *m, unsigned char *obj) {
    CHECK(((uintptr_t)obj & (m->align - 1)) == 0, "pool %s: %p not aligned to %zu", m->name,
          (void *)obj, m->align);
    CHECK(pk_pool_owner(obj) == m->pool, "pool %s: pk_pool_owner(%p) is not the pool", m->name,
          (void *)obj);
    for (size_t i = 0; i < m->nlive; i++)
        CHECK(m->live[i].p != obj, "pool %s: %p handed out while live", m->name, (void *)obj);
    if (m->zero) CHECK(all_bytes(obj, m->size, 0), "pool %s: ZERO object %p not zeroed", m->name,
                       (void *)obj);
    if (m->hooks)
        CHECK(ctor_intact(m, obj), "pool %s: %p handed out unconstructed or changed", m->name,
              (void *)obj);
    if (m->debug && !m->hooks && !m->zero && !g_under_valgrind) /* (memcheck: undefined) */
        CHECK(all_bytes(obj, m->size < 64 ? m->size : 64, 0xAA),
              "pool %s: debug object %p lacks the alloc fill", m->name, (void *)obj);
    uint64_t key = new_key();
    fill(obj, m->size, key);
    m->live[m->nlive].p = obj;
    m->live[m->nlive].key = key;
    m->nlive++;
    if (m->promise) m->promise--;
}

/* Takes live object i out of the model, checking its contents; returns it
 * ready to be freed (in its constructed state for a hooked pool). */
MODEL static unsigned char *pool_giving(mpool *m, size_t i) {
    pobj o = m->live[i];
    size_t bad = intact(o.p, m->size, o.key);
    CHECK(bad == m->size, "pool %s: object %p changed at byte %zu while live", m->name,
          (void *)o.p, bad);
    if (m->hooks) ctor_fill(m, o.p);
    m->live[i] = m->live[--m->nlive];
    return o.p;
}

static void pool_destroy_slot(mpool *m) {
    if (!m->pool) return;
    bool region = (m->flags & PK_POOL_REGION) != 0;
    m->destroying = true;
    warn_reset();
    g_expect_warning++;
    pk_pool_destroy(m->pool);
    g_expect_warning--;
    if (m->nlive && !region) {
        CHECK(g_warn.count == 1 && strcmp(g_warn.what, "leak") == 0 &&
                  strcmp(g_warn.pool, m->name) == 0,
              "pool %s destroyed with %zu live objects: %d warnings, last '%s'", m->name,
              m->nlive, g_warn.count, g_warn.message);
        char count[48];
        snprintf(count, sizeof count, " %zu live object", m->nlive);
        CHECK(strstr(g_warn.message, count) != NULL, "leak report '%s' does not say%s",
              g_warn.message, count);
    } else {
        CHECK(g_warn.count == 0, "pool %s destroyed with %zu live objects (region %d): '%s'",
              m->name, m->nlive, region, g_warn.message);
    }
    CHECK(m->constructs == m->destructs, "pool %s destroyed: %ld constructs, %ld destructs",
          m->name, m->constructs, m->destructs);
    m->pool = NULL;
    m->nlive = 0;
    m->promise = 0;
}

static mpool *pool_slot(src *s) {
    mpool *m = &pools[byte(s) % NPOOLS];
    return m->pool ? m : NULL;
}

static void op_pool_create(src *s) {
    unsigned slot = byte(s) % NPOOLS;
    uint8_t b0 = byte(s), b1 = byte(s), b2 = byte(s), b3 = byte(s);
    mpool *m = &pools[slot];
    pool_destroy_slot(m);
    pk_pool_config c;
    memset(&c, 0, sizeof c);
    snprintf(m->name, sizeof m->name, "fuzz%u.%02x%02x%02x%02x", slot, b0, b1, b2, b3);
    c.name = m->name;
    c.size = kSizes[b0 % 32];
    c.align = kAligns[b1 % 16];
    if (b2 & 0x01) c.flags |= PK_POOL_ZERO;
    if (b2 & 0x02) c.flags |= PK_POOL_LOCAL;
    if (b2 & 0x04) c.flags |= PK_POOL_HARDENED;
    if ((b2 & 0x18) == 0x18) c.flags |= PK_POOL_DEBUG;
    if (b2 & 0x20) c.flags |= PK_POOL_REGION;
    if (b1 & 0x80) c.flags |= PK_POOL_GUARD;
    bool hooks = (b2 & 0x40) != 0;
    if (hooks) {
        c.construct = construct_hook;
        c.destruct = destruct_hook;
        c.arg = m;
    }
    if (b2 & 0x80) c.limit = 1 + b3 % 200;
    if ((b3 & 0xC0) == 0xC0) c.reserve = 1 + (b1 >> 4) * 7;
    if (c.size > 4096 && c.reserve > 8) c.reserve = 8;
    bool einval = c.size == 0 || (c.align && (c.align & (c.align - 1))) || c.align > 4096 ||
                  ((c.flags & PK_POOL_ZERO) && hooks);
    m->constructs = m->destructs = 0;
    m->destroying = false;
    errno = 0;
    pk_pool *p = pk_pool_create(&c);
    if (einval) {
        CHECK(!p && errno == EINVAL, "pk_pool_create(size %zu, align %zu, flags %#x, hooks %d): "
              "%p, errno %d; expected EINVAL", c.size, c.align, c.flags, hooks, (void *)p, errno);
        return;
    }
    if (!p && c.limit && c.reserve > c.limit) {
        /* A reserve past the limit may or may not fit the first slabs. */
        CHECK(errno == ENOMEM, "pk_pool_create: reserve %zu over limit %zu: errno %d", c.reserve,
              c.limit, errno);
        return;
    }
    if (!p) {
        check_oom("pk_pool_create");
        CHECK(m->constructs == m->destructs, "failed create: %ld constructs, %ld destructs",
              m->constructs, m->destructs);
        return;
    }
    m->pool = p;
    m->size = c.size;
    m->align = c.align ? c.align : natural_align(c.size, hooks);
    m->flags = c.flags;
    m->limit = c.limit;
    m->hooks = hooks;
    m->zero = (c.flags & PK_POOL_ZERO) != 0;
    m->debug = (c.flags & PK_POOL_DEBUG) != 0;
    m->nlive = 0;
    m->promise = c.reserve;
    pool_check_stats(m);
}

static void op_pool_destroy(src *s) {
    mpool *m = pool_slot(s);
    if (m) pool_destroy_slot(m);
}

/* One pk_pool_alloc, with what the model expects of it. */
static void pool_alloc_one(mpool *m) {
    if (m->nlive >= POOL_LIVE_MAX) return;
    bool at_limit = m->limit && m->nlive >= m->limit;
    bool promised = m->promise > 0 && !at_limit;
    unsigned long requests = pk_fault_requests();
    errno = 0;
    unsigned char *obj = pk_pool_alloc(m->pool);
    if (at_limit) {
        CHECK(!obj && errno == ENOMEM, "pool %s: alloc past the limit %zu gave %p (errno %d)",
              m->name, m->limit, (void *)obj, errno);
        return;
    }
    if (promised) {
        CHECK(obj != NULL, "pool %s: alloc failed (errno %d) within a reserve", m->name, errno);
        CHECK(pk_fault_requests() == requests, "pool %s: alloc within a reserve asked for pages",
              m->name);
    }
    if (!obj) {
        check_oom("pk_pool_alloc");
        return;
    }
    pool_took(m, obj);
}

static void op_pool_alloc(src *s) {
    mpool *m = pool_slot(s);
    if (m) pool_alloc_one(m);
}

static void op_pool_free(src *s) {
    mpool *m = pool_slot(s);
    unsigned i = u16(s);
    if (!m || !m->nlive) return;
    pk_pool_free(m->pool, pool_giving(m, i % m->nlive));
}

static void op_pool_alloc_bulk(src *s) {
    mpool *m = pool_slot(s);
    size_t n = 1 + byte(s) % BULK_MAX;
    if (!m) return;
    if (n > POOL_LIVE_MAX - m->nlive) n = POOL_LIVE_MAX - m->nlive;
    if (!n) return;
    size_t room = m->limit ? (m->nlive >= m->limit ? 0 : m->limit - m->nlive) : n;
    size_t expect = n < room ? n : room;
    bool promised = m->promise >= expect;
    unsigned long requests = pk_fault_requests();
    void *objs[BULK_MAX];
    errno = 0;
    size_t got = pk_pool_alloc_bulk(m->pool, objs, n);
    CHECK(got <= expect, "pool %s: bulk alloc of %zu gave %zu (room %zu)", m->name, n, got, room);
    if (got < n) CHECK(errno == ENOMEM, "pool %s: short bulk alloc, errno %d", m->name, errno);
    if (got < expect) check_oom("pk_pool_alloc_bulk");
    if (promised) {
        CHECK(got == expect, "pool %s: bulk alloc within a reserve gave %zu of %zu", m->name, got,
              expect);
        CHECK(pk_fault_requests() == requests, "pool %s: bulk alloc within a reserve asked for "
              "pages", m->name);
    }
    for (size_t k = 0; k < got; k++) pool_took(m, objs[k]);
}

static void op_pool_free_bulk(src *s) {
    mpool *m = pool_slot(s);
    size_t n = 1 + byte(s) % BULK_MAX;
    unsigned start = u16(s);
    if (!m || !m->nlive) return;
    if (n > m->nlive) n = m->nlive;
    void *objs[BULK_MAX];
    for (size_t k = 0; k < n; k++) objs[k] = pool_giving(m, (start + 7 * k) % m->nlive);
    pk_pool_free_bulk(m->pool, objs, n);
}

static void op_pool_reserve(src *s) {
    mpool *m = pool_slot(s);
    size_t n = u16(s) % 600;
    if (!m) return;
    size_t cap = ((size_t)8 << 20) / (m->size ? m->size : 1);
    if (n > cap) n = cap;
    errno = 0;
    size_t ready = pk_pool_reserve(m->pool, n);
    if (ready < n) {
        CHECK(errno == ENOMEM, "pool %s: reserve(%zu) gave %zu, errno %d", m->name, n, ready,
              errno);
        if (!m->limit) check_oom("pk_pool_reserve");
    }
    size_t promise = ready < n ? ready : n;
    if (promise > m->promise) m->promise = promise;
    pool_check_stats(m);
}

static void op_pool_trim(src *s) {
    mpool *m = pool_slot(s);
    if (!m) return;
    pk_pool_stats before, after;
    pk_pool_stats_get(m->pool, &before);
    size_t bytes = pk_pool_trim(m->pool);
    pk_pool_stats_get(m->pool, &after);
    CHECK(before.bytes_reserved - after.bytes_reserved == bytes,
          "pool %s: trim said %zu bytes, stats went from %zu to %zu", m->name, bytes,
          before.bytes_reserved, after.bytes_reserved);
    if (m->nlive == 0)
        CHECK(after.slabs == 0 && after.bytes_reserved == 0,
              "pool %s: empty after trim but holds %zu slabs", m->name, after.slabs);
    m->promise = 0;
    pool_check_stats(m);
}

static void op_pool_stats(src *s) {
    mpool *m = pool_slot(s);
    if (m) pool_check_stats(m);
}

typedef struct visit_acc {
    void *seen[POOL_LIVE_MAX + 1];
    size_t n;
} visit_acc;

MODEL static void visit_fn(void *obj, void *arg) {
    visit_acc *a = arg;
    CHECK(a->n <= POOL_LIVE_MAX, "visit saw more objects than are live");
    a->seen[a->n++] = obj;
}

MODEL static int cmp_ptr(const void *a, const void *b) {
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return x < y ? -1 : x > y;
}

static void op_pool_visit(src *s) {
    mpool *m = pool_slot(s);
    if (!m) return;
    static visit_acc acc;
    static void *model[POOL_LIVE_MAX];
    acc.n = 0;
    pk_pool_visit(m->pool, visit_fn, &acc);
    CHECK(acc.n == m->nlive, "pool %s: visit saw %zu objects, %zu live", m->name, acc.n, m->nlive);
    for (size_t i = 0; i < m->nlive; i++) model[i] = m->live[i].p;
    qsort(acc.seen, acc.n, sizeof(void *), cmp_ptr);
    qsort(model, m->nlive, sizeof(void *), cmp_ptr);
    for (size_t i = 0; i < acc.n; i++)
        CHECK(acc.seen[i] == model[i], "pool %s: visit saw %p, not a live object", m->name,
              acc.seen[i]);
    pool_check_stats(m);
}

/* ------------------------------------------------------------------------
 * Arenas
 * ---------------------------------------------------------------------- */

#define NARENAS 2
#define ARENA_BLOCKS 96
#define ARENA_MARKS 12

typedef struct ablock {
    unsigned char *p;
    size_t size;
    uint64_t key;
} ablock;

typedef struct marena {
    pk_arena *arena;
    size_t nblocks, nmarks;
    ablock blocks[ARENA_BLOCKS];
    struct {
        pk_arena_mark mark;
        size_t nblocks;
    } marks[ARENA_MARKS];
} marena;

static marena arenas[NARENAS];

static const size_t kArenaSizes[16] = {0, 1, 3, 8, 16, 24, 100, 255, 1000, 4095, 4096, 5000,
                                       20000, 65536, 70000, 200000};
static const size_t kArenaAligns[16] = {0, 0, 0, 1, 2, 4, 8, 16, 32, 64, 128, 4096, 16384,
                                        3, 48, (size_t)1 << 20};
static const size_t kChunks[4] = {0, 256, 4096, 20000};

MODEL static void arena_check(marena *a) {
    for (size_t i = 0; i < a->nblocks; i++) {
        ablock *b = &a->blocks[i];
        size_t bad = intact(b->p, b->size, b->key);
        CHECK(bad == b->size, "arena block %p (%zu bytes) changed at byte %zu", (void *)b->p,
              b->size, bad);
    }
}

static marena *arena_slot(src *s) {
    marena *a = &arenas[byte(s) % NARENAS];
    return a->arena ? a : NULL;
}

static void op_arena_create(src *s) {
    marena *a = &arenas[byte(s) % NARENAS];
    size_t chunk = kChunks[byte(s) % 4];
    if (a->arena) {
        arena_check(a);
        pk_arena_destroy(a->arena);
    }
    a->nblocks = a->nmarks = 0;
    errno = 0;
    a->arena = pk_arena_create(chunk);
    if (!a->arena) check_oom("pk_arena_create");
}

MODEL static void arena_took(marena *a, unsigned char *p, size_t size) {
    uint64_t key = new_key();
    fill(p, size, key);
    a->blocks[a->nblocks].p = p;
    a->blocks[a->nblocks].size = size;
    a->blocks[a->nblocks].key = key;
    a->nblocks++;
}

static void op_arena_alloc(src *s) {
    marena *a = arena_slot(s);
    uint8_t b = byte(s);
    size_t size = kArenaSizes[b % 16], align = kArenaAligns[b >> 4];
    if (!a || a->nblocks == ARENA_BLOCKS) return;
    bool bad_align = align && (align & (align - 1));
    errno = 0;
    unsigned char *p = pk_arena_alloc(a->arena, size, align);
    if (bad_align) {
        CHECK(!p && errno == EINVAL, "arena alloc with align %zu gave %p, errno %d", align,
              (void *)p, errno);
        return;
    }
    if (!p) {
        check_oom("pk_arena_alloc");
        return;
    }
    size_t want = align ? align : _Alignof(max_align_t);
    CHECK(((uintptr_t)p & (want - 1)) == 0, "arena block %p not aligned to %zu", (void *)p, want);
    CHECK(pk_pool_owner(p) == NULL, "pk_pool_owner of arena block %p is a pool", (void *)p);
    arena_took(a, p, size ? size : 1);
}

static void op_arena_strdup(src *s) {
    marena *a = arena_slot(s);
    size_t len = byte(s);
    uint8_t seed = byte(s);
    if (!a || a->nblocks == ARENA_BLOCKS) return;
    char str[256];
    for (size_t i = 0; i < len; i++) str[i] = (char)('a' + (seed + i * 7) % 26);
    str[len] = 0;
    errno = 0;
    char *p = pk_arena_strdup(a->arena, str);
    if (!p) {
        check_oom("pk_arena_strdup");
        return;
    }
    CHECK(strcmp(p, str) == 0, "pk_arena_strdup copied '%s' as '%s'", str, p);
    arena_took(a, (unsigned char *)p, len + 1);
}

static void op_arena_save(src *s) {
    marena *a = arena_slot(s);
    if (!a || a->nmarks == ARENA_MARKS) return;
    a->marks[a->nmarks].mark = pk_arena_save(a->arena);
    a->marks[a->nmarks].nblocks = a->nblocks;
    a->nmarks++;
}

static void op_arena_rewind(src *s) {
    marena *a = arena_slot(s);
    unsigned k = byte(s);
    if (!a || !a->nmarks) return;
    k %= a->nmarks;
    arena_check(a);
    pk_arena_rewind(a->arena, a->marks[k].mark);
    a->nblocks = a->marks[k].nblocks;
    a->nmarks = k + 1; /* later marks lie past the arena's position now */
    arena_check(a);
}

static void op_arena_reset(src *s) {
    marena *a = arena_slot(s);
    if (!a) return;
    arena_check(a);
    pk_arena_reset(a->arena);
    a->nblocks = a->nmarks = 0;
}

/* ------------------------------------------------------------------------
 * Objects and autorelease pools
 *
 * The model counts, per object, the references the program holds (owned),
 * those waiting in autorelease pools (pending) and those held by another
 * object's `child` field (held). Objects of classes with a dealloc carry
 * their handle in their fields, so the dealloc can tell the model. After
 * each operation the objects it touched are checked: deallocated exactly
 * when the model's count reaches zero, else pk_refcount equals it.
 * ---------------------------------------------------------------------- */

#define MAX_OBJS 192
#define MAX_ENTRIES 512
#define MAX_SCOPES 12
#define MAX_SCRATCH 64
#define OBJ_MAGIC 0x4f424a5f465a5a21ull
#define DEAD_MAGIC 0x444541445f465a5aull

typedef struct fields { /* the first bytes of every object of a class with a dealloc */
    uint64_t magic;
    uint32_t handle, gen;
    void *child; /* an object this one holds a reference to */
} fields;

static void node_dealloc(void *obj);
static void giver_dealloc(void *obj);

static const pk_class kClasses[8] = {
    {"Empty", 0, NULL},           {"Pair", 16, NULL},            {"Node", 24, node_dealloc},
    {"Giver", 40, giver_dealloc}, {"Big", 1000, node_dealloc},   {"Bigger", 5000, node_dealloc},
    {"Pair2", 100, NULL},         {"Huge", 70000, node_dealloc}, /* Huge: from the heap */
};

typedef struct mobj {
    unsigned char *p;
    const pk_class *cls;
    uint32_t owned, pending, held, gen;
    int child; /* handle this one holds, or -1 */
    bool alive, dealloc_seen, dirty;
} mobj;

static mobj objs[MAX_OBJS];
static int dirty_list[MAX_OBJS];
static int ndirty;

enum { ENT_OBJ, ENT_DEFER };
typedef struct entry {
    int kind, id; /* handle, or deferred call id */
} entry;
static entry entries[MAX_ENTRIES];
static int nentries;

static struct {
    pk_autorelease_pool token;
    int start; /* entries below belong to outer pools */
} scopes[MAX_SCOPES];
static int nscopes;
static bool g_draining; /* inside pk_autorelease_pop */

typedef struct sblock {
    unsigned char *p;
    size_t size;
    uint64_t key;
    int level;
} sblock;
static sblock scratch[MAX_SCRATCH];
static int nscratch;

static int defer_log[MAX_ENTRIES];
static int ndefer_log;
static int next_defer_id;

MODEL static uint32_t total(const mobj *m) { return m->owned + m->pending + m->held; }
MODEL static bool has_fields(const pk_class *c) { return c->dealloc != NULL; }

MODEL static void mark_dirty(int h) {
    if (objs[h].dirty) return;
    objs[h].dirty = true;
    dirty_list[ndirty++] = h;
}

/* The model's view of each touched object against the library's. */
MODEL static void sweep(void) {
    for (int i = 0; i < ndirty; i++) {
        int h = dirty_list[i];
        mobj *m = &objs[h];
        m->dirty = false;
        if (!m->alive) continue;
        uint32_t t = total(m);
        if (has_fields(m->cls)) {
            CHECK((t == 0) == m->dealloc_seen, "object %p (%s): model count %u, dealloc %s",
                  (void *)m->p, m->cls->name, t, m->dealloc_seen ? "ran" : "did not run");
        }
        if (t == 0) {
            m->alive = false;
            m->gen++;
            continue;
        }
        CHECK(pk_refcount(m->p) == t, "object %p (%s): refcount %zu, model %u", (void *)m->p,
              m->cls->name, pk_refcount(m->p), t);
        CHECK(pk_class_of(m->p) == m->cls, "object %p: pk_class_of is not %s", (void *)m->p,
              m->cls->name);
    }
    ndirty = 0;
}

/* The dealloc hands what the object held back: released, or (a Giver in
 * a pool) autoreleased. */
static void dealloc_common(void *obj, bool give) {
    fields *f = obj;
    CHECK(f->magic == OBJ_MAGIC, "dealloc of %p: not a live object of ours", obj);
    CHECK(f->handle < MAX_OBJS, "dealloc of %p: bad handle", obj);
    mobj *m = &objs[f->handle];
    CHECK(m->alive && m->p == obj && m->gen == f->gen && !m->dealloc_seen,
          "dealloc of %p (%s) the model does not know", obj, m->cls ? m->cls->name : "?");
    /* During a pop the model counts the pool's entries as released already. */
    CHECK(total(m) == 0, "dealloc of %p (%s) while the model counts %u references", obj,
          m->cls->name, total(m));
    CHECK(pk_class_of(obj) == m->cls, "pk_class_of in the dealloc of %p", obj);
    m->dealloc_seen = true;
    mark_dirty((int)f->handle);
    f->magic = DEAD_MAGIC;
    void *child = f->child;
    if (!child) return;
    int c = m->child;
    CHECK(c >= 0 && objs[c].p == child && objs[c].alive && objs[c].held > 0,
          "dealloc of %p: its child %p is unknown", obj, child);
    f->child = NULL;
    m->child = -1;
    objs[c].held--;
    mark_dirty(c);
    if (give && nscopes > 0 && (g_draining || nentries < MAX_ENTRIES)) {
        if (!g_draining) {
            objs[c].pending++;
            entries[nentries].kind = ENT_OBJ;
            entries[nentries].id = c;
            nentries++;
        }
        warn_reset();
        g_expect_warning++;
        void *r = pk_autorelease(child);
        g_expect_warning--;
        CHECK(r == child, "pk_autorelease returned %p, not %p", r, child);
        if (g_warn.count) { /* no room for the entry: the object was not taken */
            CHECK(g_fault && strcmp(g_warn.what, "out of memory") == 0 && g_warn.ptr == child,
                  "pk_autorelease in a dealloc warned: %s", g_warn.message);
            if (!g_draining) {
                objs[c].pending--;
                nentries--;
            }
            pk_release(child);
        }
        return;
    }
    pk_release(child);
}

static void node_dealloc(void *obj) { dealloc_common(obj, false); }
static void giver_dealloc(void *obj) { dealloc_common(obj, true); }

MODEL static int free_handle(void) {
    for (int h = 0; h < MAX_OBJS; h++)
        if (!objs[h].alive) return h;
    return -1;
}

MODEL static int live_handle(src *s, bool need_owned) {
    unsigned start = byte(s);
    for (int k = 0; k < MAX_OBJS; k++) {
        int h = (int)((start + (unsigned)k) % MAX_OBJS);
        if (objs[h].alive && (!need_owned || objs[h].owned > 0)) return h;
    }
    return -1;
}

MODEL static void *object_memory(const mobj *m) { return m->p - PK_OBJECT_HEADER_SIZE; }

/* A new object of class ci; its handle, or -1 when none is free or pk_new
 * failed. */
MODEL static int object_new(int ci) {
    int h = free_handle();
    if (h < 0) return -1;
    const pk_class *cls = &kClasses[ci];
    errno = 0;
    unsigned char *p = pk_new(cls);
    if (!p) {
        check_oom("pk_new");
        return -1;
    }
    CHECK(((uintptr_t)p & 15) == 0, "pk_new(%s) gave %p, not 16-aligned", cls->name, (void *)p);
    size_t n = cls->size <= 4096 ? cls->size : 4096;
    CHECK(all_bytes(p, n, 0) && all_bytes(p + cls->size - (cls->size < 256 ? cls->size : 256),
                                          cls->size < 256 ? cls->size : 256, 0),
          "pk_new(%s) gave %p with fields not zeroed", cls->name, (void *)p);
    CHECK(pk_refcount(p) == 1, "pk_new(%s): refcount %zu", cls->name, pk_refcount(p));
    CHECK(pk_class_of(p) == cls, "pk_new(%s): pk_class_of is wrong", cls->name);
    mobj *m = &objs[h];
    m->p = p;
    m->cls = cls;
    m->owned = 1;
    m->pending = m->held = 0;
    m->child = -1;
    m->alive = true;
    m->dealloc_seen = false;
    if (has_fields(cls)) {
        fields *f = (fields *)p;
        f->magic = OBJ_MAGIC;
        f->handle = (uint32_t)h;
        f->gen = m->gen;
        f->child = NULL;
    }
    return h;
}

static void op_new(src *s) { object_new(byte(s) % 8); }

static void op_retain(src *s) {
    int h = live_handle(s, false);
    if (h < 0 || objs[h].owned > 1000) return;
    void *r = pk_retain(objs[h].p);
    CHECK(r == objs[h].p, "pk_retain returned %p, not %p", r, (void *)objs[h].p);
    objs[h].owned++;
    mark_dirty(h);
    sweep();
}

static void release_owned(int h) {
    objs[h].owned--;
    mark_dirty(h);
    pk_release(objs[h].p);
    sweep();
}

static void op_release(src *s) {
    int h = live_handle(s, true);
    if (h >= 0) release_owned(h);
}

static void op_autorelease(src *s) {
    int h = live_handle(s, true);
    if (h < 0 || nscopes == 0 || nentries >= MAX_ENTRIES) return;
    mobj *m = &objs[h];
    m->owned--;
    m->pending++;
    entries[nentries].kind = ENT_OBJ;
    entries[nentries].id = h;
    nentries++;
    warn_reset();
    g_expect_warning++;
    void *r = pk_autorelease(m->p);
    g_expect_warning--;
    CHECK(r == m->p, "pk_autorelease returned %p, not %p", r, (void *)m->p);
    if (g_warn.count) { /* the stack could not grow: the reference stays ours */
        CHECK(g_fault && strcmp(g_warn.what, "out of memory") == 0 && g_warn.ptr == m->p,
              "pk_autorelease warned: %s", g_warn.message);
        m->pending--;
        m->owned++;
        nentries--;
    }
    mark_dirty(h);
    sweep();
}

/* h takes a reference to g in its fields (no cycles). */
MODEL static bool object_link(int h, int g) {
    if (h == g || !objs[h].alive || !objs[g].alive || !has_fields(objs[h].cls) ||
        objs[h].child >= 0)
        return false;
    for (int c = g, steps = 0; c >= 0 && steps <= MAX_OBJS; c = objs[c].child, steps++)
        if (c == h) return false;
    void *r = pk_retain(objs[g].p);
    CHECK(r == objs[g].p, "pk_retain returned %p", r);
    objs[g].held++;
    objs[h].child = g;
    ((fields *)objs[h].p)->child = objs[g].p;
    mark_dirty(g);
    return true;
}

static void op_link(src *s) {
    int h = live_handle(s, false), g = live_handle(s, false);
    if (h >= 0 && g >= 0) object_link(h, g);
    sweep();
}

/* A chain of n objects, each holding the next, of which the program holds
 * only the head: releasing it runs n deallocs, deeper than they nest. */
static void op_chain(src *s) {
    int n = 2 + byte(s) % 90;
    uint8_t kinds = byte(s);
    int prev = -1;
    for (int i = 0; i < n; i++) {
        int h = object_new((kinds >> (i % 8)) & 1 ? 3 : 2); /* Giver or Node */
        if (h < 0) break;
        if (prev >= 0) {
            object_link(h, prev);
            release_owned(prev); /* now held only by h */
        }
        prev = h;
    }
    sweep();
}

static void op_push(src *s) {
    (void)s;
    if (nscopes == MAX_SCOPES) return;
    errno = 0;
    pk_autorelease_pool t = pk_autorelease_push();
    if (t.token == PK_AUTORELEASE_NONE) {
        check_oom("pk_autorelease_push");
        pk_autorelease_pop(t); /* a no-op */
        return;
    }
    scopes[nscopes].token = t;
    scopes[nscopes].start = nentries;
    nscopes++;
}

MODEL static void check_ar_stats(void) {
    pk_autorelease_stats st;
    pk_autorelease_stats_get(&st);
    CHECK(st.pending == (size_t)nentries, "autorelease: %zu pending, model %d", st.pending,
          nentries);
    CHECK(st.depth == (size_t)nscopes, "autorelease: depth %zu, model %d", st.depth, nscopes);
    CHECK(st.implicit == 0, "autorelease: %zu entries in the implicit pool", st.implicit);
    CHECK(st.high_water >= st.pending, "autorelease: high water %zu < pending %zu",
          st.high_water, st.pending);
}

/* Pops scope k and every scope above it. */
static void scope_pop(int k) {
    int floor = scopes[k].start;
    /* The pool's entries count as released from now on: the drain may
     * dealloc them in any order it likes. */
    for (int i = floor; i < nentries; i++)
        if (entries[i].kind == ENT_OBJ) {
            objs[entries[i].id].pending--;
            mark_dirty(entries[i].id);
        }
    for (int i = 0; i < nscratch; i++) {
        sblock *b = &scratch[i];
        size_t bad = intact(b->p, b->size, b->key);
        CHECK(bad == b->size, "scratch block %p changed at byte %zu", (void *)b->p, bad);
    }
    ndefer_log = 0;
    g_draining = true;
    pk_autorelease_pop(scopes[k].token);
    g_draining = false;
    /* Deferred calls ran newest first. */
    int expect = 0;
    for (int i = nentries - 1; i >= floor; i--) {
        if (entries[i].kind != ENT_DEFER) continue;
        CHECK(expect < ndefer_log && defer_log[expect] == entries[i].id,
              "pop: deferred call %d ran as number %d (or not at all); %d ran", entries[i].id,
              expect, ndefer_log);
        expect++;
    }
    CHECK(expect == ndefer_log, "pop: %d deferred calls ran, %d expected", ndefer_log, expect);
    nentries = floor;
    nscopes = k;
    int keep = 0;
    for (int i = 0; i < nscratch; i++)
        if (scratch[i].level < k) scratch[keep++] = scratch[i];
    nscratch = keep;
    sweep();
    check_ar_stats();
}

static void op_pop(src *s) {
    unsigned k = byte(s);
    if (nscopes) scope_pop((int)(k % (unsigned)nscopes));
}

typedef struct defer_rec {
    int id;
    uint64_t pad[3];
} defer_rec;

static void deferred_call(void *arg) {
    uintptr_t v = (uintptr_t)arg;
    int id;
    if (v & 1) {
        id = (int)(v >> 1);
    } else {
        defer_rec *r = arg;
        id = r->id;
        free(r);
    }
    CHECK(g_draining, "deferred call %d ran outside a pop", id);
    CHECK(ndefer_log < MAX_ENTRIES, "too many deferred calls");
    defer_log[ndefer_log++] = id;
}

static void op_defer(src *s) {
    uint8_t b = byte(s);
    if (b == 0xFF) {
        errno = 0;
        CHECK(pk_defer(&errno, NULL) == NULL && errno == EINVAL, "pk_defer with no function");
        return;
    }
    if (nscopes == 0 || nentries >= MAX_ENTRIES) return;
    int id = next_defer_id++ & 0x3FFFFFFF;
    void *arg;
    if (b & 1) {
        defer_rec *r = malloc(sizeof *r);
        if (!r) return;
        r->id = id;
        arg = r;
    } else {
        arg = (void *)(((uintptr_t)id << 1) | 1);
    }
    errno = 0;
    void *got = pk_defer(arg, deferred_call);
    if (!got) {
        check_oom("pk_defer");
        if (b & 1) free(arg);
        return;
    }
    CHECK(got == arg, "pk_defer returned %p, not %p", got, arg);
    entries[nentries].kind = ENT_DEFER;
    entries[nentries].id = id;
    nentries++;
}

static const size_t kScratchSizes[8] = {0, 1, 7, 16, 100, 1000, 5000, 70000};

static void op_scratch(src *s) {
    size_t size = kScratchSizes[byte(s) % 8];
    if (nscopes == 0 || nscratch == MAX_SCRATCH) return;
    errno = 0;
    unsigned char *p = pk_scratch(size);
    if (!p) {
        check_oom("pk_scratch");
        return;
    }
    CHECK(((uintptr_t)p & (_Alignof(max_align_t) - 1)) == 0, "pk_scratch gave %p, misaligned",
          (void *)p);
    CHECK(pk_pool_owner(p) == NULL, "pk_pool_owner of scratch %p is a pool", (void *)p);
    sblock *b = &scratch[nscratch++];
    b->p = p;
    b->size = size;
    b->key = new_key();
    b->level = nscopes - 1;
    fill(p, size, b->key);
}

static void op_ar_stats(src *s) {
    (void)s;
    check_ar_stats();
}

/* ------------------------------------------------------------------------
 * Cross-cutting checks
 * ---------------------------------------------------------------------- */

static void op_owner(src *s) {
    uint8_t kind = byte(s) % 8;
    unsigned pick = u16(s);
    switch (kind) {
    case 0: case 1: { /* a live pool object, and a pointer inside it */
        mpool *m = &pools[pick % NPOOLS];
        if (!m->pool || !m->nlive) return;
        unsigned char *o = m->live[(pick >> 3) % m->nlive].p;
        if (kind == 0)
            CHECK(pk_pool_owner(o) == m->pool, "pk_pool_owner(%p) is not pool %s", (void *)o,
                  m->name);
        else
            CHECK(pk_pool_owner(o + 1) == NULL, "pk_pool_owner of interior pointer %p",
                  (void *)(o + 1));
        return;
    }
    case 2: {
        int local = 0;
        CHECK(pk_pool_owner(&local) == NULL, "pk_pool_owner of a stack address");
        return;
    }
    case 3: {
        void *b = calloc(1, 1 + pick % 200);
        CHECK(pk_pool_owner(b) == NULL, "pk_pool_owner of malloc block %p", b);
        free(b);
        return;
    }
    case 4: { /* an object: its memory is a slot of its class's pool */
        int h = live_handle(s, false);
        if (h < 0) return;
        mobj *m = &objs[h];
        pk_pool *cp = pk_class_pool(m->cls);
        void *mem = object_memory(m);
        if (m->cls->size) /* (with no fields, the pointer is where the next slot starts) */
            CHECK(pk_pool_owner(m->p) == NULL, "pk_pool_owner of object %p (not a slot start)",
                  (void *)m->p);
        CHECK(pk_pool_owner(mem) == cp, "pk_pool_owner of object memory %p is not its class "
              "pool", mem);
        return;
    }
    case 5: { /* garbage: any answer, but no crash */
        uintptr_t v = 0;
        for (int i = 0; i < 8; i++) v = v << 8 | byte(s);
        (void)pk_pool_owner((const void *)v);
        (void)pk_pool_owner((const void *)(v & 0x00007FFFFFFFFFF0ull));
        return;
    }
    case 6:
        CHECK(pk_pool_owner(NULL) == NULL, "pk_pool_owner(NULL)");
        return;
    default: {
        marena *a = &arenas[pick % NARENAS];
        if (a->arena && a->nblocks)
            CHECK(pk_pool_owner(a->blocks[(pick >> 1) % a->nblocks].p) == NULL,
                  "pk_pool_owner of an arena block");
        return;
    }
    }
}

typedef struct range {
    uintptr_t lo, hi;
} range;

MODEL static int cmp_range(const void *a, const void *b) {
    const range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Every live block's contents, and no two live blocks overlapping. */
MODEL static void check_everything(void) {
    static range r[NPOOLS * POOL_LIVE_MAX + NARENAS * ARENA_BLOCKS + MAX_SCRATCH + MAX_OBJS];
    size_t n = 0;
    for (int i = 0; i < NPOOLS; i++) {
        mpool *m = &pools[i];
        if (!m->pool) continue;
        for (size_t k = 0; k < m->nlive; k++) {
            size_t bad = intact(m->live[k].p, m->size, m->live[k].key);
            CHECK(bad == m->size, "pool %s: object %p changed at byte %zu", m->name,
                  (void *)m->live[k].p, bad);
            r[n].lo = (uintptr_t)m->live[k].p;
            r[n++].hi = (uintptr_t)m->live[k].p + m->size;
        }
        pool_check_stats(m);
    }
    for (int i = 0; i < NARENAS; i++) {
        marena *a = &arenas[i];
        if (!a->arena) continue;
        arena_check(a);
        for (size_t k = 0; k < a->nblocks; k++) {
            r[n].lo = (uintptr_t)a->blocks[k].p;
            r[n++].hi = (uintptr_t)a->blocks[k].p + a->blocks[k].size;
        }
    }
    for (int i = 0; i < nscratch; i++) {
        sblock *b = &scratch[i];
        size_t bad = intact(b->p, b->size, b->key);
        CHECK(bad == b->size, "scratch block %p changed at byte %zu", (void *)b->p, bad);
        r[n].lo = (uintptr_t)b->p;
        r[n++].hi = (uintptr_t)b->p + (b->size ? b->size : 1);
    }
    for (int h = 0; h < MAX_OBJS; h++) {
        mobj *m = &objs[h];
        if (!m->alive) continue;
        if (has_fields(m->cls)) {
            fields *f = (fields *)m->p;
            CHECK(f->magic == OBJ_MAGIC && f->handle == (uint32_t)h,
                  "object %p (%s): fields changed", (void *)m->p, m->cls->name);
        }
        r[n].lo = (uintptr_t)object_memory(m);
        r[n++].hi = (uintptr_t)m->p + m->cls->size;
    }
    qsort(r, n, sizeof r[0], cmp_range);
    for (size_t i = 1; i < n; i++)
        CHECK(r[i - 1].hi <= r[i].lo, "live blocks [%#lx, %#lx) and [%#lx, %#lx) overlap",
              (unsigned long)r[i - 1].lo, (unsigned long)r[i - 1].hi, (unsigned long)r[i].lo,
              (unsigned long)r[i].hi);
}

static void op_check(src *s) {
    (void)s;
    check_everything();
}

static void op_fault(src *s) {
    uint8_t b = byte(s);
    if (b & 0x80) {
        pk_fault_fail_after(-1);
        g_fault = false;
    } else {
        pk_fault_fail_after(b % 24);
        g_fault = true;
    }
}

/* ------------------------------------------------------------------------
 * The interpreter
 * ---------------------------------------------------------------------- */

static void op_burst(src *s);

typedef struct op_def {
    void (*fn)(src *);
    const char *name;
} op_def;
#define OP(name) {op_##name, #name}
static const op_def kOps[64] = {
    /* pools: the common calls weigh most */
    OP(pool_alloc), OP(pool_alloc), OP(pool_alloc), OP(pool_alloc), OP(pool_alloc), OP(pool_alloc),
    OP(pool_free), OP(pool_free), OP(pool_free), OP(pool_free), OP(pool_free), OP(pool_free),
    OP(pool_alloc_bulk), OP(pool_alloc_bulk), OP(pool_free_bulk), OP(pool_free_bulk),
    OP(pool_create), OP(pool_create), OP(pool_reserve), OP(pool_trim), OP(pool_stats),
    OP(pool_visit), OP(pool_destroy), OP(owner), OP(owner),
    /* arenas */
    OP(arena_create), OP(arena_alloc), OP(arena_alloc), OP(arena_alloc), OP(arena_strdup),
    OP(arena_save), OP(arena_save), OP(arena_rewind), OP(arena_rewind), OP(arena_reset),
    /* objects and autorelease pools */
    OP(new), OP(new), OP(new), OP(new), OP(retain), OP(retain), OP(release), OP(release),
    OP(release), OP(autorelease), OP(autorelease), OP(autorelease), OP(link), OP(chain), OP(push),
    OP(push),
    OP(pop), OP(pop), OP(defer), OP(defer), OP(scratch), OP(scratch), OP(ar_stats),
    /* everything at once, faults, bursts */
    OP(check), OP(fault), OP(burst), OP(burst), OP(burst), OP(burst),
};
#undef OP

static bool g_trace; /* PK_FUZZ_TRACE=1: each operation's name on stderr */

static void run_op(src *s) {
    const op_def *op = &kOps[byte(s) % 64];
    if (g_trace) fprintf(stderr, "%s%s\n", s->burst ? "  " : "", op->name);
    op->fn(s);
    g_ops++;
}

/* Up to BURST_MAX operations from a generator seeded by the input. */
#define BURST_MAX 255
static void op_burst(src *s) {
    if (s->burst) return; /* bursts do not nest */
    uint64_t seed = (uint64_t)u16(s) << 16 | u16(s);
    unsigned n = byte(s) % (BURST_MAX + 1);
    src b = {NULL, 0, mix64(seed ^ 0xB0B5EEDull), n};
    while (b.burst) {
        run_op(&b);
        b.burst--;
    }
}

/* Everything the input left is given back, and must all come back. */
static void cleanup(void) {
    pk_fault_fail_after(-1);
    g_fault = false;
    if (nscopes) scope_pop(0);
    for (int h = 0; h < MAX_OBJS; h++)
        while (objs[h].alive && objs[h].owned) release_owned(h);
    for (int h = 0; h < MAX_OBJS; h++)
        CHECK(!objs[h].alive, "object %p (%s) still alive after every reference was dropped "
              "(model count %u)", (void *)objs[h].p, objs[h].cls->name, total(&objs[h]));
    check_ar_stats();
    for (int i = 0; i < NARENAS; i++) {
        if (!arenas[i].arena) continue;
        arena_check(&arenas[i]);
        pk_arena_destroy(arenas[i].arena);
        arenas[i].arena = NULL;
        arenas[i].nblocks = arenas[i].nmarks = 0;
    }
    for (int i = 0; i < NPOOLS; i++) {
        mpool *m = &pools[i];
        if (!m->pool) continue;
        while (m->nlive) pk_pool_free(m->pool, pool_giving(m, m->nlive - 1));
        pool_check_stats(m);
        pk_pool_trim(m->pool);
        pk_pool_stats st;
        pk_pool_stats_get(m->pool, &st);
        CHECK(st.slabs == 0 && st.bytes_reserved == 0, "pool %s: %zu slabs after the last trim",
              m->name, st.slabs);
        pool_destroy_slot(m);
    }
    /* Objects of every class went back to their pools: the front end's
     * class pools, which hold nothing else here. Hardened mode keeps freed
     * blocks in the thread's quarantine, which their pools count as live. */
    const char *hard = getenv("POOLKIT_HARDENED");
    bool hardened = hard && *hard && strchr("1tTyYoO", *hard) && strcmp(hard, "off") != 0 &&
                    strcmp(hard, "OFF") != 0;
    for (int ci = 0; ci < 8 && !hardened; ci++) {
        pk_pool *cp = pk_class_pool(&kClasses[ci]);
        if (!cp) continue;
        pk_pool_stats st;
        pk_pool_stats_get(cp, &st);
        CHECK(st.live == 0, "class %s: its pool still counts %zu live objects", kClasses[ci].name,
              st.live);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    src s = {data, size, 0, 0};
    g_inputs++;
    next_defer_id = 0;
    while (s.n) run_op(&s);
    cleanup();
    return 0;
}

static void report_totals(void) {
    fprintf(stderr, "fuzz_api: %llu operations in %llu inputs\n", (unsigned long long)g_ops,
            (unsigned long long)g_inputs);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    pk_set_error_handler(handler, NULL);
    atexit(report_totals);
    const char *trace = getenv("PK_FUZZ_TRACE");
    g_trace = trace && *trace && strcmp(trace, "0") != 0;
    const char *preload = getenv("LD_PRELOAD");
    g_under_valgrind = preload && strstr(preload, "vgpreload");
    /* Register this thread and make its autorelease stack and every class
     * pool now, so that no input's first use of them needs a page while
     * faults are armed inside a pk_pool_reserve promise. */
    pk_pool_config c;
    memset(&c, 0, sizeof c);
    c.size = 64;
    pk_pool *p = pk_pool_create(&c);
    if (p) {
        void *o = pk_pool_alloc(p);
        if (o) pk_pool_free(p, o);
        pk_pool_destroy(p);
    }
    pk_autorelease_pool t = pk_autorelease_push();
    pk_autorelease_pop(t);
    for (int ci = 0; ci < 8; ci++) (void)pk_class_pool(&kClasses[ci]);
    return 0;
}

#ifdef PK_FUZZ_STANDALONE
#include <dirent.h>
#include <sys/stat.h>

/* Runs one input file; false if it cannot be read. */
static bool run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return false;
    }
    static uint8_t buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (g_trace) fprintf(stderr, "fuzz_api: input %s\n", path);
    LLVMFuzzerTestOneInput(buf, n);
    return true;
}

/* Runs every input file of a directory (not its *.md files); returns how
 * many, or -1 if one cannot be read. */
static long run_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return -1;
    }
    long n = 0;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || (len > 3 && strcmp(e->d_name + len - 3, ".md") == 0)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!run_file(path)) {
            closedir(d);
            return -1;
        }
        n++;
    }
    closedir(d);
    return n;
}

/* Runs the files and directories named, or $PK_FUZZ_RUNS random inputs. */
int main(int argc, char **argv) {
    LLVMFuzzerInitialize(&argc, &argv);
    if (argc > 1) {
        long inputs = 0;
        for (int i = 1; i < argc; i++) {
            struct stat st;
            long n = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? run_dir(argv[i])
                                                                     : (run_file(argv[i]) ? 1 : -1);
            if (n < 0) return 2;
            inputs += n;
        }
        /* a replay of nothing would pass and prove nothing */
        if (inputs == 0) {
            fprintf(stderr, "fuzz_api: no input files in the paths given\n");
            return 2;
        }
        fprintf(stderr, "fuzz_api: replayed %ld inputs, no finding\n", inputs);
        return 0;
    }
    const char *v = getenv("PK_FUZZ_RUNS");
    long runs = v ? atol(v) : 1000;
    uint64_t x = 12345;
    static uint8_t buf[4096];
    for (long r = 0; r < runs; r++) {
        size_t n = (size_t)(mix64(x++) % sizeof buf);
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)(mix64(x++) >> 24);
        LLVMFuzzerTestOneInput(buf, n);
    }
    return 0;
}
#endif
