// Where pk_new's memory comes from: the size-class front end's class pools
// and large blocks, shared with pk_alloc's blocks; and how an object is
// told from a pk_alloc block in the same pool (its count word's tag).
#include "support.h"

#include <poolkit/poolkit.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void *memory_of(void *obj) { return static_cast<char *>(obj) - PK_OBJECT_HEADER_SIZE; }

const pk_class kPlain = {"Plain", 48, nullptr};

// One class per front end class from 16 bytes up, each with as many fields
// as fill its slot (static: the object layer caches a class by address).
constexpr size_t kMaxClasses = 64;
pk_class g_sized[kMaxClasses];

// Up to 64 KiB: a larger object is a block of its own (test_object.cc,
// ObjectsOverSixtyFourKibAreBlocksOfTheirOwnSize).
constexpr size_t kPooledMax = size_t{64} << 10;

TEST(ObjectMemory, EveryClassOfObjectsIsPkAllocsClassPool) {
    size_t n = 0;
    for (size_t slot = 16; slot <= kPooledMax; slot = pk_good_size(slot) + 16, n++) {
        ASSERT_LT(n, kMaxClasses);
        slot = pk_good_size(slot);
        g_sized[n] = pk_class{"Sized", slot - PK_OBJECT_HEADER_SIZE, nullptr};
        void *block = pk_alloc(slot);
        pk_pool *pool = pk_pool_owner(block);
        ASSERT_NE(pool, nullptr) << slot;
        EXPECT_EQ(pk_class_pool(&g_sized[n]), pool) << slot << "-byte objects";
        size_t live = pktest::stats_of(pool).live;
        void *o = pk_new(&g_sized[n]);
        ASSERT_NE(o, nullptr) << slot;
        EXPECT_EQ(pk_pool_owner(memory_of(o)), pool) << slot << "-byte objects";
        EXPECT_EQ(pktest::stats_of(pool).live, live + 1) << slot << "-byte objects";
        pk_release(o);
        EXPECT_EQ(pktest::stats_of(pool).live, live) << slot << "-byte objects";
        pk_free(block);
    }
    EXPECT_GT(n, 40u) << "classes from 16 bytes to 64 KiB";
}

// The memory pk_release gives back is pk_alloc's next block of the class.
TEST(ObjectMemory, AReleasedObjectsMemoryServesPkAlloc) {
    void *o = pk_new(&kPlain);
    ASSERT_NE(o, nullptr);
    pk_release(o);
    void *block = pk_alloc(kPlain.size + PK_OBJECT_HEADER_SIZE);
    EXPECT_EQ(block, memory_of(o));
    pk_free(block);
}

// An object of 129 to 1,024 bytes whose size is no class of pk_alloc's
// has a class of exactly its size, of objects only (pk_alloc's steps of a
// quarter would round 528 bytes up to 640): every size from 16 bytes to
// 1 KiB in steps of 16 takes a slot of that size, as before pk_new moved
// onto the front end.
pk_class g_fine[64];

TEST(ObjectMemory, ObjectsOfEverySixteenBytesUpToOneKibTakeASlotOfTheirSize) {
    for (size_t slot = 16, i = 0; slot <= 1024; slot += 16, i++) {
        g_fine[i] = pk_class{"Fine", slot - PK_OBJECT_HEADER_SIZE, nullptr};
        pk_pool *pool = pk_class_pool(&g_fine[i]);
        ASSERT_NE(pool, nullptr) << slot;
        EXPECT_EQ(pktest::stats_of(pool).size, slot) << slot << "-byte objects";
        void *o = pk_new(&g_fine[i]);
        ASSERT_NE(o, nullptr) << slot;
        EXPECT_EQ(pk_pool_owner(memory_of(o)), pool) << slot << "-byte objects";
        void *block = pk_alloc(slot);
        bool shared = pk_good_size(slot) == slot;
        EXPECT_EQ(pk_pool_owner(block) == pool, shared)
            << slot << "-byte objects share pk_alloc's pool only where it is a class of pk_alloc's";
        if (!shared) {
            EXPECT_EQ(std::string(pktest::stats_of(pool).name), "pk_new " + std::to_string(slot));
        }
        pk_free(block);
        pk_release(o);
    }
}

// Objects over many slabs, released in another order than made, all go
// back to the pool they share with pk_alloc's blocks.
TEST(ObjectMemory, ObjectsOfManySlabsAllGoBack) {
    pk_pool *pool = pk_class_pool(&kPlain);
    ASSERT_NE(pool, nullptr);
    size_t live = pktest::stats_of(pool).live;
    std::vector<void *> objs(5000);
    for (void *&o : objs) ASSERT_NE(o = pk_new(&kPlain), nullptr);
    EXPECT_EQ(pktest::stats_of(pool).live, live + objs.size());
    for (size_t i = 0; i < objs.size(); i += 2) pk_release(objs[i]);
    for (size_t i = objs.size(); i-- > 1;)
        if (i % 2) pk_release(objs[i]);
    EXPECT_EQ(pktest::stats_of(pool).live, live);
}

// Over the last class an object is one of the front end's large blocks.
TEST(ObjectMemory, ObjectsOverTheLastClassAreTheFrontEndsLargeBlocks) {
    static const pk_class big = {"Big", PK_ALLOC_CLASS_MAX, nullptr};
    errno = 0;
    EXPECT_EQ(pk_class_pool(&big), nullptr);
    EXPECT_EQ(errno, EINVAL);
    void *o = pk_new(&big);
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(pk_pool_owner(memory_of(o)), nullptr);
    EXPECT_GE(pk_usable_size(memory_of(o)), PK_ALLOC_CLASS_MAX + PK_OBJECT_HEADER_SIZE);
    EXPECT_EQ(pk_retain(o), o);
    EXPECT_EQ(pk_refcount(o), 2u);
    pk_release(o);
    EXPECT_EQ(pk_refcount(o), 1u);
    pk_release(o);
}

// ---- a pk_alloc block is not an object ---------------------------------------

// The death tests' handler: the report, then the block's count word as it
// is now (the handler returns, and the library aborts).
const uintptr_t *g_block = nullptr;

void print_report_and_word(const pk_error *e, void *) {
    char line[512];
    int n = std::snprintf(line, sizeof line, "WHAT %s\nMESSAGE %s\nWORD %lu\n", e->what ? e->what : "(null)",
                          e->message ? e->message : "(null)", static_cast<unsigned long>(g_block[1]));
    if (n > 0 && write(STDERR_FILENO, line, static_cast<size_t>(n)) < 0) { /* nothing to do */
    }
}

// A pk_alloc block that looks like the only reference to a Plain object:
// reported, its words as they were.
#define EXPECT_BLOCK_REFUSED(call, detail)                                      \
    EXPECT_DEATH(                                                               \
        {                                                                       \
            uintptr_t *m = static_cast<uintptr_t *>(pk_alloc(64));              \
            m[0] = reinterpret_cast<uintptr_t>(&kPlain);                        \
            m[1] = 1;                                                           \
            g_block = m;                                                        \
            pk_release(pk_retain(pk_new(&kPlain))); /* the thread's caches */   \
            pk_set_error_handler(print_report_and_word, nullptr);              \
            call(m + 2);                                                        \
        },                                                                      \
        "WHAT foreign pointer\nMESSAGE poolkit: foreign pointer: " #call "[^\n]*" detail \
        "[^\n]*\nWORD 1\n")

TEST(ObjectMemoryDeathTest, ReleaseOfAPkAllocBlockIsAForeignPointer) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_BLOCK_REFUSED(pk_release, "no object header");
}

TEST(ObjectMemoryDeathTest, RetainOfAPkAllocBlockIsAForeignPointerNeverWritten) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_BLOCK_REFUSED(pk_retain, "no object header");
}

// Whether the process runs in a mode set from outside (the child of a
// death test sees the mode its parent set, and runs).
bool mode_set_outside() {
    return GTEST_FLAG_GET(internal_run_death_test).empty() &&
           (pktest::env_on("POOLKIT_DEBUG") || pktest::env_on("POOLKIT_HARDENED"));
}

// Debug mode checks the pointer first, and names the pool.
class ObjectMemoryEnvDeathTest : public ::testing::Test {
  protected:
    void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
    void TearDown() override {
        unsetenv("POOLKIT_DEBUG");
        unsetenv("POOLKIT_HARDENED");
    }
};

TEST_F(ObjectMemoryEnvDeathTest, DebugModeReportsAPkAllocBlockNamingItsPool) {
    if (mode_set_outside()) GTEST_SKIP() << "the mode is the process's";
    setenv("POOLKIT_DEBUG", "1", 1);
    EXPECT_BLOCK_REFUSED(pk_release, "a block of pool 'pk_alloc 64' with no object header");
}

const pk_class kHardSizes[] = {
    {"A", 0, nullptr}, {"B", 152, nullptr}, {"C", 5000, nullptr}, {"D", 70000, nullptr}, {"E", 300000, nullptr},
};

// Hardened mode: objects are the front end's hardened blocks (a check word
// after the fields: pk_usable_size says the bytes asked for), of every
// size, the largest between guard pages.
TEST_F(ObjectMemoryEnvDeathTest, HardenedModeMakesObjectsHardenedBlocks) {
    if (mode_set_outside()) GTEST_SKIP() << "the mode is the process's";
    setenv("POOLKIT_HARDENED", "1", 1);
    EXPECT_EXIT(
        {
            for (const pk_class &cls : kHardSizes) {
                for (int round = 0; round < 3; round++) {
                    unsigned char *o = static_cast<unsigned char *>(pk_new(&cls));
                    if (!o) std::exit(10);
                    for (size_t i = 0; i < cls.size; i++)
                        if (o[i]) std::exit(11);
                    size_t slot = PK_OBJECT_HEADER_SIZE + (cls.size + 15) / 16 * 16;
                    if (pk_usable_size(memory_of(o)) != slot) std::exit(12);
                    std::memset(o, 0xAB, cls.size);
                    if (pk_retain(o) != o || pk_refcount(o) != 2 || pk_class_of(o) != &cls) std::exit(13);
                    pk_release(o);
                    pk_release(o);
                }
            }
            std::exit(0);
        },
        ::testing::ExitedWithCode(0), "");
}

}  // namespace
