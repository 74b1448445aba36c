#!/usr/bin/env bash
# Real programs under libpoolkit-malloc (ctest malloc.programs): Debian's
# jq, sqlite3, xmllint, perl and python3 over small generated inputs, each
# run plainly and with LD_PRELOAD=LIB (also with every class pool hardened,
# and in debug mode), their stdout compared byte for byte with the plain
# run's. Each preloaded run also writes poolkit's report at exit
# (POOLKIT_STATS), which shows that the program's allocations went through
# the size classes: a run where the library was not loaded fails. Every
# run, plain or not, has a limit on its address space (ulimit -v, 256 MiB,
# RLIMIT_AS: what batch schedulers and sandboxes set), which the plain
# runs keep well within: the library must need no address space it does
# not use.
#
# Usage: tests/malloc_programs.sh LIB
# The programs come with scripts/setup.sh (make test's first stage).
set -uo pipefail

lib=$(realpath "${1:?usage: malloc_programs.sh path/to/libpoolkit-malloc.so}") || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

for p in /usr/bin/jq /usr/bin/sqlite3 /usr/bin/xmllint /usr/bin/perl /usr/bin/python3; do
    if [ ! -x "$p" ]; then
        echo "malloc_programs: $p is not installed (scripts/setup.sh installs it)" >&2
        exit 1
    fi
done

/usr/bin/python3 - "$work" <<'PY'
import json, random, sys
d = sys.argv[1]
r = random.Random(7)
recs = [{"id": i, "name": "user %d" % i, "city": "city%d" % r.randrange(30),
         "score": r.randrange(1000), "tags": ["t%d" % r.randrange(20) for _ in range(r.randrange(4))]}
        for i in range(20000)]
json.dump(recs, open(d + "/records.json", "w"))
with open(d + "/catalog.xml", "w") as f:
    f.write("<catalog>\n")
    for i in range(20000):
        f.write('<item id="%d" kind="%s"><name>item %d</name><tag>t%d</tag></item>\n'
                % (i, "abc"[r.randrange(3)], i, r.randrange(50)))
    f.write("</catalog>\n")
PY
cat >"$work/script.sql" <<'SQL'
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, grp INTEGER);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 30000)
  INSERT INTO t SELECT x, 'name ' || x, x % 97 FROM c;
CREATE INDEX t_grp ON t(grp);
SELECT grp, count(*), max(name) FROM t GROUP BY grp ORDER BY grp;
SQL
cat >"$work/script.pl" <<'PL'
my %h; my $t = 0;
for my $i (1 .. 30000) { push @{$h{"k" . ($i % 977)}}, [$i, "v$i", {a => $i % 13}]; }
for my $k (sort keys %h) { $t += scalar(@{$h{$k}}) + length($k); }
print "$t\n";
PL
cat >"$work/script.py" <<'PY'
d = {}
for i in range(30000):
    d["k%d" % (i % 977)] = [i, str(i), list(range(i % 80)), {"a": i}]
print(sum(len(v[2]) for v in d.values()), len(sorted(d)))
PY

limit_kb=262144

# name, then the command (run in $work)
run_case() {
    local name=$1
    shift
    (cd "$work" && ulimit -v $limit_kb && "$@") >"$work/$name.plain" 2>"$work/$name.plain.err" || {
        echo "malloc_programs: $name fails without the library: $(tail -n 1 "$work/$name.plain.err")" >&2
        fail=1
        return
    }
    local mode env
    for mode in default hardened debug; do
        env=(LD_PRELOAD="$lib" POOLKIT_STATS=1)
        [ $mode = hardened ] && env+=(POOLKIT_HARDENED=1)
        [ $mode = debug ] && env+=(POOLKIT_DEBUG=1 POOLKIT_DEBUG_FRAMES=4)
        if ! (cd "$work" && ulimit -v $limit_kb && env "${env[@]}" "$@") >"$work/$name.$mode" 2>"$work/$name.$mode.err"; then
            echo "malloc_programs: $name ($mode) failed: $(grep -m1 poolkit "$work/$name.$mode.err" || tail -n 1 "$work/$name.$mode.err")" >&2
            fail=1
        elif ! grep -q "size classes made" "$work/$name.$mode.err"; then
            echo "malloc_programs: $name ($mode): no poolkit report: the library was not loaded" >&2
            fail=1
        elif ! cmp -s "$work/$name.plain" "$work/$name.$mode"; then
            echo "malloc_programs: $name ($mode): output differs from the plain run" >&2
            diff "$work/$name.plain" "$work/$name.$mode" | head -5 >&2
            fail=1
        else
            echo "malloc_programs: $name ($mode): $(wc -c <"$work/$name.$mode") bytes, identical"
        fi
    done
}

run_case jq /usr/bin/jq -c 'group_by(.city) | map({city: .[0].city, n: length, s: (map(.score) | add), t: (map(.tags[]) | unique)})' records.json
run_case xmllint /usr/bin/xmllint --xpath "concat(count(//item[@kind='b']), ' ', count(//tag), ' ', string-length(string(/catalog)))" catalog.xml
run_case sqlite3 sh -c '/usr/bin/sqlite3 :memory: < script.sql'
run_case perl /usr/bin/perl script.pl
run_case python3 /usr/bin/python3 script.py

[ $fail = 0 ] && echo "malloc_programs: every program's output identical under libpoolkit-malloc"
exit $fail
