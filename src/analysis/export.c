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
    if (*name) {
        snprintf(buf, len, "%s", name);
    } else {
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

/* ---- collapsed --------------------------------------------------------------------- */

/* Appends the path root..node to b, separated by ';'. */
static void collapsed_path(const SpProfile *p, uint32_t node, SpBuf *b) {
    uint32_t chain[4096], n = 0;
    for (uint32_t i = node; i != SP_NONE && n < 4096; i = p->cc.nodes[i].parent)
        chain[n++] = i;
    char name[512];
    while (n-- > 0) {
        sp_frame_label(p, p->cc.nodes[chain[n]].frame, name, sizeof name);
        for (char *c = name; *c; c++)
            if (*c == ';' || *c == '\n') *c = ':';
        sp_buf_printf(b, "%s%s", name, n ? ";" : "");
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

/* Contexts that differ only in call sites have the same name path: their lines are merged. */
int sp_export_collapsed(SpProfile *p, SpBuf *out) {
    if (sp_ccmap_ensure(p)) return -1;
    SpBuf text;
    Line *lines = calloc(p->cc.nnodes + 1, sizeof *lines);
    uint32_t n = 0;
    int rc = -1;
    sp_buf_init(&text);
    if (!lines) goto out;
    for (uint32_t i = 0; i < p->cc.nnodes; i++) {
        if (!p->cc.nodes[i].self) continue;
        lines[n].off = text.len;
        lines[n++].weight = p->cc.nodes[i].self;
        collapsed_path(p, i, &text);
        sp_buf_u8(&text, 0);
    }
    if (text.oom) goto out;
    g_text = (const char *)text.data;
    qsort(lines, n, sizeof *lines, cmp_lines);
    for (uint32_t i = 0; i < n;) {
        uint64_t w = lines[i].weight;
        uint32_t j = i + 1;
        for (; j < n && !strcmp(g_text + lines[j].off, g_text + lines[i].off); j++)
            w += lines[j].weight;
        sp_buf_printf(out, "%s %llu\n", g_text + lines[i].off, (unsigned long long)w);
        i = j;
    }
    rc = out->oom ? -1 : 0;
out:
    free(lines);
    sp_buf_fini(&text);
    return rc;
}

/* ---- speedscope -------------------------------------------------------------------- */

static void speedscope_frames(const SpProfile *p, SpBuf *out) {
    char name[512];
    sp_buf_printf(out, "\"shared\":{\"frames\":[");
    for (uint32_t i = 0; i < p->nframes; i++) {
        const SpFrame *f = &p->frames[i];
        sp_buf_printf(out, "%s{\"name\":", i ? "," : "");
        sp_json_string(out, sp_frame_label(p, i, name, sizeof name));
        if (f->file) {
            sp_buf_printf(out, ",\"file\":");
            sp_json_string(out, sp_str(p, f->file));
        }
        if (f->line) sp_buf_printf(out, ",\"line\":%u", f->line);
        sp_buf_u8(out, '}');
    }
    sp_buf_printf(out, "]}");
}

/* One "sampled" profile with the samples of thread t (SP_NONE = all). */
static void speedscope_thread(const SpProfile *p, uint32_t t, SpBuf *out) {
    uint64_t total = 0;
    const char *unit = "none";
    sp_buf_printf(out, "{\"type\":\"sampled\",\"name\":");
    char tname[256];
    if (t == SP_NONE)
        snprintf(tname, sizeof tname, "all threads");
    else
        snprintf(tname, sizeof tname, "%s (tid %llu)", sp_str(p, p->threads[t].name),
                 (unsigned long long)p->threads[t].tid);
    sp_json_string(out, tname);
    sp_buf_printf(out, ",\"unit\":\"%s\",\"startValue\":0,\"samples\":[", unit);
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
        sp_buf_printf(out, "%s%llu", first ? "" : ",", (unsigned long long)s->weight);
        total += s->weight;
        first = 0;
    }
    sp_buf_printf(out, "],\"endValue\":%llu}", (unsigned long long)total);
}

/* For profiles without samples (exact flavour): one profile from the context tree. */
static void speedscope_tree(const SpProfile *p, SpBuf *out) {
    uint64_t total = 0;
    sp_buf_printf(out, "{\"type\":\"sampled\",\"name\":\"context tree\",\"unit\":\"none\","
                       "\"startValue\":0,\"samples\":[");
    int first = 1;
    for (uint32_t i = 0; i < p->cc.nnodes; i++) {
        if (!p->cc.nodes[i].self) continue;
        uint32_t chain[4096], n = 0;
        for (uint32_t j = i; j != SP_NONE && n < 4096; j = p->cc.nodes[j].parent)
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
}

int sp_export_speedscope(SpProfile *p, SpBuf *out) {
    sp_buf_printf(out,
                  "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
                  "\"exporter\":\"sampo\",\"name\":\"sampo profile\",\"activeProfileIndex\":0,");
    speedscope_frames(p, out);
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
