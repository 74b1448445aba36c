/* Process-wide switches, read once from the environment. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static int debug_state = -1; /* -1 = not read yet */

bool options_debug(void) {
    int s = __atomic_load_n(&debug_state, __ATOMIC_RELAXED);
    if (unlikely(s < 0)) {
        const char *v = getenv("POOLKIT_DEBUG");
        s = v && *v && strcmp(v, "0") != 0;
        __atomic_store_n(&debug_state, s, __ATOMIC_RELAXED);
    }
    return s;
}
