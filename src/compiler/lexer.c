/* SPDX-License-Identifier: MIT */
/*
 * lexer.c - SOM tokens (docs/language.md section 1). Pure functions over a borrowed buffer.
 */
#include "lexer.h"

#include <ctype.h>
#include <string.h>

void lex_init_n(Lexer *lx, const char *src, size_t len) {
    lx->src = lx->p = lx->line_start = src;
    lx->end = src + len;
    lx->line = 1;
    lx->after_pound = 0;
}

void lex_init(Lexer *lx, const char *src) {
    lex_init_n(lx, src, strlen(src));
}

/* At a NUL byte: is it inside the text (an error) rather than its end? */
static int nul_inside(const Lexer *lx) {
    return lx->p < lx->end;
}

#define NUL_MSG(where) "a NUL byte" where " (a SOM source is text)"

static int is_op_char(int c) {
    return c && strchr("~&|*/\\+=><,@%-", c) != NULL;
}

static void newline(Lexer *lx, const char *at) {
    lx->line++;
    lx->line_start = at + 1;
}

/* Skips whitespace and comments; answers an error message or NULL. */
static const char *skip_blank(Lexer *lx) {
    for (;;) {
        char c = *lx->p;
        if (c == '\n') {
            newline(lx, lx->p);
            lx->p++;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            lx->p++;
        } else if (c == '"') {
            lx->p++;
            while (*lx->p && *lx->p != '"') {
                if (*lx->p == '\n') newline(lx, lx->p);
                lx->p++;
            }
            if (!*lx->p) return nul_inside(lx) ? NUL_MSG(" in a comment") : "unterminated comment";
            lx->p++;
        } else {
            return NULL;
        }
    }
}

static Token make(Lexer *lx, TokKind k, const char *start, int line, int col) {
    Token t = {k, start, (size_t)(lx->p - start), line, col};
    return t;
}

static Token lex_ident(Lexer *lx, const char *s, int line, int col) {
    while (isalnum((unsigned char)*lx->p) || *lx->p == '_')
        lx->p++;
    if (*lx->p == ':' && lx->p[1] != '=') {
        lx->p++;
        if (lx->after_pound && isalpha((unsigned char)*lx->p)) {
            while (isalnum((unsigned char)*lx->p) || *lx->p == '_' || *lx->p == ':')
                lx->p++;
            return make(lx, T_KEYSEQ, s, line, col);
        }
        return make(lx, T_KEYWORD, s, line, col);
    }
    return make(lx, T_IDENT, s, line, col);
}

static Token lex_number(Lexer *lx, const char *s, int line, int col) {
    while (isdigit((unsigned char)*lx->p))
        lx->p++;
    if (*lx->p == '.' && isdigit((unsigned char)lx->p[1])) {
        lx->p++;
        while (isdigit((unsigned char)*lx->p))
            lx->p++;
        return make(lx, T_DOUBLE, s, line, col);
    }
    return make(lx, T_INTEGER, s, line, col);
}

static Token lex_string(Lexer *lx, int line, int col) {
    const char *s = ++lx->p;
    while (*lx->p && *lx->p != '\'') {
        if (*lx->p == '\\' && lx->p[1]) {
            if (lx->p[1] == '\n') newline(lx, lx->p + 1);
            lx->p += 2;
            continue;
        }
        if (*lx->p == '\n') newline(lx, lx->p);
        lx->p++;
    }
    if (!*lx->p) {
        const char *m = nul_inside(lx) ? NUL_MSG(" in a string") : "unterminated string";
        Token t = {T_ERROR, m, strlen(m), line, col};
        return t;
    }
    Token t = {T_STRING, s, (size_t)(lx->p - s), line, col};
    lx->p++;
    return t;
}

Token lex_next(Lexer *lx) {
    const char *err = skip_blank(lx);
    const char *s = lx->p;
    int line = lx->line, col = (int)(s - lx->line_start) + 1;
    int after_pound = lx->after_pound;
    lx->after_pound = 0;
    if (err) {
        Token t = {T_ERROR, err, strlen(err), line, col};
        return t;
    }
    unsigned char c = (unsigned char)*s;
    if (!c && nul_inside(lx)) {
        Token t = {T_ERROR, NUL_MSG(""), strlen(NUL_MSG("")), line, col};
        return t;
    }
    if (!c) return make(lx, T_EOF, s, line, col);
    if (isalpha(c)) {
        lx->after_pound = after_pound;
        Token t = lex_ident(lx, s, line, col);
        lx->after_pound = 0;
        return t;
    }
    if (isdigit(c)) return lex_number(lx, s, line, col);
    if (c == '\'') return lex_string(lx, line, col);
    lx->p++;
    switch (c) {
    case '#':
        lx->after_pound = 1;
        return make(lx, T_POUND, s, line, col);
    case '(':
        return make(lx, T_LPAREN, s, line, col);
    case ')':
        return make(lx, T_RPAREN, s, line, col);
    case '[':
        return make(lx, T_LBRACKET, s, line, col);
    case ']':
        return make(lx, T_RBRACKET, s, line, col);
    case '^':
        return make(lx, T_CARET, s, line, col);
    case '.':
        return make(lx, T_PERIOD, s, line, col);
    case ':':
        if (*lx->p == '=') {
            lx->p++;
            return make(lx, T_ASSIGN, s, line, col);
        }
        return make(lx, T_COLON, s, line, col);
    default:
        break;
    }
    if (is_op_char(c)) {
        if (c == '-' && strncmp(s, "----", 4) == 0) {
            while (*lx->p == '-')
                lx->p++;
            return make(lx, T_SEPARATOR, s, line, col);
        }
        while (is_op_char(*lx->p))
            lx->p++;
        Token t = make(lx, T_OPERATOR, s, line, col);
        if (t.len == 1 && c == '|') t.kind = T_BAR;
        if (t.len == 1 && c == '=') t.kind = T_EQUAL;
        return t;
    }
    Token t = {T_ERROR, s, 1, line, col};
    return t;
}

const char *lex_kind_name(TokKind k) {
    static const char *names[] = {
        "end of file",
        "identifier",
        "keyword",
        "keyword sequence",
        "integer",
        "double",
        "string",
        "operator",
        "separator",
        "'#'",
        "'('",
        "')'",
        "'['",
        "']'",
        "'^'",
        "'.'",
        "':'",
        "':='",
        "'|'",
        "'='",
        "invalid character",
    };
    return names[k];
}

long lex_decode_string(const Token *tok, char *out, size_t *bad_at) {
    size_t n = 0;
    for (size_t i = 0; i < tok->len; i++) {
        char c = tok->text[i];
        if (c != '\\') {
            out[n++] = c;
            continue;
        }
        char e = tok->text[++i];
        switch (e) {
        case 't':
            out[n++] = '\t';
            break;
        case 'b':
            out[n++] = '\b';
            break;
        case 'n':
            out[n++] = '\n';
            break;
        case 'r':
            out[n++] = '\r';
            break;
        case 'f':
            out[n++] = '\f';
            break;
        case '0':
            out[n++] = '\0';
            break;
        case '\'':
            out[n++] = '\'';
            break;
        case '\\':
            out[n++] = '\\';
            break;
        default:
            *bad_at = i - 1;
            return -1;
        }
    }
    out[n] = 0;
    return (long)n;
}
