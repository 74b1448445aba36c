/* pk-lab-objc: the Objective-C (GNUstep) contender of the lab.
 *
 * pk-lab starts this program once per repetition (lab/PROTOCOL.md); each run
 * measures every row of one experiment and prints one JSON result line per
 * row on stdout. Progress and diagnostics go to stderr.
 *
 * An experiment is a list of rows. A row is a kernel (a function that does
 * the work n times and returns the nanoseconds it took, timed inside with
 * CLOCK_MONOTONIC so that set-up is left out) and how to turn that time into
 * the experiment's unit. A run warms every row up (--warmup times, at a
 * tenth of the row's size), then does --reps repetitions, each one running
 * all rows in order (A B C, A B C) so drift hits them alike. Rows marked net subtract the empty loop's cost for the
 * same n, measured just before in the same repetition (the fastest of three
 * short runs, scaled to n).
 *
 * Method notes that hold for every kernel:
 * - Compiled with -O2; LAB_ESCAPE keeps each object and result alive to the
 *   optimizer, never -O0.
 * - Class references are taken once into a local (Class cls = [X class])
 *   before the loop. With gcc's GNU runtime, a class literal in a message
 *   ([NSObject alloc]) calls objc_get_class("NSObject"), a lookup by name,
 *   at every execution; Apple's runtime, which the studies ran on, loads a
 *   class reference directly. common-ops reports what the literal costs, and
 *   alloc-styles has a "class literal" style for both subjects.
 */
#ifndef PK_LAB_OBJC_H
#define PK_LAB_OBJC_H

#import <Foundation/Foundation.h>

#include <stddef.h>
#include <stdint.h>

/* The optimizer must believe that p is read and any memory may change. */
#define LAB_ESCAPE(p) __asm__ __volatile__("" : : "r"(p) : "memory")
#define LAB_CLOBBER() __asm__ __volatile__("" : : : "memory")
/* A kernel: a real function, never inlined, cloned or merged. */
#define LAB_KERNEL __attribute__((noipa, used))

typedef enum { SCALE_SMOKE, SCALE_QUICK, SCALE_DEFAULT, SCALE_FULL } lab_scale;

/* Problem sizes of one experiment, one per scale. */
typedef struct lab_sizes {
  long smoke, quick, def, full;
} lab_sizes;

long lab_size(lab_sizes s, lab_scale scale);

/* Nanoseconds on CLOCK_MONOTONIC: what every sample is timed with. */
double lab_now_ns(void);
/* Nanoseconds of CPU time of the calling thread: reported beside the samples
 * ("cpu_ns_per_op") because on a busy machine the wall clock also counts the
 * time other processes held the core. */
double lab_cpu_ns(void);

typedef double (*lab_kernel)(long n, long arg);

#define LAB_MAX_ROWS 64
#define LAB_MAX_REPS 64

typedef struct lab_row {
  const char *subject;  /* "GNUstep NSObject", "PKObject", ... */
  const char *family;   /* "peer" or "poolkit" */
  const char *unit;     /* this row's unit when not the experiment's, or NULL */
  char params[256];     /* a JSON object */
  lab_kernel kernel;
  long n;               /* operations per repetition */
  long arg;             /* passed to the kernel (batch size, ...) */
  int net;              /* subtract an empty loop of n */
  double per;           /* value = (ns [- empty]) / n * per */
  int baseline;         /* row index whose median this row is compared to, or -1 */
  const char *ratio_name; /* extra member for the comparison ("speedup") */
  int ratio_inverse;    /* 0: baseline / this (a speedup); 1: this / baseline */
  int same_as;          /* report another row's measurement (converted with
                           that row's per and this one's), or -1 */
  char extra[256];      /* more JSON members for "extra" (without braces), or "" */
  double samples[LAB_MAX_REPS];
  double total_ns[LAB_MAX_REPS];
  double cpu_ns[LAB_MAX_REPS]; /* thread CPU time per op, net of the empty loop's */
  int nsamples;
} lab_row;

typedef struct lab_experiment {
  const char *name;
  const char *unit;
  /* Adds the rows of the experiment for the scale to *rows; returns count. */
  int (*rows)(lab_row *rows, lab_scale scale);
} lab_experiment;

/* Appends a row; returns its index. params is a JSON object. */
int lab_add(lab_row *rows, int *count, const char *subject, const char *family,
            const char *params, lab_kernel kernel, long n, long arg, int net,
            double per);

/* The experiments (one file each). */
extern const lab_experiment lab_autorelease_sweep;
extern const lab_experiment lab_alloc_styles;
extern const lab_experiment lab_object_generation;
extern const lab_experiment lab_common_ops;

#endif
