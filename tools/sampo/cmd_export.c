/* SPDX-License-Identifier: MIT */
/*
 * cmd_export.c - `sampo export --pprof|--collapsed|--speedscope FILE [-o OUT]`.
 */
#include "cmds.h"

#include <getopt.h>
#include <stdio.h>

#include "export.h"
#include "pprof.h"
#include "srcline.h"

static const char export_usage[] =
    "usage: sampo export --pprof|--collapsed|--speedscope [--thread TID] [--no-lines|--lines]\n"
    "                    [FILE] [-o OUT]\n"
    "  Converts a profile for other tools.  FILE defaults to " SAMPO_DEFAULT_FILE ".\n"
    "  --pprof           gzipped profile.proto (go tool pprof, pprof web UI)\n"
    "  --collapsed       one 'root;...;leaf count' line per calling context (flamegraph.pl)\n"
    "  --speedscope      speedscope JSON (one sampled profile per thread)\n"
    "  --thread TID      only the samples of one thread (OS thread id)\n"
    "  --no-lines        pprof, speedscope: do not read source lines from the objects' DWARF\n"
    "  --lines           collapsed: frames as name:line where the line is known (SOM\n"
    "                    methods: the sampled bytecode's or call's line; a native leaf:\n"
    "                    its sampled PC's line from DWARF)\n"
    "  -o, --output OUT  output file (default: standard output)\n"
    "  -h, --help        this text\n";

int cmd_export(int argc, char **argv) {
    static const struct option opts[] = {{"pprof", no_argument, 0, 'p'},
                                         {"collapsed", no_argument, 0, 'c'},
                                         {"speedscope", no_argument, 0, 's'},
                                         {"output", required_argument, 0, 'o'},
                                         {"thread", required_argument, 0, 'T'},
                                         {"no-lines", no_argument, 0, 'L'},
                                         {"lines", no_argument, 0, 'N'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *outpath = NULL;
    const char *thread = NULL;
    int fmt = 0, c, lines = 1;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
        case 'c':
        case 's':
            if (fmt && fmt != c) {
                fprintf(stderr, "sampo export: choose exactly one output format\n");
                return 2;
            }
            fmt = c;
            break;
        case 'o':
            outpath = optarg;
            break;
        case 'T':
            thread = optarg;
            break;
        case 'L':
            lines = 0;
            break;
        case 'N':
            lines = 2;
            break;
        case 'h':
            fputs(export_usage, stdout);
            return 0;
        default:
            fputs(export_usage, stderr);
            return 2;
        }
    }
    if (!fmt) {
        fprintf(stderr,
                "sampo export: choose an output format: --pprof, --collapsed or --speedscope\n");
        fputs(export_usage, stderr);
        return 2;
    }
    const char *path = sampo_file_arg(argc, argv, optind, export_usage);
    if (!path) return 2;
    SpProfile *p = sampo_load_thread(path, thread);
    if (!p) return 1;
    SpBuf out;
    sp_buf_init(&out);
    int rc;
    if (fmt == 'p') { /* with the lines of the sampled PCs when the objects are still here */
        SampoSrcLines *sl = lines ? sampo_srclines_new(p) : NULL;
        rc = sp_export_pprof_lines(p, &out, sl ? sampo_srcline : NULL, sl);
        sampo_srclines_free(sl);
    } else if (fmt == 'c' && lines == 2) {
        SampoSrcLines *sl = sampo_srclines_new(p);
        rc = sp_export_collapsed_lines(p, &out, sl ? sampo_srcline : NULL, sl);
        sampo_srclines_free(sl);
    } else if (fmt == 's') { /* native functions' files and lines from DWARF */
        SampoSrcLines *sl = lines ? sampo_srclines_new(p) : NULL;
        rc = sp_export_speedscope_lines(p, &out, sl ? sampo_srcline : NULL, sl);
        sampo_srclines_free(sl);
    } else {
        rc = sp_export_collapsed(p, &out);
    }
    if (rc)
        fprintf(stderr, "sampo export: out of memory\n");
    else
        rc = sampo_write_out(outpath, &out);
    sp_buf_fini(&out);
    sp_profile_free(p);
    return rc ? 1 : 0;
}
