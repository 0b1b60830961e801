/* SPDX-License-Identifier: MIT */
/*
 * cmd_annotate.c - `sampo annotate METHOD [FILE]`: a method's code with its samples, as perf
 * annotate and pprof -list show them.
 *
 * SOM methods: the method's source lines (compiled from the class path, somsrc.h), each with
 * the weight of the calls made on it (the CC-Map's call edges: caller, call site, callee, once
 * per sample), and the method's own (self) weight in the heading: the profile records where
 * a method calls, not where inside it a sample stopped.
 * Native functions: the samples that stopped in the function, per instruction (the sample's
 * PC): the disassembly by objdump when it and the object file (with the recorded build ID)
 * are there, else the addresses.
 */
#include "cmds.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export.h"
#include "somsrc.h"

static const char annotate_usage[] =
    "usage: sampo annotate [options] METHOD [FILE]\n"
    "  The code of METHOD with its samples.  SOM methods: the source, each line with the\n"
    "  samples of the calls made on it and the method's own samples in the heading.  Native\n"
    "  functions: the disassembly (objdump) with the samples per instruction, or the sampled\n"
    "  addresses when objdump or the object file is missing.  METHOD is a frame name as\n"
    "  sampo report prints it (Class>>selector, a function name) or, if no name is equal to\n"
    "  it, a regular expression (POSIX extended) matched against the names.  FILE defaults\n"
    "  to " SAMPO_DEFAULT_FILE ".\n"
    "  --classpath PATH  where the SOM classes are (directories separated by ':'; default:\n"
    "                    the profiled run's -cp and main file directory, then '.')\n"
    "  --objdump PROG    the disassembler (default objdump; '' shows addresses only)\n"
    "  --max N           annotate at most N matching methods (default 10, 0 = all)\n"
    "  --thread TID      only the samples of one thread (OS thread id)\n"
    "  -h, --help        this text\n";

typedef struct {
    const SpProfile *p;
    SpUnit unit;
    uint64_t total; /* the profile's whole weight, for percentages */
    const char *objdump;
    SampoSomSrc *src;
} Ann;

static double ann_pct(const Ann *a, uint64_t w) {
    return a->total ? 100.0 * (double)w / (double)a->total : 0;
}

static const char *ann_unit(const Ann *a) {
    return a->unit == SP_UNIT_CALLS ? "calls" : a->unit == SP_UNIT_NANOS ? "ns" : "samples";
}

/* Self and total weight of frame f (the CC-Map's per-method view). */
static void ann_weights(const SpProfile *p, uint32_t f, uint64_t *self, uint64_t *total) {
    *self = *total = 0;
    for (uint32_t i = 0; i < p->cc.nmethods; i++)
        if (p->cc.methods[i].frame == f) {
            *self += p->cc.methods[i].self;
            *total += p->cc.methods[i].total;
        }
}

/* ---- SOM methods ------------------------------------------------------------------------ */

/* Lines lo..hi of path, each with its weight (w[line - lo]); closing: and the next line if
 * it only closes the method. */
static void ann_print_source(const char *path, unsigned lo, unsigned hi, const uint64_t *w,
                             bool closing, const Ann *a) {
    FILE *f = fopen(path, "r");
    char line[4096];
    unsigned no = 0;
    if (!f) {
        printf("  (%s: %s)\n", path, strerror(errno));
        return;
    }
    while (no <= hi && fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        bool whole = n && line[n - 1] == '\n';
        if (whole) line[--n] = 0;
        if (!whole && !feof(f)) { /* a very long line: the rest is not shown */
            int ch;
            while ((ch = fgetc(f)) != EOF && ch != '\n')
                ;
        }
        if (++no < lo) continue;
        if (no > hi) { /* the line after the code: shown if it only closes the method */
            if (closing && n && strspn(line, " \t") + 1 == n && line[n - 1] == ')')
                printf("%8s %10s %6u  %s\n", "", "", no, line);
            break;
        }
        uint64_t x = w[no - lo];
        if (x)
            printf("%7.2f%% %10llu %6u  %s\n", ann_pct(a, x), (unsigned long long)x, no, line);
        else
            printf("%8s %10s %6u  %s\n", "", "", no, line);
    }
    fclose(f);
}

/* Exact profiles: the calls made on each line of m (frame f), from the call edges. */
static void ann_lines_calls(const SpProfile *p, uint32_t f, const SampoSomMethod *m, uint64_t *w,
                            uint64_t *unplaced) {
    for (uint32_t i = 0; i < p->cc.nedges; i++) {
        const SpCcEdge *e = &p->cc.edges[i];
        if (e->caller != f) continue;
        unsigned line = e->callsite ? sampo_somsrc_line(m, e->callsite) : 0;
        if (line >= m->first && line <= m->last)
            w[line - m->first] += e->count;
        else
            *unplaced += e->count;
    }
}

/* Sampled (and time) profiles: the weight of the samples under a call made on each line of
 * m (frame f), each sample counted once per line however often its context passes through
 * that line (recursion, two calls on one line): every context's own weight goes to the
 * distinct lines of f's call sites on its path to the root. */
static int ann_lines_samples(const SpProfile *p, uint32_t f, const SampoSomMethod *m, uint64_t *w,
                             uint64_t *unplaced) {
    unsigned span = m->last - m->first + 1;
    uint32_t *seen = calloc(span + 1, sizeof *seen); /* [span]: the unknown call sites */
    if (!seen) return -1;
    for (uint32_t n = 0; n < p->cc.nnodes; n++) {
        const SpCcNode *x = &p->cc.nodes[n];
        if (!x->self) continue;
        for (uint32_t c = n, guard = 0; x->parent != SP_NONE && guard < 100000; guard++) {
            uint32_t up = p->cc.nodes[c].parent;
            if (up == SP_NONE || up >= c) break; /* parents come first (profile.h) */
            if (p->cc.nodes[up].frame == f) {
                uint32_t site = p->cc.nodes[c].callsite;
                unsigned line = site ? sampo_somsrc_line(m, site) : 0;
                unsigned k = line >= m->first && line <= m->last ? line - m->first : span;
                if (seen[k] != n + 1) {
                    seen[k] = n + 1;
                    if (k < span)
                        w[k] += x->self;
                    else
                        *unplaced += x->self;
                }
            }
            c = up;
        }
    }
    free(seen);
    return 0;
}

static int ann_som(const Ann *a, uint32_t f, const char *label) {
    const SpProfile *p = a->p;
    uint64_t self, total;
    ann_weights(p, f, &self, &total);
    uint32_t hint = 0;
    for (uint32_t i = 0; i < p->cc.nedges && !hint; i++)
        if (p->cc.edges[i].caller == f) hint = p->cc.edges[i].callsite;
    SampoSomMethod m;
    printf("## %s   self %llu (%.2f%%), total %llu (%.2f%%) %s\n", label, (unsigned long long)self,
           ann_pct(a, self), (unsigned long long)total, ann_pct(a, total), ann_unit(a));
    if (!a->src || sampo_somsrc_method(a->src, label, hint, &m)) {
        printf("# no source: the class is not on the class path %s (--classpath PATH gives "
               "it); the calls by call site:\n",
               a->src ? sampo_somsrc_classpath(a->src) : "");
        for (uint32_t i = 0; i < p->cc.nedges; i++) {
            const SpCcEdge *e = &p->cc.edges[i];
            char b[512];
            if (e->caller == f && e->callsite)
                printf("%7.2f%% %10llu  +%u -> %s\n", ann_pct(a, e->count),
                       (unsigned long long)e->count, e->callsite,
                       sp_frame_label(p, e->callee, b, sizeof b));
        }
        return 0;
    }
    unsigned span = m.last - m.first + 1;
    uint64_t *w = calloc(span, sizeof *w), unplaced = 0;
    if (!w) return -1;
    if (a->unit == SP_UNIT_CALLS)
        ann_lines_calls(p, f, &m, w, &unplaced);
    else if (ann_lines_samples(p, f, &m, w, &unplaced)) {
        free(w);
        return -1;
    }
    printf("# %s, lines %u-%u; per line: %s the calls made on it\n", m.file, m.first, m.last,
           a->unit == SP_UNIT_CALLS   ? "the count of"
           : a->unit == SP_UNIT_NANOS ? "the time in"
                                      : "the samples in");
    printf("%8s %10s %6s  %s\n", "share", ann_unit(a), "line", "source");
    ann_print_source(m.file, m.first, m.last, w, !m.block, a);
    if (unplaced)
        printf("# %llu %s of calls at unknown call sites\n", (unsigned long long)unplaced,
               ann_unit(a));
    printf("\n");
    free(w);
    return 0;
}

/* ---- native functions ------------------------------------------------------------------- */

/* The object file's link-time address of file offset off (its PT_LOAD headers), or the
 * offset itself when the file cannot be read.  *bid gets the GNU build ID in hex ("" if
 * none). */
static uint64_t ann_elf_addr(const char *path, uint64_t off, char *bid, size_t bidlen) {
    Elf64_Ehdr eh;
    uint64_t addr = off;
    *bid = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return off;
    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, 4) ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr)) {
        close(fd);
        return off;
    }
    for (unsigned i = 0; i < eh.e_phnum && i < 256; i++) {
        Elf64_Phdr ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph)
            break;
        if (ph.p_type == PT_LOAD && off >= ph.p_offset && off < ph.p_offset + ph.p_filesz)
            addr = off - ph.p_offset + ph.p_vaddr;
        if (ph.p_type == PT_NOTE && ph.p_filesz < 4096 && !*bid) {
            unsigned char n[4096];
            if (pread(fd, n, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz) continue;
            for (size_t q = 0; q + 12 <= ph.p_filesz;) {
                uint32_t nsz, dsz, type;
                memcpy(&nsz, n + q, 4), memcpy(&dsz, n + q + 4, 4), memcpy(&type, n + q + 8, 4);
                size_t name = q + 12, desc = name + ((nsz + 3u) & ~3u);
                if (desc + dsz > ph.p_filesz) break;
                if (type == NT_GNU_BUILD_ID && nsz == 4 && !memcmp(n + name, "GNU", 4))
                    for (uint32_t k = 0; k < dsz && 2 * k + 3 <= bidlen; k++)
                        snprintf(bid + 2 * k, 3, "%02x", n[desc + k]);
                q = desc + ((dsz + 3u) & ~3u);
            }
        }
    }
    close(fd);
    return addr;
}

typedef struct {
    uint64_t pc, w;
} AnnPc;

static int ann_pc_cmp(const void *x, const void *y) {
    const AnnPc *a = x, *b = y;
    return a->pc < b->pc ? -1 : a->pc > b->pc;
}

/* The samples that stopped in frame f, by PC (sorted); answers how many PCs. */
static uint32_t ann_pcs(const SpProfile *p, uint32_t f, AnnPc **out) {
    AnnPc *v = NULL;
    uint32_t n = 0, cap = 0;
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const SpSample *s = &p->samples[i];
        if (!s->depth || sp_sample_stack(p, s)[0] != f || !s->pc) continue;
        if (n == cap) {
            AnnPc *r = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof *v);
            if (!r) break;
            v = r;
        }
        v[n++] = (AnnPc){s->pc, s->weight};
    }
    if (n) qsort(v, n, sizeof *v, ann_pc_cmp);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) /* merge equal PCs */
        if (k && v[k - 1].pc == v[i].pc)
            v[k - 1].w += v[i].w;
        else
            v[k++] = v[i];
    *out = v;
    return k;
}

/* Disassembles [lo, hi) (link-time addresses) of path with objdump, each instruction with
 * the weight of the PCs (runtime: link + bias) on it.  Answers 0, or -1 if objdump gave
 * nothing. */
static int ann_objdump(const Ann *a, const char *path, uint64_t lo, uint64_t hi, int64_t bias,
                       const AnnPc *pcs, uint32_t npcs) {
    char cmd[8800], line[1024];
    if (!*a->objdump || strchr(path, '\'') || strchr(a->objdump, '\'')) return -1;
    snprintf(cmd, sizeof cmd,
             "'%s' -d -C --no-show-raw-insn --start-address=0x%llx --stop-address=0x%llx "
             "'%s' 2>/dev/null",
             a->objdump, (unsigned long long)lo, (unsigned long long)hi, path);
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    int shown = 0;
    while (fgets(line, sizeof line, f)) {
        char *end;
        unsigned long long at = strtoull(line, &end, 16);
        if (end == line || *end != ':' || line[0] != ' ') continue; /* headers, labels */
        line[strcspn(line, "\n")] = 0;
        char *insn = end + 1;
        while (*insn == ' ' || *insn == '\t')
            insn++;
        uint64_t w = 0;
        for (uint32_t i = 0; i < npcs; i++)
            if (pcs[i].pc == (uint64_t)((int64_t)at + bias)) w += pcs[i].w;
        if (w)
            printf("%7.2f%% %10llu  %8llx:  %s\n", ann_pct(a, w), (unsigned long long)w, at, insn);
        else
            printf("%8s %10s  %8llx:  %s\n", "", "", at, insn);
        shown++;
    }
    pclose(f);
    return shown ? 0 : -1;
}

static int ann_native(const Ann *a, uint32_t f, const char *label) {
    const SpProfile *p = a->p;
    const SpFrame *fr = &p->frames[f];
    uint64_t self, total;
    ann_weights(p, f, &self, &total);
    printf("## %s   self %llu (%.2f%%), total %llu (%.2f%%) %s\n", label, (unsigned long long)self,
           ann_pct(a, self), (unsigned long long)total, ann_pct(a, total), ann_unit(a));
    AnnPc *pcs = NULL;
    uint32_t npcs = ann_pcs(p, f, &pcs);
    uint32_t mi = sp_mapping_find(p, fr->addr ? fr->addr : npcs ? pcs[0].pc : 0);
    int done = -1;
    if (mi != SP_NONE && fr->addr) {
        const SpMapping *mp = &p->mappings[mi];
        const char *path = sp_str(p, mp->path), *want = sp_str(p, mp->build_id);
        char bid[256];
        uint64_t link = ann_elf_addr(path, fr->addr - mp->start + mp->offset, bid, sizeof bid);
        int64_t bias = (int64_t)(fr->addr - link);
        uint64_t size = fr->size ? fr->size : npcs ? pcs[npcs - 1].pc - fr->addr + 1 : 1;
        if (*want && strcmp(want, bid))
            printf("# %s: build ID %s, the profile's is %s: not disassembled\n", path,
                   *bid ? bid : "(none)", want);
        else if (access(path, R_OK) == 0) {
            printf("# %s, 0x%llx-0x%llx; per instruction: the %s that stopped on it\n", path,
                   (unsigned long long)link, (unsigned long long)(link + size), ann_unit(a));
            done = ann_objdump(a, path, link, link + size, bias, pcs, npcs);
            if (done && *a->objdump) printf("# (no disassembly: %s did not run)\n", a->objdump);
        }
    }
    if (done) {
        printf("# sampled addresses (%u)\n", npcs);
        for (uint32_t i = 0; i < npcs; i++)
            printf("%7.2f%% %10llu  0x%llx  %s+0x%llx\n", ann_pct(a, pcs[i].w),
                   (unsigned long long)pcs[i].w, (unsigned long long)pcs[i].pc, label,
                   (unsigned long long)(pcs[i].pc - fr->addr));
        if (!npcs) printf("  (no sample stopped in it: it only called others)\n");
    }
    printf("\n");
    free(pcs);
    return 0;
}

/* ---- the command ------------------------------------------------------------------------ */

/* The frames METHOD names: equal names, else the names the expression matches. */
static uint32_t ann_match(const SpProfile *p, const char *method, uint32_t *out, uint32_t max,
                          uint32_t *found, char *err, size_t errlen) {
    char b[512];
    uint32_t n = 0;
    *found = 0;
    for (uint32_t i = 0; i < p->nframes; i++)
        if (!strcmp(sp_frame_label(p, i, b, sizeof b), method) && (*found)++ < max) out[n++] = i;
    if (*found) return n;
    regex_t re;
    int rc = regcomp(&re, method, REG_EXTENDED | REG_NOSUB);
    if (rc) {
        regerror(rc, &re, err, errlen);
        return UINT32_MAX;
    }
    for (uint32_t i = 0; i < p->nframes; i++)
        if (!regexec(&re, sp_frame_label(p, i, b, sizeof b), 0, NULL, 0) && (*found)++ < max)
            out[n++] = i;
    regfree(&re);
    return n;
}

static int ann_run(SpProfile *p, const char *method, const char *classpath, const char *objdump,
                   uint32_t max) {
    if (sp_ccmap_ensure(p)) {
        fprintf(stderr, "sampo annotate: out of memory\n");
        return 1;
    }
    Ann a = {p, sp_weight_unit(p), sp_total_weight(p), objdump, NULL};
    if (!a.total)
        for (uint32_t i = 0; i < p->cc.nmethods; i++)
            a.total += p->cc.methods[i].self;
    uint32_t *fs = malloc((p->nframes + 1) * sizeof *fs), found;
    char err[256];
    if (!fs) return 1;
    uint32_t n = ann_match(p, method, fs, max ? max : p->nframes, &found, err, sizeof err);
    if (n == UINT32_MAX || !n) {
        if (n)
            fprintf(stderr, "sampo annotate: METHOD '%s': %s\n", method, err);
        else
            fprintf(stderr, "sampo annotate: no method named or matching '%s' in the profile\n",
                    method);
        free(fs);
        return n ? 2 : 1;
    }
    a.src = sampo_somsrc_new(p, classpath);
    int rc = 0;
    char b[512];
    for (uint32_t i = 0; i < n && !rc; i++) {
        const char *label = sp_frame_label(p, fs[i], b, sizeof b);
        rc = p->frames[fs[i]].kind == SP_FRAME_VM_METHOD ? ann_som(&a, fs[i], label)
                                                         : ann_native(&a, fs[i], label);
    }
    if (found > n) printf("# %u more methods match; --max N shows more\n", found - n);
    sampo_somsrc_free(a.src);
    free(fs);
    return rc ? 1 : 0;
}

int cmd_annotate(int argc, char **argv) {
    enum { O_CLASSPATH = 256, O_OBJDUMP, O_MAX };
    static const struct option opts[] = {{"classpath", required_argument, 0, O_CLASSPATH},
                                         {"objdump", required_argument, 0, O_OBJDUMP},
                                         {"max", required_argument, 0, O_MAX},
                                         {"thread", required_argument, 0, 'T'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *classpath = NULL, *objdump = "objdump", *thread = NULL;
    uint64_t max = 10;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_CLASSPATH:
            classpath = optarg;
            break;
        case O_OBJDUMP:
            objdump = optarg;
            break;
        case O_MAX:
            if (sampo_parse_u64(optarg, &max) || max > 1000000) {
                fprintf(stderr, "sampo annotate: --max: expected a count, got '%s'\n", optarg);
                return 2;
            }
            break;
        case 'T':
            thread = optarg;
            break;
        case 'h':
            fputs(annotate_usage, stdout);
            return 0;
        default:
            fputs(annotate_usage, stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "%s: expected METHOD (a name as sampo report prints it)\n", argv[0]);
        fputs(annotate_usage, stderr);
        return 2;
    }
    const char *method = argv[optind++];
    const char *path = sampo_file_arg(argc, argv, optind, annotate_usage);
    if (!path) return 2;
    SpProfile *p = sampo_load_thread(path, thread);
    if (!p) return 1;
    int rc = ann_run(p, method, classpath, objdump, (uint32_t)max);
    sp_profile_free(p);
    return rc;
}
