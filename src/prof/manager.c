/* SPDX-License-Identifier: MIT */
/*
 * manager.c - the manager thread (see manager.h).  All heavy work happens here, off the
 * sampled threads: symbol lookup, CC-Map updates (full and partial samples), tuning, and
 * building the SpProfile that writer.c serializes.
 */
#include "manager.h"
#include "capture.h"
#include "preload.h"
#include "symbols.h"
#include "trigger.h"
#include "u64map.h"
#include "vmsrc.h"

#include "profile.h"

#include <errno.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Scratch buffers (manager context only, under g.data). */
static struct {
    uint64_t *methods, *pos, *scratch;
    uint32_t *frames, *ctx_t, *ctx_p, *lines;
    uint32_t cap;
    ProfU64Map pc_frame;   /* lookup address -> SpProfile frame id + 1 */
    ProfU64Map vm_frame;   /* VM method id -> SpProfile frame id + 1 */
    ProfU64Map call_cache; /* word -> call target + 2 (1: not a return address) */
    int retime_pending;
} mg;

static int mgr_reserve(uint32_t n) {
    if (n <= mg.cap) return 0;
    uint32_t c = mg.cap ? mg.cap : 256;
    while (c < n)
        c *= 2;
    void *a = realloc(mg.methods, c * sizeof *mg.methods);
    if (a) mg.methods = a;
    void *b = realloc(mg.pos, c * sizeof *mg.pos);
    if (b) mg.pos = b;
    void *d = realloc(mg.frames, c * sizeof *mg.frames);
    if (d) mg.frames = d;
    void *e = realloc(mg.ctx_t, c * sizeof *mg.ctx_t);
    if (e) mg.ctx_t = e;
    void *f = realloc(mg.ctx_p, c * sizeof *mg.ctx_p);
    if (f) mg.ctx_p = f;
    void *g = realloc(mg.scratch, c * sizeof *mg.scratch);
    if (g) mg.scratch = g;
    void *h = realloc(mg.lines, c * sizeof *mg.lines);
    if (h) mg.lines = h;
    if (!a || !b || !d || !e || !f || !g || !h) return -1;
    mg.cap = c;
    return 0;
}

void prof_manager_event(int kind, int64_t a, int64_t b, const char *text) {
    ProfEngine *g = &prof_g;
    if (g->nevents == g->cap_events) {
        uint32_t nc = g->cap_events ? g->cap_events * 2 : 32;
        ProfEvent *ne = realloc(g->events, nc * sizeof *ne);
        if (!ne) return;
        g->events = ne, g->cap_events = nc;
    }
    ProfEvent *e = &g->events[g->nevents++];
    uint64_t now = prof_now_ns();
    *e = (ProfEvent){now > g->t0_ns ? now - g->t0_ns : 0, kind, a, b, {0}};
    if (text) snprintf(e->text, sizeof e->text, "%s", text);
    if (g->cfg.verbose && text) fprintf(stderr, "sampo: %s\n", text);
}

/* ---- frames ------------------------------------------------------------------------- */

/* SpProfile frame for a native address (lookup = pc, or return address - 1). */
static uint32_t mgr_native_frame(SpProfile *p, uint64_t addr) {
    uint64_t v;
    if (prof_u64map_get(&mg.pc_frame, addr, &v)) return (uint32_t)(v - 1);
    ProfSym s;
    uint32_t fid;
    if (prof_symbols_lookup(prof_g.symbols, addr, &s)) {
        fid = sp_frame_addv(p, s.jit ? SP_FRAME_JIT : SP_FRAME_NATIVE, s.name, s.module, s.start,
                            s.size, NULL, 0);
    } else { /* named by object and link-time address: the same in every run */
        char nm[320];
        fid = sp_frame_addv(p, SP_FRAME_NATIVE, prof_symbols_unknown_name(&s, nm, sizeof nm),
                            s.module, s.start, s.size ? s.size : 1, NULL, 0);
    }
    if (fid != SP_NONE) prof_u64map_put(&mg.pc_frame, addr, (uint64_t)fid + 1);
    return fid;
}

static uint32_t mgr_vm_frame(SpProfile *p, uint64_t method) {
    uint64_t v;
    if (prof_u64map_get(&mg.vm_frame, method, &v)) return (uint32_t)(v - 1);
    uint32_t mi = prof_g.names ? prof_ccmap_find_method(prof_g.names, method) : CC_NONE;
    const char *name = mi == CC_NONE ? NULL : prof_ccmap_name(prof_g.names, mi);
    char buf[48];
    if (!name) {
        snprintf(buf, sizeof buf, "method@0x%llx", (unsigned long long)method);
        name = buf;
    }
    const ProfVmSrc *src = prof_vmsrc_get(method);
    uint32_t fid = sp_frame_addv(p, SP_FRAME_VM_METHOD, name, NULL, 0, 0, src ? src->file : NULL,
                                 src ? src->first_line : 0);
    if (fid != SP_NONE) prof_u64map_put(&mg.vm_frame, method ? method : 1, (uint64_t)fid + 1);
    return fid;
}

/* ---- one record ------------------------------------------------------------------------ */

/* Target of the call instruction that ends just before return address ret: 0 = none or
 * indirect, 1 = indirect call, else the direct target. */
static uint64_t mgr_call_target_raw(uint64_t ret) {
    ProfSym s;
    if (ret < 4096 || !prof_symbols_is_code(prof_g.symbols, ret - 1) ||
        !prof_symbols_lookup(prof_g.symbols, ret - 1, &s) || s.jit || ret - 7 < s.start)
        return 0;
    const uint8_t *c = (const uint8_t *)(uintptr_t)ret;
    if (c[-5] == 0xe8) {
        int32_t rel;
        memcpy(&rel, c - 4, sizeof rel);
        return ret + (uint64_t)(int64_t)rel;
    }
    if ((c[-2] == 0xff && (c[-1] & 0xf8) == 0xd0) || (c[-6] == 0xff && c[-5] == 0x15) ||
        (c[-3] == 0xff && (c[-2] & 0xf8) == 0x50))
        return 1;
    return 0;
}

/* Cached: stack words repeat from sample to sample. */
static uint64_t mgr_call_target(uint64_t ret) {
    uint64_t v;
    if (prof_u64map_get(&mg.call_cache, ret, &v)) return v - 2;
    v = mgr_call_target_raw(ret);
    if (mg.call_cache.n > (1u << 20)) prof_u64map_clear(&mg.call_cache);
    prof_u64map_put(&mg.call_cache, ret, v + 2);
    return v;
}

/* Whether a call ending at ret can have entered the function starting at fn. */
static int mgr_calls(uint64_t ret, uint64_t fn) {
    uint64_t t = mgr_call_target(ret);
    if (t == fn || t == 1) return t != 0;
    if (!t) return 0;
    ProfSym s; /* a direct call into a PLT stub may reach any function */
    return prof_symbols_is_code(prof_g.symbols, t) &&
           (!prof_symbols_lookup(prof_g.symbols, t, &s) || s.plt);
}

/* The frame-pointer chain misses the caller of a leaf that set up no frame (or is still in
 * its prologue): find its return address in the words at the top of the stack. */
static uint32_t mgr_fix_leaf(const ProfRec *r, const uint64_t *pcs, uint64_t *out) {
    uint32_t n = r->n_native;
    memcpy(out, pcs, n * sizeof *out);
    if (r->n_vm || r->nsw == 0) return n;
    SpProfile *p = prof_g.profile;
    uint32_t leaf = mgr_native_frame(p, pcs[0]);
    if (leaf == SP_NONE || p->frames[leaf].kind != SP_FRAME_NATIVE) return n;
    ProfSym s = {.start = p->frames[leaf].addr};
    if (n > 1 && mgr_call_target(pcs[1]) == s.start) return n;
    const uint64_t *w = pcs + n;
    for (uint32_t i = 0; i < r->nsw; i++) {
        if (w[i] == (n > 1 ? pcs[1] : 0) || !mgr_calls(w[i], s.start)) continue;
        memmove(out + 2, out + 1, (n - 1) * sizeof *out);
        out[1] = w[i];
        return n + 1;
    }
    return n;
}

static int mgr_native(ProfThread *t, const ProfRec *r, uint32_t *n_out, int *repeated) {
    SpProfile *p = prof_g.profile;
    uint64_t *pcs = mg.scratch;
    uint32_t n = mgr_fix_leaf(r, (const uint64_t *)(r + 1), pcs);
    /* A frame-pointer walk through code built without frame pointers (libc, ld.so) can end
     * on a word that passed the walker's checks but is no return address: the outermost
     * entries then point outside every mapped object and registered JIT range.  Every real
     * stack ends in code (_start, clone3, start_thread), so such a tail is dropped rather
     * than reported as an "[unknown]" root (seen under dlopen: "[unknown]+1 ->
     * _dl_catch_exception"). */
    while (n > 1 && !prof_symbols_is_code(prof_g.symbols, pcs[n - 1] - 1))
        n--;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t addr = i ? pcs[i] - 1 : pcs[i];
        uint32_t fid = mgr_native_frame(p, addr);
        if (fid == SP_NONE) return -1;
        mg.frames[i] = fid;
        mg.methods[i] = p->frames[fid].addr ? p->frames[fid].addr : addr;
        mg.pos[i] = pcs[i] - mg.methods[i];
    }
    *repeated = t->have_prev && t->prev_fn == mg.methods[0] && t->prev_fp == r->fp;
    t->prev_fn = mg.methods[0], t->prev_fp = r->fp, t->have_prev = 1;
    if (prof_ccmap_add(t->cc, mg.methods, mg.pos, n, r->weight, CC_NONE, NULL) ||
        prof_ccmap_add(prof_g.cc, mg.methods, mg.pos, n, r->weight, CC_NONE, NULL))
        return -1;
    *n_out = n;
    return 0;
}

/* A record's VM frames (after its PCs and stack words), their methods and positions copied
 * into mg.methods and mg.pos. */
static const SampoFrameInfo *mgr_vm_frames(const ProfRec *r) {
    const SampoFrameInfo *vf =
        (const SampoFrameInfo *)((const uint64_t *)(r + 1) + r->n_native + r->nsw);
    for (uint32_t i = 0; i < r->n_vm; i++)
        mg.methods[i] = vf[i].method, mg.pos[i] = vf[i].pos;
    return vf;
}

/* VM sample, possibly partial: continues from the contexts recorded for the visited frame. */
static int mgr_vm(ProfThread *t, const ProfRec *r, uint32_t *n_out, int *repeated) {
    const SampoFrameInfo *vf = mgr_vm_frames(r);
    uint32_t n = r->n_vm, st = CC_NONE, sp = CC_NONE;
    ProfU64Map *tok = t->tokens;
    if (r->flags & REC_PARTIAL) {
        uint64_t v;
        if (prof_u64map_get(tok, vf[n - 1].token, &v))
            st = (uint32_t)(v >> 32), sp = (uint32_t)v;
        else
            prof_g.st.orphans++;
        prof_g.st.partial++;
    }
    int rc = prof_ccmap_add(t->cc, mg.methods, mg.pos, n, r->weight, st, mg.ctx_t);
    if (rc == SAMPO_EINVAL && st != CC_NONE) {
        prof_g.st.orphans++;
        st = sp = CC_NONE;
        rc = prof_ccmap_add(t->cc, mg.methods, mg.pos, n, r->weight, st, mg.ctx_t);
    }
    if (!rc) rc = prof_ccmap_add(prof_g.cc, mg.methods, mg.pos, n, r->weight, sp, mg.ctx_p);
    if (rc == SAMPO_EINVAL)
        rc = prof_ccmap_add(prof_g.cc, mg.methods, mg.pos, n, r->weight, CC_NONE, mg.ctx_p);
    if (rc) return -1;
    for (uint32_t i = 0; i < n; i++)
        if (vf[i].token)
            prof_u64map_put(tok, vf[i].token, (uint64_t)mg.ctx_t[i] << 32 | mg.ctx_p[i]);
    /* full calling context, leaf first, from the per-thread context chain; each frame's
     * line from its position: the sampled one for the leaf, the call site for callers */
    uint32_t d = 0;
    const ProfCCMap *cc = t->cc;
    for (uint32_t c = mg.ctx_t[0], child = CC_NONE; c != CC_NONE;
         child = c, c = prof_ccmap_ctx_parent(cc, c)) {
        if (mgr_reserve(d + 1)) return -1;
        uint64_t id = cc->m[cc->x[c].method].id, pos = 0;
        int known = child == CC_NONE ? id == vf[0].method : cc->x[child].callee != CC_NONE;
        if (child == CC_NONE) {
            pos = vf[0].pos;
        } else if (known) { /* a merged caller runs in another method's context: unknown */
            const CcSite *site = &cc->s[cc->c[cc->x[child].callee].site];
            known = site->method == cc->x[c].method;
            pos = site->pos;
        }
        mg.lines[d] = known ? prof_vmsrc_line(prof_vmsrc_get(id), pos) : 0;
        mg.frames[d++] = mgr_vm_frame(prof_g.profile, id);
    }
    *repeated = (r->flags & REC_TOP_REPEAT) != 0;
    *n_out = d;
    return 0;
}

static uint32_t mgr_sp_thread(ProfThread *t) {
    if (t->sp_thread == 0) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%d/comm", t->tid);
        FILE *f = t->name[0] ? NULL : fopen(path, "r");
        if (f) {
            if (fgets(t->name, sizeof t->name, f)) t->name[strcspn(t->name, "\n")] = 0;
            fclose(f);
        }
        uint32_t i = sp_thread_add(prof_g.profile, (uint64_t)t->tid, t->name);
        if (i == SP_NONE) return SP_NONE;
        t->sp_thread = i + 1;
    }
    return t->sp_thread - 1;
}

static ProfThread *mgr_thread_by_tid(uint32_t tid) {
    for (ProfThread *t = prof_g.threads; t; t = t->next_all)
        if ((uint32_t)t->tid == tid && t != prof_g.sampler_slot) return t;
    return NULL;
}

static void mgr_tune(const ProfRec *r, int repeated) {
    uint64_t o, nw;
    if (!prof_g.cfg.tune || (r->flags & REC_SYNTH)) return;
    if (!prof_tune_sample(&prof_g.tune, repeated, r->time_ns, &o, &nw)) return;
    atomic_store(&prof_g.interval_ns, nw);
    prof_g.st.rate_changes++;
    char msg[96];
    snprintf(msg, sizeof msg, "tune: interval %.3f ms -> %.3f ms (repetition %.1f%%)", o / 1e6,
             nw / 1e6, prof_g.tune.last_rate * 100);
    prof_manager_event(SP_EVENT_RATE_CHANGE, (int64_t)o, (int64_t)nw, msg);
    mg.retime_pending = 1;
}

/* A sample taken while paused (feed_paused): its thread's CC-Map only, as a full walk
 * (no visited marks were read or set); VM samples only. */
static void mgr_paused(ProfThread *t, const ProfRec *r) {
    if (!r->n_vm || (r->flags & REC_PARTIAL)) return;
    mgr_vm_frames(r);
    prof_ccmap_add(t->cc, mg.methods, mg.pos, r->n_vm, r->weight, CC_NONE, mg.ctx_t);
}

static void mgr_record(ProfThread *owner, const ProfRec *r) {
    if (r->flags & REC_CALIB) return;
    if (r->flags & REC_PAUSED) {
        if (!mgr_reserve((uint32_t)r->n_vm + 2)) mgr_paused(owner, r);
        return;
    }
    ProfThread *t = r->flags & REC_SYNTH ? mgr_thread_by_tid(r->tid) : owner;
    uint32_t n = 0;
    int repeated = 0, rc;
    if (!t || mgr_reserve((uint32_t)r->n_native + r->n_vm + 2)) return;
    prof_g.st.samples++;
    prof_g.st.weight += r->weight;
    prof_pcring_add(&prof_g.pcring, r->pc);
    if (r->n_vm)
        rc = mgr_vm(t, r, &n, &repeated);
    else
        rc = mgr_native(t, r, &n, &repeated);
    uint32_t thr = mgr_sp_thread(t);
    if (rc || thr == SP_NONE) return;
    uint64_t ts = r->time_ns > prof_g.t0_ns ? r->time_ns - prof_g.t0_ns : 0;
    int lines = 0;
    for (uint32_t i = 0; r->n_vm && i < n; i++)
        lines |= mg.lines[i] != 0;
    if (!sp_sample_add(prof_g.profile, thr, ts, mg.frames, n, r->pc, r->weight,
                       (SpVmState)r->state) &&
        lines)
        sp_sample_set_lines(prof_g.profile, mg.lines);
    mgr_tune(r, repeated);
}

static void mgr_batch(ProfBatch *b) {
    for (uint32_t off = 0; off < b->used;) {
        const ProfRec *r = (const ProfRec *)(b->data + off);
        if (r->words < PROF_REC_WORDS || off + r->words > b->used) break;
        mgr_record(b->owner, r);
        off += r->words;
    }
    b->used = b->nsamples = 0;
}

/* ---- batches ----------------------------------------------------------------------------- */

static void mgr_recycle(ProfBatch *b) {
    ProfThread *o = b->owner;
    if (o && atomic_load(&o->alive) && !prof_ring_push(&o->free, b)) return;
    b->next = prof_g.spare;
    prof_g.spare = b;
}

static ProfBatch *mgr_new_batch(void) {
    if (prof_g.spare) {
        ProfBatch *b = prof_g.spare;
        prof_g.spare = b->next;
        return b;
    }
    uint64_t bytes = sizeof(ProfBatch) + PROF_BATCH_WORDS * 8ull;
    if ((uint64_t)(prof_g.npool + 1) * bytes > (uint64_t)prof_g.cfg.buffer_kib * 1024) return NULL;
    ProfBatch **np = realloc(prof_g.pool, (prof_g.npool + 1) * sizeof *np);
    if (!np) return NULL;
    prof_g.pool = np;
    ProfBatch *b = calloc(1, bytes);
    if (!b) return NULL;
    b->cap = PROF_BATCH_WORDS;
    prof_g.pool[prof_g.npool++] = b;
    return b;
}

void prof_manager_give_batches(ProfThread *t, int n) {
    while (n-- > 0 && prof_ring_count(&t->free) < 6) {
        ProfBatch *b = mgr_new_batch();
        if (!b) return;
        b->owner = t;
        b->used = b->nsamples = 0;
        if (prof_ring_push(&t->free, b)) {
            b->next = prof_g.spare;
            prof_g.spare = b;
            return;
        }
    }
}

/* Refill free rings of live threads; reclaim the batches of dead ones (g.reg held). */
static void mgr_refill(void) {
    for (ProfThread *t = prof_g.threads; t; t = t->next_all) {
        if (atomic_load(&t->alive)) {
            if (prof_ring_count(&t->free) < 4) prof_manager_give_batches(t, 4);
            continue;
        }
        ProfBatch *b;
        while ((b = prof_ring_pop(&t->free)))
            b->next = prof_g.spare, prof_g.spare = b;
    }
}

void prof_manager_drain(int harvest_cur) {
    pthread_mutex_lock(&prof_g.reg);
    if (harvest_cur)
        for (ProfThread *t = prof_g.threads; t; t = t->next_all)
            if (t->cur && t->cur->nsamples) prof_full_push(t->cur), t->cur = NULL;
    ProfBatch *list = atomic_exchange(&prof_g.full, NULL), *rev = NULL;
    while (list) { /* LIFO -> arrival order, so each thread's samples stay in order */
        ProfBatch *n = list->next;
        list->next = rev, rev = list, list = n;
    }
    pthread_mutex_lock(&prof_g.data);
    for (ProfBatch *b = rev; b; b = b->next)
        mgr_batch(b);
    pthread_mutex_unlock(&prof_g.data);
    while (rev) {
        ProfBatch *n = rev->next;
        mgr_recycle(rev);
        rev = n;
    }
    mgr_refill();
    pthread_mutex_unlock(&prof_g.reg);
    if (mg.retime_pending) {
        mg.retime_pending = 0;
        prof_trigger_retime_all();
    }
}

static void *mgr_main(void *arg) {
    (void)arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, PROF_SIG);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    /* Sampled threads can starve the manager (64 busy threads on 2 cores get it 1/65 of the
     * CPU) and then buffers run out.  Ask for a higher priority; without CAP_SYS_NICE or a
     * matching RLIMIT_NICE this fails and nothing changes. */
    prof_g.manager_nice = setpriority(PRIO_PROCESS, (id_t)prof_gettid(), -5) == 0 ? -5 : 0;
    while (!atomic_load(&prof_g.manager_stop)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        while (sem_timedwait(&prof_g.wake, &ts) && errno == EINTR) {
        }
        while (!sem_trywait(&prof_g.wake)) {
        }
        prof_trigger_check_lost();
        prof_manager_drain(0);
    }
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    prof_g.st.manager_ns = (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec;
    return NULL;
}

int prof_manager_start(void) {
    atomic_store(&prof_g.manager_stop, 0);
    prof_internal_thread = 1;
    int rc = pthread_create(&prof_g.manager, NULL, mgr_main, NULL);
    prof_internal_thread = 0;
    if (rc) return -1;
    pthread_setname_np(prof_g.manager, "sampo-manager");
    return 0;
}

void prof_manager_stop(void) {
    atomic_store(&prof_g.manager_stop, 1);
    sem_post(&prof_g.wake);
    pthread_join(prof_g.manager, NULL);
    prof_manager_drain(1);
}

/* ---- data ---------------------------------------------------------------------------------- */

/* SAMPO_MAX_CONTEXTS=N: the bound on each CC-Map's contexts (ccmap.h; small in tests). */
static void mgr_max_contexts(void) {
    const char *v = getenv("SAMPO_MAX_CONTEXTS");
    char *end = NULL;
    unsigned long n = v && *v ? strtoul(v, &end, 10) : 0;
    if (v && *v && (*end || n == 0 || n > UINT32_MAX / 2)) {
        char msg[160];
        snprintf(msg, sizeof msg, "SAMPO_MAX_CONTEXTS: expected a number in [1, %u], got '%.64s'",
                 UINT32_MAX / 2, v);
        prof_manager_event(SP_EVENT_NOTE, 0, 0, msg);
        n = 0;
    }
    prof_ccmap_set_default_max((uint32_t)n);
}

int prof_manager_data_init(void) {
    prof_manager_data_fini();
    mgr_max_contexts();
    prof_g.cc = prof_ccmap_new();
    prof_g.profile = sp_profile_new(SP_FLAVOUR_SAMPLED);
    if (!prof_g.symbols) prof_g.symbols = prof_symbols_new();
    if (!prof_g.cc || !prof_g.profile || !prof_g.symbols ||
        prof_pcring_init(&prof_g.pcring, prof_g.cfg.pc_ring))
        return -1;
    return 0;
}

void prof_manager_data_fini(void) {
    prof_ccmap_free(prof_g.cc);
    prof_g.cc = NULL;
    sp_profile_free(prof_g.profile);
    prof_g.profile = NULL;
    prof_pcring_fini(&prof_g.pcring);
    prof_u64map_fini(&mg.pc_frame);
    prof_u64map_fini(&mg.vm_frame);
    prof_u64map_fini(&mg.call_cache);
    free(prof_g.events);
    prof_g.events = NULL;
    prof_g.nevents = prof_g.cap_events = 0;
    for (ProfThread *t = prof_g.threads; t; t = t->next_all) {
        if (t->cc) prof_ccmap_clear(t->cc);
        if (t->tokens) prof_u64map_clear(t->tokens);
        t->sp_thread = 0;
        t->have_prev = 0;
    }
}

uint32_t prof_manager_frame_of(uint64_t method) {
    uint64_t v;
    if (prof_u64map_get(&mg.vm_frame, method, &v)) return (uint32_t)(v - 1);
    return mgr_native_frame(prof_g.profile, method);
}

void prof_manager_reset_tokens(void) {
    for (ProfThread *t = prof_g.threads; t; t = t->next_all)
        if (t->tokens) prof_u64map_clear(t->tokens);
}
