/* SPDX-License-Identifier: MIT */
/*
 * bytecode.c - operand sizes and names of the instructions (bytecode.h).
 */
#include "bytecode.h"

#define SOM_BC_LEN(name, n) n,
#define SOM_BC_SUPER_LEN(name, base) SOM_LEN_##base,
enum {
#define SOM_BC_LENDEF(name, n) SOM_LEN_##name = n,
    SOM_BYTECODES(SOM_BC_LENDEF)
#undef SOM_BC_LENDEF
};
const unsigned char som_bc_len[BC__COUNT] = {SOM_BYTECODES(SOM_BC_LEN)
                                                 SOM_SUPER_BYTECODES(SOM_BC_SUPER_LEN)};
#undef SOM_BC_LEN
#undef SOM_BC_SUPER_LEN

#define SOM_BC_SELF(name, n) BC_##name,
#define SOM_BC_SUPER_BASE(name, base) BC_##base,
const unsigned char som_bc_base[BC__COUNT] = {SOM_BYTECODES(SOM_BC_SELF)
                                                  SOM_SUPER_BYTECODES(SOM_BC_SUPER_BASE)};
#undef SOM_BC_SELF
#undef SOM_BC_SUPER_BASE

#define SOM_BC_NAME(name, n) #name,
const char *const som_bc_name[BC__COUNT] = {SOM_BYTECODES(SOM_BC_NAME)
                                                SOM_SUPER_BYTECODES(SOM_BC_NAME)};
#undef SOM_BC_NAME
