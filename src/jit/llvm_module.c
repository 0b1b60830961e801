/* SPDX-License-Identifier: MIT */
/*
 * llvm_module.c - the one exported function of libsomjit_llvm.so (compile.h, "the backend
 * module"): the LLVM backend's entry points, for the controller that loaded the module.
 * Everything else in the module is hidden; the runtime it calls (jit_rt_*, jit_fb_observe)
 * comes from the executable, which exports it.
 */
#include "compile.h"

__attribute__((visibility("default"))) const JitLlvmModule *som_jit_llvm_module(void);

const JitLlvmModule *som_jit_llvm_module(void) {
    static const JitLlvmModule m = {
        .abi = JIT_LLVM_ABI,
        .engine_new = jit_engine_new,
        .codegen = jit_codegen,
    };
    return &m;
}
