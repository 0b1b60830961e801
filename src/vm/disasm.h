/* SPDX-License-Identifier: MIT */
/*
 * disasm.h - human-readable bytecode listings with the type feedback that
 * send sites collected (receiver classes and hit counts from the inline
 * caches, operand kinds of arithmetic sends). Used by `som -d`.
 */
#ifndef SOM_DISASM_H
#define SOM_DISASM_H

#include <stdio.h>

#include "vm.h"

/* Lists one method (and the blocks nested in it). */
void disasm_method(SomVM *vm, const SomMethod *m, FILE *f);
/* Lists every method of every loaded class that ran at least min_invocations
 * times. Answers the number of methods listed. */
size_t disasm_all(SomVM *vm, uint64_t min_invocations, FILE *f);

#endif
