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
 */
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

const PrimDef prim_prof_defs[] = {
    {"System", false, "profilerStart", prof_start, PK_PLAIN},
    {"System", false, "profilerStop", prof_stop, PK_PLAIN},
    {"System", false, "profilerPause", prof_pause, PK_PLAIN},
    {"System", false, "profilerResume", prof_resume, PK_PLAIN},
    {"System", false, "profilerRunning", prof_running, PK_PLAIN},
    {"System", false, "profilerRate:", prof_rate, PK_PLAIN},
    {NULL, false, NULL, NULL, 0},
};
