/* SPDX-License-Identifier: MIT */
/*
 * profile.c - builder and queries of the in-memory profile model (see profile.h).
 *
 * Owns all arrays of an SpProfile; growth doubles capacity.  Strings and frames are
 * deduplicated through open-addressing hash tables that store id + 1 (0 = empty slot).
 * Not thread-safe, not async-signal-safe.
 */
#include "profile.h"
#include "demangle.h"

#include <stdlib.h>
#include <string.h>

/* Grows *arr so that it holds at least need elements of elsize bytes. */
static int sp_grow(void **arr, uint32_t *cap, uint64_t need, size_t elsize) {
    if (need <= *cap) return 0;
    if (need > UINT32_MAX - 1) return -1;
    uint64_t ncap = *cap ? *cap : 16;
    while (ncap < need)
        ncap *= 2;
    if (ncap > UINT32_MAX - 1) ncap = UINT32_MAX - 1;
    void *n = realloc(*arr, (size_t)ncap * elsize);
    if (!n) return -1;
    *arr = n;
    *cap = (uint32_t)ncap;
    return 0;
}

static uint64_t sp_hash_bytes(const void *data, size_t len, uint64_t h) {
    const unsigned char *b = data;
    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= 1099511628211ull; /* FNV-1a */
    }
    return h;
}

#define SP_FNV_SEED 14695981039346656037ull

/* ====================================================================================== */
/* lifetime                                                                               */
/* ====================================================================================== */

SpProfile *sp_profile_new(SpFlavour flavour) {
    SpProfile *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->flavour = flavour;
    if (sp_intern(p, "") != 0) {
        sp_profile_free(p);
        return NULL;
    }
    return p;
}

void sp_ccmap_clear(SpProfile *p) {
    free(p->cc.methods);
    free(p->cc.edges);
    free(p->cc.nodes);
    memset(&p->cc, 0, sizeof p->cc);
}

void sp_profile_free(SpProfile *p) {
    if (!p) return;
    free(p->strs.buf);
    free(p->strs.off);
    free(p->strs.slen);
    free(p->strs.hash);
    free(p->frames);
    free(p->frame_hash);
    free(p->threads);
    free(p->samples);
    free(p->stack_ids);
    free(p->stack_lines);
    free(p->mappings);
    free(p->symbols);
    free(p->meta);
    free(p->events);
    sp_ccmap_clear(p);
    free(p->sysname);
    free(p);
}

/* ====================================================================================== */
/* strings                                                                                */
/* ====================================================================================== */

static int sp_str_rehash(SpStrTab *t, uint32_t ncap) {
    uint32_t *h = calloc(ncap, sizeof *h);
    if (!h) return -1;
    for (uint32_t id = 0; id < t->n; id++) {
        uint64_t x = sp_hash_bytes(t->buf + t->off[id], t->slen[id], SP_FNV_SEED);
        uint32_t i = (uint32_t)x & (ncap - 1);
        while (h[i])
            i = (i + 1) & (ncap - 1);
        h[i] = id + 1;
    }
    free(t->hash);
    t->hash = h;
    t->hash_cap = ncap;
    return 0;
}

uint32_t sp_intern_n(SpProfile *p, const char *s, size_t len) {
    SpStrTab *t = &p->strs;
    if (!s) len = 0, s = "";
    if (len > UINT32_MAX / 2 || memchr(s, 0, len)) return SP_NONE;
    if ((uint64_t)(t->n + 1) * 2 > t->hash_cap &&
        sp_str_rehash(t, t->hash_cap ? t->hash_cap * 2 : 64))
        return SP_NONE;
    uint64_t x = sp_hash_bytes(s, len, SP_FNV_SEED);
    uint32_t i = (uint32_t)x & (t->hash_cap - 1);
    for (; t->hash[i]; i = (i + 1) & (t->hash_cap - 1)) {
        uint32_t id = t->hash[i] - 1;
        if (t->slen[id] == len && memcmp(t->buf + t->off[id], s, len) == 0) return id;
    }
    if (t->len + len + 1 > UINT32_MAX) return SP_NONE;
    while (t->len + len + 1 > t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 256;
        char *nb = realloc(t->buf, ncap);
        if (!nb) return SP_NONE;
        t->buf = nb, t->cap = ncap;
    }
    uint32_t capn = t->cap_n;
    if (sp_grow((void **)&t->off, &capn, t->n + 1, sizeof *t->off)) return SP_NONE;
    capn = t->cap_n;
    if (sp_grow((void **)&t->slen, &capn, t->n + 1, sizeof *t->slen)) return SP_NONE;
    t->cap_n = capn;
    memcpy(t->buf + t->len, s, len);
    t->buf[t->len + len] = 0;
    t->off[t->n] = (uint32_t)t->len;
    t->slen[t->n] = (uint32_t)len;
    t->len += len + 1;
    t->hash[i] = t->n + 1;
    return t->n++;
}

uint32_t sp_intern(SpProfile *p, const char *s) {
    return sp_intern_n(p, s, s ? strlen(s) : 0);
}

const char *sp_str(const SpProfile *p, uint32_t id) {
    if (id >= p->strs.n) return "";
    return p->strs.buf + p->strs.off[id];
}

/* ====================================================================================== */
/* frames, threads, samples                                                               */
/* ====================================================================================== */

static uint64_t sp_frame_hash(const SpFrame *f) {
    uint64_t h = SP_FNV_SEED;
    h = sp_hash_bytes(&f->kind, sizeof f->kind, h);
    h = sp_hash_bytes(&f->name, sizeof f->name, h);
    h = sp_hash_bytes(&f->module, sizeof f->module, h);
    h = sp_hash_bytes(&f->file, sizeof f->file, h);
    h = sp_hash_bytes(&f->line, sizeof f->line, h);
    h = sp_hash_bytes(&f->addr, sizeof f->addr, h);
    return h;
}

static int sp_frame_eq(const SpFrame *a, const SpFrame *b) {
    return a->kind == b->kind && a->name == b->name && a->module == b->module &&
           a->file == b->file && a->line == b->line && a->addr == b->addr;
}

static int sp_frame_rehash(SpProfile *p, uint32_t ncap) {
    uint32_t *h = calloc(ncap, sizeof *h);
    if (!h) return -1;
    for (uint32_t id = 0; id < p->nframes; id++) {
        uint32_t i = (uint32_t)sp_frame_hash(&p->frames[id]) & (ncap - 1);
        while (h[i])
            i = (i + 1) & (ncap - 1);
        h[i] = id + 1;
    }
    free(p->frame_hash);
    p->frame_hash = h;
    p->frame_hash_cap = ncap;
    return 0;
}

uint32_t sp_frame_add(SpProfile *p, const SpFrame *f) {
    uint32_t n = p->strs.n;
    if (f->kind >= SP_FRAME_KIND_COUNT || f->name >= n || f->module >= n || f->file >= n)
        return SP_NONE;
    if ((uint64_t)(p->nframes + 1) * 2 > p->frame_hash_cap &&
        sp_frame_rehash(p, p->frame_hash_cap ? p->frame_hash_cap * 2 : 64))
        return SP_NONE;
    uint32_t i = (uint32_t)sp_frame_hash(f) & (p->frame_hash_cap - 1);
    for (; p->frame_hash[i]; i = (i + 1) & (p->frame_hash_cap - 1))
        if (sp_frame_eq(&p->frames[p->frame_hash[i] - 1], f)) return p->frame_hash[i] - 1;
    if (sp_grow((void **)&p->frames, &p->cap_frames, p->nframes + 1, sizeof *p->frames))
        return SP_NONE;
    p->frames[p->nframes] = *f;
    p->frame_hash[i] = p->nframes + 1;
    return p->nframes++;
}

uint32_t sp_frame_system_name(const SpProfile *p, uint32_t frame) {
    if (frame >= p->nframes) return 0;
    return frame < p->nsysname && p->sysname[frame] ? p->sysname[frame] : p->frames[frame].name;
}

int sp_profile_demangle(SpProfile *p) {
    int n = 0;
    for (uint32_t i = 0; i < p->nframes; i++) {
        char *d = sp_demangle(sp_str(p, p->frames[i].name));
        if (!d) continue;
        if (!p->sysname) {
            p->sysname = calloc(p->nframes, sizeof *p->sysname);
            if (!p->sysname) goto oom;
            p->nsysname = p->nframes;
        }
        uint32_t id = sp_intern(p, d);
        free(d);
        if (id == SP_NONE) goto oom;
        p->sysname[i] = p->frames[i].name;
        p->frames[i].name = id;
        n++;
    }
    for (uint32_t i = 0; i < p->nsymbols; i++) {
        char *d = sp_demangle(sp_str(p, p->symbols[i].name));
        uint32_t id = d ? sp_intern(p, d) : 0;
        free(d);
        if (id == SP_NONE) goto oom;
        if (id) p->symbols[i].name = id;
    }
    /* names are part of a frame's identity: rebuild the dedupe table */
    if (n && p->frame_hash_cap && sp_frame_rehash(p, p->frame_hash_cap)) goto oom;
    return n;
oom:
    return -1;
}

uint32_t sp_frame_addv(SpProfile *p, SpFrameKind kind, const char *name, const char *module,
                       uint64_t addr, uint64_t size, const char *file, uint32_t line) {
    SpFrame f = {.kind = kind, .addr = addr, .size = size, .line = line};
    f.name = sp_intern(p, name);
    f.module = sp_intern(p, module);
    f.file = sp_intern(p, file);
    if (f.name == SP_NONE || f.module == SP_NONE || f.file == SP_NONE) return SP_NONE;
    return sp_frame_add(p, &f);
}

uint32_t sp_thread_add(SpProfile *p, uint64_t tid, const char *name) {
    uint32_t s = sp_intern(p, name);
    if (s == SP_NONE ||
        sp_grow((void **)&p->threads, &p->cap_threads, p->nthreads + 1, sizeof *p->threads))
        return SP_NONE;
    p->threads[p->nthreads] = (SpThread){.tid = tid, .name = s};
    return p->nthreads++;
}

uint32_t sp_thread_find(const SpProfile *p, uint64_t tid) {
    for (uint32_t i = 0; i < p->nthreads; i++)
        if (p->threads[i].tid == tid) return i;
    return SP_NONE;
}

int sp_sample_add(SpProfile *p, uint32_t thread, uint64_t time_ns, const uint32_t *stack,
                  uint32_t depth, uint64_t pc, uint64_t weight, SpVmState state) {
    if (thread >= p->nthreads || (unsigned)state >= SP_VM_STATE_COUNT || (depth && !stack))
        return -1;
    for (uint32_t i = 0; i < depth; i++)
        if (stack[i] >= p->nframes) return -1;
    if (sp_grow((void **)&p->stack_ids, &p->cap_stack, (uint64_t)p->nstack + depth,
                sizeof *p->stack_ids) ||
        sp_grow((void **)&p->samples, &p->cap_samples, p->nsamples + 1, sizeof *p->samples))
        return -1;
    if (p->stack_lines) { /* this sample's lines stay 0 unless sp_sample_set_lines */
        if (sp_grow((void **)&p->stack_lines, &p->cap_lines, (uint64_t)p->nstack + depth,
                    sizeof *p->stack_lines))
            return -1;
        memset(p->stack_lines + p->nstack, 0, depth * sizeof *p->stack_lines);
    }
    if (depth) memcpy(p->stack_ids + p->nstack, stack, depth * sizeof *stack);
    p->samples[p->nsamples++] = (SpSample){.thread = thread,
                                           .state = state,
                                           .time_ns = time_ns,
                                           .pc = pc,
                                           .weight = weight,
                                           .depth = depth,
                                           .first = p->nstack};
    p->nstack += depth;
    return 0;
}

/* ====================================================================================== */
/* mappings, symbols, metadata, events                                                    */
/* ====================================================================================== */

int sp_mapping_add(SpProfile *p, uint64_t start, uint64_t end, uint64_t offset, const char *path,
                   const char *build_id) {
    uint32_t ps = sp_intern(p, path), bs = sp_intern(p, build_id);
    if (ps == SP_NONE || bs == SP_NONE || end < start ||
        sp_grow((void **)&p->mappings, &p->cap_mappings, p->nmappings + 1, sizeof *p->mappings))
        return -1;
    p->mappings[p->nmappings++] =
        (SpMapping){.start = start, .end = end, .offset = offset, .path = ps, .build_id = bs};
    return 0;
}

int sp_symbol_add(SpProfile *p, uint64_t addr, uint64_t size, const char *name, uint32_t mapping) {
    uint32_t ns = sp_intern(p, name);
    if (ns == SP_NONE || (mapping != SP_NONE && mapping >= p->nmappings) ||
        sp_grow((void **)&p->symbols, &p->cap_symbols, p->nsymbols + 1, sizeof *p->symbols))
        return -1;
    p->symbols[p->nsymbols++] =
        (SpSymbol){.addr = addr, .size = size, .name = ns, .mapping = mapping};
    return 0;
}

int sp_meta_set(SpProfile *p, const char *key, const char *value) {
    uint32_t k = sp_intern(p, key), v = sp_intern(p, value);
    if (k == SP_NONE || v == SP_NONE) return -1;
    for (uint32_t i = 0; i < p->nmeta; i++)
        if (p->meta[i].key == k) {
            p->meta[i].value = v;
            return 0;
        }
    if (sp_grow((void **)&p->meta, &p->cap_meta, p->nmeta + 1, sizeof *p->meta)) return -1;
    p->meta[p->nmeta++] = (SpMeta){.key = k, .value = v};
    return 0;
}

int sp_meta_setu(SpProfile *p, const char *key, uint64_t value) {
    char buf[32];
    int i = (int)sizeof buf - 1;
    buf[i] = 0;
    do {
        buf[--i] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    return sp_meta_set(p, key, buf + i);
}

const char *sp_meta_get(const SpProfile *p, const char *key) {
    for (uint32_t i = 0; i < p->nmeta; i++)
        if (strcmp(sp_str(p, p->meta[i].key), key) == 0) return sp_str(p, p->meta[i].value);
    return NULL;
}

int sp_event_add(SpProfile *p, uint64_t time_ns, SpEventKind kind, int64_t a, int64_t b,
                 const char *text) {
    uint32_t t = sp_intern(p, text);
    if (t == SP_NONE || (unsigned)kind >= SP_EVENT_KIND_COUNT ||
        sp_grow((void **)&p->events, &p->cap_events, p->nevents + 1, sizeof *p->events))
        return -1;
    p->events[p->nevents++] =
        (SpEvent){.time_ns = time_ns, .kind = kind, .text = t, .a = a, .b = b};
    return 0;
}

void sp_events_clear(SpProfile *p) {
    p->nevents = 0;
}

void sp_profile_keep_thread(SpProfile *p, uint32_t t) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < p->nsamples; i++)
        if (p->samples[i].thread == t)
            p->samples[k++] = p->samples[i]; /* stacks stay where they are */
    p->nsamples = k;
    sp_ccmap_clear(p);
}

int sp_sample_set_lines(SpProfile *p, const uint32_t *lines) {
    if (!p->nsamples) return -1;
    const SpSample *s = &p->samples[p->nsamples - 1];
    if (!p->stack_lines) {
        if (sp_grow((void **)&p->stack_lines, &p->cap_lines, p->nstack ? p->nstack : 1,
                    sizeof *p->stack_lines))
            return -1;
        memset(p->stack_lines, 0, (size_t)p->nstack * sizeof *p->stack_lines);
    }
    if (s->depth) memcpy(p->stack_lines + s->first, lines, s->depth * sizeof *lines);
    return 0;
}

/* ====================================================================================== */
/* queries and names                                                                      */
/* ====================================================================================== */

uint64_t sp_total_weight(const SpProfile *p) {
    uint64_t t = 0;
    for (uint32_t i = 0; i < p->nsamples; i++)
        t += p->samples[i].weight;
    return t;
}

uint32_t sp_mapping_find(const SpProfile *p, uint64_t addr) {
    for (uint32_t i = 0; i < p->nmappings; i++)
        if (addr >= p->mappings[i].start && addr < p->mappings[i].end) return i;
    return SP_NONE;
}

uint32_t sp_symbol_find(const SpProfile *p, uint64_t addr) {
    uint32_t best = SP_NONE;
    for (uint32_t i = 0; i < p->nsymbols; i++) {
        const SpSymbol *s = &p->symbols[i];
        uint64_t sz = s->size ? s->size : 1;
        if (addr >= s->addr && addr - s->addr < sz &&
            (best == SP_NONE || s->addr > p->symbols[best].addr))
            best = i;
    }
    return best;
}

const char *sp_frame_kind_name(uint32_t kind) {
    static const char *const names[] = {"native", "vm-method", "jit", "vm-label"};
    return kind < SP_FRAME_KIND_COUNT ? names[kind] : "?";
}

const char *sp_vm_state_name(uint32_t state) {
    static const char *const names[] = {"none", "interpreting", "primitive", "native",
                                        "gc",   "compiling",    "idle",      "compiled"};
    return state < SP_VM_STATE_COUNT ? names[state] : "?";
}

const char *sp_event_kind_name(uint32_t kind) {
    static const char *const names[] = {"note",   "rate-change", "pause",
                                        "resume", "mode-change", "dropped"};
    return kind < SP_EVENT_KIND_COUNT ? names[kind] : "?";
}

/* ---- units --------------------------------------------------------------------------- */

SpUnit sp_weight_unit(const SpProfile *p) {
    const char *u = sp_meta_get(p, "unit");
    if (p->flavour == SP_FLAVOUR_EXACT || (u && strcmp(u, "invocations") == 0))
        return SP_UNIT_CALLS;
    if (u && strncmp(u, "nanoseconds", 11) == 0) return SP_UNIT_NANOS;
    return SP_UNIT_SAMPLES;
}

const char *sp_unit_type(SpUnit u) {
    return u == SP_UNIT_CALLS ? "calls" : u == SP_UNIT_NANOS ? "time" : "samples";
}

const char *sp_time_kind(const SpProfile *p) {
    const char *m = sp_meta_get(p, "mode");
    return m && strcmp(m, "wall") == 0 ? "wall" : "cpu";
}

uint64_t sp_interval_ns(const SpProfile *p) {
    static const char *const ns_keys[] = {"interval_initial_ns", "interval_ns"};
    static const char *const hz_keys[] = {"delivered_hz", "hz_delivered", "requested_hz",
                                          "hz_requested"};
    for (size_t i = 0; i < 2; i++) {
        const char *v = sp_meta_get(p, ns_keys[i]);
        if (v && strtoull(v, NULL, 10) > 0) return strtoull(v, NULL, 10);
    }
    for (size_t i = 0; i < 4; i++) {
        const char *v = sp_meta_get(p, hz_keys[i]);
        double f = v ? strtod(v, NULL) : 0;
        if (f >= 1e-3 && f <= 1e9) return (uint64_t)(1e9 / f + 0.5); /* sane rates only */
    }
    return 1000000;
}

uint64_t sp_interval_at(const SpProfile *p, uint64_t t, uint64_t initial) {
    uint64_t best_t = 0, iv = initial;
    for (uint32_t i = 0; i < p->nevents; i++) {
        const SpEvent *e = &p->events[i];
        if (e->kind == SP_EVENT_RATE_CHANGE && e->b > 0 && e->time_ns <= t && e->time_ns >= best_t)
            best_t = e->time_ns, iv = (uint64_t)e->b;
    }
    return iv;
}

uint64_t sp_sample_ns(const SpProfile *p, const SpSample *s, uint64_t initial) {
    SpUnit u = sp_weight_unit(p);
    if (u == SP_UNIT_NANOS) return s->weight;
    if (u == SP_UNIT_CALLS) return 0;
    return s->weight * sp_interval_at(p, s->time_ns, initial);
}

uint64_t sp_sample_value(const SpProfile *p, const SpSample *s, SpUnit u, uint64_t initial) {
    if (u == SP_UNIT_SAMPLES) return s->weight * sp_interval_at(p, s->time_ns, initial);
    return s->weight;
}
