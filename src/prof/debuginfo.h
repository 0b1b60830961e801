/* SPDX-License-Identifier: MIT */
/*
 * debuginfo.h - one ELF object's function symbols, found where perf, gdb and elfutils look.
 *
 * Owns: ProfSymTab, a sorted table of function symbols of one object (link-time addresses,
 * before the load bias) with PLT entries named "symbol@plt", and the record of where the
 * symbols came from.  prof_symtab_load() looks, in this order, and takes the first source
 * that has function symbols:
 *   1. the object's own .symtab;
 *   2. .gnu_debugdata (MiniDebugInfo: an xz-compressed ELF whose .symtab holds what .dynsym
 *      lacks), merged with the object's .dynsym;
 *   3. ROOT/.build-id/xx/rest.debug, named by the object's NT_GNU_BUILD_ID note (refused when
 *      its own build-id differs);
 *   4. the file named by .gnu_debuglink, in the object's directory, its .debug/ and ROOT
 *      followed by the object's directory (refused when its CRC-32 differs from the link's);
 *   5. the object's .dynsym.
 * The table also keeps the function ranges of the object's .eh_frame, so that code no symbol
 * names can still be grouped by function (prof_symtab_fde).
 * ROOT is /usr/lib/debug unless the caller passes another (tests).  Aliases at one address
 * are resolved as perf does (sized over sizeless, strong over weak, global over local, fewer
 * leading underscores, then the longer name), so both tools print the same name.
 * Not signal-safe (allocates, opens files); not thread-safe (one caller per table).
 */
#ifndef PROF_DEBUGINFO_H
#define PROF_DEBUGINFO_H

#include <stddef.h>
#include <stdint.h>

typedef enum ProfSymSource {
    PROF_SYMSRC_NONE,      /* no function symbols anywhere (PLT entries only, if any) */
    PROF_SYMSRC_SYMTAB,    /* the object's own .symtab */
    PROF_SYMSRC_DEBUGDATA, /* .gnu_debugdata (MiniDebugInfo) + .dynsym */
    PROF_SYMSRC_BUILD_ID,  /* ROOT/.build-id/xx/rest.debug */
    PROF_SYMSRC_DEBUGLINK, /* the .gnu_debuglink file */
    PROF_SYMSRC_DYNSYM,    /* the object's .dynsym */
} ProfSymSource;

typedef struct ProfSymEnt {
    uint64_t addr, size; /* link-time address; sizeless symbols end at the next one */
    uint32_t name;       /* offset in the table's pool */
    uint32_t rank;       /* alias preference while loading; 1 for PLT entries afterwards */
} ProfSymEnt;

typedef struct ProfSymTab {
    ProfSymEnt *syms; /* sorted by addr, one per address */
    uint32_t n, cap;
    char *pool;
    size_t pool_len, pool_cap;
    ProfSymSource source;
    char *debug_file;  /* the separate file the symbols came from (owned), NULL if none */
    char build_id[41]; /* hex, "" if the object has none */
    uint32_t nplt;     /* PLT entries named */
    uint32_t refused;  /* separate debug files found but refused (CRC or build-id mismatch) */
    char note[512];    /* why the last one was refused, "" if none */
    uint64_t *fde;     /* [start, end) pairs of the .eh_frame FDEs, sorted by start */
    uint32_t nfde;
    int fde_state; /* 0: not read yet (read at the first prof_symtab_fde) */
    char *path;    /* the object (owned), for reading the FDEs later */
} ProfSymTab;

/* Fills t (zeroed first) for the ELF file at path; debug_root NULL = "/usr/lib/debug".
 * Returns 0 (also when no symbols were found: t->source says so), -1 if path is not a
 * readable ELF file or memory ran out. */
int prof_symtab_load(ProfSymTab *t, const char *path, const char *debug_root);
/* The same for an ELF image in memory (the vDSO): own .symtab, then .dynsym. */
int prof_symtab_load_image(ProfSymTab *t, const void *image, size_t size);
void prof_symtab_fini(ProfSymTab *t);
/* The symbol containing the link-time address vaddr, or NULL. */
const ProfSymEnt *prof_symtab_find(const ProfSymTab *t, uint64_t vaddr);
static inline const char *prof_symtab_name(const ProfSymTab *t, const ProfSymEnt *e) {
    return t->pool + e->name;
}
/* The function around vaddr as the unwind table (.eh_frame) knows it, for code no symbol
 * names: 1 with [*start, *end), else 0.  Reads .eh_frame at the first call. */
int prof_symtab_fde(ProfSymTab *t, uint64_t vaddr, uint64_t *start, uint64_t *end);
const char *prof_symsrc_name(ProfSymSource s);

/* CRC-32 as .gnu_debuglink uses it (reflected, polynomial 0xedb88320; crc = 0 to start). */
uint32_t prof_crc32(uint32_t crc, const void *buf, size_t len);
/* CRC-32 of a whole file; -1 if it cannot be read. */
int prof_crc32_file(const char *path, uint32_t *crc);

#endif
