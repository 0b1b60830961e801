/* SPDX-License-Identifier: MIT */
/*
 * prim_string.c - the String and Symbol primitives (docs/language.md section 8) and their
 * table prim_string_defs[].
 *
 * Strings are immutable, length-counted byte sequences (NUL is an ordinary
 * byte); no primitive here mutates one. Character classes are ASCII ("C"
 * locale) whatever the process locale is. `primSubstringFrom:to:` checks its
 * bounds (a VM-level error instead of reading outside the string) and answers
 * '' for `to: from - 1`. Each primitive allocates at most one object.
 *
 * Runs on the VM thread; not async-signal-safe.
 */
#include "num.h"

#include <stdlib.h>
#include <string.h>

#include "prims.h"
#include "vm.h"

static SomString *str(Value v) {
    return (SomString *)v;
}

/* Every primitive here needs a String or Symbol receiver (a Primitive can be
 * invoked on anything through `invokeOn:with:`). */
static int check_string(SomVM *vm, Value v, const char *what) {
    if (som_is_string_like(v)) return PRIM_OK;
    return som_prim_error(vm, "Expected instance of 'String' as %s but got instance of '%s'.", what,
                          num_type_name(vm, v));
}

int str_prim_concatenate(SomVM *vm, Value *args) {
    int rc = check_string(vm, args[0], "receiver");
    if (rc == PRIM_OK) rc = check_string(vm, args[1], "argument");
    if (rc != PRIM_OK) return rc;
    SomString *a = str(args[0]), *b = str(args[1]);
    size_t n = a->len + b->len;
    char small[256];
    char *buf = n <= sizeof small ? small : malloc(n);
    if (!buf) return som_prim_error(vm, "Out of memory concatenating %zu bytes.", n);
    memcpy(buf, a->bytes, a->len);
    memcpy(buf + a->len, b->bytes, b->len);
    args[0] = SOM_V(som_string_new(vm, buf, n));
    if (buf != small) free(buf);
    return PRIM_OK;
}

int str_prim_as_symbol(SomVM *vm, Value *args) {
    int rc = check_string(vm, args[0], "receiver");
    if (rc != PRIM_OK) return rc;
    if (som_hdr(args[0])->kind == OBJ_SYMBOL) return PRIM_OK;
    args[0] = SOM_V(som_symbol(vm, str(args[0])->bytes, str(args[0])->len));
    return PRIM_OK;
}

/* Symbol>>asString: always a new String, never the Symbol itself. */
int str_prim_symbol_as_string(SomVM *vm, Value *args) {
    int rc = check_string(vm, args[0], "receiver");
    if (rc != PRIM_OK) return rc;
    args[0] = SOM_V(som_string_new(vm, str(args[0])->bytes, str(args[0])->len));
    return PRIM_OK;
}

/* Content hash (djb2, computed at creation): equal for a String and a Symbol
 * with the same bytes. */
int str_prim_hashcode(SomVM *vm, Value *args) {
    int rc = check_string(vm, args[0], "receiver");
    if (rc == PRIM_OK) args[0] = som_mkint((int64_t)str(args[0])->hash);
    return rc;
}

int str_prim_length(SomVM *vm, Value *args) {
    int rc = check_string(vm, args[0], "receiver");
    if (rc == PRIM_OK) args[0] = som_mkint((int64_t)str(args[0])->len);
    return rc;
}

int str_prim_eq(SomVM *vm, Value *args) {
    int rc = check_string(vm, args[0], "receiver");
    if (rc != PRIM_OK) return rc;
    Value a = args[0], b = args[1];
    bool eq = a == b;
    if (!eq && som_is_string_like(b)) {
        eq = som_string_equal(str(a), str(b));
    }
    args[0] = eq ? vm->true_ : vm->false_;
    return PRIM_OK;
}

/* Bytes from..to (1-based, inclusive); '' when to = from - 1. */
int str_prim_substring(SomVM *vm, Value *args) {
    int rc = check_string(vm, args[0], "receiver");
    if (rc != PRIM_OK) return rc;
    if (!som_is_int(args[1]) || !som_is_int(args[2]))
        return som_prim_error(vm, "Expected object of type 'Int' but got type '%s'.",
                              num_type_name(vm, som_is_int(args[1]) ? args[2] : args[1]));
    SomString *s = str(args[0]);
    int64_t from = som_int(args[1]), to = som_int(args[2]);
    if (from < 1 || to > (int64_t)s->len || to < from - 1)
        return som_prim_error(vm,
                              "Attempting to index string out of its bounds (start: %lld end: %lld "
                              "length: %llu)",
                              (long long)from, (long long)to, (unsigned long long)s->len);
    args[0] = SOM_V(som_string_new(vm, s->bytes + from - 1, (size_t)(to - from + 1)));
    return PRIM_OK;
}

typedef bool (*ByteClass)(unsigned char c);

static bool is_space(unsigned char c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
}
static bool is_letter(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static bool is_digit(unsigned char c) {
    return c >= '0' && c <= '9';
}

/* True iff the string is non-empty and every byte is in the class. */
static int all_bytes(SomVM *vm, Value *args, ByteClass in_class) {
    int rc = check_string(vm, args[0], "receiver");
    if (rc != PRIM_OK) return rc;
    SomString *s = str(args[0]);
    bool all = s->len > 0;
    for (size_t i = 0; all && i < s->len; i++)
        all = in_class((unsigned char)s->bytes[i]);
    args[0] = all ? vm->true_ : vm->false_;
    return PRIM_OK;
}

int str_prim_is_whitespace(SomVM *vm, Value *args) {
    return all_bytes(vm, args, is_space);
}
int str_prim_is_letters(SomVM *vm, Value *args) {
    return all_bytes(vm, args, is_letter);
}
int str_prim_is_digits(SomVM *vm, Value *args) {
    return all_bytes(vm, args, is_digit);
}

#define STR(sel, fn)                                                                               \
    { "String", false, sel, fn, PK_PLAIN }

const PrimDef prim_string_defs[] = {
    STR("concatenate:", str_prim_concatenate),
    STR("asSymbol", str_prim_as_symbol),
    STR("hashcode", str_prim_hashcode),
    STR("length", str_prim_length),
    STR("isWhiteSpace", str_prim_is_whitespace),
    STR("isLetters", str_prim_is_letters),
    STR("isDigits", str_prim_is_digits),
    STR("=", str_prim_eq),
    STR("primSubstringFrom:to:", str_prim_substring),
    {"Symbol", false, "asString", str_prim_symbol_as_string, PK_PLAIN},
    {NULL, false, NULL, NULL, 0},
};
