/* The front end's variants and the run-time calls: a zeroed table grown by
 * pk_reallocarray, a buffer grown in place by pk_expand while it can be,
 * an aligned block kept aligned by pk_realloc_aligned, options read and
 * set by name, the report handed to a callback, and memory given back with
 * pk_collect before going idle. */
#include <poolkit/alloc.h>
#include <poolkit/options.h>
#include <poolkit/pool.h>
#include <poolkit/stats.h>

#include <stdio.h>
#include <string.h>

static void count_lines(const char *text, void *arg) {
    for (; *text; text++) *(size_t *)arg += *text == '\n';
}

int main(void) {
    /* A zeroed table, then grown to four times as many rows. */
    size_t rows = 100;
    long *table = pk_zalloc(rows * sizeof *table);
    if (!table) return 1;
    table[rows - 1] = 42;
    long *bigger = pk_reallocarray(table, rows * 4, sizeof *table);
    if (!bigger) return 1;
    table = bigger;
    printf("table: %zu rows, row %zu still %ld\n", rows * 4, rows - 1, table[rows - 1]);

    /* A buffer that grows in place while its block has room. */
    char *buf = pk_alloc(20);
    size_t len = 0, grown = 0;
    for (int i = 0; i < 20; i++) {
        if (pk_expand(buf, len + 3)) {
            memcpy(buf + len, "ab", 3);
            len += 2;
            grown++;
        }
    }
    printf("buffer: %zu of 20 appends fit in place (%zu usable bytes)\n", grown, pk_usable_size(buf));

    /* A block for SIMD rows, kept 64-byte aligned as it grows. */
    float *simd = pk_realloc_aligned(NULL, 64, 16 * sizeof(float));
    simd = pk_realloc_aligned(simd, 64, 1024 * sizeof(float));
    if (!simd) return 1;
    printf("aligned: %s\n", ((size_t)simd % 64) == 0 ? "64-byte aligned after growing" : "not aligned");

    /* Options by name. */
    long delay = 0;
    pk_option_set("purge_delay_ms", 200);
    pk_option_get("purge_delay_ms", &delay);
    printf("purge delay: %ld ms\n", delay);

    /* The report to a callback: here, its lines counted. */
    size_t lines = 0;
    pk_stats_print_to(count_lines, &lines, 0);
    printf("report: %zu lines\n", lines);

    pk_free(table);
    pk_free(buf);
    pk_free(simd);
    /* About to go idle: every empty slab and cache back now. */
    size_t back = pk_collect(1);
    printf("collect: %zu bytes given back\n", back);
    return 0;
}
