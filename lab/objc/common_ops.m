/* common-ops: the Objective-C rows of "Performance Comparisons of Common
 * Operations" (2007), under GNUstep, plus PKObject's row.
 *
 *   IMP-cached message send      imp(obj, sel), imp from -methodForSelector:
 *   Objective-C message send     [obj op] (objc_msg_lookup, then the call)
 *   NSInvocation message send    [invocation invoke]
 *   NSObject alloc/init/release  [[cls alloc] init] ... [o release]
 *   PKObject alloc/init/release  the same with PKObject (next to NSObject's)
 *   NSAutoreleasePool alloc/init/release
 *   zero-second delayed perform  performSelector:withObject:afterDelay:0, then
 *                                the run loop until it has fired. GNUstep's
 *                                NSTimer turns a delay of 0 into 0.1 ms, and
 *                                a blocking -runMode:beforeDate: did not wake
 *                                for that timer here (it slept until its
 *                                limit date), so the loop polls the run loop
 *                                (beforeDate: distantPast) until the perform
 *                                has run: the figure is the delay as GNUstep
 *                                delivers it, 0.1 ms at least.
 *   class literal lookup         objc_get_class("NSObject"): what gcc's GNU
 *                                runtime does for each [NSObject ...] message
 *                                (not in the study; see lab_objc.h)
 *
 * Unit: ns per operation, net of the empty loop. Subjects: "GNUstep" for
 * GNUstep's operations, "PKObject" for PKObject's. Params: op (the study's
 * name, exactly), iterations.
 */
#import "lab_objc.h"
#import <poolkit/PKObject.h>

#include <objc/runtime.h>
#include <stdio.h>

@interface OpTarget : NSObject
{
@public
  volatile long fired;
}
- (void) op;
- (void) fire: (id)arg;
@end

@implementation OpTarget
- (void) op
{
  LAB_CLOBBER();
}
- (void) fire: (id)arg
{
  (void)arg;
  fired++;
}
@end

static LAB_KERNEL double
imp_cached_send(long n, long arg)
{
  OpTarget *t = [OpTarget new];
  SEL sel = @selector(op);
  /* IMP is variadic; call it through the method's real type. */
  void (*imp)(id, SEL) = (void (*)(id, SEL))(void (*)(void))[t methodForSelector: sel];
  long i;
  (void)arg;
  double t0 = lab_now_ns();
  for (i = 0; i < n; i++)
    imp(t, sel);
  double ns = lab_now_ns() - t0;
  [t release];
  return ns;
}

static LAB_KERNEL double
message_send(long n, long arg)
{
  OpTarget *t = [OpTarget new];
  long i;
  (void)arg;
  double t0 = lab_now_ns();
  for (i = 0; i < n; i++)
    [t op];
  double ns = lab_now_ns() - t0;
  [t release];
  return ns;
}

static LAB_KERNEL double
invocation_send(long n, long arg)
{
  OpTarget *t = [OpTarget new];
  SEL sel = @selector(op);
  NSInvocation *inv =
    [NSInvocation invocationWithMethodSignature: [t methodSignatureForSelector: sel]];
  long i;
  (void)arg;
  [inv setTarget: t];
  [inv setSelector: sel];
  double t0 = lab_now_ns();
  for (i = 0; i < n; i++)
    [inv invoke];
  double ns = lab_now_ns() - t0;
  [t release];
  return ns;
}

static inline double
alloc_init_release(Class cls, long n)
{
  long i;
  double t0 = lab_now_ns();
  for (i = 0; i < n; i++)
    {
      id o = [[cls alloc] init];
      LAB_ESCAPE(o);
      [o release];
    }
  return lab_now_ns() - t0;
}

static LAB_KERNEL double
nsobject_alloc_init_release(long n, long arg)
{
  (void)arg;
  return alloc_init_release([NSObject class], n);
}

static LAB_KERNEL double
pkobject_alloc_init_release(long n, long arg)
{
  (void)arg;
  return alloc_init_release([PKObject class], n);
}

static LAB_KERNEL double
pool_alloc_init_release(long n, long arg)
{
  (void)arg;
  return alloc_init_release([NSAutoreleasePool class], n);
}

static LAB_KERNEL double
delayed_perform(long n, long arg)
{
  OpTarget *t = [OpTarget new];
  NSRunLoop *loop = [NSRunLoop currentRunLoop];
  NSDate *past = [NSDate distantPast];
  SEL sel = @selector(fire:);
  long i;
  (void)arg;
  double t0 = lab_now_ns();
  for (i = 0; i < n; i++)
    {
      /* The timer and the run loop's bookkeeping autorelease objects. */
      NSAutoreleasePool *pool = [NSAutoreleasePool new];
      long before = t->fired;
      [t performSelector: sel withObject: nil afterDelay: 0];
      while (t->fired == before)
        [loop runMode: NSDefaultRunLoopMode beforeDate: past];
      [pool release];
    }
  double ns = lab_now_ns() - t0;
  [t release];
  return ns;
}

static LAB_KERNEL double
class_literal_lookup(long n, long arg)
{
  long i;
  (void)arg;
  double t0 = lab_now_ns();
  for (i = 0; i < n; i++)
    {
      id c = objc_get_class("NSObject");
      LAB_ESCAPE(c);
    }
  return lab_now_ns() - t0;
}

static int
op_row(lab_row *r, int *count, const char *subject, const char *family, const char *op,
       lab_kernel kernel, long n)
{
  char params[160];
  snprintf(params, sizeof params, "{\"op\":\"%s\",\"iterations\":%ld}", op, n);
  return lab_add(r, count, subject, family, params, kernel, n, 0, 1, 1.0);
}

static int
rows(lab_row *r, lab_scale scale)
{
  const lab_sizes sends = { 1000000, 20000000, 100000000, 1000000000 };
  const lab_sizes objects = { 20000, 500000, 2000000, 10000000 };
  const lab_sizes invocations = { 10000, 200000, 1000000, 10000000 };
  const lab_sizes performs = { 50, 500, 2000, 100000 };
  int count = 0, ns, pk;

  op_row(r, &count, "GNUstep", "peer", "IMP-cached message send", imp_cached_send,
         lab_size(sends, scale));
  op_row(r, &count, "GNUstep", "peer", "Objective-C message send", message_send,
         lab_size(sends, scale));
  op_row(r, &count, "GNUstep", "peer", "NSInvocation message send", invocation_send,
         lab_size(invocations, scale));
  ns = op_row(r, &count, "GNUstep", "peer", "NSObject alloc/init/release",
              nsobject_alloc_init_release, lab_size(objects, scale));
  pk = op_row(r, &count, "PKObject", "poolkit", "PKObject alloc/init/release",
              pkobject_alloc_init_release, lab_size(objects, scale));
  r[pk].baseline = ns;
  r[pk].ratio_name = "speedup_vs_nsobject";
  op_row(r, &count, "GNUstep", "peer", "NSAutoreleasePool alloc/init/release",
         pool_alloc_init_release, lab_size(objects, scale));
  op_row(r, &count, "GNUstep", "peer", "zero-second delayed perform", delayed_perform,
         lab_size(performs, scale));
  op_row(r, &count, "GNUstep", "peer", "class literal lookup (objc_get_class)",
         class_literal_lookup, lab_size(objects, scale));
  return count;
}

const lab_experiment lab_common_ops = { "common-ops", "ns/op", rows };
