/* What every experiment needs besides rows: time, the scale, versions of
 * what ran, a scratch folder, and running a contender in a child process to
 * read its peak memory. */
#include "json.h"
#include "lab.h"

#include <errno.h>
#include <spawn.h>
#include <libgen.h>
#include <math.h>
#include <poolkit/poolkit.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef LAB_CFLAGS
#  define LAB_CFLAGS "(flags unknown)"
#endif
#ifndef LAB_POOLKIT_BUILD
#  define LAB_POOLKIT_BUILD "(build type unknown)"
#endif

lab_opts lab_opt = {LAB_DEFAULT, 5, "lab-report", "pk-lab"};
int lab_warming;

const char *lab_scale_name(lab_scale s) {
    static const char *const names[] = {"smoke", "quick", "default", "full"};
    return names[s];
}

long lab_pick(long smoke, long quick, long def, long full) {
    switch (lab_opt.scale) {
    case LAB_SMOKE: return smoke;
    case LAB_QUICK: return quick;
    case LAB_FULL: return full;
    default: return def;
    }
}

long lab_warm(long n) {
    if (!lab_warming) return n;
    return n / 10 > 0 ? n / 10 : 1;
}

const char *lab_compiler(void) {
    static char buf[128];
    if (!buf[0]) {
#if defined(__clang__)
        snprintf(buf, sizeof buf, "clang %s", __clang_version__);
#elif defined(__GNUC__)
        snprintf(buf, sizeof buf, "gcc %s", __VERSION__);
#else
        snprintf(buf, sizeof buf, "unknown compiler");
#endif
        size_t n = strlen(buf);
        while (n && buf[n - 1] == ' ') buf[--n] = 0;
    }
    return buf;
}

const char *lab_flags(void) {
    static char buf[256];
    if (!buf[0]) snprintf(buf, sizeof buf, "%s, %s", lab_compiler(), LAB_CFLAGS);
    return buf;
}

const char *lab_poolkit_version(void) {
    static char buf[96];
    if (!buf[0])
        snprintf(buf, sizeof buf, "poolkit %s (static, %s)", PK_VERSION_STRING, LAB_POOLKIT_BUILD);
    return buf;
}

/* dpkg-query's answer, cached per package. */
const char *lab_deb_version(const char *package) {
    static struct {
        char name[64];
        char version[64];
    } cache[32];
    static int n;
    for (int i = 0; i < n; i++)
        if (!strcmp(cache[i].name, package)) return cache[i].version;
    if (n == 32) return "";
    snprintf(cache[n].name, sizeof cache[n].name, "%s", package);
    cache[n].version[0] = 0;
    for (const char *c = package; *c; c++) /* a package name, nothing for the shell */
        if (!(*c == '-' || *c == '.' || *c == '+' || (*c >= 'a' && *c <= 'z') ||
              (*c >= '0' && *c <= '9')))
            return cache[n++].version;
    char cmd[160];
    snprintf(cmd, sizeof cmd, "dpkg-query -W -f='${Version}' '%s' 2>/dev/null", package);
    FILE *p = popen(cmd, "r");
    if (p) {
        if (!fgets(cache[n].version, sizeof cache[n].version, p)) cache[n].version[0] = 0;
        cache[n].version[strcspn(cache[n].version, "\n")] = 0;
        pclose(p);
    }
    return cache[n++].version;
}

const char *lab_scratch_dir(void) {
    static char dir[4096];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s/.scratch", lab_opt.out);
        mkdir(lab_opt.out, 0755);
        mkdir(dir, 0755);
    }
    return dir;
}

const char *lab_self_exe(char *out, size_t len) {
    ssize_t n = len > 1 ? readlink("/proc/self/exe", out, len - 1) : -1;
    if (n <= 0) snprintf(out, len, "%s", lab_opt.self ? lab_opt.self : "");
    else out[n] = 0;
    return out;
}

const char *lab_beside_self(const char *name, char *out, size_t len) {
    char self[4096];
    lab_self_exe(self, sizeof self);
    snprintf(out, len, "%s/%s", dirname(self), name);
    return out;
}

int lab_child_report(pid_t pid, int pipe_fds[2], char *line, size_t len) {
    close(pipe_fds[1]);
    size_t got = 0;
    for (ssize_t n; pid > 0 && got < len - 1; got += (size_t)n) {
        n = read(pipe_fds[0], line + got, len - 1 - got);
        if (n < 0 && errno == EINTR) n = 0;
        else if (n <= 0) break;
    }
    line[got] = 0;
    close(pipe_fds[0]);
    int status = 127 << 8; /* no child: as one that could not start */
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
}

int lab_child_row_ready(lab_row *row, int available, const char *why, int ok) {
    if (!available) {
        lab_row_unavailable(row, why);
        return 0;
    }
    if (!ok) {
        row->failed = 1;
        lab_row_unavailable(row, "the run failed in its own process (see stderr)");
        return 0;
    }
    return row->available;
}

pid_t lab_spawn(const char *path, char *const argv[], const int *from, const int *to, int n, int close_fd,
                int group) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    if (posix_spawn_file_actions_init(&fa) != 0) return -1;
    if (posix_spawnattr_init(&at) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return -1;
    }
    int rc = 0;
    if (close_fd >= 0) rc |= posix_spawn_file_actions_addclose(&fa, close_fd);
    for (int i = 0; i < n; i++) {
        rc |= posix_spawn_file_actions_adddup2(&fa, from[i], to[i]);
        if (from[i] != to[i]) rc |= posix_spawn_file_actions_addclose(&fa, from[i]);
    }
    if (group) rc |= posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP) | posix_spawnattr_setpgroup(&at, 0);
    pid_t pid = -1;
    if (rc == 0) rc = posix_spawn(&pid, path, &fa, &at, argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return pid;
}

int lab_fresh_child(const char *experiment, int nargs, const char *const *args, char *line, size_t len) {
    enum { MAX_ARGS = 16 };
    const char *argv[MAX_ARGS + 4] = {"pk-lab", "child", experiment};
    int fds[2];
    line[0] = 0;
    if (nargs < 0 || nargs > MAX_ARGS || pipe(fds) != 0) return -1;
    for (int i = 0; i < nargs; i++) argv[3 + i] = args[i];
    fflush(stdout);
    fflush(stderr);
    int to = LAB_CHILD_FD;
    pid_t pid = lab_spawn("/proc/self/exe", (char *const *)argv, &fds[1], &to, 1, fds[0], 0);
    int status = lab_child_report(pid, fds, line, len);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && line[0] ? 0 : -1;
}

/* shared_in_child (lab/shared.h), with the peak RSS growth in KiB as the
 * lab's rows keep it. */
int lab_in_child(lab_child_fn fn, void *arg, double *out, int n) {
    int rc = shared_in_child(fn, arg, out, n);
    out[n] /= 1024.0;
    return rc;
}

void lab_pk_memory_begin(lab_pk_memory *m) {
    pk_process_stats st;
    pk_stats_reset_peaks(); /* the run's own peak, not the lab's */
    pk_stats_get(&st);
    m->base_kib = (double)(st.pool_bytes_reserved + st.arena_bytes_reserved) / 1024.0;
}

void lab_pk_memory_end(const lab_pk_memory *m, double *out) {
    out[0] = out[1] = NAN;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return;
    int rc = pk_stats_print(f, PK_STATS_JSON);
    fclose(f);
    json *j = rc == 0 ? json_parse(text) : NULL;
    const json *t = j ? json_get(j, "totals") : NULL, *a = j ? json_get(j, "arenas") : NULL;
    const json *tp = t ? json_get(t, "bytes_reserved_peak") : NULL, *tn = t ? json_get(t, "bytes_reserved") : NULL;
    const json *ap = a ? json_get(a, "bytes_reserved_peak") : NULL, *an = a ? json_get(a, "bytes_reserved") : NULL;
    if (tp && tn && ap && an) {
        out[0] = (tp->number + ap->number) / 1024.0 - m->base_kib;
        out[1] = (tn->number + an->number) / 1024.0 - m->base_kib;
    }
    json_free(j);
    free(text);
}
