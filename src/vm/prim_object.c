/* SPDX-License-Identifier: MIT */
/*
 * prim_object.c - primitives of Object, Class, Method, Primitive, Block*,
 * Array and System (docs/language.md sections 7-9). Calling convention: prims.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "class.h"
#include "interp.h"
#include "num.h"
#include "prims.h"
#include "vm.h"

#define ARGS __attribute__((unused)) SomVM *vm, __attribute__((unused)) Value *args
#define RET(v) return (args[0] = (v), PRIM_OK)

static const char *class_name_of(SomVM *vm, Value v) {
    return som_class_of(vm, v)->name->bytes;
}

static bool is_kind(Value v, int kind) {
    return som_is_obj(v) && som_hdr(v)->kind == kind;
}

static int type_error(SomVM *vm, const char *expected, Value got) {
    return som_prim_error(vm, "Expected instance of '%s' but got instance of '%s'.", expected,
                          class_name_of(vm, got));
}

/* ---- Object ------------------------------------------------------------- */

static int obj_class(ARGS) {
    RET(SOM_V(som_class_of(vm, args[0])));
}

static int obj_size(ARGS) {
    Value v = args[0];
    int64_t size = 16;
    if (is_kind(v, OBJ_INSTANCE))
        size += 8 * ((SomInstance *)v)->nfields;
    else if (is_kind(v, OBJ_ARRAY))
        size += 8 * (int64_t)((SomArray *)v)->len;
    else if (is_kind(v, OBJ_STRING) || is_kind(v, OBJ_SYMBOL))
        size += (int64_t)((SomString *)v)->len;
    RET(som_mkint(size));
}

static int obj_identical(ARGS) {
    RET(args[0] == args[1] ? vm->true_ : vm->false_);
}

static int obj_hashcode(ARGS) {
    Value v = args[0];
    if (som_is_int(v)) RET(v);
    if (num_is_double(v)) {
        uint64_t bits;
        double d = num_double(v);
        memcpy(&bits, &d, sizeof bits);
        RET(som_mkint((int64_t)((bits ^ (bits >> 31)) & 0x3fffffffffffffff)));
    }
    if (is_kind(v, OBJ_STRING) || is_kind(v, OBJ_SYMBOL)) RET(som_mkint(((SomString *)v)->hash));
    RET(som_mkint(som_hdr(v)->hash));
}

static int obj_noop(ARGS) {
    RET(vm->false_);
}

static bool field_index(SomVM *vm, Value obj, Value idx, uint32_t *out) {
    if (!is_kind(obj, OBJ_INSTANCE)) {
        som_prim_error(vm, "instVarAt: not supported on instances of %s", class_name_of(vm, obj));
        return false;
    }
    if (!som_is_int(idx)) {
        type_error(vm, "Integer", idx);
        return false;
    }
    int64_t i = som_int(idx);
    if (i < 1 || i > ((SomInstance *)obj)->nfields) {
        som_prim_error(vm, "Index %" PRId64 " not valid for object with %u fields.", i,
                       ((SomInstance *)obj)->nfields);
        return false;
    }
    *out = (uint32_t)(i - 1);
    return true;
}

static int obj_inst_var_at(ARGS) {
    uint32_t i;
    if (!field_index(vm, args[0], args[1], &i)) return PRIM_ERROR;
    RET(((SomInstance *)args[0])->fields[i]);
}

static int obj_inst_var_at_put(ARGS) {
    uint32_t i;
    if (!field_index(vm, args[0], args[1], &i)) return PRIM_ERROR;
    ((SomInstance *)args[0])->fields[i] = args[2];
    return PRIM_OK; /* answers the receiver */
}

static int obj_inst_var_named(ARGS) {
    SomClass *c = som_class_of(vm, args[0]);
    if (!is_kind(args[1], OBJ_SYMBOL)) return type_error(vm, "Symbol", args[1]);
    for (uint64_t i = 0; i < c->field_names->len; i++)
        if (c->field_names->items[i] == args[1] && is_kind(args[0], OBJ_INSTANCE))
            RET(((SomInstance *)args[0])->fields[i]);
    return som_prim_error(vm, "no field named %s in %s", ((SomString *)args[1])->bytes,
                          c->name->bytes);
}

/* ---- Class ---------------------------------------------------------------- */

static bool inherits_from(SomClass *c, SomClass *ancestor) {
    for (; c; c = c->super)
        if (c == ancestor) return true;
    return false;
}

/* Class primitives also run for instances of user subclasses of Class,
 * which are ordinary objects: refuse those instead of misreading them. */
#define NEED_CLASS()                                                                               \
    do {                                                                                           \
        if (!is_kind(args[0], OBJ_CLASS)) return type_error(vm, "Class", args[0]);                 \
    } while (0)
#define NEED_METHOD()                                                                              \
    do {                                                                                           \
        if (!is_kind(args[0], OBJ_METHOD)) return type_error(vm, "Method", args[0]);               \
    } while (0)

static int class_new(ARGS) {
    NEED_CLASS();
    SomClass *c = (SomClass *)args[0];
    if (inherits_from(c, vm->arrayClass)) {
        SomArray *a = som_array_new(vm, 0);
        a->h.cls = c;
        RET(SOM_V(a));
    }
    if (inherits_from(c, vm->stringClass)) {
        SomString *s = som_string_new(vm, "", 0);
        s->h.cls = c;
        RET(SOM_V(s));
    }
    RET(SOM_V(som_instance_new(vm, c)));
}

static int class_name(ARGS) {
    NEED_CLASS();
    RET(SOM_V(((SomClass *)args[0])->name));
}

static int class_superclass(ARGS) {
    NEED_CLASS();
    SomClass *s = ((SomClass *)args[0])->super;
    RET(s ? SOM_V(s) : vm->nil);
}

static int class_fields(ARGS) {
    NEED_CLASS();
    SomArray *src = ((SomClass *)args[0])->field_names;
    SomArray *a = som_array_new(vm, src->len);
    src = ((SomClass *)args[0])->field_names; /* non-moving heap: still valid */
    memcpy(a->items, src->items, src->len * sizeof(Value));
    RET(SOM_V(a));
}

static int class_methods(ARGS) {
    NEED_CLASS();
    RET(SOM_V(((SomClass *)args[0])->methods));
}

/* ---- Method / Primitive ------------------------------------------------ */

static int method_signature(ARGS) {
    NEED_METHOD();
    RET(SOM_V(((SomMethod *)args[0])->signature));
}

static int method_holder(ARGS) {
    NEED_METHOD();
    SomClass *h = ((SomMethod *)args[0])->holder;
    RET(h ? SOM_V(h) : vm->nil);
}

/* ---- Array ---------------------------------------------------------------- */

static bool array_index(SomVM *vm, Value arr, Value idx, uint64_t *out) {
    SomArray *a = (SomArray *)arr;
    if (!som_is_int(idx)) {
        som_prim_error(vm, "Expected object of type 'Int' but got type '%s'.",
                       class_name_of(vm, idx));
        return false;
    }
    int64_t i = som_int(idx);
    if (i < 1 || (uint64_t)i > a->len) {
        som_prim_error(vm, "Index %" PRId64 " not valid for array of length %" PRIu64 ".", i,
                       a->len);
        return false;
    }
    *out = (uint64_t)(i - 1);
    return true;
}

static int array_at(ARGS) {
    if (!is_kind(args[0], OBJ_ARRAY)) return type_error(vm, "Array", args[0]);
    uint64_t i;
    if (!array_index(vm, args[0], args[1], &i)) return PRIM_ERROR;
    RET(((SomArray *)args[0])->items[i]);
}

static int array_at_put(ARGS) {
    if (!is_kind(args[0], OBJ_ARRAY)) return type_error(vm, "Array", args[0]);
    uint64_t i;
    if (!array_index(vm, args[0], args[1], &i)) return PRIM_ERROR;
    ((SomArray *)args[0])->items[i] = args[2];
    return PRIM_OK; /* answers the receiver */
}

static int array_length(ARGS) {
    if (!is_kind(args[0], OBJ_ARRAY)) return type_error(vm, "Array", args[0]);
    RET(som_mkint((int64_t)((SomArray *)args[0])->len));
}

static int array_new(ARGS) {
    NEED_CLASS();
    if (!som_is_int(args[1])) return type_error(vm, "Integer", args[1]);
    int64_t n = som_int(args[1]);
    if (n < 0 || n > (INT64_C(1) << 32))
        return som_prim_error(vm, "Array new: invalid size %" PRId64 ".", n);
    SomArray *a = som_array_try_new(vm, (size_t)n);
    if (!a) return som_prim_error(vm, "Array new: out of memory for %" PRId64 " elements.", n);
    a->h.cls = (SomClass *)args[0];
    RET(SOM_V(a));
}

/* ---- System --------------------------------------------------------------- */

static int sys_global(ARGS) {
    if (!is_kind(args[1], OBJ_SYMBOL)) return type_error(vm, "Symbol", args[1]);
    Value v;
    RET(som_global_get(vm, (SomString *)args[1], &v) ? v : vm->nil);
}

static int sys_global_put(ARGS) {
    if (!is_kind(args[1], OBJ_SYMBOL)) return type_error(vm, "Symbol", args[1]);
    som_global_put(vm, (SomString *)args[1], args[2]);
    return PRIM_OK; /* answers system */
}

static int sys_has_global(ARGS) {
    if (!is_kind(args[1], OBJ_SYMBOL)) return type_error(vm, "Symbol", args[1]);
    Value v;
    RET(som_global_get(vm, (SomString *)args[1], &v) ? vm->true_ : vm->false_);
}

static int sys_load(ARGS) {
    if (!is_kind(args[1], OBJ_SYMBOL)) return type_error(vm, "Symbol", args[1]);
    uint8_t saved = vm->state;
    som_set_state(vm, VMS_NATIVE);
    SomClass *c = som_load_class(vm, (SomString *)args[1]);
    som_set_state(vm, saved);
    if (vm->exiting) return PRIM_EXIT;
    RET(c ? SOM_V(c) : vm->nil);
}

static int sys_load_file(ARGS) {
    if (!som_is_string_like(args[1])) return type_error(vm, "String", args[1]);
    size_t len;
    char *buf = som_read_file(((SomString *)args[1])->bytes, &len);
    if (!buf) RET(vm->nil);
    SomString *s = som_string_new(vm, buf, len);
    free(buf);
    RET(SOM_V(s));
}

static int sys_exit(ARGS) {
    if (!som_is_int(args[1])) return type_error(vm, "Integer", args[1]);
    fflush(vm->out);
    fflush(vm->err);
    return som_prim_exit(vm, (int)som_int(args[1]));
}

static int write_str(SomVM *vm, Value *args, FILE *f, bool nl) {
    if (!som_is_string_like(args[1])) return type_error(vm, "String", args[1]);
    SomString *s = (SomString *)args[1];
    som_write(vm, f, s->bytes, s->len);
    if (nl) som_write(vm, f, "\n", 1);
    if (f == vm->err) fflush(f);
    return PRIM_OK;
}

static int sys_print_string(ARGS) {
    return write_str(vm, args, vm->out, false);
}
static int sys_error_print(ARGS) {
    return write_str(vm, args, vm->err, false);
}
static int sys_error_println(ARGS) {
    return write_str(vm, args, vm->err, true);
}

static int sys_print_newline(ARGS) {
    som_write(vm, vm->out, "\n", 1);
    return PRIM_OK;
}

static int sys_print_stack_trace(ARGS) {
    fflush(vm->out);
    interp_backtrace(vm, vm->out);
    return PRIM_OK;
}

/* The traceback of a SOM-level error, on stderr (Object>>error: sends it). */
static int sys_error_stack_trace(ARGS) {
    fflush(vm->out);
    interp_error_backtrace(vm, vm->err);
    fflush(vm->err);
    return PRIM_OK;
}

static int sys_time(ARGS) {
    RET(som_mkint((int64_t)((som_now_ns() - vm->start_ns) / 1000000)));
}
static int sys_ticks(ARGS) {
    RET(som_mkint((int64_t)((som_now_ns() - vm->start_ns) / 1000) + 1));
}

static int sys_full_gc(ARGS) {
    gc_collect(vm);
    RET(vm->true_);
}

const PrimDef prim_object_defs[] = {
    {"Object", false, "class", obj_class, PK_PLAIN},
    {"Object", false, "objectSize", obj_size, PK_PLAIN},
    {"Object", false, "==", obj_identical, PK_PLAIN},
    {"Object", false, "hashcode", obj_hashcode, PK_PLAIN},
    {"Object", false, "inspect", obj_noop, PK_PLAIN},
    {"Object", false, "halt", obj_noop, PK_PLAIN},
    {"Object", false, "perform:", NULL, PK_PERFORM},
    {"Object", false, "perform:withArguments:", NULL, PK_PERFORM_WITH_ARGS},
    {"Object", false, "perform:inSuperclass:", NULL, PK_PERFORM_IN_SUPER},
    {"Object", false, "perform:withArguments:inSuperclass:", NULL, PK_PERFORM_WITH_ARGS_IN_SUPER},
    {"Object", false, "instVarAt:", obj_inst_var_at, PK_PLAIN},
    {"Object", false, "instVarAt:put:", obj_inst_var_at_put, PK_PLAIN},
    {"Object", false, "instVarNamed:", obj_inst_var_named, PK_PLAIN},
    {"Class", false, "new", class_new, PK_PLAIN},
    {"Class", false, "name", class_name, PK_PLAIN},
    {"Class", false, "superclass", class_superclass, PK_PLAIN},
    {"Class", false, "fields", class_fields, PK_PLAIN},
    {"Class", false, "methods", class_methods, PK_PLAIN},
    {"Method", false, "signature", method_signature, PK_PLAIN},
    {"Method", false, "holder", method_holder, PK_PLAIN},
    {"Method", false, "invokeOn:with:", NULL, PK_INVOKE_ON_WITH},
    {"Primitive", false, "signature", method_signature, PK_PLAIN},
    {"Primitive", false, "holder", method_holder, PK_PLAIN},
    {"Primitive", false, "invokeOn:with:", NULL, PK_INVOKE_ON_WITH},
    {"Block", false, "value", NULL, PK_BLOCK_VALUE},
    {"Block", false, "restart", NULL, PK_RESTART},
    {"Block1", false, "value", NULL, PK_BLOCK_VALUE},
    {"Block2", false, "value:", NULL, PK_BLOCK_VALUE},
    {"Block3", false, "value:with:", NULL, PK_BLOCK_VALUE},
    {"Array", false, "at:", array_at, PK_ARRAY_AT},
    {"Array", false, "at:put:", array_at_put, PK_ARRAY_AT_PUT},
    {"Array", false, "length", array_length, PK_PLAIN},
    {"Array", true, "new:", array_new, PK_PLAIN},
    {"System", false, "global:", sys_global, PK_PLAIN},
    {"System", false, "global:put:", sys_global_put, PK_PLAIN},
    {"System", false, "hasGlobal:", sys_has_global, PK_PLAIN},
    {"System", false, "load:", sys_load, PK_PLAIN},
    {"System", false, "loadFile:", sys_load_file, PK_PLAIN},
    {"System", false, "exit:", sys_exit, PK_PLAIN},
    {"System", false, "printString:", sys_print_string, PK_PLAIN},
    {"System", false, "printNewline", sys_print_newline, PK_PLAIN},
    {"System", false, "errorPrint:", sys_error_print, PK_PLAIN},
    {"System", false, "errorPrintln:", sys_error_println, PK_PLAIN},
    {"System", false, "printStackTrace", sys_print_stack_trace, PK_PLAIN},
    {"System", false, "errorPrintStackTrace", sys_error_stack_trace, PK_PLAIN},
    {"System", false, "time", sys_time, PK_PLAIN},
    {"System", false, "ticks", sys_ticks, PK_PLAIN},
    {"System", false, "fullGC", sys_full_gc, PK_PLAIN},
    {NULL, false, NULL, NULL, 0},
};
