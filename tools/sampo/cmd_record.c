/*
 * cmd_record.c - `sampo record [-F HZ] [--mode cpu|wall] [-o FILE] -- cmd args...`.
 *
 * Runs the command with LD_PRELOAD=libsampo_preload.so and the engine's SAMPO_* environment
 * (names defined in include/sampo.h), waits for it and returns its exit status (128 + signal
 * number if it was killed).  While the child runs, SIGINT/SIGQUIT/SIGTERM are ignored here so
 * that the child alone decides (as a shell does for a foreground job).
 * The preload library is found via SAMPO_PRELOAD, next to the sampo executable, in ../lib,
 * or at the build-tree path compiled in (SAMPO_PRELOAD_BUILD_PATH).
 */
#include "cmds.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char record_usage[] =
    "usage: sampo record [-F HZ] [--mode cpu|wall] [-o FILE] [--trigger T] [--tune 0|1|freeze]\n"
    "                    [-v] [-q] -- command [args...]\n"
    "  -F, --freq HZ     samples per second per thread (default: derived from the 1% budget)\n"
    "  --mode cpu|wall   CPU time (default) or wall-clock time (also samples sleeping threads)\n"
    "  -o, --output FILE profile file (default sampo.prof; %p is replaced by the pid)\n"
    "  --trigger T       auto|perf-hw|perf-sw|timer|thread (default auto = fallback chain)\n"
    "  --tune 0|1|freeze self-tuning of the interval (default 1)\n"
    "  -v, --verbose     log the trigger choice and tuning changes to stderr\n"
    "  -q, --quiet       do not report where the profile was written\n"
    "  The exit status is the command's.\n";

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

/* Runs argv with the environment already set; returns the child's exit status. */
static int record_run(char **argv) {
    struct sigaction ign = {.sa_handler = SIG_IGN}, old[3];
    static const int sigs[3] = {SIGINT, SIGQUIT, SIGTERM};
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "sampo record: fork: %s\n", strerror(errno));
        return 127;
    }
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "sampo record: cannot run '%s': %s\n", argv[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &ign, &old[i]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &old[i], NULL);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

/* Tells where the profile went (like perf's "[ perf record: ... ]"), or warns if the engine
 * wrote nothing.  Names with %p (one file per process) are not checked. */
static void record_summary(const char *out, int quiet) {
    struct stat st;
    if (quiet || strstr(out, "%p")) return;
    if (stat(out, &st) == 0)
        fprintf(stderr, "[ sampo record: wrote %s (%lld bytes) ]\n", out, (long long)st.st_size);
    else
        fprintf(stderr,
                "sampo record: warning: no profile at %s (the program may have crashed, "
                "called _exit, or changed directory)\n",
                out);
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
            if (sampo_parse_u64(optarg, &v) || v > 1000000) {
                fprintf(stderr, "sampo record: expected -F HZ in 0..1000000, got '%s'\n", optarg);
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
    char preload[PATH_MAX];
    if (record_find_preload(preload, sizeof preload)) {
        fprintf(stderr, "sampo record: cannot find libsampo_preload.so (set SAMPO_PRELOAD)\n");
        return 127;
    }
    if (record_setenv(preload, hz, mode, out, trigger, tune, verbose)) {
        fprintf(stderr, "sampo record: setenv: %s\n", strerror(errno));
        return 127;
    }
    int status = record_run(argv + optind);
    record_summary(out, quiet);
    return status;
}
