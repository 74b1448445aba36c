/* The front end's variants (alloc.h): pk_zalloc, pk_aligned_zalloc,
 * pk_reallocarray, pk_expand, pk_realloc_aligned, and what the allocating
 * calls' attributes tell the compiler about their blocks' sizes. */
/* Fortified, where optimized (as _FORTIFY_SOURCE needs): pk_alloc is then
 * a call whose alloc_size the compiler reads. */
#if defined(__OPTIMIZE__) && !defined(_FORTIFY_SOURCE)
#  define _FORTIFY_SOURCE 2
#endif
#include "support.h"

#include <poolkit/alloc.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

bool all_bytes(const void *p, size_t n, unsigned char v) {
    const unsigned char *b = static_cast<const unsigned char *>(p);
    for (size_t i = 0; i < n; i++)
        if (b[i] != v) return false;
    return true;
}

bool aligned(const void *p, size_t a) { return (reinterpret_cast<uintptr_t>(p) & (a - 1)) == 0; }

const size_t kSizes[] = {1, 8, 24, 48, 1000, 5000, 70000, 300000};

/* Blocks of size s dirtied and freed, so the next ones of that size come
 * from memory that held something. */
void dirty(size_t s) {
    std::vector<void *> v;
    for (int i = 0; i < 32; i++) {
        void *p = pk_alloc(s);
        memset(p, 0xa5, s);
        v.push_back(p);
    }
    for (void *p : v) pk_free(p);
}

TEST(AllocZalloc, ZeroesMemoryThatWasUsedBefore) {
    for (size_t s : kSizes) {
        dirty(s);
        std::vector<void *> v;
        for (int i = 0; i < 32; i++) {
            void *p = pk_zalloc(s);
            ASSERT_NE(p, nullptr);
            ASSERT_TRUE(all_bytes(p, s, 0)) << "size " << s;
            v.push_back(p);
        }
        for (void *p : v) pk_free(p);
    }
}

TEST(AllocZalloc, AlignedZallocIsAlignedAndZeroed) {
    for (size_t a : {size_t(16), size_t(64), size_t(4096), size_t(1) << 16}) {
        for (size_t s : {size_t(24), size_t(100), size_t(5000)}) {
            dirty(s < a ? a : s);
            void *p = pk_aligned_zalloc(a, s);
            ASSERT_NE(p, nullptr);
            EXPECT_TRUE(aligned(p, a)) << a;
            EXPECT_TRUE(all_bytes(p, s, 0)) << "align " << a << " size " << s;
            pk_free(p);
        }
    }
    errno = 0;
    volatile size_t not_pow2 = 24; /* not a constant: compilers refuse one at compile time */
    EXPECT_EQ(pk_aligned_zalloc(not_pow2, 8), nullptr);
    EXPECT_EQ(errno, EINVAL);
}

TEST(AllocReallocarray, ResizesByTheProductAndRefusesAnOverflow) {
    char *p = static_cast<char *>(pk_reallocarray(nullptr, 10, 8));
    ASSERT_NE(p, nullptr);
    EXPECT_GE(pk_usable_size(p), 80u);
    memset(p, 7, 80);
    char *q = static_cast<char *>(pk_reallocarray(p, 1000, 8));
    ASSERT_NE(q, nullptr);
    EXPECT_GE(pk_usable_size(q), 8000u);
    EXPECT_TRUE(all_bytes(q, 80, 7));
    errno = 0;
    volatile size_t too_many = SIZE_MAX / 4; /* not a constant: gcc would refuse to compile the call */
    EXPECT_EQ(pk_reallocarray(q, too_many, 8), nullptr);
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_TRUE(all_bytes(q, 80, 7)) << "the block must stay as it was";
    pk_free(q);
}

TEST(AllocExpand, GrowsWithinTheBlockAndNeverMoves) {
    for (size_t s : kSizes) {
        char *p = static_cast<char *>(pk_alloc(s));
        memset(p, 3, s);
        size_t usable = pk_usable_size(p);
        EXPECT_EQ(pk_expand(p, usable), p) << s;
        EXPECT_EQ(pk_expand(p, s / 2), p) << "never shrinks: the block stays " << s;
        EXPECT_EQ(pk_usable_size(p), usable);
        errno = 0;
        EXPECT_EQ(pk_expand(p, usable + 1), nullptr) << s;
        EXPECT_EQ(errno, ENOMEM);
        EXPECT_TRUE(all_bytes(p, s, 3));
        pk_free(p);
    }
    EXPECT_EQ(pk_expand(nullptr, 8), nullptr);
}

TEST(AllocReallocAligned, KeepsTheContentsAndTheAlignment) {
    for (size_t a : {size_t(8), size_t(64), size_t(256), size_t(4096), size_t(1) << 14}) {
        unsigned char *p = static_cast<unsigned char *>(pk_realloc_aligned(nullptr, a, 10));
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(aligned(p, a));
        size_t have = 10;
        for (unsigned i = 0; i < have; i++) p[i] = static_cast<unsigned char>(i);
        for (size_t s : {size_t(100), size_t(3000), size_t(70000), size_t(400000), size_t(50)}) {
            p = static_cast<unsigned char *>(pk_realloc_aligned(p, a, s));
            ASSERT_NE(p, nullptr);
            EXPECT_TRUE(aligned(p, a)) << "align " << a << " size " << s;
            size_t keep = have < s ? have : s;
            for (size_t i = 0; i < keep; i++) ASSERT_EQ(p[i], static_cast<unsigned char>(i)) << a << " " << s;
            for (size_t i = keep; i < s; i++) p[i] = static_cast<unsigned char>(i);
            have = s;
        }
        pk_free(p);
    }
}

TEST(AllocReallocAligned, StaysInPlaceWithinTheClassAndMovesToReachAnAlignment) {
    void *p = pk_aligned_alloc(64, 100); /* a class whose size is a multiple of 64 */
    ASSERT_NE(p, nullptr);
    size_t usable = pk_usable_size(p);
    EXPECT_EQ(pk_realloc_aligned(p, 64, usable), p) << "the same class: in place";
    /* a 48-byte class block is aligned to 16 only: asking for 4096 moves it */
    void *q = pk_alloc(48);
    memset(q, 9, 48);
    void *r = pk_realloc_aligned(q, 4096, 48);
    ASSERT_NE(r, nullptr);
    EXPECT_TRUE(aligned(r, 4096));
    EXPECT_TRUE(all_bytes(r, 48, 9));
    pk_free(r);
    EXPECT_EQ(pk_realloc_aligned(p, 64, 0), nullptr) << "size 0 frees";
    void *s = pk_alloc(32);
    errno = 0;
    volatile size_t not_pow2 = 48; /* not a constant: compilers refuse one at compile time */
    EXPECT_EQ(pk_realloc_aligned(s, not_pow2, 32), nullptr);
    EXPECT_EQ(errno, EINVAL);
    pk_free(s);
}

/* What alloc_size gives the compiler: a block's size known where it is
 * used, for __builtin_object_size and _FORTIFY_SOURCE (pk_alloc's in a
 * fortified build). The compiler tracks it only when optimizing. */
#if defined(__OPTIMIZE__) && _FORTIFY_SOURCE > 0

TEST(AllocAttributes, TheCompilerKnowsEachBlocksSize) {
    void *a = pk_alloc(24), *z = pk_zalloc(40), *c = pk_calloc(3, 8), *al = pk_aligned_alloc(64, 100);
    EXPECT_EQ(__builtin_object_size(a, 0), 24u);
    EXPECT_EQ(__builtin_object_size(z, 0), 40u);
    EXPECT_EQ(__builtin_object_size(c, 0), 24u);
    EXPECT_EQ(__builtin_object_size(al, 0), 100u);
    void *r = pk_realloc(a, 72);
    EXPECT_EQ(__builtin_object_size(r, 0), 72u);
    pk_free(r);
    pk_free(z);
    pk_free(c);
    pk_free(al);
}

/* A write past a pk_alloc block's end, its length known only at run time,
 * is stopped by the C library's check (fortified memcpy). */
TEST(AllocAttributesDeathTest, AFortifiedCopyPastABlocksEndAborts) {
    char src[64] = {0};
    volatile size_t n = sizeof src;
    EXPECT_DEATH(
        {
            void *p = pk_alloc(24);
            memcpy(p, src, n);
            pk_free(p);
        },
        pktest::running_under_valgrind() ? "" : "buffer overflow detected|AddressSanitizer"); /* Valgrind's own check
                                                                                   reports it in its log */
}
#endif

}  // namespace
