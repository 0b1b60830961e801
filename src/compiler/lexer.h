/* SPDX-License-Identifier: MIT */
/*
 * lexer.h - tokens of SOM source text (docs/language.md section 1).
 *
 * The lexer works on a borrowed, NUL-terminated buffer and never allocates:
 * token texts are slices of the source. Strings with escapes are decoded by
 * the parser (lex_decode_string). Not used in signal handlers.
 */
#ifndef SOM_LEXER_H
#define SOM_LEXER_H

#include <stddef.h>

typedef enum TokKind {
    T_EOF,
    T_IDENT,     /* foo, primitive */
    T_KEYWORD,   /* at: */
    T_KEYSEQ,    /* at:put: (only right after #) */
    T_INTEGER,   /* 123 */
    T_DOUBLE,    /* 1.5 */
    T_STRING,    /* 'abc' (text excludes quotes, escapes undecoded) */
    T_OPERATOR,  /* + - ** ~= ... */
    T_SEPARATOR, /* ---- */
    T_POUND,     /* # */
    T_LPAREN,
    T_RPAREN,
    T_LBRACKET,
    T_RBRACKET,
    T_CARET,
    T_PERIOD,
    T_COLON,
    T_ASSIGN,
    T_BAR,
    T_EQUAL, /* = alone (also a binary operator) */
    T_ERROR, /* bad character or unterminated construct; text = message */
} TokKind;

typedef struct Token {
    TokKind kind;
    const char *text;
    size_t len;
    int line, col;
} Token;

typedef struct Lexer {
    const char *src, *p;
    const char *end; /* src + length: a NUL byte before it is an error, not the end */
    int line;
    const char *line_start;
    int after_pound; /* the previous token was '#': allow keyword sequences */
} Lexer;

void lex_init(Lexer *lx, const char *src);
/* Like lex_init for a buffer of len bytes (NUL at src[len]) that may hold
 * NUL bytes: one is reported as an error token, not taken for the end. */
void lex_init_n(Lexer *lx, const char *src, size_t len);
Token lex_next(Lexer *lx);
const char *lex_kind_name(TokKind k);
/* Decodes escapes of a T_STRING token into out (>= tok.len + 1 bytes).
 * Answers the decoded length, or -1 with *bad_at = offset of a bad escape. */
long lex_decode_string(const Token *tok, char *out, size_t *bad_at);

#endif
