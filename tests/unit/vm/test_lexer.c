/* SPDX-License-Identifier: MIT */
/*
 * test_lexer.c - unit tests of the SOM lexer (src/compiler/lexer.c) against
 * docs/language.md section 1: every token kind, the separator, `||`, `-` before digits, keyword
 * sequences only after `#`, string escapes (incl. \0 and bad escapes),
 * comments, and line/column numbers.
 *
 * Tokens are rendered as "KIND:text" words so one string comparison checks a
 * whole token sequence.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "lexer.h"

static const char *short_name(TokKind k) {
    static const char *n[] = {"EOF", "ID", "KW", "KS", "INT", "DBL", "STR", "OP", "SEP", "#",  "(",
                              ")",   "[",  "]",  "^",  ".",   ":",   ":=",  "|",  "=",   "ERR"};
    return n[k];
}

/* All tokens of src up to and excluding EOF (or including the first ERR). */
static const char *toks(const char *src) {
    static char buf[4096];
    size_t n = 0;
    Lexer lx;
    lex_init(&lx, src);
    buf[0] = 0;
    for (int i = 0; i < 200; i++) {
        Token t = lex_next(&lx);
        if (t.kind == T_EOF) break;
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s:%.*s", n ? " " : "",
                              short_name(t.kind), (int)t.len, t.text);
        if (t.kind == T_ERROR) break;
    }
    return buf;
}

static Token nth(const char *src, int i) {
    Lexer lx;
    lex_init(&lx, src);
    Token t = lex_next(&lx);
    while (i-- > 0)
        t = lex_next(&lx);
    return t;
}

static void test_every_kind(void **state) {
    (void)state;
    assert_string_equal(toks("foo at: #at:put: 12 1.5 'str' + ---- # ( ) [ ] ^ . : := | ="),
                        "ID:foo KW:at: #:# KS:at:put: INT:12 DBL:1.5 STR:str OP:+ SEP:---- #:# "
                        "(:( ):) [:[ ]:] ^:^ .:. ::: :=::= |:| =:=");
    assert_string_equal(toks("!"), "ERR:!");
    Lexer lx;
    lex_init(&lx, "");
    assert_int_equal(lex_next(&lx).kind, T_EOF);
    assert_int_equal(lex_next(&lx).kind, T_EOF); /* EOF is sticky */
    for (int k = T_EOF; k <= T_ERROR; k++) {
        assert_non_null(lex_kind_name((TokKind)k));
        assert_true(strlen(lex_kind_name((TokKind)k)) > 0);
    }
    assert_string_equal(lex_kind_name(T_EOF), "end of file");
}

static void test_identifiers(void **state) {
    (void)state;
    assert_string_equal(toks("parent_ s127 Block1 primitive primitiveFoo"),
                        "ID:parent_ ID:s127 ID:Block1 ID:primitive ID:primitiveFoo");
    /* `_` cannot start an identifier */
    assert_string_equal(toks("_x"), "ERR:_");
}

static void test_separator(void **state) {
    (void)state;
    assert_string_equal(toks("----"), "SEP:----");
    assert_string_equal(toks("--------------------"), "SEP:--------------------");
    assert_string_equal(toks("---"), "OP:---");
    assert_string_equal(toks("----x"), "SEP:---- ID:x");
    /* a separator run swallows all dashes, but stops at other operator chars */
    assert_string_equal(toks("-----+"), "SEP:----- OP:+");
    assert_string_equal(toks("a --> b"), "ID:a OP:--> ID:b");
}

static void test_bars_and_operators(void **state) {
    (void)state;
    assert_string_equal(toks("| a b |"), "|:| ID:a ID:b |:|");
    assert_string_equal(toks("||"), "OP:||");
    assert_string_equal(toks("a || b"), "ID:a OP:|| ID:b");
    assert_string_equal(toks("[:x |-1]"), "[:[ ::: ID:x OP:|- INT:1 ]:]");
    assert_string_equal(toks("== ~= <= >= <> // << >>> && ++++ +-+ , @ % \\ ~ & * / > <"),
                        "OP:== OP:~= OP:<= OP:>= OP:<> OP:// OP:<< OP:>>> OP:&& OP:++++ "
                        "OP:+-+ OP:, OP:@ OP:% OP:\\ OP:~ OP:& OP:* OP:/ OP:> OP:<");
    /* `=` alone is its own kind; in a run it is part of the operator */
    assert_string_equal(toks("= =="), "=:= OP:==");
    /* `^ ! ? ; $` are not operator characters */
    assert_string_equal(toks("^"), "^:^");
    assert_string_equal(toks(";"), "ERR:;");
    assert_string_equal(toks("$a"), "ERR:$");
    assert_string_equal(toks("?"), "ERR:?");
}

static void test_minus_before_digits(void **state) {
    (void)state;
    assert_string_equal(toks("3-1"), "INT:3 OP:- INT:1");
    assert_string_equal(toks("3 - -1"), "INT:3 OP:- OP:- INT:1");
    assert_string_equal(toks("3--1"), "INT:3 OP:-- INT:1");
    assert_string_equal(toks("-5"), "OP:- INT:5");
    assert_string_equal(toks("-2.5"), "OP:- DBL:2.5");
}

static void test_numbers(void **state) {
    (void)state;
    assert_string_equal(toks("0 42 123342353453453456456456"),
                        "INT:0 INT:42 INT:123342353453453456456456");
    assert_string_equal(toks("3.14 0.000001"), "DBL:3.14 DBL:0.000001");
    assert_string_equal(toks("x := 1."), "ID:x :=::= INT:1 .:.");
    assert_string_equal(toks("1.x"), "INT:1 .:. ID:x");
    assert_string_equal(toks("1.2.3"), "DBL:1.2 .:. INT:3");
    /* no radix / exponent notation: 16r1F is 16 then identifier r1F */
    assert_string_equal(toks("16r1F 1e10"), "INT:16 ID:r1F INT:1 ID:e10");
}

static void test_keywords(void **state) {
    (void)state;
    /* a keyword sequence is built only right after '#' */
    assert_string_equal(toks("at: 1 put: 2"), "KW:at: INT:1 KW:put: INT:2");
    assert_string_equal(toks("at:put:"), "KW:at: KW:put:");
    assert_string_equal(toks("#at:put:"), "#:# KS:at:put:");
    assert_string_equal(toks("#f:b:c:"), "#:# KS:f:b:c:");
    assert_string_equal(toks("#a1:b_2:"), "#:# KS:a1:b_2:");
    assert_string_equal(toks("#at:"), "#:# KW:at:");
    assert_string_equal(toks("#foo #+ #'x y'"), "#:# ID:foo #:# OP:+ #:# STR:x y");
    /* '#' only affects the next token */
    assert_string_equal(toks("#foo at:put:"), "#:# ID:foo KW:at: KW:put:");
    /* ident followed by := is identifier + assignment (lenient) */
    assert_string_equal(toks("a:=1"), "ID:a :=::= INT:1");
    assert_string_equal(toks("a :=1"), "ID:a :=::= INT:1");
    /* keyword with whitespace before the colon is identifier + colon */
    assert_string_equal(toks("at :"), "ID:at :::");
}

static long decode(const char *src, char *out, size_t *bad) {
    Lexer lx;
    lex_init(&lx, src);
    Token t = lex_next(&lx);
    assert_int_equal(t.kind, T_STRING);
    return lex_decode_string(&t, out, bad);
}

static void test_strings(void **state) {
    (void)state;
    char out[256];
    size_t bad = 99;
    assert_int_equal(decode("'abc'", out, &bad), 3);
    assert_string_equal(out, "abc");
    assert_int_equal(decode("'\\t\\b\\n\\r\\f\\'\\\\'", out, &bad), 7);
    assert_memory_equal(out, "\t\b\n\r\f'\\", 7);
    /* \0 makes a NUL inside the string; the length still counts it */
    assert_int_equal(decode("'\\0rest'", out, &bad), 5);
    assert_int_equal(out[0], 0);
    assert_memory_equal(out + 1, "rest", 4);
    /* bad escapes: offset of the backslash */
    assert_int_equal(decode("'ab\\qc'", out, &bad), -1);
    assert_int_equal(bad, 2);
    assert_int_equal(decode("'\\x'", out, &bad), -1);
    assert_int_equal(bad, 0);
    /* an escaped quote does not end the string */
    assert_string_equal(toks("'it\\'s' x"), "STR:it\\'s ID:x");
    /* '' is two strings, not an escape */
    assert_string_equal(toks("'a''b'"), "STR:a STR:b");
    assert_string_equal(toks("''"), "STR:");
    /* raw newlines, tabs and bytes >= 0x80 are kept */
    assert_string_equal(toks("'l1\nl2\t\xc3\xa9'"), "STR:l1\nl2\t\xc3\xa9");
    /* unterminated */
    Token t = nth("x 'abc", 1);
    assert_int_equal(t.kind, T_ERROR);
    assert_memory_equal(t.text, "unterminated string", t.len);
    assert_int_equal(t.col, 3);
}

static void test_comments(void **state) {
    (void)state;
    assert_string_equal(toks("\"a comment\" x \"another\""), "ID:x");
    assert_string_equal(toks("a\"it's ok\"b"), "ID:a ID:b");
    assert_string_equal(toks("\"multi\nline\ncomment\" y"), "ID:y");
    Token t = nth("\"l1\nl2\" y", 0);
    assert_int_equal(t.line, 2);
    assert_int_equal(t.col, 5);
    t = nth("x \"never closed", 1);
    assert_int_equal(t.kind, T_ERROR);
    assert_memory_equal(t.text, "unterminated comment", t.len);
    /* a quote inside a string is not a comment */
    assert_string_equal(toks("'a \" b' c"), "STR:a \" b ID:c");
    /* whitespace of every kind */
    assert_string_equal(toks(" \t\r\n\f\va"), "ID:a");
}

static void test_positions(void **state) {
    (void)state;
    const char *src = "Foo = (\n  bar = ( ^1 )\n\tbaz: x = ( 'a\nb' x )\n)";
    Lexer lx;
    lex_init(&lx, src);
    struct {
        TokKind k;
        int line, col;
    } want[] = {
        {T_IDENT, 1, 1},   {T_EQUAL, 1, 5},   {T_LPAREN, 1, 7}, {T_IDENT, 2, 3},
        {T_EQUAL, 2, 7},   {T_LPAREN, 2, 9},  {T_CARET, 2, 11}, {T_INTEGER, 2, 12},
        {T_RPAREN, 2, 14}, {T_KEYWORD, 3, 2}, {T_IDENT, 3, 7},  {T_EQUAL, 3, 9},
        {T_LPAREN, 3, 11}, {T_STRING, 3, 13}, {T_IDENT, 4, 4},  {T_RPAREN, 4, 6},
        {T_RPAREN, 5, 1},  {T_EOF, 5, 2},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        Token t = lex_next(&lx);
        if (t.kind != want[i].k || t.line != want[i].line || t.col != want[i].col)
            fail_msg("token %zu: got kind %d at %d:%d, want kind %d at %d:%d", i, t.kind, t.line,
                     t.col, want[i].k, want[i].line, want[i].col);
    }
}

static void test_escaped_newline_in_string_counts_line(void **state) {
    (void)state;
    /* a backslash before a raw newline (a bad escape, but the lexer must still
     * count the line) */
    Token t = nth("'a\\\nb' x", 1);
    assert_int_equal(t.kind, T_IDENT);
    assert_int_equal(t.line, 2);
    assert_int_equal(t.col, 4);
}

static void test_high_bytes_outside_strings(void **state) {
    (void)state;
    assert_string_equal(toks("\xc3\xa9"), "ERR:\xc3");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind),
        cmocka_unit_test(test_identifiers),
        cmocka_unit_test(test_separator),
        cmocka_unit_test(test_bars_and_operators),
        cmocka_unit_test(test_minus_before_digits),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_keywords),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_comments),
        cmocka_unit_test(test_positions),
        cmocka_unit_test(test_escaped_newline_in_string_counts_line),
        cmocka_unit_test(test_high_bytes_outside_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
