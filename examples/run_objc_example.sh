#!/bin/sh
# examples/run_objc_example.sh POOLKIT_BUILD OUTDIR SOURCE
#
# Builds the Objective-C binding (bindings/objc/build.sh OUTDIR POOLKIT_BUILD),
# compiles SOURCE on it with the flags the binding writes to OUTDIR/objc.env,
# and runs the program. Exit status: the program's; 77 (skipped) when
# GNUstep is not installed; 1 when a build step fails.
set -u
if [ $# -ne 3 ]; then
    echo "usage: $0 POOLKIT_BUILD OUTDIR SOURCE" >&2
    exit 1
fi
root=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v gnustep-config >/dev/null 2>&1; then
    echo "skipped: GNUstep is not installed (lab/objc/setup.sh installs it)"
    exit 77
fi
sh "$root/bindings/objc/build.sh" "$2" "$1" || { echo "building the binding failed" >&2; exit 1; }
# shellcheck disable=SC1091
. "$2/objc.env"
name=$(basename "$3" .m)
# shellcheck disable=SC2086
$OBJC_CC $OBJC_CFLAGS "$3" -o "$2/$name" $OBJC_LIBS || { echo "compiling $3 failed" >&2; exit 1; }
exec "$2/$name"
