#!/usr/bin/env bash
# The hot loop against earlier builds of this repository (reference rows).
#
# Usage: bench/refs.sh BUILD_DIR [options for hotloop_refs: --quick, --reps N, --iters N]
#
# For each reference commit (REFS, default: round one's build 28fd0a1,
# round two's release a6427ca, the second core's last build dc120d1, the
# third core before the hardened pool's inline path 824f9c2 and the
# previous release, 0.1.0, 582d9d0), the library is built from `git archive COMMIT` with its
# own CMake (Release, library only) in BUILD_DIR/ref/COMMIT/, once:
# a build that is there is reused. Then bench/hotloop_refs.c is compiled
# once per library, today's (BUILD_DIR/libpoolkit.a with include/) and each
# reference's, with the same command (only -I and the .a differ), and today's
# copy runs them all, alternated (bench/hotloop_refs.c says how): pools'
# alloc+free pairs and pk_new+pk_release pairs. With valgrind installed,
# callgrind then counts each copy's instructions per pair. A commit this
# checkout does not hold (a tarball, a shallow clone) gives a row "not
# available: needs the git history (commit X)", and the rest runs. About 10 s on 2 cores (callgrind included); the first run
# adds the references' builds (a few seconds: the library alone).
set -u

build=${1:-}
if [ -z "$build" ] || [ ! -d "$build" ]; then
    echo "usage: $0 BUILD_DIR [--quick] [--reps N] [--iters N]" >&2
    exit 2
fi
shift
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
refs=${REFS:-"28fd0a1 a6427ca dc120d1 824f9c2 582d9d0"}
declare -A what=([28fd0a1]="round one's build" [a6427ca]="round two's release, the last commit of its round"
                 [dc120d1]="the second core's last build, before the third"
                 [824f9c2]="the third core, before the hardened pool's inline path"
                 [582d9d0]="the previous release, 0.1.0 (CHANGELOG.md)")

lib_today=""
for cand in "$build/libpoolkit.a" "$build/src/libpoolkit.a"; do
    if [ -f "$cand" ]; then lib_today=$cand; break; fi
done
if [ -z "$lib_today" ]; then
    echo "refs: $build/libpoolkit.a not found (cmake --build $build --target poolkit)" >&2
    exit 1
fi
# The references are built with today's compiler.
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
cc=${cc:-${CC:-cc}}
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
jobs=${JOBS:-2}

out="$build/ref"
mkdir -p "$out"
cflags="-std=c11 -O2 -D_GNU_SOURCE -Wall -Wextra -Werror"
# compile DIR INCLUDE LIBRARY: DIR/hotloop_refs, rebuilt when older than its inputs.
compile() {
    local bin="$1/hotloop_refs" inc=$2 lib=$3
    if [ -x "$bin" ] && [ "$bin" -nt "$here/hotloop_refs.c" ] && [ "$bin" -nt "$lib" ] &&
        [ "$bin" -nt "$here/harness.h" ] && [ "$bin" -nt "$here/naive_global.h" ] &&
        [ "$bin" -nt "$inc/poolkit/pool.h" ] && [ "$bin" -nt "$inc/poolkit/object.h" ]; then
        return 0
    fi
    # shellcheck disable=SC2086 # cflags is a list of words
    "$cc" $cflags "-DBENCH_CFLAGS=\"$cflags (static libpoolkit)\"" -I"$inc" -I"$here" -I"$root/lab" \
        -o "$bin" "$here/hotloop_refs.c" "$lib" -pthread -lm -ldl
}

args=()
if ! compile "$out" "$root/include" "$lib_today" 2>"$out/today.log"; then
    echo "refs: compiling hotloop_refs against today's library failed:" >&2
    cat "$out/today.log" >&2
    exit 1
fi
have_git=0
git -C "$root" rev-parse --git-dir >/dev/null 2>&1 && have_git=1
for c in $refs; do
    dir="$out/$c"
    if [ ! -f "$dir/build/libpoolkit.a" ]; then
        if [ "$have_git" = 0 ] || ! git -C "$root" cat-file -e "$c^{commit}" 2>/dev/null; then
            args+=(--lib "$c=!needs the git history (commit $c)")
            continue
        fi
        echo "refs: building $c, ${what[$c]:-a reference}, in $dir (once; log in $dir/build.log)"
        rm -rf "$dir" && mkdir -p "$dir/src"
        if ! { git -C "$root" archive "$c" | tar -x -C "$dir/src"; } >"$dir/build.log" 2>&1 ||
            ! cmake -S "$dir/src" -B "$dir/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
                -DCMAKE_C_COMPILER="$cc" -DPOOLKIT_WERROR=OFF -DPOOLKIT_BUILD_TESTS=OFF \
                -DPOOLKIT_BUILD_BENCH=OFF -DPOOLKIT_BUILD_LAB=OFF -DPOOLKIT_BUILD_EXAMPLES=OFF \
                >>"$dir/build.log" 2>&1 ||
            ! cmake --build "$dir/build" --target poolkit -j"$jobs" >>"$dir/build.log" 2>&1 ||
            [ ! -f "$dir/build/libpoolkit.a" ]; then
            args+=(--lib "$c=!!its build failed (see $dir/build.log)")
            rm -rf "$dir/build"
            continue
        fi
    fi
    if ! compile "$dir" "$dir/src/include" "$dir/build/libpoolkit.a" 2>"$dir/compile.log"; then
        args+=(--lib "$c=!!hotloop_refs does not compile against it (see $dir/compile.log)")
        continue
    fi
    args+=(--lib "$c=$dir/hotloop_refs")
done

for c in $refs; do echo "reference $c: ${what[$c]:-a commit of this repository}"; done
echo "\$ $out/hotloop_refs $* ${args[*]}"
"$out/hotloop_refs" "$@" "${args[@]}" || exit 1

# Instructions per pair, exact (callgrind), for each copy that ran.
if ! command -v valgrind >/dev/null 2>&1; then
    echo "instructions per pair: skipped (valgrind not installed)"
    exit 0
fi
n=200000
size=64
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo
echo "instructions per alloc+free pair at $size B, net of the empty loop (callgrind; N = $n):"
dumps=()
for k in empty naive default local hardened object; do dumps+=(--dump-after="refs_count_$k"); done
echo "  valgrind --tool=callgrind --collect-atstart=no --toggle-collect='refs_count_*' ${dumps[*]} PROGRAM --icount $n $size"
for prog in "$out/hotloop_refs" $(printf '%s\n' "${args[@]}" | sed -n 's/^[^=]*=\(\/.*\)/\1/p'); do
    label=today
    [ "$prog" != "$out/hotloop_refs" ] && label=$(basename "$(dirname "$prog")")
    rm -f "$tmp"/cg.*
    if ! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='refs_count_*' \
        "${dumps[@]}" --callgrind-out-file="$tmp/cg" "$prog" --icount "$n" "$size" \
        >"$tmp/log" 2>&1; then
        echo "  $label: callgrind failed (see: valgrind --tool=callgrind $prog --icount $n $size)"
        continue
    fi
    # Dumps 1-6: empty loop, naive list, default, LOCAL and HARDENED pools,
    # pk_new+pk_release.
    counts=()
    for part in 1 2 3 4 5 6; do
        counts+=("$(awk '/^totals:/ {print $2; exit} /^summary:/ {s = $2} END {if (s) print s}' \
            "$tmp/cg.$part" 2>/dev/null | head -1)")
    done
    awk -v l="$label" -v n="$n" -v e="${counts[0]}" -v a="${counts[1]}" -v d="${counts[2]}" \
        -v o="${counts[3]}" -v h="${counts[4]}" -v b="${counts[5]}" 'BEGIN {
            if (e == "" || a == "" || d == "" || o == "") { printf "  %-8s no counts\n", l; exit }
            printf "  %-8s naive list %.2f   pk_pool default %.2f   pk_pool LOCAL %.2f   pk_pool HARDENED %s   pk_new+pk_release %s\n", l,
                (a - e) / n, (d - e) / n, (o - e) / n, h == "" ? "-" : sprintf("%.2f", (h - e) / n),
                b == "" ? "-" : sprintf("%.2f", (b - e) / n) }'
done
