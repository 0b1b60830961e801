/* SPDX-License-Identifier: MIT */
/*
 * pprof.h - exporter to pprof's profile.proto (gzipped), with our own protobuf encoder.
 *
 * Mapping of the model (docs/profile-format.md, "pprof"): one Function per frame (id =
 * frame + 1) plus one per inlined function; one Location per frame at its entry (id = frame
 * + 1) plus one per sampled leaf PC; one pprof Sample per profile sample (locations leaf
 * first), values by sp_weight_unit(); labels thread, tid, pid, vm_state.  Profiles without
 * samples (exact) export their context tree.  Deterministic output (gzip mtime = 0).
 * Not thread-safe per profile; not async-signal-safe.
 */
#ifndef SAMPO_ANALYSIS_PPROF_H
#define SAMPO_ANALYSIS_PPROF_H

#include "profile.h"
#include "profile_io.h"

/* One source position of a PC: innermost inlined function first, the function the PC's
 * symbol belongs to last.  Strings are borrowed until the next call of the resolver. */
typedef struct {
    const char *func; /* function name (NULL: the frame's own name) */
    const char *file; /* source file, NULL if unknown */
    uint32_t line;    /* 1-based, 0 if unknown */
} SpSrcLine;

/* Resolves a sampled pc inside mapping m of p to at most max positions (see SpSrcLine);
 * returns how many (0 = unknown).  Supplied by the caller (the sampo tool reads DWARF with
 * libdw), so this library needs no DWARF reader. */
typedef uint32_t (*SpLineFn)(void *ctx, const SpProfile *p, uint32_t m, uint64_t pc, SpSrcLine *out,
                             uint32_t max);

/* Encodes the uncompressed profile.proto message into out. */
int sp_pprof_encode(SpProfile *p, SpBuf *out);
/* The same with per-PC source lines (inlined functions expanded) from fn (may be NULL). */
int sp_pprof_encode_lines(SpProfile *p, SpBuf *out, SpLineFn fn, void *ctx);
/* gzip-compresses in into out (RFC 1952, mtime 0).  Returns 0 or -1. */
int sp_gzip(const uint8_t *in, size_t len, SpBuf *out);
/* sp_pprof_encode + sp_gzip: what `go tool pprof` reads. */
int sp_export_pprof(SpProfile *p, SpBuf *out);
int sp_export_pprof_lines(SpProfile *p, SpBuf *out, SpLineFn fn, void *ctx);

/* Protobuf primitives (exposed for tests). */
void pb_varint(SpBuf *b, uint64_t v);
void pb_field_varint(SpBuf *b, uint32_t field, uint64_t v);
void pb_field_bytes(SpBuf *b, uint32_t field, const void *data, size_t len);

#endif
