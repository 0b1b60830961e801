/* SPDX-License-Identifier: MIT */
/*
 * llvm_int.h - internals shared by the LLVM backend's files (llvm.c: lowering and
 * optimization; llvm_engine.c: the LLJIT, code memory and code ranges).  Not for other
 * parts of the JIT: they use compile.h.
 */
#ifndef SOM_JIT_LLVM_INT_H
#define SOM_JIT_LLVM_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Types.h>

#include "compile.h"

#define JIT_MAX_CODE_SECTIONS 16

typedef struct JitCodeRange {
    uintptr_t start;
    uint64_t size;
} JitCodeRange;

struct JitEngine {
    pthread_mutex_t lock;        /* serialises adding + materializing a module */
    pthread_mutex_t region_lock; /* the region's bump pointer, cur[], owned[] */
    LLVMOrcLLJITRef jit;
    char *triple, *datalayout, *cpu, *features;
    uint8_t *region; /* reserved code/data range */
    size_t region_size, region_used;
    JitCodeRange cur[JIT_MAX_CODE_SECTIONS]; /* code sections of the module being linked */
    int ncur;
    void **owned; /* malloc'ed blocks living as long as the engine (compiled code's data) */
    size_t nowned, owned_cap;
    uint64_t counter; /* unique symbol names */
};

/* Takes ownership of p (freed by jit_engine_free). */
bool jit_engine_own(JitEngine *e, void *p);
/* Links the object file obj (consumed) and answers the address of its function `name` and
 * the code section that holds it.  0, or -1 with a message. */
int jit_engine_add(JitEngine *e, LLVMMemoryBufferRef obj, const char *name, uintptr_t *entry,
                   JitCodeRange *range, char *err, size_t errlen);

#endif
