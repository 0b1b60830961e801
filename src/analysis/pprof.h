/*
 * pprof.h - exporter to pprof's profile.proto (gzipped), with our own protobuf encoder.
 *
 * Mapping of the model: one Function and one Location per frame (id = frame + 1); one pprof
 * Sample per profile sample (locations leaf first), values [samples, cpu ns] for sampled
 * profiles or [calls] (plus [time ns] = each context's own time when the exact tree has
 * times) for exact ones; labels "thread" and "vm_state".  Profiles without
 * samples (exact) export their context tree.  Deterministic output (gzip mtime = 0).
 * Not thread-safe per profile; not async-signal-safe.
 */
#ifndef SAMPO_ANALYSIS_PPROF_H
#define SAMPO_ANALYSIS_PPROF_H

#include "profile.h"
#include "profile_io.h"

/* Encodes the uncompressed profile.proto message into out. */
int sp_pprof_encode(SpProfile *p, SpBuf *out);
/* gzip-compresses in into out (RFC 1952, mtime 0).  Returns 0 or -1. */
int sp_gzip(const uint8_t *in, size_t len, SpBuf *out);
/* sp_pprof_encode + sp_gzip: what `go tool pprof` reads. */
int sp_export_pprof(SpProfile *p, SpBuf *out);

/* Protobuf primitives (exposed for tests). */
void pb_varint(SpBuf *b, uint64_t v);
void pb_field_varint(SpBuf *b, uint32_t field, uint64_t v);
void pb_field_bytes(SpBuf *b, uint32_t field, const void *data, size_t len);

#endif
