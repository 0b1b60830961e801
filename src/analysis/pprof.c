/* SPDX-License-Identifier: MIT */
/*
 * pprof.c - profile.proto writer and gzip wrapper (see pprof.h).
 *
 * Field numbers follow github.com/google/pprof/proto/profile.proto.  Sub-messages are
 * encoded into a scratch buffer first and then appended with their length prefix.  The
 * string table is built here (a scratch SpProfile used only for its interning), so strings
 * pprof needs and our profile lacks (units, labels, comments) are simply interned.
 */
#include "pprof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "export.h"
#include "u64map.h"

void pb_varint(SpBuf *b, uint64_t v) {
    sp_buf_uleb(b, v);
}

void pb_field_varint(SpBuf *b, uint32_t field, uint64_t v) {
    pb_varint(b, (uint64_t)field << 3 | 0);
    pb_varint(b, v);
}

void pb_field_bytes(SpBuf *b, uint32_t field, const void *data, size_t len) {
    pb_varint(b, (uint64_t)field << 3 | 2);
    pb_varint(b, len);
    sp_buf_put(b, data, len);
}

/* Appends scratch as sub-message `field` of b and clears scratch. */
static void pb_sub(SpBuf *b, uint32_t field, SpBuf *scratch) {
    pb_field_bytes(b, field, scratch->data, scratch->len);
    if (scratch->oom) b->oom = 1;
    scratch->len = 0;
}

/* Encoder state: the profile, the pprof string table and the location table. */
typedef struct {
    SpProfile *p;
    SpProfile *strs; /* scratch profile: its string table is pprof's string_table */
    SpUnit unit;
    uint64_t interval; /* initial sampling interval, ns */
    int timed;         /* exact tree with times: second value = own time per context */
    int oom;
    U64Map pcs;         /* sampled PC -> index in extra[] */
    U64Map vmlines;     /* VM frame << 32 | source line -> index in extra[] */
    uint32_t *extra;    /* extra location i (id nframes + 1 + i): its frame */
    uint64_t *extra_pc; /* the sampled PC (native, JIT) or the source line (VM frames) */
    uint32_t nextra, cap_extra;
    uint64_t pid;
    SpLineFn linefn; /* per-PC source lines, or NULL */
    void *linectx;
    uint8_t *mflags; /* per mapping: bit 0 file names, bit 1 line numbers, bit 2 inlines */
    uint64_t *ffile; /* per frame: pprof string of its file found through the lines, or 0 */
    U64Map fnkey;    /* (name, file) pprof string ids -> index of an inlined function */
    uint64_t *fn_name, *fn_file;
    uint32_t nfn, cap_fn;
} Pp;

static uint64_t pp_str(Pp *e, const char *s) {
    uint32_t id = sp_intern(e->strs, s);
    if (id == SP_NONE) {
        e->oom = 1;
        return 0;
    }
    return id;
}

/* Copy of a string of p: pointers into p's table stay valid (p is not modified here). */
static uint64_t pp_pstr(Pp *e, uint32_t id) {
    return pp_str(e, sp_str(e->p, id));
}

static void pp_value_type(Pp *e, SpBuf *b, SpBuf *s, uint32_t field, const char *type,
                          const char *unit) {
    pb_field_varint(s, 1, pp_str(e, type));
    pb_field_varint(s, 2, pp_str(e, unit));
    pb_sub(b, field, s);
}

/* ---- locations ------------------------------------------------------------------------ */

/* Address of a location without one (VM methods, VM labels): Go's pprof (1.19) compares
 * location addresses with the symbols of the program's file unrelocated, so address 0 falls
 * into a thread-local symbol at 0 and `-disasm` panics decoding [0, 8).  A non-canonical
 * address (bit 63 set: no x86-64 or AArch64 user object can hold it) plus the location id
 * matches no symbol and keeps the locations distinct. */
#define PP_NO_ADDRESS 0x8000000000000000ull

/* Does pc belong to frame f (native or JIT code containing it)? */
static int pp_pc_in(const SpProfile *p, const SpFrame *f, uint64_t pc) {
    if (!pc || !f->addr || (f->kind != SP_FRAME_NATIVE && f->kind != SP_FRAME_JIT)) return 0;
    if (pc < f->addr) return 0;
    if (f->size) return pc < f->addr + f->size;
    uint32_t m = sp_mapping_find(p, f->addr);
    return m != SP_NONE && m == sp_mapping_find(p, pc);
}

/* A new extra location for frame at pc (or line), registered in map under key. */
static uint64_t pp_extra_loc(Pp *e, U64Map *map, uint64_t key, uint32_t frame, uint64_t pc) {
    if (e->nextra == e->cap_extra) {
        uint32_t nc = e->cap_extra ? e->cap_extra * 2 : 64;
        uint32_t *x = realloc(e->extra, nc * sizeof *x);
        if (x) e->extra = x;
        uint64_t *y = x ? realloc(e->extra_pc, nc * sizeof *y) : NULL;
        if (!x || !y) {
            e->oom = 1;
            return frame + 1;
        }
        e->extra_pc = y;
        e->cap_extra = nc;
    }
    if (u64map_put(map, key, e->nextra)) {
        e->oom = 1;
        return frame + 1;
    }
    e->extra[e->nextra] = frame;
    e->extra_pc[e->nextra] = pc;
    return (uint64_t)e->p->nframes + 1 + e->nextra++;
}

/* Location id of the leaf frame of a sample taken at pc: one location per sampled PC. */
static uint64_t pp_leaf_loc(Pp *e, uint32_t frame, uint64_t pc) {
    if (!pp_pc_in(e->p, &e->p->frames[frame], pc)) return (uint64_t)frame + 1;
    uint32_t i = u64map_get(&e->pcs, pc);
    if (i != UINT32_MAX) return e->extra[i] == frame ? (uint64_t)e->p->nframes + 1 + i : frame + 1;
    return pp_extra_loc(e, &e->pcs, pc, frame, pc);
}

/* Location id of a VM frame at a known source line: one location per (method, line). */
static uint64_t pp_vm_line_loc(Pp *e, uint32_t frame, uint32_t line) {
    uint64_t key = (uint64_t)frame << 32 | line;
    uint32_t i = u64map_get(&e->vmlines, key);
    if (i != UINT32_MAX) return (uint64_t)e->p->nframes + 1 + i;
    return pp_extra_loc(e, &e->vmlines, key, frame, line);
}

/* Function id of an inlined function named name in file (ids after the frames'). */
static uint64_t pp_inline_fn(Pp *e, const char *name, const char *file) {
    uint64_t n = pp_str(e, name), f = pp_str(e, file ? file : "");
    uint32_t i = u64map_get(&e->fnkey, n << 32 | f);
    if (i != UINT32_MAX) return (uint64_t)e->p->nframes + 1 + i;
    if (e->nfn == e->cap_fn) {
        uint32_t nc = e->cap_fn ? 2 * e->cap_fn : 32;
        uint64_t *a = realloc(e->fn_name, nc * sizeof *a);
        if (a) e->fn_name = a;
        uint64_t *b = a ? realloc(e->fn_file, nc * sizeof *b) : NULL;
        if (!b) {
            e->oom = 1;
            return 0;
        }
        e->fn_file = b;
        e->cap_fn = nc;
    }
    if (u64map_put(&e->fnkey, n << 32 | f, e->nfn)) e->oom = 1;
    e->fn_name[e->nfn] = n, e->fn_file[e->nfn] = f;
    return (uint64_t)e->p->nframes + 1 + e->nfn++;
}

/* The Line entries of a sampled PC from the resolver: innermost inlined function first,
 * the frame's own function last.  Returns 0 when the PC has no known position. */
static int pp_lines(Pp *e, SpBuf *s, SpBuf *line, uint32_t frame, uint32_t m, uint64_t pc) {
    SpSrcLine sl[32];
    uint32_t n = e->linefn(e->linectx, e->p, m, pc, sl, 32);
    if (n == 0) return 0;
    for (uint32_t k = 0; k < n; k++) {
        uint64_t fn =
            k + 1 < n && sl[k].func ? pp_inline_fn(e, sl[k].func, sl[k].file) : (uint64_t)frame + 1;
        pb_field_varint(line, 1, fn);
        if (sl[k].line) pb_field_varint(line, 2, sl[k].line);
        pb_sub(s, 4, line);
        e->mflags[m] |= (sl[k].file ? 1 : 0) | (sl[k].line ? 2 : 0) | (n > 1 ? 4 : 0);
    }
    if (sl[n - 1].file && !e->p->frames[frame].file && !e->ffile[frame])
        e->ffile[frame] = pp_str(e, sl[n - 1].file);
    return 1;
}

static void pp_location(Pp *e, SpBuf *b, SpBuf *s, SpBuf *line, uint64_t id, uint32_t frame,
                        uint64_t addr, int sampled) {
    const SpFrame *f = &e->p->frames[frame];
    if (sampled && f->kind != SP_FRAME_NATIVE && f->kind != SP_FRAME_JIT) {
        /* a VM frame at a source line (extra_pc holds the line) */
        pb_field_varint(s, 1, id);
        pb_field_varint(s, 3, PP_NO_ADDRESS + id);
        pb_field_varint(line, 1, (uint64_t)frame + 1);
        pb_field_varint(line, 2, addr);
        pb_sub(s, 4, line);
        pb_sub(b, 4, s);
        return;
    }
    pb_field_varint(s, 1, id);
    uint32_t m = addr ? sp_mapping_find(e->p, addr) : SP_NONE;
    if (m != SP_NONE) pb_field_varint(s, 2, m + 1);
    pb_field_varint(s, 3, addr ? addr : PP_NO_ADDRESS + id);
    /* a frame's line is where its function starts (Function.start_line), not the line of a
     * PC: without a resolved position Line.line stays 0 (unknown), not the header's line */
    if (!(sampled && m != SP_NONE && e->linefn && pp_lines(e, s, line, frame, m, addr))) {
        pb_field_varint(line, 1, (uint64_t)frame + 1);
        pb_sub(s, 4, line);
    }
    pb_sub(b, 4, s);
}

static void pp_locations_functions(Pp *e, SpBuf *b, SpBuf *s) {
    const SpProfile *p = e->p;
    SpBuf line;
    sp_buf_init(&line);
    for (uint32_t i = 0; i < p->nframes; i++) {
        const SpFrame *f = &p->frames[i];
        /* callers: the function's entry (we keep only the leaf's PC per sample) */
        uint64_t addr = f->kind == SP_FRAME_NATIVE || f->kind == SP_FRAME_JIT ? f->addr : 0;
        pp_location(e, b, s, &line, (uint64_t)i + 1, i, addr, 0);
    }
    for (uint32_t i = 0; i < e->nextra; i++)
        pp_location(e, b, s, &line, (uint64_t)p->nframes + 1 + i, e->extra[i], e->extra_pc[i], 1);
    char buf[64];
    for (uint32_t i = 0; i < p->nframes; i++) {
        const SpFrame *f = &p->frames[i];
        pb_field_varint(s, 1, (uint64_t)i + 1);
        pb_field_varint(s, 2, pp_str(e, sp_frame_label(p, i, buf, sizeof buf)));
        uint32_t sys = sp_frame_system_name(p, i);
        pb_field_varint(s, 3, pp_pstr(e, sys));
        pb_field_varint(s, 4, f->file ? pp_pstr(e, f->file) : e->ffile[i]);
        if (f->line) pb_field_varint(s, 5, f->line);
        pb_sub(b, 5, s);
    }
    for (uint32_t i = 0; i < e->nfn; i++) { /* inlined functions */
        pb_field_varint(s, 1, (uint64_t)p->nframes + 1 + i);
        pb_field_varint(s, 2, e->fn_name[i]);
        pb_field_varint(s, 3, e->fn_name[i]);
        pb_field_varint(s, 4, e->fn_file[i]);
        pb_sub(b, 5, s);
    }
    sp_buf_fini(&line);
}

/* has_functions / has_filenames of mapping m, from its frames (the resolved lines add
 * theirs in pp_mappings). */
static void pp_mapping_flags(const SpProfile *p, uint32_t m, int *fn, int *file, int *line) {
    *fn = *file = *line = 0;
    for (uint32_t i = 0; i < p->nframes; i++) {
        const SpFrame *f = &p->frames[i];
        if (!f->addr || f->kind == SP_FRAME_VM_METHOD || sp_mapping_find(p, f->addr) != m) continue;
        *fn |= f->name != 0;
        *file |= f->file != 0;
    }
}

static void pp_mappings(Pp *e, SpBuf *b, SpBuf *s) {
    const SpProfile *p = e->p;
    for (uint32_t i = 0; i < p->nmappings; i++) {
        const SpMapping *m = &p->mappings[i];
        int fn, file, line;
        pp_mapping_flags(p, i, &fn, &file, &line);
        file |= e->mflags[i] & 1, line |= (e->mflags[i] >> 1) & 1;
        int inl = (e->mflags[i] >> 2) & 1;
        pb_field_varint(s, 1, (uint64_t)i + 1);
        pb_field_varint(s, 2, m->start);
        pb_field_varint(s, 3, m->end);
        pb_field_varint(s, 4, m->offset);
        pb_field_varint(s, 5, pp_pstr(e, m->path));
        pb_field_varint(s, 6, pp_pstr(e, m->build_id));
        if (fn) pb_field_varint(s, 7, 1);
        if (file) pb_field_varint(s, 8, 1);
        if (line) pb_field_varint(s, 9, 1);
        if (inl) pb_field_varint(s, 10, 1);
        pb_sub(b, 3, s);
    }
}

/* ---- samples -------------------------------------------------------------------------- */

static void pp_label(Pp *e, SpBuf *s, SpBuf *lab, const char *key, const char *str, int64_t num,
                     int has_num) {
    pb_field_varint(lab, 1, pp_str(e, key));
    if (str) pb_field_varint(lab, 2, pp_str(e, str));
    if (has_num) pb_field_varint(lab, 3, (uint64_t)num);
    pb_sub(s, 3, lab);
}

/* One pprof Sample: location ids leaf first, nv values, labels of thread t (SP_NONE: none). */
static void pp_sample(Pp *e, SpBuf *b, SpBuf *s, SpBuf *packed, const uint64_t *locs,
                      uint32_t depth, const uint64_t *v, int nv, uint32_t t, uint32_t state) {
    const SpProfile *p = e->p;
    packed->len = 0;
    for (uint32_t d = 0; d < depth; d++)
        pb_varint(packed, locs[d]);
    pb_sub(s, 1, packed);
    for (int i = 0; i < nv; i++)
        pb_varint(packed, v[i]);
    pb_sub(s, 2, packed);
    SpBuf lab;
    sp_buf_init(&lab);
    if (t != SP_NONE) {
        if (p->threads[t].name) pp_label(e, s, &lab, "thread", sp_str(p, p->threads[t].name), 0, 0);
        pp_label(e, s, &lab, "tid", NULL, (int64_t)p->threads[t].tid, 1);
        if (e->pid) pp_label(e, s, &lab, "pid", NULL, (int64_t)e->pid, 1);
    }
    if (state) pp_label(e, s, &lab, "vm_state", sp_vm_state_name(state), 0, 0);
    if (lab.oom) b->oom = 1;
    sp_buf_fini(&lab);
    pb_sub(b, 2, s);
}

/* Own time of each tree node: inclusive time minus the children's, clamped at 0. */
static uint64_t *pp_node_self_ns(const SpProfile *p) {
    uint32_t n = p->cc.nnodes;
    int64_t *t = calloc(n ? n : 1, sizeof *t);
    if (!t) return NULL;
    for (uint32_t i = 0; i < n; i++) {
        t[i] += (int64_t)p->cc.nodes[i].time_ns;
        if (p->cc.nodes[i].parent != SP_NONE)
            t[p->cc.nodes[i].parent] -= (int64_t)p->cc.nodes[i].time_ns;
    }
    for (uint32_t i = 0; i < n; i++)
        if (t[i] < 0) t[i] = 0;
    return (uint64_t *)t;
}

static int pp_reserve(uint64_t **locs, uint32_t *cap, uint32_t need) {
    if (need <= *cap) return 0;
    uint64_t *n = realloc(*locs, (size_t)need * sizeof *n);
    if (!n) return -1;
    *locs = n;
    *cap = need;
    return 0;
}

static void pp_samples_of_samples(Pp *e, SpBuf *b, SpBuf *s, SpBuf *packed) {
    SpProfile *p = e->p;
    uint64_t *locs = NULL;
    uint32_t cap = 0;
    for (uint32_t i = 0; i < p->nsamples && !e->oom; i++) {
        const SpSample *sm = &p->samples[i];
        const uint32_t *st = sp_sample_stack(p, sm);
        if (pp_reserve(&locs, &cap, sm->depth + 1)) {
            e->oom = 1;
            break;
        }
        for (uint32_t d = 0; d < sm->depth; d++) {
            uint32_t ln = sp_sample_line(p, sm, d);
            const SpFrame *f = &p->frames[st[d]];
            if (ln && f->kind != SP_FRAME_NATIVE && f->kind != SP_FRAME_JIT)
                locs[d] = pp_vm_line_loc(e, st[d], ln);
            else
                locs[d] = d ? (uint64_t)st[d] + 1 : pp_leaf_loc(e, st[0], sm->pc);
        }
        uint64_t v[2] = {sm->weight, sp_sample_ns(p, sm, e->interval)};
        pp_sample(e, b, s, packed, locs, sm->depth, v, e->unit == SP_UNIT_SAMPLES ? 2 : 1,
                  sm->thread, sm->state);
    }
    free(locs);
}

static void pp_samples_of_tree(Pp *e, SpBuf *b, SpBuf *s, SpBuf *packed) {
    SpProfile *p = e->p;
    uint64_t *own = e->timed ? pp_node_self_ns(p) : NULL, *locs = NULL;
    uint32_t cap = 0;
    if (e->timed && !own) e->oom = 1;
    for (uint32_t i = 0; i < p->cc.nnodes && !e->oom; i++) {
        uint32_t n = 0;
        if (!p->cc.nodes[i].self && !(own && own[i])) continue;
        for (uint32_t j = i; j != SP_NONE; j = p->cc.nodes[j].parent) {
            if (pp_reserve(&locs, &cap, n + 1 > cap ? 2 * cap + 16 : cap)) {
                e->oom = 1;
                break;
            }
            locs[n++] = (uint64_t)p->cc.nodes[j].frame + 1;
        }
        uint64_t self = p->cc.nodes[i].self;
        uint64_t v[2] = {self, own ? own[i] : self * e->interval};
        int nv = e->unit == SP_UNIT_SAMPLES || e->timed ? 2 : 1;
        pp_sample(e, b, s, packed, locs, n, v, nv, SP_NONE, 0);
    }
    free(own);
    free(locs);
}

/* ---- header fields -------------------------------------------------------------------- */

static void pp_comment(Pp *e, SpBuf *out, const char *label, const char *key) {
    const char *v = sp_meta_get(e->p, key);
    if (!v || !*v) return;
    SpBuf t;
    sp_buf_init(&t);
    sp_buf_printf(&t, "%s: %s", label, v);
    sp_buf_u8(&t, 0);
    if (!t.oom) pb_field_varint(out, 13, pp_str(e, (const char *)t.data));
    sp_buf_fini(&t);
}

static const char *pp_meta2(const SpProfile *p, const char *a, const char *b) {
    const char *v = sp_meta_get(p, a);
    return v ? v : sp_meta_get(p, b);
}

static void pp_comments(Pp *e, SpBuf *out) {
    const SpProfile *p = e->p;
    static const char *const what[] = {
        "samples; the second value is each sample's interval in force (time-weighted)",
        "invocation counts", "nanoseconds of time"};
    char buf[256];
    snprintf(buf, sizeof buf, "sampo weights: %s", what[e->unit]);
    pb_field_varint(out, 13, pp_str(e, buf));
    pp_comment(e, out, "command", sp_meta_get(p, "command") ? "command" : "cmdline");
    pp_comment(e, out, "trigger", "trigger");
    pp_comment(e, out, "mode", "mode");
    const char *rq = pp_meta2(p, "requested_hz", "hz_requested");
    const char *dl = pp_meta2(p, "delivered_hz", "hz_delivered");
    const char *dur = sp_meta_get(p, "duration_ns");
    double secs = dur ? strtod(dur, NULL) / 1e9 : 0;
    if (e->unit == SP_UNIT_SAMPLES) {
        char got[80] = "?";
        if (dl && *dl)
            snprintf(got, sizeof got, "%s Hz", dl);
        else if (secs > 0)
            snprintf(got, sizeof got, "%.1f samples/s over %.3f s (all threads)",
                     (double)p->nsamples / secs, secs);
        snprintf(buf, sizeof buf, "rate: requested %s Hz, delivered %s, initial interval %llu ns",
                 rq && *rq ? rq : "?", got, (unsigned long long)e->interval);
        pb_field_varint(out, 13, pp_str(e, buf));
    }
    pp_comment(e, out, "rate changes", "rate_changes");
    pp_comment(e, out, "dropped samples",
               sp_meta_get(p, "samples_dropped") ? "samples_dropped" : "dropped");
    pp_comment(e, out, "view", "view");
}

static void pp_strings(Pp *e, SpBuf *out) {
    const SpStrTab *t = &e->strs->strs;
    for (uint32_t i = 0; i < t->n; i++)
        pb_field_bytes(out, 6, t->buf + t->off[i], t->slen[i]);
}

int sp_pprof_encode(SpProfile *p, SpBuf *out) {
    return sp_pprof_encode_lines(p, out, NULL, NULL);
}

int sp_pprof_encode_lines(SpProfile *p, SpBuf *out, SpLineFn fn, void *ctx) {
    Pp e = {.p = p, .unit = sp_weight_unit(p), .interval = sp_interval_ns(p)};
    SpBuf s, packed;
    e.linefn = fn, e.linectx = ctx;
    if (!p->nsamples && sp_ccmap_ensure(p)) return -1;
    for (uint32_t i = 0; e.unit == SP_UNIT_CALLS && !p->nsamples && i < p->cc.nnodes && !e.timed;
         i++)
        e.timed = p->cc.nodes[i].time_ns != 0;
    const char *pid = sp_meta_get(p, "pid");
    e.pid = pid ? strtoull(pid, NULL, 10) : 0;
    e.strs = sp_profile_new(SP_FLAVOUR_SAMPLED);
    if (!e.strs) return -1;
    u64map_init(&e.pcs);
    u64map_init(&e.vmlines);
    u64map_init(&e.fnkey);
    e.mflags = calloc(p->nmappings + 1, 1);
    e.ffile = calloc(p->nframes + 1, sizeof *e.ffile);
    if (!e.mflags || !e.ffile) e.oom = 1;
    sp_buf_init(&s);
    sp_buf_init(&packed);
    const char *tk = sp_time_kind(p);
    if (e.unit == SP_UNIT_SAMPLES) {
        pp_value_type(&e, out, &s, 1, "samples", "count");
        pp_value_type(&e, out, &s, 1, tk, "nanoseconds");
    } else if (e.unit == SP_UNIT_NANOS) {
        pp_value_type(&e, out, &s, 1, "time", "nanoseconds");
    } else {
        pp_value_type(&e, out, &s, 1, "calls", "count");
        if (e.timed) pp_value_type(&e, out, &s, 1, "time", "nanoseconds");
    }
    if (p->nsamples)
        pp_samples_of_samples(&e, out, &s, &packed);
    else
        pp_samples_of_tree(&e, out, &s, &packed);
    if (!e.oom) pp_locations_functions(&e, out, &s);
    if (!e.oom) pp_mappings(&e, out, &s); /* after the lines: their flags */
    const char *t0 = sp_meta_get(p, "start_unix_ns");
    if (t0 && *t0) pb_field_varint(out, 9, strtoull(t0, NULL, 10));
    const char *dur = sp_meta_get(p, "duration_ns");
    if (dur && *dur) pb_field_varint(out, 10, strtoull(dur, NULL, 10));
    if (e.unit == SP_UNIT_SAMPLES) {
        pp_value_type(&e, out, &s, 11, tk, "nanoseconds");
        pb_field_varint(out, 12, e.interval);
    } else if (e.unit == SP_UNIT_NANOS) {
        pp_value_type(&e, out, &s, 11, "time", "nanoseconds");
        pb_field_varint(out, 12, 1);
    } else {
        pp_value_type(&e, out, &s, 11, "calls", "count");
        pb_field_varint(out, 12, 1);
        if (e.timed) pb_field_varint(out, 14, pp_str(&e, "calls")); /* default_sample_type */
    }
    pp_comments(&e, out);
    pp_strings(&e, out); /* last: every string is interned by now */
    if (e.oom || s.oom || packed.oom) out->oom = 1;
    sp_buf_fini(&s);
    sp_buf_fini(&packed);
    u64map_fini(&e.pcs);
    u64map_fini(&e.vmlines);
    u64map_fini(&e.fnkey);
    free(e.mflags);
    free(e.ffile);
    free(e.fn_name);
    free(e.fn_file);
    free(e.extra);
    free(e.extra_pc);
    sp_profile_free(e.strs);
    return out->oom ? -1 : 0;
}

/* Input is fed in pieces of at most 1 GiB because zlib counts with 32-bit uInt. */
int sp_gzip(const uint8_t *in, size_t len, SpBuf *out) {
    z_stream z;
    uint8_t chunk[65536];
    size_t left = len;
    int zr = Z_OK;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return -1;
    z.next_in = (Bytef *)(uintptr_t)in;
    while (zr == Z_OK) {
        if (z.avail_in == 0 && left) {
            uInt piece = left > (1u << 30) ? (1u << 30) : (uInt)left;
            z.avail_in = piece;
            left -= piece;
        }
        z.next_out = chunk;
        z.avail_out = sizeof chunk;
        zr = deflate(&z, left ? Z_NO_FLUSH : Z_FINISH);
        sp_buf_put(out, chunk, sizeof chunk - z.avail_out);
        if (zr == Z_BUF_ERROR && (left || z.avail_in)) zr = Z_OK; /* needs more input */
    }
    deflateEnd(&z);
    return zr == Z_STREAM_END && !out->oom ? 0 : -1;
}

int sp_export_pprof(SpProfile *p, SpBuf *out) {
    return sp_export_pprof_lines(p, out, NULL, NULL);
}

int sp_export_pprof_lines(SpProfile *p, SpBuf *out, SpLineFn fn, void *ctx) {
    SpBuf raw;
    sp_buf_init(&raw);
    int rc = sp_pprof_encode_lines(p, &raw, fn, ctx);
    if (rc == 0) rc = sp_gzip(raw.data, raw.len, out);
    sp_buf_fini(&raw);
    return rc;
}
