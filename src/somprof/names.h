/* SPDX-License-Identifier: MIT */
/*
 * names.h - names of SOM methods for profiles ("Class>>selector", blocks
 * "Class>>selector [block L12]" with the block's line), interned process-wide so that
 * equal names are equal pointers, and a per-VM method -> name table.
 *
 * The per-VM table has one reader that may run in a signal handler on the VM's thread
 * (spn_has: lock-free, no allocation); spn_name and spn_fini run on the VM thread.  A grown
 * table replaces the old one with one atomic pointer store; old tables are freed at fini.
 */
#ifndef SOMPROF_NAMES_H
#define SOMPROF_NAMES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "profile.h"
#include "vm.h"

typedef struct SpnEntry {
    const SomMethod *method;
    const char *name; /* interned */
} SpnEntry;

typedef struct SpnTable {
    SpnEntry *e;
    uint32_t mask, count;
    struct SpnTable *retired; /* older tables, freed at fini */
} SpnTable;

typedef struct SpnNames {
    SpnTable *_Atomic cur;
    int register_with_sampo; /* also call sampo_vm_name_method(method pointer, name) */
} SpnNames;

int spn_init(SpnNames *n, int register_with_sampo);
void spn_fini(SpnNames *n);
/* True if m already has a name.  [signal-safe on the VM thread] */
bool spn_has(const SpnNames *n, const SomMethod *m);
/* The interned name of m (computed and registered on first use); "?" on ENOMEM. */
const char *spn_name(SpnNames *n, const SomMethod *m);
/* Interns s process-wide (thread-safe); NULL on ENOMEM. */
const char *spn_intern(const char *s);
/* Name of m without interning, into buf. */
void spn_format(const SomMethod *m, char *buf, size_t len);
/* The VM method frame of p named name, with the source file and definition line of the
 * method spn_name gave that name (none if it never did).  SP_NONE on ENOMEM. */
uint32_t spn_frame(SpProfile *p, const char *name);

#endif
