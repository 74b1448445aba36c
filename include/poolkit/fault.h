/* poolkit fault injection, for testing programs' out-of-memory paths.
 *
 * Every piece of memory poolkit takes from the system (slabs, arena chunks,
 * bookkeeping pages) is one page request. pk_fault_fail_after(n) makes the
 * request after the next n succeed fail as if the system had no memory, once
 * armed; pk_fault_fail_after(-1) disarms. Thread-safe; meant for tests.
 */
#ifndef POOLKIT_FAULT_H
#define POOLKIT_FAULT_H

#include <poolkit/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* n >= 0: requests 0..n-1 from now succeed, request n fails, and so does
 * every later one until pk_fault_fail_after(-1). */
PK_API void pk_fault_fail_after(long n);

/* Page requests made since the process started (successful or not). */
PK_API unsigned long pk_fault_requests(void);

#ifdef __cplusplus
}
#endif
#endif
