/* Free objects' link words, as stored: plain, or, for hardened pools,
 * rot32(link ^ secret ^ object) (harden.h, LINK ENCODING, says why). The
 * inline paths (pool.h, pk__rot32) compute the same words. */
#ifndef POOLKIT_LINK_H
#define POOLKIT_LINK_H

#include <stdint.h>

static inline uintptr_t link_rot(uintptr_t v) { return v << 32 | v >> 32; }
static inline uintptr_t link_encode_with(uintptr_t secret, const void *obj, uintptr_t v) {
    return link_rot(v ^ secret ^ (uintptr_t)obj);
}
static inline uintptr_t link_decode_with(uintptr_t secret, const void *obj, uintptr_t stored) {
    return link_rot(stored) ^ (secret ^ (uintptr_t)obj);
}

#endif
