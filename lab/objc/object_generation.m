/* object-generation: "Optimized Object Generation" (Mulle kybernetiK, 2002),
 * written anew for GNUstep.
 *
 * Five remedies for slow object creation, each measured right after its
 * baseline, on a small class (an int, an object and a pointer):
 *   avoid autorelease    [cls objectWithValue: i] (alloc/init/autorelease,
 *                        a pool released every 1,000 objects) against
 *                        [[cls alloc] initWithValue: i] ... [o release];
 *   allocWithZone:       [[cls allocWithZone: NULL] initWithValue: i]
 *                        against [[cls alloc] initWithValue: i];
 *   custom +new          [cls newWithValue: i], one call that allocates
 *                        (NSAllocateObject) and sets the fields, against
 *                        alloc/initWithValue:;
 *   ring buffer          a class whose -dealloc parks the instance in a
 *                        fixed ring of 10,000 slots and whose +allocWithZone:
 *                        takes one back (zeroed) before asking the zone;
 *   bunches              a class whose instances are carved 16 at a time
 *                        from one malloc, freed when all 16 are freed.
 * Ring buffer and bunches are compared with plain alloc/init/release, as in
 * the study; like the study's, they are single-threaded.
 *
 * PKObject rows: the first three remedies done on a PKObject subclass (its
 * +newWithValue: uses PKAllocateObject); for the ring buffer and bunches,
 * PKObject itself is the remedy (pooled, reused memory) and is compared with
 * the GNUstep baseline. The study's headline, allocation "300% faster" than
 * Foundation, is that last comparison.
 *
 * Params: remedy ("avoid autorelease", "allocWithZone", "custom new",
 * "ring buffer", "bunches"), variant ("baseline", "remedy"), objects.
 * Unit: ns per object (create and release), net of the empty loop; every
 * remedy row carries extra "speedup": baseline / remedy.
 */
#import "lab_objc.h"
#import <poolkit/PKObject.h>

#include <objc/runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the classes ---- */

@interface GenObject : NSObject
{
@public
  int value;
  id link;
  void *spare; /* GenBunch keeps its bunch here, so all sizes are equal */
}
+ (id) objectWithValue: (int)v;
+ (id) newWithValue: (int)v;
- (id) initWithValue: (int)v;
@end

@implementation GenObject
+ (id) objectWithValue: (int)v
{
  return [[[self alloc] initWithValue: v] autorelease];
}
+ (id) newWithValue: (int)v
{
  GenObject *o = (GenObject *)NSAllocateObject(self, 0, NULL);
  o->value = v;
  return o;
}
- (id) initWithValue: (int)v
{
  if ((self = [super init]) != nil)
    value = v;
  return self;
}
@end

/* The same class on PKObject. */
@interface PKGenObject : PKObject
{
@public
  int value;
  id link;
  void *spare;
}
+ (id) objectWithValue: (int)v;
+ (id) newWithValue: (int)v;
- (id) initWithValue: (int)v;
@end

@implementation PKGenObject
+ (id) objectWithValue: (int)v
{
  return [[[self alloc] initWithValue: v] autorelease];
}
+ (id) newWithValue: (int)v
{
  PKGenObject *o = PKAllocateObject(self);
  o->value = v;
  return o;
}
- (id) initWithValue: (int)v
{
  if ((self = [super init]) != nil)
    value = v;
  return self;
}
@end

/* Ring buffer: freed instances wait in a FIFO ring of 10,000 slots. */
enum { RING_SLOTS = 10000 };
static id ring[RING_SLOTS];
static unsigned ring_head, ring_count;
static size_t ring_instance_size;

@interface GenRing : GenObject
@end

@implementation GenRing
+ (void) initialize
{
  ring_instance_size = class_getInstanceSize(self);
}
+ (id) allocWithZone: (NSZone *)zone
{
  if (ring_count > 0)
    {
      id o = ring[ring_head];
      if (++ring_head == RING_SLOTS)
        ring_head = 0;
      ring_count--;
      /* As new: every field zero (GNUstep's count is already 0). */
      memset((char *)o + sizeof(Class), 0, ring_instance_size - sizeof(Class));
      return o;
    }
  return NSAllocateObject(self, 0, zone);
}
- (void) dealloc
{
  if (ring_count < RING_SLOTS)
    {
      unsigned tail = ring_head + ring_count;
      if (tail >= RING_SLOTS)
        tail -= RING_SLOTS;
      ring[tail] = self;
      ring_count++;
      return;
    }
  [super dealloc];
}
@end

/* Bunches: 16 instances (each behind GNUstep's 16-byte header) per malloc. */
enum { BUNCH_OBJECTS = 16, GS_HEADER = 16 };
typedef struct bunch {
  unsigned handed, live;
  uint64_t pad; /* slots start 16-aligned */
  char slots[];
} bunch;
static bunch *current_bunch;
static size_t bunch_slot_bytes;

@interface GenBunch : GenObject
@end

@implementation GenBunch
+ (void) initialize
{
  bunch_slot_bytes = GS_HEADER + (class_getInstanceSize(self) + 15) / 16 * 16;
}
+ (id) allocWithZone: (NSZone *)zone
{
  bunch *b = current_bunch;
  (void)zone;
  if (b == NULL)
    {
      b = malloc(sizeof(bunch) + BUNCH_OBJECTS * bunch_slot_bytes);
      if (b == NULL)
        [NSException raise: NSMallocException format: @"no memory for a bunch"];
      b->handed = b->live = 0;
      current_bunch = b;
    }
  char *slot = b->slots + b->handed * bunch_slot_bytes;
  memset(slot, 0, bunch_slot_bytes);
  GenBunch *o = (GenBunch *)(slot + GS_HEADER);
  object_setClass(o, self);
  o->spare = b;
  b->live++;
  if (++b->handed == BUNCH_OBJECTS)
    current_bunch = NULL; /* full: freed by the last of its objects' -dealloc */
  return o;
}
- (void) dealloc
{
  bunch *b = spare;
  if (--b->live == 0 && b->handed == BUNCH_OBJECTS)
    free(b);
  /* The memory is the bunch's: NSObject's -dealloc must not free it. */
  if (0)
    [super dealloc];
}
@end

/* ---- kernels ---- */

#define LOOP_BEGIN                 \
  long i;                          \
  (void)arg;                       \
  double t0 = lab_now_ns();        \
  for (i = 0; i < n; i++)          \
    {
#define LOOP_END                   \
    }                              \
  return lab_now_ns() - t0;

/* A pool released every 1,000 objects, for the autoreleasing loops. */
#define POOLED_LOOP_BEGIN                                   \
  Class pool_class = [NSAutoreleasePool class];             \
  NSAutoreleasePool *pool = [[pool_class alloc] init];      \
  long i;                                                   \
  (void)arg;                                                \
  double t0 = lab_now_ns();                                 \
  for (i = 0; i < n; i++)                                   \
    {                                                       \
      if (i % 1000 == 999)                                  \
        {                                                   \
          [pool release];                                   \
          pool = [[pool_class alloc] init];                 \
        }
#define POOLED_LOOP_END                                     \
    }                                                       \
  [pool release];                                           \
  return lab_now_ns() - t0;

/* One kernel: n objects of CLASS made by CREATE (an expression over cls
 * and i), each released at once. */
#define GEN_KERNEL(NAME, CLASS, CREATE)                                   \
  static LAB_KERNEL double NAME(long n, long arg)                         \
  {                                                                       \
    Class cls = [CLASS class];                                            \
    LOOP_BEGIN                                                            \
      id o = CREATE;                                                      \
      LAB_ESCAPE(o);                                                      \
      [o release];                                                        \
    LOOP_END                                                              \
  }
#define GEN_KERNELS(P, CLASS)                                             \
  static LAB_KERNEL double P##_convenience(long n, long arg)              \
  {                                                                       \
    Class cls = [CLASS class];                                            \
    POOLED_LOOP_BEGIN                                                     \
      id o = [cls objectWithValue: (int)i];                               \
      LAB_ESCAPE(o);                                                      \
    POOLED_LOOP_END                                                       \
  }                                                                       \
  GEN_KERNEL(P##_alloc_init, CLASS, [[cls alloc] initWithValue: (int)i])  \
  GEN_KERNEL(P##_zone_init, CLASS, [[cls allocWithZone: NULL] initWithValue: (int)i]) \
  GEN_KERNEL(P##_custom_new, CLASS, [cls newWithValue: (int)i])

GEN_KERNELS(gs, GenObject)
GEN_KERNELS(pk, PKGenObject)
GEN_KERNELS(ring, GenRing)
GEN_KERNELS(bunch, GenBunch)

/* ---- rows ---- */

static int
add(lab_row *r, int *count, int pk, const char *remedy, const char *variant, lab_kernel k,
    long n, int baseline, const char *code)
{
  char params[160];
  snprintf(params, sizeof params, "{\"remedy\":\"%s\",\"variant\":\"%s\",\"objects\":%ld}",
           remedy, variant, n);
  int i = lab_add(r, count, pk ? "PKObject" : "GNUstep NSObject", pk ? "poolkit" : "peer",
                  params, k, n, 0, 1, 1.0);
  r[i].baseline = baseline;
  snprintf(r[i].extra, sizeof r[i].extra, "\"code\":\"%s\"", code);
  return i;
}

static int
rows(lab_row *r, lab_scale scale)
{
  const lab_sizes sizes = { 20000, 500000, 2000000, 10000000 };
  long n = lab_size(sizes, scale);
  int count = 0, b;
  const char *conv = "[cls objectWithValue:i] (alloc/init/autorelease; pool per 1000)";
  const char *plain = "[[cls alloc] initWithValue:i] ... [o release]";
  const char *zone = "[[cls allocWithZone:NULL] initWithValue:i] ... [o release]";

  b = add(r, &count, 0, "avoid autorelease", "baseline", gs_convenience, n, -1, conv);
  add(r, &count, 0, "avoid autorelease", "remedy", gs_alloc_init, n, b, plain);
  b = add(r, &count, 1, "avoid autorelease", "baseline", pk_convenience, n, -1, conv);
  add(r, &count, 1, "avoid autorelease", "remedy", pk_alloc_init, n, b, plain);

  b = add(r, &count, 0, "allocWithZone", "baseline", gs_alloc_init, n, -1, plain);
  add(r, &count, 0, "allocWithZone", "remedy", gs_zone_init, n, b, zone);
  b = add(r, &count, 1, "allocWithZone", "baseline", pk_alloc_init, n, -1, plain);
  add(r, &count, 1, "allocWithZone", "remedy", pk_zone_init, n, b, zone);

  b = add(r, &count, 0, "custom new", "baseline", gs_alloc_init, n, -1, plain);
  add(r, &count, 0, "custom new", "remedy", gs_custom_new, n, b,
      "[cls newWithValue:i]: NSAllocateObject and set fields");
  b = add(r, &count, 1, "custom new", "baseline", pk_alloc_init, n, -1, plain);
  add(r, &count, 1, "custom new", "remedy", pk_custom_new, n, b,
      "[cls newWithValue:i]: PKAllocateObject and set fields");

  b = add(r, &count, 0, "ring buffer", "baseline", gs_alloc_init, n, -1, plain);
  add(r, &count, 0, "ring buffer", "remedy", ring_alloc_init, n, b,
      "alloc/init/release of a class recycling through a 10,000-slot ring");
  add(r, &count, 1, "ring buffer", "remedy", pk_alloc_init, n, b,
      "alloc/init/release of a PKObject subclass (pooled memory instead of the ring)");

  b = add(r, &count, 0, "bunches", "baseline", gs_alloc_init, n, -1, plain);
  add(r, &count, 0, "bunches", "remedy", bunch_alloc_init, n, b,
      "alloc/init/release of a class carved 16 per malloc");
  add(r, &count, 1, "bunches", "remedy", pk_alloc_init, n, b,
      "alloc/init/release of a PKObject subclass (pooled memory instead of bunches)");
  return count;
}

const lab_experiment lab_object_generation = { "object-generation", "ns/object", rows };
