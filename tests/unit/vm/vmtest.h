/* SPDX-License-Identifier: MIT */
/*
 * vmtest.h - helpers shared by the som VM unit tests: temporary class
 * directories, running whole programs with captured output, a bytecode
 * disassembler for readable assertions.
 *
 * Not thread-safe except run_program, which only touches its own VM.
 */
#ifndef SOM_VMTEST_H
#define SOM_VMTEST_H

#include <stdbool.h>
#include <stddef.h>

#include "vm.h"

/* A fresh temporary directory (mkdtemp); returns a malloc'ed path. */
char *vt_tempdir(void);
/* Writes dir/name.som with the given source. */
void vt_write_class(const char *dir, const char *name, const char *src);
/* Removes the directory and every file in it (one level). */
void vt_rmdir(const char *dir);

/* Result of running a program: captured stdout/stderr (malloc'ed, NUL-terminated). */
typedef struct VtRun {
    int status;
    char *out;
    char *err;
} VtRun;

/* Runs main class `main` found in `dir` (plus the built-in core library) in
 * a fresh VM with the given options (NULL: defaults). Asserts the VM starts. */
VtRun vt_run(const char *dir, const char *main, const SomOptions *opts);
void vt_run_free(VtRun *r);
/* Writes one class named `main` with source `src` to a temp dir and runs it. */
VtRun vt_run_source(const char *main, const char *src, const SomOptions *opts);

/* Disassembles a method's code as "OP a b; OP w; ..." (operands as decimal;
 * jump offsets as +n / -n;
 * the call site of a conditional jump as sN). Returns a malloc'ed string. */
char *vt_disasm(const SomMethod *m);

#include "bcverify.h"

#endif
