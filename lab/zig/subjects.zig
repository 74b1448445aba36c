//! The contenders: Zig's allocators behind one small interface that the
//! experiment loops call, instantiated per object size at compile time.
//!
//! Every subject has
//!   init() -> Self, deinit(*Self),
//!   create(*Self) !Ptr      allocate one object of `n` bytes,
//!   destroy(*Self, Ptr)     give it back (what that means is per subject),
//!   batchEnd(*Self)         end of one batch of the peers batch loop.
//! Objects travel as `[*]u8` so that the loops are the same for all of them.

const std = @import("std");
const builtin = @import("builtin");

pub const Ptr = [*]u8;

/// Which allocator. The order is the order of the result lines.
pub const Kind = enum {
    empty,
    gpa,
    arena,
    pool,
    smp,
    c,

    pub fn subject(k: Kind) []const u8 {
        return switch (k) {
            .empty => "Zig empty harness",
            .gpa => "Zig GeneralPurposeAllocator",
            .arena => "Zig ArenaAllocator",
            .pool => "Zig MemoryPool",
            .smp => "Zig SmpAllocator",
            .c => "Zig c_allocator",
        };
    }

    /// What exactly ran, for the `flags` field (after the build flags).
    pub fn detail(k: Kind, comptime arena_frees: bool) []const u8 {
        return switch (k) {
            .empty => "no allocation: same random numbers, list operations and touches",
            .gpa => "std.heap.DebugAllocator(.{}) (GeneralPurposeAllocator is its alias), " ++
                "default config (safety off in ReleaseFast, thread_safe), over page_allocator",
            .arena => if (arena_frees)
                "std.heap.ArenaAllocator over page_allocator; free() called (reclaims only " ++
                    "the latest allocation), reset(.retain_capacity) after each batch"
            else
                "std.heap.ArenaAllocator over page_allocator; frees are no-ops (never called)",
            .pool => "std.heap.MemoryPool([N]u8), one pool per object size, over page_allocator",
            .smp => "std.heap.smp_allocator",
            .c => "std.heap.c_allocator (posix_memalign/free of the system libc), linked with -lc",
        };
    }

    /// Whether this build can run it (c_allocator needs libc linked in).
    pub fn available(k: Kind) bool {
        return switch (k) {
            .c => builtin.link_libc,
            else => true,
        };
    }
};

/// A small static target for the empty harness: it "allocates" this buffer
/// every time and touches its first byte, like the others touch theirs.
var empty_target: [64]u8 align(64) = undefined;

/// The subject types for objects of `n` bytes.
/// `arena_frees`: whether ArenaAllocator's free() is called on destroy.
pub fn For(comptime n: usize, comptime arena_frees: bool) type {
    const Item = [n]u8;
    return struct {
        pub const Empty = struct {
            const Self = @This();
            pub fn init() Self {
                return .{};
            }
            pub fn deinit(_: *Self) void {}
            pub inline fn create(_: *Self) !Ptr {
                return @ptrCast(&empty_target);
            }
            pub inline fn destroy(_: *Self, p: Ptr) void {
                std.mem.doNotOptimizeAway(p);
            }
            pub inline fn batchEnd(_: *Self) void {}
        };

        pub const Gpa = struct {
            const Self = @This();
            gpa: std.heap.DebugAllocator(.{}),
            pub fn init() Self {
                return .{ .gpa = .init };
            }
            pub fn deinit(self: *Self) void {
                _ = self.gpa.deinit();
            }
            pub inline fn create(self: *Self) !Ptr {
                const p = try self.gpa.allocator().create(Item);
                return @ptrCast(p);
            }
            pub inline fn destroy(self: *Self, p: Ptr) void {
                self.gpa.allocator().destroy(@as(*Item, @ptrCast(p)));
            }
            pub inline fn batchEnd(_: *Self) void {}
        };

        pub const Arena = struct {
            const Self = @This();
            arena: std.heap.ArenaAllocator,
            pub fn init() Self {
                return .{ .arena = std.heap.ArenaAllocator.init(std.heap.page_allocator) };
            }
            pub fn deinit(self: *Self) void {
                self.arena.deinit();
            }
            pub inline fn create(self: *Self) !Ptr {
                const p = try self.arena.allocator().create(Item);
                return @ptrCast(p);
            }
            pub inline fn destroy(self: *Self, p: Ptr) void {
                if (arena_frees) {
                    self.arena.allocator().destroy(@as(*Item, @ptrCast(p)));
                } else {
                    std.mem.doNotOptimizeAway(p);
                }
            }
            pub inline fn batchEnd(self: *Self) void {
                _ = self.arena.reset(.retain_capacity);
            }
        };

        pub const Pool = struct {
            const Self = @This();
            const P = std.heap.MemoryPool(Item);
            pool: P,
            pub fn init() Self {
                return .{ .pool = P.init(std.heap.page_allocator) };
            }
            pub fn deinit(self: *Self) void {
                self.pool.deinit();
            }
            pub inline fn create(self: *Self) !Ptr {
                const p = try self.pool.create();
                return @ptrCast(p);
            }
            pub inline fn destroy(self: *Self, p: Ptr) void {
                self.pool.destroy(@alignCast(@ptrCast(p)));
            }
            pub inline fn batchEnd(_: *Self) void {}
        };

        pub const Smp = struct {
            const Self = @This();
            pub fn init() Self {
                return .{};
            }
            pub fn deinit(_: *Self) void {}
            pub inline fn create(_: *Self) !Ptr {
                const p = try std.heap.smp_allocator.create(Item);
                return @ptrCast(p);
            }
            pub inline fn destroy(_: *Self, p: Ptr) void {
                std.heap.smp_allocator.destroy(@as(*Item, @ptrCast(p)));
            }
            pub inline fn batchEnd(_: *Self) void {}
        };

        /// Only referenced when libc is linked (see Kind.available).
        pub const C = struct {
            const Self = @This();
            pub fn init() Self {
                return .{};
            }
            pub fn deinit(_: *Self) void {}
            pub inline fn create(_: *Self) !Ptr {
                const p = try std.heap.c_allocator.create(Item);
                return @ptrCast(p);
            }
            pub inline fn destroy(_: *Self, p: Ptr) void {
                std.heap.c_allocator.destroy(@as(*Item, @ptrCast(p)));
            }
            pub inline fn batchEnd(_: *Self) void {}
        };

        /// The subject type of a kind.
        pub fn Of(comptime k: Kind) type {
            return switch (k) {
                .empty => Empty,
                .gpa => Gpa,
                .arena => Arena,
                .pool => Pool,
                .smp => Smp,
                .c => C,
            };
        }
    };
}
