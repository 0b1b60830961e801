/* SPDX-License-Identifier: MIT */
/*
 * test_codegen.c - unit tests of the bytecode generator (src/compiler/codegen.c)
 * through a real VM: inlined ifTrue:/ifFalse:/and:/whileTrue:/to:do:, captured
 * variables going to heap contexts (nctx, PUSH_CTX depth), non-local return
 * bookkeeping, arithmetic opcodes with call sites, trivial-method detection,
 * and compile errors (assignment to undeclared names, to self, duplicates).
 *
 * Methods are compiled with codegen_method on a parsed class; the collector
 * is inhibited for the whole run (compiled methods are held in C locals).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytecode.h"
#include "codegen.h"
#include "num.h"
#include "parser.h"
#include "vmtest.h"

static SomVM *vm;
static char err[1024];

static int setup(void **state) {
    (void)state;
    char e[512];
    vm = som_vm_new(NULL, NULL, e, sizeof e);
    if (!vm) return -1;
    vm->heap.inhibit++;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    vm->heap.inhibit--;
    som_vm_free(vm);
    return 0;
}

/* Compiles method number `idx` (instance side) of class source `src`.
 * Answers NULL on a compile error (message in err). */
static SomMethod *compile_in(const char *src, int idx, bool class_side) {
    Arena a = {0};
    ClassDef d;
    err[0] = 0;
    if (!parse_class(&a, "t.som", src, &d, err, sizeof err)) fail_msg("parse: %s", err);
    NameList *fl = class_side ? &d.class_fields : &d.inst_fields;
    MethodDefList *ml = class_side ? &d.class_methods : &d.inst_methods;
    assert_true(idx < ml->n);
    CompileEnv env = {vm, vm->objectClass, fl->names, fl->n, class_side, "t.som"};
    SomMethod *m = codegen_method(&env, ml->items[idx], err, sizeof err);
    arena_free(&a);
    return m;
}

/* Compiles the single method `method` of a class with fields `| a b |`. */
static SomMethod *compile(const char *method) {
    char src[4096];
    snprintf(src, sizeof src, "C = ( | a b |\n%s\n)", method);
    SomMethod *m = compile_in(src, 0, false);
    if (!m) fail_msg("compile `%s`: %s", method, err);
    const char *bad = vt_verify_code(m);
    if (bad) fail_msg("`%s`: malformed bytecode: %s", method, bad);
    return m;
}

#define ASSERT_CODE(m, want)                                                                       \
    do {                                                                                           \
        const char *bad_ = vt_verify_code(m);                                                      \
        if (bad_) fail_msg("malformed bytecode: %s", bad_);                                        \
        char *got_ = vt_disasm(m);                                                                 \
        if (strcmp(got_, want) != 0) fail_msg("bytecode:\n  got  %s\n  want %s", got_, want);      \
        free(got_);                                                                                \
    } while (0)

/* The block method compiled as literal k of m. */
static SomMethod *block_lit(SomMethod *m, unsigned k) {
    assert_true(k < m->nliterals);
    Value v = m->literals[k];
    assert_true(som_is_obj(v));
    assert_int_equal(som_hdr(v)->kind, OBJ_METHOD);
    SomMethod *b = (SomMethod *)v;
    assert_int_equal(b->kind, MK_BLOCK);
    return b;
}

/* ---- simple code shapes -------------------------------------------------- */

static void test_simple_methods(void **state) {
    (void)state;
    SomMethod *m = compile("foo: x = ( ^x + 1 )");
    ASSERT_CODE(m, "PUSH_LOCAL 1; PUSH_INT 1; ADD 0; RETURN_LOCAL; RETURN_SELF");
    assert_int_equal(m->nargs, 1);
    assert_int_equal(m->nsites, 1);
    assert_string_equal(m->sites[0].selector->bytes, "+");
    assert_int_equal(m->sites[0].nargs, 1);
    assert_int_equal(m->sites[0].bci, 4);
    assert_string_equal(m->signature->bytes, "foo:");
    assert_int_equal(m->kind, MK_METHOD);

    m = compile("bar = ( a := b foo: 1000 bar: 'x'. ^nil )");
    /* a statement-level assignment stores without DUP/POP */
    ASSERT_CODE(m, "PUSH_FIELD 1; PUSH_CONST 0; PUSH_CONST 1; SEND 0; STORE_FIELD 0; "
                   "PUSH_NIL; RETURN_LOCAL; RETURN_SELF");
    assert_int_equal(m->nliterals, 2);
    assert_int_equal(som_int(m->literals[0]), 1000);
    assert_string_equal(((SomString *)m->literals[1])->bytes, "x");
    assert_string_equal(m->sites[0].selector->bytes, "foo:bar:");
    assert_int_equal(m->sites[0].nargs, 2);
}

static void test_arith_opcodes(void **state) {
    (void)state;
    SomMethod *m =
        compile("ops: x = ( ^((((((((x - x) * x) < x) > x) <= x) >= x) = x) ~= x) // x )");
    ASSERT_CODE(m,
                "PUSH_LOCAL 1; PUSH_LOCAL 1; SUB 0; PUSH_LOCAL 1; MUL 1; PUSH_LOCAL 1; LT 2; "
                "PUSH_LOCAL 1; GT 3; PUSH_LOCAL 1; LE 4; PUSH_LOCAL 1; GE 5; PUSH_LOCAL 1; EQ 6; "
                "PUSH_LOCAL 1; NE 7; PUSH_LOCAL 1; FDIV 8; RETURN_LOCAL; RETURN_SELF");
    /* super sends never use the arithmetic fast path */
    m = compile("+ x = ( ^super + x )");
    ASSERT_CODE(m, "PUSH_SELF; PUSH_LOCAL 1; SUPER_SEND 0; RETURN_LOCAL; RETURN_SELF");
    assert_int_equal(m->sites[0].is_super, 1);
}

static void test_literals_and_globals(void **state) {
    (void)state;
    SomMethod *m = compile("lits = ( ^#(1 -2 'x' #y) , -128 , 127 , 128 , 2.5 , Foo , true , #y )");
    /* only literals of at most two digits use PUSH_INT */
    ASSERT_CODE(m, "PUSH_CONST 0; PUSH_CONST 1; SEND 0; PUSH_CONST 2; SEND 1; PUSH_CONST 3; "
                   "SEND 2; PUSH_CONST 4; SEND 3; PUSH_GLOBAL 5; SEND 4; PUSH_TRUE; SEND 5; "
                   "PUSH_CONST 6; SEND 6; RETURN_LOCAL; RETURN_SELF");
    SomArray *arr = (SomArray *)m->literals[0];
    assert_int_equal(som_hdr(m->literals[0])->kind, OBJ_ARRAY);
    assert_int_equal(arr->len, 4);
    assert_int_equal(som_int(arr->items[1]), -2);
    assert_int_equal(som_hdr(arr->items[3])->kind, OBJ_SYMBOL);
    assert_int_equal(som_int(m->literals[1]), -128);
    assert_int_equal(som_int(m->literals[2]), 127);
    assert_int_equal(som_int(m->literals[3]), 128);
    assert_true(num_is_double(m->literals[4]));
    assert_true(num_double(m->literals[4]) == 2.5);
    assert_ptr_equal((void *)m->literals[5], som_symbol_cstr(vm, "Foo"));
    /* symbols are interned: the same object as the array element */
    assert_ptr_equal((void *)m->literals[6], (void *)arr->items[3]);
}

/* ---- inlining ------------------------------------------------------------ */

static void test_inline_if(void **state) {
    (void)state;
    SomMethod *m = compile("t: x = ( ^x ifTrue: [ 1 ] )");
    ASSERT_CODE(m, "PUSH_LOCAL 1; JUMP_IF_FALSE +5 s0; PUSH_INT 1; JUMP +1; PUSH_NIL; "
                   "RETURN_LOCAL; RETURN_SELF");
    assert_int_equal(m->nliterals, 0); /* no block object */
    /* the conditional jump's call site names the message (for the
     * non-boolean fallback) and its bci is the end of the construct */
    assert_int_equal(m->nsites, 1);
    assert_string_equal(m->sites[0].selector->bytes, "ifTrue:");
    assert_int_equal(m->sites[0].nargs, 1);
    assert_int_equal(m->sites[0].bci, 13);

    m = compile("t: x = ( ^x ifTrue: [ 1 ] ifFalse: [ 2 ] )");
    ASSERT_CODE(m, "PUSH_LOCAL 1; JUMP_IF_FALSE +5 s0; PUSH_INT 1; JUMP +2; PUSH_INT 2; "
                   "RETURN_LOCAL; RETURN_SELF");
    assert_string_equal(m->sites[0].selector->bytes, "ifTrue:ifFalse:");
    assert_int_equal(m->sites[0].nargs, 2);
    m = compile("t: x = ( ^x ifFalse: [ 1 ] )");
    ASSERT_CODE(m, "PUSH_LOCAL 1; JUMP_IF_TRUE +5 s0; PUSH_INT 1; JUMP +1; PUSH_NIL; "
                   "RETURN_LOCAL; RETURN_SELF");
    m = compile("t: x = ( ^x and: [ a ] )");
    ASSERT_CODE(m, "PUSH_LOCAL 1; JUMP_IF_FALSE +5 s0; PUSH_FIELD 0; JUMP +1; PUSH_FALSE; "
                   "RETURN_LOCAL; RETURN_SELF");
    m = compile("t: x = ( ^x || [ a ] )");
    ASSERT_CODE(m, "PUSH_LOCAL 1; JUMP_IF_TRUE +5 s0; PUSH_FIELD 0; JUMP +1; PUSH_TRUE; "
                   "RETURN_LOCAL; RETURN_SELF");
    m = compile("t: x = ( ^x ifNil: [ 1 ] )");
    ASSERT_CODE(m, "PUSH_LOCAL 1; DUP; JUMP_IF_NOT_NIL +3; POP; PUSH_INT 1; RETURN_LOCAL; "
                   "RETURN_SELF");
    /* and:/or:/&&/|| with an evaluated argument: one AND/OR instruction
     * carrying the send's call site */
    m = compile("t: x = ( ^(x and: a) | (x || b) )");
    ASSERT_CODE(m, "PUSH_LOCAL 1; PUSH_FIELD 0; AND 0; PUSH_LOCAL 1; PUSH_FIELD 1; OR 1; SEND 2; "
                   "RETURN_LOCAL; RETURN_SELF");
    assert_string_equal(m->sites[0].selector->bytes, "and:");
    assert_string_equal(m->sites[1].selector->bytes, "||");
    /* a non-literal-block argument is a real send */
    m = compile("t: x = ( ^x ifTrue: a )");
    ASSERT_CODE(m, "PUSH_LOCAL 1; PUSH_FIELD 0; SEND 0; RETURN_LOCAL; RETURN_SELF");
    /* a block with a parameter is not inlined by ifTrue: */
    m = compile("t: x = ( ^x ifTrue: [:y | y ] )");
    ASSERT_CODE(m, "PUSH_LOCAL 1; PUSH_BLOCK 0; SEND 0; RETURN_LOCAL; RETURN_SELF");
}

static void test_inline_while(void **state) {
    (void)state;
    SomMethod *m = compile("w = ( | i | i := 0. [ i < 10 ] whileTrue: [ i := i + 1 ] )");
    /* head at bci 4; the back edge lands exactly there. In statement context
     * the loop leaves no value; the out-of-line stub after the method's end
     * (site s1's bci) drops the answer of the fallback send and rejoins. */
    ASSERT_CODE(m, "PUSH_INT 0; STORE_LOCAL 1; "
                   "PUSH_LOCAL 1; PUSH_INT 10; LT 0; JUMP_IF_FALSE +12 s1; "
                   "PUSH_LOCAL 1; PUSH_INT 1; ADD 2; STORE_LOCAL 1; JUMP_BACK -24; "
                   "RETURN_SELF; POP; JUMP_BACK -5");
    assert_int_equal(m->sites[1].bci, 29);
    assert_string_equal(m->sites[1].selector->bytes, "whileTrue:");
    assert_int_equal(m->nlocals, 1);
    assert_int_equal(m->nctx, 0);
    m = compile("w = ( [ a ] whileFalse: [ ] )");
    ASSERT_CODE(m,
                "PUSH_FIELD 0; JUMP_IF_TRUE +3 s0; JUMP_BACK -10; RETURN_SELF; POP; JUMP_BACK -5");
    /* receiver not a literal block: a real send */
    m = compile("w = ( a whileTrue: [ ] )");
    ASSERT_CODE(m, "PUSH_FIELD 0; PUSH_BLOCK 0; SEND 0; POP; RETURN_SELF");
}

static void test_inline_to_do(void **state) {
    (void)state;
    SomMethod *m = compile("s = ( | sum | sum := 0. 1 to: 10 do: [:i | sum := sum + i ]. ^sum )");
    /* slots: 1 = sum, 2 = i, 3 = counter, 4 = limit */
    ASSERT_CODE(m, "PUSH_INT 0; STORE_LOCAL 1; "
                   "PUSH_INT 1; DUP; STORE_LOCAL 3; PUSH_INT 10; STORE_LOCAL 4; "
                   "PUSH_LOCAL 3; PUSH_LOCAL 4; LE 0; JUMP_IF_FALSE +30 s2; "
                   "PUSH_LOCAL 3; STORE_LOCAL 2; "
                   "PUSH_LOCAL 1; PUSH_LOCAL 2; ADD 3; STORE_LOCAL 1; "
                   "INC_LOCAL_JLE 3 4 -18; "
                   "PUSH_LOCAL 3; PUSH_INT 1; ADD 1; STORE_LOCAL 3; JUMP_BACK -42; "
                   "POP; PUSH_LOCAL 1; RETURN_LOCAL; RETURN_SELF");
    assert_int_equal(m->nlocals, 4);
    assert_int_equal(m->nctx, 0);
    assert_string_equal(m->sites[0].selector->bytes, "<=");
    assert_string_equal(m->sites[1].selector->bytes, "+");
    /* the generic step after INC_LOCAL_JLE is exactly SOM_TODO_TAIL bytes */
    const char *code = (const char *)m->code;
    const char *inc = memchr(code, BC_INC_LOCAL_JLE, m->code_len);
    assert_non_null(inc);
    assert_int_equal((uint8_t)inc[5 + SOM_TODO_TAIL - 3], BC_JUMP_BACK);
    /* to:do: with a non-block argument is a real send */
    m = compile("s = ( 1 to: 10 do: a )");
    ASSERT_CODE(m, "PUSH_INT 1; PUSH_INT 10; PUSH_FIELD 0; SEND 0; POP; RETURN_SELF");
}

/* ---- contexts ---------------------------------------------------------- */

static void test_captured_variables(void **state) {
    (void)state;
    /* a local read by a real block lives in the method's context */
    SomMethod *m = compile("c = ( | x y | x := 1. y := 2. ^[ x ] )");
    assert_int_equal(m->nctx, 1);
    assert_int_equal(m->nlocals, 1); /* only y on the stack */
    ASSERT_CODE(m, "PUSH_INT 1; STORE_CTX 0 0; PUSH_INT 2; STORE_LOCAL 1; "
                   "PUSH_BLOCK 0; RETURN_LOCAL; RETURN_SELF");
    SomMethod *b = block_lit(m, 0);
    ASSERT_CODE(b, "PUSH_CTX 0 0; RETURN_LOCAL");
    assert_ptr_equal(b->home, m);
    assert_int_equal(b->nctx, 0);

    /* a captured argument is copied into the context at entry */
    m = compile("c: p = ( ^[ p ] )");
    assert_int_equal(m->nctx, 1);
    ASSERT_CODE(m, "PUSH_LOCAL 1; STORE_CTX 0 0; PUSH_BLOCK 0; RETURN_LOCAL; RETURN_SELF");

    /* variables used only in inlined blocks stay on the stack */
    m = compile("c = ( | x | true ifTrue: [ x := 1 ]. ^x )");
    assert_int_equal(m->nctx, 0);

    /* two levels: the inner block reaches the method's variable across the
     * middle block, which has its own context (depth 1) */
    m = compile("c = ( | x | ^[:p | [ x + p ] ] )");
    assert_int_equal(m->nctx, 1);
    SomMethod *mid = block_lit(m, 0);
    assert_int_equal(mid->nctx, 1);
    ASSERT_CODE(mid, "PUSH_LOCAL 1; STORE_CTX 0 0; PUSH_BLOCK 0; RETURN_LOCAL");
    SomMethod *inner = block_lit(mid, 0);
    ASSERT_CODE(inner, "PUSH_CTX 1 0; PUSH_CTX 0 0; ADD 0; RETURN_LOCAL");
    assert_ptr_equal(inner->home, m);
    assert_ptr_equal(mid->home, m);

    /* the middle block without its own context: depth counts only contexts */
    m = compile("c = ( | x | ^[ [ x ] ] )");
    mid = block_lit(m, 0);
    assert_int_equal(mid->nctx, 0);
    ASSERT_CODE(block_lit(mid, 0), "PUSH_CTX 0 0; RETURN_LOCAL");
}

static void test_non_local_return(void **state) {
    (void)state;
    SomMethod *m = compile("f: c = ( c do: [:e | e = 0 ifTrue: [ ^e ] ]. ^nil )");
    assert_int_equal(m->has_nlr_blocks, 1);
    assert_true(m->nctx >= 1); /* the home context detects escaped returns */
    SomMethod *b = block_lit(m, 0);
    char *code = vt_disasm(b);
    assert_non_null(strstr(code, "RETURN_NLR"));
    free(code);
    /* a ^ in an inlined block of the method itself is a local return */
    m = compile("f: x = ( x ifTrue: [ ^1 ]. ^2 )");
    assert_int_equal(m->has_nlr_blocks, 0);
    assert_int_equal(m->nctx, 0);
    ASSERT_CODE(m, "PUSH_LOCAL 1; JUMP_IF_FALSE +3 s0; PUSH_INT 1; RETURN_LOCAL; PUSH_INT 2; "
                   "RETURN_LOCAL; RETURN_SELF; POP; JUMP_BACK -8");
    /* blocks answer their last expression; an empty block answers nil */
    m = compile("f = ( ^[ ] )");
    ASSERT_CODE(block_lit(m, 0), "PUSH_NIL; RETURN_LOCAL");
    m = compile("f = ( ^[:x | x. 3 ] )");
    ASSERT_CODE(block_lit(m, 0), "PUSH_LOCAL 1; POP; PUSH_INT 3; RETURN_LOCAL");
}

/* ---- trivial methods ------------------------------------------------- */

static void test_trivial_methods(void **state) {
    (void)state;
    static const struct {
        const char *src;
        int kind, arg;
    } cases[] = {
        {"b = ( ^b )", TRIV_GETTER, 1},
        {"a = ( ^a )", TRIV_GETTER, 0},
        {"b: v = ( b := v )", TRIV_SETTER, 1},
        {"a: v = ( a := v. ^self )", TRIV_SETTER, 0},
        {"me = ( ^self )", TRIV_SELF, 0},
        {"empty = ( )", TRIV_SELF, 0},
        {"s = ( ^'text' )", TRIV_LITERAL, 0},
        {"y = ( ^#sym )", TRIV_LITERAL, 0},
        {"d = ( ^2.5 )", TRIV_LITERAL, 0},
        {"big = ( ^100000 )", TRIV_LITERAL, 0},
        {"g = ( | a | ^a )", TRIV_NONE, 0}, /* local shadows the field */
        {"g = ( ^a + 1 )", TRIV_NONE, 0},
        {"g = ( ^Foo )", TRIV_NONE, 0}, /* global, not a field */
        {"s: v = ( a := v + 1 )", TRIV_NONE, 0},
        {"s: v = ( a := b )", TRIV_NONE, 0},
        {"s: v w: w = ( a := v )", TRIV_NONE, 0},
        {"s: v = ( a := v. ^a )", TRIV_NONE, 0},
        {"s: v = ( ^a := v )", TRIV_NONE, 0},
        {"x = ( a foo )", TRIV_NONE, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        SomMethod *m = compile(cases[i].src);
        if (m->trivial != cases[i].kind || (cases[i].kind && m->trivial_arg != cases[i].arg))
            fail_msg("`%s`: trivial %d/%d, want %d/%d", cases[i].src, m->trivial, m->trivial_arg,
                     cases[i].kind, cases[i].arg);
    }
    /* TRIV_LITERAL's argument indexes the literal answered */
    SomMethod *m = compile("s = ( ^'text' )");
    assert_string_equal(((SomString *)m->literals[m->trivial_arg])->bytes, "text");
    /* class side: fields are class-side fields, never instance getters */
    m = compile_in("C = ( ---- | k | k = ( ^k ) )", 0, true);
    assert_non_null(m);
    assert_int_equal(m->trivial, TRIV_NONE);
    ASSERT_CODE(m, "PUSH_CFIELD 0; RETURN_LOCAL; RETURN_SELF");
}

/* ---- errors -------------------------------------------------------------- */

static void test_compile_errors(void **state) {
    (void)state;
    static const struct {
        const char *method, *msg;
    } cases[] = {
        {"m = ( undeclared := 3 )",
         "t.som:2:7: expected a declared variable or field in assignment, got 'undeclared'"},
        {"m = ( self := 3 )", "t.som:2:7: expected an assignable variable, got 'self'"},
        {"m = ( super := 3 )", "t.som:2:7: expected an assignable variable, got 'super'"},
        {"m = ( nil := 3 )", "t.som:2:7: expected an assignable variable, got 'nil'"},
        {"m = ( true := 3 )", "t.som:2:7: expected an assignable variable, got 'true'"},
        {"m = ( [ zork := 3 ] )",
         "t.som:2:9: expected a declared variable or field in assignment, got 'zork'"},
        {"m = ( ^[:p :p | p ] )", "t.som:2:8: duplicate argument name 'p'"},
        {"m: x = ( | x | ^x )", "t.som:2:8: local 'x' has the name of an argument"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char src[512];
        snprintf(src, sizeof src, "C = ( | a b |\n%s\n)", cases[i].method);
        SomMethod *m = compile_in(src, 0, false);
        if (m) fail_msg("`%s` compiled but should not", cases[i].method);
        if (strcmp(err, cases[i].msg) != 0)
            fail_msg("`%s`:\n  got  %s\n  want %s", cases[i].method, err, cases[i].msg);
    }
    /* assignment to a field, an argument's shadowing local in a block, and a
     * block parameter shadowing a local are all fine */
    assert_non_null(compile("m = ( a := 1 )"));
    assert_non_null(compile("m = ( | v | ^[:v | v ] )"));
}

/* ---- limits -------------------------------------------------------------- */

/* Builds "C = ( | a b |\nm = ( <prefix> <n times item> <suffix> )\n)". */
static char *big_method(const char *prefix, const char *item, int n, const char *suffix) {
    size_t li = strlen(item), cap = strlen(prefix) + strlen(suffix) + (li + 16) * (size_t)n + 64;
    char *src = malloc(cap);
    assert_non_null(src);
    size_t len = (size_t)sprintf(src, "C = ( | a b |\nm = ( %s", prefix);
    for (int i = 0; i < n; i++)
        len += (size_t)sprintf(src + len, item, i);
    sprintf(src + len, "%s )\n)", suffix);
    return src;
}

static void expect_limit_error(char *src, const char *msg) {
    SomMethod *m = compile_in(src, 0, false);
    free(src);
    if (m) fail_msg("compiled, expected `%s`", msg);
    if (!strstr(err, msg)) fail_msg("got `%s`, expected `%s`", err, msg);
    assert_memory_equal(err, "t.som:", 6);
}

static void test_limits(void **state) {
    (void)state;
    /* (the 65535-literal limit is not exercised: reaching it costs ~2e9 literal
     * comparisons in the compiler's de-duplication, too slow for this suite) */
    /* a loop body longer than a 16-bit jump */
    expect_limit_error(big_method("[ a ] whileTrue: [ ", "a foo: %d. ", 12000, " ]"),
                       "method too large");
    /* more than 255 locals */
    char *src = malloc(8192);
    assert_non_null(src);
    size_t n = (size_t)sprintf(src, "C = ( m = ( |");
    for (int i = 0; i < 300; i++)
        n += (size_t)sprintf(src + n, " v%d", i);
    n += (size_t)sprintf(src + n, " | v299 := 1 ) )");
    expect_limit_error(src, "too many variables");
    /* just below the limits compiles */
    src = big_method("", "'s%d'. ", 1000, "");
    SomMethod *m = compile_in(src, 0, false);
    free(src);
    assert_non_null(m);
    assert_int_equal(m->nliterals, 1000);
}

/* ---- line table -------------------------------------------------------- */

static void test_line_table(void **state) {
    (void)state;
    SomMethod *m = compile_in("C = (\n m = (\n  1 foo.\n\n  2 bar\n )\n)", 0, false);
    assert_non_null(m);
    assert_int_equal(m->line, 2);
    /* the sends of lines 3 and 5 map back to their lines */
    assert_int_equal(m->nsites, 2);
    for (uint32_t s = 0; s < 2; s++) {
        uint32_t bci = m->sites[s].bci, line = 0;
        for (uint32_t i = 0; i < m->nlines && m->lines[i].bci <= bci; i++)
            line = m->lines[i].line;
        assert_int_equal(line, s == 0 ? 3 : 5);
    }
}

/* ---- through the class loader ------------------------------------------ */

static void test_loaded_class(void **state) {
    (void)state;
    char *dir = vt_tempdir();
    vt_write_class(dir, "Pt", "Pt = ( | x y | x = ( ^x ) x: v = ( x := v ) sum = ( ^x + y ) )");
    char e[512];
    SomVM *v2 = som_vm_new(NULL, dir, e, sizeof e);
    assert_non_null(v2);
    SomClass *c = som_load_class(v2, som_symbol_cstr(v2, "Pt"));
    assert_non_null(c);
    assert_int_equal(c->ninstfields, 2);
    SomMethod *g = som_lookup(v2, c, som_symbol_cstr(v2, "x"));
    SomMethod *s = som_lookup(v2, c, som_symbol_cstr(v2, "x:"));
    SomMethod *sum = som_lookup(v2, c, som_symbol_cstr(v2, "sum"));
    assert_non_null(g);
    assert_int_equal(g->trivial, TRIV_GETTER);
    assert_int_equal(s->trivial, TRIV_SETTER);
    assert_int_equal(sum->trivial, TRIV_NONE);
    assert_ptr_equal(sum->holder, c);
    /* inherited from Object; unknown selectors answer NULL */
    assert_non_null(som_lookup(v2, c, som_symbol_cstr(v2, "println")));
    assert_null(som_lookup(v2, c, som_symbol_cstr(v2, "noSuchSelector")));
    som_vm_free(v2);
    vt_rmdir(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simple_methods),
        cmocka_unit_test(test_arith_opcodes),
        cmocka_unit_test(test_literals_and_globals),
        cmocka_unit_test(test_inline_if),
        cmocka_unit_test(test_inline_while),
        cmocka_unit_test(test_inline_to_do),
        cmocka_unit_test(test_captured_variables),
        cmocka_unit_test(test_non_local_return),
        cmocka_unit_test(test_trivial_methods),
        cmocka_unit_test(test_compile_errors),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_line_table),
        cmocka_unit_test(test_loaded_class),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
