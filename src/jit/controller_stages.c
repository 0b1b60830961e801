/* SPDX-License-Identifier: MIT */
/*
 * controller_stages.c - the real stages as a JitBackend: the IR builder and optimizer linked
 * in, the LLVM backend loaded as a module on first use (compile.h, "the backend module"),
 * and stand-ins for stages whose files are not in this tree yet.
 *
 * The controller is written in parallel with the IR builder (build.c, opt.c, ir.c) and the
 * LLVM backend (llvm.c).  So that it links and its tests run before they land, each missing
 * file's functions are defined here answering "the JIT is not built yet" (jit_attach then
 * fails, the VM runs interpreted, and tests/e2e/jit skips).  Once the file exists the
 * stand-in disappears by itself (__has_include looks in this directory first).
 */
#include "controller.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
                        .tiny_size = 24,
                        .inline_hits = 1024,
                        .small_calls = 48,
                        .sampled_band = true,
                        .inline_plan = true,
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

/* ---- the LLVM backend, loaded on first use (compile.h, "the backend module") ----------- */

static pthread_once_t module_once = PTHREAD_ONCE_INIT;
static const JitLlvmModule *_Atomic module; /* set once (module_once), read by any thread */
static char module_err[600];
static char module_path[PATH_MAX + 64];

/* Loads path; answers false (with the reason in module_err) if it is not a usable module. */
static bool module_try(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(module_err, sizeof module_err, "cannot load %.500s", e ? e : path);
        return false;
    }
    JitLlvmModuleFn fn = (JitLlvmModuleFn)dlsym(h, JIT_LLVM_MODULE_SYMBOL);
    const JitLlvmModule *m = fn ? fn() : NULL;
    if (!m || m->abi != JIT_LLVM_ABI) {
        snprintf(module_err, sizeof module_err,
                 "%.500s is not this som's JIT backend (another build)", path);
        dlclose(h);
        return false;
    }
    size_t len = strnlen(path, sizeof module_path - 1);
    memcpy(module_path, path, len);
    module_path[len] = 0;
    atomic_store_explicit(&module, m, memory_order_release); /* after module_path */
    return true;
}

/* Where the module is looked for, in order: $SOM_JIT_MODULE alone when it is set; else next
 * to an installed som (bin/../lib/som/), then where this som was built.  Answers how many. */
enum { MODULE_PLACES = 2 };
static int module_places(char out[MODULE_PLACES][PATH_MAX + 64]) {
    const char *env = getenv("SOM_JIT_MODULE");
    if (env && *env) {
        snprintf(out[0], sizeof out[0], "%s", env);
        return 1;
    }
    int n = 0;
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = len > 0 ? (exe[len] = 0, strrchr(exe, '/')) : NULL;
    if (slash) {
        *slash = 0;
        snprintf(out[n++], sizeof out[0], "%s/%s", exe, SOM_JIT_MODULE_REL);
    }
    snprintf(out[n++], sizeof out[0], "%s", SOM_JIT_MODULE_BUILD_PATH);
    return n;
}

static void module_load(void) {
    char places[MODULE_PLACES][PATH_MAX + 64];
    int n = module_places(places);
    for (int i = 0; i < n; i++)
        if ((i == n - 1 || access(places[i], F_OK) == 0) && module_try(places[i])) return;
}

static const JitLlvmModule *module_get(char *err, size_t errlen) {
    pthread_once(&module_once, module_load);
    const JitLlvmModule *m = atomic_load_explicit(&module, memory_order_acquire);
    if (!m) snprintf(err, errlen, "%s", module_err[0] ? module_err : "no JIT backend");
    return m;
}

const char *jit_backend_path(void) {
    return atomic_load_explicit(&module, memory_order_acquire) ? module_path : NULL;
}

/* The module's file is there (it is loaded later, by the first engine). */
static bool module_findable(char *err, size_t errlen) {
    if (atomic_load_explicit(&module, memory_order_acquire)) return true;
    char places[MODULE_PLACES][PATH_MAX + 64];
    int n = module_places(places);
    for (int i = 0; i < n; i++)
        if (access(places[i], R_OK) == 0) return true;
    if (getenv("SOM_JIT_MODULE") && n == 1)
        snprintf(err, errlen, "SOM_JIT_MODULE=%s: %s", places[0], strerror(errno));
    else
        snprintf(err, errlen, "the JIT backend module (libsomjit_llvm.so) is not installed");
    return false;
}

static JitEngine *lazy_engine_new(char *err, size_t errlen) {
    const JitLlvmModule *m = module_get(err, errlen);
    return m ? m->engine_new(err, errlen) : NULL;
}

static SomJitCode *lazy_codegen(JitEngine *e, const JitFunc *f, const JitCodegenOpts *o, char *err,
                                size_t errlen) {
    const JitLlvmModule *m = module_get(err, errlen);
    return m ? m->codegen(e, f, o, err, errlen) : NULL;
}

const JitBackend jit_real_backend = {
    .engine_new = lazy_engine_new,
    .build_defaults = jit_build_defaults,
    .build = jit_build,
    .optimize = jit_optimize,
    .codegen = lazy_codegen,
    .print = jit_print,
    .free_func = jit_func_free,
    .available = module_findable,
};
