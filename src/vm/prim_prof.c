/* SPDX-License-Identifier: MIT */
/*
 * prim_prof.c - System primitives that control the embedded profiler from SOM
 * code (start, stop, pause, resume, rate). They call vm->prof_control, which
 * the profiler glue installs; without a profiler they answer false.
 *
 *   system profilerStart      begin (or resume) sampling       -> true/false
 *   system profilerStop       stop sampling (data is kept)     -> true/false
 *   system profilerPause      pause sampling                   -> true/false
 *   system profilerResume     resume sampling                  -> true/false
 *   system profilerRate: hz   samples per second per thread    -> true/false
 *   system profilerRunning    is a profiler sampling now?      -> true/false
 *
 * and the JIT's run-time options (vm->jit_option, installed by the JIT):
 *
 *   system jitOption: 't1'            the value (an Integer), or nil without a JIT
 *   system jitOption: 't1' put: 10    -> true/false (no JIT, unknown name, bad value)
 */
#include <string.h>

#include "object.h"
#include "prims.h"
#include "vm.h"

static int prof_op(SomVM *vm, Value *args, const char *op, int64_t arg) {
    bool ok = vm->prof_control && vm->prof_control(vm, op, arg) == 0;
    args[0] = ok ? vm->true_ : vm->false_;
    return PRIM_OK;
}

static int prof_start(SomVM *vm, Value *args) {
    return prof_op(vm, args, "start", 0);
}
static int prof_stop(SomVM *vm, Value *args) {
    return prof_op(vm, args, "stop", 0);
}
static int prof_pause(SomVM *vm, Value *args) {
    return prof_op(vm, args, "pause", 0);
}
static int prof_resume(SomVM *vm, Value *args) {
    return prof_op(vm, args, "resume", 0);
}
static int prof_running(SomVM *vm, Value *args) {
    return prof_op(vm, args, "running", 0);
}

static int prof_rate(SomVM *vm, Value *args) {
    if (!som_is_int(args[1]))
        return som_prim_error(vm, "profilerRate: expects an Integer (samples per second)");
    return prof_op(vm, args, "rate", som_int(args[1]));
}

/* The option's name from a String or Symbol argument into buf; false if it is neither. */
static bool jit_option_name(Value v, char *buf, size_t n) {
    if (!som_is_string_like(v)) return false;
    const SomString *s = (const SomString *)v;
    if (s->len >= n) return false;
    memcpy(buf, s->bytes, s->len);
    buf[s->len] = 0;
    return true;
}

static int jit_option_get(SomVM *vm, Value *args) {
    char name[64];
    if (!jit_option_name(args[1], name, sizeof name))
        return som_prim_error(vm, "jitOption: expects a String or Symbol");
    int64_t v = 0;
    args[0] = vm->jit_option && vm->jit_option(vm, name, false, &v) == 0 ? som_mkint(v) : vm->nil;
    return PRIM_OK;
}

static int jit_option_put(SomVM *vm, Value *args) {
    char name[64];
    if (!jit_option_name(args[1], name, sizeof name))
        return som_prim_error(vm, "jitOption:put: expects a String or Symbol");
    if (!som_is_int(args[2])) return som_prim_error(vm, "jitOption:put: expects an Integer value");
    int64_t v = som_int(args[2]);
    bool ok = vm->jit_option && vm->jit_option(vm, name, true, &v) == 0;
    args[0] = ok ? vm->true_ : vm->false_;
    return PRIM_OK;
}

const PrimDef prim_prof_defs[] = {
    {"System", false, "jitOption:", jit_option_get, PK_PLAIN},
    {"System", false, "jitOption:put:", jit_option_put, PK_PLAIN},
    {"System", false, "profilerStart", prof_start, PK_PLAIN},
    {"System", false, "profilerStop", prof_stop, PK_PLAIN},
    {"System", false, "profilerPause", prof_pause, PK_PLAIN},
    {"System", false, "profilerResume", prof_resume, PK_PLAIN},
    {"System", false, "profilerRunning", prof_running, PK_PLAIN},
    {"System", false, "profilerRate:", prof_rate, PK_PLAIN},
    {NULL, false, NULL, NULL, 0},
};
