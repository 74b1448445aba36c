#!/usr/bin/env bash
# Fuzzes the whole C API against a model (tests/fuzz/fuzz_api.c) with
# libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer.
#
#   scripts/fuzz.sh [SECONDS] [BUILD_DIR]     (defaults: 60, build-fuzz)
#
# Builds the target with clang into BUILD_DIR, adds the committed corpus
# (tests/fuzz/corpus/) to the working corpus (BUILD_DIR/corpus, kept from
# run to run, so what earlier runs found is where the next starts), runs
# for SECONDS and prints the seed of each run (FUZZ_ARGS=-seed=N repeats
# it) and the executions and operations done (the target counts the API
# operations it runs). Exits non-zero if the fuzzer found a crash, a
# sanitizer report or a model mismatch; the input that did it is left in
# BUILD_DIR/artifacts/ and the lines to replay it and to add it to the
# committed corpus are printed (ctest replays that corpus: fuzz.corpus.*).
#
# Environment:
#   CC           the compiler (default clang; needs libFuzzer: Debian's
#                clang with libclang-rt-<version>-dev)
#   FUZZ_ARGS    more libFuzzer options, e.g. "-jobs=4 -workers=4" or
#                "-seed=1234" (see ./BUILD_DIR/fuzz_api -help=1)
#   FUZZ_HOOKS=1 build the library with -DPOOLKIT_ASAN as well (free pool
#                objects poisoned; pools then skip the inline fast paths)
#
# The library is instrumented for coverage without comparison tracing
# (-fno-sanitize-coverage=trace-cmp): its comparisons do not involve the
# input bytes, and leaving them out more than doubles the operations per
# second. The target itself is built with plain -fsanitize=fuzzer.
set -eu

seconds=${1:-60}
build=${2:-build-fuzz}
root=$(cd "$(dirname "$0")/.." && pwd)
CC=${CC:-clang}
FUZZ_ARGS=${FUZZ_ARGS:-}

case $seconds in
'' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2 ;;
esac
if ! command -v "$CC" >/dev/null 2>&1; then
    echo "fuzz.sh: $CC not found (Debian: apt-get install clang libclang-rt-dev)" >&2
    exit 2
fi

mkdir -p "$build/obj" "$build/artifacts"
build=$(cd "$build" && pwd)

san=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
common=(-std=c11 -D_GNU_SOURCE -O1 -g -pthread "${san[@]}") # _GNU_SOURCE: as CMake sets it
lib_flags=(-fsanitize=fuzzer-no-link -fno-sanitize-coverage=trace-cmp -fvisibility=hidden)
if [ "${FUZZ_HOOKS:-0}" = 1 ]; then lib_flags+=(-DPOOLKIT_ASAN); fi

# libFuzzer present?
probe=$build/obj/probe.c
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return !d + !n; }' \
    >"$probe"
if ! "$CC" -fsanitize=fuzzer "$probe" -o "$build/obj/probe" >/dev/null 2>&1; then
    major=$("$CC" -dumpversion | cut -d. -f1)
    echo "fuzz.sh: $CC cannot link -fsanitize=fuzzer" \
        "(Debian: apt-get install libclang-rt-$major-dev)" >&2
    exit 2
fi

echo "fuzz.sh: building the library and tests/fuzz/fuzz_api.c with $CC into $build"
pids=()
for src in "$root"/src/*/*.c; do
    case $src in */src/malloc/*) continue ;; esac
    "$CC" "${common[@]}" "${lib_flags[@]}" -I"$root/include" -I"$root/src" \
        -c "$src" -o "$build/obj/$(basename "${src%.c}").o" &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
libobjs=()
for src in "$root"/src/*/*.c; do
    case $src in */src/malloc/*) continue ;; esac
    libobjs+=("$build/obj/$(basename "${src%.c}").o")
done
"$CC" "${common[@]}" -fsanitize=fuzzer -Wall -Wextra -I"$root/include" \
    "$root/tests/fuzz/fuzz_api.c" "${libobjs[@]}" -o "$build/fuzz_api"

# The working corpus: what earlier runs kept, plus the committed one.
mkdir -p "$build/corpus"
if [ -d "$root/tests/fuzz/corpus" ]; then
    find "$root/tests/fuzz/corpus" -maxdepth 1 -type f ! -name '*.md' \
        -exec cp {} "$build/corpus/" \;
fi

# The sanitizers' runtimes want a fixed address-space layout on kernels with
# high mmap randomization: run with ASLR off where allowed (as the Makefile).
norandom=()
if setarch "$(uname -m)" -R true >/dev/null 2>&1; then norandom=(setarch "$(uname -m)" -R); fi

# Half the time as configured, half with every pool hardened
# (POOLKIT_HARDENED=1), whose checked links and encoded free lists are paths
# the first run never takes.
fuzz_once() { # LABEL SECONDS [VAR=VALUE]
    local label=$1 secs_asked=$2 extra=${3:-}
    local log=$build/fuzz-$label.log
    echo "fuzz.sh: fuzzing $label for ${secs_asked}s (log: $log)"
    echo "fuzz.sh: command: ${extra:+env $extra }${norandom[*]} $build/fuzz_api -max_total_time=$secs_asked -max_len=4096" \
        "-timeout=60 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=$build/artifacts/" \
        "$FUZZ_ARGS $build/corpus"
    set +e
    # shellcheck disable=SC2086 # FUZZ_ARGS is a list of options; extra is one VAR=VALUE or empty
    env $extra \
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        "${norandom[@]}" "$build/fuzz_api" -max_total_time="$secs_asked" -max_len=4096 -timeout=60 \
        -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$build/artifacts/" \
        $FUZZ_ARGS "$build/corpus" >"$log" 2>&1
    local rc=$?
    set -e

    local runs secs ops unit rate
    runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
    secs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\2/p' "$log" | tail -n 1)
    ops=$(sed -n 's/^fuzz_api: \([0-9]*\) operations in \([0-9]*\) inputs.*/\1/p' "$log" | tail -n 1)
    local seed
    seed=$(sed -n 's/^INFO: Seed: \([0-9]*\).*/\1/p' "$log" | head -n 1)
    echo "fuzz.sh: $label: seed ${seed:-unknown} (the same run again: FUZZ_ARGS=-seed=${seed:-N})"
    if [ "$rc" -ne 0 ]; then
        grep -E 'fuzz_api: |ERROR: |SUMMARY: |runtime error|Test unit written' "$log" |
            head -n 20 || true
        echo "fuzz.sh: the fuzzer ($label) stopped with status $rc after ${secs:-?}s; full log: $log"
        unit=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
        if [ -n "$unit" ]; then
            echo "fuzz.sh: replay with: ${extra:+env $extra }$build/fuzz_api $unit"
            echo "fuzz.sh: once fixed, keep it: cp $unit $root/tests/fuzz/corpus/<what-it-found>" \
                "(tests/fuzz/corpus/README.md)"
        fi
        exit "$rc"
    fi
    if [ -z "$runs" ] || [ -z "$ops" ]; then
        tail -n 20 "$log"
        echo "fuzz.sh: could not read the totals from $log" >&2
        exit 1
    fi
    rate=$(( ${secs:-0} > 0 ? ops / secs : ops ))
    echo "fuzz.sh: $label: $runs executions, $ops operations in ${secs}s ($rate operations/s), no finding"
}

half=$(( (seconds + 1) / 2 ))
fuzz_once as-configured "$half"
fuzz_once hardened "$(( seconds - half > 0 ? seconds - half : 1 ))" POOLKIT_HARDENED=1
