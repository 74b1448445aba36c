/* pk-lab-objc: command line, repetitions and result lines (lab/PROTOCOL.md).
 *
 *   pk-lab-objc list
 *   pk-lab-objc run EXPERIMENT [--scale quick|default|full|smoke] [--reps N] [--warmup N]
 */
#import "lab_objc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef LAB_OBJC_FLAGS
#  define LAB_OBJC_FLAGS "-O2"
#endif
#define LAB_STR2(x) #x
#define LAB_STR(x) LAB_STR2(x)

static const lab_experiment *const experiments[] = {
  &lab_autorelease_sweep,
  &lab_alloc_styles,
  &lab_object_generation,
  &lab_common_ops,
};
enum { N_EXPERIMENTS = sizeof experiments / sizeof experiments[0] };

/* What `list` prints: the subjects of each experiment. */
static const char *const subjects[][3] = {
  { "autorelease-sweep", "GNUstep NSObject", "PKObject" },
  { "alloc-styles", "GNUstep NSObject", "PKObject" },
  { "object-generation", "GNUstep NSObject", "PKObject" },
  { "common-ops", "GNUstep", "PKObject" },
};

double
lab_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

double
lab_cpu_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

long
lab_size(lab_sizes s, lab_scale scale)
{
  switch (scale)
    {
      case SCALE_SMOKE: return s.smoke;
      case SCALE_QUICK: return s.quick;
      case SCALE_FULL: return s.full;
      default: return s.def;
    }
}

int
lab_add(lab_row *rows, int *count, const char *subject, const char *family,
        const char *params, lab_kernel kernel, long n, long arg, int net, double per)
{
  if (*count >= LAB_MAX_ROWS)
    {
      fprintf(stderr, "pk-lab-objc: too many rows\n");
      exit(1);
    }
  lab_row *r = &rows[*count];
  memset(r, 0, sizeof *r);
  r->subject = subject;
  r->family = family;
  snprintf(r->params, sizeof r->params, "%s", params);
  r->kernel = kernel;
  r->n = n;
  r->arg = arg;
  r->net = net;
  r->per = per;
  r->baseline = -1;
  r->same_as = -1;
  return (*count)++;
}

/* The loop every kernel has, with nothing in it. */
static LAB_KERNEL double
empty_loop(long n, long arg)
{
  long i;
  (void)arg;
  double t0 = lab_now_ns();
  for (i = 0; i < n; i++)
    LAB_ESCAPE(i);
  return lab_now_ns() - t0;
}

/* What the empty loop costs for n iterations, wall and CPU: the fastest of
 * three runs of up to 4M iterations, scaled to n. The empty loop is only a
 * correction, and on a busy machine one run of it can lose the core; its
 * true cost is its floor. */
static void
empty_cost(long n, double *wall_ns, double *cpu_ns)
{
  long m = n < (1L << 22) ? n : (1L << 22);
  double best_wall = 0, best_cpu = 0;
  int k;
  for (k = 0; k < 3; k++)
    {
      double c0 = lab_cpu_ns();
      double w = empty_loop(m, 0);
      double c = lab_cpu_ns() - c0;
      if (k == 0 || w < best_wall)
        best_wall = w;
      if (k == 0 || c < best_cpu)
        best_cpu = c;
    }
  *wall_ns = best_wall / (double)m * (double)n;
  *cpu_ns = best_cpu / (double)m * (double)n;
}

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double
median(const double *v, int n)
{
  double t[LAB_MAX_REPS];
  if (n == 0)
    return 0.0;
  memcpy(t, v, sizeof(double) * (size_t)n);
  qsort(t, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2.0;
}

static const char *
version_line(void)
{
  static char v[160];
  snprintf(v, sizeof v, "gnustep-base %s, gcc %s, GNU Objective-C runtime (libobjc)",
           LAB_STR(GNUSTEP_BASE_VERSION), __VERSION__);
  return v;
}

static void
print_row(const lab_experiment *e, const lab_row *rows, int i)
{
  const lab_row *r = &rows[i];
  const lab_row *src = r->same_as >= 0 ? &rows[r->same_as] : r;
  int k;

  printf("{\"experiment\":\"%s\",\"subject\":\"%s\",\"family\":\"%s\",\"unit\":\"%s\","
         "\"params\":%s,\"samples\":[",
         e->name, r->subject, r->family, r->unit ? r->unit : e->unit, r->params);
  for (k = 0; k < src->nsamples; k++)
    printf("%s%.6g", k ? "," : "", src->samples[k] / src->per * r->per);
  printf("],\"version\":\"%s\",\"flags\":\"%s\",\"extra\":{", version_line(), LAB_OBJC_FLAGS);
  printf("\"iterations\":%ld,\"total_s\":%.6g,\"ns_per_op\":%.6g", src->n,
         median(src->total_ns, src->nsamples) / 1e9,
         median(src->samples, src->nsamples) / src->per);
  printf(",\"cpu_ns_per_op\":%.6g", median(src->cpu_ns, src->nsamples));
  if (r->baseline >= 0)
    {
      /* Compared per operation, whatever the two rows' units. */
      const lab_row *b = &rows[r->baseline];
      double mb = median(b->samples, b->nsamples) / b->per;
      double mr = median(src->samples, src->nsamples) / src->per;
      double ratio = r->ratio_inverse ? (mb > 0 ? mr / mb : 0.0) : (mr > 0 ? mb / mr : 0.0);
      printf(",\"baseline_ns_per_op\":%.6g,\"%s\":%.4g", mb,
             r->ratio_name ? r->ratio_name : "speedup", ratio);
    }
  if (r->extra[0])
    printf(",%s", r->extra);
  printf(",\"class_refs\":\"cached in a local\"}}\n");
}

static int
run(const lab_experiment *e, lab_scale scale, int reps, int warmup)
{
  static lab_row rows[LAB_MAX_ROWS];
  int count = e->rows(rows, scale);
  int i, rep, w;
  double t0 = lab_now_ns();

  /* Warm-up: every row once per --warmup, at a tenth of its size (at least
   * 1,000 operations): code, caches, pools and pages are warm after it. */
  for (w = 0; w < warmup; w++)
    for (i = 0; i < count; i++)
      if (rows[i].same_as < 0)
        {
          long n = rows[i].n / 10;
          if (n < 1000)
            n = rows[i].n < 1000 ? rows[i].n : 1000;
          NSAutoreleasePool *arp = [NSAutoreleasePool new];
          rows[i].kernel(n, rows[i].arg);
          [arp release];
        }
  for (rep = 0; rep < reps; rep++)
    {
      fprintf(stderr, "pk-lab-objc: %s repetition %d/%d (%.1f s so far)\n", e->name,
              rep + 1, reps, (lab_now_ns() - t0) / 1e9);
      for (i = 0; i < count; i++)
        {
          lab_row *r = &rows[i];
          if (r->same_as >= 0)
            continue;
          NSAutoreleasePool *arp = [NSAutoreleasePool new];
          double empty = 0.0, empty_cpu = 0.0;
          if (r->net)
            empty_cost(r->n, &empty, &empty_cpu);
          double c1 = lab_cpu_ns();
          double ns = r->kernel(r->n, r->arg);
          double c2 = lab_cpu_ns();
          [arp release];
          double cpu = (c2 - c1) - empty_cpu;
          r->cpu_ns[r->nsamples] = (cpu > 0 ? cpu : 0.0) / (double)r->n;
          double net = ns - empty;
          if (net < 0)
            net = 0;
          r->samples[r->nsamples] = net / (double)r->n * r->per;
          r->total_ns[r->nsamples] = ns;
          r->nsamples++;
        }
    }
  for (i = 0; i < count; i++)
    print_row(e, rows, i);
  fflush(stdout);
  fprintf(stderr, "pk-lab-objc: %s done in %.2f s\n", e->name, (lab_now_ns() - t0) / 1e9);
  return 0;
}

static int
usage(void)
{
  fprintf(stderr,
          "usage: pk-lab-objc list\n"
          "       pk-lab-objc run EXPERIMENT [--scale quick|default|full|smoke] [--reps N] [--warmup N]\n");
  return 2;
}

int
main(int argc, char **argv)
{
  NSAutoreleasePool *arp = [NSAutoreleasePool new];
  int i, rc;

  if (argc >= 2 && strcmp(argv[1], "list") == 0)
    {
      for (i = 0; i < N_EXPERIMENTS; i++)
        printf("%s\t%s\n%s\t%s\n", subjects[i][0], subjects[i][1], subjects[i][0],
               subjects[i][2]);
      [arp release];
      return 0;
    }
  if (argc < 3 || strcmp(argv[1], "run") != 0)
    return usage();

  const lab_experiment *e = NULL;
  for (i = 0; i < N_EXPERIMENTS; i++)
    if (strcmp(argv[2], experiments[i]->name) == 0)
      e = experiments[i];
  if (e == NULL)
    {
      fprintf(stderr, "pk-lab-objc: unknown experiment '%s' (pk-lab-objc list)\n", argv[2]);
      return 2;
    }

  lab_scale scale = SCALE_DEFAULT;
  int reps = 1, warmup = 1;
  for (i = 3; i < argc; i++)
    {
      const char *a = argv[i];
      const char *v = i + 1 < argc ? argv[i + 1] : NULL;
      if (strcmp(a, "--scale") == 0 && v)
        {
          if (strcmp(v, "smoke") == 0) scale = SCALE_SMOKE;
          else if (strcmp(v, "quick") == 0) scale = SCALE_QUICK;
          else if (strcmp(v, "default") == 0) scale = SCALE_DEFAULT;
          else if (strcmp(v, "full") == 0) scale = SCALE_FULL;
          else return usage();
          i++;
        }
      else if (strcmp(a, "--reps") == 0 && v)
        {
          reps = atoi(v);
          i++;
        }
      else if (strcmp(a, "--warmup") == 0 && v)
        {
          warmup = atoi(v);
          i++;
        }
      else if (strcmp(a, "--smoke") == 0) scale = SCALE_SMOKE;
      else if (strcmp(a, "--quick") == 0) scale = SCALE_QUICK;
      else if (strcmp(a, "--full") == 0) scale = SCALE_FULL;
      else
        return usage();
    }
  if (reps < 1) reps = 1;
  if (reps > LAB_MAX_REPS) reps = LAB_MAX_REPS;
  if (warmup < 0) warmup = 0;

  /* The command and the machine, for whoever reads the log. */
  {
    char cpu[256] = "unknown CPU", line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f))
      if (strncmp(line, "model name", 10) == 0 && strchr(line, ':'))
        {
          char *c = strchr(line, ':') + 1;
          c += strspn(c, " \t");
          c[strcspn(c, "\n")] = 0;
          snprintf(cpu, sizeof cpu, "%s", c);
          break;
        }
    if (f)
      fclose(f);
    fprintf(stderr, "pk-lab-objc: command:");
    for (i = 0; i < argc; i++)
      fprintf(stderr, " %s", argv[i]);
    fprintf(stderr, "\npk-lab-objc: machine: %s, %ld cores online; %s; flags: %s\n", cpu,
            sysconf(_SC_NPROCESSORS_ONLN), version_line(), LAB_OBJC_FLAGS);
  }
  rc = run(e, scale, reps, warmup);
  [arp release];
  return rc;
}
