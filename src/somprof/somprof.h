/* SPDX-License-Identifier: MIT */
/*
 * somprof.h - libsampo inside `som`: method-level profiling of SOM programs.
 *
 * Owns: the process-wide profiler session of the som command and its per-VM attachments.
 * Three modes:
 *   async  libsampo's signal handler walks vm->frames itself (frame callback), stopping at
 *          the first activation already marked visited (Rotor's partial samples).
 *   coop   a marking thread sets vm->poll on every attached VM at the sampling rate; each VM
 *          thread takes its sample at its next safe point (method entry, loop back edge).
 *          The VM state is the one the marking thread saw when it set the flag (with
 *          --prof-states: the VM thread's own at an instant drawn after the flag).
 *   exact  every activation, primitive and exit is counted through the VM's exact hooks into
 *          a calling-context tree with invocation counts and inclusive/self times.
 * Every mode writes a profile readable by the `sampo` tools; exact mode also writes
 * FILE.time, the time-weighted view (weights in nanoseconds), and so does async mode with
 * exact_time (the exact time of the sampled run itself).
 *
 * Threading: somprof_session_start/finish on the main thread, before the VM threads start
 * and after they were joined; somprof_attach/detach on each VM's own thread.  The async
 * frame callback runs in the SIGPROF handler on the VM's thread: it reads only vm->frames
 * and writes only the visited marks (async-signal-safe, no allocation, no locks).
 */
#ifndef SOMPROF_H
#define SOMPROF_H

#include <stdbool.h>
#include <stdint.h>

#include "vm.h"

typedef enum SomProfMode {
    SOMPROF_OFF = 0,
    SOMPROF_ASYNC = 1,
    SOMPROF_COOP = 2,
    SOMPROF_EXACT = 3
} SomProfMode;

typedef struct SomProfOptions {
    SomProfMode mode;
    uint32_t hz;       /* samples per second per thread; 0 = self-tuned (async) / 1000 */
    bool tune;         /* self-tuning interval (async); on when hz == 0 */
    bool exact_states; /* also measure the VM-state split exactly (state transitions) */
    bool report;       /* print the Cog-style report at exit (stderr) */
    const char *out;   /* profile file, or NULL */
    const char *dump;  /* JSON CC-Map dump, or NULL */
    bool paused;       /* start paused (System profilerStart starts it) */
    bool feed_jit;     /* async: the JIT reads this session's samples, so a pause (paused,
                          System profilerStop) keeps sampling for the JIT's queries, out of
                          the profile (SampoConfig.feed_paused); coop's pause stops both */
    bool lean;         /* exact mode: leave primitives uncounted and trivial methods
                          inlined, so the timed run sees the frames a sampler sees */
    bool exact_time;   /* async mode: also time every activation exactly (the lean tree) in
                          the same run, written to OUT.time: the samples' own ground truth */
    bool jit_only;     /* sampling for the JIT's controller only (som with the JIT on and no
                          --prof): cooperative mode at 50 Hz self-tuned within 25-100 Hz
                          (or `hz` fixed, 25-1000), the CC-Map kept for the controller's
                          queries, no profile, dump or report written */
} SomProfOptions;

/* Parses a mode name ("async", "coop", "exact"); answers false if unknown. */
bool somprof_parse_mode(const char *s, SomProfMode *out);

/* Starts the session (async: sampo_start; coop: the marking thread).  Answers 0 or -1 with
 * a message in err. */
int somprof_session_start(const SomProfOptions *o, char *err, size_t errlen);
/* Stops sampling, merges the threads' data, writes the profile, dump and report.
 * Answers 0 or -1 with a message in err. */
int somprof_session_finish(char *err, size_t errlen);

/* Attaches the calling thread's VM (hooks, frame callback, state pointer, System primitives'
 * control function).  thread_no numbers the VM for reports.  Answers 0 or -1. */
int somprof_attach(SomVM *vm, int thread_no);
/* Detaches the VM (merges its exact/cooperative data into the session); call on the VM's
 * thread before som_vm_free. */
void somprof_detach(SomVM *vm);
/* Asks every attached VM to end its run at its next interpreter safe point (SIGINT/SIGTERM:
 * the embedder then detaches, finishes the session - the profile is written - and re-raises
 * sig).  VMs attached later stop at once.  Any thread, not from a signal handler (it takes
 * a lock).  Answers the number of VMs attached now. */
int somprof_request_stop(int sig);

/* ---- C API for a compiler controller (on the VM's own thread) ----------------------- */

typedef struct SomProfHot {
    SomMethod *method;
    const char *name; /* "Class>>selector" (borrowed, lives until exit) */
    uint64_t self, total;
} SomProfHot;

/* Hottest methods of this VM so far by self (by_total false) or total weight; answers the
 * number written (at most n). */
size_t somprof_hot_methods(SomVM *vm, bool by_total, SomProfHot *out, size_t n);
/* Distinct callees seen so far at call site caller@bci (1 = monomorphic); up to n written. */
size_t somprof_site_targets(SomVM *vm, SomMethod *caller, uint32_t bci, SomMethod **out, size_t n);

typedef struct SomProfEdge {
    SomMethod *caller;
    uint32_t bci; /* the send in the caller */
    SomMethod *callee;
    uint64_t count; /* samples with the edge on their stack (each once), or calls (exact) */
} SomProfEdge;

/* Hottest call edges caller@bci -> callee between SOM methods so far, over all their
 * contexts; up to n written, hottest first (an async CC-Map's native frames - code addresses
 * - are left out: every caller and callee answered is a method). */
size_t somprof_hot_edges(SomVM *vm, SomProfEdge *out, size_t n);

/* One calling context of an edge: methods[0] is the edge's callee, methods[1] its caller, ...
 * methods[depth-1] a root; sites[i] is the bci in methods[i+1] that called methods[i]
 * (sites[depth-1] = 0); weight: samples through the context, or its invocations (exact).
 * The arrays live for the call only. */
typedef void (*SomProfContextFn)(void *arg, SomMethod *const *methods, const uint32_t *sites,
                                 uint32_t depth, uint64_t weight);
/* Calls fn once per calling context in which caller@bci -> callee was seen (Rotor: "all the
 * contexts of a hot edge"); answers how many. */
size_t somprof_edge_contexts(SomVM *vm, SomMethod *caller, uint32_t bci, SomMethod *callee,
                             SomProfContextFn fn, void *arg);

/* ---- compiled frames --------------------------------------------------------------------- */

typedef struct SomProfLogical {
    SomMethod *method;
    uint32_t bci;
} SomProfLogical;

#define SOMPROF_MAX_INLINED 16

/* The inlined activations compiled frame f is running, innermost first, each (method, bci),
 * up to max (the innermost are dropped beyond it); the frame's own method is not among them.
 * 0 for an interpreted frame or one running only its own method.  Reads only.
 * [signal-safe on the VM's thread] */
uint32_t somprof_inlined(const SomFrame *f, SomProfLogical *out, uint32_t max);

/* The JIT's compiler thread, at its start (start true) and end: in an async session it is
 * sampled too, as a thread "som-jit" whose VM state is always "compiling".  Its own thread. */
void somprof_compiler_thread(bool start);
/* The compiler thread starts (m) or ends (NULL) a compilation of m: in an async session its
 * samples meanwhile name the SOM method being compiled, "Class>>selector [jit compile]", as a
 * frame of their own, so compile time is seen per method (and not as unnamed LLVM frames).
 * The compiler thread only. */
void somprof_compiler_job(const SomMethod *m);
/* The compiler thread spent ns of its CPU time compiling (added to the exact "compiling"
 * state of --prof-states; reported apart as well).  Any thread. */
void somprof_compiler_ns(uint64_t ns);

/* What the JIT-only session cost so far (CPU time, self-accounted): the marking thread, and
 * the VM threads' work taking samples (hook_ns), against the detached VM threads' CPU time
 * (vm_ns).  Answers -1 when no JIT-only session runs.  Any thread. */
typedef struct SomProfCost {
    uint64_t samples;
    uint32_t hz; /* the rate now (tuned) */
    uint64_t marker_ns, hook_ns, vm_ns;
} SomProfCost;
int somprof_jit_sampling_cost(SomProfCost *out);

/* Samples of this VM so far, all methods (0: no sampling session attached, or exact mode,
 * whose weights are invocations).  The controller turns samples into time with it. */
uint64_t somprof_total_samples(SomVM *vm);

struct SomJitCode;
/* Names compiled code for symbolization: registers [code_start, +code_size) with libsampo as
 * "Class>>selector [jit t2 v1]" (tier, version) when a profile is being taken, or when the
 * environment asks for perf's files (SAMPO_PERF_MAP=1 or SAMPO_JITDUMP=1); a JIT-only session
 * (SomProfOptions.jit_only) writes nothing by itself.  VM thread. */
void somprof_jit_register(SomVM *vm, const struct SomJitCode *code);

#endif
