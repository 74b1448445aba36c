/* <poolkit/new.hpp>: the program's operator new and delete, every form,
 * over pk_alloc's classes. This whole program, GoogleTest included,
 * allocates through them. Not in sanitizer builds, whose runtime is the
 * program's operator new and delete, as it is its malloc (Valgrind too).
 * POOLKIT_TEST_LABELS: noasan notsan novalgrind */
#include <poolkit/new.hpp>

#include "support.h"

#include <poolkit/stats.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace pktest;

namespace {

/* Live objects of the class pool that serves size bytes. */
size_t class_live(size_t size) {
    struct Want {
        std::string name;
        size_t live;
    } w{"pk_alloc " + std::to_string(pk_good_size(size)), 0};
    pk_pool_foreach(
        [](pk_pool *p, void *arg) {
            Want *w = static_cast<Want *>(arg);
            pk_pool_stats s;
            pk_pool_stats_get(p, &s);
            if (s.name && w->name == s.name) w->live = s.live;
        },
        &w);
    return w.live;
}

TEST(NewDelete, NewTakesAnObjectOfTheSizesClassAndDeleteGivesItBack) {
    size_t before = class_live(40);
    char *a = new char[40];
    EXPECT_EQ(class_live(40), before + 1);
    EXPECT_GE(pk_usable_size(a), 40u) << "a block of the front end's";
    delete[] a;
    EXPECT_EQ(class_live(40), before);
    struct S {
        char b[200];
    };
    size_t s_before = class_live(sizeof(S));
    S *s = new S();
    EXPECT_GE(pk_usable_size(s), sizeof(S)); /* used: a compiler may not elide the pair */
    EXPECT_EQ(class_live(sizeof(S)), s_before + 1);
    delete s; /* sized delete where the compiler uses it */
    EXPECT_EQ(class_live(sizeof(S)), s_before);
}

TEST(NewDelete, TheNothrowFormsReturnNullptrWhenMemoryRunsOut) {
    void *p = operator new(size_t(1) << 62, std::nothrow);
    EXPECT_EQ(p, nullptr);
    void *q = operator new[](24, std::nothrow);
    ASSERT_NE(q, nullptr);
    operator delete[](q, std::nothrow);
}

TEST(NewDelete, ThrowingNewThrowsBadAllocAfterTheNewHandler) {
    static int calls;
    calls = 0;
    std::new_handler old = std::set_new_handler([] {
        if (++calls == 3) std::set_new_handler(nullptr);
    });
    EXPECT_THROW((void)operator new(size_t(1) << 62), std::bad_alloc);
    EXPECT_EQ(calls, 3);
    std::set_new_handler(old);
}

struct alignas(256) Wide {
    char b[300];
};

TEST(NewDelete, AlignedNewHonoursTheTypesAlignment) {
    std::vector<Wide *> v;
    for (int i = 0; i < 50; i++) {
        Wide *w = new Wide();
        EXPECT_TRUE(aligned_to(w, 256));
        memset(w->b, i, sizeof w->b);
        v.push_back(w);
    }
    for (Wide *w : v) delete w;
    Wide *arr = new Wide[7];
    EXPECT_TRUE(aligned_to(arr, 256));
    delete[] arr;
    void *n = operator new(64, std::align_val_t(4096), std::nothrow);
    EXPECT_TRUE(aligned_to(n, 4096));
    operator delete(n, std::align_val_t(4096), std::nothrow);
}

TEST(NewDelete, ContainersRunOnIt) {
    std::map<int, std::string> m;
    for (int i = 0; i < 20000; i++) m[i] = std::string(size_t(i % 100), 'x');
    size_t total = 0;
    for (auto &kv : m) total += kv.second.size();
    EXPECT_EQ(total, size_t(20000 / 100) * (99 * 100 / 2));
    std::vector<std::unique_ptr<int[]>> v;
    for (int i = 0; i < 1000; i++) v.emplace_back(new int[size_t(i) + 1]);
}

}  // namespace
