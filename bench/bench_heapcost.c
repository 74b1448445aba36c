/* What a heap costs before its blocks: a heap made, given one block of
 * each size class from 16 B to 4 KiB (each class's pool made on that
 * first allocation), and freed whole, repeated; against the same blocks
 * from one heap kept and reset, and from malloc with each block freed. The
 * fixed part of the lab's heap experiment (lab/exp_heap.c), where a
 * request uses these classes. Contenders interleaved in each repetition,
 * after a warm-up; ns per heap (or per reset), median of the repetitions.
 * No target: it says where a request's time goes.
 *
 * Usage: bench_heapcost [--reps N] [--quick] [--heaps N]
 */
#include "harness.h"

#include <poolkit/alloc.h>
#include <poolkit/heap.h>

#define MAX_CLASSES 64

static size_t sizes[MAX_CLASSES];
static int nsizes;
static void *blocks[MAX_CLASSES];

/* Every class from 16 B to 4 KiB: pk_good_size steps from one to the next. */
static void class_sizes(void) {
    for (size_t s = 16; s <= 4096 && nsizes < MAX_CLASSES; s = pk_good_size(s + 1)) sizes[nsizes++] = s;
}

#define ONE_OF_EACH(ALLOC)                                           \
    for (int i = 0; i < nsizes; i++) {                               \
        blocks[i] = (ALLOC);                                         \
        if (!blocks[i]) abort();                                     \
        *(char *)blocks[i] = (char)i;                                \
    }                                                                \
    BENCH_ESCAPE(blocks);

static BENCH_KERNEL void heaps_destroyed(long n) {
    for (long k = 0; k < n; k++) {
        pk_heap *h = pk_heap_create_ex("bench", PK_HEAP_WHOLE);
        if (!h) abort();
        ONE_OF_EACH(pk_heap_alloc(h, sizes[i]))
        pk_heap_destroy(h);
    }
}

static pk_heap *kept;
static BENCH_KERNEL void heap_reset(long n) {
    for (long k = 0; k < n; k++) {
        ONE_OF_EACH(pk_heap_alloc(kept, sizes[i]))
        pk_heap_reset(kept);
    }
}

static BENCH_KERNEL void mallocs(long n) {
    for (long k = 0; k < n; k++) {
        ONE_OF_EACH(malloc(sizes[i]))
        for (int i = 0; i < nsizes; i++) free(blocks[i]);
    }
}

enum { C_DESTROY, C_RESET, C_MALLOC, NCONT };
static const char *const label[NCONT] = {"pk_heap made and destroyed", "pk_heap kept, reset",
                                         "malloc and free (info)"};
static void (*const kernel[NCONT])(long) = {heaps_destroyed, heap_reset, mallocs};

int main(int argc, char **argv) {
    bench_opts o = bench_parse(argc, argv, 9);
    long heaps = bench_arg_long(&o, "--heaps", o.quick ? 500 : 2000);
    bench_header("what a heap costs before its blocks: one block of each class of 16 B-4 KiB, freed whole", &o);
    class_sizes();
    kept = pk_heap_create_ex("bench kept", PK_HEAP_WHOLE);
    if (!kept) return 1;
    printf("%ld heaps per run, %d classes (one block each)\n", heaps, nsizes);
    bench_series t[NCONT] = {{{0}, 0}};
    for (int rep = -1; rep < o.reps; rep++) {
        long n = rep < 0 ? heaps / 4 + 1 : heaps;
        for (int j = 0; j < NCONT; j++) {
            int c = (j + (rep > 0 ? rep : 0)) % NCONT;
            double s = bench_now_ns();
            kernel[c](n);
            if (rep >= 0) bench_add(&t[c], (bench_now_ns() - s) / (double)n);
        }
    }
    printf("\n");
    for (int c = 0; c < NCONT; c++) bench_row(label[c], &t[c], "ns", "per heap (or reset)");
    pk_heap_destroy(kept);
    return 0;
}
