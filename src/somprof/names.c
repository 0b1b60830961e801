/* SPDX-License-Identifier: MIT */
/*
 * names.c - method names (see names.h).  The intern table is a process-wide open-addressing
 * set under one mutex; interned strings live until exit (a profile keeps referring to them).
 */
#include "names.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "class.h"
#include "sampo.h"

static pthread_mutex_t spn_mu = PTHREAD_MUTEX_INITIALIZER;
static char **spn_strs;
static uint32_t spn_mask, spn_count;

static uint64_t spn_strhash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int spn_grow(void) {
    uint32_t mask = spn_mask ? spn_mask * 2 + 1 : 1023;
    char **strs = calloc((size_t)mask + 1, sizeof *strs);
    if (!strs) return -1;
    for (uint32_t i = 0; spn_strs && i <= spn_mask; i++) {
        if (!spn_strs[i]) continue;
        uint64_t h = spn_strhash(spn_strs[i]);
        while (strs[h & mask])
            h++;
        strs[h & mask] = spn_strs[i];
    }
    free(spn_strs);
    spn_strs = strs;
    spn_mask = mask;
    return 0;
}

const char *spn_intern(const char *s) {
    const char *r = NULL;
    pthread_mutex_lock(&spn_mu);
    if ((spn_count + 1) * 2 > spn_mask && spn_grow()) goto out;
    uint64_t h = spn_strhash(s);
    for (;; h++) {
        char *x = spn_strs[h & spn_mask];
        if (!x) break;
        if (!strcmp(x, s)) {
            r = x;
            goto out;
        }
    }
    char *copy = strdup(s);
    if (!copy) goto out;
    spn_strs[h & spn_mask] = copy;
    spn_count++;
    r = copy;
out:
    pthread_mutex_unlock(&spn_mu);
    return r;
}

void spn_format(const SomMethod *m, char *buf, size_t len) {
    char base[4096]; /* SOM names are ASCII; 4 kB holds any real Class>>selector */
    class_method_name(m, base, sizeof base);
    if (m->kind == MK_BLOCK) {
        size_t k = strlen(base);
        if (k > 8 && !strcmp(base + k - 8, " [block]")) base[k - 8] = 0;
        snprintf(buf, len, "%s [block L%u]", base, (unsigned)m->line);
    } else {
        snprintf(buf, len, "%s", base);
    }
}

static uint64_t spn_ptrhash(const SomMethod *m) {
    uint64_t h = (uint64_t)(uintptr_t)m * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 31);
}

static SpnTable *spn_table_new(uint32_t mask) {
    SpnTable *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->e = calloc((size_t)mask + 1, sizeof *t->e);
    if (!t->e) {
        free(t);
        return NULL;
    }
    t->mask = mask;
    return t;
}

int spn_init(SpnNames *n, int register_with_sampo) {
    SpnTable *t = spn_table_new(1023);
    n->register_with_sampo = register_with_sampo;
    atomic_store(&n->cur, t);
    return t ? 0 : -1;
}

void spn_fini(SpnNames *n) {
    SpnTable *t = atomic_load(&n->cur);
    while (t) {
        SpnTable *next = t->retired;
        free(t->e);
        free(t);
        t = next;
    }
    atomic_store(&n->cur, NULL);
}

bool spn_has(const SpnNames *n, const SomMethod *m) {
    const SpnTable *t = atomic_load_explicit(&((SpnNames *)n)->cur, memory_order_acquire);
    if (!t) return true;
    for (uint64_t h = spn_ptrhash(m);; h++) {
        const SomMethod *x = t->e[h & t->mask].method;
        if (!x) return false;
        if (x == m) return true;
    }
}

static void spn_put(SpnTable *t, const SomMethod *m, const char *name) {
    uint64_t h = spn_ptrhash(m);
    while (t->e[h & t->mask].method)
        h++;
    t->e[h & t->mask].name = name;
    /* the name is written before the method becomes visible to the handler */
    __atomic_store_n(&t->e[h & t->mask].method, m, __ATOMIC_RELEASE);
    t->count++;
}

static SpnTable *spn_room(SpnNames *n) {
    SpnTable *t = atomic_load(&n->cur);
    if (!t || (t->count + 1) * 2 <= t->mask) return t;
    SpnTable *g = spn_table_new(t->mask * 2 + 1);
    if (!g) return NULL;
    for (uint32_t i = 0; i <= t->mask; i++)
        if (t->e[i].method) spn_put(g, t->e[i].method, t->e[i].name);
    g->retired = t;
    atomic_store_explicit(&n->cur, g, memory_order_release);
    return g;
}

/* ---- sources by name: the file and definition line every profile frame of a name gets
 * (spn_frame), so the frames of the exact and time views and libsampo's agree.  Keyed by
 * the name's text (open addressing under spn_mu; strings interned, kept until exit). */

typedef struct SpnSrc {
    const char *name, *file; /* interned; file NULL = unknown */
    uint32_t line;
} SpnSrc;

static SpnSrc *spn_srcs;
static uint32_t spn_src_mask, spn_src_count;

static SpnSrc *spn_src_slot(const char *name) { /* under spn_mu; NULL when absent/full */
    if (!spn_srcs) return NULL;
    for (uint64_t h = spn_strhash(name);; h++) {
        SpnSrc *x = &spn_srcs[h & spn_src_mask];
        if (!x->name || !strcmp(x->name, name)) return x;
    }
}

static int spn_src_grow(void) { /* under spn_mu */
    uint32_t mask = spn_src_mask ? spn_src_mask * 2 + 1 : 1023;
    SpnSrc *old = spn_srcs, *n = calloc((size_t)mask + 1, sizeof *n);
    if (!n) return -1;
    uint32_t omask = spn_src_mask;
    spn_srcs = n, spn_src_mask = mask;
    for (uint32_t i = 0; old && i <= omask; i++)
        if (old[i].name) *spn_src_slot(old[i].name) = old[i];
    free(old);
    return 0;
}

/* Remembers the file and line of name (interned), the name of m. */
static void spn_note_source(const char *name, const SomMethod *m) {
    const char *file = m->holder && m->holder->file ? spn_intern(m->holder->file->bytes) : NULL;
    pthread_mutex_lock(&spn_mu);
    if ((spn_src_count + 1) * 2 <= spn_src_mask || !spn_src_grow()) {
        SpnSrc *x = spn_src_slot(name);
        spn_src_count += !x->name;
        *x = (SpnSrc){name, file, m->line};
    }
    pthread_mutex_unlock(&spn_mu);
}

uint32_t spn_frame(SpProfile *p, const char *name) {
    SpnSrc src = {0};
    pthread_mutex_lock(&spn_mu);
    const SpnSrc *x = spn_src_slot(name);
    if (x && x->name) src = *x;
    pthread_mutex_unlock(&spn_mu);
    return sp_frame_addv(p, SP_FRAME_VM_METHOD, name, NULL, 0, 0, src.file, src.line);
}

/* The method's file, definition line and bytecode -> line table, for the lines of
 * libsampo's profiles (best effort: a method without them only lacks its lines). */
static void spn_register_source(const SomMethod *m) {
    const char *file = m->holder && m->holder->file ? m->holder->file->bytes : NULL;
    SampoLine *l = m->nlines ? malloc(m->nlines * sizeof *l) : NULL;
    uint32_t n = l ? m->nlines : 0;
    for (uint32_t i = 0; i < n; i++)
        l[i] = (SampoLine){m->lines[i].bci, m->lines[i].line};
    sampo_vm_method_source((uint64_t)(uintptr_t)m, file, m->line, l, n);
    free(l);
}

const char *spn_name(SpnNames *n, const SomMethod *m) {
    SpnTable *t = atomic_load(&n->cur);
    if (!t) return "?";
    for (uint64_t h = spn_ptrhash(m);; h++) {
        const SpnEntry *x = &t->e[h & t->mask];
        if (!x->method) break;
        if (x->method == m) return x->name;
    }
    char buf[4096 + 32];
    spn_format(m, buf, sizeof buf);
    const char *name = spn_intern(buf);
    if (!name || !(t = spn_room(n))) return "?";
    spn_note_source(name, m);
    if (n->register_with_sampo) {
        sampo_vm_name_method((uint64_t)(uintptr_t)m, name);
        spn_register_source(m);
    }
    spn_put(t, m, name);
    return name;
}
