#!/usr/bin/env bash
# The tool builds on seeded bugs: do Valgrind and AddressSanitizer see misuse
# of pool objects, and stay quiet on correct programs?
#
#   tests/tools/run.sh [BUILD_DIR]        (default: build-tools)
#
# Compiles the library's sources (src/*/*.c but src/malloc/) twice by hand into BUILD_DIR:
#   valgrind/  $VG_CC (gcc) -O1 -g -DPOOLKIT_VALGRIND   (needs valgrind/memcheck.h)
#   asan/      $ASAN_CC (clang) -O1 -g -DPOOLKIT_ASAN -fsanitize=address
# links each program of tests/tools/ against both, runs them and checks:
#   valgrind  uaf read / uaf write: an invalid read / write (error exit)
#             leak: the lost object "definitely lost" (48 bytes in 1 blocks)
#             double_free: an invalid free; with POOLKIT_DEBUG=1, poolkit's own
#               "double free" report naming the pool
#             clean, region, clean with POOLKIT_DEBUG=1: no error, no leak
#   asan      uaf read / uaf write: use-after-poison
#             double_free with POOLKIT_DEBUG=1: poolkit's "double free" report
#             clean, region, clean with POOLKIT_DEBUG=1: clean (leak check on)
# Prints PASS or FAIL per check (with the end of the log on failure; full
# logs in BUILD_DIR/logs/) and, last, "N passed, M failed". Exits 1 if any
# check failed, did not behave as expected (status or output) or could not
# run (a missing compiler or valgrind counts as a
# failure: CI must have them; scripts/setup.sh installs them).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=${POOLKIT_ROOT:-$(cd "$here/../.." && pwd)} # the sources to build (another checkout: set it)
build=${1:-build-tools}
mkdir -p "$build"
build=$(cd "$build" && pwd)
logs=$build/logs
mkdir -p "$logs"

VG_CC=${VG_CC:-gcc}
ASAN_CC=${ASAN_CC:-clang}
VALGRIND=${VALGRIND:-valgrind}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

programs=(uaf leak double_free clean region)
passed=0
failed=0

pass() {
    echo "PASS $1"
    passed=$((passed + 1))
}

fail() { # name reason [log]
    echo "FAIL $1: $2"
    if [ -n "${3:-}" ] && [ -f "$3" ]; then
        grep -E -m 12 'ERROR|Invalid|lost:|overlaps|impossible|poolkit:|error:|Aborted|FAIL' "$3" |
            sed 's/^/    | /'
        echo "    | ... (last lines of $3)"
        tail -n 8 "$3" | sed 's/^/    | /'
    fi
    failed=$((failed + 1))
}

# build_variant DIR CC FLAGS...: the library objects, libpoolkit.a and every
# program, into $build/DIR. Returns non-zero (having said why) on failure.
build_variant() {
    local name=$1 dir=$build/$1 cc=$2
    shift 2
    local flags=(-std=c11 -D_GNU_SOURCE -O1 -g -pthread "$@") # _GNU_SOURCE: as CMake sets it
    mkdir -p "$dir/obj"
    if ! command -v "$cc" >/dev/null 2>&1; then
        fail "build $name" "compiler $cc not found"
        return 1
    fi
    local log=$logs/build-$name.log
    : >"$log"
    local pids=() src
    for src in "$root"/src/*/*.c; do
    case $src in */src/malloc/*) continue ;; esac
        "$cc" "${flags[@]}" -fvisibility=hidden -I"$root/include" -I"$root/src" \
            -c "$src" -o "$dir/obj/$(basename "${src%.c}").o" >>"$log" 2>&1 &
        pids+=($!)
        if [ ${#pids[@]} -ge "$JOBS" ]; then
            if ! wait "${pids[0]}"; then
                wait
                fail "build $name" "compiling the library failed" "$log"
                return 1
            fi
            pids=("${pids[@]:1}")
        fi
    done
    local pid
    for pid in "${pids[@]}"; do
        wait "$pid" || { wait; fail "build $name" "compiling the library failed" "$log"; return 1; }
    done
    rm -f "$dir/libpoolkit.a"
    ar rcs "$dir/libpoolkit.a" "$dir"/obj/*.o >>"$log" 2>&1 ||
        { fail "build $name" "ar failed" "$log"; return 1; }
    local p
    for p in "${programs[@]}"; do
        "$cc" "${flags[@]}" -Wall -Wextra -I"$root/include" "$here/$p.c" "$dir/libpoolkit.a" \
            -o "$dir/$p" >>"$log" 2>&1 ||
            { fail "build $name" "linking $p failed" "$log"; return 1; }
    done
    echo "built $name: $dir ($cc ${flags[*]})"
}

# expect NAME LOG WANT_RC PATTERN...: the run's exit status (a number, or
# "nonzero") and every pattern (grep -E) in its log; a pattern written
# "!PATTERN" must not be there.
expect() {
    local name=$1 log=$2 want=$3 rc
    shift 3
    rc=$(cat "$log.rc")
    if [ "$want" = nonzero ]; then
        [ "$rc" -ne 0 ] || { fail "$name" "exited 0, expected a failure" "$log"; return; }
    elif [ "$rc" -ne "$want" ]; then
        fail "$name" "exit status $rc, expected $want" "$log"
        return
    fi
    local pat
    for pat in "$@"; do
        if [ "${pat:0:1}" = "!" ]; then
            ! grep -Eq -- "${pat:1}" "$log" ||
                { fail "$name" "a line matching '${pat:1}' in the output" "$log"; return; }
        else
            grep -Eq -- "$pat" "$log" ||
                { fail "$name" "no line matching '$pat' in the output" "$log"; return; }
        fi
    done
    pass "$name"
}

# run LOG ENV... -- COMMAND...: runs with a time limit, output and status to LOG.
run() {
    local log=$1
    shift
    local envs=()
    while [ "$1" != -- ]; do
        envs+=("$1")
        shift
    done
    shift
    # (in a subshell whose stderr is dropped: bash's own "Aborted" notices)
    (
        env "${envs[@]}" timeout 300 "$@" >"$log" 2>&1
        echo $? >"$log.rc"
    ) 2>/dev/null
}

# ---- Valgrind (memcheck) ------------------------------------------------
VG_ERR=99
vg_flags=(--tool=memcheck --error-exitcode=$VG_ERR --leak-check=full
          --errors-for-leak-kinds=definite,indirect --num-callers=20)

if ! command -v "$VALGRIND" >/dev/null 2>&1; then
    fail "valgrind" "valgrind not found"
elif [ ! -f /usr/include/valgrind/memcheck.h ] && ! echo '#include <valgrind/memcheck.h>' |
        "$VG_CC" -E -x c - >/dev/null 2>&1; then
    fail "valgrind" "valgrind/memcheck.h not found (Debian: valgrind package)"
elif build_variant valgrind "$VG_CC" -DPOOLKIT_VALGRIND; then
    d=$build/valgrind
    run "$logs/vg-uaf-read.log" -- "$VALGRIND" "${vg_flags[@]}" "$d/uaf" read
    expect "valgrind: use after free (read) is reported" "$logs/vg-uaf-read.log" $VG_ERR \
        "Invalid read of size" "uaf\.c"
    run "$logs/vg-uaf-write.log" -- "$VALGRIND" "${vg_flags[@]}" "$d/uaf" write
    expect "valgrind: use after free (write) is reported" "$logs/vg-uaf-write.log" $VG_ERR \
        "Invalid write of size" "uaf\.c"
    run "$logs/vg-leak.log" -- "$VALGRIND" "${vg_flags[@]}" "$d/leak"
    expect "valgrind: leaked pool object is definitely lost" "$logs/vg-leak.log" $VG_ERR \
        "definitely lost: 48 bytes in 1 blocks" "are definitely lost"
    run "$logs/vg-double-free.log" -- "$VALGRIND" "${vg_flags[@]}" "$d/double_free"
    expect "valgrind: double free is reported" "$logs/vg-double-free.log" $VG_ERR \
        "Invalid free"
    run "$logs/vg-double-free-debug.log" POOLKIT_DEBUG=1 -- \
        "$VALGRIND" "${vg_flags[@]}" "$d/double_free"
    expect "valgrind, POOLKIT_DEBUG=1: poolkit reports the double free" \
        "$logs/vg-double-free-debug.log" nonzero \
        "poolkit: double free: object 0x[0-9a-f]+ of pool 'sessions' was freed twice"
    run "$logs/vg-clean.log" -- "$VALGRIND" "${vg_flags[@]}" "$d/clean"
    expect "valgrind: clean program runs clean" "$logs/vg-clean.log" 0 \
        "clean: done" "ERROR SUMMARY: 0 errors"
    run "$logs/vg-clean-debug.log" POOLKIT_DEBUG=1 -- "$VALGRIND" "${vg_flags[@]}" "$d/clean"
    expect "valgrind, POOLKIT_DEBUG=1: clean program runs clean" "$logs/vg-clean-debug.log" 0 \
        "clean: done" "ERROR SUMMARY: 0 errors"
    # pk_pool_destroy tells memcheck that the objects still in the pool are
    # gone (pool.c, untrack): without it a region pool's objects count as
    # lost, and once the next pool maps the same addresses memcheck's leak
    # check aborts on overlapping blocks.
    run "$logs/vg-region.log" -- "$VALGRIND" "${vg_flags[@]}" "$d/region"
    expect "valgrind: region pool destroyed with its objects runs clean" "$logs/vg-region.log" 0 \
        "region: done" "ERROR SUMMARY: 0 errors"
fi

# ---- AddressSanitizer ----------------------------------------------------
asan_env=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1)
if build_variant asan "$ASAN_CC" -DPOOLKIT_ASAN -fsanitize=address -fno-omit-frame-pointer; then
    d=$build/asan
    run "$logs/asan-uaf-read.log" "${asan_env[@]}" -- "$d/uaf" read
    expect "asan: use after free (read) is reported" "$logs/asan-uaf-read.log" nonzero \
        "ERROR: AddressSanitizer: use-after-poison" "READ of size" "uaf\.c"
    run "$logs/asan-uaf-write.log" "${asan_env[@]}" -- "$d/uaf" write
    expect "asan: use after free (write) is reported" "$logs/asan-uaf-write.log" nonzero \
        "ERROR: AddressSanitizer: use-after-poison" "WRITE of size" "uaf\.c"
    run "$logs/asan-double-free-debug.log" "${asan_env[@]}" POOLKIT_DEBUG=1 -- "$d/double_free"
    expect "asan, POOLKIT_DEBUG=1: poolkit reports the double free" \
        "$logs/asan-double-free-debug.log" nonzero \
        "poolkit: double free: object 0x[0-9a-f]+ of pool 'sessions' was freed twice"
    no_report='!ERROR: (AddressSanitizer|LeakSanitizer)'
    run "$logs/asan-clean.log" "${asan_env[@]}" -- "$d/clean"
    expect "asan: clean program runs clean" "$logs/asan-clean.log" 0 "clean: done" "$no_report"
    run "$logs/asan-clean-debug.log" "${asan_env[@]}" POOLKIT_DEBUG=1 -- "$d/clean"
    expect "asan, POOLKIT_DEBUG=1: clean program runs clean" "$logs/asan-clean-debug.log" 0 \
        "clean: done" "$no_report"
    run "$logs/asan-region.log" "${asan_env[@]}" -- "$d/region"
    expect "asan: region pool destroyed with its objects runs clean" "$logs/asan-region.log" 0 \
        "region: done" "$no_report"
fi

# Every check above must have run: one that silently did not would pass.
checks=14
echo "$passed passed, $failed failed"
if [ $((passed + failed)) -ne "$checks" ] && [ "$failed" -eq 0 ]; then
    echo "FAIL: $((passed + failed)) checks ran, $checks expected (a check was left out)"
    exit 1
fi
[ "$failed" -eq 0 ]
