/* SPDX-License-Identifier: MIT */
/*
 * preload.c - libsampo_preload.so: profiles an unmodified program loaded with LD_PRELOAD.
 *
 * Owns: the load-time constructor (reads SAMPO_* variables, starts the engine, stops it and
 * writes the profile at exit or _exit), pthread_create interposition (every new thread registers
 * and gets its own trigger), fork handling, and wall-mode interposition of blocking libc calls (the
 * thread caches its stack on entry so the sampler need not signal it: no EINTR). Exec'd children
 * inherit LD_PRELOAD and write OUT.PID (SAMPO_CHILDREN=0: off).  A forked child that does not exec
 * is not profiled (its copy of the engine is switched off). Nothing here runs in a signal handler.
 */
#include "sampo.h"
#include "capture.h"
#include "engine.h"
#include "preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define PL_REAL(ret, name, params)                                                                 \
    static ret(*real_##name) params;                                                               \
    if (!real_##name) *(void **)&real_##name = dlsym(RTLD_NEXT, #name);

static _Atomic int pl_active;
static char pl_out[4096];
static SampoConfig pl_cfg;   /* what pl_init started with (restarted after a failed exec) */
static pid_t pl_pid;         /* a vfork child shares our memory but has another pid */
static int pl_no_exit_hook;  /* SAMPO_HOOK_EXIT=0: _exit does not write the profile */
static __thread int pl_self; /* our own sigaction calls pass through the interposers */

/* Appends one line "PID KIND RC TEXT" to the status file `sampo record` named in
 * SAMPO_STATUS_FILE (KIND exit or exec; RC 0: TEXT is the path written, else the error), so
 * that it learns of write errors and of a run that wrote nothing.  No such variable: nothing. */
static void pl_report(const char *kind, int rc, const char *text) {
    const char *f = getenv("SAMPO_STATUS_FILE");
    if (!f || !*f) return;
    char line[4400];
    int n = snprintf(line, sizeof line, "%d %s %d %s\n", (int)getpid(), kind, rc, text);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = (int)sizeof line - 1, line[n - 1] = '\n';
    int e = errno;
    int fd = open(f, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ssize_t w = write(fd, line, (size_t)n); /* one O_APPEND write: lines do not mix */
        (void)w;
        close(fd);
    }
    errno = e;
}

/* Stops the engine and writes the profile, once (atexit, _exit, signal flush or exec). */
static int pl_finish(const char *path) {
    if (!atomic_exchange(&pl_active, 0)) return 0;
    int rc = path ? prof_engine_stop_to(path) : sampo_stop();
    const char *why = *sampo_last_error() ? sampo_last_error() : sampo_strerror(rc);
    if (rc) fprintf(stderr, "sampo: %s\n", why);
    pl_report(path ? "exec" : "exit", rc, rc ? why : prof_engine_out_path());
    return rc;
}

static void pl_atexit(void) {
    pl_finish(NULL);
}

static void pl_child(void) {
    atomic_store(&pl_active, 0);
    prof_engine_forget_after_fork();
}

/* Output path: exec'd descendants of the profiled process write OUT.PID. */
static int pl_out_path(SampoConfig *c) {
    const char *root = getenv("SAMPO_ROOT_PID");
    const char *children = getenv("SAMPO_CHILDREN");
    char pid[32];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    if (!c->out_path) c->out_path = "sampo.prof";
    if (root && strcmp(root, pid)) {
        if (children && !strcmp(children, "0")) return -1;
        snprintf(pl_out, sizeof pl_out, "%s.%s", c->out_path, pid);
        c->out_path = pl_out;
    } else {
        setenv("SAMPO_ROOT_PID", pid, 1);
    }
    return 0;
}

/* ---- SIGINT / SIGTERM / SIGHUP ---------------------------------------------------------
 * A program that leaves these at SIG_DFL dies of them without running atexit, and the
 * profile would be lost (Ctrl-C).  Like perf record on Ctrl-C, we write what was collected:
 * the handler (async-signal-safe: one atomic, one sem_post) wakes the flush thread, which
 * stops the engine, writes the profile, restores SIG_DFL and re-sends the signal, so the
 * process still dies of it and its exit status is what it would have been.  A program that
 * installs its own handler for one of them gets it untouched (see sigaction below). */

static const int pl_fatal[3] = {SIGINT, SIGTERM, SIGHUP};
static _Atomic int pl_fatal_owned[3]; /* our flush handler is installed for pl_fatal[i] */
static _Atomic int pl_dying;          /* the first fatal signal received */
static sem_t pl_flush_sem;

static int pl_fatal_index(int sig) {
    for (int i = 0; i < 3; i++)
        if (pl_fatal[i] == sig) return i;
    return -1;
}

static void pl_fatal_handler(int sig) {
    int zero = 0;
    if (atomic_compare_exchange_strong(&pl_dying, &zero, sig)) {
        sem_post(&pl_flush_sem);
        return;
    }
    if (sig == zero) return; /* the same signal again while flushing: it dies of it soon */
    /* another fatal signal while flushing (a second, different one: the user insists) */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    pl_self = 1;
    sigaction(sig, &dfl, NULL);
    pl_self = 0;
    raise(sig);
}

static void *pl_flush_main(void *arg) {
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    while (sem_wait(&pl_flush_sem) && errno == EINTR) {
    }
    int sig = atomic_load(&pl_dying);
    pl_finish(NULL);
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    pl_self = 1;
    sigaction(sig, &dfl, NULL);
    pl_self = 0;
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    kill(getpid(), sig);
    for (;;)
        pause();
    return NULL;
}

static void pl_fatal_install(void) {
    const char *e = getenv("SAMPO_FLUSH_SIGNALS");
    if ((e && !strcmp(e, "0")) || sem_init(&pl_flush_sem, 0, 0)) return;
    pthread_t th;
    prof_internal_thread = 1;
    int rc = pthread_create(&th, NULL, pl_flush_main, NULL);
    prof_internal_thread = 0;
    if (rc) return;
    pthread_detach(th);
    pthread_setname_np(th, "sampo-flush");
    pl_self = 1;
    for (int i = 0; i < 3; i++) {
        struct sigaction cur, sa = {.sa_handler = pl_fatal_handler, .sa_flags = SA_RESTART};
        sigfillset(&sa.sa_mask);
        if (sigaction(pl_fatal[i], NULL, &cur) || (cur.sa_flags & SA_SIGINFO) ||
            cur.sa_handler != SIG_DFL)
            continue; /* ignored or handled by the program (or its parent): leave it */
        if (sigaction(pl_fatal[i], &sa, NULL) == 0) atomic_store(&pl_fatal_owned[i], 1);
    }
    pl_self = 0;
}

__attribute__((constructor)) static void pl_init(void) {
    const char *dis = getenv("SAMPO_DISABLE");
    if (dis && !strcmp(dis, "1")) return;
    SampoConfig c;
    char err[256];
    sampo_config_default(&c);
    if (sampo_config_from_env(&c, err, sizeof err)) {
        fprintf(stderr, "sampo: %s; profiling disabled\n", err);
        return;
    }
    if (pl_out_path(&c)) return;
    pthread_atfork(prof_engine_atfork_prepare, prof_engine_atfork_parent, pl_child);
    pl_self = 1;
    int rc = sampo_start(&c);
    pl_self = 0;
    if (rc) {
        fprintf(stderr, "sampo: could not start the profiler: %s; running unprofiled\n",
                *sampo_last_error() ? sampo_last_error() : sampo_strerror(rc));
        return;
    }
    pl_cfg = c;
    pl_pid = getpid();
    const char *hook = getenv("SAMPO_HOOK_EXIT");
    pl_no_exit_hook = hook && !strcmp(hook, "0");
    atomic_store(&pl_active, 1);
    atexit(pl_atexit);
    pl_fatal_install();
}

/* ---- _exit / _Exit ----------------------------------------------------------------------
 * A program that ends with _exit (dash does, fork-and-exit daemons do) skips atexit: the
 * profile is written here instead, once, and only by the process that owns it (not by a
 * forked child, whose engine is off, nor by a vfork child, which has another pid).  An
 * _exit called from a signal handler while the owner's own thread is inside the profiler
 * (or malloc, or stdio) could deadlock; that is not detected (documented in profiler.md);
 * SAMPO_HOOK_EXIT=0 turns the hook off. */

static _Noreturn void pl_exit_now(int status) {
    PL_REAL(void, _exit, (int))
    if (!pl_no_exit_hook && atomic_load(&pl_active) && getpid() == pl_pid) pl_finish(NULL);
    if (real__exit) real__exit(status);
    syscall(SYS_exit_group, status);
    for (;;)
        syscall(SYS_exit, status);
}

void _exit(int status) {
    pl_exit_now(status);
}

void _Exit(int status) {
    pl_exit_now(status);
}

/* ---- signal dispositions ----------------------------------------------------------------
 * The program's view of its signals stays its own.  For the profiler's real-time signal, a
 * handler the program installs is chained (our handler passes it every signal that is not
 * ours) and we warn once, since the program then shares a signal with the profiler.  For
 * SIGINT/SIGTERM/SIGHUP, a program that installs its own action gets it, and our flush
 * handler steps aside; a query shows SIG_DFL where only our flush handler is. */

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    PL_REAL(int, sigaction, (int, const struct sigaction *, struct sigaction *))
    if (!real_sigaction) return errno = ENOSYS, -1;
    if (pl_self) return real_sigaction(sig, act, old);
    if (sig == prof_sig && sig > 0 && prof_g.handler_installed) {
        struct sigaction prev = prof_g.prog_sa;
        if (!atomic_load(&prof_g.prog_sa_set)) memset(&prev, 0, sizeof prev);
        if (act) {
            static _Atomic int warned;
            if (act->sa_handler != SIG_DFL && !atomic_exchange(&warned, 1))
                fprintf(stderr,
                        "sampo: warning: the program installs a handler for signal %d, which "
                        "the profiler uses; both are kept (the program gets the signals it "
                        "did not get from the profiler). Set SAMPO_SIGNAL to another signal "
                        "to avoid sharing it\n",
                        sig);
            atomic_store_explicit(&prof_g.prog_sa_set, 0, memory_order_release);
            prof_g.prog_sa = *act;
            atomic_store_explicit(&prof_g.prog_sa_set, 1, memory_order_release);
        }
        if (old) *old = prev;
        return 0;
    }
    if (sig == SIGIO && prof_g.sigio_installed) { /* ours only while the program has none */
        struct sigaction prev = prof_g.prog_io_sa;
        if (!atomic_load(&prof_g.prog_io_set)) memset(&prev, 0, sizeof prev);
        if (act) {
            atomic_store_explicit(&prof_g.prog_io_set, 0, memory_order_release);
            prof_g.prog_io_sa = *act;
            atomic_store_explicit(&prof_g.prog_io_set, 1, memory_order_release);
        }
        if (old) *old = prev;
        return 0;
    }
    int i = pl_fatal_index(sig);
    if (i >= 0 && atomic_load(&pl_fatal_owned[i])) {
        if (!act) {
            int r = real_sigaction(sig, NULL, old);
            if (!r && old) memset(old, 0, sizeof *old); /* SIG_DFL, as the program left it */
            return r;
        }
        struct sigaction mine;
        int r = real_sigaction(sig, act, &mine);
        if (r) return r;
        atomic_store(&pl_fatal_owned[i], 0); /* the program's now */
        if (old) memset(old, 0, sizeof *old);
        return 0;
    }
    return real_sigaction(sig, act, old);
}

sighandler_t signal(int sig, sighandler_t h) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sa.sa_flags = SA_RESTART; /* glibc's BSD semantics */
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, sig);
    if (sigaction(sig, &sa, &old)) return SIG_ERR;
    return old.sa_handler;
}

/* ---- exec without fork ------------------------------------------------------------------
 * exec() replaces the image and its profile with it: the part before exec is written first,
 * to OUT.pre-exec-N (N = 1 for the first exec of this process, then 2, ...; the count goes
 * to the new image in SAMPO_EXEC_SEQ), and the new image writes OUT as usual.  If exec
 * fails, profiling restarts and the rest of the run goes to OUT at exit. */

static char pl_seq_var[48]; /* "SAMPO_EXEC_SEQ=N" for the new image */

static int pl_exec_seq(void) {
    const char *e = getenv("SAMPO_EXEC_SEQ");
    return (e ? atoi(e) : 0) + 1;
}

/* Writes the pre-exec profile; returns 1 if the engine was stopped (restart on failure). */
static int pl_before_exec(void) {
    if (!atomic_load(&pl_active) || getpid() != pl_pid) return 0;
    char path[4200];
    int n = pl_exec_seq();
    snprintf(path, sizeof path, "%s.pre-exec-%d", prof_engine_out_path(), n);
    /* not setenv: the caller's envp may be environ itself, which setenv can move */
    snprintf(pl_seq_var, sizeof pl_seq_var, "SAMPO_EXEC_SEQ=%d", n);
    pl_finish(path);
    return 1;
}

static void pl_after_failed_exec(int stopped) {
    if (!stopped) return;
    int e = errno;
    putenv(pl_seq_var); /* a later exec counts on from here (pl_seq_var is static) */
    pl_self = 1;
    if (sampo_start(&pl_cfg) == 0) atomic_store(&pl_active, 1);
    pl_self = 0;
    errno = e;
}

/* envp plus SAMPO_EXEC_SEQ (the caller frees the array; NULL: use envp as it is). */
static char **pl_envp(char *const envp[]) {
    size_t n = 0;
    while (envp && envp[n])
        n++;
    char **out = malloc((n + 2) * sizeof *out);
    if (!out) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(envp[i], "SAMPO_EXEC_SEQ=", 15)) out[k++] = envp[i];
    out[k++] = pl_seq_var;
    out[k] = NULL;
    return out;
}

int execve(const char *path, char *const argv[], char *const envp[]) {
    PL_REAL(int, execve, (const char *, char *const[], char *const[]))
    int stopped = pl_before_exec();
    char **env = stopped ? pl_envp(envp) : NULL;
    int r = real_execve(path, argv, env ? env : envp);
    int e = errno;
    free(env);
    errno = e;
    pl_after_failed_exec(stopped);
    return r;
}

int execvpe(const char *file, char *const argv[], char *const envp[]) {
    PL_REAL(int, execvpe, (const char *, char *const[], char *const[]))
    int stopped = pl_before_exec();
    char **env = stopped ? pl_envp(envp) : NULL;
    int r = real_execvpe(file, argv, env ? env : envp);
    int e = errno;
    free(env);
    errno = e;
    pl_after_failed_exec(stopped);
    return r;
}

int fexecve(int fd, char *const argv[], char *const envp[]) {
    PL_REAL(int, fexecve, (int, char *const[], char *const[]))
    int stopped = pl_before_exec();
    char **env = stopped ? pl_envp(envp) : NULL;
    int r = real_fexecve(fd, argv, env ? env : envp);
    int e = errno;
    free(env);
    errno = e;
    pl_after_failed_exec(stopped);
    return r;
}

int execv(const char *path, char *const argv[]) {
    return execve(path, argv, environ);
}

int execvp(const char *file, char *const argv[]) {
    return execvpe(file, argv, environ);
}

/* Collects the variadic arguments of execl* into argv (NULL-terminated); envp for execle. */
#define PL_VARGS(first, envp_out)                                                                  \
    va_list ap;                                                                                    \
    size_t n = 1;                                                                                  \
    va_start(ap, first);                                                                           \
    while (va_arg(ap, char *))                                                                     \
        n++;                                                                                       \
    va_end(ap);                                                                                    \
    char *argv[n + 1];                                                                             \
    argv[0] = (char *)first;                                                                       \
    va_start(ap, first);                                                                           \
    for (size_t i = 1; i <= n; i++)                                                                \
        argv[i] = va_arg(ap, char *);                                                              \
    envp_out;                                                                                      \
    va_end(ap);

int execl(const char *path, const char *arg, ...) {
    PL_VARGS(arg, (void)0)
    return execve(path, argv, environ);
}

int execlp(const char *file, const char *arg, ...) {
    PL_VARGS(arg, (void)0)
    return execvpe(file, argv, environ);
}

int execle(const char *path, const char *arg, ...) {
    char *const *envp;
    PL_VARGS(arg, envp = va_arg(ap, char *const *))
    return execve(path, argv, envp);
}

/* ---- threads ------------------------------------------------------------------------- */

typedef struct PlStart {
    void *(*fn)(void *);
    void *arg;
} PlStart;

static void pl_cleanup(void *x) {
    (void)x;
    sampo_thread_unregister();
}

static void *pl_trampoline(void *p) {
    PlStart s = *(PlStart *)p;
    free(p);
    sampo_thread_register(NULL);
    void *r;
    pthread_cleanup_push(pl_cleanup, NULL);
    r = s.fn(s.arg);
    pthread_cleanup_pop(1);
    return r;
}

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    PL_REAL(int, pthread_create, (pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
    if (!real_pthread_create) return EAGAIN;
    if (!pl_active || prof_internal_thread) return real_pthread_create(th, attr, fn, arg);
    PlStart *s = malloc(sizeof *s);
    if (!s) return real_pthread_create(th, attr, fn, arg);
    *s = (PlStart){fn, arg};
    int rc = real_pthread_create(th, attr, pl_trampoline, s);
    if (rc) free(s);
    return rc;
}

/* ---- wall mode: blocking calls ------------------------------------------------------------
 * Each wrapper caches the caller's stack (prof_block_enter) so the sampler records the
 * blocked thread without a signal.  A signal can still race in (the sampler saw the thread
 * running an instant before it blocked): then the call fails with EINTR although the
 * program sent no signal, so the wrapper resumes it with the time that is left.  A signal
 * of the program's own arriving in that same call is also absorbed (documented).  */

static uint64_t pl_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Remaining timeout in ms for a poll-style call that started with timeout at t0. */
static int pl_left_ms(int timeout, uint64_t t0) {
    if (timeout < 0) return timeout;
    uint64_t el = pl_now_ms() - t0;
    return el >= (uint64_t)timeout ? 0 : timeout - (int)el;
}

#define PL_RETRY(cond) (cond && errno == EINTR && prof_block_interrupted())

int nanosleep(const struct timespec *req, struct timespec *rem) {
    PL_REAL(int, nanosleep, (const struct timespec *, struct timespec *))
    struct timespec ts = *req, left = {0, 0};
    int r;
    prof_block_enter();
    while ((r = real_nanosleep(&ts, &left)) && PL_RETRY(1))
        ts = left;
    int e = errno;
    prof_block_exit();
    if (rem && r) *rem = left;
    errno = e;
    return r;
}

int clock_nanosleep(clockid_t id, int flags, const struct timespec *req, struct timespec *rem) {
    PL_REAL(int, clock_nanosleep, (clockid_t, int, const struct timespec *, struct timespec *))
    struct timespec ts = *req, left = {0, 0};
    int r;
    prof_block_enter();
    while ((r = real_clock_nanosleep(id, flags, &ts, &left)) == EINTR && prof_block_interrupted())
        if (!(flags & TIMER_ABSTIME)) ts = left;
    prof_block_exit();
    if (rem && r == EINTR) *rem = left;
    return r;
}

int usleep(useconds_t us) {
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    return nanosleep(&ts, NULL);
}

unsigned sleep(unsigned s) {
    struct timespec ts = {(time_t)s, 0}, rem = {0, 0};
    if (nanosleep(&ts, &rem)) return (unsigned)rem.tv_sec + (rem.tv_nsec > 0);
    return 0;
}

int poll(struct pollfd *fds, nfds_t n, int timeout) {
    PL_REAL(int, poll, (struct pollfd *, nfds_t, int))
    uint64_t t0 = pl_now_ms();
    int r;
    prof_block_enter();
    while ((r = real_poll(fds, n, timeout)) < 0 && PL_RETRY(1))
        timeout = pl_left_ms(timeout, t0);
    int e = errno;
    prof_block_exit();
    errno = e;
    return r;
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask) {
    PL_REAL(int, ppoll, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *))
    prof_block_enter();
    int r = real_ppoll(fds, n, tmo, mask); /* sigmask semantics: not retried */
    int e = errno;
    prof_block_exit();
    errno = e;
    return r;
}

int select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv) {
    PL_REAL(int, select, (int, fd_set *, fd_set *, fd_set *, struct timeval *))
    fd_set r0, w0, e0;
    if (rd) r0 = *rd;
    if (wr) w0 = *wr;
    if (ex) e0 = *ex;
    int r;
    prof_block_enter();
    while ((r = real_select(n, rd, wr, ex, tv)) < 0 && PL_RETRY(1)) { /* Linux updates tv */
        if (rd) *rd = r0;
        if (wr) *wr = w0;
        if (ex) *ex = e0;
    }
    int e = errno;
    prof_block_exit();
    errno = e;
    return r;
}

int epoll_wait(int fd, struct epoll_event *ev, int max, int timeout) {
    PL_REAL(int, epoll_wait, (int, struct epoll_event *, int, int))
    uint64_t t0 = pl_now_ms();
    int r;
    prof_block_enter();
    while ((r = real_epoll_wait(fd, ev, max, timeout)) < 0 && PL_RETRY(1))
        timeout = pl_left_ms(timeout, t0);
    int e = errno;
    prof_block_exit();
    errno = e;
    return r;
}

int sem_wait(sem_t *s) {
    PL_REAL(int, sem_wait, (sem_t *))
    int r;
    prof_block_enter();
    while ((r = real_sem_wait(s)) < 0 && PL_RETRY(1)) {
    }
    int e = errno;
    prof_block_exit();
    errno = e;
    return r;
}

int sem_timedwait(sem_t *s, const struct timespec *abs) {
    PL_REAL(int, sem_timedwait, (sem_t *, const struct timespec *))
    int r;
    prof_block_enter();
    while ((r = real_sem_timedwait(s, abs)) < 0 && PL_RETRY(1)) {
    }
    int e = errno;
    prof_block_exit();
    errno = e;
    return r;
}
