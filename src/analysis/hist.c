/* SPDX-License-Identifier: MIT */
/*
 * hist.c - PC histogram SVG (see hist.h).
 *
 * Steps: collect and sort the sampled PCs (weighted), choose segments (zoom range, symbol,
 * or gap-split), bin each segment, then draw bars, the cumulative line, axis labels and the
 * names of the hottest bins.
 */
#include "hist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"

#define HIST_GAP (16ull << 20)
#define HIST_MAXSEG 16
#define HIST_LABELS_MAX 32

void sp_hist_opts_default(SpHistOpts *o) {
    memset(o, 0, sizeof *o);
    o->bins = 200;
    o->width = 1200;
    o->height = 500;
    o->labels = 8;
}

const char *sp_pc_name(const SpProfile *p, uint64_t pc, char *buf, size_t len) {
    uint32_t s = sp_symbol_find(p, pc);
    if (s != SP_NONE) {
        const char *nm = sp_str(p, p->symbols[s].name); /* a display label: cut whole chars */
        snprintf(buf, len, "%.*s", (int)sp_utf8_prefix(nm, len - 1), nm);
        return buf;
    }
    for (uint32_t f = 0; f < p->nframes; f++) {
        const SpFrame *fr = &p->frames[f];
        if (fr->addr && fr->size && pc >= fr->addr && pc - fr->addr < fr->size)
            return sp_frame_label(p, f, buf, len);
    }
    snprintf(buf, len, "0x%llx", (unsigned long long)pc);
    return buf;
}

typedef struct {
    uint64_t pc, w;
} Pcw;

static int cmp_pc(const void *a, const void *b) {
    uint64_t x = ((const Pcw *)a)->pc, y = ((const Pcw *)b)->pc;
    return x < y ? -1 : x > y;
}

typedef struct {
    uint64_t lo, hi; /* [lo, hi) */
} Seg;

/* Finds the zoom range of a symbol; 0 on success. */
static int hist_symbol_range(const SpProfile *p, const char *name, Seg *s) {
    char buf[512];
    for (uint32_t i = 0; i < p->nsymbols; i++)
        if (strcmp(sp_str(p, p->symbols[i].name), name) == 0) {
            s->lo = p->symbols[i].addr;
            uint64_t sz = p->symbols[i].size ? p->symbols[i].size : 1;
            s->hi = s->lo > UINT64_MAX - sz ? UINT64_MAX : s->lo + sz;
            return 0;
        }
    for (uint32_t f = 0; f < p->nframes; f++)
        if (p->frames[f].addr && p->frames[f].size &&
            strcmp(sp_frame_label(p, f, buf, sizeof buf), name) == 0) {
            s->lo = p->frames[f].addr;
            s->hi = s->lo > UINT64_MAX - p->frames[f].size ? UINT64_MAX : s->lo + p->frames[f].size;
            return 0;
        }
    return -1;
}

/* Segments of the sorted PCs split at big gaps (merging the smallest gaps past the max). */
static unsigned hist_auto_segments(const Pcw *v, size_t n, Seg *seg) {
    unsigned ns = 0;
    for (size_t i = 0; i < n; i++) {
        if (ns && (v[i].pc < seg[ns - 1].hi || v[i].pc - seg[ns - 1].hi < HIST_GAP)) {
            seg[ns - 1].hi = v[i].pc < UINT64_MAX ? v[i].pc + 1 : UINT64_MAX;
            continue;
        }
        if (ns == HIST_MAXSEG) { /* too many: extend the last one */
            seg[ns - 1].hi = v[i].pc < UINT64_MAX ? v[i].pc + 1 : UINT64_MAX;
            continue;
        }
        seg[ns++] = (Seg){v[i].pc, v[i].pc < UINT64_MAX ? v[i].pc + 1 : UINT64_MAX};
    }
    for (unsigned i = 0; i < ns; i++) { /* pad so edge bins are not clipped */
        uint64_t pad = (seg[i].hi - seg[i].lo) / 50 + 16;
        seg[i].lo = seg[i].lo > pad ? seg[i].lo - pad : 0;
        seg[i].hi = seg[i].hi > UINT64_MAX - pad ? UINT64_MAX : seg[i].hi + pad;
    }
    return ns;
}

typedef struct {
    uint64_t lo, hi; /* [lo, hi) */
    uint32_t name;   /* string id */
} HSym;

typedef struct {
    const SpProfile *p;
    const SpHistOpts *o;
    SpBuf *out;
    Seg seg[HIST_MAXSEG];
    unsigned nseg, bins_per_seg, nbins;
    uint64_t *count; /* per bin */
    uint64_t total, max;
    const Pcw *v; /* all sampled PCs, sorted */
    size_t nv;
    HSym *syms; /* symbols and sized frames, sorted by address */
    uint32_t nsyms;
    double plot_x, plot_y, plot_w, plot_h;
} Hist;

static uint64_t bin_lo(const Hist *h, unsigned b) {
    const Seg *s = &h->seg[b / h->bins_per_seg];
    unsigned k = b % h->bins_per_seg;
    return s->lo + (uint64_t)((double)(s->hi - s->lo) * k / h->bins_per_seg);
}

static void hist_fill(Hist *h, const Pcw *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        for (unsigned s = 0; s < h->nseg; s++) {
            const Seg *g = &h->seg[s];
            if (v[i].pc < g->lo || v[i].pc >= g->hi || g->hi <= g->lo) continue;
            unsigned k =
                (unsigned)((double)(v[i].pc - g->lo) / (double)(g->hi - g->lo) * h->bins_per_seg);
            if (k >= h->bins_per_seg) k = h->bins_per_seg - 1;
            /* agree exactly with bin_lo()'s integer boundaries despite float rounding */
            unsigned base = s * h->bins_per_seg;
            while (k + 1 < h->bins_per_seg && bin_lo(h, base + k + 1) <= v[i].pc)
                k++;
            while (k > 0 && bin_lo(h, base + k) > v[i].pc)
                k--;
            h->count[s * h->bins_per_seg + k] += v[i].w;
            h->total += v[i].w;
            break;
        }
    for (unsigned b = 0; b < h->nbins; b++)
        if (h->count[b] > h->max) h->max = h->count[b];
}

static void hist_axes(Hist *h) {
    SpBuf *o = h->out;
    char name[256];
    sp_buf_printf(o,
                  "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                  "stroke=\"#888\"/>\n",
                  h->plot_x, h->plot_y, h->plot_w, h->plot_h);
    double segw = h->plot_w / h->nseg, yb = h->plot_y + h->plot_h;
    for (unsigned s = 0; s < h->nseg; s++) {
        double x = h->plot_x + s * segw;
        uint32_t m = sp_mapping_find(h->p, h->seg[s].lo + (h->seg[s].hi - h->seg[s].lo) / 2);
        const char *mod = m == SP_NONE ? "" : sp_str(h->p, h->p->mappings[m].path);
        const char *base = strrchr(mod, '/');
        base = base ? base + 1 : mod;
        snprintf(name, sizeof name, "%.*s", (int)sp_utf8_prefix(base, sizeof name - 1), base);
        if (s)
            sp_buf_printf(h->out,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                          "stroke=\"#888\" stroke-dasharray=\"4,3\"/>\n",
                          x, h->plot_y, x, yb);
        sp_buf_printf(o, "<text x=\"%.1f\" y=\"%.1f\">0x%llx</text>\n", x + 2, yb + 14,
                      (unsigned long long)h->seg[s].lo);
        sp_buf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">0x%llx</text>\n",
                      x + segw - 2, yb + 28, (unsigned long long)h->seg[s].hi);
        if (*name) {
            sp_buf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555\">",
                          x + segw / 2, yb + 42);
            sp_xml_text(o, name);
            sp_buf_printf(o, "</text>\n");
        }
    }
    sp_buf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%llu</text>\n", h->plot_x - 4,
                  h->plot_y + 10, (unsigned long long)h->max);
    sp_buf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">0</text>\n", h->plot_x - 4,
                  yb);
    sp_buf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#c00\">100%%</text>\n",
                  h->plot_x + h->plot_w + 4, h->plot_y + 10);
    sp_buf_printf(o, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#c00\">0%%</text>\n",
                  h->plot_x + h->plot_w + 4, yb);
}

static void hist_bars_and_line(Hist *h) {
    double bw = h->plot_w / h->nbins, yb = h->plot_y + h->plot_h;
    uint64_t cum = 0;
    for (unsigned b = 0; b < h->nbins; b++) {
        if (!h->count[b]) continue;
        double bh = h->plot_h * (double)h->count[b] / (double)h->max;
        sp_buf_printf(h->out,
                      "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                      "fill=\"#3b6fb6\"><title>0x%llx: %llu</title></rect>\n",
                      h->plot_x + b * bw, yb - bh, bw > 1.5 ? bw - 0.5 : bw, bh,
                      (unsigned long long)bin_lo(h, b), (unsigned long long)h->count[b]);
    }
    sp_buf_printf(h->out, "<polyline fill=\"none\" stroke=\"#c00\" stroke-width=\"1.5\" points=\"");
    for (unsigned b = 0; b < h->nbins; b++) {
        double y0 = yb - h->plot_h * (double)cum / (double)h->total;
        cum += h->count[b];
        double y1 = yb - h->plot_h * (double)cum / (double)h->total;
        sp_buf_printf(h->out, "%.2f,%.2f %.2f,%.2f ", h->plot_x + b * bw, y0,
                      h->plot_x + (b + 1) * bw, y1);
    }
    sp_buf_printf(h->out, "\"/>\n");
}

typedef struct {
    unsigned bin;
    char name[200];
    double pct;
} HistLabel;

static int cmp_hsym(const void *a, const void *b) {
    const HSym *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : (x->hi < y->hi) - (x->hi > y->hi);
}

/* Symbol table for naming: the profile's symbols, plus native/JIT/label frames with a size. */
static int hist_symbols(Hist *h) {
    const SpProfile *p = h->p;
    h->syms = malloc(((size_t)p->nsymbols + p->nframes + 1) * sizeof *h->syms);
    if (!h->syms) return -1;
    h->nsyms = 0;
    for (uint32_t i = 0; i < p->nsymbols; i++) {
        const SpSymbol *s = &p->symbols[i];
        uint64_t sz = s->size ? s->size : 1;
        h->syms[h->nsyms++] =
            (HSym){s->addr, s->addr > UINT64_MAX - sz ? UINT64_MAX : s->addr + sz, s->name};
    }
    for (uint32_t f = 0; f < p->nframes; f++) {
        const SpFrame *fr = &p->frames[f];
        if (fr->addr && fr->size && fr->name && fr->kind != SP_FRAME_VM_METHOD)
            h->syms[h->nsyms++] = (HSym){
                fr->addr, fr->addr > UINT64_MAX - fr->size ? UINT64_MAX : fr->addr + fr->size,
                fr->name};
    }
    if (h->nsyms) qsort(h->syms, h->nsyms, sizeof *h->syms, cmp_hsym);
    return 0;
}

/* Index of the symbol containing pc (the innermost-starting one), or UINT32_MAX. */
static uint32_t hist_sym_find(const Hist *h, uint64_t pc) {
    uint32_t lo = 0, hi = h->nsyms; /* first symbol starting above pc */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (h->syms[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint32_t k = 0; k < 16 && lo > k; k++)
        if (pc < h->syms[lo - 1 - k].hi) return lo - 1 - k;
    return UINT32_MAX;
}

/* First sampled PC >= pc. */
static size_t hist_lower(const Hist *h, uint64_t pc) {
    size_t lo = 0, hi = h->nv;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->v[mid].pc < pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int hist_in_view(const Hist *h, uint64_t pc) {
    for (unsigned s = 0; s < h->nseg; s++)
        if (pc >= h->seg[s].lo && pc < h->seg[s].hi) return 1;
    return 0;
}

static uint64_t bin_hi(const Hist *h, unsigned b) {
    return (b + 1) % h->bins_per_seg ? bin_lo(h, b + 1) : h->seg[b / h->bins_per_seg].hi;
}

/* The symbol holding most of bin b's samples, or UINT32_MAX if most are unnamed. */
static uint32_t hist_bin_symbol(const Hist *h, unsigned b) {
    uint32_t sym[32];
    uint64_t w[32], none = 0;
    unsigned n = 0;
    for (size_t i = hist_lower(h, bin_lo(h, b)); i < h->nv && h->v[i].pc < bin_hi(h, b); i++) {
        uint32_t s = hist_sym_find(h, h->v[i].pc);
        if (s == UINT32_MAX) {
            none += h->v[i].w;
            continue;
        }
        unsigned k = 0;
        while (k < n && h->syms[sym[k]].name != h->syms[s].name)
            k++;
        if (k == n && n < 32) sym[n] = s, w[n++] = 0;
        if (k < n) w[k] += h->v[i].w;
    }
    unsigned best = n;
    for (unsigned k = 0; k < n; k++)
        if (best == n || w[k] > w[best]) best = k;
    return best == n || w[best] < none ? UINT32_MAX : sym[best];
}

/* Sum of the weights of PCs in view inside [lo, hi). */
static uint64_t hist_weight_in(const Hist *h, uint64_t lo, uint64_t hi) {
    uint64_t sum = 0;
    for (size_t i = hist_lower(h, lo); i < h->nv && h->v[i].pc < hi; i++)
        if (hist_in_view(h, h->v[i].pc)) sum += h->v[i].w;
    return sum;
}

/* Picks the hottest bins and names each by the symbol holding most of its samples; a
 * symbol's share counts its own sampled PCs exactly (not whole bins).  Each symbol is listed
 * once; unnamed bins show their address and their own share. */
static unsigned hist_pick_labels(Hist *h, HistLabel *lab, unsigned max) {
    unsigned char *used = calloc(h->nbins, 1);
    uint32_t done[HIST_LABELS_MAX];
    unsigned n = 0, ndone = 0;
    if (!used) return 0;
    while (n < max) {
        unsigned best = h->nbins;
        for (unsigned b = 0; b < h->nbins; b++)
            if (!used[b] && h->count[b] && (best == h->nbins || h->count[b] > h->count[best]))
                best = b;
        if (best == h->nbins) break;
        used[best] = 1;
        uint32_t s = hist_bin_symbol(h, best);
        if (s != UINT32_MAX) {
            unsigned k = 0;
            while (k < ndone && done[k] != h->syms[s].name)
                k++;
            if (k < ndone) continue; /* already listed through a hotter bin */
            done[ndone++] = h->syms[s].name;
            for (unsigned b = 0; b < h->nbins; b++) /* bins inside the symbol need no label */
                if (bin_lo(h, b) >= h->syms[s].lo && bin_hi(h, b) <= h->syms[s].hi) used[b] = 1;
        }
        HistLabel *l = &lab[n++];
        l->bin = best;
        uint64_t w =
            s == UINT32_MAX ? h->count[best] : hist_weight_in(h, h->syms[s].lo, h->syms[s].hi);
        const char *nm = s == UINT32_MAX ? NULL : sp_str(h->p, h->syms[s].name);
        if (!nm)
            snprintf(l->name, sizeof l->name, "0x%llx", (unsigned long long)bin_lo(h, best));
        else /* a display label: whole UTF-8 characters only */
            snprintf(l->name, sizeof l->name, "%.*s", (int)sp_utf8_prefix(nm, sizeof l->name - 1),
                     nm);
        l->pct = 100.0 * (double)w / (double)h->total;
    }
    free(used);
    return n;
}

/* Numbered markers above the labelled bars (stacked when close) and a legend under the
 * axis: "N name share%", two columns. */
static void hist_labels(Hist *h, const HistLabel *lab, unsigned n) {
    double bw = h->plot_w / h->nbins, yb = h->plot_y + h->plot_h, placed[HIST_LABELS_MAX][2];
    for (unsigned i = 0; i < n; i++) {
        double x = h->plot_x + (lab[i].bin + 0.5) * bw;
        double y = yb - h->plot_h * (double)h->count[lab[i].bin] / (double)h->max - 3;
        for (int moved = 1, guard = 0; moved && guard < 32; guard++) {
            moved = 0;
            for (unsigned k = 0; k < i; k++)
                if (x - placed[k][0] < 12 && placed[k][0] - x < 12 && y - placed[k][1] < 11 &&
                    placed[k][1] - y < 11)
                    y = placed[k][1] - 11, moved = 1;
        }
        if (y < h->plot_y - 8) y = h->plot_y - 8;
        placed[i][0] = x, placed[i][1] = y;
        sp_buf_printf(h->out,
                      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                      "style=\"font-size:10px;font-weight:bold\">%u</text>\n",
                      x, y, i + 1);
        double lx = h->plot_x + (i % 2) * h->plot_w / 2, ly = yb + 62 + (i / 2) * 15;
        sp_buf_printf(h->out,
                      "<text x=\"%.1f\" y=\"%.1f\"><tspan style=\"font-weight:bold\">"
                      "%u</tspan>  ",
                      lx, ly, i + 1);
        sp_xml_text(h->out, lab[i].name);
        sp_buf_printf(h->out, "  %.1f%%</text>\n", lab[i].pct);
    }
}

static int hist_collect(const SpProfile *p, Pcw **out, size_t *n) {
    Pcw *v = malloc((p->nsamples ? p->nsamples : 1) * sizeof *v);
    size_t k = 0;
    if (!v) return -1;
    for (uint32_t i = 0; i < p->nsamples; i++)
        if (p->samples[i].pc) v[k++] = (Pcw){p->samples[i].pc, p->samples[i].weight};
    if (k) qsort(v, k, sizeof *v, cmp_pc);
    *out = v, *n = k;
    return 0;
}

int sp_hist_svg(const SpProfile *p, const SpHistOpts *o, SpBuf *out, char *err, size_t errlen) {
    Hist h = {.p = p, .o = o, .out = out};
    Pcw *v = NULL;
    size_t n = 0;
    int rc = -1;
    if (hist_collect(p, &v, &n)) return -1;
    if (o->symbol) {
        if (hist_symbol_range(p, o->symbol, &h.seg[0])) {
            snprintf(err, errlen, "unknown symbol '%s' (no symbol or sized frame has that name)",
                     o->symbol);
            rc = -2;
            goto out;
        }
        h.nseg = 1;
    } else if (o->hi > o->lo) {
        h.seg[0] = (Seg){o->lo, o->hi};
        h.nseg = 1;
    } else {
        h.nseg = hist_auto_segments(v, n, h.seg);
    }
    h.bins_per_seg = (o->bins ? o->bins : 200) / (h.nseg ? h.nseg : 1);
    if (h.bins_per_seg == 0) h.bins_per_seg = 1;
    h.nbins = h.bins_per_seg * h.nseg;
    h.count = calloc(h.nbins ? h.nbins : 1, sizeof *h.count);
    h.v = v, h.nv = n;
    if (!h.count || hist_symbols(&h)) goto out;
    hist_fill(&h, v, n);
    if (!h.total) {
        snprintf(err, errlen, "no sampled PCs in the selected address range");
        rc = -2;
        goto out;
    }
    HistLabel lab[HIST_LABELS_MAX];
    unsigned nlab =
        hist_pick_labels(&h, lab, o->labels < HIST_LABELS_MAX ? o->labels : HIST_LABELS_MAX);
    unsigned height = o->height + (nlab + 1) / 2 * 15;
    h.plot_x = 70, h.plot_y = 50, h.plot_w = o->width - 130.0, h.plot_h = o->height - 110.0;
    sp_buf_printf(out,
                  "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" "
                  "width=\"%u\" height=\"%u\" xmlns=\"http://www.w3.org/2000/svg\">\n"
                  "<style>text{font-family:Verdana,sans-serif;font-size:11px}</style>\n"
                  "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
                  "<text x=\"%u\" y=\"24\" text-anchor=\"middle\" style=\"font-size:16px\">"
                  "PC histogram: %llu samples, %u bins",
                  o->width, height, o->width / 2, (unsigned long long)h.total, h.nbins);
    if (o->symbol) {
        sp_buf_printf(out, ", symbol ");
        sp_xml_text(out, o->symbol);
    }
    sp_buf_printf(out, " (bars: samples per bin; red: cumulative)</text>\n");
    hist_axes(&h);
    hist_bars_and_line(&h);
    hist_labels(&h, lab, nlab);
    sp_buf_printf(out, "</svg>\n");
    rc = out->oom ? -1 : 0;
out:
    free(v);
    free(h.count);
    free(h.syms);
    return rc;
}
