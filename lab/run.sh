#!/usr/bin/env bash
# lab/run.sh BUILD_DIR [pk-lab run arguments...]: the whole lab, from a fresh
# machine to a report (what `make lab` runs).
#
#   1. scripts/lab-setup.sh: peers (Debian packages, as root), the project's
#      virtual environment (.venv, matplotlib), GNUstep and Zig via
#      lab/objc/setup.sh and lab/zig/setup.sh
#   2. configures BUILD_DIR (again, so that peers installed in step 1 are
#      found) and builds pk-lab
#   3. lab/objc/build.sh and lab/zig/build.sh BUILD_DIR/lab, if present: the
#      contender programs, next to pk-lab (a failure leaves their rows "not
#      available", with the reason)
#   4. pk-lab run ARGS (default: every experiment, default scale, into
#      lab-report/ under the current folder), then lab/report.py
#
# Examples: lab/run.sh build           (about five minutes on two cores)
#           lab/run.sh build --smoke   (seconds)
#           lab/run.sh build pool-pattern peers --full --out /tmp/report
set -uo pipefail

if [ $# -lt 1 ]; then
    echo "usage: lab/run.sh BUILD_DIR [pk-lab run arguments...]" >&2
    exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
build=$1
shift
say() { printf 'lab: %s\n' "$*"; }

mkdir -p "$build/lab" || exit 1
build=$(cd "$build" && pwd)
export PK_LAB_WHY_DIR=$build/lab

# 1. set-up (never fatal: what is missing becomes "not available")
bash "$root/scripts/lab-setup.sh" || say "set-up incomplete (see above); going on"

# 2. configure and build pk-lab
if [ -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" >/dev/null || exit 1
else
    gen=()
    command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
    cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
fi
cmake --build "$build" --target pk-lab || exit 1

# 3. the contender programs
contender_build() { # NAME SCRIPT
    local name=$1 script=$2 err why
    [ -f "$script" ] || return 0
    if [ -f "$build/lab/$name.why" ]; then
        say "$name: not built: $(cat "$build/lab/$name.why")"
        rm -f "$build/lab/$name"
        return 0
    fi
    err=$(mktemp)
    if sh "$script" "$build/lab" 2> >(tee "$err" >&2); then
        rm -f "$build/lab/$name.why"
    else
        sleep 0.1
        why=$(grep -v '^[[:space:]]*$' "$err" | tail -n 1)
        [ -n "$why" ] || why="$(basename "$(dirname "$script")")/build.sh failed"
        say "$name: $why"
        printf '%s\n' "$why" >"$build/lab/$name.why"
        rm -f "$build/lab/$name"
    fi
    rm -f "$err"
}
contender_build pk-lab-objc "$root/lab/objc/build.sh"
contender_build pk-lab-zig "$root/lab/zig/build.sh"

# 4. run, then the report
out=lab-report
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case ${args[i]} in
    --out) out=${args[i + 1]:-lab-report} ;;
    --out=*) out=${args[i]#--out=} ;;
    esac
done
case " $* " in
*" --out"*) ;;
*) args+=(--out "$out") ;;
esac
"$build/lab/pk-lab" run "${args[@]}"
rc=$?
if [ $rc -ne 0 ]; then
    say "pk-lab failed (status $rc)"
    exit $rc
fi
py=$root/.venv/bin/python
[ -x "$py" ] || py=python3
"$py" "$root/lab/report.py" "$out/results.json" || { say "the report failed"; exit 1; }
say "report: $(cd "$out" && pwd)/report.md (charts beside it; data in results.json)"
