/* libpoolkit-malloc's operator new and delete (src/malloc/new.c), in a
 * program that knows nothing of poolkit, run with the library preloaded
 * (tests/CMakeLists.txt: malloc.new.*): the operators are the library's,
 * and a failed operator new keeps the standard's contract: it calls the
 * new handler while there is one, then throws std::bad_alloc; the nothrow
 * forms return nullptr. Exit status 0 when every check passes; a failed
 * check says which. With "site": a double delete, for debug mode's report
 * to name the function that said new. */
#include <dlfcn.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>

namespace {

int failures;

void check(bool ok, const char *what) {
    if (!ok) {
        std::fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

const size_t kHuge = size_t(1) << 62;
int handler_calls;

/* A handler that gives up after its first call, as one with nothing left
 * to release does. */
void handler_once() {
    handler_calls++;
    std::set_new_handler(nullptr);
}

/* Where a call's block goes, so that the compiler keeps the call. */
void *volatile sink;

template <class F> bool throws_bad_alloc(F f) {
    try {
        f();
    } catch (const std::bad_alloc &) {
        return true;
    }
    return false;
}

/* The library that defines sym in this process. */
const char *definer(const char *sym) {
    Dl_info info;
    void *at = dlsym(RTLD_DEFAULT, sym);
    return at && dladdr(at, &info) && info.dli_fname ? info.dli_fname : "";
}

}  // namespace

/* The allocation a debug report names: this function, the caller of
 * operator new (src/malloc/new.c passes its own return address), not the
 * operator. */
extern "C" __attribute__((noinline)) int *new_here() {
    int *o = new int(7);
    __asm__ volatile("" : : "r"(o) : "memory");
    return o;
}

/* "site": a double delete, which the preload in debug mode reports and
 * ends (malloc.new.debug_site matches the report). */
int double_delete() {
    std::signal(SIGABRT, [](int) { _exit(3); }); /* the report's abort: an exit, which the regex judges */
    int *o = new_here();
    __asm__ volatile("" : "+r"(o) : : "memory");
    delete o;
    __asm__ volatile("" : "+r"(o) : : "memory");
    delete o;
    std::fprintf(stderr, "FAIL: a double delete went unreported\n");
    return 1;
}

int main(int argc, char **argv) {
    if (argc > 1 && !std::strcmp(argv[1], "site")) return double_delete();
    for (const char *sym : {"_Znwm", "_Znam", "_ZdlPv", "_ZdaPvm", "_ZnwmSt11align_val_t"})
        if (!std::strstr(definer(sym), "poolkit-malloc")) {
            std::fprintf(stderr, "FAIL: %s is %s's, not libpoolkit-malloc's\n", sym, definer(sym));
            failures++;
        }

    check(throws_bad_alloc([] { sink = ::operator new(kHuge); }), "new of 2^62 bytes throws std::bad_alloc");
    check(throws_bad_alloc([] { sink = ::operator new[](kHuge); }), "new[] of 2^62 bytes throws std::bad_alloc");
    check(throws_bad_alloc([] { sink = ::operator new(kHuge, std::align_val_t(64)); }),
          "aligned new of 2^62 bytes throws std::bad_alloc");
    check((sink = ::operator new(kHuge, std::nothrow)) == nullptr, "nothrow new of 2^62 bytes returns nullptr");
    check((sink = ::operator new[](kHuge, std::align_val_t(64), std::nothrow)) == nullptr,
          "aligned nothrow new[] of 2^62 bytes returns nullptr");

    std::set_new_handler(handler_once);
    check(throws_bad_alloc([] { sink = ::operator new(kHuge); }), "with a new handler, new still throws at last");
    check(handler_calls == 1, "a failed new calls the new handler");
    std::set_new_handler(handler_once);
    check((sink = ::operator new(kHuge, std::nothrow)) == nullptr, "with a new handler, nothrow new returns nullptr at last");
    check(handler_calls == 2, "a failed nothrow new calls the new handler");

    /* every pair once, through the library */
    char *a = new char[100];
    std::memset(a, 1, 100);
    delete[] a;
    int *o = new int(3);
    delete o;
    void *al = ::operator new(300, std::align_val_t(256));
    check((reinterpret_cast<unsigned long>(al) & 255) == 0, "aligned new is aligned");
    ::operator delete(al, std::align_val_t(256));

    if (failures) return 1;
    std::printf("malloc_new: every check passed\n");
    return 0;
}
