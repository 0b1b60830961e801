/* SPDX-License-Identifier: MIT */
/*
 * bytecode.h - the instruction set of the som interpreter.
 *
 * One byte of opcode, then operands (u8, or u16 little-endian for literal,
 * call-site and jump operands).
 * Slot 0 of an activation is its receiver (self for methods, the block object
 * for blocks); arguments are slots 1..nargs; locals follow. Captured
 * variables live in heap contexts addressed by (depth, index): depth counts
 * context hops outward from the activation's context register.
 * Jumps: JUMP* W = forward offset from the end of the instruction;
 * JUMP_BACK W = backward offset from the end of the instruction (a loop back
 * edge and a safepoint).
 * JUMP_IF_FALSE/JUMP_IF_TRUE come from inlined control structures; their
 * call site names the message the source sent (ifTrue:, and:, whileTrue:...)
 * and its `bci` is the end of the inlined construct. A receiver that is not a
 * boolean gets that message as a real doesNotUnderstand: send, whose answer
 * becomes the value of the whole construct (docs/language.md 5.3).
 * The arithmetic/comparison opcodes carry the call site used when their
 * operands are not both small integers (or doubles): semantics are exactly
 * those of the send.
 */
#ifndef SOM_BYTECODE_H
#define SOM_BYTECODE_H

/*  name, operand bytes; comments give the stack effect */
#define SOM_BYTECODES(X)                                                                           \
    X(PUSH_LOCAL, 1)  /* -> bp[i] */                                                               \
    X(PUSH_SELF, 0)   /* -> self */                                                                \
    X(PUSH_CTX, 2)    /* -> ctx(depth)[i] */                                                       \
    X(PUSH_FIELD, 1)  /* -> self.field[i] */                                                       \
    X(PUSH_CFIELD, 1) /* -> class-side field i of self (a class) */                                \
    X(PUSH_CONST, 2)  /* -> literal[k] */                                                          \
    X(PUSH_NIL, 0)                                                                                 \
    X(PUSH_TRUE, 0)                                                                                \
    X(PUSH_FALSE, 0)                                                                               \
    X(PUSH_INT, 1)    /* -> small integer (signed byte) */                                         \
    X(PUSH_GLOBAL, 2) /* -> global named literal[k] or unknownGlobal: */                           \
    X(PUSH_BLOCK, 2)  /* -> new closure of block method literal[k] */                              \
    X(STORE_LOCAL, 1) /* v -> ; bp[i] = v */                                                       \
    X(STORE_CTX, 2)                                                                                \
    X(STORE_FIELD, 1)                                                                              \
    X(STORE_CFIELD, 1)                                                                             \
    X(DUP, 0)                                                                                      \
    X(POP, 0)                                                                                      \
    X(SEND, 2) /* rcv args -> result; W = call site */                                             \
    X(SUPER_SEND, 2)                                                                               \
    X(RETURN_LOCAL, 0) /* return TOS from this activation */                                       \
    X(RETURN_SELF, 0)                                                                              \
    X(RETURN_NLR, 0) /* ^ inside a block: return TOS from home */                                  \
    X(JUMP, 2)                                                                                     \
    X(JUMP_IF_FALSE, 4)   /* pops; W jump, W call site (see below) */                              \
    X(JUMP_IF_TRUE, 4)    /* pops; W jump, W call site */                                          \
    X(JUMP_IF_NIL, 2)     /* pops */                                                               \
    X(JUMP_IF_NOT_NIL, 2) /* pops */                                                               \
    X(JUMP_BACK, 2)                                                                                \
    X(ADD, 2)                                                                                      \
    X(SUB, 2)                                                                                      \
    X(MUL, 2)                                                                                      \
    X(LT, 2)                                                                                       \
    X(GT, 2)                                                                                       \
    X(LE, 2)                                                                                       \
    X(GE, 2)                                                                                       \
    X(EQ, 2)                                                                                       \
    X(NE, 2)            /* ~= */                                                                   \
    X(MOD, 2)           /* % (floored) */                                                          \
    X(FDIV, 2)          /* // (always a Double) */                                                 \
    X(DIV, 2)           /* / (truncated) */                                                        \
    X(BAND, 2)          /* & */                                                                    \
    X(BXOR, 2)          /* bitXor: */                                                              \
    X(INC_LOCAL_JLE, 4) /* to:do: step: bp[a]++; if bp[a] <= bp[b] jump back W */                  \
    X(AND, 2)           /* a b -> a && b (and:, && with an evaluated argument) */                  \
    X(OR, 2)            /* a b -> a || b (or:, || with an evaluated argument) */

/* Superinstructions (quickened forms; the compiler never emits them).
 * interp.c runs a private copy of each method's code (SomMethod.qcode) in
 * which the first opcode of a common sequence is replaced by the fused
 * opcode; every other byte stays as compiled. So a fused instruction has the
 * operand length of its first instruction, a jump into the middle of a
 * sequence runs the original instructions, bcis are unchanged, and a slow
 * path just does the first instruction's work and lets the rest run as
 * plain instructions. Tools read `code`, which never holds these.
 *  name, first (base) instruction; comment: the fused sequence */
#define SOM_SUPER_BYTECODES(X)                                                                     \
    X(PUSH_LOCAL2, PUSH_LOCAL)       /* PUSH_LOCAL a; PUSH_LOCAL b */                              \
    X(PUSH_LOCAL2_ADD, PUSH_LOCAL)   /* PUSH_LOCAL a; PUSH_LOCAL b; ADD k */                       \
    X(PUSH_LOCAL2_SUB, PUSH_LOCAL)   /* PUSH_LOCAL a; PUSH_LOCAL b; SUB k */                       \
    X(PUSH_LOCAL2_MUL, PUSH_LOCAL)   /* PUSH_LOCAL a; PUSH_LOCAL b; MUL k */                       \
    X(PUSH_LOCAL_SEND, PUSH_LOCAL)   /* PUSH_LOCAL a; SEND k */                                    \
    X(PUSH_LOCAL_SEND0, PUSH_LOCAL)  /* PUSH_LOCAL a; SEND k (a unary send: a is the receiver) */  \
    X(PUSH_LOCAL_SEND1, PUSH_LOCAL)  /* PUSH_LOCAL a; SEND k (one argument) */                     \
    X(SEND0, SEND)                   /* SEND k of a site without arguments */                      \
    X(SEND1, SEND)                   /* SEND k of a site with one argument */                      \
    X(SEND2, SEND)                   /* SEND k of a site with two arguments */                     \
    X(PUSH_LOCAL_ADDI, PUSH_LOCAL)   /* PUSH_LOCAL a; PUSH_INT c; ADD k */                         \
    X(PUSH_LOCAL_SUBI, PUSH_LOCAL)   /* PUSH_LOCAL a; PUSH_INT c; SUB k */                         \
    X(PUSH_LOCAL_ADD, PUSH_LOCAL)    /* PUSH_LOCAL a; ADD k */                                     \
    X(PUSH_LOCAL_SUB, PUSH_LOCAL)    /* PUSH_LOCAL a; SUB k */                                     \
    X(PUSH_LOCAL_MUL, PUSH_LOCAL)    /* PUSH_LOCAL a; MUL k */                                     \
    X(PUSH_LOCAL_JF, PUSH_LOCAL)     /* PUSH_LOCAL a; JUMP_IF_FALSE w s */                         \
    X(PUSH_NIL_STORE, PUSH_NIL)      /* PUSH_NIL; STORE_LOCAL a */                                 \
    X(STORE_PUSH_LOCAL, STORE_LOCAL) /* STORE_LOCAL a; PUSH_LOCAL b */                             \
    X(ADD_STORE, ADD)                /* ADD k; STORE_LOCAL a */                                    \
    X(SUB_STORE, SUB)                /* SUB k; STORE_LOCAL a */                                    \
    X(MUL_STORE, MUL)                /* MUL k; STORE_LOCAL a */                                    \
    X(LT_JF, LT)                     /* LT k; JUMP_IF_FALSE w s */                                 \
    X(GT_JF, GT)                     /* GT k; JUMP_IF_FALSE w s */                                 \
    X(LE_JF, LE)                     /* LE k; JUMP_IF_FALSE w s */                                 \
    X(GE_JF, GE)                     /* GE k; JUMP_IF_FALSE w s */                                 \
    X(EQ_JF, EQ)                     /* EQ k; JUMP_IF_FALSE w s */                                 \
    X(LT_JJF, LT) /* LT k; JUMP w to a JUMP_IF_FALSE (`a and: [b < c]` as a condition) */          \
    X(GT_JJF, GT) /* GT k; JUMP w to a JUMP_IF_FALSE */                                            \
    X(LE_JJF, LE) /* LE k; JUMP w to a JUMP_IF_FALSE */                                            \
    X(GE_JJF, GE) /* GE k; JUMP w to a JUMP_IF_FALSE */                                            \
    X(EQ_JJF, EQ) /* EQ k; JUMP w to a JUMP_IF_FALSE */                                            \
    X(PUSH_LOCAL_INT, PUSH_LOCAL)  /* PUSH_LOCAL a; PUSH_INT c */                                  \
    X(PUSH_LOCAL2_CJF, PUSH_LOCAL) /* PUSH_LOCAL a; PUSH_LOCAL b; LT..EQ k; JUMP_IF_FALSE w s */   \
    /* Sends rewritten once their site's first inline-cache entry is a trivial method */           \
    X(SEND0_GET, SEND)                  /* SEND0 k: the entry's getter runs here */                \
    X(SEND0_LIT, SEND)                  /* SEND0 k: the entry's constant answer */                 \
    X(SEND1_SET, SEND)                  /* SEND1 k: the entry's setter runs here */                \
    X(PUSH_LOCAL_SEND0_GET, PUSH_LOCAL) /* PUSH_LOCAL_SEND0 a k to a getter */                     \
    X(PUSH_LOCAL_SEND0_LIT, PUSH_LOCAL) /* PUSH_LOCAL_SEND0 a k to a constant answer */            \
    /* ... or Array>>at: / at:put: */                                                              \
    X(SEND1_AT, SEND)                  /* SEND1 k: array at: */                                    \
    X(PUSH_LOCAL_SEND1_AT, PUSH_LOCAL) /* PUSH_LOCAL_SEND1 a k: array at: a */                     \
    X(SEND2_ATPUT, SEND)               /* SEND2 k: array at:put: */                                \
    X(PUSH_LOCAL_ADDI_ST, PUSH_LOCAL)  /* PUSH_LOCAL a; PUSH_INT c; ADD k; STORE_LOCAL b */        \
    X(PUSH_LOCAL_SUBI_ST, PUSH_LOCAL)  /* PUSH_LOCAL a; PUSH_INT c; SUB k; STORE_LOCAL b */        \
    X(SEND1_SET_POP, SEND)             /* SEND1_SET k; POP */                                      \
    X(SEND2_ATPUT_POP, SEND)           /* SEND2_ATPUT k; POP */                                    \
    X(PUSH_LOCAL2_ADD_ST, PUSH_LOCAL)  /* PUSH_LOCAL a; PUSH_LOCAL b; ADD k; STORE_LOCAL c */      \
    X(PUSH_LOCAL2_SUB_ST, PUSH_LOCAL)  /* PUSH_LOCAL a; PUSH_LOCAL b; SUB k; STORE_LOCAL c */      \
    X(JUMP_RETURN, JUMP)               /* JUMP w to a RETURN_LOCAL */

enum {
#define SOM_BC_ENUM(name, ops) BC_##name,
    SOM_BYTECODES(SOM_BC_ENUM)
#undef SOM_BC_ENUM
        BC__NBASE, /* instructions the compiler emits: 0 .. BC__NBASE-1 */
    BC__SUPER_BEFORE = BC__NBASE - 1,
#define SOM_BC_SUPER_ENUM(name, base) BC_##name,
    SOM_SUPER_BYTECODES(SOM_BC_SUPER_ENUM)
#undef SOM_BC_SUPER_ENUM
        BC__COUNT
};

/* INC_LOCAL_JLE is followed by a generic fallback of exactly this many bytes
 * (PUSH_LOCAL i, PUSH_INT 1, ADD, STORE_LOCAL i, JUMP_BACK head) that runs
 * when the counter or the limit is not a small integer; the fast path skips it. */
#define SOM_TODO_TAIL 12

/* Operand bytes of each opcode (of its base instruction for a superinstruction). */
extern const unsigned char som_bc_len[BC__COUNT];
extern const char *const som_bc_name[BC__COUNT];
/* The instruction a superinstruction starts with (itself for the others). */
extern const unsigned char som_bc_base[BC__COUNT];

#endif
