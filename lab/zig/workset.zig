//! workset: working sets at realistic scale (lab/exp_workset.c; the loop is
//! lab/workset.h's, written again here in Zig, as PROTOCOL.md spells it out).
//!
//! One phase: allocate N objects, writing one word at the start of each (the
//! touch) and passing it through the escape barrier, then free all N:
//!   LIFO    objects go to objs[0..N); freed objs[N-1] down to objs[0]
//!   FIFO    objects go to objs[0..N); freed objs[0] up to objs[N-1]
//!   random  the i-th object goes to objs[perm[i]]; freed objs[0] up to objs[N-1]
//! perm: the lab's permutation of 0..N-1 (shared_permutation in lab/shared.h:
//! SplitMix64 from seed 0x5eed, Fisher-Yates from the top, j = next() % (i+1)),
//! so that both programs free in the same order.
//!
//! A measurement, with a fresh allocator: the code warm-up (64 objects, one
//! timed phase, not recorded), then one untimed first phase, then timed phases
//! until about `pairsFor(scale)` pairs have been timed or `capFor(scale)` has
//! passed (at least one phase). The --warmup passes run the small N only
//! (up to 16,000). Minor page faults (getrusage ru_minflt) are
//! counted over the first phase and over the timed ones (per phase). Runs in
//! this process (no peak RSS figure). Unit: ns per allocate+free pair, gross.
//! Subjects: Zig MemoryPool and the empty harness.

const std = @import("std");
const subjects = @import("subjects.zig");
const rng_mod = @import("rng.zig");
const common = @import("common.zig");

const Kind = subjects.Kind;
const Ptr = subjects.Ptr;

pub const name = "workset";
pub const unit = "ns/pair";

pub const Order = enum {
    lifo,
    fifo,
    random,

    pub fn label(o: Order) []const u8 {
        return switch (o) {
            .lifo => "LIFO",
            .fifo => "FIFO",
            .random => "random",
        };
    }
};
pub const orders = [_]Order{ .lifo, .fifo, .random };
pub const kinds = [_]Kind{ .pool, .empty };

/// The sizes compiled in; the scale picks among them (sizesFor).
pub const all_sizes = [_]usize{ 16, 48, 256 };

pub fn sizesFor(scale: common.Scale) []const usize {
    return if (scale == .full) all_sizes[0..] else all_sizes[1..2];
}

pub fn countsFor(scale: common.Scale) []const usize {
    return switch (scale) {
        .smoke => &.{ 1000, 16000 },
        .quick => &.{ 1000, 16000, 1000000 },
        .default => &.{ 1000, 4000, 16000, 64000, 256000, 1000000 },
        .full => &.{ 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 512000, 1000000 },
    };
}

/// Pairs timed per measurement, and the cap on the timed part.
pub fn pairsFor(scale: common.Scale) usize {
    return switch (scale) {
        .smoke => 20_000,
        .quick => 200_000,
        .default => 500_000,
        .full => 2_000_000,
    };
}

pub fn capFor(scale: common.Scale) u64 {
    const ms: u64 = switch (scale) {
        .smoke => 20,
        .quick => 50,
        .default => 100,
        .full => 500,
    };
    return ms * std.time.ns_per_ms;
}

const warm_n = 64;
const perm_seed: u64 = 0x5eed;

/// shared_permutation (lab/shared.h): a permutation of 0..n-1.
pub fn permutation(out: []u32) void {
    for (out, 0..) |*p, i| p.* = @intCast(i);
    var r = rng_mod.Rng.init(perm_seed);
    var i: usize = out.len;
    while (i > 1) {
        i -= 1;
        const j: usize = @intCast(r.next() % @as(u64, i + 1));
        std.mem.swap(u32, &out[i], &out[j]);
    }
}

fn minflt() i64 {
    return @intCast(std.posix.getrusage(std.posix.rusage.SELF).minflt);
}

noinline fn phase(comptime S: type, s: *S, n: usize, order: Order, perm: []const u32, objs: []Ptr) !void {
    if (order == .random) {
        for (0..n) |i| {
            const p = try s.create();
            @as(*align(1) usize, @ptrCast(p)).* = i; // the touch: one word
            std.mem.doNotOptimizeAway(p);
            objs[perm[i]] = p;
        }
    } else {
        for (0..n) |i| {
            const p = try s.create();
            @as(*align(1) usize, @ptrCast(p)).* = i;
            std.mem.doNotOptimizeAway(p);
            objs[i] = p;
        }
    }
    if (order == .lifo) {
        var i = n;
        while (i > 0) {
            i -= 1;
            s.destroy(objs[i]);
        }
    } else {
        for (objs[0..n]) |p| s.destroy(p);
    }
    s.batchEnd();
}

const Result = struct {
    ns: u64 = 0,
    phases: usize = 0,
    faults_first: i64 = 0,
    faults_repeat: i64 = 0,
};

/// workset.h's WORKSET_RUN: the first phase untimed, then timed phases.
fn measure(comptime S: type, s: *S, n: usize, order: Order, perm: []const u32, objs: []Ptr, max_phases: usize, cap_ns: u64) !Result {
    var timer = try std.time.Timer.start();
    const f0 = minflt();
    try phase(S, s, n, order, perm, objs);
    const f1 = minflt();
    timer.reset();
    var done: usize = 0;
    var ns: u64 = 0;
    while (true) {
        try phase(S, s, n, order, perm, objs);
        done += 1;
        ns = timer.read();
        if (done >= max_phases or ns > cap_ns) break;
    }
    const f2 = minflt();
    return .{ .ns = ns, .phases = done, .faults_first = f1 - f0, .faults_repeat = f2 - f1 };
}

fn once(comptime bytes: usize, comptime k: Kind, n: usize, order: Order, perm: []const u32, objs: []Ptr, max_phases: usize, cap_ns: u64) !Result {
    const S = subjects.For(bytes, true).Of(k);
    var s = S.init();
    defer s.deinit();
    var warm_perm: [warm_n]u32 = undefined;
    for (&warm_perm, 0..) |*p, i| p.* = @intCast(warm_n - 1 - i);
    _ = try measure(S, &s, warm_n, order, &warm_perm, objs, 1, cap_ns); // code warm-up
    return measure(S, &s, n, order, perm, objs, max_phases, cap_ns);
}

fn dispatch(bytes: usize, k: Kind, n: usize, order: Order, perm: []const u32, objs: []Ptr, max_phases: usize, cap_ns: u64) !Result {
    inline for (all_sizes) |b| {
        if (b == bytes) {
            inline for (kinds) |kk| {
                if (kk == k) return once(b, kk, n, order, perm, objs, max_phases, cap_ns);
            }
        }
    }
    unreachable;
}

pub fn list(out: anytype) !void {
    for (kinds) |k| try out.print("{s}\t{s}\n", .{ name, k.subject() });
}

const Row = struct {
    samples: std.ArrayListUnmanaged(f64) = .{},
    faults_first: i64 = 0,
    faults_repeat: f64 = 0,
    pairs: usize = std.math.maxInt(usize),
    why: ?[]const u8 = null,
};

pub fn run(gpa: std.mem.Allocator, out: anytype, scale: common.Scale, reps: usize, warmup: usize) !u8 {
    const szs = sizesFor(scale);
    const ns_ = countsFor(scale);
    const max_n = ns_[ns_.len - 1];
    const objs = try gpa.alloc(Ptr, max_n);
    defer gpa.free(objs);
    const perms = try gpa.alloc([]u32, ns_.len);
    defer gpa.free(perms);
    for (ns_, 0..) |n, i| {
        perms[i] = try gpa.alloc(u32, n);
        permutation(perms[i]);
    }
    defer for (perms) |p| gpa.free(p);

    const nrows = szs.len * ns_.len * orders.len * kinds.len;
    const rows = try gpa.alloc(Row, nrows);
    defer gpa.free(rows);
    for (rows) |*r| r.* = .{};

    const pairs = pairsFor(scale);
    const cap = capFor(scale);
    var pass: usize = 0;
    while (pass < warmup + reps) : (pass += 1) {
        const warming = pass < warmup;
        var idx: usize = 0;
        for (szs) |bytes| for (ns_, 0..) |n, ni| for (orders) |order| for (kinds) |k| {
            const row = &rows[idx];
            idx += 1;
            if (row.why != null) continue;
            if (warming and n > 16000) continue; // the warm-up: the small N only
            const want = if (warming) @max(pairs / 4, 1) else pairs;
            const max_phases = @max(want / n, 1);
            const r = dispatch(bytes, k, n, order, perms[ni], objs, max_phases, cap) catch |e| {
                row.why = @errorName(e);
                continue;
            };
            if (warming) continue;
            const timed = r.phases * n;
            try row.samples.append(gpa, @as(f64, @floatFromInt(r.ns)) / @as(f64, @floatFromInt(timed)));
            row.faults_first = @max(row.faults_first, r.faults_first);
            row.faults_repeat = @max(row.faults_repeat, @as(f64, @floatFromInt(r.faults_repeat)) / @as(f64, @floatFromInt(r.phases)));
            row.pairs = @min(row.pairs, timed);
        };
    }

    var idx: usize = 0;
    for (szs) |bytes| for (ns_) |n| for (orders) |order| for (kinds) |k| {
        const row = &rows[idx];
        idx += 1;
        var params_buf: [96]u8 = undefined;
        const params = try std.fmt.bufPrint(&params_buf, "{{\"order\":\"{s}\",\"n\":{d},\"size\":{d}}}", .{ order.label(), n, bytes });
        if (row.why) |why| {
            std.debug.print("pk-lab-zig: {s} {s} {d} {d}: {s}: error {s}\n", .{ name, order.label(), n, bytes, k.subject(), why });
            try common.writeUnavailable(out, name, k.subject(), params, why);
        } else {
            var extra_buf: [160]u8 = undefined;
            const extra = try std.fmt.bufPrint(&extra_buf, "{{\"faults_first\":{d},\"faults_repeat\":{d:.3},\"pairs\":{d},\"frees_each\":1}}", .{ row.faults_first, row.faults_repeat, row.pairs });
            try common.writeRow(out, name, k.subject(), unit, params, row.samples.items, k.detail(true), extra);
        }
    };
    for (rows) |*r| r.samples.deinit(gpa);
    return 0;
}

test "the permutation is shared_permutation's (seed 0x5eed)" {
    var p: [10]u32 = undefined;
    permutation(&p);
    try std.testing.expectEqualSlices(u32, &.{ 9, 1, 8, 6, 0, 7, 4, 3, 5, 2 }, &p);
    var q: [1000]u32 = undefined;
    permutation(&q);
    try std.testing.expectEqualSlices(u32, &.{ 61, 900, 744, 838, 966, 605 }, q[0..6]);
}

test "every subject, order and size runs, and a pool faults nothing once warm" {
    var objs: [4096]Ptr = undefined;
    var perm: [4096]u32 = undefined;
    permutation(&perm);
    inline for (all_sizes) |bytes| {
        inline for (kinds) |k| {
            for (orders) |o| {
                const r = try once(bytes, k, 4096, o, &perm, &objs, 3, std.time.ns_per_s);
                try std.testing.expectEqual(@as(usize, 3), r.phases);
                if (k == .pool) try std.testing.expectEqual(@as(i64, 0), r.faults_repeat);
            }
        }
    }
}
