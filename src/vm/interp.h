/*
 * interp.h - the bytecode interpreter.
 *
 * Runs activations on the VM's value stack and frame array (frame.h) with
 * computed-goto dispatch, monomorphic-first polymorphic inline caches per
 * send site, small-integer and double fast paths, inline execution of
 * trivial methods (getters, setters, ^self, ^literal), and non-local return
 * by unwinding the frame array. Never recurses on the C stack.
 */
#ifndef SOM_INTERP_H
#define SOM_INTERP_H

#include "vm.h"

/* Activates `m` with receiver and arguments already pushed on the value
 * stack (vm->sp points past them) and runs until that activation returns.
 * Answers 0 and leaves the result in place of the receiver, or answers the
 * exit status after an error (reported on vm->err) or `system exit:`. */
int interp_call(SomVM *vm, SomMethod *m, int nargs);
/* A named address inside the interpreter (bytecode handlers and the send,
 * activation, primitive and error paths), for PC histograms (Cog's
 * VM_LABEL). */
typedef struct InterpLabel {
    const char *name;
    const void *addr;
} InterpLabel;

/* Fills out with up to max labels (unsorted); answers how many. */
int interp_labels(InterpLabel *out, int max);

/* Prints the SOM call stack, innermost first, to f. */
void interp_backtrace(SomVM *vm, FILE *f);

#endif
