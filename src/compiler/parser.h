/*
 * parser.h - SOM class definitions to syntax trees (SPEC section 2).
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

bool parse_class(Arena *arena, const char *file, const char *src, ClassDef *out, char *err,
                 size_t errlen);

#endif
