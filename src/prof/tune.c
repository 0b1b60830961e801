/* SPDX-License-Identifier: MIT */
/*
 * tune.c - self-tuning interval decisions (see tune.h).  Pure; no clock of its own.
 *
 * Rule, once per window of samples:
 *   overhead = cost_ns * samples / elapsed  > budget  -> lengthen (x2)
 *   repetition rate > high  (we keep seeing the same activation: too fine) -> lengthen (x2)
 *   repetition rate < low   (activations change between samples: too coarse) -> shorten (/2)
 * clamped to [min_ns, max_ns]; min_ns already includes the budget floor.
 */
#include "tune.h"

uint64_t prof_tune_budget_interval(uint64_t cost_ns, double budget) {
    if (budget <= 0 || cost_ns == 0) return 0;
    return (uint64_t)((double)cost_ns / budget);
}

void prof_tune_init(ProfTune *t, uint64_t interval_ns, uint64_t cost_ns, double budget, double low,
                    double high, uint32_t window, int freeze, uint64_t floor_ns) {
    *t = (ProfTune){.low = low,
                    .high = high,
                    .budget = budget,
                    .window = window ? window : 1000,
                    .freeze = freeze,
                    .cost_ns = cost_ns};
    uint64_t b = prof_tune_budget_interval(cost_ns, budget);
    t->min_ns = b > floor_ns ? b : floor_ns;
    if (t->min_ns < 50000) t->min_ns = 50000; /* 20 kHz: beyond any trigger here */
    /* at most 8x the starting interval (and 10 Hz): for native code the repetition test
     * (same function, same frame pointer) also fires for a loop that calls the same function
     * again and again, which would otherwise drive the rate down to the cap */
    uint64_t start = interval_ns > t->min_ns ? interval_ns : t->min_ns;
    t->max_ns = start * 8 < 100000000 ? start * 8 : 100000000;
    if (t->min_ns > t->max_ns) t->max_ns = t->min_ns;
    if (interval_ns < t->min_ns) interval_ns = t->min_ns;
    if (interval_ns > t->max_ns) interval_ns = t->max_ns;
    t->interval_ns = interval_ns;
}

static uint64_t tune_clamp(const ProfTune *t, uint64_t v) {
    return v < t->min_ns ? t->min_ns : v > t->max_ns ? t->max_ns : v;
}

/* Decides at the end of a window; returns the new interval. */
static uint64_t tune_decide(ProfTune *t, uint64_t now_ns) {
    double rate = (double)t->rep / (double)t->n;
    t->last_rate = rate;
    uint64_t elapsed = now_ns > t->win_start_ns ? now_ns - t->win_start_ns : 0;
    double overhead = elapsed ? (double)t->cost_ns * t->n / (double)elapsed : 0;
    if (t->budget > 0 && overhead > t->budget * 1.1) return tune_clamp(t, t->interval_ns * 2);
    if (rate > t->high) return tune_clamp(t, t->interval_ns * 2);
    if (rate < t->low) return tune_clamp(t, t->interval_ns / 2);
    return t->interval_ns;
}

int prof_tune_sample(ProfTune *t, int repeated, uint64_t now_ns, uint64_t *old_ns,
                     uint64_t *new_ns) {
    if (t->n == 0) t->win_start_ns = now_ns;
    t->n++;
    t->rep += repeated != 0;
    if (t->n < t->window) return 0;
    uint64_t next = t->frozen ? t->interval_ns : tune_decide(t, now_ns);
    t->n = t->rep = 0;
    if (next == t->interval_ns) {
        if (++t->stable >= 3 && t->freeze) t->frozen = 1;
        return 0;
    }
    t->stable = 0;
    t->changes++;
    if (old_ns) *old_ns = t->interval_ns;
    if (new_ns) *new_ns = next;
    t->interval_ns = next;
    return 1;
}
