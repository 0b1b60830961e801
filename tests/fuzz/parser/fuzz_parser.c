/* SPDX-License-Identifier: MIT */
/*
 * fuzz_parser.c - libFuzzer target for the SOM front end: the lexer alone
 * (every token, every string decoded), then parse_class, then the bytecode
 * generator for every method of both sides through one long-lived VM.
 *
 * The input is a class file (any bytes). Nothing may crash, hang, leak or
 * touch memory out of bounds (the fuzz preset adds ASan/UBSan); a syntax or
 * compile error must come with a `file:line:col:` message.
 * Also linked into fuzz_parser_replay, which feeds the seed corpus through
 * the same function in ordinary builds.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bcverify.h"
#include "codegen.h"
#include "lexer.h"
#include "parser.h"
#include "vm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static SomVM *fuzz_vm;

static void check(int cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "fuzz_parser: invariant violated: %s\n", what);
        abort();
    }
}

static void lex_all(const char *src, size_t len) {
    Lexer lx;
    lex_init_n(&lx, src, len);
    for (;;) {
        Token t = lex_next(&lx);
        check(t.line >= 1 && t.col >= 1, "token position");
        if (t.kind == T_EOF || t.kind == T_ERROR) break;
        check(t.kind != T_IDENT || t.len > 0, "empty identifier");
        if (t.kind == T_STRING) {
            char *buf = malloc(t.len + 1);
            size_t bad = 0;
            long n = lex_decode_string(&t, buf, &bad);
            check(n < 0 ? bad < t.len : (size_t)n <= t.len, "decoded length");
            free(buf);
        }
    }
}

static void compile_side(SomVM *vm, NameList *fields, MethodDefList *methods, bool class_side) {
    CompileEnv env = {vm,
                      class_side ? vm->objectClass->h.cls : vm->objectClass,
                      fields->names,
                      fields->n,
                      class_side,
                      "fuzz.som"};
    for (int i = 0; i < methods->n; i++) {
        if (methods->items[i]->is_primitive) continue;
        char err[512] = "";
        SomMethod *m = codegen_method(&env, methods->items[i], err, sizeof err);
        check(m != NULL || strncmp(err, "fuzz.som:", 9) == 0, "compile error without position");
        check(m == NULL || m->code_len > 0, "empty method code");
        const char *bad = m ? vt_verify_code(m) : NULL;
        if (bad) fprintf(stderr, "fuzz_parser: %s\n", bad);
        check(bad == NULL, "malformed bytecode");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 65536) return 0;
    char *src = malloc(size + 1);
    memcpy(src, data, size);
    src[size] = 0; /* NUL-terminated, with its length: an inner NUL is an error */
    lex_all(src, size);
    if (!fuzz_vm) {
        char e[512];
        fuzz_vm = som_vm_new(NULL, NULL, e, sizeof e);
        check(fuzz_vm != NULL, "VM creation");
    }
    Arena arena = {0};
    ClassDef def;
    char err[1024] = "";
    if (parse_class_n(&arena, "fuzz.som", src, size, &def, err, sizeof err)) {
        fuzz_vm->heap.inhibit++; /* the compiler holds new objects in C locals */
        compile_side(fuzz_vm, &def.inst_fields, &def.inst_methods, false);
        compile_side(fuzz_vm, &def.class_fields, &def.class_methods, true);
        fuzz_vm->heap.inhibit--;
        gc_collect(fuzz_vm); /* the compiled methods are garbage now */
    } else {
        check(strncmp(err, "fuzz.som:", 9) == 0, "parse error without position");
    }
    arena_free(&arena);
    free(src);
    return 0;
}
