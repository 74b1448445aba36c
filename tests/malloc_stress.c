/* libpoolkit-malloc's own stress test: a program that knows nothing of
 * poolkit and uses the whole malloc family as programs do, run with the
 * library preloaded (LD_PRELOAD) and linked (-lpoolkit-malloc), in every
 * mode (tests/CMakeLists.txt: malloc.stress.*). It checks first that the
 * malloc it calls is poolkit's (pk_alloc is in the process and
 * malloc_usable_size answers with poolkit's classes), then:
 *   - threads: eight threads allocate, fill, check and free blocks of every
 *     size, and hand half of them to the next thread, which frees them;
 *   - realloc chains: blocks grown and shrunk through every class and past
 *     the last, their contents kept;
 *   - aligned sizes: posix_memalign, aligned_alloc, memalign, valloc and
 *     pvalloc at every power of two up to 64 KiB; their error returns;
 *   - calloc zeroes reused memory, and refuses an overflowing product, as
 *     reallocarray does;
 *   - fork: children fork while the other threads allocate, and allocate,
 *     free and start threads of their own before they exit;
 *   - malloc_trim: what the thread freed goes back to the system at once.
 * Exit status 0 when every check passes; a failed check says which. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(cond, ...)                                                                            \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "malloc_stress: FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);          \
            fprintf(stderr, __VA_ARGS__);                                                           \
            fprintf(stderr, "\n");                                                                  \
            _exit(1);                                                                               \
        }                                                                                           \
    } while (0)

/* The calls whose failure is checked, through pointers the compiler cannot
 * see through: clang drops an unused calloc as successful, and assumes the
 * allocation functions leave errno alone, which on failure they do not. */
static void *(*volatile calloc_p)(size_t, size_t) = calloc;
static void *(*volatile reallocarray_p)(void *, size_t, size_t) = reallocarray;

static uint64_t next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static size_t draw(uint64_t *s) {
    uint64_t r = next(s) % 1000;
    if (r < 700) return (size_t)(next(s) % 200);
    if (r < 998) return (size_t)(next(s) % 5000);
    return (size_t)(next(s) % 400000);
}

static void fill(unsigned char *p, size_t n, unsigned char key) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(key + i * 7);
}

static int intact(const unsigned char *p, size_t n, unsigned char key) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(key + i * 7)) return 0;
    return 1;
}

/* ---- threads ---- */

#define THREADS 8
typedef struct block {
    unsigned char *p;
    size_t n;
    unsigned char key;
} block;

static struct mailbox {
    pthread_mutex_t lock;
    block items[4096];
    size_t n;
} boxes[THREADS];
static volatile int stop_forking_peers;
static long rounds = 30000;

static void *worker(void *arg) {
    int me = (int)(intptr_t)arg;
    uint64_t s = (uint64_t)me * 1000 + 1;
    block mine[256];
    size_t held = 0;
    for (long r = 0; r < rounds; r++) {
        if (held < 256 && (held < 64 || next(&s) % 2)) {
            block b = {NULL, draw(&s), (unsigned char)next(&s)};
            b.p = malloc(b.n);
            CHECK(b.p != NULL, "malloc(%zu)", b.n);
            CHECK(malloc_usable_size(b.p) >= b.n, "usable size of %zu", b.n);
            fill(b.p, b.n, b.key);
            mine[held++] = b;
            continue;
        }
        size_t i = (size_t)(next(&s) % held);
        block b = mine[i];
        mine[i] = mine[--held];
        CHECK(intact(b.p, b.n, b.key), "a block of %zu bytes changed while held", b.n);
        struct mailbox *to = &boxes[(me + 1) % THREADS];
        pthread_mutex_lock(&to->lock);
        if (next(&s) % 2 && to->n < sizeof to->items / sizeof to->items[0]) {
            to->items[to->n++] = b; /* freed by the next thread */
            b.p = NULL;
        }
        pthread_mutex_unlock(&to->lock);
        if (b.p) free(b.p);
        struct mailbox *box = &boxes[me];
        pthread_mutex_lock(&box->lock);
        for (size_t k = 0; k < box->n; k++) {
            CHECK(intact(box->items[k].p, box->items[k].n, box->items[k].key), "a block passed on changed");
            free(box->items[k].p);
        }
        box->n = 0;
        pthread_mutex_unlock(&box->lock);
    }
    for (size_t i = 0; i < held; i++) free(mine[i].p);
    return NULL;
}

static void threads(void) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_mutex_init(&boxes[i].lock, NULL);
    for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0, "pthread_create");
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        for (size_t k = 0; k < boxes[i].n; k++) free(boxes[i].items[k].p);
        boxes[i].n = 0;
    }
}

/* ---- realloc chains ---- */

static void realloc_chains(int chains) {
    uint64_t s = 77;
    for (int chain = 0; chain < chains; chain++) {
        unsigned char *p = NULL;
        size_t n = 0;
        unsigned char key = (unsigned char)chain;
        for (int step = 0; step < 60; step++) {
            size_t to = 1 + (step % 20 == 19 ? (size_t)(next(&s) % 900000) : draw(&s));
            p = realloc(p, to);
            CHECK(p != NULL, "realloc to %zu", to);
            size_t keep = n < to ? n : to;
            CHECK(intact(p, keep, key), "realloc %zu -> %zu lost the contents", n, to);
            key = (unsigned char)(key + 1);
            fill(p, to, key);
            n = to;
        }
        free(p);
    }
    volatile size_t huge = SIZE_MAX / 2; /* hidden from the compiler's size checks */
    errno = 0;
    CHECK(reallocarray_p(NULL, huge, 3) == NULL && errno == ENOMEM, "reallocarray overflow");
    void *q = reallocarray(NULL, 100, 3);
    CHECK(q && malloc_usable_size(q) >= 300, "reallocarray(NULL, 100, 3)");
    free(q);
}

/* ---- aligned sizes ---- */

static void aligned(void) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t a = sizeof(void *); a <= 65536; a *= 2) {
        for (size_t n = 0; n < 3 * a + 100; n += a / 2 + 13) {
            void *p = NULL;
            CHECK(posix_memalign(&p, a, n) == 0 && p && (uintptr_t)p % a == 0, "posix_memalign(%zu, %zu)", a, n);
            void *q = aligned_alloc(a, n);
            CHECK(q && (uintptr_t)q % a == 0, "aligned_alloc(%zu, %zu)", a, n);
            void *r = memalign(a, n);
            CHECK(r && (uintptr_t)r % a == 0, "memalign(%zu, %zu)", a, n);
            memset(p, 1, n);
            memset(q, 2, n);
            memset(r, 3, n);
            free(p);
            free(q);
            free(r);
        }
    }
    void *v = valloc(100), *pv = pvalloc(page + 1);
    CHECK(v && (uintptr_t)v % page == 0, "valloc");
    CHECK(pv && (uintptr_t)pv % page == 0 && malloc_usable_size(pv) >= 2 * page, "pvalloc");
    free(v);
    free(pv);
    void *p = (void *)1;
    volatile size_t odd = 24; /* hidden from the compiler's alignment checks */
    CHECK(posix_memalign(&p, odd, 10) == EINVAL && p == (void *)1, "posix_memalign(24): EINVAL, nothing written");
    CHECK(posix_memalign(&p, 4, 10) == EINVAL, "posix_memalign(4): EINVAL");
    void *m = memalign(odd, 10); /* glibc rounds the alignment up */
    CHECK(m && (uintptr_t)m % 32 == 0, "memalign(24)");
    free(m);
}

/* ---- calloc ---- */

static void callocs(void) {
    for (size_t n = 1; n < 300000; n = n * 3 + 1) {
        void *d[16];
        for (int i = 0; i < 16; i++) {
            d[i] = malloc(n);
            memset(d[i], 0xee, malloc_usable_size(d[i])); /* its slack too, which calloc's block may reuse */
        }
        for (int i = 0; i < 16; i++) free(d[i]);
        for (int i = 0; i < 16; i++) {
            unsigned char *z = calloc(n, 1);
            CHECK(z != NULL, "calloc(%zu)", n);
            /* the slack malloc_usable_size reports too, as glibc's */
            size_t usable = malloc_usable_size(z);
            for (size_t k = 0; k < usable; k++) CHECK(z[k] == 0, "calloc(%zu) byte %zu of %zu not zero", n, k, usable);
            d[i] = z;
        }
        for (int i = 0; i < 16; i++) free(d[i]);
    }
    volatile size_t huge = SIZE_MAX / 4; /* hidden from the compiler's size checks */
    errno = 0;
    CHECK(calloc_p(huge, 8) == NULL && errno == ENOMEM, "calloc overflow");
}

/* ---- glibc's own names of the family ---- */

void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void __libc_free(void *);

/* glibc exports the family under its own names too; a program that calls
 * them passes their blocks to free and free's to them: one allocator. */
static void libc_names(void) {
    char *a = __libc_malloc(100), *b = __libc_calloc(10, 10), *c = __libc_memalign(64, 100);
    CHECK(a && b && c && (uintptr_t)c % 64 == 0, "__libc_malloc, __libc_calloc, __libc_memalign");
    memset(a, 1, 100);
    a = __libc_realloc(a, 5000);
    CHECK(a && a[99] == 1, "__libc_realloc");
    free(a);
    __libc_free(b);
    char *d = malloc(100);
    __libc_free(d);
    free(c);
}

/* ---- malloc_trim ---- */

static size_t resident_bytes(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    CHECK(f && fscanf(f, "%ld %ld", &pages, &resident) == 2, "/proc/self/statm");
    fclose(f);
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

#define TRIM_BYTES ((size_t)48 << 20)
#define TRIM_LEFT (TRIM_BYTES / 4) /* what may stay */

/* 48 MiB of blocks of 64 B to 3 KiB and of 300 KiB, written and freed, then
 * malloc_trim: the memory is back within a quarter of it. It returns 1 when
 * it gave memory back; 0 is right only where the background purge (at a 1
 * ms delay in one mode) gave it all back first. */
static void trim(void) {
    size_t base = resident_bytes(), n = 0, total = 0;
    static void *blocks[100000];
    while (total < TRIM_BYTES && n < sizeof blocks / sizeof *blocks) {
        size_t size = n % 64 == 63 ? 300 << 10 : 64 + n % 48 * 64;
        blocks[n] = malloc(size);
        CHECK(blocks[n] != NULL, "malloc(%zu)", size);
        memset(blocks[n++], 0x5a, size);
        total += size;
    }
    for (size_t i = 0; i < n; i++) free(blocks[i]);
    size_t before = resident_bytes();
    int released = malloc_trim(0);
    size_t after = resident_bytes();
    CHECK(after <= base + TRIM_LEFT, "malloc_trim: %zu KiB resident over the start after it (%zu before it; %zu KiB "
          "freed)", (after - base) >> 10, (before - base) >> 10, total >> 10);
    CHECK(released == 1 || before <= base + TRIM_LEFT, "malloc_trim returned %d with %zu KiB to give back", released,
          (before - base) >> 10);
    printf("malloc_stress: malloc_trim: resident %zu KiB before the blocks, %zu KiB once they were freed (%zu KiB), "
           "%zu KiB after it\n", base >> 10, before >> 10, total >> 10, after >> 10);
}

/* ---- fork ---- */

static void *fork_peer(void *arg) {
    (void)arg;
    uint64_t s = 5;
    while (!stop_forking_peers) {
        void *p = malloc(draw(&s));
        free(realloc(p, draw(&s) + 1));
    }
    return NULL;
}

static void *child_thread(void *arg) {
    (void)arg;
    for (int i = 0; i < 10000; i++) free(malloc((size_t)i % 3000));
    return NULL;
}

static void forks(void) {
    pthread_t peers[3];
    for (int i = 0; i < 3; i++) pthread_create(&peers[i], NULL, fork_peer, NULL);
    for (int k = 0; k < 20; k++) {
        pid_t pid = fork();
        CHECK(pid >= 0, "fork");
        if (pid == 0) {
            alarm(60); /* a lock left held by the fork would hang here */
            realloc_chains(10);
            pthread_t t;
            if (pthread_create(&t, NULL, child_thread, NULL) != 0) _exit(2);
            pthread_join(t, NULL);
            _exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork child %d: status %d", k, status);
    }
    stop_forking_peers = 1;
    for (int i = 0; i < 3; i++) pthread_join(peers[i], NULL);
}

int main(int argc, char **argv) {
    if (argc > 1) rounds = atol(argv[1]);
    void *pk = dlsym(RTLD_DEFAULT, "pk_alloc");
    void *probe = malloc(20);
    size_t usable = malloc_usable_size(probe);
    free(probe);
    /* poolkit answers with the class (32), hardened with the size asked for */
    CHECK(pk != NULL && (usable == 32 || usable == 20),
          "malloc is not poolkit's (pk_alloc %p; malloc_usable_size(malloc(20)) = %zu, poolkit's class is 32, "
          "20 hardened): is libpoolkit-malloc preloaded or linked?",
          pk, usable);
    threads();
    realloc_chains(200);
    aligned();
    callocs();
    libc_names();
    trim();
    forks();
    printf("malloc_stress: every check passed (threads, realloc chains, aligned sizes, calloc, __libc_ names, malloc_trim, "
           "fork)\n");
    return 0;
}
