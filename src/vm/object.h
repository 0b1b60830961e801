/* SPDX-License-Identifier: MIT */
/*
 * object.h - heap object layouts of som.
 *
 * Every heap object starts with an ObjHeader: its class, its kind (which C
 * layout follows), GC mark bits and an identity hash that never changes (the
 * collector does not move objects, and the hash is assigned from a counter at
 * allocation). Layouts are fixed per kind; instances of SOM classes are
 * OBJ_INSTANCE with inline field slots.
 *
 * Invariant: every Value slot of every object holds a valid Value (nil when
 * unset), so the collector can scan slots without knowing their meaning.
 */
#ifndef SOM_OBJECT_H
#define SOM_OBJECT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <gmp.h>

#include "value.h"

typedef struct SomVM SomVM;
typedef struct SomClass SomClass;

typedef enum ObjKind {
    OBJ_FREE = 0, /* a free cell in the heap (never seen by SOM code) */
    OBJ_INSTANCE, /* SomInstance: ordinary object with n field slots */
    OBJ_ARRAY,    /* SomArray */
    OBJ_STRING,   /* SomString */
    OBJ_SYMBOL,   /* SomString, interned */
    OBJ_DOUBLE,   /* SomDouble */
    OBJ_BIGINT,   /* SomBigInt (GMP), only for values outside the small range */
    OBJ_BLOCK,    /* SomBlock: a closure */
    OBJ_METHOD,   /* SomMethod: compiled method, block body, or primitive */
    OBJ_CLASS,    /* SomClass */
    OBJ_CONTEXT,  /* SomContext: heap-allocated captured variables */
} ObjKind;

typedef struct ObjHeader {
    SomClass *cls;   /* class of the object; NULL only during bootstrap */
    uint32_t hash;   /* identity hash, assigned at allocation, stable */
    uint8_t kind;    /* ObjKind */
    uint8_t mark;    /* GC mark bit */
    uint16_t gcinfo; /* size class of the cell (0 = large object) */
} ObjHeader;

typedef struct SomInstance {
    ObjHeader h;
    uint32_t nfields;
    uint32_t pad;
    Value fields[];
} SomInstance;

typedef struct SomArray {
    ObjHeader h;
    uint64_t len;
    Value items[];
} SomArray;

/* Strings are immutable, length-counted byte sequences (may contain NUL).
 * The bytes are followed by a NUL for the convenience of C code only. */
typedef struct SomString {
    ObjHeader h;
    uint64_t len;
    uint32_t hash; /* content hash (djb2), computed at creation */
    uint32_t pad;
    Value gval; /* symbols: the global of this name, 0 when unset */
    char bytes[];
} SomString;

/* Same contents (String>>= on two strings or symbols; the interpreter's fast path too). */
static inline __attribute__((always_inline)) bool som_string_equal(const SomString *x,
                                                                   const SomString *y) {
    return x->len == y->len && x->hash == y->hash && memcmp(x->bytes, y->bytes, x->len) == 0;
}

typedef struct SomDouble {
    ObjHeader h;
    double d;
} SomDouble;

typedef struct SomBigInt {
    ObjHeader h;
    mpz_t z; /* freed by the collector when the object dies */
} SomBigInt;

typedef struct SomContext SomContext;

/* A closure: the block's code, the context of the activation that created
 * it (NULL if that activation needed none) and that activation's self. */
typedef struct SomBlock {
    ObjHeader h;
    struct SomMethod *method;
    SomContext *ctx;
    Value self;
} SomBlock;

/* Captured variables of one activation. The outermost context of a chain is
 * the home method's; its `frame` points to the live activation record while
 * the method runs and is NULL once it has returned or was unwound (that is how
 * an escaped block's non-local return is detected). */
struct SomContext {
    ObjHeader h;
    SomContext *outer;
    struct SomFrame *frame; /* not a GC reference */
    uint32_t nvars;
    uint32_t pad;
    Value vars[];
};

/* ---- call sites: inline caches and type feedback ---------------------- */

#define SOM_IC_SIZE 4

/* Kinds of arithmetic operands recorded per send site (bit = 1 << kind). */
enum { TF_INT = 0, TF_BIGINT, TF_DOUBLE, TF_OTHER };
/* argkinds bit set when two small integers overflowed the small range at the site (so a
 * compiler knows a small-integer-only speculation would fail there). */
#define TF_OVERFLOWED (1u << 16)

/* One send instruction. The inline cache doubles as the receiver-class type
 * feedback a compiler or the profiler reads: `ic` holds up to SOM_IC_SIZE
 * (class, target) pairs with hit counts; `megamorphic` is set once more
 * classes were seen. An entry is written once, when it is empty, and never changes after
 * (the interpreter's rewritten sends rely on it: interp.c quicken_send). For
 * arithmetic/comparison selectors `argkinds` records (receiver kind * 4 + argument kind)
 * as a bit set. */
typedef struct CallSite {
    struct SomString *selector; /* interned Symbol */
    uint8_t nargs;
    uint8_t is_super;
    uint8_t megamorphic;
    uint8_t pad;
    uint32_t bci; /* bytecode index of the send */
    uint32_t argkinds;
    uint32_t misses;
    struct {
        SomClass *cls;
        struct SomMethod *method;
        uint64_t hits;
    } ic[SOM_IC_SIZE];
    uint64_t reserved; /* to 128 bytes: &sites[k] is a shift, not a multiply */
} CallSite;
_Static_assert(SOM_IC_SIZE != 4 || sizeof(CallSite) == 128, "CallSite is 128 bytes");

/* ---- methods ------------------------------------------------------------- */

typedef int (*SomPrimFn)(SomVM *vm, Value *args);

typedef enum MethodKind { MK_METHOD, MK_BLOCK, MK_PRIMITIVE } MethodKind;

/* Methods that need no activation record: executed at the send site. */
typedef enum Trivial {
    TRIV_NONE,
    TRIV_SELF,    /* ^self (including empty bodies) */
    TRIV_LITERAL, /* ^<literal>: trivial_arg indexes literals */
    TRIV_GETTER,  /* ^field: trivial_arg is the field index */
    TRIV_SETTER,  /* field := arg (answers self): trivial_arg is the field index */
} Trivial;

/* Special primitive behaviours the interpreter executes itself (they start
 * activations instead of computing a value). */
typedef enum PrimKind {
    PK_PLAIN = 0,
    PK_BLOCK_VALUE,
    PK_PERFORM,
    PK_PERFORM_WITH_ARGS,
    PK_PERFORM_IN_SUPER,
    PK_PERFORM_WITH_ARGS_IN_SUPER,
    PK_INVOKE_ON_WITH,
    PK_RESTART,
    PK_ARRAY_AT, /* plain primitives with an interpreter fast path */
    PK_ARRAY_AT_PUT,
} PrimKind;

typedef struct LineEntry {
    uint32_t bci;
    uint32_t line;
} LineEntry;

typedef struct SomMethod {
    ObjHeader h;
    struct SomString *signature; /* selector Symbol ("value"... for blocks) */
    SomClass *holder;            /* class holding the method (home's holder for blocks) */
    struct SomMethod *home;      /* for blocks: the lexically enclosing method */
    uint8_t *code;               /* owned; as compiled (what tools read) */
    uint8_t *qcode;              /* owned: the interpreter's copy with superinstructions
                                    (bytecode.h), made at the first activation; or NULL */
    Value *literals;             /* owned array, scanned by the GC */
    CallSite *sites;             /* owned */
    LineEntry *lines;            /* owned: bci -> source line, ascending bci */
    SomPrimFn prim;              /* MK_PRIMITIVE */
    void *jit;                   /* reserved for the JIT / profiler */
    uint64_t invocations;        /* activations so far (exact profiling, JIT triggers) */
    uint32_t code_len, nliterals, nsites, nlines;
    uint32_t line;          /* line of the definition */
    uint16_t nargs;         /* arguments, not counting self */
    uint16_t nlocals;       /* stack slots after the arguments */
    uint16_t maxstack;      /* operand stack depth needed */
    uint16_t nctx;          /* captured variables (0: no own context) */
    uint8_t kind;           /* MethodKind */
    uint8_t prim_kind;      /* PrimKind */
    uint8_t trivial;        /* Trivial */
    uint8_t has_nlr_blocks; /* method: some nested block does ^ */
    uint16_t trivial_arg;
    uint16_t id; /* small per-VM id, 0 = not assigned */
} SomMethod;

/* ---- classes ----------------------------------------------------------- */

typedef struct MethodSlot {
    struct SomString *sel;
    SomMethod *method;
} MethodSlot;

/* A class object. Its header's cls is its metaclass. Class-side fields of
 * this class live in `cfields` (sized by the metaclass's ninstfields). */
struct SomClass {
    ObjHeader h;
    struct SomString *name; /* Symbol: #Foo or #'Foo class' */
    SomClass *super;        /* NULL for Object */
    SomArray *methods;      /* invokables in source order; identity is stable */
    SomArray *field_names;  /* Symbols of all instance fields, inherited first */
    SomArray *cfields;      /* class-side field values of this class object */
    struct SomString *file; /* source file path (String) or NULL */
    MethodSlot *mtab;       /* own methods by selector (open addressing), owned */
    uint32_t mtab_mask;
    uint32_t ninstfields;
    uint8_t is_meta;
    uint8_t pad[7];
};

#endif
