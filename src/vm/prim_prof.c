/*
 * prim_prof.c - System primitives that control the embedded profiler from SOM
 * code (start, stop, pause, resume, rate). They call vm->prof_control, which
 * the profiler glue installs; without a profiler they answer false.
 */
#include "prims.h"
#include "vm.h"

const PrimDef prim_prof_defs[] = {
    {NULL, false, NULL, NULL, 0},
};
