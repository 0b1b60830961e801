/* SPDX-License-Identifier: MIT */
/*
 * flame.c - flame graph SVG writer (see flame.h).
 *
 * Layout: the tree is laid out depth-first; a node's x is its parent's x plus the widths
 * of its earlier siblings (siblings sorted by label, like flamegraph.pl, so the picture does
 * not depend on sample order).  Node widths use the inclusive weight recomputed from the
 * self weights, so a producer-supplied tree with inconsistent totals still draws correctly.
 */
#include "flame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "u64map.h"

#define FLAME_ROW 16
#define FLAME_TOP 40
#define FLAME_BOTTOM 30
#define FLAME_MAX_DEPTH 1024 /* deeper frames are not drawn (bounds recursion and height) */

void sp_flame_opts_default(SpFlameOpts *o) {
    o->width = 1200;
    o->title = "Flame Graph";
    o->min_width_px = 0.1;
    o->reverse = 0;
    o->colors = SP_FLAME_COLORS_NAME;
}

/* A context-tree node after merging siblings with the same frame (different call sites). */
typedef struct {
    uint32_t parent, frame;
    uint64_t self;
} FlameNode;

typedef struct {
    const SpProfile *p;
    FlameNode *nodes;
    uint32_t nnodes;
    const SpFlameOpts *o;
    SpBuf *out;
    uint64_t *incl; /* inclusive weight per node */
    uint32_t *kids, *start;
    const char **labels; /* borrowed from p, or from lbuf for unnamed frames */
    char (*lbuf)[64];
    uint8_t *state; /* --colors state: the dominant VM state per frame id */
    double scale;   /* px per weight unit */
    unsigned height;
    uint64_t total;
} Flame;

static const Flame *g_flame;

static int cmp_label(const void *a, const void *b) {
    return strcmp(g_flame->labels[*(const uint32_t *)a], g_flame->labels[*(const uint32_t *)b]);
}

/* Warm colours (red..yellow), deterministic per name. */
static void flame_color(const char *name, unsigned *r, unsigned *g, unsigned *b) {
    uint32_t h = 2166136261u;
    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 16777619u;
    *r = 205 + (h % 50);
    *g = 60 + ((h >> 8) % 150);
    *b = 40 + ((h >> 16) % 40);
}

static uint32_t flame_hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Colour of one node per --colors; *what names the module or state for the tooltip. */
static void flame_node_color(const Flame *f, uint32_t node, unsigned *r, unsigned *g, unsigned *b,
                             const char **what) {
    static const unsigned state_rgb[SP_VM_STATE_COUNT][3] = {
        {230, 150, 80},  /* none (native program) */
        {120, 180, 90},  /* interpreting */
        {90, 160, 220},  /* primitive */
        {230, 120, 70},  /* native */
        {220, 80, 80},   /* gc */
        {180, 120, 210}, /* compiling */
        {170, 170, 170}, /* idle */
        {240, 200, 60},  /* compiled (JIT code) */
    };
    uint32_t frame = f->nodes[node].frame;
    *what = NULL;
    if (f->o->colors == SP_FLAME_COLORS_STATE && f->state) {
        unsigned s = f->state[frame] < SP_VM_STATE_COUNT ? f->state[frame] : 0;
        *r = state_rgb[s][0], *g = state_rgb[s][1], *b = state_rgb[s][2];
        *what = sp_vm_state_name(s);
        return;
    }
    if (f->o->colors == SP_FLAME_COLORS_MODULE) {
        const char *mod = sp_str(f->p, f->p->frames[frame].module), *base = strrchr(mod, '/');
        base = base ? base + 1 : mod;
        uint32_t h = flame_hash(base);
        /* a pastel per module: one channel high, the others from the hash */
        unsigned c[3] = {110 + (h >> 8) % 100, 110 + (h >> 16) % 100, 110 + (h >> 24) % 100};
        c[h % 3] = 225;
        *r = c[0], *g = c[1], *b = c[2];
        *what = *base ? base : "unknown module";
        return;
    }
    flame_color(f->labels[node], r, g, b);
}

/* --colors state: per frame the VM state of most of its self samples, or of most samples it
 * is on the stack of when it has no self samples. */
static int flame_states(Flame *f) {
    const SpProfile *p = f->p;
    uint64_t *leaf = calloc((size_t)p->nframes * SP_VM_STATE_COUNT + 1, sizeof *leaf);
    uint64_t *any = calloc((size_t)p->nframes * SP_VM_STATE_COUNT + 1, sizeof *any);
    f->state = calloc(p->nframes + 1, 1);
    if (!leaf || !any || !f->state) {
        free(leaf);
        free(any);
        return -1;
    }
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const SpSample *s = &p->samples[i];
        const uint32_t *st = sp_sample_stack(p, s);
        unsigned state = s->state < SP_VM_STATE_COUNT ? s->state : 0;
        if (s->depth) leaf[(size_t)st[0] * SP_VM_STATE_COUNT + state] += s->weight;
        for (uint32_t d = 0; d < s->depth; d++)
            any[(size_t)st[d] * SP_VM_STATE_COUNT + state] += s->weight;
    }
    for (uint32_t fr = 0; fr < p->nframes; fr++) {
        const uint64_t *v = leaf + (size_t)fr * SP_VM_STATE_COUNT;
        uint64_t sum = 0;
        for (unsigned s = 0; s < SP_VM_STATE_COUNT; s++)
            sum += v[s];
        if (!sum) v = any + (size_t)fr * SP_VM_STATE_COUNT;
        unsigned best = 0;
        for (unsigned s = 1; s < SP_VM_STATE_COUNT; s++)
            if (v[s] > v[best]) best = s;
        f->state[fr] = (uint8_t)best;
    }
    free(leaf);
    free(any);
    return 0;
}

static void flame_rect(Flame *f, uint32_t node, double x, unsigned depth) {
    double w = (double)f->incl[node] * f->scale;
    if (w < f->o->min_width_px || depth >= FLAME_MAX_DEPTH) return;
    double y = f->o->reverse ? FLAME_TOP + depth * FLAME_ROW
                             : f->height - FLAME_BOTTOM - (depth + 1) * FLAME_ROW;
    const char *label = f->labels[node], *what;
    unsigned r, g, b;
    flame_node_color(f, node, &r, &g, &b, &what);
    sp_buf_printf(f->out, "<g><title>");
    sp_xml_text(f->out, label);
    if (what) {
        sp_buf_printf(f->out, " [");
        sp_xml_text(f->out, what);
        sp_buf_printf(f->out, "]");
    }
    sp_buf_printf(f->out,
                  " (%llu, %.2f%%)</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                  "height=\"%d\" fill=\"rgb(%u,%u,%u)\" rx=\"2\"/>",
                  (unsigned long long)f->incl[node],
                  100.0 * (double)f->incl[node] / (double)f->total, x + 10, y, w, FLAME_ROW - 1, r,
                  g, b);
    size_t fit = w > 12 ? (w > 1800 ? 255 : (size_t)((w - 6) / 7)) : 0; /* ~7 px per glyph */
    if (fit >= 3) {
        char text[256];
        size_t len = strlen(label);
        if (len > fit)
            snprintf(text, sizeof text, "%.*s..", (int)sp_utf8_prefix(label, fit - 2), label);
        else
            snprintf(text, sizeof text, "%s", label);
        sp_buf_printf(f->out, "<text x=\"%.1f\" y=\"%.1f\">", x + 13, y + 11.5);
        sp_xml_text(f->out, text);
        sp_buf_printf(f->out, "</text>");
    }
    sp_buf_printf(f->out, "</g>\n");
    double cx = x;
    for (uint32_t k = f->start[node]; k < f->start[node + 1]; k++) {
        flame_rect(f, f->kids[k], cx, depth + 1);
        cx += (double)f->incl[f->kids[k]] * f->scale;
    }
}

/* Children lists (root level in slot n) and inclusive weights; returns max depth. */
static int flame_prepare(Flame *f, unsigned *maxdepth) {
    const FlameNode *c = f->nodes;
    uint32_t n = f->nnodes;
    unsigned *depth = calloc(n + 1, sizeof *depth);
    uint32_t *fill = calloc(n + 1, sizeof *fill);
    int rc = -1;
    if (!depth || !fill) goto out;
    *maxdepth = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t par = c[i].parent;
        f->start[(par == SP_NONE ? n : par) + 1]++;
        depth[i] = par == SP_NONE ? 0 : depth[par] + 1;
        if (depth[i] + 1 > *maxdepth && depth[i] < FLAME_MAX_DEPTH) *maxdepth = depth[i] + 1;
        f->incl[i] = c[i].self;
        f->labels[i] = sp_frame_label(f->p, c[i].frame, f->lbuf[i], sizeof f->lbuf[i]);
    }
    for (uint32_t i = n; i-- > 0;) /* children come after parents */
        if (c[i].parent != SP_NONE) f->incl[c[i].parent] += f->incl[i];
    for (uint32_t i = 0; i <= n; i++)
        f->start[i + 1] += f->start[i];
    for (uint32_t i = 0; i < n; i++) {
        uint32_t s = c[i].parent == SP_NONE ? n : c[i].parent;
        f->kids[f->start[s] + fill[s]++] = i;
    }
    g_flame = f;
    for (uint32_t s = 0; s <= n; s++)
        qsort(f->kids + f->start[s], f->start[s + 1] - f->start[s], sizeof *f->kids, cmp_label);
    rc = 0;
out:
    free(depth);
    free(fill);
    return rc;
}

static void flame_header(Flame *f) {
    unsigned w = f->o->width;
    sp_buf_printf(f->out,
                  "<?xml version=\"1.0\" standalone=\"no\"?>\n"
                  "<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
                  "xmlns=\"http://www.w3.org/2000/svg\">\n"
                  "<style>text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}"
                  "rect:hover{stroke:#000;stroke-width:0.5}</style>\n"
                  "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"#f8f8f0\"/>\n"
                  "<text x=\"%u\" y=\"24\" text-anchor=\"middle\" style=\"font-size:17px\">",
                  w, f->height, w, f->height, w, f->height, w / 2);
    sp_xml_text(f->out, f->o->title);
    sp_buf_printf(f->out, "</text>\n<text x=\"10\" y=\"%u\">total %llu %s</text>\n", f->height - 10,
                  (unsigned long long)f->total,
                  sp_weight_unit(f->p) == SP_UNIT_CALLS   ? "calls"
                  : sp_weight_unit(f->p) == SP_UNIT_NANOS ? "nanoseconds"
                                                          : "samples");
}

/* Merges siblings that share a frame (they differ only in call site), keeping the
 * parent-before-child order. */
static int flame_merge(const SpProfile *p, FlameNode **out, uint32_t *nout) {
    uint32_t n = p->cc.nnodes, m = 0;
    FlameNode *v = calloc(n + 1, sizeof *v);
    uint32_t *map = calloc(n + 1, sizeof *map);
    U64Map idx;
    int rc = -1;
    u64map_init(&idx);
    if (!v || !map) goto out;
    for (uint32_t i = 0; i < n; i++) {
        const SpCcNode *c = &p->cc.nodes[i];
        uint32_t par = c->parent == SP_NONE ? SP_NONE : map[c->parent];
        uint64_t key = (uint64_t)par << 32 | c->frame;
        uint32_t j = u64map_get(&idx, key);
        if (j == UINT32_MAX) {
            j = m++;
            v[j] = (FlameNode){.parent = par, .frame = c->frame};
            if (u64map_put(&idx, key, j)) goto out;
        }
        v[j].self += c->self;
        map[i] = j;
    }
    *out = v, *nout = m, v = NULL;
    rc = 0;
out:
    free(v);
    free(map);
    u64map_fini(&idx);
    return rc;
}

int sp_flame_svg(SpProfile *p, const SpFlameOpts *o, SpBuf *out) {
    if (sp_ccmap_ensure(p)) return -1;
    Flame f = {.p = p, .o = o, .out = out};
    if (flame_merge(p, &f.nodes, &f.nnodes)) return -1;
    uint32_t n = f.nnodes;
    f.incl = calloc(n + 1, sizeof *f.incl);
    f.kids = calloc(n + 1, sizeof *f.kids);
    f.start = calloc(n + 2, sizeof *f.start);
    f.labels = calloc(n + 1, sizeof *f.labels);
    f.lbuf = calloc(n + 1, sizeof *f.lbuf);
    unsigned maxdepth = 0;
    int rc = -1;
    if (!f.incl || !f.kids || !f.start || !f.labels || !f.lbuf || flame_prepare(&f, &maxdepth))
        goto out;
    if (o->colors == SP_FLAME_COLORS_STATE && flame_states(&f)) goto out;
    for (uint32_t k = f.start[n]; k < f.start[n + 1]; k++)
        f.total += f.incl[f.kids[k]];
    f.height = FLAME_TOP + FLAME_BOTTOM + (maxdepth + 1) * FLAME_ROW;
    f.scale = f.total ? (double)(o->width - 20) / (double)f.total : 0;
    flame_header(&f);
    double x = 0;
    for (uint32_t k = f.start[n]; k < f.start[n + 1]; k++) {
        flame_rect(&f, f.kids[k], x, 0);
        x += (double)f.incl[f.kids[k]] * f.scale;
    }
    sp_buf_printf(out, "</svg>\n");
    rc = out->oom ? -1 : 0;
out:
    free(f.incl);
    free(f.kids);
    free(f.start);
    free(f.labels);
    free(f.lbuf);
    free(f.nodes);
    free(f.state);
    return rc;
}
