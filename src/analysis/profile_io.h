/* SPDX-License-Identifier: MIT */
/*
 * profile_io.h - the versioned binary on-disk profile format (spec: docs/profile-format.md).
 *
 * Writing goes through an in-memory buffer, so the encoding is byte-exact and testable;
 * reading parses an in-memory image and rejects malformed input with a message of the form
 * "offset 0xN (section TAG): expected X, got Y" - it never crashes and never trusts a length
 * or count beyond the bytes actually present.
 *
 * Not thread-safe per profile; not async-signal-safe (allocates, does I/O).
 */
#ifndef SAMPO_ANALYSIS_PROFILE_IO_H
#define SAMPO_ANALYSIS_PROFILE_IO_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

#define SP_FORMAT_MAGIC "SAMPOPRF"
#define SP_FORMAT_MAJOR 1
#define SP_FORMAT_MINOR 1
#define SP_ERR_MAX 256 /* recommended size of error buffers */

/* Growable byte buffer (owned data). */
typedef struct {
    uint8_t *data;
    size_t len, cap;
    int oom; /* set once an append failed; further appends are ignored */
} SpBuf;

void sp_buf_init(SpBuf *b);
void sp_buf_fini(SpBuf *b);
void sp_buf_put(SpBuf *b, const void *data, size_t len);
void sp_buf_u8(SpBuf *b, uint8_t v);
void sp_buf_le16(SpBuf *b, uint16_t v);
void sp_buf_le32(SpBuf *b, uint32_t v);
void sp_buf_le64(SpBuf *b, uint64_t v);
void sp_buf_uleb(SpBuf *b, uint64_t v);
void sp_buf_sleb(SpBuf *b, int64_t v); /* zigzag + uleb */
void sp_buf_printf(SpBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Serializes p into out (appended).  Returns 0, or -1 on ENOMEM. */
int sp_profile_encode(const SpProfile *p, SpBuf *out);
/* Writes p to path with sp_write_file().  On failure returns -1 and puts a message in err
 * (may be NULL). */
int sp_profile_write(const SpProfile *p, const char *path, char *err, size_t errlen);
/* The one safe output routine of Sampo (profiles, dumps, caches): follows symlinks to their
 * target, writes FIFOs and devices in place, replaces a regular file only through a
 * temporary file in the same directory and rename, and treats every short write or failed
 * close (ENOSPC) as an error.  Returns 0, or -1 with "PATH: what: strerror" in err (may be
 * NULL).  Normal context only. */
int sp_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen);

/* Parses an image.  On success *out is a new profile (owned by the caller).  On failure
 * returns -1, *out = NULL and err holds "offset 0xN ...: expected X, got Y". */
int sp_profile_decode(const uint8_t *data, size_t len, SpProfile **out, char *err, size_t errlen);
/* Reads and decodes path (a binary profile, or a CC-Map JSON dump - see ccjson.h); errors
 * are prefixed with the path. */
int sp_profile_read(const char *path, SpProfile **out, char *err, size_t errlen);
/* Reads a whole file into a malloc'ed buffer. */
int sp_read_file(const char *path, uint8_t **data, size_t *len, char *err, size_t errlen);

#endif
