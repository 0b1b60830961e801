/* SPDX-License-Identifier: MIT */
/*
 * llvm.c - the backend: a JitFunc (ir.h) -> LLVM IR (C API) -> the new pass manager ->
 * machine code (our own TargetMachine) -> linked by the engine's LLJIT (llvm_engine.c).  Runs
 * on any thread; one compilation uses its own LLVMContext and TargetMachine, so compilations
 * run in parallel up to linking, which the engine serialises.
 *
 * The function: `i64 f(ptr vm, ptr fp)` (jitabi.h), "frame-pointer"="all", nounwind.  IR types
 * map to LLVM as JT_VALUE/JT_INT -> i64, JT_DBL -> double, JT_BOOL -> i1, JT_PTR -> ptr; an
 * operand of the other word type is converted where it is used (inttoptr/ptrtoint), so a
 * context or object may come as a VALUE or a PTR.  Runtime entry points and VM addresses
 * (well-known objects, descriptors, the stress generator) are constants in the code: no
 * symbol is resolved at link time, and the code belongs to the VM of f->vm.
 *
 * Frame layout on the value stack (ir.h): bp[0..nargs], the root's locals, then nspill spill
 * slots, then outgoing send arguments at `out` = the first slot past the spill area, which is
 * also what vm->sp holds while the code runs (so the collector scans the spill area).
 *
 * GC (jitabi.h).  Liveness over the IR (frame states count as uses at their instruction)
 * tells which values may be heap references and are live across a GC point (SEND, NEW_BLOCK
 * not virt, NEW_CONTEXT, BOX_DBL's boxing path, SAFEPOINT's slow path, NLR); each is stored
 * into its spill slot right before every such call it is live across (slots are shared by
 * values never live across the same GC point: assign_slots).  Values that are rooted
 * elsewhere or are not heap references are never spilled: ARG (bp[] is not written by
 * compiled code), SELF and FRAME_CTX (fp->self/ctx are scanned), constants (method literals
 * and well-known objects), BOX_INT, BOOL_TO_VALUE.  The operands of the call itself are the
 * runtime's to root, and so are the raw values handed to jit_rt_deopt (on the C stack).
 *
 * Guards branch (weighted cold) to a deopt exit shared by the guards of one state and reason:
 * it stores the position and returns deopt_va(vm, fp, descriptor, n, raw values...), which
 * copies the n raw values of the state into an array on its own stack and calls
 * jit_rt_deopt.  (The exits wrote the values into one alloca'd array before: a store and an
 * address per value, thousands in a large method, on which InstCombine spent most of a
 * compilation - HavlakLoopFinder>>findLoops: default<O2> 0.92 -> 0.39 s, machine code 67 ->
 * 56 KiB.)  Descriptors are built per exit in memory owned by the engine (as long lived as
 * the code); so is the SomJitCode answered.
 *
 * Metadata: !invariant.load only on memory that cannot change while the code holds the
 * object: fp->bp, object headers (class, kind), array/string lengths, nfields, boxed
 * doubles, block fields, a context's outer.  No noalias on vm/fp (see lower()), no TBAA
 * (every store that matters is separated from the loads by calls anyway).
 *
 * Optimization levels (JitCodegenOpts.opt_level): 0 = no IR passes + fast instruction
 * selection (tests), 1 = a light pipeline (JIT_LIGHT_PIPELINE) + less-optimizing codegen,
 * 2 = default<O2> + default codegen, 3 = default<O3> + aggressive codegen.  Measured with
 * tests/unit/jitllvm/bench_compile.c: see pipeline().
 *
 * Deopt stress (JitCodegenOpts.stress_seed): before every guard's own check, a xorshift64
 * generator (state in the code's own data, seeded with stress_seed) draws; the guard fails
 * with reason JDR_STRESS with probability stress_permille/1000.  The state is read and
 * written with relaxed atomics: VM threads sharing one code version may lose updates to each
 * other (a race on the sequence only, never undefined behaviour); one thread alone gets a
 * sequence fixed by the seed.
 *
 * Readings of ir.h (where it is silent):
 *  - A guarded arithmetic op with deopt < 0 is emitted without its check (nothing to deopt to).
 *  - NLR returns its call's result at once (0 or the block's value); instructions after it
 *    in its block are emitted into an unreachable LLVM block.
 *  - A virtual NEW_BLOCK has no code; an operand use of it (there should be none) gets nil.
 *  - Frame-state values that are dead instructions are described as nil.
 *  - SET_POS stores fp->bci as well as fp->jit_pos (the same rule as before a call).
 *  - Deopt exits store the position too (harmless; the descriptor is what counts).
 *  - The entry stack check deoptimizes with reason JDR_UNSUPPORTED.
 *  - IDIV of SOM_SMALLINT_MIN by -1 leaves the small range: guarded like overflow.
 *  - The entry state values (ARG, SELF, FRAME_CTX) are loaded in the prologue, whatever block
 *    the instructions are in: they are "at entry".
 */
#include "compile.h"
#include "feedback.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "llvm_int.h"

/* ---- the code's own data ------------------------------------------------------------- */

typedef struct JitCodeData {
    SomJitCode code;
    uint64_t stress_state; /* xorshift64 (relaxed atomics from the code) */
} JitCodeData;

/* Zeroed memory owned by the engine; NULL on failure (then *fail is set). */
static void *own_alloc(JitEngine *e, size_t size, bool *fail) {
    void *p = calloc(1, size ? size : 1);
    if (!p || !jit_engine_own(e, p)) {
        free(p);
        *fail = true;
        return NULL;
    }
    return p;
}

/* A header no object has: the target of class/kind loads for non-pointer values, so tag
 * tests need no branch.  kind OBJ_FREE, cls NULL; d for SomDouble loads is never used. */
static const SomDouble no_object = {{NULL, 0, OBJ_FREE, 0, 0}, 0.0};

/* ---- lowering state ------------------------------------------------------------------ */

typedef struct Lower {
    const JitFunc *f;
    const JitCodegenOpts *o;
    JitEngine *e;
    JitCodeData *data;
    bool fail;
    char *err;
    size_t errlen;

    LLVMContextRef C;
    LLVMModuleRef M;
    LLVMBuilderRef B;
    LLVMValueRef fn;
    LLVMTypeRef i1, i8, i32, i64, dbl, ptr, fnty;
    LLVMTypeRef t_send, t_call_end, t_deopt, t_safepoint, t_box, t_newblock, t_newctx, t_nlr;
    LLVMTypeRef t_observe;
    unsigned md_prof, md_invariant;
    LLVMValueRef w_cold, w_hot; /* branch weights: (likely, unlikely) and reverse */
    LLVMValueRef empty_md;

    LLVMValueRef vm, fp, bp, spill, out;
    LLVMValueRef *val;            /* per instruction */
    LLVMBasicBlockRef *bb, *bend; /* per IR block: first and last LLVM block */
    int32_t *slot;                /* spill slot per instruction, -1 = none */
    uint32_t nspill;
    JitRef **gc_live;         /* per GC-point instruction: live spilled values (-1 terminated) */
    LLVMBasicBlockRef *exits; /* per state * JDR_COUNT: the shared deopt exit */
    uint32_t *exit_pos;       /* the position it stores */
    uint32_t maxout;          /* receiver + arguments of the largest send */
} Lower;

static void fail(Lower *L, const char *fmt, const char *s) {
    if (!L->fail) snprintf(L->err, L->errlen, fmt, s);
    L->fail = true;
}

static LLVMValueRef ci64(Lower *L, uint64_t v) {
    return LLVMConstInt(L->i64, v, 0);
}
static LLVMValueRef ci32(Lower *L, uint32_t v) {
    return LLVMConstInt(L->i32, v, 0);
}
static LLVMValueRef cptr(Lower *L, const void *p) {
    return LLVMConstIntToPtr(ci64(L, (uint64_t)(uintptr_t)p), L->ptr);
}

static LLVMTypeRef ltype(Lower *L, int t) {
    switch (t) {
    case JT_DBL:
        return L->dbl;
    case JT_BOOL:
        return L->i1;
    case JT_PTR:
        return L->ptr;
    default:
        return L->i64;
    }
}

/* Converts v to LLVM type `want` (word <-> pointer; double bits). */
static LLVMValueRef conv(Lower *L, LLVMValueRef v, LLVMTypeRef want) {
    LLVMTypeRef have = LLVMTypeOf(v);
    if (have == want) return v;
    if (have == L->ptr && want == L->i64) return LLVMBuildPtrToInt(L->B, v, L->i64, "");
    if (have == L->i64 && want == L->ptr) return LLVMBuildIntToPtr(L->B, v, L->ptr, "");
    if (have == L->i1 && want == L->i64) return LLVMBuildZExt(L->B, v, L->i64, "");
    if (have == L->i64 && want == L->i1) return LLVMBuildICmp(L->B, LLVMIntNE, v, ci64(L, 0), "");
    if (have == L->dbl && want == L->i64) return LLVMBuildBitCast(L->B, v, L->i64, "");
    if (have == L->i64 && want == L->dbl) return LLVMBuildBitCast(L->B, v, L->dbl, "");
    if (have == L->ptr && want == L->dbl)
        return LLVMBuildBitCast(L->B, LLVMBuildPtrToInt(L->B, v, L->i64, ""), L->dbl, "");
    if (have == L->dbl && want == L->ptr)
        return LLVMBuildIntToPtr(L->B, LLVMBuildBitCast(L->B, v, L->i64, ""), L->ptr, "");
    return LLVMGetUndef(want);
}

/* Op names without ir.c's table (the backend links without it in its tests). */
static const char *jit_op_name_of(unsigned op) {
    static const char *const names[] = {
#define JIT_OP_NAME_OF(name, type) #name,
        JIT_OPS(JIT_OP_NAME_OF)
#undef JIT_OP_NAME_OF
    };
    return op < JI__COUNT ? names[op] : "?";
}

static LLVMValueRef nil_value(Lower *L) {
    return ci64(L, L->f->vm->nil);
}

/* The value of instruction r as LLVM type t. */
static LLVMValueRef get(Lower *L, JitRef r, LLVMTypeRef t) {
    if (r < 0 || (uint32_t)r >= L->f->ninsts || !L->val[r]) {
        if (r >= 0 && (uint32_t)r < L->f->ninsts &&
            !(L->f->insts[r].op == JI_NEW_BLOCK && L->f->insts[r].virt)) {
            char what[64];
            snprintf(what, sizeof what, "%d (%s)", r, jit_op_name_of(L->f->insts[r].op));
            fail(L, "instruction %s is used before its definition or is dead", what);
        }
        if (t == L->ptr) return LLVMConstNull(L->ptr);
        return conv(L, nil_value(L), t);
    }
    return conv(L, L->val[r], t);
}
static LLVMValueRef geti(Lower *L, JitRef r) {
    return get(L, r, L->i64);
}
static LLVMValueRef getp(Lower *L, JitRef r) {
    return get(L, r, L->ptr);
}

/* Address base + off bytes. */
static LLVMValueRef addr(Lower *L, LLVMValueRef base, uint64_t off) {
    if (!off) return base;
    LLVMValueRef idx = ci64(L, off);
    return LLVMBuildInBoundsGEP2(L->B, L->i8, base, &idx, 1, "");
}

/* Address base + off + 8 * index (index an i64). */
static LLVMValueRef addr_idx(Lower *L, LLVMValueRef base, uint64_t off, LLVMValueRef index) {
    LLVMValueRef idx = index;
    return LLVMBuildInBoundsGEP2(L->B, L->i64, addr(L, base, off), &idx, 1, "");
}

static LLVMValueRef load(Lower *L, LLVMTypeRef t, LLVMValueRef p, bool invariant) {
    LLVMValueRef v = LLVMBuildLoad2(L->B, t, p, "");
    if (invariant) LLVMSetMetadata(v, L->md_invariant, L->empty_md);
    return v;
}

static void store(Lower *L, LLVMValueRef v, LLVMValueRef p) {
    LLVMBuildStore(L->B, v, p);
}

static LLVMBasicBlockRef new_bb(Lower *L, const char *name) {
    return LLVMAppendBasicBlockInContext(L->C, L->fn, name);
}

/* Conditional branch; `cold_false`: the false edge is the rare one (and the reverse). */
static void cond_br(Lower *L, LLVMValueRef c, LLVMBasicBlockRef t, LLVMBasicBlockRef f,
                    int weights) {
    LLVMValueRef br = LLVMBuildCondBr(L->B, c, t, f);
    if (weights > 0)
        LLVMSetMetadata(br, L->md_prof, L->w_cold);
    else if (weights < 0)
        LLVMSetMetadata(br, L->md_prof, L->w_hot);
}

static LLVMValueRef call(Lower *L, LLVMTypeRef ty, const void *fnaddr, LLVMValueRef *args,
                         unsigned n, bool cold) {
    LLVMValueRef c = LLVMBuildCall2(L->B, ty, cptr(L, fnaddr), args, n, "");
    if (cold) {
        unsigned k = LLVMGetEnumAttributeKindForName("cold", 4);
        LLVMAddCallSiteAttribute(c, LLVMAttributeFunctionIndex,
                                 LLVMCreateEnumAttribute(L->C, k, 0));
    }
    return c;
}

static LLVMValueRef intrinsic(Lower *L, const char *name, LLVMTypeRef *tys, unsigned ntys,
                              LLVMValueRef *args, unsigned n) {
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef decl = LLVMGetIntrinsicDeclaration(L->M, id, tys, ntys);
    LLVMTypeRef ty = LLVMIntrinsicGetType(L->C, id, tys, ntys);
    return LLVMBuildCall2(L->B, ty, decl, args, n, "");
}

/* ---- positions ----------------------------------------------------------------------- */

/* Stores fp->bci and fp->jit_pos for position p (ir.h's rule).  Volatile: a sampler's
 * signal handler reads them at any instruction, which LLVM does not see; plain stores may
 * legally be merged, moved or dropped where nothing LLVM knows of reads them before the next
 * store (an inlined activation's start and end with no call between). */
static void store_pos(Lower *L, uint32_t p) {
    const JitFunc *f = L->f;
    if (p == JIT_POS_NONE || p >= f->npos) return;
    uint32_t e = p;
    for (uint32_t n = 0;
         f->pos[e].parent != JIT_POS_NONE && f->pos[e].parent < f->npos && n < f->npos; n++)
        e = f->pos[e].parent;
    LLVMSetVolatile(
        LLVMBuildStore(L->B, ci32(L, f->pos[e].bci), addr(L, L->fp, offsetof(SomFrame, bci))), 1);
    LLVMSetVolatile(LLVMBuildStore(L->B, ci32(L, e == p ? JIT_POS_NONE : p),
                                   addr(L, L->fp, offsetof(SomFrame, jit_pos))),
                    1);
}

/* ---- frame states -> deopt descriptors ----------------------------------------------- */

typedef struct DescBuild {
    JitDeoptVal *vals;
    uint32_t nvals, cap;
    JitRef *ref; /* per value: the instruction it comes from (-1: none) */
    uint32_t nraw;
    JitRef *raw_ref; /* per raw slot: the instruction */
    bool oom;
} DescBuild;

static int32_t desc_val(Lower *L, DescBuild *d, JitRef r, int depth);

static int32_t desc_push(DescBuild *d, JitDeoptVal v, JitRef r) {
    if (d->nvals == d->cap) {
        uint32_t cap = d->cap ? 2 * d->cap : 16;
        JitDeoptVal *nv = realloc(d->vals, cap * sizeof *nv);
        JitRef *nr = nv ? realloc(d->ref, cap * sizeof *nr) : NULL;
        JitRef *nw = nr ? realloc(d->raw_ref, cap * sizeof *nw) : NULL;
        if (nv) d->vals = nv;
        if (nr) d->ref = nr;
        if (!nw) {
            d->oom = true;
            return -1;
        }
        d->raw_ref = nw;
        d->cap = cap;
    }
    d->ref[d->nvals] = r;
    d->vals[d->nvals] = v;
    return (int32_t)d->nvals++;
}

static int32_t desc_val(Lower *L, DescBuild *d, JitRef r, int depth) {
    const JitFunc *f = L->f;
    for (uint32_t i = 0; i < d->nvals; i++)
        if (d->ref[i] == r) return (int32_t)i;
    JitDeoptVal v = {.kind = JVK_CONST, .raw = -1, .cst = f->vm->nil, .vctx = -1, .vself = -1};
    if (r < 0 || (uint32_t)r >= f->ninsts) return desc_push(d, v, r);
    const JitInst *in = &f->insts[r];
    if (in->op == JI_CONST && !in->dead) {
        v.cst = in->cval;
        return desc_push(d, v, r);
    }
    if (in->op == JI_NEW_BLOCK && in->virt) {
        if (depth > 64) return desc_push(d, v, r);
        int32_t vctx = in->nargs > 0 && in->a[0] >= 0 ? desc_val(L, d, in->a[0], depth + 1) : -1;
        int32_t vself = desc_val(L, d, in->nargs > 1 ? in->a[1] : -1, depth + 1);
        v.kind = JVK_VBLOCK;
        v.vmethod = in->method;
        v.vctx = vctx;
        v.vself = vself;
        v.vid = r;
        return desc_push(d, v, r);
    }
    if (!in->dead && !L->val[r]) {
        char what[64];
        snprintf(what, sizeof what, "%d (%s)", r, jit_op_name_of(in->op));
        fail(L, "a frame state uses instruction %s before its definition", what);
    }
    if (in->dead || !L->val[r]) return desc_push(d, v, r); /* nil */
    switch (in->type) {
    case JT_INT:
        v.kind = JVK_INT;
        break;
    case JT_DBL:
        v.kind = JVK_DOUBLE;
        break;
    case JT_BOOL:
        v.kind = JVK_BOOL;
        break;
    default:
        v.kind = JVK_VALUE;
        break;
    }
    v.raw = (int32_t)d->nraw;
    int32_t i = desc_push(d, v, r);
    if (i >= 0) d->raw_ref[d->nraw++] = r;
    return i;
}

/* The descriptor of state s for reason; raw_refs (optional) gets the instructions of its raw
 * values, in order (malloc'ed, caller frees), *nraw their number. */
static const JitDeopt *descriptor(Lower *L, int32_t s, uint32_t reason, JitRef **raw_refs,
                                  uint32_t *nraw) {
    const JitFunc *f = L->f;
    const JitState *st = &f->states[s];
    DescBuild d = {0};
    JitDeopt *jd = own_alloc(L->e, sizeof *jd, &L->fail);
    JitDeoptScope *sc = own_alloc(L->e, (st->nscopes ? st->nscopes : 1) * sizeof *sc, &L->fail);
    if (!jd || !sc) return NULL;
    for (uint32_t k = 0; k < st->nscopes; k++) {
        const JitStateScope *ss = &st->scopes[k];
        int32_t *slots = own_alloc(L->e, (ss->nslots + 1) * sizeof *slots, &L->fail);
        int32_t *stack = own_alloc(L->e, (ss->nstack + 1) * sizeof *stack, &L->fail);
        if (!slots || !stack) return NULL;
        sc[k].method = ss->method;
        sc[k].bci = ss->bci;
        sc[k].resume_bci = ss->resume_bci;
        sc[k].self = desc_val(L, &d, ss->self, 0);
        sc[k].ctx = ss->ctx < 0 ? -1 : desc_val(L, &d, ss->ctx, 0);
        sc[k].nslots = ss->nslots;
        sc[k].nstack = ss->nstack;
        for (uint32_t i = 0; i < ss->nslots; i++)
            slots[i] = desc_val(L, &d, ss->slots[i], 0);
        for (uint32_t i = 0; i < ss->nstack; i++)
            stack[i] = desc_val(L, &d, ss->stack[i], 0);
        sc[k].slots = slots;
        sc[k].stack = stack;
    }
    JitDeoptVal *vals = own_alloc(L->e, (d.nvals + 1) * sizeof *vals, &L->fail);
    if (vals && d.nvals) memcpy(vals, d.vals, d.nvals * sizeof *vals);
    if (d.oom) L->fail = true;
    jd->reason = reason;
    jd->nscopes = st->nscopes;
    jd->nvals = d.nvals;
    jd->scopes = sc;
    jd->vals = vals;
    if (raw_refs) {
        *raw_refs = d.raw_ref;
        d.raw_ref = NULL;
    }
    if (nraw) *nraw = d.nraw;
    free(d.vals);
    free(d.ref);
    free(d.raw_ref);
    return L->fail ? NULL : jd;
}

/* Builds (at the end of the function) a cold block leaving through state s; answers it. */
/* The most raw values one deopt exit hands over (a larger frame state fails the compilation). */
#define JIT_DEOPT_MAX_RAW 512u

/* What a deopt exit calls: the n raw values come as i64 arguments and go to jit_rt_deopt in an
 * array on this frame's stack, sized as the compiled frame's own array was (n * 8 bytes). */
static Value deopt_va(SomVM *vm, SomFrame *fp, const JitDeopt *d, uint32_t n, ...) {
    if (n > JIT_DEOPT_MAX_RAW) n = JIT_DEOPT_MAX_RAW; /* never: the exit is not compiled */
    uint64_t raw[n ? n : 1];
    va_list ap;
    va_start(ap, n);
    for (uint32_t i = 0; i < n; i++)
        raw[i] = va_arg(ap, uint64_t);
    va_end(ap);
    return jit_rt_deopt(vm, fp, d, raw);
}

static LLVMBasicBlockRef deopt_exit(Lower *L, int32_t s, uint32_t reason, uint32_t pos) {
    if (s < 0 || (uint32_t)s >= L->f->nstates) {
        char what[48];
        snprintf(what, sizeof what, "%d (of %u)", s, L->f->nstates);
        fail(L, "frame state %s out of range", what);
        return NULL;
    }
    /* Guards with the same state share its exit: the state's values are defined before
     * each of them, so they dominate the exit too. */
    size_t key = (size_t)s * JDR_COUNT + reason;
    if (reason < JDR_COUNT && L->exits && L->exits[key] && L->exit_pos[key] == pos)
        return L->exits[key];
    JitRef *refs = NULL;
    uint32_t nraw = 0;
    const JitDeopt *d = descriptor(L, s, reason, &refs, &nraw);
    if (!d) {
        free(refs);
        fail(L, "out of memory building a deopt descriptor%s", "");
        return NULL;
    }
    LLVMBasicBlockRef saved = LLVMGetInsertBlock(L->B);
    LLVMBasicBlockRef b = new_bb(L, "deopt");
    LLVMPositionBuilderAtEnd(L->B, b);
    if (nraw > JIT_DEOPT_MAX_RAW) {
        free(refs);
        char what[48];
        snprintf(what, sizeof what, "%u values (at most %u)", nraw, JIT_DEOPT_MAX_RAW);
        fail(L, "frame state of %s", what);
        return NULL;
    }
    store_pos(L, pos);
    LLVMValueRef *args = malloc((4 + (size_t)nraw) * sizeof *args);
    if (!args) {
        free(refs);
        fail(L, "out of memory building a deopt exit%s", "");
        return NULL;
    }
    args[0] = L->vm;
    args[1] = L->fp;
    args[2] = cptr(L, d);
    args[3] = ci32(L, nraw);
    for (uint32_t i = 0; i < nraw; i++)
        args[4 + i] = geti(L, refs[i]);
    free(refs);
    LLVMValueRef r = call(L, L->t_deopt, (const void *)deopt_va, args, 4 + nraw, true);
    free(args);
    LLVMBuildRet(L->B, r);
    LLVMPositionBuilderAtEnd(L->B, saved);
    if (reason < JDR_COUNT && L->exits) {
        L->exits[key] = b;
        L->exit_pos[key] = pos;
    }
    return b;
}

/* Deopt-stress draw: true (i1) when this guard execution must fail. */
static LLVMValueRef stress_draw(Lower *L) {
    uint32_t pm = L->o->stress_permille ? L->o->stress_permille : 20;
    LLVMValueRef sp = cptr(L, &L->data->stress_state);
    LLVMValueRef x = LLVMBuildLoad2(L->B, L->i64, sp, "");
    LLVMSetOrdering(x, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(x, 8);
    x = LLVMBuildXor(L->B, x, LLVMBuildShl(L->B, x, ci64(L, 13), ""), "");
    x = LLVMBuildXor(L->B, x, LLVMBuildLShr(L->B, x, ci64(L, 7), ""), "");
    x = LLVMBuildXor(L->B, x, LLVMBuildShl(L->B, x, ci64(L, 17), ""), "");
    LLVMValueRef st = LLVMBuildStore(L->B, x, sp);
    LLVMSetOrdering(st, LLVMAtomicOrderingMonotonic);
    LLVMSetAlignment(st, 8);
    LLVMValueRef m = LLVMBuildURem(L->B, x, ci64(L, 1000), "");
    return LLVMBuildICmp(L->B, LLVMIntULT, m, ci64(L, pm), "");
}

/* Continues only when ok (i1) holds; else deopts with inst i's state.  With stress on, a
 * stress draw comes first (before the guard's own check). */
static void guard(Lower *L, JitRef i, LLVMValueRef ok, uint32_t reason) {
    const JitInst *in = &L->f->insts[i];
    if (in->deopt < 0) return;
    if (L->o->stress_seed) {
        LLVMBasicBlockRef cont = new_bb(L, "nostress");
        LLVMBasicBlockRef ex = deopt_exit(L, in->deopt, JDR_STRESS, in->pos);
        if (!ex) return;
        cond_br(L, stress_draw(L), ex, cont, -1);
        LLVMPositionBuilderAtEnd(L->B, cont);
    }
    if (LLVMIsAConstantInt(ok) && LLVMConstIntGetZExtValue(ok) == 1) return;
    LLVMBasicBlockRef cont = new_bb(L, "ok");
    LLVMBasicBlockRef ex = deopt_exit(L, in->deopt, reason, in->pos);
    if (!ex) return;
    cond_br(L, ok, cont, ex, 1);
    LLVMPositionBuilderAtEnd(L->B, cont);
}

/* ---- liveness and spill slots -------------------------------------------------------- */

static bool is_gc_point(const JitInst *in) {
    switch (in->op) {
    case JI_SEND:
    case JI_NEW_CONTEXT:
    case JI_BOX_DBL:
    case JI_SAFEPOINT:
    case JI_NLR:
        return true;
    case JI_NEW_BLOCK:
        return !in->virt;
    default:
        return false;
    }
}

/* May the value of `in` be a heap reference that only compiled code holds? */
static bool spillable(const JitInst *in) {
    if (in->dead || (in->type != JT_VALUE && in->type != JT_PTR)) return false;
    switch (in->op) {
    case JI_CONST:
    case JI_CONST_PTR:
    case JI_ARG:
    case JI_SELF:
    case JI_FRAME_CTX:
    case JI_BOX_INT:
    case JI_BOOL_TO_VALUE:
        return false;
    case JI_NEW_BLOCK:
        return !in->virt;
    default:
        return true;
    }
}

typedef struct Bits {
    uint64_t *w;
    uint32_t nw;
} Bits;

static inline void bset(uint64_t *w, JitRef r) {
    w[(uint32_t)r >> 6] |= (uint64_t)1 << (r & 63);
}
static inline void bclr(uint64_t *w, JitRef r) {
    w[(uint32_t)r >> 6] &= ~((uint64_t)1 << (r & 63));
}
static inline bool btest(const uint64_t *w, JitRef r) {
    return (w[(uint32_t)r >> 6] >> (r & 63)) & 1;
}

/* Adds the uses of instruction `in` (operands and frame-state values) to live. */
static void add_state_ref(const JitFunc *f, uint64_t *live, JitRef r, int depth) {
    if (r < 0 || (uint32_t)r >= f->ninsts) return;
    const JitInst *in = &f->insts[r];
    if (in->op == JI_NEW_BLOCK && in->virt) {
        if (depth > 64) return;
        for (int k = 0; k < in->nargs && k < 2; k++)
            add_state_ref(f, live, in->a[k], depth + 1);
        return;
    }
    if (spillable(in)) bset(live, r);
}

static void add_uses(const JitFunc *f, uint64_t *live, const JitInst *in) {
    if (in->op == JI_PHI) return;
    for (int k = 0; k < in->nargs && k < JIT_MAX_ARGS; k++)
        add_state_ref(f, live, in->a[k], 0);
    if (in->deopt >= 0 && (uint32_t)in->deopt < f->nstates) {
        const JitState *st = &f->states[in->deopt];
        for (uint32_t s = 0; s < st->nscopes; s++) {
            const JitStateScope *sc = &st->scopes[s];
            add_state_ref(f, live, sc->self, 0);
            add_state_ref(f, live, sc->ctx, 0);
            for (uint32_t i = 0; i < sc->nslots; i++)
                add_state_ref(f, live, sc->slots[i], 0);
            for (uint32_t i = 0; i < sc->nstack; i++)
                add_state_ref(f, live, sc->stack[i], 0);
        }
    }
}

/* Index of block b in succ's predecessor list occurrences -> phi inputs from b. */
static void add_phi_inputs(const JitFunc *f, uint64_t *live, int32_t b, int32_t succ) {
    const JitBlock *s = &f->blocks[succ];
    for (uint32_t p = 0; p < s->npreds; p++) {
        if (s->preds[p] != b) continue;
        for (uint32_t k = 0; k < s->ninsts; k++) {
            const JitInst *in = &f->insts[s->insts[k]];
            if (in->op != JI_PHI) break;
            if (!in->dead && in->phi) add_state_ref(f, live, in->phi[p], 0);
        }
    }
}

static int32_t nsucc(const JitFunc *f, int32_t b) {
    const JitBlock *bl = &f->blocks[b];
    if (!bl->ninsts) return 0;
    const JitInst *t = &f->insts[bl->insts[bl->ninsts - 1]];
    return t->op == JI_JUMP ? 1 : t->op == JI_BRANCH ? 2 : 0;
}

/* Spill slots.  A slot matters only at the GC points (every value live across one is
 * stored right before it), so two values share a slot unless they are live across the same
 * GC point: greedy coloring of that interference.  A slot may keep a dead value's reference
 * until it is overwritten: a valid Value (objects are not moved), only kept alive longer. */
static bool assign_slots(Lower *L) {
    const JitFunc *f = L->f;
    uint32_t ngc = 0;
    for (uint32_t r = 0; r < f->ninsts; r++)
        ngc += L->gc_live[r] != NULL;
    JitRef **lists = malloc((ngc + 1) * sizeof *lists);
    uint8_t *busy = calloc(f->ninsts + 1, 1);
    if (!lists || !busy) {
        free(lists);
        free(busy);
        return false;
    }
    ngc = 0;
    for (uint32_t r = 0; r < f->ninsts; r++)
        if (L->gc_live[r]) lists[ngc++] = L->gc_live[r];
    for (uint32_t g = 0; g < ngc; g++) {
        for (JitRef *p = lists[g]; *p >= 0; p++) {
            JitRef v = *p;
            if (L->slot[v] >= 0) continue;
            /* slots of already placed values co-live with v at some GC point */
            memset(busy, 0, L->nspill + 1);
            for (uint32_t h = 0; h < ngc; h++) {
                bool has = false;
                for (JitRef *q = lists[h]; *q >= 0 && *q <= v; q++)
                    has |= *q == v;
                if (!has) continue;
                for (JitRef *q = lists[h]; *q >= 0; q++)
                    if (L->slot[*q] >= 0) busy[L->slot[*q]] = 1;
            }
            uint32_t k = 0;
            while (k < L->nspill && busy[k])
                k++;
            L->slot[v] = (int32_t)k;
            if (k == L->nspill) L->nspill++;
        }
    }
    free(lists);
    free(busy);
    return true;
}

static bool liveness(Lower *L) {
    const JitFunc *f = L->f;
    uint32_t nw = (f->ninsts + 63) / 64 + 1;
    uint64_t *in = calloc((size_t)f->nblocks * nw, 8);
    uint64_t *cur = calloc(nw, 8);
    L->slot = malloc(f->ninsts * sizeof *L->slot);
    L->gc_live = calloc(f->ninsts, sizeof *L->gc_live);
    if (!in || !cur || !L->slot || !L->gc_live) {
        free(in);
        free(cur);
        return false;
    }
    for (uint32_t i = 0; i < f->ninsts; i++)
        L->slot[i] = -1;
    bool changed = true;
    while (changed) { /* the GC-point lists of the last pass (no change) are the answer */
        changed = false;
        for (int32_t b = (int32_t)f->nblocks - 1; b >= 0; b--) {
            const JitBlock *bl = &f->blocks[b];
            memset(cur, 0, nw * 8);
            for (int32_t k = 0; k < nsucc(f, b); k++) {
                int32_t s = bl->succ[k];
                if (s < 0 || (uint32_t)s >= f->nblocks) continue;
                for (uint32_t w = 0; w < nw; w++)
                    cur[w] |= in[(size_t)s * nw + w];
                const JitBlock *sb = &f->blocks[s];
                for (uint32_t j = 0; j < sb->ninsts && f->insts[sb->insts[j]].op == JI_PHI; j++)
                    bclr(cur, sb->insts[j]);
                add_phi_inputs(f, cur, b, s);
            }
            for (int32_t j = (int32_t)bl->ninsts - 1; j >= 0; j--) {
                JitRef r = bl->insts[j];
                const JitInst *ji = &f->insts[r];
                if (ji->dead) continue;
                bclr(cur, r);
                if (is_gc_point(ji)) {
                    uint32_t n = 0;
                    for (uint32_t w = 0; w < nw; w++)
                        n += (uint32_t)__builtin_popcountll(cur[w]);
                    JitRef *lst = realloc(L->gc_live[r], (n + 1) * sizeof *lst);
                    if (!lst) {
                        free(in);
                        free(cur);
                        return false;
                    }
                    uint32_t m = 0;
                    for (uint32_t v = 0; v < f->ninsts; v++)
                        if (btest(cur, (JitRef)v)) lst[m++] = (JitRef)v;
                    lst[m] = -1;
                    L->gc_live[r] = lst;
                }
                add_uses(f, cur, ji);
            }
            /* phis of b are defined at its start */
            for (uint32_t j = 0; j < bl->ninsts && f->insts[bl->insts[j]].op == JI_PHI; j++)
                bclr(cur, bl->insts[j]);
            uint64_t *bi = &in[(size_t)b * nw];
            if (memcmp(bi, cur, nw * 8)) {
                memcpy(bi, cur, nw * 8);
                changed = true;
            }
        }
    }
    free(in);
    free(cur);
    return assign_slots(L);
    return true;
}

/* Stores every value live across GC point r into its slot. */
static void spill_for(Lower *L, JitRef r) {
    for (JitRef *p = L->gc_live[r]; p && *p >= 0; p++) {
        if (!L->val[*p]) continue;
        LLVMValueRef idx = ci64(L, (uint64_t)L->slot[*p]);
        LLVMValueRef a = LLVMBuildInBoundsGEP2(L->B, L->i64, L->spill, &idx, 1, "");
        store(L, geti(L, *p), a);
    }
}

/* ---- instructions -------------------------------------------------------------------- */

/* An i64 phi at the builder's block of a (coming from block ba) and b (from bb). */
static LLVMValueRef phi2(Lower *L, LLVMValueRef a, LLVMBasicBlockRef ba, LLVMValueRef b,
                         LLVMBasicBlockRef bb) {
    LLVMValueRef phi = LLVMBuildPhi(L->B, L->i64, "");
    LLVMAddIncoming(phi, (LLVMValueRef[]){a, b}, (LLVMBasicBlockRef[]){ba, bb}, 2);
    return phi;
}

/* Tag test (v & 3) == 0 -> v as an object pointer, else the no_object header. */
static LLVMValueRef obj_or_dummy(Lower *L, LLVMValueRef v) {
    LLVMValueRef isobj =
        LLVMBuildICmp(L->B, LLVMIntEQ, LLVMBuildAnd(L->B, v, ci64(L, 3), ""), ci64(L, 0), "");
    return LLVMBuildSelect(L->B, isobj, LLVMBuildIntToPtr(L->B, v, L->ptr, ""), cptr(L, &no_object),
                           "");
}

static LLVMValueRef kind_of(Lower *L, LLVMValueRef v) {
    LLVMValueRef p = obj_or_dummy(L, v);
    return load(L, L->i8, addr(L, p, offsetof(ObjHeader, kind)), true);
}

static LLVMValueRef is_imm_dbl(Lower *L, LLVMValueRef v) {
    return LLVMBuildICmp(L->B, LLVMIntEQ, LLVMBuildAnd(L->B, v, ci64(L, 3), ""), ci64(L, 2), "");
}

static LLVMValueRef is_dbl(Lower *L, LLVMValueRef v) {
    LLVMValueRef boxed =
        LLVMBuildICmp(L->B, LLVMIntEQ, kind_of(L, v), LLVMConstInt(L->i8, OBJ_DOUBLE, 0), "");
    return LLVMBuildOr(L->B, is_imm_dbl(L, v), boxed, "");
}

static LLVMValueRef is_int(Lower *L, LLVMValueRef v) {
    return LLVMBuildTrunc(L->B, v, L->i1, "");
}

static LLVMValueRef in_small_range(Lower *L, LLVMValueRef x) {
    /* x fits 63 bits iff (x << 1) >> 1 == x */
    LLVMValueRef back = LLVMBuildAShr(L->B, LLVMBuildShl(L->B, x, ci64(L, 1), ""), ci64(L, 1), "");
    return LLVMBuildICmp(L->B, LLVMIntEQ, back, x, "");
}

/* som_imm_double */
static LLVMValueRef imm_decode(Lower *L, LLVMValueRef v) {
    LLVMValueRef p = LLVMBuildLShr(L->B, v, ci64(L, 2), "");
    LLVMValueRef r = LLVMBuildAdd(L->B, p, ci64(L, SOM_DBL_OFFSET), "");
    LLVMValueRef rot = LLVMBuildOr(L->B, LLVMBuildLShr(L->B, r, ci64(L, 1), ""),
                                   LLVMBuildShl(L->B, r, ci64(L, 63), ""), "");
    LLVMValueRef nz = LLVMBuildICmp(L->B, LLVMIntNE, p, ci64(L, 0), "");
    LLVMValueRef bits = LLVMBuildSelect(L->B, nz, rot, ci64(L, 0), "");
    return LLVMBuildBitCast(L->B, bits, L->dbl, "");
}

static LLVMValueRef unbox_dbl(Lower *L, LLVMValueRef v) {
    LLVMValueRef imm = is_imm_dbl(L, v);
    LLVMValueRef p =
        LLVMBuildSelect(L->B, imm, cptr(L, &no_object), LLVMBuildIntToPtr(L->B, v, L->ptr, ""), "");
    LLVMValueRef boxed = load(L, L->dbl, addr(L, p, offsetof(SomDouble, d)), true);
    return LLVMBuildSelect(L->B, imm, imm_decode(L, v), boxed, "");
}

/* som_try_imm_double, with jit_rt_box_double as the out-of-line fallback (a GC point). */
static LLVMValueRef box_dbl(Lower *L, JitRef r, LLVMValueRef d) {
    LLVMValueRef u = LLVMBuildBitCast(L->B, d, L->i64, "");
    LLVMValueRef rot = LLVMBuildOr(L->B, LLVMBuildShl(L->B, u, ci64(L, 1), ""),
                                   LLVMBuildLShr(L->B, u, ci64(L, 63), ""), "");
    LLVMValueRef p = LLVMBuildSub(L->B, rot, ci64(L, SOM_DBL_OFFSET), "");
    LLVMValueRef inwin = LLVMBuildICmp(L->B, LLVMIntULT, LLVMBuildSub(L->B, p, ci64(L, 1), ""),
                                       ci64(L, ((uint64_t)1 << 62) - 1), "");
    LLVMValueRef enc = LLVMBuildOr(L->B, LLVMBuildShl(L->B, p, ci64(L, 2), ""), ci64(L, 2), "");
    LLVMValueRef zero = LLVMBuildICmp(L->B, LLVMIntEQ, u, ci64(L, 0), "");
    LLVMValueRef fast = LLVMBuildOr(L->B, inwin, zero, "");
    LLVMValueRef immv = LLVMBuildSelect(L->B, inwin, enc, ci64(L, 2), "");
    LLVMBasicBlockRef from = LLVMGetInsertBlock(L->B);
    LLVMBasicBlockRef slow = new_bb(L, "boxdbl");
    LLVMBasicBlockRef join = new_bb(L, "boxed");
    cond_br(L, fast, join, slow, 1);
    LLVMPositionBuilderAtEnd(L->B, slow);
    spill_for(L, r);
    store_pos(L, L->f->insts[r].pos);
    LLVMValueRef args[] = {L->vm, d};
    LLVMValueRef boxed = call(L, L->t_box, (const void *)jit_rt_box_double, args, 2, true);
    LLVMBuildBr(L->B, join);
    LLVMPositionBuilderAtEnd(L->B, join);
    return phi2(L, immv, from, boxed, slow);
}

/* Returns 0 from the function when v is 0 (the unwind/exit protocol). */
static void ret_if_zero(Lower *L, LLVMValueRef v) {
    LLVMBasicBlockRef cont = new_bb(L, "ok");
    LLVMBasicBlockRef z = new_bb(L, "ret0");
    cond_br(L, LLVMBuildICmp(L->B, LLVMIntEQ, v, ci64(L, 0), ""), z, cont, -1);
    LLVMPositionBuilderAtEnd(L->B, z);
    LLVMBuildRet(L->B, ci64(L, 0));
    LLVMPositionBuilderAtEnd(L->B, cont);
}

/* ---- direct calls ---------------------------------------------------------------------
 * A send with a target method (ir.h) enters the target's current compiled code itself when
 * the receiver has the expected class, the target has valid code, and nothing asks for the
 * runtime's attention (safepoint poll, controller tick, exact hooks, deep C stack, full frame
 * array or value stack): it sets up and publishes the callee's frame record exactly as
 * jit_rt_send would (jitrt.c: rt_send_compiled), calls the code's entry, and pops the frame
 * on a plain return.  Everything else - no code yet, another class, an unwind, a poll at the
 * return - goes through jit_rt_send or jit_rt_call_end, so the behaviour is the runtime's. */

static LLVMValueRef has_class(Lower *L, const JitInst *in);

static bool direct_ok(const JitInst *in) {
    const SomMethod *t = in->target;
    return t && t->kind == MK_METHOD && !t->trivial && !in->cs->is_super &&
           t->nargs == in->cs->nargs;
}

/* A field of the VM that other threads or the callee may change (volatile: read here). */
static LLVMValueRef vm_field(Lower *L, LLVMTypeRef t, size_t off) {
    LLVMValueRef v = load(L, t, addr(L, L->vm, off), false);
    LLVMSetVolatile(v, 1);
    return v;
}

/* Emits the direct call of in->target: branches to `slow` when it does not apply; else ends
 * in a block that branches to `join` with the send's result (0 = return 0) in *res.  Answers
 * that block. */
static LLVMBasicBlockRef direct_call(Lower *L, const JitInst *in, LLVMBasicBlockRef slow,
                                     LLVMBasicBlockRef join, LLVMValueRef *res) {
    LLVMBuilderRef B = L->B;
    const SomMethod *t = in->target;
    LLVMValueRef rcv = geti(L, in->a[0]);
    /* 1. class, code, and the VM's requests */
    LLVMValueRef ok = LLVMConstInt(L->i1, 1, 0);
    if (in->cls) {
        JitInst hc = *in;
        hc.op = JI_HAS_CLASS;
        ok = has_class(L, &hc);
    }
    LLVMValueRef code = load(L, L->ptr, addr(L, cptr(L, t), offsetof(SomMethod, jit)), false);
    ok = LLVMBuildAnd(B, ok, LLVMBuildIsNotNull(B, code, ""), "");
    /* a negative poll (the coop sampler waiting, vm.h) asks for nothing here */
    LLVMValueRef req = LLVMBuildOr(B, vm_field(L, L->i32, offsetof(SomVM, poll)),
                                   vm_field(L, L->i32, offsetof(SomVM, jit_tick)), "");
    LLVMValueRef hooks = vm_field(L, L->i8, offsetof(SomVM, exact_hooks));
    ok = LLVMBuildAnd(B, ok, LLVMBuildICmp(B, LLVMIntSLE, req, ci32(L, 0), ""), "");
    ok = LLVMBuildAnd(B, ok, LLVMBuildICmp(B, LLVMIntEQ, hooks, LLVMConstInt(L->i8, 0, 0), ""), "");
    LLVMBasicBlockRef chk = new_bb(L, "direct_check");
    cond_br(L, ok, chk, slow, 1);
    /* 2. the code is valid, and there is room on the three stacks */
    LLVMPositionBuilderAtEnd(B, chk);
    LLVMValueRef inv = load(L, L->i32, addr(L, code, offsetof(SomJitCode, invalid)), false);
    ok = LLVMBuildICmp(B, LLVMIntEQ, inv, ci32(L, 0), "");
    LLVMValueRef nf = addr(L, L->fp, sizeof(SomFrame));
    LLVMValueRef frames = vm_field(L, L->ptr, offsetof(SomVM, frames));
    LLVMValueRef nmax = vm_field(L, L->i64, offsetof(SomVM, max_frames));
    LLVMValueRef fend = LLVMBuildInBoundsGEP2(
        B, L->i8, frames, (LLVMValueRef[]){LLVMBuildMul(B, nmax, ci64(L, sizeof(SomFrame)), "")}, 1,
        "");
    LLVMValueRef nf_end = addr(L, nf, sizeof(SomFrame));
    ok = LLVMBuildAnd(B, ok,
                      LLVMBuildICmp(B, LLVMIntULE, LLVMBuildPtrToInt(B, nf_end, L->i64, ""),
                                    LLVMBuildPtrToInt(B, fend, L->i64, ""), ""),
                      "");
    uint64_t need = 1u + (uint64_t)t->nargs + t->nlocals + t->maxstack + 8;
    LLVMValueRef send_end = addr(L, L->out, 8 * need);
    LLVMValueRef send_lim = vm_field(L, L->ptr, offsetof(SomVM, stack_end));
    ok = LLVMBuildAnd(B, ok,
                      LLVMBuildICmp(B, LLVMIntULE, LLVMBuildPtrToInt(B, send_end, L->i64, ""),
                                    LLVMBuildPtrToInt(B, send_lim, L->i64, ""), ""),
                      "");
    LLVMValueRef here =
        intrinsic(L, "llvm.frameaddress", &L->ptr, 1, (LLVMValueRef[]){ci32(L, 0)}, 1);
    LLVMValueRef climit = vm_field(L, L->ptr, offsetof(SomVM, cstack_limit));
    ok = LLVMBuildAnd(B, ok,
                      LLVMBuildICmp(B, LLVMIntUGE, LLVMBuildPtrToInt(B, here, L->i64, ""),
                                    LLVMBuildPtrToInt(B, climit, L->i64, ""), ""),
                      "");
    LLVMBasicBlockRef go = new_bb(L, "direct_go");
    cond_br(L, ok, go, slow, 1);
    /* 3. the frame record, the locals, publication (frame.h), counters, the call */
    LLVMPositionBuilderAtEnd(B, go);
    store(L, cptr(L, t), addr(L, nf, offsetof(SomFrame, method)));
    store(L, ci32(L, 0), addr(L, nf, offsetof(SomFrame, bci)));
    store(L, ci32(L, 0), addr(L, nf, offsetof(SomFrame, visited)));
    store(L, L->out, addr(L, nf, offsetof(SomFrame, bp)));
    store(L, rcv, addr(L, nf, offsetof(SomFrame, self)));
    store(L, LLVMConstNull(L->ptr), addr(L, nf, offsetof(SomFrame, ctx)));
    store(L, code, addr(L, nf, offsetof(SomFrame, jit)));
    store(L, ci32(L, JIT_POS_NONE), addr(L, nf, offsetof(SomFrame, jit_pos)));
    store(L, ci32(L, 0), addr(L, nf, offsetof(SomFrame, backedges)));
    uint64_t base = 1u + (uint64_t)t->nargs;
    for (uint32_t k = 0; k < t->nlocals; k++)
        store(L, nil_value(L), addr(L, L->out, 8 * (base + k)));
    store(L, addr(L, L->out, 8 * (base + t->nlocals)), addr(L, L->vm, offsetof(SomVM, sp)));
    LLVMValueRef topp = addr(L, L->vm, offsetof(SomVM, top));
    LLVMValueRef top = load(L, L->i32, topp, false);
    LLVMValueRef st = LLVMBuildStore(B, LLVMBuildAdd(B, top, ci32(L, 1), ""), topp);
    LLVMSetOrdering(st, LLVMAtomicOrderingRelease);
    LLVMSetAlignment(st, 4);
    LLVMValueRef invp = addr(L, cptr(L, t), offsetof(SomMethod, invocations));
    store(L, LLVMBuildAdd(B, load(L, L->i64, invp, false), ci64(L, 1), ""), invp);
    if (in->tic >= 0 && in->tic < SOM_IC_SIZE) {
        LLVMValueRef hp = cptr(L, &in->cs->ic[in->tic].hits);
        store(L, LLVMBuildAdd(B, load(L, L->i64, hp, false), ci64(L, 1), ""), hp);
    }
    if (t->nctx) { /* its own context, made as the interpreter does after publication */
        LLVMValueRef a[] = {L->vm, cptr(L, t), LLVMConstNull(L->ptr), nf};
        LLVMValueRef c = call(L, L->t_newctx, (const void *)jit_rt_new_context, a, 4, false);
        store(L, c, addr(L, nf, offsetof(SomFrame, ctx)));
    }
    LLVMValueRef entry = load(L, L->ptr, addr(L, code, offsetof(SomJitCode, entry)), false);
    LLVMValueRef r = LLVMBuildCall2(B, L->fnty, entry, (LLVMValueRef[]){L->vm, nf}, 2, "");
    /* 4. a plain return pops the record; anything else is the runtime's */
    LLVMValueRef plain = LLVMBuildAnd(
        B, LLVMBuildICmp(B, LLVMIntNE, r, ci64(L, 0), ""),
        LLVMBuildICmp(B, LLVMIntSLE, vm_field(L, L->i32, offsetof(SomVM, poll)), ci32(L, 0), ""),
        "");
    LLVMBasicBlockRef pop = new_bb(L, "direct_pop"), end = new_bb(L, "direct_end");
    LLVMBasicBlockRef done = new_bb(L, "direct_done");
    cond_br(L, plain, pop, end, 1);
    LLVMPositionBuilderAtEnd(B, pop);
    if (t->nctx) { /* the home has returned (non-local returns see it) */
        LLVMValueRef c = load(L, L->ptr, addr(L, nf, offsetof(SomFrame, ctx)), false);
        store(L, LLVMConstNull(L->ptr), addr(L, c, offsetof(SomContext, frame)));
    }
    st = LLVMBuildStore(B, top, topp);
    LLVMSetOrdering(st, LLVMAtomicOrderingRelease);
    LLVMSetAlignment(st, 4);
    store(L, L->out, addr(L, L->vm, offsetof(SomVM, sp)));
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, end);
    LLVMValueRef r2 = call(L, L->t_call_end, (const void *)jit_rt_call_end,
                           (LLVMValueRef[]){L->vm, nf, r}, 3, true);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, done);
    LLVMValueRef phi = phi2(L, r, pop, r2, end);
    LLVMBuildBr(B, join);
    *res = phi;
    return done;
}

static LLVMValueRef send(Lower *L, JitRef r) {
    const JitInst *in = &L->f->insts[r];
    if (!in->cs) {
        fail(L, "SEND without a call site%s", "");
        return NULL;
    }
    unsigned n = 1u + in->cs->nargs;
    if (n > in->nargs || n > JIT_MAX_ARGS) {
        char what[48];
        snprintf(what, sizeof what, "%u operands, %u expected", in->nargs, n);
        fail(L, "SEND with %s", what);
        return NULL;
    }
    spill_for(L, r);
    for (unsigned k = 0; k < n; k++) {
        LLVMValueRef idx = ci64(L, k);
        store(L, geti(L, in->a[k]), LLVMBuildInBoundsGEP2(L->B, L->i64, L->out, &idx, 1, ""));
    }
    store_pos(L, in->pos);
    LLVMValueRef args[] = {L->vm, L->fp, cptr(L, in->cs), cptr(L, in->method)};
    if (!direct_ok(in)) {
        LLVMValueRef v = call(L, L->t_send, (const void *)jit_rt_send, args, 4, false);
        ret_if_zero(L, v);
        return v;
    }
    LLVMBasicBlockRef slow = new_bb(L, "send_slow"), join = new_bb(L, "send_join");
    LLVMValueRef v1;
    LLVMBasicBlockRef from1 = direct_call(L, in, slow, join, &v1);
    LLVMPositionBuilderAtEnd(L->B, slow);
    LLVMValueRef v2 = call(L, L->t_send, (const void *)jit_rt_send, args, 4, false);
    LLVMBuildBr(L->B, join);
    LLVMPositionBuilderAtEnd(L->B, join);
    LLVMValueRef v = phi2(L, v1, from1, v2, slow);
    ret_if_zero(L, v);
    return v;
}

static LLVMValueRef icmp(Lower *L, int cmp, LLVMValueRef a, LLVMValueRef b) {
    static const LLVMIntPredicate p[] = {LLVMIntSLT, LLVMIntSGT, LLVMIntSLE,
                                         LLVMIntSGE, LLVMIntEQ,  LLVMIntNE};
    return LLVMBuildICmp(L->B, p[cmp <= JC_NE ? cmp : JC_EQ], a, b, "");
}

static LLVMValueRef dcmp(Lower *L, int cmp, LLVMValueRef a, LLVMValueRef b) {
    static const LLVMRealPredicate p[] = {LLVMRealOLT, LLVMRealOGT, LLVMRealOLE,
                                          LLVMRealOGE, LLVMRealOEQ, LLVMRealUNE};
    return LLVMBuildFCmp(L->B, p[cmp <= JC_NE ? cmp : JC_EQ], a, b, "");
}

/* Integer ops with overflow/zero guards. */
static LLVMValueRef int_arith(Lower *L, JitRef r) {
    const JitInst *in = &L->f->insts[r];
    LLVMValueRef a = geti(L, in->a[0]), b = geti(L, in->a[1]);
    LLVMValueRef zero = ci64(L, 0);
    switch (in->op) {
    case JI_IADD:
    case JI_ISUB: { /* 63-bit operands: the i64 result is exact */
        LLVMValueRef x =
            in->op == JI_IADD ? LLVMBuildAdd(L->B, a, b, "") : LLVMBuildSub(L->B, a, b, "");
        guard(L, r, in_small_range(L, x), JDR_OVERFLOW);
        return x;
    }
    case JI_IMUL: {
        LLVMTypeRef t = L->i64;
        LLVMValueRef args[] = {a, b};
        LLVMValueRef s = intrinsic(L, "llvm.smul.with.overflow", &t, 1, args, 2);
        LLVMValueRef x = LLVMBuildExtractValue(L->B, s, 0, "");
        LLVMValueRef ov = LLVMBuildExtractValue(L->B, s, 1, "");
        LLVMValueRef ok = LLVMBuildAnd(L->B, LLVMBuildNot(L->B, ov, ""), in_small_range(L, x), "");
        guard(L, r, ok, JDR_OVERFLOW);
        return x;
    }
    case JI_IDIV:
    case JI_IMOD:
    case JI_IREM: {
        guard(L, r, LLVMBuildICmp(L->B, LLVMIntNE, b, zero, ""), JDR_DIVZERO);
        /* b may be 0 only where the guard is absent (deopt < 0): keep the division defined */
        LLVMValueRef bb = in->deopt < 0
                              ? LLVMBuildSelect(L->B, LLVMBuildICmp(L->B, LLVMIntEQ, b, zero, ""),
                                                ci64(L, 1), b, "")
                              : b;
        if (in->op == JI_IDIV) {
            LLVMValueRef x = LLVMBuildSDiv(L->B, a, bb, "");
            guard(L, r, in_small_range(L, x), JDR_OVERFLOW);
            return x;
        }
        LLVMValueRef x = LLVMBuildSRem(L->B, a, bb, "");
        if (in->op == JI_IREM) return x;
        /* floored: adjust when the remainder and the divisor differ in sign */
        LLVMValueRef adj = LLVMBuildAnd(
            L->B, LLVMBuildICmp(L->B, LLVMIntNE, x, zero, ""),
            LLVMBuildICmp(L->B, LLVMIntSLT, LLVMBuildXor(L->B, x, bb, ""), zero, ""), "");
        return LLVMBuildSelect(L->B, adj, LLVMBuildAdd(L->B, x, bb, ""), x, "");
    }
    case JI_ISHL: {
        LLVMValueRef okc = LLVMBuildICmp(L->B, LLVMIntULE, b, ci64(L, 62), "");
        LLVMValueRef s = LLVMBuildSelect(L->B, okc, b, zero, "");
        LLVMValueRef x = LLVMBuildShl(L->B, a, s, "");
        LLVMValueRef back = LLVMBuildAShr(L->B, x, s, "");
        LLVMValueRef ok =
            LLVMBuildAnd(L->B, okc,
                         LLVMBuildAnd(L->B, LLVMBuildICmp(L->B, LLVMIntEQ, back, a, ""),
                                      in_small_range(L, x), ""),
                         "");
        guard(L, r, ok, JDR_OVERFLOW);
        return x;
    }
    case JI_ISHR: {
        LLVMValueRef big = LLVMBuildICmp(L->B, LLVMIntUGT, b, ci64(L, 63), "");
        return LLVMBuildAShr(L->B, a, LLVMBuildSelect(L->B, big, ci64(L, 63), b, ""), "");
    }
    case JI_IAND:
        return LLVMBuildAnd(L->B, a, b, "");
    case JI_IOR:
        return LLVMBuildOr(L->B, a, b, "");
    default:
        return LLVMBuildXor(L->B, a, b, "");
    }
}

static LLVMValueRef d2i(Lower *L, JitRef r) {
    const JitInst *in = &L->f->insts[r];
    LLVMValueRef d = get(L, in->a[0], L->dbl);
    LLVMValueRef lo = LLVMBuildFCmp(L->B, LLVMRealOGE, d, LLVMConstReal(L->dbl, -0x1p62), "");
    LLVMValueRef hi = LLVMBuildFCmp(L->B, LLVMRealOLT, d, LLVMConstReal(L->dbl, 0x1p62), "");
    LLVMValueRef ok = LLVMBuildAnd(L->B, lo, hi, "");
    guard(L, r, ok, JDR_OVERFLOW);
    /* without a guard (deopt < 0) keep fptosi defined */
    LLVMValueRef dd =
        in->deopt < 0 ? LLVMBuildSelect(L->B, ok, d, LLVMConstReal(L->dbl, 0), "") : d;
    return LLVMBuildFPToSI(L->B, dd, L->i64, "");
}

static LLVMValueRef has_class(Lower *L, const JitInst *in) {
    LLVMValueRef v = geti(L, in->a[0]);
    SomVM *vm = L->f->vm;
    if (in->cls == vm->integerClass) return is_int(L, v);
    if (in->cls == vm->doubleClass) return is_dbl(L, v);
    LLVMValueRef p = obj_or_dummy(L, v);
    LLVMValueRef c = load(L, L->ptr, addr(L, p, offsetof(ObjHeader, cls)), true);
    return LLVMBuildICmp(L->B, LLVMIntEQ, c, cptr(L, in->cls), "");
}

/* Emits instruction r at the builder; answers its value (NULL for VOID). */
static LLVMValueRef emit(Lower *L, JitRef r) {
    const JitFunc *f = L->f;
    const JitInst *in = &f->insts[r];
    LLVMBuilderRef B = L->B;
#define A(k) geti(L, in->a[k])
#define AP(k) getp(L, in->a[k])
#define AD(k) get(L, in->a[k], L->dbl)
#define AB(k) get(L, in->a[k], L->i1)
    switch ((JitOp)in->op) {
    case JI_CONST:
        return ci64(L, in->cval);
    case JI_CONST_INT:
        return ci64(L, (uint64_t)in->ival);
    case JI_CONST_DBL:
        return LLVMConstReal(L->dbl, in->dval);
    case JI_CONST_PTR:
        return cptr(L, in->pval);
    case JI_ARG:
    case JI_SELF:
    case JI_FRAME_CTX:
    case JI_PHI:
        return L->val[r]; /* made in the prologue / block start */
    case JI_IS_INT:
        return is_int(L, A(0));
    case JI_IS_DBL:
        return is_dbl(L, A(0));
    case JI_HAS_CLASS:
        return has_class(L, in);
    case JI_IS_KIND:
        return LLVMBuildICmp(B, LLVMIntEQ, kind_of(L, A(0)),
                             LLVMConstInt(L->i8, (uint64_t)in->ival, 0), "");
    case JI_GUARD:
        guard(L, r, AB(0), in->reason);
        return NULL;
    case JI_UNBOX_INT:
        return LLVMBuildAShr(B, A(0), ci64(L, 1), "");
    case JI_BOX_INT:
        return LLVMBuildOr(B, LLVMBuildShl(B, A(0), ci64(L, 1), ""), ci64(L, 1), "");
    case JI_UNBOX_DBL:
        return unbox_dbl(L, A(0));
    case JI_INT_TO_DBL:
        return LLVMBuildSIToFP(B, A(0), L->dbl, "");
    case JI_BOX_DBL:
        return box_dbl(L, r, AD(0));
    case JI_BOOL_TO_VALUE:
        return LLVMBuildSelect(B, AB(0), ci64(L, f->vm->true_), ci64(L, f->vm->false_), "");
    case JI_VALUE_TO_BOOL:
        return LLVMBuildICmp(B, LLVMIntEQ, A(0), ci64(L, f->vm->true_), "");
    case JI_IADD:
    case JI_ISUB:
    case JI_IMUL:
    case JI_IDIV:
    case JI_IMOD:
    case JI_IREM:
    case JI_IAND:
    case JI_IOR:
    case JI_IXOR:
    case JI_ISHL:
    case JI_ISHR:
        return int_arith(L, r);
    case JI_ICMP:
        return icmp(L, in->cmp, A(0), A(1));
    case JI_DADD:
        return LLVMBuildFAdd(B, AD(0), AD(1), "");
    case JI_DSUB:
        return LLVMBuildFSub(B, AD(0), AD(1), "");
    case JI_DMUL:
        return LLVMBuildFMul(B, AD(0), AD(1), "");
    case JI_DDIV:
        return LLVMBuildFDiv(B, AD(0), AD(1), "");
    case JI_DSQRT: {
        LLVMValueRef x = AD(0);
        return intrinsic(L, "llvm.sqrt", &L->dbl, 1, &x, 1);
    }
    case JI_DCMP:
        return dcmp(L, in->cmp, AD(0), AD(1));
    case JI_D2I:
        return d2i(L, r);
    case JI_VEQ:
        return LLVMBuildICmp(B, LLVMIntEQ, A(0), A(1), "");
    case JI_BNOT:
        return LLVMBuildNot(B, AB(0), "");
    case JI_SELECT: {
        LLVMTypeRef t = ltype(L, in->type);
        return LLVMBuildSelect(B, AB(0), get(L, in->a[1], t), get(L, in->a[2], t), "");
    }
    case JI_LOAD_FIELD:
        return load(L, L->i64,
                    addr(L, AP(0), offsetof(SomInstance, fields) + 8 * (uint64_t)in->ival), false);
    case JI_STORE_FIELD:
        store(L, A(1), addr(L, AP(0), offsetof(SomInstance, fields) + 8 * (uint64_t)in->ival));
        return NULL;
    case JI_ARRAY_LEN:
        return load(L, L->i64, addr(L, AP(0), offsetof(SomArray, len)), true);
    case JI_ARRAY_LOAD:
        return load(L, L->i64, addr_idx(L, AP(0), offsetof(SomArray, items), A(1)), false);
    case JI_ARRAY_STORE:
        store(L, A(2), addr_idx(L, AP(0), offsetof(SomArray, items), A(1)));
        return NULL;
    case JI_FIELD_COUNT:
        return LLVMBuildZExt(
            B, load(L, L->i32, addr(L, AP(0), offsetof(SomInstance, nfields)), true), L->i64, "");
    case JI_STRING_LEN:
        return load(L, L->i64, addr(L, AP(0), offsetof(SomString, len)), true);
    case JI_CTX_OUTER:
        return load(L, L->ptr, addr(L, AP(0), offsetof(SomContext, outer)), true);
    case JI_CTX_LOAD:
        return load(L, L->i64, addr(L, AP(0), offsetof(SomContext, vars) + 8 * (uint64_t)in->ival),
                    false);
    case JI_CTX_STORE:
        store(L, A(1), addr(L, AP(0), offsetof(SomContext, vars) + 8 * (uint64_t)in->ival));
        return NULL;
    case JI_CFIELD_LOAD: {
        LLVMValueRef arr = load(L, L->ptr, addr(L, AP(0), offsetof(SomClass, cfields)), false);
        return load(L, L->i64, addr(L, arr, offsetof(SomArray, items) + 8 * (uint64_t)in->ival),
                    false);
    }
    case JI_CFIELD_STORE: {
        LLVMValueRef arr = load(L, L->ptr, addr(L, AP(0), offsetof(SomClass, cfields)), false);
        store(L, A(1), addr(L, arr, offsetof(SomArray, items) + 8 * (uint64_t)in->ival));
        return NULL;
    }
    case JI_GLOBAL_LOAD:
        if (!in->sym) {
            fail(L, "GLOBAL_LOAD without a symbol%s", "");
            return NULL;
        }
        return load(L, L->i64, cptr(L, (const char *)in->sym + offsetof(SomString, gval)), false);
    case JI_BLOCK_FIELD:
        return load(L, L->i64,
                    addr(L, AP(0), in->ival ? offsetof(SomBlock, ctx) : offsetof(SomBlock, self)),
                    true);
    case JI_SEND:
        return send(L, r);
    case JI_NEW_BLOCK: {
        if (in->virt) return NULL;
        spill_for(L, r);
        store_pos(L, in->pos);
        LLVMValueRef args[] = {L->vm, cptr(L, in->method),
                               in->nargs > 0 && in->a[0] >= 0 ? AP(0) : LLVMConstNull(L->ptr),
                               in->nargs > 1 ? A(1) : nil_value(L)};
        return call(L, L->t_newblock, (const void *)jit_rt_new_block, args, 4, false);
    }
    case JI_NEW_CONTEXT: {
        spill_for(L, r);
        store_pos(L, in->pos);
        LLVMValueRef args[] = {L->vm, cptr(L, in->method),
                               in->nargs > 0 && in->a[0] >= 0 ? AP(0) : LLVMConstNull(L->ptr),
                               in->ival == 1 ? L->fp : LLVMConstNull(L->ptr)};
        return call(L, L->t_newctx, (const void *)jit_rt_new_context, args, 4, false);
    }
    case JI_SAFEPOINT: {
        /* a safepoint request, or the controller's (code to install, a sampled version to
         * rebuild: a loop that runs long in compiled code must not hold them back); a
         * negative vm->poll (the coop sampler waiting, vm.h) calls nothing here */
        LLVMValueRef poll = LLVMBuildOr(B, vm_field(L, L->i32, offsetof(SomVM, poll)),
                                        vm_field(L, L->i32, offsetof(SomVM, jit_tick)), "");
        LLVMBasicBlockRef slow = new_bb(L, "safepoint");
        LLVMBasicBlockRef cont = new_bb(L, "polled");
        cond_br(L, LLVMBuildICmp(B, LLVMIntSGT, poll, ci32(L, 0), ""), slow, cont, -1);
        LLVMPositionBuilderAtEnd(B, slow);
        spill_for(L, r);
        store_pos(L, in->pos);
        LLVMValueRef args[] = {L->vm, L->fp, ci32(L, (uint32_t)in->ival)};
        call(L, L->t_safepoint, (const void *)jit_rt_safepoint, args, 3, true);
        LLVMBuildBr(B, cont);
        LLVMPositionBuilderAtEnd(B, cont);
        return NULL;
    }
    case JI_NLR: {
        spill_for(L, r);
        store_pos(L, in->pos);
        LLVMValueRef args[] = {L->vm, L->fp, AP(0), A(1)};
        LLVMValueRef v = call(L, L->t_nlr, (const void *)jit_rt_nlr, args, 4, false);
        LLVMBuildRet(B, v);
        LLVMPositionBuilderAtEnd(B, new_bb(L, "after_nlr"));
        return v;
    }
    case JI_SET_POS:
        if (in->pos != JIT_POS_NONE) store_pos(L, in->pos);
        return NULL;
    case JI_FB_OBSERVE: { /* sampled type feedback: one load and an untaken branch */
        if (!L->f->fb_table) return NULL;
        LLVMValueRef armed =
            LLVMBuildLoad2(B, L->i32, addr(L, L->vm, offsetof(SomVM, jit_fb_armed)), "");
        LLVMSetVolatile(armed, 1);
        LLVMBasicBlockRef slow = new_bb(L, "observe");
        LLVMBasicBlockRef cont = new_bb(L, "observed");
        cond_br(L, LLVMBuildICmp(B, LLVMIntNE, armed, ci32(L, 0), ""), slow, cont, -1);
        LLVMPositionBuilderAtEnd(B, slow);
        LLVMValueRef args[] = {cptr(L, L->f->fb_table), ci32(L, (uint32_t)in->ival), A(0), A(1)};
        call(L, L->t_observe, (const void *)jit_fb_observe, args, 4, true);
        LLVMBuildBr(B, cont);
        LLVMPositionBuilderAtEnd(B, cont);
        return NULL;
    }
    case JI_JUMP:
    case JI_BRANCH:
    case JI_RETURN:
    case JI_DEOPT:
    case JI_RETURN_ZERO:
    case JI__COUNT:
        break;
    }
#undef A
#undef AP
#undef AD
#undef AB
    return NULL;
}

static void emit_terminator(Lower *L, int32_t b, JitRef r) {
    const JitFunc *f = L->f;
    const JitInst *in = &f->insts[r];
    const JitBlock *bl = &f->blocks[b];
    switch (in->op) {
    case JI_JUMP:
        LLVMBuildBr(L->B, L->bb[bl->succ[0]]);
        break;
    case JI_BRANCH: {
        bool c0 = f->blocks[bl->succ[0]].cold, c1 = f->blocks[bl->succ[1]].cold;
        cond_br(L, get(L, in->a[0], L->i1), L->bb[bl->succ[0]], L->bb[bl->succ[1]],
                c1 && !c0   ? 1
                : c0 && !c1 ? -1
                            : 0);
        break;
    }
    case JI_RETURN:
        LLVMBuildRet(L->B, geti(L, in->a[0]));
        break;
    case JI_DEOPT: {
        LLVMBasicBlockRef ex = deopt_exit(L, in->deopt, in->reason, in->pos);
        if (ex)
            LLVMBuildBr(L->B, ex);
        else
            LLVMBuildUnreachable(L->B);
        break;
    }
    default: /* RETURN_ZERO, or a block without a terminator */
        LLVMBuildRet(L->B, ci64(L, 0));
        break;
    }
}

/* ---- the function -------------------------------------------------------------------- */

static void init_types(Lower *L) {
    LLVMContextRef C = L->C;
    L->i1 = LLVMInt1TypeInContext(C);
    L->i8 = LLVMInt8TypeInContext(C);
    L->i32 = LLVMInt32TypeInContext(C);
    L->i64 = LLVMInt64TypeInContext(C);
    L->dbl = LLVMDoubleTypeInContext(C);
    L->ptr = LLVMPointerTypeInContext(C, 0);
    LLVMTypeRef p = L->ptr, i = L->i64;
    L->fnty = LLVMFunctionType(i, (LLVMTypeRef[]){p, p}, 2, 0);
    L->t_send = LLVMFunctionType(i, (LLVMTypeRef[]){p, p, p, p}, 4, 0);
    L->t_call_end = LLVMFunctionType(i, (LLVMTypeRef[]){p, p, i}, 3, 0);
    L->t_deopt = LLVMFunctionType(i, (LLVMTypeRef[]){p, p, p, L->i32}, 4, 1);
    L->t_safepoint =
        LLVMFunctionType(LLVMVoidTypeInContext(C), (LLVMTypeRef[]){p, p, L->i32}, 3, 0);
    L->t_box = LLVMFunctionType(i, (LLVMTypeRef[]){p, L->dbl}, 2, 0);
    L->t_newblock = LLVMFunctionType(i, (LLVMTypeRef[]){p, p, p, i}, 4, 0);
    L->t_newctx = LLVMFunctionType(p, (LLVMTypeRef[]){p, p, p, p}, 4, 0);
    L->t_nlr = LLVMFunctionType(i, (LLVMTypeRef[]){p, p, p, i}, 4, 0);
    L->t_observe =
        LLVMFunctionType(LLVMVoidTypeInContext(C), (LLVMTypeRef[]){p, L->i32, i, i}, 4, 0);
    L->md_prof = LLVMGetMDKindIDInContext(C, "prof", 4);
    L->md_invariant = LLVMGetMDKindIDInContext(C, "invariant.load", 14);
    L->empty_md = LLVMMetadataAsValue(C, LLVMMDNodeInContext2(C, NULL, 0));
    LLVMMetadataRef name = LLVMMDStringInContext2(C, "branch_weights", 14);
    LLVMMetadataRef big = LLVMValueAsMetadata(ci32(L, 2000)), one = LLVMValueAsMetadata(ci32(L, 1));
    L->w_cold =
        LLVMMetadataAsValue(C, LLVMMDNodeInContext2(C, (LLVMMetadataRef[]){name, big, one}, 3));
    L->w_hot =
        LLVMMetadataAsValue(C, LLVMMDNodeInContext2(C, (LLVMMetadataRef[]){name, one, big}, 3));
}

static void add_fn_attr(Lower *L, const char *k, const char *v) {
    if (v) {
        LLVMAddAttributeAtIndex(
            L->fn, LLVMAttributeFunctionIndex,
            LLVMCreateStringAttribute(L->C, k, (unsigned)strlen(k), v, (unsigned)strlen(v)));
    } else {
        unsigned id = LLVMGetEnumAttributeKindForName(k, strlen(k));
        LLVMAddAttributeAtIndex(L->fn, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(L->C, id, 0));
    }
}

/* Reverse postorder of the reachable blocks; answers their number. */
static uint32_t rpo(const JitFunc *f, int32_t *order) {
    uint8_t *seen = calloc(f->nblocks, 1);
    int32_t *stack = malloc(f->nblocks * sizeof *stack);
    uint8_t *next = calloc(f->nblocks, 1);
    uint32_t n = 0, sp = 0;
    if (!seen || !stack || !next || !f->nblocks) goto out;
    stack[sp++] = 0;
    seen[0] = 1;
    while (sp) {
        int32_t b = stack[sp - 1];
        int32_t k = next[b]++;
        if (k < nsucc(f, b)) {
            int32_t s = f->blocks[b].succ[k];
            if (s >= 0 && (uint32_t)s < f->nblocks && !seen[s]) {
                seen[s] = 1;
                stack[sp++] = s;
            }
        } else {
            order[f->nblocks - 1 - n++] = b;
            sp--;
        }
    }
    memmove(order, order + f->nblocks - n, n * sizeof *order);
out:
    free(seen);
    free(stack);
    free(next);
    return n;
}

static void prologue(Lower *L) {
    const JitFunc *f = L->f;
    LLVMBuilderRef B = L->B;
    L->bp = load(L, L->ptr, addr(L, L->fp, offsetof(SomFrame, bp)), true);
    LLVMValueRef self = NULL, ctx = NULL;
    for (uint32_t i = 0; i < f->ninsts; i++) {
        const JitInst *in = &f->insts[i];
        if (in->dead) continue;
        if (in->op == JI_ARG) {
            LLVMValueRef idx = ci64(L, (uint64_t)in->ival);
            L->val[i] =
                load(L, L->i64, LLVMBuildInBoundsGEP2(B, L->i64, L->bp, &idx, 1, ""), false);
        } else if (in->op == JI_SELF) {
            if (!self) self = load(L, L->i64, addr(L, L->fp, offsetof(SomFrame, self)), false);
            L->val[i] = self;
        } else if (in->op == JI_FRAME_CTX) {
            if (!ctx) ctx = load(L, L->ptr, addr(L, L->fp, offsetof(SomFrame, ctx)), false);
            L->val[i] = ctx;
        } else if (in->op == JI_CONST || in->op == JI_CONST_INT || in->op == JI_CONST_DBL ||
                   in->op == JI_CONST_PTR) {
            L->val[i] = emit(L, (JitRef)i);
        }
    }
    const SomMethod *m = f->method;
    uint64_t base = 1u + (uint64_t)m->nargs + m->nlocals;
    L->spill = addr(L, L->bp, 8 * base);
    L->out = addr(L, L->spill, 8 * (uint64_t)L->nspill);
    LLVMValueRef need = addr(L, L->out, 8 * ((uint64_t)L->maxout + 16));
    LLVMValueRef end = load(L, L->ptr, addr(L, L->vm, offsetof(SomVM, stack_end)), false);
    LLVMValueRef room = LLVMBuildICmp(B, LLVMIntULE, LLVMBuildPtrToInt(B, need, L->i64, ""),
                                      LLVMBuildPtrToInt(B, end, L->i64, ""), "");
    LLVMBasicBlockRef ok = new_bb(L, "entry_ok");
    LLVMBasicBlockRef ex = f->nstates ? deopt_exit(L, 0, JDR_UNSUPPORTED, JIT_POS_NONE) : NULL;
    if (!ex) {
        ex = new_bb(L, "nostate");
        LLVMPositionBuilderAtEnd(B, ex);
        LLVMBuildRet(B, ci64(L, 0));
        LLVMPositionBuilderAtEnd(B, LLVMGetEntryBasicBlock(L->fn));
        if (!f->nstates) fail(L, "no entry state%s", "");
    }
    cond_br(L, room, ok, ex, 1);
    LLVMPositionBuilderAtEnd(B, ok);
    for (uint32_t k = 0; k < L->nspill; k++) {
        LLVMValueRef idx = ci64(L, k);
        store(L, nil_value(L), LLVMBuildInBoundsGEP2(B, L->i64, L->spill, &idx, 1, ""));
    }
    store(L, L->out, addr(L, L->vm, offsetof(SomVM, sp)));
}

static void lower(Lower *L, const char *fname) {
    const JitFunc *f = L->f;
    init_types(L);
    L->fn = LLVMAddFunction(L->M, fname, L->fnty);
    add_fn_attr(L, "nounwind", NULL);
    add_fn_attr(L, "frame-pointer", "all");
    /* No noalias on vm/fp: the runtime reaches both through vm->frames and other VM pointers
     * (the collector walks frames from jit_rt_box_double, which gets no fp), so stores of
     * fp->bci/jit_pos must stay before every call. */
    L->vm = LLVMGetParam(L->fn, 0);
    L->fp = LLVMGetParam(L->fn, 1);
    L->val = calloc(f->ninsts ? f->ninsts : 1, sizeof *L->val);
    L->bb = calloc(f->nblocks ? f->nblocks : 1, sizeof *L->bb);
    L->bend = calloc(f->nblocks ? f->nblocks : 1, sizeof *L->bend);
    int32_t *order = malloc((f->nblocks ? f->nblocks : 1) * sizeof *order);
    L->exits = calloc((size_t)f->nstates * JDR_COUNT + 1, sizeof *L->exits);
    L->exit_pos = calloc((size_t)f->nstates * JDR_COUNT + 1, sizeof *L->exit_pos);
    if (!L->val || !L->bb || !L->bend || !order || !liveness(L)) {
        free(order);
        fail(L, "out of memory%s", "");
        return;
    }
    for (uint32_t i = 0; i < f->ninsts; i++) {
        const JitInst *in = &f->insts[i];
        if (in->op == JI_SEND && !in->dead && in->cs && 1u + in->cs->nargs > L->maxout)
            L->maxout = 1u + in->cs->nargs;
    }
    uint32_t nord = rpo(f, order);
    LLVMBasicBlockRef entry = new_bb(L, "entry");
    LLVMPositionBuilderAtEnd(L->B, entry);
    for (uint32_t k = 0; k < nord; k++) {
        char nm[24];
        snprintf(nm, sizeof nm, "b%d", order[k]);
        L->bb[order[k]] = new_bb(L, nm);
    }
    prologue(L);
    if (nord)
        LLVMBuildBr(L->B, L->bb[0]);
    else
        LLVMBuildRet(L->B, ci64(L, 0));
    /* phis first, so every block can refer to them */
    for (uint32_t k = 0; k < nord; k++) {
        const JitBlock *bl = &f->blocks[order[k]];
        LLVMPositionBuilderAtEnd(L->B, L->bb[order[k]]);
        for (uint32_t j = 0; j < bl->ninsts; j++) {
            const JitInst *in = &f->insts[bl->insts[j]];
            if (in->op != JI_PHI) break;
            if (!in->dead) L->val[bl->insts[j]] = LLVMBuildPhi(L->B, ltype(L, in->type), "");
        }
    }
    for (uint32_t k = 0; k < nord && !L->fail; k++) {
        int32_t b = order[k];
        const JitBlock *bl = &f->blocks[b];
        LLVMPositionBuilderAtEnd(L->B, L->bb[b]);
        bool terminated = false;
        for (uint32_t j = 0; j < bl->ninsts && !L->fail; j++) {
            JitRef r = bl->insts[j];
            const JitInst *in = &f->insts[r];
            if (in->dead || in->op == JI_PHI) continue;
            if (in->op >= JI_JUMP) {
                L->bend[b] = LLVMGetInsertBlock(L->B);
                emit_terminator(L, b, r);
                terminated = true;
                break;
            }
            if (!L->val[r]) L->val[r] = emit(L, r);
        }
        if (!terminated) {
            L->bend[b] = LLVMGetInsertBlock(L->B);
            LLVMBuildRet(L->B, ci64(L, 0));
        }
    }
    /* phi inputs, in predecessor order */
    for (uint32_t k = 0; k < nord && !L->fail; k++) {
        const JitBlock *bl = &f->blocks[order[k]];
        for (uint32_t j = 0; j < bl->ninsts; j++) {
            JitRef r = bl->insts[j];
            const JitInst *in = &f->insts[r];
            if (in->op != JI_PHI) break;
            if (in->dead) continue;
            for (uint32_t p = 0; p < bl->npreds; p++) {
                int32_t pb = bl->preds[p];
                if (!L->bend[pb]) continue; /* unreachable predecessor */
                LLVMBasicBlockRef pe = L->bend[pb];
                LLVMValueRef t = LLVMGetBasicBlockTerminator(pe);
                LLVMPositionBuilderBefore(L->B, t);
                LLVMValueRef v = get(L, in->phi ? in->phi[p] : -1, ltype(L, in->type));
                LLVMAddIncoming(L->val[r], &v, &pe, 1);
            }
        }
    }
    free(order);
}

static void lower_free(Lower *L) {
    if (L->gc_live)
        for (uint32_t i = 0; i < L->f->ninsts; i++)
            free(L->gc_live[i]);
    free(L->gc_live);
    free(L->slot);
    free(L->val);
    free(L->bb);
    free(L->bend);
    free(L->exits);
    free(L->exit_pos);
}

/* ---- optimization and the entry point ------------------------------------------------ */

/* The IR pipeline of an optimization level.  Measured (jitllvm_bench: thread CPU time per
 * compilation, machine code included, median of 5, on a busy 2-core machine):
 *                          62 IR insts   2258 IR insts   loop of 5e7 iterations
 *   0: no passes, fast isel     1.8 ms          29 ms         293 ms
 *   1: light, Less codegen       12 ms         699 ms         116 ms
 *   2: default<O2>               20 ms        1140 ms         107 ms
 *   3: default<O3>               21 ms        1208 ms         106 ms
 *   (default<O1> + Default codegen: 19 ms, 1210 ms, 106 ms)
 * default<O2> gives the best loops and is level 2; the light pipeline (level 1) compiles
 * about twice as fast for ~10% slower loops: a controller may use it for large functions. */
#define JIT_LIGHT_PIPELINE                                                                         \
    "function(early-cse<memssa>,simplifycfg,loop-mssa(licm),gvn,instcombine,simplifycfg)"

static const char *pipeline(int level) {
    const char *env = getenv("SOM_JIT_PIPELINE"); /* for tuning: a pass-pipeline string */
    if (env && *env) return env;
    switch (level) {
    case 0:
        return "default<O0>";
    case 1:
        return JIT_LIGHT_PIPELINE;
    case 3:
        return "default<O3>";
    default:
        return "default<O2>";
    }
}

/* The machine-code level of an optimization level (SOM_JIT_CODEGEN=0..3 overrides, for
 * tuning). */
static LLVMCodeGenOptLevel codegen_level(int level) {
    const char *env = getenv("SOM_JIT_CODEGEN");
    if (env && *env >= '0' && *env <= '3') level = *env - '0';
    static const LLVMCodeGenOptLevel lv[] = {LLVMCodeGenLevelNone, LLVMCodeGenLevelLess,
                                             LLVMCodeGenLevelDefault, LLVMCodeGenLevelAggressive};
    return lv[level < 0 ? 0 : level > 3 ? 3 : level];
}

static LLVMTargetMachineRef target_machine(JitEngine *e, int level) {
    LLVMTargetRef t;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(e->triple, &t, &msg)) {
        LLVMDisposeMessage(msg);
        return NULL;
    }
    return LLVMCreateTargetMachine(t, e->triple, e->cpu, e->features, codegen_level(level),
                                   LLVMRelocPIC, LLVMCodeModelSmall);
}

static void symbol_name(JitEngine *e, const JitFunc *f, uint32_t version, char *out, size_t n) {
    pthread_mutex_lock(&e->region_lock);
    uint64_t id = ++e->counter;
    pthread_mutex_unlock(&e->region_lock);
    char clean[96];
    size_t k = 0;
    for (const char *s = f->name; *s && k + 1 < sizeof clean; s++)
        clean[k++] =
            (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ? *s
                                                                                             : '_';
    clean[k] = 0;
    snprintf(out, n, "som_%" PRIu64 "_%s_v%u", id, clean, version);
}

/* Adds the time since *t0 to phase ph of o->phase_ns (if asked) and restarts *t0. */
static void phase_done(const JitCodegenOpts *o, JitPhase ph, uint64_t *t0) {
    if (!o->phase_ns) return;
    uint64_t t = jit_thread_cpu_ns();
    o->phase_ns[ph] += t - *t0;
    *t0 = t;
}

SomJitCode *jit_codegen(JitEngine *e, const JitFunc *f, const JitCodegenOpts *o, char *err,
                        size_t errlen) {
    JitCodegenOpts defaults = {.opt_level = 2, .stress_permille = 20};
    if (!o) o = &defaults;
    if (!f || !f->vm || !f->method || !f->nblocks) {
        snprintf(err, errlen, "nothing to compile");
        return NULL;
    }
    uint64_t t0 = o->phase_ns ? jit_thread_cpu_ns() : 0;
    Lower L = {.f = f, .o = o, .e = e, .err = err, .errlen = errlen};
    L.data = own_alloc(e, sizeof *L.data, &L.fail);
    if (!L.data) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    L.data->stress_state = o->stress_seed;
    uint32_t version = o->version ? o->version : 1;
    char name[160];
    symbol_name(e, f, version, name, sizeof name);

    L.C = LLVMContextCreate();
    L.M = LLVMModuleCreateWithNameInContext(name, L.C);
    LLVMSetTarget(L.M, e->triple);
    LLVMSetDataLayout(L.M, e->datalayout);
    L.B = LLVMCreateBuilderInContext(L.C);
    lower(&L, name);
    LLVMDisposeBuilder(L.B);
    lower_free(&L);
    if (!L.fail) {
        char *msg = NULL;
        if (LLVMVerifyModule(L.M, LLVMReturnStatusAction, &msg)) {
            snprintf(err, errlen, "LLVM IR does not verify: %.400s", msg ? msg : "");
            if (getenv("SOM_JIT_DUMP_BAD")) LLVMDumpModule(L.M);
            L.fail = true;
        }
        LLVMDisposeMessage(msg);
    }
    phase_done(o, JIT_PH_LOWER, &t0);
    LLVMTargetMachineRef tm = L.fail ? NULL : target_machine(e, o->opt_level);
    if (!L.fail && !tm) {
        snprintf(err, errlen, "LLVM: no target machine for %s", e->triple);
        L.fail = true;
    }
    if (!L.fail) {
        LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
        LLVMErrorRef le = LLVMRunPasses(L.M, pipeline(o->opt_level), tm, po);
        LLVMDisposePassBuilderOptions(po);
        if (le) {
            char *m = LLVMGetErrorMessage(le);
            snprintf(err, errlen, "LLVM passes: %s", m);
            LLVMDisposeErrorMessage(m);
            L.fail = true;
        }
    }
    phase_done(o, JIT_PH_PASSES, &t0);
    if (!L.fail && o->dump_llvm) {
        char *s = LLVMPrintModuleToString(L.M);
        fprintf(stderr, "; ---- %s (%s)\n%s", f->name, name, s);
        LLVMDisposeMessage(s);
    }
    /* machine code here, outside the engine lock: compilations run in parallel up to linking */
    LLVMMemoryBufferRef obj = NULL;
    if (!L.fail) {
        char *msg = NULL;
        if (LLVMTargetMachineEmitToMemoryBuffer(tm, L.M, LLVMObjectFile, &msg, &obj)) {
            snprintf(err, errlen, "LLVM code generation: %s", msg ? msg : "");
            L.fail = true;
        }
        LLVMDisposeMessage(msg);
    }
    if (tm) LLVMDisposeTargetMachine(tm);
    LLVMDisposeModule(L.M);
    LLVMContextDispose(L.C);
    phase_done(o, JIT_PH_MACHINE, &t0);
    if (L.fail) return NULL;
    uintptr_t entry = 0;
    JitCodeRange range;
    int added = jit_engine_add(e, obj, name, &entry, &range, err, errlen);
    phase_done(o, JIT_PH_LINK, &t0);
    if (added) return NULL;

    SomJitCode *c = &L.data->code;
    JitPos *pos = own_alloc(e, (f->npos ? f->npos : 1) * sizeof *pos, &L.fail);
    if (!pos) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (f->npos) memcpy(pos, f->pos, f->npos * sizeof *pos);
    c->entry = (Value(*)(SomVM *, SomFrame *))entry;
    c->method = f->method;
    c->version = version;
    c->tier = 2;
    c->npos = f->npos;
    c->pos = pos;
    c->code_start = range.start;
    c->code_size = range.size;
    c->owner = L.data;
    return c;
}
