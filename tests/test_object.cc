// Object tests: one behaviour of pk_new / pk_retain / pk_release per test.
#include "support.h"

#include <poolkit/poolkit.h>

#include <atomic>
#include <cerrno>
#include <csetjmp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using pktest::scaled;

// ---- classes used below ------------------------------------------------------

struct Pair {
    uint64_t a, b;
};
const pk_class kPair = {"Pair", sizeof(Pair), nullptr};

std::atomic<long> g_deallocs{0};

void count_dealloc(void *) { g_deallocs++; }
const pk_class kCounted = {"Counted", 24, count_dealloc};

// A singly linked list node: its dealloc releases the next node and records
// the order in which nodes go.
struct Node {
    Node *next;
    long id;
};
std::vector<long> *g_order = nullptr;
void node_dealloc(void *obj) {
    Node *n = static_cast<Node *>(obj);
    if (g_order) g_order->push_back(n->id);
    pk_release(n->next);
}
const pk_class kNode = {"Node", sizeof(Node), node_dealloc};

// A binary tree node that releases both children.
struct Tree {
    Tree *left, *right;
};
std::atomic<long> g_tree_deallocs{0};
void tree_dealloc(void *obj) {
    Tree *t = static_cast<Tree *>(obj);
    g_tree_deallocs++;
    pk_release(t->left);
    pk_release(t->right);
}
const pk_class kTree = {"Tree", sizeof(Tree), tree_dealloc};

Tree *make_tree(int depth) {
    Tree *t = static_cast<Tree *>(pk_new(&kTree));
    if (depth > 0) {
        t->left = make_tree(depth - 1);
        t->right = make_tree(depth - 1);
    }
    return t;
}

void *memory_of(void *obj) { return static_cast<char *>(obj) - PK_OBJECT_HEADER_SIZE; }

// POOLKIT_DEBUG=1: debug pools poison freed memory and keep no thread caches.
bool debug_mode() { return pktest::env_on("POOLKIT_DEBUG"); }

// ---- a handler that records a report and jumps back into the test -----------

struct Report {
    int count = 0;
    pk_severity severity = PK_WARNING;
    std::string what, pool, message;
    const void *ptr = nullptr;
};
thread_local Report t_report;
thread_local std::jmp_buf *t_escape = nullptr;

void record_and_escape(const pk_error *err, void *) {
    t_report.count++;
    t_report.severity = err->severity;
    t_report.what = err->what ? err->what : "";
    t_report.pool = err->pool ? err->pool : "";
    t_report.message = err->message ? err->message : "";
    t_report.ptr = err->ptr;
    if (t_escape) std::longjmp(*t_escape, 1);
}

// ---- tests ------------------------------------------------------------------

TEST(Object, NewGivesZeroedFieldsAndCountOne) {
    // Dirty the pool's memory first, so zeroing is not an accident of fresh pages.
    std::vector<void *> objs;
    for (int i = 0; i < 100; i++) {
        Pair *p = static_cast<Pair *>(pk_new(&kPair));
        ASSERT_NE(p, nullptr);
        p->a = p->b = ~0ull;
        objs.push_back(p);
    }
    for (void *o : objs) pk_release(o);
    for (int i = 0; i < 100; i++) {
        Pair *p = static_cast<Pair *>(pk_new(&kPair));
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(p->a, 0u);
        EXPECT_EQ(p->b, 0u);
        EXPECT_EQ(pk_refcount(p), 1u);
        EXPECT_EQ(pk_class_of(p), &kPair);
        EXPECT_TRUE(pktest::aligned_to(p, 16));
        pk_release(p);
    }
}

/* 16 bytes of header and 48 of fields: each object one whole cache line. */
TEST(Object, AnObjectOfAPowerOfTwoSizeStartsItsHeaderOnAMultipleOfIt) {
    static const pk_class line = {"Line", 48, nullptr};
    std::vector<void *> objs;
    uintptr_t off = 0;
    for (int i = 0; i < 5000; i++) { /* more than one slab's worth */
        void *p = pk_new(&line);
        ASSERT_NE(p, nullptr);
        off |= (reinterpret_cast<uintptr_t>(p) - PK_OBJECT_HEADER_SIZE) & 63;
        objs.push_back(p);
    }
    EXPECT_EQ(off, 0u) << "some object's header is off a 64-byte boundary by these bits";
    for (void *o : objs) pk_release(o);
}

TEST(Object, LargeFieldsAreZeroedToo) {
    static const pk_class big = {"Big", 3000, nullptr};
    for (int round = 0; round < 2; round++) {
        unsigned char *p = static_cast<unsigned char *>(pk_new(&big));
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(pktest::all_bytes(p, 3000, 0));
        std::memset(p, 0xAB, 3000);
        pk_release(p);
    }
}

TEST(Object, RetainAndReleaseMoveTheCount) {
    void *o = pk_new(&kCounted);
    long before = g_deallocs;
    EXPECT_EQ(pk_retain(o), o);
    EXPECT_EQ(pk_retain(o), o);
    EXPECT_EQ(pk_refcount(o), 3u);
    pk_release(o);
    pk_release(o);
    EXPECT_EQ(pk_refcount(o), 1u);
    EXPECT_EQ(g_deallocs, before);
    pk_release(o);
    EXPECT_EQ(g_deallocs, before + 1);
}

TEST(Object, NullIsAllowedEverywhere) {
    EXPECT_EQ(pk_retain(nullptr), nullptr);
    pk_release(nullptr);
    EXPECT_EQ(pk_autorelease(nullptr), nullptr);
    EXPECT_EQ(pk_refcount(nullptr), 0u);
    EXPECT_EQ(pk_class_of(nullptr), nullptr);
}

TEST(Object, NewWithoutClassFailsWithEinval) {
    errno = 0;
    EXPECT_EQ(pk_new(nullptr), nullptr);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_EQ(pk_class_pool(nullptr), nullptr);
    EXPECT_EQ(errno, EINVAL);
}

TEST(Object, MemoryComesFromTheClassPoolAndGoesBack) {
    static const pk_class cls = {"Pooled", 40, nullptr}; // 64-byte slots
    pk_pool *pool = pk_class_pool(&cls);
    ASSERT_NE(pool, nullptr);
    void *o = pk_new(&cls);
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(pk_pool_owner(memory_of(o)), pool);
    EXPECT_GE(pktest::stats_of(pool).size, 40u + PK_OBJECT_HEADER_SIZE);
    pk_release(o);
    // The slot is free again: the next object of the class reuses it.
    void *again = pk_new(&cls);
    EXPECT_EQ(again, o);
    pk_release(again);
}

TEST(Object, ClassesOfOneSizeShareAPoolOthersDoNot) {
    static const pk_class a = {"A", 20, nullptr}, b = {"B", 30, nullptr}, c = {"C", 200, nullptr};
    EXPECT_EQ(pk_class_pool(&a), pk_class_pool(&b)); // both 32-byte fields
    EXPECT_NE(pk_class_pool(&a), pk_class_pool(&c));
}

// An object of cls (over 64 KiB of header and fields) is a large block of
// its own: no pool holds it, and it is within a page of its header and
// fields, where the classes' quarter steps would keep up to a quarter more.
static void expect_block_of_its_own(const pk_class *cls) {
    errno = 0;
    EXPECT_EQ(pk_class_pool(cls), nullptr);
    EXPECT_EQ(errno, EINVAL);
    unsigned char *p = static_cast<unsigned char *>(pk_new(cls));
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(pktest::all_bytes(p, cls->size, 0));
    EXPECT_EQ(pk_pool_owner(memory_of(p)), nullptr);
    EXPECT_LT(pk_usable_size(memory_of(p)), cls->size + PK_OBJECT_HEADER_SIZE + 4096);
    long before = g_deallocs;
    pk_release(p);
    EXPECT_EQ(g_deallocs, before + 1);
}

TEST(Object, HugeClassesComeFromLargeBlocks) {
    static const pk_class huge = {"Huge", 300000, count_dealloc};
    expect_block_of_its_own(&huge);
}

// Below the front end's last class too; at 64 KiB an object is still a slot.
TEST(Object, ObjectsOverSixtyFourKibAreBlocksOfTheirOwnSize) {
    static const pk_class at_limit = {"AtLimit", 65536 - PK_OBJECT_HEADER_SIZE, nullptr};
    EXPECT_NE(pk_class_pool(&at_limit), nullptr);
    static const pk_class over = {"Over", 70000, count_dealloc};
    expect_block_of_its_own(&over);
}

// Classes of one size share a pool: a release runs its object's own
// class's dealloc, not that of the class the thread used last.
TEST(Object, AReleaseRunsItsOwnClasssDeallocNotTheLastClassOfItsSize) {
    static const pk_class plain = {"PlainOfCountedsSize", kCounted.size, nullptr};
    ASSERT_EQ(pk_class_pool(&plain), pk_class_pool(&kCounted));
    void *counted = pk_new(&kCounted);
    void *other = pk_new(&plain); // the last class now
    long before = g_deallocs;
    pk_release(counted);
    EXPECT_EQ(g_deallocs, before + 1);
    pk_release(other);
    EXPECT_EQ(g_deallocs, before + 1);
}

TEST(Object, DeallocRunsOnceBeforeTheMemoryGoes) {
    struct Probe {
        int *seen;
    };
    static int seen_count;
    static const pk_class probe = {"Probe", sizeof(Probe), [](void *obj) {
                                        Probe *p = static_cast<Probe *>(obj);
                                        // The object is still whole here.
                                        EXPECT_EQ(pk_class_of(obj)->name, std::string("Probe"));
                                        (*p->seen)++;
                                    }};
    seen_count = 0;
    Probe *p = static_cast<Probe *>(pk_new(&probe));
    p->seen = &seen_count;
    pk_release(p);
    EXPECT_EQ(seen_count, 1);
}

TEST(Object, DeallocChainsRunInOrder) {
    std::vector<long> order;
    g_order = &order;
    Node *head = nullptr;
    for (long i = 99; i >= 0; i--) {
        Node *n = static_cast<Node *>(pk_new(&kNode));
        n->id = i;
        n->next = head;
        head = n;
    }
    pk_release(head);
    g_order = nullptr;
    ASSERT_EQ(order.size(), 100u);
    for (long i = 0; i < 100; i++) EXPECT_EQ(order[i], i);
}

TEST(Object, DeallocChainsOfAnyLengthNeedNoDeepStack) {
    // A million-node list released from a thread with a 64 KiB stack: plain
    // recursion would need tens of megabytes.
    const long n = static_cast<long>(scaled(1000000, 20000));
    std::atomic<long> done{0};
    auto body = [&] {
        std::vector<long> *saved = g_order;
        g_order = nullptr;
        Node *head = nullptr;
        for (long i = 0; i < n; i++) {
            Node *nd = static_cast<Node *>(pk_new(&kNode));
            nd->id = i;
            nd->next = head;
            head = nd;
        }
        pk_release(head);
        g_order = saved;
        done = 1;
    };
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    size_t stack = pktest::slow_tool() || PKTEST_ASAN ? 1u << 20 : 64u << 10;
    pthread_attr_setstacksize(&attr, stack);
    pthread_t th;
    struct Thunk {
        static void *run(void *arg) {
            (*static_cast<decltype(body) *>(arg))();
            return nullptr;
        }
    };
    ASSERT_EQ(pthread_create(&th, &attr, Thunk::run, &body), 0);
    pthread_join(th, nullptr);
    pthread_attr_destroy(&attr);
    EXPECT_EQ(done, 1);
}

TEST(Object, TreesAreFreedWhole) {
    long before = g_tree_deallocs;
    Tree *t = make_tree(12);
    pk_release(t);
    EXPECT_EQ(g_tree_deallocs - before, (2L << 12) - 1);
}

TEST(Object, OverReleaseIsReported) {
    // The dealloc releases its own object once more: the count is past zero.
    // (Inside the dealloc, so the memory is still the object's, under any tool.)
    static const pk_class selfish = {"Selfish", 16, [](void *obj) { pk_release(obj); }};
    std::thread th([] {
        std::jmp_buf env;
        t_escape = &env;
        t_report = Report();
        pk_set_error_handler(record_and_escape, nullptr);
        void *volatile obj = pk_new(&selfish);
        if (setjmp(env) == 0) pk_release(obj);
        pk_set_error_handler(nullptr, nullptr);
        t_escape = nullptr;
        EXPECT_EQ(t_report.count, 1);
        EXPECT_EQ(t_report.severity, PK_FATAL);
        EXPECT_EQ(t_report.what, "over-release");
        EXPECT_EQ(t_report.pool, "Selfish");
        EXPECT_EQ(t_report.ptr, obj);
        EXPECT_NE(t_report.message.find("Selfish"), std::string::npos) << t_report.message;
    });
    th.join(); // the jump left that thread's dealloc unfinished: the thread is dropped
}

TEST(Object, OverReleaseAfterTheMemoryWentBackIsReported) {
    if (PKTEST_ASAN || pktest::running_under_valgrind())
        GTEST_SKIP() << "reads freed memory on purpose";
    static const pk_class cls = {"Twice", 48, nullptr};
    void *volatile obj = pk_new(&cls);
    std::jmp_buf env;
    t_escape = &env;
    t_report = Report();
    pk_set_error_handler(record_and_escape, nullptr);
    pk_release(obj);
    if (setjmp(env) == 0) pk_release(obj);
    pk_set_error_handler(nullptr, nullptr);
    t_escape = nullptr;
    EXPECT_EQ(t_report.count, 1);
    EXPECT_EQ(t_report.what, "over-release");
    if (!debug_mode()) { // (a debug pool fills the whole slot)
        EXPECT_EQ(t_report.pool, "Twice"); // named though the pool reused the first word
    }
}

/* Every release checks the pointer first, by the slab the thread last
 * found an object in while that slab is still mapped, else by the address
 * map: released a second time after its slab went back to the system, an
 * object's pointer is no object any more, and is reported as a foreign
 * pointer before its (unmapped) header is read. */
TEST(Object, ReleaseOfAnObjectWhoseSlabWentBackToTheSystemIsAForeignPointer) {
    static const pk_class cls = {"Gone", 1000, nullptr}; /* a size class of its own here */
    void *obj = pk_new(&cls);
    ASSERT_NE(obj, nullptr);
    pk_pool *pool = pk_class_pool(&cls);
    EXPECT_EXIT(
        {
            pk_set_error_handler(pktest::print_fields_handler, nullptr);
            pk_release(obj);        /* the thread's cache now names its slab */
            pk_pool_trim(pool);     /* the slab, empty, goes back to the system */
            if (pk_pool_owner(static_cast<char *>(obj) - PK_OBJECT_HEADER_SIZE)) {
                std::fprintf(stderr, "the slab stayed\n");
                std::_Exit(3);
            }
            pk_release(obj);
            std::fprintf(stderr, "no report\n");
            std::_Exit(0);
        },
        ::testing::KilledBySignal(SIGABRT),
        "HANDLER severity=FATAL what=foreign pointer pool=\\(null\\) ptr=" + pktest::ptr_str(obj));
    pk_release(obj);
}

TEST(Object, RetainOfADeallocatedObjectIsReported) {
    static const pk_class zombie = {"Zombie", 16, [](void *obj) { pk_retain(obj); }};
    std::thread th([] {
        std::jmp_buf env;
        t_escape = &env;
        t_report = Report();
        pk_set_error_handler(record_and_escape, nullptr);
        void *volatile obj = pk_new(&zombie);
        if (setjmp(env) == 0) pk_release(obj);
        pk_set_error_handler(nullptr, nullptr);
        t_escape = nullptr;
        EXPECT_EQ(t_report.count, 1);
        EXPECT_EQ(t_report.what, "retain of a deallocated object");
        EXPECT_EQ(t_report.pool, "Zombie");
    });
    th.join();
}

TEST(Object, OverReleaseAbortsByDefault) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    static const pk_class selfish = {"Selfish", 16, [](void *obj) { pk_release(obj); }};
    EXPECT_DEATH(pk_release(pk_new(&selfish)), "over-release.*Selfish");
}

TEST(Object, ManyThreadsRetainAndReleaseOneObject) {
    const int threads = 8;
    const long rounds = static_cast<long>(scaled(100000, 2000));
    long before = g_deallocs;
    void *obj = pk_new(&kCounted);
    std::atomic<bool> go{false};
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) {
        pk_retain(obj); // each thread owns one reference, released at its end
        ts.emplace_back([&, obj] {
            while (!go.load()) std::this_thread::yield();
            for (long i = 0; i < rounds; i++) {
                pk_retain(obj);
                if (i % 3 == 0) pk_retain(obj), pk_release(obj);
                pk_release(obj);
            }
            pk_release(obj);
        });
    }
    go = true;
    for (auto &t : ts) t.join();
    EXPECT_EQ(pk_refcount(obj), 1u);
    EXPECT_EQ(g_deallocs, before);
    pk_release(obj);
    EXPECT_EQ(g_deallocs, before + 1);
}

TEST(Object, LastReleaseOnAnyThreadDeallocsExactlyOnce) {
    const int objects = static_cast<int>(scaled(2000, 100));
    long before = g_deallocs;
    std::vector<void *> objs;
    for (int i = 0; i < objects; i++) {
        void *o = pk_new(&kCounted);
        for (int r = 0; r < 3; r++) pk_retain(o); // four references in all
        objs.push_back(o);
    }
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; t++)
        ts.emplace_back([&] {
            for (void *o : objs) pk_release(o);
        });
    for (auto &t : ts) t.join();
    EXPECT_EQ(g_deallocs - before, objects);
}

TEST(Object, MemoryReleasedOnAnotherThreadReturnsToItsPool) {
    static const pk_class cls = {"Travelling", 1000, nullptr}; // its own 1 KiB size class
    pk_pool *pool = pk_class_pool(&cls);
    ASSERT_NE(pool, nullptr);
    pk_pool_stats before = pktest::stats_of(pool);
    const size_t n = scaled(20000, 2000);
    std::vector<void *> objs(n);
    std::thread producer([&] {
        for (size_t i = 0; i < n; i++) objs[i] = pk_new(&cls);
    });
    producer.join();
    for (void *o : objs) {
        ASSERT_NE(o, nullptr);
        ASSERT_EQ(pk_pool_owner(memory_of(o)), pool);
    }
    std::thread consumer([&] {
        for (void *o : objs) pk_release(o);
    });
    consumer.join();
    pk_pool_stats after = pktest::stats_of(pool);
    EXPECT_EQ(after.live, before.live); // both threads have exited: their caches went home
    if (!debug_mode()) { // debug pools keep no thread caches, which count these
        EXPECT_GT(after.remote_frees, before.remote_frees);
    }
    // The memory is reused by the next objects of the class.
    std::vector<void *> again;
    for (size_t i = 0; i < 100; i++) again.push_back(pk_new(&cls));
    for (void *o : again) EXPECT_EQ(pk_pool_owner(memory_of(o)), pool);
    for (void *o : again) pk_release(o);
}

TEST(Object, OutOfMemoryGivesNullAndEnomem) {
    static const pk_class fresh = {"Fresh", 1500, nullptr}; // a size class nothing else uses
    pk_fault_fail_after(0);
    errno = 0;
    void *o = pk_new(&fresh);
    int err = errno;
    pk_fault_fail_after(-1);
    EXPECT_EQ(o, nullptr);
    EXPECT_EQ(err, ENOMEM);
    o = pk_new(&fresh); // and works again once memory is back
    EXPECT_NE(o, nullptr);
    pk_release(o);
}

// ---- pointers that are not objects ------------------------------------------

// Death tests in debug mode run in a child started afresh (the threadsafe
// style), where stack and heap addresses differ from the parent's: the child
// names the pointer it expects a report about in g_expected, and this
// handler prints the report's fields with that pointer written as OBJ.
const void *g_expected = nullptr;

std::string with_obj(std::string text) {
    std::string x = pktest::ptr_str(g_expected);
    for (size_t at; (at = text.find(x)) != std::string::npos;) text.replace(at, x.size(), "OBJ");
    return text;
}

void print_fields_naming_obj(const pk_error *e, void *) {
    std::string line = std::string("HANDLER severity=") + (e->severity == PK_FATAL ? "FATAL" : "WARNING") +
                       " what=" + (e->what ? e->what : "(null)") + " pool=" + (e->pool ? e->pool : "(null)") +
                       " ptr=" + with_obj(pktest::ptr_str(e->ptr)) + "\nMESSAGE " +
                       with_obj(e->message ? e->message : "(null)") + "\n";
    if (write(STDERR_FILENO, line.data(), line.size()) < 0) { /* nothing to do */
    }
}

// The report every foreign-pointer test expects: what, no pool or class
// (there is none), the pointer, and the call.
std::string foreign_report(const char *call) {
    return std::string("HANDLER severity=FATAL what=foreign pointer pool=\\(null\\) ptr=OBJ\n"
                       "MESSAGE poolkit: foreign pointer: ") + call + "[^\n]*OBJ";
}

#define EXPECT_REPORT_ON(object, statements, regex)                   \
    EXPECT_DEATH(                                                     \
        {                                                             \
            g_expected = (object);                                    \
            pk_set_error_handler(print_fields_naming_obj, nullptr);   \
            statements;                                               \
        },                                                            \
        regex)

// In any mode: a count of zero in memory no object pool holds is not an
// over-release of some class but a pointer that was never an object.
TEST(ObjectDeathTest, ReleaseOfAStackBufferIsAForeignPointer) {
    alignas(16) uintptr_t buf[4] = {0, 0, 0, 0};
    void *obj = &buf[2];
    EXPECT_REPORT_ON(obj, pk_release(obj), foreign_report("pk_release"));
}

// In any mode: a pointer into an object whose fields hold a copy of a live
// header (the object's own, cached class and all) starts no slot, so it is
// reported, never disposed of, though it lies in the thread's current slab.
TEST(ObjectDeathTest, AnInteriorPointerBehindACopiedHeaderIsAForeignPointer) {
    static const pk_class holder = {"Holder", 48, nullptr};
    EXPECT_REPORT_ON(nullptr,
                     {
                         uintptr_t *o = static_cast<uintptr_t *>(pk_new(&holder));
                         o[0] = o[-2]; // the class
                         o[1] = o[-1]; // the count word: live, one reference
                         g_expected = o + 2;
                         pk_release(o + 2);
                     },
                     foreign_report("pk_release"));
}

// Debug mode, switched by POOLKIT_DEBUG=1 (read once, by the child that
// the threadsafe style starts afresh; the parent calls no poolkit function
// while it is set): every pointer given to pk_retain, pk_release or
// pk_autorelease is checked against the address map before its header is
// read or written.
class ObjectDebugDeathTest : public ::testing::Test {
  protected:
    void SetUp() override {
        GTEST_FLAG_SET(death_test_style, "threadsafe");
        setenv("POOLKIT_DEBUG", "1", 1);
    }
    void TearDown() override {
        if (!debug_mode_at_start_) unsetenv("POOLKIT_DEBUG");
    }
    bool debug_mode_at_start_ = debug_mode();
};

// A malloc block whose second word looks like a live count: decremented in
// silence without the check. (Real objects come and go first: they pass,
// and the calls after the switch was read check as well.)
TEST_F(ObjectDebugDeathTest, ReleaseOfAMallocBlockIsAForeignPointer) {
    uintptr_t *m = static_cast<uintptr_t *>(std::malloc(64));
    m[0] = reinterpret_cast<uintptr_t>(&kPair);
    m[1] = 5;
    EXPECT_REPORT_ON(m + 2,
                     {
                         void *o = pk_new(&kPair);
                         pk_retain(o);
                         pk_release(o);
                         pk_release(o);
                         pk_release(m + 2);
                         std::fprintf(stderr, "no report; the count is now %lu\n",
                                      static_cast<unsigned long>(m[1]));
                     },
                     foreign_report("pk_release"));
    std::free(m);
}

// A stack buffer that looks like the only reference to a Pair: without the
// check it would be disposed of (dead mark written, memory given to a pool).
TEST_F(ObjectDebugDeathTest, ReleaseOfAStackBufferThatLooksAliveIsReportedBeforeAnyWrite) {
    alignas(16) uintptr_t buf[4] = {reinterpret_cast<uintptr_t>(&kPair), 1, 0, 0};
    EXPECT_REPORT_ON(&buf[2], pk_release(&buf[2]), foreign_report("pk_release"));
}

TEST_F(ObjectDebugDeathTest, RetainOfAForeignPointerIsReported) {
    alignas(16) uintptr_t buf[4] = {reinterpret_cast<uintptr_t>(&kPair), 1, 0, 0};
    EXPECT_REPORT_ON(&buf[2],
                     {
                         pk_release(pk_retain(pk_new(&kPair)));
                         pk_retain(&buf[2]);
                     },
                     foreign_report("pk_retain"));
}

TEST_F(ObjectDebugDeathTest, AutoreleaseOfAForeignPointerIsReported) {
    alignas(16) uintptr_t buf[4] = {reinterpret_cast<uintptr_t>(&kPair), 1, 0, 0};
    EXPECT_REPORT_ON(&buf[2],
                     {
                         pk_autorelease_pool pool = pk_autorelease_push();
                         pk_autorelease(&buf[2]);
                         pk_autorelease_pop(pool);
                     },
                     foreign_report("pk_autorelease"));
}

// An object of a pool the program made itself is memory of that pool, not an
// object of pk_new: the report names the pool.
// (The pool is made in the child: the parent must not read POOLKIT_DEBUG.)
TEST_F(ObjectDebugDeathTest, ReleaseOfAnotherPoolsObjectIsAForeignPointerNamingThePool) {
    EXPECT_DEATH(
        {
            pktest::PoolPtr p = pktest::make_pool(64, 16, 0, "mine");
            uintptr_t *m = static_cast<uintptr_t *>(pk_pool_alloc(p.get()));
            m[0] = reinterpret_cast<uintptr_t>(&kPair);
            m[1] = 1;
            g_expected = m + 2;
            pk_set_error_handler(print_fields_naming_obj, nullptr);
            pk_release(m + 2);
        },
        foreign_report("pk_release") + " is an object of pool 'mine'");
}

// Objects over the last class are the front end's large blocks; its table
// knows them while they live, so they pass the check.
TEST_F(ObjectDebugDeathTest, ObjectsTooLargeForThePoolsAreNotForeign) {
    static const pk_class huge = {"Huge", 300000, nullptr};
    EXPECT_EXIT(
        {
            std::vector<void *> objs;
            for (int i = 0; i < 100; i++) objs.push_back(pk_new(&huge));
            for (void *o : objs) pk_retain(o);
            pk_autorelease_pool pool = pk_autorelease_push();
            for (void *o : objs) pk_autorelease(o);
            pk_autorelease_pop(pool);
            for (void *o : objs) pk_release(o);
            std::exit(0);
        },
        ::testing::ExitedWithCode(0), "");
}

// A large object released twice: its block was freed, so the front end's
// table no longer has it, and the report says so.
TEST_F(ObjectDebugDeathTest, LargeObjectReleasedTwiceIsReported) {
    static const pk_class huge = {"Huge", 300000, nullptr};
    EXPECT_DEATH(
        {
            void *o = pk_new(&huge);
            g_expected = o;
            pk_set_error_handler(print_fields_naming_obj, nullptr);
            pk_release(o);
            pk_release(o);
        },
        foreign_report("pk_release") + "[^\n]*no live large block of pk_new starts there");
}

}  // namespace
