// Peer: Boost.Pool (header-only C++), behind extern "C" entry points.
//
//   "Boost.Pool pool"         boost::pool<>: untyped fixed-size chunks,
//                             malloc() / free() (unordered, O(1))
//   "Boost.Pool object_pool"  boost::object_pool<T>: typed; its free() keeps
//                             the free list ordered (O(free chunks)), as the
//                             library does; pool-pattern and workset only (T's
//                             size is a template argument: the sizes those
//                             experiments use)
#include "lab.h"

#include <cstdio>

#ifdef LAB_HAVE_BOOST
#  include <boost/pool/object_pool.hpp>
#  include <boost/pool/pool.hpp>
#  include <boost/version.hpp>

typedef boost::pool<> lab_bpool;

static void *bpool_open(size_t size) { return new lab_bpool(size); }
static void bpool_close(void *ctx) { delete static_cast<lab_bpool *>(ctx); }

#  define K_NAME bpool
#  define K_ALLOC(c, sz) static_cast<lab_bpool *>(c)->malloc()
#  define K_FREE(c, p, sz) static_cast<lab_bpool *>(c)->free(p)
#  define K_FREES_EACH 1
#  include "kernels.h"

template <size_t N> struct lab_obj {
    char bytes[N];
};

#  define OP_ALLOC(c, sz) (c)->malloc()
#  define OP_FREE(c, p, sz) (c)->free(static_cast<lab_obj<N> *>(p))

template <size_t N> static double op_pattern_n(long rounds, lab_pattern_stats *st) {
    boost::object_pool<lab_obj<N>> pool;
    boost::object_pool<lab_obj<N>> *c = &pool;
    double ns = 0;
    LAB_PATTERN_LOOP(OP_ALLOC, OP_FREE, c, N, rounds, st, ns);
    return ns;
}

#  define OP_END(c) ((void)(c))

template <size_t N>
static double op_workset_n(long n, int order, const uint32_t *perm, void **objs, long phases,
                           double cap_ns, workset_stats *st) {
    boost::object_pool<lab_obj<N>> pool;
    boost::object_pool<lab_obj<N>> *c = &pool;
    double ns = 0;
    WORKSET_RUN(OP_ALLOC, OP_FREE, OP_END, c, N, n, order, perm, objs, phases, cap_ns, lab_now_ns,
                ns, st);
    return ns;
}

static double op_workset(void *, size_t size, long n, int order, const uint32_t *perm,
                         void **objs, long phases, double cap_ns, workset_stats *st) {
    switch (size) {
    case 16: return op_workset_n<16>(n, order, perm, objs, phases, cap_ns, st);
    case 48: return op_workset_n<48>(n, order, perm, objs, phases, cap_ns, st);
    case 256: return op_workset_n<256>(n, order, perm, objs, phases, cap_ns, st);
    default: return -1;
    }
}

static void *op_open(size_t size) { return reinterpret_cast<void *>(size); }
static void op_close(void *) {}

// The pattern's three sizes; object_pool needs the type at compile time.
static double op_pattern(void *, size_t size, long rounds, lab_pattern_stats *st) {
    switch (size) {
    case 1: return op_pattern_n<1>(rounds, st);
    case 8192: return op_pattern_n<8192>(rounds, st);
    case 1048576: return op_pattern_n<1048576>(rounds, st);
    default: return -1;
    }
}

static void boost_version(char *out, size_t len, const char *name) {
    char v[48];
    std::snprintf(v, sizeof v, " %d.%d.%d", BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000,
                  BOOST_VERSION % 100);
    lab_version_line(out, len, name, v, "libboost1.74-dev");
}
#endif

extern "C" void lab_adapter_boost_pool(lab_allocator *a) {
    a->subject = "Boost.Pool pool";
    a->family = "peer";
#ifdef LAB_HAVE_BOOST
    a->open = bpool_open;
    a->close = bpool_close;
    K_FILL(a);
    boost_version(a->version, sizeof a->version, "Boost.Pool pool<>");
    a->available = 1;
#else
    std::snprintf(a->version, sizeof a->version, "Boost.Pool");
    std::snprintf(a->why, sizeof a->why,
                  "Boost headers not found when pk-lab was built (install libboost-dev)");
#endif
}

extern "C" void lab_adapter_boost_object_pool(lab_allocator *a) {
    a->subject = "Boost.Pool object_pool";
    a->family = "peer";
#ifdef LAB_HAVE_BOOST
    a->open = op_open;
    a->close = op_close;
    a->pattern = op_pattern;
    a->workset = op_workset;
    a->frees_each = 1;
    boost_version(a->version, sizeof a->version, "Boost.Pool object_pool<T>");
    a->available = 1;
#else
    std::snprintf(a->version, sizeof a->version, "Boost.Pool");
    std::snprintf(a->why, sizeof a->why,
                  "Boost headers not found when pk-lab was built (install libboost-dev)");
#endif
}
