/* SPDX-License-Identifier: MIT */
/*
 * preload.h - engine hooks the preload library needs: fork handling and the flag that
 * keeps the engine's own threads (manager, sampler) out of pthread_create interposition.
 * Normal context only.
 */
#ifndef PROF_PRELOAD_H
#define PROF_PRELOAD_H

/* Nonzero while the engine creates one of its own threads (thread-local). */
extern __thread int prof_internal_thread;

void prof_engine_atfork_prepare(void);
void prof_engine_atfork_parent(void);
/* In a forked child: switches this copy of the engine off (no threads survive fork). */
void prof_engine_forget_after_fork(void);

/* Stops the engine writing the profile to path instead of the configured output (exec). */
int prof_engine_stop_to(const char *path);
/* The absolute output path of the current or last run ("" if none). */
const char *prof_engine_out_path(void);

#endif
