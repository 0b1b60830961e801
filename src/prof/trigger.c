/* SPDX-License-Identifier: MIT */
/*
 * trigger.c - sampling triggers (see trigger.h).
 *
 * perf events and POSIX timers are per thread and count that thread's CPU time, so each
 * thread is sampled in proportion to the CPU it uses (process-wide setitimer would hand the
 * signal to whichever thread the kernel picks).  The sampler thread emulates that in CPU
 * mode by giving each thread credit for the CPU time it used since the last tick.
 */
#include "trigger.h"
#include "capture.h"
#include "manager.h"
#include "preload.h"

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

static uint64_t trig_rand(ProfThread *t) {
    uint64_t x = t->rng;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    t->rng = x;
    return x;
}

/* The calling thread's CPU time (user + system), ns. [signal-safe] */
static uint64_t trig_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Jittered interval around g.interval_ns. [signal-safe] */
static uint64_t trig_jittered(ProfThread *t, uint64_t iv) {
    double j = prof_g.cfg.jitter;
    if (j > 0) {
        double u = (double)(trig_rand(t) >> 11) / 9007199254740992.0; /* [0,1) */
        iv = (uint64_t)((double)iv * (1.0 + j * (2.0 * u - 1.0)));
    }
    return iv < 1000 ? 1000 : iv;
}

/* ---- perf_event_open --------------------------------------------------------------------- */

static void trig_perf_attr(struct perf_event_attr *a, int hw, uint64_t period) {
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = hw ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
    a->config = hw ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_SW_CPU_CLOCK;
    /* cycles: ~1 GHz assumed until measured; cpu-clock counts ns */
    a->sample_period = period;
    a->exclude_kernel = 1; /* also keeps blocking syscalls free of EINTR */
    a->exclude_hv = 1;
    a->disabled = 1;
    a->wakeup_events = 1;
}

/* Lowest fd number the engine keeps its fds at: PROF_FD_FLOOR, or below a small limit. */
static int trig_fd_floor(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur > 2 * PROF_FD_FLOOR)
        return PROF_FD_FLOOR;
    return (int)(rl.rlim_cur / 2);
}

/* The perf events' fds go at trig_fd_floor() and up, out of the program's way.  The first
 * such fd grows the descriptor table (to 1024 or 2048 entries), and the kernel grows a table
 * that other threads share only after an RCU grace period: 13-28 ms measured here, in
 * whatever thread opened the fd - sampo_start after its manager thread started, or a
 * program thread being registered.  Growing it once up front, while the process is still
 * single-threaded (the preload's constructor, som before its VM threads), costs microseconds.
 * Room for the floor + 1023 fds (a perf fd per thread), within RLIMIT_NOFILE. */
void prof_trigger_reserve_fds(void) {
    long top = trig_fd_floor() + 1023L;
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
        (rlim_t)top >= rl.rlim_cur)
        top = (long)rl.rlim_cur - 1;
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    if (top > fd) {
        int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)top);
        if (high >= 0) close(high);
    }
    close(fd);
}

/* A first period drawn uniformly from (0, iv]: a thread that lives shorter than one
 * interval is then sampled with probability (its CPU time / iv), so short-lived threads
 * get their share of samples instead of none (the first period would otherwise always be
 * a whole interval).  The handler restores iv at the first sample. */
static uint64_t trig_phase(int tid, uint64_t iv) {
    uint64_t x = prof_now_ns() ^ (uint64_t)tid * 0x9e3779b97f4a7c15ull;
    x ^= x >> 33, x *= 0xff51afd7ed558ccdull, x ^= x >> 33;
    uint64_t lo = iv / 10 < 20000 ? iv / 10 : 20000; /* never a burst of tiny periods */
    return iv > lo + 1 ? lo + 1 + x % (iv - lo) : iv ? iv : 1;
}

/* 1 if t->perf_fd is still the event the engine opened: the program may have closed it (a
 * close-all loop, closefrom) and opened something else under the same number.  fstat and
 * ioctl are async-signal-safe. [signal-safe] */
static int trig_fd_ok(const ProfThread *t, int fd) {
    struct stat st;
    uint64_t id = 0;
    if (fd < 0 || fstat(fd, &st) || (uint64_t)st.st_dev != t->perf_dev ||
        (uint64_t)st.st_ino != t->perf_ino)
        return 0;
    return ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0 && id == t->perf_id;
}

int prof_trigger_perf_ok(const ProfThread *t) {
    return trig_fd_ok(t, t->perf_fd);
}

/* Takes t's perf fd (once: the handler and a disarm may race) and closes it if still ours. */
static void trig_perf_close(ProfThread *t, int disable) {
    int fd = __atomic_exchange_n(&t->perf_fd, -1, __ATOMIC_ACQ_REL);
    if (!trig_fd_ok(t, fd)) return; /* never act on an fd the program now owns */
    if (disable) ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    close(fd);
}

/*
 * One overflow at a time: the event is enabled for a single overflow (IOC_REFRESH 1) and the
 * handler enables the next one.  A real-time signal queues one entry per overflow (SIGPROF
 * would merge them), so without this a thread that blocks the signal, or a period shorter
 * than the handler, would fill the user's queue (RLIMIT_SIGPENDING, shared with every process
 * of the user) and the kernel would then fall back to SIGIO.
 */
static int trig_perf_open(ProfThread *t, int hw, uint64_t period, uint64_t first) {
    struct perf_event_attr a;
    trig_perf_attr(&a, hw, first ? first : trig_phase(t->tid, period));
    /* count_kernel: the thread's kernel time too, unless perf_event_paranoid refuses it */
    if (prof_g.cfg.count_kernel && !atomic_load(&prof_g.kernel_refused)) a.exclude_kernel = 0;
    int fd = (int)syscall(SYS_perf_event_open, &a, t->tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0 && !a.exclude_kernel && (errno == EACCES || errno == EPERM)) {
        atomic_store(&prof_g.kernel_refused, 1);
        a.exclude_kernel = 1;
        fd = (int)syscall(SYS_perf_event_open, &a, t->tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    }
    if (fd < 0) return -errno;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, trig_fd_floor());
    if (high >= 0) close(fd), fd = high;
    struct f_owner_ex o = {F_OWNER_TID, t->tid};
    struct stat st;
    uint64_t id = 0;
    if (fstat(fd, &st) || ioctl(fd, PERF_EVENT_IOC_ID, &id) ||
        fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) || fcntl(fd, F_SETSIG, PROF_SIG) ||
        fcntl(fd, F_SETOWN_EX, &o) || ioctl(fd, PERF_EVENT_IOC_REFRESH, 1)) {
        int e = errno;
        close(fd);
        return -e;
    }
    t->perf_dev = (uint64_t)st.st_dev;
    t->perf_ino = (uint64_t)st.st_ino;
    t->perf_id = id;
    t->phase = 1;
    t->due_ns = 0;
    t->perf_fd = fd;
    return 0;
}

/* ---- per-thread CPU timers ---------------------------------------------------------------- */

static clockid_t trig_thread_clock(int tid) {
    return (clockid_t)((~(unsigned)tid << 3) | 6);
}

static int trig_timer_open(ProfThread *t, uint64_t iv) {
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = PROF_SIG;
    ev.sigev_value.sival_int = PROF_TIMER_COOKIE;
    ev.sigev_notify_thread_id = t->tid;
    /* The tick-driven timer sees a thread only when a tick finds it running, so a thread
     * shorter than a tick is rarely sampled whatever its phase.  Where a perf event can be
     * had, a one-shot cpu-clock event draws the random first phase precisely (the handler
     * closes it at its sample) and the timer takes over one interval later. */
    uint64_t first = trig_phase(t->tid, iv); /* random phase, see trig_phase */
    int oneshot =
        prof_g.cfg.mode == SAMPO_MODE_CPU && t->perf_fd < 0 && trig_perf_open(t, 0, iv, first) == 0;
    if (oneshot) first += iv;
    if (timer_create(trig_thread_clock(t->tid), &ev, &t->timer)) {
        int e = errno;
        if (oneshot) trig_perf_close(t, 1);
        return -e;
    }
    struct itimerspec its = {{(time_t)(iv / 1000000000), (long)(iv % 1000000000)},
                             {(time_t)(first / 1000000000), (long)(first % 1000000000)}};
    if (timer_settime(t->timer, 0, &its, NULL)) {
        int e = errno;
        timer_delete(t->timer);
        if (oneshot) trig_perf_close(t, 1);
        return -e;
    }
    t->has_timer = 1;
    return 0;
}

static int trig_arm_as(ProfThread *t, SampoTrigger tr) {
    uint64_t iv = atomic_load(&prof_g.interval_ns);
    switch (tr) {
    case SAMPO_TRIGGER_PERF_HW:
        return trig_perf_open(t, 1, iv, 0); /* 1 cycle ~ 1 ns at 1 GHz */
    case SAMPO_TRIGGER_PERF_SW:
        return trig_perf_open(t, 0, iv, 0);
    case SAMPO_TRIGGER_TIMER:
        return trig_timer_open(t, iv);
    case SAMPO_TRIGGER_THREAD:
        return 0; /* the sampler thread does the work */
    default:
        return -EINVAL;
    }
}

int prof_trigger_arm(ProfThread *t) {
    if (prof_g.cfg.mode == SAMPO_MODE_WALL) return 0;
    return trig_arm_as(t, prof_g.trigger) ? SAMPO_ENOTRIGGER : SAMPO_OK;
}

void prof_trigger_disarm(ProfThread *t) {
    if (t->perf_fd >= 0) trig_perf_close(t, 1);
    if (t->has_timer) {
        timer_delete(t->timer);
        t->has_timer = 0;
    }
}

/*
 * Order of the automatic chain.  At intervals of a kernel tick or longer the per-thread CPU
 * timer goes first: it expires in the scheduler tick, which interrupts the thread anyway, so
 * its signal rides on that interrupt's return.  A perf cpu-clock event has its own hrtimer
 * interrupt plus an irq_work interrupt per overflow; on these virtualized machines each
 * interrupt is an exit to the hypervisor, and a sample costs 40-60 us instead of ~5 us
 * (docs/design/profiler.md, "Triggers").  Faster than the tick only perf events deliver.
 */
static void trig_chain(SampoTrigger chain[4]) {
    uint64_t iv = atomic_load(&prof_g.interval_ns);
    int timer_first = iv >= prof_trigger_floor_ns(SAMPO_TRIGGER_TIMER);
    SampoTrigger a[4] = {SAMPO_TRIGGER_PERF_HW, SAMPO_TRIGGER_PERF_SW, SAMPO_TRIGGER_TIMER,
                         SAMPO_TRIGGER_THREAD};
    SampoTrigger b[4] = {SAMPO_TRIGGER_TIMER, SAMPO_TRIGGER_PERF_HW, SAMPO_TRIGGER_PERF_SW,
                         SAMPO_TRIGGER_THREAD};
    memcpy(chain, timer_first ? b : a, sizeof a);
}

int prof_trigger_choose(ProfThread *t, char *why, size_t whylen) {
    SampoTrigger chain[4];
    size_t off = 0;
    why[0] = 0;
    prof_g.trigger_reason[0] = 0;
    if (prof_g.cfg.mode == SAMPO_MODE_WALL) {
        prof_g.trigger = SAMPO_TRIGGER_THREAD;
        snprintf(why, whylen, "wall mode uses the sampler thread");
        return SAMPO_OK;
    }
    trig_chain(chain);
    for (size_t i = 0; i < 4; i++) {
        SampoTrigger tr = chain[i];
        if (prof_g.cfg.trigger != SAMPO_TRIGGER_AUTO && prof_g.cfg.trigger != tr) continue;
        int e = trig_arm_as(t, tr);
        if (e == 0) {
            prof_g.trigger = tr;
            if (tr == SAMPO_TRIGGER_TIMER && prof_g.cfg.trigger == SAMPO_TRIGGER_AUTO && !i)
                snprintf(prof_g.trigger_reason, sizeof prof_g.trigger_reason,
                         "interval >= kernel tick: the tick-driven CPU timer goes first");
            return SAMPO_OK;
        }
        if (off < whylen)
            off += (size_t)snprintf(why + off, whylen - off, "%s%s: %s", off ? "; " : "",
                                    sampo_trigger_name(tr), strerror(-e));
    }
    return SAMPO_ENOTRIGGER;
}

void prof_trigger_retime_all(void) {
    uint64_t iv = atomic_load(&prof_g.interval_ns);
    atomic_fetch_add(&prof_g.retime_gen, 1);
    struct itimerspec its = {{(time_t)(iv / 1000000000), (long)(iv % 1000000000)},
                             {(time_t)(iv / 1000000000), (long)(iv % 1000000000)}};
    pthread_mutex_lock(&prof_g.reg);
    for (ProfThread *t = prof_g.threads; t; t = t->next_all) {
        if (t->perf_fd >= 0 && prof_trigger_perf_ok(t))
            ioctl(t->perf_fd, PERF_EVENT_IOC_PERIOD, &iv);
        if (t->has_timer) timer_settime(t->timer, 0, &its, NULL);
    }
    pthread_mutex_unlock(&prof_g.reg);
}

/* Manager, every wake-up: a program that closes every fd (a loop to 65535, closefrom,
 * close_range) destroys the threads' perf events and sampling would stop in silence.  Each
 * lost event is counted (stats.trigger_lost, an event in the profile) and re-armed with a
 * fresh event above the fd floor, or with the thread's CPU timer, which no close() reaches. */
void prof_trigger_check_lost(void) {
    /* The trigger and the threads' events change under g.ctl (start, stop, rate switches):
     * while a control call holds it, skip this wake-up (the next one is at most 20 ms away).
     * Never wait for it: sampo_stop() holds g.ctl while it joins this thread. */
    if (pthread_mutex_trylock(&prof_g.ctl)) return;
    if (!prof_g.started || prof_g.cfg.mode != SAMPO_MODE_CPU || !prof_armed() ||
        (prof_g.trigger != SAMPO_TRIGGER_PERF_HW && prof_g.trigger != SAMPO_TRIGGER_PERF_SW)) {
        pthread_mutex_unlock(&prof_g.ctl);
        return;
    }
    uint32_t lost = 0, timers = 0;
    pthread_mutex_lock(&prof_g.reg);
    for (ProfThread *t = prof_g.threads; t; t = t->next_all) {
        if (t == prof_g.sampler_slot || !atomic_load(&t->alive) || t->perf_fd < 0 ||
            prof_trigger_perf_ok(t))
            continue;
        t->perf_fd = -1; /* the number is the program's now: never close it */
        lost++;
        if (trig_arm_as(t, prof_g.trigger) && !t->has_timer &&
            trig_timer_open(t, atomic_load(&prof_g.interval_ns)) == 0)
            timers++;
    }
    pthread_mutex_unlock(&prof_g.reg);
    pthread_mutex_unlock(&prof_g.ctl);
    if (!lost) return;
    atomic_fetch_add(&prof_g.trigger_lost, lost);
    char msg[160];
    snprintf(msg, sizeof msg,
             "the program closed the perf events of %u thread(s); re-armed (%u with the CPU "
             "timer)",
             lost, timers);
    pthread_mutex_lock(&prof_g.data);
    prof_manager_event(0, lost, timers, msg);
    pthread_mutex_unlock(&prof_g.data);
}

int sampo_trigger_available(SampoTrigger tr, char *why, size_t whylen) {
    struct perf_event_attr a;
    int fd = -1, e = 0;
    timer_t tm;
    struct sigevent ev;
    switch (tr) {
    case SAMPO_TRIGGER_PERF_HW:
    case SAMPO_TRIGGER_PERF_SW:
        trig_perf_attr(&a, tr == SAMPO_TRIGGER_PERF_HW, 0);
        fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0)
            e = errno;
        else
            close(fd);
        break;
    case SAMPO_TRIGGER_TIMER:
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_NONE;
        if (timer_create(trig_thread_clock(prof_gettid()), &ev, &tm))
            e = errno;
        else
            timer_delete(tm);
        break;
    case SAMPO_TRIGGER_AUTO:
    case SAMPO_TRIGGER_THREAD:
        break;
    default:
        e = EINVAL;
    }
    if (!e) return SAMPO_OK;
    if (why) snprintf(why, whylen, "%s: %s", sampo_trigger_name(tr), strerror(e));
    return SAMPO_ENOTRIGGER;
}

static void trig_after_sample_period(ProfThread *t, const SampoConfig *c, uint64_t iv, int perf);
static uint64_t trig_next_step(ProfThread *t, const SampoConfig *c, uint64_t iv);

/*
 * The perf-sw schedule.  The cpu-clock event counts the thread's CPU time only while it is
 * enabled, and it is off from its overflow until the handler's REFRESH: signal delivery and
 * the handler (tens of us on a virtualized machine, more in a VM's stack walk) were lost at
 * every sample, 1-5% of the CPU time at 1 kHz.  And with exclude_kernel an overflow that
 * falls in a system call or a page fault is dropped, the period with it.  So the handler
 * keeps the thread's own schedule on its CPU clock: sample k is due at due_ns; the next one
 * at due_ns + the period, and the event gets what is left of that after the handler
 * (prof_trigger_after_sample); a sample that arrives whole periods late (dropped overflows)
 * stands for them by its weight, as a CPU timer's sample stands for its overruns.  Totals
 * are then the thread's CPU time, system time included, like the CPU timer's.
 */
static int trig_scheduled(const ProfThread *t) {
    return prof_g.trigger == SAMPO_TRIGGER_PERF_SW && !t->has_timer && t->perf_fd >= 0;
}

uint8_t prof_trigger_sample_weight(ProfThread *t, const siginfo_t *si) {
    /* A CPU-clock timer is checked only at ticks that find the thread running; when the
     * thread ran between ticks (short slices on a busy machine) whole periods pass
     * unsignalled and the kernel counts them as overruns.  The sample stands for them. */
    if (si && si->si_code == SI_TIMER) {
        int over = si->si_overrun;
        return (uint8_t)(over <= 0 ? 1 : over >= 254 ? 255 : over + 1);
    }
    if (!trig_scheduled(t)) return 1;
    uint64_t now = t->entry_ns = trig_cpu_ns(); /* one clock read per sample (~1 us here) */
    uint64_t iv = atomic_load_explicit(&prof_g.interval_ns, memory_order_relaxed);
    /* the first sample; or a period was set from outside (a rate change, the cost
     * measurement's on and off phases): the schedule starts again here */
    uint32_t gen = atomic_load_explicit(&prof_g.retime_gen, memory_order_relaxed);
    if (t->phase || !t->due_ns || now < t->due_ns || gen != t->gen_seen) {
        t->due_ns = now;
        t->gen_seen = gen;
        return 1;
    }
    uint64_t missed = (now - t->due_ns) / iv;
    if (missed > 254) { /* far behind (a stopped thread's event?): start again from now */
        t->due_ns = now;
        return 255;
    }
    t->due_ns += missed * iv;
    return (uint8_t)(1 + missed);
}

void prof_trigger_after_sample(ProfThread *t) {
    const SampoConfig *c = &prof_g.cfg;
    uint64_t iv = atomic_load_explicit(&prof_g.interval_ns, memory_order_relaxed);
    int perf = t->perf_fd >= 0 && prof_trigger_perf_ok(t);
    if (t->phase) { /* the random first period is over: back to the interval */
        t->phase = 0;
        if (t->has_timer) { /* the one-shot event of the timer trigger: done */
            trig_perf_close(t, 0);
            return;
        }
        if (perf && !trig_scheduled(t)) ioctl(t->perf_fd, PERF_EVENT_IOC_PERIOD, &iv);
    }
    if (perf && trig_scheduled(t) && t->due_ns) {
        t->due_ns += trig_next_step(t, c, iv);
        /* The period runs from the REFRESH below; measured from the handler's entry it
         * leaves each sample late by this handler's rest plus the next delivery, a lateness
         * that does not add up (each period is set from the schedule).  At least a quarter
         * of the interval, so a handler slower than the interval cannot make sampling a
         * busy loop; the schedule itself is kept (a sample that then comes whole periods
         * late stands for them). */
        uint64_t now = t->entry_ns, min = iv / 4 < 1000 ? 1000 : iv / 4;
        uint64_t left = t->due_ns > now + min ? t->due_ns - now : min;
        ioctl(t->perf_fd, PERF_EVENT_IOC_PERIOD, &left);
    } else {
        trig_after_sample_period(t, c, iv, perf);
    }
    if (perf && !t->has_timer) /* the next overflow (see trig_perf_open) */
        ioctl(t->perf_fd, PERF_EVENT_IOC_REFRESH, 1);
}

/* sampo_start arms the calling thread's trigger before it sets `enabled`; a first period
 * drawn short (trig_phase: from 20 us) could end in between, and the handler, taking no
 * sample, did not renew the one-shot event: the thread was never sampled again (a whole run
 * with 0 samples, seen under load at 2 kHz).  Paused and stopped threads have no event. */
void prof_trigger_keep_armed(ProfThread *t) {
    if (t->perf_fd >= 0 && !t->has_timer && prof_trigger_perf_ok(t))
        ioctl(t->perf_fd, PERF_EVENT_IOC_REFRESH, 1);
}

/* Bursts: the period after this sample when a burst starts or ends (0: none). [signal-safe] */
static uint64_t trig_burst_step(ProfThread *t, const SampoConfig *c, uint64_t iv, int *rearm) {
    if (!c->burst) return 0;
    if (t->in_pause) t->in_pause = 0, *rearm = 1;
    if (++t->burst_n >= c->burst) {
        t->burst_n = 0;
        t->in_pause = 1;
        *rearm = 1;
        return iv * (c->burst_gap ? c->burst_gap : 1);
    }
    return 0;
}

/* The perf-sw schedule's next step: jittered at every sample (the handler sets the period
 * anyway), or a burst's gap. [signal-safe] */
static uint64_t trig_next_step(ProfThread *t, const SampoConfig *c, uint64_t iv) {
    int rearm = 0;
    uint64_t next = trig_burst_step(t, c, iv, &rearm);
    return next ? next : trig_jittered(t, iv);
}

/* Jitter and bursts: a new period now and then. [signal-safe] */
static void trig_after_sample_period(ProfThread *t, const SampoConfig *c, uint64_t iv, int perf) {
    if (c->jitter <= 0 && !c->burst) return;
    /* A re-arm is a syscall (~0.4 us here): jitter every PROF_JITTER_EVERY samples keeps
     * the phase random at an eighth of the cost. */
    /* The tick-driven timer only fires at ticks: a jittered re-arm could not move the sample
     * off the tick, it would only drop the tick it missed (-6% of the rate at 250 Hz) */
    int rearm = c->jitter > 0 && perf && !t->has_timer && ++t->jitter_n % PROF_JITTER_EVERY == 0;
    uint64_t next = trig_burst_step(t, c, iv, &rearm);
    if (!rearm) return;
    if (!next) next = trig_jittered(t, iv);
    if (t->perf_fd >= 0 && !t->has_timer) {
        if (!perf) return; /* closed by the program: the manager re-arms */
        ioctl(t->perf_fd, PERF_EVENT_IOC_PERIOD, &next);
    } else if (t->has_timer) {
        struct itimerspec its = {{(time_t)(iv / 1000000000), (long)(iv % 1000000000)},
                                 {(time_t)(next / 1000000000), (long)(next % 1000000000)}};
        timer_settime(t->timer, 0, &its, NULL);
    }
}

/* ---- sampler thread (Cog design; wall mode) ------------------------------------------- */

/* One tick: decide which threads get a signal (or a synthesized sample). */
static void sampler_tick(uint64_t iv, uint64_t now) {
    int wall = prof_g.cfg.mode == SAMPO_MODE_WALL;
    pid_t pid = getpid();
    pthread_mutex_lock(&prof_g.reg);
    for (ProfThread *t = prof_g.threads; t; t = t->next_all) {
        if (!atomic_load_explicit(&t->alive, memory_order_acquire) || t == prof_g.sampler_slot)
            continue;
        if (wall) {
            if (prof_g.cfg.wall_interpose && atomic_load(&t->blocked))
                prof_capture_synth(t, now, 0);
            else if (atomic_exchange(&t->sig_pending, 1)) /* still waiting for a CPU */
                prof_capture_synth(t, now, 1);
            else
                prof_signal_thread(pid, t->tid);
            continue;
        }
        struct timespec ts;
        if (clock_gettime(trig_thread_clock(t->tid), &ts)) continue;
        uint64_t cpu = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        t->credit += (int64_t)(cpu - t->cpu_last);
        t->cpu_last = cpu;
        if (t->credit < (int64_t)iv) continue;
        t->credit -= (int64_t)iv;
        if (t->credit > (int64_t)iv) t->credit = (int64_t)iv;
        /* one signal outstanding per thread: a real-time signal would queue (see perf) */
        if (!atomic_exchange(&t->sig_pending, 1)) prof_signal_thread(pid, t->tid);
    }
    pthread_mutex_unlock(&prof_g.reg);
}

/* The sampler must run at its tick even when the sampled threads occupy every CPU: at a
 * normal priority the scheduler lets a running thread finish its slice first, so a tick
 * that falls in a short burst of work is deferred until the thread blocks and is then
 * recorded as blocked (a thread working 1 ms in 10 got 1-2% of its wall samples in work, not
 * 10%).  A real-time priority (it sleeps between ticks and works a few microseconds per
 * tick) preempts at once; without the privilege, the highest nice value allowed. */
static int trig_sampler_priority(void) {
    struct sched_param sp = {.sched_priority = 1};
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0) return 1;
    for (int nice = -20; nice < 0 && setpriority(PRIO_PROCESS, (id_t)prof_gettid(), nice);
         nice += 5)
        ;
    return 2;
}

static void *sampler_main(void *arg) {
    ProfThread *self = arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, PROF_SIG);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    prof_g.sampler_rt = trig_sampler_priority();
    uint32_t burst_n = 0;
    uint64_t next = prof_now_ns();
    while (!atomic_load(&prof_g.sampler_stop)) {
        uint64_t iv = atomic_load(&prof_g.interval_ns);
        uint64_t step = trig_jittered(self, iv);
        if (prof_g.cfg.burst && ++burst_n >= prof_g.cfg.burst) {
            burst_n = 0;
            step = iv * (prof_g.cfg.burst_gap ? prof_g.cfg.burst_gap : 1);
        }
        next += step;
        uint64_t now = prof_now_ns();
        if (next < now) next = now; /* fell behind: do not burst to catch up */
        struct timespec ts = {(time_t)(next / 1000000000), (long)(next % 1000000000)};
        while (sem_clockwait(&prof_g.sampler_wake, CLOCK_MONOTONIC, &ts) && errno == EINTR)
            ;
        if (atomic_load(&prof_g.sampler_stop)) break;
        uint64_t woke = prof_now_ns();
        if (atomic_load(&prof_g.enabled) &&
            (!atomic_load(&prof_g.paused) || (prof_armed() && prof_g.cfg.mode == SAMPO_MODE_CPU)))
            sampler_tick(iv, next);
        /* a real-time thread must not take a CPU over: ticks that cost more than a quarter
         * of the interval (many threads, a very short interval) drop it to normal */
        if (prof_g.sampler_rt == 1 && prof_now_ns() - woke > iv / 4) {
            struct sched_param sp = {.sched_priority = 0};
            if (pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp) == 0) prof_g.sampler_rt = 2;
        }
    }
    return NULL;
}

int prof_sampler_start(void) {
    if (prof_g.sampler_running) return 0;
    atomic_store(&prof_g.sampler_stop, 0);
    /* baseline CPU clocks so the first tick does not see the whole past */
    pthread_mutex_lock(&prof_g.reg);
    for (ProfThread *t = prof_g.threads; t; t = t->next_all) {
        struct timespec ts;
        if (!clock_gettime(trig_thread_clock(t->tid), &ts))
            t->cpu_last = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        t->credit = 0;
    }
    pthread_mutex_unlock(&prof_g.reg);
    if (sem_init(&prof_g.sampler_wake, 0, 0)) return -1;
    prof_internal_thread = 1;
    int rc = pthread_create(&prof_g.sampler, NULL, sampler_main, prof_g.sampler_slot);
    prof_internal_thread = 0;
    if (rc) {
        sem_destroy(&prof_g.sampler_wake);
        return -1;
    }
    pthread_setname_np(prof_g.sampler, "sampo-sampler");
    prof_g.sampler_running = 1;
    return 0;
}

void prof_sampler_stop(void) {
    if (!prof_g.sampler_running) return;
    atomic_store(&prof_g.sampler_stop, 1);
    sem_post(&prof_g.sampler_wake); /* now, not at its next tick (a whole interval at 1 Hz) */
    pthread_join(prof_g.sampler, NULL);
    sem_destroy(&prof_g.sampler_wake);
    prof_g.sampler_running = 0;
}

/* Baseline CPU clock of a newly registered thread (sampler credit). */
void prof_trigger_thread_baseline(ProfThread *t) {
    struct timespec ts;
    if (!clock_gettime(trig_thread_clock(t->tid), &ts))
        t->cpu_last = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t prof_trigger_floor_ns(SampoTrigger tr) {
    /* CPU-clock timers expire on the scheduler tick: CONFIG_HZ=250 on Debian kernels. */
    switch (tr) {
    case SAMPO_TRIGGER_TIMER:
        return 4000000; /* CONFIG_HZ=250 on Debian kernels */
    case SAMPO_TRIGGER_THREAD:
        return 200000;
    default:
        return 100000;
    }
}

/* ---- per-sample cost -------------------------------------------------------------------- */

/*
 * What one sample costs a program is mostly not the handler: on these virtualized machines a
 * signal that needs an interrupt of its own means an exit to the hypervisor and back, after which
 * the program refills its TLB and caches.  A tight register-only loop sees only the direct part
 * (~20 us here) and under-reports what a program with a real working set pays (~40-60 us).  So the
 * work loop touches a heap-like working set: random read-modify-write over COST_WS_BYTES in 4 KiB
 * pages (no huge pages), and it is timed on the thread's CPU clock.  When the thread already has
 * its perf event, the cost is measured on that very trigger (its period, and g.interval_ns which
 * the handler's jitter re-arms to, are changed for the measuring rounds; the caller sets both
 * afterwards).  A signal from an interrupt that does not happen anyway (perf's hrtimer and
 * irq_work, a 5 kHz POSIX timer) pays that exit.  The tick-driven CPU timer cannot go faster
 * than the tick and adds no interrupt of its own, so for it the loop sends the signals
 * itself (tgkill, 1500 per round): kernel entry, delivery, handler, sigreturn.
 * Other triggers measure with a 5 kHz POSIX timer.
 */
#define COST_WS_BYTES (8u << 20)
#define COST_PERIOD_NS 200000ull /* 5 kHz while measuring */
#define COST_MIN_NS 1000ull      /* reported when signals came but cost no measurable time */

typedef struct {
    uint32_t *ws;
    uint32_t mask;
    timer_t timer;
    int have_timer;
    int perf_fd;
    int kick;       /* tick-driven trigger: the loop sends its own signals (see below) */
    int on;         /* kick mode: signals on */
    uint64_t every; /* kick mode: iterations between two signals */
    pid_t pid, tid;
} TrigCost;

static volatile uint64_t trig_sink;

static uint64_t trig_work(const TrigCost *c, uint64_t iters) {
    uint64_t t0 = trig_cpu_ns(), s = 0, next = c->kick && c->on ? c->every : UINT64_MAX;
    uint32_t x = 12345;
    for (uint64_t i = 0; i < iters; i++) {
        x = x * 1664525u + 1013904223u;
        uint32_t k = (x >> 6) & c->mask;
        s += c->ws[k];
        c->ws[k] = (uint32_t)s;
        if (i == next) {
            prof_signal_thread(c->pid, c->tid);
            next += c->every;
        }
    }
    trig_sink = s;
    return trig_cpu_ns() - t0;
}

static int trig_cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Turns the measuring trigger on (5 kHz) or off. */
static void trig_cost_set(TrigCost *c, int on) {
    c->on = on;
    if (c->kick) return;
    if (c->perf_fd >= 0) {
        uint64_t period = on ? COST_PERIOD_NS : 1000000000ull;
        atomic_store(&prof_g.interval_ns, period); /* what the handler's jitter re-arms to */
        atomic_fetch_add(&prof_g.retime_gen, 1);
        ioctl(c->perf_fd, PERF_EVENT_IOC_PERIOD, &period);
    } else if (c->have_timer) {
        long ns = on ? (long)COST_PERIOD_NS : 0;
        struct itimerspec its = {{0, ns}, {0, ns}};
        timer_settime(c->timer, 0, &its, NULL);
    }
}

static int trig_cost_open(TrigCost *c, ProfThread *t) {
    memset(c, 0, sizeof *c);
    c->perf_fd = t->perf_fd;
    c->pid = getpid();
    c->tid = t->tid;
    c->kick = t->has_timer && prof_g.trigger == SAMPO_TRIGGER_TIMER;
    if (c->perf_fd < 0 && !c->kick) {
        struct sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_THREAD_ID;
        ev.sigev_signo = PROF_SIG;
        ev.sigev_value.sival_int = PROF_TIMER_COOKIE;
        ev.sigev_notify_thread_id = t->tid;
        if (timer_create(CLOCK_MONOTONIC, &ev, &c->timer)) return -1;
        c->have_timer = 1;
    }
    void *m = mmap(NULL, COST_WS_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        if (c->have_timer) timer_delete(c->timer);
        return -1;
    }
#ifdef MADV_NOHUGEPAGE
    madvise(m, COST_WS_BYTES, MADV_NOHUGEPAGE);
#endif
    memset(m, 1, COST_WS_BYTES);
    c->ws = m;
    c->mask = COST_WS_BYTES / sizeof(uint32_t) - 1;
    return 0;
}

static void trig_cost_close(TrigCost *c) {
    trig_cost_set(c, 0);
    if (c->have_timer) timer_delete(c->timer);
    munmap(c->ws, COST_WS_BYTES);
}

/* Times a fixed amount of work with and without the 5 kHz trigger (full capture in the
 * handler), three rounds, median of the per-signal deltas. */
uint64_t prof_trigger_measure_cost(ProfThread *t) {
    TrigCost c;
    if (trig_cost_open(&c, t)) return 0;
    atomic_store(&prof_g.calibrating, 1);
    trig_cost_set(&c, 0);
    uint64_t iters = 100000;
    while (trig_work(&c, iters) < 2000000 && iters < (1ull << 40))
        iters *= 2;
    /* ~30 ms of CPU per timed loop, scaled from the least of three timings: one slow timing
     * (the loop that ended the doubling) shortened the rounds to a quarter on a loaded
     * machine, 117 signals instead of ~900 */
    uint64_t least = UINT64_MAX;
    for (int k = 0; k < 3; k++) {
        uint64_t t = trig_work(&c, iters);
        if (t < least) least = t;
    }
    iters = least ? (uint64_t)((double)iters * 30e6 / (double)least) : iters * 15;
    /* kick mode: a signal costs a few us, so send 1500 per round (50 kHz) to lift the delta
     * well above the loop's noise */
    c.every = iters / 1500 ? iters / 1500 : 1;
    uint64_t est[3], signals = 0;
    for (int r = 0; r < 3; r++) {
        uint64_t base = trig_work(&c, iters);
        uint64_t n0 = atomic_load(&t->taken);
        trig_cost_set(&c, 1);
        uint64_t with = trig_work(&c, iters);
        trig_cost_set(&c, 0);
        uint64_t n = atomic_load(&t->taken) - n0;
        signals += n;
        est[r] = n && with > base ? (with - base) / n : 0;
    }
    atomic_store(&prof_g.calibrating, 0);
    trig_cost_close(&c);
    qsort(est, 3, sizeof est[0], trig_cmp_u64);
    /* signals arrived but the delta drowned in noise: the cost is below what this resolves */
    if (!est[1] && signals) return COST_MIN_NS;
    return est[1];
}
