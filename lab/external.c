/* The contender programs (PROTOCOL.md): pk-lab-objc (GNUstep / Objective-C)
 * and pk-lab-zig (Zig), found next to pk-lab's executable or named by
 * PK_LAB_OBJC / PK_LAB_ZIG. Each is asked once for its list, then started
 * once per repetition of every experiment it lists, so its repetitions
 * interleave with the in-process contenders'. Its result lines become rows;
 * a program that is missing or fails leaves "not available" or "failed"
 * rows, and the run goes on. */
#include "lab.h"
#include "json.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef LAB_SOURCE_DIR
#  define LAB_SOURCE_DIR "."
#endif

#define CALL_LIMIT_S 600 /* one call of a program (PROTOCOL.md) */
#define MAX_LISTED 64

typedef struct expected {
    const char *experiment, *subject, *family;
} expected;

/* What each program provides per PROTOCOL.md, for the rows it would have
 * filled when it cannot run. */
static const expected objc_expected[] = {
    {"autorelease-sweep", "GNUstep NSObject", "peer"},
    {"autorelease-sweep", "PKObject", "poolkit"},
    {"alloc-styles", "GNUstep NSObject", "peer"},
    {"alloc-styles", "PKObject", "poolkit"},
    {"common-ops", "GNUstep", "peer"},
    {"common-ops", "PKObject", "poolkit"},
    {"object-generation", "GNUstep NSObject", "peer"},
    {"object-generation", "PKObject", "poolkit"},
    {NULL, NULL, NULL},
};
static const expected zig_expected[] = {
    {"pool-pattern", "Zig GeneralPurposeAllocator", "peer"},
    {"pool-pattern", "Zig ArenaAllocator", "peer"},
    {"pool-pattern", "Zig MemoryPool", "peer"},
    {"peers", "Zig GeneralPurposeAllocator", "peer"},
    {"peers", "Zig ArenaAllocator", "peer"},
    {"peers", "Zig MemoryPool", "peer"},
    {"workset", "Zig MemoryPool", "peer"},
    {NULL, NULL, NULL},
};

typedef struct program {
    const char *name, *env;
    const expected *expect;
    int probed;
    char path[4096];
    int present;    /* found and its list answered */
    char why[600];  /* why not present */
    struct {
        char experiment[40], subject[96];
    } listed[MAX_LISTED];
    int nlisted;
    /* the last failure per experiment, for the rows it leaves empty */
    struct {
        char experiment[40];
        char why[600];
    } failure[16];
    int nfailures;
} program;

static program programs[] = {
    {"pk-lab-objc", "PK_LAB_OBJC", objc_expected, 0, "", 0, "", {{"", ""}}, 0, {{"", ""}}, 0},
    {"pk-lab-zig", "PK_LAB_ZIG", zig_expected, 0, "", 0, "", {{"", ""}}, 0, {{"", ""}}, 0},
};
#define NPROGRAMS (int)(sizeof programs / sizeof programs[0])

static int on_path(const char *tool) {
    const char *path = getenv("PATH");
    if (!path) return 0;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *dir = strtok(buf, ":"); dir; dir = strtok(NULL, ":")) {
        char f[4200];
        snprintf(f, sizeof f, "%s/%s", dir, tool);
        if (access(f, X_OK) == 0) return 1;
    }
    return 0;
}

static int any_file(const char *pattern) {
    glob_t g;
    int found = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0;
    globfree(&g);
    return found;
}

/* Why a program is missing, in the words a reader needs. */
static void missing_reason(program *p) {
    if (!strcmp(p->name, "pk-lab-objc")) {
        if (!on_path("gnustep-config") && !any_file("/usr/share/GNUstep/Makefiles/GNUstep.sh"))
            snprintf(p->why, sizeof p->why,
                     "GNUstep not installed (no gnustep-config), so pk-lab-objc was not built");
        else
            snprintf(p->why, sizeof p->why,
                     "pk-lab-objc not built (GNUstep is installed; lab/objc/build.sh builds it)");
    } else {
        if (!on_path("zig") && !any_file(LAB_SOURCE_DIR "/.venv/lib/python3*/site-packages/ziglang/zig"))
            snprintf(p->why, sizeof p->why,
                     "Zig not installed (no zig on PATH nor ziglang in .venv), so pk-lab-zig "
                     "was not built");
        else
            snprintf(p->why, sizeof p->why,
                     "pk-lab-zig not built (Zig is installed; lab/zig/build.sh builds it)");
    }
}

/* Runs argv[0] with a time limit; stdout into *out (malloc'ed), the tail of
 * stderr into err. Returns the exit status, 124 on time-out, 127 when it
 * could not start. */
static int run_capture(char *const argv[], int limit_s, char **out, char *err, size_t errlen) {
    int po[2], pe[2];
    *out = NULL;
    err[0] = 0;
    if (pipe(po) || pipe(pe)) return 127;
    fflush(stdout);
    fflush(stderr);
    int from[2] = {po[1], pe[1]}, to[2] = {1, 2};
    fcntl(po[0], F_SETFD, FD_CLOEXEC); /* the read ends stay the parent's */
    fcntl(pe[0], F_SETFD, FD_CLOEXEC);
    pid_t pid = lab_spawn(argv[0], argv, from, to, 2, -1, 1);
    close(po[1]);
    close(pe[1]);
    if (pid < 0) {
        snprintf(err, errlen, "cannot run %s: %s\n", argv[0], strerror(errno));
        close(po[0]);
        close(pe[0]);
        *out = calloc(1, 1); /* no output: the callers read it as text */
        return 127;
    }
    size_t cap = 65536, used = 0;
    char *buf = malloc(cap);
    size_t elen = 0;
    double deadline = lab_now_ns() + (double)limit_s * 1e9;
    int open_fds = 2, timed_out = 0;
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    while (open_fds > 0) {
        double left_ms = (deadline - lab_now_ns()) / 1e6;
        if (left_ms <= 0) {
            timed_out = 1;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            break;
        }
        int rc = poll(fds, 2, left_ms > 1000 ? 1000 : (int)left_ms + 1);
        if (rc < 0 && errno != EINTR) break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char chunk[8192];
            ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
                continue;
            }
            if (i == 0) {
                if (used + (size_t)n + 1 > cap) {
                    cap = (used + (size_t)n + 1) * 2;
                    buf = realloc(buf, cap);
                }
                memcpy(buf + used, chunk, (size_t)n);
                used += (size_t)n;
            } else { /* keep the tail */
                for (ssize_t k = 0; k < n; k++) {
                    if (elen + 1 >= errlen) {
                        memmove(err, err + errlen / 2, elen - errlen / 2);
                        elen -= errlen / 2;
                    }
                    err[elen++] = chunk[k];
                }
                err[elen] = 0;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0) close(fds[i].fd);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    buf[used] = 0;
    *out = buf;
    if (timed_out) return 124;
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 127;
}

/* The stderr tail as one readable line. */
static void one_line(char *s) {
    for (char *c = s; *c; c++)
        if (*c == '\n' || *c == '\t' || *c == '\r') *c = ' ';
    size_t n = strlen(s);
    while (n && s[n - 1] == ' ') s[--n] = 0;
}

static void probe(program *p) {
    if (p->probed) return;
    p->probed = 1;
    const char *env = getenv(p->env);
    if (env && *env) {
        snprintf(p->path, sizeof p->path, "%s", env);
    } else {
        lab_beside_self(p->name, p->path, sizeof p->path);
    }
    if (access(p->path, X_OK) != 0) {
        /* lab/run.sh leaves the reason a set-up or build failed beside us */
        char whyfile[4200];
        snprintf(whyfile, sizeof whyfile, "%s.why", p->path);
        FILE *f = fopen(whyfile, "r");
        if (f && fgets(p->why, sizeof p->why, f)) {
            one_line(p->why);
        } else {
            missing_reason(p);
        }
        if (f) fclose(f);
        return;
    }
    char *argv[] = {p->path, "list", NULL};
    char *out, err[2048];
    int rc = run_capture(argv, 60, &out, err, sizeof err);
    if (rc != 0) {
        one_line(err);
        snprintf(p->why, sizeof p->why, "%s list failed (status %d): %.400s", p->name, rc, err);
        free(out);
        return;
    }
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        char *tab = strchr(line, '\t');
        if (!tab || p->nlisted == MAX_LISTED) continue;
        *tab = 0;
        snprintf(p->listed[p->nlisted].experiment, sizeof p->listed[0].experiment, "%s", line);
        snprintf(p->listed[p->nlisted].subject, sizeof p->listed[0].subject, "%s", tab + 1);
        one_line(p->listed[p->nlisted].subject);
        p->nlisted++;
    }
    free(out);
    p->present = 1;
}

static int lists(program *p, const char *experiment) {
    probe(p);
    for (int i = 0; i < p->nlisted; i++)
        if (!strcmp(p->listed[i].experiment, experiment)) return 1;
    return 0;
}

static const char *experiment_unit(const char *name) {
    for (int i = 0; i < lab_experiment_count; i++)
        if (!strcmp(lab_experiments[i]->name, name)) return lab_experiments[i]->unit;
    return "";
}

static int known_experiment(const char *name) {
    for (int i = 0; i < lab_experiment_count; i++)
        if (!strcmp(lab_experiments[i]->name, name)) return 1;
    return 0;
}

/* One result line into its row; returns the row when it got a sample. */
static lab_row *take_line(program *p, const char *line) {
    json *j = json_parse(line);
    if (!j || j->type != JSON_OBJECT) {
        json_free(j);
        return NULL;
    }
    const char *exp = json_str(j, "experiment"), *subject = json_str(j, "subject");
    const char *family = json_str(j, "family");
    if (!exp || !subject || !known_experiment(exp)) {
        json_free(j);
        return NULL;
    }
    if (!family || (strcmp(family, "poolkit") && strcmp(family, "peer") &&
                    strcmp(family, "published")))
        family = "peer";
    lab_params ps = {0};
    const json *params = json_get(j, "params");
    if (params && params->type == JSON_OBJECT) {
        for (int i = 0; i < params->n && ps.n < LAB_MAX_PARAMS; i++) {
            snprintf(ps.p[ps.n].key, sizeof ps.p[ps.n].key, "%s", params->kids[i].key);
            json_write(&params->kids[i], ps.p[ps.n].value, sizeof ps.p[ps.n].value);
            ps.n++;
        }
    }
    lab_row *r = lab_row_get(exp, subject, family, &ps);
    const json *avail = json_get(j, "available");
    if (avail && avail->type == JSON_BOOL && !avail->number) {
        const char *why = json_str(j, "why");
        char buf[600];
        snprintf(buf, sizeof buf, "%s", why && *why ? why : "not available (no reason given)");
        if (r->samples.n == 0) lab_row_unavailable(r, buf);
        json_free(j);
        return NULL;
    }
    const char *unit = json_str(j, "unit");
    const json *extra = json_get(j, "extra");
    if (unit && strcmp(unit, experiment_unit(exp)))
        snprintf(r->unit, sizeof r->unit, "%s", unit);
    const char *version = json_str(j, "version"), *flags = json_str(j, "flags");
    char fl[256];
    if (flags) snprintf(fl, sizeof fl, "%s", flags);
    else snprintf(fl, sizeof fl, "(%s gave no flags)", p->name);
    lab_row_info(r, version ? version : p->name, fl);
    const json *samples = json_get(j, "samples");
    if (samples && samples->type == JSON_ARRAY)
        for (int i = 0; i < samples->n; i++)
            if (samples->kids[i].type == JSON_NUMBER) lab_row_sample(r, samples->kids[i].number);
    if (extra && extra->type == JSON_OBJECT)
        for (int i = 0; i < extra->n; i++)
            if (extra->kids[i].type == JSON_NUMBER)
                lab_row_extra(r, extra->kids[i].key, extra->kids[i].number);
    int got = samples && samples->type == JSON_ARRAY && samples->n > 0;
    if (r->samples.n > 0) {
        r->available = 1;
        r->failed = 0;
        r->why[0] = 0;
    }
    json_free(j);
    return got ? r : NULL;
}

static int same_params(const lab_row *a, const lab_row *b) {
    if (a->nparams != b->nparams) return 0;
    for (int i = 0; i < a->nparams; i++)
        if (strcmp(a->params[i].key, b->params[i].key) || strcmp(a->params[i].value, b->params[i].value))
            return 0;
    return 1;
}

static int extra_count(const lab_row *r, const char *name) {
    for (int i = 0; i < r->nextra; i++)
        if (!strcmp(r->extra[i].name, name)) return r->extra[i].s.n;
    return 0;
}

/* A program that reports its own empty loop as a row (a subject with
 * "empty" in its name) instead of an extra "net": each of its rows in this
 * call gets net = its sample less the empty row's sample with the same
 * params, from the same call (the same process, as the method asks). */
static void derive_net(lab_row **rows, const int *had_net, int n) {
    for (int i = 0; i < n; i++) {
        lab_row *r = rows[i];
        if (had_net[i] || strstr(r->subject, "empty") || r->samples.n == 0) continue;
        for (int k = 0; k < n; k++) {
            lab_row *e = rows[k];
            if (!strstr(e->subject, "empty") || e->samples.n == 0 || !same_params(r, e)) continue;
            lab_row_extra(r, "net", r->samples.v[r->samples.n - 1] - e->samples.v[e->samples.n - 1]);
            break;
        }
    }
}



static void note_failure(program *p, const char *experiment, const char *why) {
    int i = 0;
    while (i < p->nfailures && strcmp(p->failure[i].experiment, experiment)) i++;
    if (i == 16) return;
    if (i == p->nfailures) p->nfailures++;
    snprintf(p->failure[i].experiment, sizeof p->failure[i].experiment, "%s", experiment);
    snprintf(p->failure[i].why, sizeof p->failure[i].why, "%s", why);
}

void lab_external_run(const char *experiment, int rep) {
    if (rep < 0) return; /* the programs warm up inside each call (--warmup 1) */
    for (int i = 0; i < NPROGRAMS; i++) {
        program *p = &programs[i];
        if (!lists(p, experiment)) continue;
        lab_progress(p->name, "(separate program)");
        char *argv[] = {p->path, "run", (char *)experiment, "--scale",
                        (char *)lab_scale_name(lab_opt.scale), "--reps", "1", "--warmup", "1",
                        NULL};
        char *out, err[4096];
        int rc = run_capture(argv, CALL_LIMIT_S, &out, err, sizeof err);
        enum { MAX_CALL_ROWS = 512 };
        static lab_row *rows[MAX_CALL_ROWS];
        static int had_net[MAX_CALL_ROWS];
        int nrows = 0;
        for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
            lab_row *r = take_line(p, line);
            if (!r || nrows == MAX_CALL_ROWS) continue;
            int k = 0;
            while (k < nrows && rows[k] != r) k++;
            if (k == nrows) {
                rows[nrows] = r;
                had_net[nrows++] = 0;
            }
            had_net[k] = extra_count(r, "net") >= r->samples.n;
        }
        derive_net(rows, had_net, nrows);
        free(out);
        if (rc != 0) {
            one_line(err);
            char why[600];
            if (rc == 124)
                snprintf(why, sizeof why, "failed: %s run %s took over %d s (killed); stderr: %.300s",
                         p->name, experiment, CALL_LIMIT_S, err);
            else
                snprintf(why, sizeof why, "failed: %s run %s exited with status %d; stderr: %.400s",
                         p->name, experiment, rc, err);
            note_failure(p, experiment, why);
            fprintf(stderr, "pk-lab: %s\n", why);
        }
    }
}

static int has_rows(const char *experiment, const char *subject) {
    for (int i = 0; i < lab_row_count(); i++) {
        lab_row *r = lab_row_at(i);
        if (!strcmp(r->experiment, experiment) && !strcmp(r->subject, subject)) return 1;
    }
    return 0;
}

static void fill_one(program *p, const char *experiment, const char *subject, const char *family) {
    if (has_rows(experiment, subject)) {
        /* rows that never got a sample: the program failed on them */
        for (int i = 0; i < lab_row_count(); i++) {
            lab_row *r = lab_row_at(i);
            if (strcmp(r->experiment, experiment) || strcmp(r->subject, subject)) continue;
            if (r->available && r->samples.n == 0) {
                for (int k = 0; k < p->nfailures; k++)
                    if (!strcmp(p->failure[k].experiment, experiment)) {
                        lab_row_unavailable(r, p->failure[k].why);
                        r->failed = 1;
                    }
                if (r->available) lab_row_unavailable(r, "no sample recorded");
            }
        }
        return;
    }
    lab_row *r = lab_row_get(experiment, subject, family, NULL);
    if (!p->present) {
        lab_row_unavailable(r, p->why);
        return;
    }
    for (int k = 0; k < p->nfailures; k++)
        if (!strcmp(p->failure[k].experiment, experiment)) {
            lab_row_unavailable(r, p->failure[k].why);
            r->failed = 1;
            return;
        }
    char why[300];
    snprintf(why, sizeof why, "%s printed no result for it", p->name);
    lab_row_unavailable(r, why);
}

static const char *family_of(program *p, const char *experiment, const char *subject) {
    for (const expected *e = p->expect; e->experiment; e++)
        if (!strcmp(e->experiment, experiment) && !strcmp(e->subject, subject)) return e->family;
    return strstr(subject, "PKObject") || strstr(subject, "poolkit") ? "poolkit" : "peer";
}

void lab_external_fill(const char *experiment) {
    for (int i = 0; i < NPROGRAMS; i++) {
        program *p = &programs[i];
        probe(p);
        if (p->present)
            for (int k = 0; k < p->nlisted; k++)
                if (!strcmp(p->listed[k].experiment, experiment))
                    fill_one(p, experiment, p->listed[k].subject,
                             family_of(p, experiment, p->listed[k].subject));
        /* what PROTOCOL.md says the program provides, listed or not */
        for (const expected *e = p->expect; e->experiment; e++) {
            if (strcmp(e->experiment, experiment)) continue;
            if (p->present && !has_rows(experiment, e->subject)) {
                lab_row *r = lab_row_get(experiment, e->subject, e->family, NULL);
                char why[300];
                snprintf(why, sizeof why, "%s does not provide it (not in its list)", p->name);
                lab_row_unavailable(r, why);
            } else if (!p->present) {
                fill_one(p, experiment, e->subject, e->family);
            }
        }
    }
}

const char *lab_external_why(const char *experiment) {
    for (int i = 0; i < NPROGRAMS; i++) {
        program *p = &programs[i];
        int expects = 0;
        for (const expected *e = p->expect; e->experiment; e++)
            expects |= !strcmp(e->experiment, experiment);
        if (!expects) continue;
        probe(p);
        if (!p->present) return p->why;
        for (int k = 0; k < p->nfailures; k++)
            if (!strcmp(p->failure[k].experiment, experiment)) return p->failure[k].why;
    }
    return NULL;
}

void lab_external_list(FILE *out, const char *experiment) {
    for (int i = 0; i < NPROGRAMS; i++) {
        program *p = &programs[i];
        probe(p);
        if (p->present) {
            for (int k = 0; k < p->nlisted; k++)
                if (!strcmp(p->listed[k].experiment, experiment))
                    fprintf(out, "    %-34s (%s)\n", p->listed[k].subject, p->name);
        } else {
            for (const expected *e = p->expect; e->experiment; e++)
                if (!strcmp(e->experiment, experiment))
                    fprintf(out, "    %-34s not available: %s\n", e->subject, p->why);
        }
    }
}
