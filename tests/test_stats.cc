/* The process view (stats.h): every live pool through pk_pool_foreach, the
 * totals of pk_stats_get against a model, pk_stats_print's forms, the
 * version and options that open the report, the switch words, the report
 * and the debug leak summary at exit (in child processes), the verbose
 * notes, and the C++ wrappers. The report read back from a program and
 * checked against its schema is tests/stats_check.py (example.stats_check). */
#include "child.h"
#include "support.h"

#include <poolkit/poolkit.hpp>

#include <atomic>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
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

/* ---- the version -------------------------------------------------------- */

/* PKTEST_PROJECT_VERSION is CMake's project version (tests/CMakeLists.txt):
 * the library, its headers and the build agree. */
TEST(Version, RuntimeVersionMatchesTheHeadersAndTheBuild) {
    EXPECT_EQ(pk_version(), PK_VERSION);
    EXPECT_EQ(PK_VERSION, PK_VERSION_MAJOR * 10000 + PK_VERSION_MINOR * 100 + PK_VERSION_PATCH);
    EXPECT_STREQ(pk_version_string(), PK_VERSION_STRING);
    EXPECT_EQ(std::string(PK_VERSION_STRING), std::to_string(PK_VERSION_MAJOR) + "." +
                                                  std::to_string(PK_VERSION_MINOR) + "." +
                                                  std::to_string(PK_VERSION_PATCH));
    EXPECT_STREQ(PK_VERSION_STRING, PKTEST_PROJECT_VERSION);
}

/* ---- what opens the report ---------------------------------------------- */

namespace {

std::string report(unsigned flags) {
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    EXPECT_EQ(pk_stats_print(f, flags), 0);
    std::fclose(f);
    std::string out(buf, len);
    std::free(buf);
    return out;
}

const char *const kOptions[] = {"POOLKIT_DEBUG",          "POOLKIT_HARDENED",     "POOLKIT_VERBOSE",
                                "POOLKIT_PURGE_DELAY_MS", "POOLKIT_BACKGROUND_PURGE", "POOLKIT_DEBUG_FRAMES",
                                "POOLKIT_STATS", "POOLKIT_FAULT_HANDLER"};

/* The table's row for option `name`: "  NAME value source". */
std::string option_row(const std::string &table, const std::string &name) {
    std::smatch m;
    std::regex row("\n  " + name + " +([^ ]+) +([^\n]+)\n");
    return std::regex_search(table, m, row) ? m[1].str() + " " + m[2].str() : "(no row)";
}

}  // namespace

TEST(StatsPrint, TableOpensWithTheVersionAndEveryOptionInForce) {
    std::string t = report(0);
    std::string head = std::string("poolkit ") + PK_VERSION_STRING + " report (pid " +
                       std::to_string(getpid()) + ")\noptions in force";
    EXPECT_EQ(t.compare(0, head.size(), head), 0) << t;
    size_t options_end = t.find("\npool ");
    for (const char *name : kOptions) {
        size_t at = t.find(std::string("\n  ") + name + " ");
        EXPECT_LT(at, options_end) << name << " is not among the options before the pools:\n" << t;
    }
    long delay = pk_set_purge_delay(-1);
    EXPECT_EQ(option_row(t, "POOLKIT_PURGE_DELAY_MS").rfind(std::to_string(delay) + " ", 0), 0u) << t;
}

TEST(StatsPrint, JsonOpensWithTheVersionAndEveryOptionInForce) {
    std::string j = report(PK_STATS_JSON);
    EXPECT_EQ(j.rfind(std::string("{\"schema\": \"poolkit-stats/2\", \"version\": \"") + PK_VERSION_STRING +
                          "\", \"pid\": ",
                      0),
              0u)
        << j;
    for (const char *name : kOptions)
        EXPECT_NE(j.find(std::string("\n  \"") + name + "\": {\"value\": "), std::string::npos) << name << "\n" << j;
    long delay = pk_set_purge_delay(-1);
    EXPECT_NE(j.find("\"POOLKIT_PURGE_DELAY_MS\": {\"value\": " + std::to_string(delay) + ", \"source\": "),
              std::string::npos)
        << j;
}

/* A value set by pk_set_purge_delay is shown as set by it. */
PKTEST_CHILD(DelaySetByTheCallIsReportedSo) {
    pk_set_purge_delay(321);
    std::string t = report(0);
    CHILD_CHECK(option_row(t, "POOLKIT_PURGE_DELAY_MS") == "321 pk_set_purge_delay", "%s", t.c_str());
    return CHILD_PASS;
}
TEST(StatsPrint, ADelaySetByTheCallIsReportedAsSetByIt) {
    EXPECT_CHILD_PASSES("DelaySetByTheCallIsReportedSo", {{"POOLKIT_PURGE_DELAY_MS", "40"}});
}

/* So is the background purge set by pk_set_background_purge. */
PKTEST_CHILD(BackgroundPurgeSetByTheCallIsReportedSo) {
    pk_set_background_purge(1);
    std::string on = report(0);
    pk_set_background_purge(0);
    std::string off = report(0);
    CHILD_CHECK(option_row(on, "POOLKIT_BACKGROUND_PURGE") == "on pk_set_background_purge", "%s", on.c_str());
    CHILD_CHECK(option_row(off, "POOLKIT_BACKGROUND_PURGE") == "off pk_set_background_purge", "%s", off.c_str());
    return CHILD_PASS;
}
TEST(StatsPrint, TheBackgroundPurgeSetByTheCallIsReportedAsSetByIt) {
    EXPECT_CHILD_PASSES("BackgroundPurgeSetByTheCallIsReportedSo", {{"POOLKIT_BACKGROUND_PURGE", "0"}});
}

/* ---- the switch words ----------------------------------------------------- */

/* Prints the option rows of the report (the values in force). */
PKTEST_CHILD(PrintOptionRows) {
    PoolPtr p = make_pool(32, 0, 0, "rows");
    std::string t = report(0);
    for (const char *name : kOptions) std::printf("%s=%s\n", name, option_row(t, name).c_str());
    return CHILD_PASS;
}

namespace {

/* The row the report shows for `var`=`value`, and what the child wrote to stderr. */
std::pair<std::string, std::string> row_with(const char *var, const char *value) {
    ChildResult r = run_child("PrintOptionRows", {{var, value}});
    EXPECT_TRUE(r.passed()) << r.describe();
    std::smatch m;
    std::regex row(std::string("(^|\n)") + var + "=([^\n]*)\n");
    return {std::regex_search(r.out, m, row) ? m[2].str() : "(no row)\n" + r.out, r.err};
}

}  // namespace

TEST(StatsOptions, EverySwitchTakesTheWordsForOnInAnyCase) {
    for (const char *var : {"POOLKIT_DEBUG", "POOLKIT_HARDENED", "POOLKIT_VERBOSE", "POOLKIT_BACKGROUND_PURGE"})
        for (const char *word : {"1", "true", "yes", "on", "TRUE", "Yes", "ON"}) {
            auto [row, err] = row_with(var, word);
            EXPECT_EQ(row, "on environment") << var << "=" << word << "\n" << err;
            EXPECT_EQ(err.find("bad option"), std::string::npos) << var << "=" << word << "\n" << err;
        }
}

TEST(StatsOptions, EverySwitchTakesTheWordsForOffInAnyCase) {
    for (const char *var : {"POOLKIT_DEBUG", "POOLKIT_HARDENED", "POOLKIT_VERBOSE", "POOLKIT_BACKGROUND_PURGE"})
        for (const char *word : {"0", "false", "no", "off", "FALSE", "No", "Off"}) {
            auto [row, err] = row_with(var, word);
            EXPECT_EQ(row, "off environment") << var << "=" << word << "\n" << err;
            EXPECT_EQ(err.find("bad option"), std::string::npos) << var << "=" << word << "\n" << err;
        }
}

TEST(StatsOptions, StatsTakesTheSwitchWordsAndFileNames) {
    for (const char *word : {"1", "yes", "On", "TRUE"}) EXPECT_EQ(row_with("POOLKIT_STATS", word).first, "stderr environment");
    for (const char *word : {"0", "no", "OFF", "false"}) EXPECT_EQ(row_with("POOLKIT_STATS", word).first, "off environment");
    for (const char *path : {"./stats", "report.json", "/nonexistent/x"})
        EXPECT_EQ(row_with("POOLKIT_STATS", path).first, std::string(path) + " environment");
}

TEST(StatsOptions, AWordThatIsNeitherSwitchNorFileNameIsReportedByName) {
    for (const char *var : {"POOLKIT_DEBUG", "POOLKIT_HARDENED", "POOLKIT_VERBOSE", "POOLKIT_BACKGROUND_PURGE",
                            "POOLKIT_STATS"}) {
        auto [row, err] = row_with(var, "maybe");
        EXPECT_NE(err.find(std::string("poolkit: bad option: ") + var + "=maybe is "), std::string::npos)
            << var << "\n" << err;
        EXPECT_EQ(row.rfind("off default (the environment's value was malformed)", 0), 0u) << var << ": " << row;
    }
}

TEST(StatsOptions, AnUnknownVariableIsReportedOnceNamingTheClosestKnownOne) {
    const std::pair<const char *, const char *> typos[] = {
        {"POOLKIT_STAT", "POOLKIT_STATS"},
        {"POOLKIT_HARDEN", "POOLKIT_HARDENED"},
        {"POOLKIT_DEBUGFRAMES", "POOLKIT_DEBUG_FRAMES"},
        {"POOLKIT_PURGE_DELAY", "POOLKIT_PURGE_DELAY_MS"},
    };
    for (auto [typo, meant] : typos) {
        auto [row, err] = row_with(typo, "1");
        std::string want = std::string("poolkit: unknown option: ") + typo +
                           " is not a poolkit variable (did you mean " + meant + "?)";
        size_t at = err.find(want);
        EXPECT_NE(at, std::string::npos) << typo << "\n" << err;
        EXPECT_EQ(err.find("unknown option", at + want.size()), std::string::npos) << "reported once\n" << err;
    }
}

TEST(StatsOptions, KnownVariablesAndTheBuildsOwnAreNotReportedAsUnknown) {
    for (const char *var : {"POOLKIT_STATS", "POOLKIT_DEBUG_FRAMES", "POOLKIT_TEST_SCALE", "POOLKIT_SETUP_PEERS"}) {
        auto [row, err] = row_with(var, "1");
        EXPECT_EQ(err.find("unknown option"), std::string::npos) << var << "\n" << err;
    }
}

/* ---- counts a user can read ------------------------------------------------- */

/* Three allocations from a fresh pool: thread caches take a whole batch,
 * which the columns that move per batch show under their own names; the
 * live column says 3. */
TEST(StatsPrint, ThreeAllocationsShowAsThreeLiveAndTheBatchColumnsAreNamedSo) {
    PoolPtr p = make_pool(40, 0, 0, "three");
    std::vector<void *> objs = alloc_n(p.get(), 3);
    pk_pool_stats st = pk::pool_stats(p.get());
    std::string t = report(0);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(t, m, std::regex("\npool +size +live +slabs +reserved +resident +released +"
                                                   "taken +returned +remote_frees +peak_live\n")))
        << t;
    ASSERT_TRUE(std::regex_search(t, m, std::regex("\nthree +40 +([0-9]+) +[0-9]+ +[^\n]* ([0-9]+) +[0-9]+ +[0-9]+ "
                                                   "+([0-9]+)\n")))
        << t;
    EXPECT_EQ(m[1].str(), "3") << "live" << t;
    EXPECT_EQ(m[2].str(), std::to_string(st.taken)) << "taken" << t;
    EXPECT_EQ(m[3].str(), std::to_string(st.peak_live)) << "peak_live" << t;
    EXPECT_EQ(t.find("allocs"), std::string::npos) << "no column reads as a count of calls\n" << t;
    for (void *o : objs) pk_pool_free(p.get(), o);
}

/* ---- the report at exit ------------------------------------------------------ */

namespace {

const pk_class kLeftOver = {"LeftOver", 24, nullptr};

/* Some pools and objects left live, then exit() (not _exit: the report is
 * an atexit handler), in the directory PKTEST_DIR when set. */
[[noreturn]] void leave_some_and_exit() {
    const char *dir = std::getenv("PKTEST_DIR");
    if (dir && chdir(dir) != 0) _exit(CHILD_FAIL);
    pk_pool_config c = make_config(48, 0, 0, "left");
    pk_pool *p = pk_pool_create(&c);
    for (int i = 0; i < 3; i++) (void)pk_pool_alloc(p);
    for (int i = 0; i < 2; i++) (void)pk_new(&kLeftOver);
    std::exit(CHILD_PASS);
}

std::string scratch_dir() {
    char tmpl[] = "/tmp/pktest-stats-XXXXXX";
    const char *d = mkdtemp(tmpl);
    return d ? d : "";
}

std::vector<std::string> files_in(const std::string &dir) {
    std::vector<std::string> names;
    std::string cmd = "ls -A " + dir;
    FILE *ls = popen(cmd.c_str(), "r");
    char line[512];
    while (ls && std::fgets(line, sizeof line, ls)) names.push_back(line);
    if (ls) pclose(ls);
    return names;
}

}  // namespace

PKTEST_CHILD(LeaveSomeAndExit) { leave_some_and_exit(); }

TEST(StatsAtExit, AWordForOnWritesTheTableOnStderrNotAFile) {
    for (const char *word : {"1", "yes", "on", "True"}) {
        std::string dir = scratch_dir();
        ChildResult r = run_child("LeaveSomeAndExit", {{"POOLKIT_STATS", word}, {"PKTEST_DIR", dir.c_str()}});
        EXPECT_TRUE(r.passed()) << r.describe();
        EXPECT_NE(r.err.find(std::string("poolkit ") + PK_VERSION_STRING + " report (pid "), std::string::npos)
            << word << "\n" << r.err;
        EXPECT_TRUE(files_in(dir).empty()) << "POOLKIT_STATS=" << word << " wrote a file";
        std::string rm = "rm -rf " + dir;
        EXPECT_EQ(std::system(rm.c_str()), 0);
    }
}

TEST(StatsAtExit, ANameWithASlashOrADotIsAFile) {
    std::string dir = scratch_dir();
    for (const char *name : {"./plain", "report.txt"}) {
        ChildResult r = run_child("LeaveSomeAndExit", {{"POOLKIT_STATS", name}, {"PKTEST_DIR", dir.c_str()}});
        EXPECT_TRUE(r.passed()) << r.describe();
        EXPECT_EQ(r.err.find("report (pid"), std::string::npos) << r.err;
        std::ifstream in(dir + "/" + name);
        std::stringstream got;
        got << in.rdbuf();
        EXPECT_NE(got.str().find("\nleft "), std::string::npos) << name << ": " << got.str();
    }
    std::string rm = "rm -rf " + dir;
    EXPECT_EQ(std::system(rm.c_str()), 0);
}

TEST(StatsAtExit, AWordThatIsNeitherIsReportedAndNothingWritten) {
    std::string dir = scratch_dir();
    ChildResult r = run_child("LeaveSomeAndExit", {{"POOLKIT_STATS", "ys"}, {"PKTEST_DIR", dir.c_str()}});
    EXPECT_TRUE(r.passed()) << r.describe();
    EXPECT_NE(r.err.find("poolkit: bad option: POOLKIT_STATS=ys is neither a switch"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("report (pid"), std::string::npos) << r.err;
    EXPECT_TRUE(files_in(dir).empty());
    std::string rm = "rm -rf " + dir;
    EXPECT_EQ(std::system(rm.c_str()), 0);
}

TEST(StatsAtExit, TheReportHasThePkNewClassRows) {
    ChildResult r = run_child("LeaveSomeAndExit", {{"POOLKIT_STATS", "1"}});
    EXPECT_TRUE(r.passed()) << r.describe();
    EXPECT_TRUE(std::regex_search(r.err, std::regex("\npk_new class +size +live\nLeftOver +24 +2\n"))) << r.err;
}

/* Another thread with a cache at exit: the class walk cannot run, and the
 * report says why instead of leaving the rows out silently. */
PKTEST_CHILD(LeaveSomeWithAnotherThreadAndExit) {
    static std::atomic<bool> cached{false};
    std::thread([] {
        PoolPtr p = make_pool(32, 0, 0, "other thread");
        pk_pool_free(p.get(), pk_pool_alloc(p.get()));
        cached = true;
        for (;;) pause(); /* holds its cache until the process ends */
    }).detach();
    while (!cached) usleep(1000);
    leave_some_and_exit();
}

TEST(StatsAtExit, ClassRowsLeftOutWhileOtherThreadsHoldCachesSaySo) {
    ChildResult r = run_child("LeaveSomeWithAnotherThreadAndExit", {{"POOLKIT_STATS", "1"}});
    EXPECT_TRUE(r.passed()) << r.describe();
    EXPECT_NE(r.err.find("\npk_new classes: not counted (2 threads hold caches at exit"), std::string::npos)
        << r.err;
}

/* ---- the debug leak summary at exit ------------------------------------------- */

/* Exported and keeping its frame (no tail call), so the report can name it. */
extern "C" __attribute__((noinline)) void *stats_leak_here(pk_pool *p) {
    void *o = pk_pool_alloc(p);
    __asm__ volatile("" : : "r"(o) : "memory");
    return o;
}

PKTEST_CHILD(LeakAtExit) {
    pk_pool_config c = make_config(48, 0, 0, "leaky");
    pk_pool *p = pk_pool_create(&c);
    for (int i = 0; i < 6; i++) (void)stats_leak_here(p);
    pk_autorelease_pool ap = pk_autorelease_push(); /* makes the library's page pool */
    pk_autorelease_pop(ap);
    (void)pk_new(&kLeftOver);
    pk_arena *a = pk_arena_create(0);
    (void)pk_arena_alloc(a, 1000, 0);
    std::exit(CHILD_PASS);
}

PKTEST_CHILD(OnlyAnArenaAtExit) {
    pk_pool_destroy(make_pool(32).release());
    (void)pk_arena_create(0);
    std::exit(CHILD_PASS);
}

/* Scratch memory taken inside a pool that popped: the thread's scratch
 * arena is the library's, and the main thread's is never destroyed (its
 * thread does not exit), which the program cannot help. */
PKTEST_CHILD(OnlyScratchAtExit) {
    PK_AUTORELEASE_POOL {
        CHILD_CHECK(pk_scratch(100) != nullptr, "no scratch memory");
    }
    std::exit(CHILD_PASS);
}

TEST(StatsLeakSummary, TheScratchArenaOfAPoppedPoolIsNoLeak) {
    ChildResult r = run_child("OnlyScratchAtExit", {{"POOLKIT_DEBUG", "1"}, {"POOLKIT_STATS", nullptr}});
    EXPECT_TRUE(r.passed()) << r.describe();
    EXPECT_EQ(r.err.find("poolkit: leak"), std::string::npos) << r.err;
}

TEST(StatsLeakSummary, CountsWhatTheProgramLeftAndNotTheLibrarysOwnPool) {
    ChildResult r = run_child("LeakAtExit", {{"POOLKIT_DEBUG", "1"}, {"POOLKIT_STATS", nullptr}});
    EXPECT_TRUE(r.passed()) << r.describe();
    EXPECT_NE(r.err.find("poolkit: leak: at exit, 7 live objects (pool 'leaky' 6, class LeftOver 1) and 1 arena "
                         "never destroyed ("),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("autorelease pages"), std::string::npos) << r.err;
}

TEST(StatsLeakSummary, ListsTheFirstObjectsWithWhereTheyWereAllocated) {
    ChildResult r = run_child("LeakAtExit", {{"POOLKIT_DEBUG", "1"}, {"POOLKIT_STATS", nullptr}});
    EXPECT_TRUE(r.passed()) << r.describe();
    std::string obj = "0x[0-9a-f]+ \\(allocated at stats_leak_here\\+0x[0-9a-f]+\\)";
    EXPECT_TRUE(std::regex_search(r.err, std::regex("\npoolkit: leak: pool 'leaky', 6 live at exit, the first: " + obj +
                                                    "(, " + obj + "){3} \\.\\.\\. \\(2 more\\)\n")))
        << r.err;
    EXPECT_TRUE(std::regex_search(r.err, std::regex("\npoolkit: leak: pool 'pk_alloc [0-9]+', 1 live "
                                                    "at exit, the first: LeftOver 0x[0-9a-f]+ \\(allocated at ")))
        << r.err;
}

TEST(StatsLeakSummary, AnArenaNeverDestroyedIsReportedAlone) {
    ChildResult r = run_child("OnlyAnArenaAtExit", {{"POOLKIT_DEBUG", "1"}, {"POOLKIT_STATS", nullptr}});
    EXPECT_TRUE(r.passed()) << r.describe();
    EXPECT_NE(r.err.find("poolkit: leak: at exit, 1 arena never destroyed ("), std::string::npos) << r.err;
}
