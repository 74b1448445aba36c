/* alloc-styles: "alloc, allocWithZone showdown" (2009), under GNUstep.
 *
 * Create and release one object, 20,000,000 times (full scale), three ways:
 * [cls new], [[cls alloc] init], [[cls allocWithZone: NULL] init], for
 * NSObject and for PKObject. The study's claim: skipping the one message
 * send of +alloc (calling +allocWithZone: directly) saves 1.5 to 7%.
 *
 * The class is taken from a local before the loop: written in the loop, as
 * the study's code does, gcc's GNU runtime would add an objc_get_class lookup
 * per iteration (see lab_objc.h; common-ops measures that lookup).
 *
 * Params: style ("new", "alloc+init", "allocWithZone+init"), iterations.
 * Unit: ns per iteration, net of the empty loop.
 */
#import "lab_objc.h"
#import <poolkit/PKObject.h>

#include <stdio.h>

/* One kernel: n objects of CLASS made by CREATE (an expression over cls),
 * each released at once. */
#define STYLE_KERNEL(NAME, CLASS, CREATE)                                \
  static LAB_KERNEL double NAME(long n, long arg)                        \
  {                                                                      \
    Class cls = [CLASS class];                                           \
    long i;                                                              \
    (void)arg;                                                           \
    double t0 = lab_now_ns();                                            \
    for (i = 0; i < n; i++)                                              \
      {                                                                  \
        id o = CREATE;                                                   \
        LAB_ESCAPE(o);                                                   \
        [o release];                                                     \
      }                                                                  \
    return lab_now_ns() - t0;                                            \
  }
#define STYLE_KERNELS(NAME, CLASS)                                       \
  STYLE_KERNEL(NAME##_new, CLASS, [cls new])                             \
  STYLE_KERNEL(NAME##_alloc_init, CLASS, [[cls alloc] init])             \
  STYLE_KERNEL(NAME##_zone_init, CLASS, [[cls allocWithZone: NULL] init])

STYLE_KERNELS(nsobject, NSObject)
STYLE_KERNELS(pkobject, PKObject)

static int
rows(lab_row *r, lab_scale scale)
{
  const lab_sizes sizes = { 100000, 2000000, 10000000, 20000000 };
  long n = lab_size(sizes, scale);
  int count = 0, s, k, st, alloc_row[2] = { -1, -1 };
  static const char *const subject[2] = { "GNUstep NSObject", "PKObject" };
  static const char *const family[2] = { "peer", "poolkit" };
  static const char *const style[3] = { "new", "alloc+init", "allocWithZone+init" };
  const lab_kernel kernel[3][2] = {
    { nsobject_new, pkobject_new },
    { nsobject_alloc_init, pkobject_alloc_init },
    { nsobject_zone_init, pkobject_zone_init },
  };
  char params[128];

  for (st = 0; st < 3; st++)
    {
      snprintf(params, sizeof params, "{\"style\":\"%s\",\"iterations\":%ld}", style[st], n);
      for (s = 0; s < 2; s++)
        {
          k = lab_add(r, &count, subject[s], family[s], params, kernel[st][s], n, 0, 1, 1.0);
          if (st == 1)
            alloc_row[s] = k;
          if (st == 2)
            {
              /* The study's comparison: allocWithZone: against alloc. */
              r[k].baseline = alloc_row[s];
              r[k].ratio_name = "speedup_vs_alloc";
            }
          else if (s == 1)
            {
              /* PKObject against NSObject, style by style. */
              r[k].baseline = k - 1;
              r[k].ratio_name = "speedup_vs_nsobject";
            }
        }
    }
  return count;
}

const lab_experiment lab_alloc_styles = { "alloc-styles", "ns/iter", rows };
