/* SPDX-License-Identifier: MIT */
/*
 * jitdump.h - perf's jitdump file (jit-PID.dump) for JIT code registered with libsampo.
 *
 * Owns: one dump file per process: the file header, one JIT_CODE_LOAD record per registered
 * range (name and a copy of the code bytes), the closing JIT_CODE_CLOSE record, and the one
 * PROT_READ|PROT_EXEC mapping of the file that `perf inject --jit` looks for in perf.data.
 * Format (perf's tools/perf/Documentation/jitdump-specification.txt, version 1), all fields
 * in host byte order, no padding between or inside records:
 *   header  u32 magic 0x4A695444, u32 version 1, u32 total_size 40, u32 elf_mach, u32 pad 0,
 *           u32 pid, u64 timestamp, u64 flags 0
 *   record  u32 id, u32 total_size (whole record), u64 timestamp, then the payload;
 *   LOAD    (id 0) u32 pid, u32 tid, u64 vma, u64 code_addr, u64 code_size, u64 code_index,
 *           name with its NUL, code_size code bytes;  CLOSE (id 3): no payload.
 * Timestamps are CLOCK_MONOTONIC nanoseconds: `perf record -k 1` (or -k mono) must use the
 * same clock, or `perf inject --jit` refuses the dump.
 * Invariants: records are written whole under the dump's mutex, in code_index order; after a
 * write error the dump stops growing (a torn record would hide every later one).
 * Thread-safe (internal mutex).  Not signal-safe (allocates, does file I/O).
 */
#ifndef PROF_JITDUMP_H
#define PROF_JITDUMP_H

#include <stddef.h>
#include <stdint.h>

#define PROF_JITDUMP_MAGIC 0x4A695444u
#define PROF_JITDUMP_VERSION 1u
#define PROF_JITDUMP_HEADER_SIZE 40u
#define PROF_JITDUMP_LOAD_FIXED 56u /* record header 16 + LOAD fields 40 */
#define PROF_JITDUMP_CODE_LOAD 0u
#define PROF_JITDUMP_CODE_CLOSE 3u
/* Larger ranges keep only their first PROF_JITDUMP_MAX_CODE bytes (and symbol size). */
#define PROF_JITDUMP_MAX_CODE (16u << 20)

typedef struct ProfJitdump ProfJitdump;

typedef struct ProfJitdumpStats {
    uint64_t loads;      /* JIT_CODE_LOAD records written */
    uint64_t truncated;  /* ranges cut to PROF_JITDUMP_MAX_CODE */
    uint64_t unreadable; /* ranges whose bytes could not be read (written as zeros) */
    uint64_t errors;     /* failed writes (the dump stopped growing at the first) */
} ProfJitdumpStats;

/* Creates dir/jit-PID.dump (truncating an old one), writes the header and maps the file
 * once.  NULL on failure, with a one-line reason in err (may be NULL). */
ProfJitdump *prof_jitdump_open(const char *dir, char *err, size_t errlen);
/* Appends a JIT_CODE_LOAD record for [start, start+size) named name; the code bytes are
 * copied from that range (pages that cannot be read are written as zeros, so a bad range
 * never faults).  0 or -1 (write failed, or the dump is broken / closed). */
int prof_jitdump_load(ProfJitdump *j, uint64_t start, uint64_t size, const char *name);
/* Appends JIT_CODE_CLOSE, unmaps, closes and frees.  0 or -1 if any write failed. */
int prof_jitdump_close(ProfJitdump *j);
/* Releases a dump inherited across fork() without writing to it (it is the parent's). */
void prof_jitdump_drop(ProfJitdump *j);
/* Process that created the dump (a forked child must open its own). */
int prof_jitdump_pid(const ProfJitdump *j);
/* Path of the dump file (borrowed until close/drop). */
const char *prof_jitdump_path(const ProfJitdump *j);
ProfJitdumpStats prof_jitdump_stats(ProfJitdump *j);
/* Picks and creates the directory from the environment: SAMPO_JITDUMP_DIR as is, otherwise a
 * fresh BASE/.debug/jit/sampo-jit-YYYYMMDD.XXXXXX with BASE = $JITDUMPDIR, $HOME or ".".
 * 0, or -1 with a reason in err. */
int prof_jitdump_default_dir(char *out, size_t outlen, char *err, size_t errlen);

#endif
