// A short tour of the C++ interface (<poolkit/poolkit.hpp>, C++17, header-only
// over the C library). The README's "A short tour" shows the lines of main()
// (tests/readme_excerpts.py keeps the two the same); cpp_containers.cpp goes
// further. Build: c++ -std=c++17 cpp_tour.cpp $(pkg-config --cflags --libs poolkit)
#include <poolkit/poolkit.hpp>

#include <cstdio>
#include <list>
#include <memory_resource>
#include <string>

struct node {
    int key;
    node *next;
    node(int k, node *n) : key(k), next(n) {}
};

struct widget {
    std::string name;
    explicit widget(std::string n) : name(std::move(n)) {}
};

int main() {
    pk::object_pool<node> nodes;                        // one pk_pool for one type
    node *n = nodes.create(1, nullptr);                 // create(args...) / destroy(p)
    nodes.destroy(n);

    std::list<int, pk::pool_allocator<int>> l{1, 2, 3}; // node containers from pools
    pk_pool *list_pool = l.get_allocator().pool();      // the pool its nodes come from

    pk::arena a;
    pk::arena_vector<int> v(a);                         // vectors and strings in an arena
    v.assign({4, 5, 6});

    pk::pool_resource resource;                         // std::pmr on pools (or pk::arena_resource)
    std::pmr::list<int> pl({7, 8, 9}, &resource);

    pk::ref<widget> r;
    {
        pk::autorelease_scope scope;                    // push ... pop
        r = pk::make_ref<widget>("gear");               // intrusive count over pk_new
        pk::make_ref<widget>("spare").autorelease();    // released when the scope ends
    }

    std::size_t list_nodes = pk::pool_stats(list_pool).live;
    std::printf("list %zu (%zu nodes live in its pool), vector %zu, pmr list %zu, widget '%s' with %zu reference(s)\n",
                l.size(), list_nodes, v.size(), pl.size(), r->name.c_str(), r.use_count());
    return r.use_count() == 1 && list_nodes >= l.size() ? 0 : 1;
}
