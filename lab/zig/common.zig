//! What the experiments share: scales, result lines, /proc readings.

const std = @import("std");
const builtin = @import("builtin");

/// Problem sizes (lab/PROTOCOL.md): full = the study's sizes, default = a
/// fifth, quick = a twentieth, smoke = a five-hundredth.
pub const Scale = enum {
    smoke,
    quick,
    default,
    full,

    pub fn divisor(s: Scale) usize {
        return switch (s) {
            .smoke => 500,
            .quick => 20,
            .default => 5,
            .full => 1,
        };
    }
};

pub const version = "zig " ++ builtin.zig_version_string;

/// The build flags (build.sh passes -O ReleaseFast and, when it links, -lc).
pub const build_flags = "-O " ++ @tagName(builtin.mode) ++ (if (builtin.link_libc) " -lc" else "");

/// A field of /proc/self/status in kB ("VmRSS:", "VmHWM:"), or -1.
pub fn statusKb(field: []const u8) i64 {
    var buf: [4096]u8 = undefined;
    const f = std.fs.openFileAbsolute("/proc/self/status", .{}) catch return -1;
    defer f.close();
    const n = f.readAll(&buf) catch return -1;
    var lines = std.mem.splitScalar(u8, buf[0..n], '\n');
    while (lines.next()) |line| {
        if (!std.mem.startsWith(u8, line, field)) continue;
        var it = std.mem.tokenizeAny(u8, line[field.len..], " \tkB");
        const v = it.next() orelse return -1;
        return std.fmt.parseInt(i64, v, 10) catch -1;
    }
    return -1;
}

fn writeString(out: anytype, s: []const u8) !void {
    try out.writeByte('"');
    for (s) |c| switch (c) {
        '"' => try out.writeAll("\\\""),
        '\\' => try out.writeAll("\\\\"),
        '\n' => try out.writeAll("\\n"),
        '\t' => try out.writeAll("\\t"),
        0...8, 11, 12, 14...0x1f => try out.print("\\u{x:0>4}", .{c}),
        else => try out.writeByte(c),
    };
    try out.writeByte('"');
}

/// One result line (lab/PROTOCOL.md). `params` and `extra` are JSON objects.
pub fn writeRow(out: anytype, experiment: []const u8, subject: []const u8, unit: []const u8, params: []const u8, samples: []const f64, detail: []const u8, extra: []const u8) !void {
    try out.writeAll("{\"experiment\":");
    try writeString(out, experiment);
    try out.writeAll(",\"subject\":");
    try writeString(out, subject);
    try out.writeAll(",\"family\":\"peer\",\"unit\":");
    try writeString(out, unit);
    try out.print(",\"params\":{s},\"samples\":[", .{params});
    for (samples, 0..) |v, i| {
        if (i != 0) try out.writeByte(',');
        try out.print("{d:.3}", .{v});
    }
    try out.writeAll("],\"version\":");
    try writeString(out, version);
    try out.writeAll(",\"flags\":");
    var fbuf: [512]u8 = undefined;
    try writeString(out, std.fmt.bufPrint(&fbuf, "{s}; {s}", .{ build_flags, detail }) catch build_flags);
    try out.print(",\"extra\":{s}}}\n", .{extra});
}

/// The line of a subject that could not run.
pub fn writeUnavailable(out: anytype, experiment: []const u8, subject: []const u8, params: []const u8, why: []const u8) !void {
    try out.writeAll("{\"experiment\":");
    try writeString(out, experiment);
    try out.writeAll(",\"subject\":");
    try writeString(out, subject);
    try out.print(",\"family\":\"peer\",\"params\":{s},\"available\":false,\"why\":", .{params});
    try writeString(out, why);
    try out.writeAll(",\"version\":");
    try writeString(out, version);
    try out.writeAll("}\n");
}
