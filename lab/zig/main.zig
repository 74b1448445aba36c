//! pk-lab-zig: the Zig contender program of poolkit's lab (lab/PROTOCOL.md).
//!
//!   pk-lab-zig list
//!   pk-lab-zig run EXPERIMENT [--scale quick|default|full|smoke] [--reps N] [--warmup N]
//!
//! Result lines (JSON, one per line) go to stdout, anything else to stderr.
//! Experiments: pool-pattern (LAB.md section 5), peers (hot and batch loops),
//! workset (working sets of 1,000 to 1,000,000 objects).

const std = @import("std");
const common = @import("common.zig");
const pool_pattern = @import("pool_pattern.zig");
const peers = @import("peers.zig");
const workset = @import("workset.zig");

const usage =
    \\usage: pk-lab-zig list
    \\       pk-lab-zig run EXPERIMENT [--scale quick|default|full|smoke] [--reps N] [--warmup N]
    \\experiments: pool-pattern, peers, workset
    \\
;

fn fail(comptime fmt: []const u8, args: anytype) u8 {
    std.debug.print("pk-lab-zig: " ++ fmt ++ "\n", args);
    std.debug.print("{s}", .{usage});
    return 2;
}

fn parseCount(s: []const u8) ?usize {
    return std.fmt.parseInt(usize, s, 10) catch null;
}

fn realMain() !u8 {
    const gpa = std.heap.page_allocator;
    const args = try std.process.argsAlloc(gpa);
    defer std.process.argsFree(gpa, args);

    var bw = std.io.bufferedWriter(std.io.getStdOut().writer());
    const out = bw.writer();

    if (args.len < 2) return fail("no command", .{});
    const cmd = args[1];
    if (std.mem.eql(u8, cmd, "--help") or std.mem.eql(u8, cmd, "-h") or std.mem.eql(u8, cmd, "help")) {
        try std.io.getStdOut().writeAll(usage);
        return 0;
    }
    if (std.mem.eql(u8, cmd, "list")) {
        if (args.len != 2) return fail("list takes no arguments", .{});
        try pool_pattern.list(out);
        try peers.list(out);
        try workset.list(out);
        try bw.flush();
        return 0;
    }
    if (!std.mem.eql(u8, cmd, "run")) return fail("unknown command '{s}'", .{cmd});

    var experiment: ?[]const u8 = null;
    var scale: common.Scale = .default;
    var reps: usize = 1;
    var warmup: usize = 1;
    var i: usize = 2;
    while (i < args.len) : (i += 1) {
        const a = args[i];
        var key: []const u8 = a;
        var val: ?[]const u8 = null;
        if (std.mem.startsWith(u8, a, "--")) {
            if (std.mem.indexOfScalar(u8, a, '=')) |eq| {
                key = a[0..eq];
                val = a[eq + 1 ..];
            } else if (i + 1 < args.len) {
                i += 1;
                val = args[i];
            } else return fail("{s} needs a value", .{a});
            const v = val.?;
            if (std.mem.eql(u8, key, "--scale")) {
                scale = std.meta.stringToEnum(common.Scale, v) orelse return fail("unknown scale '{s}'", .{v});
            } else if (std.mem.eql(u8, key, "--reps")) {
                reps = parseCount(v) orelse return fail("bad --reps '{s}'", .{v});
                if (reps == 0) return fail("--reps must be at least 1", .{});
            } else if (std.mem.eql(u8, key, "--warmup")) {
                warmup = parseCount(v) orelse return fail("bad --warmup '{s}'", .{v});
            } else return fail("unknown option '{s}'", .{key});
        } else if (experiment == null) {
            experiment = a;
        } else return fail("unexpected argument '{s}'", .{a});
    }
    const exp = experiment orelse return fail("run needs an EXPERIMENT", .{});

    const status = if (std.mem.eql(u8, exp, pool_pattern.name))
        try pool_pattern.run(gpa, out, scale, reps, warmup)
    else if (std.mem.eql(u8, exp, peers.name))
        try peers.run(gpa, out, scale, reps, warmup)
    else if (std.mem.eql(u8, exp, workset.name))
        try workset.run(gpa, out, scale, reps, warmup)
    else
        return fail("unknown experiment '{s}'", .{exp});
    try bw.flush();
    return status;
}

pub fn main() u8 {
    return realMain() catch |e| {
        std.debug.print("pk-lab-zig: {s}\n", .{@errorName(e)});
        return 1;
    };
}

test {
    _ = @import("rng.zig");
    _ = @import("peers.zig");
    _ = @import("pool_pattern.zig");
    _ = @import("workset.zig");
}
