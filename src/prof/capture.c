/* SPDX-License-Identifier: MIT */
/*
 * capture.c - signal-handler side of the pipeline (see capture.h and engine.h).
 *
 * Hazards, named: the handler may interrupt the thread anywhere, including malloc and the
 * VM's frame push; so it reads VM frames only through the chain the VM published (the VM
 * must link a frame before publishing it as top), it never follows a frame pointer outside
 * [interrupted sp, stack top) or misaligned, and it reserves room for the largest record
 * before walking, so a visited mark is never set for a sample that is then dropped.
 */
#include "capture.h"
#include "trigger.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* The walks read other frames' stack words and VM frames: not ASan/TSan material. */
#define PROF_NO_SAN __attribute__((no_sanitize_address, no_sanitize_thread))

__thread ProfThread *prof_tls __attribute__((tls_model("initial-exec")));

/* ---- batches ------------------------------------------------------------------------ */

void prof_full_push(ProfBatch *b) {
    ProfBatch *head = atomic_load_explicit(&prof_g.full, memory_order_relaxed);
    do {
        b->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&prof_g.full, &head, b, memory_order_release,
                                                    memory_order_relaxed));
    sem_post(&prof_g.wake);
}

void prof_flush(ProfThread *t) {
    if (t->cur && t->cur->nsamples) {
        prof_full_push(t->cur);
        t->cur = NULL;
    }
    if (!t->cur) t->cur = prof_ring_pop(&t->free);
}

/* Current batch with room for the largest record, or NULL (sample dropped). */
static ProfBatch *capture_room(ProfThread *t) {
    if (!t->cur) t->cur = prof_ring_pop(&t->free);
    ProfBatch *b = t->cur;
    if (b && b->cap - b->used < prof_g.rec_max_words) {
        prof_flush(t);
        b = t->cur;
    }
    if (!b) atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
    return b;
}

/* ---- stack walks ------------------------------------------------------------------------ */

PROF_NO_SAN uint32_t prof_walk_native(uintptr_t pc, uintptr_t sp, uintptr_t fp, uintptr_t lo,
                                      uintptr_t hi, uint64_t *out, uint32_t max, uint8_t *flags) {
    uint32_t n = 0;
    out[n++] = pc;
    if (sp < lo || sp >= hi) {
        *flags |= REC_WALK_ERR; /* not on the thread's own stack (e.g. sigaltstack) */
        return n;
    }
    while (fp) {
        if (fp < sp || fp > hi - 16 || (fp & 7)) {
            /* code without frame pointers (glibc's start-up, libraries) leaves a stale value
             * in the outermost saved fp: past two frames this is the end of the chain */
            if (n < 3) *flags |= REC_WALK_ERR;
            break;
        }
        if (n >= max) {
            *flags |= REC_TRUNC;
            break;
        }
        uintptr_t next = ((const uintptr_t *)fp)[0];
        uintptr_t ret = ((const uintptr_t *)fp)[1];
        if (ret < 4096) break; /* outermost frame */
        out[n++] = ret;
        if (next && next <= fp) { /* not growing: garbage, or the end (see above) */
            if (n < 3) *flags |= REC_WALK_ERR;
            break;
        }
        fp = next;
    }
    return n;
}

PROF_NO_SAN static uint32_t walk_chain(ProfThread *t, SampoFrameInfo *out, uint32_t max,
                                       uint8_t *flags) {
    uint32_t mark = atomic_load_explicit(&prof_g.mark, memory_order_relaxed);
    int paused = (*flags & REC_PAUSED) != 0; /* a full walk that leaves no marks */
    SampoVmFrame *f = *t->vm_top;
    uint32_t n = 0;
    for (; f && n < max; f = f->caller) {
        int seen = !paused && f->flags == mark;
        out[n++] = (SampoFrameInfo){f->method, f->pos, (uint32_t)seen, (uint64_t)(uintptr_t)f};
        if (seen) break;
        if (!paused) f->flags = mark;
    }
    if (n && out[n - 1].visited)
        *flags |= REC_PARTIAL;
    else if (f)
        *flags |= REC_TRUNC;
    return n;
}

static uint32_t walk_vm(ProfThread *t, SampoFrameInfo *out, uint32_t max, uint8_t *flags) {
    uint32_t n = 0;
    if (t->cb) {
        int k = t->cb(t->cb_ctx, out, (int)max);
        n = k < 0 ? 0 : (uint32_t)k > max ? max : (uint32_t)k;
        if (n && out[n - 1].visited) *flags |= REC_PARTIAL;
    } else if (t->vm_top) {
        n = walk_chain(t, out, max, flags);
    }
    if (n && out[0].visited) *flags |= REC_TOP_REPEAT;
    return n;
}

/* ---- the handler ---------------------------------------------------------------------- */

static void capture_regs(void *ucv, uintptr_t *pc, uintptr_t *sp, uintptr_t *fp) {
    ucontext_t *uc = ucv;
#if defined(__x86_64__)
    *pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    *sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    *fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__aarch64__)
    *pc = (uintptr_t)uc->uc_mcontext.pc;
    *sp = (uintptr_t)uc->uc_mcontext.sp;
    *fp = (uintptr_t)uc->uc_mcontext.regs[29];
#else
    (void)uc;
    *pc = *sp = *fp = 0;
#endif
}

/* Takes one sample of the interrupted context into t's batch. */
PROF_NO_SAN static void capture_sample(ProfThread *t, void *uc, uint8_t weight, int paused) {
    ProfBatch *b = capture_room(t);
    if (!b) return;
    uintptr_t pc, sp, fp;
    capture_regs(uc, &pc, &sp, &fp);
    ProfRec *r = (ProfRec *)(b->data + b->used);
    uint64_t *pcs = (uint64_t *)(r + 1);
    uint8_t flags = atomic_load_explicit(&prof_g.calibrating, memory_order_relaxed) ? REC_CALIB : 0;
    if (paused) flags |= REC_PAUSED;
    t->cap_paused = paused;
    uint32_t max = prof_g.cfg.max_depth;
    uint32_t nn = prof_walk_native(pc, sp, fp, t->stack_lo, t->stack_hi, pcs, max, &flags);
    uint32_t nsw = 0;
    if (sp >= t->stack_lo && sp < t->stack_hi && !(sp & 7)) {
        nsw = (uint32_t)((t->stack_hi - sp) / 8);
        if (nsw > PROF_STACK_WORDS) nsw = PROF_STACK_WORDS;
        for (uint32_t i = 0; i < nsw; i++)
            pcs[nn + i] = ((const uint64_t *)sp)[i];
    }
    SampoFrameInfo *vf = (SampoFrameInfo *)(pcs + nn + nsw);
    uint32_t nv = walk_vm(t, vf, max, &flags);
    t->cap_paused = 0; /* (a paused sample that a callback still cut at a mark is partial:
                        * the manager drops it) */
    uint64_t now = prof_now_ns();
    *r = (ProfRec){.words = (uint32_t)(PROF_REC_WORDS + nn + nsw + nv * PROF_VMF_WORDS),
                   .tid = (uint32_t)t->tid,
                   .time_ns = now,
                   .pc = pc,
                   .fp = fp,
                   .n_native = (uint16_t)nn,
                   .n_vm = (uint16_t)nv,
                   .state = t->state_ptr ? *t->state_ptr : t->state,
                   .flags = flags,
                   .nsw = (uint8_t)nsw,
                   .weight = weight};
    if (!b->nsamples) b->first_ns = now;
    b->used += r->words;
    b->nsamples++;
    atomic_fetch_add_explicit(paused ? &t->taken_paused : &t->taken, 1, memory_order_relaxed);
    /* wall mode: the stack kept for samples of this thread while it waits */
    if (!paused && prof_g.cfg.mode == SAMPO_MODE_WALL) {
        uint32_t s = atomic_load_explicit(&t->lseq, memory_order_relaxed);
        atomic_store_explicit(&t->lseq, s + 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_release);
        t->ln = nn < PROF_BLOCK_DEPTH ? nn : PROF_BLOCK_DEPTH;
        for (uint32_t i = 0; i < t->ln; i++)
            t->lpcs[i] = pcs[i];
        t->lnsw = nsw;
        for (uint32_t i = 0; i < nsw; i++)
            t->lsw[i] = pcs[nn + i];
        atomic_store_explicit(&t->lseq, s + 2, memory_order_release);
    }
    if (!paused && (flags & REC_WALK_ERR))
        atomic_fetch_add_explicit(&t->walk_err, 1, memory_order_relaxed);
    if (!paused && (flags & REC_TRUNC))
        atomic_fetch_add_explicit(&t->truncated, 1, memory_order_relaxed);
    if (b->cap - b->used < prof_g.rec_max_words || now - b->first_ns > PROF_FLUSH_NS) prof_flush(t);
}

int prof_sig;

/* Our signals: perf fds (F_SETSIG gives a POLL_* band code), our timers (SI_TIMER carrying
 * PROF_TIMER_COOKIE) and the sampler's or cost loop's prof_signal_thread (SI_QUEUE with the
 * cookie, from this process).  Anything
 * else on the profiler's signal was sent by the program (or to it) and goes to the
 * program's own handler, if it installed one. */
static int capture_is_ours(const siginfo_t *si) {
    if (!si) return 1;
    if (si->si_code == SI_TIMER) return si->si_value.sival_int == PROF_TIMER_COOKIE;
    if (si->si_code > 0 && si->si_code <= POLL_HUP) return 1;
    return si->si_code == SI_QUEUE && si->si_value.sival_int == PROF_TIMER_COOKIE &&
           si->si_pid == getpid();
}

void prof_signal_thread(pid_t pid, int tid) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = PROF_SIG;
    si.si_code = SI_QUEUE; /* not SI_TKILL: a program's raise() must not pass for ours */
    si.si_pid = pid;
    si.si_uid = getuid();
    si.si_value.sival_int = PROF_TIMER_COOKIE;
    syscall(SYS_rt_tgsigqueueinfo, pid, tid, PROF_SIG, &si);
}

/* Hands a signal that is not ours to the program's action a (if set); 0 if there is none. */
static int capture_chain_to(const struct sigaction *a, _Atomic int *set, int sig, siginfo_t *si,
                            void *uc) {
    if (!atomic_load_explicit(set, memory_order_acquire)) return 0;
    if (a->sa_flags & SA_SIGINFO) {
        if (a->sa_sigaction) a->sa_sigaction(sig, si, uc);
    } else if (a->sa_handler != SIG_IGN && a->sa_handler != SIG_DFL) {
        a->sa_handler(sig);
    }
    return 1;
}

static void capture_chain(int sig, siginfo_t *si, void *uc) {
    if (!capture_chain_to(&prof_g.prog_sa, &prof_g.prog_sa_set, sig, si, uc))
        atomic_fetch_add_explicit(&prof_g.foreign, 1, memory_order_relaxed);
}

static void capture_sigio(int sig, siginfo_t *si, void *uc) {
    int saved = errno;
    if (!capture_chain_to(&prof_g.prog_io_sa, &prof_g.prog_io_set, sig, si, uc))
        atomic_fetch_add_explicit(&prof_g.sigio_fallback, 1, memory_order_relaxed);
    errno = saved;
}

void prof_handler(int sig, siginfo_t *si, void *uc) {
    int saved = errno;
    if (!capture_is_ours(si)) {
        capture_chain(sig, si, uc);
        errno = saved;
        return;
    }
    if (prof_g.cfg.empty_handler) return; /* benchmark floor */
    ProfThread *t = prof_tls;
    if (!t) {
        atomic_fetch_add_explicit(&prof_g.foreign, 1, memory_order_relaxed);
        goto out;
    }
    atomic_store(&t->in_handler, 1); /* seq_cst: pairs with the stop path's store of enabled */
    atomic_store_explicit(&t->sig_pending, 0, memory_order_relaxed);
    if (atomic_load_explicit(&t->blocked, memory_order_relaxed))
        atomic_store_explicit(&t->hit_blocked, 1, memory_order_relaxed);
    int paused = atomic_load_explicit(&prof_g.paused, memory_order_relaxed);
    if (atomic_load(&prof_g.enabled) && (!paused || prof_g.cfg.feed_paused)) {
        capture_sample(t, uc, prof_trigger_sample_weight(t, si), paused);
        prof_trigger_after_sample(t);
    } else {
        prof_trigger_keep_armed(t);
    }
    atomic_store_explicit(&t->in_handler, 0, memory_order_release);
out:
    errno = saved;
}

/* The highest real-time signal the program leaves at SIG_DFL (or SAMPO_SIGNAL). */
static int capture_pick_signal(void) {
    const char *e = getenv("SAMPO_SIGNAL");
    if (e && *e) {
        int s = atoi(e);
        return s > 0 && s < NSIG && s != SIGKILL && s != SIGSTOP ? s : -1;
    }
    for (int s = SIGRTMAX; s >= SIGRTMIN; s--) {
        struct sigaction cur;
        if (sigaction(s, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
            cur.sa_handler == SIG_DFL)
            return s;
    }
    return -1;
}

int prof_capture_install(void) {
    if (prof_g.handler_installed) return 0;
    if (!prof_sig && (prof_sig = capture_pick_signal()) < 0) {
        prof_sig = 0;
        return -1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = prof_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(PROF_SIG, &sa, &prof_g.old_sa)) return -1;
    prof_g.handler_installed = 1;
    struct sigaction io;
    if (sigaction(SIGIO, NULL, &io) == 0 && !(io.sa_flags & SA_SIGINFO) &&
        io.sa_handler == SIG_DFL) {
        sa.sa_sigaction = capture_sigio;
        if (sigaction(SIGIO, &sa, NULL) == 0) prof_g.sigio_installed = 1;
    }
    return 0;
}

void prof_capture_uninstall(void) {
    /* Keep our handler installed: a late signal that is still pending when we stop must not
     * hit SIG_DFL (which would kill the process).  The handler is gated by g.enabled. */
}

/* ---- thread slots ------------------------------------------------------------------- */

static void capture_stack_bounds(ProfThread *t) {
    pthread_attr_t a;
    void *addr = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getstack(&a, &addr, &size);
        pthread_attr_destroy(&a);
    }
    t->stack_lo = (uintptr_t)addr;
    t->stack_hi = (uintptr_t)addr + size;
}

ProfThread *prof_thread_alloc(const char *name) {
    ProfThread *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    if (prof_ring_init(&t->free, 8)) {
        free(t);
        return NULL;
    }
    t->tid = prof_gettid();
    t->perf_fd = -1;
    t->rng = (uint64_t)t->tid * 0x9e3779b97f4a7c15ull ^ prof_now_ns();
    atomic_init(&t->alive, 1);
    capture_stack_bounds(t);
    if (name) {
        snprintf(t->name, sizeof t->name, "%s", name);
        t->name_given = 1;
    } else if (pthread_getname_np(pthread_self(), t->name, sizeof t->name))
        t->name[0] = 0;
    return t;
}

/* ---- wall mode: blocking calls ------------------------------------------------------------ */

void prof_block_enter(void) {
    ProfThread *t = prof_tls;
    if (!t || !prof_g.cfg.wall_interpose || !atomic_load(&prof_g.enabled)) return;
    if (prof_g.cfg.mode != SAMPO_MODE_WALL) {
        /* CPU mode: perf events exclude the kernel and cannot fire here, but the tick-driven
         * CPU timer can expire in the CPU part of the call just before it sleeps, and then
         * the call fails with EINTR; marked, the wrapper resumes it (no stack cached) */
        if (prof_g.trigger != SAMPO_TRIGGER_TIMER) return;
        atomic_store_explicit(&t->hit_blocked, 0, memory_order_relaxed);
        atomic_store_explicit(&t->blocked, 1, memory_order_seq_cst);
        return;
    }
    uint8_t flags = 0;
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    uint32_t s = atomic_load_explicit(&t->bseq, memory_order_relaxed);
    atomic_store_explicit(&t->bseq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    t->bn = prof_walk_native((uintptr_t)__builtin_return_address(0), fp, *(uintptr_t *)fp,
                             t->stack_lo, t->stack_hi, t->bpcs, PROF_BLOCK_DEPTH, &flags);
    atomic_store_explicit(&t->bseq, s + 2, memory_order_release);
    atomic_store_explicit(&t->hit_blocked, 0, memory_order_relaxed);
    atomic_store_explicit(&t->blocked, 1, memory_order_seq_cst);
}

int prof_block_interrupted(void) {
    ProfThread *t = prof_tls;
    if (!t || !atomic_load_explicit(&t->hit_blocked, memory_order_relaxed)) return 0;
    atomic_store_explicit(&t->hit_blocked, 0, memory_order_relaxed);
    return 1;
}

void prof_block_exit(void) {
    ProfThread *t = prof_tls;
    if (t) atomic_store_explicit(&t->blocked, 0, memory_order_relaxed);
}

void prof_capture_synth(ProfThread *t, uint64_t now, int waiting) {
    ProfThread *s = prof_g.sampler_slot;
    ProfBatch *b = capture_room(s);
    if (!b) return;
    ProfRec *r = (ProfRec *)(b->data + b->used);
    uint64_t *pcs = (uint64_t *)(r + 1);
    uint32_t n, seq;
    int tries = 0;
    _Atomic uint32_t *sq = waiting ? &t->lseq : &t->bseq;
    const uint32_t *np = waiting ? &t->ln : &t->bn;
    const uint64_t *src = waiting ? t->lpcs : t->bpcs;
    do {
        seq = atomic_load_explicit(sq, memory_order_acquire);
        n = *np < PROF_BLOCK_DEPTH ? *np : PROF_BLOCK_DEPTH;
        memcpy(pcs, src, n * sizeof *pcs);
        atomic_thread_fence(memory_order_acquire);
    } while (((seq & 1) || seq != atomic_load_explicit(sq, memory_order_relaxed)) && ++tries < 4);
    if (!n) {
        if (waiting) atomic_store(&t->sig_pending, 0); /* nothing cached: signal next tick */
        return;
    }
    uint32_t nsw = 0;
    if (waiting && n == t->ln) { /* copy the stack words too (seqlock re-checked below) */
        nsw = t->lnsw < PROF_STACK_WORDS ? t->lnsw : PROF_STACK_WORDS;
        memcpy(pcs + n, t->lsw, nsw * sizeof *pcs);
        if (atomic_load_explicit(sq, memory_order_acquire) != seq) nsw = 0;
    }
    uint8_t st = t->state_ptr ? *t->state_ptr : t->state;
    if (waiting)
        st = st ? st : SAMPO_VM_NONE; /* runnable, waiting for a CPU */
    else
        st = st ? st : SAMPO_VM_IDLE;
    *r = (ProfRec){.words = (uint32_t)(PROF_REC_WORDS + n + nsw),
                   .tid = (uint32_t)t->tid,
                   .time_ns = now,
                   .pc = pcs[0],
                   .n_native = (uint16_t)n,
                   .state = st,
                   .flags = REC_SYNTH,
                   .nsw = (uint8_t)nsw,
                   .weight = 1};
    if (!b->nsamples) b->first_ns = now;
    b->used += r->words;
    b->nsamples++;
    atomic_fetch_add_explicit(&s->taken, 1, memory_order_relaxed);
    if (b->cap - b->used < prof_g.rec_max_words || now - b->first_ns > PROF_FLUSH_NS) prof_flush(s);
}
