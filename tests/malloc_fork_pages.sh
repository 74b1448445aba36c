#!/bin/bash
# The faults per fork that the allocator adds (malloc_fork_pages.c), on
# each side, against the same program under the C library's malloc: at most
# PARENT_MORE in the parent and CHILD_MORE in the child. Symbols are bound
# at load in both runs, so that lazy binding in each child counts for
# neither. Fault counts, not times: the same on any machine's load.
#     malloc_fork_pages.sh PROGRAM LIBPOOLKIT_MALLOC PARENT_MORE CHILD_MORE
set -eu
prog=$1 lib=$2 parent_more=$3 child_more=$4
read -r _ libc_parent _ libc_child _ < <(LD_BIND_NOW=1 "$prog")
read -r _ pk_parent _ pk_child _ < <(LD_BIND_NOW=1 LD_PRELOAD="$lib" "$prog")
echo "faults per fork: C library parent $libc_parent child $libc_child; poolkit parent $pk_parent child $pk_child"
awk -v a="$pk_parent" -v b="$libc_parent" -v m="$parent_more" -v c="$pk_child" -v d="$libc_child" -v n="$child_more" '
    BEGIN {
        bad = 0
        if (a > b + m) { printf "the parent copies %.1f pages more a fork (at most %d)\n", a - b, m; bad = 1 }
        if (c > d + n) { printf "the child copies %.1f pages more a fork (at most %d)\n", c - d, n; bad = 1 }
        exit bad
    }'
