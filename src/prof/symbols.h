/* SPDX-License-Identifier: MIT */
/*
 * symbols.h - address -> function name for every loaded ELF object and registered JIT range.
 *
 * Owns: ProfSymbols (objects found with dl_iterate_phdr, the vDSO included; each object's
 * symbol table is loaded at the first lookup that lands in it, from the sources and in the
 * order debuginfo.h lists: .symtab, .gnu_debugdata, build-id and .gnu_debuglink debug files,
 * .dynsym, plus "symbol@plt" entries), JIT ranges, the /tmp/perf-PID.map writer and, with
 * SAMPO_JITDUMP=1, perf's jitdump (jitdump.h; JIT_CODE_CLOSE is written by
 * prof_symbols_free).  Objects loaded later (dlopen) are picked up by prof_symbols_lookup()
 * when dl_iterate_phdr's add counter moved.  Code no symbol covers is named by object and
 * link-time address, "[unknown] libc.so.6+0x27d0a" (prof_symbols_unknown_name), which is the
 * same in every run whatever the load address; the address is the function's start when
 * .eh_frame knows the function, so one unnamed function is one frame.
 * Not signal-safe (allocates, opens files): symbolization happens on the manager thread.
 * Thread-safe through an internal mutex (JIT registration may come from any thread).
 */
#ifndef PROF_SYMBOLS_H
#define PROF_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct ProfSymbols ProfSymbols;

typedef struct ProfSym {
    const char *name;   /* borrowed until prof_symbols_free */
    const char *module; /* object path, "[jit]" for JIT ranges */
    uint64_t start, size;
    int jit;
    int plt;        /* a PLT entry ("symbol@plt"): a jump to some other function */
    uint64_t vaddr; /* start as the object's link-time address (0 outside objects) */
} ProfSym;

typedef struct ProfObject {
    uint64_t lo, hi, offset; /* executable segment, file offset of lo */
    const char *path;
    const char *build_id; /* hex, NULL if the object has no NT_GNU_BUILD_ID note */
} ProfObject;

ProfSymbols *prof_symbols_new(void);
void prof_symbols_free(ProfSymbols *s);
/* Finds the function containing addr.  Returns 1 if a symbol was found; 0 fills the module
 * (if any) and, when the object's unwind table (.eh_frame) has a function there, its
 * start and size, else start = addr and size = 0. */
int prof_symbols_lookup(ProfSymbols *s, uint64_t addr, ProfSym *out);
/* Stable name of an address prof_symbols_lookup() returned 0 for (s is what it filled in):
 * "[unknown] OBJECT+0xVADDR" with the object's file name and the link-time address of the
 * unnamed function (of the address itself without an unwind entry); "[unknown]" outside
 * any object. */
const char *prof_symbols_unknown_name(const ProfSym *s, char *buf, size_t len);
/* Symbol sources of the objects loaded so far ("libc.so.6:build-id python3.11:dynsym ..."),
 * and how many separate debug files were refused (wrong CRC or build-id) with the last
 * reason in why ("" if none).  Returns the number refused. */
uint32_t prof_symbols_debuginfo(ProfSymbols *s, char *sources, size_t slen, char *why, size_t wlen);
/* Whether addr lies in a known executable object or JIT range (no rescan). */
int prof_symbols_is_code(ProfSymbols *s, uint64_t addr);
/* JIT ranges; perf_map: append to /tmp/perf-PID.map.  With SAMPO_JITDUMP=1 (read at the
 * first range of each process) each range also becomes a JIT_CODE_LOAD record, code bytes
 * copied from [start, start+size); a dump that cannot be created or written is reported once
 * on stderr and counted, and registration still succeeds. */
int prof_symbols_jit_add(ProfSymbols *s, uint64_t start, uint64_t size, const char *name,
                         int perf_map);
int prof_symbols_jit_remove(ProfSymbols *s, uint64_t start);
/* Path of the jitdump being written (borrowed until prof_symbols_free), NULL if none;
 * *failures (may be NULL): dumps not created plus writes that failed. */
const char *prof_symbols_jitdump(ProfSymbols *s, uint64_t *failures);
/* Executable mappings known so far (for the profile's mapping table). */
uint32_t prof_symbols_objects(ProfSymbols *s, const ProfObject **out);

#endif
