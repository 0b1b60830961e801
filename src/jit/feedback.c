/* SPDX-License-Identifier: MIT */
/*
 * feedback.c - sampled type feedback in compiled code: the rules (pure) and the observation
 * that compiled code calls (feedback.h; docs/design/jit.md, "Sampled type feedback").
 */
#include "feedback.h"

#include <string.h>

#include "bytecode.h"
#include "controller.h"
#include "object.h"

#define FB_BIT(a, b) (1u << ((a)*4 + (b)))
#define FB_KINDS 0xffffu

void jit_fb_defaults(JitFbParams *p) {
    *p = (JitFbParams){.on = true,
                       .t1 = 20,
                       .t2_factor = 10,
                       .ready_share = 0.5,
                       .burst = 512,
                       .loop = JFB_LOOP_THRESHOLD,
                       .cooldown_ns = 100000000ull};
}

static const char *const loop_names[] = {"cooldown", "threshold", "none"};

bool jit_fb_parse_loop(const char *s, uint32_t *out) {
    for (uint32_t i = 0; i < 3; i++)
        if (!strcmp(s, loop_names[i])) {
            *out = i;
            return true;
        }
    return false;
}

const char *jit_fb_loop_name(uint32_t loop) {
    return loop < 3 ? loop_names[loop] : "?";
}

uint32_t jit_fb_kinds(Value a, Value b) {
    return FB_BIT(som_tf_kind(a), som_tf_kind(b));
}

bool jit_fb_op_has_double(uint8_t op) {
    switch (op) {
    case BC_ADD:
    case BC_SUB:
    case BC_MUL:
    case BC_LT:
    case BC_GT:
    case BC_LE:
    case BC_GE:
    case BC_EQ:
        return true;
    default:
        return false;
    }
}

bool jit_fb_narrower(uint8_t op, uint32_t compiled, uint32_t observed) {
    uint32_t c = compiled & FB_KINDS, o = observed & FB_KINDS;
    if (!o || (o & ~c) || o == c) return false; /* nothing seen, wider, or the same */
    if (compiled & TF_OVERFLOWED) return false; /* integers would overflow again */
    if (o == FB_BIT(TF_INT, TF_INT)) return true;
    uint32_t dbl = FB_BIT(TF_DOUBLE, TF_DOUBLE) | FB_BIT(TF_DOUBLE, TF_INT);
    return jit_fb_op_has_double(op) && (o & ~dbl) == 0;
}

bool jit_fb_slot_useful(uint8_t op, uint32_t kinds) {
    uint32_t c = kinds & FB_KINDS, ii = FB_BIT(TF_INT, TF_INT);
    uint32_t dbl = FB_BIT(TF_DOUBLE, TF_DOUBLE) | FB_BIT(TF_DOUBLE, TF_INT);
    if (kinds & TF_OVERFLOWED) return false;
    return ((c & ii) && c != ii) || (jit_fb_op_has_double(op) && (c & dbl) && (c & ~dbl));
}

bool jit_fb_slot_narrower(const JitFbSlot *s) {
    if (s->s.op != JIT_FB_SEND) return jit_fb_narrower(s->s.op, s->s.compiled, s->bits);
    /* a send compiled generically (megamorphic, or more classes than it may guard) whose
     * receivers now fit the guards */
    return s->s.compiled > s->s.max_poly && s->ncls && !s->many && s->ncls <= s->s.max_poly;
}

static void record_class(JitFbSlot *s, SomClass *cls) {
    for (uint32_t i = 0; i < s->ncls; i++)
        if (s->cls[i] == cls) {
            s->cls_n[i]++;
            return;
        }
    if (s->ncls == JIT_FB_MAX_CLASSES) {
        s->many = 1;
        return;
    }
    s->cls[s->ncls] = cls;
    s->cls_n[s->ncls++] = 1;
}

bool jit_fb_record(const JitFbParams *p, JitFbTable *t, JitFbSlot *s, uint32_t kinds, SomClass *cls,
                   uint64_t now) {
    if (!s->n) s->first_ns = now;
    s->n++;
    s->bits |= kinds;
    if (s->s.op == JIT_FB_SEND) record_class(s, cls);
    t->observations++;
    uint64_t t2 = (uint64_t)p->t2_factor * t->t1;
    if (!t->ready && s->n > t2) { /* pollution: start over */
        s->n = 0;
        s->bits = 0;
        s->ncls = s->many = 0;
        s->clears++;
        t->clears++;
        return true;
    }
    return false;
}

bool jit_fb_table_ready(const JitFbParams *p, JitFbTable *t) {
    if (!t->nslots) return false;
    uint32_t ready = 0;
    bool narrower = false;
    uint64_t phase = 0;
    for (uint32_t i = 0; i < t->nslots; i++) {
        const JitFbSlot *s = &t->slots[i];
        if (s->n < t->t1) continue;
        ready++;
        if (jit_fb_slot_narrower(s)) {
            narrower = true;
            if (s->first_ns > phase) phase = s->first_ns;
        }
    }
    if (!narrower || (double)ready < p->ready_share * (double)t->nslots) return false;
    t->phase_ns = phase;
    return true;
}

uint32_t jit_fb_override(const JitFbTable *t, const JitFbSlot *s) {
    if (s->s.op != JIT_FB_SEND && s->n >= t->t1 && jit_fb_narrower(s->s.op, s->s.compiled, s->bits))
        return s->bits | (s->s.compiled & TF_OVERFLOWED);
    return s->s.compiled;
}

uint32_t jit_fb_t1(const JitFbParams *p, const JitFbMethod *m) {
    uint64_t t = (uint64_t)p->t1 + m->t1_extra;
    return t > 1000000 ? 1000000 : (uint32_t)t;
}

void jit_fb_deopt(const JitFbParams *p, JitFbMethod *m, uint32_t version, bool invalidated,
                  uint64_t now) {
    if (!m->sampled_version || version != m->sampled_version) return;
    if (p->loop == JFB_LOOP_THRESHOLD) {
        uint64_t x = (uint64_t)m->t1_extra + p->t1;
        m->t1_extra = x > 1000000 ? 1000000 : (uint32_t)x;
    }
    if (!invalidated) return;
    m->loops++;
    if (p->loop == JFB_LOOP_COOLDOWN) {
        uint32_t k = m->loops - 1 < 20 ? m->loops - 1 : 20;
        m->cooldown_until = now + (p->cooldown_ns << k);
    }
}

bool jit_fb_may_recompile(const JitFbParams *p, const JitFbMethod *m, uint64_t now) {
    return p->on && now >= m->cooldown_until;
}

/* Compiled code calls this when vm->jit_fb_armed is set (VM thread).  The operands are the
 * code's own values: reading their kinds reads a tag or an object header, nothing more. */
void jit_fb_observe(JitFbTable *t, uint32_t slot, Value a, Value b) {
    SomVM *vm = t->vm;
    uint32_t armed = vm->jit_fb_armed;
    if (armed == vm->jit_fb_burst) vm->jit_fb_serial++; /* a sample's burst begins */
    if (armed) vm->jit_fb_armed = armed - 1;
    if (t->done || t->ready || slot >= t->nslots) return;
    JitFbSlot *s = &t->slots[slot];
    /* at most T1 observations of one slot per sample: a hot loop's slots do not use up the
     * burst of the code's other slots */
    if (s->burst_serial != vm->jit_fb_serial) {
        s->burst_serial = vm->jit_fb_serial;
        s->burst_n = 0;
    }
    if (s->burst_n >= t->t1) return;
    s->burst_n++;
    uint32_t before = s->n;
    bool send = s->s.op == JIT_FB_SEND;
    uint64_t now = jitq_now_ns();
    bool cleared = jit_fb_record(t->p, t, s, send ? 0 : jit_fb_kinds(a, b),
                                 send ? som_class_of(vm, a) : NULL, now);
    /* the rule can only change its answer when a slot becomes ready */
    if (!cleared && before < t->t1 && s->n >= t->t1 && jit_fb_table_ready(t->p, t)) {
        t->ready = true;
        t->ready_ns = now;
        if (t->on_ready) t->on_ready(t);
    }
}
