/*
 * cmd_report.c - `sampo report FILE`: the text report (src/analysis/report.h).
 */
#include "cmds.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "report.h"

static const char report_usage[] =
    "usage: sampo report [--limit N] [--tree-min PCT] [--tree-depth N] [--thread TID] FILE\n"
    "  Flat profile (self%, cumulative%, total%, counts), call tree, top call edges,\n"
    "  per-thread view, VM-state split, trigger, rate changes and dropped samples.\n"
    "  --limit N        rows in the flat profile and edge list (default 25, 0 = all)\n"
    "  --tree-min PCT   hide call-tree nodes below PCT percent (default 1)\n"
    "  --tree-depth N   limit the call-tree depth (default unlimited)\n"
    "  --thread TID     only the samples of one thread (OS thread id)\n";

int cmd_report(int argc, char **argv) {
    static const struct option opts[] = {{"limit", required_argument, 0, 'l'},
                                         {"tree-min", required_argument, 0, 'm'},
                                         {"tree-depth", required_argument, 0, 'd'},
                                         {"thread", required_argument, 0, 'T'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    SpReportOpts o;
    uint64_t v;
    const char *thread = NULL;
    int c;
    sp_report_opts_default(&o);
    optind = 1;
    while ((c = getopt_long(argc, argv, "l:m:d:h", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
        case 'd':
            if (sampo_parse_u64(optarg, &v) || v > 1000000) {
                fprintf(stderr, "sampo report: expected a count, got '%s'\n", optarg);
                return 2;
            }
            *(c == 'l' ? &o.limit : &o.tree_depth) = (unsigned)v;
            break;
        case 'm':
            o.tree_min = atof(optarg);
            break;
        case 'T':
            thread = optarg;
            break;
        case 'h':
            fputs(report_usage, stdout);
            return 0;
        default:
            fputs(report_usage, stderr);
            return 2;
        }
    }
    if (optind != argc - 1) {
        fputs(report_usage, stderr);
        return 2;
    }
    SpProfile *p = sampo_load_thread(argv[optind], thread);
    if (!p) return 1;
    SpBuf out;
    sp_buf_init(&out);
    int rc = sp_report(p, &o, &out) == 0 && sampo_write_out(NULL, &out) == 0 ? 0 : 1;
    if (out.oom) fprintf(stderr, "sampo report: out of memory\n");
    sp_buf_fini(&out);
    sp_profile_free(p);
    return rc;
}
