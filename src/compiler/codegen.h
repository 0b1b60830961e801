/* SPDX-License-Identifier: MIT */
/*
 * codegen.h - syntax trees of methods to bytecode (src/vm/bytecode.h).
 *
 * Resolves names (locals, captured variables, fields, globals), decides
 * which variables live in heap contexts (captured by a real block), inlines
 * control structures whose arguments are literal blocks (docs/language.md section 5), and emits
 * bytecode, literals, call sites and a line table per method and block.
 * Allocates VM objects: the caller must hold vm->heap.inhibit (the compiler
 * keeps half-built objects in C locals).
 */
#ifndef SOM_CODEGEN_H
#define SOM_CODEGEN_H

#include <stdbool.h>
#include <stddef.h>

#include "ast.h"

typedef struct SomVM SomVM;
typedef struct SomClass SomClass;
typedef struct SomMethod SomMethod;

typedef struct CompileEnv {
    SomVM *vm;
    SomClass *holder;          /* class (or metaclass) that will hold the method */
    const char *const *fields; /* field names visible on this side, all of them */
    int nfields;
    bool class_side;
    const char *file;
} CompileEnv;

/* Compiles one method. Answers NULL with `file:line:col: message` in err. */
SomMethod *codegen_method(const CompileEnv *env, MethodDef *def, char *err, size_t errlen);

#endif
