/* SPDX-License-Identifier: MIT */
/*
 * vm.c - VM instances: creation (stacks, heap, bootstrap), running a program
 * (`system initialize: args`), destruction. No global state: every VM is
 * independent and may run in its own thread.
 */
#include "vm.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bytecode.h"
#include "class.h"
#include "disasm.h"
#include "interp.h"

#define DEFAULT_STACK_VALUES (16u << 20) /* 128 MiB of address space, committed on use */
#define DEFAULT_MAX_FRAMES (1u << 20)

static void *map_lazily(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static bool set_classpath(SomVM *vm, const char *cp) {
    int n = 0;
    for (const char *p = cp; p && *p; p++)
        n += *p == ':';
    vm->classpath = calloc((size_t)n + 2, sizeof(char *));
    if (!vm->classpath) return false;
    if (!cp) return true;
    const char *s = cp;
    for (;;) {
        const char *e = strchr(s, ':');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len) vm->classpath[vm->nclasspath++] = strndup(s, len);
        if (!e) break;
        s = e + 1;
    }
    return true;
}

/* The driver activation: slot 0 = system, slot 1 = the argument Array;
 * PUSH_LOCAL 0, PUSH_LOCAL 1, SEND initialize:, RETURN_LOCAL. */
static SomMethod *make_boot_method(SomVM *vm) {
    SomMethod *m = gc_alloc(vm, sizeof *m, OBJ_METHOD, vm->methodClass);
    static const uint8_t code[] = {BC_PUSH_LOCAL,  0, BC_PUSH_LOCAL, 1, BC_SEND, 0, 0,
                                   BC_RETURN_LOCAL};
    m->code = malloc(sizeof code);
    m->sites = calloc(1, sizeof(CallSite));
    if (!m->code || !m->sites) abort();
    memcpy(m->code, code, sizeof code);
    m->code_len = sizeof code;
    m->sites[0].selector = vm->sym_initialize;
    m->sites[0].nargs = 1;
    m->sites[0].bci = 4;
    m->nsites = 1;
    m->kind = MK_METHOD;
    m->nargs = 1;
    m->maxstack = 4;
    m->signature = som_symbol_cstr(vm, "boot");
    m->holder = vm->systemClass;
    return m;
}

/* Loads the core classes; out of memory on the way is an error, not an abort. */
static bool bootstrap(SomVM *vm_arg, char *errbuf, size_t errlen) {
    SomVM *volatile vm = vm_arg; /* read after longjmp */
    jmp_buf oom;
    if (setjmp(oom)) {
        snprintf(errbuf, errlen, "out of memory (%zu bytes) while loading the core classes",
                 vm->heap.oom_bytes);
        vm->heap.oom_jmp = NULL;
        return false;
    }
    vm->heap.oom_jmp = &oom;
    bool ok = class_bootstrap(vm, errbuf, errlen);
    if (ok) {
        vm->heap.inhibit++;
        vm->boot_method = make_boot_method(vm);
        vm->heap.inhibit--;
    }
    vm->heap.oom_jmp = NULL;
    return ok;
}

SomVM *som_vm_new(const SomOptions *opts, const char *classpath, char *errbuf, size_t errlen) {
    SomVM *vm = calloc(1, sizeof *vm);
    if (!vm) {
        snprintf(errbuf, errlen, "out of memory");
        return NULL;
    }
    if (opts) vm->opts = *opts;
    size_t nvals = vm->opts.stack_values ? vm->opts.stack_values : DEFAULT_STACK_VALUES;
    vm->max_frames = vm->opts.max_frames ? vm->opts.max_frames : DEFAULT_MAX_FRAMES;
    vm->stack = map_lazily((nvals + SOM_STACK_SLACK) * sizeof(Value));
    if (vm->stack) vm->stack_end = vm->stack + nvals; /* (som_vm_free unmaps by it) */
    vm->frames = map_lazily(vm->max_frames * sizeof(SomFrame));
    if (!vm->stack || !vm->frames || !set_classpath(vm, classpath)) {
        snprintf(errbuf, errlen, "cannot reserve the VM stacks");
        som_vm_free(vm);
        return NULL;
    }
    vm->sp = vm->stack;
    vm->top = -1;
    vm->nlr_target = -1;
    vm->state = VMS_IDLE;
    vm->out = stdout;
    vm->err = stderr;
    vm->start_ns = som_now_ns();
    gc_init(vm);
    if (!bootstrap(vm, errbuf, errlen)) {
        som_vm_free(vm);
        return NULL;
    }
    return vm;
}

void som_vm_free(SomVM *vm) {
    if (!vm) return;
    gc_fini(vm);
    if (vm->stack)
        munmap(vm->stack, ((size_t)(vm->stack_end - vm->stack) + SOM_STACK_SLACK) * sizeof(Value));
    if (vm->frames) munmap(vm->frames, vm->max_frames * sizeof(SomFrame));
    for (int i = 0; i < vm->nclasspath; i++)
        free(vm->classpath[i]);
    free(vm->classpath);
    free(vm->symbols.slots);
    free(vm);
}

/* Out of memory inside the run (gc_alloc could not answer NULL), or the run abandoned
 * (som_vm_abandon): the activations are left where they stand; the VM can only be freed. */
static int run_abandoned(SomVM *vm, bool oom) {
    vm->heap.oom_jmp = NULL;
    vm->heap.inhibit = 1; /* the heap may be mid-collection: never collect again */
    vm->state = VMS_IDLE;
    if (oom) {
        fflush(vm->out);
        fprintf(vm->err, "som: out of memory (an allocation of %zu bytes failed)\n",
                vm->heap.oom_bytes);
        fflush(vm->err);
        vm->exit_status = 1;
    }
    vm->exiting = true;
    return vm->exit_status;
}

void som_vm_abandon(SomVM *vm, int status) {
    if (!vm->heap.oom_jmp) return;
    vm->exit_status = status;
    longjmp(*vm->heap.oom_jmp, 2);
}

int som_vm_run(SomVM *vm_arg, int argc, char **argv) {
    SomVM *volatile vm_v = vm_arg; /* read after longjmp */
    jmp_buf oom;
    int why = setjmp(oom); /* 1: out of memory, 2: som_vm_abandon */
    if (why) return run_abandoned(vm_v, why == 1);
    SomVM *vm = vm_v;
    vm->heap.oom_jmp = &oom;
    vm->cstack_limit = interp_cstack_limit();
    vm->nlr_target = -1;
    SomArray *args = som_array_new(vm, (size_t)argc);
    Value av = SOM_V(args);
    som_root_push(vm, &av);
    for (int i = 0; i < argc; i++) {
        SomString *s = som_string_cstr(vm, argv[i]);
        ((SomArray *)av)->items[i] = SOM_V(s);
    }
    som_root_pop(vm, 1);
    *vm->sp++ = vm->system;
    *vm->sp++ = av;
    som_set_state(vm, VMS_INTERP);
    int status = interp_call(vm, vm->boot_method, 1);
    som_set_state(vm, VMS_IDLE);
    if (!vm->exiting) {
        vm->sp--; /* the result */
        status = 0;
    } else {
        status = vm->exit_status;
    }
    vm->heap.oom_jmp = NULL;
    fflush(vm->out);
    if (vm->opts.dump_feedback) disasm_all(vm, 1, vm->err);
#ifdef SOM_BC_STATS
    interp_call(vm, NULL, 0);
#endif
    fflush(vm->err);
    return status;
}
