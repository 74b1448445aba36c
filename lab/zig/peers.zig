//! peers: the hot loop and the batch loop (LAB.md, "Beyond the studies").
//!
//! hot:   allocate one object, touch its first byte, free it; `ops` times.
//! batch: allocate N = 1000 objects (touching each), free them in a fixed
//!        random order (one permutation of 0..N-1, drawn once from the lab's
//!        generator with seed 42 by Fisher-Yates), end the batch (ArenaAllocator:
//!        reset(.retain_capacity)); ops / N times.
//! Unit: ns per allocate+free pair. Sizes 16, 64, 256, 1024, 4096 bytes.
//!
//! Runs in this process: warm-up first (each loop, size and subject once per
//! --warmup, a quarter of the operations), then the repetitions, interleaved
//! (every subject of a size, then the next size). Every run gets a fresh
//! allocator; only the loop is timed. A run stops early when it passes a time
//! cap (capFor); `extra.ops` says how many operations the figure rests on
//! (the fewest over the repetitions of this invocation).

const std = @import("std");
const subjects = @import("subjects.zig");
const rng_mod = @import("rng.zig");
const common = @import("common.zig");

const Kind = subjects.Kind;
const Ptr = subjects.Ptr;

pub const name = "peers";
pub const unit = "ns/op";

pub const sizes = [_]usize{ 16, 64, 256, 1024, 4096 };
pub const kinds = [_]Kind{ .pool, .arena, .gpa, .smp, .c, .empty };
pub const Loop = enum { hot, batch };
pub const batch_n = 1000;

/// Allocate+free pairs per (loop, size, subject) run...
pub fn opsFor(scale: common.Scale) usize {
    return switch (scale) {
        .full => 10_000_000,
        .default => 2_000_000,
        .quick => 500_000,
        .smoke => 20_000,
    };
}

/// ...unless the run takes longer than this: then it stops early and reports
/// the operations it did (`ops` in extra). Some subjects map and unmap memory
/// on every operation (the general-purpose allocator's hot loop gives its
/// page back each time), and would otherwise take minutes.
pub fn capFor(scale: common.Scale) u64 {
    const ms: u64 = switch (scale) {
        .full => 2000,
        .default => 300,
        .quick => 100,
        .smoke => 20,
    };
    return ms * std.time.ns_per_ms;
}

var perm: [batch_n]u16 = undefined;
var batch_ptrs: [batch_n]Ptr = undefined;

fn makePerm() void {
    for (&perm, 0..) |*p, i| p.* = @intCast(i);
    var rng = rng_mod.Rng.init(rng_mod.seed);
    var i: usize = batch_n - 1;
    while (i > 0) : (i -= 1) {
        const j = rng.below(i + 1);
        std.mem.swap(u16, &perm[i], &perm[j]);
    }
}

/// Allocate+free pairs, `ops` of them or as many as fit in `cap_ns`
/// (checked every 1024 operations); returns how many were done.
noinline fn hotKernel(comptime S: type, s: *S, ops: usize, timer: *std.time.Timer, cap_ns: u64) !usize {
    var i: usize = 0;
    while (i < ops) {
        const end = @min(i + 1024, ops);
        while (i < end) : (i += 1) {
            const p = try s.create();
            p[0] = @truncate(i);
            std.mem.doNotOptimizeAway(p);
            s.destroy(p);
        }
        if (timer.read() > cap_ns) break;
    }
    return i;
}

/// `batches` batches, or as many as fit in `cap_ns`; returns how many.
noinline fn batchKernel(comptime S: type, s: *S, batches: usize, timer: *std.time.Timer, cap_ns: u64) !usize {
    var b: usize = 0;
    while (b < batches) {
        for (&batch_ptrs, 0..) |*slot, k| {
            const p = try s.create();
            p[0] = @truncate(k);
            std.mem.doNotOptimizeAway(p);
            slot.* = p;
        }
        for (perm) |k| s.destroy(batch_ptrs[k]);
        s.batchEnd();
        b += 1;
        if (timer.read() > cap_ns) break;
    }
    return b;
}

const Result = struct { ns_per_op: f64, ops: usize };

/// One run with a fresh allocator: ns per allocate+free pair.
fn once(comptime bytes: usize, comptime k: Kind, loop: Loop, ops: usize, cap_ns: u64) !Result {
    const S = subjects.For(bytes, true).Of(k);
    var s = S.init();
    defer s.deinit();
    var timer = try std.time.Timer.start();
    const done = switch (loop) {
        .hot => try hotKernel(S, &s, ops, &timer, cap_ns),
        .batch => batch_n * try batchKernel(S, &s, @max(ops / batch_n, 1), &timer, cap_ns),
    };
    const ns = timer.read();
    return .{ .ns_per_op = @as(f64, @floatFromInt(ns)) / @as(f64, @floatFromInt(done)), .ops = done };
}

fn dispatch(size_index: usize, k: Kind, loop: Loop, ops: usize, cap_ns: u64) !Result {
    inline for (sizes, 0..) |bytes, si| {
        if (si == size_index) {
            inline for (kinds) |kk| {
                if (comptime kk.available()) {
                    if (kk == k) return once(bytes, kk, loop, ops, cap_ns);
                }
            }
        }
    }
    unreachable;
}

pub fn list(out: anytype) !void {
    for (kinds) |k| {
        if (k.available()) try out.print("{s}\t{s}\n", .{ name, k.subject() });
    }
}

const Row = struct {
    samples: std.ArrayListUnmanaged(f64) = .{},
    min_ops: usize = std.math.maxInt(usize),
    why: ?[]const u8 = null,
};

pub fn run(gpa: std.mem.Allocator, out: anytype, scale: common.Scale, reps: usize, warmup: usize) !u8 {
    makePerm();
    const ops = opsFor(scale);
    const cap = capFor(scale);
    const loops = [_]Loop{ .hot, .batch };
    var rows: [loops.len][sizes.len][kinds.len]Row = undefined;
    for (&rows) |*a| for (a) |*b| for (b) |*r| {
        r.* = .{};
    };

    var w: usize = 0;
    while (w < warmup) : (w += 1) {
        for (loops, 0..) |loop, li| for (sizes, 0..) |_, si| for (kinds, 0..) |k, ki| {
            if (!k.available() or rows[li][si][ki].why != null) continue;
            _ = dispatch(si, k, loop, @max(ops / 4, batch_n), cap / 4) catch |e| {
                rows[li][si][ki].why = @errorName(e);
            };
        };
    }
    var rep: usize = 0;
    while (rep < reps) : (rep += 1) {
        for (loops, 0..) |loop, li| for (sizes, 0..) |_, si| for (kinds, 0..) |k, ki| {
            const row = &rows[li][si][ki];
            if (!k.available() or row.why != null) continue;
            const r = dispatch(si, k, loop, ops, cap) catch |e| {
                row.why = @errorName(e);
                continue;
            };
            try row.samples.append(gpa, r.ns_per_op);
            row.min_ops = @min(row.min_ops, r.ops);
        };
    }

    for (loops, 0..) |loop, li| for (sizes, 0..) |bytes, si| {
        var params_buf: [64]u8 = undefined;
        const params = try std.fmt.bufPrint(&params_buf, "{{\"loop\":\"{s}\",\"size\":{d}}}", .{ @tagName(loop), bytes });
        for (kinds, 0..) |k, ki| {
            const row = &rows[li][si][ki];
            if (!k.available()) {
                try common.writeUnavailable(out, name, k.subject(), params, "pk-lab-zig was built without libc (build.sh could not link -lc)");
            } else if (row.why) |why| {
                std.debug.print("pk-lab-zig: {s} {s} {d}: {s}: error {s}\n", .{ name, @tagName(loop), bytes, k.subject(), why });
                try common.writeUnavailable(out, name, k.subject(), params, why);
            } else {
                var extra_buf: [96]u8 = undefined;
                const extra = switch (loop) {
                    .hot => try std.fmt.bufPrint(&extra_buf, "{{\"ops\":{d}}}", .{row.min_ops}),
                    .batch => try std.fmt.bufPrint(&extra_buf, "{{\"ops\":{d},\"batch\":{d}}}", .{ row.min_ops, batch_n }),
                };
                try common.writeRow(out, name, k.subject(), unit, params, row.samples.items, k.detail(true), extra);
            }
        }
    };
    for (&rows) |*a| for (a) |*b| for (b) |*r| r.samples.deinit(gpa);
    return 0;
}

test "batch free order, seed 42 (README.md)" {
    makePerm();
    try std.testing.expectEqualSlices(u16, &.{ 779, 365, 703, 482, 951, 563, 394, 172 }, perm[0..8]);
    try std.testing.expectEqualSlices(u16, &.{ 37, 343, 278, 159, 741 }, perm[995..]);
}

test "every subject, size and loop runs" {
    makePerm();
    inline for (sizes) |bytes| {
        inline for (kinds) |k| {
            if (comptime k.available()) {
                const h = try once(bytes, k, .hot, 5_000, std.time.ns_per_s);
                try std.testing.expectEqual(@as(usize, 5_000), h.ops);
                const b = try once(bytes, k, .batch, 3 * batch_n, std.time.ns_per_s);
                try std.testing.expectEqual(@as(usize, 3 * batch_n), b.ops);
            }
        }
    }
}
