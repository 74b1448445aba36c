/* PKObject: an NSObject whose instances come from poolkit pools.
 *
 * For GNUstep (gnustep-base on GNU Objective-C). Subclass PKObject instead of
 * NSObject and the instances of your class, and of its subclasses, are taken
 * from poolkit pools instead of malloc, with the reference count kept inline
 * in an instance variable. Everything else is NSObject's behaviour:
 *
 * - +alloc, +allocWithZone: and +new return zeroed instances (isa set, every
 *   instance variable 0) with retainCount 1. The zone is ignored, as on every
 *   current Foundation; -zone answers NSDefaultMallocZone().
 * - -retain, -release and -retainCount are atomic: instances may be retained
 *   and released from any thread, and the last release, on whatever thread,
 *   sends -dealloc exactly once. -autorelease is NSObject's: the instance goes
 *   to the calling thread's innermost NSAutoreleasePool.
 * - -dealloc gives the memory back to the pool. A subclass's -dealloc
 *   releases what it holds and then calls [super dealloc], as usual.
 *
 * Pools: one pk_pool per size class (the instance size rounded up to 16
 * bytes), created on first use and shared by every class of that size class.
 * Classes whose instances are larger than PK_OBJECT_MAX_POOLED bytes are
 * allocated by GNUstep (NSAllocateObject) and keep the inline count.
 *
 * Limits: instances must be made by +alloc, +allocWithZone:, +new or
 * PKAllocateObject; a copy made with NSCopyObject would carry its original's
 * reference count, so -copyWithZone: in a subclass must allocate with
 * [[self class] allocWithZone: zone] and copy the fields it needs. An instance
 * must not change its class (object_setClass) to one of another size class.
 * Objective-C++ instance variables with C++ constructors or destructors are
 * not constructed or destroyed (gcc leaves -fobjc-call-cxx-cdtors off).
 *
 * Thread-safety: every method and function here may be called from any
 * thread. Errors: when no memory is left, allocation raises NSMallocException
 * (as NSAllocateObject does); a -release past zero that is detected raises
 * NSInternalInconsistencyException.
 */
#ifndef POOLKIT_PKOBJECT_H
#define POOLKIT_PKOBJECT_H

#import <Foundation/NSObject.h>

#include <stddef.h>
#include <stdint.h>

struct pk_pool;

/* Instances larger than this (bytes, after rounding up to 16) come from
 * NSAllocateObject instead of a pool. */
#define PK_OBJECT_MAX_POOLED 4096

@interface PKObject : NSObject
{
@private
  /* References beyond the first, changed only with atomic operations. Zero
   * in a new instance, as in GNUstep's hidden header, so that zeroed memory
   * is a valid instance with retainCount 1. */
  intptr_t _pk_extra_refs;
}

/* A new zeroed instance with retainCount 1. +alloc sends +allocWithZone:
 * only when a subclass overrides it; otherwise both come straight here. */
+ (id) alloc;
+ (id) allocWithZone: (NSZone *)zone;
/* [[self alloc] init], with one message less: +alloc (or +allocWithZone:) is
 * sent only when a subclass overrides it. */
+ (id) new;

- (id) retain;
- (oneway void) release;
- (NSUInteger) retainCount;
- (NSZone *) zone;
/* Gives the memory back to its pool. Sent by the last -release. */
- (void) dealloc;

/* The pool that holds this class's instances, shared with the other classes
 * of its size class (for pk_pool_stats_get, pk_pool_trim); NULL when its
 * instances are too large to be pooled. */
+ (struct pk_pool *) instancePool;
/* Makes memory ready for n more instances (pk_pool_reserve); returns how
 * many are now ready without a system call, 0 for an unpooled class. */
+ (NSUInteger) reserveInstances: (NSUInteger)n;
@end

/* Allocates a zeroed instance of cls (PKObject or a subclass) with
 * retainCount 1, sending no message: for a class's own one-call constructor
 * (+newWith...: allocate here, then set the fields). Raises
 * NSMallocException when no memory is left. Any thread. */
id PKAllocateObject(Class cls);

/* Gives an instance's memory back without sending -dealloc: what
 * -[PKObject dealloc] does after the subclasses' -dealloc have run. */
void PKDeallocateObject(id obj);

#endif
