/* SPDX-License-Identifier: MIT */
/*
 * srcline.c - source lines of sampled PCs from the objects' DWARF (libdw), for the pprof
 * export: what perf's srcline and pprof's local symbolization do, at export time.
 *
 * Each mapping of the profile is opened once (offline, libdwfl) if its file exists and its
 * GNU build ID matches the one the profile recorded (a rebuilt binary would give wrong
 * lines); separate debug files are found the standard way (build-id and debuglink).  A PC
 * is turned into the object's link-time address through the mapping's file offset and the
 * object's PT_LOAD headers, then into its line and the chain of inlined calls around it
 * (dwarf_getscopes: innermost inlined subroutine first; each one's DW_AT_call_file/line is
 * the position in the function it was inlined into).
 */
#include "srcline.h"

#ifndef SAMPO_HAVE_LIBDW
#include <stdlib.h>

struct SampoSrcLines {
    int unused;
};

SampoSrcLines *sampo_srclines_new(const SpProfile *p) {
    (void)p;
    return calloc(1, sizeof(SampoSrcLines));
}

void sampo_srclines_free(SampoSrcLines *s) {
    free(s);
}

uint32_t sampo_srcline(void *ctx, const SpProfile *p, uint32_t m, uint64_t pc, SpSrcLine *out,
                       uint32_t max) {
    (void)ctx, (void)p, (void)m, (void)pc, (void)out, (void)max;
    return 0;
}
#else
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    int state; /* 0 not tried, 1 open, -1 unusable */
    Dwfl *dwfl;
    Dwfl_Module *mod;
    GElf_Addr bias; /* where libdwfl placed the object */
    Elf *elf;
} SlMap;

struct SampoSrcLines {
    SlMap *maps;
    uint32_t nmaps;
};

static const Dwfl_Callbacks sl_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

SampoSrcLines *sampo_srclines_new(const SpProfile *p) {
    SampoSrcLines *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->maps = calloc(p->nmappings + 1, sizeof *s->maps);
    if (!s->maps) {
        free(s);
        return NULL;
    }
    s->nmaps = p->nmappings;
    return s;
}

void sampo_srclines_free(SampoSrcLines *s) {
    if (!s) return;
    for (uint32_t i = 0; i < s->nmaps; i++)
        if (s->maps[i].dwfl) dwfl_end(s->maps[i].dwfl);
    free(s->maps);
    free(s);
}

/* Does the object's build ID equal the recorded hex string (empty = not recorded)? */
static int sl_build_id_ok(Dwfl_Module *mod, const char *want) {
    if (!*want) return 1;
    const unsigned char *bits;
    GElf_Addr vaddr;
    int n = dwfl_module_build_id(mod, &bits, &vaddr);
    if (n <= 0 || strlen(want) != (size_t)n * 2) return 0;
    for (int i = 0; i < n; i++) {
        char hx[3];
        snprintf(hx, sizeof hx, "%02x", bits[i]);
        if (strncmp(want + 2 * i, hx, 2) != 0) return 0;
    }
    return 1;
}

static SlMap *sl_open(SampoSrcLines *s, const SpProfile *p, uint32_t m) {
    SlMap *x = &s->maps[m];
    if (x->state) return x->state > 0 ? x : NULL;
    x->state = -1;
    const char *path = sp_str(p, p->mappings[m].path);
    if (path[0] != '/' || access(path, R_OK) != 0) return NULL;
    x->dwfl = dwfl_begin(&sl_callbacks);
    if (!x->dwfl) return NULL;
    x->mod = dwfl_report_offline(x->dwfl, path, path, -1);
    dwfl_report_end(x->dwfl, NULL, NULL);
    if (!x->mod || !sl_build_id_ok(x->mod, sp_str(p, p->mappings[m].build_id))) return NULL;
    x->elf = dwfl_module_getelf(x->mod, &x->bias);
    if (!x->elf) return NULL;
    x->state = 1;
    return x;
}

/* The object's link-time address of a runtime pc in mapping m, through the file offset. */
static int sl_vaddr(const SlMap *x, const SpMapping *m, uint64_t pc, GElf_Addr *out) {
    uint64_t off = pc - m->start + m->offset;
    size_t n;
    if (elf_getphdrnum(x->elf, &n) != 0) return -1;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(x->elf, (int)i, &ph) || ph.p_type != PT_LOAD) continue;
        if (off >= ph.p_offset && off < ph.p_offset + ph.p_filesz) {
            *out = ph.p_vaddr + (off - ph.p_offset);
            return 0;
        }
    }
    return -1;
}

static const char *sl_die_name(Dwarf_Die *d) {
    Dwarf_Attribute a;
    const char *n = NULL;
    if (dwarf_attr_integrate(d, DW_AT_name, &a)) n = dwarf_formstring(&a);
    return n;
}

uint32_t sampo_srcline(void *ctx, const SpProfile *p, uint32_t m, uint64_t pc, SpSrcLine *out,
                       uint32_t max) {
    SampoSrcLines *s = ctx;
    if (!s || m >= s->nmaps || max == 0) return 0;
    const SlMap *x = sl_open(s, p, m);
    GElf_Addr va;
    if (!x || pc < p->mappings[m].start || sl_vaddr(x, &p->mappings[m], pc, &va)) return 0;
    Dwarf_Addr addr = va + x->bias;
    Dwfl_Line *ln = dwfl_module_getsrc(x->mod, addr);
    if (!ln) return 0;
    int lineno = 0;
    const char *file = dwfl_lineinfo(ln, NULL, &lineno, NULL, NULL, NULL);
    out[0] = (SpSrcLine){.func = NULL, .file = file, .line = lineno > 0 ? (uint32_t)lineno : 0};
    uint32_t n = 1;
    Dwarf_Addr cubias;
    Dwarf_Die *cu = dwfl_module_addrdie(x->mod, addr, &cubias);
    Dwarf_Die *scopes = NULL;
    int ns = cu ? dwarf_getscopes(cu, addr - cubias, &scopes) : 0;
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    if (ns > 0 && dwarf_getsrcfiles(cu, &files, &nfiles) != 0) files = NULL;
    for (int i = 0; i < ns && n < max; i++) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag == DW_TAG_subprogram) break; /* the frame's own function: out[n-1] */
        if (tag != DW_TAG_inlined_subroutine) continue;
        /* out[n-1] is inside this inlined function; its call site is in the next one out */
        out[n - 1].func = sl_die_name(&scopes[i]);
        Dwarf_Attribute a;
        Dwarf_Word cf = 0, cl = 0;
        if (dwarf_attr(&scopes[i], DW_AT_call_file, &a)) dwarf_formudata(&a, &cf);
        if (dwarf_attr(&scopes[i], DW_AT_call_line, &a)) dwarf_formudata(&a, &cl);
        const char *cfile = files && cf < nfiles ? dwarf_filesrc(files, cf, NULL, NULL) : NULL;
        out[n++] = (SpSrcLine){.func = NULL, .file = cfile, .line = (uint32_t)cl};
    }
    free(scopes);
    return n;
}
#endif
