/* SPDX-License-Identifier: MIT */
/*
 * writer.c - fills the SpProfile's metadata, events, mappings, symbols and CC-Map section
 * from the engine state, then writes it with sp_profile_write() (one file format, owned by
 * src/analysis).  Metadata keys are listed in docs/design/profiler.md.
 */
#include "writer.h"
#include "engine.h"
#include "manager.h"
#include "symbols.h"

#include "profile.h"
#include "profile_io.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void wr_cmdline(SpProfile *p) {
    char buf[4096];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0) close(fd);
    if (n <= 0) return;
    for (ssize_t i = 0; i < n - 1; i++)
        if (!buf[i]) buf[i] = ' ';
    buf[n] = 0;
    sp_meta_set(p, "cmdline", buf);
}

static void wr_meta(SpProfile *p) {
    const ProfEngine *g = &prof_g;
    const SampoStats *st = &g->st;
    char buf[64];
    sp_meta_set(p, "engine", "libsampo");
    sp_meta_set(p, "trigger", sampo_trigger_name(g->trigger));
    sp_meta_set(p, "trigger_skipped", g->trigger_why);
    if (g->trigger_reason[0]) sp_meta_set(p, "trigger_reason", g->trigger_reason);
    sp_meta_set(p, "mode", g->cfg.mode == SAMPO_MODE_WALL ? "wall" : "cpu");
    sp_meta_setu(p, "hz_requested", g->cfg.hz);
    sp_meta_setu(p, "interval_initial_ns", g->interval0_ns);
    sp_meta_setu(p, "interval_ns", atomic_load(&g->interval_ns));
    sp_meta_setu(p, "cost_ns", st->cost_ns);
    sp_meta_setu(p, "manager_cpu_ns", st->manager_ns);
    sp_meta_set(p, "manager_nice", g->manager_nice ? "-5" : "0");
    if (g->sampler_rt) sp_meta_set(p, "sampler_sched", g->sampler_rt == 1 ? "fifo" : "other");
    sp_meta_set(p, "tune", g->cfg.tune ? (g->cfg.tune_freeze ? "freeze" : "on") : "off");
    snprintf(buf, sizeof buf, "%g", g->cfg.jitter);
    sp_meta_set(p, "jitter", buf);
    snprintf(buf, sizeof buf, "%u:%u", g->cfg.burst, g->cfg.burst_gap);
    sp_meta_set(p, "burst", buf);
    sp_meta_setu(p, "samples", st->samples);
    if (g->cfg.feed_paused) sp_meta_setu(p, "paused_samples", st->paused_samples);
    if (g->cfg.count_kernel &&
        (g->trigger == SAMPO_TRIGGER_PERF_SW || g->trigger == SAMPO_TRIGGER_PERF_HW))
        sp_meta_set(p, "kernel_time", atomic_load(&g->kernel_refused) ? "refused" : "counted");
    sp_meta_setu(p, "dropped", st->dropped);
    sp_meta_setu(p, "walk_errors", st->walk_errors);
    sp_meta_setu(p, "truncated", st->truncated);
    sp_meta_setu(p, "partial", st->partial);
    sp_meta_setu(p, "orphans", st->orphans);
    sp_meta_setu(p, "foreign", st->foreign);
    sp_meta_setu(p, "trigger_lost", st->trigger_lost);
    sp_meta_setu(p, "signal", (uint64_t)prof_sig);
    sp_meta_setu(p, "sigio_fallback", atomic_load(&g->sigio_fallback));
    sp_meta_setu(p, "rate_changes", st->rate_changes);
    sp_meta_setu(p, "threads", st->threads);
    if (g->cc) { /* recursion folding and the bound (ccmap.h) */
        sp_meta_setu(p, "contexts_folded", g->cc->folded);
        sp_meta_setu(p, "contexts_merged", g->cc->merged);
        sp_meta_setu(p, "contexts_max", g->cc->max_ctx);
    }
    sp_meta_setu(p, "pid", (uint64_t)getpid());
    uint64_t dur = prof_now_ns() - g->t0_ns;
    sp_meta_setu(p, "duration_ns", dur);
    struct timespec now; /* wall-clock start, for pprof's time_nanos */
    if (clock_gettime(CLOCK_REALTIME, &now) == 0) {
        uint64_t wall = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
        if (wall > dur) sp_meta_setu(p, "start_unix_ns", wall - dur);
    }
    wr_cmdline(p);
}

static void wr_events(SpProfile *p) {
    p->nevents = 0; /* rewritten in full each time */
    for (uint32_t i = 0; i < prof_g.nevents; i++) {
        const ProfEvent *e = &prof_g.events[i];
        sp_event_add(p, e->time_ns, (SpEventKind)e->kind, e->a, e->b, e->text);
    }
    if (prof_g.st.dropped)
        sp_event_add(p, prof_now_ns() - prof_g.t0_ns, SP_EVENT_DROPPED, (int64_t)prof_g.st.dropped,
                     0, "samples dropped (buffers full)");
}

static void wr_mappings(SpProfile *p) {
    if (!prof_g.symbols) return;
    char src[2048], why[512]; /* where each object's symbols came from (symbols.h) */
    uint32_t refused = prof_symbols_debuginfo(prof_g.symbols, src, sizeof src, why, sizeof why);
    sp_meta_set(p, "symbol_sources", src);
    if (refused) sp_meta_setu(p, "debuginfo_refused", refused);
    if (refused) sp_meta_set(p, "debuginfo_refused_why", why);
    if (p->nmappings) return;
    const ProfObject *o;
    uint32_t n = prof_symbols_objects(prof_g.symbols, &o);
    for (uint32_t i = 0; i < n; i++)
        sp_mapping_add(p, o[i].lo, o[i].hi, o[i].offset, o[i].path, o[i].build_id);
    if (p->nsymbols) return;
    uint32_t nf = p->nframes;
    for (uint32_t i = 0; i < nf; i++) {
        const SpFrame *f = &p->frames[i];
        if (f->kind == SP_FRAME_VM_METHOD || !f->addr) continue;
        char *name = strdup(sp_str(p, f->name)); /* sp_symbol_add may move the strings */
        if (!name) break;
        sp_symbol_add(p, f->addr, f->size, name, sp_mapping_find(p, f->addr));
        free(name);
    }
}

/* Thread names as the threads last named themselves: a live thread's comm now, an exited
 * one's name at unregistration; a name given to sampo_thread_register stays.  Lock order:
 * g.reg before g.data (the caller holds both). */
static void wr_thread_names(SpProfile *p) {
    for (ProfThread *t = prof_g.threads; t; t = t->next_all) {
        if (!t->sp_thread || t->name_given || t->sp_thread > p->nthreads) continue;
        char name[64] = "";
        if (atomic_load(&t->alive)) {
            char path[64];
            snprintf(path, sizeof path, "/proc/self/task/%d/comm", t->tid);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            ssize_t n = fd >= 0 ? read(fd, name, sizeof name - 1) : -1;
            if (fd >= 0) close(fd);
            name[n > 0 ? n : 0] = 0;
            name[strcspn(name, "\n")] = 0;
        } else {
            snprintf(name, sizeof name, "%s", t->exit_name);
        }
        if (!name[0]) continue;
        uint32_t id = sp_intern(p, name);
        if (id != SP_NONE) p->threads[t->sp_thread - 1].name = id;
    }
}

static void wr_ccmap(SpProfile *p) {
    const ProfCCMap *m = prof_g.cc;
    sp_ccmap_clear(p);
    if (!m || !m->nx) return;
    for (uint32_t i = 0; i < m->nm; i++)
        sp_cc_method_add(p, prof_manager_frame_of(m->m[i].id), m->m[i].self, m->m[i].total, 0, 0);
    for (uint32_t i = 0; i < m->nc; i++) {
        const CcSite *s = &m->s[m->c[i].site];
        sp_cc_edge_add(p, prof_manager_frame_of(m->m[s->method].id), (uint32_t)s->pos,
                       prof_manager_frame_of(m->m[m->c[i].method].id), m->c[i].count);
    }
    for (uint32_t i = 0; i < m->nx; i++) {
        uint32_t parent = prof_ccmap_ctx_parent(m, i);
        sp_cc_node_add(p, parent == CC_NONE ? SP_NONE : parent,
                       prof_manager_frame_of(m->m[m->x[i].method].id),
                       (uint32_t)prof_ccmap_ctx_pos(m, i), m->x[i].self, m->x[i].total, 0);
    }
}

static void wr_expand(const char *path, char *out, size_t len) {
    size_t o = 0;
    for (const char *s = path; *s && o + 16 < len; s++) {
        if (s[0] == '%' && s[1] == 'p') {
            o += (size_t)snprintf(out + o, len - o, "%d", (int)getpid());
            s++;
        } else {
            out[o++] = *s;
        }
    }
    out[o] = 0;
}

int prof_write_profile(const char *path) {
    char file[4096], err[256];
    wr_expand(path, file, sizeof file);
    pthread_mutex_lock(&prof_g.reg);
    pthread_mutex_lock(&prof_g.data);
    SpProfile *p = prof_g.profile;
    int rc = SAMPO_EIO;
    if (!p) {
        snprintf(prof_g.err, sizeof prof_g.err, "%.400s: no profile collected", file);
        goto out;
    }
    wr_meta(p);
    wr_thread_names(p);
    wr_events(p);
    wr_mappings(p);
    wr_ccmap(p);
    if (sp_profile_write(p, file, err, sizeof err) == 0)
        rc = SAMPO_OK;
    else
        snprintf(prof_g.err, sizeof prof_g.err, "%s", err);
out:
    pthread_mutex_unlock(&prof_g.data);
    pthread_mutex_unlock(&prof_g.reg);
    return rc;
}
