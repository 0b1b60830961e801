/*
 * symbols.c - ELF symbol tables, JIT ranges, the perf map and the jitdump (see symbols.h).
 */
#include "symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jitdump.h"

typedef struct SymEnt {
    uint64_t addr, size;
    uint32_t name; /* offset in the object's string pool */
} SymEnt;

typedef struct SymObj {
    ProfObject o;
    uint64_t base; /* dlpi_addr */
    SymEnt *syms;
    uint32_t nsyms;
    char *pool;
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

/* ---- ELF reading --------------------------------------------------------------------- */

static int sym_cmp(const void *a, const void *b) {
    const SymEnt *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Appends the FUNC symbols of one section (relocated by bias). */
static int sym_read_section(Elf *e, Elf_Scn *scn, GElf_Shdr *sh, SymObj *so, uint64_t bias,
                            size_t *pool_len, uint32_t *cap) {
    Elf_Data *d = elf_getdata(scn, NULL);
    if (!d || !sh->sh_entsize) return 0;
    size_t n = sh->sh_size / sh->sh_entsize;
    for (size_t i = 0; i < n; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(d, (int)i, &sym)) continue;
        int type = GELF_ST_TYPE(sym.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || !sym.st_value) continue;
        const char *nm = elf_strptr(e, sh->sh_link, sym.st_name);
        if (!nm || !*nm) continue;
        size_t len = strlen(nm) + 1;
        if (so->nsyms == *cap) {
            *cap = *cap ? *cap * 2 : 256;
            SymEnt *ns = realloc(so->syms, *cap * sizeof *ns);
            if (!ns) return -1;
            so->syms = ns;
        }
        char *np = realloc(so->pool, *pool_len + len);
        if (!np) return -1;
        so->pool = np;
        memcpy(so->pool + *pool_len, nm, len);
        so->syms[so->nsyms++] = (SymEnt){sym.st_value + bias, sym.st_size, (uint32_t)*pool_len};
        *pool_len += len;
    }
    return 0;
}

static void sym_load_elf(SymObj *so, const char *file, uint64_t bias) {
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    size_t pool_len = 0;
    uint32_t cap = 0;
    if (!e) goto out_close;
    for (int want = SHT_SYMTAB; want >= SHT_SYMTAB; want = want == SHT_SYMTAB ? SHT_DYNSYM : -1) {
        Elf_Scn *scn = NULL;
        while ((scn = elf_nextscn(e, scn))) {
            GElf_Shdr sh;
            if (gelf_getshdr(scn, &sh) && sh.sh_type == (GElf_Word)want)
                sym_read_section(e, scn, &sh, so, bias, &pool_len, &cap);
        }
        if (so->nsyms || want == SHT_DYNSYM) break;
    }
    qsort(so->syms, so->nsyms, sizeof *so->syms, sym_cmp);
    for (uint32_t i = 0; i + 1 < so->nsyms; i++) /* sizeless symbols end at the next one */
        if (!so->syms[i].size) so->syms[i].size = so->syms[i + 1].addr - so->syms[i].addr;
    elf_end(e);
out_close:
    close(fd);
}

/* ---- object list ---------------------------------------------------------------------- */

typedef struct ScanCtx {
    ProfSymbols *s;
} ScanCtx;

static int sym_known(ProfSymbols *s, uint64_t lo) {
    for (uint32_t i = 0; i < s->nobjs; i++)
        if (s->objs[i].o.lo == lo) return 1;
    return 0;
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
        if (!name) {
            ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
            if (n <= 0 || s->nobjs) continue; /* unnamed non-first objects: vdso */
            exe[n] = 0;
            name = exe;
        }
        SymObj *so = &s->objs[s->nobjs];
        *so = (SymObj){.o = {lo, hi, ph->p_offset, strdup(name)}, .base = info->dlpi_addr};
        if (!so->o.path) return 1;
        sym_load_elf(so, name, info->dlpi_addr);
        s->nobjs++;
    }
    return 0;
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
    elf_version(EV_CURRENT);
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
        free(s->objs[i].syms);
        free(s->objs[i].pool);
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

/* ---- lookup ----------------------------------------------------------------------------- */

static int sym_lookup_jit(ProfSymbols *s, uint64_t addr, ProfSym *out) {
    for (uint32_t i = 0; i < s->njit; i++) {
        JitEnt *j = &s->jit[i];
        if (addr >= j->start && addr < j->start + j->size) {
            *out = (ProfSym){j->name, "[jit]", j->start, j->size, 1};
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
    *out = (ProfSym){NULL, so ? so->o.path : NULL, addr, 0, 0};
    if (!so || !so->nsyms) goto out;
    uint32_t lo = 0, hi = so->nsyms;
    while (hi - lo > 1) { /* last symbol with addr <= target */
        uint32_t mid = (lo + hi) / 2;
        if (so->syms[mid].addr <= addr)
            lo = mid;
        else
            hi = mid;
    }
    const SymEnt *e = &so->syms[lo];
    if (addr >= e->addr && addr < e->addr + (e->size ? e->size : 1)) {
        *out = (ProfSym){so->pool + e->name, so->o.path, e->addr, e->size, 0};
        found = 1;
    }
out:
    pthread_mutex_unlock(&s->lock);
    return found;
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
