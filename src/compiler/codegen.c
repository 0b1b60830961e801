/* SPDX-License-Identifier: MIT */
/*
 * codegen.c - resolver and bytecode emitter (see codegen.h).
 *
 * Two passes over each method's tree. The resolver creates a Var for every
 * parameter and local, marks variables that a real (non-inlined) block
 * reaches from outside their own activation as captured, and notes methods
 * whose blocks do a non-local return. Slots are then assigned: captured
 * variables go to the activation's heap context, the rest to stack slots.
 * The emitter walks the same tree with the same inlining decisions
 * (inline_kind) and produces the bytecode.
 *
 * Invariant: every expression leaves exactly one value on the operand stack.
 */
#include "codegen.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../vm/bytecode.h"
#include "../vm/num.h"
#include "../vm/vm.h"

/* ---- scopes and variables ---------------------------------------------- */

typedef struct Scope Scope;

struct Var {
    const char *name;
    Scope *scope; /* real activation that owns the variable */
    bool captured;
    int arg_index; /* 1..nargs for arguments, 0 otherwise */
    int slot;      /* stack slot when not captured */
    int ctx_index; /* context slot when captured */
};

struct Scope {
    Scope *outer;
    bool is_block;
    Var **vars;
    int nvars, capv;
    int nargs;
    int nslots; /* stack slots used (args + locals + temporaries), excluding slot 0 */
    int nctx;
    bool has_ctx;
    bool has_nlr_inside; /* method: a nested real block does ^ */
};

typedef struct NameFrame {
    struct NameFrame *outer;
    Var **vars;
    int n;
} NameFrame;

typedef struct Gen {
    const CompileEnv *env;
    Arena *arena;
    char *err;
    size_t errlen;
    bool failed;
    Scope *method_scope;
    Scope **scopes; /* every real scope of the method, for slot assignment */
    int nscopes, capscopes;
} Gen;

static void gfail(Gen *g, int line, int col, const char *fmt, ...) {
    if (g->failed) return;
    g->failed = true;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(g->err, g->errlen, "%s:%d:%d: %s", g->env->file, line, col, msg);
}

static Var *new_var(Gen *g, Scope *s, const char *name) {
    Var *v = arena_alloc(g->arena, sizeof *v);
    v->name = name;
    v->scope = s;
    if (s->nvars == s->capv) {
        int ncap = s->capv ? s->capv * 2 : 8;
        Var **nv = arena_alloc(g->arena, (size_t)ncap * sizeof *nv);
        if (s->nvars) memcpy(nv, s->vars, (size_t)s->nvars * sizeof *nv);
        s->vars = nv;
        s->capv = ncap;
    }
    s->vars[s->nvars++] = v;
    return v;
}

static Var *lookup(NameFrame *f, const char *name) {
    for (; f; f = f->outer)
        for (int i = f->n; i-- > 0;)
            if (strcmp(f->vars[i]->name, name) == 0) return f->vars[i];
    return NULL;
}

static int field_index(const CompileEnv *env, const char *name) {
    for (int i = env->nfields; i-- > 0;)
        if (strcmp(env->fields[i], name) == 0) return i;
    return -1;
}

static bool is_pseudo(const char *n) {
    return !strcmp(n, "self") || !strcmp(n, "super") || !strcmp(n, "nil") || !strcmp(n, "true") ||
           !strcmp(n, "false");
}

/* ---- inlining decisions (shared by both passes) ----------------------- */

typedef enum Inline {
    IN_NONE,
    IN_IF_TRUE,
    IN_IF_FALSE,
    IN_IF_TRUE_IF_FALSE,
    IN_IF_FALSE_IF_TRUE,
    IN_IF_NIL,
    IN_IF_NOT_NIL,
    IN_IF_NIL_IF_NOT_NIL,
    IN_IF_NOT_NIL_IF_NIL,
    IN_AND,
    IN_OR,
    IN_WHILE_TRUE,
    IN_WHILE_FALSE,
    IN_TO_DO,
    IN_DOWN_TO_DO,
} Inline;

static bool lit_block(const Node *n, int nparams) {
    return n && n->kind == N_BLOCK && n->block->params.n == nparams;
}

static bool real_block_uses(const Node *n, const char *name, bool in_real);

/* Does a real (non-inlined) block inside these statements use `name`? */
static bool stmts_use(const NodeList *l, const char *name, bool in_real) {
    for (int i = 0; i < l->n; i++)
        if (real_block_uses(l->items[i], name, in_real)) return true;
    return false;
}

static Inline inline_kind(const Node *s);

/* Conservative (ignores shadowing): a closure created inside a loop body
 * that reads or writes the loop variable needs a fresh variable per
 * iteration, which only the real to:do: send gives it. */
static bool real_block_uses(const Node *n, const char *name, bool in_real) {
    if (!n) return false;
    switch (n->kind) {
    case N_VAR:
        return in_real && !strcmp(n->text, name);
    case N_ASSIGN:
        return (in_real && !strcmp(n->text, name)) || real_block_uses(n->a, name, in_real);
    case N_RETURN:
        return real_block_uses(n->a, name, in_real);
    case N_BLOCK:
        return stmts_use(&n->block->stmts, name, true);
    case N_SEND:
        /* down the receiver chain by iteration: `x + 1 + 1 ...` may be very long */
        for (;;) {
            Inline k = inline_kind(n);
            bool loop = k == IN_TO_DO || k == IN_DOWN_TO_DO;
            for (int i = 0; i < n->elems.n; i++) {
                const Node *a = n->elems.items[i];
                bool inl = k != IN_NONE && a->kind == N_BLOCK && (!loop || i == 1);
                if (inl ? stmts_use(&a->block->stmts, name, in_real)
                        : real_block_uses(a, name, in_real))
                    return true;
            }
            if (k == IN_WHILE_TRUE || k == IN_WHILE_FALSE)
                return stmts_use(&n->a->block->stmts, name, in_real);
            n = n->a;
            if (!n || n->kind != N_SEND) return real_block_uses(n, name, in_real);
        }
    default:
        return false;
    }
}

static Inline inline_kind(const Node *s) {
    if (s->kind != N_SEND || s->is_super) return IN_NONE;
    const char *sel = s->text;
    Node *const *a = s->elems.items;
    if (s->elems.n == 1 && lit_block(a[0], 0)) {
        if (!strcmp(sel, "ifTrue:")) return IN_IF_TRUE;
        if (!strcmp(sel, "ifFalse:")) return IN_IF_FALSE;
        if (!strcmp(sel, "ifNil:")) return IN_IF_NIL;
        if (!strcmp(sel, "ifNotNil:")) return IN_IF_NOT_NIL;
        if (!strcmp(sel, "and:") || !strcmp(sel, "&&")) return IN_AND;
        if (!strcmp(sel, "or:") || !strcmp(sel, "||")) return IN_OR;
        if (lit_block(s->a, 0) && !strcmp(sel, "whileTrue:")) return IN_WHILE_TRUE;
        if (lit_block(s->a, 0) && !strcmp(sel, "whileFalse:")) return IN_WHILE_FALSE;
    }
    if (s->elems.n == 2 && lit_block(a[0], 0) && lit_block(a[1], 0)) {
        if (!strcmp(sel, "ifTrue:ifFalse:")) return IN_IF_TRUE_IF_FALSE;
        if (!strcmp(sel, "ifFalse:ifTrue:")) return IN_IF_FALSE_IF_TRUE;
        if (!strcmp(sel, "ifNil:ifNotNil:")) return IN_IF_NIL_IF_NOT_NIL;
        if (!strcmp(sel, "ifNotNil:ifNil:")) return IN_IF_NOT_NIL_IF_NIL;
    }
    if (s->elems.n == 2 && lit_block(a[1], 1)) {
        bool to = !strcmp(sel, "to:do:");
        /* downTo:do: is not inlined by the standard compilers; same results
         * (docs/language.md 5.2) */
        bool down = !strcmp(sel, "downTo:do:");
        const Body *b = a[1]->block;
        if ((to || down) && !stmts_use(&b->stmts, b->params.names[0], false))
            return to ? IN_TO_DO : IN_DOWN_TO_DO;
    }
    return IN_NONE;
}

/* ---- pass 1: resolution ------------------------------------------------ */

static void resolve_node(Gen *g, Node *n, Scope *s, NameFrame *f);
static void resolve_send_chain(Gen *g, Node *n, Scope *s, NameFrame *f);

static NameFrame *declare(Gen *g, Body *b, Scope *s, NameFrame *outer, bool args_are_args) {
    NameFrame *f = arena_alloc(g->arena, sizeof *f);
    f->outer = outer;
    f->n = b->params.n + b->locals.n;
    f->vars = arena_alloc(g->arena, (size_t)(f->n ? f->n : 1) * sizeof *f->vars);
    b->param_vars = f->vars;
    b->local_vars = f->vars + b->params.n;
    for (int i = 0; i < b->params.n; i++) {
        const char *nm = b->params.names[i];
        for (int j = 0; j < i; j++)
            if (!strcmp(b->params.names[j], nm))
                gfail(g, b->params.lines[i], b->col, "duplicate argument name '%s'", nm);
        f->vars[i] = new_var(g, s, nm);
        if (args_are_args) f->vars[i]->arg_index = i + 1;
    }
    for (int i = 0; i < b->locals.n; i++) {
        const char *nm = b->locals.names[i];
        for (int j = 0; j < b->params.n; j++)
            if (!strcmp(b->params.names[j], nm))
                gfail(g, b->locals.lines[i], b->col, "local '%s' has the name of an argument", nm);
        f->vars[b->params.n + i] = new_var(g, s, nm);
    }
    return f;
}

static void resolve_stmts(Gen *g, Body *b, Scope *s, NameFrame *f) {
    for (int i = 0; i < b->stmts.n && !g->failed; i++)
        resolve_node(g, b->stmts.items[i], s, f);
}

static Scope *resolve_real(Gen *g, Body *b, Scope *outer, bool is_block, NameFrame *of) {
    Scope *s = arena_alloc(g->arena, sizeof *s);
    s->outer = outer;
    s->is_block = is_block;
    s->nargs = b->params.n;
    if (g->nscopes == g->capscopes) {
        int ncap = g->capscopes ? g->capscopes * 2 : 8;
        Scope **ns = arena_alloc(g->arena, (size_t)ncap * sizeof *ns);
        if (g->nscopes) memcpy(ns, g->scopes, (size_t)g->nscopes * sizeof *ns);
        g->scopes = ns;
        g->capscopes = ncap;
    }
    g->scopes[g->nscopes++] = s;
    NameFrame *f = declare(g, b, s, of, true);
    resolve_stmts(g, b, s, f);
    return s;
}

static void resolve_inlined(Gen *g, Node *blk, Scope *s, NameFrame *f) {
    NameFrame *nf = declare(g, blk->block, s, f, false);
    resolve_stmts(g, blk->block, s, nf);
}

static void use_var(Node *n, Var *v, Scope *s) {
    n->var = v;
    if (v->scope != s) v->captured = true;
}

static void resolve_send_args(Gen *g, Node *n, Inline k, Scope *s, NameFrame *f) {
    for (int i = 0; i < n->elems.n; i++) {
        Node *arg = n->elems.items[i];
        bool loop = k == IN_TO_DO || k == IN_DOWN_TO_DO;
        bool inl = k != IN_NONE && arg->kind == N_BLOCK && (!loop || i == 1);
        if (inl)
            resolve_inlined(g, arg, s, f);
        else
            resolve_node(g, arg, s, f);
    }
}

/* A send and the sends it is the receiver chain of (`x foo bar`, `x + 1 + 1`):
 * the chain may be as long as the source, so it is walked by iteration, in
 * source order (innermost receiver first, then each send's arguments), which
 * is the order variables are declared in. Nesting through arguments is
 * bounded by the parser (PARSE_MAX_DEPTH). */
static void resolve_send_chain(Gen *g, Node *n, Scope *s, NameFrame *f) {
    size_t len = 1;
    for (Node *r = n->a; r && r->kind == N_SEND; r = r->a)
        len++;
    Node *one[1], **spine = len == 1 ? one : malloc(len * sizeof *spine);
    if (!spine)
        return gfail(g, n->line, n->col, "out of memory compiling a chain of %zu sends", len);
    size_t i = len;
    for (Node *r = n; i > 0; r = r->a)
        spine[--i] = r; /* spine[0]: the innermost send */
    Inline k = inline_kind(spine[0]);
    if (k == IN_WHILE_TRUE || k == IN_WHILE_FALSE)
        resolve_inlined(g, spine[0]->a, s, f);
    else
        resolve_node(g, spine[0]->a, s, f);
    for (i = 0; i < len && !g->failed; i++)
        resolve_send_args(g, spine[i], i ? inline_kind(spine[i]) : k, s, f);
    if (spine != one) free(spine);
}

static void resolve_node(Gen *g, Node *n, Scope *s, NameFrame *f) {
    if (!n || g->failed) return;
    switch (n->kind) {
    case N_VAR: {
        Var *v = lookup(f, n->text);
        if (v) use_var(n, v, s);
        break;
    }
    case N_ASSIGN: {
        Var *v = lookup(f, n->text);
        if (v) {
            use_var(n, v, s);
        } else if (is_pseudo(n->text)) {
            gfail(g, n->line, n->col, "expected an assignable variable, got '%s'", n->text);
        } else if (field_index(g->env, n->text) < 0) {
            gfail(g, n->line, n->col,
                  "expected a declared variable or field in assignment, got '%s'", n->text);
        }
        resolve_node(g, n->a, s, f);
        break;
    }
    case N_SEND:
        resolve_send_chain(g, n, s, f);
        break;
    case N_BLOCK:
        n->scope = resolve_real(g, n->block, s, true, f);
        break;
    case N_RETURN:
        if (s->is_block) g->method_scope->has_nlr_inside = true;
        resolve_node(g, n->a, s, f);
        break;
    default:
        break;
    }
}

static void assign_slots(Scope *s) {
    int next = s->nargs + 1;
    for (int i = 0; i < s->nvars; i++) {
        Var *v = s->vars[i];
        if (v->captured) v->ctx_index = s->nctx++;
        if (v->arg_index)
            v->slot = v->arg_index;
        else if (!v->captured)
            v->slot = next++;
    }
    s->nslots = next - 1;
    s->has_ctx = s->nctx > 0 || (!s->is_block && s->has_nlr_inside);
}

/* ---- pass 2: emission ------------------------------------------------ */

typedef struct Emit {
    Gen *g;
    Scope *scope;
    uint8_t *code;
    size_t len, cap;
    Value *lits;
    uint32_t nlits, caplits;
    CallSite *sites;
    uint32_t nsites, capsites;
    LineEntry *lines;
    uint32_t nlines, caplines;
    int depth, maxdepth;
    int last_line;
    bool recv_ready; /* the next receiver() finds its value already pushed (send chains) */
    /* conditionals compiled for effect: their fallback send's answer must be
     * dropped, so its call site resumes at a POP; JUMP_BACK placed after the
     * method's code (site, construct end) */
    struct {
        unsigned site;
        size_t end;
    } * tramp;
    uint32_t ntramp, captramp;
} Emit;

static void *grow_arr(void *p, uint32_t n, uint32_t *cap, size_t elem) {
    if (n < *cap) return p;
    *cap = *cap ? *cap * 2 : 16;
    void *np = realloc(p, *cap * elem);
    if (!np) abort();
    return np;
}

static void byte(Emit *e, unsigned b) {
    if (e->len == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 64;
        e->code = realloc(e->code, e->cap);
        if (!e->code) abort();
    }
    e->code[e->len++] = (uint8_t)b;
}

static void word(Emit *e, unsigned w) {
    byte(e, w & 0xff);
    byte(e, (w >> 8) & 0xff);
}

static void stack(Emit *e, int delta) {
    e->depth += delta;
    if (e->depth > e->maxdepth) e->maxdepth = e->depth;
}

static void line(Emit *e, int ln) {
    if (ln == e->last_line) return;
    e->last_line = ln;
    e->lines = grow_arr(e->lines, e->nlines, &e->caplines, sizeof *e->lines);
    e->lines[e->nlines].bci = (uint32_t)e->len;
    e->lines[e->nlines++].line = (uint32_t)ln;
}

static unsigned literal(Emit *e, Value v) {
    for (uint32_t i = 0; i < e->nlits; i++)
        if (e->lits[i] == v) return i;
    e->lits = grow_arr(e->lits, e->nlits, &e->caplits, sizeof *e->lits);
    e->lits[e->nlits] = v;
    if (e->nlits >= 65535) gfail(e->g, e->last_line, 1, "too many literals in one method");
    return e->nlits++;
}

static void op0(Emit *e, int op, int delta) {
    byte(e, op);
    stack(e, delta);
}

static void op1(Emit *e, int op, unsigned a, int delta) {
    if (a > 255) gfail(e->g, e->last_line, 1, "too many variables or fields (limit 255)");
    byte(e, op);
    byte(e, a);
    stack(e, delta);
}

static void opw(Emit *e, int op, unsigned w, int delta) {
    byte(e, op);
    word(e, w);
    stack(e, delta);
}

static size_t jump(Emit *e, int op, int delta) {
    opw(e, op, 0, delta);
    return e->len - 2;
}

static unsigned site(Emit *e, const char *sel, int nargs, bool super);

/* A conditional jump of an inlined construct; *site_out receives its call
 * site, whose bci must be set to the end of the construct (end_construct). */
static size_t cond_jump(Emit *e, int op, const char *sel, int nargs, unsigned *site_out) {
    *site_out = site(e, sel, nargs, false);
    byte(e, op);
    word(e, 0);
    word(e, *site_out);
    stack(e, -1);
    return e->len - 4;
}

static void end_construct(Emit *e, unsigned k) {
    e->sites[k].bci = (uint32_t)e->len;
}

/* The construct for call site k ends here and leaves no value. */
static void end_construct_effect(Emit *e, unsigned k) {
    e->tramp = grow_arr(e->tramp, e->ntramp, &e->captramp, sizeof *e->tramp);
    e->tramp[e->ntramp].site = k;
    e->tramp[e->ntramp++].end = e->len;
}

/* Patches the jump whose offset operand is at `at` to land here; the offset
 * counts from the end of the instruction (cond_jump's carries 2 more bytes). */
static void patch(Emit *e, size_t at) {
    size_t end = at + 2;
    if (e->code[at - 1] == BC_JUMP_IF_FALSE || e->code[at - 1] == BC_JUMP_IF_TRUE) end += 2;
    size_t off = e->len - end;
    if (off > 65535) gfail(e->g, e->last_line, 1, "method too large (jump out of range)");
    e->code[at] = off & 0xff;
    e->code[at + 1] = (off >> 8) & 0xff;
}

static void jump_back(Emit *e, size_t target) {
    size_t off = e->len + 3 - target;
    if (off > 65535) gfail(e->g, e->last_line, 1, "method too large (loop out of range)");
    opw(e, BC_JUMP_BACK, (unsigned)off, 0);
}

static unsigned site(Emit *e, const char *sel, int nargs, bool super) {
    SomVM *vm = e->g->env->vm;
    e->sites = grow_arr(e->sites, e->nsites, &e->capsites, sizeof *e->sites);
    CallSite *cs = &e->sites[e->nsites];
    memset(cs, 0, sizeof *cs);
    cs->selector = som_symbol_cstr(vm, sel);
    cs->nargs = (uint8_t)nargs;
    cs->is_super = super;
    cs->bci = (uint32_t)e->len;
    if (e->nsites >= 65535) gfail(e->g, e->last_line, 1, "too many sends in one method");
    return e->nsites++;
}

static void expr(Emit *e, Node *n);
static void effect(Emit *e, Node *n);
static void effect_assign(Emit *e, Node *n);
static void inlined_body(Emit *e, Node *blk);
static void inlined_effect(Emit *e, Node *blk);
static void return_stmt(Emit *e, Node *r);
static SomMethod *emit_real(Gen *g, Body *b, Scope *s, const char *sig, int def_line);

/* The receiver of a send, pushed first: skipped when send_chain already did. */
static void receiver(Emit *e, Node *r) {
    if (e->recv_ready) {
        e->recv_ready = false;
        return;
    }
    expr(e, r);
}

/* hops from the current activation's context register to var's context */
static int ctx_depth(Emit *e, Var *v) {
    int hops = 0;
    for (Scope *s = e->scope; s != v->scope; s = s->outer)
        if (s->has_ctx) hops++;
    return hops;
}

static void load_var(Emit *e, Var *v) {
    if (v->captured) {
        byte(e, BC_PUSH_CTX);
        byte(e, ctx_depth(e, v));
        byte(e, v->ctx_index);
        stack(e, 1);
    } else {
        op1(e, BC_PUSH_LOCAL, (unsigned)v->slot, 1);
    }
}

static void store_var(Emit *e, Var *v) {
    if (v->captured) {
        if (v->ctx_index > 255) gfail(e->g, e->last_line, 1, "too many captured variables");
        byte(e, BC_STORE_CTX);
        byte(e, ctx_depth(e, v));
        byte(e, v->ctx_index);
        stack(e, -1);
    } else {
        op1(e, BC_STORE_LOCAL, (unsigned)v->slot, -1);
    }
}

static void load_name(Emit *e, Node *n) {
    const CompileEnv *env = e->g->env;
    const char *nm = n->text;
    if (n->var) return load_var(e, n->var);
    if (!strcmp(nm, "self") || !strcmp(nm, "super")) return op0(e, BC_PUSH_SELF, 1);
    if (!strcmp(nm, "nil")) return op0(e, BC_PUSH_NIL, 1);
    if (!strcmp(nm, "true")) return op0(e, BC_PUSH_TRUE, 1);
    if (!strcmp(nm, "false")) return op0(e, BC_PUSH_FALSE, 1);
    int fi = field_index(env, nm);
    if (fi >= 0) return op1(e, env->class_side ? BC_PUSH_CFIELD : BC_PUSH_FIELD, (unsigned)fi, 1);
    opw(e, BC_PUSH_GLOBAL, literal(e, SOM_V(som_symbol_cstr(env->vm, nm))), 1);
}

static void store_name(Emit *e, Node *n) {
    if (n->var) return store_var(e, n->var);
    int fi = field_index(e->g->env, n->text);
    op1(e, e->g->env->class_side ? BC_STORE_CFIELD : BC_STORE_FIELD, (unsigned)(fi < 0 ? 0 : fi),
        -1);
}

static Value literal_value(Emit *e, Node *n) {
    SomVM *vm = e->g->env->vm;
    switch (n->kind) {
    case N_INT:
        return num_parse_integer(vm, n->text, n->len, n->neg);
    case N_DOUBLE:
        return num_new_double(vm, n->dval);
    case N_STRING:
        return SOM_V(som_string_new(vm, n->text, n->len));
    case N_SYMBOL:
        return SOM_V(som_symbol(vm, n->text, n->len));
    case N_ARRAY: {
        SomArray *a = som_array_new(vm, (size_t)n->elems.n);
        for (int i = 0; i < n->elems.n; i++)
            a->items[i] = literal_value(e, n->elems.items[i]);
        return SOM_V(a);
    }
    default:
        return vm->nil;
    }
}

static void return_stmt(Emit *e, Node *r) {
    expr(e, r->a);
    line(e, r->line);
    op0(e, e->scope->is_block ? BC_RETURN_NLR : BC_RETURN_LOCAL, 0);
}

/* Body of an inlined block: leaves its value on the stack. */
static void inlined_body(Emit *e, Node *blk) {
    Body *b = blk->block;
    for (int i = 0; i < b->locals.n; i++) { /* fresh locals on every entry */
        op0(e, BC_PUSH_NIL, 1);
        store_var(e, b->local_vars[i]);
    }
    if (b->stmts.n == 0) return op0(e, BC_PUSH_NIL, 1);
    for (int i = 0; i < b->stmts.n; i++) {
        Node *st = b->stmts.items[i];
        if (st->kind == N_RETURN) {
            return_stmt(e, st); /* its value stands for the block's: one value */
            return;
        }
        if (i + 1 < b->stmts.n)
            effect(e, st);
        else
            expr(e, st);
    }
}

/* cond; JUMP_IF_x L1; then; JUMP L2; L1: else; L2: */
static void if_else(Emit *e, Node *s, int jop, Node *then_blk, Node *else_blk, int else_op) {
    receiver(e, s->a);
    unsigned k = 0;
    bool boolean = jop == BC_JUMP_IF_FALSE || jop == BC_JUMP_IF_TRUE;
    size_t l1 = boolean ? cond_jump(e, jop, s->text, s->elems.n, &k) : jump(e, jop, -1);
    inlined_body(e, then_blk);
    size_t l2 = jump(e, BC_JUMP, 0);
    stack(e, -1);
    patch(e, l1);
    if (else_blk)
        inlined_body(e, else_blk);
    else
        op0(e, else_op, 1);
    patch(e, l2);
    if (boolean) end_construct(e, k);
}

/* ifNil: / ifNotNil: keep the receiver as the value when the block is not run */
static void if_nil_keep(Emit *e, Node *recv, int jop, Node *blk) {
    receiver(e, recv);
    op0(e, BC_DUP, 1);
    size_t l1 = jump(e, jop, -1);
    op0(e, BC_POP, -1);
    inlined_body(e, blk);
    patch(e, l1);
}

static void while_loop(Emit *e, Node *s, int jop) {
    size_t head = e->len;
    unsigned k;
    inlined_body(e, s->a);
    size_t exit = cond_jump(e, jop, s->text, 1, &k);
    inlined_effect(e, s->elems.items[0]);
    jump_back(e, head);
    patch(e, exit);
    op0(e, BC_PUSH_NIL, 1);
    end_construct(e, k);
}

/* receiver to:do: / downTo:do: limit with a literal [:i | ...]: counts with
 * real <=/>= and +/- sends as fallbacks for non-integers; answers the receiver.
 * Counting up, the common small-integer step is one INC_LOCAL_JLE followed by
 * the generic step of exactly SOM_TODO_TAIL bytes. */
static void counted_loop(Emit *e, Node *s, bool up) {
    Scope *sc = e->scope;
    int ctr = ++sc->nslots, lim = ++sc->nslots;
    Node *blk = s->elems.items[1];
    unsigned cmp_site = site(e, up ? "<=" : ">=", 1, false);
    unsigned step_site = site(e, up ? "+" : "-", 1, false);
    expr(e, s->a);
    op0(e, BC_DUP, 1);
    op1(e, BC_STORE_LOCAL, (unsigned)ctr, -1);
    expr(e, s->elems.items[0]);
    op1(e, BC_STORE_LOCAL, (unsigned)lim, -1);
    size_t head = e->len;
    op1(e, BC_PUSH_LOCAL, (unsigned)ctr, 1);
    op1(e, BC_PUSH_LOCAL, (unsigned)lim, 1);
    opw(e, up ? BC_LE : BC_GE, cmp_site, -1);
    unsigned k;
    size_t exit = cond_jump(e, BC_JUMP_IF_FALSE, "ifTrue:", 1, &k);
    size_t body = e->len;
    op1(e, BC_PUSH_LOCAL, (unsigned)ctr, 1);
    store_var(e, blk->block->param_vars[0]);
    inlined_effect(e, blk);
    if (up) {
        byte(e, BC_INC_LOCAL_JLE);
        byte(e, ctr);
        byte(e, lim);
        word(e, (unsigned)(e->len + 2 - body));
    }
    size_t tail = e->len;
    op1(e, BC_PUSH_LOCAL, (unsigned)ctr, 1);
    op1(e, BC_PUSH_INT, 1, 1);
    opw(e, up ? BC_ADD : BC_SUB, step_site, -1);
    op1(e, BC_STORE_LOCAL, (unsigned)ctr, -1);
    jump_back(e, head);
    if (up && e->len - tail != SOM_TODO_TAIL) gfail(e->g, s->line, s->col, "internal: to:do: tail");
    patch(e, exit);
    end_construct(e, k);
}

static bool emit_inline(Emit *e, Node *s) {
    Node **a = s->elems.items;
    switch (inline_kind(s)) {
    case IN_NONE:
        return false;
    case IN_IF_TRUE:
        if_else(e, s, BC_JUMP_IF_FALSE, a[0], NULL, BC_PUSH_NIL);
        break;
    case IN_IF_FALSE:
        if_else(e, s, BC_JUMP_IF_TRUE, a[0], NULL, BC_PUSH_NIL);
        break;
    case IN_IF_TRUE_IF_FALSE:
        if_else(e, s, BC_JUMP_IF_FALSE, a[0], a[1], 0);
        break;
    case IN_IF_FALSE_IF_TRUE:
        if_else(e, s, BC_JUMP_IF_TRUE, a[0], a[1], 0);
        break;
    case IN_IF_NIL:
        if_nil_keep(e, s->a, BC_JUMP_IF_NOT_NIL, a[0]);
        break;
    case IN_IF_NOT_NIL:
        if_nil_keep(e, s->a, BC_JUMP_IF_NIL, a[0]);
        break;
    case IN_IF_NIL_IF_NOT_NIL:
        if_else(e, s, BC_JUMP_IF_NOT_NIL, a[0], a[1], 0);
        break;
    case IN_IF_NOT_NIL_IF_NIL:
        if_else(e, s, BC_JUMP_IF_NIL, a[0], a[1], 0);
        break;
    case IN_AND:
        if_else(e, s, BC_JUMP_IF_FALSE, a[0], NULL, BC_PUSH_FALSE);
        break;
    case IN_OR:
        if_else(e, s, BC_JUMP_IF_TRUE, a[0], NULL, BC_PUSH_TRUE);
        break;
    case IN_WHILE_TRUE:
        while_loop(e, s, BC_JUMP_IF_FALSE);
        break;
    case IN_WHILE_FALSE:
        while_loop(e, s, BC_JUMP_IF_TRUE);
        break;
    case IN_TO_DO:
        counted_loop(e, s, true);
        break;
    case IN_DOWN_TO_DO:
        counted_loop(e, s, false);
        break;
    }
    return true;
}

static int arith_op(const char *sel) {
    static const struct {
        const char *sel;
        int op;
    } ops[] = {
        {"+", BC_ADD},   {"-", BC_SUB}, {"*", BC_MUL},  {"<", BC_LT},         {">", BC_GT},
        {"<=", BC_LE},   {">=", BC_GE}, {"=", BC_EQ},   {"~=", BC_NE},        {"%", BC_MOD},
        {"//", BC_FDIV}, {"/", BC_DIV}, {"&", BC_BAND}, {"bitXor:", BC_BXOR},
    };
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (!strcmp(ops[i].sel, sel)) return ops[i].op;
    return -1;
}

static void send(Emit *e, Node *s) {
    if (emit_inline(e, s)) return;
    if (s->is_super)
        op0(e, BC_PUSH_SELF, 1);
    else
        receiver(e, s->a);
    for (int i = 0; i < s->elems.n; i++)
        expr(e, s->elems.items[i]);
    line(e, s->line);
    unsigned k = site(e, s->text, s->elems.n, s->is_super);
    int aop = s->is_super ? -1 : arith_op(s->text);
    if (!s->is_super && (!strcmp(s->text, "&&") || !strcmp(s->text, "and:"))) aop = BC_AND;
    if (!s->is_super && (!strcmp(s->text, "||") || !strcmp(s->text, "or:"))) aop = BC_OR;
    if (aop >= 0 && s->elems.n == 1)
        opw(e, aop, k, -1);
    else
        opw(e, s->is_super ? BC_SUPER_SEND : BC_SEND, k, -s->elems.n);
}

/* Does this send push its receiver before anything else (so that a chain of
 * them can be emitted innermost first, by iteration)? Not super sends (no
 * receiver expression) and not the inlined loops (they set up first). */
static bool receiver_first(const Node *s) {
    if (s->kind != N_SEND || s->is_super) return false;
    Inline k = inline_kind(s);
    return k != IN_WHILE_TRUE && k != IN_WHILE_FALSE && k != IN_TO_DO && k != IN_DOWN_TO_DO;
}

/* A send whose receiver is a chain of sends (`x foo bar ...`, `x + 1 + 1 ...`,
 * as long as the source): the innermost is emitted first, then each outer one
 * with its receiver already on the stack; no recursion along the chain. */
static void send_chain(Emit *e, Node *n) {
    size_t len = 1;
    for (Node *r = n; receiver_first(r) && receiver_first(r->a); r = r->a)
        len++;
    if (len == 1) return send(e, n);
    Node **spine = malloc(len * sizeof *spine);
    if (!spine) return gfail(e->g, n->line, n->col, "out of memory compiling %zu sends", len);
    size_t i = len;
    for (Node *r = n; i > 0; r = r->a)
        spine[--i] = r;
    for (i = 0; i < len && !e->g->failed; i++) {
        e->recv_ready = i > 0;
        send(e, spine[i]);
    }
    e->recv_ready = false;
    free(spine);
}

/* a := b := x as a statement: x, DUP for each inner target, store each. */
static void effect_assign(Emit *e, Node *n) {
    expr(e, n->a);
    store_name(e, n);
}

static void expr(Emit *e, Node *n) {
    if (e->g->failed) return;
    switch (n->kind) {
    case N_INT:
        if (n->len <= 2) {
            long v = strtol(n->text, NULL, 10) * (n->neg ? -1 : 1);
            if (v >= -128 && v <= 127) return op1(e, BC_PUSH_INT, (unsigned)(v & 0xff), 1);
        }
        /* fall through */
    case N_DOUBLE:
    case N_STRING:
    case N_SYMBOL:
    case N_ARRAY:
        opw(e, BC_PUSH_CONST, literal(e, literal_value(e, n)), 1);
        break;
    case N_VAR:
        load_name(e, n);
        break;
    case N_ASSIGN:
        expr(e, n->a);
        op0(e, BC_DUP, 1);
        store_name(e, n);
        break;
    case N_SEND:
        send_chain(e, n);
        break;
    case N_BLOCK: {
        SomMethod *bm = emit_real(e->g, n->block, n->scope, "value", n->line);
        if (bm) {
            bm->home = NULL; /* set by the caller once the method exists */
            opw(e, BC_PUSH_BLOCK, literal(e, SOM_V(bm)), 1);
        }
        break;
    }
    case N_RETURN: /* only as a statement; handled by the callers */
        gfail(e->g, n->line, n->col, "expected an expression, got '^'");
        break;
    }
}

/* Statements of an inlined block whose value is not needed. */
static void inlined_effect(Emit *e, Node *blk) {
    Body *b = blk->block;
    for (int i = 0; i < b->locals.n; i++) { /* fresh locals on every entry */
        op0(e, BC_PUSH_NIL, 1);
        store_var(e, b->local_vars[i]);
    }
    for (int i = 0; i < b->stmts.n; i++) {
        Node *st = b->stmts.items[i];
        if (st->kind == N_RETURN) {
            return_stmt(e, st);
            stack(e, -1); /* the returned value left with the activation */
            return;
        }
        effect(e, st);
    }
}

/* ifTrue:/ifFalse:/ifNil:... as a statement: no value is made. */
static void if_effect(Emit *e, Node *s, int jop, Node *then_blk, Node *else_blk) {
    receiver(e, s->a);
    unsigned k = 0;
    bool boolean = jop == BC_JUMP_IF_FALSE || jop == BC_JUMP_IF_TRUE;
    size_t l1 = boolean ? cond_jump(e, jop, s->text, s->elems.n, &k) : jump(e, jop, -1);
    inlined_effect(e, then_blk);
    if (else_blk) {
        size_t l2 = jump(e, BC_JUMP, 0);
        patch(e, l1);
        inlined_effect(e, else_blk);
        patch(e, l2);
    } else {
        patch(e, l1);
    }
    if (boolean) end_construct_effect(e, k);
}

static void while_effect(Emit *e, Node *s, int jop) {
    size_t head = e->len;
    unsigned k;
    inlined_body(e, s->a);
    size_t exit = cond_jump(e, jop, s->text, 1, &k);
    inlined_effect(e, s->elems.items[0]);
    jump_back(e, head);
    patch(e, exit);
    end_construct_effect(e, k);
}

/* An expression whose value is dropped: assignments store without DUP/POP,
 * conditionals and loops make no value. */
static void effect(Emit *e, Node *n) {
    if (n->kind == N_ASSIGN) {
        effect_assign(e, n);
        return;
    }
    if (n->kind == N_SEND) {
        Node **a = n->elems.items;
        switch (inline_kind(n)) {
        case IN_IF_TRUE:
            return if_effect(e, n, BC_JUMP_IF_FALSE, a[0], NULL);
        case IN_IF_FALSE:
            return if_effect(e, n, BC_JUMP_IF_TRUE, a[0], NULL);
        case IN_IF_TRUE_IF_FALSE:
            return if_effect(e, n, BC_JUMP_IF_FALSE, a[0], a[1]);
        case IN_IF_FALSE_IF_TRUE:
            return if_effect(e, n, BC_JUMP_IF_TRUE, a[0], a[1]);
        case IN_IF_NIL:
            return if_effect(e, n, BC_JUMP_IF_NOT_NIL, a[0], NULL);
        case IN_IF_NOT_NIL:
            return if_effect(e, n, BC_JUMP_IF_NIL, a[0], NULL);
        case IN_IF_NIL_IF_NOT_NIL:
            return if_effect(e, n, BC_JUMP_IF_NOT_NIL, a[0], a[1]);
        case IN_IF_NOT_NIL_IF_NIL:
            return if_effect(e, n, BC_JUMP_IF_NIL, a[0], a[1]);
        case IN_WHILE_TRUE:
            return while_effect(e, n, BC_JUMP_IF_FALSE);
        case IN_WHILE_FALSE:
            return while_effect(e, n, BC_JUMP_IF_TRUE);
        default:
            break;
        }
    }
    expr(e, n);
    op0(e, BC_POP, -1);
}

static void emit_trampolines(Emit *e) {
    for (uint32_t i = 0; i < e->ntramp; i++) {
        e->sites[e->tramp[i].site].bci = (uint32_t)e->len;
        stack(e, 1);
        op0(e, BC_POP, -1);
        jump_back(e, e->tramp[i].end);
    }
    free(e->tramp);
    e->tramp = NULL;
}

static SomMethod *finish(Emit *e, Body *b, const char *sig, int def_line) {
    SomVM *vm = e->g->env->vm;
    Scope *s = e->scope;
    SomMethod *m = gc_alloc(vm, sizeof *m, OBJ_METHOD, vm->methodClass);
    m->kind = s->is_block ? MK_BLOCK : MK_METHOD;
    m->signature = som_symbol_cstr(vm, sig);
    m->holder = e->g->env->holder;
    m->code = e->code;
    m->code_len = (uint32_t)e->len;
    m->literals = e->lits;
    m->nliterals = e->nlits;
    m->sites = e->sites;
    m->nsites = e->nsites;
    m->lines = e->lines;
    m->nlines = e->nlines;
    m->line = (uint32_t)def_line;
    m->nargs = (uint16_t)b->params.n;
    m->nlocals = (uint16_t)(s->nslots - s->nargs);
    m->maxstack = (uint16_t)(e->maxdepth + 2);
    m->nctx = (uint16_t)(s->has_ctx ? (s->nctx ? s->nctx : 1) : 0);
    m->has_nlr_blocks = s->has_nlr_inside;
    return m;
}

static SomMethod *emit_real(Gen *g, Body *b, Scope *s, const char *sig, int def_line) {
    Emit e = {0};
    e.g = g;
    e.scope = s;
    e.last_line = -1;
    line(&e, b->line);
    for (int i = 0; i < s->nvars; i++) { /* captured arguments move to the context */
        Var *v = s->vars[i];
        if (v->arg_index && v->captured) {
            op1(&e, BC_PUSH_LOCAL, (unsigned)v->arg_index, 1);
            store_var(&e, v);
        }
    }
    int n = b->stmts.n;
    for (int i = 0; i < n && !g->failed; i++) {
        Node *st = b->stmts.items[i];
        line(&e, st->line);
        if (st->kind == N_RETURN) {
            return_stmt(&e, st);
            if (s->is_block && i == n - 1) break;
            continue;
        }
        if (s->is_block && i == n - 1) {
            expr(&e, st);
            op0(&e, BC_RETURN_LOCAL, -1);
        } else {
            effect(&e, st);
        }
    }
    if (s->is_block && (n == 0)) {
        op0(&e, BC_PUSH_NIL, 1);
        op0(&e, BC_RETURN_LOCAL, -1);
    } else if (!s->is_block) {
        op0(&e, BC_RETURN_SELF, 0);
    }
    emit_trampolines(&e);
    if (g->failed) {
        free(e.code);
        free(e.lits);
        free(e.sites);
        free(e.lines);
        return NULL;
    }
    SomMethod *m = finish(&e, b, sig, def_line);
    /* nested blocks know their home method */
    for (uint32_t i = 0; i < m->nliterals; i++)
        if (som_is_obj(m->literals[i]) && som_hdr(m->literals[i])->kind == OBJ_METHOD) {
            SomMethod *bm = (SomMethod *)m->literals[i];
            if (bm->kind == MK_BLOCK && !bm->home) bm->home = m;
        }
    return m;
}

/* Blocks nested in blocks get their home fixed up from the outermost method. */
static void set_home(SomMethod *m, SomMethod *home) {
    for (uint32_t i = 0; i < m->nliterals; i++)
        if (som_is_obj(m->literals[i]) && som_hdr(m->literals[i])->kind == OBJ_METHOD) {
            SomMethod *bm = (SomMethod *)m->literals[i];
            if (bm->kind == MK_BLOCK) {
                bm->home = home;
                set_home(bm, home);
            }
        }
}

/* ---- trivial methods ------------------------------------------------- */

/* Index of v among m's literals, appending it if needed. */
static uint16_t method_literal(SomMethod *m, Value v) {
    for (uint32_t i = 0; i < m->nliterals; i++)
        if (m->literals[i] == v) return (uint16_t)i;
    Value *nl = realloc(m->literals, (m->nliterals + 1) * sizeof *nl);
    if (!nl) abort();
    m->literals = nl;
    m->literals[m->nliterals] = v;
    return (uint16_t)m->nliterals++;
}

/* The constant a `^ <expr>` body answers, if it is one (0 if not). */
static Value constant_of(const CompileEnv *env, const SomMethod *m, const Node *v) {
    SomVM *vm = env->vm;
    if (v->kind == N_VAR && !v->var) {
        if (!strcmp(v->text, "nil")) return vm->nil;
        if (!strcmp(v->text, "true")) return vm->true_;
        if (!strcmp(v->text, "false")) return vm->false_;
        return 0;
    }
    if (v->kind != N_INT && v->kind != N_DOUBLE && v->kind != N_STRING && v->kind != N_SYMBOL)
        return 0;
    /* the body compiled to PUSH_INT n or PUSH_CONST k */
    if (m->code[0] == BC_PUSH_INT) return som_mkint((int8_t)m->code[1]);
    if (m->code[0] == BC_PUSH_CONST) return m->literals[m->code[1] | (m->code[2] << 8)];
    return 0;
}

static void detect_trivial(const CompileEnv *env, MethodDef *def, SomMethod *m) {
    Body *b = &def->body;
    if (b->stmts.n == 0) {
        m->trivial = TRIV_SELF;
        return;
    }
    Node *st = b->stmts.items[0];
    if (b->stmts.n == 1 && st->kind == N_RETURN) {
        Node *v = st->a;
        Value c;
        if (v->kind == N_VAR && !v->var && !strcmp(v->text, "self")) {
            m->trivial = TRIV_SELF;
        } else if (v->kind == N_VAR && !v->var && !env->class_side && !is_pseudo(v->text) &&
                   field_index(env, v->text) >= 0) {
            m->trivial = TRIV_GETTER;
            m->trivial_arg = (uint16_t)field_index(env, v->text);
        } else if ((c = constant_of(env, m, v)) != 0) {
            m->trivial = TRIV_LITERAL;
            m->trivial_arg = method_literal(m, c);
        }
        return;
    }
    bool ret_self = b->stmts.n == 2 && b->stmts.items[1]->kind == N_RETURN &&
                    b->stmts.items[1]->a->kind == N_VAR &&
                    !strcmp(b->stmts.items[1]->a->text, "self");
    if ((b->stmts.n == 1 || ret_self) && st->kind == N_ASSIGN && !st->var && !env->class_side &&
        m->nargs == 1 && st->a->kind == N_VAR && st->a->var && st->a->var->arg_index == 1 &&
        !st->a->var->captured && field_index(env, st->text) >= 0) {
        m->trivial = TRIV_SETTER;
        m->trivial_arg = (uint16_t)field_index(env, st->text);
    }
}

SomMethod *codegen_method(const CompileEnv *env, MethodDef *def, char *err, size_t errlen) {
    Arena arena = {0};
    Gen g = {0};
    g.env = env;
    g.arena = &arena;
    g.err = err;
    g.errlen = errlen;
    Scope *ms = arena_alloc(&arena, sizeof *ms);
    g.method_scope = ms;
    ms->nargs = def->body.params.n;
    NameFrame *f = declare(&g, &def->body, ms, NULL, true);
    resolve_stmts(&g, &def->body, ms, f);
    SomMethod *m = NULL;
    if (!g.failed) {
        assign_slots(ms);
        for (int i = 0; i < g.nscopes; i++)
            assign_slots(g.scopes[i]);
        m = emit_real(&g, &def->body, ms, def->selector, def->line);
        if (m) {
            set_home(m, m);
            detect_trivial(env, def, m);
        }
    }
    arena_free(&arena);
    return m;
}
