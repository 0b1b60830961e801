/* SPDX-License-Identifier: MIT */
/*
 * vmsrc.h - the VM methods' source files and line tables (sampo_vm_method_source), kept for
 * the whole process like the method names: a profile written later still needs them.
 *
 * Locking: every function runs under prof_g.data (the API entry takes it; the manager holds
 * it while it converts records).  Not signal-safe (allocates).
 */
#ifndef PROF_VMSRC_H
#define PROF_VMSRC_H

#include <stdint.h>

#include "sampo.h"

typedef struct ProfVmSrc {
    char *file;          /* owned, NULL = unknown */
    uint32_t first_line; /* line of the definition, 0 = unknown */
    uint32_t n;
    SampoLine *lines; /* owned, ascending pos */
} ProfVmSrc;

/* Records (or replaces) method's source.  SAMPO_OK, SAMPO_EINVAL or SAMPO_ENOMEM. */
int prof_vmsrc_set(uint64_t method, const char *file, uint32_t first_line, const SampoLine *lines,
                   uint32_t n);
/* Borrowed source of method (valid until the next prof_vmsrc_set), or NULL. */
const ProfVmSrc *prof_vmsrc_get(uint64_t method);
/* Line of position pos: the last entry at or before pos; 0 when unknown. */
uint32_t prof_vmsrc_line(const ProfVmSrc *s, uint64_t pos);

#endif
