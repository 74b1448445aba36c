#!/bin/sh
# bindings/objc/test.sh BUILD_DIR
#
# Builds PKObject (bindings/objc/build.sh BUILD_DIR/objc BUILD_DIR) and its
# test program, and runs it. BUILD_DIR is a CMake build directory of poolkit
# (its libpoolkit.a is used, and built if missing).
#
# Exit status: 0 when every test passed; 1 when one failed or the build did.
# Without GNUstep (lab/objc/setup.sh installs it): 0 with a "skipped" line
# when POOLKIT_OBJC_OPTIONAL=1, else 1.
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 BUILD_DIR" >&2
    exit 1
fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
build=$(cd "$1" && pwd)
out="$build/objc"

if ! command -v gnustep-config >/dev/null 2>&1; then
    if [ "${POOLKIT_OBJC_OPTIONAL:-0}" = 1 ]; then
        echo "objc tests: skipped: GNUstep is not installed (lab/objc/setup.sh installs it)"
        exit 0
    fi
    echo "objc tests: FAILED: GNUstep is not installed (run lab/objc/setup.sh as root, or set POOLKIT_OBJC_OPTIONAL=1 to skip)" >&2
    exit 1
fi

"$here/build.sh" "$out" "$build" || { echo "objc tests: FAILED: building PKObject" >&2; exit 1; }
# shellcheck disable=SC1091
. "$out/objc.env"
# shellcheck disable=SC2086
$OBJC_CC $OBJC_CFLAGS "$here/test_pkobject.m" -o "$out/test_pkobject" $OBJC_LIBS ||
    { echo "objc tests: FAILED: building test_pkobject" >&2; exit 1; }

echo "objc tests: $out/test_pkobject (static libraries)"
"$out/test_pkobject"
rc=$?
[ $rc -eq 0 ] || echo "objc tests: FAILED (exit status $rc)" >&2

# The same tests against the shared libraries, when they were built.
if [ $rc -eq 0 ] && [ -f "$out/libpoolkit-objc.so" ]; then
    # shellcheck disable=SC2086
    $OBJC_CC $OBJC_CFLAGS "$here/test_pkobject.m" -o "$out/test_pkobject_shared" \
        -L"$out" -L"$build" -Wl,-rpath,"$out:$build" -lpoolkit-objc -lpoolkit \
        $(gnustep-config --base-libs) ||
        { echo "objc tests: FAILED: building test_pkobject_shared" >&2; exit 1; }
    echo "objc tests: $out/test_pkobject_shared (shared libraries)"
    "$out/test_pkobject_shared"
    rc=$?
    [ $rc -eq 0 ] || echo "objc tests: FAILED with the shared libraries (exit status $rc)" >&2
fi
exit $rc
