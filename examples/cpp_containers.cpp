// C++ containers on poolkit: node containers with pk::pool_allocator, an
// object pool with unique_ptr, arena-backed vectors and strings, std::pmr
// containers on a pool resource, and reference-counted objects.
// Build: c++ -std=c++17 cpp_containers.cpp $(pkg-config --cflags --libs poolkit)
#include <poolkit/poolkit.hpp>

#include <cstdio>
#include <list>
#include <map>
#include <memory_resource>
#include <string>
#include <unordered_map>

// The allocator for every node container: std::list<T, pool<T>> etc.
template <class T>
using pool = pk::pool_allocator<T>;

struct order {
    int id;
    double amount;
};

struct session {
    std::string user;
    explicit session(std::string u) : user(std::move(u)) { std::printf("  session %s opened\n", user.c_str()); }
    ~session() { std::printf("  session %s closed\n", user.c_str()); }
};

int main() {
    // 1. Node containers: every node comes from a process-wide pool for its
    //    size, with no lock on the fast path.
    std::list<order, pool<order>> queue;
    std::map<int, std::string, std::less<int>, pool<std::pair<const int, std::string>>> names;
    std::unordered_map<std::string, int, std::hash<std::string>, std::equal_to<std::string>,
                       pool<std::pair<const std::string, int>>>
        counts;
    for (int i = 0; i < 1000; i++) {
        queue.push_back({i, i * 1.5});
        names.emplace(i, "order-" + std::to_string(i));
        counts[i % 2 ? "odd" : "even"]++;
    }
    while (queue.size() > 10) queue.pop_front();
    std::printf("list: %zu orders left, first #%d; map: %s; unordered_map: odd=%d even=%d\n",
                queue.size(), queue.front().id, names.at(42).c_str(), counts["odd"], counts["even"]);

    auto shared = std::allocate_shared<order>(pool<order>(), order{7, 70.0});
    std::printf("allocate_shared: order #%d, control block and object in one pool slot\n", shared->id);

    // 2. An object pool: create/destroy, unique_ptr, and whatever is left is
    //    destroyed with the pool.
    {
        pk::object_pool<order> orders(pk::pool_options{"orders", 256});
        auto one = orders.make_unique(order{1, 9.99});
        order *two = orders.create(order{2, 19.99});
        (void)two; // left live on purpose: the pool destroys it
        std::printf("object_pool '%s': %zu live\n", orders.stats().name, orders.size());
    }

    // 3. An arena: a vector and strings that die together, in one rewind.
    pk::arena arena;
    {
        pk::arena::scope request(arena);
        pk::arena_vector<pk::arena_string> words(arena);
        for (const char *w : {"bump", "allocation", "never", "frees", "one", "by", "one"})
            words.emplace_back(w, arena);
        std::printf("arena: %zu words, last \"%s\"\n", words.size(), words.back().c_str());
    } // everything the request allocated is gone here

    // 4. std::pmr containers on poolkit pools.
    pk::pool_resource resource;
    std::pmr::map<int, std::pmr::string> pmr_map(&resource);
    for (int i = 0; i < 100; i++) pmr_map.emplace(i, "a pmr string long enough to allocate");
    std::printf("pmr map: %zu entries\n", pmr_map.size());

    // 5. Reference-counted objects, released by an autorelease pool.
    {
        pk::autorelease_scope scope;
        pk::ref<session> s = pk::make_ref<session>("ada");
        pk::ref<session> again = s; // retain
        std::printf("  %s has %zu references\n", s->user.c_str(), s.use_count());
        s.autorelease(); // handed to the scope
    } // `again` is released first, then the scope releases the last reference
    return 0;
}
