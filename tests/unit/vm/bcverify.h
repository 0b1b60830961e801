/* SPDX-License-Identifier: MIT */
/*
 * bcverify.h - structural verifier for compiled som methods, shared by the
 * unit tests (tests/unit/vm) and the front-end fuzzer (tests/fuzz/parser).
 * No cmocka dependency; not thread-safe (static message buffer).
 */
#ifndef SOM_BCVERIFY_H
#define SOM_BCVERIFY_H

#include "vm.h"

/* Structural check of a method's bytecode and, recursively, of its blocks:
 * known opcodes, every jump lands on an instruction boundary inside the
 * code, call-site bcis are instruction boundaries, literal/site/slot operands
 * are in range. Answers NULL or a static description of the first problem. */
const char *vt_verify_code(const SomMethod *m);

#endif
