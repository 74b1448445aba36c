/* The forms of <poolkit/new.hpp>'s operators (src/front/alloc_forms.c): in
 * hardened mode a block freed in another form than it was made in is
 * reported ("mismatched free", naming the block, its size and both forms);
 * the right pairs are silent; default mode checks no form. One behaviour a
 * child (the mode is read once per process). Not in sanitizer builds, whose
 * runtime is the program's operator new and delete (Valgrind too).
 * POOLKIT_TEST_LABELS: noasan notsan novalgrind */
#include <poolkit/new.hpp>

#include "child.h"

#include <cstdio>
#include <string>
#include <vector>

using namespace pktest;

namespace {

constexpr size_t kGuarded = size_t(256) << 10; /* mapped alone, between guard pages */

/* The compiler must not pair a new with its delete and drop both. */
template <class T> T *hide(T *p) {
    __asm__ volatile("" : "+r"(p) : : "memory");
    return p;
}

const std::vector<std::pair<std::string, const char *>> kDefault = {{"POOLKIT_HARDENED", "0"},
                                                                    {"POOLKIT_DEBUG", "0"}};

/* A child's misuse, which poolkit's report ends (printed for the parent);
 * a return is the child's failure. */
int ends_in_report(void (*misuse)()) {
    pk_set_error_handler(print_fields_handler, nullptr);
    misuse();
    return no_report();
}

void expect_mismatch(const char *child, const char *says) { expect_report(child, "mismatched free", says); }

}  // namespace

PKTEST_CHILD(FormsDeleteOfNewArray) {
    return ends_in_report([] { operator delete(hide(new char[8])); });
}

TEST(NewForms, DeleteOfANewArraysBlockIsReported) {
    expect_mismatch("FormsDeleteOfNewArray", "of 8 bytes (pool 'pk_alloc 32') was allocated with new[] and freed "
                                             "with delete, not delete[]");
}

PKTEST_CHILD(FormsDeleteArrayOfNew) {
    return ends_in_report([] { operator delete[](hide(new int(7))); });
}

TEST(NewForms, DeleteArrayOfANewBlockIsReported) {
    expect_mismatch("FormsDeleteArrayOfNew", "allocated with new and freed with delete[], not delete");
}

PKTEST_CHILD(FormsPkFreeOfNew) {
    return ends_in_report([] { pk_free(hide(new long(7))); });
}

TEST(NewForms, PkFreeOfANewBlockIsReported) {
    expect_mismatch("FormsPkFreeOfNew", "allocated with new and freed with free, not delete");
}

PKTEST_CHILD(FormsDeleteOfPkAlloc) {
    return ends_in_report([] { operator delete(hide(pk_alloc(100))); });
}

TEST(NewForms, DeleteOfAPkAllocBlockIsReported) {
    expect_mismatch("FormsDeleteOfPkAlloc", "of 100 bytes (pool 'pk_alloc 112') was allocated with malloc and freed "
                                            "with delete, not free");
}

PKTEST_CHILD(FormsSizedDeleteOfNewArray) {
    return ends_in_report([] { operator delete(hide(new char[40]), 40); });
}

TEST(NewForms, ASizedDeleteOfTheWrongFormIsReported) {
    expect_mismatch("FormsSizedDeleteOfNewArray", "of 40 bytes");
}

PKTEST_CHILD(FormsGuardedDeleteOfNewArray) {
    return ends_in_report([] { operator delete(hide(new char[kGuarded])); });
}

TEST(NewForms, AGuardedBlocksFormIsCheckedToo) {
    expect_mismatch("FormsGuardedDeleteOfNewArray", "of 262144 bytes was allocated with new[] and freed with delete");
}

PKTEST_CHILD(FormsGuardedPkFreeOfNew) {
    return ends_in_report([] { pk_free(hide(operator new(kGuarded + 1))); });
}

TEST(NewForms, PkFreeOfAGuardedNewBlockIsReported) {
    expect_mismatch("FormsGuardedPkFreeOfNew", "allocated with new and freed with free, not delete");
}

/* Every right pair, in each size range: silent, and the blocks reused. */
PKTEST_CHILD(FormsRightPairsAreSilent) {
    pk_set_error_handler(print_fields_handler, nullptr);
    for (size_t n : {size_t(1), size_t(8), size_t(100), size_t(4096), kGuarded, kGuarded * 2}) {
        for (int i = 0; i < 3; i++) {
            char *a = hide(new char[n]);
            delete[] hide(a);
            void *o = hide(operator new(n));
            operator delete(hide(o));
            void *m = hide(pk_alloc(n));
            pk_free(hide(m));
            void *nt = hide(operator new[](n, std::nothrow));
            CHILD_CHECK(nt != nullptr, "nothrow new[] of %zu", n);
            operator delete[](hide(nt), std::nothrow);
            void *al = hide(operator new(n, std::align_val_t(64)));
            CHILD_CHECK((reinterpret_cast<uintptr_t>(al) & 63) == 0, "aligned new of %zu", n);
            operator delete(hide(al), std::align_val_t(64));
        }
    }
    return CHILD_PASS;
}

TEST(NewForms, TheRightPairsAreSilent) { EXPECT_CHILD_PASSES("FormsRightPairsAreSilent", kHardened); }

/* Sized delete of the right form, the right size: the block goes back. */
PKTEST_CHILD(FormsSizedDeleteFrees) {
    pk_set_error_handler(print_fields_handler, nullptr);
    for (size_t n : {size_t(24), size_t(1000), size_t(5000), kGuarded}) {
        void *o = hide(operator new(n));
        operator delete(hide(o), n);
        void *a = hide(operator new[](n));
        operator delete[](hide(a), n);
    }
    struct S {
        char b[200];
    };
    S *s = hide(new S());
    delete hide(s); /* sized where the compiler uses it */
    return CHILD_PASS;
}

TEST(NewForms, ASizedDeleteOfTheRightFormFreesTheBlock) { EXPECT_CHILD_PASSES("FormsSizedDeleteFrees", kHardened); }

/* Default mode keeps no form: the same mismatch passes unnoticed. */
PKTEST_CHILD(FormsDefaultChecksNone) {
    pk_set_error_handler(print_fields_handler, nullptr);
    char *a = hide(new char[8]);
    operator delete(hide(a));
    int *o = hide(new int(7));
    pk_free(hide(o));
    return CHILD_PASS;
}

TEST(NewForms, DefaultModeChecksNoForm) { EXPECT_CHILD_PASSES("FormsDefaultChecksNone", kDefault); }

/* Debug mode names the line that said new, not the operator: the
 * operators pass their own return address (pk__alloc_at), where the
 * library's own would be inside operator new. */
extern "C" __attribute__((noinline)) int *forms_new_here() {
    int *o = new int(7);
    __asm__ volatile("" : : "r"(o) : "memory");
    return o;
}

PKTEST_CHILD(FormsDebugSiteOfNew) {
    pk_set_error_handler(print_fields_handler, nullptr);
    int *o = hide(forms_new_here());
    delete hide(o);
    delete hide(o);
    return no_report();
}

TEST(NewForms, DebugModeNamesTheCallerOfNew) {
    ChildResult r = run_child("FormsDebugSiteOfNew", {{"POOLKIT_DEBUG", "1"}});
    ASSERT_GE(r.status, 0) << r.describe();
    EXPECT_NE(r.err.find("what=double free "), std::string::npos) << r.describe();
    EXPECT_NE(r.err.find("allocated at forms_new_here+0x"), std::string::npos) << r.describe();
}

/* Hardened mode names the call that freed twice: delete, not free. */
PKTEST_CHILD(FormsDoubleDeleteNamed) {
    return ends_in_report([] {
        int *o = hide(new int(7));
        delete hide(o);
        delete hide(o);
    });
}

PKTEST_CHILD(FormsDoubleDeleteArrayOfAGuardedBlockNamed) {
    return ends_in_report([] {
        char *a = hide(new char[kGuarded]);
        delete[] hide(a);
        delete[] hide(a);
    });
}

TEST(NewForms, ADoubleDeleteIsReportedAsADelete) {
    expect_report("FormsDoubleDeleteNamed", "double free", "delete(0x");
    expect_report("FormsDoubleDeleteArrayOfAGuardedBlockNamed", "double free", "delete[](0x");
}
