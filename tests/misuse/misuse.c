/* Heap misuse, one case a run, through the C library's calls only (malloc,
 * free, realloc, memcpy, and new/delete in misuse_cxx.cc), so that it runs
 * under any allocator preloaded in front of the C library's: glibc's own,
 * libpoolkit-malloc.so, jemalloc, mimalloc.
 *
 *   misuse list            every case, "KIND SIZE" a line
 *   misuse KIND SIZE       commits that misuse on a block of SIZE bytes
 *
 * A case commits its misuse, gives the allocator its chance to notice (the
 * block freed, blocks of its size taken and freed again, so that free lists
 * and checks are walked), and then, if the process is still alive, prints
 * one line on stdout and exits 0:
 *   UNNOTICED          the misuse went through with nothing said
 *   PROPERTY-HELD      (a property case) what a hardened allocator promises
 *                      held: a freed block is not handed out again at once,
 *                      freed memory keeps none of its contents, ...
 *   PROPERTY-BROKEN    it did not
 * The program itself writes nothing on stderr, so that whatever stands there
 * is the allocator's. A case that cannot set itself up (malloc returned
 * NULL) prints SETUP-FAILED and exits 2. tests/misuse/run.py runs each case
 * in a child of its own and sorts the outcomes.
 *
 * Every pointer the misuse goes through passes through hide(), which the
 * compiler cannot see into, so it neither drops the misuse nor warns about
 * it (gcc's -Wuse-after-free, -Wfree-nonheap-object, -Warray-bounds).
 */
#include "misuse.h"

#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define KIB ((size_t)1024)
#define MIB (KIB * KIB)

/* The byte a block is filled with when it is taken, and the one misuse
 * writes. */
#define FILL 0x61
#define SMASH 0x41
/* A freed block's secret, looked for after its free (zeroed-on-free). */
#define SECRET 0x5a

/* ---- What a case says ------------------------------------------------- */

static void say(const char *line) {
    fflush(stdout);
    if (write(STDOUT_FILENO, line, strlen(line)) < 0) _exit(3);
}

void misuse_unnoticed(void) {
    say("UNNOTICED\n");
    exit(0);
}

void misuse_property(int held) {
    say(held ? "PROPERTY-HELD\n" : "PROPERTY-BROKEN\n");
    exit(0);
}

void misuse_setup_failed(const char *what) {
    say("SETUP-FAILED ");
    say(what);
    say("\n");
    exit(2);
}

/* ---- Helpers ------------------------------------------------------------ */

void *misuse_hide(void *p) {
    __asm__ volatile("" : "+r"(p) : : "memory");
    return p;
}

/* A block of n bytes from malloc, every byte FILL. */
static unsigned char *take(size_t n) {
    unsigned char *p = misuse_hide(malloc(n));
    if (!p && n) misuse_setup_failed("malloc");
    if (p) memset(misuse_hide(p), FILL, n); /* kept, though a free may follow at once */
    return p;
}

/* Memory of the program's own, outside any heap: the source and target of
 * the memcpy cases, and the far pointer of invalid-free-far. */
static unsigned char *scratch(size_t n) {
    void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) misuse_setup_failed("mmap");
    return misuse_hide(m);
}

/* Blocks of n bytes taken, written and freed, twice: the allocator walks
 * the free list of n's class and runs the checks of its allocation and
 * free paths, where a broken link, canary or pattern shows. */
void misuse_settle(size_t n) {
    enum { COUNT = 8 };
    void *held[COUNT];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < COUNT; i++) held[i] = take(n);
        for (int i = COUNT - 1; i >= 0; i--) free(held[i]);
    }
}

static volatile unsigned char sink;

/* Reads n bytes at p, one at a time, so that none is skipped. */
static void read_bytes(const unsigned char *p, size_t n) {
    const volatile unsigned char *v = p;
    unsigned char sum = 0;
    for (size_t i = 0; i < n; i++) sum = (unsigned char)(sum + v[i]);
    sink = sum;
}

/* Writes n bytes of SMASH at p, one at a time. */
static void write_bytes(unsigned char *p, size_t n) {
    volatile unsigned char *v = p;
    for (size_t i = 0; i < n; i++) v[i] = SMASH;
}

/* ---- Double frees --------------------------------------------------------- */

static void double_free_plain(size_t n) {
    unsigned char *p = take(n), *stale = misuse_hide(p);
    free(p);
    free(stale);
    misuse_settle(n);
}

/* The second free comes after the allocator served other sizes for a while. */
static void double_free_delayed(size_t n) {
    unsigned char *p = take(n), *stale = misuse_hide(p);
    free(p);
    size_t other = n < 64 ? 48 : n / 2;
    for (int i = 0; i < 64; i++) free(take(other));
    free(stale);
    misuse_settle(n);
}

/* t, u, t: the block freed twice is not the one freed last. */
static void double_free_interleaved(size_t n) {
    unsigned char *t = take(n), *stale = misuse_hide(t);
    unsigned char *u = take(n);
    free(t);
    free(u);
    free(stale);
    misuse_settle(n);
}

/* A block of the same size is taken between the two frees: whether or not it
 * is the freed one, one of the two frees that follow is a double free. */
static void double_free_reused(size_t n) {
    unsigned char *p = take(n), *stale = misuse_hide(p);
    free(p);
    unsigned char *q = take(n);
    free(stale);
    free(q);
    misuse_settle(n);
}

/* ---- Frees of what malloc never handed out ---------------------------------- */

static void invalid_free_stack(size_t n) {
    static const size_t most = 256 * KIB;
    unsigned char buf[256 * KIB] __attribute__((aligned(64)));
    memset(buf, FILL, n < most ? n : most);
    free(misuse_hide(buf));
    misuse_settle(n);
}

static void invalid_free_interior(size_t n) {
    unsigned char *p = take(n);
    free(misuse_hide(p + n / 2));
    misuse_settle(n);
}

static void invalid_free_unaligned(size_t n) {
    unsigned char *p = take(n);
    free(misuse_hide(p + 1));
    misuse_settle(n);
}

/* A pointer into a mapping of the program's own, far from any heap, filled
 * as a block would be. */
static void invalid_free_far(size_t n) {
    size_t len = n + 64 * KIB;
    unsigned char *m = scratch(len);
    memset(m, FILL, len);
    free(misuse_hide(m + 32 * KIB));
    misuse_settle(n);
}

/* ---- Overflows and underflows: writes, then the block freed ------------------ */

/* The misuse of a write case is done; the block goes back, and the
 * allocator's paths run over its neighbours. */
static void write_done(unsigned char *p, size_t n) {
    free(p);
    misuse_settle(n);
}

static void overflow_direct(size_t n, size_t by) {
    unsigned char *p = take(n);
    write_bytes(p + n, by);
    write_done(p, n);
}

static void overflow_memcpy(size_t n, size_t by) {
    unsigned char *p = take(n);
    unsigned char *src = scratch(n + by);
    memset(src, SMASH, n + by);
    memcpy(misuse_hide(p), src, n + by);
    write_done(p, n);
}

static void underflow_direct(size_t n, size_t by) {
    unsigned char *p = take(n);
    write_bytes(p - by, by);
    write_done(p, n);
}

static void underflow_memcpy(size_t n, size_t by) {
    unsigned char *p = take(n);
    unsigned char *src = scratch(by);
    memset(src, SMASH, by);
    memcpy(misuse_hide(p - by), src, by);
    write_done(p, n);
}

/* ---- Overflows and underflows: reads ------------------------------------------ */

static void overread_direct(size_t n, size_t by) {
    unsigned char *p = take(n);
    read_bytes(p + n, by);
    free(p);
}

static void overread_memcpy(size_t n, size_t by) {
    unsigned char *p = take(n);
    unsigned char *dst = scratch(n + by);
    memcpy(dst, misuse_hide(p), n + by);
    free(p);
}

static void underread_direct(size_t n, size_t by) {
    unsigned char *p = take(n);
    read_bytes(p - by, by);
    free(p);
}

static void underread_memcpy(size_t n, size_t by) {
    unsigned char *p = take(n);
    unsigned char *dst = scratch(by);
    memcpy(dst, misuse_hide(p - by), by);
    free(p);
}

/* ---- After free, and at size 0 ------------------------------------------------- */

/* The whole freed block written, as a stale pointer to a struct would. */
static void write_after_free(size_t n) {
    unsigned char *p = take(n), *stale = misuse_hide(p);
    free(p);
    write_bytes(stale, n);
    misuse_settle(n);
}

static void read_after_free(size_t n) {
    unsigned char *p = take(n), *stale = misuse_hide(p);
    free(p);
    read_bytes(stale, n);
}

/* malloc(0) hands out a block of no bytes (or NULL, which faults here). */
static void write_size_0(size_t n) {
    unsigned char *p = misuse_hide(malloc(0));
    write_bytes(p, 1);
    free(p);
    misuse_settle(n);
}

static void read_size_0(size_t n) {
    (void)n;
    unsigned char *p = misuse_hide(malloc(0));
    read_bytes(p, 1);
    free(p);
}

/* ---- Properties: not misuse, but what a hardened allocator promises ------------ */

/* A freed block is not the next block of its size. */
static void reuse_at_once(size_t n) {
    unsigned char *p = take(n);
    uintptr_t was = (uintptr_t)misuse_hide(p);
    free(p);
    unsigned char *q = take(n);
    int held = (uintptr_t)q != was;
    free(q);
    misuse_property(held);
}

/* realloc to a smaller size returns another block: a stale pointer to the
 * old block's tail then points at no live data. */
static void realloc_shrink_moves(size_t n) {
    unsigned char *p = take(n);
    uintptr_t was = (uintptr_t)misuse_hide(p);
    unsigned char *q = misuse_hide(realloc(p, n / 2));
    if (!q) misuse_setup_failed("realloc");
    int held = (uintptr_t)q != was;
    free(q);
    misuse_property(held);
}

static sigjmp_buf fault_jump;

static void fault_escape(int sig) {
    (void)sig;
    siglongjmp(fault_jump, 1);
}

/* None of a freed block's contents is left in it: no aligned word still
 * holds the secret (a word, not a byte, so that a free-list link whose
 * bytes happen to match cannot pass for it). A block whose memory went back
 * to the system (the read faults) kept nothing either. */
static void zeroed_on_free(size_t n) {
    unsigned char *p = take(n), *stale = misuse_hide(p);
    memset(stale, SECRET, n); /* through stale: a store before free is dead to the compiler */
    free(p);
    struct sigaction fault = {0}, old_segv, old_bus;
    fault.sa_handler = fault_escape;
    sigaction(SIGSEGV, &fault, &old_segv);
    sigaction(SIGBUS, &fault, &old_bus);
    size_t kept = 0;
    if (sigsetjmp(fault_jump, 1) == 0) {
        const volatile unsigned char *v = stale;
        for (size_t i = 0; i + 4 <= n; i += 4)
            kept += v[i] == SECRET && v[i + 1] == SECRET && v[i + 2] == SECRET &&
                    v[i + 3] == SECRET;
    } else {
        kept = 0;
    }
    sigaction(SIGSEGV, &old_segv, NULL);
    sigaction(SIGBUS, &old_bus, NULL);
    misuse_property(kept == 0);
}

/* ---- The cases ---------------------------------------------------------------- */

/* The sizes every kind runs at, and the one a size-0 kind runs at. */
static const size_t sizes_all[] = {8, 4 * KIB, 256 * KIB, 0};
static const size_t sizes_zero[] = {0, 0};

/* A kind runs as run(n), or, where it has a distance, as run_by(n, by). */
struct kind {
    const char *name;
    void (*run)(size_t n);
    void (*run_by)(size_t n, size_t by);
    size_t by;
    const size_t *sizes; /* ends at the first 0, except sizes_zero's */
};

/* 39 kinds at 8 B, 4 KiB and 256 KiB, and two at size 0: 119 cases. */
static const struct kind kinds[] = {
    {"double-free-plain", double_free_plain, NULL, 0, sizes_all},
    {"double-free-delayed", double_free_delayed, NULL, 0, sizes_all},
    {"double-free-interleaved", double_free_interleaved, NULL, 0, sizes_all},
    {"double-free-reused", double_free_reused, NULL, 0, sizes_all},
    {"invalid-free-stack", invalid_free_stack, NULL, 0, sizes_all},
    {"invalid-free-interior", invalid_free_interior, NULL, 0, sizes_all},
    {"invalid-free-unaligned", invalid_free_unaligned, NULL, 0, sizes_all},
    {"invalid-free-far", invalid_free_far, NULL, 0, sizes_all},
    {"overflow-1", NULL, overflow_direct, 1, sizes_all},
    {"overflow-32", NULL, overflow_direct, 32, sizes_all},
    {"overflow-1m", NULL, overflow_direct, MIB, sizes_all},
    {"overflow-memcpy-1", NULL, overflow_memcpy, 1, sizes_all},
    {"overflow-memcpy-32", NULL, overflow_memcpy, 32, sizes_all},
    {"overflow-memcpy-1m", NULL, overflow_memcpy, MIB, sizes_all},
    {"underflow-1", NULL, underflow_direct, 1, sizes_all},
    {"underflow-32", NULL, underflow_direct, 32, sizes_all},
    {"underflow-1m", NULL, underflow_direct, MIB, sizes_all},
    {"underflow-memcpy-1", NULL, underflow_memcpy, 1, sizes_all},
    {"underflow-memcpy-32", NULL, underflow_memcpy, 32, sizes_all},
    {"underflow-memcpy-1m", NULL, underflow_memcpy, MIB, sizes_all},
    {"overread-1", NULL, overread_direct, 1, sizes_all},
    {"overread-32", NULL, overread_direct, 32, sizes_all},
    {"overread-1m", NULL, overread_direct, MIB, sizes_all},
    {"overread-memcpy-1", NULL, overread_memcpy, 1, sizes_all},
    {"overread-memcpy-32", NULL, overread_memcpy, 32, sizes_all},
    {"overread-memcpy-1m", NULL, overread_memcpy, MIB, sizes_all},
    {"underread-1", NULL, underread_direct, 1, sizes_all},
    {"underread-32", NULL, underread_direct, 32, sizes_all},
    {"underread-1m", NULL, underread_direct, MIB, sizes_all},
    {"underread-memcpy-1", NULL, underread_memcpy, 1, sizes_all},
    {"underread-memcpy-32", NULL, underread_memcpy, 32, sizes_all},
    {"underread-memcpy-1m", NULL, underread_memcpy, MIB, sizes_all},
    {"write-after-free", write_after_free, NULL, 0, sizes_all},
    {"read-after-free", read_after_free, NULL, 0, sizes_all},
    {"write-size-0", write_size_0, NULL, 0, sizes_zero},
    {"read-size-0", read_size_0, NULL, 0, sizes_zero},
    {"reuse-at-once", reuse_at_once, NULL, 0, sizes_all},
    {"realloc-shrink-moves", realloc_shrink_moves, NULL, 0, sizes_all},
    {"zeroed-on-free", zeroed_on_free, NULL, 0, sizes_all},
    {"delete-of-new-array", misuse_delete_of_new_array, NULL, 0, sizes_all},
    {"delete-array-of-new", misuse_delete_array_of_new, NULL, 0, sizes_all},
};

#define KIND_COUNT (sizeof kinds / sizeof kinds[0])

/* The sizes of kind k, through its end mark. */
static size_t size_count(const struct kind *k) {
    if (k->sizes == sizes_zero) return 1;
    size_t c = 0;
    while (k->sizes[c]) c++;
    return c;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "list") == 0) {
        for (size_t i = 0; i < KIND_COUNT; i++)
            for (size_t s = 0; s < size_count(&kinds[i]); s++)
                printf("%s %zu\n", kinds[i].name, kinds[i].sizes[s]);
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: misuse list | misuse KIND SIZE\n");
        return 64;
    }
    char *end;
    size_t n = strtoull(argv[2], &end, 10);
    for (size_t i = 0; *end == '\0' && i < KIND_COUNT; i++) {
        if (strcmp(kinds[i].name, argv[1]) != 0) continue;
        for (size_t s = 0; s < size_count(&kinds[i]); s++) {
            if (kinds[i].sizes[s] != n) continue;
            if (kinds[i].run_by)
                kinds[i].run_by(n, kinds[i].by);
            else
                kinds[i].run(n);
            misuse_unnoticed();
        }
    }
    fprintf(stderr, "misuse: no case '%s %s' (misuse list names them)\n", argv[1], argv[2]);
    return 64;
}
