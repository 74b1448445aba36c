#!/usr/bin/env bash
# Runs every benchmark in order and ends with all their target lines.
#
# Usage: bench/run.sh BUILD_DIR [--quick] [other options passed to every program]
#
# Order: hot loop (inline, static), hot loop through calls (shared), the hot
# loop over 1,000 pools and 20 processes (bench_spread), the size-class
# front end's hot loop against the typed pool (bench_frontend) and its
# classes measured on real workloads' requests (bench_classes), its large
# blocks against glibc's in one process (bench_large; the same shape
# preloaded runs after the programs), random
# fill pattern, memory, cross-thread, the thread shapes (steady
# state, cache-scratch, remote batches, many pools), threads that come and go
# (bench_mstress: peak RSS over iterations; bench_larson: live sets handed
# to new threads), binary-trees, objects and containers
# (when built), then the programs at realistic scale (working sets,
# many pools, an arena per task), then the hot loop against earlier builds
# of this repository (bench/refs.sh: round one's and the previous release's
# libraries, built once into BUILD_DIR/ref/ from git), then the
# instruction-count gate (bench/gate.sh, when valgrind is installed).
# Each command is printed before it runs, so any one can be rerun alone.
# The hardened pool's targets (PK_POOL_HARDENED against the default pool, in one
# run) are lines of bench_hotloop, bench_xthread, bench_threads (the steady
# state), bench_bintrees and bench_workset; gate.sh prints the hardened
# pair's instruction count beside.
# About 4 minutes on a quiet 2-core machine (the working sets take about 1.5
# of them; twice that under heavy load); --quick takes about a third of that.
# After the programs, shapes run as programs of their own with and without
# libpoolkit-malloc.so: malloc-large's, buffers grown together by realloc,
# threads allocating and freeing in rounds at once, random lifetimes and
# sizes (alloc-test's shape), batches freed by another thread with threads
# replaced (rptest's), a program that forks
# again and again, bursts after silences and bursts by threads that end.
# Timing targets are reported, not enforced (a shared machine is noisy): the
# exit status is non-zero only when a program fails to run. The gate that
# fails `make test` is bench/gate.sh.
set -u

build=${1:-}
if [ -z "$build" ]; then
    echo "usage: $0 BUILD_DIR [--quick]" >&2
    exit 2
fi
shift
here=$(cd "$(dirname "$0")" && pwd)

find_prog() {
    local cand
    for cand in "$build/bench/$1" "$build/$1" "$build/tests/$1"; do
        if [ -x "$cand" ]; then
            echo "$cand"
            return 0
        fi
    done
    return 1
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
start=$(date +%s)

for name in bench_hotloop bench_hotloop_shared bench_spread bench_frontend bench_classes bench_large bench_pattern bench_memory bench_xthread \
    bench_threads bench_mstress bench_larson bench_bintrees bench_objects bench_containers bench_workset bench_manypools bench_arenas bench_heapcost bench_heapchurn; do
    if ! prog=$(find_prog "$name"); then
        if [ "$name" != bench_objects ] && [ "$name" != bench_containers ]; then
            echo "== $name: not built (cmake --build $build)" | tee -a "$log"
            status=1
        fi
        continue
    fi
    echo
    echo "\$ $prog $*"
    "$prog" "$@" 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    if [ "$rc" != 0 ]; then
        echo "!! $name exited with status $rc" | tee -a "$log"
        status=1
    fi
done

# Runs a part of the script: its command's output logged; a failure is
# named (the first argument) and makes the exit status non-zero.
part() {
    local failed=$1
    shift
    echo
    "$@" 2>&1 | tee -a "$log"
    if [ "${PIPESTATUS[0]}" != 0 ]; then
        echo "!! $failed" | tee -a "$log"
        status=1
    fi
}

# The median of its arguments (numbers).
median() {
    printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# The malloc-large shape preloaded: the same program (loop time and minor
# faults, its own getrusage) with and without libpoolkit-malloc.so, in
# interleaved pairs; the ratios' medians make a target line as
# bench_large's do.
large_preloaded() {
    local prog lib iters=1000 pairs=3 i g p times="" faults=""
    prog=$(find_prog malloc_large) || { echo "== malloc_large: not built"; return 1; }
    lib=$(ls "$build"/libpoolkit-malloc.so.* "$build"/src/libpoolkit-malloc.so.* 2>/dev/null | head -n 1)
    [ -n "$lib" ] || { echo "== malloc_large: libpoolkit-malloc.so not built"; return 1; }
    for arg in "$@"; do [ "$arg" = --quick ] && iters=300; done
    echo "== large blocks preloaded: malloc-large's shape as a program of its own, $pairs interleaved pairs"
    echo "commands: $prog $iters; LD_PRELOAD=$lib $prog $iters"
    for i in $(seq "$pairs"); do
        g=$("$prog" "$iters") || return 1
        p=$(LD_PRELOAD="$lib" "$prog" "$iters") || return 1
        echo "  glibc:   $g"
        echo "  poolkit: $p"
        # "malloc-large: N iterations, T s, F minor faults, M mappings": T is
        # field 4, F field 6, ten fields a line.
        times="$times $(echo "$p $g" | awk '{printf "%.4f", $4 / $14}')"
        faults="$faults $(echo "$p $g" | awk '{printf "%.4f", $6 / $16}')"
    done
    local mt mf
    mt=$(median $times)
    mf=$(median $faults)
    echo "$mt $mf $pairs" | awk '{printf "target: large blocks 5-25 MiB, preloaded: poolkit %.2fx glibc time (target <= 1.2x), faults %.2fx (target <= 2x) (median of %d pairs)  -> %s\n", $1, $2, $3, ($1 <= 1.2 && $2 <= 2) ? "PASS" : "FAIL"}'
}
part "the preloaded malloc-large run failed" large_preloaded "$@"

# The peers the system has, a line each: NAME PATH (mimalloc, jemalloc,
# tcmalloc: ldconfig's names), and mimalloc 3 (libmimalloc3) where the lab's
# set-up installed it (PyPI's cmeel-mimalloc in the project's .venv, as
# pk-lab finds it) or PK_LAB_MIMALLOC3 names its libmimalloc.so.3.
peer_libs() {
    local peer out
    for peer in libmimalloc.so.2 libjemalloc.so.2 libtcmalloc_minimal.so.4; do
        out=$(ldconfig -p 2>/dev/null | awk -v n="$peer" '$1 == n {print $NF; exit}')
        [ -n "$out" ] && echo "${peer%%.so*} $out"
    done
    out=${PK_LAB_MIMALLOC3:-}
    [ -n "$out" ] || out=$(compgen -G "$here/../.venv/lib/python3*/site-packages/cmeel.prefix/lib/libmimalloc.so.3" | head -n 1)
    if [ -n "$out" ] && [ -f "$out" ]; then echo "libmimalloc3 $out"; fi
}

# NAME: the caller's prog (the program NAME), lib (libpoolkit-malloc.so)
# and pre (each allocator by name: poolkit, glibc's "", the peers'
# libraries); 1 with a line saying so where one is not there.
preload_set() {
    local name out
    prog=$(find_prog "$1") || { echo "== $1: not built"; return 1; }
    lib=$(ls "$build"/libpoolkit-malloc.so.* "$build"/src/libpoolkit-malloc.so.* 2>/dev/null | head -n 1)
    [ -n "$lib" ] || { echo "== $1: libpoolkit-malloc.so not built"; return 1; }
    pre[poolkit]=$lib
    pre[glibc]=""
    while read -r name out; do pre[$name]=$out; done < <(peer_libs)
}

# ARGS ROUNDS TIME_FIELD PEAK_FIELD: the caller's prog with ARGS under each
# of its pre, in interleaved rounds, each line printed; the line's field
# TIME_FIELD joins the caller's times[name], and where PEAK_FIELD is not 0
# the lowest of field PEAK_FIELD is the caller's peak[name].
preload_rounds() {
    local args=$1 rounds=$2 tf=$3 pf=$4 i name out
    echo "commands: $prog $args; LD_PRELOAD=$lib $prog $args"
    for i in $(seq "$rounds"); do
        for name in "${!pre[@]}"; do
            out=$(LD_PRELOAD="${pre[$name]}" "$prog" $args) || return 1
            echo "  $name: $out"
            times[$name]="${times[$name]:-} $(echo "$out" | awk -v f="$tf" '{print $f}')"
            [ "$pf" = 0 ] || peak[$name]=$(echo "$out ${peak[$name]:-0}" | awk -v f="$pf" '{print $NF && $NF < $f ? $NF : $f}')
        done
    done
}

# The fastest of the caller's runs but poolkit's: NAME MEDIAN, from the
# caller's arrays pre (a name each) and times (each name's times).
fastest_other() {
    local name m best="" bt=""
    for name in "${!pre[@]}"; do
        [ "$name" = poolkit ] && continue
        m=$(median ${times[$name]})
        if [ -z "$bt" ] || awk -v a="$m" -v b="$bt" 'BEGIN {exit !(a < b)}'; then best=$name bt=$m; fi
    done
    echo "$best $bt"
}

# Buffers grown together by realloc, preloaded: the same program with and
# without libpoolkit-malloc.so in interleaved pairs, and once under each
# peer the system has (mimalloc, jemalloc, tcmalloc: ldconfig's names); the medians
# of poolkit's ratios to glibc make a target line, with its peak beside
# the lowest peak of all (poolkit's: its last run's).
grow_preloaded() {
    local prog lib pairs=3 args="" i g p pk peer times="" peaks="" low
    prog=$(find_prog malloc_grow) || { echo "== malloc_grow: not built"; return 1; }
    lib=$(ls "$build"/libpoolkit-malloc.so.* "$build"/src/libpoolkit-malloc.so.* 2>/dev/null | head -n 1)
    [ -n "$lib" ] || { echo "== malloc_grow: libpoolkit-malloc.so not built"; return 1; }
    for arg in "$@"; do [ "$arg" = --quick ] && args="400" && pairs=2; done
    echo "== buffers grown together by realloc, preloaded: $pairs interleaved pairs"
    echo "commands: $prog $args; LD_PRELOAD=$lib $prog $args"
    for i in $(seq "$pairs"); do
        g=$("$prog" $args) || return 1
        p=$(LD_PRELOAD="$lib" "$prog" $args) || return 1
        echo "  glibc:   $g"
        echo "  poolkit: $p"
        # "malloc-grow: N buffers by S B to A-B B, T s, F minor faults, peak RSS K KiB, L KiB live":
        # T is field 10, K field 17.
        times="$times $(echo "$p $g" | awk '{n = NF / 2; printf "%.4f", $10 / $(n + 10)}')"
        peaks="$peaks $(echo "$p $g" | awk '{n = NF / 2; printf "%.4f", $17 / $(n + 17)}')"
        low=$(echo "$g" | awk '{print $17}')
        pk=$(echo "$p" | awk '{print $17}')
    done
    while read -r _ peer; do
        g=$(LD_PRELOAD="$peer" "$prog" $args) || continue
        echo "  $(basename "$peer"): $g"
        low=$(echo "$g $low" | awk '{print $17 < $NF ? $17 : $NF}')
    done < <(peer_libs)
    echo "$(median $times) $(median $peaks) $pk $low $pairs" | awk '{printf "target: buffers grown together by realloc, preloaded: poolkit %.2fx glibc time (target <= 1x), peak RSS %.2fx glibc (median of %d pairs), %.2fx the lowest peak of all (%d vs %d KiB; target <= 1.2x)  -> %s\n", $1, $2, $5, $3 / $4, $3, $4, ($1 <= 1 && $3 <= 1.2 * $4) ? "PASS" : "FAIL"}'
}
part "the preloaded malloc-grow runs failed" grow_preloaded "$@"

# The same buffers grown by threads in turn, each created once the last
# has exited and freeing its buffers (malloc_grow's THREADS): poolkit,
# glibc and each peer the system has, in interleaved rounds; poolkit's
# median time against the fastest peer's, its peak against the lowest.
grow_threads_preloaded() {
    local prog lib rounds=3 args="300 262144 512 20" name
    local -A pre times peak
    preload_set malloc_grow || return 1
    for arg in "$@"; do [ "$arg" = --quick ] && args="300 262144 512 8" && rounds=2; done
    echo "== buffers grown by threads in turn, preloaded: $rounds interleaved rounds"
    # "... by N threads in turn, T s, F minor faults, peak RSS K KiB, ...": T is field 15, K field 22.
    preload_rounds "$args" "$rounds" 15 22 || return 1
    local best bt low="" lp=""
    read -r best bt < <(fastest_other)
    for name in "${!pre[@]}"; do
        if [ -z "$lp" ] || [ "${peak[$name]}" -lt "$lp" ]; then low=$name lp=${peak[$name]}; fi
    done
    echo "$(median ${times[poolkit]}) $bt ${peak[poolkit]} $lp $best $low" | awk '{printf "target: buffers grown by threads in turn, preloaded: poolkit %.2fx the fastest other'"'"'s time (%s; target <= 1x), peak RSS %.2fx the lowest (%s, %d vs %d KiB; target <= 1.5x)  -> %s\n", $1 / $2, $5, $3 / $4, $6, $3, $4, ($1 <= $2 && $3 <= 1.5 * $4) ? "PASS" : "FAIL"}'
}
part "the preloaded malloc-grow runs by threads failed" grow_threads_preloaded "$@"

# NAME ARGS QUICK_ARGS FIELD WHAT UNIT [--quick]: the program NAME under
# poolkit, glibc and each peer the system has, in interleaved rounds (2,
# with QUICK_ARGS, under --quick), and a target line: poolkit's median of
# its output's field FIELD (a time in UNIT) against the fastest other's.
against_fastest() {
    local name=$1 args=$2 quick=$3 field=$4 what=$5 unit=$6 prog lib rounds=3 best bt
    shift 6
    local -A pre times
    preload_set "$name" || return 1
    for arg in "$@"; do [ "$arg" = --quick ] && args=$quick && rounds=2; done
    echo "== $what, preloaded: $rounds interleaved rounds"
    preload_rounds "$args" "$rounds" "$field" 0 || return 1
    read -r best bt < <(fastest_other)
    echo "$(median ${times[poolkit]}) $bt" | awk -v b="$best" -v w="$what" -v u="$unit" '{printf "target: %s, preloaded: poolkit %.2fx the fastest other'"'"'s time (%s, %.2f vs %.2f %s; target <= 1x)  -> %s\n", w, $1 / $2, b, $1, $2, u, $1 <= $2 ? "PASS" : "FAIL"}'
}

# Threads that allocate a batch and free it, round after round, at once
# (malloc_rounds). "rounds: G generations of T threads, R rounds of C
# blocks of 16-S B: N ns a pair, ...": N is field 15.
rounds_preloaded() {
    against_fastest malloc_rounds "100 2 200 10000 300" "40 2 200 10000 300" 15 \
        "threads allocating and freeing in rounds at once" "ns a pair" "$@"
}
part "the preloaded malloc-rounds runs failed" rounds_preloaded "$@"

# Random lifetimes and sizes, each thread on its own (alloc-test's shape:
# malloc_random). "random: T threads, S slots, N steps, 5 B-M B: X ns a
# step, ...": X is field 11.
random_preloaded() {
    against_fastest malloc_random "2 131072 10000000 10" "2 131072 3000000 10" 11 \
        "random lifetimes and sizes, a thread each" "ns a step" "$@"
}
part "the preloaded malloc-random runs failed" random_preloaded "$@"

# Mixed sizes to 16,000 B, batches freed by the next thread, the threads
# replaced (rptest's shape with larson's hand-overs: malloc_cross). "cross:
# G generations of T threads, ..., 8-M B: X ns a call, ...": X is field 13.
cross_preloaded() {
    against_fastest malloc_cross "100 2 500 1000 16000" "40 2 500 1000 16000" 13 \
        "mixed sizes, batches freed by another thread, threads replaced" "ns a call" "$@"
}
part "the preloaded malloc-cross runs failed" cross_preloaded "$@"

# A program holding blocks of some forty classes that forks again and
# again, each child exiting at once (tests/malloc_fork_pages.c), symbols
# bound at load: lazy binding in each child would weigh on every allocator
# alike. "parent P child C us U": U, microseconds a fork, is field 6.
fork_preloaded() {
    local -x LD_BIND_NOW=1
    against_fastest malloc_fork_pages 3000 1000 6 "fork with blocks of forty classes live" "us a fork" "$@"
}
part "the preloaded fork runs failed" fork_preloaded "$@"

# Bursts after silences, and bursts each by a thread that ends, preloaded:
# the same program with and without libpoolkit-malloc.so, a shape at a
# time; the target: from the third burst on, poolkit faults in at most a
# hundredth of what its first burst did (the memory stays over the
# silences and the exits) and takes at most glibc's time.
bursts_preloaded() {
    local prog lib bursts=5 shape args g p
    prog=$(find_prog malloc_bursts) || { echo "== malloc_bursts: not built"; return 1; }
    lib=$(ls "$build"/libpoolkit-malloc.so.* "$build"/src/libpoolkit-malloc.so.* 2>/dev/null | head -n 1)
    [ -n "$lib" ] || { echo "== malloc_bursts: libpoolkit-malloc.so not built"; return 1; }
    # COUNT SIZE SILENCE_MS, THREADS after the bursts (1: a thread a burst, no silence); sizes
    # listed: the bursts take them in turn (objects that change size between phases)
    local -a shapes=("1000000 32 700|0" "10000 4000 700|0" "40 1048576 700|0" "1000000 32 0|1" "10000 4000 0|1"
        "1000000 64,48,128 0|0")
    for arg in "$@"; do [ "$arg" = --quick ] && shapes=("1000000 32 700|0" "10000 4000 0|1") && bursts=4; done
    echo "== bursts after silences, and bursts by threads that end, preloaded: $bursts bursts a run, each block written in full"
    for shape in "${shapes[@]}"; do
        args="${shape%|*} $bursts ${shape#*|}"
        echo "commands: $prog $args; LD_PRELOAD=$lib $prog $args"
        g=$("$prog" $args | tail -n 1) || return 1
        p=$(LD_PRELOAD="$lib" "$prog" $args | tail -n 1) || return 1
        echo "  glibc:   $g"
        echo "  poolkit: $p"
        # "bursts: C x S B, silences of M ms: burst 1 T ms F faults, burst 2 T ms F faults,
        # bursts 3-N T ms F faults (mean), peak RSS K KiB": burst 1's faults are field 14, the
        # rest's time 24, faults 26, the peak the line's last but one. A thread a burst adds
        # ", a thread each" (three fields) before the peak.
        if [[ $shape == *,* ]]; then
            echo "$p $g" | awk '{n = NF / 2; printf "target: bursts of %s x %s B in turn, preloaded: peak RSS %.2fx glibc (%d vs %d KiB; target <= 1x), bursts 3-%s %.2fx glibc time (target <= 1x)  -> %s\n", $2, $4, $(n - 1) / $(NF - 1), $(n - 1), $(NF - 1), substr($23, 3), $24 / $(n + 24), ($(n - 1) <= $(NF - 1) && $24 <= $(n + 24)) ? "PASS" : "FAIL"}'
            continue
        fi
        echo "$p $g" | awk '{n = NF / 2; printf "target: bursts of %s x %s B %s, preloaded: bursts 3-%s %.0f faults (first burst %s; target <= 1%%), %.2fx glibc time (target <= 1x)  -> %s\n", $2, $4, (n > 32 ? "by threads that end" : "after silences of " $8 " ms"), substr($23, 3), $26, $14, $24 / $(n + 24), ($26 <= $14 / 100 && $24 <= $(n + 24)) ? "PASS" : "FAIL"}'
    done
}
part "the preloaded bursts runs failed" bursts_preloaded "$@"

# Memory that moves from large blocks to small objects, preloaded: a phase
# of 600 KB blocks (256 MiB), then one of 24 B objects (128 MiB), then the
# large blocks again; the target: a peak at most 1.1x glibc's (the freed
# blocks' pages go back as the small objects take fresh ones). Beside it,
# phases of 1 MiB blocks and 64 B objects in turn, sixteen of them: bursts
# 3-16 at most glibc's time (the gives pause once the program takes its
# pages back: FIT_GIVE_REGRET, policy.h), the peak printed.
shift_preloaded() {
    local prog lib g p
    prog=$(find_prog malloc_bursts) || { echo "== malloc_bursts: not built"; return 1; }
    lib=$(ls "$build"/libpoolkit-malloc.so.* "$build"/src/libpoolkit-malloc.so.* 2>/dev/null | head -n 1)
    [ -n "$lib" ] || { echo "== malloc_bursts: libpoolkit-malloc.so not built"; return 1; }
    echo "== memory that moves from large blocks to small objects, preloaded"
    for args in "1 614400x437,24x5592405 0 3 0" "1 1048576x200,64x2000000 0 16 0"; do
        echo "commands: $prog $args; LD_PRELOAD=$lib $prog $args"
        g=$("$prog" $args | tail -n 1) || return 1
        p=$(LD_PRELOAD="$lib" "$prog" $args | tail -n 1) || return 1
        echo "  glibc:   $g"
        echo "  poolkit: $p"
        if [ "${args% 0 3 0}" != "$args" ]; then
            echo "$p $g" | awk '{n = NF / 2; printf "target: a phase of large blocks, then small objects (%s), preloaded: peak RSS %.2fx glibc (%d vs %d KiB; target <= 1.1x)  -> %s\n", $4, $(n - 1) / $(NF - 1), $(n - 1), $(NF - 1), $(n - 1) <= 1.1 * $(NF - 1) ? "PASS" : "FAIL"}'
        else
            echo "$p $g" | awk '{n = NF / 2; printf "target: phases of large blocks and small objects in turn (%s), preloaded: bursts 3-%s %.2fx glibc time (target <= 1x); peak RSS %.2fx glibc (informative)  -> %s\n", $4, substr($23, 3), $24 / $(n + 24), $(n - 1) / $(NF - 1), $24 <= $(n + 24) ? "PASS" : "FAIL"}'
        fi
    done
}
part "the preloaded shift runs failed" shift_preloaded

# Hardened against default under the preload: real programs (those
# installed of python3, perl, sqlite3), each with POOLKIT_HARDENED=0 and =1
# in interleaved pairs, wall time; the median of each program's ratios
# makes a target line.
hardened_preloaded() {
    local lib pairs=5 i t0 t1 ratios name
    lib=$(ls "$build"/libpoolkit-malloc.so.* "$build"/src/libpoolkit-malloc.so.* 2>/dev/null | head -n 1)
    [ -n "$lib" ] || { echo "== hardened preloaded: libpoolkit-malloc.so not built"; return 1; }
    for arg in "$@"; do [ "$arg" = --quick ] && pairs=3; done
    local -a progs=(
        "python3|python3 -c 'import json; d = {str(i): [i, str(i) * 3, {\"k\": i}] for i in range(200000)}; print(len(json.loads(json.dumps(d))))'"
        "perl|perl -e 'my %h; \$h{\$_} = [\$_, \"x\" x (\$_ % 300)] for 1 .. 300000; my \$n = 0; \$n += length(\$h{\$_}[1]) for keys %h; print \"\$n\\n\"'"
        "sqlite3|sqlite3 :memory: 'create table t(a, b); with recursive c(x) as (select 1 union all select x + 1 from c where x < 300000) insert into t select x, printf(\"%0*d\", x % 200, x) from c; create index i on t(b); select count(*), sum(length(b)) from t;'"
    )
    echo "== hardened preloaded: POOLKIT_HARDENED=1 against 0 under LD_PRELOAD=$lib, $pairs interleaved pairs each"
    for entry in "${progs[@]}"; do
        name=${entry%%|*}
        command -v "$name" >/dev/null 2>&1 || { echo "  $name: not installed"; continue; }
        echo "command: LD_PRELOAD=$lib POOLKIT_HARDENED=0|1 ${entry#*|}"
        ratios=""
        for i in $(seq "$pairs"); do
            t0=$( { /usr/bin/time -f %e env LD_PRELOAD="$lib" POOLKIT_HARDENED=0 sh -c "${entry#*|}" >/dev/null; } 2>&1 | tail -n 1)
            t1=$( { /usr/bin/time -f %e env LD_PRELOAD="$lib" POOLKIT_HARDENED=1 sh -c "${entry#*|}" >/dev/null; } 2>&1 | tail -n 1)
            echo "  $name: default $t0 s, hardened $t1 s"
            ratios="$ratios $(echo "$t1 $t0" | awk '{printf "%.4f", $1 / $2}')"
        done
        median $ratios | awk -v n="$name" -v k="$pairs" '{printf "target: %s preloaded, POOLKIT_HARDENED=1 <= 1.15x the default: %.2fx (median of %d pairs)  -> %s\n", n, $1, k, $1 <= 1.15 ? "PASS" : "FAIL"}'
    done
}
if [ -x /usr/bin/time ]; then
    part "the hardened preloaded runs failed" hardened_preloaded "$@"
fi

echo
echo "\$ $here/refs.sh $build $*"
bash "$here/refs.sh" "$build" "$@" 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" != 0 ]; then
    echo "!! refs.sh exited with status $rc" | tee -a "$log"
    status=1
fi

echo
if command -v valgrind >/dev/null 2>&1; then
    echo "\$ $here/gate.sh $build"
    "$here/gate.sh" "$build" 2>&1 | tee -a "$log"
else
    echo "instruction-count gate skipped: valgrind not installed" | tee -a "$log"
fi

# A peer the system has must be measured: a load that failed for any reason
# but a missing file (a program that did not make room for jemalloc's
# static TLS, lab/shared.h) would leave it out of every "best peer" figure.
if grep -E 'not loadable \(install' "$log" | grep -v 'No such file' | sort -u | grep .; then
    echo "!! a peer the system has could not be loaded (above): its rows and the best-peer figures leave it out" |
        tee -a "$log"
    status=1
fi

echo
echo "== summary of targets ($(($(date +%s) - start)) s)"
grep -E '^target: ' "$log" || echo "(no target lines)"
exit "$status"
