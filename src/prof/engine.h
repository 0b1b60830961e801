/* SPDX-License-Identifier: MIT */
/*
 * engine.h - shared internal state of libsampo: the global engine, per-thread slots, sample
 * batches and the record layout written by the signal handler.
 *
 * Pipeline (Rotor): the SIGPROF handler appends records to its thread's current batch (a
 * thread-local queue); a full (or old) batch is pushed onto the global MPSC list g.full
 * and the handler takes a fresh one from its SPSC free ring; the manager thread drains
 * g.full, does all heavy work (symbols, CC-Map, tuning, profile building), and recycles the
 * batch into the owner's free ring.  Memory is bounded by the batch pool; a sample that finds
 * no free batch is dropped and counted.
 *
 * Locks: g.ctl (control API, serializes start/stop/...), g.reg (thread registry), g.data
 * (everything the manager builds).  Order: ctl -> reg -> data.  The handler takes no lock.
 */
#ifndef PROF_ENGINE_H
#define PROF_ENGINE_H

#include "sampo.h"
#include "ccmap.h"
#include "pchist.h"
#include "ring.h"
#include "tune.h"

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

/* The profiler's signal: a real-time signal the program leaves at SIG_DFL, chosen at the
 * first start from SIGRTMAX down (SAMPO_SIGNAL=N forces one).  Not SIGPROF: a program's own
 * SIGPROF handler and ITIMER_PROF timer stay its own. */
extern int prof_sig;
#define PROF_SIG prof_sig
/* Engine fds (perf events) are moved to this number or above, out of the range a program
 * reuses after closing its low fds (F_DUPFD_CLOEXEC; lowered when RLIMIT_NOFILE is small). */
#define PROF_FD_FLOOR 1000
#define PROF_MAX_DEPTH 255
#define PROF_BATCH_WORDS 2048       /* 16 KiB; holds >= 2 records of PROF_MAX_DEPTH */
#define PROF_JITTER_EVERY 8         /* samples per jittered re-arm of the trigger */
#define PROF_BLOCK_DEPTH 64         /* frames cached on entry to an interposed blocking call */
#define PROF_FLUSH_NS 1000000000ull /* a batch older than this is flushed at the next sample */

/* Record flags. */
enum {
    REC_PARTIAL = 1,    /* VM walk stopped at a visited frame (last VM frame) */
    REC_TOP_REPEAT = 2, /* the youngest VM frame was already visited */
    REC_WALK_ERR = 4,   /* native walk cut by an invalid frame pointer */
    REC_TRUNC = 8,      /* cut by max_depth */
    REC_SYNTH = 16,     /* wall mode: made by the sampler for a blocked thread */
    REC_CALIB = 32,     /* calibration sample: counted for cost, not profiled */
    REC_PAUSED = 64     /* feed_paused: taken while paused, for the thread's CC-Map only */
};

/* One sample; followed by n_native u64 PCs (pcs[0] = interrupted PC, then return
 * addresses), nsw words copied from the top of the stack (the manager finds the caller of
 * a frameless leaf or of a function still in its prologue there), and n_vm SampoFrameInfo
 * (youngest first).  Size in 8-byte words. */
typedef struct ProfRec {
    uint32_t words, tid;
    uint64_t time_ns;
    uint64_t pc, fp;
    uint16_t n_native, n_vm;
    uint8_t state, flags;
    uint8_t nsw, weight;
} ProfRec;

#define PROF_STACK_WORDS 8

#define PROF_REC_WORDS (sizeof(ProfRec) / 8)
#define PROF_VMF_WORDS (sizeof(SampoFrameInfo) / 8)

typedef struct ProfThread ProfThread;

typedef struct ProfBatch {
    struct ProfBatch *next; /* link in g.full (MPSC) */
    ProfThread *owner;
    uint32_t used, cap; /* words */
    uint32_t nsamples;
    uint64_t first_ns;
    uint64_t data[];
} ProfBatch;

struct ProfThread {
    _Atomic int in_handler;
    _Atomic int alive;
    int tid;
    uint32_t index;
    uintptr_t stack_lo, stack_hi;
    ProfBatch *cur; /* handler-owned while alive */
    ProfRing free;
    /* VM integration (owner-written) */
    SampoVmFrame *volatile *vm_top;
    SampoFrameCallback cb;
    void *cb_ctx;
    const volatile uint8_t *state_ptr;
    volatile uint8_t state;
    /* trigger */
    int perf_fd;
    uint64_t perf_id;            /* PERF_EVENT_IOC_ID of perf_fd: identity checked before use */
    uint64_t perf_dev, perf_ino; /* fstat of perf_fd */
    int phase;                   /* the first period was a random phase: restore on 1st sample */
    int has_timer;
    timer_t timer;
    uint32_t burst_n;
    uint32_t jitter_n;
    uint64_t due_ns;   /* perf-sw: thread CPU time the current sample was due at (0: unset) */
    uint64_t entry_ns; /* perf-sw: thread CPU time at the current handler's entry */
    uint32_t gen_seen; /* perf-sw: prof_g.retime_gen the schedule was made for */
    int in_pause;
    uint64_t rng;
    /* counters written by the handler */
    _Atomic uint64_t dropped, walk_err, truncated, taken, taken_paused;
    int cap_paused; /* the handler's sample in hand is REC_PAUSED (read in its callback) */
    /* wall mode: stack cached on entry to an interposed blocking call (seqlock) */
    _Atomic uint32_t bseq;
    _Atomic int blocked;
    _Atomic int hit_blocked; /* a profiler signal arrived while blocked */
    uint32_t bn;
    uint64_t bpcs[PROF_BLOCK_DEPTH];
    /* wall mode: stack of the last signal sample (seqlock), and whether the sampler's last
     * signal is still undelivered (thread runnable but not running) */
    _Atomic uint32_t lseq;
    uint32_t ln, lnsw;
    uint64_t lpcs[PROF_BLOCK_DEPTH];
    uint64_t lsw[8]; /* stack words of that sample (frameless-leaf repair) */
    _Atomic int sig_pending;
    /* sampler thread state */
    uint64_t cpu_last;
    int64_t credit;
    /* manager-only */
    ProfCCMap *cc;
    void *tokens; /* ProfTokMap */
    uint64_t prev_fn, prev_fp;
    int have_prev;
    uint32_t sp_thread; /* index in the SpProfile */
    ProfThread *next_all;
    char name[32];
    uint8_t name_given; /* name passed to sampo_thread_register: kept as is */
    char exit_name[32]; /* the thread's own name when it unregistered (g.reg held) */
};

typedef struct ProfEvent {
    uint64_t time_ns;
    int kind; /* SpEventKind numbering */
    int64_t a, b;
    char text[160];
} ProfEvent;

typedef struct ProfEngine {
    pthread_mutex_t ctl, reg, data;
    SampoConfig cfg;
    char out_path[4096];
    int started;
    _Atomic int enabled; /* handler gate */
    _Atomic int paused;
    _Atomic int kernel_refused; /* count_kernel asked, perf_event_open refused it */
    _Atomic uint64_t interval_ns;
    SampoTrigger trigger;
    int handler_installed;
    struct sigaction old_sa;
    /* pipeline */
    _Atomic(ProfBatch *) full;
    sem_t wake;
    pthread_t manager;
    _Atomic int manager_stop;
    int manager_nice; /* priority the manager got (0 or -5) */
    int sampler_rt;   /* the sampler thread ran: 1 SCHED_FIFO, 2 best nice allowed; 0 not */
    pthread_t sampler;
    sem_t sampler_wake; /* posted at stop: the sampler does not sleep out its interval */
    _Atomic int sampler_stop;
    int sampler_running;
    ProfThread *threads; /* registry (g.reg) */
    uint32_t nthreads;
    ProfBatch **pool; /* every batch ever allocated */
    uint32_t npool, batch_words, rec_max_words;
    _Atomic uint32_t mark; /* current visited mark for SampoVmFrame.flags (odd) */
    _Atomic int calibrating;
    _Atomic uint32_t retime_gen; /* bumped when a period is set outside the handler (rate
                                  * change, cost measurement): the perf-sw schedules restart */
    ProfBatch *spare;            /* manager-owned free list */
    ProfThread *sampler_slot;    /* producer slot of the sampler thread (synthesized samples) */
    /* data built by the manager (g.data) */
    ProfCCMap *cc;
    ProfCCMap *names; /* persistent VM method names (only names used) */
    char trigger_why[256];
    char err[512];                 /* detail of the last failed control call (sampo_last_error) */
    _Atomic uint64_t trigger_lost; /* perf fds the program closed (detected and re-armed) */
    struct sigaction prog_sa;      /* the program's own action for PROF_SIG, chained */
    _Atomic int prog_sa_set;
    /* SIGIO: the kernel falls back to it when it cannot queue a perf event's real-time
     * signal (RLIMIT_SIGPENDING, shared by all of the user's processes); its default action
     * kills.  Caught while the program leaves it at SIG_DFL, chained once it installs its own. */
    int sigio_installed;
    struct sigaction prog_io_sa;
    _Atomic int prog_io_set;
    _Atomic uint64_t sigio_fallback; /* such signals seen (samples lost) */
    char trigger_reason[128];        /* why the chosen trigger came first, if not by default */
    uint64_t interval0_ns;
    SampoTrigger cpu_trigger;
    ProfPcRing pcring;
    void *profile; /* SpProfile */
    void *symbols; /* ProfSymbols */
    ProfTune tune;
    ProfEvent *events;
    uint32_t nevents, cap_events;
    SampoStats st;
    uint64_t t0_ns;
    _Atomic uint64_t foreign;
} ProfEngine;

extern ProfEngine prof_g;

/* Whether the threads' triggers are armed: sampling runs, or is paused with feed_paused
 * (whose samples go to the threads' CC-Maps only). */
static inline int prof_armed(void) {
    return !atomic_load(&prof_g.paused) || prof_g.cfg.feed_paused;
}

/* Monotonic clock in ns. [signal-safe] */
uint64_t prof_now_ns(void);
/* Kernel thread id of the caller. [signal-safe] */
int prof_gettid(void);

#endif
