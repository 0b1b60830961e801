/* SPDX-License-Identifier: MIT */
/*
 * report.c - text report (see report.h).  Each section is one function appending to the
 * output buffer; sorting is by weight descending, then by name, so the output is stable.
 */
#include "report.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "u64map.h"

void sp_report_opts_default(SpReportOpts *o) {
    o->site_line = NULL;
    o->site_ctx = NULL;
    o->limit = 25;
    o->tree_min = 1.0;
    o->tree_depth = 0;
    o->sections = 0;
    o->sort_total = 0;
    o->min_pct = 0;
    o->lines = 0;
    o->linefn = NULL;
    o->linectx = NULL;
}

static double pct(uint64_t v, uint64_t total) {
    return total ? 100.0 * (double)v / (double)total : 0;
}

/* Total weight of the profile: samples if any, else the context tree's self weights. */
static uint64_t report_total(const SpProfile *p) {
    if (p->nsamples) return sp_total_weight(p);
    uint64_t t = 0;
    for (uint32_t i = 0; i < p->cc.nnodes; i++)
        t += p->cc.nodes[i].self;
    return t;
}

/* Name of the weights in headers: samples, calls or nanoseconds. */
static const char *report_unit(const SpProfile *p) {
    SpUnit u = sp_weight_unit(p);
    return u == SP_UNIT_CALLS ? "calls" : u == SP_UNIT_NANOS ? "nanoseconds" : "samples";
}

/* Metadata shown first, in this order; aliases are the engine's spellings. */
static const char *const summary_keys[] = {"command",
                                           "cmdline",
                                           "trigger",
                                           "trigger_reason",
                                           "trigger_skipped",
                                           "mode",
                                           "requested_hz",
                                           "hz_requested",
                                           "delivered_hz",
                                           "hz_delivered",
                                           "interval_initial_ns",
                                           "interval_ns",
                                           "samples_dropped",
                                           "dropped",
                                           "duration_ns",
                                           "pid"};

static int summary_known(const char *k) {
    for (size_t j = 0; j < sizeof summary_keys / sizeof *summary_keys; j++)
        if (strcmp(k, summary_keys[j]) == 0) return 1;
    return 0;
}

static void report_summary(const SpProfile *p, SpBuf *out, uint64_t total) {
    int exact = p->flavour == SP_FLAVOUR_EXACT;
    SpUnit u = sp_weight_unit(p);
    sp_buf_printf(out, "# sampo profile: %s, %u samples, total weight %llu (%s), %u threads\n",
                  exact ? "exact (invocation counts)" : "sampled", p->nsamples,
                  (unsigned long long)total, exact ? "invocations" : report_unit(p), p->nthreads);
    if (u == SP_UNIT_SAMPLES && p->nsamples) { /* what pprof's cpu/wall value shows */
        uint64_t ns = 0, iv = sp_interval_ns(p);
        for (uint32_t i = 0; i < p->nsamples; i++)
            ns += sp_sample_ns(p, &p->samples[i], iv);
        sp_buf_printf(out, "# %-16s %s, %.3f ms (samples x interval in force)\n", "weight",
                      sp_time_kind(p), (double)ns / 1e6);
    }
    for (size_t i = 0; i < sizeof summary_keys / sizeof *summary_keys; i++) {
        const char *v = sp_meta_get(p, summary_keys[i]);
        if (v) sp_buf_printf(out, "# %-16s %s\n", summary_keys[i], v);
    }
    const char *dur = sp_meta_get(p, "duration_ns");
    double secs = dur ? strtod(dur, NULL) / 1e9 : 0;
    if (secs > 0 && p->nsamples)
        sp_buf_printf(out, "# %-16s %.1f samples/s over %.3f s (all threads)\n", "delivered",
                      (double)p->nsamples / secs, secs);
    if (!exact && !sp_meta_get(p, "samples_dropped") && !sp_meta_get(p, "dropped"))
        sp_buf_printf(out, "# %-16s %s\n", "samples_dropped", "unknown (not recorded)");
    for (uint32_t i = 0; i < p->nmeta; i++) {
        const char *k = sp_str(p, p->meta[i].key);
        if (!summary_known(k)) sp_buf_printf(out, "# %-16s %s\n", k, sp_str(p, p->meta[i].value));
    }
    sp_buf_u8(out, '\n');
}

static const SpCcMethod *g_methods; /* qsort context (report is not re-entrant) */
static const SpProfile *g_prof;

static int cmp_method_self(const void *a, const void *b) {
    const SpCcMethod *x = &g_methods[*(const uint32_t *)a], *y = &g_methods[*(const uint32_t *)b];
    if (x->self != y->self) return x->self < y->self ? 1 : -1;
    if (x->total != y->total) return x->total < y->total ? 1 : -1;
    char n1[256], n2[256];
    return strcmp(sp_frame_label(g_prof, x->frame, n1, sizeof n1),
                  sp_frame_label(g_prof, y->frame, n2, sizeof n2));
}

static int cmp_method_total(const void *a, const void *b) {
    const SpCcMethod *x = &g_methods[*(const uint32_t *)a], *y = &g_methods[*(const uint32_t *)b];
    if (x->total != y->total) return x->total < y->total ? 1 : -1;
    if (x->self != y->self) return x->self < y->self ? 1 : -1;
    char n1[256], n2[256];
    return strcmp(sp_frame_label(g_prof, x->frame, n1, sizeof n1),
                  sp_frame_label(g_prof, y->frame, n2, sizeof n2));
}

static void report_flat(const SpProfile *p, const SpReportOpts *o, SpBuf *out, uint64_t total) {
    uint32_t n = p->cc.nmethods, *ord = malloc((n ? n : 1) * sizeof *ord);
    char name[512];
    if (!ord) {
        out->oom = 1;
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        ord[i] = i;
    g_methods = p->cc.methods, g_prof = p;
    if (n) qsort(ord, n, sizeof *ord, o->sort_total ? cmp_method_total : cmp_method_self);
    const char *unit = report_unit(p);
    sp_buf_printf(out, "## flat profile (%llu %s, by %s)\n", (unsigned long long)total, unit,
                  o->sort_total ? "total" : "self");
    sp_buf_printf(out, "%7s %7s %7s %10s %10s  %s\n", "self%", "cum%", "total%", "self", "total",
                  "name");
    double cum = 0;
    uint32_t shown = 0;
    for (uint32_t k = 0; k < n && (!o->limit || k < o->limit); k++) {
        const SpCcMethod *m = &p->cc.methods[ord[k]];
        if (pct(o->sort_total ? m->total : m->self, total) < o->min_pct) break;
        shown++;
        cum += pct(m->self, total);
        const char *mod = sp_str(p, p->frames[m->frame].module), *base = strrchr(mod, '/');
        base = base ? base + 1 : mod;
        sp_buf_printf(out, "%6.2f%% %6.2f%% %6.2f%% %10llu %10llu  %s%s%s%s\n", pct(m->self, total),
                      cum, pct(m->total, total), (unsigned long long)m->self,
                      (unsigned long long)m->total, sp_frame_label(p, m->frame, name, sizeof name),
                      *base ? " (" : "", base, *base ? ")" : "");
    }
    if (shown < n) sp_buf_printf(out, "... %u more\n", n - shown);
    sp_buf_u8(out, '\n');
    free(ord);
}

static int cmp_method_ns(const void *a, const void *b) {
    const SpCcMethod *x = &g_methods[*(const uint32_t *)a], *y = &g_methods[*(const uint32_t *)b];
    if (x->self_ns != y->self_ns) return x->self_ns < y->self_ns ? 1 : -1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Time-weighted view of exact profiles (only if the producer recorded times). */
static void report_time_view(const SpProfile *p, const SpReportOpts *o, SpBuf *out) {
    uint64_t tsum = 0;
    uint32_t n = p->cc.nmethods, *ord;
    char name[512];
    for (uint32_t i = 0; i < n; i++)
        tsum += p->cc.methods[i].self_ns;
    if (!tsum || !(ord = malloc(n * sizeof *ord))) return;
    for (uint32_t i = 0; i < n; i++)
        ord[i] = i;
    g_methods = p->cc.methods;
    if (n) qsort(ord, n, sizeof *ord, cmp_method_ns);
    sp_buf_printf(out, "## time-weighted view (self time)\n%7s %7s %14s %14s  %s\n", "self%",
                  "cum%", "self ns", "total ns", "name");
    double cum = 0;
    for (uint32_t k = 0; k < n && (!o->limit || k < o->limit); k++) {
        const SpCcMethod *m = &p->cc.methods[ord[k]];
        cum += pct(m->self_ns, tsum);
        sp_buf_printf(out, "%6.2f%% %6.2f%% %14llu %14llu  %s\n", pct(m->self_ns, tsum), cum,
                      (unsigned long long)m->self_ns, (unsigned long long)m->total_ns,
                      sp_frame_label(p, m->frame, name, sizeof name));
    }
    sp_buf_u8(out, '\n');
    free(ord);
}

/* A call site as method+position, with its source line when known: "Foo>>bar+12
 * (Foo.som:7)"; just "+12" when the caller is not known. */
static void print_site(const SpProfile *p, const SpReportOpts *o, SpBuf *out, uint32_t caller,
                       uint32_t callsite) {
    char name[512], line[512];
    if (caller == SP_NONE) {
        sp_buf_printf(out, "+%u", callsite);
        return;
    }
    sp_buf_printf(out, "%s+%u", sp_frame_label(p, caller, name, sizeof name), callsite);
    if (o->site_line && !o->site_line(o->site_ctx, p, caller, callsite, line, sizeof line))
        sp_buf_printf(out, " (%s)", line);
}

/* The call tree as shown: recursion folded.  A node whose frame already appears on its
 * calling path (direct or indirect recursion) re-enters the node shown for that ancestor (its
 * self weight is added there, its inclusive weight is already counted, and the node is marked
 * recursive) instead of opening a deeper level; its children continue under that node. */
typedef struct {
    uint32_t parent, frame, callsite, first_kid, next;
    uint64_t self, total;
    int recursive;
} FoldNode;

static const FoldNode *g_fold;

static int cmp_fold_total(const void *a, const void *b) {
    const FoldNode *x = &g_fold[*(const uint32_t *)a], *y = &g_fold[*(const uint32_t *)b];
    if (x->total != y->total) return x->total < y->total ? 1 : -1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static void fold_print(const SpProfile *p, const SpReportOpts *o, SpBuf *out, uint64_t total,
                       const FoldNode *f, uint32_t first, uint32_t depth) {
    uint32_t nk = 0, *ord;
    char name[512];
    for (uint32_t k = first; k != SP_NONE; k = f[k].next)
        nk++;
    if (!nk || (o->tree_depth && depth >= o->tree_depth) || depth > 200) return;
    if (!(ord = malloc(nk * sizeof *ord))) {
        out->oom = 1;
        return;
    }
    nk = 0;
    for (uint32_t k = first; k != SP_NONE; k = f[k].next)
        ord[nk++] = k;
    g_fold = f;
    if (nk) qsort(ord, nk, sizeof *ord, cmp_fold_total);
    for (uint32_t i = 0; i < nk; i++) {
        const FoldNode *n = &f[ord[i]];
        if (pct(n->total, total) < o->tree_min) continue;
        sp_buf_printf(out, "%6.2f%% %6.2f%% %*s%s", pct(n->total, total), pct(n->self, total),
                      (int)(2 * depth), "", sp_frame_label(p, n->frame, name, sizeof name));
        if (n->callsite) {
            sp_buf_printf(out, " @ ");
            print_site(p, o, out, n->parent == SP_NONE ? SP_NONE : f[n->parent].frame, n->callsite);
        }
        if (n->recursive) sp_buf_printf(out, " (recursive, folded)");
        sp_buf_u8(out, '\n');
        fold_print(p, o, out, total, f, n->first_kid, depth + 1);
    }
    free(ord);
}

static void report_tree(const SpProfile *p, const SpReportOpts *o, SpBuf *out, uint64_t total) {
    uint32_t n = p->cc.nnodes, nf = 0, roots = SP_NONE;
    uint32_t *kids = malloc((n + 1) * sizeof *kids), *start = calloc(n + 2, sizeof *start);
    uint32_t *fill = calloc(n + 1, sizeof *fill), *map = malloc((n + 1) * sizeof *map);
    uint32_t *queue = malloc((n + 1) * sizeof *queue);
    FoldNode *f = malloc((n + 1) * sizeof *f);
    if (!kids || !start || !fill || !map || !queue || !f) {
        out->oom = 1;
        goto out;
    }
    /* Children by parent (root level in slot n), visited breadth-first: parents first. */
    for (uint32_t i = 0; i < n; i++)
        start[(p->cc.nodes[i].parent == SP_NONE ? n : p->cc.nodes[i].parent) + 1]++;
    for (uint32_t i = 0; i <= n; i++)
        start[i + 1] += start[i];
    for (uint32_t i = 0; i < n; i++) {
        uint32_t s = p->cc.nodes[i].parent == SP_NONE ? n : p->cc.nodes[i].parent;
        kids[start[s] + fill[s]++] = i;
    }
    uint32_t qn = 0;
    for (uint32_t k = start[n]; k < start[n + 1]; k++)
        queue[qn++] = kids[k];
    for (uint32_t qi = 0; qi < qn; qi++) {
        uint32_t i = queue[qi];
        const SpCcNode *c = &p->cc.nodes[i];
        uint32_t fp = c->parent == SP_NONE ? SP_NONE : map[c->parent], j = SP_NONE;
        for (uint32_t a = c->parent; a != SP_NONE; a = p->cc.nodes[a].parent)
            if (p->cc.nodes[a].frame == c->frame) { /* recursion on the real path */
                j = map[a];
                break;
            }
        if (j != SP_NONE) { /* recursion: re-enter the ancestor */
            f[j].self += c->self;
            f[j].recursive = 1;
        } else {
            uint32_t *head = fp == SP_NONE ? &roots : &f[fp].first_kid;
            for (uint32_t k = *head; k != SP_NONE; k = f[k].next)
                if (f[k].frame == c->frame && f[k].callsite == c->callsite) {
                    j = k;
                    break;
                }
            if (j == SP_NONE) {
                j = nf++;
                f[j] = (FoldNode){.parent = fp,
                                  .frame = c->frame,
                                  .callsite = c->callsite,
                                  .first_kid = SP_NONE,
                                  .next = *head};
                *head = j;
            }
            f[j].self += c->self;
            f[j].total += c->total;
        }
        map[i] = j;
        for (uint32_t k = start[i]; k < start[i + 1]; k++)
            queue[qn++] = kids[k];
    }
    sp_buf_printf(out, "## call tree (total%% self%%, nodes >= %.1f%%, recursion folded)\n",
                  o->tree_min);
    fold_print(p, o, out, total, f, roots, 0);
    sp_buf_u8(out, '\n');
out:
    free(kids);
    free(start);
    free(fill);
    free(map);
    free(queue);
    free(f);
}

static const SpCcEdge *g_edges;

static int cmp_edge(const void *a, const void *b) {
    const SpCcEdge *x = &g_edges[*(const uint32_t *)a], *y = &g_edges[*(const uint32_t *)b];
    if (x->count != y->count) return x->count < y->count ? 1 : -1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static void report_edges(const SpProfile *p, const SpReportOpts *o, SpBuf *out, uint64_t total) {
    uint32_t n = p->cc.nedges, *ord = malloc((n ? n : 1) * sizeof *ord);
    char a[512], b[512];
    if (!ord) {
        out->oom = 1;
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        ord[i] = i;
    g_edges = p->cc.edges;
    if (n) qsort(ord, n, sizeof *ord, cmp_edge);
    sp_buf_printf(out, "## top call edges (caller -> callee, in any context)\n");
    for (uint32_t k = 0; k < n && (!o->limit || k < o->limit); k++) {
        const SpCcEdge *e = &p->cc.edges[ord[k]];
        if (pct(e->count, total) < o->min_pct) break;
        sp_buf_printf(out, "%6.2f%% %10llu  ", pct(e->count, total), (unsigned long long)e->count);
        if (e->callsite)
            print_site(p, o, out, e->caller, e->callsite);
        else
            sp_buf_printf(out, "%s", sp_frame_label(p, e->caller, a, sizeof a));
        sp_buf_printf(out, " -> %s", sp_frame_label(p, e->callee, b, sizeof b));
        sp_buf_u8(out, '\n');
    }
    sp_buf_u8(out, '\n');
    free(ord);
}

/* One pass over the samples: weight per thread and self weight per (thread, leaf frame). */
static void report_threads(const SpProfile *p, SpBuf *out, uint64_t total) {
    char name[512];
    U64Map idx;
    uint32_t nt = p->nthreads, ncell = 0;
    uint64_t *w = calloc(nt + 1, sizeof *w), *cell = calloc(p->nsamples + 1, sizeof *cell);
    uint32_t *best = malloc((nt + 1) * sizeof *best);
    uint64_t *cell_key = calloc(p->nsamples + 1, sizeof *cell_key);
    u64map_init(&idx);
    if (!w || !cell || !best || !cell_key) goto oom;
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const SpSample *s = &p->samples[i];
        w[s->thread] += s->weight;
        if (!s->depth) continue;
        uint64_t key = (uint64_t)s->thread << 32 | sp_sample_stack(p, s)[0];
        uint32_t c = u64map_get(&idx, key);
        if (c == UINT32_MAX) {
            if (u64map_put(&idx, key, c = ncell++)) goto oom;
            cell_key[c] = key;
        }
        cell[c] += s->weight;
    }
    for (uint32_t t = 0; t < nt; t++)
        best[t] = UINT32_MAX;
    for (uint32_t c = 0; c < ncell; c++) { /* ties: the lowest frame id, as before */
        uint32_t t = (uint32_t)(cell_key[c] >> 32), b = best[t];
        if (b == UINT32_MAX || cell[c] > cell[b] ||
            (cell[c] == cell[b] && (uint32_t)cell_key[c] < (uint32_t)cell_key[b]))
            best[t] = c;
    }
    sp_buf_printf(out, "## per thread\n%7s %10s %10s  %-20s %s\n", "share", "samples", "tid",
                  "name", "top function (self)");
    for (uint32_t t = 0; t < nt; t++) {
        uint32_t b = best[t];
        sp_buf_printf(
            out, "%6.2f%% %10llu %10llu  %-20s %s", pct(w[t], total), (unsigned long long)w[t],
            (unsigned long long)p->threads[t].tid, sp_str(p, p->threads[t].name),
            b == UINT32_MAX ? "-" : sp_frame_label(p, (uint32_t)cell_key[b], name, sizeof name));
        if (b != UINT32_MAX) sp_buf_printf(out, " %.1f%%", pct(cell[b], w[t]));
        sp_buf_u8(out, '\n');
    }
    sp_buf_u8(out, '\n');
    goto out;
oom:
    out->oom = 1;
out:
    u64map_fini(&idx);
    free(w);
    free(cell);
    free(best);
    free(cell_key);
}

/* Exact per-state times recorded by the VM from state transitions: meta "state_ns.<name>". */
static uint64_t exact_state_ns(const SpProfile *p, uint32_t s) {
    char key[64];
    snprintf(key, sizeof key, "state_ns.%s", sp_vm_state_name(s));
    const char *v = sp_meta_get(p, key);
    return v ? strtoull(v, NULL, 10) : 0;
}

static void report_states(const SpProfile *p, SpBuf *out, uint64_t total) {
    uint64_t w[SP_VM_STATE_COUNT] = {0}, ex[SP_VM_STATE_COUNT], ex_total = 0;
    for (uint32_t i = 0; i < p->nsamples; i++)
        w[p->samples[i].state] += p->samples[i].weight;
    for (uint32_t s = 0; s < SP_VM_STATE_COUNT; s++)
        ex_total += ex[s] = exact_state_ns(p, s);
    if (w[SP_VM_NONE] == total && !ex_total) return; /* a native program: nothing to split */
    if (!ex_total) {
        sp_buf_printf(out, "## VM states\n");
        for (uint32_t s = 0; s < SP_VM_STATE_COUNT; s++)
            if (w[s])
                sp_buf_printf(out, "%6.2f%% %10llu  %s\n", pct(w[s], total),
                              (unsigned long long)w[s], sp_vm_state_name(s));
        sp_buf_u8(out, '\n');
        return;
    }
    sp_buf_printf(out,
                  "## VM states (sampled vs exact from state transitions)\n%8s %10s %8s %14s "
                  "%7s  %s\n",
                  "sampled", "samples", "exact", "exact ns", "diff", "state");
    for (uint32_t s = 0; s < SP_VM_STATE_COUNT; s++)
        if (w[s] || ex[s])
            sp_buf_printf(out, "%7.2f%% %10llu %7.2f%% %14llu %+7.2f  %s\n", pct(w[s], total),
                          (unsigned long long)w[s], pct(ex[s], ex_total), (unsigned long long)ex[s],
                          pct(w[s], total) - pct(ex[s], ex_total), sp_vm_state_name(s));
    sp_buf_u8(out, '\n');
}

static void report_events(const SpProfile *p, SpBuf *out) {
    unsigned rate = 0;
    for (uint32_t i = 0; i < p->nevents; i++)
        rate += p->events[i].kind == SP_EVENT_RATE_CHANGE;
    sp_buf_printf(out, "## events (%u, %u rate changes)\n", p->nevents, rate);
    for (uint32_t i = 0; i < p->nevents; i++) {
        const SpEvent *e = &p->events[i];
        sp_buf_printf(out, "%12.6fs %-12s", (double)e->time_ns / 1e9, sp_event_kind_name(e->kind));
        if (e->kind == SP_EVENT_RATE_CHANGE)
            sp_buf_printf(out, " interval %lld ns -> %lld ns (%.1f Hz -> %.1f Hz)", (long long)e->a,
                          (long long)e->b, e->a > 0 ? 1e9 / (double)e->a : 0,
                          e->b > 0 ? 1e9 / (double)e->b : 0);
        else if (e->a || e->b)
            sp_buf_printf(out, " %lld %lld", (long long)e->a, (long long)e->b);
        if (e->text) sp_buf_printf(out, " %s", sp_str(p, e->text));
        sp_buf_u8(out, '\n');
    }
    sp_buf_u8(out, '\n');
}

/* ---- source lines ------------------------------------------------------------------- */

typedef struct {
    uint32_t frame, line, file; /* file: string id of p */
    uint64_t self;
} LineRow;

static int cmp_line_rows(const void *a, const void *b) {
    const LineRow *x = a, *y = b;
    if (x->self != y->self) return x->self < y->self ? 1 : -1;
    if (x->frame != y->frame) return x->frame < y->frame ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

/* Line and file (string id) of sample s's leaf: the recorded line of a VM frame, else the
 * resolver's line of a native or JIT PC (its own function: the last position). */
static uint32_t leaf_line(SpProfile *p, const SpSample *s, const SpReportOpts *o, uint32_t *file) {
    const SpFrame *f = &p->frames[sp_sample_stack(p, s)[0]];
    uint32_t ln = sp_sample_line(p, s, 0);
    *file = f->file;
    if (ln || !o->linefn || !s->pc || (f->kind != SP_FRAME_NATIVE && f->kind != SP_FRAME_JIT))
        return ln;
    uint32_t m = sp_mapping_find(p, s->pc);
    SpSrcLine sl[32];
    uint32_t n = m == SP_NONE ? 0 : o->linefn(o->linectx, p, m, s->pc, sl, 32);
    if (!n || !sl[n - 1].line) return 0;
    if (sl[n - 1].file) *file = sp_intern(p, sl[n - 1].file);
    return sl[n - 1].line;
}

/* The self weight of each (function, source line) the samples' leaves were at. */
static void report_lines(SpProfile *p, const SpReportOpts *o, SpBuf *out, uint64_t total) {
    U64Map idx;
    LineRow *rows = NULL;
    uint32_t n = 0, cap = 0;
    uint64_t known = 0;
    char name[512];
    u64map_init(&idx);
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const SpSample *s = &p->samples[i];
        uint32_t file, ln = s->depth ? leaf_line(p, s, o, &file) : 0;
        if (!ln || file == SP_NONE) continue;
        uint32_t fr = sp_sample_stack(p, s)[0], k = u64map_get(&idx, (uint64_t)fr << 32 | ln);
        if (k == UINT32_MAX) {
            if (n == cap) {
                LineRow *r = realloc(rows, (cap = cap ? 2 * cap : 64) * sizeof *r);
                if (!r) goto oom;
                rows = r;
            }
            if (u64map_put(&idx, (uint64_t)fr << 32 | ln, n)) goto oom;
            rows[k = n++] = (LineRow){fr, ln, file, 0};
        }
        rows[k].self += s->weight;
        known += s->weight;
    }
    if (n) qsort(rows, n, sizeof *rows, cmp_line_rows);
    sp_buf_printf(out, "## source lines (%.2f%% of the samples' leaves at a known line, by self)\n",
                  pct(known, total));
    sp_buf_printf(out, "%7s %10s  %s\n", "self%", "self", "file:line  name");
    for (uint32_t k = 0; k < n && (!o->limit || k < o->limit); k++) {
        const char *f = sp_str(p, rows[k].file);
        sp_buf_printf(out, "%6.2f%% %10llu  %s:%u  %s\n", pct(rows[k].self, total),
                      (unsigned long long)rows[k].self, *f ? f : "?", rows[k].line,
                      sp_frame_label(p, rows[k].frame, name, sizeof name));
    }
    if (o->limit && n > o->limit) sp_buf_printf(out, "... %u more\n", n - o->limit);
    sp_buf_u8(out, '\n');
    goto out;
oom:
    out->oom = 1;
out:
    free(rows);
    u64map_fini(&idx);
}

int sp_report(SpProfile *p, const SpReportOpts *o, SpBuf *out) {
    if (sp_ccmap_ensure(p)) return -1;
    int sec = o->sections ? o->sections : ~0;
    uint64_t total = report_total(p);
    if (sec & SP_REPORT_SUMMARY) report_summary(p, out, total);
    if (sec & SP_REPORT_FLAT) {
        report_flat(p, o, out, total);
        report_time_view(p, o, out);
    }
    if (o->lines && p->nsamples) report_lines(p, o, out, total);
    if (sec & SP_REPORT_TREE) report_tree(p, o, out, total);
    if (sec & SP_REPORT_EDGES) report_edges(p, o, out, total);
    if ((sec & SP_REPORT_THREADS) && p->nsamples) report_threads(p, out, total);
    if (sec & SP_REPORT_STATES) report_states(p, out, total);
    if (sec & SP_REPORT_EVENTS) report_events(p, out);
    return out->oom ? -1 : 0;
}

/* Frame label matches: 1 yes, 0 no; cached per frame in m (2 = not yet known). */
static int filter_match(const SpProfile *p, const regex_t *re, uint32_t frame, uint8_t *m) {
    if (m[frame] == 2) {
        char name[512];
        m[frame] = regexec(re, sp_frame_label(p, frame, name, sizeof name), 0, NULL, 0) == 0;
    }
    return m[frame];
}

static int filter_any(const SpProfile *p, const SpSample *s, const regex_t *re, uint8_t *m) {
    const uint32_t *st = sp_sample_stack(p, s);
    for (uint32_t d = 0; d < s->depth; d++)
        if (filter_match(p, re, st[d], m)) return 1;
    return 0;
}

int sp_profile_filter_frames(SpProfile *p, const char *focus, const char *ignore, char *err,
                             size_t errlen) {
    regex_t fre, ire;
    int have_f = 0, have_i = 0, rc = -1, e;
    uint8_t *fm = NULL, *im = NULL;
    if (!focus && !ignore) return 0;
    if (!p->nsamples) {
        snprintf(err, errlen,
                 "--focus/--ignore select samples, and this profile has none (an exact "
                 "profile has only its calling context tree)");
        return -2;
    }
    if (focus && (e = regcomp(&fre, focus, REG_EXTENDED | REG_NOSUB))) {
        char why[128];
        regerror(e, &fre, why, sizeof why);
        snprintf(err, errlen, "--focus '%s': %s", focus, why);
        return -2;
    }
    have_f = focus != NULL;
    if (ignore && (e = regcomp(&ire, ignore, REG_EXTENDED | REG_NOSUB))) {
        char why[128];
        regerror(e, &ire, why, sizeof why);
        snprintf(err, errlen, "--ignore '%s': %s", ignore, why);
        rc = -2;
        goto out;
    }
    have_i = ignore != NULL;
    fm = malloc(p->nframes + 1), im = malloc(p->nframes + 1);
    if (!fm || !im) goto out;
    memset(fm, 2, p->nframes + 1);
    memset(im, 2, p->nframes + 1);
    uint32_t k = 0;
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const SpSample *s = &p->samples[i];
        if (have_f && !filter_any(p, s, &fre, fm)) continue;
        if (have_i && filter_any(p, s, &ire, im)) continue;
        p->samples[k++] = *s; /* stacks stay where they are */
    }
    p->nsamples = k;
    sp_ccmap_clear(p);
    rc = 0;
out:
    if (have_f) regfree(&fre);
    if (have_i) regfree(&ire);
    free(fm);
    free(im);
    return rc;
}
