/* SPDX-License-Identifier: MIT */
/*
 * parser.h - SOM class definitions to syntax trees (docs/language.md section 2).
 *
 * On a syntax error the parser stops and answers false, with a message of the
 * form `file:line:col: expected X, got Y` in err. Never exits, never crashes
 * on any input (fuzzed).
 */
#ifndef SOM_PARSER_H
#define SOM_PARSER_H

#include <stdbool.h>
#include <stddef.h>

#include "ast.h"

/* Parses the class in the NUL-terminated src; on failure writes
 * `file:line:col: expected X, got Y` to err and answers false. */
bool parse_class(Arena *arena, const char *file, const char *src, ClassDef *out, char *err,
                 size_t errlen);
/* parse_class for a buffer of len bytes (src[len] is NUL) that may contain
 * NUL bytes, which are then reported as errors. */
bool parse_class_n(Arena *arena, const char *file, const char *src, size_t len, ClassDef *out,
                   char *err, size_t errlen);

#endif
