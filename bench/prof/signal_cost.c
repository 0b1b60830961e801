/* SPDX-License-Identifier: MIT */
/*
 * signal_cost.c - what one profiling signal costs a program, per kind of trigger.
 *
 * One process alternates the same loop (random read-modify-write over a working set of
 * 4 KiB pages) with no signals and with signals from one trigger at a given rate, and prints
 * the extra CPU time per delivered signal (empty handler).  Alternating within one process
 * keeps slow phases of a shared machine from landing on one side only.
 *
 *   prof_signal_cost TRIGGER HZ WS_KIB ITERS [ROUNDS]
 *     TRIGGER: perf (perf_event_open cpu-clock, exclude_kernel, F_SETOWN_EX to this thread)
 *              tcpu (timer_create on the thread CPU clock: expires in the scheduler tick)
 *              mono (timer_create on CLOCK_MONOTONIC: an hrtimer of its own)
 *              itimer (setitimer ITIMER_PROF, as gperftools)
 * Results: docs/design/profiler.md ("Triggers") and docs/performance.md.
 */
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t sc_signals;
static uint32_t *sc_ws;
static size_t sc_mask;
static volatile uint64_t sc_sink;

static void sc_handler(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)si, (void)uc;
    sc_signals++;
}

static uint64_t sc_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t sc_work(long iters) {
    uint64_t t0 = sc_cpu_ns(), s = 0;
    uint32_t x = 1;
    for (long i = 0; i < iters; i++) {
        x = x * 1664525u + 1013904223u;
        s += sc_ws[(x >> 4) & sc_mask];
        sc_ws[(x >> 4) & sc_mask] = (uint32_t)s;
    }
    sc_sink = s;
    return sc_cpu_ns() - t0;
}

typedef struct {
    int fd;
    timer_t tm;
    int have_tm;
} ScTrig;

static int sc_perf_on(ScTrig *t, long hz) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.sample_period = (uint64_t)(1000000000 / hz);
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.disabled = 1;
    a.wakeup_events = 1;
    t->fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (t->fd < 0) return -1;
    struct f_owner_ex o = {F_OWNER_TID, (pid_t)syscall(SYS_gettid)};
    if (fcntl(t->fd, F_SETFL, O_ASYNC) || fcntl(t->fd, F_SETSIG, SIGPROF) ||
        fcntl(t->fd, F_SETOWN_EX, &o))
        return -1;
    return ioctl(t->fd, PERF_EVENT_IOC_ENABLE, 0);
}

static int sc_timer_on(ScTrig *t, clockid_t clk, long hz) {
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGPROF;
    ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    if (timer_create(clk, &ev, &t->tm)) return -1;
    t->have_tm = 1;
    long ns = 1000000000 / hz;
    struct itimerspec its = {{ns / 1000000000, ns % 1000000000},
                             {ns / 1000000000, ns % 1000000000}};
    return timer_settime(t->tm, 0, &its, NULL);
}

static int sc_on(ScTrig *t, const char *kind, long hz) {
    memset(t, 0, sizeof *t);
    t->fd = -1;
    if (!strcmp(kind, "perf")) return sc_perf_on(t, hz);
    if (!strcmp(kind, "tcpu")) return sc_timer_on(t, CLOCK_THREAD_CPUTIME_ID, hz);
    if (!strcmp(kind, "mono")) return sc_timer_on(t, CLOCK_MONOTONIC, hz);
    if (!strcmp(kind, "itimer")) {
        long us = 1000000 / hz;
        struct itimerval iv = {{us / 1000000, us % 1000000}, {us / 1000000, us % 1000000}};
        return setitimer(ITIMER_PROF, &iv, NULL);
    }
    return -1;
}

static void sc_off(ScTrig *t, const char *kind) {
    if (t->fd >= 0) close(t->fd);
    if (t->have_tm) timer_delete(t->tm);
    if (!strcmp(kind, "itimer")) {
        struct itimerval z;
        memset(&z, 0, sizeof z);
        setitimer(ITIMER_PROF, &z, NULL);
    }
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s perf|tcpu|mono|itimer HZ WS_KIB ITERS [ROUNDS]\n", argv[0]);
        return 2;
    }
    const char *kind = argv[1];
    long hz = atol(argv[2]), iters = atol(argv[4]), rounds = argc > 5 ? atol(argv[5]) : 5;
    size_t ws = (size_t)atol(argv[3]) << 10;
    if (hz <= 0 || iters <= 0 || ws < 4096 || (ws & (ws - 1))) {
        fprintf(stderr, "signal_cost: HZ and ITERS > 0, WS_KIB a power of two >= 4\n");
        return 2;
    }
    sc_ws = mmap(NULL, ws, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (sc_ws == MAP_FAILED) return 1;
    madvise(sc_ws, ws, MADV_NOHUGEPAGE);
    memset(sc_ws, 1, ws);
    sc_mask = ws / 4 - 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = sc_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    uint64_t base = 0, with = 0;
    long n = 0;
    for (long r = 0; r < rounds; r++) {
        base += sc_work(iters);
        ScTrig t;
        long n0 = sc_signals;
        if (sc_on(&t, kind, hz)) {
            perror("signal_cost: trigger");
            return 1;
        }
        with += sc_work(iters);
        sc_off(&t, kind);
        n += sc_signals - n0;
    }
    printf("%-6s %5ld Hz, %6zu KiB: no signals %.3f s, with %.3f s, %ld signals -> %.1f us per "
           "signal (%+.2f%%)\n",
           kind, hz, ws >> 10, base / 1e9, with / 1e9, n,
           n ? (double)((int64_t)(with - base)) / (double)n / 1e3 : 0.0,
           ((double)with - (double)base) / (double)base * 100);
    return 0;
}
