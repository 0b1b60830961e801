/*
 * report.c - text report (see report.h).  Each section is one function appending to the
 * output buffer; sorting is by weight descending, then by name, so the output is stable.
 */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "u64map.h"

void sp_report_opts_default(SpReportOpts *o) {
    o->limit = 25;
    o->tree_min = 1.0;
    o->tree_depth = 0;
    o->sections = 0;
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
    sp_buf_printf(out, "# sampo profile: %s, %u samples, total weight %llu (%s), %u threads\n",
                  exact ? "exact (invocation counts)" : "sampled", p->nsamples,
                  (unsigned long long)total, exact ? "invocations" : "samples", p->nthreads);
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
    qsort(ord, n, sizeof *ord, cmp_method_self);
    const char *unit = p->flavour == SP_FLAVOUR_EXACT ? "calls" : "samples";
    sp_buf_printf(out, "## flat profile (%llu %s)\n", (unsigned long long)total, unit);
    sp_buf_printf(out, "%7s %7s %7s %10s %10s  %s\n", "self%", "cum%", "total%", "self", "total",
                  "name");
    double cum = 0;
    for (uint32_t k = 0; k < n && (!o->limit || k < o->limit); k++) {
        const SpCcMethod *m = &p->cc.methods[ord[k]];
        cum += pct(m->self, total);
        const char *mod = sp_str(p, p->frames[m->frame].module), *base = strrchr(mod, '/');
        base = base ? base + 1 : mod;
        sp_buf_printf(out, "%6.2f%% %6.2f%% %6.2f%% %10llu %10llu  %s%s%s%s\n", pct(m->self, total),
                      cum, pct(m->total, total), (unsigned long long)m->self,
                      (unsigned long long)m->total, sp_frame_label(p, m->frame, name, sizeof name),
                      *base ? " (" : "", base, *base ? ")" : "");
    }
    if (o->limit && n > o->limit) sp_buf_printf(out, "... %u more\n", n - o->limit);
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
    qsort(ord, n, sizeof *ord, cmp_method_ns);
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

static const SpCcNode *g_nodes;

static int cmp_node_total(const void *a, const void *b) {
    const SpCcNode *x = &g_nodes[*(const uint32_t *)a], *y = &g_nodes[*(const uint32_t *)b];
    if (x->total != y->total) return x->total < y->total ? 1 : -1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static void tree_node(const SpProfile *p, const SpReportOpts *o, SpBuf *out, uint64_t total,
                      uint32_t node, uint32_t depth, uint32_t *kids, uint32_t *kid_start);

static void tree_children(const SpProfile *p, const SpReportOpts *o, SpBuf *out, uint64_t total,
                          uint32_t parent, uint32_t depth, uint32_t *kids, uint32_t *kid_start) {
    uint32_t slot = parent == SP_NONE ? p->cc.nnodes : parent;
    for (uint32_t k = kid_start[slot]; k < kid_start[slot + 1]; k++)
        tree_node(p, o, out, total, kids[k], depth, kids, kid_start);
}

static void tree_node(const SpProfile *p, const SpReportOpts *o, SpBuf *out, uint64_t total,
                      uint32_t node, uint32_t depth, uint32_t *kids, uint32_t *kid_start) {
    const SpCcNode *n = &p->cc.nodes[node];
    char name[512];
    if (pct(n->total, total) < o->tree_min || (o->tree_depth && depth >= o->tree_depth) ||
        depth > 200)
        return;
    sp_buf_printf(out, "%6.2f%% %6.2f%% %*s%s", pct(n->total, total), pct(n->self, total),
                  (int)(2 * depth), "", sp_frame_label(p, n->frame, name, sizeof name));
    if (n->callsite) sp_buf_printf(out, " @%u", n->callsite);
    sp_buf_u8(out, '\n');
    tree_children(p, o, out, total, node, depth + 1, kids, kid_start);
}

static void report_tree(const SpProfile *p, const SpReportOpts *o, SpBuf *out, uint64_t total) {
    uint32_t n = p->cc.nnodes;
    uint32_t *kids = malloc((n + 1) * sizeof *kids), *start = calloc(n + 2, sizeof *start);
    if (!kids || !start) {
        out->oom = 1;
        goto out;
    }
    /* Bucket children by parent (root level in slot n), then sort each bucket by total. */
    for (uint32_t i = 0; i < n; i++)
        start[(p->cc.nodes[i].parent == SP_NONE ? n : p->cc.nodes[i].parent) + 1]++;
    for (uint32_t i = 0; i <= n; i++)
        start[i + 1] += start[i];
    uint32_t *fill = calloc(n + 1, sizeof *fill);
    if (!fill) {
        out->oom = 1;
        goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t s = p->cc.nodes[i].parent == SP_NONE ? n : p->cc.nodes[i].parent;
        kids[start[s] + fill[s]++] = i;
    }
    free(fill);
    g_nodes = p->cc.nodes;
    for (uint32_t s = 0; s <= n; s++)
        qsort(kids + start[s], start[s + 1] - start[s], sizeof *kids, cmp_node_total);
    sp_buf_printf(out, "## call tree (total%% self%%, nodes >= %.1f%%)\n", o->tree_min);
    tree_children(p, o, out, total, SP_NONE, 0, kids, start);
    sp_buf_u8(out, '\n');
out:
    free(kids);
    free(start);
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
    qsort(ord, n, sizeof *ord, cmp_edge);
    sp_buf_printf(out, "## top call edges (caller -> callee, in any context)\n");
    for (uint32_t k = 0; k < n && (!o->limit || k < o->limit); k++) {
        const SpCcEdge *e = &p->cc.edges[ord[k]];
        sp_buf_printf(out, "%6.2f%% %10llu  %s -> %s", pct(e->count, total),
                      (unsigned long long)e->count, sp_frame_label(p, e->caller, a, sizeof a),
                      sp_frame_label(p, e->callee, b, sizeof b));
        if (e->callsite) sp_buf_printf(out, " @%u", e->callsite);
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

int sp_report(SpProfile *p, const SpReportOpts *o, SpBuf *out) {
    if (sp_ccmap_ensure(p)) return -1;
    int sec = o->sections ? o->sections : ~0;
    uint64_t total = report_total(p);
    if (sec & SP_REPORT_SUMMARY) report_summary(p, out, total);
    if (sec & SP_REPORT_FLAT) {
        report_flat(p, o, out, total);
        report_time_view(p, o, out);
    }
    if (sec & SP_REPORT_TREE) report_tree(p, o, out, total);
    if (sec & SP_REPORT_EDGES) report_edges(p, o, out, total);
    if ((sec & SP_REPORT_THREADS) && p->nsamples) report_threads(p, out, total);
    if (sec & SP_REPORT_STATES) report_states(p, out, total);
    if (sec & SP_REPORT_EVENTS) report_events(p, out);
    return out->oom ? -1 : 0;
}
