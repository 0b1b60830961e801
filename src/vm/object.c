/* SPDX-License-Identifier: MIT */
/*
 * object.c - creation of strings, symbols, arrays and instances; the symbol
 * and global tables; output; time. Runs on the VM thread only.
 */
#include "vm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "prims.h"

uint32_t som_str_hash(const char *bytes, size_t len) {
    uint32_t h = 5381;
    for (size_t i = 0; i < len; i++)
        h = h * 33 + (unsigned char)bytes[i];
    return h;
}

static SomString *string_alloc(SomVM *vm, const char *bytes, size_t len, int kind, SomClass *cls) {
    SomString *s = gc_alloc(vm, sizeof(SomString) + len + 1, kind, cls);
    s->len = len;
    if (len) memcpy(s->bytes, bytes, len);
    s->bytes[len] = 0;
    s->hash = som_str_hash(s->bytes, len);
    return s;
}

SomString *som_string_new(SomVM *vm, const char *bytes, size_t len) {
    return string_alloc(vm, bytes, len, OBJ_STRING, vm->stringClass);
}

SomString *som_string_cstr(SomVM *vm, const char *s) {
    return som_string_new(vm, s, strlen(s));
}

bool som_is_string_like(Value v) {
    return som_is_obj(v) && (som_hdr(v)->kind == OBJ_STRING || som_hdr(v)->kind == OBJ_SYMBOL);
}

/* ---- symbols ------------------------------------------------------------ */

static void symtab_grow(SymTab *t) {
    uint32_t ncap = t->slots ? (t->mask + 1) * 2 : 1024;
    SomString **n = calloc(ncap, sizeof *n);
    if (!n) abort();
    for (uint32_t i = 0; t->slots && i <= t->mask; i++) {
        SomString *s = t->slots[i];
        if (!s) continue;
        uint32_t j = s->hash & (ncap - 1);
        while (n[j])
            j = (j + 1) & (ncap - 1);
        n[j] = s;
    }
    free(t->slots);
    t->slots = n;
    t->mask = ncap - 1;
}

SomString *som_symbol(SomVM *vm, const char *bytes, size_t len) {
    SymTab *t = &vm->symbols;
    if (!t->slots || (t->count + 1) * 4 > (t->mask + 1) * 3) symtab_grow(t);
    uint32_t h = som_str_hash(bytes, len);
    uint32_t j = h & t->mask;
    for (SomString *s; (s = t->slots[j]); j = (j + 1) & t->mask)
        if (s->hash == h && s->len == len && memcmp(s->bytes, bytes, len) == 0) return s;
    /* bytes may point into a movable-free heap string: copy before allocating */
    SomString *s = string_alloc(vm, bytes, len, OBJ_SYMBOL, vm->symbolClass);
    t->slots[j] = s;
    t->count++;
    return s;
}

SomString *som_symbol_cstr(SomVM *vm, const char *s) {
    return som_symbol(vm, s, strlen(s));
}

/* ---- arrays and instances -------------------------------------------- */

SomArray *som_array_try_new(SomVM *vm, size_t len) {
    if (len > (SIZE_MAX - sizeof(SomArray)) / sizeof(Value)) return NULL;
    SomArray *a =
        gc_try_alloc(vm, sizeof(SomArray) + len * sizeof(Value), OBJ_ARRAY, vm->arrayClass);
    if (!a) return NULL;
    a->len = len;
    for (size_t i = 0; i < len; i++)
        a->items[i] = vm->nil;
    return a;
}

SomArray *som_array_new(SomVM *vm, size_t len) {
    SomArray *a = gc_alloc(vm, sizeof(SomArray) + len * sizeof(Value), OBJ_ARRAY, vm->arrayClass);
    a->len = len;
    for (size_t i = 0; i < len; i++)
        a->items[i] = vm->nil;
    return a;
}

SomInstance *som_instance_new(SomVM *vm, SomClass *cls) {
    uint32_t n = cls ? cls->ninstfields : 0;
    SomInstance *o = gc_alloc(vm, sizeof(SomInstance) + n * sizeof(Value), OBJ_INSTANCE, cls);
    o->nfields = n;
    for (uint32_t i = 0; i < n; i++)
        o->fields[i] = vm->nil;
    return o;
}

/* ---- globals ------------------------------------------------------------
 * A global lives in its name's Symbol (gval), so reading one is a load; the
 * table's version still changes on every store for caches keyed on it. */

bool som_global_get(SomVM *vm, SomString *sym, Value *out) {
    (void)vm;
    if (!sym->gval) return false;
    *out = sym->gval;
    return true;
}

void som_global_put(SomVM *vm, SomString *sym, Value v) {
    if (!sym->gval) vm->globals.count++;
    sym->gval = v;
    vm->globals.version++;
}

/* ---- errors, output, time ------------------------------------------- */

int som_prim_error(SomVM *vm, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(vm->errmsg, sizeof vm->errmsg, fmt, ap);
    va_end(ap);
    return PRIM_ERROR;
}

int som_prim_exit(SomVM *vm, int status) {
    vm->exit_status = status;
    vm->exiting = true;
    return PRIM_EXIT;
}

void som_write(SomVM *vm, FILE *f, const char *bytes, size_t len) {
    (void)vm;
    if (len) fwrite(bytes, 1, len, f);
}

uint64_t som_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

char *som_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) { /* X.som may be a directory */
        fclose(f);
        errno = EISDIR;
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
        n += r;
        if (cap - n - 1 == 0) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

const PrimDef *prim_lookup(const char *cls, bool meta, const char *sel) {
    const PrimDef *tables[] = {prim_object_defs, prim_number_defs, prim_string_defs,
                               prim_prof_defs};
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
        for (const PrimDef *d = tables[t]; d->cls; d++)
            if (d->meta == meta && strcmp(d->cls, cls) == 0 && strcmp(d->sel, sel) == 0) return d;
    return NULL;
}
