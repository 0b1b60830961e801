/* SPDX-License-Identifier: MIT */
/*
 * cmds.h - the `sampo` subcommands (one cmd_<name>.c each, dispatched from the table in
 * main.c, as linux tools/perf does) and helpers they share (util.c).
 * Each cmd_* takes the arguments after the subcommand name (argv[0] = subcommand) and
 * returns the process exit status; none calls exit().
 */
#ifndef SAMPO_TOOLS_CMDS_H
#define SAMPO_TOOLS_CMDS_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "profile_io.h"

/* The profile `sampo record` writes without -o, and what the other commands read when no
 * FILE is given. */
#define SAMPO_DEFAULT_FILE "sampo.prof"
/* ... and, when there is none, the profile `som --prof` writes without --prof-out. */
#define SAMPO_SOM_FILE "som.sampo"

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_flame(int argc, char **argv);
int cmd_hist(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_timeline(int argc, char **argv);
int cmd_annotate(int argc, char **argv);

/* Loads a profile file, printing "sampo: <error>" on failure.  Returns NULL on failure. */
SpProfile *sampo_load(const char *path);
/* Writes buf to path, or to stdout when path is NULL or "-".  Returns 0 or prints + -1. */
int sampo_write_out(const char *path, const SpBuf *buf);
/* Restricts p to the thread with OS id tid_text (for --thread); prints an error and returns
 * -1 if there is no such thread. */
int sampo_select_thread(SpProfile *p, const char *tid_text);
/* sampo_load, then sampo_select_thread when thread (a --thread TID text) is not NULL;
 * frees the profile and returns NULL if either fails (errors are printed). */
SpProfile *sampo_load_thread(const char *path, const char *thread);
/* The FILE operand of a reading command: argv[optind], or SAMPO_DEFAULT_FILE (else
 * SAMPO_SOM_FILE) if there is none; NULL (after printing "sampo CMD: ..." and the usage) if
 * there is more than one, or none and neither file exists. */
const char *sampo_file_arg(int argc, char **argv, int optind, const char *usage);
/* Parses an unsigned number (decimal or 0x hex); returns 0 on success. */
int sampo_parse_u64(const char *s, uint64_t *v);

#endif
