/* SPDX-License-Identifier: MIT */
/*
 * symbols.c - ELF symbol tables, JIT ranges, the perf map and the jitdump (see symbols.h).
 */
#include "symbols.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/auxv.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "debuginfo.h"
#include "jitdump.h"

typedef struct SymObj {
    ProfObject o;
    uint64_t base;   /* dlpi_addr: link-time address + base = run-time address */
    int loaded;      /* tab filled (at the first lookup in this object) */
    const void *mem; /* the vDSO's image (its symbols come from memory), else NULL */
    size_t mem_len;
    ProfSymTab tab;
} SymObj;

typedef struct JitEnt {
    uint64_t start, size;
    char *name;
} JitEnt;

struct ProfSymbols {
    pthread_mutex_t lock;
    SymObj *objs;
    uint32_t nobjs, capobjs;
    ProfObject *views;
    unsigned long long adds; /* dl_iterate_phdr add counter at the last scan */
    uint64_t last_check_ns;  /* rescans are rate-limited: a miss is usually data, not code */
    JitEnt *jit;
    uint32_t njit, capjit;
    ProfJitdump *jd;      /* perf's jitdump (SAMPO_JITDUMP=1), opened at the first JIT range */
    int jd_state;         /* 0: not decided yet in this process, 1: on, -1: off or failed */
    int jd_warned;        /* a failed dump write was reported */
    uint64_t jd_failures; /* dumps that could not be created, writes that failed */
};

/* ---- object list ---------------------------------------------------------------------- */

typedef struct ScanCtx {
    ProfSymbols *s;
} ScanCtx;

static int sym_known(ProfSymbols *s, uint64_t lo) {
    for (uint32_t i = 0; i < s->nobjs; i++)
        if (s->objs[i].o.lo == lo) return 1;
    return 0;
}

/* Whether [vaddr, vaddr + len) lies inside one of the object's PT_LOAD segments (mapped). */
static int sym_mapped(const struct dl_phdr_info *info, uint64_t vaddr, uint64_t len) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && vaddr >= ph->p_vaddr && len <= ph->p_filesz &&
            vaddr - ph->p_vaddr <= ph->p_filesz - len)
            return 1;
    }
    return 0;
}

/* NT_GNU_BUILD_ID from the object's mapped PT_NOTE segments, as hex; NULL if none. */
static char *sym_build_id(const struct dl_phdr_info *info) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE || !sym_mapped(info, ph->p_vaddr, ph->p_memsz)) continue;
        const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        size_t off = 0;
        while (off + sizeof(ElfW(Nhdr)) <= ph->p_memsz) {
            ElfW(Nhdr) nh;
            memcpy(&nh, p + off, sizeof nh);
            size_t name = off + sizeof nh, desc = name + ((nh.n_namesz + 3) & ~3u);
            off = desc + ((nh.n_descsz + 3) & ~3u);
            if (off > ph->p_memsz) break;
            if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 || memcmp(p + name, "GNU", 4) ||
                !nh.n_descsz || nh.n_descsz > 64)
                continue;
            char *hex = malloc(2 * nh.n_descsz + 1);
            for (size_t k = 0; hex && k < nh.n_descsz; k++)
                snprintf(hex + 2 * k, 3, "%02x", p[desc + k]);
            return hex;
        }
    }
    return NULL;
}

static int sym_phdr_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    ProfSymbols *s = ((ScanCtx *)arg)->s;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (sym_known(s, lo)) continue;
        if (s->nobjs == s->capobjs) {
            uint32_t nc = s->capobjs ? s->capobjs * 2 : 32;
            SymObj *no = realloc(s->objs, nc * sizeof *no);
            if (!no) return 1;
            s->objs = no, s->capobjs = nc;
        }
        const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : NULL;
        char exe[4096];
        uint64_t vdso = getauxval(AT_SYSINFO_EHDR), seg0 = lo - ph->p_offset;
        const void *mem = NULL;
        if (vdso && vdso >= seg0 && vdso < hi) { /* "linux-vdso.so.1": no file, read memory */
            name = name ? name : "[vdso]", mem = (const void *)(uintptr_t)vdso;
        } else if (!name) {
            ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
            if (n <= 0 || s->nobjs) continue; /* other unnamed objects: not files */
            exe[n] = 0;
            name = exe;
        }
        size_t mem_len = 0;
        if (mem) { /* the section headers lie past p_memsz, on the vDSO's last page */
            const ElfW(Ehdr) *eh = mem;
            uint64_t mapped = ((hi + 4095) & ~4095ull) - vdso;
            uint64_t shend = eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize;
            mem_len = (size_t)(shend <= mapped ? (shend > hi - vdso ? shend : hi - vdso) : mapped);
        }
        SymObj *so = &s->objs[s->nobjs];
        *so = (SymObj){.o = {lo, hi, ph->p_offset, strdup(name), sym_build_id(info)},
                       .base = info->dlpi_addr,
                       .mem = mem,
                       .mem_len = mem_len};
        if (!so->o.path) return 1;
        s->nobjs++;
    }
    return 0;
}

/* Loads the object's symbols at its first lookup (start-up stays cheap: most objects of a
 * process never show up in a sample).  Called with s->lock held. */
static void sym_load(SymObj *so) {
    so->loaded = 1;
    const char *root = getenv("SAMPO_DEBUG_ROOT");
    if (so->mem)
        prof_symtab_load_image(&so->tab, so->mem, so->mem_len);
    else
        prof_symtab_load(&so->tab, so->o.path, root && *root ? root : NULL);
}

static int sym_adds_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    *(unsigned long long *)arg = info->dlpi_adds;
    return 1;
}

static void sym_rescan(ProfSymbols *s) {
    unsigned long long adds = 0;
    dl_iterate_phdr(sym_adds_cb, &adds);
    if (adds == s->adds && s->nobjs) return;
    s->adds = adds;
    ScanCtx c = {s};
    dl_iterate_phdr(sym_phdr_cb, &c);
}

ProfSymbols *prof_symbols_new(void) {
    ProfSymbols *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    pthread_mutex_init(&s->lock, NULL);
    sym_rescan(s);
    return s;
}

void prof_symbols_free(ProfSymbols *s) {
    if (!s) return;
    for (uint32_t i = 0; i < s->nobjs; i++) {
        free((char *)s->objs[i].o.path);
        free((char *)s->objs[i].o.build_id);
        prof_symtab_fini(&s->objs[i].tab);
    }
    for (uint32_t i = 0; i < s->njit; i++)
        free(s->jit[i].name);
    if (s->jd && prof_jitdump_pid(s->jd) == (int)getpid())
        prof_jitdump_close(s->jd); /* JIT_CODE_CLOSE */
    else
        prof_jitdump_drop(s->jd);
    free(s->objs);
    free(s->views);
    free(s->jit);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* ---- C++ names --------------------------------------------------------------------------- */

/* The name of e as the object spells it: C++ and Rust names stay mangled in the profile
 * (pprof keeps them as system_name); the sampo tools demangle them for display. */
static const char *sym_name(ProfSymbols *s, SymObj *so, const ProfSymEnt *e) {
    (void)s;
    return prof_symtab_name(&so->tab, e);
}

/* ---- lookup ----------------------------------------------------------------------------- */

static int sym_lookup_jit(ProfSymbols *s, uint64_t addr, ProfSym *out) {
    for (uint32_t i = 0; i < s->njit; i++) {
        JitEnt *j = &s->jit[i];
        if (addr >= j->start && addr < j->start + j->size) {
            *out = (ProfSym){j->name, "[jit]", j->start, j->size, 1, 0, 0};
            return 1;
        }
    }
    return 0;
}

static SymObj *sym_find_obj(ProfSymbols *s, uint64_t addr) {
    for (uint32_t i = 0; i < s->nobjs; i++)
        if (addr >= s->objs[i].o.lo && addr < s->objs[i].o.hi) return &s->objs[i];
    return NULL;
}

int prof_symbols_is_code(ProfSymbols *s, uint64_t addr) {
    pthread_mutex_lock(&s->lock);
    int r = sym_find_obj(s, addr) != NULL;
    for (uint32_t i = 0; !r && i < s->njit; i++)
        r = addr >= s->jit[i].start && addr < s->jit[i].start + s->jit[i].size;
    pthread_mutex_unlock(&s->lock);
    return r;
}

int prof_symbols_lookup(ProfSymbols *s, uint64_t addr, ProfSym *out) {
    pthread_mutex_lock(&s->lock);
    int found = sym_lookup_jit(s, addr, out);
    if (found) goto out;
    SymObj *so = sym_find_obj(s, addr);
    if (!so) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        if (now - s->last_check_ns > 50000000ull) { /* at most 20 rescans per second */
            s->last_check_ns = now;
            sym_rescan(s);
            so = sym_find_obj(s, addr);
        }
    }
    *out = (ProfSym){NULL, so ? so->o.path : NULL, addr, 0, 0, 0, so ? addr - so->base : 0};
    if (!so) goto out;
    if (!so->loaded) sym_load(so);
    uint64_t v = addr - so->base, fs, fe;
    const ProfSymEnt *e = prof_symtab_find(&so->tab, v);
    if (e) {
        *out = (ProfSym){.name = sym_name(s, so, e),
                         .module = so->o.path,
                         .start = e->addr + so->base,
                         .size = e->size,
                         .plt = e->rank == 1,
                         .vaddr = v};
        found = 1;
    } else if (prof_symtab_fde(&so->tab, v, &fs, &fe)) { /* unnamed, but a known function */
        out->start = fs + so->base, out->size = fe - fs, out->vaddr = fs;
    }
out:
    pthread_mutex_unlock(&s->lock);
    return found;
}

const char *prof_symbols_unknown_name(const ProfSym *s, char *buf, size_t len) {
    const char *base = s->module ? strrchr(s->module, '/') : NULL;
    base = base ? base + 1 : s->module;
    if (base && *base)
        snprintf(buf, len, "[unknown] %s+0x%llx", base, (unsigned long long)s->vaddr);
    else
        snprintf(buf, len, "[unknown]");
    return buf;
}

uint32_t prof_symbols_debuginfo(ProfSymbols *s, char *sources, size_t slen, char *why,
                                size_t wlen) {
    uint32_t refused = 0;
    size_t o = 0;
    if (slen) sources[0] = 0;
    if (wlen) why[0] = 0;
    pthread_mutex_lock(&s->lock);
    for (uint32_t i = 0; i < s->nobjs; i++) {
        const SymObj *so = &s->objs[i];
        if (!so->loaded) continue;
        const char *base = strrchr(so->o.path, '/');
        if (o < slen)
            o += (size_t)snprintf(sources + o, slen - o, "%s%s:%s", o ? " " : "",
                                  base ? base + 1 : so->o.path, prof_symsrc_name(so->tab.source));
        refused += so->tab.refused;
        if (so->tab.refused && wlen) snprintf(why, wlen, "%s", so->tab.note);
    }
    pthread_mutex_unlock(&s->lock);
    return refused;
}

uint32_t prof_symbols_objects(ProfSymbols *s, const ProfObject **out) {
    pthread_mutex_lock(&s->lock);
    ProfObject *v = realloc(s->views, (s->nobjs + 1) * sizeof *v);
    uint32_t n = 0;
    if (v) {
        s->views = v;
        for (; n < s->nobjs; n++)
            v[n] = s->objs[n].o;
    }
    *out = s->views;
    pthread_mutex_unlock(&s->lock);
    return n;
}

/* ---- JIT ranges and the perf map --------------------------------------------------------- */

static void sym_perf_map_append(uint64_t start, uint64_t size, const char *name) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    FILE *f = fopen(path, "a");
    if (!f) return;
    fprintf(f, "%llx %llx %s\n", (unsigned long long)start, (unsigned long long)size, name);
    fclose(f);
}

/* Decides once per process (a forked child decides again, for its own jit-PID.dump) whether
 * to write a jitdump, and on opening replays every range already registered (a child's
 * inherited code included).  Called with s->lock held; returns 1 if it wrote the ranges. */
static int sym_jitdump_decide(ProfSymbols *s) {
    if (s->jd && prof_jitdump_pid(s->jd) != (int)getpid()) {
        prof_jitdump_drop(s->jd); /* the parent's file */
        s->jd = NULL, s->jd_state = 0;
    }
    if (s->jd_state) return 0;
    s->jd_state = -1;
    const char *on = getenv("SAMPO_JITDUMP");
    if (!on || strcmp(on, "1") != 0) return 0;
    char dir[4096], err[4200];
    if (!prof_jitdump_default_dir(dir, sizeof dir, err, sizeof err) &&
        (s->jd = prof_jitdump_open(dir, err, sizeof err)) != NULL) {
        s->jd_state = 1;
        for (uint32_t i = 0; i < s->njit; i++)
            prof_jitdump_load(s->jd, s->jit[i].start, s->jit[i].size, s->jit[i].name);
        return 1;
    }
    s->jd_failures++; /* profiling goes on; perf still has the perf map */
    fprintf(stderr, "sampo: jitdump off: %s\n", err);
    return 0;
}

static void sym_jitdump_load(ProfSymbols *s, ProfJitdump *jd, uint64_t start, uint64_t size,
                             const char *name) {
    if (!prof_jitdump_load(jd, start, size, name)) return;
    pthread_mutex_lock(&s->lock);
    s->jd_failures++;
    int warn = !s->jd_warned;
    s->jd_warned = 1;
    pthread_mutex_unlock(&s->lock);
    if (warn)
        fprintf(stderr, "sampo: jitdump: writing %s failed; later JIT code is not in it\n",
                prof_jitdump_path(jd));
}

int prof_symbols_jit_add(ProfSymbols *s, uint64_t start, uint64_t size, const char *name,
                         int perf_map) {
    char *nm = strdup(name ? name : "jit");
    if (!nm) return -1;
    pthread_mutex_lock(&s->lock);
    if (s->njit == s->capjit) {
        uint32_t nc = s->capjit ? s->capjit * 2 : 16;
        JitEnt *nj = realloc(s->jit, nc * sizeof *nj);
        if (!nj) {
            pthread_mutex_unlock(&s->lock);
            free(nm);
            return -1;
        }
        s->jit = nj, s->capjit = nc;
    }
    s->jit[s->njit++] = (JitEnt){start, size, nm};
    int replayed = sym_jitdump_decide(s);
    ProfJitdump *jd = s->jd;
    pthread_mutex_unlock(&s->lock);
    if (perf_map) sym_perf_map_append(start, size, nm);
    if (jd && !replayed) sym_jitdump_load(s, jd, start, size, name ? name : "jit");
    return 0;
}

int prof_symbols_jit_remove(ProfSymbols *s, uint64_t start) {
    int rc = -1;
    pthread_mutex_lock(&s->lock);
    for (uint32_t i = 0; i < s->njit; i++) {
        if (s->jit[i].start != start) continue;
        free(s->jit[i].name);
        s->jit[i] = s->jit[--s->njit];
        rc = 0;
        break;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

const char *prof_symbols_jitdump(ProfSymbols *s, uint64_t *failures) {
    pthread_mutex_lock(&s->lock);
    const char *path = s->jd ? prof_jitdump_path(s->jd) : NULL;
    if (failures) *failures = s->jd_failures;
    pthread_mutex_unlock(&s->lock);
    return path;
}
