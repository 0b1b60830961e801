/* SPDX-License-Identifier: MIT */
/*
 * bcverify.c - structural verifier for compiled som methods (bcverify.h).
 */
#include "bcverify.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "bytecode.h"

static bool is_jump(int op) {
    return op == BC_JUMP || op == BC_JUMP_IF_FALSE || op == BC_JUMP_IF_TRUE ||
           op == BC_JUMP_IF_NIL || op == BC_JUMP_IF_NOT_NIL;
}

static bool is_lit_op(int op) {
    return op == BC_PUSH_CONST || op == BC_PUSH_GLOBAL || op == BC_PUSH_BLOCK;
}

/* Every other instruction with a 16-bit operand (sends, arithmetic and logic
 * opcodes, including ones added later) carries a call-site index. */
static bool is_site_op(int op) {
    return som_bc_len[op] == 2 && !is_lit_op(op) && !is_jump(op) && op != BC_JUMP_BACK &&
           op != BC_PUSH_CTX && op != BC_STORE_CTX;
}

const char *vt_verify_code(const SomMethod *m) {
    static char msg[256];
    uint32_t len = m->code_len;
    uint8_t *start = calloc(len + 1, 1);
    if (!start) abort();
    const char *bad = NULL;
    for (uint32_t pc = 0; pc < len && !bad;) {
        int op = m->code[pc];
        if (op >= BC__COUNT) {
            bad = "unknown opcode";
            break;
        }
        start[pc] = 1;
        uint32_t n = som_bc_len[op];
        if (pc + 1 + n > len) bad = "instruction runs past the end";
        pc += 1 + n;
    }
    for (uint32_t pc = 0; pc < len && !bad;) {
        int op = m->code[pc];
        const uint8_t *a = m->code + pc + 1;
        uint32_t n = som_bc_len[op], end = pc + 1 + n,
                 w = n >= 2 ? (uint32_t)(a[0] | (a[1] << 8)) : 0;
        long target = -1;
        if (is_jump(op))
            target = (long)end + w;
        else if (op == BC_JUMP_BACK)
            target = (long)end - w;
        else if (op == BC_INC_LOCAL_JLE)
            target = (long)end - (a[2] | (a[3] << 8));
        if (target != -1 && (target < 0 || target >= (long)len || !start[target]))
            bad = "jump target is not an instruction";
        if (is_jump(op) && n == 4 && (uint32_t)(a[2] | (a[3] << 8)) >= m->nsites)
            bad = "conditional jump site out of range";
        if (is_lit_op(op) && w >= m->nliterals) bad = "literal index out of range";
        if (is_site_op(op) && w >= m->nsites) bad = "call site index out of range";
        if ((op == BC_PUSH_LOCAL || op == BC_STORE_LOCAL) && a[0] > m->nargs + m->nlocals)
            bad = "stack slot out of range";
        if (op == BC_INC_LOCAL_JLE &&
            (a[0] > m->nargs + m->nlocals || a[1] > m->nargs + m->nlocals))
            bad = "loop slot out of range";
        if (bad) snprintf(msg, sizeof msg, "%s at bci %u (%s)", bad, pc, som_bc_name[op]);
        pc = end;
    }
    for (uint32_t i = 0; i < m->nsites && !bad; i++)
        if (m->sites[i].bci >= len || !start[m->sites[i].bci]) {
            snprintf(msg, sizeof msg, "call site %u (%s) has bci %u, not an instruction", i,
                     m->sites[i].selector->bytes, m->sites[i].bci);
            bad = msg;
        }
    free(start);
    if (bad) return bad == msg ? msg : (snprintf(msg, sizeof msg, "%s", bad), msg);
    for (uint32_t i = 0; i < m->nliterals; i++) {
        Value v = m->literals[i];
        if (som_is_obj(v) && som_hdr(v)->kind == OBJ_METHOD) {
            const char *b = vt_verify_code((const SomMethod *)v);
            if (b) return b;
        }
    }
    return NULL;
}
