/* SPDX-License-Identifier: MIT */
/*
 * manager.h - the manager thread: drains the global batch list, symbolizes, updates the
 * CC-Maps, the PC ring, the self-tuner and the in-memory profile, and recycles batches.
 *
 * Runs in normal context; takes g.reg then g.data (never the reverse).  Not signal-safe.
 */
#ifndef PROF_MANAGER_H
#define PROF_MANAGER_H

#include "engine.h"

int prof_manager_start(void);
/* Stops the thread after a final drain (handlers must be quiescent). */
void prof_manager_stop(void);
/* Processes everything queued now; harvest_cur also takes every thread's current batch
 * (only when handlers are quiescent). */
void prof_manager_drain(int harvest_cur);
/* Allocates/frees the data the manager builds (profile, CC-Map, PC ring, symbols). */
int prof_manager_data_init(void);
void prof_manager_data_fini(void);
/* Hands initial batches to a new slot (caller holds g.reg). */
void prof_manager_give_batches(ProfThread *t, int n);
/* Records an event (caller holds g.data). */
void prof_manager_event(int kind, int64_t a, int64_t b, const char *text);
/* SpProfile frame id of a CC-Map method id (caller holds g.data). */
uint32_t prof_manager_frame_of(uint64_t method);
/* Clears tokens of all threads (caller holds g.reg and g.data). */
void prof_manager_reset_tokens(void);

#endif
