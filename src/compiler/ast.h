/* SPDX-License-Identifier: MIT */
/*
 * ast.h - syntax trees of SOM classes, built by the parser and consumed by
 * the bytecode generator. All nodes live in an Arena freed as a whole.
 */
#ifndef SOM_AST_H
#define SOM_AST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct Arena {
    struct ArenaBlock *blocks;
} Arena;

void *arena_alloc(Arena *a, size_t n);
char *arena_strndup(Arena *a, const char *s, size_t n);
void arena_free(Arena *a);

typedef enum NodeKind {
    N_INT,    /* text: decimal digits; neg */
    N_DOUBLE, /* dval */
    N_STRING, /* text, len (decoded) */
    N_SYMBOL, /* text, len */
    N_ARRAY,  /* literal array: elems */
    N_VAR,    /* text: name */
    N_ASSIGN, /* text: name, a: value */
    N_SEND,   /* a: receiver, text: selector, elems: args, is_super */
    N_BLOCK,  /* block: params, locals, body */
    N_RETURN, /* a: value (^ expr) */
} NodeKind;

typedef struct Var Var;
typedef struct Node Node;

typedef struct NodeList {
    Node **items;
    int n, cap;
} NodeList;

typedef struct NameList {
    const char **names;
    int *lines;
    int n, cap;
} NameList;

/* A block or method body (also used for the method itself). */
typedef struct Body {
    NameList params;
    NameList locals;
    NodeList stmts;
    int line, col;
    /* filled by the resolver (codegen.c) */
    Var **param_vars;
    Var **local_vars;
} Body;

struct Node {
    NodeKind kind;
    int line, col;
    const char *text;
    size_t len;
    bool neg;      /* N_INT / N_DOUBLE literal written with '-' */
    bool is_super; /* N_SEND whose receiver is `super` */
    double dval;
    Node *a;
    NodeList elems;
    Body *block;
    Var *var;            /* N_VAR / N_ASSIGN: resolved variable (NULL = global / pseudo) */
    struct Scope *scope; /* N_BLOCK compiled as a real block: its activation scope */
};

typedef struct MethodDef {
    const char *selector;
    Body body;
    bool is_primitive;
    int line;
} MethodDef;

typedef struct MethodDefList {
    MethodDef **items;
    int n, cap;
} MethodDefList;

typedef struct ClassDef {
    const char *name;
    const char *super_name; /* NULL: Object; "nil": no superclass */
    NameList inst_fields;
    NameList class_fields;
    MethodDefList inst_methods;
    MethodDefList class_methods;
} ClassDef;

void nodelist_push(Arena *a, NodeList *l, Node *n);
void namelist_push(Arena *a, NameList *l, const char *name, int line);

#endif
