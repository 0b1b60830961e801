/* SPDX-License-Identifier: MIT */
/*
 * cmd_record.c - `sampo record [-F HZ] [--mode cpu|wall] [-o FILE] -- cmd args...`.
 *
 * Runs the command with LD_PRELOAD=libsampo_preload.so and the engine's SAMPO_* environment
 * (names defined in include/sampo.h), waits for it and returns its exit status (128 + signal
 * number if it was killed), or 1 if it exited 0 but a profile could not be written: the
 * library reports each write (pid, path or error) to a status file in a private temporary
 * directory named by SAMPO_STATUS_FILE, read after the child exits.  Every option and the output
 * path are checked before the command starts (a profile that cannot be written is an error now, not
 * after the run); a relative -o is made absolute, so a program that changes directory still writes
 * where asked. While the child runs, signals coming from the terminal reach the child directly and
 * are ignored here; SIGINT/SIGTERM/SIGHUP sent to sampo alone are passed on to the child, whose
 * preload library writes the profile and then dies of the signal.
 * The preload library is found via SAMPO_PRELOAD, next to the sampo executable, in ../lib,
 * or at the build-tree path compiled in (SAMPO_PRELOAD_BUILD_PATH).
 */
#include "cmds.h"
#ifdef SAMPO_HAVE_LIB
#include "sampo.h"
#endif

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char record_usage[] =
    "usage: sampo record [-F HZ] [--mode cpu|wall] [-o FILE] [--trigger T] [--tune 0|1|freeze]\n"
    "                    [-v] [-q] -- command [args...]\n"
    "  -F, --freq HZ     samples per second per thread (default: derived from the 1% budget)\n"
    "  --mode cpu|wall   CPU time (default) or wall-clock time (also samples sleeping threads)\n"
    "  -o, --output FILE profile file (default sampo.prof; %p is replaced by the pid);\n"
    "                    checked before the command starts\n"
    "  --trigger T       auto|perf-hw|perf-sw|timer|thread (default auto = fallback chain)\n"
    "  --tune 0|1|freeze self-tuning of the interval (default 1)\n"
    "  -v, --verbose     log the trigger choice and tuning changes to stderr\n"
    "  -q, --quiet       do not report where the profile was written\n"
    "  The exit status is the command's; 1 if the command exited 0 but its profile could\n"
    "  not be written.\n";

static int record_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Finds libsampo_preload.so; writes its path into buf.  Returns 0 if found. */
static int record_find_preload(char *buf, size_t len) {
    const char *env = getenv("SAMPO_PRELOAD");
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        return record_exists(buf) ? 0 : -1;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        static const char *const rel[] = {"libsampo_preload.so", "../lib/libsampo_preload.so",
                                          "../../src/prof/libsampo_preload.so"};
        for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
            int w = snprintf(buf, len, "%s/%s", exe, rel[i]);
            if (w > 0 && (size_t)w < len && record_exists(buf)) return 0;
        }
    }
#ifdef SAMPO_PRELOAD_BUILD_PATH
    snprintf(buf, len, "%s", SAMPO_PRELOAD_BUILD_PATH);
    if (record_exists(buf)) return 0;
#endif
    return -1;
}

static int record_setenv(const char *preload, const char *hz, const char *mode, const char *out,
                         const char *trigger, const char *tune, int verbose) {
    char ld[PATH_MAX * 2];
    const char *old = getenv("LD_PRELOAD");
    int w = old && *old ? snprintf(ld, sizeof ld, "%s:%s", preload, old)
                        : snprintf(ld, sizeof ld, "%s", preload);
    if (w < 0 || (size_t)w >= sizeof ld) return -1;
    int rc = setenv("LD_PRELOAD", ld, 1);
    rc |= setenv("SAMPO_OUT", out, 1);
    if (hz) rc |= setenv("SAMPO_HZ", hz, 1);
    if (mode) rc |= setenv("SAMPO_MODE", mode, 1);
    if (trigger) rc |= setenv("SAMPO_TRIGGER", trigger, 1);
    if (tune) rc |= setenv("SAMPO_TUNE", tune, 1);
    if (verbose) rc |= setenv("SAMPO_VERBOSE", "1", 1);
    return rc;
}

static volatile sig_atomic_t record_child;

/* Passes a signal sent to sampo alone (kill, timeout) on to the child.  A terminal's Ctrl-C
 * (si_code SI_KERNEL) already reached the child through the process group: not sent twice. */
static void record_forward(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    if (record_child > 0 && (!si || si->si_code != SI_KERNEL)) kill((pid_t)record_child, sig);
}

/* Runs argv with the environment already set; returns the child's exit status and stores
 * its pid in *child (-1 if it could not be started). */
static int record_run(char **argv, pid_t *child) {
    struct sigaction ign = {.sa_handler = SIG_IGN}, old[4];
    struct sigaction fwd = {.sa_sigaction = record_forward, .sa_flags = SA_SIGINFO | SA_RESTART};
    static const int sigs[4] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
    pid_t pid = fork();
    *child = pid;
    if (pid < 0) {
        fprintf(stderr, "sampo record: fork: %s\n", strerror(errno));
        return 127;
    }
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "sampo record: cannot run '%s': %s\n", argv[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    record_child = pid;
    for (int i = 0; i < 4; i++)
        sigaction(sigs[i], sigs[i] == SIGQUIT ? &ign : &fwd, &old[i]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    record_child = 0;
    for (int i = 0; i < 4; i++)
        sigaction(sigs[i], &old[i], NULL);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

/* Makes path absolute (against the current directory) into buf.  Returns 0 or -1. */
static int record_absolute(const char *path, char *buf, size_t len) {
    char cwd[PATH_MAX];
    int w = path[0] == '/' || !getcwd(cwd, sizeof cwd) ? snprintf(buf, len, "%s", path)
                                                       : snprintf(buf, len, "%s/%s", cwd, path);
    return w < 0 || (size_t)w >= len ? -1 : 0;
}

/* Checks the values the engine would otherwise reject (or ignore) only inside the program.
 * Returns 0, or prints why and returns the exit status (2: usage, 1: cannot profile). */
static int record_check(const char *trigger, const char *tune, const char *out) {
    static const char *const trig[] = {"auto", "perf-hw", "perf-sw", "timer", "thread"};
    int t = -1;
    for (int i = 0; trigger && i < 5; i++)
        if (!strcmp(trigger, trig[i])) t = i;
    if (trigger && t < 0) {
        fprintf(stderr,
                "sampo record: expected --trigger auto, perf-hw, perf-sw, timer or thread, got "
                "'%s'\n",
                trigger);
        return 2;
    }
    if (tune && strcmp(tune, "0") && strcmp(tune, "1") && strcmp(tune, "freeze")) {
        fprintf(stderr, "sampo record: expected --tune 0, 1 or freeze, got '%s'\n", tune);
        return 2;
    }
#ifdef SAMPO_HAVE_LIB
    char why[512];
    if (t > 0 && sampo_trigger_available((SampoTrigger)t, why, sizeof why)) {
        fprintf(stderr, "sampo record: trigger %s is not available here: %s\n", trigger, why);
        return 1;
    }
    if (sampo_check_output(out, why, sizeof why)) {
        fprintf(stderr, "sampo record: %s\n", why);
        return 1;
    }
#else
    (void)out;
#endif
    return 0;
}

/* Reads the status file the preload library appended to (one line "PID KIND RC TEXT" per
 * profile it wrote, KIND exit or exec), reports every failed write, and checks that the
 * command's own process wrote its profile at exit.  Returns 0 if all is well, 1 if not. */
static int record_outcome(const char *status_file, pid_t child, int status, time_t start,
                          const char *out, int quiet) {
    FILE *f = fopen(status_file, "r");
    char line[4600], kind[16], text[4400];
    int pid, rc, bad = 0, root = 0;
    while (f && fgets(line, sizeof line, f)) {
        text[0] = 0;
        if (sscanf(line, "%d %15s %d %4399[^\n]", &pid, kind, &rc, text) < 3) continue;
        if (rc) {
            fprintf(stderr, "sampo record: error: the profile was not written: %s\n", text);
            bad = 1;
        }
        if (pid == (int)child && !strcmp(kind, "exit")) root = 1;
    }
    if (f) fclose(f);
    struct stat st;
    /* a program that changed its user or root cannot reach the status file: a profile
     * written during the run counts */
    if (!root && !strstr(out, "%p") && stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_mtime >= start)
        root = 1;
    if (!root && (status == 126 || status == 127) && !bad)
        return 0; /* perhaps the command could not be run (said already): no profile expected */
    if (!root) {
        fprintf(stderr,
                "sampo record: error: no profile was written to %s: the program ended without "
                "running the profiler's exit handler (killed by SIGKILL or a crash, or it made "
                "the exit system call itself)\n",
                out);
        return 1;
    }
    if (!bad && !quiet && !strstr(out, "%p") && stat(out, &st) == 0 && S_ISREG(st.st_mode))
        fprintf(stderr, "[ sampo record: wrote %s (%lld bytes) ]\n", out, (long long)st.st_size);
    return bad;
}

/* Creates a private directory for the status file; writes the file's path into buf. */
static int record_status_file(char *dir, size_t dlen, char *buf, size_t len) {
    const char *tmp = getenv("TMPDIR");
    int w = snprintf(dir, dlen, "%s/sampo-record-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (w < 0 || (size_t)w >= dlen || !mkdtemp(dir)) {
        w = snprintf(dir, dlen, "/tmp/sampo-record-XXXXXX");
        if (w < 0 || (size_t)w >= dlen || !mkdtemp(dir)) return -1;
    }
    w = snprintf(buf, len, "%s/status", dir);
    return w < 0 || (size_t)w >= len ? -1 : 0;
}

int cmd_record(int argc, char **argv) {
    static const struct option opts[] = {{"freq", required_argument, 0, 'F'},
                                         {"mode", required_argument, 0, 'm'},
                                         {"output", required_argument, 0, 'o'},
                                         {"trigger", required_argument, 0, 't'},
                                         {"tune", required_argument, 0, 'u'},
                                         {"verbose", no_argument, 0, 'v'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *hz = NULL, *mode = NULL, *out = "sampo.prof", *trigger = NULL, *tune = NULL;
    int verbose = 0, quiet = 0, c;
    uint64_t v;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+F:m:o:vqh", opts, NULL)) != -1) {
        switch (c) {
        case 'F':
            if (sampo_parse_u64(optarg, &v) || v > 100000) { /* the engine's limit (SAMPO_HZ) */
                fprintf(stderr, "sampo record: expected -F HZ in 0..100000, got '%s'\n", optarg);
                return 2;
            }
            hz = optarg;
            break;
        case 'm':
            if (strcmp(optarg, "cpu") && strcmp(optarg, "wall")) {
                fprintf(stderr, "sampo record: expected --mode cpu or wall, got '%s'\n", optarg);
                return 2;
            }
            mode = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case 't':
            trigger = optarg;
            break;
        case 'u':
            tune = optarg;
            break;
        case 'v':
            verbose = 1;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            fputs(record_usage, stdout);
            return 0;
        default:
            fputs(record_usage, stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "sampo record: expected a command after the options\n");
        fputs(record_usage, stderr);
        return 2;
    }
    char abs_out[PATH_MAX];
    if (record_absolute(out, abs_out, sizeof abs_out)) {
        fprintf(stderr, "sampo record: output path too long: %s\n", out);
        return 2;
    }
    int bad = record_check(trigger, tune, abs_out);
    if (bad) return bad;
    char preload[PATH_MAX];
    if (record_find_preload(preload, sizeof preload)) {
        fprintf(stderr, "sampo record: cannot find libsampo_preload.so (set SAMPO_PRELOAD)\n");
        return 127;
    }
    if (record_setenv(preload, hz, mode, abs_out, trigger, tune, verbose)) {
        fprintf(stderr, "sampo record: setenv: %s\n", strerror(errno));
        return 127;
    }
    char sdir[PATH_MAX], sfile[PATH_MAX];
    if (record_status_file(sdir, sizeof sdir, sfile, sizeof sfile) ||
        setenv("SAMPO_STATUS_FILE", sfile, 1)) {
        fprintf(stderr, "sampo record: cannot create a temporary directory: %s\n", strerror(errno));
        return 127;
    }
    pid_t child;
    time_t start = time(NULL);
    int status = record_run(argv + optind, &child);
    int failed = child > 0 ? record_outcome(sfile, child, status, start, out, quiet) : 0;
    unlink(sfile);
    rmdir(sdir);
    /* the command's status, unless it succeeded and its profile was not written: then 1 */
    return failed > 0 && status == 0 ? 1 : status;
}
