#!/usr/bin/env bash
# scripts/bare-build.sh BUILD_DIR [CMAKE_ARGS...]: configures and builds the
# whole tree (library, tests, lab, benchmarks, examples) as a fresh machine
# sees it, with none of the lab's optional packages found, so that no
# optional package can hide a build error (round two's main built only where
# APR's pkg-config flags happened to add -D_GNU_SOURCE).
#
# Hidden: the peers scripts/lab-setup.sh installs (jemalloc, mimalloc,
# tcmalloc, Boost, GLib, APR, talloc), GNUstep, and the libraries of the
# real-program experiment and of the hook examples (SQLite, libxml2,
# jansson, expat).
#   - pkg-config finds nothing (PKG_CONFIG_LIBDIR is an empty folder);
#   - as root where `unshare -m` works, their headers are masked too, in a
#     private mount namespace: each folder of theirs under /usr/include (and
#     GLib's glibconfig.h folder) is covered by an empty tmpfs, each single
#     header by a file that is an #error, so an unconditional #include of a
#     peer's header fails here as it would on a fresh machine. Nothing
#     outside this script's own process sees the masks.
#   - elsewhere (not root, no unshare) only pkg-config and the build's own
#     checks are hidden, and the script says so.
# It fails if the configure step still reports a peer linked into pk-lab.
set -euo pipefail

build=${1:?usage: scripts/bare-build.sh BUILD_DIR [CMAKE_ARGS...]}
shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
packages="libjemalloc-dev libmimalloc-dev libgoogle-perftools-dev libboost-dev
          libglib2.0-dev libapr1-dev libtalloc-dev libgnustep-base-dev
          libsqlite3-dev libxml2-dev libjansson-dev libexpat1-dev"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/pkgconfig"
printf '#error "hidden by scripts/bare-build.sh: an optional package, absent on a fresh machine"\n' \
    >"$scratch/hidden.h"

# What to mask: the top-level entries under /usr/include of each installed
# optional package, and any folder of its under /usr/lib that holds headers.
masks=()
if command -v dpkg >/dev/null 2>&1; then
    while IFS= read -r path; do
        masks+=("$path")
    done < <(for p in $packages; do dpkg -L "$p" 2>/dev/null || true; done |
        awk '
            /^\/usr\/include\/[^\/]+/ {
                split($0, a, "/")
                # The multiarch folder holds libc'"'"'s headers too: mask below it.
                if (a[4] ~ /-linux-/) { if (a[5] != "") print "/usr/include/" a[4] "/" a[5] }
                else print "/usr/include/" a[4]
                next
            }
            /^\/usr\/lib\/.*\/include$/ { print }
        ' | sort -u)
fi

rm -rf "$build"
cmake_cmd=(cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
           -DPOOLKIT_REQUIRE_GTEST=ON -DPK_LAB_HAVE_BOOST_POOL=OFF "$@")

inner=$(cat <<'EOF'
set -euo pipefail
hidden=$1 log=$2; shift 2
n=0
while [ "$1" != -- ]; do
    if [ -d "$1" ]; then mount -t tmpfs -o size=1m,ro bare-build "$1"; n=$((n + 1))
    elif [ -f "$1" ]; then mount --bind "$hidden" "$1"; n=$((n + 1)); fi
    shift
done
shift
echo "bare build: $n header paths of optional packages masked"
"$@" | tee "$log"
EOF
)

export PKG_CONFIG_LIBDIR=$scratch/pkgconfig PKG_CONFIG_PATH=
log=$scratch/configure.log
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1 &&
    unshare -m --propagation private true 2>/dev/null; then
    unshare -m --propagation private bash -c "$inner
cmake --build '$build'" bare "$scratch/hidden.h" "$log" "${masks[@]}" -- "${cmake_cmd[@]}"
else
    echo "bare build: not root or no unshare: only pkg-config and the build's checks are hidden"
    "${cmake_cmd[@]}" | tee "$log"
    cmake --build "$build"
fi

peers=$(sed -n 's/^-- lab: pk-lab links peers: *\([^(]*\)(.*/\1/p' "$log" | tr -d ' ')
peers=$peers$(sed -n 's/^-- lab: realprog.s libraries: *//p' "$log" | tr -d ' ')
peers=$peers$(sed -n 's/^-- examples: hook examples built: *//p' "$log" | tr -d ' ')
if [ -n "$peers" ]; then
    echo "bare build: FAILED to hide optional packages; the lab still found: $peers" >&2
    exit 1
fi
echo "bare build: the whole tree builds with no optional package found ($build)"
