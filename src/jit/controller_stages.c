/* SPDX-License-Identifier: MIT */
/*
 * controller_stages.c - the real stages as a JitBackend, and stand-ins for stages whose
 * files are not in this tree yet.
 *
 * The controller is written in parallel with the IR builder (build.c, opt.c, ir.c) and the
 * LLVM backend (llvm.c).  So that it links and its tests run before they land, each missing
 * file's functions are defined here answering "the JIT is not built yet" (jit_attach then
 * fails, the VM runs interpreted, and tests/e2e/jit skips).  Once the file exists the
 * stand-in disappears by itself (__has_include looks in this directory first).
 */
#include "controller.h"

#include <stdlib.h>

#define JIT_NOT_BUILT "the JIT is not built yet"

#if !__has_include("build.c")
void jit_build_defaults(JitBuildOpts *o) {
    *o = (JitBuildOpts){.max_inline_depth = 6,
                        .max_inline_size = 120,
                        .max_total_size = 2000,
                        .max_poly = 4,
                        .max_recursion = 2,
                        .max_recursion_small = 3,
                        .small_recursive = 64,
                        .inline_blocks = true,
                        .unreached_traps = true,
                        .version = 1};
}

JitFunc *jit_build(SomVM *vm, SomMethod *m, const JitBuildOpts *o, char *err, size_t errlen) {
    (void)vm, (void)m, (void)o;
    snprintf(err, errlen, JIT_NOT_BUILT);
    return NULL;
}

/* ir.c's construction half lands with the builder */
void jit_func_free(JitFunc *f) {
    free(f);
}

void jit_print(const JitFunc *f, FILE *out) {
    fprintf(out, "%s: (no IR printer)\n", f->name);
}
#endif

#if !__has_include("opt.c")
void jit_optimize(JitFunc *f) {
    (void)f;
}
#endif

#if !__has_include("llvm.c")
JitEngine *jit_engine_new(char *err, size_t errlen) {
    snprintf(err, errlen, JIT_NOT_BUILT);
    return NULL;
}

void jit_engine_free(JitEngine *e) {
    (void)e;
}

SomJitCode *jit_codegen(JitEngine *e, const JitFunc *f, const JitCodegenOpts *o, char *err,
                        size_t errlen) {
    (void)e, (void)f, (void)o;
    snprintf(err, errlen, JIT_NOT_BUILT);
    return NULL;
}
#endif

const JitBackend jit_real_backend = {
    .engine_new = jit_engine_new,
    .build_defaults = jit_build_defaults,
    .build = jit_build,
    .optimize = jit_optimize,
    .codegen = jit_codegen,
    .print = jit_print,
    .free_func = jit_func_free,
};
