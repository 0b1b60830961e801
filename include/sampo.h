/* SPDX-License-Identifier: MIT */
/*
 * sampo.h - public API of libsampo, a low-overhead self-tuning sampling profiler.
 *
 * Owns: the profiler's C interface (control, configuration, VM integration, CC-Map queries).
 * Includes nothing internal; link `sampo_lib` (libsampo.a) or preload `libsampo_preload.so`.
 *
 * Concurrency and signal-safety contract (each declaration repeats the part that applies):
 *   [any-thread]  may be called from any thread concurrently; not from a signal handler.
 *   [signal-safe] async-signal-safe and lock-free: may be called from a signal handler and
 *                 from the profiler's own handler context; never blocks, never allocates.
 *   [owner]       must be called by the thread the call is about (its own state).
 *   [single]      not thread-safe: one caller at a time (e.g. a CC-Map snapshot you own).
 * Control calls (start/stop/pause/...) are serialized internally by one mutex; they must not
 * be called from the profiler's signal handler or from a VM frame-supplier callback.
 * All functions returning int return SAMPO_OK (0) or a negative SampoStatus; none exits.
 *
 * Preload configuration (libsampo_preload.so reads these at load time; `sampo record` sets
 * them).  Unset means the default in sampo_config_default():
 *   SAMPO_OUT=FILE        profile file written at exit (default "sampo.prof"); "%p" -> pid.
 *   SAMPO_HZ=N            requested samples per second per thread; 0 = derive from budget.
 *   SAMPO_MODE=cpu|wall   CPU time (default) or wall-clock time (samples sleeping threads).
 *   SAMPO_TRIGGER=auto|perf-hw|perf-sw|timer|thread   force one trigger (no fallback).
 *   SAMPO_TUNE=0|1|freeze self-tuning interval off / on / on and frozen once stable.
 *   SAMPO_TUNE_LOW, SAMPO_TUNE_HIGH   repetition-rate thresholds (default 0.01, 0.15).
 *   SAMPO_BUDGET=F        overhead budget as a fraction (default 0.01 = 1%).
 *   SAMPO_BURST=N[:GAP]   burst sampling: N samples, then GAP intervals pause (default GAP=N*9).
 *   SAMPO_JITTER=F        random jitter of each interval, fraction (default 0.2; 0 = off).
 *   SAMPO_DEPTH=N         max frames per sample (default 128, max 255).
 *   SAMPO_BUFFER_KB=N     total sample-buffer memory in KiB (default 8192).
 *   SAMPO_PC_RING=N       raw-PC ring entries for the address-space histogram (default 65536).
 *   SAMPO_PERF_MAP=0|1    write /tmp/perf-PID.map for JIT ranges (default 1).
 *   SAMPO_JITDUMP=0|1     also write perf's jitdump jit-PID.dump for JIT ranges (default 0;
 *                         read at the first sampo_jit_register; SAMPO_JITDUMP_DIR=DIR).
 *   SAMPO_COST_NS=N       per-sample cost to assume instead of measuring it at start.
 *   SAMPO_WALL_INTERPOSE=0|1  wall mode: record blocking libc calls without signalling the
 *                         blocked thread (default 1; 0 shows the EINTR problem, see docs).
 *   SAMPO_COUNT_KERNEL=0|1  perf triggers count kernel time too (page faults, system calls),
 *                         where perf_event_paranoid allows (default 0; som's async mode 1).
 *   SAMPO_CHILDREN=0|1    exec'd children keep profiling into OUT.PID (default 1).
 *   SAMPO_VERBOSE=0|1     log trigger choice and every tuning change to stderr.
 *   SAMPO_DISABLE=1       load but do nothing.
 *   SAMPO_EMPTY_HANDLER=1 benchmarks only: same triggers, handler does nothing.
 *   SAMPO_SIGNAL=N        the profiler's signal (default: the highest real-time signal the
 *                         program leaves at SIG_DFL; never SIGPROF).
 *   SAMPO_FLUSH_SIGNALS=0|1  on SIGINT/SIGTERM/SIGHUP (when the program leaves them at
 *                         SIG_DFL) write the profile, then die of the signal (default 1).
 * The `sampo` tool finds the preload library next to itself (libsampo_preload.so) or via
 * SAMPO_PRELOAD=PATH.
 */
#ifndef SAMPO_H
#define SAMPO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum SampoStatus {
    SAMPO_OK = 0,
    SAMPO_EINVAL = -1, /* bad argument */
    SAMPO_ESTATE = -2, /* wrong state (e.g. start while running) */
    SAMPO_ENOMEM = -3, /* allocation failed */
    SAMPO_ENOTRIGGER = -4 /* no trigger in the fallback chain could be armed */,
    SAMPO_EIO = -5,      /* writing the profile failed */
    SAMPO_ENOTFOUND = -6 /* no such thread / node / range */
} SampoStatus;

typedef enum SampoMode { SAMPO_MODE_CPU = 0, SAMPO_MODE_WALL = 1 } SampoMode;

/* Triggers, in fallback order for SAMPO_TRIGGER_AUTO (CPU mode).  Wall mode always uses the
 * sampler thread, since only it can see threads that consume no CPU. */
typedef enum SampoTrigger {
    SAMPO_TRIGGER_AUTO = 0,
    SAMPO_TRIGGER_PERF_HW = 1, /* perf_event_open cycles per thread (needs a PMU) */
    SAMPO_TRIGGER_PERF_SW = 2, /* perf_event_open cpu-clock per thread, F_OWNER_TID */
    SAMPO_TRIGGER_TIMER = 3,   /* timer_create(thread CPU clock, SIGEV_THREAD_ID) */
    SAMPO_TRIGGER_THREAD = 4   /* sampler thread with its own clock + tgkill (Cog) */
} SampoTrigger;

/* VM states (HotSpot-style time split).  Same numbering as the profile format. */
typedef enum SampoVmState {
    SAMPO_VM_NONE = 0,
    SAMPO_VM_INTERPRETING = 1,
    SAMPO_VM_PRIMITIVE = 2,
    SAMPO_VM_NATIVE = 3,
    SAMPO_VM_GC = 4,
    SAMPO_VM_COMPILING = 5,
    SAMPO_VM_IDLE = 6,
    SAMPO_VM_COMPILED = 7 /* running JIT-compiled code */
} SampoVmState;

typedef struct SampoConfig {
    uint32_t hz;          /* per-thread rate; 0 = budget / measured per-sample cost */
    SampoMode mode;       /* CPU or wall-clock */
    SampoTrigger trigger; /* AUTO = fallback chain */
    int tune;             /* self-tuning interval on/off */
    int tune_freeze;      /* freeze the interval once it stayed unchanged 3 windows */
    double tune_low;      /* lower repetition threshold (0.01) */
    double tune_high;     /* upper repetition threshold (0.15) */
    uint32_t tune_window; /* samples per tuning decision (1000) */
    double budget;        /* overhead budget fraction (0.01) */
    uint32_t burst;       /* samples per burst; 0 = no bursts */
    uint32_t burst_gap;   /* intervals to pause after each burst */
    double jitter;        /* interval jitter fraction, 0..0.5 */
    uint32_t max_depth;   /* frames per sample, <= 255 */
    uint32_t buffer_kib;  /* total sample buffer memory (bounded; overflow is counted) */
    uint32_t pc_ring;     /* raw PC ring entries (Cog histogram); 0 = off */
    uint64_t cost_ns;     /* assumed per-sample cost; 0 = measure at start */
    int perf_map;         /* write /tmp/perf-PID.map for registered JIT ranges */
    int wall_interpose;   /* wall mode: see SAMPO_WALL_INTERPOSE */
    int verbose;          /* log to stderr (never from the handler) */
    int empty_handler;    /* benchmarks only: the handler returns at once (signal floor) */
    int count_kernel;     /* perf triggers count the thread's kernel time too (page faults,
                             system calls), where the kernel allows it (else user time only,
                             "kernel refused" in the profile): a sample then lands where
                             that time went, not on the user code one period later.  Off by
                             default: a signal in a system call can end it with EINTR */
    int feed_paused;      /* CPU mode: while paused, VM samples still count in each thread's
                             CC-Map (sampo_ccmap_snapshot(tid): a JIT's controller keeps its
                             eyes) but nowhere else - not in the profile, the global CC-Map,
                             the histogram or the stats but paused_samples.  Their walks
                             neither set nor stop at visited marks (sampo_vm_sample_paused) */
    const char *out_path; /* written by sampo_stop(); NULL = do not write; borrowed */
} SampoConfig;

/* Fills c with the defaults listed above.  [any-thread] */
void sampo_config_default(SampoConfig *c);
/* Overlays the SAMPO_* environment variables on c.  On a malformed value returns SAMPO_EINVAL
 * and writes "SAMPO_HZ: expected a number, got 'x'" into err.  [any-thread] */
int sampo_config_from_env(SampoConfig *c, char *err, size_t errlen);

/* ---- control ------------------------------------------------------------------------
 * All [any-thread], serialized by an internal mutex, never from a signal handler. */

/* Starts profiling the calling thread and every thread registered later.  Chooses the
 * trigger (fallback chain), measures the per-sample cost, starts the manager thread. */
int sampo_start(const SampoConfig *c);
/* Stops sampling, drains every buffer, writes c->out_path if set.  Data stays queryable
 * (CC-Map, stats) until the next sampo_start(). */
int sampo_stop(void);
/* Pause/resume sampling without tearing down (pause disarms the triggers, unless
 * feed_paused keeps them for the threads' CC-Maps). */
int sampo_pause(void);
int sampo_resume(void);
/* Changes the per-thread rate (disables self-tuning until sampo_set_tuning(1)). */
int sampo_set_rate(uint32_t hz);
int sampo_set_tuning(int on);
/* Switches CPU <-> wall mode (re-arms the triggers). */
int sampo_set_mode(SampoMode mode);
/* Writes the profile collected so far (drains first).  */
int sampo_write(const char *path);
/* 1 while started (paused counts as started). [signal-safe] */
int sampo_running(void);

typedef struct SampoStats {
    SampoTrigger trigger;    /* the trigger actually in use */
    uint64_t interval_ns;    /* current sampling interval */
    uint64_t samples;        /* samples processed by the manager */
    uint64_t captured;       /* samples taken by handlers (= samples after stop, plus
                                start-up calibration samples when the cost was measured) */
    uint64_t dropped;        /* samples lost to full buffers (counted, never blocking) */
    uint64_t walk_errors;    /* stack walks cut by a bad frame pointer */
    uint64_t truncated;      /* stack walks cut by max_depth */
    uint64_t partial;        /* samples stopped at a visited VM frame */
    uint64_t orphans;        /* partial samples whose visited frame had no context */
    uint64_t foreign;        /* signals that arrived on unregistered threads */
    uint64_t rate_changes;   /* self-tuning changes */
    uint64_t cost_ns;        /* per-sample cost used for the budget */
    uint64_t manager_ns;     /* CPU time of the manager thread (valid after stop) */
    uint32_t threads;        /* threads ever registered */
    uint64_t trigger_lost;   /* per-thread triggers the program destroyed (closed our perf fd)
                                and the engine re-armed */
    uint64_t weight;         /* the processed samples' weights: a sample stands for 1 + the
                                periods its trigger skipped (CPU-timer overruns, perf-sw
                                overflows the kernel dropped); the CC-Map's total */
    uint64_t paused_samples; /* feed_paused: samples taken while paused, counted in their
                                thread's CC-Map only (in none of the counts above) */
} SampoStats;

/* Copies the counters.  [any-thread] */
int sampo_get_stats(SampoStats *out);
/* Short name of a trigger ("perf-sw", ...).  [signal-safe] */
const char *sampo_trigger_name(SampoTrigger t);
/* Text of a status code ("no trigger could be armed", ...); never NULL.  [signal-safe] */
const char *sampo_strerror(int status);
/* Detail of the last failed control call, naming the path or trigger and the system's
 * reason ("cannot write the profile to /x/p.prof: No such file or directory"); "" if none.
 * Valid until the next control call.  [any-thread] */
const char *sampo_last_error(void);
/* 0 if trigger t can be armed on this machine for the calling thread (tries it and
 * removes it again), else SAMPO_ENOTRIGGER with the reason in why.  Lets a front end refuse
 * an unavailable --trigger before it runs a program.  [any-thread] */
int sampo_trigger_available(SampoTrigger t, char *why, size_t whylen);
/* Checks that a profile can be written to path (the file, or its directory when it does not
 * exist yet; "%p" is allowed in the name).  SAMPO_EIO with the reason in why.  sampo_start()
 * makes the same check when out_path is set, and makes a relative out_path absolute. */
int sampo_check_output(const char *path, char *why, size_t whylen);

/* ---- threads ------------------------------------------------------------------------
 * The preload library registers every thread created by pthread_create automatically.
 * A program linking libsampo statically calls these from each thread it wants sampled. */

/* Registers the calling thread (allocates its buffers; idempotent).  [owner] */
int sampo_thread_register(const char *name);
/* Unregisters the calling thread; its pending samples are kept.  [owner] */
void sampo_thread_unregister(void);

/* ---- VM integration -----------------------------------------------------------------
 * A VM supplies its own frames in one of two ways:
 *  (a) a shadow-frame chain: the VM keeps a linked list of SampoVmFrame records (youngest
 *      first) and tells the profiler where the pointer to the youngest one lives.  The
 *      handler walks caller links, stops at the first frame whose SAMPO_FRAME_VISITED flag
 *      is set (recording it, so the sample continues from that frame's recorded context),
 *      and sets the flag on every frame it walked.  The VM clears flags on frame push.
 *  (b) a callback called from the signal handler that fills an array of frames.
 * VM frames are stored in the sample in addition to the native frames. */

/* Bit 0 of every mark the profiler writes into SampoVmFrame.flags.  A frame counts as
 * visited when flags equals the profiler's current mark (marks change on start and on
 * sampo_ccmap_reset(), which invalidates old marks without touching the VM's frames). */
#define SAMPO_FRAME_VISITED 1u

typedef struct SampoVmFrame {
    struct SampoVmFrame *caller; /* older frame or NULL */
    uint64_t method;             /* VM method identity (nonzero, stable for the run) */
    uint32_t pos;                /* current position: bytecode index / call-site position */
    uint32_t flags;              /* 0 when the VM pushes the frame; then profiler-owned */
} SampoVmFrame;

/* One frame as reported by a callback. token identifies the activation (e.g. the frame's
 * address) so a later partial sample can continue from it; 0 = none. */
typedef struct SampoFrameInfo {
    uint64_t method;
    uint32_t pos;
    uint32_t visited; /* nonzero: the walk stopped here (frame already seen) */
    uint64_t token;
} SampoFrameInfo;

/* Called in the signal handler on the sampled thread.  Must be async-signal-safe: no locks,
 * no allocation, only reads of memory the VM knows to be valid.  Returns the number of
 * frames written (youngest first), at most max. */
typedef int (*SampoFrameCallback)(void *ctx, SampoFrameInfo *out, int max);

/* Registers the calling thread's shadow chain: *top is read at each sample.  top may be NULL
 * to remove it.  [owner] */
int sampo_vm_set_frame_chain(SampoVmFrame *volatile *top);
/* Registers a callback for the calling thread (NULL removes it).  [owner] */
int sampo_vm_set_frame_callback(SampoFrameCallback cb, void *ctx);
/* In a frame callback: 1 when the sample is taken while paused (feed_paused), which a
 * callback must walk in full, neither setting nor reporting visited marks: the sample
 * counts in the thread's CC-Map only, and a mark would send a later recorded sample to a
 * context the profile never saw.  [signal-safe] */
int sampo_vm_sample_paused(void);
/* Sets the calling thread's VM state (one relaxed store; cheap enough for every state
 * transition).  [owner][signal-safe] */
void sampo_vm_set_state(SampoVmState s);
/* Alternatively points the profiler at a byte the VM already maintains. [owner] */
int sampo_vm_set_state_ptr(const volatile uint8_t *state);
/* Names a VM method (e.g. "Class>>selector") for reports; copied.  [any-thread] */
int sampo_vm_name_method(uint64_t method, const char *name);

/* One entry of a VM method's line table: positions from pos up to the next entry's belong
 * to source line line. */
typedef struct SampoLine {
    uint32_t pos, line;
} SampoLine;
/* Gives a VM method's source: its file (copied; NULL = unknown), the line of its definition
 * and its line table (n entries, ascending pos; copied), so that profiles carry each
 * method's file and line and the line of each sampled position (SampoVmFrame.pos of the
 * leaf, the call site's position of its callers).  [any-thread] */
int sampo_vm_method_source(uint64_t method, const char *file, uint32_t first_line,
                           const SampoLine *lines, uint32_t n);

/* ---- JIT code ranges ---------------------------------------------------------------- */

/* Registers [start, start+size) as code named name (copied); appended to /tmp/perf-PID.map
 * when perf_map is on, and with SAMPO_JITDUMP=1 written (name and code bytes, read from the
 * range now) to perf's jitdump for `perf record -k 1` + `perf inject --jit`.  A jitdump that
 * cannot be written is reported on stderr and does not fail the call.  [any-thread] */
int sampo_jit_register(uint64_t start, uint64_t size, const char *name);
/* Forgets the range starting at start (samples already taken keep their name). */
int sampo_jit_unregister(uint64_t start);

/* ---- Cog PC histogram --------------------------------------------------------------- */

/* Builds a histogram of the raw PCs still in the ring, over [lo, hi) in nbins equal bins
 * (lo = hi = 0: the span of the samples).  Returns the number of PCs counted.  [any-thread] */
uint64_t sampo_pc_histogram(uint64_t lo, uint64_t hi, uint64_t *bins, uint32_t nbins);

/* ---- CC-Map ------------------------------------------------------------------------
 * The Rotor calling-context map: MethodProfile (self/total), CallSite (method + position),
 * Callee (caller site -> callee, any context), and per-context CallSiteRef/CalleeRef trees.
 * Methods are identified by uint64 ids: VM method ids, or for native code the start address
 * of the function.  A snapshot is an owned, immutable copy: queries on it are cheap and
 * need no locking ([single] per snapshot). */

typedef struct SampoCCMap SampoCCMap;

#define SAMPO_CTX_NONE UINT32_MAX

typedef struct SampoMethodStat {
    uint64_t method;
    uint64_t self, total;
    const char *name; /* borrowed from the snapshot; may be NULL */
} SampoMethodStat;

typedef struct SampoEdgeStat {
    uint64_t caller;
    uint64_t pos; /* call-site position in the caller */
    uint64_t callee;
    uint64_t count; /* samples with this edge on the stack, any context */
} SampoEdgeStat;

typedef struct SampoCtxInfo {
    uint32_t parent; /* context (CalleeRef) of the caller, SAMPO_CTX_NONE at a root */
    uint64_t method;
    uint64_t pos;   /* call-site position in the parent's method (0 at a root) */
    uint64_t self;  /* samples ending exactly in this context */
    uint64_t total; /* samples passing through this context */
    uint32_t depth; /* 0 at a root */
} SampoCtxInfo;

/* Snapshot of the live map: tid = 0 whole process, else one thread.  NULL: no such thread or
 * ENOMEM.  [any-thread] */
SampoCCMap *sampo_ccmap_snapshot(uint64_t tid);
/* Clears the live maps (all threads).  [any-thread] */
int sampo_ccmap_reset(void);
void sampo_ccmap_free(SampoCCMap *m);

/* A standalone map, e.g. for a VM's exact-instrumentation mode.  [single] */
SampoCCMap *sampo_ccmap_new(void);
/* Adds one sample, youngest frame first.  If start_ctx != SAMPO_CTX_NONE the sample is
 * PARTIAL: frames[n-1] is the visited frame whose context is start_ctx, and the younger
 * frames are attached below it.  ctx_out (optional, n entries) receives each frame's context.
 * Returns 0 or SAMPO_EINVAL/SAMPO_ENOMEM.  [single] */
int sampo_ccmap_add(SampoCCMap *m, const uint64_t *methods, const uint64_t *pos, uint32_t n,
                    uint64_t weight, uint32_t start_ctx, uint32_t *ctx_out);

/* Hottest methods by self (by_total = 0) or total samples; returns the count written. */
size_t sampo_ccmap_hot_methods(const SampoCCMap *m, int by_total, SampoMethodStat *out, size_t n);
/* Hottest caller->callee edges (any context). */
size_t sampo_ccmap_hot_edges(const SampoCCMap *m, SampoEdgeStat *out, size_t n);
/* All contexts (CalleeRef ids of the callee) in which caller@pos -> callee occurred. */
size_t sampo_ccmap_edge_contexts(const SampoCCMap *m, uint64_t caller, uint64_t pos,
                                 uint64_t callee, uint32_t *out, size_t n);
/* Distinct targets seen at call site caller@pos (1 = monomorphic so far); writes up to n. */
size_t sampo_ccmap_site_targets(const SampoCCMap *m, uint64_t caller, uint64_t pos, uint64_t *out,
                                size_t n);
/* Context node details; SAMPO_ENOTFOUND for a bad id. */
int sampo_ccmap_ctx_info(const SampoCCMap *m, uint32_t ctx, SampoCtxInfo *out);
/* Children contexts (callees in this context), up to n. */
size_t sampo_ccmap_ctx_children(const SampoCCMap *m, uint32_t ctx, uint32_t *out, size_t n);
/* Root contexts, up to n. */
size_t sampo_ccmap_roots(const SampoCCMap *m, uint32_t *out, size_t n);
/* Self/total of one method (0s if never seen). */
int sampo_ccmap_method(const SampoCCMap *m, uint64_t method, SampoMethodStat *out);
/* Removes context nodes whose total is below min_fraction of all samples, and general nodes
 * no remaining context refers to.  Returns the number of context nodes removed. */
size_t sampo_ccmap_prune(SampoCCMap *m, double min_fraction);
/* Total sample weight in the map. */
uint64_t sampo_ccmap_total(const SampoCCMap *m);

#ifdef __cplusplus
}
#endif
#endif
