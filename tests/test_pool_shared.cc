/* The pool calls through the shared library: with PK_NO_INLINE the header
 * declares pk_pool_alloc and pk_pool_free as ordinary functions, so every
 * call here goes to the library's exported definitions (the build links this
 * program against libpoolkit.so). */
#define PK_NO_INLINE 1
#include "support.h"

#include <dlfcn.h>

#include <set>

using namespace pktest;

#ifdef PK__HAVE_INLINE
#  error "PK_NO_INLINE must leave the inline fast paths out"
#endif

namespace {

/* The file name of the object (program or shared library) that holds addr. */
std::string object_of(const void *addr) {
    Dl_info info;
    if (!dladdr(addr, &info) || !info.dli_fname) return "(no object)";
    return info.dli_fname;
}

bool is_libpoolkit_so(const std::string &path) {
    std::string base = path.substr(path.rfind('/') + 1);
    return base.rfind("libpoolkit.so", 0) == 0;
}

}  // namespace

/* The calls land in libpoolkit.so, not in a copy linked into the program:
 * dladdr names the object that holds each function's code. */
TEST(PoolShared, AllocAndFreeAreTheSharedLibrarysFunctions) {
    void *(*alloc)(pk_pool *) = &pk_pool_alloc;
    void (*release)(pk_pool *, void *) = &pk_pool_free;
    const std::string program = object_of(reinterpret_cast<const void *>(&object_of));
    for (auto fn : {reinterpret_cast<const void *>(alloc), reinterpret_cast<const void *>(release),
                    reinterpret_cast<const void *>(&pk_pool_create)}) {
        std::string where = object_of(fn);
        EXPECT_TRUE(is_libpoolkit_so(where)) << "a pool function lies in " << where << ", not libpoolkit.so";
        EXPECT_NE(where, program);
    }
    PoolPtr p = make_pool(32);
    void *o = alloc(p.get());
    ASSERT_NE(o, nullptr);
    release(p.get(), o);
}

TEST(PoolShared, AllocFreeRoundTrip) {
    for (unsigned flags : {0u, unsigned(PK_POOL_LOCAL), unsigned(PK_POOL_ZERO), unsigned(PK_POOL_DEBUG),
                           unsigned(PK_POOL_HARDENED)}) {
        const size_t size = 48;
        PoolPtr p = make_pool(size, 0, flags, "shared");
        ASSERT_NE(p.get(), nullptr) << "flags " << flags;
        for (int round = 0; round < 3; round++) {
            std::vector<void *> objs;
            for (int i = 0; i < 5000; i++) {
                void *o = pk_pool_alloc(p.get());
                ASSERT_NE(o, nullptr);
                ASSERT_TRUE(aligned_to(o, 16));
                ASSERT_EQ(pk_pool_owner(o), p.get());
                if (flags & PK_POOL_ZERO) {
                    ASSERT_TRUE(all_bytes(o, size, 0));
                }
                fill_pattern(o, size, static_cast<uint64_t>(i));
                objs.push_back(o);
            }
            std::set<void *> distinct(objs.begin(), objs.end());
            EXPECT_EQ(distinct.size(), objs.size());
            EXPECT_EQ(stats_of(p.get()).live, objs.size());
            for (size_t i = 0; i < objs.size(); i++) {
                ASSERT_EQ(check_pattern(objs[i], size, i), size);
                pk_pool_free(p.get(), objs[i]);
            }
            EXPECT_EQ(stats_of(p.get()).live, 0u) << "flags " << flags;
        }
        pk_pool_trim(p.get());
        EXPECT_LE(stats_of(p.get()).slabs, 1u);
    }
}

TEST(PoolShared, BulkCallsRoundTrip) {
    PoolPtr p = make_pool(100);
    std::vector<void *> objs(1000);
    ASSERT_EQ(pk_pool_alloc_bulk(p.get(), objs.data(), objs.size()), objs.size());
    EXPECT_EQ(stats_of(p.get()).live, objs.size());
    pk_pool_free_bulk(p.get(), objs.data(), objs.size());
    EXPECT_EQ(stats_of(p.get()).live, 0u);
}
