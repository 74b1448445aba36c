/* Heaps in a long run with threads that come and go: memory over time.
 * Each iteration starts two threads; each makes 20 heaps one after the
 * other (a request each: 100 to 2,000 blocks of 1 B to 32 MiB, 1% over
 * 8 KiB, a third freed one by one at random, the rest with the heap), then
 * fills a heap the iteration shares with blocks the other thread frees
 * after a barrier; the threads exit and the main thread destroys the
 * shared heap. The live set does not grow from one iteration to the next,
 * so neither should memory. Each contender runs in a process of its own;
 * time and peak RSS at checkpoints.
 *
 * Contenders: pk_heap; mimalloc 3.4's heaps (mi_heap_new, mi_heap_malloc,
 * mi_free, mi_heap_destroy) from the PyPI build the lab installs, when
 * found (PK_LAB_MIMALLOC3=PATH names another).
 *
 * Usage: bench_heapchurn [--iters N] [--quick]
 */
#include "harness.h"

#include <poolkit/alloc.h>
#include <poolkit/heap.h>

#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define BLOCKS 2000
#define REQUESTS 20
#define CHECKPOINTS 6

typedef struct heap_calls {
    void *(*make)(void);
    void *(*alloc)(void *heap, size_t size);
    void (*free)(void *ptr);
    void (*destroy)(void *heap);
} heap_calls;

static void *pk_make(void) { return pk_heap_create("churn"); }
static void *pk_alloc_in(void *h, size_t n) { return pk_heap_alloc(h, n); }
static void pk_destroy(void *h) { pk_heap_destroy(h); }
static const heap_calls pk_calls = {pk_make, pk_alloc_in, pk_free, pk_destroy};
static heap_calls mi_calls;

static const heap_calls *calls;
static void *shared;
static void *handed[2][BLOCKS];
static pthread_barrier_t both_filled;

static uint64_t next_random(uint64_t *s) {
    uint64_t x = *s += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* 1 B to 8 KiB log-uniform, 1% from 8 KiB to 32 MiB. */
static size_t draw_size(uint64_t *s) {
    uint64_t r = next_random(s);
    unsigned lg = r % 100 ? (unsigned)(r % 13) : 13 + (unsigned)((r >> 20) % 12);
    size_t low = (size_t)1 << lg;
    return low + (size_t)((r >> 32) % low);
}

static void *alloc_touched(void *h, size_t n) {
    char *p = calls->alloc(h, n);
    if (!p) abort();
    memset(p, 1, n < 64 ? n : 64);
    return p;
}

typedef struct worker_arg {
    int id;
    uint64_t seed;
} worker_arg;

static void *worker(void *arg) {
    worker_arg *w = arg;
    void *b[BLOCKS];
    for (int r = 0; r < REQUESTS; r++) {
        void *h = calls->make();
        size_t n = 100 + next_random(&w->seed) % (BLOCKS - 99);
        for (size_t i = 0; i < n; i++) b[i] = alloc_touched(h, draw_size(&w->seed));
        for (size_t i = 0; i < n; i += 3) {
            size_t k = next_random(&w->seed) % n;
            if (b[k]) calls->free(b[k]);
            b[k] = NULL;
        }
        calls->destroy(h);
    }
    for (int i = 0; i < BLOCKS; i++) {
        size_t n = draw_size(&w->seed);
        handed[w->id][i] = alloc_touched(shared, n > 65536 ? 64 : n);
    }
    pthread_barrier_wait(&both_filled);
    for (int i = 0; i < BLOCKS; i += 2) calls->free(handed[!w->id][i]); /* the other thread's */
    return NULL;
}

/* The child: iters iterations, a line "ITER SECONDS PEAK_KIB" at each
 * checkpoint onto fd. */
static int run_child(int fd, long iters, const long *at) {
    pthread_barrier_init(&both_filled, NULL, 2);
    double t0 = bench_now_ns();
    for (long it = 1, c = 0; it <= iters; it++) {
        shared = calls->make();
        pthread_t t[2];
        worker_arg w[2];
        for (int k = 0; k < 2; k++) {
            w[k] = (worker_arg){k, (uint64_t)it * 7 + (uint64_t)k};
            if (pthread_create(&t[k], NULL, worker, &w[k]) != 0) abort();
        }
        for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
        calls->destroy(shared);
        if (c < CHECKPOINTS && it == at[c]) {
            struct rusage ru;
            getrusage(RUSAGE_SELF, &ru);
            dprintf(fd, "%ld %.3f %ld\n", it, (bench_now_ns() - t0) / 1e9, ru.ru_maxrss);
            c++;
        }
    }
    return 0;
}

/* Runs the contender in a child; fills secs and peak per checkpoint. */
static int run_contender(const heap_calls *hc, long iters, const long *at, double *secs, long *peak) {
    int fds[2];
    if (pipe(fds) != 0) return 0;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        calls = hc;
        _exit(run_child(fds[1], iters, at));
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    int got = 0;
    long it;
    while (got < CHECKPOINTS && f && fscanf(f, "%ld %lf %ld", &it, &secs[got], &peak[got]) == 3) got++;
    if (f) fclose(f);
    int status;
    waitpid(pid, &status, 0);
    return got == CHECKPOINTS && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static const char *load_mimalloc3(char *why, size_t len) {
    const char *path = lab_mimalloc3_path(why, len);
    void *lib = path ? shared_dlopen(path, "cmeel-mimalloc from PyPI: scripts/lab-setup.sh", why, len) : NULL;
    if (!lib || !shared_dlsym(lib, "mi_heap_new", &mi_calls.make, why, len) ||
        !shared_dlsym(lib, "mi_heap_malloc", &mi_calls.alloc, why, len) ||
        !shared_dlsym(lib, "mi_free", &mi_calls.free, why, len) ||
        !shared_dlsym(lib, "mi_heap_destroy", &mi_calls.destroy, why, len))
        return NULL;
    return "mimalloc 3 heaps";
}

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 5);
    o.method = "each contender once, in a process of its own; time and peak RSS (getrusage) at checkpoints";
    long iters = bench_arg_long(&o, "--iters", o.quick ? 200 : 800);
    if (iters < 64) iters = 64;
    long at[CHECKPOINTS];
    for (int c = 0; c < CHECKPOINTS; c++) at[c] = iters >> (CHECKPOINTS - 1 - c); /* 1/32 ... 1 */
    bench_header("heaps with threads that come and go: a heap per request, a heap shared per iteration", &o);
    printf("%ld iterations; 2 threads each, %d requests of up to %d blocks of 1 B-32 MiB per thread\n\n", iters,
           REQUESTS, BLOCKS);
    char why[256] = "";
    const char *mi = load_mimalloc3(why, sizeof why);
    const heap_calls *hc[2] = {&pk_calls, mi ? &mi_calls : NULL};
    const char *label[2] = {"pk_heap", "mimalloc 3 heaps"};
    printf("  %-18s", "peak RSS MiB at");
    for (int c = 0; c < CHECKPOINTS; c++) printf(" %9ld", at[c]);
    printf("   seconds\n");
    int pass = 1;
    for (int k = 0; k < 2; k++) {
        if (!hc[k]) {
            bench_row_na(label[k], why);
            continue;
        }
        double secs[CHECKPOINTS];
        long peak[CHECKPOINTS];
        if (!run_contender(hc[k], iters, at, secs, peak)) {
            printf("  %-18s failed\n", label[k]);
            pass = 0;
            continue;
        }
        printf("  %-18s", label[k]);
        for (int c = 0; c < CHECKPOINTS; c++) printf(" %9.1f", (double)peak[c] / 1024.0);
        printf("   %.2f\n", secs[CHECKPOINTS - 1]);
        if (k == 0) {
            /* flat: the whole run's peak against the peak a quarter in */
            double grew = (double)peak[CHECKPOINTS - 1] / (double)peak[CHECKPOINTS - 3];
            pass &= bench_target(grew <= 1.2, "pk_heap peak RSS flat: at %ld iterations %.2fx the peak at %ld (<= 1.2x)",
                                 at[CHECKPOINTS - 1], grew, at[CHECKPOINTS - 3]);
        }
    }
    return pass ? 0 : 1;
}
