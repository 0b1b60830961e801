/* SPDX-License-Identifier: MIT */
/*
 * class.h - class objects: bootstrap of the core classes, loading classes
 * from the class path or the built-in core library, method lookup.
 * Runs on the VM thread only.
 */
#ifndef SOM_CLASS_H
#define SOM_CLASS_H

#include <stdbool.h>

#include "vm.h"

/* Creates the core class shells, loads their sources and the singletons.
 * Answers false with a message in errbuf. */
bool class_bootstrap(SomVM *vm, char *errbuf, size_t errlen);
/* Name of a method for backtraces: "Class>>selector" (blocks: "Class>>selector [block]"). */
void class_method_name(const SomMethod *m, char *buf, size_t n);
/* Source line of bytecode index bci in m (0 if unknown). */
unsigned class_method_line(const SomMethod *m, uint32_t bci);
/* The built-in core library source of class `name`, or NULL. */
const char *class_builtin_source(const char *name);

#endif
