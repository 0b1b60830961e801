/* SPDX-License-Identifier: MIT */
/*
 * main.c - `sampo` entry point: dispatches to one cmd_<name>() per subcommand from a table.
 */
#include "cmds.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} SampoCmd;

static const SampoCmd sampo_cmds[] = {
    {"record", cmd_record, "run a command under the profiler and write a profile"},
    {"report", cmd_report, "print flat profile, call tree, edges, threads, VM states, events"},
    {"export", cmd_export, "convert to pprof (gzipped proto), collapsed stacks or speedscope"},
    {"flame", cmd_flame, "draw a flame graph (SVG)"},
    {"hist", cmd_hist, "draw the PC histogram over the address space (SVG)"},
    {"compare", cmd_compare, "correlation and context-tree overlap of two profiles"},
    {"timeline", cmd_timeline, "samples and sampling interval over time (SVG)"},
    {"annotate", cmd_annotate, "a method's source or disassembly with its samples per line"},
};

static void sampo_usage(FILE *f) {
    fprintf(f, "usage: sampo <command> [options] [args]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof sampo_cmds / sizeof *sampo_cmds; i++)
        fprintf(f, "  %-8s %s\n", sampo_cmds[i].name, sampo_cmds[i].summary);
    fprintf(f, "\nreport, export, flame, hist, timeline and annotate read FILE, "
               "default " SAMPO_DEFAULT_FILE " (what record\nwrites by default).\n"
               "'sampo <command> --help' describes one command; man sampo-<command> has more.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        sampo_usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        sampo_usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("sampo 0.1.0 (profile format %d.%d)\n", SP_FORMAT_MAJOR, SP_FORMAT_MINOR);
        return 0;
    }
    for (size_t i = 0; i < sizeof sampo_cmds / sizeof *sampo_cmds; i++)
        if (!strcmp(argv[1], sampo_cmds[i].name)) {
            /* argv[0] of the subcommand is "sampo NAME": getopt's own messages
             * ("sampo report: unrecognized option ...") then name the whole command */
            char whole[32];
            snprintf(whole, sizeof whole, "sampo %s", sampo_cmds[i].name);
            argv[1] = whole;
            return sampo_cmds[i].fn(argc - 1, argv + 1);
        }
    fprintf(stderr, "sampo: unknown command '%s'\n", argv[1]);
    sampo_usage(stderr);
    return 2;
}
