/*
 * symbols.h - address -> function name for every loaded ELF object and registered JIT range.
 *
 * Owns: ProfSymbols (objects found with dl_iterate_phdr, their .symtab or .dynsym read with
 * libelf, sorted), JIT ranges, the /tmp/perf-PID.map writer and, with SAMPO_JITDUMP=1, perf's
 * jitdump (jitdump.h; JIT_CODE_CLOSE is written by prof_symbols_free).  Objects loaded later
 * (dlopen) are picked up by prof_symbols_lookup() when dl_iterate_phdr's add counter moved.
 * Not signal-safe (allocates, opens files): symbolization happens on the manager thread.
 * Thread-safe through an internal mutex (JIT registration may come from any thread).
 */
#ifndef PROF_SYMBOLS_H
#define PROF_SYMBOLS_H

#include <stdint.h>

typedef struct ProfSymbols ProfSymbols;

typedef struct ProfSym {
    const char *name;   /* borrowed until prof_symbols_free */
    const char *module; /* object path, "[jit]" for JIT ranges */
    uint64_t start, size;
    int jit;
} ProfSym;

typedef struct ProfObject {
    uint64_t lo, hi, offset; /* executable segment, file offset of lo */
    const char *path;
} ProfObject;

ProfSymbols *prof_symbols_new(void);
void prof_symbols_free(ProfSymbols *s);
/* Finds the function containing addr.  Returns 1 if a symbol was found; 0 fills only the
 * module (if any) with start = addr. */
int prof_symbols_lookup(ProfSymbols *s, uint64_t addr, ProfSym *out);
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
