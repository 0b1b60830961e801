/* SPDX-License-Identifier: MIT */
/*
 * timeline.c - samples-over-time and interval-over-time SVG (see timeline.h).
 */
#include "timeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"

#define TL_SERIES 9 /* 8 threads + other */

void sp_timeline_opts_default(SpTimelineOpts *o) {
    o->buckets = 100;
    o->width = 1200;
    o->height = 480;
}

static const char *const tl_colors[TL_SERIES] = {"#3b6fb6", "#e08a2e", "#4a9e4a",
                                                 "#b64a4a", "#8a5ab6", "#8c6a4a",
                                                 "#d27ab6", "#7a7a7a", "#c8c83a"};

typedef struct {
    const SpProfile *p;
    SpBuf *out;
    uint64_t t0, t1;            /* time range shown */
    unsigned nb;                /* buckets */
    uint32_t series[TL_SERIES]; /* thread index per series, SP_NONE = other / unused */
    unsigned nseries;
    uint64_t *count; /* nb x TL_SERIES */
    uint64_t max_stack;
    double px, py, pw, ph;
} Tl;

static const uint64_t *g_tw; /* qsort context */

static int cmp_thread_weight(const void *a, const void *b) {
    uint64_t x = g_tw[*(const uint32_t *)a], y = g_tw[*(const uint32_t *)b];
    if (x != y) return x < y ? 1 : -1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Chooses the busiest threads as series; returns -1 on ENOMEM. */
static int tl_series(Tl *t) {
    const SpProfile *p = t->p;
    uint64_t *w = calloc(p->nthreads + 1, sizeof *w);
    uint32_t *ord = calloc(p->nthreads + 1, sizeof *ord);
    if (!w || !ord) {
        free(w), free(ord);
        return -1;
    }
    for (uint32_t i = 0; i < p->nsamples; i++)
        w[p->samples[i].thread] += p->samples[i].weight;
    for (uint32_t i = 0; i < p->nthreads; i++)
        ord[i] = i;
    g_tw = w;
    if (p->nthreads) qsort(ord, p->nthreads, sizeof *ord, cmp_thread_weight);
    t->nseries = 0;
    for (uint32_t i = 0; i < p->nthreads && t->nseries < TL_SERIES - 1; i++)
        if (w[ord[i]]) t->series[t->nseries++] = ord[i];
    if (p->nthreads > t->nseries) t->series[t->nseries++] = SP_NONE; /* "other" */
    free(w);
    free(ord);
    return 0;
}

static unsigned tl_series_of(const Tl *t, uint32_t thread) {
    for (unsigned s = 0; s < t->nseries; s++)
        if (t->series[s] == thread) return s;
    return t->nseries - 1; /* other */
}

static void tl_fill(Tl *t) {
    const SpProfile *p = t->p;
    double span = (double)(t->t1 - t->t0);
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const SpSample *s = &p->samples[i];
        unsigned b = span > 0 ? (unsigned)((double)(s->time_ns - t->t0) / span * t->nb) : 0;
        if (b >= t->nb) b = t->nb - 1;
        t->count[b * TL_SERIES + tl_series_of(t, s->thread)] += s->weight;
    }
    for (unsigned b = 0; b < t->nb; b++) {
        uint64_t sum = 0;
        for (unsigned s = 0; s < TL_SERIES; s++)
            sum += t->count[b * TL_SERIES + s];
        if (sum > t->max_stack) t->max_stack = sum;
    }
}

static void tl_bars(Tl *t) {
    double bw = t->pw / t->nb, yb = t->py + t->ph;
    for (unsigned b = 0; b < t->nb; b++) {
        double y = yb;
        for (unsigned s = 0; s < t->nseries; s++) {
            uint64_t c = t->count[b * TL_SERIES + s];
            if (!c) continue;
            double h = t->ph * (double)c / (double)t->max_stack;
            y -= h;
            sp_buf_printf(t->out,
                          "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                          "fill=\"%s\"/>\n",
                          t->px + b * bw, y, bw > 1.5 ? bw - 0.5 : bw, h, tl_colors[s]);
        }
    }
}

/* Initial interval: meta interval_initial_ns, else 1e9 / requested rate, else 0 (unknown). */
static double tl_initial_interval(const SpProfile *p) {
    const char *v = sp_meta_get(p, "interval_initial_ns");
    if (v && strtod(v, NULL) > 0) return strtod(v, NULL);
    static const char *const hz[] = {"hz_requested", "requested_hz"};
    for (int i = 0; i < 2; i++) {
        v = sp_meta_get(p, hz[i]);
        if (v && strtod(v, NULL) > 0) return 1e9 / strtod(v, NULL);
    }
    for (uint32_t i = 0; i < p->nevents; i++)
        if (p->events[i].kind == SP_EVENT_RATE_CHANGE && p->events[i].a > 0)
            return (double)p->events[i].a;
    return 0;
}

static double tl_x(const Tl *t, uint64_t time) {
    double span = (double)(t->t1 - t->t0);
    double f = span > 0 ? (double)(time < t->t0 ? 0 : time - t->t0) / span : 0;
    return t->px + (f > 1 ? 1 : f) * t->pw;
}

/* Step line of the interval on a log axis spanning [lo, hi] (decades). */
static void tl_interval(Tl *t) {
    const SpProfile *p = t->p;
    double iv = tl_initial_interval(p), lo = iv, hi = iv;
    if (iv <= 0) return;
    for (uint32_t i = 0; i < p->nevents; i++)
        if (p->events[i].kind == SP_EVENT_RATE_CHANGE && p->events[i].b > 0) {
            double b = (double)p->events[i].b;
            lo = b < lo ? b : lo, hi = b > hi ? b : hi;
        }
    double llo = floor(log10(lo) - 0.3),
           lhi = ceil(log10(hi) + 0.3); /* keep the line off the edges */
    if (lhi <= llo) lhi = llo + 1;
#define TL_Y(v) (t->py + t->ph * (1 - (log10(v) - llo) / (lhi - llo)))
    sp_buf_printf(t->out, "<polyline fill=\"none\" stroke=\"#c00\" stroke-width=\"2\" points=\"");
    double x = t->px, y = TL_Y(iv);
    sp_buf_printf(t->out, "%.2f,%.2f ", x, y);
    for (uint32_t i = 0; i < p->nevents; i++) {
        const SpEvent *e = &p->events[i];
        if (e->kind != SP_EVENT_RATE_CHANGE || e->b <= 0) continue;
        x = tl_x(t, e->time_ns);
        sp_buf_printf(t->out, "%.2f,%.2f %.2f,%.2f ", x, y, x, TL_Y((double)e->b));
        y = TL_Y((double)e->b);
    }
    sp_buf_printf(t->out, "%.2f,%.2f\"/>\n", t->px + t->pw, y);
    for (double d = llo; d <= lhi; d++) {
        double v = pow(10, d);
        sp_buf_printf(t->out, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#c00\">", t->px + t->pw + 4,
                      TL_Y(v) + 4);
        if (v >= 1e6)
            sp_buf_printf(t->out, "%g ms</text>\n", v / 1e6);
        else
            sp_buf_printf(t->out, "%g us</text>\n", v / 1e3);
    }
#undef TL_Y
}

static void tl_events(Tl *t) {
    for (uint32_t i = 0; i < t->p->nevents; i++) {
        const SpEvent *e = &t->p->events[i];
        const char *col = e->kind == SP_EVENT_PAUSE     ? "#555"
                          : e->kind == SP_EVENT_RESUME  ? "#3a3"
                          : e->kind == SP_EVENT_DROPPED ? "#f0f"
                                                        : NULL;
        if (!col) continue;
        double x = tl_x(t, e->time_ns);
        sp_buf_printf(t->out,
                      "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"%s\" "
                      "stroke-dasharray=\"3,3\"><title>%s</title></line>\n",
                      x, t->py, x, t->py + t->ph, col, sp_event_kind_name(e->kind));
    }
}

static void tl_frame(Tl *t) {
    const SpProfile *p = t->p;
    double yb = t->py + t->ph;
    sp_buf_printf(t->out,
                  "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                  "fill=\"none\" stroke=\"#888\"/>\n",
                  t->px, t->py, t->pw, t->ph);
    sp_buf_printf(t->out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%llu</text>\n",
                  t->px - 4, t->py + 10, (unsigned long long)t->max_stack);
    sp_buf_printf(t->out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">0</text>\n", t->px - 4,
                  yb);
    for (int k = 0; k <= 4; k++) {
        uint64_t tm = t->t0 + (t->t1 - t->t0) / 4 * (uint64_t)k; /* integer: no overflow */
        sp_buf_printf(t->out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.3f s</text>\n",
                      t->px + t->pw * k / 4, yb + 16, (double)tm / 1e9);
    }
    for (unsigned s = 0; s < t->nseries; s++) {
        double lx = t->px + (s % 4) * t->pw / 4, ly = yb + 40 + (s / 4) * 15;
        sp_buf_printf(t->out,
                      "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                      "<text x=\"%.1f\" y=\"%.1f\">",
                      lx, ly - 9, tl_colors[s], lx + 14, ly);
        if (t->series[s] == SP_NONE)
            sp_buf_printf(t->out, "other threads");
        else {
            const SpThread *th = &p->threads[t->series[s]];
            sp_buf_printf(t->out, "tid %llu ", (unsigned long long)th->tid);
            sp_xml_text(t->out, sp_str(p, th->name));
        }
        sp_buf_printf(t->out, "</text>\n");
    }
}

int sp_timeline_svg(const SpProfile *p, const SpTimelineOpts *o, SpBuf *out, char *err,
                    size_t errlen) {
    Tl t = {.p = p, .out = out, .nb = o->buckets ? o->buckets : 100};
    if (p->flavour == SP_FLAVOUR_EXACT) { /* its samples are contexts with counts, not times */
        snprintf(err, errlen,
                 "an exact profile counts invocations per calling context and has no samples "
                 "over time, so there is no timeline to draw (use sampo report or sampo flame)");
        return -2;
    }
    if (!p->nsamples && !p->nevents) {
        snprintf(err, errlen, "the profile has no samples and no events to plot");
        return -2;
    }
    t.t0 = UINT64_MAX;
    for (uint32_t i = 0; i < p->nsamples; i++) {
        uint64_t tm = p->samples[i].time_ns;
        t.t0 = tm < t.t0 ? tm : t.t0, t.t1 = tm > t.t1 ? tm : t.t1;
    }
    for (uint32_t i = 0; i < p->nevents; i++) {
        uint64_t tm = p->events[i].time_ns;
        t.t0 = tm < t.t0 ? tm : t.t0, t.t1 = tm > t.t1 ? tm : t.t1;
    }
    if (t.t1 < UINT64_MAX) t.t1 += 1;
    t.count = calloc((size_t)t.nb * TL_SERIES, sizeof *t.count);
    if (!t.count || tl_series(&t)) {
        free(t.count);
        return -1;
    }
    tl_fill(&t);
    if (!t.max_stack) t.max_stack = 1;
    unsigned height = o->height + (t.nseries + 3) / 4 * 15;
    t.px = 70, t.py = 50, t.pw = o->width - 150.0, t.ph = o->height - 110.0;
    sp_buf_printf(out,
                  "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" "
                  "width=\"%u\" height=\"%u\" xmlns=\"http://www.w3.org/2000/svg\">\n"
                  "<style>text{font-family:Verdana,sans-serif;font-size:11px}</style>\n"
                  "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
                  "<text x=\"%u\" y=\"24\" text-anchor=\"middle\" style=\"font-size:16px\">"
                  "Timeline: samples per %.1f ms by thread; red: sampling interval (log)"
                  "</text>\n",
                  o->width, height, o->width / 2, (double)(t.t1 - t.t0) / t.nb / 1e6);
    tl_bars(&t);
    tl_frame(&t);
    tl_interval(&t);
    tl_events(&t);
    sp_buf_printf(out, "</svg>\n");
    free(t.count);
    return out->oom ? -1 : 0;
}
