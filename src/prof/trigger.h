/* SPDX-License-Identifier: MIT */
/*
 * trigger.h - what makes samples happen: the fallback chain perf-hw -> perf-sw -> per-thread
 * CPU timer -> sampler thread, chosen once at start, plus wall-clock mode (sampler thread
 * signalling every thread, sleeping ones included), interval jitter and bursts.
 *
 * Arm/disarm run in normal context (caller holds g.reg).  prof_trigger_after_sample() runs in
 * the handler and is [signal-safe] (one ioctl or timer_settime at most).
 */
#ifndef PROF_TRIGGER_H
#define PROF_TRIGGER_H

#include "engine.h"

#include <signal.h>
#include <stddef.h>

/* Picks the trigger by arming it on the calling thread's slot t.  Writes the reasons for
 * skipped triggers into why (";"-separated).  Returns 0 or SAMPO_ENOTRIGGER. */
int prof_trigger_choose(ProfThread *t, char *why, size_t whylen);
/* Arms/disarms the chosen per-thread trigger on slot t (t must be the caller or its tid
 * must be valid). */
int prof_trigger_arm(ProfThread *t);
void prof_trigger_disarm(ProfThread *t);
/* Applies g.interval_ns to every armed thread (manager or control context). */
void prof_trigger_retime_all(void);
/* Starts/stops the sampler thread (THREAD trigger and wall mode). */
/* Grows the process's descriptor table to cover the perf events' fds now (nothing stays
 * open): growing it later, with other threads running, costs the growing thread an RCU grace
 * period in the kernel. */
void prof_trigger_reserve_fds(void);
int prof_sampler_start(void);
void prof_sampler_stop(void);
/* Sampler-thread CPU baseline for a new thread. */
void prof_trigger_thread_baseline(ProfThread *t);
/* Handler hook, before the sample: its weight, the periods it stands for (1 + the CPU
 * timer's overruns, or the perf-sw periods the kernel skipped). [signal-safe] */
uint8_t prof_trigger_sample_weight(ProfThread *t, const siginfo_t *si);
/* Handler hook, after the sample: the next period (perf-sw schedule, jitter, bursts).
 * [signal-safe] */
void prof_trigger_after_sample(ProfThread *t);
/* Handler hook when no sample is taken (the engine not enabled yet): a perf event armed for
 * one overflow is armed for the next, or it would stay off for good. [signal-safe] */
void prof_trigger_keep_armed(ProfThread *t);
/* Fastest interval the trigger delivers (kernel tick for CPU timers). */
uint64_t prof_trigger_floor_ns(SampoTrigger tr);
/* 1 if t->perf_fd is still the engine's event (fstat + PERF_EVENT_IOC_ID). [signal-safe] */
int prof_trigger_perf_ok(const ProfThread *t);
/* Manager: re-arms (and counts) perf events the program closed. */
void prof_trigger_check_lost(void);
/* Measures the cost of one delivered sample (signal + handler), in ns; 0 on failure. */
uint64_t prof_trigger_measure_cost(ProfThread *t);

#endif
