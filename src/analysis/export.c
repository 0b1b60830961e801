/* SPDX-License-Identifier: MIT */
/*
 * export.c - collapsed-stack and speedscope exporters (see export.h).
 *
 * The collapsed exporter walks the CC-Map context tree, so it works both for sampled
 * profiles (tree derived from samples) and for exact profiles (tree supplied by the VM,
 * self = invocations of that context).
 */
#include "export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sp_frame_label(const SpProfile *p, uint32_t frame, char *buf, size_t len) {
    if (frame >= p->nframes) {
        snprintf(buf, len, "?");
        return buf;
    }
    const SpFrame *f = &p->frames[frame];
    const char *name = sp_str(p, f->name);
    if (*name) return name; /* whole, however long: no fixed name limit */
    {
        const char *mod = sp_str(p, f->module), *base = strrchr(mod, '/');
        base = base ? base + 1 : mod;
        if (*base)
            snprintf(buf, len, "0x%llx [%s]", (unsigned long long)f->addr, base);
        else
            snprintf(buf, len, "0x%llx", (unsigned long long)f->addr);
    }
    return buf;
}

void sp_json_string(SpBuf *out, const char *s) {
    sp_buf_u8(out, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            sp_buf_printf(out, "\\%c", c);
        else if (c < 0x20)
            sp_buf_printf(out, "\\u%04x", c);
        else
            sp_buf_u8(out, c);
    }
    sp_buf_u8(out, '"');
}

void sp_xml_text(SpBuf *out, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '<':
            sp_buf_put(out, "&lt;", 4);
            break;
        case '>':
            sp_buf_put(out, "&gt;", 4);
            break;
        case '&':
            sp_buf_put(out, "&amp;", 5);
            break;
        case '"':
            sp_buf_put(out, "&quot;", 6);
            break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t') sp_buf_u8(out, (uint8_t)*s);
        }
    }
}

size_t sp_utf8_prefix(const char *s, size_t max) {
    size_t n = strnlen(s, max + 1);
    if (n <= max) return n;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) /* s[n] continues a character */
        n--;
    return n;
}

/* ---- collapsed --------------------------------------------------------------------- */

/* Appends a frame name with the bytes the collapsed format gives a meaning percent-escaped:
 * ';' (frame separator) as %3B, newline as %0A, carriage return as %0D and '%' itself as
 * %25, so distinct names stay distinct and the text maps back to the names. */
static void collapsed_name(SpBuf *b, const char *s) {
    for (; *s; s++) {
        if (*s == ';' || *s == '\n' || *s == '\r' || *s == '%')
            sp_buf_printf(b, "%%%02X", (unsigned char)*s);
        else
            sp_buf_u8(b, (uint8_t)*s);
    }
}

/* Source lines asked for (sp_export_collapsed_lines): resolver of native PCs or NULL. */
typedef struct {
    int on;
    SpLineFn fn;
    void *ctx;
} LineOpt;

/* Line of entry d of sample s: its recorded line (VM frames), else for a native or JIT leaf
 * the line of the sampled PC in its own function (the last position the resolver gives). */
static uint32_t collapsed_line(const SpProfile *p, const SpSample *s, uint32_t d,
                               const LineOpt *lo) {
    uint32_t ln = sp_sample_line(p, s, d);
    const SpFrame *f = &p->frames[sp_sample_stack(p, s)[d]];
    if (ln || d || !lo->fn || !s->pc || (f->kind != SP_FRAME_NATIVE && f->kind != SP_FRAME_JIT))
        return ln;
    uint32_t m = sp_mapping_find(p, s->pc);
    SpSrcLine sl[32];
    uint32_t n = m == SP_NONE ? 0 : lo->fn(lo->ctx, p, m, s->pc, sl, 32);
    return n ? sl[n - 1].line : 0;
}

/* Appends the frames chain[n-1] (root) .. chain[0] (leaf), separated by ';'; with lines
 * (s given, lo->on) a frame at a known line is written "name:line". */
static void collapsed_frames(const SpProfile *p, const uint32_t *chain, uint32_t n, SpBuf *b,
                             const SpSample *s, const LineOpt *lo) {
    char buf[64];
    while (n-- > 0) {
        collapsed_name(b, sp_frame_label(p, chain[n], buf, sizeof buf));
        uint32_t ln = s && lo->on ? collapsed_line(p, s, n, lo) : 0;
        if (ln) sp_buf_printf(b, ":%u", ln);
        if (n) sp_buf_u8(b, ';');
    }
}

typedef struct {
    size_t off;      /* path text in the scratch buffer */
    uint64_t weight; /* self weight of the context */
} Line;

static const char *g_text; /* qsort context (not re-entrant) */

static int cmp_lines(const void *a, const void *b) {
    return strcmp(g_text + ((const Line *)a)->off, g_text + ((const Line *)b)->off);
}

/* The text of every weighted path into text, one Line each; returns the count or -1. */
static int64_t collapsed_lines(SpProfile *p, SpBuf *text, Line *lines, const LineOpt *lo) {
    uint32_t n = 0;
    if (p->nsamples) { /* the samples' stacks: time-weighted (sp_sample_value) */
        SpUnit u = sp_weight_unit(p);
        uint64_t iv = sp_interval_ns(p);
        for (uint32_t i = 0; i < p->nsamples; i++) {
            const SpSample *s = &p->samples[i];
            lines[n].off = text->len;
            lines[n++].weight = sp_sample_value(p, s, u, iv);
            collapsed_frames(p, sp_sample_stack(p, s), s->depth, text, s, lo);
            sp_buf_u8(text, 0);
        }
        return n;
    }
    uint32_t *chain = malloc(((size_t)p->cc.nnodes + 1) * sizeof *chain);
    if (!chain) return -1;
    for (uint32_t i = 0; i < p->cc.nnodes; i++) {
        if (!p->cc.nodes[i].self) continue;
        uint32_t d = 0;
        for (uint32_t j = i; j != SP_NONE && d <= p->cc.nnodes; j = p->cc.nodes[j].parent)
            chain[d++] = p->cc.nodes[j].frame;
        lines[n].off = text->len;
        lines[n++].weight = p->cc.nodes[i].self;
        collapsed_frames(p, chain, d, text, NULL, lo);
        sp_buf_u8(text, 0);
    }
    free(chain);
    return n;
}

/* Contexts that differ only in call sites have the same name path: their lines are merged. */
static int collapsed(SpProfile *p, SpBuf *out, const LineOpt *lo) {
    if (!p->nsamples && sp_ccmap_ensure(p)) return -1;
    SpBuf text;
    uint32_t cap = p->nsamples ? p->nsamples : p->cc.nnodes;
    Line *lines = calloc((size_t)cap + 1, sizeof *lines);
    int64_t n = -1;
    int rc = -1;
    sp_buf_init(&text);
    if (lines) n = collapsed_lines(p, &text, lines, lo);
    if (n < 0 || text.oom) goto out;
    g_text = (const char *)text.data;
    if ((size_t)n) qsort(lines, (size_t)n, sizeof *lines, cmp_lines);
    for (int64_t i = 0; i < n;) {
        uint64_t w = lines[i].weight;
        int64_t j = i + 1;
        for (; j < n && !strcmp(g_text + lines[j].off, g_text + lines[i].off); j++)
            w += lines[j].weight;
        if (w) {
            sp_buf_put(out, g_text + lines[i].off, strlen(g_text + lines[i].off));
            sp_buf_printf(out, " %llu\n", (unsigned long long)w);
        }
        i = j;
    }
    rc = out->oom ? -1 : 0;
out:
    free(lines);
    sp_buf_fini(&text);
    return rc;
}

int sp_export_collapsed(SpProfile *p, SpBuf *out) {
    LineOpt lo = {0, NULL, NULL};
    return collapsed(p, out, &lo);
}

int sp_export_collapsed_lines(SpProfile *p, SpBuf *out, SpLineFn fn, void *ctx) {
    LineOpt lo = {1, fn, ctx};
    return collapsed(p, out, &lo);
}

/* ---- speedscope -------------------------------------------------------------------- */

/* Frames with file and line where known: the recorded ones (VM methods), else for native
 * and JIT functions the position of their entry from the resolver (if any). */
static void speedscope_frames(const SpProfile *p, SpBuf *out, const LineOpt *lo) {
    char name[64];
    sp_buf_printf(out, "\"shared\":{\"frames\":[");
    for (uint32_t i = 0; i < p->nframes; i++) {
        const SpFrame *f = &p->frames[i];
        const char *file = f->file ? sp_str(p, f->file) : NULL;
        uint32_t line = f->line, m = SP_NONE, n = 0;
        SpSrcLine sl[32];
        if (!file && lo->fn && f->addr && (f->kind == SP_FRAME_NATIVE || f->kind == SP_FRAME_JIT))
            m = sp_mapping_find(p, f->addr);
        if (m != SP_NONE) n = lo->fn(lo->ctx, p, m, f->addr, sl, 32);
        if (n && sl[n - 1].file) file = sl[n - 1].file, line = sl[n - 1].line;
        sp_buf_printf(out, "%s{\"name\":", i ? "," : "");
        sp_json_string(out, sp_frame_label(p, i, name, sizeof name));
        if (file) {
            sp_buf_printf(out, ",\"file\":");
            sp_json_string(out, file);
        }
        if (line) sp_buf_printf(out, ",\"line\":%u", line);
        sp_buf_u8(out, '}');
    }
    sp_buf_printf(out, "]}");
}

/* One "sampled" profile with the samples of thread t (SP_NONE = all): weights in
 * nanoseconds for sampled and time profiles (sp_sample_value), "none" (calls) for exact. */
static void speedscope_thread(const SpProfile *p, uint32_t t, SpBuf *out) {
    uint64_t total = 0, iv = sp_interval_ns(p);
    SpUnit u = sp_weight_unit(p);
    sp_buf_printf(out, "{\"type\":\"sampled\",\"name\":");
    SpBuf tname;
    sp_buf_init(&tname);
    if (t == SP_NONE)
        sp_buf_printf(&tname, "all threads");
    else {
        const char *nm = sp_str(p, p->threads[t].name);
        sp_buf_put(&tname, nm, strlen(nm));
        sp_buf_printf(&tname, " (tid %llu)", (unsigned long long)p->threads[t].tid);
    }
    sp_buf_u8(&tname, 0);
    sp_json_string(out, tname.oom ? "?" : (const char *)tname.data);
    if (tname.oom) out->oom = 1;
    sp_buf_fini(&tname);
    sp_buf_printf(out, ",\"unit\":\"%s\",\"startValue\":0,\"samples\":[",
                  u == SP_UNIT_CALLS ? "none" : "nanoseconds");
    int first = 1;
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const SpSample *s = &p->samples[i];
        if (t != SP_NONE && s->thread != t) continue;
        const uint32_t *st = sp_sample_stack(p, s);
        sp_buf_printf(out, "%s[", first ? "" : ",");
        for (uint32_t d = s->depth; d-- > 0;)
            sp_buf_printf(out, "%u%s", st[d], d ? "," : "");
        sp_buf_u8(out, ']');
        first = 0;
    }
    sp_buf_printf(out, "],\"weights\":[");
    first = 1;
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const SpSample *s = &p->samples[i];
        if (t != SP_NONE && s->thread != t) continue;
        uint64_t w = sp_sample_value(p, s, u, iv);
        sp_buf_printf(out, "%s%llu", first ? "" : ",", (unsigned long long)w);
        total += w;
        first = 0;
    }
    sp_buf_printf(out, "],\"endValue\":%llu}", (unsigned long long)total);
}

/* For profiles without samples (exact flavour): one profile from the context tree. */
static void speedscope_tree(const SpProfile *p, SpBuf *out) {
    uint64_t total = 0;
    int ns = sp_weight_unit(p) == SP_UNIT_NANOS; /* else calls, or samples of a CC-Map dump */
    uint32_t *chain = malloc(((size_t)p->cc.nnodes + 1) * sizeof *chain);
    if (!chain) out->oom = 1;
    sp_buf_printf(out,
                  "{\"type\":\"sampled\",\"name\":\"context tree\",\"unit\":\"%s\","
                  "\"startValue\":0,\"samples\":[",
                  ns ? "nanoseconds" : "none");
    int first = 1;
    for (uint32_t i = 0; i < p->cc.nnodes; i++) {
        if (!p->cc.nodes[i].self) continue;
        uint32_t n = 0;
        for (uint32_t j = i; j != SP_NONE && chain; j = p->cc.nodes[j].parent)
            chain[n++] = p->cc.nodes[j].frame;
        sp_buf_printf(out, "%s[", first ? "" : ",");
        while (n-- > 0)
            sp_buf_printf(out, "%u%s", chain[n], n ? "," : "");
        sp_buf_u8(out, ']');
        first = 0;
    }
    sp_buf_printf(out, "],\"weights\":[");
    first = 1;
    for (uint32_t i = 0; i < p->cc.nnodes; i++) {
        if (!p->cc.nodes[i].self) continue;
        sp_buf_printf(out, "%s%llu", first ? "" : ",", (unsigned long long)p->cc.nodes[i].self);
        total += p->cc.nodes[i].self;
        first = 0;
    }
    sp_buf_printf(out, "],\"endValue\":%llu}", (unsigned long long)total);
    free(chain);
}

static int speedscope(SpProfile *p, SpBuf *out, const LineOpt *lo) {
    sp_buf_printf(out,
                  "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
                  "\"exporter\":\"sampo\",\"name\":\"sampo profile\",\"activeProfileIndex\":0,");
    speedscope_frames(p, out, lo);
    sp_buf_printf(out, ",\"profiles\":[");
    if (p->nsamples == 0) {
        if (sp_ccmap_ensure(p)) return -1;
        speedscope_tree(p, out);
    } else {
        int first = 1;
        for (uint32_t t = 0; t < p->nthreads; t++) {
            int any = 0;
            for (uint32_t i = 0; i < p->nsamples && !any; i++)
                any = p->samples[i].thread == t;
            if (!any) continue;
            if (!first) sp_buf_u8(out, ',');
            speedscope_thread(p, t, out);
            first = 0;
        }
    }
    sp_buf_printf(out, "]}\n");
    return out->oom ? -1 : 0;
}

int sp_export_speedscope(SpProfile *p, SpBuf *out) {
    LineOpt lo = {0, NULL, NULL};
    return speedscope(p, out, &lo);
}

int sp_export_speedscope_lines(SpProfile *p, SpBuf *out, SpLineFn fn, void *ctx) {
    LineOpt lo = {1, fn, ctx};
    return speedscope(p, out, &lo);
}
