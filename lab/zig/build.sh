#!/bin/sh
# lab/zig/build.sh OUTDIR: compiles OUTDIR/pk-lab-zig from lab/zig/*.zig with
# the pinned Zig (see setup.sh), -O ReleaseFast, for the machine it runs on.
#
# Links libc (-lc) so that the peers experiment can measure
# std.heap.c_allocator; when linking libc fails it builds without it and that
# row says "not available". Zig's caches go under OUTDIR (zig-cache/,
# zig-global-cache/), never into the source tree.
# Exits non-zero with a clear line on stderr when it cannot build.
set -u

say() { printf 'zig build: %s\n' "$*" >&2; }

[ $# -eq 1 ] || { say "usage: lab/zig/build.sh OUTDIR"; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${PK_LAB_VENV:-$root/.venv}
py=$venv/bin/python
want=$(sed -n 's/^ZIG_VERSION=//p' "$here/setup.sh")

mkdir -p "$1" || { say "cannot create $1"; exit 1; }
out=$(cd "$1" && pwd)

[ -x "$py" ] || { say "no Python in $venv: run lab/zig/setup.sh first"; exit 1; }
have=$("$py" -m ziglang version 2>/dev/null) || have=
if [ -z "$have" ]; then
    say "the ziglang package is not installed in $venv: run lab/zig/setup.sh"
    exit 1
fi
if [ "$have" != "$want" ]; then
    say "zig $have is installed, but pk-lab-zig is pinned to $want: run lab/zig/setup.sh"
    exit 1
fi

zig_build() { # EXTRA_FLAGS...
    # Run from OUTDIR so that nothing Zig writes lands in the source tree.
    (cd "$out" && "$py" -m ziglang build-exe "$here/main.zig" \
        -O ReleaseFast -fstrip "$@" \
        --name pk-lab-zig \
        --cache-dir "$out/zig-cache" \
        --global-cache-dir "$out/zig-global-cache" \
        -femit-bin="$out/pk-lab-zig")
}

if zig_build -lc 2>"$out/build-lc.log"; then
    rm -f "$out/build-lc.log"
elif zig_build 2>"$out/build.log"; then
    rm -f "$out/build.log"
    say "linking libc failed (see $out/build-lc.log); built without it, so no c_allocator row"
else
    cat "$out/build.log" >&2
    say "zig build-exe failed"
    exit 1
fi
rm -f "$out/pk-lab-zig.o" # the object file Zig leaves beside the program
exit 0
