/* SPDX-License-Identifier: MIT */
/*
 * prims.h - how primitives are declared and bound.
 *
 * A primitive receives `args`: args[0] is the receiver, args[1..nargs] the
 * arguments, all on the VM's value stack (so they are GC roots). It stores its
 * answer in args[0] and returns PRIM_OK, or reports an error with
 * som_prim_error() (returns PRIM_ERROR: the interpreter prints a backtrace and
 * the message and stops with exit status 1), or asks for exit with
 * som_prim_exit(). A primitive that allocates more than one object must keep
 * earlier results reachable (store them in args[0] or use som_root_push()).
 *
 * Tables of PrimDef are bound to `primitive` methods when a class is loaded,
 * by class name, side and selector.
 */
#ifndef SOM_PRIMS_H
#define SOM_PRIMS_H

#include <stdbool.h>

#include "object.h"

enum { PRIM_OK = 0, PRIM_ERROR = 1, PRIM_EXIT = 2 };

typedef struct PrimDef {
    const char *cls; /* class name, e.g. "Integer" */
    bool meta;       /* class side? */
    const char *sel; /* selector */
    SomPrimFn fn;    /* NULL for PK_* behaviours handled by the interpreter */
    int kind;        /* PrimKind */
} PrimDef;

/* Records a VM-level error message (printf format); returns PRIM_ERROR. */
int som_prim_error(SomVM *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Requests process exit with the given status; returns PRIM_EXIT. */
int som_prim_exit(SomVM *vm, int status);

/* Tables from each primitive module, terminated by an entry with cls == NULL. */
extern const PrimDef
    prim_object_defs[]; /* Object, Class, Method, Primitive, Block*, System, Array */
extern const PrimDef prim_number_defs[]; /* Integer, Double */
extern const PrimDef prim_string_defs[]; /* String, Symbol */
extern const PrimDef prim_prof_defs[];   /* System: profiler control (prim_prof.c) */

/* Finds the definition for a primitive method, or NULL. */
const PrimDef *prim_lookup(const char *cls, bool meta, const char *sel);

#endif
