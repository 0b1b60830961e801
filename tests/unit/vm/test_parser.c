/* SPDX-License-Identifier: MIT */
/*
 * test_parser.c - unit tests of the SOM parser (src/compiler/parser.c)
 * against docs/language.md section 2: class structure, method patterns, precedence, literals,
 * blocks, the exact `file:line:col: expected X, got Y` error messages, the
 * nesting depth limit, and robustness on truncated and mutated input.
 *
 * Syntax trees are printed as S-expressions so one string comparison checks
 * a whole method body.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser.h"

/* ---- tree printer ------------------------------------------------------- */

typedef struct Buf {
    char *s;
    size_t n, cap;
} Buf;

static void put(Buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char tmp[512];
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (b->n + (size_t)k + 1 > b->cap) {
        b->cap = (b->n + (size_t)k + 1) * 2;
        b->s = realloc(b->s, b->cap);
        assert_non_null(b->s);
    }
    memcpy(b->s + b->n, tmp, (size_t)k + 1);
    b->n += (size_t)k;
}

static void node(Buf *b, const Node *n);

static void body(Buf *b, const Body *bd) {
    for (int i = 0; i < bd->params.n; i++)
        put(b, ":%s ", bd->params.names[i]);
    if (bd->params.n) put(b, "| ");
    if (bd->locals.n) {
        put(b, "|");
        for (int i = 0; i < bd->locals.n; i++)
            put(b, " %s", bd->locals.names[i]);
        put(b, " | ");
    }
    for (int i = 0; i < bd->stmts.n; i++) {
        if (i) put(b, ". ");
        node(b, bd->stmts.items[i]);
    }
}

static void node(Buf *b, const Node *n) {
    switch (n->kind) {
    case N_INT:
        put(b, "%s%s", n->neg ? "-" : "", n->text);
        break;
    case N_DOUBLE:
        put(b, "%gd", n->dval);
        break;
    case N_STRING:
        put(b, "'%.*s'", (int)n->len, n->text);
        break;
    case N_SYMBOL:
        put(b, "#%.*s", (int)n->len, n->text);
        break;
    case N_ARRAY:
        put(b, "#(");
        for (int i = 0; i < n->elems.n; i++) {
            if (i) put(b, " ");
            node(b, n->elems.items[i]);
        }
        put(b, ")");
        break;
    case N_VAR:
        put(b, "%s", n->text);
        break;
    case N_ASSIGN:
        put(b, "(%s := ", n->text);
        node(b, n->a);
        put(b, ")");
        break;
    case N_SEND:
        put(b, "(%s%s ", n->is_super ? "super>>" : "", n->text);
        node(b, n->a);
        for (int i = 0; i < n->elems.n; i++) {
            put(b, " ");
            node(b, n->elems.items[i]);
        }
        put(b, ")");
        break;
    case N_BLOCK:
        put(b, "[");
        body(b, n->block);
        put(b, "]");
        break;
    case N_RETURN:
        put(b, "^");
        node(b, n->a);
        break;
    }
}

static char errbuf[1024];

/* Parses src as a class; fails the test on a syntax error. */
static bool parse(Arena *a, const char *src, ClassDef *def) {
    errbuf[0] = 0;
    return parse_class(a, "t.som", src, def, errbuf, sizeof errbuf);
}

/* The body of the single method of "C = ( m = ( <src> ) )", printed. */
static char *method_body(const char *stmts) {
    char src[4096];
    snprintf(src, sizeof src, "C = ( m = ( %s ) )", stmts);
    Arena a = {0};
    ClassDef def;
    if (!parse(&a, src, &def)) fail_msg("parse error for `%s`: %s", stmts, errbuf);
    assert_int_equal(def.inst_methods.n, 1);
    Buf b = {0};
    put(&b, "%s", "");
    body(&b, &def.inst_methods.items[0]->body);
    arena_free(&a);
    return b.s;
}

#define ASSERT_BODY(stmts, want)                                                                   \
    do {                                                                                           \
        char *got_ = method_body(stmts);                                                           \
        assert_string_equal(got_, want);                                                           \
        free(got_);                                                                                \
    } while (0)

/* The error message for src (must fail to parse). */
static const char *parse_error(const char *src) {
    Arena a = {0};
    ClassDef def;
    bool ok = parse(&a, src, &def);
    arena_free(&a);
    if (ok) fail_msg("`%s` parsed but should not", src);
    return errbuf;
}

/* ---- class structure ---------------------------------------------------- */

static void test_class_structure(void **state) {
    (void)state;
    Arena a = {0};
    ClassDef d;
    const char *src = "\"header\" Point = Shape (\n"
                      "  | x y |\n"
                      "  x = ( ^x )\n"
                      "  + other = ( ^self )\n"
                      "  x: ax y: ay = ( x := ax. y := ay )\n"
                      "  prim = primitive\n"
                      "  ----\n"
                      "  | count |\n"
                      "  new = ( ^super new )\n"
                      "  primitive = primitive\n"
                      ")\n";
    assert_true(parse(&a, src, &d));
    assert_string_equal(d.name, "Point");
    assert_string_equal(d.super_name, "Shape");
    assert_int_equal(d.inst_fields.n, 2);
    assert_string_equal(d.inst_fields.names[0], "x");
    assert_string_equal(d.inst_fields.names[1], "y");
    assert_int_equal(d.inst_fields.lines[1], 2);
    assert_int_equal(d.inst_methods.n, 4);
    assert_string_equal(d.inst_methods.items[0]->selector, "x");
    assert_int_equal(d.inst_methods.items[0]->line, 3);
    assert_string_equal(d.inst_methods.items[1]->selector, "+");
    assert_int_equal(d.inst_methods.items[1]->body.params.n, 1);
    assert_string_equal(d.inst_methods.items[1]->body.params.names[0], "other");
    assert_string_equal(d.inst_methods.items[2]->selector, "x:y:");
    assert_int_equal(d.inst_methods.items[2]->body.params.n, 2);
    assert_false(d.inst_methods.items[2]->is_primitive);
    assert_true(d.inst_methods.items[3]->is_primitive);
    assert_int_equal(d.class_fields.n, 1);
    assert_string_equal(d.class_fields.names[0], "count");
    assert_int_equal(d.class_methods.n, 2);
    assert_string_equal(d.class_methods.items[1]->selector, "primitive");
    assert_true(d.class_methods.items[1]->is_primitive);
    arena_free(&a);

    assert_true(parse(&a, "Object = nil ( )", &d));
    assert_string_equal(d.super_name, "nil");
    arena_free(&a);
    assert_true(parse(&a, "Empty = ( )", &d));
    assert_null(d.super_name);
    assert_int_equal(d.inst_methods.n + d.class_methods.n + d.inst_fields.n, 0);
    arena_free(&a);
    /* `||` as an empty field list, and a bare separator */
    assert_true(parse(&a, "E = ( || ---- || )", &d));
    assert_int_equal(d.inst_fields.n + d.class_fields.n, 0);
    arena_free(&a);
}

/* ---- expressions ------------------------------------------------------- */

static void test_precedence(void **state) {
    (void)state;
    ASSERT_BODY("^2 + 3 * 4", "^(* (+ 2 3) 4)");
    ASSERT_BODY("^a foo bar", "^(bar (foo a))");
    ASSERT_BODY("^a foo + b bar", "^(+ (foo a) (bar b))");
    ASSERT_BODY("^a at: 1 + 2 put: b baz", "^(at:put: a (+ 1 2) (baz b))");
    ASSERT_BODY("^a foo: b bar + c baz: d", "^(foo:baz: a (+ (bar b) c) d)");
    ASSERT_BODY("^(a foo: b) baz: c", "^(baz: (foo: a b) c)");
    ASSERT_BODY("^a max: (b min: c)", "^(max: a (min: b c))");
    ASSERT_BODY("^x -- 1", "^(-- x 1)");
    ASSERT_BODY("^1 = 2 | false", "^(| (= 1 2) false)");
}

static void test_statements_and_assignment(void **state) {
    (void)state;
    ASSERT_BODY("| a b | a := b := 3 + 4. ^a", "| a b | (a := (b := (+ 3 4))). ^a");
    ASSERT_BODY("a foo. b bar.", "(foo a). (bar b)");
    ASSERT_BODY("^self.", "^self");
    ASSERT_BODY("", "");
    ASSERT_BODY("a:=1", "(a := 1)");
}

static void test_literals(void **state) {
    (void)state;
    ASSERT_BODY("^-5 abs", "^(abs -5)");
    ASSERT_BODY("^3 - -1", "^(- 3 -1)");
    ASSERT_BODY("^3-1", "^(- 3 1)");
    ASSERT_BODY("^3--1", "^(-- 3 1)");
    ASSERT_BODY("^x foo: -2.5", "^(foo: x -2.5d)");
}

static void test_literals_ok(void **state) {
    (void)state;
    ASSERT_BODY("^#(1 -2 3.5 'x' #sym #at:put: #+ #(4) (5))",
                "^#(1 -2 3.5d 'x' #sym #at:put: #+ #(4) #(5))");
    ASSERT_BODY("^#foo: , #'hello world' , #primitive", "^(, (, #foo: #hello world) #primitive)");
    ASSERT_BODY("^'a\\nb'", "^'a\nb'");
    ASSERT_BODY("^123342353453453456456456", "^123342353453453456456456");
    ASSERT_BODY("^#( )", "^#()");
}

static void test_blocks(void **state) {
    (void)state;
    ASSERT_BODY("^[]", "^[]");
    ASSERT_BODY("^[:x | x + 1]", "^[:x | (+ x 1)]");
    ASSERT_BODY("^[:a :b | | t | t := a. ^t]", "^[:a :b | | t | (t := a). ^t]");
    ASSERT_BODY("^[:x || t | t]", "^[:x | | t | t]");
    ASSERT_BODY("^[ | t | ]", "^[| t | ]");
    ASSERT_BODY("^[:x | ]", "^[:x | ]");
    ASSERT_BODY("^[ [ 1 ] ]", "^[[1]]");
}

static void test_super_sends(void **state) {
    (void)state;
    /* only the first message to `super` is a super send */
    ASSERT_BODY("^super foo bar", "^(bar (super>>foo super))");
    ASSERT_BODY("^super + 1", "^(super>>+ super 1)");
    ASSERT_BODY("^super at: 1", "^(super>>at: super 1)");
    ASSERT_BODY("^(super) foo", "^(super>>foo super)");
}

/* ---- error messages -------------------------------------------------- */

static void test_error_messages(void **state) {
    (void)state;
    static const struct {
        const char *src, *msg;
    } cases[] = {
        {"", "t.som:1:1: expected a class name, got end of file"},
        {"Foo ( )", "t.som:1:5: expected '=' after the class name, got '('"},
        {"Foo = Bar", "t.som:1:10: expected '(' to start the class body, got end of file"},
        {"Foo = ( bar = ( ^ ) )", "t.som:1:19: expected an expression, got ')'"},
        {"Foo = ( bar = ( 1 2 ) )", "t.som:1:19: expected '.' or ')', got '2'"},
        {"Foo = ( bar = ( ^1. 2 ) )", "t.som:1:21: expected ')' after a return statement, got '2'"},
        {"Foo = ( bar ( ) )", "t.som:1:13: expected '=' after the method pattern, got '('"},
        {"Foo = ( bar = ( 'abc ) )", "t.som:1:17: expected an expression, got unterminated string"},
        {"Foo = ( bar = ( #( a ) ) )", "t.som:1:20: expected a literal, got 'a'"},
        {"Foo = ( bar = ( [:x x] ) )",
         "t.som:1:21: expected '|' after the block parameters, got 'x'"},
        {"Foo = ( bar = ( [: 1 | ] ) )",
         "t.som:1:20: expected a block parameter name after ':', got '1'"},
        {"Foo = ( at: = ( ) )", "t.som:1:13: expected an argument name after the keyword, got '='"},
        {"Foo = ( + = ( ) )",
         "t.som:1:11: expected an argument name after the binary selector, got '='"},
        {"Foo = ( bar = ( ) ) x",
         "t.som:1:21: expected end of file after the class definition, got 'x'"},
        {"Foo = ( bar = ( ) ",
         "t.som:1:19: expected ')' to close the class definition, got end of file"},
        {"Foo = ( bar = ( ! ) )", "t.som:1:17: expected an expression, got '!'"},
        {"Foo = ( bar = ( # ) )", "t.som:1:19: expected a symbol or '(' after '#', got ')'"},
        {"Foo = ( bar = ( \"open ) )",
         "t.som:1:26: expected an expression, got unterminated comment"},
        {"Foo = ( bar = x )",
         "t.som:1:15: expected '(' or 'primitive' to start the method body, got 'x'"},
        {"Foo = ( | a 1 | )", "t.som:1:13: expected a field name or '|', got '1'"},
        {"Foo = ( m = ( | a . | ) )", "t.som:1:19: expected a local variable name or '|', got '.'"},
        {"Foo = ( ( ) )",
         "t.som:1:9: expected a method pattern (unary, binary or keyword selector), got '('"},
        {"Foo = ( m = ( #(1 2 ) )",
         "t.som:1:24: expected ')' to close the class definition, got end of file"},
        {"Foo = (\n  m = (\n    ^ 1 +\n  )\n)", "t.som:4:3: expected an expression, got ')'"},
        {"Foo = ( m = ( 'a\\qb' ) )", "t.som:1:17: expected a valid escape sequence (\\t \\b \\n "
                                      "\\r \\f \\0 \\' \\\\), got '\\q'"},
        {"Foo = ( | a a | )", "t.som:1:13: duplicate field name 'a'"},
        {"Foo = ( m: a n: a = ( ) )", "t.som:1:17: duplicate argument name 'a'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *got = parse_error(cases[i].src);
        if (strcmp(got, cases[i].msg) != 0)
            fail_msg("case %zu `%s`:\n  got  %s\n  want %s", i, cases[i].src, got, cases[i].msg);
    }
}

/* ---- depth limit and robustness --------------------------------------- */

static char *nested(int depth, const char *open, const char *mid, const char *close) {
    size_t lo = strlen(open), lc = strlen(close);
    char *s = malloc((size_t)depth * (lo + lc) + strlen(mid) + 64);
    assert_non_null(s);
    size_t n = (size_t)sprintf(s, "C = ( m = ( ^");
    for (int i = 0; i < depth; i++, n += lo)
        memcpy(s + n, open, lo);
    n += (size_t)sprintf(s + n, "%s", mid);
    for (int i = 0; i < depth; i++, n += lc)
        memcpy(s + n, close, lc);
    strcpy(s + n, " ) )");
    return s;
}

static void check_depth(const char *open, const char *mid, const char *close) {
    Arena a = {0};
    ClassDef d;
    char *ok = nested(100, open, mid, close);
    if (!parse(&a, ok, &d)) fail_msg("depth 100 of %s: %s", open, errbuf);
    arena_free(&a);
    free(ok);
    char *deep = nested(100000, open, mid, close);
    assert_false(parse(&a, deep, &d));
    arena_free(&a);
    free(deep);
    assert_non_null(strstr(errbuf, "expression nested too deeply"));
    assert_memory_equal(errbuf, "t.som:1:", 8);
}

static void test_depth_limit(void **state) {
    (void)state;
    check_depth("(", "1", ")");
    check_depth("[", "1", "]");
    check_depth("#(", "1", ")");
    check_depth("(x := ", "1", ")");
    check_depth("[:x | ", "1", "]");
}

/* Every prefix of a valid class either parses or fails with a positioned
 * message; never crashes (run under ASan for the memory checks). */
static void test_truncations_and_mutations(void **state) {
    (void)state;
    const char *src =
        "Foo = Bar (\n | a b |\n"
        "  m: x with: y = ( | t | t := x + y * 2. ^[:e || u | u := e. ^u ] value: t )\n"
        "  - arg = ( ^#(1 -2 3.5 'x\\n' #sym #at:put: (4)) , 'it\\'s' )\n"
        "  p = primitive\n"
        "  ----\n | c |\n  new = ( ^super new m: -1 with: c \"note\" )\n)\n";
    size_t len = strlen(src);
    Arena a = {0};
    ClassDef d;
    if (!parse(&a, src, &d)) fail_msg("%s", errbuf);
    arena_free(&a);
    char *buf = malloc(len + 1);
    assert_non_null(buf);
    for (size_t cut = 0; cut < len; cut++) {
        memcpy(buf, src, cut);
        buf[cut] = 0;
        bool ok = parse(&a, buf, &d);
        arena_free(&a);
        if (!ok) assert_memory_equal(errbuf, "t.som:", 6);
    }
    static const char junk[] = "()[]^.:=|#'\"-+ x1:\n\\\xff\0";
    unsigned seed = 12345;
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(buf, src, len + 1);
        for (int k = 0; k < 3; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % len;
            seed = seed * 1103515245u + 12345u;
            buf[at] = junk[(seed >> 8) % (sizeof junk - 1)];
        }
        bool ok = parse(&a, buf, &d);
        arena_free(&a);
        if (!ok) assert_memory_equal(errbuf, "t.som:", 6);
    }
    free(buf);
}

static void test_small_error_buffer(void **state) {
    (void)state;
    Arena a = {0};
    ClassDef d;
    char small[12];
    memset(small, 'Z', sizeof small);
    assert_false(parse_class(&a, "t.som", "Foo ( )", &d, small, sizeof small));
    assert_string_equal(small, "t.som:1:5: ");
    arena_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_class_structure),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_statements_and_assignment),
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_literals_ok),
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_super_sends),
        cmocka_unit_test(test_error_messages),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_truncations_and_mutations),
        cmocka_unit_test(test_small_error_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
