/* SPDX-License-Identifier: MIT */
/*
 * controller_rule.c - the controller's cost/benefit rule (controller.h), pure functions of
 * samples, counters, sizes and the calibrated compile rate.  docs/design/jit.md, "The
 * controller", states it with the same names.
 */
#include "controller.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void jit_rule_defaults(JitRuleParams *p) {
    *p = (JitRuleParams){
        .speedup = 4.0,
        .fixed_ns = 5e6,
        .ns_per_byte = 20000.0,
        .expansion = 3.0,
        .call_ns = 40.0,
        .byte_ns = 4.0,
        .min_samples = 3,
        .threshold = 1000,
        .loop_threshold = 1000,
        .deopt_limit = 8,
        .traps_off = 4,
        .max_versions = 6,
        .max_failures = 2,
        .tick_ms = 50,
        .hz = 0,
        .alpha = 0,
        .edge_share = 0.5,
        .bg_share = 1.0,
        .small_recursive = -1,
        .tiny_inline = -1,
        .inline_band = 1,
        .inline_plan = 1,
        .measure_size = 1,
        .inline_hits = -1,
        .small_calls = -1,
        .quick_recompile = 1,
        .quick_first = 1,
    };
}

/* One numeric variable: absent leaves *out; present must lie in [lo, hi]. */
static int rule_env(const char *name, double lo, double hi, double *out, char *err, size_t errlen) {
    const char *s = getenv(name);
    if (!s) return 0;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !(v >= lo && v <= hi)) {
        snprintf(err, errlen, "%s: expected a number between %g and %g, got '%s'", name, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

int jit_rule_from_env(JitRuleParams *p, char *err, size_t errlen) {
    JitRuleParams q = *p;
    double th = q.threshold, lt = q.loop_threshold, dl = q.deopt_limit, to = q.traps_off,
           mv = q.max_versions, mf = q.max_failures, tk = q.tick_ms, hz = q.hz, ms = q.min_samples;
    if (rule_env("SOM_JIT_SPEEDUP", 1.01, 1000, &q.speedup, err, errlen) ||
        rule_env("SOM_JIT_COMPILE_FIXED_NS", 0, 1e10, &q.fixed_ns, err, errlen) ||
        rule_env("SOM_JIT_COMPILE_NS_PER_BYTE", 0, 1e9, &q.ns_per_byte, err, errlen) ||
        rule_env("SOM_JIT_EXPANSION", 1, 1000, &q.expansion, err, errlen) ||
        rule_env("SOM_JIT_CALL_NS", 0, 1e9, &q.call_ns, err, errlen) ||
        rule_env("SOM_JIT_BYTE_NS", 0, 1e9, &q.byte_ns, err, errlen) ||
        rule_env("SOM_JIT_MIN_SAMPLES", 1, 1e6, &ms, err, errlen) ||
        rule_env("SOM_JIT_THRESHOLD", 1, 1e9, &th, err, errlen) ||
        rule_env("SOM_JIT_LOOP_THRESHOLD", 1, 1e9, &lt, err, errlen) ||
        rule_env("SOM_JIT_DEOPT_LIMIT", 0, 1e9, &dl, err, errlen) ||
        rule_env("SOM_JIT_TRAPS_OFF_VERSION", 1, 1000, &to, err, errlen) ||
        rule_env("SOM_JIT_MAX_VERSIONS", 1, 1000, &mv, err, errlen) ||
        rule_env("SOM_JIT_MAX_FAILURES", 1, 1000, &mf, err, errlen) ||
        rule_env("SOM_JIT_TICK_MS", 1, 60000, &tk, err, errlen) ||
        rule_env("SOM_JIT_HZ", 25, 1000, &hz, err, errlen) ||
        rule_env("SOM_JIT_CALIBRATION_ALPHA", 0, 1, &q.alpha, err, errlen) ||
        rule_env("SOM_JIT_EDGE_SHARE", 0, 1, &q.edge_share, err, errlen) ||
        rule_env("SOM_JIT_BACKGROUND_SHARE", 0, 1, &q.bg_share, err, errlen) ||
        rule_env("SOM_JIT_SMALL_RECURSIVE", 0, 100000, &q.small_recursive, err, errlen) ||
        rule_env("SOM_JIT_TINY_INLINE", 0, 100000, &q.tiny_inline, err, errlen) ||
        rule_env("SOM_JIT_INLINE_BAND", 0, 1, &q.inline_band, err, errlen) ||
        rule_env("SOM_JIT_INLINE_PLAN", 0, 1, &q.inline_plan, err, errlen) ||
        rule_env("SOM_JIT_MEASURE_SIZE", 0, 1, &q.measure_size, err, errlen) ||
        rule_env("SOM_JIT_INLINE_HITS", 0, 1e15, &q.inline_hits, err, errlen) ||
        rule_env("SOM_JIT_SMALL_CALLS", 0, 100000, &q.small_calls, err, errlen) ||
        rule_env("SOM_JIT_QUICK_RECOMPILE", 0, 1, &q.quick_recompile, err, errlen) ||
        rule_env("SOM_JIT_QUICK_FIRST", 0, 2, &q.quick_first, err, errlen))
        return -1;
    q.min_samples = (uint32_t)ms, q.threshold = (uint32_t)th, q.loop_threshold = (uint32_t)lt;
    q.deopt_limit = (uint32_t)dl, q.traps_off = (uint32_t)to, q.max_versions = (uint32_t)mv;
    q.max_failures = (uint32_t)mf, q.tick_ms = (uint32_t)tk, q.hz = (uint32_t)hz;
    *p = q;
    return 0;
}

void jit_calib_init(JitCalib *c, const JitRuleParams *p) {
    *c = (JitCalib){p->fixed_ns, p->ns_per_byte, p->expansion, 0, 0, 0};
}

/* Means of the measurements: each measurement's weight is 1/n (a running mean, every
 * compilation weighing the same) or alpha once 1/n falls below it (an exponentially weighted
 * mean).  The first measurement of each replaces the guess: the defaults are guesses, a
 * measurement on this machine is not.  Compile time is fixed + rate * bytes: a small function
 * measures the fixed part, a larger one the rate beyond it (one rate from small functions
 * alone would charge a 700-byte function 100x a 7-byte one's 5 ms).  The running mean is the
 * default: an exponentially weighted mean with alpha 0.25 follows the last few compilations,
 * and since they differ in kind (a leaf method compiles to its own bytes, a driver to 40x
 * them), two runs of one program estimated the same method's cost at 13 and at 200 ms
 * depending on what the compiler thread had done just before - and so compiled different
 * methods. */
static double calib_weight(const JitRuleParams *p, uint32_t n) {
    double w = 1.0 / (double)(n + 1);
    return w > p->alpha ? w : p->alpha;
}

void jit_calib_update(JitCalib *c, const JitRuleParams *p, uint64_t compile_ns, uint32_t root_bytes,
                      uint32_t total_bytes) {
    if (!total_bytes || !root_bytes) return;
    double ns = (double)compile_ns;
    if (total_bytes <= JIT_CALIB_SMALL_BYTES) {
        c->fixed_ns += calib_weight(p, c->nfixed) * (ns - c->fixed_ns);
        c->nfixed++;
    } else {
        double rate = (ns > c->fixed_ns ? ns - c->fixed_ns : 0) / (double)total_bytes;
        c->ns_per_byte += calib_weight(p, c->nrate) * (rate - c->ns_per_byte);
        c->nrate++;
    }
    double exp = (double)total_bytes / (double)root_bytes;
    c->expansion += calib_weight(p, c->n) * (exp - c->expansion);
    c->n++;
}

bool jit_rule_decide(const JitRuleParams *p, const JitCalib *c, const JitCandidate *x,
                     JitEstimate *e) {
    /* past time: the samples, or - too few of them yet - the counters converted at the
     * interpreter's cost per activation (a back edge costs as much as one run of the
     * method's bytes, a conservative share of a loop body that calls nothing).  With enough
     * samples the counters still set a floor at the cost of the calls alone: a small method
     * called very often from compiled code spends its time in the calls (a nested
     * interpreter level per call), which its own samples do not see.  A method whose time
     * goes to small callees (a loop calling `do:`) counts a share of the samples through
     * those call edges too: compiled, it inlines them. */
    double own = (double)x->samples + p->edge_share * (double)x->edge_samples;
    double sampled = x->sample_ns > 0 ? own * x->sample_ns : 0;
    double per = p->call_ns + p->byte_ns * (double)x->code_len;
    double counted = (double)(x->invocations + x->loop_iters) * per;
    e->from_samples = own >= (double)p->min_samples && x->sample_ns > 0;
    double calls = (double)x->invocations * p->call_ns;
    e->past_ns = e->from_samples ? (sampled > calls ? sampled : calls)
                                 : (sampled > counted ? sampled : counted);
    e->future_ns = e->past_ns; /* the program runs as long again */
    e->benefit_ns = e->future_ns * (1.0 - 1.0 / p->speedup);
    double size = x->known_size ? (double)x->known_size : (double)x->code_len * c->expansion;
    e->cost_ns = c->fixed_ns + size * c->ns_per_byte;
    e->compile = e->benefit_ns > e->cost_ns;
    return e->compile;
}

bool jit_rule_invalidate(const JitRuleParams *p, uint64_t deopts) {
    return deopts > p->deopt_limit;
}

bool jit_rule_version_ok(const JitRuleParams *p, uint32_t version, bool *unreached_traps) {
    if (unreached_traps) *unreached_traps = version < p->traps_off;
    return version >= 1 && version <= p->max_versions;
}

uint64_t jit_rule_backoff(const JitRuleParams *p, uint32_t version) {
    uint32_t sh = version ? version - 1 : 0;
    if (sh > 20) sh = 20;
    return (uint64_t)p->threshold << sh;
}

uint32_t jit_rule_pace(const JitRuleParams *p, uint32_t skip, uint64_t cost_ns) {
    double span = (double)p->tick_ms * 1e6 * (double)(skip + 1);
    if ((double)cost_ns > 0.01 * span && skip < 1023) return skip * 2 + 1;
    if ((double)cost_ns < 0.0025 * span && skip) return skip / 2;
    return skip;
}
