/* SPDX-License-Identifier: MIT */
/*
 * parser.c - recursive-descent parser for SOM class files (docs/language.md section 2).
 *
 * Errors are reported once, as `file:line:col: expected X, got Y`, and make
 * every parse function unwind (they check p->failed). Recursion depth is
 * bounded (PARSE_MAX_DEPTH) so hostile input cannot overflow the C stack.
 */
#include "parser.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lexer.h"

#define PARSE_MAX_DEPTH 400

/* ---- arena -------------------------------------------------------------- */

typedef struct ArenaBlock {
    struct ArenaBlock *next;
    size_t used, cap;
    _Alignas(16) char data[];
} ArenaBlock;

void *arena_alloc(Arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    ArenaBlock *b = a->blocks;
    if (!b || b->used + n > b->cap) {
        size_t cap = n > 65536 ? n : 65536;
        b = malloc(sizeof(ArenaBlock) + cap);
        if (!b) abort();
        b->used = 0;
        b->cap = cap;
        b->next = a->blocks;
        a->blocks = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
    char *d = arena_alloc(a, n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

void arena_free(Arena *a) {
    for (ArenaBlock *b = a->blocks, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    a->blocks = NULL;
}

static void *grow(Arena *a, void *items, int n, int *cap, size_t elem) {
    if (n < *cap) return items;
    int ncap = *cap ? *cap * 2 : 4;
    void *ni = arena_alloc(a, (size_t)ncap * elem);
    if (n) memcpy(ni, items, (size_t)n * elem);
    *cap = ncap;
    return ni;
}

void nodelist_push(Arena *a, NodeList *l, Node *n) {
    l->items = grow(a, l->items, l->n, &l->cap, sizeof *l->items);
    l->items[l->n++] = n;
}

void namelist_push(Arena *a, NameList *l, const char *name, int line) {
    int cap = l->cap;
    l->names = grow(a, l->names, l->n, &cap, sizeof *l->names);
    int cap2 = l->cap;
    l->lines = grow(a, l->lines, l->n, &cap2, sizeof *l->lines);
    l->cap = cap;
    l->names[l->n] = name;
    l->lines[l->n++] = line;
}

static void mdl_push(Arena *a, MethodDefList *l, MethodDef *m) {
    l->items = grow(a, l->items, l->n, &l->cap, sizeof *l->items);
    l->items[l->n++] = m;
}

/* ---- parser state ------------------------------------------------------ */

typedef struct Parser {
    Lexer lx;
    Token cur, peek;
    bool has_peek;
    Arena *arena;
    const char *file;
    char *err;
    size_t errlen;
    bool failed;
    int depth;
} Parser;

static void advance(Parser *p) {
    if (p->has_peek) {
        p->cur = p->peek;
        p->has_peek = false;
    } else {
        p->cur = lex_next(&p->lx);
    }
}

static Token *peek(Parser *p) {
    if (!p->has_peek) {
        p->peek = lex_next(&p->lx);
        p->has_peek = true;
    }
    return &p->peek;
}

static void describe(const Token *t, char *buf, size_t n) {
    if (t->kind == T_EOF) {
        snprintf(buf, n, "end of file");
    } else if (t->kind == T_ERROR && t->len > 1) {
        snprintf(buf, n, "%.*s", (int)t->len, t->text);
    } else if (t->kind == T_STRING) {
        snprintf(buf, n, "string '%.*s'", (int)(t->len > 40 ? 40 : t->len), t->text);
    } else {
        snprintf(buf, n, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), t->text);
    }
}

static void fail_at(Parser *p, const Token *t, const char *fmt, ...) {
    if (p->failed) return;
    p->failed = true;
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "%s:%d:%d: %s", p->file, t->line, t->col, what);
}

static void expected(Parser *p, const char *what) {
    char got[128];
    describe(&p->cur, got, sizeof got);
    fail_at(p, &p->cur, "expected %s, got %s", what, got);
}

static bool accept(Parser *p, TokKind k) {
    if (p->cur.kind != k) return false;
    advance(p);
    return true;
}

static bool expect(Parser *p, TokKind k, const char *what) {
    if (accept(p, k)) return true;
    expected(p, what);
    return false;
}

static bool is_binop(const Token *t) {
    return t->kind == T_OPERATOR || t->kind == T_BAR || t->kind == T_EQUAL;
}

static bool is_op(const Token *t, const char *s) {
    return is_binop(t) && t->len == strlen(s) && memcmp(t->text, s, t->len) == 0;
}

static char *tok_str(Parser *p, const Token *t) {
    return arena_strndup(p->arena, t->text, t->len);
}

static Node *node(Parser *p, NodeKind k, const Token *at) {
    Node *n = arena_alloc(p->arena, sizeof *n);
    n->kind = k;
    n->line = at->line;
    n->col = at->col;
    return n;
}

/* ---- expressions ------------------------------------------------------- */

static Node *expression(Parser *p);
static Node *primary(Parser *p);
static void body_contents(Parser *p, Body *b, TokKind end, const char *end_name);

static bool enter(Parser *p) {
    if (++p->depth > PARSE_MAX_DEPTH) {
        fail_at(p, &p->cur, "expression nested too deeply");
        return false;
    }
    return true;
}

static Node *number(Parser *p, bool neg, const Token *at) {
    Node *n;
    if (p->cur.kind == T_INTEGER) {
        n = node(p, N_INT, at);
        n->text = tok_str(p, &p->cur);
        n->len = p->cur.len;
    } else {
        n = node(p, N_DOUBLE, at);
        char *s = tok_str(p, &p->cur);
        n->dval = strtod(s, NULL);
        if (neg) n->dval = -n->dval;
    }
    n->neg = neg;
    advance(p);
    return n;
}

static Node *string_lit(Parser *p, NodeKind kind) {
    Token t = p->cur;
    char *buf = arena_alloc(p->arena, t.len + 1);
    size_t bad = 0;
    long n = lex_decode_string(&t, buf, &bad);
    if (n < 0) {
        Token at = t;
        at.col += (int)bad + 1; /* approximate: column of the backslash */
        fail_at(p, &at,
                "expected a valid escape sequence (\\t \\b \\n \\r \\f \\0 \\' \\\\), got '\\%c'",
                t.text[bad + 1]);
        return NULL;
    }
    Node *nd = node(p, kind, &t);
    nd->text = buf;
    nd->len = (size_t)n;
    advance(p);
    return nd;
}

static Node *literal_array(Parser *p, const Token *at);

/* After '#': a symbol or a literal array. */
static Node *pound_literal(Parser *p) {
    Token at = p->cur;
    advance(p); /* '#' */
    Token t = p->cur;
    if (t.kind == T_LPAREN) return literal_array(p, &at);
    if (t.kind == T_STRING) return string_lit(p, N_SYMBOL);
    if (t.kind == T_IDENT || t.kind == T_KEYWORD || t.kind == T_KEYSEQ || is_binop(&t)) {
        Node *n = node(p, N_SYMBOL, &at);
        n->text = tok_str(p, &t);
        n->len = t.len;
        advance(p);
        return n;
    }
    expected(p, "a symbol or '(' after '#'");
    return NULL;
}

static Node *array_element(Parser *p) {
    Token t = p->cur;
    if (t.kind == T_INTEGER || t.kind == T_DOUBLE) return number(p, false, &t);
    if (is_op(&t, "-") && (peek(p)->kind == T_INTEGER || peek(p)->kind == T_DOUBLE)) {
        advance(p);
        return number(p, true, &t);
    }
    if (t.kind == T_STRING) return string_lit(p, N_STRING);
    if (t.kind == T_POUND) return pound_literal(p);
    if (t.kind == T_LPAREN) return literal_array(p, &t);
    expected(p, "a literal");
    return NULL;
}

static Node *literal_array(Parser *p, const Token *at) {
    if (!enter(p)) return NULL;
    advance(p); /* '(' */
    Node *n = node(p, N_ARRAY, at);
    while (!p->failed && p->cur.kind != T_RPAREN) {
        if (p->cur.kind == T_EOF) {
            expected(p, "')' to close the literal array");
            break;
        }
        Node *e = array_element(p);
        if (e) nodelist_push(p->arena, &n->elems, e);
    }
    accept(p, T_RPAREN);
    p->depth--;
    return p->failed ? NULL : n;
}

static Node *block(Parser *p) {
    Token at = p->cur;
    if (!enter(p)) return NULL;
    advance(p); /* '[' */
    Node *n = node(p, N_BLOCK, &at);
    Body *b = arena_alloc(p->arena, sizeof *b);
    b->line = at.line;
    b->col = at.col;
    n->block = b;
    if (p->cur.kind == T_COLON) {
        while (accept(p, T_COLON)) {
            if (p->cur.kind != T_IDENT) {
                expected(p, "a block parameter name after ':'");
                p->depth--;
                return NULL;
            }
            namelist_push(p->arena, &b->params, tok_str(p, &p->cur), p->cur.line);
            advance(p);
        }
        if (is_op(&p->cur, "||")) {
            /* `[:x || t | ...]`: end of parameters glued to the start of locals */
            p->cur.kind = T_BAR;
            p->cur.text++;
            p->cur.len = 1;
            p->cur.col++;
        } else if (!expect(p, T_BAR, "'|' after the block parameters")) {
            p->depth--;
            return NULL;
        }
    }
    body_contents(p, b, T_RBRACKET, "']'");
    p->depth--;
    return p->failed ? NULL : n;
}

static Node *primary(Parser *p) {
    Token t = p->cur;
    switch (t.kind) {
    case T_IDENT: {
        Node *n = node(p, N_VAR, &t);
        n->text = tok_str(p, &t);
        advance(p);
        return n;
    }
    case T_LPAREN: {
        if (!enter(p)) return NULL;
        advance(p);
        Node *n = expression(p);
        if (!p->failed) expect(p, T_RPAREN, "')'");
        p->depth--;
        return n;
    }
    case T_LBRACKET:
        return block(p);
    case T_INTEGER:
    case T_DOUBLE:
        return number(p, false, &t);
    case T_STRING:
        return string_lit(p, N_STRING);
    case T_POUND:
        return pound_literal(p);
    default:
        break;
    }
    if (is_op(&t, "-") && (peek(p)->kind == T_INTEGER || peek(p)->kind == T_DOUBLE)) {
        advance(p);
        return number(p, true, &t);
    }
    expected(p, "an expression");
    return NULL;
}

static Node *send(Parser *p, Node *recv, const Token *at, char *sel) {
    Node *n = node(p, N_SEND, at);
    n->a = recv;
    n->text = sel;
    n->len = strlen(sel);
    /* only the first message to `super` is a super send: later ones have a
     * send node, not the variable, as receiver */
    n->is_super = recv && recv->kind == N_VAR && strcmp(recv->text, "super") == 0;
    return n;
}

static Node *unary_sends(Parser *p, Node *recv) {
    while (!p->failed && p->cur.kind == T_IDENT) {
        Token t = p->cur;
        recv = send(p, recv, &t, tok_str(p, &t));
        advance(p);
    }
    return recv;
}

static Node *binary_operand(Parser *p) {
    Node *n = primary(p);
    return p->failed ? NULL : unary_sends(p, n);
}

static Node *binary_sends(Parser *p, Node *recv) {
    while (!p->failed && is_binop(&p->cur)) {
        Token t = p->cur;
        char *sel = tok_str(p, &t);
        advance(p);
        Node *arg = binary_operand(p);
        if (p->failed) return NULL;
        recv = send(p, recv, &t, sel);
        nodelist_push(p->arena, &recv->elems, arg);
    }
    return recv;
}

static Node *keyword_send(Parser *p, Node *recv) {
    Token at = p->cur;
    char sel[1024];
    size_t len = 0;
    NodeList args = {0};
    while (!p->failed && p->cur.kind == T_KEYWORD) {
        if (len + p->cur.len >= sizeof sel) {
            fail_at(p, &p->cur, "selector too long");
            return NULL;
        }
        memcpy(sel + len, p->cur.text, p->cur.len);
        len += p->cur.len;
        advance(p);
        Node *arg = binary_operand(p);
        arg = binary_sends(p, arg);
        if (p->failed) return NULL;
        nodelist_push(p->arena, &args, arg);
    }
    Node *n = send(p, recv, &at, arena_strndup(p->arena, sel, len));
    n->elems = args;
    return n;
}

static Node *evaluation(Parser *p) {
    Node *n = primary(p);
    if (p->failed) return NULL;
    n = unary_sends(p, n);
    n = binary_sends(p, n);
    if (!p->failed && p->cur.kind == T_KEYWORD) n = keyword_send(p, n);
    return p->failed ? NULL : n;
}

static Node *expression(Parser *p) {
    if (!enter(p)) return NULL;
    Node *n;
    if (p->cur.kind == T_IDENT && peek(p)->kind == T_ASSIGN) {
        Token t = p->cur;
        n = node(p, N_ASSIGN, &t);
        n->text = tok_str(p, &t);
        advance(p);
        advance(p);
        n->a = expression(p);
    } else {
        n = evaluation(p);
    }
    p->depth--;
    return p->failed ? NULL : n;
}

/* ---- bodies ------------------------------------------------------------- */

static void name_list(Parser *p, NameList *l, const char *what) {
    /* current token is the opening '|' */
    advance(p);
    while (p->cur.kind == T_IDENT) {
        for (int i = 0; i < l->n; i++)
            if (strlen(l->names[i]) == p->cur.len &&
                memcmp(l->names[i], p->cur.text, p->cur.len) == 0) {
                fail_at(p, &p->cur, "duplicate %s name '%.*s'", what, (int)p->cur.len, p->cur.text);
                return;
            }
        namelist_push(p->arena, l, tok_str(p, &p->cur), p->cur.line);
        advance(p);
    }
    expect(p, T_BAR, what[0] == 'f' ? "a field name or '|'" : "a local variable name or '|'");
}

static void statements(Parser *p, Body *b, TokKind end, const char *end_name) {
    while (!p->failed && p->cur.kind != end) {
        if (p->cur.kind == T_CARET) {
            Token t = p->cur;
            advance(p);
            Node *r = node(p, N_RETURN, &t);
            r->a = expression(p);
            if (p->failed) return;
            nodelist_push(p->arena, &b->stmts, r);
            accept(p, T_PERIOD);
            if (p->cur.kind != end) {
                char buf[64];
                snprintf(buf, sizeof buf, "%s after a return statement", end_name);
                expected(p, buf);
            }
            return;
        }
        Node *e = expression(p);
        if (p->failed) return;
        nodelist_push(p->arena, &b->stmts, e);
        if (!accept(p, T_PERIOD) && p->cur.kind != end) {
            char buf[64];
            snprintf(buf, sizeof buf, "'.' or %s", end_name);
            expected(p, buf);
            return;
        }
    }
}

static void body_contents(Parser *p, Body *b, TokKind end, const char *end_name) {
    if (p->cur.kind == T_BAR)
        name_list(p, &b->locals, "local");
    else if (is_op(&p->cur, "||"))
        advance(p);
    if (p->failed) return;
    statements(p, b, end, end_name);
    if (!p->failed) expect(p, end, end_name);
}

static bool pattern(Parser *p, MethodDef *m) {
    Body *b = &m->body;
    Token t = p->cur;
    m->line = t.line;
    if (t.kind == T_IDENT) {
        m->selector = tok_str(p, &t);
        advance(p);
        return true;
    }
    if (is_binop(&t)) {
        m->selector = tok_str(p, &t);
        advance(p);
        if (p->cur.kind != T_IDENT) {
            expected(p, "an argument name after the binary selector");
            return false;
        }
        namelist_push(p->arena, &b->params, tok_str(p, &p->cur), p->cur.line);
        advance(p);
        return true;
    }
    if (t.kind != T_KEYWORD) {
        expected(p, "a method pattern (unary, binary or keyword selector)");
        return false;
    }
    char sel[1024];
    size_t len = 0;
    while (p->cur.kind == T_KEYWORD) {
        if (len + p->cur.len >= sizeof sel) {
            fail_at(p, &p->cur, "selector too long");
            return false;
        }
        memcpy(sel + len, p->cur.text, p->cur.len);
        len += p->cur.len;
        advance(p);
        if (p->cur.kind != T_IDENT) {
            expected(p, "an argument name after the keyword");
            return false;
        }
        for (int i = 0; i < b->params.n; i++)
            if (strlen(b->params.names[i]) == p->cur.len &&
                memcmp(b->params.names[i], p->cur.text, p->cur.len) == 0) {
                fail_at(p, &p->cur, "duplicate argument name '%.*s'", (int)p->cur.len, p->cur.text);
                return false;
            }
        namelist_push(p->arena, &b->params, tok_str(p, &p->cur), p->cur.line);
        advance(p);
    }
    m->selector = arena_strndup(p->arena, sel, len);
    return true;
}

static MethodDef *method(Parser *p) {
    MethodDef *m = arena_alloc(p->arena, sizeof *m);
    if (!pattern(p, m)) return NULL;
    if (!expect(p, T_EQUAL, "'=' after the method pattern")) return NULL;
    m->body.line = p->cur.line;
    m->body.col = p->cur.col;
    if (p->cur.kind == T_IDENT && p->cur.len == 9 && memcmp(p->cur.text, "primitive", 9) == 0) {
        m->is_primitive = true;
        advance(p);
        return m;
    }
    if (!expect(p, T_LPAREN, "'(' or 'primitive' to start the method body")) return NULL;
    body_contents(p, &m->body, T_RPAREN, "')'");
    return p->failed ? NULL : m;
}

static void side(Parser *p, NameList *fields, MethodDefList *methods) {
    if (p->cur.kind == T_BAR)
        name_list(p, fields, "field");
    else if (is_op(&p->cur, "||"))
        advance(p);
    while (!p->failed && p->cur.kind != T_RPAREN && p->cur.kind != T_SEPARATOR) {
        if (p->cur.kind == T_EOF) {
            expected(p, "')' to close the class definition");
            return;
        }
        MethodDef *m = method(p);
        if (m) mdl_push(p->arena, methods, m);
    }
}

bool parse_class(Arena *arena, const char *file, const char *src, ClassDef *out, char *err,
                 size_t errlen) {
    return parse_class_n(arena, file, src, strlen(src), out, err, errlen);
}

bool parse_class_n(Arena *arena, const char *file, const char *src, size_t len, ClassDef *out,
                   char *err, size_t errlen) {
    Parser p = {0};
    p.arena = arena;
    p.file = file;
    p.err = err;
    p.errlen = errlen;
    lex_init_n(&p.lx, src, len);
    advance(&p);
    memset(out, 0, sizeof *out);
    if (p.cur.kind != T_IDENT) {
        expected(&p, "a class name");
        return false;
    }
    out->name = tok_str(&p, &p.cur);
    advance(&p);
    if (!expect(&p, T_EQUAL, "'=' after the class name")) return false;
    if (p.cur.kind == T_IDENT) {
        out->super_name = tok_str(&p, &p.cur);
        advance(&p);
    }
    if (!expect(&p, T_LPAREN, "'(' to start the class body")) return false;
    side(&p, &out->inst_fields, &out->inst_methods);
    if (!p.failed && accept(&p, T_SEPARATOR)) side(&p, &out->class_fields, &out->class_methods);
    if (!p.failed) expect(&p, T_RPAREN, "')' to close the class definition");
    if (!p.failed && p.cur.kind != T_EOF) expected(&p, "end of file after the class definition");
    return !p.failed;
}
