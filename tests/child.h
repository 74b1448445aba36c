/* Running part of a test in a child process, for what must not leak into the
 * other tests (process-wide settings read once from the environment) or may
 * hang (a deadlock after fork).
 *
 * Two ways:
 *   - A child body declared with PKTEST_CHILD(Name) { ... return 0; } runs
 *     in a fresh copy of the test program, started by
 *     run_child("Name", {{"VAR", "value"}, ...}) with the environment it
 *     names (a value of nullptr unsets the variable): fork, then exec of
 *     /proc/self/exe. The body runs while the program's statics are being
 *     constructed (it never reaches GoogleTest's main), so it uses stdio and
 *     poolkit only, and reports through CHILD_CHECK / CHILD_SKIP.
 *   - fork_and_wait(fn) runs fn in a forked child (no exec) of this very
 *     process, the state of every thread as it was at the fork.
 * Either way the child has a time limit (alarm()), so a deadlock ends as
 * SIGALRM, a failure, never as a hung test. */
#ifndef POOLKIT_TESTS_CHILD_H
#define POOLKIT_TESTS_CHILD_H

#include "support.h"

#include <poll.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <csignal>
#include <cstdarg>
#include <ctime>
#include <utility>

namespace pktest {

/* Exit codes of a child body. 1 is left to valgrind's --error-exitcode. */
enum { CHILD_PASS = 0, CHILD_FAIL = 3, CHILD_SKIPPED = 4 };

/* The environment variable that names the body a child copy runs. */
constexpr const char *kChildVar = "PKTEST_CHILD";

/* Seconds a child may run before SIGALRM ends it. */
inline unsigned child_time_limit() { return slow_tool() ? 300 : 60; }

/* Runs body and exits if this process was started to run `name`. */
inline bool child_dispatch(const char *name, int (*body)()) {
    const char *want = std::getenv(kChildVar);
    if (!want || std::strcmp(want, name) != 0) return false;
    alarm(child_time_limit());
    int rc = body();
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(rc);
}

#define PKTEST_CHILD(Name)                                                                  \
    static int pktest_child_body_##Name();                                                  \
    static const bool pktest_child_registered_##Name =                                      \
        ::pktest::child_dispatch(#Name, pktest_child_body_##Name);                          \
    static int pktest_child_body_##Name()

/* Inside a child body: on a false condition, say why on stderr and fail. */
#define CHILD_CHECK(cond, ...)                                                              \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            std::fprintf(stderr, "CHILD FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);      \
            std::fprintf(stderr, __VA_ARGS__);                                              \
            std::fprintf(stderr, "\n");                                                     \
            return ::pktest::CHILD_FAIL;                                                    \
        }                                                                                   \
    } while (0)

/* Inside a child body: this machine cannot run the check; say why. */
#define CHILD_SKIP(...)                                                                     \
    do {                                                                                    \
        std::fprintf(stderr, "CHILD SKIP: ");                                               \
        std::fprintf(stderr, __VA_ARGS__);                                                  \
        std::fprintf(stderr, "\n");                                                         \
        return ::pktest::CHILD_SKIPPED;                                                     \
    } while (0)

struct ChildResult {
    int status = -1; /* from waitpid; -1 if the child could not be started */
    std::string out, err;

    bool exited_with(int code) const { return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == code; }
    bool passed() const { return exited_with(CHILD_PASS); }
    bool skipped() const { return exited_with(CHILD_SKIPPED); }
    std::string describe() const {
        std::string s;
        if (status < 0) s = "child not started";
        else if (WIFEXITED(status)) s = "child exited with " + std::to_string(WEXITSTATUS(status));
        else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
            s = "child ran past its time limit (deadlock?)";
        else if (WIFSIGNALED(status)) s = "child killed by signal " + std::to_string(WTERMSIG(status));
        else s = "child status " + std::to_string(status);
        return s + "\n--- child stdout ---\n" + out + "--- child stderr ---\n" + err;
    }
};

/* The path of this program (valgrind reports the client's, not its own). */
inline std::string self_exe() {
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return "";
    buf[n] = 0;
    return buf;
}

/* Runs the body PKTEST_CHILD(name) in a fresh copy of this program with the
 * environment changed as `env` says; collects its stdout and stderr. */
inline ChildResult run_child(const char *name,
                             const std::vector<std::pair<std::string, const char *>> &env = {}) {
    ChildResult r;
    std::string exe = self_exe();
    if (exe.empty()) return r;
    /* The environment is built before fork: the child only execs. */
    std::vector<std::string> vars;
    for (char **e = environ; *e; e++) {
        std::string v = *e;
        std::string key = v.substr(0, v.find('='));
        bool replaced = key == kChildVar;
        for (auto &kv : env) replaced = replaced || key == kv.first;
        if (!replaced) vars.push_back(v);
    }
    vars.push_back(std::string(kChildVar) + "=" + name);
    for (auto &kv : env)
        if (kv.second) vars.push_back(kv.first + "=" + kv.second);
    std::vector<char *> envp;
    for (auto &v : vars) envp.push_back(&v[0]);
    envp.push_back(nullptr);
    char *argv[] = {&exe[0], nullptr};

    int out[2], err[2];
    if (pipe(out) != 0) return r;
    if (pipe(err) != 0) {
        close(out[0]);
        close(out[1]);
        return r;
    }
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        close(out[0]);
        close(out[1]);
        close(err[0]);
        close(err[1]);
        execve(exe.c_str(), argv, envp.data());
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    if (pid < 0) {
        close(out[0]);
        close(err[0]);
        return r;
    }
    struct pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    std::string *sinks[2] = {&r.out, &r.err};
    int open_fds = 2;
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !fds[i].revents) continue;
            char buf[4096];
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                sinks[i]->append(buf, static_cast<size_t>(n));
            } else if (n == 0 || errno != EINTR) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    for (auto &f : fds)
        if (f.fd >= 0) close(f.fd);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return r;
    r.status = status;
    return r;
}

/* Runs the body in a child and turns its result into a pass, a skip or a
 * failure of the calling test. */
#define EXPECT_CHILD_PASSES(name, ...)                                                      \
    do {                                                                                    \
        ::pktest::ChildResult pktest_r = ::pktest::run_child(name, ##__VA_ARGS__);          \
        if (pktest_r.skipped()) GTEST_SKIP() << pktest_r.err;                               \
        EXPECT_TRUE(pktest_r.passed()) << pktest_r.describe();                              \
        if (!pktest_r.out.empty()) std::printf("%s", pktest_r.out.c_str());                 \
    } while (0)

/* ---- fork without exec ------------------------------------------------------ */

/* Forks; the child runs fn (which returns an exit code) under an alarm of
 * `seconds` and _exit()s; the parent waits. Returns the wait status, or -1
 * if fork failed. fn must keep to async-signal-safe calls besides poolkit's
 * (no stdio, no GoogleTest): other threads may have held any lock at the
 * fork. */
template <class Fn>
int fork_and_wait(Fn fn, unsigned seconds) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        alarm(seconds);
        int rc = fn();
        _exit(rc);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return status;
}

/* A message from a forked child, with write() only. */
inline void child_say(const char *msg) {
    size_t n = std::strlen(msg);
    if (write(STDERR_FILENO, msg, n) < 0) { /* nothing to do */
    }
}

/* Milliseconds on the monotonic clock. */
inline double now_ms() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

/* ---- misuse children (print_fields_handler prints the report) ---- */

/* The environment of a child in hardened mode, debug mode off. */
inline const std::vector<std::pair<std::string, const char *>> kHardened = {{"POOLKIT_HARDENED", "1"},
                                                                            {"POOLKIT_DEBUG", "0"}};

/* A misuse child that got this far was not stopped. */
inline int no_report() {
    std::fprintf(stderr, "NO REPORT\n");
    return CHILD_FAIL;
}

/* The hardened child's fatal report: `what` and a part of its message. */
inline void expect_report(const char *child, const char *what, const char *says) {
    ChildResult r = run_child(child, kHardened);
    ASSERT_GE(r.status, 0) << r.describe();
    EXPECT_EQ(r.err.find("NO REPORT"), std::string::npos) << r.describe();
    EXPECT_NE(r.err.find(std::string("HANDLER severity=FATAL what=") + what + " "), std::string::npos)
        << "expected a report of " << what << "\n"
        << r.describe();
    EXPECT_NE(r.err.find(says), std::string::npos) << "expected the report to say '" << says << "'\n" << r.describe();
}

}  // namespace pktest

#endif
