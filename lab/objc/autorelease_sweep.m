/* autorelease-sweep: "Autorelease is Fast" (2006), under GNUstep.
 *
 * 1,000,000 objects are created and autoreleased; a fresh NSAutoreleasePool
 * is made for every batch of objects_per_pool objects and released at the
 * batch's end (1,000,000 down to 1 per pool). The study's loop:
 *
 *     pool = [[NSAutoreleasePool alloc] init];
 *     for (j = 0; j < per_pool; j++)
 *         [[[NSObject alloc] init] autorelease];
 *     [pool release];
 *
 * Subjects: "GNUstep NSObject" (NSObject + NSAutoreleasePool) and "PKObject"
 * (PKObject + NSAutoreleasePool). Params: per_pool, objects. Unit: seconds
 * per 1,000,000 objects, total time as the study reports it (at smaller
 * scales, scaled from the objects made; a pool larger than the run holds all
 * of it, noted in extra as capped_to).
 *
 * The study's claim, that a pool costs about as much as one object, gets two
 * cost rows in ns/op (params op): "empty push/pop", an NSAutoreleasePool
 * alloc/init/release with nothing in it, net of the empty loop, and
 * "create+autorelease+release", the per_pool 1,000 measurement per object
 * (the pool's own cost spread over 1,000 objects); the first carries their
 * ratio (extra pushpop_over_object).
 */
#import "lab_objc.h"
#import <poolkit/PKObject.h>

#include <stdio.h>

static inline double
sweep(Class cls, long n, long per_pool)
{
  Class pool_class = [NSAutoreleasePool class];
  long made = 0;
  double t0 = lab_now_ns();
  while (made < n)
    {
      long batch = n - made < per_pool ? n - made : per_pool;
      long j;
      NSAutoreleasePool *pool = [[pool_class alloc] init];
      for (j = 0; j < batch; j++)
        {
          id o = [[[cls alloc] init] autorelease];
          LAB_ESCAPE(o);
        }
      [pool release];
      made += batch;
    }
  return lab_now_ns() - t0;
}

static LAB_KERNEL double
sweep_nsobject(long n, long per_pool)
{
  return sweep([NSObject class], n, per_pool);
}

static LAB_KERNEL double
sweep_pkobject(long n, long per_pool)
{
  return sweep([PKObject class], n, per_pool);
}

static LAB_KERNEL double
empty_pool_push_pop(long n, long arg)
{
  Class pool_class = [NSAutoreleasePool class];
  long i;
  (void)arg;
  double t0 = lab_now_ns();
  for (i = 0; i < n; i++)
    {
      NSAutoreleasePool *pool = [[pool_class alloc] init];
      LAB_ESCAPE(pool);
      [pool release];
    }
  return lab_now_ns() - t0;
}

static int
rows(lab_row *r, lab_scale scale)
{
  static const long per_pool[] = { 1000000, 100000, 10000, 1000, 100, 10, 1 };
  const lab_sizes sizes = { 10000, 200000, 1000000, 1000000 };
  long n = lab_size(sizes, scale);
  int count = 0, i, s, k, at1000[2] = { -1, -1 };
  char params[160];
  static const char *const subject[2] = { "GNUstep NSObject", "PKObject" };
  static const char *const family[2] = { "peer", "poolkit" };
  const lab_kernel kernel[2] = { sweep_nsobject, sweep_pkobject };
  /* seconds per 1,000,000 objects from ns per object */
  const double per = 1e6 / 1e9;

  for (i = 0; i < 7; i++)
    for (s = 0; s < 2; s++)
      {
        snprintf(params, sizeof params, "{\"per_pool\":%ld,\"objects\":%ld}", per_pool[i], n);
        k = lab_add(r, &count, subject[s], family[s], params, kernel[s], n, per_pool[i], 0, per);
        if (per_pool[i] > n)
          snprintf(r[k].extra, sizeof r[k].extra, "\"capped_to\":%ld", n);
        if (per_pool[i] == 1000)
          at1000[s] = k;
      }

  /* The cost rows, in ns per operation. */
  snprintf(params, sizeof params, "{\"op\":\"create+autorelease+release\",\"objects\":%ld}", n);
  for (s = 0; s < 2; s++)
    {
      k = lab_add(r, &count, subject[s], family[s], params, kernel[s], n, 1000, 0, 1.0);
      r[k].unit = "ns/op";
      r[k].same_as = at1000[s];
      snprintf(r[k].extra, sizeof r[k].extra,
               "\"note\":\"the per_pool 1000 measurement, per object\"");
    }
  snprintf(params, sizeof params, "{\"op\":\"empty push/pop\",\"objects\":%ld}", n);
  k = lab_add(r, &count, subject[0], family[0], params, empty_pool_push_pop, n, 0, 1, 1.0);
  r[k].unit = "ns/op";
  r[k].baseline = at1000[0];
  r[k].ratio_name = "pushpop_over_object";
  r[k].ratio_inverse = 1;
  return count;
}

const lab_experiment lab_autorelease_sweep = { "autorelease-sweep", "s", rows };
