/* SPDX-License-Identifier: MIT */
/*
 * tune.h - the self-tuning sampling interval (Rotor): keeps the repetition rate of the top
 * activation between two thresholds, within an overhead budget.
 *
 * Owns: ProfTune, a pure state machine driven by (repeated?, timestamp) per sample, so unit
 * tests drive it with a fake clock.  Invariant: min_ns <= interval_ns <= max_ns, and
 * interval_ns >= cost_ns / budget whenever the budget is enforceable.
 * Not thread-safe (one manager thread), not signal-safe.
 */
#ifndef PROF_TUNE_H
#define PROF_TUNE_H

#include <stdint.h>

typedef struct ProfTune {
    double low, high; /* repetition thresholds */
    double budget;    /* overhead fraction */
    uint32_t window;  /* samples per decision */
    int freeze;       /* freeze once stable */
    uint64_t cost_ns; /* measured per-sample cost */
    uint64_t min_ns, max_ns;
    uint64_t interval_ns; /* current */
    uint32_t n, rep;      /* current window */
    uint64_t win_start_ns;
    uint32_t stable; /* consecutive windows without change */
    int frozen;
    uint32_t changes;
    double last_rate; /* repetition rate of the last full window */
} ProfTune;

/* floor_ns: the trigger's fastest interval (e.g. kernel tick for CPU timers). */
void prof_tune_init(ProfTune *t, uint64_t interval_ns, uint64_t cost_ns, double budget, double low,
                    double high, uint32_t window, int freeze, uint64_t floor_ns);
/* Interval allowed by the budget alone. */
uint64_t prof_tune_budget_interval(uint64_t cost_ns, double budget);
/* Feeds one sample; returns 1 and sets old_ns, new_ns when the interval changes. */
int prof_tune_sample(ProfTune *t, int repeated, uint64_t now_ns, uint64_t *old_ns,
                     uint64_t *new_ns);

#endif
