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

static void pl_atexit(void) {
    if (!pl_active) return;
    pl_active = 0;
    int rc = sampo_stop();
    if (rc) fprintf(stderr, "sampo: writing the profile failed (%d)\n", rc);
}

static void pl_child(void) {
    pl_active = 0;
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

#define PL_REAL(ret, name, params)                                                                 \
    static ret(*real_##name) params;                                                               \
    if (!real_##name) *(void **)&real_##name = dlsym(RTLD_NEXT, #name);

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
