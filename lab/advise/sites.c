/* advise_sites: a program with five allocation sites whose right advice is
 * known, for the advise test (lab/advise_test.py). Each site's
 * malloc call is on a line marked "site:" and the test expects advise to
 * name that file and line:
 *
 *   churn     one size (48 B), a live set of 64 replaced at random on one
 *             thread: a pool with PK_POOL_LOCAL
 *   together  a request's nodes of 16-200 B, all freed at the request's
 *             end: an arena (or a heap freed whole)
 *   remote    64 B messages allocated here and freed by a consumer thread:
 *             a (shared) pool
 *   rare      three 4 KiB buffers: leave it
 *   slow      40 B records made at the start and freed one at a time
 *             while the churn goes on (many allocations between two
 *             frees: they do not die together): a pool, not an arena
 *
 *   advise_sites [SCALE]   (SCALE multiplies the work; default 1)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static uint64_t rng = 88172645463325252ull;
static uint64_t next_random(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static NOINLINE void *churn_new(void) {
    char *p = malloc(48); /* site: churn */
    memset(p, 1, 48);
    return p;
}

static NOINLINE void *together_new(size_t n) {
    char *p = malloc(n); /* site: together */
    p[0] = (char)n;
    return p;
}

static NOINLINE void *remote_new(uint64_t i) {
    uint64_t *p = malloc(64); /* site: remote */
    p[0] = i;
    return p;
}

static NOINLINE void *slow_new(void) {
    char *p = malloc(40); /* site: slow */
    p[0] = 1;
    return p;
}

static NOINLINE void *rare_new(void) {
    char *p = malloc(4096); /* site: rare */
    memset(p, 0, 4096);
    return p;
}

/* The churn, and the slow site's records freed one every SLOW_EVERY rounds. */
#define SLOW_EVERY 30
static uint64_t churn(long rounds) {
    void *live[64];
    long nslow = rounds / SLOW_EVERY;
    void **slow = malloc(sizeof(void *) * (size_t)(nslow + 1));
    uint64_t sum = 0;
    for (long i = 0; i < nslow; i++) slow[i] = slow_new();
    for (int i = 0; i < 64; i++) live[i] = churn_new();
    for (long r = 0; r < rounds; r++) {
        unsigned k = (unsigned)(next_random() % 64);
        sum += (uint64_t)((char *)live[k])[0];
        free(live[k]);
        live[k] = churn_new();
        if (r % SLOW_EVERY == 0 && r / SLOW_EVERY < nslow) free(slow[r / SLOW_EVERY]);
    }
    for (int i = 0; i < 64; i++) free(live[i]);
    free(slow);
    return sum;
}

static uint64_t requests(long n) {
    void *nodes[200];
    uint64_t sum = 0;
    for (long r = 0; r < n; r++) {
        for (int i = 0; i < 200; i++) nodes[i] = together_new(16 + next_random() % 185);
        for (int i = 0; i < 200; i++) sum += (uint64_t)((char *)nodes[i])[0];
        for (int i = 0; i < 200; i++) free(nodes[i]);
    }
    return sum;
}

/* A single-producer, single-consumer ring of 1,024 messages. */
#define RING 1024
static void *_Atomic ring[RING];
static atomic_long consumed_sum;

static void *consumer(void *arg) {
    long n = *(long *)arg, sum = 0;
    for (long i = 0; i < n; i++) {
        void *m;
        while (!(m = atomic_exchange(&ring[i % RING], NULL))) sched_yield();
        sum += (long)((uint64_t *)m)[0];
        free(m);
    }
    atomic_store(&consumed_sum, sum);
    return NULL;
}

static uint64_t messages(long n) {
    pthread_t t;
    pthread_create(&t, NULL, consumer, &n);
    for (long i = 0; i < n; i++) {
        void *m = remote_new((uint64_t)i);
        while (atomic_load(&ring[i % RING])) sched_yield();
        atomic_store(&ring[i % RING], m);
    }
    pthread_join(t, NULL);
    return (uint64_t)atomic_load(&consumed_sum);
}

int main(int argc, char **argv) {
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    void *config[3];
    for (int i = 0; i < 3; i++) config[i] = rare_new();
    uint64_t sum = churn((long)(200000 * scale));
    sum += requests((long)(1000 * scale));
    sum += messages((long)(100000 * scale));
    for (int i = 0; i < 3; i++) free(config[i]);
    printf("%llu\n", (unsigned long long)sum);
    return 0;
}
