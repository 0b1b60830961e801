/* SPDX-License-Identifier: MIT */
/*
 * vm.h - the VM instance. Everything a running SOM program needs hangs off
 * one SomVM: heap, stacks, classes, symbols, globals, options. There is no
 * global mutable state, so several VMs can run in threads of one process.
 *
 * A SomVM is used by one thread at a time (the thread that runs it), except
 * for the fields documented in frame.h as readable by samplers.
 */
#ifndef SOM_VM_H
#define SOM_VM_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "frame.h"
#include "gc.h"
#include "object.h"
#include "value.h"

/* Interned-symbol table: open addressing over SomString* (weakly held? no:
 * symbols are permanent, the table is a root). */
typedef struct SymTab {
    struct SomString **slots;
    uint32_t mask;
    uint32_t count;
} SymTab;

/* Globals are stored in their Symbols (SomString.gval); this keeps the count
 * and a version that changes on every store, for caches keyed on it. */
typedef struct GlobalTab {
    uint32_t count;
    uint64_t version;
} GlobalTab;

/* Global method lookup cache (class, selector) -> method. */
#define SOM_LOOKUP_CACHE 1024
typedef struct LookupEntry {
    SomClass *cls;
    struct SomString *sel;
    SomMethod *method;
} LookupEntry;

typedef struct SomOptions {
    bool gc_stress;           /* collect at every allocation */
    uint32_t gc_stress_every; /* with gc_stress: at every N-th allocation (0, 1: every one) */
    bool gc_verbose;          /* -g: print GC statistics at exit */
    bool dump_feedback;       /* -d: list executed methods with send-site feedback at exit */
    bool no_feedback;         /* without a JIT (and dump_feedback): record no type feedback and
                               * no inline-cache hit counts (a faster interpreter; --jit=off) */
    size_t heap_hint;         /* -H: initial heap size in bytes (0 = default) */
    size_t stack_values;      /* value stack size in Values */
    size_t max_frames;        /* maximum activation depth */
    const char *corelib_dir;  /* directory of the core library, or NULL = built in */
} SomOptions;

/* Where a safe point is.  Each one ends a stretch of execution that ran in a
 * single activation and a single VM state; the comment says which. */
typedef enum SomSafepoint {
    SOM_SP_ENTRY,     /* an activation starts (frames[top] is the callee, just
                       * published, its context not made yet): the stretch ran
                       * in the caller, frames[top - 1] */
    SOM_SP_LOOP,      /* a loop back edge: frames[top] */
    SOM_SP_RETURN,    /* an activation is about to return: frames[top] */
    SOM_SP_PRIM_CALL, /* a primitive is about to run: frames[top], interpreting */
    SOM_SP_PRIM_DONE, /* a primitive finished: frames[top], vm->state is still
                       * VMS_PRIMITIVE */
    SOM_SP_STATE,     /* vm->state is about to change (som_set_state): the
                       * stretch ran in frames[top] in the current state */
} SomSafepoint;

/* Slots mapped past vm->stack_end: the most one activation uses (locals and operand stack are
 * 16-bit counts, plus margin), so the interpreter checks only sp < stack_end when it
 * activates a method. */
#define SOM_STACK_SLACK ((size_t)2 * UINT16_MAX + 16)

struct SomVM {
    /* --- execution state (see frame.h for the sampler-visible rules) --- */
    SomFrame *frames;       /* frame array, frames[0..top] live */
    volatile int32_t top;   /* index of the running frame; -1 when idle */
    volatile uint8_t state; /* VmState */
    Value *stack;           /* value stack base */
    Value *stack_end;       /* one past the last slot an activation may start below (another
                             * SOM_STACK_SLACK slots are mapped after it) */
    Value *sp;              /* value stack top while not in the interpreter loop */
    size_t max_frames;

    /* --- memory --- */
    GcHeap heap;
    Value *roots[256]; /* som_root_push'd addresses of C locals */
    int nroots;

    /* --- well-known objects --- */
    Value nil, true_, false_, system;
    SomClass *objectClass, *classClass, *metaclassClass, *nilClass, *arrayClass, *methodClass,
        *primitiveClass, *integerClass, *stringClass, *symbolClass, *doubleClass, *blockClass,
        *block1Class, *block2Class, *block3Class, *trueClass, *falseClass, *booleanClass,
        *systemClass;
    struct SomString *sym_dnu, *sym_unknownGlobal, *sym_escapedBlock, *sym_initialize, *sym_run,
        *sym_value, *sym_new;

    SymTab symbols;
    GlobalTab globals;
    LookupEntry lookup_cache[SOM_LOOKUP_CACHE];

    /* --- loading --- */
    char **classpath;        /* owned, NULL-terminated */
    const char *loading[64]; /* names of classes being loaded (superclass chains) */
    int nloading;
    int nclasspath;
    SomOptions opts;

    /* --- errors and exit --- */
    char errmsg[1024]; /* last VM-level error */
    int exit_status;   /* set by system exit: */
    bool exiting;

    /* --- misc --- */
    uint64_t start_ns; /* for `system time` / `ticks` */
    uint32_t next_hash;
    uint16_t next_method_id;
    FILE *out, *err; /* stdout/stderr of the program */
    void *profiler;  /* reserved for the embedded profiler */
    /* Safepoint polling: when `poll` is positive the VM calls
     * safepoint_hook(vm, where) and clears nothing itself; the hook decides.
     * Set from any thread (e.g. a sampler).  The safe points split the run
     * into stretches that each lie in one activation and one VM state, so a
     * flag can be charged to the stretch it arrived in (SomSafepoint).  A
     * negative `poll` calls the hook only where the state may change (a
     * primitive's call and end, som_set_state; som_state_point): the coop
     * sampler waits so for an instant of its own without slowing the code in
     * between.  Below -1 those places count `poll` up instead, and the hook
     * runs again at -1: the sampler skips checks it knows to lie well before
     * its instant. */
    volatile int poll;
    void (*safepoint_hook)(SomVM *vm, SomSafepoint where);
    SomMethod *boot_method; /* `system initialize: args` driver */
    bool no_trivial;        /* activate trivial methods too (exact profiling) */
    /* Exact-profiling hooks, called only while `exact_hooks` is true:
     * on_enter after a method/block activation was pushed (frames[top] is the
     * callee, frames[top-1] the caller whose bci is the call site) and
     * before a primitive runs (prim != NULL, no frame is pushed for it);
     * on_exit when an activation ended (normal return, non-local return
     * unwinding: frames[top] is already the caller) or the primitive
     * finished (vm->state is still VMS_PRIMITIVE; the VM stores VMS_INTERP
     * after the hook).  Both run where a sampler's view changes, so a hook's
     * clock read splits time as the samples do.  The primitive calls happen
     * only while `prim_hooks` is true too.  `prims_all` turns the fast paths
     * of Array>>at:, at:put: and String>>= off, so that every primitive is a
     * call the hooks see (the full exact mode counts them as contexts); the
     * state split keeps them (they count as interpreting, hooked or not). */
    bool exact_hooks;
    bool prim_hooks;
    bool prims_all;
    void (*on_enter)(SomVM *vm, SomMethod *callee, bool is_prim);
    void (*on_exit)(SomVM *vm, SomMethod *callee, bool is_prim);
    /* Called by som_set_state instead of its store, on the VM's thread, at every call (the
     * state may be unchanged): stores `state` into vm->state itself, after reading its clock
     * (the exact VM-state split, --prof-states, times the states from these transitions).
     * NULL: som_set_state stores the state. */
    void (*state_hook)(SomVM *vm, uint8_t state);
    /* Allocation sampling for the profiler: gc_try_alloc calls it on the VM's thread, outside
     * any collection, when heap.sample_left bytes have been allocated (the allocation that
     * used them up is counted, not yet made); it answers the bytes to the next call.  It must
     * not allocate on the heap.  NULL: no sampling. */
    int64_t (*alloc_hook)(SomVM *vm);
    void *prof_data; /* owned by the VM profiler glue */
    /* Profiler control from SOM code (System primitives in prim_prof.c):
     * answers 0 on success; NULL when no profiler is linked in. */
    int (*prof_control)(SomVM *vm, const char *op, int64_t arg);
    uint64_t compile_ns; /* time spent compiling */
    /* --- the optimizing tier (src/jit; jitabi.h is the contract) --- */
    /* A non-local return unwinding through compiled code and interpreter levels: the frame
     * index of the home activation it returns from (-1: none) and the value it returns. */
    int32_t nlr_target;
    Value nlr_value;
    void *jit; /* the JIT's per-VM state; NULL = no JIT (compiled code is never entered) */
    /* Called on the VM's thread at a safe point where `m` is starting (why = SomJitWhy) or
     * looping: when m->invocations reaches jit_threshold (then every jit_threshold more),
     * at every activation when jit_eager is set (m has no code yet), at a loop back edge
     * every jit_loop_threshold iterations (OSR candidates), and at the next activation or
     * back edge after another thread set jit_tick (the controller's clock; cleared first).
     * The hook may install code (m->jit) and may collect garbage. */
    void (*jit_hook)(SomVM *vm, SomMethod *m, int why);
    volatile int jit_tick;
    /* Called by jit_rt_deopt (VM thread) after it counted a deoptimization of `code` for
     * `reason` (JitDeoptReason), before the interpreter resumes; the JIT may invalidate. */
    void (*jit_deopt_hook)(SomVM *vm, const struct SomJitCode *code, uint32_t reason);
    bool jit_eager;
    /* The JIT's run-time options (System>>jitOption:[put:], prim_prof.c): get answers 0 and
     * the value in *val, set answers 0; -1 for an unknown name or a bad value.  NULL without
     * a JIT. */
    int (*jit_option)(SomVM *vm, const char *name, bool set, int64_t *val);
    /* Sampled type feedback (src/jit/feedback.h): each profiler sample of this VM stores
     * jit_fb_armed = jit_fb_burst (0: off), from its signal handler or safe point; compiled
     * code observes the operands of its feedback slots while jit_fb_armed is non-zero and
     * counts it down.  Only this VM's thread reads it or counts it down. */
    volatile uint32_t jit_fb_armed;
    uint32_t jit_fb_burst;
    uint32_t jit_fb_serial; /* bursts begun (counted by the JIT's observation) */
    uint32_t jit_threshold;
    uint32_t jit_loop_threshold;
    /* Compiled code is entered only while the C stack pointer is above this address (set
     * by som_vm_run: the thread's stack bottom + 256 KiB, or 4 MiB below the start when the
     * stack size is unknown); deeper, the interpreter runs the activation (it does not
     * recurse on the C stack), so compiled recursion cannot overflow the C stack. */
    char *cstack_limit;
};

typedef enum SomJitWhy { SOM_JIT_COUNT, SOM_JIT_EAGER, SOM_JIT_LOOP, SOM_JIT_TICK } SomJitWhy;
/* The hook calls as interp.c makes them.  At an activation (frame published, context made),
 * while jit_hook is set: SOM_JIT_TICK first if jit_tick was set (cleared before the call);
 * then SOM_JIT_EAGER if jit_eager and m->jit is NULL, else SOM_JIT_COUNT if m->invocations
 * (this activation counted) is a multiple of jit_threshold (0: never).  Then the activation
 * enters m->jit if the hook installed it.  At a loop back edge of an interpreted activation:
 * SOM_JIT_TICK likewise, then SOM_JIT_LOOP each time the activation's SomFrame.backedges
 * count (kept only while jit_hook is set; 0 at activation) reaches jit_loop_threshold (0:
 * never), restarting from 0; fp->bci is the loop head.  Compiled code's safepoint polls
 * (jit_rt_safepoint) deliver SOM_JIT_TICK for the frame's method.  vm->jit_hook or vm->jit
 * being set costs the interpreter one predictable branch per activation; jit_hook one per
 * back edge. */

/* ---- lifecycle ------------------------------------------------------- */

/* Creates a VM and loads the core classes. On failure answers NULL and
 * writes a message to errbuf. */
SomVM *som_vm_new(const SomOptions *opts, const char *classpath, char *errbuf, size_t errlen);
void som_vm_free(SomVM *vm);
/* Runs `system initialize: args` (args[0] = main class name). Answers the
 * process exit status the program asked for (0 on normal completion, 1 on an
 * error, n for `system exit: n`). */
int som_vm_run(SomVM *vm, int argc, char **argv);
/* Ends the current som_vm_run from a safe point on the VM's own thread (a safepoint hook
 * at SOM_SP_ENTRY, SOM_SP_RETURN or SOM_SP_LOOP): the activations are abandoned, the VM
 * can only be freed, and som_vm_run answers status. Does nothing outside a run. */
void som_vm_abandon(SomVM *vm, int status);

/* ---- objects (object.c) ------------------------------------------------ */

static inline ObjHeader *som_hdr(Value v) {
    return (ObjHeader *)v;
}
static inline SomClass *som_class_of(SomVM *vm, Value v) {
    if (som_is_int(v)) return vm->integerClass;
    if (som_is_imm_double(v)) return vm->doubleClass;
    return ((ObjHeader *)v)->cls;
}
/* ObjKind of v; -1 for a small integer, OBJ_DOUBLE for any double. */
static inline int som_kind(Value v) {
    if (som_is_int(v)) return -1;
    if (som_is_imm_double(v)) return OBJ_DOUBLE;
    return ((ObjHeader *)v)->kind;
}
/* The arithmetic feedback kind of v (CallSite.argkinds: TF_INT, TF_BIGINT, TF_DOUBLE,
 * TF_OTHER), as the interpreter, the runtime and the JIT's sampled feedback record it. */
static inline int som_tf_kind(Value v) {
    switch (som_kind(v)) {
    case -1:
        return TF_INT;
    case OBJ_BIGINT:
        return TF_BIGINT;
    case OBJ_DOUBLE:
        return TF_DOUBLE;
    default:
        return TF_OTHER;
    }
}
#define SOM_V(p) ((Value)(p))

struct SomString *som_string_new(SomVM *vm, const char *bytes, size_t len);
struct SomString *som_string_cstr(SomVM *vm, const char *s);
struct SomString *som_symbol(SomVM *vm, const char *bytes, size_t len);
struct SomString *som_symbol_cstr(SomVM *vm, const char *s);
SomArray *som_array_new(SomVM *vm, size_t len);
/* som_array_new, but NULL when the memory for len elements is not there. */
SomArray *som_array_try_new(SomVM *vm, size_t len);
SomInstance *som_instance_new(SomVM *vm, SomClass *cls);
uint32_t som_str_hash(const char *bytes, size_t len);
bool som_is_string_like(Value v); /* String or Symbol */

/* Temporarily roots a C local (LIFO). */
static inline void som_root_push(SomVM *vm, Value *slot) {
    vm->roots[vm->nroots++] = slot;
}
static inline void som_root_pop(SomVM *vm, int n) {
    vm->nroots -= n;
}

/* A place where vm->state may change (a primitive's call and end, a state
 * change): a pending flag or a waiting sampler (poll -1) runs the hook; below
 * -1 the place is counted off (poll, above), unless `counted` is false (the
 * hook then sees the count left).  Only this thread counts; a sampler thread
 * replaces a count only once the instant it waits for is past. */
static inline void som_state_point(SomVM *vm, SomSafepoint where, bool counted) {
    int v = vm->poll;
    if (__builtin_expect(v == 0, 1)) return;
    if (v < -1 && counted)
        vm->poll = v + 1;
    else if (vm->safepoint_hook)
        vm->safepoint_hook(vm, where);
}

/* Interpreting, a primitive, compiled code: the states the VM switches
 * between millions of times a second (the JIT's calls into the interpreter and
 * back); the others (GC, compiling, runtime code, idle) may last long. */
static inline bool som_state_brief(int state) {
    return state == VMS_INTERP || state == VMS_PRIMITIVE || state == VMS_COMPILED;
}

/* Changes vm->state.  A state change is a safe point: a sampler's pending
 * flag is taken in the state it arrived in.  A sampler waiting for an instant
 * (poll below 0) sees only real changes: compiled code sets VMS_COMPILED at
 * every compiled-to-compiled call, every few ns in call-heavy code, and no
 * state begins there.  One counting places off counts a switch between brief
 * states; one into or out of a state that may last long always runs the hook. */
static inline void som_set_state(SomVM *vm, uint8_t state) {
    int v = vm->poll;
    if (__builtin_expect(v != 0, 0) && (v > 0 || state != vm->state))
        som_state_point(vm, SOM_SP_STATE, som_state_brief(state) && som_state_brief(vm->state));
    if (vm->state_hook)
        vm->state_hook(vm, state); /* stores it */
    else
        vm->state = state;
}

/* ---- globals ----------------------------------------------------------- */
bool som_global_get(SomVM *vm, struct SomString *sym, Value *out);
void som_global_put(SomVM *vm, struct SomString *sym, Value v);

/* ---- classes (class.c) ----------------------------------------------- */
SomMethod *som_lookup(SomVM *vm, SomClass *cls, struct SomString *sel);
/* Loads the class `name` from the class path; NULL if no file is found.
 * Compile errors are reported on vm->err and set vm->exiting. */
SomClass *som_load_class(SomVM *vm, struct SomString *name);
/* Reads a whole file (owned buffer, NUL-terminated) or NULL. */
char *som_read_file(const char *path, size_t *len);

/* ---- output ----------------------------------------------------------- */
void som_write(SomVM *vm, FILE *f, const char *bytes, size_t len);

/* ---- time ------------------------------------------------------------ */
uint64_t som_now_ns(void);

#endif
