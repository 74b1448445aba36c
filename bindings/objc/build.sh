#!/bin/sh
# bindings/objc/build.sh OUTDIR [POOLKIT_BUILD]
#
# Builds the GNUstep binding into OUTDIR:
#   OUTDIR/libpoolkit-objc.a          PKObject (static)
#   OUTDIR/libpoolkit-objc.so         PKObject (shared; only when POOLKIT_BUILD
#                                     has libpoolkit.so to link against)
#   OUTDIR/include/poolkit/PKObject.h the header, as users include it
#   OUTDIR/objc.env                   OBJC_CFLAGS, OBJC_LIBS, POOLKIT_LIB and
#                                     POOLKIT_INCLUDE for programs built on it
#
# POOLKIT_BUILD (the argument, else the environment variable) is a CMake build
# directory of poolkit: its libpoolkit.a is used, built first if it is missing.
# Without one, poolkit is configured and built (Release) in OUTDIR/poolkit.
#
# Compiler: $OBJC, else gcc (Debian's GNUstep is built on gcc's Objective-C
# runtime; $CC is not used, so a clang build of poolkit does not change it);
# flags from gnustep-config, -O2.
# Exit status: 0 built; 2 GNUstep is not installed (lab/objc/setup.sh installs
# it); 1 anything else failed.
set -eu

if [ $# -lt 1 ]; then
    echo "usage: $0 OUTDIR [POOLKIT_BUILD]" >&2
    exit 1
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
pkbuild=${2:-${POOLKIT_BUILD:-}}
cc=${OBJC:-gcc}

if ! command -v gnustep-config >/dev/null 2>&1; then
    echo "objc build: GNUstep is not installed (gnustep-config not found); run lab/objc/setup.sh as root" >&2
    exit 2
fi

# gnustep-config's flags, less the dependency-file options, with -O2 last.
gs_cflags=$(gnustep-config --objc-flags | sed -e 's/-MMD//g' -e 's/-MP//g')
gs_libs=$(gnustep-config --base-libs)
# GNUstep's headers trip -Wexpansion-to-defined (their API-version macros).
cflags="$gs_cflags -std=gnu11 -O2 -Wall -Wextra -Wno-unused-parameter -Wno-expansion-to-defined"

# ---- libpoolkit ----
if [ -z "$pkbuild" ]; then
    pkbuild="$out/poolkit"
    if [ ! -f "$pkbuild/CMakeCache.txt" ]; then
        cmake -S "$root" -B "$pkbuild" -G Ninja -DCMAKE_BUILD_TYPE=Release \
            -DPOOLKIT_BUILD_TESTS=OFF -DPOOLKIT_BUILD_BENCH=OFF -DPOOLKIT_BUILD_LAB=OFF \
            -DPOOLKIT_BUILD_EXAMPLES=OFF >"$out/poolkit-configure.log" 2>&1 ||
            { echo "objc build: configuring poolkit failed (see $out/poolkit-configure.log)" >&2; exit 1; }
    fi
fi
mkdir -p "$pkbuild"
pkbuild=$(cd "$pkbuild" && pwd)
if [ -f "$pkbuild/CMakeCache.txt" ]; then
    # Cheap when up to date; makes sure the archive matches the sources.
    targets="poolkit"
    grep -q "poolkit_shared" "$pkbuild/build.ninja" 2>/dev/null && targets="poolkit poolkit_shared"
    # shellcheck disable=SC2086
    cmake --build "$pkbuild" --target $targets >"$out/poolkit-build.log" 2>&1 ||
        { echo "objc build: building libpoolkit failed (see $out/poolkit-build.log)" >&2; exit 1; }
fi
if [ ! -f "$pkbuild/libpoolkit.a" ]; then
    echo "objc build: $pkbuild/libpoolkit.a not found" >&2
    exit 1
fi

# ---- libpoolkit-objc ----
mkdir -p "$out/include/poolkit"
cp "$here/PKObject.h" "$out/include/poolkit/PKObject.h"
incs="-I$out/include -I$root/include"

# shellcheck disable=SC2086
$cc $cflags -fPIC $incs -c "$here/PKObject.m" -o "$out/PKObject.o"
rm -f "$out/libpoolkit-objc.a"
ar rcs "$out/libpoolkit-objc.a" "$out/PKObject.o"

rm -f "$out/libpoolkit-objc.so"
if [ -f "$pkbuild/libpoolkit.so" ]; then
    # shellcheck disable=SC2086
    $cc -shared -o "$out/libpoolkit-objc.so" "$out/PKObject.o" \
        -L"$pkbuild" -Wl,-rpath,"$pkbuild" -lpoolkit $gs_libs
fi

cat >"$out/objc.env" <<EOF
# Written by bindings/objc/build.sh: how to build programs on PKObject.
OBJC_CC='$cc'
OBJC_CFLAGS='$cflags $incs'
OBJC_LIBS='$out/libpoolkit-objc.a $pkbuild/libpoolkit.a $gs_libs'
POOLKIT_LIB='$pkbuild/libpoolkit.a'
POOLKIT_INCLUDE='$root/include'
EOF
echo "objc build: $out/libpoolkit-objc.a$( [ -f "$out/libpoolkit-objc.so" ] && echo " and libpoolkit-objc.so")" >&2
