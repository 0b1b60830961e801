/* SPDX-License-Identifier: MIT */
/*
 * somsrc.c - SOM methods' source lines through som's own compiler (see somsrc.h).
 * One VM per SampoSomSrc, made on first use; classes load lazily, as in a program run.
 */
#include "somsrc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "class.h"
#include "object.h"
#include "vm.h"

struct SampoSomSrc {
    char *classpath;
    SomVM *vm;     /* made on first use */
    bool vm_tried; /* ... and not again after a failure */
    FILE *quiet;   /* the VM's stdout and stderr: compile errors are not ours to print */
};

/* ---- the class path of the profiled run ----------------------------------------------- */

/* Appends dir to the ':'-separated list *cp (owned). */
static void cp_add(char **cp, const char *dir, size_t len) {
    size_t old = *cp ? strlen(*cp) : 0;
    char *r = realloc(*cp, old + len + 2);
    if (!r) return;
    if (old) r[old++] = ':';
    memcpy(r + old, dir, len);
    r[old + len] = 0;
    *cp = r;
}

/* The -cp entries and the main file's directory of a som command line (words separated by
 * blanks, as the engine records it), then '.'. */
static char *cp_from_cmdline(const char *cmd) {
    static const char *const valued[] = {"--threads", "--prof-hz", "--prof-out", "--prof-dump"};
    char *cp = NULL, *words = strdup(cmd ? cmd : ""), *save = NULL;
    bool first = true, want_cp = false, skip = false;
    for (char *w = words ? strtok_r(words, " \t", &save) : NULL; w;
         w = strtok_r(NULL, " \t", &save)) {
        if (first) { /* the program */
            first = false;
            continue;
        }
        if (want_cp || skip) {
            if (want_cp) cp_add(&cp, w, strlen(w));
            want_cp = skip = false;
            continue;
        }
        if (!strcmp(w, "-cp") || !strcmp(w, "--classpath")) {
            want_cp = true;
        } else if (!strncmp(w, "--classpath=", 12)) {
            cp_add(&cp, w + 12, strlen(w + 12));
        } else if (!strcmp(w, "-H")) {
            skip = true;
        } else if (w[0] == '-') {
            for (size_t i = 0; i < sizeof valued / sizeof *valued; i++)
                if (!strcmp(w, valued[i])) skip = true;
        } else { /* the main class: its directory */
            char *slash = strrchr(w, '/');
            if (slash) cp_add(&cp, slash == w ? "/" : w, slash == w ? 1 : (size_t)(slash - w));
            break;
        }
    }
    cp_add(&cp, ".", 1);
    free(words);
    return cp;
}

SampoSomSrc *sampo_somsrc_new(const SpProfile *p, const char *classpath) {
    bool som = false;
    for (uint32_t i = 0; i < p->nframes && !som; i++)
        som = p->frames[i].kind == SP_FRAME_VM_METHOD;
    if (!som) return NULL;
    SampoSomSrc *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->classpath = classpath ? strdup(classpath) : cp_from_cmdline(sp_meta_get(p, "cmdline"));
    if (!s->classpath) {
        free(s);
        return NULL;
    }
    return s;
}

void sampo_somsrc_free(SampoSomSrc *s) {
    if (!s) return;
    if (s->vm) som_vm_free(s->vm);
    if (s->quiet) fclose(s->quiet);
    free(s->classpath);
    free(s);
}

static SomVM *somsrc_vm(SampoSomSrc *s) {
    if (s->vm || s->vm_tried) return s->vm;
    s->vm_tried = true;
    SomOptions o = {0};
    o.corelib_dir = getenv("SOM_CORELIB");
    if (o.corelib_dir && !*o.corelib_dir) o.corelib_dir = NULL;
    char err[1024];
    s->vm = som_vm_new(&o, s->classpath, err, sizeof err);
    if (s->vm && (s->quiet = fopen("/dev/null", "w"))) s->vm->out = s->vm->err = s->quiet;
    return s->vm;
}

/* ---- methods ---------------------------------------------------------------------------- */

/* The non-inlined blocks of m, nested ones too (depth first, in literal order), into out;
 * answers how many (at most max). */
static int blocks_of(SomMethod *m, SomMethod **out, int n, int max, int depth) {
    for (uint32_t i = 0; i < m->nliterals && depth < 16; i++) {
        Value v = m->literals[i];
        if (!som_is_obj(v) || som_hdr(v)->kind != OBJ_METHOD) continue;
        SomMethod *b = (SomMethod *)v;
        if (b->kind != MK_BLOCK || n >= max) continue;
        out[n++] = b;
        n = blocks_of(b, out, n, max, depth + 1);
    }
    return n;
}

static void method_info(const SomMethod *m, SampoSomMethod *out) {
    out->m = m;
    out->file = m->holder && m->holder->file ? m->holder->file->bytes : "?";
    out->first = out->last = m->line;
    out->block = m->kind == MK_BLOCK;
    for (uint32_t i = 0; i < m->nlines; i++)
        if (m->lines[i].line > out->last) out->last = m->lines[i].line;
}

int sampo_somsrc_method(SampoSomSrc *s, const char *label, uint32_t bci_hint, SampoSomMethod *out) {
    const char *sep = strstr(label, ">>");
    SomVM *vm = sep && sep > label ? somsrc_vm(s) : NULL;
    if (!vm) return -1;
    char cls_name[256], sel[256];
    size_t cl = (size_t)(sep - label);
    bool meta = cl > 6 && !strncmp(sep - 6, " class", 6);
    if (meta) cl -= 6;
    const char *sel_start = sep + 2;
    const char *blk = strstr(sel_start, " [block"); /* " [block]" or " [block L12]" */
    unsigned blk_line = 0;
    if (blk && sscanf(blk, " [block L%u]", &blk_line) != 1) blk_line = 0;
    size_t sl = blk ? (size_t)(blk - sel_start) : strlen(sel_start);
    if (cl >= sizeof cls_name || !sl || sl >= sizeof sel) return -1;
    memcpy(cls_name, label, cl);
    cls_name[cl] = 0;
    memcpy(sel, sel_start, sl);
    sel[sl] = 0;
    if (vm->exiting) vm->exiting = false; /* a class that did not compile is not fatal here */
    SomClass *cls = som_load_class(vm, som_symbol_cstr(vm, cls_name));
    if (!cls) return -1;
    if (meta) cls = cls->h.cls;
    SomMethod *m = som_lookup(vm, cls, som_symbol_cstr(vm, sel));
    if (!m || m->holder != cls || m->kind == MK_PRIMITIVE) return -1;
    if (blk) { /* the block of that line; else the only one, or the first covering the hint */
        SomMethod *b[64];
        int nb = blocks_of(m, b, 0, 64, 0), k = 0;
        if (blk_line)
            while (k < nb && b[k]->line != blk_line)
                k++;
        else
            while (nb > 1 && k < nb && !(bci_hint && bci_hint < b[k]->code_len))
                k++;
        if (k >= nb) return -1;
        m = b[k];
    }
    method_info(m, out);
    return 0;
}

const char *sampo_somsrc_classpath(const SampoSomSrc *s) {
    return s->classpath;
}

unsigned sampo_somsrc_line(const SampoSomMethod *m, uint32_t bci) {
    return class_method_line(m->m, bci);
}

int sampo_somsrc_site(SampoSomSrc *s, const char *label, uint32_t bci, char *buf, size_t n) {
    SampoSomMethod m;
    if (!s || sampo_somsrc_method(s, label, bci, &m)) return -1;
    const char *file = m.file;
    if (!strncmp(file, "./", 2)) file += 2;
    snprintf(buf, n, "%s:%u", file, sampo_somsrc_line(&m, bci));
    return 0;
}
