/* SPDX-License-Identifier: MIT */
/*
 * capture.h - the profiler's signal handler (PROF_SIG) and everything it touches: per-thread slots,
 * batches, the guarded frame-pointer walk and the VM frame walk.
 *
 * Signal safety: prof_handler and prof_capture_* marked [signal-safe] use only atomics,
 * memory the thread owns, sem_post, and syscalls; no malloc, locks or stdio.  errno is
 * saved and restored.  Everything else here runs in normal context.
 */
#ifndef PROF_CAPTURE_H
#define PROF_CAPTURE_H

#include "engine.h"

#include <signal.h>

/* The calling thread's slot (initial-exec TLS: no allocation on first access). */
extern __thread ProfThread *prof_tls __attribute__((tls_model("initial-exec")));

/* sigev_value of the engine's POSIX timers: tells our SI_TIMER signals from the program's. */
#define PROF_TIMER_COOKIE 0x53414d50

void prof_handler(int sig, siginfo_t *si, void *uc);
/* Sends PROF_SIG to thread tid of process pid, marked as ours (SI_QUEUE + cookie).
 * [signal-safe] */
void prof_signal_thread(pid_t pid, int tid);
int prof_capture_install(void);
void prof_capture_uninstall(void);

/* Allocates a slot for the calling thread (stack bounds, free ring, batches).  Normal
 * context; caller holds g.reg. */
ProfThread *prof_thread_alloc(const char *name);
/* Pushes t->cur onto the global full list (if non-empty) and takes a fresh batch.
 * [signal-safe] when called by the owner thread or after the owner is quiescent. */
void prof_flush(ProfThread *t);
/* Pushes a batch onto g.full. [signal-safe] */
void prof_full_push(ProfBatch *b);
/* Walks frame pointers from fp within [sp, hi); returns frames written to out (out[0] = pc).
 * Never dereferences outside the bounds. [signal-safe] */
uint32_t prof_walk_native(uintptr_t pc, uintptr_t sp, uintptr_t fp, uintptr_t lo, uintptr_t hi,
                          uint64_t *out, uint32_t max, uint8_t *flags);
/* Wall mode: called around interposed blocking calls by the thread itself. */
void prof_block_enter(void);
void prof_block_exit(void);
/* After EINTR in an interposed call: 1 if a profiler signal hit the thread while blocked. */
int prof_block_interrupted(void);
/* Sampler thread: writes a synthesized sample of thread t into the sampler slot, from the
 * stack cached on entry to a blocking call, or (waiting) from t's last signal sample when
 * t has not yet run since the previous tick's signal. */
void prof_capture_synth(ProfThread *t, uint64_t now, int waiting);

#endif
