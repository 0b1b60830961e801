/* SPDX-License-Identifier: MIT */
/*
 * output.c - CC-Map section, JSON dump and report of the som profiler (see output.h).
 */
#include "output.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "names.h"
#include "profile_io.h"
#include "report.h"

/* ---- CC-Map section from a name-keyed tree ------------------------------------------ */

typedef struct SpoWalk {
    uint32_t *frame;  /* node -> frame id */
    uint64_t *sub;    /* node -> subtree count */
    uint32_t *onpath; /* frame id -> times on the current root path */
    uint64_t *mself, *mtotal, *mself_ns, *mtotal_ns; /* per frame id */
} SpoWalk;

static int spo_walk_alloc(SpoWalk *w, uint32_t nodes, uint32_t frames) {
    w->frame = calloc(nodes, sizeof *w->frame);
    w->sub = calloc(nodes, sizeof *w->sub);
    w->onpath = calloc(frames + 1, sizeof *w->onpath);
    w->mself = calloc(frames + 1, sizeof(uint64_t));
    w->mtotal = calloc(frames + 1, sizeof(uint64_t));
    w->mself_ns = calloc(frames + 1, sizeof(uint64_t));
    w->mtotal_ns = calloc(frames + 1, sizeof(uint64_t));
    return w->frame && w->sub && w->onpath && w->mself && w->mtotal && w->mself_ns && w->mtotal_ns
               ? 0
               : -1;
}

static void spo_walk_free(SpoWalk *w) {
    free(w->frame);
    free(w->sub);
    free(w->onpath);
    free(w->mself);
    free(w->mtotal);
    free(w->mself_ns);
    free(w->mtotal_ns);
}

/* Method totals count a node only when no ancestor runs the same method (recursion). */
static void spo_method_totals(const SpcTree *t, SpoWalk *w) {
    uint32_t *stack = malloc(sizeof *stack * (t->len + 1));
    uint8_t *leaving = calloc(t->len, 1);
    if (!stack || !leaving) goto out;
    uint32_t sp = 0;
    for (uint32_t c = t->n[SPC_ROOT].first_child; c != SPC_NONE; c = t->n[c].next_sibling)
        stack[sp++] = c;
    while (sp) {
        uint32_t i = stack[sp - 1];
        uint32_t f = w->frame[i];
        if (leaving[i]) {
            w->onpath[f]--;
            sp--;
            continue;
        }
        leaving[i] = 1;
        const SpcNode *x = &t->n[i];
        if (!w->onpath[f]) {
            w->mtotal[f] += w->sub[i];
            w->mtotal_ns[f] += x->total_ns;
        }
        w->onpath[f]++;
        for (uint32_t c = x->first_child; c != SPC_NONE; c = t->n[c].next_sibling)
            stack[sp++] = c;
    }
out:
    free(stack);
    free(leaving);
}

int spo_ccmap_from_tree(SpProfile *p, const SpcTree *t, bool exact) {
    SpoWalk w = {0};
    int rc = -1;
    if (t->len < 2) return 0;
    /* frames first, so that frame ids are known */
    uint32_t *fr = calloc(t->len, sizeof *fr);
    if (!fr) return -1;
    for (uint32_t i = 1; i < t->len; i++) {
        fr[i] = spn_frame(p, (const char *)t->n[i].method); /* merged trees: names */
        if (fr[i] == SP_NONE) goto out;
    }
    if (spo_walk_alloc(&w, t->len, p->nframes)) goto out;
    memcpy(w.frame, fr, t->len * sizeof *fr);
    for (uint32_t i = t->len; i-- > 1;) {
        w.sub[i] += t->n[i].count;
        if (t->n[i].parent != SPC_ROOT) w.sub[t->n[i].parent] += w.sub[i];
        w.mself[fr[i]] += t->n[i].count;
        w.mself_ns[fr[i]] += spc_self_ns(&t->n[i]);
    }
    spo_method_totals(t, &w);
    sp_ccmap_clear(p);
    for (uint32_t f = 0; f < p->nframes; f++)
        if (w.mtotal[f] || w.mself[f])
            if (sp_cc_method_add(p, f, w.mself[f], w.mtotal[f], w.mself_ns[f], w.mtotal_ns[f]))
                goto out;
    uint32_t *node = calloc(t->len, sizeof *node);
    if (!node) goto out;
    node[SPC_ROOT] = SP_NONE;
    for (uint32_t i = 1; i < t->len; i++) {
        const SpcNode *x = &t->n[i];
        node[i] =
            sp_cc_node_add(p, node[x->parent], fr[i], x->callsite, x->count, w.sub[i], x->total_ns);
        if (node[i] == SP_NONE) {
            free(node);
            goto out;
        }
        if (x->parent != SPC_ROOT &&
            sp_cc_edge_add(p, fr[x->parent], x->callsite, fr[i], exact ? x->count : w.sub[i])) {
            free(node);
            goto out;
        }
    }
    free(node);
    rc = 0;
out:
    free(fr);
    spo_walk_free(&w);
    return rc;
}

/* ---- JSON dump ------------------------------------------------------------------------ */

static void spo_dump_methods(SpProfile *p, SpBuf *b, uint32_t *idx) {
    sp_buf_printf(b, "  \"methods\": [");
    uint32_t k = 0;
    for (uint32_t i = 0; i < p->cc.nmethods; i++) {
        const SpCcMethod *m = &p->cc.methods[i];
        idx[m->frame] = k;
        sp_buf_printf(b, "%s\n    {\"id\": %u, \"name\": ", k ? "," : "", k);
        sp_json_string(b, sp_str(p, p->frames[m->frame].name));
        sp_buf_printf(b, ", \"self\": %llu, \"total\": %llu", (unsigned long long)m->self,
                      (unsigned long long)m->total);
        if (m->self_ns || m->total_ns)
            sp_buf_printf(b, ", \"self_ns\": %llu, \"total_ns\": %llu",
                          (unsigned long long)m->self_ns, (unsigned long long)m->total_ns);
        sp_buf_printf(b, "}");
        k++;
    }
    sp_buf_printf(b, "\n  ],\n");
}

static void spo_dump_rest(SpProfile *p, SpBuf *b, const uint32_t *idx) {
    sp_buf_printf(b, "  \"edges\": [");
    for (uint32_t i = 0; i < p->cc.nedges; i++) {
        const SpCcEdge *e = &p->cc.edges[i];
        sp_buf_printf(b,
                      "%s\n    {\"caller\": %u, \"callsite\": %u, \"callee\": %u, \"count\": %llu}",
                      i ? "," : "", idx[e->caller], e->callsite, idx[e->callee],
                      (unsigned long long)e->count);
    }
    sp_buf_printf(b, "\n  ],\n  \"nodes\": [");
    for (uint32_t i = 0; i < p->cc.nnodes; i++) {
        const SpCcNode *n = &p->cc.nodes[i];
        sp_buf_printf(b,
                      "%s\n    {\"parent\": %lld, \"method\": %u, \"callsite\": %u, "
                      "\"self\": %llu, \"total\": %llu",
                      i ? "," : "", n->parent == SP_NONE ? -1LL : (long long)n->parent,
                      idx[n->frame], n->callsite, (unsigned long long)n->self,
                      (unsigned long long)n->total);
        if (n->time_ns) sp_buf_printf(b, ", \"time_ns\": %llu", (unsigned long long)n->time_ns);
        sp_buf_printf(b, "}");
    }
    sp_buf_printf(b, "\n  ]\n}\n");
}

int spo_write_dump(SpProfile *p, const char *path, char *err, size_t errlen) {
    if (sp_ccmap_ensure(p)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    uint32_t *idx = calloc(p->nframes + 1, sizeof *idx);
    if (!idx) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    SpBuf b;
    sp_buf_init(&b);
    sp_buf_printf(&b,
                  "{\n  \"format\": \"sampo-ccmap\",\n  \"version\": 1,\n  \"flavour\": \"%s\",\n",
                  p->flavour == SP_FLAVOUR_EXACT ? "exact" : "sampled");
    sp_buf_printf(&b, "  \"meta\": {");
    for (uint32_t i = 0; i < p->nmeta; i++) {
        sp_buf_printf(&b, "%s\n    ", i ? "," : "");
        sp_json_string(&b, sp_str(p, p->meta[i].key));
        sp_buf_printf(&b, ": ");
        sp_json_string(&b, sp_str(p, p->meta[i].value));
    }
    sp_buf_printf(&b, "\n  },\n");
    spo_dump_methods(p, &b, idx);
    spo_dump_rest(p, &b, idx);
    free(idx);
    /* written in place: through a symlink to its target, into a FIFO or a device as they
     * are (never replaced by a new file); a short write or ENOSPC at close is an error */
    int rc = 0, e = 0;
    FILE *f = fopen(path, "w");
    if (!f || fwrite(b.data, 1, b.len, f) != b.len) rc = -1, e = errno;
    if (f && fclose(f) && !rc) rc = -1, e = errno;
    if (rc)
        snprintf(err, errlen, "%s: cannot write the CC-Map dump: %s", path, strerror(e ? e : EIO));
    sp_buf_fini(&b);
    return rc;
}

/* ---- report ------------------------------------------------------------------------------- */

int spo_print_report(SpProfile *p, FILE *f) {
    SpReportOpts o;
    sp_report_opts_default(&o);
    SpBuf b;
    sp_buf_init(&b);
    int rc = sp_report(p, &o, &b);
    if (!rc) fwrite(b.data, 1, b.len, f);
    sp_buf_fini(&b);
    return rc;
}

uint64_t spo_state_weights(const SpProfile *p, uint64_t *w) {
    uint64_t total = 0;
    memset(w, 0, sizeof(uint64_t) * SP_VM_STATE_COUNT);
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const SpSample *s = &p->samples[i];
        if (s->state < SP_VM_STATE_COUNT) w[s->state] += s->weight;
        total += s->weight;
    }
    return total;
}
