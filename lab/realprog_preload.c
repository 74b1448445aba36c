/* realprog's unchanged programs (realprog.h, exp_realprog.c): Debian's jq,
 * xmllint, sqlite3, perl and python3 (from /usr/bin by full path, so that
 * no wrapper on PATH, pyenv's say, runs instead) over inputs generated into the run's
 * scratch folder, each started with LD_PRELOAD naming an allocator's own
 * preload library (or none: glibc), through pk-lab-spawn (realprog_spawn.c):
 * wall time from its fork to the end of its wait4, the program's peak RSS
 * from that wait4's rusage, and a hash of its stdout. A program that exits non-zero, or a preload the dynamic loader
 * refuses (it says so on stderr and runs on without it), is a failed run. */
#include "lab.h"
#include "realprog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>


/* ---- inputs ---- */

static int write_file(const char *path, const char *data, size_t len) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    size_t w = fwrite(data, 1, len, f);
    return fclose(f) == 0 && w == len ? 0 : -1;
}

static int write_text(const char *path, const char *fmt, long n, long m) {
    char buf[4096];
    int len = snprintf(buf, sizeof buf, fmt, n, m);
    return len > 0 && (size_t)len < sizeof buf ? write_file(path, buf, (size_t)len) : -1;
}

/* sqlite3's script: the hook workload's tables, filled by the shell itself
 * (recursive CTEs), indexed, and queried with a join and lookups. %1$ld
 * users, %2$ld orders. */
static const char sql_script[] =
    "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, city TEXT, score INTEGER);\n"
    "CREATE TABLE orders(id INTEGER PRIMARY KEY, user_id INTEGER, item TEXT, amount REAL);\n"
    "BEGIN;\n"
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %1$ld)\n"
    "  INSERT INTO users SELECT x, 'user ' || x || ' ' || hex(x * 2654435761 %% 65536),\n"
    "  'city' || (x * 7 %% 40), x * 37 %% 1000 FROM c;\n"
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %2$ld)\n"
    "  INSERT INTO orders SELECT x, (x * 7919) %% %1$ld + 1, 'item-' || (x %% 500) || ' colour ' || (x %% 7),\n"
    "  (x * 104729 %% 100000) / 100.0 FROM c;\n"
    "COMMIT;\n"
    "CREATE INDEX orders_user ON orders(user_id);\n"
    "CREATE INDEX users_city ON users(city);\n"
    "SELECT u.city, count(*), printf('%%.2f', total(o.amount)), max(o.item) FROM users u\n"
    "  JOIN orders o ON o.user_id = u.id WHERE u.score > 100 GROUP BY u.city ORDER BY u.city;\n"
    "SELECT count(*), printf('%%.2f', total(amount)) FROM orders WHERE user_id IN\n"
    "  (SELECT id FROM users WHERE city = 'city7' AND score < 500);\n"
    "SELECT name, score FROM users WHERE id IN (SELECT user_id FROM orders ORDER BY amount DESC LIMIT 50)\n"
    "  ORDER BY id;\n";

/* perl: many small hashes, arrays and strings built and dropped. %1$ld
 * records, %2$ld rounds. */
static const char perl_script[] =
    "use strict; use warnings;\n"
    "my ($n, $rounds, $total) = (%1$ld, %2$ld, 0);\n"
    "for my $r (1 .. $rounds) {\n"
    "    my %%h;\n"
    "    for my $i (1 .. $n) {\n"
    "        my $k = 'key' . ($i * 7919 %% $n);\n"
    "        push @{$h{$k}}, [$i, \"v$i\", {a => $i %% 13, b => 'x' x ($i %% 40)}];\n"
    "    }\n"
    "    for my $k (sort keys %%h) { $total += scalar(@{$h{$k}}) + length($k); }\n"
    "    my @w = map { join('-', 'w', $_, $_ * 3) } 1 .. $n;\n"
    "    $total += length(join(',', reverse @w));\n"
    "}\n"
    "print \"$total\\n\";\n";

/* python3: dicts, lists and tuples built and dropped (lists and dicts
 * large enough that CPython takes their storage from malloc, not from its
 * own small-object allocator). */
static const char python_script[] =
    "n, rounds, total = %1$ld, %2$ld, 0\n"
    "for r in range(rounds):\n"
    "    d = {}\n"
    "    for i in range(n):\n"
    "        d['k%%d' %% (i * 7919 %% n)] = [i, str(i), {'a': i %% 13, 'b': (i, i + 1)}, list(range(i %% 90))]\n"
    "    total += sum(len(v[3]) for v in d.values())\n"
    "    s = sorted(d.items(), key=lambda kv: kv[1][0] %% 97)\n"
    "    total += len(s) + len(' '.join(k for k, _ in s[:1000]))\n"
    "    del d, s\n"
    "print(total)\n";

static size_t xml_bytes(double scale) { return (size_t)(24e6 * scale) + 20000; }
static size_t json_bytes(double scale) { return (size_t)(12e6 * scale) + 20000; }

static char path_xml[4200], path_json[4200], path_sql[4200], path_pl[4200], path_py[4200];

int rp_preload_inputs(double scale, char *why, size_t len) {
    const char *dir = lab_scratch_dir();
    snprintf(path_xml, sizeof path_xml, "%s/realprog-catalog.xml", dir);
    snprintf(path_json, sizeof path_json, "%s/realprog-records.json", dir);
    snprintf(path_sql, sizeof path_sql, "%s/realprog-script.sql", dir);
    snprintf(path_pl, sizeof path_pl, "%s/realprog-script.pl", dir);
    snprintf(path_py, sizeof path_py, "%s/realprog-script.py", dir);
    size_t n;
    const char *x = rp_xml_document(xml_bytes(scale), &n);
    int rc = write_file(path_xml, x, n);
    const char *j = rp_json_document(json_bytes(scale), &n);
    rc |= write_file(path_json, j, n);
    long users = (long)(60000 * scale) + 100;
    rc |= write_text(path_sql, sql_script, users, 3 * users);
    rc |= write_text(path_pl, perl_script, (long)(60000 * scale) + 100, 3);
    rc |= write_text(path_py, python_script, (long)(40000 * scale) + 100, 3);
    if (rc) snprintf(why, len, "cannot write the inputs into %s: %s", dir, strerror(errno));
    return rc ? -1 : 0;
}

/* ---- the programs ---- */

const rp_program rp_programs[RP_NPROGRAMS] = {
    {"jq", "/usr/bin/jq", "jq", "jq: group and sum generated records (group_by, map, add, unique)"},
    {"xmllint", "/usr/bin/xmllint", "libxml2-utils", "xmllint: XPath counts over the generated catalogue (whole tree in memory)"},
    {"sqlite3", "/usr/bin/sqlite3", "sqlite3", "sqlite3: the shell fills, indexes and queries an in-memory database"},
    {"perl", "/usr/bin/perl", "perl-base", "perl: many small hashes, arrays and strings built and dropped"},
    {"python3", "/usr/bin/python3", "python3", "python3: dicts, lists and tuples built and dropped"},
};

/* argv for program i; stdin_path: the file on its stdin, or NULL. */
static void program_args(int i, const char **argv, const char **stdin_path) {
    static const char jq_filter[] =
        "map(select(.active)) | group_by(.city) | map({city: .[0].city, n: length, "
        "score: (map(.score) | add), tags: (map(.tags[]) | unique | length), "
        "names: (map(.name | ascii_upcase) | sort | .[0:3])})";
    *stdin_path = NULL;
    int k = 0;
    switch (i) {
    case 0: argv[k++] = rp_programs[0].path; argv[k++] = "-c"; argv[k++] = jq_filter; argv[k++] = path_json; break;
    case 1:
        argv[k++] = rp_programs[1].path;
        argv[k++] = "--xpath";
        argv[k++] = "concat(count(//tag), ' ', count(//item[@kind='b']), ' ', string-length(string(/catalog)))";
        argv[k++] = path_xml;
        break;
    case 2: argv[k++] = rp_programs[2].path; argv[k++] = ":memory:"; *stdin_path = path_sql; break;
    case 3: argv[k++] = rp_programs[3].path; argv[k++] = path_pl; break;
    default: argv[k++] = rp_programs[4].path; argv[k++] = path_py; break;
    }
    argv[k] = NULL;
}

void rp_program_argv(int i, const char **argv, const char **stdin_path) { program_args(i, argv, stdin_path); }

int rp_program_found(int i, char *why, size_t len) {
    if (access(rp_programs[i].path, X_OK) == 0) return 1;
    snprintf(why, len, "%s not installed (apt-get install %s; scripts/lab-setup.sh does)", rp_programs[i].path,
             rp_programs[i].package);
    return 0;
}

/* The last non-empty line of the file at path into out, and the first
 * that holds `mark` into marked ("" when none). */
static void scan_lines(const char *path, char *out, size_t len, const char *mark, char *marked, size_t mlen) {
    FILE *f = fopen(path, "r");
    char line[512];
    out[0] = marked[0] = 0;
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (line[0]) snprintf(out, len, "%s", line);
        if (!marked[0] && strstr(line, mark)) snprintf(marked, mlen, "%s", line);
    }
    fclose(f);
}

/* pk-lab-spawn, next to pk-lab's executable (realprog_spawn.c). */
static const char *spawn_path(void) {
    static char path[4200];
    if (!path[0]) lab_beside_self("pk-lab-spawn", path, sizeof path);
    return path;
}

int rp_program_run(int i, const char *preload, rp_program_result *res) {
    const char *prog[8], *argv[11], *in;
    program_args(i, prog, &in);
    /* pk-lab-spawn 3 PROGRAM ARGS...: the program's time and peak come back
     * on descriptor 3 */
    argv[0] = spawn_path();
    argv[1] = "3";
    for (int k = 0; k < 8; k++) {
        argv[k + 2] = prog[k];
        if (!prog[k]) break;
    }
    argv[10] = NULL;
    int rep[2];
    if (access(argv[0], X_OK) != 0 || pipe(rep) != 0) {
        snprintf(res->why, sizeof res->why, "%s: %s (build the lab: cmake --build BUILD)", argv[0],
                 strerror(errno));
        return -1;
    }
    char out_path[4200], err_path[4200];
    snprintf(out_path, sizeof out_path, "%s/realprog-%s.out", lab_scratch_dir(), rp_programs[i].name);
    snprintf(err_path, sizeof err_path, "%s/realprog-%s.err", lab_scratch_dir(), rp_programs[i].name);
    memset(res, 0, sizeof *res);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(res->why, sizeof res->why, "fork: %s", strerror(errno));
        close(rep[0]);
        close(rep[1]);
        return -1;
    }
    if (pid == 0) {
        close(rep[0]);
        if (rep[1] != 3 && (dup2(rep[1], 3) != 3 || close(rep[1]) != 0)) _exit(126);
        int fi = open(in ? in : "/dev/null", O_RDONLY);
        int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fi < 0 || fo < 0 || fe < 0) _exit(126);
        dup2(fi, 0);
        dup2(fo, 1);
        dup2(fe, 2);
        if (*preload) setenv("LD_PRELOAD", preload, 1);
        else unsetenv("LD_PRELOAD");
        unsetenv("GLIBC_TUNABLES"); /* pk-lab's own, for jemalloc under dlopen */
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    char line[64];
    int status = lab_child_report(pid, rep, line, sizeof line);
    double ns = 0, kib = 0;
    if (sscanf(line, "%lf %lf", &ns, &kib) != 2 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        snprintf(res->why, sizeof res->why, "%s reported no time", argv[0]);
        return -1;
    }
    res->ns = ns;
    res->peak_rss_kb = kib;
    char last[520], refused[520];
    scan_lines(err_path, last, sizeof last, "cannot be preloaded", refused, sizeof refused);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(res->why, sizeof res->why, "%s exited with status %d%s%s", rp_programs[i].name,
                 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), *last ? ": " : "", last);
        return -1;
    }
    if (refused[0]) {
        snprintf(res->why, sizeof res->why, "%s", refused);
        return -1;
    }
    FILE *f = fopen(out_path, "r");
    uint64_t h = RP_HASH_INIT;
    char buf[65536];
    size_t n;
    while (f && (n = fread(buf, 1, sizeof buf, f)) > 0) h = rp_hash(h, buf, n);
    if (f) fclose(f);
    res->hash = h;
    return 0;
}
