// poolkit.hpp without exceptions (built with -fno-exceptions -fno-rtti).
//
// Every facility works the same; a failed allocation that would throw
// std::bad_alloc prints "poolkit: out of memory in ..." and aborts instead.
// Code that must survive running out uses the try_ calls, which return
// nullptr. Run with --oom to see the abort (ctest checks that it happens).
// Build: c++ -std=c++17 -fno-exceptions cpp_noexcept.cpp $(pkg-config --cflags --libs poolkit)
#include <poolkit/poolkit.hpp>

#include <cstdio>
#include <cstring>
#include <list>
#include <memory_resource>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#  error "this example is meant to be built with -fno-exceptions"
#endif

struct big {
    char bytes[1500]; // a size no other pool here uses
};

int main(int argc, char **argv) {
    if (argc > 1 && std::strcmp(argv[1], "--oom") == 0) {
        pk_fault_fail_after(0); // the next page request fails
        pk::pool_allocator<big> alloc;
        big *b = alloc.allocate(1); // no memory: message, then abort()
        std::printf("not reached: %p\n", static_cast<void *>(b));
        return 1;
    }

    std::list<int, pk::pool_allocator<int>> list;
    for (int i = 0; i < 100; i++) list.push_back(i);

    pk::object_pool<int> limited(pk::pool_options{"limited", 0, 1});
    int *one = limited.try_create(1);
    int *none = limited.try_create(2); // the limit: nullptr, no abort
    std::printf("list of %zu; limited pool: first %s, second %s\n", list.size(),
                one ? "made" : "refused", none ? "made" : "refused");
    limited.destroy(one);

    pk::arena arena;
    pk::arena_vector<int> v(arena);
    v.assign(50, 7);
    pk::pool_resource res;
    std::pmr::vector<int> pv({1, 2, 3}, &res);
    {
        pk::autorelease_scope scope;
        pk::make_ref<int>(5).autorelease();
    }
    std::printf("arena vector of %zu, pmr vector of %zu: ok without exceptions\n", v.size(),
                pv.size());
    return 0;
}
