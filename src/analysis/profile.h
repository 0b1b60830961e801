/* SPDX-License-Identifier: MIT */
/*
 * profile.h - the in-memory profile model shared by the engine (writer side) and the
 * `sampo` tools (reader side).
 *
 * Owns: SpProfile, a self-contained bag of interned strings, frames, threads, samples,
 * mappings, symbols, metadata, events and an optional CC-Map section.  Everything is
 * referred to by dense uint32 ids (index into the owning array), so a profile can be
 * written to disk (profile_io.h) without pointer fixups.
 *
 * Invariants:
 *   - string id 0 is the empty string; sp_intern() returns the same id for equal strings.
 *   - every frame id stored in a sample / CC-Map entry is < nframes (enforced by the builder
 *     and re-checked by the reader).
 *   - sample stacks are LEAF FIRST: stack[0] is the innermost frame.
 *   - CC-Map context-tree nodes are topologically ordered: parent < own index, or parent ==
 *     SP_NONE for a root-level node.
 *
 * Threading / signal safety: NOT thread-safe and NOT async-signal-safe (it calls malloc).
 * The engine must only call the builder from its manager thread, never from a handler.
 * All functions returning int return 0 on success and -1 on failure (ENOMEM); they never
 * exit() and never print.
 */
#ifndef SAMPO_ANALYSIS_PROFILE_H
#define SAMPO_ANALYSIS_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#define SP_NONE UINT32_MAX /* "no id" for optional references */

/* What a frame stands for. */
typedef enum {
    SP_FRAME_NATIVE = 0,    /* native function (from ELF symbols) */
    SP_FRAME_VM_METHOD = 1, /* VM method, named "Class>>selector" */
    SP_FRAME_JIT = 2,       /* JIT-compiled code registered through the API */
    SP_FRAME_VM_LABEL = 3,  /* an interpreter region (bytecode handler, GC phase, ...) */
    SP_FRAME_KIND_COUNT
} SpFrameKind;

/* VM state carried by every sample (HotSpot-style split).  Native programs use SP_VM_NONE. */
typedef enum {
    SP_VM_NONE = 0,
    SP_VM_INTERPRETING = 1,
    SP_VM_PRIMITIVE = 2,
    SP_VM_NATIVE = 3, /* native code / runtime */
    SP_VM_GC = 4,
    SP_VM_COMPILING = 5,
    SP_VM_IDLE = 6,
    SP_VM_COMPILED = 7, /* running JIT-compiled code */
    SP_VM_STATE_COUNT
} SpVmState;

/* Sampled: weights are sample counts.  Exact: weights are invocation counts, and the CC-Map
 * may additionally carry a time-weighted view (time_ns fields). */
typedef enum { SP_FLAVOUR_SAMPLED = 0, SP_FLAVOUR_EXACT = 1 } SpFlavour;

/* Kinds of timestamped events. */
typedef enum {
    SP_EVENT_NOTE = 0,        /* free text */
    SP_EVENT_RATE_CHANGE = 1, /* self-tuner: a = old interval ns, b = new interval ns */
    SP_EVENT_PAUSE = 2,
    SP_EVENT_RESUME = 3,
    SP_EVENT_MODE_CHANGE = 4, /* a = old mode, b = new mode (engine-defined numbers) */
    SP_EVENT_DROPPED = 5,     /* a = samples dropped since the previous such event */
    SP_EVENT_KIND_COUNT
} SpEventKind;

typedef struct {
    uint32_t kind;   /* SpFrameKind */
    uint32_t name;   /* string id: function or "Class>>selector" */
    uint32_t module; /* string id: object file path / VM image; 0 if unknown */
    uint32_t file;   /* string id of source file, 0 if unknown */
    uint32_t line;   /* 1-based source line, 0 if unknown */
    uint64_t addr;   /* start address (native/JIT); 0 for VM methods */
    uint64_t size;   /* code size in bytes, 0 if unknown */
} SpFrame;

typedef struct {
    uint64_t tid;  /* OS thread id (or VM thread number) */
    uint32_t name; /* string id */
} SpThread;

typedef struct {
    uint32_t thread;  /* thread index (not tid) */
    uint32_t state;   /* SpVmState */
    uint64_t time_ns; /* timestamp, ns since profile start (monotonic) */
    uint64_t pc;      /* interrupted PC, 0 if unknown */
    uint64_t weight;  /* samples (usually 1) or, for exact profiles, invocations */
    uint32_t depth;   /* number of frames */
    uint32_t first;   /* index of stack[0] (leaf) in SpProfile.stack_ids */
} SpSample;

typedef struct {
    uint64_t start, end; /* [start, end) in the address space */
    uint64_t offset;     /* file offset of start */
    uint32_t path;       /* string id */
    uint32_t build_id;   /* string id (hex) or 0 */
} SpMapping;

typedef struct {
    uint64_t addr, size;
    uint32_t name;    /* string id */
    uint32_t mapping; /* mapping index or SP_NONE */
} SpSymbol;

typedef struct {
    uint32_t key, value; /* string ids */
} SpMeta;

typedef struct {
    uint64_t time_ns;
    uint32_t kind; /* SpEventKind */
    uint32_t text; /* string id, optional */
    int64_t a, b;  /* kind-specific */
} SpEvent;

/* CC-Map: per-method totals. */
typedef struct {
    uint32_t frame;
    uint64_t self, total;       /* samples (or invocations for exact) */
    uint64_t self_ns, total_ns; /* optional time-weighted view, 0 if absent */
} SpCcMethod;

/* CC-Map: caller -> callee total at one call site, in any context. */
typedef struct {
    uint32_t caller, callee; /* frame ids */
    uint32_t callsite;       /* call-site position (bytecode index / return offset), 0 unknown */
    uint64_t count;
} SpCcEdge;

/* CC-Map: one calling-context-tree node. */
typedef struct {
    uint32_t parent;   /* node index or SP_NONE for a root-level node */
    uint32_t frame;    /* frame id */
    uint32_t callsite; /* position in the parent that called this node, 0 unknown */
    uint64_t self;     /* samples/invocations with exactly this context */
    uint64_t total;    /* inclusive */
    uint64_t time_ns;  /* optional time-weighted inclusive weight, 0 if absent */
} SpCcNode;

typedef struct {
    int present; /* 0: no CC-Map (sp_ccmap_compute() builds one from the samples) */
    SpCcMethod *methods;
    uint32_t nmethods, cap_methods;
    SpCcEdge *edges;
    uint32_t nedges, cap_edges;
    SpCcNode *nodes;
    uint32_t nnodes, cap_nodes;
} SpCcMap;

typedef struct SpStrTab {
    char *buf; /* all strings, NUL terminated, back to back */
    size_t len, cap;
    uint32_t *off;  /* string id -> offset in buf */
    uint32_t *slen; /* string id -> length (strings may not contain NUL) */
    uint32_t n, cap_n;
    uint32_t *hash;    /* open addressing: slot -> string id + 1 (0 empty) */
    uint32_t hash_cap; /* power of two */
} SpStrTab;

typedef struct SpProfile {
    uint32_t flavour; /* SpFlavour */
    SpStrTab strs;
    SpFrame *frames;
    uint32_t nframes, cap_frames;
    uint32_t *frame_hash; /* dedupe table: slot -> frame id + 1 */
    uint32_t frame_hash_cap;
    SpThread *threads;
    uint32_t nthreads, cap_threads;
    SpSample *samples;
    uint32_t nsamples, cap_samples;
    uint32_t *stack_ids; /* all sample stacks, leaf first, back to back */
    uint32_t nstack, cap_stack;
    /* NULL, or parallel to stack_ids: the source line of each stack entry's position (a VM
     * frame's sampled bytecode or call site), 0 = unknown (format section LINS) */
    uint32_t *stack_lines;
    uint32_t cap_lines;
    SpMapping *mappings;
    uint32_t nmappings, cap_mappings;
    SpSymbol *symbols;
    uint32_t nsymbols, cap_symbols;
    SpMeta *meta;
    uint32_t nmeta, cap_meta;
    SpEvent *events;
    uint32_t nevents, cap_events;
    SpCcMap cc;
    uint32_t *sysname; /* in memory only: frame id -> name before sp_profile_demangle (or NULL) */
    uint32_t nsysname;
} SpProfile;

/* ---- lifetime ---------------------------------------------------------------------- */

/* Returns a new empty profile (owned by the caller) or NULL on ENOMEM. */
SpProfile *sp_profile_new(SpFlavour flavour);
void sp_profile_free(SpProfile *p);

/* ---- strings ----------------------------------------------------------------------- */

/* Interns s (NUL-terminated; NULL means ""). Returns its id, or SP_NONE on ENOMEM. */
uint32_t sp_intern(SpProfile *p, const char *s);
/* Interns the first len bytes of s (must not contain NUL). */
uint32_t sp_intern_n(SpProfile *p, const char *s, size_t len);
/* Borrowed pointer to string id (valid until the next sp_intern); "" for a bad id. */
const char *sp_str(const SpProfile *p, uint32_t id);

/* ---- builder ----------------------------------------------------------------------- */

/* Adds a frame or returns the id of an identical existing one (same kind, name, module,
 * file, line, addr).  String fields are ids from sp_intern.  SP_NONE on ENOMEM/bad ids. */
uint32_t sp_frame_add(SpProfile *p, const SpFrame *f);
/* Convenience: interns the strings and adds the frame.  module/file may be NULL. */
uint32_t sp_frame_addv(SpProfile *p, SpFrameKind kind, const char *name, const char *module,
                       uint64_t addr, uint64_t size, const char *file, uint32_t line);

/* Adds a thread (not deduplicated: call once per thread).  Returns its index or SP_NONE. */
uint32_t sp_thread_add(SpProfile *p, uint64_t tid, const char *name);
/* Index of the thread with this tid, or SP_NONE. */
uint32_t sp_thread_find(const SpProfile *p, uint64_t tid);

/* Adds a sample; stack is leaf first, depth may be 0.  Fails on bad thread/frame ids. */
int sp_sample_add(SpProfile *p, uint32_t thread, uint64_t time_ns, const uint32_t *stack,
                  uint32_t depth, uint64_t pc, uint64_t weight, SpVmState state);
/* Gives the last added sample one source line per stack entry (lines[depth], leaf first,
 * 0 = unknown); the entries of earlier samples read 0.  -1 on ENOMEM. */
int sp_sample_set_lines(SpProfile *p, const uint32_t *lines);
/* Source line of entry d of sample s's stack, 0 when unknown. */
static inline uint32_t sp_sample_line(const SpProfile *p, const SpSample *s, uint32_t d) {
    return p->stack_lines ? p->stack_lines[s->first + d] : 0;
}
/* Borrowed pointer to a sample's stack (leaf first). */
static inline const uint32_t *sp_sample_stack(const SpProfile *p, const SpSample *s) {
    return p->stack_ids + s->first;
}

int sp_mapping_add(SpProfile *p, uint64_t start, uint64_t end, uint64_t offset, const char *path,
                   const char *build_id);
int sp_symbol_add(SpProfile *p, uint64_t addr, uint64_t size, const char *name, uint32_t mapping);
/* Sets key to value (replacing an existing key). */
int sp_meta_set(SpProfile *p, const char *key, const char *value);
int sp_meta_setu(SpProfile *p, const char *key, uint64_t value);
/* Borrowed value of key, or NULL. */
const char *sp_meta_get(const SpProfile *p, const char *key);
int sp_event_add(SpProfile *p, uint64_t time_ns, SpEventKind kind, int64_t a, int64_t b,
                 const char *text);
/* Removes all events (keeps their memory), e.g. before a writer re-adds them. */
void sp_events_clear(SpProfile *p);

/* ---- CC-Map ------------------------------------------------------------------------ */

/* Producer-supplied CC-Map entries; calling any of these marks the CC-Map present. */
int sp_cc_method_add(SpProfile *p, uint32_t frame, uint64_t self, uint64_t total, uint64_t self_ns,
                     uint64_t total_ns);
int sp_cc_edge_add(SpProfile *p, uint32_t caller, uint32_t callsite, uint32_t callee,
                   uint64_t count);
/* Returns the new node index or SP_NONE (parent must be SP_NONE or an existing node). */
uint32_t sp_cc_node_add(SpProfile *p, uint32_t parent, uint32_t frame, uint32_t callsite,
                        uint64_t self, uint64_t total, uint64_t time_ns);

/* (Re)computes the CC-Map from the samples, replacing any existing one.  Methods: self =
 * weight of samples with the frame on top; total = weight of samples containing it (counted
 * once per sample even under recursion).  Edges: per adjacent (caller, callee) pair, once per
 * sample.  Nodes: the calling context tree of all stacks.  Call sites are 0. */
int sp_ccmap_compute(SpProfile *p);
/* Makes sure a CC-Map exists: computes it if absent. */
int sp_ccmap_ensure(SpProfile *p);
void sp_ccmap_clear(SpProfile *p);

/* Keeps only the samples of thread index t (per-thread view) and drops the CC-Map, which
 * describes the whole process (it is recomputed from the remaining samples on demand). */
void sp_profile_keep_thread(SpProfile *p, uint32_t t);

/* Replaces C++ (Itanium ABI) and Rust legacy mangled frame and symbol names by their
 * demangled form (through the C++ runtime's __cxa_demangle, looked up at run time; nothing
 * happens when it is absent) and remembers each frame's original name for
 * sp_frame_system_name().  Returns the number of names demangled, or -1 on ENOMEM. */
int sp_profile_demangle(SpProfile *p);
/* String id of the frame's name as the producer wrote it (mangled), = name if not demangled. */
uint32_t sp_frame_system_name(const SpProfile *p, uint32_t frame);

/* ---- queries ----------------------------------------------------------------------- */

/* Sum of sample weights. */
uint64_t sp_total_weight(const SpProfile *p);
/* Index of the mapping containing addr, or SP_NONE. Mappings need not be sorted. */
uint32_t sp_mapping_find(const SpProfile *p, uint64_t addr);
/* Index of the symbol containing addr (addr in [sym.addr, sym.addr+max(size,1))), or SP_NONE. */
uint32_t sp_symbol_find(const SpProfile *p, uint64_t addr);

/* ---- units ------------------------------------------------------------------------- */

/* What a sample weight (and a CC-Map self/total) counts.  Decided once per profile:
 * exact flavour or META unit "invocations" -> calls; META unit starting "nanoseconds" (the
 * `.time` views) -> nanoseconds; otherwise samples, each standing for the sampling interval
 * in force when it was taken (sp_sample_ns). */
typedef enum { SP_UNIT_SAMPLES = 0, SP_UNIT_CALLS = 1, SP_UNIT_NANOS = 2 } SpUnit;

SpUnit sp_weight_unit(const SpProfile *p);
/* The pprof/speedscope name of the weights: "samples", "calls" or "time". */
const char *sp_unit_type(SpUnit u);
/* "wall" for wall-clock profiles (META mode=wall), else "cpu". */
const char *sp_time_kind(const SpProfile *p);
/* Sampling interval at the start of the profile (META interval_initial_ns, interval_ns,
 * else 1e9 / delivered or requested rate; 1 ms when unknown). */
uint64_t sp_interval_ns(const SpProfile *p);
/* Interval in force at time t: the last rate-change event at or before t, else initial. */
uint64_t sp_interval_at(const SpProfile *p, uint64_t t, uint64_t initial);
/* A sample's weight in nanoseconds: weight x interval in force (samples), the weight itself
 * (nanosecond profiles); 0 for call counts.  initial = sp_interval_ns(p). */
uint64_t sp_sample_ns(const SpProfile *p, const SpSample *s, uint64_t initial);
/* The weight the text exports (collapsed, speedscope, flame) use for a sample: nanoseconds
 * for sampled and nanosecond profiles (so rate changes weigh consistently with pprof's
 * cpu/wall value), calls for exact ones. */
uint64_t sp_sample_value(const SpProfile *p, const SpSample *s, SpUnit u, uint64_t initial);

const char *sp_frame_kind_name(uint32_t kind);
const char *sp_vm_state_name(uint32_t state);
const char *sp_event_kind_name(uint32_t kind);

#endif
