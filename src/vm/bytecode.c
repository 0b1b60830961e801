/*
 * bytecode.c - operand sizes and names of the instructions (bytecode.h).
 */
#include "bytecode.h"

#define SOM_BC_LEN(name, n) n,
const unsigned char som_bc_len[BC__COUNT] = {SOM_BYTECODES(SOM_BC_LEN)};
#undef SOM_BC_LEN

#define SOM_BC_NAME(name, n) #name,
const char *const som_bc_name[BC__COUNT] = {SOM_BYTECODES(SOM_BC_NAME)};
#undef SOM_BC_NAME
