/*
 * opt.c - IR simplification (compile.h: jit_optimize).
 */
#include "compile.h"

void jit_optimize(JitFunc *f) {
    (void)f;
}
