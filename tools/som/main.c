/* SPDX-License-Identifier: MIT */
/*
 * main.c - the `som` command: parses the command line, creates one VM per
 * requested thread, runs the program and exits with its status.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../src/vm/vm.h"
#include "jit.h"
#include "somprof.h"

#define SOM_VERSION "0.1.0"

static void usage(FILE *f) {
    fprintf(f, "usage: som [options] [-cp DIR1:DIR2...] MainClass|File.som [args...]\n"
               "\n"
               "Runs a SOM program: loads MainClass from the class path (user entries first,\n"
               "then the main file's directory, then '.', then the built-in core library) and\n"
               "sends it #run: with the arguments (or #run).\n"
               "\n"
               "options:\n"
               "  -cp, --classpath PATH  class path, directories separated by ':'\n"
               "  --threads N    run N independent copies of the program, one VM per thread\n"
               "  --gc-stress    collect garbage at every allocation (slow; for testing)\n"
               "  --gc-stress=N  at every N-th allocation (N times cheaper, for long programs)\n"
               "  -g             print garbage-collection statistics at exit\n"
               "  -H SIZE        initial heap size: the collector starts after SIZE bytes of\n"
               "                 allocation (at least 8M); k, M or G, e.g. -H64M; a bare number\n"
               "                 is megabytes\n"
               "  -d             at exit, list the bytecode of every method that ran, with the\n"
               "                 receiver classes and operand kinds each send site saw\n"
               "  --prof[=MODE]  profile the program: async (default; signal-driven sampling),\n"
               "                 coop (sampling at safe points), exact (count every call)\n"
               "  --prof-hz N    samples per second per thread (default: self-tuned)\n"
               "  --prof-tune    self-tune the rate even with --prof-hz (which sets the start)\n"
               "  --prof-out F   write the profile to F (exact mode also writes F.time); default:\n"
               "                 som.sampo (som-PID.sampo with --threads) unless --prof-report\n"
               "  --prof-report  print the profile report on stderr at exit\n"
               "  --prof-dump F  write the calling-context map as JSON to F\n"
               "  --prof-states  also measure the VM-state split exactly and print both splits\n"
               "  --prof-paused  start paused (System profilerStart begins sampling)\n"
               "  --prof-lean    exact mode: count only frames a sampler sees (no primitives,\n"
               "                 trivial methods inlined): the low-distortion time view\n"
               "  --prof-exact-time  async mode: also time every activation exactly in the\n"
               "                 same run, written to F.time (the samples' ground truth)\n"
               "  --jit=MODE     the optimizing JIT: on (default; hot methods, chosen from the\n"
               "                 samples, compile in the background), off, or eager (every\n"
               "                 method compiles at its first call, synchronously; for testing).\n"
               "                 With --prof=exact the JIT stays off: exact profiling counts\n"
               "                 every activation, which compiled code does not report\n"
               "  --jit-deopt-stress[=SEED]  compiled guards fail at random (seeded; default\n"
               "                 seed 1), to exercise deoptimization\n"
               "  --jit-stats    print JIT statistics on stderr at exit (compiled, failed,\n"
               "                 compile times, code bytes, deopts by reason, invalidations)\n"
               "  --jit-dump     print the IR of each compiled function on stderr\n"
               "  --jit-feedback-sampling=on|off  sampled type feedback in compiled code: the\n"
               "                 profiler's samples read the kinds of the operands of generic\n"
               "                 sites and stale feedback is recompiled away (default on)\n"
               "  --jit-t1 N     observations that make a feedback slot ready (20)\n"
               "  --jit-t2-factor N  a slot with more than N*T1 observations while its code is\n"
               "                 not ready starts over (10)\n"
               "  --jit-ready-share P  share of ready slots a version needs (0.5)\n"
               "  --jit-fb-burst N  slot executions observed per profiler sample, at most T1\n"
               "                 at one slot (512; 1: one observation per sample)\n"
               "  --jit-deopt-loop=cooldown|threshold|none  how a recompiled version that keeps\n"
               "                 deoptimizing is kept from looping (threshold)\n"
               "  -h, --help     show this help\n"
               "  --version      show the version\n"
               "  --             end of the options (the main class follows)\n"
               "\n"
               "Options that take a value also accept --name=VALUE.\n"
               "\n"
               "environment: SOM_CORELIB=DIR replaces the built-in core library;\n"
               "SOM_JIT_* tune the JIT's controller (docs/design/jit.md).\n");
}

typedef struct Config {
    SomOptions opts;
    SomProfOptions prof;
    JitOptions jit;
    bool jit_asked; /* a --jit* option was given: a JIT that cannot run is worth a warning */
    char *classpath;
    int threads;
    int argc;
    char **argv;
} Config;

/* A heap size: a positive number with an optional unit k, M or G (any case, optionally
 * followed by B); a bare number is megabytes, as in CSOM (-H10 is 10 MB).  Answers 0 for
 * anything else, or for more than 1 TiB. */
static size_t parse_size(const char *s) {
    char *end;
    if (!*s || *s == '-' || *s == '+' || *s == ' ') return 0;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0)) return 0;
    switch (*end) {
    case 'k':
    case 'K':
        v *= 1024;
        end++;
        break;
    case 'm':
    case 'M':
        v *= 1024 * 1024;
        end++;
        break;
    case 'g':
    case 'G':
        v *= 1024.0 * 1024 * 1024;
        end++;
        break;
    case 0:
        v *= 1024 * 1024;
        break;
    default:
        return 0;
    }
    if (*end == 'b' || *end == 'B') end++;
    if (*end || v < 1 || v > 1024.0 * 1024 * 1024 * 1024) return 0;
    return (size_t)v;
}

static char *join_path(const char *a, const char *b) {
    size_t la = a ? strlen(a) : 0, lb = strlen(b);
    char *r = malloc(la + lb + 2);
    if (!r) abort();
    if (la) {
        memcpy(r, a, la);
        r[la++] = ':';
    }
    memcpy(r + la, b, lb + 1);
    return r;
}

/* An option that takes a value, at argv[*i]: `NAME VALUE` (the index moves past VALUE) or
 * `NAME=VALUE`.  Answers false when argv[*i] is another option; else true with *v set, or
 * NULL after saying what is missing (`what` describes the value). */
static bool opt_value(int argc, char **argv, int *i, const char *name, const char *what,
                      const char **v) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) || (a[n] && a[n] != '=')) return false;
    if (a[n] == '=') {
        *v = a + n + 1;
    } else if (*i + 1 < argc) {
        *v = argv[++*i];
    } else {
        fprintf(stderr, "som: %s needs an argument: %s\n", name, what);
        *v = NULL;
    }
    return true;
}

/* A whole number in [lo, hi]. */
static bool parse_int(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi || *s == ' ' || *s == '+') return false;
    *out = v;
    return true;
}

/* One --prof* option at argv[*i]; answers -1 to continue, else an exit status. */
static int parse_prof(int argc, char **argv, int *i, SomProfOptions *p) {
    const char *a = argv[*i];
    if (!strcmp(a, "--prof")) {
        if (p->mode == SOMPROF_OFF) p->mode = SOMPROF_ASYNC;
        return -1;
    }
    if (!strncmp(a, "--prof=", 7)) {
        if (!somprof_parse_mode(a + 7, &p->mode) || p->mode == SOMPROF_OFF) {
            fprintf(stderr, "som: --prof: expected async, coop or exact, got '%s'\n", a + 7);
            return 2;
        }
        return -1;
    }
    bool flag = true;
    if (!strcmp(a, "--prof-report"))
        p->report = true;
    else if (!strcmp(a, "--prof-states"))
        p->exact_states = true;
    else if (!strcmp(a, "--prof-paused"))
        p->paused = true;
    else if (!strcmp(a, "--prof-tune"))
        p->tune = true;
    else if (!strcmp(a, "--prof-lean"))
        p->lean = true;
    else if (!strcmp(a, "--prof-exact-time"))
        p->exact_time = true;
    else
        flag = false;
    if (flag) {
        if (p->mode == SOMPROF_OFF) p->mode = SOMPROF_ASYNC;
        return -1;
    }
    const char *v;
    if (opt_value(argc, argv, i, "--prof-hz", "samples per second, 1 to 100000", &v)) {
        long hz;
        if (!v) return 2;
        if (!parse_int(v, 1, 100000, &hz)) {
            fprintf(stderr, "som: --prof-hz: expected a number between 1 and 100000, got '%s'\n",
                    v);
            return 2;
        }
        p->hz = (uint32_t)hz;
    } else if (opt_value(argc, argv, i, "--prof-out", "a file name", &v) ||
               opt_value(argc, argv, i, "--prof-dump", "a file name", &v)) {
        if (!v) return 2;
        bool out = a[7] == 'o';
        size_t n = strlen(v);
        if (!n || (n > 4 && !strcmp(v + n - 4, ".som"))) { /* `--prof-out Prog.som` */
            fprintf(stderr, "som: %s: expected a file name for the %s, got '%s'%s\n",
                    out ? "--prof-out" : "--prof-dump", out ? "profile" : "dump", v,
                    n ? " (a SOM source file; not overwritten)" : "");
            return 2;
        }
        *(out ? &p->out : &p->dump) = v;
    } else {
        fprintf(stderr, "som: unknown option '%s' (som --help lists the options)\n", a);
        return 2;
    }
    if (p->mode == SOMPROF_OFF) p->mode = SOMPROF_ASYNC;
    return -1;
}

/* One --jit* option; answers -1 to continue, else an exit status. */
static int parse_jit(int argc, char **argv, int *i, JitOptions *j) {
    const char *a = argv[*i], *v;
    if (!j->fb_set) {
        jit_fb_defaults(&j->fb);
        j->fb_set = true;
    }
    long n;
    if (opt_value(argc, argv, i, "--jit-feedback-sampling", "on or off", &v)) {
        if (!v) return 2;
        if (strcmp(v, "on") && strcmp(v, "off")) {
            fprintf(stderr, "som: --jit-feedback-sampling: expected on or off, got '%s'\n", v);
            return 2;
        }
        j->fb.on = !strcmp(v, "on");
    } else if (opt_value(argc, argv, i, "--jit-t1", "a number between 1 and 100000", &v)) {
        if (!v) return 2;
        if (!parse_int(v, 1, 100000, &n)) {
            fprintf(stderr, "som: --jit-t1: expected a number between 1 and 100000, got '%s'\n", v);
            return 2;
        }
        j->fb.t1 = (uint32_t)n;
    } else if (opt_value(argc, argv, i, "--jit-t2-factor", "a number between 1 and 1000", &v)) {
        if (!v) return 2;
        if (!parse_int(v, 1, 1000, &n)) {
            fprintf(stderr,
                    "som: --jit-t2-factor: expected a number between 1 and 1000, got '%s'\n", v);
            return 2;
        }
        j->fb.t2_factor = (uint32_t)n;
    } else if (opt_value(argc, argv, i, "--jit-fb-burst", "a number between 1 and 100000", &v)) {
        if (!v) return 2;
        if (!parse_int(v, 1, 100000, &n)) {
            fprintf(stderr,
                    "som: --jit-fb-burst: expected a number between 1 and 100000, got '%s'\n", v);
            return 2;
        }
        j->fb.burst = (uint32_t)n;
    } else if (opt_value(argc, argv, i, "--jit-ready-share", "a share between 0 and 1", &v)) {
        char *end;
        if (!v) return 2;
        errno = 0;
        double d = strtod(v, &end);
        if (end == v || *end || errno || !(d > 0 && d <= 1)) {
            fprintf(stderr,
                    "som: --jit-ready-share: expected a share above 0 and at most 1, got '%s'\n",
                    v);
            return 2;
        }
        j->fb.ready_share = d;
    } else if (opt_value(argc, argv, i, "--jit-deopt-loop", "cooldown, threshold or none", &v)) {
        if (!v) return 2;
        if (!jit_fb_parse_loop(v, &j->fb.loop)) {
            fprintf(stderr,
                    "som: --jit-deopt-loop: expected cooldown, threshold or none, got '%s'\n", v);
            return 2;
        }
    } else if (!strncmp(a, "--jit=", 6)) {
        if (!jit_parse_mode(a + 6, &j->mode)) {
            fprintf(stderr, "som: --jit: expected on, off or eager, got '%s'\n", a + 6);
            return 2;
        }
    } else if (!strcmp(a, "--jit")) {
        j->mode = JIT_ON;
    } else if (!strcmp(a, "--jit-stats")) {
        j->stats = true;
    } else if (!strcmp(a, "--jit-dump")) {
        j->dump = true;
    } else if (!strcmp(a, "--jit-deopt-stress")) {
        j->deopt_stress_seed = 1;
    } else if (!strncmp(a, "--jit-deopt-stress=", 19)) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(a + 19, &end, 10);
        if (end == a + 19 || *end || errno || v == 0 || a[19] == '-') {
            fprintf(stderr, "som: --jit-deopt-stress: expected a positive seed, got '%s'\n",
                    a + 19);
            return 2;
        }
        j->deopt_stress_seed = v;
    } else {
        fprintf(stderr, "som: unknown option '%s' (som --help lists the options)\n", a);
        return 2;
    }
    return -1;
}

/* A main class given as a file (a path, or a name ending in .som) that is neither there nor
 * in a -cp directory: said as the shell would say it, before a VM starts.  A bare class name
 * is looked up by the program (System>>resolve:), which reports a missing class itself. */
static bool main_file_missing(const char *arg, const char *cp) {
    size_t n = strlen(arg);
    bool path = strchr(arg, '/') != NULL;
    if (!path && (n < 4 || strcmp(arg + n - 4, ".som"))) return false;
    struct stat st;
    if (stat(arg, &st) == 0) return false;
    int e = errno;
    for (const char *d = cp; !path && d && *d;) { /* som -cp DIR File.som: DIR/File.som */
        size_t len = strcspn(d, ":");
        char buf[4096];
        if (len && (size_t)snprintf(buf, sizeof buf, "%.*s/%s", (int)len, d, arg) < sizeof buf &&
            stat(buf, &st) == 0)
            return false;
        d += len + (d[len] == ':');
    }
    fprintf(stderr, "som: %s: %s\n", arg, strerror(e));
    return true;
}

/* Answers -1 to continue, else an exit status. */
static int parse_args(int argc, char **argv, Config *c) {
    int i = 1;
    const char *cp = NULL;
    c->threads = 1;
    c->jit.mode = JIT_ON;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("som %s (Sampo SOM virtual machine)\n", SOM_VERSION);
            return 0;
        } else if (!strcmp(a, "--")) { /* the main class follows, even if it starts with - */
            i++;
            break;
        } else if (!strcmp(a, "-cp") || !strncmp(a, "--classpath", 11)) {
            const char *name = a[1] == 'c' ? "-cp" : "--classpath";
            if (!opt_value(argc, argv, &i, name, "directories separated by ':'", &cp)) {
                fprintf(stderr, "som: unknown option '%s' (som --help lists the options)\n", a);
                return 2;
            }
            if (!cp) return 2;
        } else if (opt_value(argc, argv, &i, "--threads", "a number between 1 and 256", &v)) {
            long n;
            if (!v) return 2;
            if (!parse_int(v, 1, 256, &n)) {
                fprintf(stderr, "som: --threads: expected a number between 1 and 256, got '%s'\n",
                        v);
                return 2;
            }
            c->threads = (int)n;
        } else if (!strncmp(a, "--jit", 5)) {
            c->jit_asked = true;
            int r = parse_jit(argc, argv, &i, &c->jit);
            if (r >= 0) return r;
        } else if (!strncmp(a, "--prof", 6)) {
            int r = parse_prof(argc, argv, &i, &c->prof);
            if (r >= 0) return r;
        } else if (!strcmp(a, "--gc-stress")) {
            c->opts.gc_stress = true;
        } else if (!strncmp(a, "--gc-stress=", 12)) {
            long n;
            if (!parse_int(a + 12, 1, 1000000, &n)) {
                fprintf(stderr,
                        "som: --gc-stress=N: expected a number between 1 and 1000000, got '%s'\n",
                        a + 12);
                return 2;
            }
            c->opts.gc_stress = true;
            c->opts.gc_stress_every = (uint32_t)n;
        } else if (!strcmp(a, "-g")) {
            c->opts.gc_verbose = true;
        } else if (!strncmp(a, "-H", 2)) {
            v = a[2] ? a + 2 + (a[2] == '=') : (i + 1 < argc ? argv[++i] : NULL);
            if (!v) {
                fprintf(stderr, "som: -H needs an argument: a size like 64M\n");
                return 2;
            }
            if (!(c->opts.heap_hint = parse_size(v))) {
                fprintf(stderr, "som: -H: expected a size like 64M, got '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "-d") || !strcmp(a, "-dd")) {
            c->opts.dump_feedback = true;
        } else {
            fprintf(stderr, "som: unknown option '%s' (som --help lists the options)\n", a);
            return 2;
        }
    }
    if (c->prof.exact_time && c->prof.mode != SOMPROF_ASYNC) {
        fprintf(stderr, "som: --prof-exact-time: needs --prof=async (exact mode times itself)\n");
        return 2;
    }
    if (c->prof.mode == SOMPROF_EXACT && c->jit.mode != JIT_OFF) { /* see --help */
        if (c->jit_asked)
            fprintf(stderr, "som: note: --prof=exact runs without the JIT (it counts every "
                            "activation)\n");
        c->jit.mode = JIT_OFF;
    }
    if (i >= argc) {
        fprintf(stderr, "som: no main class given\n");
        usage(stderr);
        return 2;
    }
    /* MainClass may be a path: its directory joins the class path */
    struct stat st;
    if (strstr(argv[i], ".som") && stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "som: %s: %s, not a SOM source file\n", argv[i], strerror(EISDIR));
        return 2;
    }
    if (main_file_missing(argv[i], cp)) return 2;
    char *main = strdup(argv[i]);
    char *slash = strrchr(main, '/');
    char *name = main;
    char *path = cp ? strdup(cp) : NULL;
    if (slash) {
        *slash = 0;
        char *p = join_path(path, main[0] ? main : "/");
        free(path);
        path = p;
        name = slash + 1;
    }
    size_t n = strlen(name);
    if (n > 4 && !strcmp(name + n - 4, ".som")) name[n - 4] = 0;
    char *p = join_path(path, ".");
    free(path);
    c->classpath = p;
    c->argc = argc - i;
    c->argv = malloc(sizeof(char *) * (size_t)(c->argc + 1));
    c->argv[0] = strdup(name);
    for (int k = 1; k < c->argc; k++)
        c->argv[k] = argv[i + k];
    free(main);
    c->opts.corelib_dir = getenv("SOM_CORELIB");
    if (c->opts.corelib_dir && !*c->opts.corelib_dir) c->opts.corelib_dir = NULL;
    return -1;
}

typedef struct Run {
    const Config *cfg;
    int no;
    int status;
    uint64_t ns;
    bool last;             /* the process ends after this run (one VM) */
    atomic_int *left_runs; /* --threads: runs whose program has not ended yet (the last ends it) */
    bool jit_running;      /* a compilation was left running: the VM stays, main ends with _exit */
} Run;

static void config_free(Config *c) {
    if (c->argv) free(c->argv[0]);
    free(c->argv);
    free(c->classpath);
}

/* The JIT's sampling session (somprof's jit_only mode) runs: the JIT is on without --prof. */
static bool jit_sampling;
static atomic_flag jit_warned = ATOMIC_FLAG_INIT;

/* A JIT that cannot attach leaves the program interpreted: said once, not per thread. */
static void jit_warn(const char *why) {
    if (!atomic_flag_test_and_set(&jit_warned))
        fprintf(stderr, "som: warning: JIT unavailable (%s); running interpreted\n", why);
}

static void *run_one(void *arg) {
    Run *r = arg;
    char err[1024];
    uint64_t t0 = som_now_ns();
    SomVM *vm = som_vm_new(&r->cfg->opts, r->cfg->classpath, err, sizeof err);
    if (!vm) {
        fprintf(stderr, "som: %s\n", err);
        r->status = 1;
        return NULL;
    }
    bool prof = r->cfg->prof.mode != SOMPROF_OFF || jit_sampling;
    if (prof && somprof_attach(vm, r->no) && r->cfg->prof.mode != SOMPROF_OFF)
        fprintf(stderr, "som: thread %d: cannot attach the profiler\n", r->no);
    if (r->cfg->jit.mode != JIT_OFF && jit_attach(vm, &r->cfg->jit, err, sizeof err)) jit_warn(err);
    r->status = som_vm_run(vm, r->cfg->argc, r->cfg->argv);
    /* the process's last program to end need not wait for the JIT (jit_detach_final) */
    if (r->last || (r->left_runs && atomic_fetch_sub(r->left_runs, 1) == 1))
        r->jit_running = jit_detach_final(vm);
    else
        jit_detach(vm);
    if (prof) somprof_detach(vm);
    if (r->cfg->opts.gc_verbose)
        fprintf(stderr, "som: GC: %llu collections, %.1f ms, %.1f MB allocated, %.1f MB live\n",
                (unsigned long long)vm->heap.stats.collections, vm->heap.stats.ns_total / 1e6,
                vm->heap.stats.bytes_allocated / 1048576.0, vm->heap.stats.bytes_live / 1048576.0);
    if (!r->jit_running) som_vm_free(vm); /* else the compiler thread may still read it */
    r->ns = som_now_ns() - t0;
    return NULL;
}

static int run_threads(Config *c, bool *jit_running);

/* An environment variable set to 1. */
static bool getenv_flag(const char *name) {
    const char *v = getenv(name);
    return v && !strcmp(v, "1");
}

/* ---- SIGINT / SIGTERM while profiling ---------------------------------------------------
 * The signals are blocked in every thread (the mask is set before any thread starts) and
 * taken by one thread with sigwait: no handler runs in the middle of the VM.  That thread
 * asks the VMs to stop at their next safe point (somprof_request_stop); main then finishes
 * the session as after a normal end - the profile collected so far is written - and
 * re-raises the signal, so the exit status is the signal's, as without the profiler.  A VM
 * that does not reach a safe point within the grace period (a long primitive), or a second
 * signal, ends the process at once, unprofiled. */

#define STOP_GRACE_MS 10000

static sigset_t stop_set;
static atomic_int stop_sig;     /* the signal taken (0: none) */
static atomic_int session_done; /* main finished the session */

static _Noreturn void reraise(int sig) {
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    _exit(128 + sig); /* not reached: the default action of SIGINT/SIGTERM ends the process */
}

static void *stop_waiter(void *arg) {
    (void)arg;
    int sig;
    if (sigwait(&stop_set, &sig)) return NULL;
    atomic_store(&stop_sig, sig);
    somprof_request_stop(sig);
    struct timespec tick = {0, 10 * 1000000};
    sigset_t none;
    sigemptyset(&none);
    for (int ms = 0; ms < STOP_GRACE_MS; ms += 10) {
        if (atomic_load(&session_done)) return NULL; /* main re-raises */
        nanosleep(&tick, NULL);
        somprof_request_stop(sig); /* again: a hook may have cleared the flag */
        struct timespec zero = {0, 0};
        int again = sigtimedwait(&stop_set, NULL, &zero);
        if (again > 0) reraise(again);
    }
    fprintf(stderr, "som: %s: the program did not reach a safe point in %d s; profile lost\n",
            strsignal(sig), STOP_GRACE_MS / 1000);
    reraise(sig);
}

/* Blocks the signals (before any thread starts: the mask is inherited). */
static void block_stop_signals(void) {
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&stop_set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_set, NULL);
}

/* Starts the thread that takes them: after the profiler's session has started, so that
 * libsampo starts in a single-threaded process (it then grows the descriptor table without
 * the kernel's RCU wait: 17 ms of every profiled run's start here). */
static void start_stop_waiter(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, stop_waiter, NULL) == 0) pthread_detach(t);
}

/* --prof with neither --prof-out nor --prof-report would lose the profile: it goes to
 * som.sampo in the current directory then (som-PID.sampo with --threads, whose runs are
 * often started side by side), and main says so at the end, as perf does with perf.data. */
static void default_prof_out(Config *c, char *buf, size_t len) {
    if (c->prof.out || c->prof.report) return;
    if (c->threads > 1)
        snprintf(buf, len, "som-%d.sampo", (int)getpid());
    else
        snprintf(buf, len, "som.sampo");
    c->prof.out = buf;
}

int main(int argc, char **argv) {
    Config cfg = {0};
    int rc = parse_args(argc, argv, &cfg);
    if (rc >= 0) {
        config_free(&cfg);
        return rc;
    }
    char err[8400];
    char default_out[64] = "";
    if (cfg.prof.mode != SOMPROF_OFF) {
        default_prof_out(&cfg, default_out, sizeof default_out);
        block_stop_signals();
        cfg.prof.feed_jit = cfg.jit.mode == JIT_ON; /* its controller reads these samples */
        if (somprof_session_start(&cfg.prof, err, sizeof err)) {
            fprintf(stderr, "som: profiler: %s\n", err);
            config_free(&cfg);
            return 2;
        }
        start_stop_waiter();
    }
    if (cfg.jit.mode != JIT_OFF && jit_check_env(err, sizeof err)) {
        fprintf(stderr, "som: %s\n", err);
        config_free(&cfg);
        return 2;
    }
    /* The JIT's own sampling runs whenever the JIT does (no --prof: with it, the user's
     * session serves both).  SOM_JIT_SAMPLING=0 leaves it out, =1 runs it even when the JIT
     * cannot: the two sides of its overhead measurement (docs/design/jit.md). */
    const char *js = getenv("SOM_JIT_SAMPLING");
    bool sampling = cfg.jit.mode == JIT_ON && !(js && !strcmp(js, "0"));
    if (cfg.jit.mode != JIT_OFF && !jit_available(err, sizeof err)) {
        if (cfg.jit_asked) jit_warn(err); /* by default, a build without it runs quietly */
        cfg.jit.mode = JIT_OFF;
        sampling = sampling && getenv_flag("SOM_JIT_SAMPLING");
    }
    if (cfg.prof.mode == SOMPROF_OFF && sampling) {
        const char *hz = getenv("SOM_JIT_HZ"); /* checked by jit_check_env */
        SomProfOptions jo = {.jit_only = true, .hz = hz ? (uint32_t)strtoul(hz, NULL, 10) : 0};
        jit_sampling = somprof_session_start(&jo, err, sizeof err) == 0;
        if (!jit_sampling) /* counters alone drive the JIT then */
            fprintf(stderr, "som: warning: JIT sampling unavailable (%s)\n", err);
    }
    /* without the JIT nothing reads type feedback (but --dump-feedback, which keeps it) */
    cfg.opts.no_feedback = cfg.jit.mode == JIT_OFF;
    bool jit_running = false;
    if (cfg.threads == 1) {
        Run r = {.cfg = &cfg, .last = true};
        run_one(&r);
        rc = r.status;
        jit_running = r.jit_running;
    } else {
        rc = run_threads(&cfg, &jit_running);
    }
    SomProfCost cost;
    if (jit_sampling && cfg.jit.stats && !somprof_jit_sampling_cost(&cost)) {
        double own = (double)(cost.marker_ns + cost.hook_ns);
        fprintf(stderr,
                "jit: sampling: %llu samples, %u Hz now; marking thread %.1f ms + taking samples "
                "%.1f ms CPU = %.2f%% of the VM threads' %.1f ms\n",
                (unsigned long long)cost.samples, cost.hz, (double)cost.marker_ns / 1e6,
                (double)cost.hook_ns / 1e6, cost.vm_ns ? 100.0 * own / (double)cost.vm_ns : 0,
                (double)cost.vm_ns / 1e6);
    }
    if (jit_sampling) somprof_session_finish(err, sizeof err);
    if (cfg.prof.mode != SOMPROF_OFF && somprof_session_finish(err, sizeof err)) {
        fprintf(stderr, "som: profiler: %s\n", err);
        if (!rc) rc = 1;
    } else if (default_out[0]) {
        bool timed = cfg.prof.mode == SOMPROF_EXACT || cfg.prof.exact_time;
        fprintf(stderr, "som: profile written to %s%s%s%s (sampo report %s)\n", default_out,
                timed ? " and " : "", timed ? default_out : "", timed ? ".time" : "", default_out);
    }
    config_free(&cfg);
    atomic_store(&session_done, 1);
    int sig = atomic_load(&stop_sig);
    if (sig) reraise(sig);
    if (jit_running) { /* no exit(): LLVM's static destructors would run under the compiler */
        fflush(NULL);
        _exit(rc);
    }
    return rc;
}

static int run_threads(Config *c, bool *jit_running) {
    Run *runs = calloc((size_t)c->threads, sizeof *runs);
    pthread_t *tids = calloc((size_t)c->threads, sizeof *tids);
    if (!runs || !tids) abort();
    atomic_int left_runs = c->threads; /* a thread that cannot start counts as ended */
    for (int t = 0; t < c->threads; t++) {
        runs[t].cfg = c;
        runs[t].no = t;
        runs[t].left_runs = &left_runs;
        int e = pthread_create(&tids[t], NULL, run_one, &runs[t]);
        if (e) {
            fprintf(stderr, "som: cannot start thread %d: %s\n", t, strerror(e));
            runs[t].status = 1;
            tids[t] = 0;
            atomic_fetch_sub(&left_runs, 1);
        }
    }
    int status = 0;
    for (int t = 0; t < c->threads; t++) {
        if (tids[t]) pthread_join(tids[t], NULL);
        fprintf(stderr, "som: thread %d: exit status %d, %.1f ms\n", t, runs[t].status,
                runs[t].ns / 1e6);
        if (runs[t].status && !status) status = runs[t].status;
        *jit_running = *jit_running || runs[t].jit_running;
    }
    free(runs);
    free(tids);
    return status;
}
