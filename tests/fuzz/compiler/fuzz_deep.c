/* SPDX-License-Identifier: MIT */
/*
 * fuzz_deep.c - libFuzzer target for the SOM compiler on deep and long constructs.
 *
 * The input is a recipe, not a source: each pair of bytes (op, n) wraps or extends one
 * expression - unary, binary, keyword and `&&` chains up to ~100k sends long, parentheses,
 * blocks, conditionals and assignments nested up to 255 deep - and the result is parsed
 * (parse_class_n: NUL bytes included) and compiled through a VM.  Plain byte mutation
 * almost never builds such sizes; this target reaches them in a few steps.  Nothing may
 * crash or overflow the C stack: a source either compiles into verified bytecode or is
 * rejected with a `deep.som:line:col:` message (nested too deeply, too many sends...).
 * Also linked into fuzz_deep_replay, which runs the seed corpus in ordinary builds.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bcverify.h"
#include "codegen.h"
#include "parser.h"
#include "vm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DEEP_MAX_SRC (4u << 20)

static SomVM *deep_vm;

static void check(int cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "fuzz_deep: invariant violated: %s\n", what);
        abort();
    }
}

typedef struct Src {
    char *s;
    size_t len, cap;
    int full;
} Src;

static void put(Src *b, const char *t, size_t n) {
    if (b->full || b->len + n + 1 > DEEP_MAX_SRC) {
        b->full = 1;
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        check(s != NULL, "memory");
        b->s = s, b->cap = cap;
    }
    memcpy(b->s + b->len, t, n);
    b->len += n;
    b->s[b->len] = 0;
}

static void puts_n(Src *b, const char *t, unsigned times) {
    size_t n = strlen(t);
    for (unsigned i = 0; i < times && !b->full; i++)
        put(b, t, n);
}

/* Wraps the expression e in prefix ... suffix, times deep. */
static void wrap(Src *e, const char *prefix, const char *suffix, unsigned times) {
    Src w = {0};
    puts_n(&w, prefix, times);
    put(&w, e->s ? e->s : "", e->len);
    puts_n(&w, suffix, times);
    free(e->s);
    *e = w;
}

/* One step of the recipe. */
static void step(Src *e, uint8_t op, uint8_t n) {
    unsigned many = (unsigned)n * 400 + 1; /* chains: up to ~100k sends */
    switch (op % 10) {
    case 0:
        return puts_n(e, " abs", many);
    case 1:
        return puts_n(e, " + 1", many);
    case 2:
        return puts_n(e, " max: 1", n + 1u); /* keyword sends: one per statement level */
    case 3:
        return puts_n(e, " && [ true ]", many / 8);
    case 4:
        return wrap(e, "(", ")", n);
    case 5:
        return wrap(e, "[ ", " ] value", n);
    case 6:
        return wrap(e, "(true ifTrue: [ ", " ] ifFalse: [ 0 ])", n);
    case 7:
        return wrap(e, "(a := ", ")", n);
    case 8:
        return wrap(e, "[:x | ", " ] value: 2", n / 4u);
    default:
        return put(e, "\0", 1); /* a NUL byte: an error with a position, never the end */
    }
}

static void compile_all(MethodDefList *methods) {
    CompileEnv env = {deep_vm, deep_vm->objectClass, NULL, 0, false, "deep.som"};
    for (int i = 0; i < methods->n; i++) {
        char err[512] = "";
        SomMethod *m = codegen_method(&env, methods->items[i], err, sizeof err);
        check(m != NULL || strncmp(err, "deep.som:", 9) == 0, "compile error without position");
        const char *bad = m ? vt_verify_code(m) : NULL;
        if (bad) fprintf(stderr, "fuzz_deep: %s\n", bad);
        check(bad == NULL, "malformed bytecode");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 64) return 0; /* 32 steps are plenty: each one can be 100k sends */
    Src e = {0};
    put(&e, "1", 1);
    for (size_t i = 0; i + 1 < size; i += 2)
        step(&e, data[i], data[i + 1]);
    Src src = {0};
    const char head[] = "Deep = (\n    run = ( | a | ^ ";
    put(&src, head, sizeof head - 1);
    put(&src, e.s, e.len);
    put(&src, " )\n)\n", 5);
    free(e.s);
    if (!deep_vm) {
        char err[512];
        deep_vm = som_vm_new(NULL, NULL, err, sizeof err);
        check(deep_vm != NULL, "VM creation");
    }
    Arena arena = {0};
    ClassDef def;
    char err[1024] = "";
    if (src.full) {
        free(src.s);
        return 0;
    }
    if (parse_class_n(&arena, "deep.som", src.s, src.len, &def, err, sizeof err)) {
        deep_vm->heap.inhibit++; /* the compiler holds new objects in C locals */
        compile_all(&def.inst_methods);
        deep_vm->heap.inhibit--;
        gc_collect(deep_vm);
    } else {
        check(strncmp(err, "deep.som:", 9) == 0, "parse error without position");
    }
    arena_free(&arena);
    free(src.s);
    return 0;
}
