/* SPDX-License-Identifier: MIT */
/*
 * controller_queue.c - the process's JIT engine and its one compiler thread (controller.h).
 *
 * One compiler thread per process, not per VM: compilation is background work that should
 * take at most one core whatever --threads says (with N VMs, N compiler threads would
 * compete with the N program threads, and LLVM serialises much of its work in the one shared
 * engine anyway); Jikes RVM's AOS too has one compilation thread.  Jobs are served by
 * priority (the rule's benefit per unit of compile cost; first in, first out among equals)
 * across VMs: behind a backlog, the method that pays most is compiled first.  The thread is started
 * by the first attached VM and joined when the last one detaches.  Beside it runs the controller's
 * clock, a thread of its own (a long compilation must not stop the clock: the controller would stop
 * deciding for its whole length): every VM's tick function, every tick_ms, which only sets that
 * VM's jit_tick flag.
 *
 * Invariants: a job is in exactly one place - the queue, the thread's hands (`running`), or
 * handed back through its done() - and jitq_cancel returns only when no job of its owner is
 * in the first two, unless the process is ending and leaves the running one unfinished.
 * The engine is made once (under engine_mu) and never freed: code lives until the process
 * exits.
 */
#include "controller.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "somprof.h"

#define JITQ_MAX_CLOCKS 256
#define JITQ_PRELOAD_MS 10 /* the backend is loaded after the program ran this long */

typedef struct JitqClock {
    void *owner;
    void (*fn)(void *arg);
    void *arg;
    uint32_t ms;
    uint64_t next;
} JitqClock;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake; /* the thread: a job or a stop */
    pthread_cond_t tick; /* the clock thread: a new clock or a stop */
    pthread_cond_t idle; /* cancellers: the running job finished */
    JitJob *head;        /* by priority */
    JitJob *running;
    bool left;       /* the process ends without the running job (jitq_cancel) */
    bool preloading; /* the thread is making the engine before its first job */
    pthread_t thread, clock_thread;
    int users;
    bool started, stop;
    bool joining; /* the last release is joining the thread (retain waits) */
    /* the engine: made under engine_mu, not mu (loading the backend takes ~15 ms, in which
     * the VMs must still queue jobs); engine_state 0 not tried, 1 made, 2 failed */
    JitEngine *engine;
    _Atomic int engine_state;
    pthread_mutex_t engine_mu;
    char engine_err[256];
    const JitBackend *backend;
    JitqClock clocks[JITQ_MAX_CLOCKS];
    int nclocks;
} Q = {.mu = PTHREAD_MUTEX_INITIALIZER,
       .engine_mu = PTHREAD_MUTEX_INITIALIZER,
       .wake = PTHREAD_COND_INITIALIZER,
       .tick = PTHREAD_COND_INITIALIZER,
       .idle = PTHREAD_COND_INITIALIZER};

uint64_t jitq_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the backend ------------------------------------------------------------------------ */

void jit_set_backend(const JitBackend *b) {
    pthread_mutex_lock(&Q.mu);
    Q.backend = b;
    pthread_mutex_unlock(&Q.mu);
    pthread_mutex_lock(&Q.engine_mu);
    Q.engine = NULL;
    atomic_store(&Q.engine_state, 0);
    pthread_mutex_unlock(&Q.engine_mu);
}

const JitBackend *jit_backend(void) {
    const JitBackend *b = __atomic_load_n(&Q.backend, __ATOMIC_ACQUIRE);
    return b ? b : &jit_real_backend;
}

JitEngine *jitq_engine(char *err, size_t errlen) {
    if (atomic_load_explicit(&Q.engine_state, memory_order_acquire) == 1) return Q.engine;
    pthread_mutex_lock(&Q.engine_mu);
    if (atomic_load(&Q.engine_state) == 0) {
        const JitBackend *b = jit_backend();
        Q.engine = b->engine_new(Q.engine_err, sizeof Q.engine_err);
        if (!Q.engine && !Q.engine_err[0])
            snprintf(Q.engine_err, sizeof Q.engine_err, "the JIT engine could not be made");
        if (!Q.engine && b->available) /* found late: said once */
            fprintf(stderr, "som: warning: JIT unavailable (%s); running interpreted\n",
                    Q.engine_err);
        atomic_store_explicit(&Q.engine_state, Q.engine ? 1 : 2, memory_order_release);
    }
    JitEngine *e = Q.engine;
    if (!e) snprintf(err, errlen, "%s", Q.engine_err);
    pthread_mutex_unlock(&Q.engine_mu);
    return e;
}

bool jitq_engine_failed(void) {
    return atomic_load_explicit(&Q.engine_state, memory_order_acquire) == 2;
}

bool jitq_available(char *err, size_t errlen) {
    const JitBackend *b = jit_backend();
    if (!b->available) return jitq_engine(err, errlen) != NULL;
    if (jitq_engine_failed()) {
        snprintf(err, errlen, "%s", Q.engine_err); /* written before the state was */
        return false;
    }
    return b->available(err, errlen);
}

/* ---- the stages of one job ------------------------------------------------------------- */

static pthread_mutex_t dump_mu = PTHREAD_MUTEX_INITIALIZER;

void jitq_run(JitJob *j) {
    const JitBackend *b = jit_backend();
    uint64_t c0 = jit_thread_cpu_ns();
    char err[256] = "";
    b->optimize(j->f);
    j->phase_ns[JIT_PH_OPTIMIZE] += jit_thread_cpu_ns() - c0;
    j->cg.phase_ns = j->phase_ns;
    if (j->dump) {
        pthread_mutex_lock(&dump_mu);
        fprintf(stderr, "=== jit: %s (version %u) ===\n", j->f->name, j->version);
        b->print(j->f, stderr);
        fflush(stderr);
        pthread_mutex_unlock(&dump_mu);
    }
    JitEngine *e = jitq_engine(err, sizeof err);
    j->code = e ? b->codegen(e, j->f, &j->cg, err, sizeof err) : NULL;
    j->cg.phase_ns = NULL;
    if (!j->code) snprintf(j->err, sizeof j->err, "%s", err[0] ? err : "code generation failed");
    /* the JitFunc does not carry the version: the controller stamps it if the backend did not */
    if (j->code && !j->code->version) j->code->version = j->version;
    if (j->code && !j->code->tier) j->code->tier = 2;
    j->inlined = j->f->inlined;
    b->free_func(j->f);
    j->f = NULL;
    j->compile_ns = jit_thread_cpu_ns() - c0;
    j->t_done = jitq_now_ns();
}

/* ---- the thread ------------------------------------------------------------------------- */

/* Runs the clocks that are due (Q.mu held; released around the calls is not needed: a tick
 * function only stores a flag) and answers the nearest next deadline (0: none). */
static uint64_t jitq_tick(uint64_t now) {
    uint64_t next = 0;
    for (int i = 0; i < Q.nclocks; i++) {
        JitqClock *c = &Q.clocks[i];
        if (now >= c->next) {
            c->fn(c->arg);
            c->next = now + (uint64_t)c->ms * 1000000ull;
        }
        if (!next || c->next < next) next = c->next;
    }
    return next;
}

/* Waits on cv until `next` (monotonic ns; 0: until signalled), Q.mu held. */
static void jitq_wait_until(pthread_cond_t *cv, uint64_t next) {
    if (!next) {
        pthread_cond_wait(cv, &Q.mu);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t wait = next - jitq_now_ns();
    if (wait > next) wait = 0; /* already due */
    uint64_t t = (uint64_t)ts.tv_nsec + wait;
    ts.tv_sec += (time_t)(t / 1000000000ull);
    ts.tv_nsec = (long)(t % 1000000000ull);
    pthread_cond_timedwait(cv, &Q.mu, &ts);
}

static void *jitq_clock_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&Q.mu);
    while (!Q.stop)
        jitq_wait_until(&Q.tick, jitq_tick(jitq_now_ns()));
    pthread_mutex_unlock(&Q.mu);
    return NULL;
}

/* The process is ending without the job in hand (jitq_cancel with `left`): from here on the
 * thread touches nothing (its VM, the profiler session and LLVM's statics are going away);
 * it waits for the process's _exit.  Q.mu held on entry. */
static void jitq_park_if_left(void) {
    if (!Q.left) return;
    pthread_mutex_unlock(&Q.mu);
    for (;;)
        pause();
}

static void *jitq_main(void *arg) {
    (void)arg;
    /* testing: every job waits this long before its stages (a compilation still running when
     * the program ends: tests/jit, jit-sanity/exit-leaves-compile) */
    const char *delay = getenv("SOM_JIT_TEST_COMPILE_DELAY_MS");
    uint64_t delay_ms = delay ? strtoull(delay, NULL, 10) : 0;
    somprof_compiler_thread(true); /* sampled as "compiling" by an async session */
    /* The real backend is loaded in the background once the program has run JITQ_PRELOAD_MS
     * (or at a first job, if one comes sooner), so that a first compilation finds it loaded;
     * a program that ends sooner never loads it, and jitq_cancel leaves a load in progress
     * unfinished at the process's end, as it does a job: no program waits for LLVM */
    pthread_mutex_lock(&Q.mu);
    if (jit_backend()->available && atomic_load(&Q.engine_state) == 0) {
        uint64_t until = jitq_now_ns() + JITQ_PRELOAD_MS * 1000000ull;
        while (!Q.stop && !Q.head && jitq_now_ns() < until)
            jitq_wait_until(&Q.wake, until);
        if (!Q.stop) {
            Q.preloading = true;
            pthread_mutex_unlock(&Q.mu);
            char err[8];
            (void)jitq_engine(err, sizeof err);
            pthread_mutex_lock(&Q.mu);
            Q.preloading = false;
        }
    }
    for (;;) {
        jitq_park_if_left();
        if (Q.stop) break;
        JitJob *j = Q.head;
        if (!j) {
            pthread_cond_wait(&Q.wake, &Q.mu);
            continue;
        }
        Q.head = j->next;
        j->next = NULL;
        Q.running = j;
        pthread_mutex_unlock(&Q.mu);
        somprof_compiler_job(j->method); /* its samples name the method compiled */
        struct timespec d = {(time_t)(delay_ms / 1000), (long)(delay_ms % 1000) * 1000000L};
        while (delay_ms && nanosleep(&d, &d))
            ;
        jitq_run(j);
        pthread_mutex_lock(&Q.mu);
        jitq_park_if_left();
        pthread_mutex_unlock(&Q.mu);
        somprof_compiler_job(NULL);
        somprof_compiler_ns(j->compile_ns);
        j->done(j); /* hands it back to its VM (takes the VM's own lock only) */
        pthread_mutex_lock(&Q.mu);
        Q.running = NULL;
        pthread_cond_broadcast(&Q.idle);
    }
    pthread_mutex_unlock(&Q.mu);
    somprof_compiler_thread(false);
    return NULL;
}

int jitq_retain(void) {
    pthread_mutex_lock(&Q.mu);
    int rc = 0;
    /* the last user's release may be joining the thread right now (several VMs come and go
     * under --threads): wait until it is gone, then start a new one */
    while (Q.joining)
        pthread_cond_wait(&Q.idle, &Q.mu);
    if (!Q.started) {
        Q.stop = false;
        if (pthread_create(&Q.thread, NULL, jitq_main, NULL)) {
            rc = -1;
        } else if (pthread_create(&Q.clock_thread, NULL, jitq_clock_main, NULL)) {
            Q.stop = true;
            pthread_cond_broadcast(&Q.wake);
            pthread_mutex_unlock(&Q.mu);
            pthread_join(Q.thread, NULL);
            pthread_mutex_lock(&Q.mu);
            Q.stop = false;
            rc = -1;
        } else {
            Q.started = true;
        }
    }
    if (!rc) Q.users++;
    pthread_mutex_unlock(&Q.mu);
    return rc;
}

void jitq_release(void) {
    pthread_mutex_lock(&Q.mu);
    bool join = Q.started && --Q.users == 0;
    if (join) {
        Q.stop = true;
        Q.joining = true;
        pthread_cond_broadcast(&Q.wake);
        pthread_cond_broadcast(&Q.tick);
    }
    bool left = Q.left;
    pthread_mutex_unlock(&Q.mu);
    if (!join) return;
    if (!left) pthread_join(Q.thread, NULL); /* else parked until the process ends */
    pthread_join(Q.clock_thread, NULL);
    pthread_mutex_lock(&Q.mu);
    Q.started = false;
    Q.joining = false;
    pthread_cond_broadcast(&Q.idle); /* a retain waiting for the join */
    pthread_mutex_unlock(&Q.mu);
}

void jitq_push(JitJob *j) {
    pthread_mutex_lock(&Q.mu);
    JitJob **pp = &Q.head;
    while (*pp && (*pp)->priority >= j->priority)
        pp = &(*pp)->next;
    j->next = *pp;
    *pp = j;
    pthread_cond_signal(&Q.wake);
    pthread_mutex_unlock(&Q.mu);
}

JitJob *jitq_cancel(void *owner, bool *left) {
    JitJob *out = NULL;
    if (left) *left = false;
    pthread_mutex_lock(&Q.mu);
    for (int i = 0; i < Q.nclocks; i++)
        if (Q.clocks[i].owner == owner) Q.clocks[i--] = Q.clocks[--Q.nclocks];
    JitJob **pp = &Q.head;
    while (*pp) {
        JitJob *j = *pp;
        if (j->owner == owner) {
            *pp = j->next;
            j->next = out;
            out = j;
        } else {
            pp = &j->next;
        }
    }
    if (left && ((Q.running && Q.running->owner == owner) || Q.preloading)) *left = Q.left = true;
    while (!Q.left && Q.running && Q.running->owner == owner)
        pthread_cond_wait(&Q.idle, &Q.mu);
    pthread_mutex_unlock(&Q.mu);
    return out;
}

void jitq_set_clock(void *owner, uint32_t ms, void (*fn)(void *arg), void *arg) {
    pthread_mutex_lock(&Q.mu);
    if (Q.nclocks < JITQ_MAX_CLOCKS)
        Q.clocks[Q.nclocks++] = (JitqClock){owner, fn, arg, ms ? ms : 1, jitq_now_ns()};
    pthread_cond_signal(&Q.tick);
    pthread_mutex_unlock(&Q.mu);
}
