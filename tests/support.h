/* Helpers shared by the pool tests: scaling for slow tool runs, RAII pools,
 * content patterns, an error-handler recorder and a construct/destruct
 * tracker that checks the object-caching contract.
 *
 * POOLKIT_TEST_SCALE=<fraction> (e.g. 0.05 under valgrind, 0.2 under TSan)
 * scales every iteration count down; heavy tests carry "Stress" in their
 * names. */
#ifndef POOLKIT_TESTS_SUPPORT_H
#define POOLKIT_TESTS_SUPPORT_H

#include <poolkit/poolkit.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <strings.h>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <unistd.h>

namespace pktest {

/* Waits until a flag is raised; raising it wakes every waiter. */
class Gate {
  public:
    void open() {
        std::lock_guard<std::mutex> g(m_);
        open_ = true;
        cv_.notify_all();
    }
    void wait() {
        std::unique_lock<std::mutex> g(m_);
        cv_.wait(g, [this] { return open_; });
    }

  private:
    std::mutex m_;
    std::condition_variable cv_;
    bool open_ = false;
};

/* ---- scaling ---------------------------------------------------------- */

/* Valgrind preloads its helpers; tests that deliberately touch freed memory
 * skip themselves there (memcheck would count the write as an error). */
inline bool running_under_valgrind() {
    const char *p = std::getenv("LD_PRELOAD");
    return p && std::strstr(p, "vgpreload") != nullptr;
}

#if defined(__SANITIZE_ADDRESS__)
#  define PKTEST_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define PKTEST_ASAN 1
#  endif
#endif
#ifndef PKTEST_ASAN
#  define PKTEST_ASAN 0
#endif
#if defined(__SANITIZE_THREAD__)
#  define PKTEST_TSAN 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define PKTEST_TSAN 1
#  endif
#endif
#ifndef PKTEST_TSAN
#  define PKTEST_TSAN 0
#endif

/* The factor every iteration count is multiplied by: POOLKIT_TEST_SCALE if
 * set, else a default for the tool the program runs under (valgrind 0.05,
 * ThreadSanitizer 0.25, AddressSanitizer 0.5), else 1. */
inline double test_scale() {
    static const double scale = [] {
        const char *v = std::getenv("POOLKIT_TEST_SCALE");
        if (v && *v) {
            double s = std::strtod(v, nullptr);
            if (s > 0) return s;
        }
        if (running_under_valgrind()) return 0.05;
#if PKTEST_TSAN
        return 0.25;
#elif PKTEST_ASAN
        return 0.5;
#else
        return 1.0;
#endif
    }();
    return scale;
}

/* n scaled by POOLKIT_TEST_SCALE, never below lo. */
inline size_t scaled(size_t n, size_t lo = 1) {
    double v = static_cast<double>(n) * test_scale();
    size_t s = static_cast<size_t>(v);
    return s < lo ? lo : s;
}

/* True when the tests run under a slow tool (any scale below 1). */
inline bool slow_tool() { return test_scale() < 1.0; }

/* A size /proc/self/status gives this process (field "VmRSS", "VmSize"...)
 * in bytes, or 0 if unknown. */
inline size_t status_bytes(const char *field) {
    FILE *f = std::fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    size_t kb = 0, n = std::strlen(field);
    while (std::fgets(line, sizeof line, f))
        if (std::strncmp(line, field, n) == 0 && line[n] == ':' && std::sscanf(line + n + 1, "%zu", &kb) == 1) break;
    std::fclose(f);
    return kb * 1024;
}

/* Resident set size of this process in bytes, or 0 if unknown. */
inline size_t rss_bytes() { return status_bytes("VmRSS"); }
/* Its address space (what a limit on it, RLIMIT_AS, counts). */
inline size_t vm_bytes() { return status_bytes("VmSize"); }

inline size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

/* ---- pools -------------------------------------------------------------- */

struct PoolDestroyer {
    void operator()(pk_pool *p) const { pk_pool_destroy(p); }
};
using PoolPtr = std::unique_ptr<pk_pool, PoolDestroyer>;

inline pk_pool_config make_config(size_t size, size_t align = 0, unsigned flags = 0,
                                  const char *name = "test") {
    pk_pool_config c;
    std::memset(&c, 0, sizeof c);
    c.name = name;
    c.size = size;
    c.align = align;
    c.flags = flags;
    return c;
}

inline PoolPtr make_pool(const pk_pool_config &c) { return PoolPtr(pk_pool_create(&c)); }

inline PoolPtr make_pool(size_t size, size_t align = 0, unsigned flags = 0,
                         const char *name = "test") {
    pk_pool_config c = make_config(size, align, flags, name);
    return make_pool(c);
}

inline pk_pool_stats stats_of(pk_pool *p) {
    pk_pool_stats s;
    std::memset(&s, 0, sizeof s);
    pk_pool_stats_get(p, &s);
    return s;
}

/* The alignment pool.h gives align = 0: the largest power of two dividing
 * size, capped at 4096, or at alignof(max_align_t) in a pool with hooks. */
inline size_t natural_align(size_t size, bool hooks = false) {
    size_t a = size & (~size + 1);
    return std::min(a, hooks ? alignof(std::max_align_t) : size_t(4096));
}

inline bool aligned_to(const void *p, size_t a) {
    return (reinterpret_cast<uintptr_t>(p) & (a - 1)) == 0;
}

/* The front end's classes as <poolkit/alloc.h> describes them, computed
 * here independently: 8, 16 to 128 by 16, then four per doubling up to
 * PK_ALLOC_CLASS_MAX (test_alloc.cc checks them against the library). */
inline std::vector<size_t> alloc_classes() {
    std::vector<size_t> c = {8};
    for (size_t s = 16; s <= 128; s += 16) c.push_back(s);
    for (size_t b = 128; b < PK_ALLOC_CLASS_MAX; b *= 2)
        for (size_t k = 5; k <= 8; k++) c.push_back(b / 4 * k);
    return c;
}

/* The smallest class that holds size, or 0 past the classes. */
inline size_t alloc_class_for(size_t size) {
    for (size_t c : alloc_classes())
        if (c >= size) return c;
    return 0;
}

inline std::string ptr_str(const void *p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", p);
    return buf;
}

/* ---- content patterns ---------------------------------------------------- */

/* Whether the environment turns the switch `name` on (POOLKIT_DEBUG,
 * POOLKIT_HARDENED), as the library reads it: 1, true, yes or on, in any
 * case. */
inline bool env_on(const char *name) {
    const char *v = std::getenv(name);
    if (!v) return false;
    for (const char *word : {"1", "true", "yes", "on"})
        if (strcasecmp(v, word) == 0) return true;
    return false;
}

/* The process's mappings now: the lines of /proc/self/maps, which Linux
 * bounds (vm.max_map_count, 65,530 by default), so an allocator that maps
 * each block alone fails past that many live blocks. 0 where it cannot be
 * read. */
inline long mapping_count() {
    FILE *f = std::fopen("/proc/self/maps", "r");
    if (!f) return 0;
    long n = 0;
    for (int c; (c = std::fgetc(f)) != EOF;) n += c == '\n';
    std::fclose(f);
    return n;
}

/* Word i of the pattern with the given key: cheap, differs between keys and
 * positions. */
inline uint64_t pattern_word(uint64_t key, size_t i) {
    uint64_t x = (key + 1) * 0x9E3779B97F4A7C15ull ^ (i + 1) * 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 31) ^ 0x5A5A5A5A5A5A5A5Aull;
}

/* Byte i of the pattern (the bytes of the words above, little or big end
 * alike since both sides use memcpy). */
inline void fill_pattern(void *obj, size_t size, uint64_t key) {
    unsigned char *b = static_cast<unsigned char *>(obj);
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        uint64_t w = pattern_word(key, i / 8);
        std::memcpy(b + i, &w, 8);
    }
    if (i < size) {
        uint64_t w = pattern_word(key, i / 8);
        std::memcpy(b + i, &w, size - i);
    }
}

/* Index of the first byte that differs from the pattern, or size. */
inline size_t check_pattern(const void *obj, size_t size, uint64_t key) {
    const unsigned char *b = static_cast<const unsigned char *>(obj);
    for (size_t i = 0; i < size; i += 8) {
        uint64_t w = pattern_word(key, i / 8);
        size_t n = size - i < 8 ? size - i : 8;
        if (std::memcmp(b + i, &w, n) != 0) {
            const unsigned char *wb = reinterpret_cast<const unsigned char *>(&w);
            for (size_t k = 0; k < n; k++)
                if (b[i + k] != wb[k]) return i + k;
        }
    }
    return size;
}

inline bool all_bytes(const void *obj, size_t size, unsigned char v) {
    const unsigned char *b = static_cast<const unsigned char *>(obj);
    if (size == 0) return true;
    /* every byte equals v iff the first does and each equals the next */
    return b[0] == v && std::memcmp(b, b + 1, size - 1) == 0;
}

/* ---- the process report ----------------------------------------------- */

/* pk_stats_print's report with flags (PK_STATS_*), as a string. */
inline std::string stats_report(unsigned flags) {
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    pk_stats_print(f, flags);
    fclose(f);
    std::string s(buf, len);
    free(buf);
    return s;
}

/* The front end's mapped blocks live (the JSON report's large_blocks), or
 * SIZE_MAX where the report has none. */
inline size_t mapped_blocks() {
    std::string s = stats_report(PK_STATS_JSON);
    size_t at = s.find("\"large_blocks\": ");
    return at == std::string::npos ? SIZE_MAX : std::strtoul(s.c_str() + at + 16, nullptr, 10);
}

/* ---- error handler recorder --------------------------------------------- */

struct RecordedError {
    pk_severity severity;
    std::string what, pool, message;
    const void *ptr;
};

/* While alive, every error goes into errors() instead of stderr. A fatal
 * error still aborts after the handler returns (that is the contract), so use
 * this only for warnings; death tests use print_fields_handler. */
class ErrorCapture {
  public:
    ErrorCapture() { pk_set_error_handler(&ErrorCapture::handler, this); }
    ~ErrorCapture() { pk_set_error_handler(nullptr, nullptr); }
    ErrorCapture(const ErrorCapture &) = delete;
    ErrorCapture &operator=(const ErrorCapture &) = delete;

    std::vector<RecordedError> errors() {
        std::lock_guard<std::mutex> g(m_);
        return errors_;
    }
    size_t count() {
        std::lock_guard<std::mutex> g(m_);
        return errors_.size();
    }

  private:
    static void handler(const pk_error *e, void *arg) {
        ErrorCapture *self = static_cast<ErrorCapture *>(arg);
        RecordedError r;
        r.severity = e->severity;
        r.what = e->what ? e->what : "";
        r.pool = e->pool ? e->pool : "";
        r.message = e->message ? e->message : "";
        r.ptr = e->ptr;
        std::lock_guard<std::mutex> g(self->m_);
        self->errors_.push_back(r);
    }
    std::mutex m_;
    std::vector<RecordedError> errors_;
};

/* For death tests: writes the error's fields as one line on stderr and
 * returns (poolkit then aborts). The line reads
 *   HANDLER severity=<FATAL|WARNING> what=<what> pool=<pool> ptr=<%p>
 * followed by a second line with the message. */
inline void print_fields_handler(const pk_error *e, void *) {
    char line[3200];
    int n = std::snprintf(line, sizeof line, "HANDLER severity=%s what=%s pool=%s ptr=%p\nMESSAGE %s\n",
                          e->severity == PK_FATAL ? "FATAL" : "WARNING", e->what ? e->what : "(null)",
                          e->pool ? e->pool : "(null)", e->ptr, e->message ? e->message : "(null)");
    if (n > 0) {
        size_t len = std::min(static_cast<size_t>(n), sizeof line - 1);
        if (write(STDERR_FILENO, line, len) < 0) { /* nothing to do */
        }
    }
}

/* The death test every misuse test makes: in a child, with
 * print_fields_handler installed, `statements` must end in a fatal report
 * whose fields and message match `regex`. */
#define PKTEST_EXPECT_REPORT(statements, regex)                            \
    EXPECT_DEATH(                                                          \
        {                                                                  \
            pk_set_error_handler(::pktest::print_fields_handler, nullptr); \
            statements;                                                    \
        },                                                                 \
        regex)

/* The purge delay, set for one test and put back after it. */
class PurgeDelay {
public:
    explicit PurgeDelay(long ms) : old_(pk_set_purge_delay(ms)) {}
    ~PurgeDelay() { pk_set_purge_delay(old_); }
    PurgeDelay(const PurgeDelay &) = delete;
    PurgeDelay &operator=(const PurgeDelay &) = delete;

private:
    long old_;
};

/* Up to n objects from p (fewer if it runs out). */
inline std::vector<void *> alloc_n(pk_pool *p, size_t n) {
    std::vector<void *> v;
    v.reserve(n);
    for (size_t i = 0; i < n; i++) {
        void *o = pk_pool_alloc(p);
        if (!o) break;
        v.push_back(o);
    }
    return v;
}

inline void free_all(pk_pool *p, std::vector<void *> &v) {
    for (void *o : v) pk_pool_free(p, o);
    v.clear();
}

/* No two of objs (each size bytes) overlap. */
inline ::testing::AssertionResult no_overlap(std::vector<void *> objs, size_t size) {
    std::sort(objs.begin(), objs.end());
    for (size_t i = 1; i < objs.size(); i++) {
        uintptr_t a = reinterpret_cast<uintptr_t>(objs[i - 1]);
        uintptr_t b = reinterpret_cast<uintptr_t>(objs[i]);
        if (a == b) return ::testing::AssertionFailure() << "object " << objs[i] << " handed out twice";
        if (a + size > b)
            return ::testing::AssertionFailure()
                   << "objects " << objs[i - 1] << " and " << objs[i] << " overlap (size " << size << ")";
    }
    return ::testing::AssertionSuccess();
}

/* pk_pool_visit's callback that gathers the objects into a std::vector<void *>. */
inline void collect(void *obj, void *arg) { static_cast<std::vector<void *> *>(arg)->push_back(obj); }

/* ---- construct/destruct tracker ------------------------------------------ */

/* Checks the object-caching contract from inside the hooks: construct runs at
 * most once per object per stay, destruct only on a constructed object, and
 * an object carries the state its user left until destruct. Objects are
 * identified by address; the construct hook fills the object with
 * kConstructByte. Thread-safe (one mutex). */
class HookTracker {
  public:
    static constexpr unsigned char kConstructByte = 0xC7;

    explicit HookTracker(size_t size) : size_(size) {}

    void install(pk_pool_config &c) {
        c.construct = &HookTracker::construct_hook;
        c.destruct = &HookTracker::destruct_hook;
        c.arg = this;
    }

    /* The user has just written the pattern `key` into obj (call right after
     * writing, before the object is freed). */
    void set_state(void *obj, uint64_t key) {
        std::lock_guard<std::mutex> g(m_);
        auto it = objs_.find(reinterpret_cast<uintptr_t>(obj));
        if (it == objs_.end()) {
            unknown_state_++;
            return;
        }
        it->second.has_state = true;
        it->second.key = key;
    }

    /* Checks an object just handed out: constructed, and holding either the
     * construct fill or the state its last user left. Returns an empty string
     * when all is well, else what is wrong. */
    std::string check_handed_out(const void *obj) {
        std::lock_guard<std::mutex> g(m_);
        auto it = objs_.find(reinterpret_cast<uintptr_t>(obj));
        if (it == objs_.end()) return "object handed out before construct ran";
        if (it->second.has_state) {
            size_t bad = check_pattern(obj, size_, it->second.key);
            if (bad != size_)
                return "state left by the user lost at byte " + std::to_string(bad);
        } else if (!all_bytes(obj, size_, kConstructByte)) {
            return "constructed object does not hold what construct wrote";
        }
        return "";
    }

    bool is_constructed(const void *obj) {
        std::lock_guard<std::mutex> g(m_);
        return objs_.count(reinterpret_cast<uintptr_t>(obj)) != 0;
    }

    long constructs() { std::lock_guard<std::mutex> g(m_); return constructs_; }
    long destructs() { std::lock_guard<std::mutex> g(m_); return destructs_; }
    long double_constructs() { std::lock_guard<std::mutex> g(m_); return double_constructs_; }
    long bad_destructs() { std::lock_guard<std::mutex> g(m_); return bad_destructs_; }
    long lost_states() { std::lock_guard<std::mutex> g(m_); return lost_states_; }
    long unknown_state() { std::lock_guard<std::mutex> g(m_); return unknown_state_; }
    size_t constructed_now() { std::lock_guard<std::mutex> g(m_); return objs_.size(); }

    /* Everything the hooks saw that breaks the contract, as one string. */
    std::string violations() {
        std::lock_guard<std::mutex> g(m_);
        std::string s;
        if (double_constructs_) s += " construct-twice=" + std::to_string(double_constructs_);
        if (bad_destructs_) s += " destruct-without-construct=" + std::to_string(bad_destructs_);
        if (lost_states_) s += " state-lost-before-destruct=" + std::to_string(lost_states_);
        if (unknown_state_) s += " freed-unconstructed=" + std::to_string(unknown_state_);
        return s;
    }

  private:
    struct Obj {
        bool has_state = false;
        uint64_t key = 0;
    };

    static void construct_hook(void *obj, void *arg) {
        HookTracker *t = static_cast<HookTracker *>(arg);
        std::lock_guard<std::mutex> g(t->m_);
        t->constructs_++;
        auto r = t->objs_.emplace(reinterpret_cast<uintptr_t>(obj), Obj());
        if (!r.second) {
            t->double_constructs_++;
            r.first->second = Obj();
        }
        std::memset(obj, kConstructByte, t->size_);
    }

    static void destruct_hook(void *obj, void *arg) {
        HookTracker *t = static_cast<HookTracker *>(arg);
        std::lock_guard<std::mutex> g(t->m_);
        t->destructs_++;
        auto it = t->objs_.find(reinterpret_cast<uintptr_t>(obj));
        if (it == t->objs_.end()) {
            t->bad_destructs_++;
            return;
        }
        if (it->second.has_state) {
            if (check_pattern(obj, t->size_, it->second.key) != t->size_) t->lost_states_++;
        } else if (!all_bytes(obj, t->size_, kConstructByte)) {
            t->lost_states_++;
        }
        t->objs_.erase(it);
    }

    size_t size_;
    std::mutex m_;
    std::unordered_map<uintptr_t, Obj> objs_;
    long constructs_ = 0, destructs_ = 0, double_constructs_ = 0, bad_destructs_ = 0;
    long lost_states_ = 0, unknown_state_ = 0;
};

/* ---- small deterministic random numbers ----------------------------------- */

struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
    uint64_t next() { /* splitmix64 */
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    size_t below(size_t n) { return n ? static_cast<size_t>(next() % n) : 0; }
    bool chance(unsigned percent) { return below(100) < percent; }
};

/* Removes a random element of live (not empty) and returns it: the random
 * free of the tests that walk a pool through allocations and frees. */
inline void *take_random(std::vector<void *> &live, Rng &rng) {
    size_t k = rng.below(live.size());
    std::swap(live[k], live.back());
    void *o = live.back();
    live.pop_back();
    return o;
}

/* A pool named "hooked" whose construct and destruct hooks a HookTracker
 * checks. */
struct HookPool {
    HookTracker tracker;
    PoolPtr pool;
    explicit HookPool(size_t size, unsigned flags = 0, size_t align = 0) : tracker(size) {
        pk_pool_config c = make_config(size, align, flags, "hooked");
        tracker.install(c);
        pool = make_pool(c);
    }
};

}  // namespace pktest

#endif
