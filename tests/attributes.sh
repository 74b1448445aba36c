#!/usr/bin/env bash
# alloc.h's attributes reach the compiler (ctest alloc.attributes, gcc 11
# and later): freeing a block of each allocating call with the C library's
# free draws -Wmismatched-dealloc naming that call, pk_alloc's too where it
# is not inline (PK_NO_INLINE); the same blocks given to pk_free and
# pk_free_sized draw no warning at all.
#
# Usage: tests/attributes.sh CC INCLUDE_DIR
set -uo pipefail
cc=${1:?usage: attributes.sh CC INCLUDE_DIR} inc=${2:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

calls=("pk_zalloc(24)" "pk_calloc(3, 8)" "pk_aligned_alloc(64, 24)" "pk_aligned_zalloc(64, 24)"
       "pk_realloc(0, 24)" "pk_reallocarray(0, 3, 8)" "pk_realloc_aligned(0, 64, 24)")

check_warns() { # NAME CALL CFLAGS...
    local name=$1 call=$2
    shift 2
    printf '#include <poolkit/alloc.h>\n#include <stdlib.h>\nvoid f(void) { void *p = %s; free(p); }\n' \
        "$call" >"$work/m.c"
    if "$cc" -O2 -Wall -c "$@" -I"$inc" "$work/m.c" -o /dev/null 2>"$work/err"; then :; fi
    if ! grep -q 'Wmismatched-dealloc' "$work/err" || ! grep -q "${call%%(*}" "$work/err"; then
        echo "FAIL $name: free() of $call drew no -Wmismatched-dealloc naming it" >&2
        cat "$work/err" >&2
        fail=1
    fi
}
for c in "${calls[@]}"; do check_warns "$c" "$c"; done
check_warns "pk_alloc, PK_NO_INLINE" "pk_alloc(24)" -DPK_NO_INLINE

# the right deallocators: not a warning
for flags in "" "-DPK_NO_INLINE"; do
    {
        echo '#include <poolkit/alloc.h>'
        echo 'void f(void) {'
        for c in "${calls[@]}" "pk_alloc(24)"; do echo "    pk_free($c);"; done
        echo '    pk_free_sized(pk_alloc(24), 24);'
        echo '    pk_free_sized(pk_zalloc(24), 24);'
        echo '    pk_free_sized(pk_calloc(3, 8), 24);'
        echo '}'
    } >"$work/ok.c"
    if ! "$cc" -O2 -Wall -Wextra -Werror -c $flags -I"$inc" "$work/ok.c" -o /dev/null 2>"$work/err"; then
        echo "FAIL the right deallocators${flags:+ ($flags)} drew a warning:" >&2
        cat "$work/err" >&2
        fail=1
    fi
done
echo "attributes.sh: $([ $fail -eq 0 ] && echo "every pairing as declared" || echo FAILED)"
exit $fail
