/* PKObject: NSObject instances from poolkit pools, with an inline count.
 *
 * How GNUstep does it, and why PKObject overrides what it does.
 *
 * Debian's gnustep-base (1.28) runs on gcc's own Objective-C runtime
 * (libobjc4, "GNU runtime"), not on libobjc2. Its NSObject keeps an
 * object's reference count in a hidden 16-byte header *before* the object
 * (struct obj_layout: padding, then an intptr_t `retained` at self - 8,
 * holding the references beyond the first):
 *   - +alloc sends +allocWithZone:, which calls NSAllocateObject: it mallocs
 *     instance size + 16 from the zone, zeroes it all, returns base + 16 with
 *     isa set (and runs C++ constructors and allocation statistics);
 *   - -retain is `lock xadd` +1 on self[-8]; -release is `lock xadd` -1 and,
 *     when the count was already 0, sends -dealloc; -retainCount is
 *     self[-8] + 1;
 *   - -dealloc (NSDeallocateObject) finds the zone of self - 16, poisons isa
 *     (0xdeadface) and frees self - 16;
 *   - -autorelease hands self to +[NSAutoreleasePool addObject:] through a
 *     cached IMP; the pool later sends -release.
 * Nothing else in gnustep-base touches another class's header: the few other
 * callers of NSIncrementExtraRefCount / NSDecrementExtraRefCountWasZero are
 * classes' own -retain/-release on themselves (checked in the library's
 * code). So PKObject needs no hidden header as long as it overrides every
 * method that reads it: +alloc, +allocWithZone:, +new, -retain, -release,
 * -retainCount, -dealloc and -zone. -autorelease stays NSObject's, since
 * it only sends +addObject: and, later, -release.
 *
 * The inline count. _pk_extra_refs holds the references beyond the first,
 * as GNUstep's header does, so a zeroed instance has retainCount 1.
 *   - retain: relaxed atomic add (a reference can only be copied by a thread
 *     that holds one, so no ordering is needed to make it).
 *   - release: an acquire load first; 0 means the caller holds the only
 *     reference, so no other thread can touch the count and -dealloc is sent
 *     with no read-modify-write (the common create/release case). Otherwise
 *     a release-ordered decrement; the thread that takes it from 0 to -1 held
 *     the last reference: it fences (acquire) so that every other thread's
 *     writes happen before -dealloc, resets the count and sends -dealloc.
 *     Exactly one thread sees each step, so -dealloc is sent exactly once.
 *
 * Pools and the class table. Each size class (instance size rounded up to
 * 16 bytes, up to PK_OBJECT_MAX_POOLED) has one pk_pool, created under
 * table_lock on first use. Allocation and -dealloc need the pool and the
 * size from the class, so each class gets a class_info in an open-addressing
 * table keyed by the Class pointer: entries are filled under table_lock and
 * published by a release store of the key, and read with no lock. Entries
 * are never removed (the GNU runtime never unloads classes). The table is
 * kept at most 3/4 full; classes beyond that go to an overflow list, also
 * read with no lock (nodes are prepended with a release store, never freed).
 * A class_info also records whether the class overrides +alloc or
 * +allocWithZone:, so that +alloc and +new skip the extra message unless an
 * override must run. Nothing that can run the program's code (+initialize,
 * sent by a first IMP lookup) runs under table_lock, so a +initialize that
 * allocates PKObjects cannot deadlock; the lock is a leaf.
 */
#import "PKObject.h"

#import <Foundation/NSException.h>
#import <Foundation/NSZone.h>

#include <objc/runtime.h>
#include <poolkit/pool.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PK_LIKELY(x) __builtin_expect(!!(x), 1)
#define PK_UNLIKELY(x) __builtin_expect(!!(x), 0)

enum {
  SIZE_STEP = 16,                                 /* size-class granularity */
  SIZE_CLASSES = PK_OBJECT_MAX_POOLED / SIZE_STEP, /* pools for 16 .. MAX bytes */
  TABLE_SLOTS = 1024,                             /* power of two */
  TABLE_MAX_USED = TABLE_SLOTS / 4 * 3
};

typedef enum {
  ROUTE_DIRECT,               /* +alloc and +new take memory straight from the pool */
  ROUTE_SEND_ALLOC_WITH_ZONE, /* the class overrides +allocWithZone: */
  ROUTE_SEND_ALLOC            /* the class overrides +alloc (+new must send it) */
} alloc_route;

typedef struct class_info {
  Class cls;               /* the key: stored last (release), read first (acquire) */
  pk_pool *pool;           /* NULL: instances come from NSAllocateObject */
  size_t bytes;            /* bytes zeroed at allocation: the pool's object size */
  alloc_route route;
  struct class_info *next; /* overflow list only */
} class_info;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static class_info table[TABLE_SLOTS];
static size_t table_used;                  /* under table_lock */
static class_info *overflow;               /* prepended under table_lock */
static pk_pool *size_pools[SIZE_CLASSES];  /* index: bytes / 16 - 1; under table_lock */
static char pool_names[SIZE_CLASSES][32];

static inline size_t
table_home(Class cls)
{
  /* Fibonacci hashing of the pointer: classes sit close together in memory. */
  uint64_t h = (uint64_t)(uintptr_t)cls * UINT64_C(0x9E3779B97F4A7C15);
  return (size_t)(h >> 54) & (TABLE_SLOTS - 1); /* top 10 bits */
}

static const class_info *class_info_slow(Class cls);

/* The class_info of cls, made on first use. Lock-free once it exists. */
static inline const class_info *
class_info_of(Class cls)
{
  size_t i = table_home(cls);
  for (;;)
    {
      Class k = __atomic_load_n(&table[i].cls, __ATOMIC_ACQUIRE);
      if (PK_LIKELY(k == cls))
        return &table[i];
      if (k == Nil)
        return class_info_slow(cls);
      i = (i + 1) & (TABLE_SLOTS - 1);
    }
}

/* The pool for objects of `bytes` (a multiple of 16); under table_lock.
 * NULL with errno set when poolkit cannot make one. */
static pk_pool *
size_pool_locked(size_t bytes)
{
  size_t idx = bytes / SIZE_STEP - 1;
  if (size_pools[idx] == NULL)
    {
      snprintf(pool_names[idx], sizeof pool_names[idx], "PKObject %zu", bytes);
      pk_pool_config cfg;
      memset(&cfg, 0, sizeof cfg);
      cfg.name = pool_names[idx];
      cfg.size = bytes;
      cfg.align = SIZE_STEP; /* what malloc gives NSObject: any ivar fits */
      size_pools[idx] = pk_pool_create(&cfg);
    }
  return size_pools[idx];
}

/* How +alloc and +new reach the memory for cls: straight to the pool unless
 * the class overrides +alloc or +allocWithZone:, whose overrides must run.
 * Looking up IMPs may send +initialize to a class not yet initialized, and
 * its code may allocate: so this runs before table_lock is taken. */
static alloc_route
alloc_route_of(Class cls)
{
  Class meta = object_getClass(cls);
  Class base = object_getClass([PKObject class]);
  if (class_getMethodImplementation(meta, @selector(alloc))
      != class_getMethodImplementation(base, @selector(alloc)))
    return ROUTE_SEND_ALLOC;
  if (class_getMethodImplementation(meta, @selector(allocWithZone:))
      != class_getMethodImplementation(base, @selector(allocWithZone:)))
    return ROUTE_SEND_ALLOC_WITH_ZONE;
  return ROUTE_DIRECT;
}

static __attribute__((noinline)) const class_info *
class_info_slow(Class cls)
{
  class_info *found = NULL, *o;
  size_t i;

  for (o = __atomic_load_n(&overflow, __ATOMIC_ACQUIRE); o != NULL; o = o->next)
    if (o->cls == cls)
      return o;
  if (cls == Nil || !class_isMetaClass(object_getClass(cls)))
    {
      [NSException raise: NSInvalidArgumentException
                  format: @"PKObject: %p is not a class", (void *)cls];
    }

  /* Everything that may run the program's code, before the lock. */
  class_info fresh;
  memset(&fresh, 0, sizeof fresh);
  fresh.cls = cls;
  fresh.bytes = (class_getInstanceSize(cls) + SIZE_STEP - 1) / SIZE_STEP * SIZE_STEP;
  fresh.route = alloc_route_of(cls);

  pthread_mutex_lock(&table_lock);
  /* Another thread may have added it meanwhile: look again under the lock. */
  i = table_home(cls);
  while (table[i].cls != Nil && table[i].cls != cls)
    i = (i + 1) & (TABLE_SLOTS - 1);
  if (table[i].cls == cls)
    found = &table[i];
  for (o = overflow; found == NULL && o != NULL; o = o->next)
    if (o->cls == cls)
      found = o;
  if (found != NULL)
    {
      pthread_mutex_unlock(&table_lock);
      return found;
    }

  bool pooled = fresh.bytes <= PK_OBJECT_MAX_POOLED;
  if (pooled)
    fresh.pool = size_pool_locked(fresh.bytes);
  if (!pooled || fresh.pool != NULL)
    {
      if (table_used < TABLE_MAX_USED)
        {
          class_info *e = &table[i];
          e->pool = fresh.pool;
          e->bytes = fresh.bytes;
          e->route = fresh.route;
          __atomic_store_n(&e->cls, cls, __ATOMIC_RELEASE);
          table_used++;
          found = e;
        }
      else if ((o = malloc(sizeof *o)) != NULL)
        {
          *o = fresh;
          o->next = overflow;
          __atomic_store_n(&overflow, o, __ATOMIC_RELEASE);
          found = o;
        }
    }
  pthread_mutex_unlock(&table_lock);
  if (found == NULL)
    {
      /* Nothing cached: a later allocation tries again. */
      [NSException raise: NSMallocException
                  format: @"PKObject: no memory for a pool for class %s (%zu bytes)",
                  class_getName(cls), fresh.bytes];
    }
  return found;
}

static __attribute__((noinline, noreturn)) void
allocation_failed(Class cls)
{
  [NSException raise: NSMallocException
              format: @"PKObject: no memory for an instance of %s",
              class_getName(cls)];
  abort();
}

/* Zeroes a pool object of `bytes` (a multiple of 16). The small sizes, by
 * far the common ones, are done with a few stores and no call. */
static inline void
zero_object(void *mem, size_t bytes)
{
  uint64_t *w = mem;
  if (PK_LIKELY(bytes <= 64))
    {
      w[0] = 0;
      w[1] = 0;
      if (bytes > 16)
        {
          w[2] = 0;
          w[3] = 0;
          if (bytes > 32)
            {
              w[4] = 0;
              w[5] = 0;
              if (bytes > 48)
                {
                  w[6] = 0;
                  w[7] = 0;
                }
            }
        }
      return;
    }
  memset(mem, 0, bytes);
}

static inline id
allocate_instance(Class cls, const class_info *ci)
{
  if (PK_LIKELY(ci->pool != NULL))
    {
      void *mem = pk_pool_alloc(ci->pool);
      if (PK_UNLIKELY(mem == NULL))
        allocation_failed(cls);
      zero_object(mem, ci->bytes);
      /* isa is the first word in every Objective-C runtime. */
      *(Class *)mem = cls;
      return (id)mem;
    }
  return NSAllocateObject(cls, 0, NSDefaultMallocZone());
}

id
PKAllocateObject(Class cls)
{
  return allocate_instance(cls, class_info_of(cls));
}

void
PKDeallocateObject(id obj)
{
  if (obj == nil)
    return;
  const class_info *ci = class_info_of(*(Class *)obj);
  if (PK_LIKELY(ci->pool != NULL))
    pk_pool_free(ci->pool, obj);
  else
    NSDeallocateObject(obj);
}

static __attribute__((noinline)) void
over_release(id obj)
{
  [NSException raise: NSInternalInconsistencyException
              format: @"PKObject: -release of %s %p sent once too often",
              class_getName(*(Class *)obj), (void *)obj];
}

@implementation PKObject

+ (id) alloc
{
  const class_info *ci = class_info_of(self);
  /* ROUTE_SEND_ALLOC lands here only from a subclass's [super alloc]. */
  if (PK_UNLIKELY(ci->route != ROUTE_DIRECT))
    return [self allocWithZone: NSDefaultMallocZone()];
  return allocate_instance(self, ci);
}

+ (id) allocWithZone: (NSZone *)zone
{
  (void)zone;
  return allocate_instance(self, class_info_of(self));
}

+ (id) new
{
  const class_info *ci = class_info_of(self);
  id obj;
  if (PK_LIKELY(ci->route == ROUTE_DIRECT))
    obj = allocate_instance(self, ci);
  else if (ci->route == ROUTE_SEND_ALLOC)
    obj = [self alloc];
  else
    obj = [self allocWithZone: NSDefaultMallocZone()];
  return [obj init];
}

- (id) retain
{
  __atomic_fetch_add(&_pk_extra_refs, 1, __ATOMIC_RELAXED);
  return self;
}

- (oneway void) release
{
  if (__atomic_load_n(&_pk_extra_refs, __ATOMIC_ACQUIRE) == 0)
    {
      /* The only reference: no other thread may change the count now. */
      [self dealloc];
      return;
    }
  intptr_t old = __atomic_fetch_sub(&_pk_extra_refs, 1, __ATOMIC_RELEASE);
  if (PK_LIKELY(old > 0))
    return;
  if (old == 0)
    {
      /* Another thread dropped its reference between our load and our
       * decrement: ours was the last one. */
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      __atomic_store_n(&_pk_extra_refs, 0, __ATOMIC_RELAXED);
      [self dealloc];
      return;
    }
  /* Below zero: more releases than references, caught only when they race
   * with the last one (afterwards the memory may be another object's). */
  over_release(self);
}

- (NSUInteger) retainCount
{
  return (NSUInteger)__atomic_load_n(&_pk_extra_refs, __ATOMIC_RELAXED) + 1;
}

- (NSZone *) zone
{
  return NSDefaultMallocZone();
}

- (void) dealloc
{
  PKDeallocateObject(self);
  /* NSObject's -dealloc must not run: it would free self - 16. gcc warns
   * about a -dealloc without [super dealloc] (a warning no option turns
   * off), so the call is written here, where it never runs. */
  if (0)
    [super dealloc];
}

+ (struct pk_pool *) instancePool
{
  return class_info_of(self)->pool;
}

+ (NSUInteger) reserveInstances: (NSUInteger)n
{
  pk_pool *pool = class_info_of(self)->pool;
  return pool != NULL ? (NSUInteger)pk_pool_reserve(pool, n) : 0;
}

@end
