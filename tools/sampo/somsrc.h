/* SPDX-License-Identifier: MIT */
/*
 * somsrc.h - the source of a profiled SOM method, for `sampo annotate` and the call sites of
 * `sampo report`: the method's class is loaded from a class path and compiled by som's own
 * compiler (libsomvm), so bytecode indices (the profile's call sites) map to the very lines
 * the VM's line tables give.
 *
 * The class path is the one given, or the one the profiled run used (the -cp entries and the
 * main file's directory of the profile's `cmdline`, then '.'), relative to the current
 * directory; the built-in core library comes last, as in `som`.  Nothing is printed: a class
 * that is not found or does not compile just has no source.  Not thread-safe.
 */
#ifndef SAMPO_TOOLS_SOMSRC_H
#define SAMPO_TOOLS_SOMSRC_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

typedef struct SampoSomSrc SampoSomSrc;

/* What is known of one method.  Strings are borrowed from the SampoSomSrc. */
typedef struct {
    const char *file; /* the source file it was compiled from */
    unsigned first;   /* line of its definition */
    unsigned last;    /* last line its code comes from (>= first) */
    const void *m;    /* the compiled method (for sampo_somsrc_line) */
    int block;        /* a block (its source ends inside a method) */
} SampoSomMethod;

/* A source finder for the SOM methods of profile p; classpath NULL: the run's own.  Answers
 * NULL when p has no SOM methods (or when no VM can be made). */
SampoSomSrc *sampo_somsrc_new(const SpProfile *p, const char *classpath);
void sampo_somsrc_free(SampoSomSrc *s);
/* Finds the method a frame label names ("Class>>selector", "Class class>>selector", either
 * with " [block L12]": the method's non-inlined block that starts on line 12, or " [block]":
 * its only block, or the first one whose code covers bci_hint).  Answers 0 and fills *out,
 * or -1. */
int sampo_somsrc_method(SampoSomSrc *s, const char *label, uint32_t bci_hint, SampoSomMethod *out);
/* The class path searched (borrowed). */
const char *sampo_somsrc_classpath(const SampoSomSrc *s);
/* Source line of bytecode index bci in a method found above. */
unsigned sampo_somsrc_line(const SampoSomMethod *m, uint32_t bci);
/* "file:line" of call site bci in the method labelled label, into buf; answers 0, or -1 when
 * unknown. */
int sampo_somsrc_site(SampoSomSrc *s, const char *label, uint32_t bci, char *buf, size_t n);

#endif
