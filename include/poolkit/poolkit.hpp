/**
 * @file poolkit.hpp
 * @brief The C++17 interface to poolkit: object pools, standard allocators,
 *        arenas, std::pmr resources and reference-counted objects.
 *
 * Header-only, over the C library (`#include <poolkit/poolkit.h>`); link
 * with `poolkit::poolkit` (CMake) or `pkg-config --libs poolkit`.
 * Everything lives in namespace `pk`:
 *
 * | C++                          | over the C API     | for                                   |
 * |------------------------------|--------------------|---------------------------------------|
 * | pk::object_pool<T>           | pk_pool            | many objects of one type, freed in any order |
 * | pk::pool_allocator<T>        | one pk_pool per (size, alignment), process-wide; arrays from pk_alloc | the nodes of std::list, std::map, std::set, std::unordered_map, std::allocate_shared; arrays through the size classes |
 * | pk::arena, pk::arena_allocator<T> | pk_arena      | vectors and strings that die together |
 * | pk::pool_resource, pk::arena_resource | pk_pool, pk_arena | std::pmr containers          |
 * | pk::alloc_resource           | pk_alloc (alloc.h) | std::pmr containers over the process-wide size classes |
 * | pk::heap_resource            | pk_heap (heap.h)   | std::pmr containers whose blocks are freed one by one or all at once |
 * | pk::ref<T>, pk::make_ref<T>() | pk_new, pk_retain, pk_release | shared objects with an intrusive count, autorelease, std::hash |
 * | pk::autorelease_scope        | pk_autorelease_push/pop | a scope that drains what was autoreleased in it |
 *
 * @par Errors
 * Where the C library returns NULL with errno ENOMEM, the C++ calls throw
 * std::bad_alloc; functions named `try_...` return nullptr instead. Built
 * with `-fno-exceptions`, a call that would throw prints one line on stderr
 * ("poolkit: out of memory in ...") and calls std::abort(). Misuse that
 * poolkit detects (double free, foreign pointer, over-release, bad
 * autorelease token) goes to the error handler of error.h, as in C.
 *
 * @par Thread safety
 * As in C: pools and reference counts may be used from any thread (unless a
 * pool is made with PK_POOL_LOCAL); an arena, and anything allocating from
 * one, is used by one thread at a time; autorelease pools belong to the
 * thread that pushed them.
 *
 * @par Conventions of this reference
 * Each class states its thread-safety, and each function that differs from
 * its class says so. A function marked noexcept whose documentation names no
 * error never fails. Every other failure is listed under "Errors" or
 * "Exceptions". Functions taking a pointer to an object require a live
 * object of the kind named, as their C counterparts do.
 *
 * @par Warnings
 * This header and the C headers it includes compile without a warning under
 * -Wall -Wextra -Wpedantic -Wold-style-cast -Wconversion -Wsign-conversion
 * -Wshadow -Wcast-qual -Wzero-as-null-pointer-constant (and GCC's
 * -Wuseless-cast), as C++17 and C++20, with GCC and Clang (ctest -L
 * headers; the C headers also as C99 and C11).
 */
#ifndef POOLKIT_HPP
#define POOLKIT_HPP

#if !defined(__cplusplus) || __cplusplus < 201703L
#  error "poolkit.hpp needs C++17 or later"
#endif

#include <poolkit/poolkit.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

/// @cond PK_INTERNAL
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#  define PK__CXX_EXCEPTIONS 1
#else
#  define PK__CXX_EXCEPTIONS 0
#endif
#if defined(__GNUC__)
#  define PK__CXX_LIKELY(x) __builtin_expect(!!(x), 1)
#  define PK__CXX_UNLIKELY(x) __builtin_expect(!!(x), 0)
#  define PK__CXX_COLD __attribute__((noinline, cold))
#  define PK__CXX_SIGNATURE __PRETTY_FUNCTION__
#else
#  define PK__CXX_LIKELY(x) (x)
#  define PK__CXX_UNLIKELY(x) (x)
#  define PK__CXX_COLD
#  define PK__CXX_SIGNATURE ""
#endif
/// @endcond

namespace pk {

/// @cond PK_INTERNAL
namespace detail {

/* Allocation failure: throws, or without exceptions says so and aborts. */
[[noreturn]] PK__CXX_COLD inline void out_of_memory(const char *where) {
#if PK__CXX_EXCEPTIONS
    (void)where;
    throw std::bad_alloc();
#else
    std::fprintf(stderr, "poolkit: out of memory in %s (no exceptions: aborting)\n", where);
    std::abort();
#endif
}

/* A ref<T> made from a ref<U> whose T part does not start the object, and
 * T has no vtable to find the object by: its count cannot be reached. */
[[noreturn]] PK__CXX_COLD inline void bad_ref_conversion(const char *where) noexcept {
    std::fprintf(stderr,
                 "poolkit: %s: the base does not start the object and has no virtual "
                 "function to find it by (aborting)\n",
                 where);
    std::abort();
}

/* An array size whose bytes overflow size_t. */
[[noreturn]] PK__CXX_COLD inline void bad_length(const char *where) {
#if PK__CXX_EXCEPTIONS
    (void)where;
    throw std::bad_array_new_length();
#else
    std::fprintf(stderr, "poolkit: array too large in %s (no exceptions: aborting)\n", where);
    std::abort();
#endif
}

template <class T>
inline std::size_t array_bytes(std::size_t n, const char *where) {
    if (PK__CXX_UNLIKELY(n > static_cast<std::size_t>(-1) / sizeof(T))) bad_length(where);
    return n * sizeof(T);
}

/* Placement construction: braces for aggregates (C++17 has no parenthesized
 * aggregate initialization), parentheses for everything else. */
template <class T, class... Args>
inline T *construct_at(void *mem, Args &&...args) {
    if constexpr (std::is_aggregate_v<T>)
        return ::new (mem) T{std::forward<Args>(args)...};
    else
        return ::new (mem) T(std::forward<Args>(args)...);
}

/* Memory for n objects of T from the size-class front end (alloc.h): the
 * class of n * sizeof(T), or of a size aligned as T needs; freed with its
 * size where the class follows from it. */
template <class T>
inline T *front_allocate(std::size_t n, const char *where) {
    std::size_t bytes = array_bytes<T>(n, where);
    void *p = alignof(T) <= 16 ? pk_alloc(bytes) : pk_aligned_alloc(alignof(T), bytes);
    if (PK__CXX_UNLIKELY(!p)) out_of_memory(where);
    return static_cast<T *>(p);
}

template <class T>
inline void front_deallocate(T *p, std::size_t n) noexcept {
    if constexpr (alignof(T) <= 16)
        pk_free_sized(p, n * sizeof(T));
    else
        pk_free(p);
}

/* The pool that object_pool::clear is emptying on this thread: destroy() and
 * the deleter do nothing for its objects, since clear destroys each exactly
 * once (so a destructor may destroy other objects of the same pool). */
inline thread_local pk_pool *pool_being_cleared = nullptr;

/* pk::pool_allocator's process-wide pools, one per (Size, Align): created on
 * first use under the function-local static's guard (thread-safe, retried
 * after a failure), never destroyed. */
template <std::size_t Size, std::size_t Align>
struct shared_pool {
    static pk_pool *get() {
        static pk_pool *const pool = create();
        return pool;
    }

private:
    static pk_pool *create() {
        static char name[48];
        std::snprintf(name, sizeof name, "pk::pool_allocator %zu/%zu", Size, Align);
        pk_pool_config config{};
        config.name = name;
        config.size = Size;
        config.align = Align;
        pk_pool *pool = pk_pool_create(&config);
        if (!pool) out_of_memory("pk::pool_allocator");
        return pool;
    }
};

/* Objects made by make_ref whose constructor threw: their dealloc must not
 * run ~T. Linked through their own (unconstructed) first word, per thread:
 * the object's dealloc runs on this thread, maybe later in a dealloc chain. */
inline thread_local void *unconstructed_objects = nullptr;

inline bool take_unconstructed(void *obj) noexcept {
    for (void **link = &unconstructed_objects; *link; link = static_cast<void **>(*link)) {
        if (*link == obj) {
            *link = *static_cast<void **>(obj);
            return true;
        }
    }
    return false;
}

/* The class make_ref gives objects of T, named after T. */
template <class T>
struct object_class {
    static const pk_class *get() noexcept {
        static const holder h(PK__CXX_SIGNATURE);
        return &h.cls;
    }

private:
    static void dealloc(void *obj) {
#if PK__CXX_EXCEPTIONS
        if (PK__CXX_UNLIKELY(unconstructed_objects != nullptr) && take_unconstructed(obj)) return;
#endif
        static_cast<T *>(obj)->~T();
    }
    struct holder {
        char name[96];
        pk_class cls;
        explicit holder(const char *signature) noexcept : name(), cls() {
            /* GCC: "... [with T = Foo]", Clang: "... [T = Foo]". */
            const char *bracket = std::strchr(signature, '[');
            const char *s = bracket ? std::strstr(bracket, "T = ") : nullptr;
            std::size_t n = 0;
            if (s) {
                s += 4;
                while (s[n] && s[n] != ']' && s[n] != ';' && n + 1 < sizeof name) n++;
                std::memcpy(name, s, n);
            } else {
                std::snprintf(name, sizeof name, "pk::ref object");
            }
            cls.name = name;
            cls.size = sizeof(T);
            cls.dealloc = std::is_trivially_destructible_v<T> ? nullptr : &dealloc;
        }
    };
};

} // namespace detail
/// @endcond

/* ======================================================================== */
/* object_pool                                                              */
/* ======================================================================== */

/**
 * @brief Settings for the pool under a pk::object_pool (see pk_pool_config).
 *
 * An aggregate: `pk::pool_options{"nodes", 1024}` names the pool and makes
 * 1024 objects ready.
 */
struct pool_options {
    const char *name = nullptr; ///< For stats and reports; must outlive the pool; may be null.
    std::size_t reserve = 0;    ///< Objects made ready at creation.
    std::size_t limit = 0;      ///< Most objects live at once; 0 = no limit.
    unsigned flags = 0;         ///< PK_POOL_* flags (PK_POOL_LOCAL, PK_POOL_DEBUG, PK_POOL_HARDENED).
};

/**
 * @brief A pool of objects of type T: create() constructs one in pool
 *        memory, destroy() runs ~T and gives the memory back.
 *
 * One pk_pool of sizeof(T) bytes aligned to alignof(T) (at most 4096).
 * Objects carry no header and need no tracking: when the object_pool is
 * destroyed (or clear() is called), the pool finds its live objects itself
 * (pk_pool_visit), runs ~T on each exactly once, and releases all memory, so
 * nothing is reported as leaked. The order in which they are destroyed is
 * unspecified; a destructor that runs then may call destroy() on other
 * objects of the same pool (it does nothing: each is destroyed once anyway)
 * but must not otherwise use them, since they may be destroyed already.
 *
 * Moving an object_pool moves the pool; pointers, deleters and unique_ptrs
 * made earlier stay valid. Not copyable.
 *
 * @par Thread safety
 * create(), destroy() and the deleter may be called from any thread at once,
 * unless the pool was made with PK_POOL_LOCAL. Destroying or clearing the
 * object_pool, and moving it, need that no other thread uses it meanwhile.
 */
template <class T>
class object_pool {
    static_assert(std::is_object_v<T> && !std::is_array_v<T> && !std::is_const_v<T>,
                  "pk::object_pool<T>: T must be a non-const object type, not an array");
    static_assert(alignof(T) <= 4096, "pk::object_pool<T>: pools align to at most 4096 bytes");

public:
    using value_type = T; ///< The type of the objects.

    /**
     * @brief A std::unique_ptr deleter that destroys the object and gives its
     *        memory back to its pool.
     *
     * Holds the pool, not the object_pool, so it stays valid when the
     * object_pool is moved; it must not be used after the object_pool is
     * destroyed. A default-constructed deleter has no pool and must only
     * be called with nullptr.
     */
    class deleter {
    public:
        /// A deleter with no pool, for an empty unique_ptr.
        deleter() noexcept = default;
        /// A deleter for objects of @p pool (from object_pool::get()).
        explicit deleter(pk_pool *pool) noexcept : pool_(pool) {}
        /**
         * @brief Runs ~T on @p p and frees it; nullptr does nothing.
         * @par Thread safety
         * Any thread, as pk_pool_free.
         * @par Errors
         * A pointer that is not a live object of the pool is misuse,
         * reported through the error handler in debug and hardened modes.
         */
        void operator()(T *p) const noexcept {
            if (p && PK__CXX_LIKELY(detail::pool_being_cleared != pool_)) {
                p->~T();
                pk_pool_free(pool_, p);
            }
        }
        /// The pool this deleter frees into (nullptr for a default one).
        pk_pool *pool() const noexcept { return pool_; }

    private:
        pk_pool *pool_ = nullptr;
    };

    /// A std::unique_ptr that destroys its object through the pool.
    using unique_ptr = std::unique_ptr<T, deleter>;

    /**
     * @brief Creates the pool with default settings.
     * @throws std::bad_alloc when the pool cannot be made.
     */
    object_pool() : object_pool(pool_options{}) {}

    /**
     * @brief Creates the pool with @p options (name, reserve, limit, flags).
     * @par Thread safety
     * Any thread.
     * @throws std::bad_alloc when the pool or its reserve cannot be made, or
     *         when the options are invalid (PK_POOL_ZERO is accepted but
     *         useless: create() constructs every object).
     */
    explicit object_pool(const pool_options &options) {
        pk_pool_config config{};
        config.name = options.name;
        config.size = sizeof(T);
        config.align = alignof(T);
        config.reserve = options.reserve;
        config.limit = options.limit;
        config.flags = options.flags;
        pool_ = pk_pool_create(&config);
        if (!pool_) detail::out_of_memory("pk::object_pool");
    }

    /**
     * @brief Destroys every live object (~T, once each) and the pool with
     *        all its memory.
     * @par Thread safety
     * No other thread may use the pool meanwhile.
     */
    ~object_pool() {
        clear();
        pk_pool_destroy(pool_);
    }

    object_pool(const object_pool &) = delete;
    object_pool &operator=(const object_pool &) = delete;

    /// Takes over @p other's pool; @p other is left empty (get() is nullptr).
    object_pool(object_pool &&other) noexcept : pool_(std::exchange(other.pool_, nullptr)) {}

    /// Destroys this pool (as the destructor) and takes over @p other's.
    object_pool &operator=(object_pool &&other) noexcept {
        if (this != &other) {
            object_pool gone(std::move(*this));
            pool_ = std::exchange(other.pool_, nullptr);
        }
        return *this;
    }

    /**
     * @brief Constructs a T from @p args in memory from the pool.
     * @return the object; give it back with destroy() (or the deleter).
     * @par Thread safety
     * Any thread, unless PK_POOL_LOCAL.
     * @throws std::bad_alloc when memory or the pool's limit runs out;
     *         whatever T's constructor throws (the memory then goes back).
     */
    template <class... Args>
    T *create(Args &&...args) {
        void *mem = pk_pool_alloc(pool_);
        if (PK__CXX_UNLIKELY(!mem)) detail::out_of_memory("pk::object_pool::create");
        return construct(mem, std::forward<Args>(args)...);
    }

    /**
     * @brief As create(), but returns nullptr when memory or the pool's
     *        limit runs out (errno ENOMEM).
     * @par Thread safety
     * Any thread, unless PK_POOL_LOCAL.
     * @throws whatever T's constructor throws (the memory then goes back).
     */
    template <class... Args>
    T *try_create(Args &&...args) noexcept(std::is_nothrow_constructible_v<T, Args...>) {
        void *mem = pk_pool_alloc(pool_);
        if (PK__CXX_UNLIKELY(!mem)) return nullptr;
        return construct(mem, std::forward<Args>(args)...);
    }

    /**
     * @brief Runs ~T on @p p and gives its memory back; nullptr does nothing.
     *
     * @p p must be a live object from this pool's create(). While clear()
     * or the destructor runs on this thread, destroy() of this pool's
     * objects does nothing (they are destroyed by clear()).
     * @par Thread safety
     * Any thread, unless PK_POOL_LOCAL; the object itself must not be in use.
     * @par Errors
     * A double destroy or a foreign pointer is misuse: reported through the
     * error handler in debug and hardened modes, undefined otherwise.
     */
    void destroy(T *p) noexcept { deleter{pool_}(p); }

    /**
     * @brief create() wrapped in a unique_ptr whose deleter calls destroy().
     * @par Thread safety
     * As create().
     * @throws as create().
     */
    template <class... Args>
    unique_ptr make_unique(Args &&...args) {
        return unique_ptr(create(std::forward<Args>(args)...), deleter(pool_));
    }

    /// A deleter for objects of this pool (see deleter). Never fails.
    deleter get_deleter() const noexcept { return deleter(pool_); }

    /**
     * @brief Destroys every live object, once each, and keeps the pool.
     *
     * Live objects are found by the pool (pk_pool_visit); their destructors
     * run in unspecified order, after which their memory goes back. Objects
     * that destructors create meanwhile stay live.
     * @par Thread safety
     * No other thread may use the pool meanwhile.
     * @par Errors
     * None. (If the list of live objects cannot be allocated, ~T still runs
     * on each, and the memory is reported as leaked when the pool is
     * destroyed.)
     */
    void clear() noexcept {
        if (!pool_) return;
        pk_pool_stats stats;
        pk_pool_stats_get(pool_, &stats);
        if (stats.live == 0) return;
        live_list list{static_cast<void **>(std::malloc(stats.live * sizeof(void *))), 0,
                       stats.live};
        pk_pool *outer = std::exchange(detail::pool_being_cleared, pool_);
        if (!list.objs) {
            pk_pool_visit(pool_, [](void *obj, void *) { static_cast<T *>(obj)->~T(); }, nullptr);
        } else {
            pk_pool_visit(pool_, &live_list::add, &list);
            if constexpr (!std::is_trivially_destructible_v<T>)
                for (std::size_t i = 0; i < list.n; i++) static_cast<T *>(list.objs[i])->~T();
            pk_pool_free_bulk(pool_, list.objs, list.n);
            std::free(list.objs);
        }
        detail::pool_being_cleared = outer;
    }

    /**
     * @brief The number of live objects (created and not destroyed).
     * @par Thread safety
     * Any thread; exact when no call on the pool is in progress.
     */
    std::size_t size() const noexcept { return stats().live; }

    /**
     * @brief The pool's statistics (pk_pool_stats_get).
     * @par Thread safety
     * Any thread.
     */
    pk_pool_stats stats() const noexcept {
        pk_pool_stats s;
        pk_pool_stats_get(pool_, &s);
        return s;
    }

    /**
     * @brief Makes memory ready so that @p n more create() calls need no
     *        system call.
     * @return how many objects are now ready; fewer than @p n means errno
     *         ENOMEM.
     * @par Thread safety
     * Any thread.
     */
    std::size_t reserve(std::size_t n) noexcept { return pk_pool_reserve(pool_, n); }

    /**
     * @brief Gives memory with no live object back to the system.
     * @return the bytes released.
     * @par Thread safety
     * Any thread.
     */
    std::size_t trim() noexcept { return pk_pool_trim(pool_); }

    /// The underlying pool, for the C API; nullptr once moved from.
    pk_pool *get() const noexcept { return pool_; }

private:
    struct live_list {
        void **objs;
        std::size_t n, cap;
        static void add(void *obj, void *self) {
            live_list *l = static_cast<live_list *>(self);
            if (l->n < l->cap) l->objs[l->n++] = obj;
        }
    };

    template <class... Args>
    T *construct(void *mem, Args &&...args) {
#if PK__CXX_EXCEPTIONS
        if constexpr (!std::is_nothrow_constructible_v<T, Args...>) {
            try {
                return detail::construct_at<T>(mem, std::forward<Args>(args)...);
            } catch (...) {
                pk_pool_free(pool_, mem);
                throw;
            }
        }
#endif
        return detail::construct_at<T>(mem, std::forward<Args>(args)...);
    }

    pk_pool *pool_ = nullptr;
};

/* ======================================================================== */
/* pool_allocator                                                           */
/* ======================================================================== */

/**
 * @brief The largest object, in bytes, that pk::pool_allocator takes from a
 *        pool; larger ones come from the size-class front end (pk_alloc),
 *        which throws std::bad_alloc where it fails and calls no new_handler.
 */
inline constexpr std::size_t pool_allocator_max_size = 4096;

/**
 * @brief A standard allocator for node-based containers: std::list,
 *        std::map, std::set, std::unordered_map, std::allocate_shared.
 *
 * A container never allocates its value type: it rebinds the allocator to
 * its node type (a std::map's tree node, a std::list's node with its two
 * links), and each node is one allocate(1) of that type. A request for one
 * object (n == 1) of at most pk::pool_allocator_max_size bytes is served by
 * a process-wide pk_pool for its size and alignment, shared by every type
 * of that size and alignment, created on first use and never destroyed; its
 * per-thread heaps make allocate and deallocate a few instructions with no
 * lock.
 *
 * @par Arrays
 * Anything but one object (an unordered_map's bucket array, std::deque's
 * blocks, every buffer of a std::vector or std::string) comes from the
 * size-class front end (poolkit/alloc.h: pk_alloc, pk_aligned_alloc where T
 * is aligned to more than 16, freed with its size), whose classes are pools
 * too; a buffer of exactly one element (a vector's first push_back) goes to
 * the pool of sizeof(T) like a node. Against std::allocator this gains what
 * pk_alloc gains against malloc (docs/alloc.md), less than the nodes do.
 *
 * @par Introspection
 * pool() names the pool the container's nodes really come from when asked
 * of the container's own allocator, `c.get_allocator().pool()`: a container
 * builds that copy from its node allocator, and the copy remembers which
 * pool served the type it was converted from. Asked of an allocator made
 * directly (`pk::pool_allocator<T>().pool()`), it names the pool of
 * sizeof(T), which serves allocate(1) of T itself. This costs one pointer
 * in each allocator (and so in each container or allocate_shared block),
 * never a pool created before a node needs it.
 *
 * Always equal: memory from any pool_allocator may be freed by any other,
 * of any T (is_always_equal; containers move in O(1)). All code sharing
 * containers must use the same instantiation of the pools: a program and
 * shared libraries that export their template statics (the default
 * visibility) do; libraries built with hidden visibility that pass
 * containers across must not free each other's nodes.
 *
 * @par Thread safety
 * Any thread, at once: the pools are thread-safe and created under a
 * thread-safe guard. A node may be freed on another thread than the one that
 * allocated it.
 */
template <class T>
class pool_allocator {
public:
    using value_type = T;                                       ///< Allocated type.
    using size_type = std::size_t;                              ///< Sizes.
    using difference_type = std::ptrdiff_t;                     ///< Differences.
    using is_always_equal = std::true_type;                     ///< Any frees any other's memory.
    using propagate_on_container_move_assignment = std::true_type; ///< Moves are O(1).

    /// The same allocator for another type.
    template <class U>
    struct rebind {
        using other = pool_allocator<U>; ///< pool_allocator of U.
    };

    /// The allocator; pool() names the pool of sizeof(T).
    constexpr pool_allocator() noexcept = default;
    /// Converts from the allocator of another type; pool() then names the
    /// pool that serves single objects of U (a container's nodes, when U
    /// is its node type).
    template <class U>
    constexpr pool_allocator(const pool_allocator<U> &) noexcept : pool_of_source_(&pool_allocator<U>::type_pool) {}

    /**
     * @brief Memory for @p n objects of T, uninitialized.
     *
     * n == 1 with sizeof(T) <= pool_allocator_max_size: from the pool for
     * (sizeof(T), alignof(T)), created on first use. Otherwise from the
     * size-class front end (pk_alloc; pk_aligned_alloc where T is aligned
     * to more than 16).
     * @par Thread safety
     * Any thread.
     * @throws std::bad_alloc when memory runs out (the pool's or the heap's);
     *         std::bad_array_new_length when n * sizeof(T) overflows.
     */
    [[nodiscard]] T *allocate(std::size_t n) {
        if constexpr (pooled) {
            if (PK__CXX_LIKELY(n == 1)) {
                void *p = pk_pool_alloc(type_pool());
                if (PK__CXX_UNLIKELY(!p)) detail::out_of_memory("pk::pool_allocator");
                return static_cast<T *>(p);
            }
        }
        return detail::front_allocate<T>(n, "pk::pool_allocator");
    }

    /**
     * @brief Gives back @p p, which allocate(@p n) returned (from any
     *        pool_allocator).
     * @par Thread safety
     * Any thread, not necessarily the one that allocated.
     * @par Errors
     * A wrong pointer or count is misuse (detected in debug and hardened
     * modes for pooled objects).
     */
    void deallocate(T *p, std::size_t n) noexcept {
        if constexpr (pooled) {
            if (PK__CXX_LIKELY(n == 1)) {
                pk_pool_free(type_pool(), p);
                return;
            }
        }
        detail::front_deallocate(p, n);
    }

    /**
     * @brief The pool a container's nodes come from, for pk_pool_stats_get
     *        or pk_pool_trim: asked of `c.get_allocator()`, the pool of the
     *        container's node type; asked of an allocator made directly,
     *        the pool of sizeof(T) (see the class). Created if need be;
     *        nullptr when the type is larger than pool_allocator_max_size
     *        (no pool serves it).
     * @par Thread safety
     * Any thread.
     * @throws std::bad_alloc when the pool cannot be created.
     */
    pk_pool *pool() const { return pool_of_source_ ? pool_of_source_() : type_pool(); }

    /**
     * @brief The process-wide pool that serves allocate(1) of T itself
     *        (sizeof(T), alignof(T)), created if need be; nullptr when T is
     *        larger than pool_allocator_max_size.
     * @par Thread safety
     * Any thread.
     * @throws std::bad_alloc when the pool cannot be created.
     */
    static pk_pool *type_pool() {
        if constexpr (pooled)
            return detail::shared_pool<sizeof(T), alignof(T)>::get();
        else
            return nullptr;
    }

private:
    static constexpr bool pooled = sizeof(T) <= pool_allocator_max_size;
    /* type_pool of the allocator this one was converted from, or nullptr:
     * a function, so that no pool is made before a node needs it. */
    pk_pool *(*pool_of_source_)() = nullptr;
};

/// Always true: any pool_allocator frees any other's memory.
template <class T, class U>
constexpr bool operator==(const pool_allocator<T> &, const pool_allocator<U> &) noexcept {
    return true;
}
/// Always false: any pool_allocator frees any other's memory.
template <class T, class U>
constexpr bool operator!=(const pool_allocator<T> &, const pool_allocator<U> &) noexcept {
    return false;
}

/* ======================================================================== */
/* arena                                                                    */
/* ======================================================================== */

/**
 * @brief An owning handle to a pk_arena: bump allocation, save/rewind,
 *        reset, and all memory given back when it is destroyed.
 *
 * Nothing is freed one by one and no destructor runs: use it for data that
 * dies together (a parse, a frame, a request), with types that need no
 * destructor, or with containers through pk::arena_allocator or
 * pk::arena_resource. Movable, not copyable.
 *
 * @par Thread safety
 * One thread at a time, for the arena and everything allocating from it.
 */
class arena {
public:
    /// A position in the arena, from save(), for rewind(). A value type.
    using mark = pk_arena_mark;

    /**
     * @brief Rewinds the arena to where it was when the scope was entered.
     *
     * `pk::arena::scope tmp(a);` takes a mark; leaving the scope frees all
     * that was allocated from @p a since. Scopes nest; an outer scope must
     * not be left (nor the arena reset or moved) while an inner one is
     * alive. Neither copyable nor movable.
     */
    class scope {
    public:
        /// Takes a mark of @p a. Never fails.
        explicit scope(arena &a) noexcept : arena_(a), mark_(a.save()) {}
        /// Frees what was allocated since the mark (pk_arena_rewind).
        ~scope() { arena_.rewind(mark_); }
        scope(const scope &) = delete;
        scope &operator=(const scope &) = delete;
        /// The mark taken when the scope began.
        mark position() const noexcept { return mark_; }

    private:
        arena &arena_;
        mark mark_;
    };

    /**
     * @brief Creates an arena whose chunks hold @p chunk_size bytes (0: the
     *        default, 64 KiB).
     * @par Thread safety
     * Any thread.
     * @throws std::bad_alloc when memory runs out.
     */
    explicit arena(std::size_t chunk_size = 0) : arena_(pk_arena_create(chunk_size)) {
        if (!arena_) detail::out_of_memory("pk::arena");
    }

    /// Gives every chunk back to the system.
    ~arena() { pk_arena_destroy(arena_); }

    arena(const arena &) = delete;
    arena &operator=(const arena &) = delete;
    /// Takes over @p other's arena; @p other is left empty (get() is nullptr).
    arena(arena &&other) noexcept : arena_(std::exchange(other.arena_, nullptr)) {}
    /// Destroys this arena and takes over @p other's.
    arena &operator=(arena &&other) noexcept {
        if (this != &other) {
            pk_arena_destroy(arena_);
            arena_ = std::exchange(other.arena_, nullptr);
        }
        return *this;
    }

    /**
     * @brief @p size bytes aligned to @p align (a power of two), valid until
     *        a rewind past this point, reset() or the arena's end.
     * @par Thread safety
     * One thread at a time.
     * @throws std::bad_alloc when memory runs out or @p align is not a power
     *         of two; the arena stays usable.
     */
    [[nodiscard]] void *allocate(std::size_t size, std::size_t align = alignof(std::max_align_t)) {
        void *p = pk_arena_alloc(arena_, size, align);
        if (PK__CXX_UNLIKELY(!p)) detail::out_of_memory("pk::arena::allocate");
        return p;
    }

    /**
     * @brief As allocate(), but returns nullptr (errno ENOMEM, or EINVAL for
     *        a bad alignment) instead of throwing.
     * @par Thread safety
     * One thread at a time.
     */
    [[nodiscard]] void *try_allocate(std::size_t size,
                                     std::size_t align = alignof(std::max_align_t)) noexcept {
        return pk_arena_alloc(arena_, size, align);
    }

    /**
     * @brief Constructs a T from @p args in the arena. T must be trivially
     *        destructible: the arena never runs destructors.
     * @par Thread safety
     * One thread at a time.
     * @throws std::bad_alloc when memory runs out; whatever T's constructor
     *         throws (the memory stays in the arena until rewound).
     */
    template <class T, class... Args>
    T *make(Args &&...args) {
        static_assert(std::is_trivially_destructible_v<T>,
                      "pk::arena::make<T>: the arena never runs ~T");
        return detail::construct_at<T>(allocate(sizeof(T), alignof(T)),
                                       std::forward<Args>(args)...);
    }

    /**
     * @brief Copies the NUL-terminated string @p s (not null) into the arena.
     * @par Thread safety
     * One thread at a time.
     * @throws std::bad_alloc when memory runs out.
     */
    char *strdup(const char *s) {
        char *p = pk_arena_strdup(arena_, s);
        if (PK__CXX_UNLIKELY(!p)) detail::out_of_memory("pk::arena::strdup");
        return p;
    }

    /**
     * @brief Copies @p len bytes at @p s into the arena and adds a NUL.
     * @par Thread safety
     * One thread at a time.
     * @throws std::bad_alloc when memory runs out.
     */
    char *strndup(const char *s, std::size_t len) {
        if (PK__CXX_UNLIKELY(len == static_cast<std::size_t>(-1))) detail::bad_length("pk::arena::strndup");
        char *p = static_cast<char *>(allocate(len + 1, 1));
        std::memcpy(p, s, len);
        p[len] = '\0';
        return p;
    }

    /// The current position, for rewind(). Never fails; allocates nothing.
    mark save() noexcept { return pk_arena_save(arena_); }

    /**
     * @brief Frees everything allocated since @p m was taken; @p m stays
     *        usable.
     * @par Thread safety
     * One thread at a time.
     * @par Errors
     * A mark that is no longer in the arena's past is misuse, reported as
     * the fatal error "bad arena mark" where it can be detected (arena.h).
     */
    void rewind(mark m) noexcept { pk_arena_rewind(arena_, m); }

    /**
     * @brief Frees everything, keeping one chunk; every earlier mark
     *        becomes invalid.
     * @par Thread safety
     * One thread at a time.
     */
    void reset() noexcept { pk_arena_reset(arena_); }

    /// The underlying pk_arena, for the C API; nullptr once moved from.
    pk_arena *get() const noexcept { return arena_; }

private:
    pk_arena *arena_;
};

/**
 * @brief A standard allocator that takes memory from a pk::arena, for
 *        std::vector, std::basic_string and other containers that die with
 *        the arena.
 *
 * deallocate() does nothing: memory comes back when the arena is rewound,
 * reset or destroyed, so a vector that grows leaves its old buffers behind
 * (reserve() first where the size is known). The arena must outlive every
 * container using it. Two arena_allocators are equal when they use the same
 * arena; containers do not carry the allocator over on copy, move or swap
 * assignment (as std::pmr::polymorphic_allocator), so moving between arenas
 * copies the elements. There is no default arena_allocator, so the few
 * members that build a default allocator (basic_string::substr) are not
 * available: use std::string_view(s).substr().
 *
 * @par Thread safety
 * As the arena: one thread at a time.
 */
template <class T>
class arena_allocator {
public:
    using value_type = T;                   ///< Allocated type.
    using size_type = std::size_t;          ///< Sizes.
    using difference_type = std::ptrdiff_t; ///< Differences.

    /// The same allocator for another type.
    template <class U>
    struct rebind {
        using other = arena_allocator<U>; ///< arena_allocator of U.
    };

    /// An allocator using @p a, which must outlive it. Implicit, so a
    /// container can be built from the arena: `pk::arena_vector<int> v(a);`
    arena_allocator(arena &a) noexcept : arena_(&a) {} // NOLINT: implicit on purpose
    /// Converts from the allocator of another type: the same arena.
    template <class U>
    arena_allocator(const arena_allocator<U> &other) noexcept : arena_(other.get_arena()) {}

    /**
     * @brief Memory for @p n objects of T from the arena.
     * @par Thread safety
     * As the arena.
     * @throws std::bad_alloc when memory runs out;
     *         std::bad_array_new_length when n * sizeof(T) overflows.
     */
    [[nodiscard]] T *allocate(std::size_t n) {
        std::size_t bytes = detail::array_bytes<T>(n, "pk::arena_allocator");
        void *p = pk_arena_alloc(arena_->get(), bytes, alignof(T));
        if (PK__CXX_UNLIKELY(!p)) detail::out_of_memory("pk::arena_allocator");
        return static_cast<T *>(p);
    }

    /// Does nothing: the memory stays in the arena until it is rewound,
    /// reset or destroyed.
    void deallocate(T *, std::size_t) noexcept {}

    /// The arena this allocator uses.
    arena *get_arena() const noexcept { return arena_; }

private:
    arena *arena_;
};

/// True when both allocate from the same arena.
template <class T, class U>
bool operator==(const arena_allocator<T> &a, const arena_allocator<U> &b) noexcept {
    return a.get_arena() == b.get_arena();
}
/// True when they allocate from different arenas.
template <class T, class U>
bool operator!=(const arena_allocator<T> &a, const arena_allocator<U> &b) noexcept {
    return !(a == b);
}

/// A std::vector whose buffers come from a pk::arena.
template <class T>
using arena_vector = std::vector<T, arena_allocator<T>>;
/// A std::string whose buffer comes from a pk::arena.
using arena_string = std::basic_string<char, std::char_traits<char>, arena_allocator<char>>;

/* ======================================================================== */
/* std::pmr resources                                                       */
/* ======================================================================== */

/**
 * @brief A std::pmr::memory_resource that serves small blocks from poolkit
 *        pools, one per size class, and larger ones from an upstream
 *        resource.
 *
 * Size classes step by 16 bytes up to 256, then four per doubling up to
 * max_block (at most 4096, the default). A request of at most max_block
 * bytes with an alignment of at most 16 is rounded up to its class and
 * served by that class's pool, created on first use; any other request goes
 * to the upstream resource. Pools are the resource's own: destroying the
 * resource destroys them and releases their memory (blocks still allocated
 * are reported by poolkit as leaked); release() frees every pooled block at
 * once instead; blocks from upstream must be deallocated before the
 * resource is destroyed.
 *
 * Two pool_resources are equal only if they are the same object. Not
 * copyable or movable.
 *
 * @par Thread safety
 * allocate and deallocate may be called from any thread at once (as with
 * std::pmr::synchronized_pool_resource), if the upstream resource allows it,
 * unless options::flags has PK_POOL_LOCAL (then: one thread at a time, as
 * std::pmr::unsynchronized_pool_resource).
 */
class pool_resource : public std::pmr::memory_resource {
public:
    /// The largest max_block: bigger requests always go upstream.
    static constexpr std::size_t max_block_limit = 4096;

    /// How a pool_resource is set up.
    struct options {
        std::size_t max_block = max_block_limit; ///< Largest pooled block (clamped to max_block_limit).
        unsigned flags = 0;                      ///< PK_POOL_* flags for every pool.
        const char *name = "pk::pool_resource";  ///< Pool name for stats and reports; must outlive the resource.
    };

    /**
     * @brief A resource with default options over
     *        std::pmr::get_default_resource(). Allocates nothing yet.
     */
    pool_resource() noexcept : pool_resource(options{}) {}

    /// A resource with default options over @p upstream (not null), which
    /// must outlive it. Allocates nothing yet.
    explicit pool_resource(std::pmr::memory_resource *upstream) noexcept
        : pool_resource(options{}, upstream) {}

    /// A resource with @p opts over @p upstream (not null), which must
    /// outlive it. Allocates nothing yet.
    explicit pool_resource(const options &opts,
                           std::pmr::memory_resource *upstream = std::pmr::get_default_resource()) noexcept
        : upstream_(upstream),
          max_block_(opts.max_block > max_block_limit ? max_block_limit : opts.max_block),
          flags_(opts.flags),
          name_(opts.name) {}

    /**
     * @brief Destroys the pools and their memory (pooled blocks still
     *        allocated are reported as leaked).
     * @par Thread safety
     * No other thread may use the resource meanwhile.
     */
    ~pool_resource() override {
        for (auto &p : pools_) pk_pool_destroy(p.load(std::memory_order_relaxed));
    }

    pool_resource(const pool_resource &) = delete;
    pool_resource &operator=(const pool_resource &) = delete;

    /// The resource that serves the requests the pools do not.
    std::pmr::memory_resource *upstream_resource() const noexcept { return upstream_; }

    /// The largest block served from a pool.
    std::size_t max_block() const noexcept { return max_block_; }

    /**
     * @brief The pool that serves blocks of @p bytes (for pk_pool_stats_get
     *        or pk_pool_trim), or nullptr when they go upstream or no such
     *        block was allocated yet.
     * @par Thread safety
     * Any thread.
     */
    pk_pool *pool_for(std::size_t bytes) const noexcept {
        if (bytes > max_block_) return nullptr;
        return pools_[class_index(bytes)].load(std::memory_order_acquire);
    }

    /**
     * @brief Gives memory with no live block back to the system, in every
     *        pool (pk_pool_trim).
     * @return the bytes released.
     * @par Thread safety
     * Any thread.
     */
    std::size_t trim() noexcept {
        std::size_t bytes = 0;
        for (auto &p : pools_)
            if (pk_pool *pool = p.load(std::memory_order_acquire)) bytes += pk_pool_trim(pool);
        return bytes;
    }

    /**
     * @brief Gives back every block the pools served, at once, and returns
     *        their memory to the system: the std::pmr release() (as
     *        std::pmr::monotonic_buffer_resource::release) for a resource
     *        made of pools.
     *
     * Every pooled block still allocated is freed (nothing runs on it; it
     * is not reported as leaked) and each pool is then trimmed
     * (pk_pool_trim), so pooled blocks allocated before the call must not
     * be used or deallocated after it. The pools themselves stay, with
     * their statistics: pool_for() keeps its answers and the next
     * allocation needs no new pool. Blocks from upstream (over max_block,
     * or aligned to more than 16) are not tracked, so release() leaves
     * them: whoever holds them deallocates them as before, which the
     * resource forwards upstream. Cost: O(live blocks + slabs).
     * @par Thread safety
     * No other thread may use the resource meanwhile (as the destructor).
     * @par Errors
     * None; allocates nothing.
     */
    void release() noexcept {
        for (auto &p : pools_) {
            pk_pool *pool = p.load(std::memory_order_acquire);
            if (!pool) continue;
            /* The live blocks are linked through their own first word (a
             * block is at least 16 bytes), so the list needs no memory; they
             * are freed once the visit, which forbids calls on the pool, is
             * over. */
            void *live = nullptr;
            pk_pool_visit(
                pool,
                [](void *obj, void *head) {
                    *static_cast<void **>(obj) = *static_cast<void **>(head);
                    *static_cast<void **>(head) = obj;
                },
                &live);
            while (live) {
                void *next = *static_cast<void **>(live);
                pk_pool_free(pool, live);
                live = next;
            }
            pk_pool_trim(pool);
        }
    }

protected:
    /// Serves @p bytes aligned to @p align (see the class); throws
    /// std::bad_alloc when memory runs out.
    void *do_allocate(std::size_t bytes, std::size_t align) override {
        if (PK__CXX_UNLIKELY(bytes > max_block_ || align > 16)) return upstream_->allocate(bytes, align);
        std::size_t ci = class_index(bytes);
        pk_pool *pool = pools_[ci].load(std::memory_order_acquire);
        if (PK__CXX_UNLIKELY(!pool)) pool = create_pool(ci);
        void *p = pk_pool_alloc(pool);
        if (PK__CXX_UNLIKELY(!p)) detail::out_of_memory("pk::pool_resource");
        return p;
    }

    /// Gives back @p p from do_allocate(@p bytes, @p align).
    void do_deallocate(void *p, std::size_t bytes, std::size_t align) override {
        if (PK__CXX_UNLIKELY(bytes > max_block_ || align > 16)) {
            upstream_->deallocate(p, bytes, align);
            return;
        }
        pk_pool_free(pools_[class_index(bytes)].load(std::memory_order_relaxed), p);
    }

    /// Equal only to itself.
    bool do_is_equal(const std::pmr::memory_resource &other) const noexcept override {
        return this == &other;
    }

private:
    static constexpr std::size_t class_count = 32;

    /* 16, 32, ..., 256, then 320, 384, 448, 512, 640, ..., 4096. */
    static std::size_t class_index(std::size_t bytes) noexcept {
        if (bytes <= 256) return bytes == 0 ? 0 : (bytes - 1) >> 4;
        std::size_t b = bytes - 1;
        unsigned msb = static_cast<unsigned>(sizeof(unsigned long) * 8 - 1) -
                       static_cast<unsigned>(__builtin_clzl(b));
        return 16 + (msb - 8) * 4 + ((b >> (msb - 2)) & 3);
    }
    static std::size_t class_size(std::size_t ci) noexcept {
        if (ci < 16) return (ci + 1) * 16;
        std::size_t k = ci - 16;
        return (5 + k % 4) << (k / 4 + 6);
    }

    PK__CXX_COLD pk_pool *create_pool(std::size_t ci) {
        std::lock_guard<std::mutex> hold(lock_);
        pk_pool *pool = pools_[ci].load(std::memory_order_relaxed);
        if (pool) return pool;
        pk_pool_config config{};
        config.name = name_;
        config.size = class_size(ci);
        config.align = 16;
        config.flags = flags_;
        pool = pk_pool_create(&config);
        if (!pool) detail::out_of_memory("pk::pool_resource");
        pools_[ci].store(pool, std::memory_order_release);
        return pool;
    }

    std::pmr::memory_resource *upstream_;
    std::size_t max_block_;
    unsigned flags_;
    const char *name_;
    std::atomic<pk_pool *> pools_[class_count] = {};
    std::mutex lock_;
};

/**
 * @brief A std::pmr::memory_resource over a pk::arena: allocation bumps a
 *        pointer, deallocation does nothing, and the memory comes back when
 *        the arena is rewound, reset or destroyed.
 *
 * Like std::pmr::monotonic_buffer_resource, with the arena's marks. The
 * arena must outlive the resource and the containers using it. Two
 * arena_resources are equal only if they are the same object.
 *
 * @par Thread safety
 * As the arena: one thread at a time.
 */
class arena_resource : public std::pmr::memory_resource {
public:
    /// A resource allocating from @p a, which must outlive it. Never fails.
    explicit arena_resource(arena &a) noexcept : arena_(&a) {}

    /// The arena this resource allocates from.
    arena &get_arena() const noexcept { return *arena_; }

protected:
    /// @p bytes aligned to @p align from the arena; throws std::bad_alloc
    /// when memory runs out.
    void *do_allocate(std::size_t bytes, std::size_t align) override {
        return arena_->allocate(bytes, align);
    }
    /// Does nothing (see the class).
    void do_deallocate(void *, std::size_t, std::size_t) override {}
    /// Equal only to itself (as the std::pmr resources; needs no RTTI).
    bool do_is_equal(const std::pmr::memory_resource &other) const noexcept override {
        return this == &other;
    }

private:
    arena *arena_;
};

/**
 * @brief A std::pmr::memory_resource over poolkit's size-class front end
 *        (poolkit/alloc.h): blocks of any size from pk_alloc's class pools,
 *        shared by the whole process, larger ones mapped alone.
 *
 * The std::pmr counterpart of std::pmr::new_delete_resource() on poolkit:
 * do_allocate is pk_alloc (pk_aligned_alloc for alignments over 16),
 * do_deallocate pk_free_sized with the block's size (pk_free for those),
 * so no block needs a lookup of its address. The resource holds no state:
 * a block may be freed through any alloc_resource, and the memory stays
 * with the front end's pools (pk_stats_print lists them as "pk_alloc
 * SIZE") for every other user of pk_alloc to reuse. instance() is one for
 * the whole program.
 *
 * @par Thread safety
 * Any thread, at once; a block may be freed on another thread than the one
 * that allocated it.
 */
class alloc_resource : public std::pmr::memory_resource {
public:
    /// A resource over the front end (stateless: costs nothing).
    alloc_resource() noexcept = default;

    /// One resource for the whole program (never destroyed).
    static alloc_resource *instance() noexcept {
        static alloc_resource r;
        return &r;
    }

protected:
    /// @p bytes aligned to @p align; throws std::bad_alloc when memory
    /// runs out (or @p align is no power of two).
    void *do_allocate(std::size_t bytes, std::size_t align) override {
        void *p = align <= 16 ? pk_alloc(class_bytes(bytes, align)) : pk_aligned_alloc(align, bytes);
        if (PK__CXX_UNLIKELY(!p)) detail::out_of_memory("pk::alloc_resource");
        return p;
    }
    /// Gives back @p p from do_allocate(@p bytes, @p align).
    void do_deallocate(void *p, std::size_t bytes, std::size_t align) override {
        if (align <= 16) pk_free_sized(p, class_bytes(bytes, align));
        else pk_free(p);
    }
    /// Equal only to itself (as the std::pmr resources; needs no RTTI).
    bool do_is_equal(const std::pmr::memory_resource &other) const noexcept override {
        return this == &other;
    }

private:
    /* The 8-byte class is aligned to 8: a smaller block aligned to 16 takes
     * the 16-byte class, both ways. */
    static std::size_t class_bytes(std::size_t bytes, std::size_t align) noexcept {
        return align > 8 && bytes < 16 ? 16 : bytes;
    }
};

/**
 * @brief A std::pmr::memory_resource over a heap of its own (heap.h):
 *        blocks of any size, freed one by one by the containers, and
 *        everything left freed at once by release() or the destructor.
 *
 * do_allocate is pk_heap_alloc (pk_heap_aligned_alloc where the alignment
 * asked is more than pk_alloc's block of that size has), do_deallocate
 * pk_heap_free. The heap is made with PK_HEAP_WHOLE: blocks left at the
 * destructor are freed, not reported, as std::pmr::monotonic_buffer_resource
 * frees its buffers. The heap's pools appear in the stats report under the
 * resource's name. Two heap_resources are equal only if they are the same
 * object. Not copyable or movable.
 *
 * @par Thread safety
 * allocate and deallocate from any thread at once; release() and the
 * destructor only while no other thread uses the resource or its blocks.
 *
 * @par Exceptions
 * The constructor and do_allocate throw std::bad_alloc when memory runs out.
 */
class heap_resource : public std::pmr::memory_resource {
public:
    /// A resource over a new heap named @p name (copied; nullptr: "pk_heap").
    explicit heap_resource(const char *name = "pk::heap_resource") : heap_(pk_heap_create_ex(name, PK_HEAP_WHOLE)) {
        if (PK__CXX_UNLIKELY(!heap_)) detail::out_of_memory("pk::heap_resource");
    }
    /// Frees every block left and the heap (pk_heap_destroy).
    ~heap_resource() override { pk_heap_destroy(heap_); }

    heap_resource(const heap_resource &) = delete;
    heap_resource &operator=(const heap_resource &) = delete;

    /// Frees every block at once; the resource stays usable (pk_heap_reset).
    void release() noexcept { pk_heap_reset(heap_); }

    /// The heap, for the C calls (pk_heap_stats_get, ...).
    pk_heap *heap() const noexcept { return heap_; }

protected:
    /// @p bytes aligned to @p align; throws std::bad_alloc when memory
    /// runs out (or @p align is no power of two).
    void *do_allocate(std::size_t bytes, std::size_t align) override {
        /* pk_alloc's blocks are aligned to 16, those of 8 bytes or less to 8 */
        bool natural = align <= 8 || (align <= 16 && bytes > 8);
        void *p = natural ? pk_heap_alloc(heap_, bytes) : pk_heap_aligned_alloc(heap_, align, bytes);
        if (PK__CXX_UNLIKELY(!p)) detail::out_of_memory("pk::heap_resource");
        return p;
    }
    /// Gives back @p p from do_allocate.
    void do_deallocate(void *p, std::size_t, std::size_t) override { pk_heap_free(heap_, p); }
    /// Equal only to itself.
    bool do_is_equal(const std::pmr::memory_resource &other) const noexcept override {
        return this == &other;
    }

private:
    pk_heap *heap_;
};

/* ======================================================================== */
/* ref and make_ref                                                         */
/* ======================================================================== */

/**
 * @brief An intrusive reference-counted pointer to a poolkit object (one
 *        made by pk::make_ref, or by pk_new in C).
 *
 * The count lives in the object's header (pk_retain / pk_release), so a
 * ref is one pointer, a raw pointer can be turned back into a ref at any
 * time, and C code, pk_autorelease and the autorelease pools all see the
 * same count. Copying retains, destroying releases; when the last reference
 * goes, the object's class dealloc runs (for make_ref: ~T) and its memory
 * goes back to its pool.
 *
 * A ref<Derived> converts implicitly to a ref<Base> and a ref<T> to a
 * ref<const T>, never the reverse (as std::shared_ptr). Refs compare equal
 * when they hold the same object, and std::hash<pk::ref<T>> hashes that
 * object, so refs key unordered containers.
 *
 * @par Thread safety
 * As std::shared_ptr: the count is atomic, so refs to one object may be
 * copied and destroyed on different threads at once; one ref object must
 * not be changed by one thread while another uses it.
 */
template <class T>
class ref {
public:
    using element_type = T; ///< The object's type.

    /// An empty ref.
    constexpr ref() noexcept = default;
    /// An empty ref.
    constexpr ref(std::nullptr_t) noexcept {}

    /**
     * @brief A ref that takes over one reference the caller owns (from
     *        pk_new, pk_retain or detach()); nullptr gives an empty ref.
     * @par Thread safety
     * Any thread.
     */
    static ref adopt(T *p) noexcept {
        ref r;
        r.p_ = p;
        return r;
    }

    /**
     * @brief A ref that adds a reference to @p p (a live poolkit object, or
     *        nullptr).
     * @par Thread safety
     * Any thread (atomic).
     * @par Errors
     * Retaining a deallocated object is reported through the error handler
     * (fatal).
     */
    static ref retain(T *p) noexcept {
        pk_retain(raw(p));
        return adopt(p);
    }

    /// Shares @p other's object (retains it).
    ref(const ref &other) noexcept : p_(other.p_) { pk_retain(raw(p_)); }
    /// Takes @p other's reference; @p other becomes empty.
    ref(ref &&other) noexcept : p_(std::exchange(other.p_, nullptr)) {}

    /**
     * @brief Shares the object of a ref to a type whose pointer converts
     *        implicitly to T * (a derived class, or T without const): a
     *        ref<Derived> is a ref<Base>, never the reverse.
     *
     * Both refs count on the one object. A polymorphic T finds the object
     * it is part of through its dynamic type (dynamic_cast<void *>; no RTTI
     * needed), so any public base will do. A non-polymorphic T must start
     * where the object starts (single inheritance, and U without a vtable
     * that T lacks).
     * @par Errors
     * A non-polymorphic T that does not start the object cannot be counted
     * on: that conversion prints one line on stderr and aborts.
     */
    template <class U, class = std::enable_if_t<std::is_convertible_v<U *, T *>>>
    ref(const ref<U> &other) noexcept : p_(convert(other.get())) {
        pk_retain(raw(p_));
    }
    /// Takes @p other's reference (see the converting copy); @p other
    /// becomes empty.
    template <class U, class = std::enable_if_t<std::is_convertible_v<U *, T *>>>
    ref(ref<U> &&other) noexcept : p_(convert(other.get())) {
        (void)other.detach();
    }
    /// Shares @p other's object, releasing the one held before.
    ref &operator=(const ref &other) noexcept {
        ref(other).swap(*this);
        return *this;
    }
    /// Takes @p other's reference, releasing the one held before.
    ref &operator=(ref &&other) noexcept {
        ref(std::move(other)).swap(*this);
        return *this;
    }
    /// Shares @p other's object (see the converting copy), releasing the
    /// one held before.
    template <class U, class = std::enable_if_t<std::is_convertible_v<U *, T *>>>
    ref &operator=(const ref<U> &other) noexcept {
        ref(other).swap(*this);
        return *this;
    }
    /// Takes @p other's reference (see the converting copy), releasing the
    /// one held before.
    template <class U, class = std::enable_if_t<std::is_convertible_v<U *, T *>>>
    ref &operator=(ref<U> &&other) noexcept {
        ref(std::move(other)).swap(*this);
        return *this;
    }
    /// Releases the object held before; the ref becomes empty.
    ref &operator=(std::nullptr_t) noexcept {
        reset();
        return *this;
    }

    /**
     * @brief Releases the reference: at zero the object's dealloc (~T) runs
     *        and its memory goes back, on this thread.
     * @par Errors
     * Releasing past zero is reported through the error handler (fatal).
     */
    ~ref() { pk_release(raw(p_)); }

    /// The object, or nullptr.
    T *get() const noexcept { return p_; }
    /// The object; the ref must not be empty.
    T &operator*() const noexcept { return *p_; }
    /// The object; the ref must not be empty.
    T *operator->() const noexcept { return p_; }
    /// True when the ref holds an object.
    explicit operator bool() const noexcept { return p_ != nullptr; }

    /// Releases the object (if any); the ref becomes empty.
    void reset() noexcept { ref().swap(*this); }

    /**
     * @brief Gives up the reference without releasing it; the ref becomes
     *        empty.
     * @return the object: the caller now owns that reference (pk_release or
     *         ref::adopt it later).
     */
    [[nodiscard]] T *detach() noexcept { return std::exchange(p_, nullptr); }

    /**
     * @brief Hands the reference to the calling thread's innermost
     *        autorelease pool (pk_autorelease); the ref becomes empty.
     * @return the object, which stays valid at least until that pool pops
     *         (see pk::autorelease_scope).
     * @par Thread safety
     * The pool is the calling thread's; with no pool pushed the reference
     * goes to the thread's implicit pool, released at thread exit.
     */
    T *autorelease() noexcept {
        T *p = detach();
        pk_autorelease(raw(p));
        return p;
    }

    /**
     * @brief The object's reference count (0 for an empty ref); a snapshot
     *        when other threads hold references.
     */
    std::size_t use_count() const noexcept { return p_ ? pk_refcount(raw(p_)) : 0; }

    /// Exchanges the objects of two refs; no count changes.
    void swap(ref &other) noexcept { std::swap(p_, other.p_); }

private:
    template <class U>
    friend class ref;

    /* The object p is part of: the pointer pk_new returned, which the C
     * calls take. A T that is a base at an offset in the object's type is
     * found through the vtable when T has one. */
    static void *raw(T *p) noexcept {
        if constexpr (std::is_polymorphic_v<T>)
            return const_cast<void *>(dynamic_cast<const volatile void *>(p));
        else
            return const_cast<void *>(static_cast<const volatile void *>(p));
    }

    /* @p p as a T *, checked to stay countable (see the converting copy);
     * for a base at offset 0 the check folds away. */
    template <class U>
    static T *convert(U *p) noexcept {
        T *t = p;
        if (PK__CXX_UNLIKELY(raw(t) != ref<U>::raw(p))) detail::bad_ref_conversion(PK__CXX_SIGNATURE);
        return t;
    }

    T *p_ = nullptr;
};

/// True when both refer to the same object.
template <class T, class U>
bool operator==(const ref<T> &a, const ref<U> &b) noexcept {
    return a.get() == b.get();
}
/// True when they refer to different objects.
template <class T, class U>
bool operator!=(const ref<T> &a, const ref<U> &b) noexcept {
    return a.get() != b.get();
}
/// True when the ref is empty.
template <class T>
bool operator==(const ref<T> &a, std::nullptr_t) noexcept {
    return !a;
}
/// True when the ref is empty.
template <class T>
bool operator==(std::nullptr_t, const ref<T> &a) noexcept {
    return !a;
}
/// True when the ref holds an object.
template <class T>
bool operator!=(const ref<T> &a, std::nullptr_t) noexcept {
    return static_cast<bool>(a);
}
/// True when the ref holds an object.
template <class T>
bool operator!=(std::nullptr_t, const ref<T> &a) noexcept {
    return static_cast<bool>(a);
}
/// Exchanges the objects of two refs.
template <class T>
void swap(ref<T> &a, ref<T> &b) noexcept {
    a.swap(b);
}

/**
 * @brief The pk_class that pk::make_ref gives objects of T: named after T,
 *        size sizeof(T), and a dealloc that runs ~T (none when T is
 *        trivially destructible).
 *
 * For pk_class_of comparisons and pk_class_pool. Made on first use
 * (thread-safe); lives until the program ends.
 */
template <class T>
const pk_class *class_of() noexcept {
    return detail::object_class<T>::get();
}

/**
 * @brief Constructs a T from @p args as a poolkit object (pk_new on
 *        pk::class_of<T>()) and returns the only reference to it.
 *
 * The memory comes from poolkit's object pools (16-byte aligned: alignof(T)
 * must be at most 16); the count starts at 1. When the last reference is
 * released, by a ref, pk_release or an autorelease pool, ~T runs and the
 * memory goes back. ~T must not throw.
 *
 * @par Thread safety
 * Any thread.
 * @throws std::bad_alloc when memory runs out; whatever T's constructor
 *         throws (the memory then goes back, and ~T does not run).
 */
template <class T, class... Args>
ref<T> make_ref(Args &&...args) {
    static_assert(std::is_object_v<T> && !std::is_array_v<T> && !std::is_const_v<T>,
                  "pk::make_ref<T>: T must be a non-const object type, not an array");
    static_assert(alignof(T) <= 16, "pk::make_ref<T>: poolkit objects are aligned to 16 bytes");
    static_assert(std::is_nothrow_destructible_v<T>, "pk::make_ref<T>: ~T must not throw");
    void *mem = pk_new(class_of<T>());
    if (PK__CXX_UNLIKELY(!mem)) detail::out_of_memory("pk::make_ref");
#if PK__CXX_EXCEPTIONS
    if constexpr (!std::is_nothrow_constructible_v<T, Args...>) {
        try {
            return ref<T>::adopt(detail::construct_at<T>(mem, std::forward<Args>(args)...));
        } catch (...) {
            if constexpr (!std::is_trivially_destructible_v<T>) {
                *static_cast<void **>(mem) = detail::unconstructed_objects;
                detail::unconstructed_objects = mem;
            }
            pk_release(mem);
            throw;
        }
    }
#endif
    return ref<T>::adopt(detail::construct_at<T>(mem, std::forward<Args>(args)...));
}

/* ======================================================================== */
/* autorelease_scope                                                        */
/* ======================================================================== */

/**
 * @brief Pushes an autorelease pool for the calling thread and pops it when
 *        the scope ends, releasing (newest first) everything autoreleased
 *        or deferred in it: `pk::autorelease_scope pool;`
 *
 * Scopes nest as blocks do. Popping a pool pops the pools pushed after it,
 * so an inner scope must end before an outer one (which blocks ensure);
 * drain() of an outer scope while an inner one is alive makes the inner
 * scope's pop a "bad autorelease token". Neither copyable nor movable.
 *
 * @par Thread safety
 * A scope belongs to the thread that made it and must end on that thread.
 */
class autorelease_scope {
public:
    /**
     * @brief Pushes a pool (pk_autorelease_push). O(1).
     * @par Errors
     * If no memory is left the pool is not pushed (errno ENOMEM): what is
     * autoreleased meanwhile goes to the enclosing pool, and the scope's
     * end does nothing.
     */
    autorelease_scope() noexcept : pool_(pk_autorelease_push()) {}

    /// Pops the pool and every pool pushed after it (pk_autorelease_pop).
    ~autorelease_scope() { pk_autorelease_pop(pool_); }

    autorelease_scope(const autorelease_scope &) = delete;
    autorelease_scope &operator=(const autorelease_scope &) = delete;

    /**
     * @brief Releases what was autoreleased in the scope so far and starts
     *        afresh (a pop and a push), e.g. once per turn of a loop.
     * @par Errors
     * As the constructor, for the new push.
     */
    void drain() noexcept {
        pk_autorelease_pop(pool_);
        pool_ = pk_autorelease_push();
    }

    /// The pool's token, for the C API.
    pk_autorelease_pool token() const noexcept { return pool_; }

private:
    pk_autorelease_pool pool_;
};

/**
 * @brief The process at a glance (pk_stats_get): pools, their live objects
 *        and memory, arenas, retained memory, this thread's autorelease
 *        stack. Thread-safe.
 */
inline pk_process_stats stats() noexcept {
    pk_process_stats s;
    pk_stats_get(&s);
    return s;
}

/**
 * @brief One pool's figures (pk_pool_stats_get): what pk::object_pool's
 *        stats() gives, for any pool of the C API.
 */
inline pk_pool_stats pool_stats(pk_pool *pool) noexcept {
    pk_pool_stats s;
    pk_pool_stats_get(pool, &s);
    return s;
}

} // namespace pk

namespace std {
/**
 * @brief Hashes a pk::ref by the object it holds, as std::hash of
 *        std::shared_ptr does: std::hash<T *> of get(). Refs that compare
 *        equal (same object) hash equal, so refs can key std::unordered_set
 *        and std::unordered_map; an empty ref hashes as nullptr.
 */
template <class T>
struct hash<pk::ref<T>> {
    /// The hash of @p r.get(). Never fails; any thread.
    std::size_t operator()(const pk::ref<T> &r) const noexcept { return std::hash<T *>()(r.get()); }
};
} // namespace std

#endif
