/*
 * ir.c - the optimizing tier's IR: tables, construction, verification, printing (ir.h).
 */
#include "ir.h"

const char *const jit_op_name[JI__COUNT] = {
#define JIT_OP_NAME(name, type) #name,
    JIT_OPS(JIT_OP_NAME)
#undef JIT_OP_NAME
};

const uint8_t jit_op_type[JI__COUNT] = {
#define JIT_OP_TYPE(name, type) JT_##type,
    JIT_OPS(JIT_OP_TYPE)
#undef JIT_OP_TYPE
};
