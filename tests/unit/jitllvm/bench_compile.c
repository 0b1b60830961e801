/* SPDX-License-Identifier: MIT */
/*
 * bench_compile.c - compile time of the LLVM backend (not a test): a loop function of about
 * 50 IR instructions and a straight-line + loops function of about 2000, compiled REPS times
 * at each optimization level; prints the median and minimum thread CPU time per compilation.
 *   build/dev/tests/unit/jitllvm/jitllvm_bench [reps]
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jitt.h"

static uint64_t cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* `nloops` consecutive counting loops, each summing with guarded adds, a send in the body
 * and a safepoint; the running sum goes from one loop to the next. */
static JitFunc *make_func(SomVM *vm, int nloops, CallSite *cs) {
    JitFunc *f = t_func(vm, t_method(2, 0));
    int32_t b0 = t_block(f);
    JitRef self = t_arg(f, b0, 0), a1 = t_arg(f, b0, 1), a2 = t_arg(f, b0, 2);
    JitRef slots[] = {self, a1, a2};
    t_state(f, 0, self, 3, slots, 0, NULL);
    JitRef n = t_op1(f, b0, JI_UNBOX_INT, JT_INT, a1);
    JitRef sum = t_op1(f, b0, JI_UNBOX_INT, JT_INT, a2);
    JitRef one = t_cint(f, b0, 1);
    int32_t prev = b0;
    for (int l = 0; l < nloops; l++) {
        int32_t h = t_block(f), body = t_block(f), exit = t_block(f);
        t_jump(f, prev, h);
        JitRef s = t_phi(f, h, JT_INT, sum, -1);
        JitRef i = t_phi(f, h, JT_INT, one, -1);
        JitRef c = t_op2(f, h, JI_ICMP, JT_BOOL, i, n);
        f->insts[c].cmp = JC_LE;
        t_branch(f, h, c, body, exit);
        JitRef stk[] = {s, i};
        int32_t st = t_state(f, 5, self, 3, slots, 2, stk);
        JitRef bs = t_op1(f, body, JI_BOX_INT, JT_VALUE, s);
        JitRef snd = t_op2(f, body, JI_SEND, JT_VALUE, self, bs);
        f->insts[snd].cs = cs;
        f->insts[snd].method = f->method;
        JitRef g = t_op1(f, body, JI_GUARD, JT_VOID, t_op1(f, body, JI_IS_INT, JT_BOOL, snd));
        f->insts[g].deopt = st;
        JitRef u = t_op1(f, body, JI_UNBOX_INT, JT_INT, snd);
        JitRef s2 = t_op2(f, body, JI_IADD, JT_INT, s, u);
        f->insts[s2].deopt = st;
        JitRef s3 = t_op2(f, body, JI_IMUL, JT_INT, s2, t_cint(f, body, 3));
        f->insts[s3].deopt = st;
        JitRef s4 = t_op2(f, body, JI_IMOD, JT_INT, s3, t_cint(f, body, 1000003));
        f->insts[s4].deopt = st;
        JitRef i2 = t_op2(f, body, JI_IADD, JT_INT, i, one);
        f->insts[i2].deopt = st;
        JitRef sp = t_ins(f, body, JI_SAFEPOINT, JT_VOID);
        f->insts[sp].ival = SOM_SP_LOOP;
        t_jump(f, body, h);
        f->insts[s].phi[1] = s4;
        f->insts[i].phi[1] = i2;
        sum = s;
        prev = exit;
    }
    t_ret(f, prev, t_op1(f, prev, JI_BOX_INT, JT_VALUE, sum));
    return f;
}

/* sum := s0; i := 1; [i <= n] whileTrue: [sum := sum + (i * 3 \\ 7); i := i + 1]; ^sum
 * (guarded arithmetic, a safepoint per iteration) */
static JitFunc *make_loop(SomVM *vm) {
    JitFunc *f = t_func(vm, t_method(2, 0));
    int32_t b0 = t_block(f), h = t_block(f), body = t_block(f), exit = t_block(f);
    JitRef self = t_arg(f, b0, 0), a1 = t_arg(f, b0, 1), a2 = t_arg(f, b0, 2);
    JitRef slots[] = {self, a1, a2};
    t_state(f, 0, self, 3, slots, 0, NULL);
    JitRef n = t_op1(f, b0, JI_UNBOX_INT, JT_INT, a1);
    JitRef s0 = t_op1(f, b0, JI_UNBOX_INT, JT_INT, a2);
    JitRef one = t_cint(f, b0, 1);
    t_jump(f, b0, h);
    JitRef s = t_phi(f, h, JT_INT, s0, -1), i = t_phi(f, h, JT_INT, one, -1);
    JitRef c = t_op2(f, h, JI_ICMP, JT_BOOL, i, n);
    f->insts[c].cmp = JC_LE;
    t_branch(f, h, c, body, exit);
    JitRef stk[] = {s, i};
    int32_t st = t_state(f, 5, self, 3, slots, 2, stk);
    JitRef m = t_op2(f, body, JI_IMUL, JT_INT, i, t_cint(f, body, 3));
    f->insts[m].deopt = st;
    JitRef md = t_op2(f, body, JI_IMOD, JT_INT, m, t_cint(f, body, 7));
    f->insts[md].deopt = st;
    JitRef s2 = t_op2(f, body, JI_IADD, JT_INT, s, md);
    f->insts[s2].deopt = st;
    JitRef i2 = t_op2(f, body, JI_IADD, JT_INT, i, one);
    f->insts[i2].deopt = st;
    JitRef sp = t_ins(f, body, JI_SAFEPOINT, JT_VOID);
    f->insts[sp].ival = SOM_SP_LOOP;
    t_jump(f, body, h);
    f->insts[s].phi[1] = s2;
    f->insts[i].phi[1] = i2;
    t_ret(f, exit, t_op1(f, exit, JI_BOX_INT, JT_VALUE, s));
    return f;
}

static void run_loop(SomVM *vm, JitEngine *eng, int reps) {
    JitFunc *f = make_loop(vm);
    char e[512];
    for (int lvl = 0; lvl <= 3; lvl++) {
        JitCodegenOpts co = {.opt_level = lvl};
        SomJitCode *c = jit_codegen(eng, f, &co, e, sizeof e);
        if (!c) {
            fprintf(stderr, "jitllvm_bench: %s\n", e);
            exit(1);
        }
        if (getenv("BENCH_DUMP")) {
            /* the machine code, for objdump -D -b binary -mi386:x86-64 */
            char path[64];
            snprintf(path, sizeof path, "/tmp/jitllvm_loop_O%d.bin", lvl);
            FILE *out = fopen(path, "wb");
            if (out) {
                fwrite((const void *)c->code_start, 1, c->code_size, out);
                fclose(out);
            }
        }
        uint64_t best = UINT64_MAX;
        Value r = 0;
        for (int k = 0; k < (reps < 5 ? reps : 5); k++) {
            SomFrame fr = {0};
            fr.bp = vm->stack + 8;
            fr.bp[0] = vm->nil;
            fr.bp[1] = som_mkint(50000000);
            fr.bp[2] = som_mkint(0);
            fr.self = vm->nil;
            fr.method = f->method;
            vm->sp = fr.bp + 3;
            uint64_t t0 = cpu_ns();
            r = c->entry(vm, &fr);
            uint64_t t = cpu_ns() - t0;
            if (t < best) best = t;
        }
        printf("loop 5e7 iterations  O%d  code %4" PRIu64
               " bytes  cpu min %7.2f ms (result %" PRId64 ")\n",
               lvl, c->code_size, best / 1e6, som_int(r));
    }
    t_free(f);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 15;
    if (reps < 1 || reps > 1000) reps = 15;
    char e[512];
    SomOptions o = {0};
    SomVM *vm = som_vm_new(&o, NULL, e, sizeof e);
    JitEngine *eng = vm ? jit_engine_new(e, sizeof e) : NULL;
    if (!eng) {
        fprintf(stderr, "jitllvm_bench: %s\n", e);
        return 1;
    }
    CallSite cs = {0};
    cs.nargs = 1;
    int sizes[] = {3, 125};
    uint64_t *t = calloc((size_t)reps, sizeof *t);
    for (int si = 0; si < 2; si++) {
        JitFunc *f = make_func(vm, sizes[si], &cs);
        for (int lvl = 0; lvl <= 3; lvl++) {
            for (int r = 0; r < reps; r++) {
                JitCodegenOpts co = {.opt_level = lvl};
                uint64_t t0 = cpu_ns();
                SomJitCode *c = jit_codegen(eng, f, &co, e, sizeof e);
                t[r] = cpu_ns() - t0;
                if (!c) {
                    fprintf(stderr, "jitllvm_bench: %s\n", e);
                    return 1;
                }
                if (r == 0 && lvl == 2 && getenv("BENCH_DUMP")) {
                    co.dump_llvm = true;
                    jit_codegen(eng, f, &co, e, sizeof e);
                }
                if (r == 0)
                    printf("insts %4u  O%d  code %5" PRIu64 " bytes", f->ninsts, lvl, c->code_size);
            }
            qsort(t, (size_t)reps, sizeof *t, cmp_u64);
            printf("  cpu median %8.3f ms  min %8.3f ms\n", t[reps / 2] / 1e6, t[0] / 1e6);
        }
        t_free(f);
    }
    free(t);
    run_loop(vm, eng, reps);
    jit_engine_free(eng);
    som_vm_free(vm);
    t_objects_free();
    return 0;
}
