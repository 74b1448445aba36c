/* An Objective-C class on PKObject (GNUstep): subclass PKObject instead of
 * NSObject, and every instance comes from a poolkit pool, with the usual
 * alloc/init/retain/release/autorelease/dealloc.
 *
 * Build: bindings/objc/build.sh OUT, then with the flags it writes to
 * OUT/objc.env: $OBJC_CC $OBJC_CFLAGS objc_class.m $OBJC_LIBS
 * (examples/run_objc_example.sh does exactly that). */
#import <Foundation/Foundation.h>
#import <poolkit/PKObject.h>

#include <poolkit/pool.h>
#include <stdio.h>

static int alive;

@interface Point3 : PKObject
{
  double x, y, z;
}
+ (Point3 *) pointWithX: (double)px y: (double)py z: (double)pz;
- (double) length2;
@end

@implementation Point3
+ (Point3 *) pointWithX: (double)px y: (double)py z: (double)pz
{
  Point3 *p = [[self alloc] init];
  p->x = px;
  p->y = py;
  p->z = pz;
  alive++;
  return [p autorelease];
}
- (double) length2
{
  return x * x + y * y + z * z;
}
- (void) dealloc
{
  alive--;
  [super dealloc];
}
@end

int main(void)
{
  Point3 *kept = nil;
  for (int frame = 0; frame < 3; frame++)
    {
      NSAutoreleasePool *arp = [NSAutoreleasePool new];
      double sum = 0;
      for (int i = 0; i < 1000; i++)
        {
          Point3 *p = [Point3 pointWithX: i y: frame z: 1];
          sum += [p length2];
          if (frame == 2 && i == 999)
            kept = [p retain];
        }
      printf("frame %d: sum %.0f, %d points alive before the pool drains\n", frame, sum, alive);
      [arp release];
    }

  pk_pool_stats stats;
  pk_pool_stats_get([Point3 instancePool], &stats);
  printf("after the frames: %d alive (the kept one, retainCount %lu); pool of %zu-byte slots\n",
         alive, (unsigned long)[kept retainCount], stats.size);
  [kept release];
  printf("at the end: %d alive\n", alive);
  return alive == 0 ? 0 : 1;
}
