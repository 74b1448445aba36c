#!/bin/sh
# lab/objc/build.sh OUTDIR [POOLKIT_BUILD]
#
# Builds the lab's Objective-C contender, OUTDIR/pk-lab-objc, on GNUstep,
# linking PKObject (bindings/objc/build.sh, into OUTDIR/pkobject) and
# libpoolkit.a. POOLKIT_BUILD (the argument, else the environment variable,
# else OUTDIR's parent when that is a CMake build directory of this source
# tree) is a CMake build directory of poolkit; without one, poolkit is built
# in OUTDIR/pkobject/poolkit.
#
# Exit status: 0 built; 2 GNUstep is not installed (run lab/objc/setup.sh as
# root), with one line on stderr saying so; 1 anything else failed.
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
# Called as lab/run.sh does (build.sh BUILD_DIR/lab), the parent is poolkit's
# CMake build directory: link the poolkit that pk-lab links.
if [ -z "$pkbuild" ] && [ -f "$out/../CMakeCache.txt" ] &&
    grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$root" "$out/../CMakeCache.txt"; then
    pkbuild=$(cd "$out/.." && pwd)
fi

if ! command -v gnustep-config >/dev/null 2>&1; then
    echo "pk-lab-objc: GNUstep is not installed (gnustep-config not found); lab/objc/setup.sh installs it" >&2
    exit 2
fi

set +e
"$root/bindings/objc/build.sh" "$out/pkobject" ${pkbuild:+"$pkbuild"}
rc=$?
set -e
[ $rc -eq 0 ] || exit $rc
# shellcheck disable=SC1091
. "$out/pkobject/objc.env"

# The flags that shape the code, for each result line's "flags".
flags=$(for f in $OBJC_CFLAGS; do
    case $f in
        -D*|-I*|-W*|-g|-pthread) ;;
        *) printf '%s\n' "$f" ;;
    esac
done | awk '!seen[$0]++' | tr '\n' ' ' | sed 's/ $//')
printf '#define LAB_OBJC_FLAGS "%s"\n' "$flags" >"$out/lab_objc_flags.h"

# shellcheck disable=SC2086
$OBJC_CC $OBJC_CFLAGS -I"$here" -include "$out/lab_objc_flags.h" \
    "$here/main.m" "$here/autorelease_sweep.m" "$here/alloc_styles.m" \
    "$here/object_generation.m" "$here/common_ops.m" \
    -o "$out/pk-lab-objc" $OBJC_LIBS
echo "pk-lab-objc: built $out/pk-lab-objc" >&2
