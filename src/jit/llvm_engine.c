/* SPDX-License-Identifier: MIT */
/*
 * llvm_engine.c - the backend's machine-code side: one ORC LLJIT per process (JitEngine), its
 * code memory, and the code ranges of every compiled function (compile.h, llvm_int.h).
 *
 * Code memory.  The engine reserves one address range (JIT_REGION_SIZE, PROT_NONE) at
 * creation and hands out page-aligned pieces of it to RuntimeDyld through the MCJIT-like
 * memory-manager callbacks of the ORC C API: every code section we ever allocate lies in that
 * range, and all sections of the process lie within 2 GB of each other (PC-relative
 * relocations to constant pools always reach).  Code sections are RW while being written and
 * RX after finalization (W^X); each section starts on its own page, so changing the
 * protection of one never touches another function's code.  While a module is being linked
 * (under the engine lock) the code sections allocated are recorded; llvm.c takes the one
 * that holds the entry as the function's code range (one function per module, and with it
 * its whole text: there is no hot/cold splitting into separate sections).
 *
 * Locking.  LLJIT itself is thread-safe, but the "sections of the module being linked" record
 * is not, so adding a module and looking it up (which materializes it on this thread) happen
 * under e->lock.  IR construction and optimization need no lock (each compilation has its
 * own LLVMContext).
 */
#include "llvm_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <llvm-c/Core.h>
#include <llvm-c/Support.h>
#include <llvm-c/Error.h>
#include <llvm-c/ExecutionEngine.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/OrcEE.h>
#include <llvm-c/Target.h>

#define JIT_REGION_SIZE ((size_t)1 << 30) /* reserved, committed page by page */

/* One object file's memory manager context: the sections it got (for finalization). */
typedef struct MmSection {
    uint8_t *p;
    size_t size;
    bool code;
} MmSection;

typedef struct MmObject {
    JitEngine *e;
    MmSection *sec;
    size_t nsec, cap;
} MmObject;

static size_t page_size(void) {
    static size_t ps;
    if (!ps) ps = (size_t)sysconf(_SC_PAGESIZE);
    return ps;
}

/* Takes size bytes (page-rounded) of the region, RW.  Caller holds nothing: the bump pointer
 * is guarded by region_lock since RuntimeDyld may run on an ORC thread. */
static uint8_t *region_take(JitEngine *e, size_t size, unsigned align) {
    size_t ps = page_size();
    if (align > ps) return NULL;
    size_t n = (size + ps - 1) / ps * ps;
    if (n == 0) n = ps;
    pthread_mutex_lock(&e->region_lock);
    uint8_t *p = NULL;
    if (e->region_used + n <= e->region_size) {
        p = e->region + e->region_used;
        if (mprotect(p, n, PROT_READ | PROT_WRITE) == 0)
            e->region_used += n;
        else
            p = NULL;
    }
    pthread_mutex_unlock(&e->region_lock);
    return p;
}

static void *mm_create_context(void *ctx) {
    MmObject *o = calloc(1, sizeof *o);
    if (o) o->e = ctx;
    return o;
}

static void mm_notify_terminating(void *ctx) {
    (void)ctx;
}

static bool mm_add(MmObject *o, uint8_t *p, size_t size, bool code) {
    if (o->nsec == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 8;
        MmSection *s = realloc(o->sec, cap * sizeof *s);
        if (!s) return false;
        o->sec = s;
        o->cap = cap;
    }
    o->sec[o->nsec++] = (MmSection){p, size, code};
    return true;
}

static uint8_t *mm_alloc_code(void *opaque, uintptr_t size, unsigned align, unsigned id,
                              const char *name) {
    (void)id;
    (void)name;
    MmObject *o = opaque;
    JitEngine *e = o->e;
    uint8_t *p = region_take(e, size, align);
    if (!p || !mm_add(o, p, size, true)) return NULL;
    /* The engine lock is held by the thread linking (jit_codegen): record the range. */
    pthread_mutex_lock(&e->region_lock);
    if (e->ncur < JIT_MAX_CODE_SECTIONS)
        e->cur[e->ncur++] = (JitCodeRange){(uintptr_t)p, (uint64_t)size};
    pthread_mutex_unlock(&e->region_lock);
    return p;
}

static uint8_t *mm_alloc_data(void *opaque, uintptr_t size, unsigned align, unsigned id,
                              const char *name, LLVMBool ro) {
    (void)id;
    (void)name;
    (void)ro; /* data stays RW: RuntimeDyld may still write .eh_frame after finalizing */
    MmObject *o = opaque;
    uint8_t *p = region_take(o->e, size, align);
    if (!p || !mm_add(o, p, size, false)) return NULL;
    return p;
}

static LLVMBool mm_finalize(void *opaque, char **err) {
    MmObject *o = opaque;
    size_t ps = page_size();
    for (size_t i = 0; i < o->nsec; i++) {
        MmSection *s = &o->sec[i];
        if (!s->code) continue;
        size_t n = (s->size + ps - 1) / ps * ps;
        if (n == 0) n = ps;
        if (mprotect(s->p, n, PROT_READ | PROT_EXEC) != 0) {
            if (err) *err = strdup("mprotect(PROT_EXEC) failed");
            return 1;
        }
        __builtin___clear_cache((char *)s->p, (char *)s->p + s->size);
    }
    return 0;
}

static void mm_destroy(void *opaque) {
    MmObject *o = opaque;
    /* The memory itself goes with the region (jit_engine_free). */
    free(o->sec);
    free(o);
}

static LLVMOrcObjectLayerRef make_object_layer(void *ctx, LLVMOrcExecutionSessionRef es,
                                               const char *triple) {
    (void)triple;
    return LLVMOrcCreateRTDyldObjectLinkingLayerWithMCJITMemoryManagerLikeCallbacks(
        es, ctx, mm_create_context, mm_notify_terminating, mm_alloc_code, mm_alloc_data,
        mm_finalize, mm_destroy);
}

static pthread_once_t llvm_once = PTHREAD_ONCE_INIT;
static int llvm_init_failed;

static void llvm_init(void) {
    if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) llvm_init_failed = 1;
    /* Machine code without tail merging: the deopt exits (a call and a return each, hundreds
     * in a large method) all end alike, and merging their tails cost HavlakLoopFinder's
     * methods 15% more code generation time (llc 2.33 -> 2.71 s over the benchmark's 26
     * compiled methods) for code that only runs when a guard fails. */
    const char *argv[2 + 16] = {"som-jit", "-enable-tail-merge=false"};
    int argc = 2;
    /* for tuning: SOM_JIT_LLVM_ARGS, up to 16 space-separated LLVM options (-fast-isel...) */
    static char extra[512];
    const char *env = getenv("SOM_JIT_LLVM_ARGS");
    if (env && strlen(env) < sizeof extra) {
        strcpy(extra, env);
        for (char *save = NULL, *t = strtok_r(extra, " ", &save); t && argc < 18;
             t = strtok_r(NULL, " ", &save))
            argv[argc++] = t;
    }
    LLVMParseCommandLineOptions(argc, argv, NULL);
}

static void set_error(char *err, size_t errlen, const char *what, LLVMErrorRef e) {
    char *m = e ? LLVMGetErrorMessage(e) : NULL;
    snprintf(err, errlen, "%s%s%s", what, m ? ": " : "", m ? m : "");
    if (m) LLVMDisposeErrorMessage(m);
}

JitEngine *jit_engine_new(char *err, size_t errlen) {
    pthread_once(&llvm_once, llvm_init);
    if (llvm_init_failed) {
        snprintf(err, errlen, "LLVM: no native target");
        return NULL;
    }
    JitEngine *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&e->lock, NULL);
    pthread_mutex_init(&e->region_lock, NULL);
    e->region_size = JIT_REGION_SIZE;
    void *r =
        mmap(NULL, e->region_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) {
        snprintf(err, errlen, "cannot reserve %zu bytes for JIT code", e->region_size);
        free(e);
        return NULL;
    }
    e->region = r;
    LLVMOrcLLJITBuilderRef b = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetObjectLinkingLayerCreator(b, make_object_layer, e);
    LLVMErrorRef le = LLVMOrcCreateLLJIT(&e->jit, b); /* consumes b */
    if (le) {
        set_error(err, errlen, "LLVM: cannot create the LLJIT", le);
        munmap(e->region, e->region_size);
        free(e);
        return NULL;
    }
    /* Compiled code calls the runtime through constant addresses; the process's symbols
     * are there only for what LLVM itself might call (memset, libm) */
    LLVMOrcDefinitionGeneratorRef gen = NULL;
    le = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &gen, LLVMOrcLLJITGetGlobalPrefix(e->jit), NULL, NULL);
    if (le)
        LLVMConsumeError(le);
    else
        LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(e->jit), gen);
    e->triple = strdup(LLVMOrcLLJITGetTripleString(e->jit));
    e->datalayout = strdup(LLVMOrcLLJITGetDataLayoutStr(e->jit));
    char *cpu = LLVMGetHostCPUName();
    char *features = LLVMGetHostCPUFeatures();
    e->cpu = strdup(cpu);
    e->features = strdup(features);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
    return e;
}

void jit_engine_free(JitEngine *e) {
    if (!e) return;
    LLVMOrcDisposeLLJIT(e->jit);
    for (size_t i = 0; i < e->nowned; i++)
        free(e->owned[i]);
    free(e->owned);
    munmap(e->region, e->region_size);
    free(e->triple);
    free(e->datalayout);
    free(e->cpu);
    free(e->features);
    pthread_mutex_destroy(&e->lock);
    pthread_mutex_destroy(&e->region_lock);
    free(e);
}

bool jit_engine_own(JitEngine *e, void *p) {
    pthread_mutex_lock(&e->region_lock);
    bool ok = true;
    if (e->nowned == e->owned_cap) {
        size_t cap = e->owned_cap ? 2 * e->owned_cap : 64;
        void **n = realloc(e->owned, cap * sizeof *n);
        if (!n)
            ok = false;
        else {
            e->owned = n;
            e->owned_cap = cap;
        }
    }
    if (ok) e->owned[e->nowned++] = p;
    pthread_mutex_unlock(&e->region_lock);
    return ok;
}

int jit_engine_add(JitEngine *e, LLVMMemoryBufferRef obj, const char *name, uintptr_t *entry,
                   JitCodeRange *range, char *err, size_t errlen) {
    pthread_mutex_lock(&e->lock);
    pthread_mutex_lock(&e->region_lock);
    e->ncur = 0;
    pthread_mutex_unlock(&e->region_lock);
    LLVMErrorRef le = LLVMOrcLLJITAddObjectFile(e->jit, LLVMOrcLLJITGetMainJITDylib(e->jit),
                                                obj); /* consumes obj, even on failure */
    int rc = -1;
    if (le) {
        set_error(err, errlen, "LLVM: cannot add the object", le);
        goto out;
    }
    LLVMOrcExecutorAddress addr = 0;
    le = LLVMOrcLLJITLookup(e->jit, &addr, name);
    if (le) {
        set_error(err, errlen, "LLVM: cannot compile", le);
        goto out;
    }
    *entry = (uintptr_t)addr;
    *range = (JitCodeRange){0, 0};
    pthread_mutex_lock(&e->region_lock);
    for (int i = 0; i < e->ncur; i++)
        if (addr >= e->cur[i].start && addr < e->cur[i].start + e->cur[i].size) *range = e->cur[i];
    pthread_mutex_unlock(&e->region_lock);
    if (!range->size) {
        snprintf(err, errlen, "LLVM: the code of %s is not in a known section", name);
        goto out;
    }
    rc = 0;
out:
    pthread_mutex_unlock(&e->lock);
    return rc;
}
