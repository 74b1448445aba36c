#!/usr/bin/env bash
# scripts/package-test.sh WORK_DIR: builds poolkit's packages as a packager
# would and proves each installs and serves a consumer (make test's package
# stage).
#
#   1. The library alone, configured for /usr with a C compiler only (the C++
#      compiler named is one that does not exist, so any use of it fails) and
#      the Doxygen reference; then CPack's Debian packages: libpoolkit0 (the
#      shared library) and libpoolkit-dev (headers, both libraries' links,
#      pkg-config and CMake files, LICENSE, CHANGELOG.md, the reference).
#   2. Both packages unpacked into a scratch root (dpkg-deb -x: no root
#      needed, the machine's packages untouched); what each holds and
#      depends on checked; under /usr the .pc files add no -I or -L of a
#      system directory; tests/install's consumer built against the root
#      with find_package (shared, static and the default target) and with
#      pkg-config, and run.
#   3. The Conan recipe (packaging/conan) built with `conan create`, static
#      and shared, in a scratch Conan home (Conan from the project's .venv:
#      scripts/setup.sh installs it); its test_package builds and runs a C
#      consumer against each.
# Nothing is fetched: Conan runs with --no-remote. Fails at the first
# fault, naming it.
set -euo pipefail

work=${1:?usage: scripts/package-test.sh WORK_DIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
fail() {
    echo "package test: FAILED: $*" >&2
    exit 1
}
say() { echo "package test: $*"; }

# ---- 1. the library alone, and its Debian packages -------------------------
build=$work/build
say "configure for /usr, C only, with the reference"
CXX=/nonexistent/c++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_CXX_COMPILER=/nonexistent/c++ \
    -DPOOLKIT_BUILD_TESTS=OFF -DPOOLKIT_BUILD_BENCH=OFF -DPOOLKIT_BUILD_LAB=OFF \
    -DPOOLKIT_BUILD_EXAMPLES=OFF -DPOOLKIT_BUILD_DOCS=ON >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log" >&2; fail "configure (a C compiler alone must do)"; }
cmake --build "$build" >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; fail "build"; }
say "cpack -G DEB"
(cd "$build" && cpack -G DEB >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log" >&2; fail "cpack"; }
version=$(sed -n 's/^#define PK_VERSION_STRING "\([^"]*\)".*/\1/p' "$root/include/poolkit/poolkit.h")
major=${version%%.*}
shopt -s nullglob
runtime_deb=("$build"/libpoolkit"${major}"_"${version}"_*.deb)
dev_deb=("$build"/libpoolkit-dev_"${version}"_*.deb)
shopt -u nullglob
[ ${#runtime_deb[@]} -eq 1 ] || fail "no libpoolkit${major}_${version}_*.deb in $build"
[ ${#dev_deb[@]} -eq 1 ] || fail "no libpoolkit-dev_${version}_*.deb in $build"
say "made $(basename "${runtime_deb[0]}") and $(basename "${dev_deb[0]}")"
malloc_deb=("$build"/libpoolkit-malloc"${major}"_"${version}"_*.deb)
[ ${#malloc_deb[@]} -eq 1 ] || fail "no libpoolkit-malloc${major}_${version}_*.deb in $build"
# Each listing is read whole before it is searched: grep -q stops at the first
# match, and under pipefail the writer's broken pipe would fail the check.
malloc_files=$(dpkg-deb -c "${malloc_deb[0]}")
grep -Eq "/libpoolkit-malloc\.so\.${major}( |$)" <<<"$malloc_files" ||
    fail "libpoolkit-malloc${major} lacks libpoolkit-malloc.so.${major}: $malloc_files"

# ---- 2. what they hold, unpacked into a scratch root ------------------------
field() { dpkg-deb -f "$1" "$2"; }
[ "$(field "${runtime_deb[0]}" Package)" = "libpoolkit${major}" ] || fail "runtime package's name"
[ "$(field "${dev_deb[0]}" Package)" = "libpoolkit-dev" ] || fail "dev package's name"
grep -q 'libc6' <<<"$(field "${runtime_deb[0]}" Depends)" ||
    fail "libpoolkit${major} does not depend on libc6: $(field "${runtime_deb[0]}" Depends)"
grep -qx "libpoolkit${major} (= ${version})" <<<"$(field "${dev_deb[0]}" Depends)" ||
    fail "libpoolkit-dev does not depend on libpoolkit${major} (= ${version}): $(field "${dev_deb[0]}" Depends)"

sysroot=$work/root
mkdir -p "$sysroot"
dpkg-deb -x "${runtime_deb[0]}" "$sysroot"
dpkg-deb -x "${dev_deb[0]}" "$sysroot"
multiarch=$(ls "$sysroot/usr/lib")
[ -n "$multiarch" ] && [ -d "$sysroot/usr/lib/$multiarch" ] || fail "no library directory under /usr/lib"
libdir=/usr/lib/$multiarch
runtime_files=$(dpkg-deb -c "${runtime_deb[0]}" | awk '{print $6}' | grep -v '/$' | sort)
[ "$(echo "$runtime_files" | sed 's|^\.||' | sed "s|$libdir/||" | tr '\n' ' ')" = \
  "libpoolkit.so.${major} libpoolkit.so.${version} " ] ||
    fail "libpoolkit${major} should hold the shared library alone: $runtime_files"
for f in /usr/include/poolkit/poolkit.h /usr/include/poolkit/poolkit.hpp "$libdir/libpoolkit.a" \
         "$libdir/libpoolkit.so" "$libdir/pkgconfig/poolkit.pc" "$libdir/pkgconfig/poolkit-static.pc" \
         "$libdir/cmake/poolkit/poolkitConfig.cmake" /usr/share/doc/poolkit/LICENSE \
         /usr/share/doc/poolkit/CHANGELOG.md /usr/share/doc/poolkit/html/index.html \
         /usr/share/poolkit/stats.schema.json; do
    [ -e "$sysroot$f" ] || [ -L "$sysroot$f" ] || fail "libpoolkit-dev lacks $f"
done
grep -q 'pk_pool_create' "$sysroot/usr/share/doc/poolkit/html/pool_8h.html" ||
    fail "the installed reference does not document pk_pool_create"

# Under /usr the .pc files spell the prefix, and pkg-config, seeing the
# system's own directories, adds no -I or -L at all.
pcdir=$sysroot$libdir/pkgconfig
for pc in poolkit poolkit-static; do
    grep -qx 'prefix=/usr' "$pcdir/$pc.pc" || fail "$pc.pc: prefix is not /usr: $(cat "$pcdir/$pc.pc")"
    grep -qx 'includedir=${prefix}/include' "$pcdir/$pc.pc" || fail "$pc.pc: includedir"
    grep -qx "libdir=\${prefix}/lib/$multiarch" "$pcdir/$pc.pc" || fail "$pc.pc: libdir"
done
cflags=$(PKG_CONFIG_PATH=$pcdir PKG_CONFIG_LIBDIR=$pcdir pkg-config --cflags poolkit)
libs=$(PKG_CONFIG_PATH=$pcdir PKG_CONFIG_LIBDIR=$pcdir pkg-config --libs poolkit)
[ -z "${cflags// /}" ] || fail "pkg-config --cflags poolkit under /usr gave '$cflags', not nothing"
[ "$(echo $libs)" = "-lpoolkit" ] || fail "pkg-config --libs poolkit under /usr gave '$libs', not -lpoolkit"
say "poolkit.pc under /usr: cflags '', libs '$(echo $libs)'"

# The consumer, with find_package and with pkg-config, against the root.
consumer=$root/tests/install
export LD_LIBRARY_PATH=$sysroot$libdir
cmake -S "$consumer" -B "$work/consumer-cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$sysroot/usr" -DPOOLKIT_FIND=cmake >"$work/consumer.log" 2>&1 &&
    cmake --build "$work/consumer-cmake" >>"$work/consumer.log" 2>&1 ||
    { cat "$work/consumer.log" >&2; fail "a consumer with find_package against the packages"; }
for kind in shared static default; do
    "$work/consumer-cmake/consumer_cmake_$kind" >/dev/null || fail "consumer_cmake_$kind did not run"
done
grep -q "NEEDED.*libpoolkit.so.${major}" <<<"$(readelf -d "$work/consumer-cmake/consumer_cmake_shared")" ||
    fail "consumer_cmake_shared does not need libpoolkit.so.${major}"
for module in poolkit poolkit-static; do
    flags=$(PKG_CONFIG_PATH=$pcdir PKG_CONFIG_LIBDIR=$pcdir PKG_CONFIG_SYSROOT_DIR=$sysroot \
            PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1 \
            pkg-config --cflags --libs "$module")
    # shellcheck disable=SC2086 # the flags are words
    cc -std=c11 -Wall -Wextra -Werror "$consumer/consumer.c" $flags -o "$work/consumer-$module" ||
        fail "cc consumer.c \$(pkg-config --cflags --libs $module) against the packages"
    "$work/consumer-$module" >/dev/null || fail "consumer-$module did not run"
done
unset LD_LIBRARY_PATH
say "Debian packages: consumers built with find_package and pkg-config, and run"

# ---- 3. the Conan recipe ------------------------------------------------------
conan=$root/.venv/bin/conan
[ -x "$conan" ] || fail "no Conan in $root/.venv (scripts/setup.sh installs it)"
export CONAN_HOME=$work/conan-home
# test_package builds in its own folder: a copy in the work folder, so that
# nothing is written into the sources.
cp -r "$root/packaging/conan/test_package" "$work/conan-test_package"
"$conan" profile detect --force >"$work/conan.log" 2>&1 || { cat "$work/conan.log" >&2; fail "conan profile detect"; }
for shared in False True; do
    say "conan create packaging/conan -o shared=$shared"
    "$conan" create "$root/packaging/conan" -o "&:shared=$shared" --build=missing --no-remote \
        --test-folder "$work/conan-test_package" \
        >"$work/conan-$shared.log" 2>&1 || { tail -60 "$work/conan-$shared.log" >&2; fail "conan create (shared=$shared)"; }
    grep -q "conan consumer: poolkit $version, 1000 objects allocated and freed" "$work/conan-$shared.log" ||
        fail "Conan's test_package did not run its consumer (shared=$shared)"
done
for made in "$root/packaging/conan/test_package/build" "$root/packaging/conan/test_package/CMakeUserPresets.json" \
            "$root/packaging/conan/build" "$root/packaging/conan/CMakeUserPresets.json"; do
    [ ! -e "$made" ] || fail "conan wrote into the sources: $made"
done
say "passed ($work)"
