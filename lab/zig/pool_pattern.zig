//! pool-pattern: the typed memory pool benchmark (Zig, 2023; LAB.md section 5).
//!
//! Keep a list `open`; each round, fill = len(open) / 256; if random() <= fill
//! (and open is not empty), free a random element of open (the last element
//! moves into its slot); if random() >= fill, allocate one object, touch it
//! (write its first byte) and append it. Both random() draws happen every
//! round; the index draw only when an element is freed. README.md has the
//! exact generator and the expected counts.
//!
//! Each (pass, size, subject) runs in a forked child process with a fresh
//! allocator: first --warmup untimed passes over every size and subject, then
//! --reps timed passes, interleaved (A B C D E, A B C D E, ...). The child's
//! peak RSS growth (VmHWM at the end minus VmRSS at its start, from
//! /proc/self/status) is then its own, not left over from another subject.
//! Only the loop is timed (not creating or tearing down the allocator).

const std = @import("std");
const subjects = @import("subjects.zig");
const rng_mod = @import("rng.zig");
const common = @import("common.zig");

const Kind = subjects.Kind;
const Ptr = subjects.Ptr;
const Rng = rng_mod.Rng;

pub const name = "pool-pattern";
pub const unit = "ns/round";

pub const Size = struct {
    name: []const u8,
    bytes: usize,
    rounds_full: usize,
};

pub const sizes = [_]Size{
    .{ .name = "small", .bytes = 1, .rounds_full = 2_500_000 },
    .{ .name = "medium", .bytes = 8 * 1024, .rounds_full = 1_000_000 },
    // ten times the study's rounds, as the C side's (lab/exp_pool_pattern.c)
    .{ .name = "big", .bytes = 1024 * 1024, .rounds_full = 250_000 },
};

/// The subjects of this experiment, in the order of the result lines.
pub const kinds = [_]Kind{ .gpa, .arena, .pool, .smp, .empty };

/// len(open) never exceeds 256: at 256, fill = 1, so every round frees and
/// none allocates.
const open_max = 512;

const Counts = struct {
    ns: u64 = 0,
    allocs: u64 = 0,
    peak_live: u64 = 0,
};

/// The pattern itself; `open` holds the live objects afterwards (`len` of them).
noinline fn kernel(comptime S: type, s: *S, rounds: usize, open: *[open_max]Ptr, len_out: *usize) !Counts {
    var len: usize = 0;
    var peak: usize = 0;
    var allocs: usize = 0;
    var rng = Rng.init(rng_mod.seed);
    var timer = try std.time.Timer.start();
    var r: usize = 0;
    while (r < rounds) : (r += 1) {
        const fill = @as(f64, @floatFromInt(len)) / 256.0;
        if (rng.unit() <= fill and len != 0) {
            const i = rng.below(len);
            const p = open[i];
            len -= 1;
            open[i] = open[len];
            std.mem.doNotOptimizeAway(p);
            s.destroy(p);
        }
        if (rng.unit() >= fill) {
            const p = try s.create();
            p[0] = @truncate(r); // touch the new object
            std.mem.doNotOptimizeAway(p);
            open[len] = p;
            len += 1;
            allocs += 1;
            if (len > peak) peak = len;
        }
    }
    const ns = timer.read();
    len_out.* = len;
    return .{ .ns = ns, .allocs = allocs, .peak_live = peak };
}

/// One run with a fresh allocator; frees what is left outside the timing.
fn once(comptime S: type, rounds: usize) !Counts {
    var s = S.init();
    defer s.deinit();
    var open: [open_max]Ptr = undefined;
    var len: usize = 0;
    const c = try kernel(S, &s, rounds, &open, &len);
    for (open[0..len]) |p| s.destroy(p);
    return c;
}

/// What a child process sends back through its pipe.
const Report = extern struct {
    status: u32 = 0, // 0 ok, 1 out of memory, 2 other error
    err_code: u32 = 0,
    ns: u64 = 0,
    allocs: u64 = 0,
    peak_live: u64 = 0,
    peak_rss_kb: i64 = -1,
};

fn childWork(comptime bytes: usize, comptime k: Kind, rounds: usize) Report {
    const S = subjects.For(bytes, false).Of(k);
    const rss0 = common.statusKb("VmRSS:");
    const c = once(S, rounds) catch |e| return failed(e);
    const hwm = common.statusKb("VmHWM:");
    return .{
        .ns = c.ns,
        .allocs = c.allocs,
        .peak_live = c.peak_live,
        .peak_rss_kb = if (rss0 >= 0 and hwm >= 0) hwm - rss0 else -1,
    };
}

fn failed(e: anyerror) Report {
    return .{
        .status = if (e == error.OutOfMemory) 1 else 2,
        .err_code = @intFromError(e),
    };
}

fn dispatch(size_index: usize, k: Kind, rounds: usize) Report {
    inline for (sizes, 0..) |sz, si| {
        if (si == size_index) {
            inline for (kinds) |kk| {
                if (kk == k) return childWork(sz.bytes, kk, rounds);
            }
        }
    }
    unreachable;
}

const Outcome = union(enum) {
    ok: Report,
    failed: []const u8, // why, for the result line
};

/// Runs one (size, subject) in a forked child and collects its report.
fn inChild(size_index: usize, k: Kind, rounds: usize, why_buf: []u8) Outcome {
    const fds = std.posix.pipe() catch |e|
        return .{ .failed = std.fmt.bufPrint(why_buf, "pipe failed: {s}", .{@errorName(e)}) catch "pipe failed" };
    const pid = std.posix.fork() catch |e| {
        std.posix.close(fds[0]);
        std.posix.close(fds[1]);
        return .{ .failed = std.fmt.bufPrint(why_buf, "fork failed: {s}", .{@errorName(e)}) catch "fork failed" };
    };
    if (pid == 0) {
        std.posix.close(fds[0]);
        const rep = dispatch(size_index, k, rounds);
        const bytes = std.mem.asBytes(&rep);
        var off: usize = 0;
        while (off < bytes.len) {
            const n = std.posix.write(fds[1], bytes[off..]) catch std.posix.exit(3);
            off += n;
        }
        std.posix.exit(0);
    }
    std.posix.close(fds[1]);
    var rep: Report = .{};
    const buf = std.mem.asBytes(&rep);
    var got: usize = 0;
    while (got < buf.len) {
        const n = std.posix.read(fds[0], buf[got..]) catch break;
        if (n == 0) break;
        got += n;
    }
    std.posix.close(fds[0]);
    const st = std.posix.waitpid(pid, 0).status;
    if (got != buf.len or !std.posix.W.IFEXITED(st) or std.posix.W.EXITSTATUS(st) != 0) {
        if (std.posix.W.IFSIGNALED(st)) {
            const sig = std.posix.W.TERMSIG(st);
            return .{ .failed = std.fmt.bufPrint(why_buf, "child process killed by signal {d}{s}", .{ sig, if (sig == 9) " (out of memory?)" else "" }) catch "child killed" };
        }
        return .{ .failed = std.fmt.bufPrint(why_buf, "child process failed (exit status {d})", .{std.posix.W.EXITSTATUS(st)}) catch "child failed" };
    }
    switch (rep.status) {
        0 => return .{ .ok = rep },
        1 => return .{ .failed = std.fmt.bufPrint(why_buf, "out of memory in {d} rounds: the system refused more address space{s}", .{
            rounds,
            if (k == .arena) " (ArenaAllocator keeps every object until the end)" else "",
        }) catch "out of memory" },
        else => {
            const e = @errorFromInt(@as(std.meta.Int(.unsigned, @bitSizeOf(anyerror)), @intCast(rep.err_code)));
            return .{ .failed = std.fmt.bufPrint(why_buf, "error: {s}", .{@errorName(e)}) catch "error" };
        },
    }
}

pub fn roundsFor(sz: Size, scale: common.Scale) usize {
    return @max(sz.rounds_full / scale.divisor(), 1);
}

pub fn list(out: anytype) !void {
    for (kinds) |k| {
        if (k.available()) try out.print("{s}\t{s}\n", .{ name, k.subject() });
    }
}

const Row = struct {
    samples: std.ArrayListUnmanaged(f64) = .{},
    allocs: u64 = 0,
    peak_live: u64 = 0,
    peak_rss_kb: i64 = -1,
    why: ?[]const u8 = null,
};

/// Runs the experiment and prints its result lines. Returns the exit status.
pub fn run(gpa: std.mem.Allocator, out: anytype, scale: common.Scale, reps: usize, warmup: usize) !u8 {
    var rows: [sizes.len][kinds.len]Row = undefined;
    for (&rows) |*rs| for (rs) |*r| {
        r.* = .{};
    };
    var why_store: [sizes.len][kinds.len][200]u8 = undefined;

    // Warm-up passes: every (size, subject) once per --warmup, each in its own
    // child with the full rounds, exactly like a timed pass, results
    // discarded. The first fraction of a second of a run is measurably slower
    // on some machines (clock ramp-up, cold caches); this pass absorbs it.
    var w: usize = 0;
    while (w < warmup) : (w += 1) {
        for (sizes, 0..) |sz, si| {
            const rounds = roundsFor(sz, scale);
            for (kinds, 0..) |k, ki| {
                switch (inChild(si, k, rounds, &why_store[si][ki])) {
                    .ok => {},
                    .failed => |why| {
                        // Do not try it again in the timed passes.
                        rows[si][ki].why = why;
                        std.debug.print("pk-lab-zig: {s} {s} {s} (warm-up): {s}\n", .{ name, sz.name, k.subject(), why });
                    },
                }
            }
        }
    }

    var rep: usize = 0;
    while (rep < reps) : (rep += 1) {
        for (sizes, 0..) |sz, si| {
            const rounds = roundsFor(sz, scale);
            for (kinds, 0..) |k, ki| {
                const row = &rows[si][ki];
                if (row.why != null) continue; // failed before: do not retry
                switch (inChild(si, k, rounds, &why_store[si][ki])) {
                    .ok => |r| {
                        try row.samples.append(gpa, @as(f64, @floatFromInt(r.ns)) / @as(f64, @floatFromInt(rounds)));
                        row.allocs = r.allocs;
                        row.peak_live = r.peak_live;
                        row.peak_rss_kb = @max(row.peak_rss_kb, r.peak_rss_kb);
                    },
                    .failed => |why| {
                        row.why = why;
                        std.debug.print("pk-lab-zig: {s} {s} {s}: {s}\n", .{ name, sz.name, k.subject(), why });
                    },
                }
            }
        }
    }

    // Every subject replays the same operations: their counts must agree.
    var status: u8 = 0;
    for (sizes, 0..) |sz, si| {
        var ref: ?*const Row = null;
        for (&rows[si]) |*r| {
            if (r.why != null) continue;
            if (ref) |f| {
                if (f.allocs != r.allocs or f.peak_live != r.peak_live) {
                    std.debug.print("pk-lab-zig: {s} {s}: subjects disagree on the counts ({d}/{d} vs {d}/{d})\n", .{ name, sz.name, f.allocs, f.peak_live, r.allocs, r.peak_live });
                    status = 1;
                }
            } else ref = r;
        }
    }

    for (sizes, 0..) |sz, si| {
        const rounds = roundsFor(sz, scale);
        var params_buf: [96]u8 = undefined;
        const params = try std.fmt.bufPrint(&params_buf, "{{\"size\":\"{s}\",\"rounds\":{d}}}", .{ sz.name, rounds });
        for (kinds, 0..) |k, ki| {
            const row = &rows[si][ki];
            if (!k.available()) {
                try common.writeUnavailable(out, name, k.subject(), params, "not built into this binary");
            } else if (row.why) |why| {
                try common.writeUnavailable(out, name, k.subject(), params, why);
            } else {
                var extra_buf: [160]u8 = undefined;
                const extra = if (row.peak_rss_kb >= 0)
                    try std.fmt.bufPrint(&extra_buf, "{{\"allocs\":{d},\"peak_live\":{d},\"peak_rss_kb\":{d}}}", .{ row.allocs, row.peak_live, row.peak_rss_kb })
                else
                    try std.fmt.bufPrint(&extra_buf, "{{\"allocs\":{d},\"peak_live\":{d}}}", .{ row.allocs, row.peak_live });
                try common.writeRow(out, name, k.subject(), unit, params, row.samples.items, k.detail(false), extra);
            }
        }
    }
    for (&rows) |*rs| for (rs) |*r| r.samples.deinit(gpa);
    return status;
}

test "counts at every scale (README.md)" {
    const S = subjects.For(1, false).Empty;
    const want = [_][3]u64{
        .{ 2_500_000, 1_249_005, 155 }, .{ 1_000_000, 499_925, 155 }, .{ 25_000, 12_548, 148 },
        .{ 500_000, 250_236, 155 },     .{ 200_000, 100_143, 155 },   .{ 5_000, 2_553, 143 },
        .{ 125_000, 62_592, 155 },      .{ 50_000, 25_086, 155 },     .{ 1_250, 676, 142 },
        .{ 2_000, 1_055, 142 },         .{ 50, 47, 43 },
    };
    for (want) |w| {
        const c = try once(S, w[0]);
        try std.testing.expectEqual(w[1], c.allocs);
        try std.testing.expectEqual(w[2], c.peak_live);
    }
}

test "every subject and size replays the same pattern" {
    inline for (sizes) |sz| {
        inline for (kinds) |k| {
            const c = try once(subjects.For(sz.bytes, false).Of(k), 2_000);
            try std.testing.expectEqual(@as(u64, 1_055), c.allocs);
            try std.testing.expectEqual(@as(u64, 142), c.peak_live);
        }
    }
}
