/* The empty loop: the harness alone. "Allocation" returns one static buffer
 * and "free" does nothing, so its time is what every loop costs besides the
 * allocator (the pattern's random numbers and list, the touch, the escape).
 * Net figures are other rows less this one, measured in the same process. */
#include "lab.h"

static char empty_buf[64];

static void *empty_open(size_t size) {
    (void)size;
    return empty_buf;
}
static void empty_close(void *ctx) { (void)ctx; }

#define K_NAME empty
#define K_ALLOC(c, sz) ((void)(sz), (void *)(c))
#define K_FREE(c, p, sz) LAB_ESCAPE(p)
#define K_FREES_EACH 1
#define K_THREADS 1 /* the thread workloads' queues alone (bench_xthread) */
#include "kernels.h"

void lab_adapter_empty(lab_allocator *a) {
    a->subject = "empty loop";
    a->family = "peer";
    a->open = empty_open;
    a->close = empty_close;
    K_FILL(a);
    snprintf(a->version, sizeof a->version, "the harness alone (no allocator)");
    a->available = 1;
}
