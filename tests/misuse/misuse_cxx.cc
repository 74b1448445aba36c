/* The C++ cases of misuse.c: new and delete paired wrongly. Under the
 * malloc library they go through its operator new and delete, which tell
 * poolkit each call's form (src/malloc/new.c). */
#include "misuse.h"

#include <cstring>
#include <new>

namespace {

/* An object of N bytes whose destructor reads it, so that delete[] keeps a
 * count before the array (the cookie) and, given a lone object, reads a count
 * that is not one: the destructors it runs then read where they land and
 * fault rather than loop. */
template <size_t N> struct Thing {
    unsigned char bytes[N];
    Thing() { std::memset(bytes, 0x61, N); }
    ~Thing() {
        const volatile unsigned char *v = bytes;
        (void)v[0];
    }
};

template <size_t N> void delete_array_of_new() {
    Thing<N> *t = new Thing<N>;
    delete[] static_cast<Thing<N> *>(misuse_hide(t));
}

}  // namespace

extern "C" void misuse_delete_of_new_array(size_t n) {
    char *a = new char[n];
    std::memset(a, 0x61, n);
    delete static_cast<char *>(misuse_hide(a));
    misuse_settle(n);
}

extern "C" void misuse_delete_array_of_new(size_t n) {
    switch (n) {
    case 8: delete_array_of_new<8>(); break;
    case 4096: delete_array_of_new<4096>(); break;
    case 262144: delete_array_of_new<262144>(); break;
    default: misuse_setup_failed("no Thing of that size");
    }
    misuse_settle(n);
}
