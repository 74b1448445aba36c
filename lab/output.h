/* The machine line and results.json (the tables' shared lines: lab.h). */
#ifndef PK_LAB_OUTPUT_H
#define PK_LAB_OUTPUT_H

#include "lab.h"

typedef struct lab_machine {
    char cpu[160];
    long cores;
    char os[256];
    char compiler[160];
    char flags[256];
    double memory_gib;
} lab_machine;

extern lab_machine lab_machine_info;
void lab_machine_probe(void);
/* "machine: CPU, N cores, M GiB; OS; compiler, flags; poolkit VERSION" */
void lab_machine_line(FILE *out);
/* Writes results.json for the experiments done so far (atomically: a
 * temporary file renamed over path). 0 or -1. */
int lab_write_results(const char *path, const lab_experiment *const *done, const double *secs,
                      int ndone, const char *command, double seconds);

#endif
