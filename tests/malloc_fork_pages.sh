#!/bin/bash
# The faults per fork that the allocator adds (malloc_fork_pages.c), on
# each side, against the same program under the C library's malloc: at most
# PARENT_MORE in the parent and CHILD_MORE in the child. Symbols are bound
# at load in both runs, so that lazy binding in each child counts for
# neither. Fault counts, not times: the same on any machine's load.
#     malloc_fork_pages.sh PROGRAM LIBPOOLKIT_MALLOC PARENT_MORE CHILD_MORE
set -eu
prog=$1 lib=$2 parent_more=$3 child_more=$4
# A run that fails, or prints anything but its one line, fails the test.
libc=$(LD_BIND_NOW=1 "$prog")
pk=$(LD_BIND_NOW=1 LD_PRELOAD="$lib" "$prog")
echo "faults per fork: C library: $libc; poolkit: $pk"
echo "$libc $pk" | awk -v m="$parent_more" -v n="$child_more" '
    NF != 12 || $1 != "parent" || $7 != "parent" { print "unexpected output"; exit 1 }
    {
        bad = 0
        if ($8 > $2 + m) { printf "the parent copies %.1f pages more a fork (at most %d)\n", $8 - $2, m; bad = 1 }
        if ($10 > $4 + n) { printf "the child copies %.1f pages more a fork (at most %d)\n", $10 - $4, n; bad = 1 }
        exit bad
    }'
