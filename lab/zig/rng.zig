//! The lab's fixed-seed random source: SplitMix64, the same generator as
//! lab/shared.h (shared_rng_next / shared_rng_unit / shared_rng_below), so the
//! C contenders of pk-lab and this program replay the same sequence of
//! operations when they start from the same seed. README.md spells it out.

/// Seed of every random sequence in pk-lab-zig (pool-pattern rounds, the
/// free order of the peers batch loop).
pub const seed: u64 = 42;

pub const Rng = struct {
    s: u64,

    pub fn init(s: u64) Rng {
        return .{ .s = s };
    }

    /// SplitMix64: add the golden-ratio increment, then mix.
    pub inline fn next(r: *Rng) u64 {
        r.s +%= 0x9E3779B97F4A7C15;
        var z = r.s;
        z = (z ^ (z >> 30)) *% 0xBF58476D1CE4E5B9;
        z = (z ^ (z >> 27)) *% 0x94D049BB133111EB;
        return z ^ (z >> 31);
    }

    /// Uniform in [0, 1): the top 53 bits times 2^-53.
    pub inline fn unit(r: *Rng) f64 {
        return @as(f64, @floatFromInt(r.next() >> 11)) * 0x1.0p-53;
    }

    /// Uniform in [0, n) for 0 < n < 2^32: ((next >> 32) * n) >> 32.
    pub inline fn below(r: *Rng, n: usize) usize {
        return @intCast(((r.next() >> 32) * @as(u64, n)) >> 32);
    }
};

test "first values, seed 42 (README.md)" {
    const std = @import("std");
    var r = Rng.init(seed);
    try std.testing.expectEqual(@as(u64, 0xbdd732262feb6e95), r.next());
    try std.testing.expectEqual(@as(u64, 0x28efe333b266f103), r.next());
    try std.testing.expectEqual(@as(u64, 0x47526757130f9f52), r.next());
    var u = Rng.init(seed);
    try std.testing.expectEqual(@as(f64, 0.74156487877182331), u.unit());
    try std.testing.expectEqual(@as(f64, 0.1599103928769201), u.unit());
    try std.testing.expectEqual(@as(f64, 0.27860113025513866), u.unit());
}
