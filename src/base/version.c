/* The library's own version, compiled in, for programs that want to know
 * which build they run with (poolkit.h). */
#include <poolkit/poolkit.h>

int pk_version(void) { return PK_VERSION; }

const char *pk_version_string(void) { return PK_VERSION_STRING; }
