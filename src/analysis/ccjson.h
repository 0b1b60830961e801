/* SPDX-License-Identifier: MIT */
/*
 * ccjson.h - reader of CC-Map JSON dumps (written by `som --prof-dump FILE`), so that every
 * sampo tool accepts them like binary profiles.  Schema: docs/profile-format.md, section
 * "CC-Map JSON dump".  Methods become SP_FRAME_VM_METHOD frames; the dump fills the CC-Map
 * section (methods, edges, context tree) and metadata; it has no samples.
 *
 * Errors are "LINE:COL: expected X, got Y".  Input is untrusted: nesting depth is limited,
 * all ids are range-checked, and the parser never reads past len.
 * Not thread-safe per profile; not async-signal-safe.
 */
#ifndef SAMPO_ANALYSIS_CCJSON_H
#define SAMPO_ANALYSIS_CCJSON_H

#include <stddef.h>

#include "profile.h"

/* True if data looks like JSON (first non-blank byte is '{'). */
int sp_ccjson_sniff(const char *data, size_t len);
/* Parses a dump into a new profile (*out, owned by the caller).  Returns 0 or -1 + err. */
int sp_ccjson_decode(const char *data, size_t len, SpProfile **out, char *err, size_t errlen);

#endif
