/* The process view (stats.h): every live pool through pk_pool_foreach, the
 * totals of pk_stats_get against a model, pk_stats_print's forms, the
 * verbose notes, and the C++ wrappers. The report read back from a program
 * and checked against its schema is tests/stats_check.py (example.stats_check). */
#include "support.h"

#include <poolkit/poolkit.hpp>

#include <atomic>
#include <set>
#include <thread>

using namespace pktest;

namespace {

void collect(pk_pool *p, void *arg) { static_cast<std::vector<pk_pool *> *>(arg)->push_back(p); }

std::vector<pk_pool *> all_pools() {
    std::vector<pk_pool *> v;
    size_t n = pk_pool_foreach(collect, &v);
    EXPECT_EQ(n, v.size());
    return v;
}

bool contains(const std::vector<pk_pool *> &v, const pk_pool *p) {
    return std::find(v.begin(), v.end(), p) != v.end();
}

}  // namespace

TEST(StatsForeach, VisitsEveryLivePoolOnceAndNoDestroyedOne) {
    std::vector<PoolPtr> mine;
    for (int i = 0; i < 50; i++) mine.push_back(make_pool(16 + i, 0, 0, "foreach"));
    pk_pool_config gc = make_config(32, 0, 0, "gone");
    pk_pool *gone = pk_pool_create(&gc);
    ASSERT_NE(gone, nullptr);
    pk_pool_destroy(gone);
    std::vector<pk_pool *> seen = all_pools();
    std::set<pk_pool *> distinct(seen.begin(), seen.end());
    EXPECT_EQ(distinct.size(), seen.size()) << "a pool visited twice";
    for (const PoolPtr &p : mine) EXPECT_TRUE(contains(seen, p.get()));
    /* the record of `gone` may be reused by a pool made since, never listed as itself */
    for (pk_pool *p : seen) {
        pk_pool_stats st;
        pk_pool_stats_get(p, &st);
        EXPECT_FALSE(st.name && std::string(st.name) == "gone");
    }
}

/* Pools come and go on two threads while a third walks them and reads each
 * one's figures: every pool visited is live (its stats readable, its name
 * one of ours or another test's), and nothing deadlocks. Run under TSan by
 * make test. */
TEST(StatsForeach, StressWalksWhilePoolsAreCreatedAndDestroyed) {
    std::atomic<bool> stop{false};
    std::atomic<size_t> made{0};
    /* Each thread keeps its last four pools live, so a walk always has
     * some of them to meet while others come and go. */
    auto churn = [&] {
        std::vector<PoolPtr> live;
        while (!stop.load()) {
            PoolPtr p = make_pool(48, 0, 0, "churn");
            void *o = pk_pool_alloc(p.get());
            pk_pool_free(p.get(), o);
            live.push_back(std::move(p));
            if (live.size() > 4) live.erase(live.begin());
            made++;
        }
    };
    std::thread a(churn), b(churn);
    struct seen {
        size_t visited = 0, churn = 0;
    } s;
    const size_t want = scaled(2000, 50);
    for (size_t walks = 0; walks < want || made.load() < want || s.churn == 0; walks++)
        pk_pool_foreach(
            [](pk_pool *p, void *arg) {
                auto *sp = static_cast<seen *>(arg);
                pk_pool_stats st;
                pk_pool_stats_get(p, &st);
                EXPECT_GE(st.size, 1u);
                sp->visited++;
                if (st.name && std::string(st.name) == "churn") sp->churn++;
            },
            &s);
    stop = true;
    a.join();
    b.join();
    EXPECT_GE(made.load(), want);
    EXPECT_GT(s.churn, 0u) << "no walk ever met a pool of the churning threads";
}

/* pk_stats_get's totals against a model of a scripted workload, as
 * differences from the process's figures before it (other tests' pools
 * may be live). */
TEST(StatsProcess, TotalsFollowAScriptedWorkload) {
    pk_process_stats before, during, after;
    pk_stats_get(&before);
    PoolPtr a = make_pool(64, 0, 0, "model a");
    PoolPtr b = make_pool(1000, 0, 0, "model b");
    std::vector<void *> as, bs;
    for (int i = 0; i < 3000; i++) as.push_back(pk_pool_alloc(a.get()));
    for (int i = 0; i < 1000; i++) pk_pool_free(a.get(), as[i]);
    for (int i = 0; i < 50; i++) bs.push_back(pk_pool_alloc(b.get()));
    pk_arena *ar = pk_arena_create(0);
    ASSERT_NE(pk_arena_alloc(ar, 200000, 0), nullptr);
    pk_stats_get(&during);
    EXPECT_EQ(during.pools, before.pools + 2);
    EXPECT_EQ(during.pool_live, before.pool_live + 2000 + 50);
    pk_pool_stats sa = pk::pool_stats(a.get()), sb = pk::pool_stats(b.get());
    EXPECT_EQ(sa.live, 2000u);
    EXPECT_EQ(sb.live, 50u);
    EXPECT_EQ(during.pool_bytes_reserved, before.pool_bytes_reserved + sa.bytes_reserved + sb.bytes_reserved);
    EXPECT_GE(sa.bytes_resident, 3000u * 64) << "every slot handed out was touched";
    EXPECT_LE(sa.bytes_resident, sa.bytes_reserved);
    EXPECT_EQ(during.arenas, before.arenas + 1);
    EXPECT_GE(during.arena_bytes_reserved, before.arena_bytes_reserved + 200000);
    pk_arena_stats ast;
    pk_arena_stats_get(ar, &ast);
    EXPECT_GE(ast.bytes_used, 200000u);
    EXPECT_LE(ast.bytes_used, ast.bytes_reserved);
    EXPECT_EQ(during.arena_bytes_reserved - before.arena_bytes_reserved, ast.bytes_reserved);
    EXPECT_GE(during.pool_bytes_reserved_peak, during.pool_bytes_reserved);
    EXPECT_GE(during.arena_bytes_reserved_peak, during.arena_bytes_reserved);
    pk_arena_destroy(ar);

    for (int i = 1000; i < 3000; i++) pk_pool_free(a.get(), as[i]);
    for (void *o : bs) pk_pool_free(b.get(), o);
    size_t released = pk_pool_trim(a.get());
    EXPECT_GT(released, 0u);
    sa = pk::pool_stats(a.get());
    EXPECT_EQ(sa.bytes_released, released);
    EXPECT_EQ(sa.live, 0u);
    pk_stats_get(&after);
    EXPECT_GE(after.pool_bytes_reserved_peak, during.pool_bytes_reserved_peak) << "a peak never falls";
    EXPECT_GE(after.arena_bytes_reserved_peak, during.arena_bytes_reserved_peak);
    EXPECT_EQ(after.arenas, before.arenas);
    EXPECT_EQ(after.pool_live, before.pool_live);
    pk_process_stats viacxx = pk::stats();
    EXPECT_EQ(viacxx.pools, after.pools);
}

TEST(StatsPrint, UnknownFlagsAndNoFileAreEinval) {
    errno = 0;
    EXPECT_EQ(pk_stats_print(stdout, 1u << 7), -1);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_EQ(pk_stats_print(nullptr, 0), -1);
    EXPECT_EQ(errno, EINVAL);
}

/* Both forms name the pool; the JSON form escapes what a name may hold. */
TEST(StatsPrint, TableAndJsonNameEveryPoolWithItsFigures) {
    PoolPtr p = make_pool(72, 0, 0, "say \"hi\"\\now");
    std::vector<void *> objs = alloc_n(p.get(), 7);
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ASSERT_EQ(pk_stats_print(f, 0), 0);
    ASSERT_EQ(pk_stats_print(f, PK_STATS_JSON), 0);
    std::fclose(f);
    std::string out(buf, len);
    std::free(buf);
    EXPECT_NE(out.find("say \"hi\"\\now"), std::string::npos) << out;
    EXPECT_NE(out.find("\"name\": \"say \\\"hi\\\"\\\\now\", \"size\": 72, \"align\": 8, \"live\": 7,"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("* per batch"), std::string::npos);
    for (void *o : objs) pk_pool_free(p.get(), o);
}

/* A walk of 10,000 live pools, for the bench's figure (bench_manypools
 * times it): here only that it finds them all. */
TEST(StatsPrint, AReportOfManyPoolsListsThemAll) {
    std::vector<PoolPtr> many;
    const size_t n = scaled(2000);
    for (size_t i = 0; i < n; i++) many.push_back(make_pool(32, 0, 0, "many"));
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ASSERT_EQ(pk_stats_print(f, PK_STATS_JSON), 0);
    std::fclose(f);
    std::string out(buf, len);
    std::free(buf);
    size_t found = 0;
    for (size_t at = out.find("\"name\": \"many\""); at != std::string::npos;
         at = out.find("\"name\": \"many\"", at + 1))
        found++;
    EXPECT_EQ(found, n);
}

/* Verbose notes come once per kind, through the error handler as PK_NOTE,
 * and only with POOLKIT_VERBOSE=1 (read once: a re-executed child). */
int g_notes = 0;
std::string g_note;
void count_notes(const pk_error *e, void *) {
    if (e->severity == PK_NOTE) {
        g_notes++;
        g_note = e->message;
    }
}

TEST(StatsVerboseDeathTest, ALockingPoolIsNotedOnce) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    setenv("POOLKIT_VERBOSE", "1", 1);
    EXPECT_EXIT(
        {
            pk_set_error_handler(count_notes, nullptr);
            for (int i = 0; i < 3; i++) {
                pk_pool_config c = make_config(32, 0, 0, "limited");
                c.limit = 10;
                PoolPtr p = make_pool(c);
            }
            bool ok = g_notes == 1 &&
                      g_note.find("pool 'limited' takes its lock on every call: a limit") != std::string::npos;
            std::fprintf(stderr, "%d note(s): %s\n", g_notes, g_note.c_str());
            std::exit(ok ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "1 note\\(s\\)");
    unsetenv("POOLKIT_VERBOSE");
}

TEST(StatsVerbose, NothingIsNotedByDefault) {
    if (std::getenv("POOLKIT_VERBOSE")) GTEST_SKIP() << "POOLKIT_VERBOSE is set";
    g_notes = 0;
    pk_set_error_handler(count_notes, nullptr);
    pk_pool_config c = make_config(32, 0, 0, "limited");
    c.limit = 10;
    PoolPtr p = make_pool(c);
    pk_set_error_handler(nullptr, nullptr);
    EXPECT_EQ(g_notes, 0);
}
