/*
 * preload.c - libsampo_preload.so: profiles an unmodified program loaded with LD_PRELOAD.
 *
 * Owns: the load-time constructor (reads SAMPO_* variables, starts the engine, stops it and
 * writes the profile at exit), pthread_create interposition (every new thread registers and
 * gets its own trigger), fork handling, and wall-mode interposition of blocking libc calls
 * (the thread caches its stack on entry so the sampler need not signal it: no EINTR).
 * Exec'd children inherit LD_PRELOAD and write OUT.PID (SAMPO_CHILDREN=0: off).  A forked
 * child that does not exec is not profiled (its copy of the engine is switched off).
 * Nothing here runs in a signal handler.
 */
#include "sampo.h"
#include "capture.h"
#include "preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

static int pl_active;
static char pl_out[4096];

static void pl_atexit(void)
{
    if (!pl_active) return;
    pl_active = 0;
    int rc = sampo_stop();
    if (rc) fprintf(stderr, "sampo: writing the profile failed (%d)\n", rc);
}

static void pl_child(void)
{
    pl_active = 0;
    prof_engine_forget_after_fork();
}

/* Output path: exec'd descendants of the profiled process write OUT.PID. */
static int pl_out_path(SampoConfig *c)
{
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

__attribute__((constructor)) static void pl_init(void)
{
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
    int rc = sampo_start(&c);
    if (rc) {
        fprintf(stderr, "sampo: could not start the profiler (%d)\n", rc);
        return;
    }
    pl_active = 1;
    atexit(pl_atexit);
}

/* ---- threads ------------------------------------------------------------------------- */

typedef struct PlStart {
    void *(*fn)(void *);
    void *arg;
} PlStart;

static void pl_cleanup(void *x)
{
    (void)x;
    sampo_thread_unregister();
}

static void *pl_trampoline(void *p)
{
    PlStart s = *(PlStart *)p;
    free(p);
    sampo_thread_register(NULL);
    void *r;
    pthread_cleanup_push(pl_cleanup, NULL);
    r = s.fn(s.arg);
    pthread_cleanup_pop(1);
    return r;
}

#define PL_REAL(ret, name, params)                                                             \
    static ret(*real_##name) params;                                                           \
    if (!real_##name) *(void **)&real_##name = dlsym(RTLD_NEXT, #name);

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
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

/* ---- wall mode: blocking calls ------------------------------------------------------------ */

#define PL_BLOCKING(ret, name, params, args)                                                   \
    ret name params                                                                            \
    {                                                                                          \
        PL_REAL(ret, name, params)                                                             \
        prof_block_enter();                                                                    \
        ret pl_r_ = real_##name args;                                                          \
        int pl_e_ = errno;                                                                     \
        prof_block_exit();                                                                     \
        errno = pl_e_;                                                                         \
        return pl_r_;                                                                          \
    }

PL_BLOCKING(int, nanosleep, (const struct timespec *req, struct timespec *rem), (req, rem))
PL_BLOCKING(int, clock_nanosleep,
            (clockid_t id, int flags, const struct timespec *req, struct timespec *rem),
            (id, flags, req, rem))
PL_BLOCKING(int, usleep, (useconds_t us), (us))
PL_BLOCKING(unsigned, sleep, (unsigned s), (s))
PL_BLOCKING(int, poll, (struct pollfd *fds, nfds_t n, int timeout), (fds, n, timeout))
PL_BLOCKING(int, ppoll,
            (struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask),
            (fds, n, ts, mask))
PL_BLOCKING(int, select, (int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv),
            (n, rd, wr, ex, tv))
PL_BLOCKING(int, epoll_wait, (int fd, struct epoll_event *ev, int max, int timeout),
            (fd, ev, max, timeout))
PL_BLOCKING(int, sem_wait, (sem_t *s), (s))
PL_BLOCKING(int, sem_timedwait, (sem_t *s, const struct timespec *ts), (s, ts))
