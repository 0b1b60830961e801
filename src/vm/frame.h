/* SPDX-License-Identifier: MIT */
/*
 * frame.h - activation records of som, readable by a profiler.
 *
 * Activation records live in a per-VM array (`vm->frames`) that is allocated
 * once (mmap, lazily committed) and never moved or freed while the VM exists;
 * operand values live in a separate per-VM value stack. Frame i's caller is
 * frame i - 1; frame 0 is the bottom.
 *
 * Rules for walkers that run asynchronously (a signal handler on the VM's own
 * thread, or another thread sampling it), without locks or allocation:
 *  - Read `vm->top` (an index, atomic) first; frames 0..top are initialised.
 *    The interpreter fully writes frame top+1 before it publishes top+1
 *    (release store), and on return publishes top-1.
 *  - `method` of a published frame is a valid SomMethod for the frame's whole
 *    life; `bci` is the bytecode index of the frame's most recent send
 *    (updated at every send; exact for callers, approximate for the top frame).
 *  - `visited` is 0 when an activation starts. A profiler may set it to mark
 *    "this activation was already seen by a sample" (Rotor's visited marks);
 *    the VM never reads it. A walk may stop at the first frame whose mark is
 *    set, because all its callers were recorded by an earlier sample.
 *  - A frame slot is reused by later activations; a walker on another thread
 *    must tolerate reading a frame that is being replaced (fields are word
 *    sized and each read is individually atomic; no pointer is ever invalid
 *    memory since methods are never freed while referenced by a frame).
 *  - `vm->state` (VmState) says what the thread is doing right now.
 */
#ifndef SOM_FRAME_H
#define SOM_FRAME_H

#include <stdint.h>

#include "object.h"

typedef struct SomFrame {
    SomMethod *method; /* method or block body being run */
    uint32_t bci;      /* bytecode index of the latest send */
    uint32_t visited;  /* profiler's mark; cleared on activation */
    Value *bp;         /* slot 0: receiver (or block), then args, then locals */
    Value self;        /* self (for blocks, the home method's self) */
    SomContext *ctx;   /* context register: own context or the closure's */
    const uint8_t *ip; /* resume point (interpreter-private) */
    /* Compiled code (jitabi.h): the SomJitCode running this activation, NULL when it is
     * interpreted; jit_pos indexes its position table (inlined activations), JIT_POS_NONE
     * when only the frame's own method is running.  Written before publication (jit = NULL,
     * jit_pos = JIT_POS_NONE); the interpreter stores jit once more, after publication, right
     * before it enters compiled code for the activation (jit_pos still JIT_POS_NONE, so a
     * walker sees the same logical frame either way), and a deoptimization stores
     * jit_pos = JIT_POS_NONE, then jit = NULL. */
    const struct SomJitCode *jit;
    uint32_t jit_pos;
    /* Loop back edges run by this (interpreted) activation while vm->jit_hook is set: the
     * SOM_JIT_LOOP counter (interp.c), 0 when an activation starts while vm->jit or
     * vm->jit_hook is set (else not written: a hook set later may see one early count). */
    uint32_t backedges;
} SomFrame;

/* What the VM thread is doing; read by samplers. */
typedef enum VmState { /* numbered like SampoVmState in include/sampo.h */
                       VMS_NONE = 0,
                       VMS_INTERP = 1, /* interpreting bytecode */
                       VMS_PRIMITIVE,  /* in a primitive */
                       VMS_NATIVE,     /* in VM runtime code (lookup, class loading, printing) */
                       VMS_GC,         /* collecting garbage */
                       VMS_COMPILE,    /* compiling (parser, bytecode generator, later the JIT) */
                       VMS_IDLE,       /* not running SOM code */
                       VMS_COMPILED,   /* running compiled code (the JIT's tier) */
                       VMS_COUNT
} VmState;

#endif
