/* SPDX-License-Identifier: MIT */
/*
 * export.h - text exporters of a profile: collapsed stacks (flamegraph.pl / speedscope /
 * Pyroscope input) and speedscope JSON, plus the frame-labelling helpers every output uses.
 *
 * All exporters append to an SpBuf and are deterministic (byte-exact tests rely on it).
 * Not thread-safe per profile; not async-signal-safe.
 */
#ifndef SAMPO_ANALYSIS_EXPORT_H
#define SAMPO_ANALYSIS_EXPORT_H

#include <stddef.h>

#include "pprof.h" /* SpLineFn */
#include "profile.h"
#include "profile_io.h"

/* Display name of a frame: its name (borrowed from p's string table, any length), or
 * "0x<addr>" (with "[module]") written into buf (always NUL-terminated) when unnamed. */
const char *sp_frame_label(const SpProfile *p, uint32_t frame, char *buf, size_t len);

/* Collapsed stacks: one line per distinct calling context with non-zero self weight,
 * "root;...;leaf <weight>\n", lines sorted bytewise; contexts with the same name path (e.g.
 * differing only in call sites) are merged.  Profiles with samples: one path per sample
 * stack, weighted by sp_sample_value() (nanoseconds for sampled profiles: the interval in
 * force at each sample, like pprof's cpu/wall value).  Without samples: the CC-Map context
 * tree's self weights (computed when absent, so p may be modified).  ';', newline, CR and
 * '%' in names are written %3B, %0A, %0D, %25. */
int sp_export_collapsed(SpProfile *p, SpBuf *out);
/* The same with source lines: a frame at a known line is written "name:line" (VM frames: the
 * line of the sampled bytecode or call site the profile recorded; a native or JIT leaf: the
 * line of the sampled PC from fn, which may be NULL).  Callers keep bare names: the format
 * keeps only the leaf's PC. */
int sp_export_collapsed_lines(SpProfile *p, SpBuf *out, SpLineFn fn, void *ctx);

/* Speedscope JSON ("sampled" profiles, one per thread; for a profile without samples, one
 * profile built from the context tree).  Returns 0 or -1 on ENOMEM. */
int sp_export_speedscope(SpProfile *p, SpBuf *out);
/* The same with the file and line of native and JIT functions (the position of their entry)
 * from fn; VM methods keep the file and line the profile recorded. */
int sp_export_speedscope_lines(SpProfile *p, SpBuf *out, SpLineFn fn, void *ctx);

/* Length of the longest prefix of s of at most max bytes that does not split a UTF-8
 * character. */
size_t sp_utf8_prefix(const char *s, size_t max);

/* Appends s as a JSON string literal (with quotes). */
void sp_json_string(SpBuf *out, const char *s);
/* Appends s with XML special characters escaped. */
void sp_xml_text(SpBuf *out, const char *s);

#endif
