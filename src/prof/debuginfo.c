/* SPDX-License-Identifier: MIT */
/*
 * debuginfo.c - function symbols of one ELF object and where to find them (see debuginfo.h).
 */
#include "debuginfo.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <lzma.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_DEBUG_ROOT "/usr/lib/debug"

/* ---- CRC-32 ------------------------------------------------------------------------------ */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

uint32_t prof_crc32(uint32_t crc, const void *buf, size_t len) {
    pthread_once(&crc_once, crc_init);
    const unsigned char *p = buf;
    crc = ~crc;
    for (size_t i = 0; i < len; i++)
        crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

int prof_crc32_file(const char *path, uint32_t *crc) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    unsigned char buf[65536];
    uint32_t c = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        c = prof_crc32(c, buf, (size_t)n);
    close(fd);
    if (n < 0) return -1;
    *crc = c;
    return 0;
}

/* ---- the table ---------------------------------------------------------------------------- */

/* Alias preference, perf's order: sized, not weak, global, fewer leading underscores.
 * Never 0: rank 0 marks PLT entries until st_finish. */
static uint32_t st_rank(const GElf_Sym *sym, const char *name) {
    int bind = GELF_ST_BIND(sym->st_info);
    uint32_t us = 0;
    while (name[us] == '_' && us < 15)
        us++;
    return 1u << 9 | (sym->st_size ? 1u << 8 : 0) | (bind != STB_WEAK ? 1u << 7 : 0) |
           (bind == STB_GLOBAL ? 1u << 6 : 0) | (15 - us);
}

static int st_add(ProfSymTab *t, uint64_t addr, uint64_t size, const char *name, uint32_t rank) {
    size_t len = strlen(name) + 1;
    if (t->n == t->cap) {
        uint32_t nc = t->cap ? t->cap * 2 : 256;
        ProfSymEnt *ns = realloc(t->syms, nc * sizeof *ns);
        if (!ns) return -1;
        t->syms = ns, t->cap = nc;
    }
    if (t->pool_len + len > t->pool_cap) {
        size_t nc = t->pool_cap ? t->pool_cap * 2 : 4096;
        while (nc < t->pool_len + len)
            nc *= 2;
        char *np = realloc(t->pool, nc);
        if (!np) return -1;
        t->pool = np, t->pool_cap = nc;
    }
    memcpy(t->pool + t->pool_len, name, len);
    t->syms[t->n++] = (ProfSymEnt){addr, size, (uint32_t)t->pool_len, rank};
    t->pool_len += len;
    return 0;
}

/* Appends the function symbols of every section of type want; returns how many, -1 on OOM. */
static long st_read(ProfSymTab *t, Elf *e, GElf_Word want) {
    long added = 0;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != want || !sh.sh_entsize) continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d) continue;
        size_t n = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < n; i++) {
            GElf_Sym sym;
            if (!gelf_getsym(d, (int)i, &sym)) continue;
            int type = GELF_ST_TYPE(sym.st_info);
            if ((type != STT_FUNC && type != STT_GNU_IFUNC) || !sym.st_value ||
                sym.st_shndx == SHN_UNDEF)
                continue;
            const char *nm = elf_strptr(e, sh.sh_link, sym.st_name);
            if (!nm || !*nm) continue;
            if (st_add(t, sym.st_value, sym.st_size, nm, st_rank(&sym, nm))) return -1;
            added++;
        }
    }
    return added;
}

static int st_cmp(const void *a, const void *b) {
    const ProfSymEnt *x = a, *y = b;
    if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
    if (x->rank != y->rank) return x->rank > y->rank ? -1 : 1;
    return 0;
}

/* Sorts, keeps the preferred alias per address (the longer name among equals), sizes the
 * sizeless. */
static void st_finish(ProfSymTab *t) {
    if (!t->n) return; /* qsort(NULL, 0) is undefined */
    qsort(t->syms, t->n, sizeof *t->syms, st_cmp);
    uint32_t w = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        ProfSymEnt *e = &t->syms[i];
        if (w && t->syms[w - 1].addr == e->addr) {
            ProfSymEnt *k = &t->syms[w - 1];
            if (k->rank == e->rank && strlen(t->pool + e->name) > strlen(t->pool + k->name))
                *k = *e;
            continue;
        }
        t->syms[w++] = *e;
    }
    t->n = w;
    for (uint32_t i = 0; i + 1 < t->n; i++)
        if (!t->syms[i].size) t->syms[i].size = t->syms[i + 1].addr - t->syms[i].addr;
    for (uint32_t i = 0; i < t->n; i++)
        t->syms[i].rank = t->syms[i].rank == 0 ? 1 : 0; /* rank 0 marked PLT entries */
}

const ProfSymEnt *prof_symtab_find(const ProfSymTab *t, uint64_t vaddr) {
    if (!t->n || vaddr < t->syms[0].addr) return NULL;
    uint32_t lo = 0, hi = t->n;
    while (hi - lo > 1) { /* last symbol with addr <= vaddr */
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->syms[mid].addr <= vaddr)
            lo = mid;
        else
            hi = mid;
    }
    const ProfSymEnt *e = &t->syms[lo];
    return vaddr < e->addr + (e->size ? e->size : 1) ? e : NULL;
}

void prof_symtab_fini(ProfSymTab *t) {
    free(t->syms);
    free(t->pool);
    free(t->debug_file);
    free(t->fde);
    free(t->path);
    memset(t, 0, sizeof *t);
}

const char *prof_symsrc_name(ProfSymSource s) {
    static const char *const names[] = {"none",     "symtab",    "gnu_debugdata",
                                        "build-id", "debuglink", "dynsym"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "?";
}

/* ---- sections ----------------------------------------------------------------------------- */

static Elf_Scn *st_section(Elf *e, const char *name, GElf_Shdr *sh) {
    size_t shstrndx;
    if (elf_getshdrstrndx(e, &shstrndx)) return NULL;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn))) {
        const char *n;
        if (gelf_getshdr(scn, sh) && (n = elf_strptr(e, shstrndx, sh->sh_name)) && !strcmp(n, name))
            return scn;
    }
    return NULL;
}

/* NT_GNU_BUILD_ID as lowercase hex into out[41]; 0 if found. */
static int st_build_id(Elf *e, char out[41]) {
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        GElf_Nhdr nh;
        size_t off = 0, name_off, desc_off, next;
        while (d && (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
            off = next;
            if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 || nh.n_descsz == 0 ||
                nh.n_descsz > 20 || memcmp((char *)d->d_buf + name_off, "GNU", 4))
                continue;
            const unsigned char *id = (const unsigned char *)d->d_buf + desc_off;
            for (size_t i = 0; i < nh.n_descsz; i++)
                snprintf(out + 2 * i, 3, "%02x", id[i]);
            return 0;
        }
    }
    return -1;
}

/* .gnu_debuglink: file name and CRC; 0 if present. */
static int st_debuglink(Elf *e, char *name, size_t len, uint32_t *crc) {
    GElf_Shdr sh;
    Elf_Scn *scn = st_section(e, ".gnu_debuglink", &sh);
    Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
    if (!d || !d->d_buf || d->d_size < 8) return -1;
    const char *s = d->d_buf;
    size_t n = strnlen(s, d->d_size);
    size_t crc_off = (n + 4) & ~(size_t)3;
    if (n == 0 || n >= len || crc_off + 4 > d->d_size) return -1;
    memcpy(name, s, n + 1);
    unsigned char b[4];
    memcpy(b, s + crc_off, 4);
    const char *ident = elf_getident(e, NULL);
    int msb = ident && ident[EI_DATA] == ELFDATA2MSB;
    *crc = msb ? (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]
               : (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
    return 0;
}

/* ---- MiniDebugInfo ------------------------------------------------------------------------ */

/* Decompresses .gnu_debugdata; returns a malloc'd buffer (size in *out_len) or NULL. */
static unsigned char *st_unxz(const void *in, size_t in_len, size_t *out_len) {
    lzma_stream z = LZMA_STREAM_INIT;
    if (lzma_stream_decoder(&z, 256u << 20, 0) != LZMA_OK) return NULL;
    size_t cap = in_len * 4 + 4096, len = 0;
    unsigned char *out = malloc(cap);
    z.next_in = in, z.avail_in = in_len;
    lzma_ret r = LZMA_OK;
    while (out && r == LZMA_OK) {
        if (len == cap) {
            unsigned char *no = cap < (256u << 20) ? realloc(out, cap * 2) : NULL;
            if (!no) break;
            out = no, cap *= 2;
        }
        z.next_out = out + len, z.avail_out = cap - len;
        r = lzma_code(&z, LZMA_FINISH);
        len = cap - z.avail_out;
    }
    lzma_end(&z);
    if (r != LZMA_STREAM_END) {
        free(out);
        return NULL;
    }
    *out_len = len;
    return out;
}

static long st_read_debugdata(ProfSymTab *t, Elf *e) {
    GElf_Shdr sh;
    Elf_Scn *scn = st_section(e, ".gnu_debugdata", &sh);
    Elf_Data *d = scn && sh.sh_type != SHT_NOBITS ? elf_getdata(scn, NULL) : NULL;
    if (!d || !d->d_buf || !d->d_size) return 0;
    size_t len;
    unsigned char *img = st_unxz(d->d_buf, d->d_size, &len);
    if (!img) return 0;
    long n = 0;
    Elf *m = elf_memory((char *)img, len);
    if (m) {
        n = st_read(t, m, SHT_SYMTAB);
        elf_end(m);
    }
    free(img);
    return n;
}

/* ---- separate debug files ----------------------------------------------------------------- */

typedef struct DebugCand {
    ProfSymTab *t;
    const char *want_id; /* build-id the file must carry, or NULL */
    int check_crc;
    uint32_t crc; /* the debuglink's CRC */
} DebugCand;

/* Reads the .symtab of the debug file at path if it is the right one; >0 = symbols used. */
static long st_try_debug(const DebugCand *c, const char *path, const char *obj) {
    ProfSymTab *t = c->t;
    if (access(path, R_OK)) return 0;
    if (c->check_crc) {
        uint32_t crc;
        if (prof_crc32_file(path, &crc)) return 0;
        if (crc != c->crc) {
            t->refused++;
            snprintf(t->note, sizeof t->note,
                     "%s: CRC 0x%08x, but the .gnu_debuglink of %s wants 0x%08x", path,
                     (unsigned)crc, obj, (unsigned)c->crc);
            return 0;
        }
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    long n = 0;
    char id[41] = "";
    if (!e || elf_kind(e) != ELF_K_ELF) goto out;
    if (c->want_id && (st_build_id(e, id) || strcmp(id, c->want_id))) {
        t->refused++;
        snprintf(t->note, sizeof t->note, "%s: build-id %s, but %s has %s", path,
                 *id ? id : "(none)", obj, c->want_id);
        goto out;
    }
    uint32_t before = t->n;
    n = st_read(t, e, SHT_SYMTAB);
    if (n > 0) {
        t->debug_file = strdup(path);
    } else {
        t->n = before; /* a debug file without functions: keep looking */
        n = 0;
    }
out:
    if (e) elf_end(e);
    close(fd);
    return n;
}

static long st_by_build_id(ProfSymTab *t, const char *root, const char *obj) {
    if (!t->build_id[0] || strlen(t->build_id) < 3) return 0;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/.build-id/%.2s/%s.debug", root, t->build_id, t->build_id + 2);
    DebugCand c = {t, t->build_id, 0, 0};
    return st_try_debug(&c, path, obj);
}

static long st_by_debuglink(ProfSymTab *t, Elf *e, const char *root, const char *obj) {
    char link[256], real[PATH_MAX], path[PATH_MAX];
    DebugCand c = {t, NULL, 1, 0};
    if (st_debuglink(e, link, sizeof link, &c.crc)) return 0;
    const char *dirs[2] = {obj, realpath(obj, real) ? real : NULL};
    for (int k = 0; k < 2; k++) {
        if (!dirs[k] || (k == 1 && !strcmp(dirs[0], dirs[1]))) continue;
        const char *slash = strrchr(dirs[k], '/');
        int dl = slash ? (int)(slash - dirs[k]) : 1;
        const char *dir = slash ? dirs[k] : ".";
        for (int f = 0; f < 3; f++) {
            if (f == 0)
                snprintf(path, sizeof path, "%.*s/%s", dl, dir, link);
            else if (f == 1)
                snprintf(path, sizeof path, "%.*s/.debug/%s", dl, dir, link);
            else
                snprintf(path, sizeof path, "%s%.*s/%s", root, dl, dir, link);
            char rp[PATH_MAX];
            if (realpath(path, rp) && dirs[1] && !strcmp(rp, dirs[1])) continue; /* itself */
            long n = st_try_debug(&c, path, obj);
            if (n) return n;
        }
    }
    return 0;
}

/* ---- PLT ---------------------------------------------------------------------------------- */

typedef struct GotName {
    uint64_t slot;
    uint32_t name; /* pool offset of "sym@plt" */
} GotName;

static int got_cmp(const void *a, const void *b) {
    const GotName *x = a, *y = b;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* The preferred name among t's symbols at addr (t not sorted yet), NULL if none. */
static const char *st_name_at(const ProfSymTab *t, uint64_t addr) {
    const ProfSymEnt *best = NULL;
    for (uint32_t i = 0; i < t->n; i++) {
        const ProfSymEnt *e = &t->syms[i];
        if (e->addr != addr || !e->rank) continue;
        if (!best || e->rank > best->rank ||
            (e->rank == best->rank && strlen(t->pool + e->name) > strlen(t->pool + best->name)))
            best = e;
    }
    return best ? t->pool + best->name : NULL;
}

/* GOT slots of JUMP_SLOT and GLOB_DAT relocations -> "symbol@plt", and of IRELATIVE ones
 * (an IFUNC called through the PLT inside its own object, as libc does) -> "resolver@plt"
 * (names in a scratch ProfSymTab's pool). */
static uint32_t st_got_names(Elf *e, const ProfSymTab *t, ProfSymTab *names, GotName **out) {
    GotName *g = NULL;
    uint32_t n = 0, cap = 0;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh, lsh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize) continue;
        Elf_Scn *ls = elf_getscn(e, sh.sh_link);
        Elf_Data *d = elf_getdata(scn, NULL), *ld = ls ? elf_getdata(ls, NULL) : NULL;
        if (!d || !ld || !gelf_getshdr(ls, &lsh)) continue;
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
            GElf_Rela r;
            GElf_Sym sym;
            if (!gelf_getrela(d, (int)i, &r)) continue;
            uint64_t type = GELF_R_TYPE(r.r_info);
            const char *nm = NULL;
            if (type == R_X86_64_IRELATIVE)
                nm = st_name_at(t, (uint64_t)r.r_addend);
            else if ((type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT) &&
                     gelf_getsym(ld, (int)GELF_R_SYM(r.r_info), &sym))
                nm = elf_strptr(e, lsh.sh_link, sym.st_name);
            if (!nm || !*nm) continue;
            char buf[512];
            int len = (int)strcspn(nm, "@"); /* "memcpy@@GLIBC_2.14" -> "memcpy@plt" */
            snprintf(buf, sizeof buf, "%.*s@plt", len, nm);
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                GotName *ng = realloc(g, cap * sizeof *ng);
                if (!ng) break;
                g = ng;
            }
            if (st_add(names, 0, 0, buf, 0)) break;
            g[n++] = (GotName){r.r_offset, names->syms[names->n - 1].name};
        }
    }
    if (n) qsort(g, n, sizeof *g, got_cmp);
    *out = g;
    return n;
}

/* The GOT slot an x86-64 PLT entry jumps through ([endbr64] [bnd] jmp *disp(%rip)), or 0. */
static uint64_t st_plt_slot(const unsigned char *p, size_t len, uint64_t addr) {
    size_t i = 0;
    if (len >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa) i = 4;
    if (i < len && p[i] == 0xf2) i++;
    if (i + 6 > len || p[i] != 0xff || p[i + 1] != 0x25) return 0;
    int32_t disp;
    memcpy(&disp, p + i + 2, 4);
    return addr + i + 6 + (uint64_t)(int64_t)disp;
}

/* Names the entries of .plt, .plt.sec and .plt.got "symbol@plt" (x86-64). */
static int st_plt(ProfSymTab *t, Elf *e) {
    GElf_Ehdr eh;
    if (!gelf_getehdr(e, &eh) || eh.e_machine != EM_X86_64) return 0;
    ProfSymTab names = {0};
    GotName *g = NULL;
    uint32_t ng = st_got_names(e, t, &names, &g);
    static const char *const secs[] = {".plt", ".plt.sec", ".plt.got"};
    int rc = 0;
    for (size_t k = 0; ng && k < sizeof secs / sizeof *secs && !rc; k++) {
        GElf_Shdr sh;
        Elf_Scn *scn = st_section(e, secs[k], &sh);
        Elf_Data *d = scn && sh.sh_type == SHT_PROGBITS ? elf_getdata(scn, NULL) : NULL;
        if (!d || !d->d_buf) continue;
        uint64_t es = sh.sh_entsize >= 8 && sh.sh_entsize <= 32 ? sh.sh_entsize : 16;
        for (uint64_t off = 0; off + es <= d->d_size && !rc; off += es) {
            GotName key = {st_plt_slot((unsigned char *)d->d_buf + off, es, sh.sh_addr + off), 0};
            GotName *hit = key.slot ? bsearch(&key, g, ng, sizeof *g, got_cmp) : NULL;
            if (!hit) continue;
            rc = st_add(t, sh.sh_addr + off, es, names.pool + hit->name, 0);
            t->nplt += !rc;
        }
    }
    free(g);
    prof_symtab_fini(&names);
    return rc;
}

/* ---- unwind tables: where unnamed functions start ------------------------------------------ */

typedef struct EhCursor {
    const unsigned char *p, *end;
    uint64_t base; /* link-time address of the section's first byte */
    const unsigned char *sec;
    int bad;
} EhCursor;

static uint64_t eh_uleb(EhCursor *c) {
    uint64_t v = 0;
    for (int shift = 0; c->p < c->end && shift < 64; shift += 7) {
        unsigned char b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    c->bad = 1;
    return 0;
}

static int64_t eh_sleb(EhCursor *c) {
    int64_t v = 0;
    int shift = 0;
    unsigned char b = 0x80;
    while (c->p < c->end && (b & 0x80) && shift < 64) {
        b = *c->p++;
        v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
    }
    if (b & 0x80) c->bad = 1;
    if (shift < 64 && (b & 0x40)) v |= -((int64_t)1 << shift);
    return v;
}

static uint64_t eh_fixed(EhCursor *c, size_t n) {
    uint64_t v = 0;
    if (c->p > c->end || (size_t)(c->end - c->p) < n) {
        c->bad = 1;
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)c->p[i] << (8 * i); /* little-endian targets only (x86-64, aarch64) */
    c->p += n;
    return v;
}

/* A DW_EH_PE-encoded pointer: absolute or pc-relative, in any of the usual formats. */
static uint64_t eh_ptr(EhCursor *c, unsigned enc) {
    uint64_t here = c->base + (uint64_t)(c->p - c->sec), v;
    switch (enc & 0x0f) {
    case 0x00:
        v = eh_fixed(c, 8);
        break;
    case 0x01:
        v = eh_uleb(c);
        break;
    case 0x02:
        v = eh_fixed(c, 2);
        break;
    case 0x03:
        v = eh_fixed(c, 4);
        break;
    case 0x04:
        v = eh_fixed(c, 8);
        break;
    case 0x09:
        v = (uint64_t)eh_sleb(c);
        break;
    case 0x0a:
        v = (uint64_t)(int64_t)(int16_t)eh_fixed(c, 2);
        break;
    case 0x0b:
        v = (uint64_t)(int64_t)(int32_t)eh_fixed(c, 4);
        break;
    case 0x0c:
        v = eh_fixed(c, 8);
        break;
    default:
        c->bad = 1;
        return 0;
    }
    if ((enc & 0x70) == 0x10) return v + here;
    if ((enc & 0x70) != 0x00) c->bad = 1; /* datarel, textrel, funcrel: not in .eh_frame */
    return v;
}

/* The FDE pointer encoding of the CIE at cie (its 'R' augmentation; absptr without one). */
static int eh_cie_enc(const EhCursor *sec, const unsigned char *cie) {
    EhCursor c = *sec;
    c.p = cie;
    uint64_t len = eh_fixed(&c, 4);
    if (c.bad || len == 0xffffffffu || len > (uint64_t)(c.end - c.p)) return -1;
    c.end = c.p + len;
    if (eh_fixed(&c, 4) != 0) return -1; /* not a CIE */
    int version = c.p < c.end ? *c.p++ : 0;
    const char *aug = (const char *)c.p;
    size_t alen = strnlen(aug, (size_t)(c.end - c.p));
    c.p += alen + 1;
    eh_uleb(&c), eh_sleb(&c); /* code and data alignment */
    if (version == 1)
        c.p++;
    else
        eh_uleb(&c); /* return address register */
    if (alen == 0 || aug[0] != 'z') return c.bad ? -1 : 0x00;
    eh_uleb(&c); /* augmentation data length */
    for (size_t i = 1; i < alen && !c.bad && c.p < c.end; i++) {
        if (aug[i] == 'R') return *c.p;
        if (aug[i] == 'P') {
            unsigned penc = *c.p++;
            eh_ptr(&c, penc & 0x7f);
        } else if (aug[i] == 'L') {
            c.p++;
        } else if (aug[i] != 'S' && aug[i] != 'B') {
            return -1;
        }
    }
    return c.bad ? -1 : 0x00;
}

static int fde_cmp(const void *a, const void *b) {
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The [start, end) of every FDE in .eh_frame: functions no symbol names still have one. */
static int st_fdes(ProfSymTab *t, Elf *e) {
    GElf_Shdr sh;
    Elf_Scn *scn = st_section(e, ".eh_frame", &sh);
    Elf_Data *d = scn && sh.sh_type == SHT_PROGBITS ? elf_getdata(scn, NULL) : NULL;
    if (!d || !d->d_buf || !d->d_size) return 0;
    EhCursor sec = {d->d_buf, (const unsigned char *)d->d_buf + d->d_size, sh.sh_addr, d->d_buf, 0};
    uint32_t cap = 0;
    const unsigned char *last_cie = NULL;
    int enc = -1;
    for (EhCursor c = sec; c.p + 8 <= sec.end;) {
        uint64_t len = eh_fixed(&c, 4);
        if (len == 0 || len == 0xffffffffu || len > (uint64_t)(sec.end - c.p)) break;
        const unsigned char *next = c.p + len, *idp = c.p;
        uint32_t id = (uint32_t)eh_fixed(&c, 4);
        if (id != 0 && (uint64_t)(idp - sec.sec) >= id) { /* an FDE */
            const unsigned char *cie = idp - id;
            if (cie != last_cie) last_cie = cie, enc = eh_cie_enc(&sec, cie);
            EhCursor f = c;
            f.end = next;
            uint64_t start = enc < 0 ? 0 : eh_ptr(&f, (unsigned)enc & 0x7f);
            uint64_t range = enc < 0 ? 0 : eh_ptr(&f, (unsigned)enc & 0x0f);
            if (!f.bad && start && range) {
                if (t->nfde == cap) {
                    cap = cap ? cap * 2 : 256;
                    uint64_t *nf = realloc(t->fde, 2 * (size_t)cap * sizeof *nf);
                    if (!nf) return -1;
                    t->fde = nf;
                }
                t->fde[2 * t->nfde] = start, t->fde[2 * t->nfde + 1] = start + range;
                t->nfde++;
            }
        }
        c.p = next;
    }
    if (t->nfde) qsort(t->fde, t->nfde, 2 * sizeof *t->fde, fde_cmp);
    return 0;
}

/* Reads the FDEs at the first need: most objects' samples all land in named functions. */
static void st_fdes_lazy(ProfSymTab *t) {
    t->fde_state = 1;
    int fd = t->path ? open(t->path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0) return;
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    if (e && elf_kind(e) == ELF_K_ELF) st_fdes(t, e);
    if (e) elf_end(e);
    close(fd);
}

int prof_symtab_fde(ProfSymTab *t, uint64_t vaddr, uint64_t *start, uint64_t *end) {
    if (!t->fde_state) st_fdes_lazy(t);
    if (!t->nfde || vaddr < t->fde[0]) return 0;
    uint32_t lo = 0, hi = t->nfde;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->fde[2 * mid] <= vaddr)
            lo = mid;
        else
            hi = mid;
    }
    if (vaddr >= t->fde[2 * lo + 1]) return 0;
    *start = t->fde[2 * lo], *end = t->fde[2 * lo + 1];
    return 1;
}

/* ---- the lookup order --------------------------------------------------------------------- */

static int st_has_symtab(Elf *e) {
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;
    while ((scn = elf_nextscn(e, scn)))
        if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB) return 1;
    return 0;
}

static int st_load_elf(ProfSymTab *t, Elf *e, const char *path, const char *root) {
    long n = 0;
    st_build_id(e, t->build_id);
    if (st_has_symtab(e) && (n = st_read(t, e, SHT_SYMTAB)) > 0) {
        t->source = PROF_SYMSRC_SYMTAB;
    } else if (n >= 0 && (n = st_read_debugdata(t, e)) > 0) {
        t->source = PROF_SYMSRC_DEBUGDATA;
        n = st_read(t, e, SHT_DYNSYM) < 0 ? -1 : n;
    } else if (n >= 0 && path && (n = st_by_build_id(t, root, path)) > 0) {
        t->source = PROF_SYMSRC_BUILD_ID;
    } else if (n >= 0 && path && (n = st_by_debuglink(t, e, root, path)) > 0) {
        t->source = PROF_SYMSRC_DEBUGLINK;
    } else if (n >= 0 && (n = st_read(t, e, SHT_DYNSYM)) > 0) {
        t->source = PROF_SYMSRC_DYNSYM;
    }
    if (n < 0 || st_plt(t, e)) return -1;
    st_finish(t);
    return 0;
}

int prof_symtab_load(ProfSymTab *t, const char *path, const char *debug_root) {
    memset(t, 0, sizeof *t);
    elf_version(EV_CURRENT);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    int rc = -1;
    if (e && elf_kind(e) == ELF_K_ELF)
        rc = st_load_elf(t, e, path, debug_root ? debug_root : DEFAULT_DEBUG_ROOT);
    if (!rc && !(t->path = strdup(path))) rc = -1;
    if (e) elf_end(e);
    close(fd);
    return rc;
}

int prof_symtab_load_image(ProfSymTab *t, const void *image, size_t size) {
    memset(t, 0, sizeof *t);
    elf_version(EV_CURRENT);
    char *copy = malloc(size); /* libelf may write to its buffer; the vDSO is read-only */
    if (!copy) return -1;
    memcpy(copy, image, size);
    Elf *e = elf_memory(copy, size);
    int rc = e && elf_kind(e) == ELF_K_ELF ? st_load_elf(t, e, NULL, NULL) : -1;
    t->fde_state = 1;
    if (!rc) rc = st_fdes(t, e);
    if (e) elf_end(e);
    free(copy);
    return rc;
}
