/* Tests of PKObject under GNUstep: one behaviour per test, named after it.
 *
 * A plain program: runs every test, prints one line per failed check and a
 * last line "N passed, M failed"; exit status 0 when nothing failed.
 */
#import <Foundation/Foundation.h>
#import <poolkit/PKObject.h>

#include <objc/runtime.h>
#include <poolkit/pool.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int checks_failed;
static int tests_passed, tests_failed;

#define CHECK(cond)                                                          \
  do {                                                                       \
      if (!(cond))                                                           \
        {                                                                    \
          fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, \
                  #cond);                                                    \
          checks_failed++;                                                   \
        }                                                                    \
  } while (0)

static void
run_test(const char *name, void (*fn)(void))
{
  int before = checks_failed;
  NSAutoreleasePool *arp = [NSAutoreleasePool new];
  @try
    {
      fn();
    }
  @catch (NSException *e)
    {
      fprintf(stderr, "  exception: %s: %s\n", [[e name] UTF8String],
              [[e reason] UTF8String]);
      checks_failed++;
    }
  [arp release];
  if (checks_failed == before)
    {
      tests_passed++;
      printf("ok   %s\n", name);
    }
  else
    {
      tests_failed++;
      printf("FAIL %s\n", name);
    }
  fflush(stdout);
}

/* ---- classes under test ---- */

/* Counts its deallocations (atomically: some tests dealloc on many threads). */
static long dealloc_count;

@interface Counted : PKObject
@end
@implementation Counted
- (void) dealloc
{
  __atomic_fetch_add(&dealloc_count, 1, __ATOMIC_RELAXED);
  [super dealloc];
}
@end

/* A subclass with instance variables of several kinds, and a -dealloc that
 * releases what it holds. */
@interface Point3 : Counted
{
@public
  int tag;
  double x, y, z;
  char label[20];
  id owned;
}
- (id) initWithTag: (int)t;
@end
@implementation Point3
- (id) initWithTag: (int)t
{
  if ((self = [super init]) != nil)
    tag = t;
  return self;
}
- (void) dealloc
{
  [owned release];
  [super dealloc];
}
@end

/* A subclass of the subclass: instances are larger again. */
@interface Point4 : Point3
{
@public
  double w;
}
@end
@implementation Point4
@end

/* Larger than PK_OBJECT_MAX_POOLED: allocated by GNUstep. */
@interface Huge : Counted
{
@public
  char bytes[PK_OBJECT_MAX_POOLED + 64];
}
@end
@implementation Huge
@end

/* Overrides +allocWithZone:, so +alloc and +new must go through it. */
static int custom_allocs;
@interface CustomAlloc : PKObject
@end
@implementation CustomAlloc
+ (id) allocWithZone: (NSZone *)zone
{
  custom_allocs++;
  return [super allocWithZone: zone];
}
@end

/* Overrides +alloc, so +new must send it. */
static int custom_plain_allocs;
@interface CustomPlainAlloc : PKObject
@end
@implementation CustomPlainAlloc
+ (id) alloc
{
  custom_plain_allocs++;
  return [super alloc];
}
@end

/* Its +initialize allocates instances of classes never used before, while
 * the first allocation of this class is being looked up. */
@interface FirstUser : PKObject
@end
@interface MadeInInitialize : PKObject
{
  double pad[9];
}
@end
@implementation MadeInInitialize
@end
static id made_in_initialize;
@implementation FirstUser
+ (void) initialize
{
  if (self == [FirstUser class])
    made_in_initialize = [MadeInInitialize new];
}
@end

/* ---- tests ---- */

static void
test_alloc_init_release_gives_an_instance_from_the_pool(void)
{
  PKObject *o = [[PKObject alloc] init];
  CHECK(o != nil);
  CHECK([o class] == [PKObject class]);
  CHECK([o isKindOfClass: [NSObject class]]);
  CHECK([PKObject instancePool] != NULL);
  CHECK(pk_pool_owner(o) == [PKObject instancePool]);
  [o release];
}

static void
test_new_and_allocWithZone_give_instances_from_the_pool(void)
{
  PKObject *a = [PKObject new];
  PKObject *b = [[PKObject allocWithZone: NSDefaultMallocZone()] init];
  PKObject *c = [[PKObject allocWithZone: NULL] init];
  CHECK(pk_pool_owner(a) == [PKObject instancePool]);
  CHECK(pk_pool_owner(b) == [PKObject instancePool]);
  CHECK(pk_pool_owner(c) == [PKObject instancePool]);
  CHECK(a != b && b != c && a != c);
  [a release];
  [b release];
  [c release];
}

static void
test_retainCount_follows_retain_and_release(void)
{
  PKObject *o = [PKObject new];
  CHECK([o retainCount] == 1);
  CHECK([o retain] == o);
  CHECK([o retainCount] == 2);
  [o retain];
  CHECK([o retainCount] == 3);
  [o release];
  CHECK([o retainCount] == 2);
  [o release];
  CHECK([o retainCount] == 1);
  [o release];
}

static void
test_dealloc_is_sent_exactly_once(void)
{
  long before = dealloc_count;
  Counted *o = [Counted new];
  int i;
  for (i = 0; i < 10; i++)
    [o retain];
  for (i = 0; i < 10; i++)
    [o release];
  CHECK(dealloc_count == before);
  [o release];
  CHECK(dealloc_count == before + 1);
}

static void
test_autorelease_defers_the_release_to_the_pool_drain(void)
{
  long before = dealloc_count;
  NSAutoreleasePool *arp = [NSAutoreleasePool new];
  Counted *o = [[Counted new] autorelease];
  CHECK([o retainCount] == 1);
  CHECK(dealloc_count == before);
  [arp release];
  CHECK(dealloc_count == before + 1);
}

static void
test_retained_object_survives_its_pool_drain(void)
{
  long before = dealloc_count;
  NSAutoreleasePool *arp = [NSAutoreleasePool new];
  Counted *o = [[[Counted new] autorelease] retain];
  CHECK([o retainCount] == 2);
  [arp release];
  CHECK(dealloc_count == before);
  CHECK([o retainCount] == 1);
  [o release];
  CHECK(dealloc_count == before + 1);
}

static void
test_nested_pools_release_their_own_objects(void)
{
  long before = dealloc_count;
  NSAutoreleasePool *outer = [NSAutoreleasePool new];
  [[Counted new] autorelease];
  NSAutoreleasePool *inner = [NSAutoreleasePool new];
  [[Counted new] autorelease];
  [[Counted new] autorelease];
  [inner release];
  CHECK(dealloc_count == before + 2);
  [outer drain];
  CHECK(dealloc_count == before + 3);
}

static void
test_many_autoreleased_objects_drain_with_the_pool(void)
{
  long before = dealloc_count;
  NSAutoreleasePool *arp = [NSAutoreleasePool new];
  int i;
  for (i = 0; i < 100000; i++)
    [[Counted new] autorelease];
  CHECK(dealloc_count == before);
  [arp release];
  CHECK(dealloc_count == before + 100000);
}

static void
test_new_instances_are_zeroed_even_when_memory_is_reused(void)
{
  /* Dirty many instances, free them, and allocate again: whatever memory
   * comes back must be zero apart from isa (NSObject's guarantee). */
  enum { N = 2000 };
  static Point4 *objs[N];
  int i, dirty = 0;
  for (i = 0; i < N; i++)
    {
      objs[i] = [Point4 new];
      objs[i]->tag = -1;
      objs[i]->x = objs[i]->y = objs[i]->z = objs[i]->w = 1.5;
      memset(objs[i]->label, 0x5a, sizeof objs[i]->label);
    }
  for (i = 0; i < N; i++)
    [objs[i] release];
  for (i = 0; i < N; i++)
    {
      Point4 *p = [Point4 new];
      const unsigned char *b = (const unsigned char *)p;
      size_t k, size = class_getInstanceSize([Point4 class]);
      for (k = sizeof(Class); k < size; k++)
        if (b[k] != 0)
          dirty++;
      if ([p retainCount] != 1)
        dirty++;
      objs[i] = p;
    }
  CHECK(dirty == 0);
  for (i = 0; i < N; i++)
    [objs[i] release];
}

static void
test_subclass_ivars_are_independent_of_the_count(void)
{
  Point3 *p = [[Point3 alloc] initWithTag: 7];
  CHECK(p->tag == 7);
  p->x = 1.0;
  p->y = 2.0;
  p->z = 3.0;
  strcpy(p->label, "nineteen characters");
  [p retain];
  CHECK([p retainCount] == 2);
  CHECK(p->x == 1.0 && p->y == 2.0 && p->z == 3.0 && p->tag == 7);
  CHECK(strcmp(p->label, "nineteen characters") == 0);
  [p release];
  CHECK([p retainCount] == 1);
  [p release];
}

static void
test_subclasses_use_the_pool_of_their_size_class(void)
{
  size_t s3 = class_getInstanceSize([Point3 class]);
  size_t s4 = class_getInstanceSize([Point4 class]);
  Point3 *a = [Point3 new];
  Point4 *b = [Point4 new];
  pk_pool_stats st;

  CHECK(s3 > class_getInstanceSize([PKObject class]));
  CHECK(pk_pool_owner(a) == [Point3 instancePool]);
  CHECK(pk_pool_owner(b) == [Point4 instancePool]);
  pk_pool_stats_get([Point3 instancePool], &st);
  CHECK(st.size >= s3 && st.size < s3 + 16);
  CHECK(st.size % 16 == 0);
  if ((s3 + 15) / 16 != (s4 + 15) / 16)
    CHECK([Point3 instancePool] != [Point4 instancePool]);
  /* Counted has the same size as PKObject: one size class, one pool. */
  CHECK([Counted instancePool] == [PKObject instancePool]);
  [a release];
  [b release];
}

static void
test_dealloc_releases_what_the_subclass_holds(void)
{
  long before = dealloc_count;
  Point3 *p = [Point3 new];
  p->owned = [Counted new];
  [p release];
  CHECK(dealloc_count == before + 2);
}

static void
test_memory_goes_back_to_the_pool(void)
{
  enum { N = 5000 };
  static Point3 *objs[N];
  pk_pool *pool = [Point3 instancePool];
  pk_pool_stats st;
  int i;

  pk_pool_trim(pool);
  pk_pool_stats_get(pool, &st);
  size_t live0 = st.live;
  for (i = 0; i < N; i++)
    objs[i] = [Point3 new];
  pk_pool_stats_get(pool, &st);
  CHECK(st.live == live0 + N);
  for (i = 0; i < N; i++)
    [objs[i] release];
  pk_pool_stats_get(pool, &st);
  CHECK(st.live == live0);
  /* With nothing live, trimming gives every slab back to the system. */
  pk_pool_trim(pool);
  pk_pool_stats_get(pool, &st);
  if (live0 == 0)
    CHECK(st.bytes_reserved == 0);
}

static void
test_reserveInstances_makes_instances_ready(void)
{
  CHECK([Point4 reserveInstances: 1000] >= 1000);
  CHECK([Huge reserveInstances: 10] == 0);
}

static void
test_large_classes_come_from_gnustep(void)
{
  long before = dealloc_count;
  Huge *h = [Huge new];
  CHECK([Huge instancePool] == NULL);
  CHECK(pk_pool_owner(h) == NULL);
  CHECK(h->bytes[0] == 0 && h->bytes[sizeof h->bytes - 1] == 0);
  [h retain];
  CHECK([h retainCount] == 2);
  [h release];
  [h release];
  CHECK(dealloc_count == before + 1);
}

static void
test_alloc_goes_through_an_overridden_allocWithZone(void)
{
  int before = custom_allocs;
  CustomAlloc *a = [CustomAlloc alloc];
  CustomAlloc *b = [CustomAlloc new];
  CHECK(custom_allocs == before + 2);
  CHECK(pk_pool_owner(a) == [CustomAlloc instancePool]);
  [[a init] release];
  [b release];
}

static void
test_new_goes_through_an_overridden_alloc(void)
{
  int before = custom_plain_allocs;
  CustomPlainAlloc *a = [CustomPlainAlloc new];
  CustomPlainAlloc *b = [[CustomPlainAlloc alloc] init];
  CHECK(custom_plain_allocs == before + 2);
  CHECK(pk_pool_owner(a) == [CustomPlainAlloc instancePool]);
  [a release];
  [b release];
}

static void
test_initialize_may_allocate_other_classes(void)
{
  /* PKAllocateObject sends no message, so FirstUser's +initialize runs
   * inside the class lookup, and allocates. */
  FirstUser *f = PKAllocateObject(objc_getClass("FirstUser"));
  CHECK(f != nil && made_in_initialize != nil);
  CHECK([made_in_initialize class] == [MadeInInitialize class]);
  [made_in_initialize release];
  [f release];
}

static void
test_zone_is_the_default_zone(void)
{
  PKObject *o = [PKObject new];
  CHECK([o zone] == NSDefaultMallocZone());
  [o release];
}

static void
test_PKAllocateObject_gives_a_zeroed_instance(void)
{
  Point3 *p = PKAllocateObject([Point3 class]);
  CHECK([p class] == [Point3 class]);
  CHECK(p->tag == 0 && p->owned == nil);
  CHECK([p retainCount] == 1);
  [p release];
}

static void
test_classes_made_at_run_time_get_pools(void)
{
  /* More classes than the class table holds, each with its own ivar size:
   * exercises the table, its overflow list and lazy pool creation. */
  enum { N = 900 };
  int i, bad = 0;
  for (i = 0; i < N; i++)
    {
      char name[64];
      snprintf(name, sizeof name, "PKTestDynamic%d", i);
      Class c = objc_allocateClassPair([Counted class], name, 0);
      if (c == Nil)
        {
          bad++;
          continue;
        }
      class_addIvar(c, "payload", (size_t)(i % 40) * 8 + 8, 3, "c");
      objc_registerClassPair(c);
      id o = [[c alloc] init];
      if ([o class] != c || [o retainCount] != 1)
        bad++;
      if (pk_pool_owner(o) != [c instancePool])
        bad++;
      [o release];
    }
  CHECK(bad == 0);
  /* And they still work after the table filled up. */
  Class c0 = objc_getClass("PKTestDynamic0");
  Class cl = objc_getClass("PKTestDynamic899");
  id a = [c0 new], b = [cl new];
  CHECK([a class] == c0 && [b class] == cl);
  [a release];
  [b release];
}

/* ---- threads ---- */

typedef struct shared_arg {
  id obj;
  int rounds;
} shared_arg;

static void *
retain_release_many(void *p)
{
  shared_arg *a = p;
  int i;
  GSRegisterCurrentThread();
  NSAutoreleasePool *arp = [NSAutoreleasePool new];
  for (i = 0; i < a->rounds; i++)
    {
      [a->obj retain];
      if (i % 64 == 0)
        [[a->obj retain] autorelease];
      [a->obj release];
      if (i % 1024 == 0)
        {
          [arp release];
          arp = [NSAutoreleasePool new];
        }
    }
  [arp release];
  GSUnregisterCurrentThread();
  return NULL;
}

static void
test_many_threads_retain_and_release_one_object(void)
{
  enum { THREADS = 8 };
  long before = dealloc_count;
  pthread_t t[THREADS];
  shared_arg arg = { [Counted new], 200000 };
  int i;
  for (i = 0; i < THREADS; i++)
    pthread_create(&t[i], NULL, retain_release_many, &arg);
  for (i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  CHECK([arg.obj retainCount] == 1);
  CHECK(dealloc_count == before);
  [arg.obj release];
  CHECK(dealloc_count == before + 1);
}

/* Every thread holds one reference to each object of a batch and releases
 * it at the same moment as the others: exactly one -dealloc per object. */
enum { RACE_THREADS = 4, RACE_OBJECTS = 20000 };
static id race_objs[RACE_OBJECTS];
static pthread_barrier_t race_barrier;

static void *
release_race(void *p)
{
  int i;
  (void)p;
  GSRegisterCurrentThread();
  pthread_barrier_wait(&race_barrier);
  for (i = 0; i < RACE_OBJECTS; i++)
    [race_objs[i] release];
  GSUnregisterCurrentThread();
  return NULL;
}

static void
test_last_release_races_dealloc_exactly_once(void)
{
  pthread_t t[RACE_THREADS];
  long before = dealloc_count;
  int i, k;
  for (i = 0; i < RACE_OBJECTS; i++)
    {
      race_objs[i] = [Counted new];
      for (k = 1; k < RACE_THREADS; k++)
        [race_objs[i] retain];
    }
  pthread_barrier_init(&race_barrier, NULL, RACE_THREADS);
  for (i = 0; i < RACE_THREADS; i++)
    pthread_create(&t[i], NULL, release_race, NULL);
  for (i = 0; i < RACE_THREADS; i++)
    pthread_join(t[i], NULL);
  pthread_barrier_destroy(&race_barrier);
  CHECK(dealloc_count == before + RACE_OBJECTS);
}

/* A producer makes objects, a consumer on another thread releases them. */
enum { HANDOFF = 100000, RING = 1024 };
static id handoff_ring[RING];
static unsigned long handoff_head, handoff_tail;

static void *
consume(void *p)
{
  unsigned long n = 0;
  (void)p;
  GSRegisterCurrentThread();
  while (n < HANDOFF)
    {
      unsigned long head = __atomic_load_n(&handoff_head, __ATOMIC_ACQUIRE);
      while (n < head)
        {
          [handoff_ring[n % RING] release];
          n++;
          __atomic_store_n(&handoff_tail, n, __ATOMIC_RELEASE);
        }
      if (n == head)
        sched_yield();
    }
  GSUnregisterCurrentThread();
  return NULL;
}

static void
test_objects_released_on_another_thread_go_back_to_the_pool(void)
{
  long before = dealloc_count;
  pk_pool *pool = [Point3 instancePool];
  pk_pool_stats st0, st1;
  pthread_t t;
  unsigned long i;

  pk_pool_stats_get(pool, &st0);
  pthread_create(&t, NULL, consume, NULL);
  for (i = 0; i < HANDOFF; i++)
    {
      while (i - __atomic_load_n(&handoff_tail, __ATOMIC_ACQUIRE) >= RING)
        sched_yield();
      Point3 *p = [[Point3 alloc] initWithTag: (int)i];
      p->owned = [Counted new];
      handoff_ring[i % RING] = p;
      __atomic_store_n(&handoff_head, i + 1, __ATOMIC_RELEASE);
    }
  pthread_join(t, NULL);
  CHECK(dealloc_count == before + 2 * HANDOFF);
  pk_pool_stats_get(pool, &st1);
  CHECK(st1.live == st0.live);
  CHECK(st1.remote_frees > st0.remote_frees);
}

/* Several threads create classes' first instances at once: one pool per
 * size class, whoever gets there first. */
static Class fresh_classes[8];
static pk_pool *seen_pools[8];

static void *
first_instances(void *p)
{
  long k = (long)p;
  int i;
  GSRegisterCurrentThread();
  pthread_barrier_wait(&race_barrier);
  for (i = 0; i < 8; i++)
    {
      int c = (int)((i + k) % 8);
      id o = [fresh_classes[c] new];
      pk_pool *owner = pk_pool_owner(o);
      pk_pool *prev = __sync_val_compare_and_swap(&seen_pools[c], NULL, owner);
      if (prev != NULL && prev != owner)
        __atomic_store_n(&seen_pools[c], (pk_pool *)1, __ATOMIC_RELAXED);
      [o release];
    }
  GSUnregisterCurrentThread();
  return NULL;
}

static void
test_first_allocations_on_many_threads_share_one_pool(void)
{
  enum { THREADS = 8 };
  pthread_t t[THREADS];
  long i;
  for (i = 0; i < 8; i++)
    {
      char name[64];
      snprintf(name, sizeof name, "PKTestFresh%ld", i);
      Class c = objc_allocateClassPair([PKObject class], name, 0);
      /* Sizes well past the other tests' size classes, two classes each. */
      class_addIvar(c, "payload", (size_t)(2000 + (i / 2) * 160), 3, "c");
      objc_registerClassPair(c);
      fresh_classes[i] = c;
    }
  pthread_barrier_init(&race_barrier, NULL, THREADS);
  for (i = 0; i < THREADS; i++)
    pthread_create(&t[i], NULL, first_instances, (void *)i);
  for (i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  pthread_barrier_destroy(&race_barrier);
  for (i = 0; i < 8; i++)
    {
      CHECK(seen_pools[i] != NULL && seen_pools[i] != (pk_pool *)1);
      CHECK(seen_pools[i] == [fresh_classes[i] instancePool]);
    }
  CHECK(seen_pools[0] == seen_pools[1]);
  CHECK(seen_pools[0] != seen_pools[2]);
}

int
main(void)
{
  NSAutoreleasePool *arp = [NSAutoreleasePool new];
  /* A deadlock fails the run instead of hanging it. */
  alarm(300);
#define RUN(t) run_test(#t, t)
  RUN(test_alloc_init_release_gives_an_instance_from_the_pool);
  RUN(test_new_and_allocWithZone_give_instances_from_the_pool);
  RUN(test_retainCount_follows_retain_and_release);
  RUN(test_dealloc_is_sent_exactly_once);
  RUN(test_autorelease_defers_the_release_to_the_pool_drain);
  RUN(test_retained_object_survives_its_pool_drain);
  RUN(test_nested_pools_release_their_own_objects);
  RUN(test_many_autoreleased_objects_drain_with_the_pool);
  RUN(test_new_instances_are_zeroed_even_when_memory_is_reused);
  RUN(test_subclass_ivars_are_independent_of_the_count);
  RUN(test_subclasses_use_the_pool_of_their_size_class);
  RUN(test_dealloc_releases_what_the_subclass_holds);
  RUN(test_memory_goes_back_to_the_pool);
  RUN(test_reserveInstances_makes_instances_ready);
  RUN(test_large_classes_come_from_gnustep);
  RUN(test_alloc_goes_through_an_overridden_allocWithZone);
  RUN(test_new_goes_through_an_overridden_alloc);
  RUN(test_initialize_may_allocate_other_classes);
  RUN(test_zone_is_the_default_zone);
  RUN(test_PKAllocateObject_gives_a_zeroed_instance);
  RUN(test_classes_made_at_run_time_get_pools);
  RUN(test_many_threads_retain_and_release_one_object);
  RUN(test_last_release_races_dealloc_exactly_once);
  RUN(test_objects_released_on_another_thread_go_back_to_the_pool);
  RUN(test_first_allocations_on_many_threads_share_one_pool);
  [arp release];
  printf("%d passed, %d failed\n", tests_passed, tests_failed);
  return tests_failed == 0 ? 0 : 1;
}
