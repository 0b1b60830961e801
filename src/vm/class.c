/* SPDX-License-Identifier: MIT */
/*
 * class.c - bootstrap, class loading and method lookup (see class.h).
 *
 * The compiler allocates while it builds a class, keeping half-made objects
 * in C locals, so loading runs with the collector inhibited; loading is
 * bounded by the size of the source file.
 */
#include "class.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/codegen.h"
#include "../compiler/parser.h"
#include "bytecode.h"
#include "prims.h"

/* ---- lookup ---------------------------------------------------------- */

static void mtab_put(SomClass *c, SomString *sel, SomMethod *m) {
    uint32_t j = sel->hash & c->mtab_mask;
    while (c->mtab[j].sel && c->mtab[j].sel != sel)
        j = (j + 1) & c->mtab_mask;
    c->mtab[j].sel = sel;
    c->mtab[j].method = m;
}

static SomMethod *mtab_get(const SomClass *c, const SomString *sel) {
    if (!c->mtab) return NULL;
    for (uint32_t j = sel->hash & c->mtab_mask; c->mtab[j].sel; j = (j + 1) & c->mtab_mask)
        if (c->mtab[j].sel == sel) return c->mtab[j].method;
    return NULL;
}

SomMethod *som_lookup(SomVM *vm, SomClass *cls, SomString *sel) {
    uintptr_t key = ((uintptr_t)cls >> 4) ^ ((uintptr_t)sel >> 3);
    LookupEntry *e = &vm->lookup_cache[key & (SOM_LOOKUP_CACHE - 1)];
    if (e->cls == cls && e->sel == sel) return e->method;
    SomMethod *m = NULL;
    for (SomClass *c = cls; c && !m; c = c->super)
        m = mtab_get(c, sel);
    e->cls = cls;
    e->sel = sel;
    e->method = m;
    return m;
}

/* Rebuilds the selector table from the methods array (after loading or a
 * reflective change). */
static void rebuild_mtab(SomVM *vm, SomClass *c) {
    uint32_t n = (uint32_t)c->methods->len, cap = 8;
    while (cap < n * 2 + 2)
        cap *= 2;
    free(c->mtab);
    c->mtab = calloc(cap, sizeof *c->mtab);
    if (!c->mtab) abort();
    c->mtab_mask = cap - 1;
    for (uint32_t i = 0; i < n; i++) {
        SomMethod *m = (SomMethod *)c->methods->items[i];
        mtab_put(c, m->signature, m);
    }
    memset(vm->lookup_cache, 0, sizeof vm->lookup_cache);
}

/* ---- names and lines -------------------------------------------------- */

void class_method_name(const SomMethod *m, char *buf, size_t n) {
    const SomMethod *home = m->kind == MK_BLOCK && m->home ? m->home : m;
    const char *cls = m->holder && m->holder->name ? m->holder->name->bytes : "?";
    snprintf(buf, n, "%s>>%s%s", cls, home->signature ? home->signature->bytes : "?",
             m->kind == MK_BLOCK ? " [block]" : "");
}

unsigned class_method_line(const SomMethod *m, uint32_t bci) {
    unsigned line = m->line;
    for (uint32_t i = 0; i < m->nlines && m->lines[i].bci <= bci; i++)
        line = m->lines[i].line;
    return line;
}

/* ---- class objects ------------------------------------------------------ */

static SomClass *new_class_obj(SomVM *vm, SomClass *meta) {
    SomClass *c = gc_alloc(vm, sizeof(SomClass), OBJ_CLASS, meta);
    return c;
}

/* A class and its metaclass, unnamed and empty. */
static SomClass *new_class_pair(SomVM *vm) {
    SomClass *meta = new_class_obj(vm, vm->metaclassClass);
    meta->is_meta = 1;
    return new_class_obj(vm, meta);
}

static SomArray *names_array(SomVM *vm, SomArray *inherited, const NameList *own) {
    size_t base = inherited ? inherited->len : 0;
    SomArray *a = som_array_new(vm, base + (size_t)own->n);
    for (size_t i = 0; i < base; i++)
        a->items[i] = inherited->items[i];
    for (int i = 0; i < own->n; i++)
        a->items[base + i] = SOM_V(som_symbol_cstr(vm, own->names[i]));
    return a;
}

static int prim_missing(SomVM *vm, Value *args) {
    (void)args;
    return som_prim_error(vm, "primitive not implemented");
}

static bool inherits(const SomClass *c, const SomClass *ancestor) {
    for (; c; c = c->super)
        if (c == ancestor) return true;
    return false;
}

/* Older core libraries declare `superClass name instanceFields
 * instanceInvokables` as fields of Class and read them in SOM code; keep
 * such fields of a class object in step with the VM's own data. */
static void sync_hidden_fields(SomVM *vm, SomClass *c) {
    SomArray *names = c->h.cls->field_names;
    for (uint64_t i = 0; i < names->len && i < c->cfields->len; i++) {
        const char *n = ((SomString *)names->items[i])->bytes;
        Value v = 0;
        if (!strcmp(n, "superClass"))
            v = c->super ? SOM_V(c->super) : vm->nil;
        else if (!strcmp(n, "name"))
            v = SOM_V(c->name);
        else if (!strcmp(n, "instanceFields"))
            v = SOM_V(c->field_names);
        else if (!strcmp(n, "instanceInvokables"))
            v = SOM_V(c->methods);
        if (v) c->cfields->items[i] = v;
    }
}

static SomMethod *primitive_method(SomVM *vm, SomClass *holder, const char *clsname, bool meta,
                                   MethodDef *def) {
    SomMethod *m = gc_alloc(vm, sizeof *m, OBJ_METHOD, vm->primitiveClass);
    m->kind = MK_PRIMITIVE;
    m->signature = som_symbol_cstr(vm, def->selector);
    m->holder = holder;
    m->line = (uint32_t)def->line;
    const char *sel = def->selector;
    int nargs = 0;
    if (strchr("~&|*/\\+=><,@%-", sel[0]))
        nargs = 1;
    else
        for (const char *p = sel; *p; p++)
            nargs += *p == ':';
    m->nargs = (uint16_t)nargs;
    const PrimDef *pd = prim_lookup(clsname, meta, sel);
    m->prim = pd ? pd->fn : NULL;
    m->prim_kind = pd ? (uint8_t)pd->kind : PK_PLAIN;
    if (!pd) m->prim = prim_missing;
    return m;
}

static bool compile_side(SomVM *vm, SomClass *holder, const char *clsname, bool meta,
                         MethodDefList *defs, const char *file, char *err, size_t errlen) {
    SomArray *fields = holder->field_names;
    /* instances of Class and its subclasses are class objects: their fields
     * live in cfields, whichever side the method is on */
    bool class_fields = meta || inherits(holder, vm->classClass);
    const char **fnames = calloc(fields->len + 1, sizeof *fnames);
    if (!fnames) abort();
    for (uint64_t i = 0; i < fields->len; i++)
        fnames[i] = ((SomString *)fields->items[i])->bytes;
    CompileEnv env = {vm, holder, fnames, (int)fields->len, class_fields, file};
    SomArray *methods = som_array_new(vm, (size_t)defs->n);
    bool ok = true;
    for (int i = 0; i < defs->n && ok; i++) {
        MethodDef *d = defs->items[i];
        SomMethod *m = d->is_primitive ? primitive_method(vm, holder, clsname, meta, d)
                                       : codegen_method(&env, d, err, errlen);
        if (!m)
            ok = false;
        else
            methods->items[i] = SOM_V(m);
    }
    free(fnames);
    if (!ok) return false;
    holder->methods = methods;
    rebuild_mtab(vm, holder);
    return true;
}

static SomClass *resolve_super(SomVM *vm, const ClassDef *def, const char *file, bool *nosuper,
                               char *err, size_t errlen) {
    *nosuper = false;
    if (def->super_name && !strcmp(def->super_name, "nil")) {
        *nosuper = true;
        return NULL;
    }
    const char *sn = def->super_name ? def->super_name : "Object";
    SomString *sym = som_symbol_cstr(vm, sn);
    Value v;
    if (som_global_get(vm, sym, &v) && som_is_obj(v) && som_hdr(v)->kind == OBJ_CLASS)
        return (SomClass *)v;
    SomClass *c = som_load_class(vm, sym);
    if (!c && !vm->exiting)
        snprintf(err, errlen, "%s: superclass %s of %s could not be loaded", file, sn, def->name);
    return c;
}

/* Fills `cls` (a shell or NULL for a new class) from a parsed definition. */
static SomClass *build_class(SomVM *vm, ClassDef *def, SomClass *cls, const char *file, char *err,
                             size_t errlen) {
    bool nosuper;
    SomClass *super = resolve_super(vm, def, file, &nosuper, err, errlen);
    if (!super && !nosuper) return NULL;
    if (!cls) cls = new_class_pair(vm);
    SomClass *meta = cls->h.cls;
    cls->super = super;
    meta->super = super ? super->h.cls : vm->classClass;
    char buf[512];
    cls->name = som_symbol_cstr(vm, def->name);
    snprintf(buf, sizeof buf, "%s class", def->name);
    meta->name = som_symbol_cstr(vm, buf);
    cls->file = meta->file = som_string_cstr(vm, file);
    cls->field_names = names_array(vm, super ? super->field_names : NULL, &def->inst_fields);
    cls->ninstfields = (uint32_t)cls->field_names->len;
    meta->field_names =
        names_array(vm, meta->super ? meta->super->field_names : NULL, &def->class_fields);
    meta->ninstfields = (uint32_t)meta->field_names->len;
    cls->cfields = som_array_new(vm, meta->ninstfields);
    meta->cfields = som_array_new(vm, 0);
    if (!compile_side(vm, cls, def->name, false, &def->inst_methods, file, err, errlen))
        return NULL;
    if (!compile_side(vm, meta, def->name, true, &def->class_methods, file, err, errlen))
        return NULL;
    meta->cfields = som_array_new(vm, vm->metaclassClass->ninstfields);
    sync_hidden_fields(vm, cls);
    sync_hidden_fields(vm, meta);
    return cls;
}

/* ---- finding sources --------------------------------------------------- */

static SomClass *load_source(SomVM *vm, const char *name, SomClass *shell, char *err,
                             size_t errlen);

/* The source of class `name` (owned) and its length in *len (it may hold
 * NUL bytes, which the parser reports). */
static char *find_source(SomVM *vm, const char *name, char *path, size_t pathlen, size_t *len) {
    for (int i = 0; i < vm->nclasspath; i++) {
        snprintf(path, pathlen, "%s/%s.som", vm->classpath[i], name);
        char *src = som_read_file(path, len);
        if (src) return src;
    }
    if (vm->opts.corelib_dir) {
        snprintf(path, pathlen, "%s/%s.som", vm->opts.corelib_dir, name);
        return som_read_file(path, len);
    }
    const char *b = class_builtin_source(name);
    if (!b) return NULL;
    snprintf(path, pathlen, "<core-lib>/%s.som", name);
    *len = strlen(b);
    return strdup(b);
}

static SomClass *load_into(SomVM *vm, const char *name, SomClass *shell, char *err, size_t errlen) {
    for (int i = 0; i < vm->nloading; i++)
        if (!strcmp(vm->loading[i], name)) {
            snprintf(err, errlen, "class %s inherits from itself (cyclic superclass chain)", name);
            return NULL;
        }
    if (vm->nloading == (int)(sizeof vm->loading / sizeof *vm->loading)) {
        snprintf(err, errlen, "superclass chain of %s is too deep", name);
        return NULL;
    }
    vm->loading[vm->nloading++] = name;
    SomClass *c = load_source(vm, name, shell, err, errlen);
    vm->nloading--;
    return c;
}

static SomClass *load_source(SomVM *vm, const char *name, SomClass *shell, char *err,
                             size_t errlen) {
    char path[4096];
    size_t len = 0;
    char *src = find_source(vm, name, path, sizeof path, &len);
    if (!src) {
        snprintf(err, errlen, "class %s not found on the class path", name);
        return NULL;
    }
    uint8_t saved = vm->state;
    som_set_state(vm, VMS_COMPILE);
    uint64_t t0 = som_now_ns();
    vm->heap.inhibit++;
    Arena arena = {0};
    ClassDef def;
    SomClass *cls = NULL;
    if (parse_class_n(&arena, path, src, len, &def, err, errlen)) {
        if (strcmp(def.name, name) != 0)
            snprintf(err, errlen, "%s:1:1: expected class %s in this file, got %s", path, name,
                     def.name);
        else
            cls = build_class(vm, &def, shell, path, err, errlen);
    }
    arena_free(&arena);
    free(src);
    if (cls) som_global_put(vm, cls->name, SOM_V(cls));
    vm->heap.inhibit--;
    vm->compile_ns += som_now_ns() - t0;
    som_set_state(vm, saved);
    return cls;
}

SomClass *som_load_class(SomVM *vm, SomString *name) {
    char err[1024] = "";
    Value v;
    if (som_global_get(vm, name, &v) && som_is_obj(v) && som_hdr(v)->kind == OBJ_CLASS)
        return (SomClass *)v;
    SomClass *c = load_into(vm, name->bytes, NULL, err, sizeof err);
    if (!c && err[0] && !strstr(err, "not found on the class path") && !vm->exiting) {
        fprintf(vm->err, "som: %s\n", err);
        vm->exit_status = 1;
        vm->exiting = true;
    }
    return c;
}

/* ---- bootstrap --------------------------------------------------------- */

static const struct {
    size_t offset;
    const char *name;
    const char *super;
} core_classes[] = {
#define CC(field, name, super)                                                                     \
    { offsetof(SomVM, field), name, super }
    CC(objectClass, "Object", NULL),           CC(classClass, "Class", "Object"),
    CC(metaclassClass, "Metaclass", "Class"),  CC(nilClass, "Nil", "Object"),
    CC(arrayClass, "Array", "Object"),         CC(methodClass, "Method", "Object"),
    CC(primitiveClass, "Primitive", "Object"), CC(integerClass, "Integer", "Object"),
    CC(stringClass, "String", "Object"),       CC(symbolClass, "Symbol", "String"),
    CC(doubleClass, "Double", "Object"),       CC(blockClass, "Block", "Object"),
    CC(block1Class, "Block1", "Block"),        CC(block2Class, "Block2", "Block"),
    CC(block3Class, "Block3", "Block"),        CC(booleanClass, "Boolean", "Object"),
    CC(trueClass, "True", "Boolean"),          CC(falseClass, "False", "Boolean"),
    CC(systemClass, "System", "Object"),
#undef CC
};
#define NCORE (sizeof core_classes / sizeof *core_classes)

static SomClass **core_slot(SomVM *vm, size_t i) {
    return (SomClass **)((char *)vm + core_classes[i].offset);
}

static void make_shells(SomVM *vm) {
    /* Metaclass first: every metaclass is an instance of it */
    SomClass *mc_meta = new_class_obj(vm, NULL);
    SomClass *mc = new_class_obj(vm, mc_meta);
    vm->metaclassClass = mc;
    mc_meta->h.cls = mc;
    mc_meta->is_meta = 1;
    for (size_t i = 0; i < NCORE; i++)
        if (*core_slot(vm, i) == NULL) *core_slot(vm, i) = new_class_pair(vm);
    for (size_t i = 0; i < NCORE; i++) {
        SomClass *c = *core_slot(vm, i);
        SomClass *super = NULL;
        for (size_t j = 0; core_classes[i].super && j < NCORE; j++)
            if (!strcmp(core_classes[j].name, core_classes[i].super)) super = *core_slot(vm, j);
        c->super = super;
        c->h.cls->super = super ? super->h.cls : NULL;
    }
    vm->objectClass->h.cls->super = vm->classClass;
}

static void make_names(SomVM *vm) {
    for (size_t i = 0; i < NCORE; i++) {
        SomClass *c = *core_slot(vm, i);
        char buf[128];
        c->name = som_symbol_cstr(vm, core_classes[i].name);
        snprintf(buf, sizeof buf, "%s class", core_classes[i].name);
        c->h.cls->name = som_symbol_cstr(vm, buf);
        c->field_names = som_array_new(vm, 0);
        c->h.cls->field_names = som_array_new(vm, 0);
        c->cfields = som_array_new(vm, 0);
        c->methods = som_array_new(vm, 0);
        c->h.cls->methods = som_array_new(vm, 0);
        som_global_put(vm, c->name, SOM_V(c));
    }
}

/* Every metaclass's field list starts with Class's instance fields (older
 * core libraries declare `superClass name ...` there). Learn them from
 * Class.som before any class is built, so the lists computed while loading
 * (and the class-side field indices compiled from them) are right. */
static bool prepare_class_fields(SomVM *vm, char *errbuf, size_t errlen) {
    char path[4096];
    size_t len = 0;
    char *src = find_source(vm, "Class", path, sizeof path, &len);
    if (!src) {
        snprintf(errbuf, errlen, "class Class not found on the class path");
        return false;
    }
    Arena arena = {0};
    ClassDef def;
    bool ok = parse_class_n(&arena, path, src, len, &def, errbuf, errlen);
    if (ok) {
        vm->classClass->field_names =
            names_array(vm, vm->objectClass->field_names, &def.inst_fields);
        vm->classClass->ninstfields = (uint32_t)vm->classClass->field_names->len;
        vm->objectClass->h.cls->field_names = vm->classClass->field_names;
        vm->objectClass->h.cls->ninstfields = vm->classClass->ninstfields;
    }
    arena_free(&arena);
    free(src);
    return ok;
}

/* `^true` and `^false` bodies of the core classes: they were compiled before
 * true and false existed, so the compiler could not mark them trivial
 * (Object>>isNil, notNil, ...). Marks them now, as the compiler would have. */
static void mark_boolean_trivials(SomVM *vm, SomClass *c) {
    for (uint64_t i = 0; c->methods && i < c->methods->len; i++) {
        SomMethod *m = (SomMethod *)c->methods->items[i];
        if (m->kind != MK_METHOD || m->trivial != TRIV_NONE || m->code_len < 2 ||
            m->code[1] != BC_RETURN_LOCAL ||
            (m->code[0] != BC_PUSH_TRUE && m->code[0] != BC_PUSH_FALSE))
            continue;
        Value v = m->code[0] == BC_PUSH_TRUE ? vm->true_ : vm->false_;
        uint32_t k = 0;
        while (k < m->nliterals && m->literals[k] != v)
            k++;
        if (k == m->nliterals) {
            Value *nl = realloc(m->literals, (m->nliterals + 1) * sizeof *nl);
            if (!nl) abort();
            m->literals = nl;
            m->literals[m->nliterals++] = v;
        }
        m->trivial_arg = (uint16_t)k;
        m->trivial = TRIV_LITERAL;
    }
}

bool class_bootstrap(SomVM *vm, char *errbuf, size_t errlen) {
    vm->heap.inhibit++;
    make_shells(vm);
    vm->nil = SOM_V(som_instance_new(vm, vm->nilClass));
    /* symbols and arrays need nil and the String/Symbol/Array shells */
    make_names(vm);
    bool ok = prepare_class_fields(vm, errbuf, errlen);
    /* Class and Metaclass first: every metaclass's field list starts with
     * theirs (older core libraries give Class fields) */
    static const size_t order_first[] = {1, 2};
    for (size_t i = 0; i < 2 && ok; i++)
        ok = load_into(vm, core_classes[order_first[i]].name, *core_slot(vm, order_first[i]),
                       errbuf, errlen) != NULL;
    for (size_t i = 0; i < NCORE && ok; i++)
        if (i != 1 && i != 2)
            ok = load_into(vm, core_classes[i].name, *core_slot(vm, i), errbuf, errlen) != NULL;
    for (size_t i = 0; i < NCORE && ok;
         i++) { /* metaclass slots sized now that Metaclass is known */
        SomClass *c = *core_slot(vm, i);
        c->h.cls->cfields = som_array_new(vm, vm->metaclassClass->ninstfields);
        sync_hidden_fields(vm, c->h.cls);
    }
    if (ok) {
        vm->true_ = SOM_V(som_instance_new(vm, vm->trueClass));
        vm->false_ = SOM_V(som_instance_new(vm, vm->falseClass));
        vm->system = SOM_V(som_instance_new(vm, vm->systemClass));
        som_global_put(vm, som_symbol_cstr(vm, "nil"), vm->nil);
        som_global_put(vm, som_symbol_cstr(vm, "true"), vm->true_);
        som_global_put(vm, som_symbol_cstr(vm, "false"), vm->false_);
        som_global_put(vm, som_symbol_cstr(vm, "system"), vm->system);
        for (size_t i = 0; i < NCORE; i++) {
            mark_boolean_trivials(vm, *core_slot(vm, i));
            mark_boolean_trivials(vm, (*core_slot(vm, i))->h.cls);
        }
        vm->sym_dnu = som_symbol_cstr(vm, "doesNotUnderstand:arguments:");
        vm->sym_unknownGlobal = som_symbol_cstr(vm, "unknownGlobal:");
        vm->sym_escapedBlock = som_symbol_cstr(vm, "escapedBlock:");
        vm->sym_initialize = som_symbol_cstr(vm, "initialize:");
        vm->sym_run = som_symbol_cstr(vm, "run");
        vm->sym_value = som_symbol_cstr(vm, "value");
        vm->sym_new = som_symbol_cstr(vm, "new");
    }
    vm->heap.inhibit--;
    return ok;
}
