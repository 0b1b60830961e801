/*
 * pprof.c - profile.proto writer and gzip wrapper (see pprof.h).
 *
 * Field numbers follow github.com/google/pprof/proto/profile.proto.  Sub-messages are
 * encoded into a scratch buffer first and then appended with their length prefix.
 */
#include "pprof.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "export.h"

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

/* Our string ids are reused as pprof string indexes; extra strings follow them. */
enum { X_SAMPLES, X_COUNT, X_CPU, X_NANOS, X_CALLS, X_THREAD, X_VMSTATE, X_STATE0 };
#define X_TIME (X_STATE0 + SP_VM_STATE_COUNT)

/* Sampling interval at the start of the profile, from the metadata (1 ms when unknown). */
static uint64_t pprof_interval_ns(const SpProfile *p) {
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

/* Interval in force at time t: the last rate change at or before t, else the initial one. */
static uint64_t pprof_interval_at(const SpProfile *p, uint64_t t, uint64_t initial) {
    uint64_t best_t = 0, iv = initial;
    for (uint32_t i = 0; i < p->nevents; i++) {
        const SpEvent *e = &p->events[i];
        if (e->kind == SP_EVENT_RATE_CHANGE && e->b > 0 && e->time_ns <= t && e->time_ns >= best_t)
            best_t = e->time_ns, iv = (uint64_t)e->b;
    }
    return iv;
}

static void pprof_value_type(SpBuf *b, SpBuf *s, uint32_t field, uint64_t type, uint64_t unit) {
    pb_field_varint(s, 1, type);
    pb_field_varint(s, 2, unit);
    pb_sub(b, field, s);
}

/* One pprof Sample: locations leaf first, values [weight] or [weight, v2]. */
static void pprof_sample(SpBuf *b, SpBuf *s, SpBuf *packed, const uint32_t *leaf_first,
                         uint32_t depth, uint64_t weight, int has_v2, uint64_t v2,
                         int64_t thread_str, int64_t state_str, uint32_t base) {
    packed->len = 0;
    for (uint32_t d = 0; d < depth; d++)
        pb_varint(packed, (uint64_t)leaf_first[d] + 1);
    pb_sub(s, 1, packed);
    pb_varint(packed, weight);
    if (has_v2) pb_varint(packed, v2);
    pb_sub(s, 2, packed);
    SpBuf lab;
    sp_buf_init(&lab);
    if (thread_str >= 0) {
        pb_field_varint(&lab, 1, base + X_THREAD);
        pb_field_varint(&lab, 2, (uint64_t)thread_str);
        pb_sub(s, 3, &lab);
    }
    if (state_str >= 0) {
        pb_field_varint(&lab, 1, base + X_VMSTATE);
        pb_field_varint(&lab, 2, (uint64_t)state_str);
        pb_sub(s, 3, &lab);
    }
    sp_buf_fini(&lab);
    pb_sub(b, 2, s);
}

/* Own time of each tree node: inclusive time minus the children's, clamped at 0. */
static uint64_t *pprof_node_self_ns(const SpProfile *p) {
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

static void pprof_samples(SpProfile *p, SpBuf *b, SpBuf *s, uint64_t interval, int exact,
                          int timed) {
    SpBuf packed;
    uint32_t base = p->strs.n;
    sp_buf_init(&packed);
    if (p->nsamples) {
        for (uint32_t i = 0; i < p->nsamples; i++) {
            const SpSample *sm = &p->samples[i];
            int64_t ts = p->threads[sm->thread].name ? (int64_t)p->threads[sm->thread].name : -1;
            int64_t vs = sm->state ? (int64_t)(base + X_STATE0 + sm->state) : -1;
            uint64_t iv = pprof_interval_at(p, sm->time_ns, interval);
            pprof_sample(b, s, &packed, sp_sample_stack(p, sm), sm->depth, sm->weight, !exact,
                         sm->weight * iv, ts, vs, base);
        }
    } else {
        uint32_t chain[4096];
        uint64_t *own = timed ? pprof_node_self_ns(p) : NULL;
        if (timed && !own) b->oom = 1;
        for (uint32_t i = 0; i < p->cc.nnodes && !b->oom; i++) {
            uint32_t n = 0;
            if (!p->cc.nodes[i].self && !(own && own[i])) continue;
            for (uint32_t j = i; j != SP_NONE && n < 4096; j = p->cc.nodes[j].parent)
                chain[n++] = p->cc.nodes[j].frame;
            pprof_sample(b, s, &packed, chain, n, p->cc.nodes[i].self, !exact || timed,
                         own ? own[i] : p->cc.nodes[i].self * interval, -1, -1, base);
        }
        free(own);
    }
    sp_buf_fini(&packed);
}

static void pprof_mappings(const SpProfile *p, SpBuf *b, SpBuf *s) {
    for (uint32_t i = 0; i < p->nmappings; i++) {
        const SpMapping *m = &p->mappings[i];
        pb_field_varint(s, 1, i + 1);
        pb_field_varint(s, 2, m->start);
        pb_field_varint(s, 3, m->end);
        pb_field_varint(s, 4, m->offset);
        pb_field_varint(s, 5, m->path);
        pb_field_varint(s, 6, m->build_id);
        pb_field_varint(s, 7, 1); /* has_functions */
        pb_sub(b, 3, s);
    }
}

static void pprof_locations_functions(const SpProfile *p, SpBuf *b, SpBuf *s) {
    SpBuf line;
    sp_buf_init(&line);
    for (uint32_t i = 0; i < p->nframes; i++) {
        const SpFrame *f = &p->frames[i];
        pb_field_varint(s, 1, i + 1);
        uint32_t m = f->addr ? sp_mapping_find(p, f->addr) : SP_NONE;
        if (m != SP_NONE) pb_field_varint(s, 2, m + 1);
        if (f->addr) pb_field_varint(s, 3, f->addr);
        pb_field_varint(&line, 1, i + 1);
        if (f->line) pb_field_varint(&line, 2, f->line);
        pb_sub(s, 4, &line);
        pb_sub(b, 4, s);
    }
    for (uint32_t i = 0; i < p->nframes; i++) {
        const SpFrame *f = &p->frames[i];
        pb_field_varint(s, 1, i + 1);
        pb_field_varint(s, 2, f->name);
        pb_field_varint(s, 3, f->name);
        pb_field_varint(s, 4, f->file);
        pb_sub(b, 5, s);
    }
    sp_buf_fini(&line);
}

static void pprof_strings(const SpProfile *p, SpBuf *b) {
    static const char *const extra[] = {"samples", "count",  "cpu",     "nanoseconds",
                                        "calls",   "thread", "vm_state"};
    for (uint32_t i = 0; i < p->strs.n; i++)
        pb_field_bytes(b, 6, p->strs.buf + p->strs.off[i], p->strs.slen[i]);
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++)
        pb_field_bytes(b, 6, extra[i], strlen(extra[i]));
    for (uint32_t st = 0; st < SP_VM_STATE_COUNT; st++)
        pb_field_bytes(b, 6, sp_vm_state_name(st), strlen(sp_vm_state_name(st)));
    pb_field_bytes(b, 6, "time", 4); /* X_TIME */
}

int sp_pprof_encode(SpProfile *p, SpBuf *out) {
    int exact = p->flavour == SP_FLAVOUR_EXACT;
    uint64_t interval = pprof_interval_ns(p);
    uint32_t base = p->strs.n;
    SpBuf s;
    if (!p->nsamples && sp_ccmap_ensure(p)) return -1;
    int timed = 0; /* exact tree with times: a second value, own time per context */
    for (uint32_t i = 0; exact && !p->nsamples && i < p->cc.nnodes && !timed; i++)
        timed = p->cc.nodes[i].time_ns != 0;
    sp_buf_init(&s);
    if (exact) {
        pprof_value_type(out, &s, 1, base + X_CALLS, base + X_COUNT);
        if (timed) pprof_value_type(out, &s, 1, base + X_TIME, base + X_NANOS);
    } else {
        pprof_value_type(out, &s, 1, base + X_SAMPLES, base + X_COUNT);
        pprof_value_type(out, &s, 1, base + X_CPU, base + X_NANOS);
    }
    pprof_samples(p, out, &s, interval, exact, timed);
    pprof_mappings(p, out, &s);
    pprof_locations_functions(p, out, &s);
    pprof_strings(p, out);
    const char *dur = sp_meta_get(p, "duration_ns");
    if (dur && *dur) pb_field_varint(out, 10, strtoull(dur, NULL, 10));
    if (exact) {
        pprof_value_type(out, &s, 11, base + X_CALLS, base + X_COUNT);
        pb_field_varint(out, 12, 1);
        if (timed) pb_field_varint(out, 14, base + X_CALLS); /* default_sample_type */
    } else {
        pprof_value_type(out, &s, 11, base + X_CPU, base + X_NANOS);
        pb_field_varint(out, 12, interval);
    }
    sp_buf_fini(&s);
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
    SpBuf raw;
    sp_buf_init(&raw);
    int rc = sp_pprof_encode(p, &raw);
    if (rc == 0) rc = sp_gzip(raw.data, raw.len, out);
    sp_buf_fini(&raw);
    return rc;
}
