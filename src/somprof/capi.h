/* SPDX-License-Identifier: MIT */
/*
 * capi.h - what the compiler-controller queries (capi.c, declared in somprof.h) need from
 * the session (somprof.c): the mode, a VM's own calling-context tree (cooperative and exact
 * modes) and method names.  Internal to the somprof library.
 *
 * All on the VM's own thread, between somprof_attach and somprof_detach.
 */
#ifndef SOMPROF_CAPI_H
#define SOMPROF_CAPI_H

#include "cct.h"
#include "somprof.h"

/* The session's mode, SOMPROF_OFF when no session runs. */
SomProfMode spr_session_mode(void);
/* The VM's tree in cooperative and exact modes; NULL in async mode or when not attached. */
const SpcTree *spr_vm_tree(SomVM *vm);
/* The OS thread id of the VM's thread (async mode: its own CC-Map); 0 when not attached. */
uint64_t spr_vm_tid(SomVM *vm);
/* "Class>>selector" of m (interned, lives until exit); NULL when not attached. */
const char *spr_vm_name(SomVM *vm, const SomMethod *m);
/* Whether id is a SOM method the VM's samples named (async CC-Maps also hold native frames,
 * whose ids are code addresses); false when not attached.  Never dereferences id. */
bool spr_vm_knows(SomVM *vm, const void *id);

#endif
