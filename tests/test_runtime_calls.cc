/* The run-time calls: options by name (options.h), the report to a
 * callback (pk_stats_print_to), and memory back on demand (pk_collect). */
#include "child.h"
#include "support.h"

#include <poolkit/options.h>
#include <poolkit/pool.h>
#include <poolkit/stats.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace pktest;

namespace {

/* ---- options ---- */

TEST(Options, ReadsTheTableByNameWithOrWithoutThePrefixInAnyCase) {
    long delay = pk_set_purge_delay(-1), a = -1, b = -1, c = -1;
    ASSERT_EQ(pk_option_get("PURGE_DELAY_MS", &a), 0);
    ASSERT_EQ(pk_option_get("purge_delay_ms", &b), 0);
    ASSERT_EQ(pk_option_get("POOLKIT_PURGE_DELAY_MS", &c), 0);
    EXPECT_EQ(a, delay);
    EXPECT_EQ(b, delay);
    EXPECT_EQ(c, delay);
}

TEST(Options, SettingThePurgeDelayIsPkSetPurgeDelay) {
    long old = pk_set_purge_delay(-1), v = -1;
    ASSERT_EQ(pk_option_set("purge_delay_ms", 1234), 0);
    EXPECT_EQ(pk_set_purge_delay(-1), 1234);
    ASSERT_EQ(pk_option_get("PURGE_DELAY_MS", &v), 0);
    EXPECT_EQ(v, 1234);
    pk_set_purge_delay(old);
}

TEST(Options, AnUnknownNameIsAnErrorNamingTheClosest) {
    ErrorCapture cap;
    long v = 0;
    errno = 0;
    EXPECT_EQ(pk_option_get("purge_dleay_ms", &v), -1);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_EQ(pk_option_set("HARDEND", 1), -1);
    EXPECT_EQ(errno, EINVAL);
    std::vector<RecordedError> e = cap.errors();
    ASSERT_EQ(e.size(), 2u);
    EXPECT_EQ(e[0].what, "unknown option");
    EXPECT_NE(e[0].message.find("\"PURGE_DELAY_MS\""), std::string::npos) << e[0].message;
    EXPECT_NE(e[1].message.find("\"HARDENED\""), std::string::npos) << e[1].message;
}

TEST(Options, AValueOutOfRangeIsRefused) {
    errno = 0;
    EXPECT_EQ(pk_option_set("VERBOSE", 2), -1);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_EQ(pk_option_set("PURGE_DELAY_MS", -5), -1);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_EQ(pk_option_set("STATS", 2), -1) << "a report's file is named by the environment only";
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_EQ(pk_option_get("VERBOSE", nullptr), -1);
    EXPECT_EQ(errno, EINVAL);
}

/* Before the library's first use a call wins over the environment; the
 * report says where the value came from; once read, a change is refused. */
PKTEST_CHILD(OptionSetBeforeFirstUse) {
    CHILD_CHECK(pk_option_set("HARDENED", 1) == 0, "errno %d", errno);
    pk_pool_config cfg = make_config(32);
    pk_pool *p = pk_pool_create(&cfg);
    CHILD_CHECK(p != nullptr, "create");
    pk_pool_stats s;
    pk_pool_stats_get(p, &s);
    long v = -1;
    CHILD_CHECK(pk_option_get("hardened", &v) == 0 && v == 1, "hardened reads %ld", v);
    errno = 0;
    CHILD_CHECK(pk_option_set("HARDENED", 0) == -1 && errno == EBUSY, "a change after the first use: errno %d",
                errno);
    CHILD_CHECK(pk_option_set("HARDENED", 1) == 0, "the same value again");
    std::string report;
    pk_stats_print_to([](const char *t, void *a) { *static_cast<std::string *>(a) += t; }, &report, 0);
    size_t at = report.find("POOLKIT_HARDENED");
    CHILD_CHECK(at != std::string::npos, "no HARDENED row:\n%s", report.c_str());
    std::string row = report.substr(at, report.find('\n', at) - at);
    CHILD_CHECK(row.find("on") != std::string::npos && row.find("pk_option_set") != std::string::npos,
                "the row: %s", row.c_str());
    pk_pool_destroy(p);
    return CHILD_PASS;
}

TEST(Options, ASwitchReadOnceIsSetBeforeTheFirstUseAndRefusedAfter) {
    ChildResult r = run_child("OptionSetBeforeFirstUse", {{"POOLKIT_HARDENED", "0"}});
    EXPECT_TRUE(r.passed()) << r.describe();
}

/* ---- the report to a callback ---- */

struct Pieces {
    std::string text;
    size_t calls = 0, longest = 0;
};

void gather(const char *t, void *arg) {
    Pieces *p = static_cast<Pieces *>(arg);
    p->calls++;
    p->longest = std::max(p->longest, strlen(t));
    p->text += t;
}

TEST(StatsPrintTo, HandsTheWholeReportToTheCallbackInPieces) {
    PoolPtr pool = make_pool(make_config(48, 0, 0, "print-to pool"));
    std::vector<void *> v = alloc_n(pool.get(), 1000);
    Pieces got;
    ASSERT_EQ(pk_stats_print_to(gather, &got, 0), 0);
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ASSERT_EQ(pk_stats_print(f, 0), 0);
    fclose(f);
    std::string file(buf, len);
    free(buf);
    EXPECT_GT(got.calls, 0u);
    EXPECT_LT(got.longest, 512u);
    EXPECT_NE(got.text.find("print-to pool"), std::string::npos);
    /* the same report as to a FILE: the same lines, whatever figures moved */
    EXPECT_EQ(std::count(got.text.begin(), got.text.end(), '\n'), std::count(file.begin(), file.end(), '\n'));
    Pieces json;
    ASSERT_EQ(pk_stats_print_to(gather, &json, PK_STATS_JSON), 0);
    EXPECT_EQ(json.text.substr(0, 1), "{");
    free_all(pool.get(), v);
}

TEST(StatsPrintTo, RefusesNoCallbackAndAnUnknownFlag) {
    Pieces got;
    errno = 0;
    EXPECT_EQ(pk_stats_print_to(nullptr, nullptr, 0), -1);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_EQ(pk_stats_print_to(gather, &got, 1u << 7), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(got.calls, 0u);
}

/* ---- collect ---- */

TEST(Collect, WithoutForceTheThreadsCacheGoesHomeAndWaitsForTheDelay) {
    long old = pk_set_purge_delay(60000);
    PoolPtr pool = make_pool(make_config(64, 0, 0, "collect pool"));
    std::vector<void *> v = alloc_n(pool.get(), 20000);
    free_all(pool.get(), v);
    size_t before = stats_of(pool.get()).bytes_reserved;
    ASSERT_GT(before, 0u);
    EXPECT_EQ(pk_collect(0), 0u) << "nothing goes back before the delay";
    EXPECT_EQ(stats_of(pool.get()).bytes_reserved, before);
    size_t back = pk_collect(1);
    EXPECT_GE(back, before) << "forced: every empty slab goes back";
    EXPECT_EQ(stats_of(pool.get()).bytes_reserved, 0u);
    EXPECT_EQ(stats_of(pool.get()).live, 0u);
    pk_set_purge_delay(old);
}

TEST(Collect, ForcedItLeavesLiveObjectsAndOtherThreadsSlabsAlone) {
    long old = pk_set_purge_delay(60000);
    PoolPtr pool = make_pool(make_config(64, 0, 0, "collect pool 2"));
    std::vector<void *> mine = alloc_n(pool.get(), 5000);
    std::vector<void *> theirs;
    std::atomic<int> step{0};
    std::thread t([&] {
        theirs = alloc_n(pool.get(), 5000);
        step = 1;
        while (step != 2) std::this_thread::yield();
        free_all(pool.get(), theirs);
    });
    while (step != 1) std::this_thread::yield();
    pk_collect(1);
    pk_pool_stats s = stats_of(pool.get());
    EXPECT_EQ(s.live, 10000u);
    for (void *p : mine) memset(p, 1, 64); /* still usable */
    step = 2;
    t.join();
    free_all(pool.get(), mine);
    pk_set_purge_delay(old);
}

}  // namespace
