/* SPDX-License-Identifier: MIT */
/*
 * disasm.c - bytecode listings with send-site type feedback (disasm.h).
 */
#include "disasm.h"

#include <inttypes.h>
#include <string.h>

#include "bytecode.h"
#include "class.h"

static const char *const tf_names[] = {"int", "bigint", "double", "other"};

static void print_value(SomVM *vm, Value v, FILE *f) {
    if (som_is_int(v)) {
        fprintf(f, "%" PRId64, som_int(v));
        return;
    }
    switch (som_kind(v)) {
    case OBJ_STRING:
        fprintf(f, "'%s'", ((SomString *)v)->bytes);
        break;
    case OBJ_SYMBOL:
        fprintf(f, "#%s", ((SomString *)v)->bytes);
        break;
    case OBJ_METHOD:
        fprintf(f, "<block>");
        break;
    default:
        fprintf(f, "<%s>", som_class_of(vm, v)->name->bytes);
        break;
    }
}

static void print_site(const CallSite *cs, FILE *f) {
    fprintf(f, " #%s", cs->selector->bytes);
    for (int i = 0; i < SOM_IC_SIZE && cs->ic[i].cls; i++)
        fprintf(f, "%s%s:%" PRIu64, i ? ", " : "  [", cs->ic[i].cls->name->bytes, cs->ic[i].hits);
    if (cs->ic[0].cls) fprintf(f, "%s]", cs->megamorphic ? ", megamorphic" : "");
    for (int b = 0; b < 16; b++)
        if (cs->argkinds & (1u << b)) fprintf(f, " (%s,%s)", tf_names[b / 4], tf_names[b % 4]);
}

void disasm_method(SomVM *vm, const SomMethod *m, FILE *f) {
    char name[256];
    class_method_name(m, name, sizeof name);
    fprintf(f, "%s  args=%u locals=%u stack=%u ctx=%u invocations=%" PRIu64 "%s\n", name, m->nargs,
            m->nlocals, m->maxstack, m->nctx, m->invocations,
            m->trivial ? "  (trivial: runs at the send site)" : "");
    if (m->kind == MK_PRIMITIVE) return;
    for (uint32_t pc = 0; pc < m->code_len;) {
        unsigned op = m->code[pc];
        if (op >= BC__COUNT) {
            fprintf(f, "  %4u  <bad opcode %u>\n", pc, op);
            return;
        }
        const uint8_t *a = m->code + pc + 1;
        unsigned w = som_bc_len[op] >= 2 ? (unsigned)(a[0] | (a[1] << 8)) : 0;
        fprintf(f, "  %4u  %-16s", pc, som_bc_name[op]);
        switch (op) {
        case BC_PUSH_CONST:
            print_value(vm, m->literals[w], f);
            break;
        case BC_PUSH_GLOBAL:
            fprintf(f, "%s", ((SomString *)m->literals[w])->bytes);
            break;
        case BC_SEND:
        case BC_SUPER_SEND:
        case BC_ADD:
        case BC_SUB:
        case BC_MUL:
        case BC_LT:
        case BC_GT:
        case BC_LE:
        case BC_GE:
        case BC_EQ:
        case BC_NE:
        case BC_AND:
        case BC_OR:
        case BC_MOD:
        case BC_FDIV:
        case BC_DIV:
        case BC_BAND:
        case BC_BXOR:
            print_site(&m->sites[w], f);
            break;
        case BC_JUMP:
        case BC_JUMP_IF_NIL:
        case BC_JUMP_IF_NOT_NIL:
            fprintf(f, "-> %u", pc + 3 + w);
            break;
        case BC_JUMP_IF_FALSE:
        case BC_JUMP_IF_TRUE:
            fprintf(f, "-> %u", pc + 5 + w);
            break;
        case BC_JUMP_BACK:
            fprintf(f, "-> %u", pc + 3 - w);
            break;
        case BC_PUSH_INT:
            fprintf(f, "%d", (int8_t)a[0]);
            break;
        case BC_PUSH_CTX:
        case BC_STORE_CTX:
            fprintf(f, "depth %u, index %u", a[0], a[1]);
            break;
        case BC_INC_LOCAL_JLE:
            fprintf(f, "%u <= %u -> %u", a[0], a[1], pc + 5 - (unsigned)(a[2] | (a[3] << 8)));
            break;
        default:
            if (som_bc_len[op] == 1) fprintf(f, "%u", a[0]);
            break;
        }
        fputc('\n', f);
        pc += 1 + som_bc_len[op];
    }
    for (uint32_t i = 0; i < m->nliterals; i++) {
        Value v = m->literals[i];
        if (som_is_obj(v) && som_hdr(v)->kind == OBJ_METHOD) disasm_method(vm, (SomMethod *)v, f);
    }
}

static size_t list_class(SomVM *vm, SomClass *c, uint64_t min, FILE *f) {
    size_t n = 0;
    for (uint64_t i = 0; c->methods && i < c->methods->len; i++) {
        SomMethod *m = (SomMethod *)c->methods->items[i];
        if (m->invocations < min) continue;
        disasm_method(vm, m, f);
        n++;
    }
    return n;
}

size_t disasm_all(SomVM *vm, uint64_t min_invocations, FILE *f) {
    size_t n = 0;
    for (uint32_t i = 0; vm->symbols.slots && i <= vm->symbols.mask; i++) {
        SomString *s = vm->symbols.slots[i];
        if (!s || !s->gval || !som_is_obj(s->gval) || som_hdr(s->gval)->kind != OBJ_CLASS) continue;
        SomClass *c = (SomClass *)s->gval;
        if (c->name != s) continue; /* a class stored under another name */
        n += list_class(vm, c, min_invocations, f);
        n += list_class(vm, c->h.cls, min_invocations, f);
    }
    return n;
}
