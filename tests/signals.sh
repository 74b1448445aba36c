#!/usr/bin/env bash
# A program's SIGSEGV and SIGBUS under poolkit end as they end without it
# (ctest signals.preload, signals.linked). Each scenario of tests/signals.c
# runs first alone (the reference: a plain build, no poolkit), then under
# poolkit in default, hardened and debug mode, each in a child with a time
# limit; its exit status and its output must be the reference's, with no
# report of poolkit's. Scenarios: signals sent by raise, kill and
# pthread_kill, real faults outside poolkit's memory, the program's own
# handlers installed before and after poolkit's (SA_SIGINFO, SA_RESETHAND,
# SA_NODEFER, sa_mask, a handler that repairs the fault), an ignored signal
# and an ignored fault (which the kernel never ignores).
# Two more say what poolkit's handler is for: whether it is installed
# (never by the preload unless POOLKIT_FAULT_HANDLER=1 or
# POOLKIT_HARDENED=1, whose guard pages it explains; by the first pool in a
# linked program), and a free list broken by a write after free, which
# poolkit explains wherever its handler or its checks are on.
#
# Usage: tests/signals.sh preload PLAIN LIB      (PLAIN under LD_PRELOAD=LIB)
#        tests/signals.sh linked PLAIN LINKED    (LINKED: built with libpoolkit)
set -uo pipefail
ulimit -c 0

how=${1:?usage: signals.sh preload|linked PLAIN LIB|LINKED}
plain=${2:?} other=${3:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0 runs=0

# run NAME ENV... -- PROGRAM SCENARIO: sets status, out, err
run() {
    local name=$1
    shift
    local env=()
    while [ "$1" != "--" ]; do env+=("$1"); shift; done
    shift
    # in a subshell whose stderr is dropped: bash's own line on a child's
    # death by a signal would otherwise read like a failure
    (
        env -u LD_PRELOAD -u POOLKIT_DEBUG -u POOLKIT_HARDENED -u POOLKIT_FAULT_HANDLER "${env[@]}" \
            timeout -k 5 20 "$@" >"$work/out" 2>"$work/err"
        exit $?
    ) 2>/dev/null
    status=$?
    out=$(cat "$work/out")
    err=$(cat "$work/err")
    runs=$((runs + 1))
    if [ $status -eq 124 ] || [ $status -eq 137 ]; then
        bad "$name" "timed out (a hang)"
    fi
}

bad() {
    echo "FAIL $1: $2" >&2
    echo "  status $status; stdout: ${out:-(none)}; stderr: ${err:-(none)}" >&2
    fail=1
}

# The reference statuses, so that a broken scenario cannot pass by
# agreeing with itself: 139 and 135 are death by SIGSEGV and SIGBUS.
declare -A expect=(
    [raise-segv]=139 [raise-bus]=135 [kill-segv]=139 [kill-bus]=135 [thread-kill]=139
    [fault-segv]=139 [fault-bus]=135 [own-before]=7 [own-after]=7 [own-resethand]=139
    [own-nodefer]=7 [own-mask]=7 [own-fixes-fault]=0 [ignored]=0 [ignored-fault]=139
)
scenarios=(raise-segv raise-bus kill-segv kill-bus thread-kill fault-segv fault-bus own-before own-after
           own-resethand own-nodefer own-mask own-fixes-fault ignored ignored-fault)

if [ "$how" = preload ]; then
    prog=$plain
    pre=("LD_PRELOAD=$(realpath "$other")")
    # the preload takes no signal unless asked; asked, it must still hand every one on
    configs=("" "POOLKIT_FAULT_HANDLER=1")
else
    prog=$other
    pre=()
    configs=("")
fi
modes=("" "POOLKIT_HARDENED=1" "POOLKIT_DEBUG=1")

for s in "${scenarios[@]}"; do
    run "$s reference" -- "$plain" "$s"
    ref_status=$status ref_out=$out
    [ $status -eq "${expect[$s]}" ] || bad "$s reference" "ended $status without poolkit, not ${expect[$s]}"
    for c in "${configs[@]}"; do
        for m in "${modes[@]}"; do
            name="$s $how${c:+ $c}${m:+ $m}"
            run "$name" "${pre[@]}" $c $m -- "$prog" "$s"
            [ $status -eq $ref_status ] || bad "$name" "ended $status, without poolkit $ref_status"
            [ "$out" = "$ref_out" ] || bad "$name" "printed other than without poolkit (${ref_out:-nothing})"
            # (debug mode's leak report at exit names what the C library kept)
            if grep -v '^poolkit: leak:' <<<"$err" | grep -q 'poolkit:'; then
                bad "$name" "poolkit reported a signal that is not its own"
            fi
        done
    done
done

# Whether poolkit's handler is installed.
disposition() { # WANT ENV...
    local want=$1
    shift
    run "disposition $how $*" "${pre[@]}" "$@" -- "$prog" disposition
    [ "$out" = "SIGSEGV: $want" ] || bad "disposition $how $*" "want 'SIGSEGV: $want'"
}
if [ "$how" = preload ]; then
    disposition default
    disposition "a handler" POOLKIT_HARDENED=1
    disposition default POOLKIT_HARDENED=1 POOLKIT_FAULT_HANDLER=0
    disposition "a handler" POOLKIT_FAULT_HANDLER=1
else
    disposition "a handler"
    disposition default POOLKIT_FAULT_HANDLER=0
fi

# A free list broken by a write after free: explained by the handler in
# default mode, by the checks in hardened and debug mode. The preload
# without its handler dies of the fault, as any allocator's program would.
corrupt() { # WANT ENV...: WANT is "report" or "fault"
    local want=$1
    shift
    run "corrupt $how $*" "${pre[@]}" "$@" -- "$prog" corrupt
    if [ "$want" = report ]; then
        case $err in *poolkit:*) ;; *) bad "corrupt $how $*" "no report of poolkit's" ;; esac
        [ $status -ne 0 ] || bad "corrupt $how $*" "ran on after the report"
    else
        [ $status -eq 139 ] || bad "corrupt $how $*" "did not die of the fault"
        case $err in *poolkit:*) bad "corrupt $how $*" "reported with the handler off" ;; esac
    fi
}
for m in "${modes[@]}"; do
    if [ "$how" = preload ]; then
        corrupt report POOLKIT_FAULT_HANDLER=1 $m
    else
        corrupt report $m
    fi
done
if [ "$how" = preload ]; then
    corrupt fault
    corrupt report POOLKIT_HARDENED=1
    corrupt report POOLKIT_DEBUG=1
else
    corrupt fault POOLKIT_FAULT_HANDLER=0
fi

echo "signals.sh $how: $runs runs, $([ $fail -eq 0 ] && echo "every one as without poolkit" || echo FAILED)"
exit $fail
