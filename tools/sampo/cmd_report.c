/* SPDX-License-Identifier: MIT */
/*
 * cmd_report.c - `sampo report [FILE]`: the text report (src/analysis/report.h).
 */
#include "cmds.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "somsrc.h" /* (before report.h: the call sites' lines) */
#include "report.h"
#include "srcline.h"

static const char report_usage[] =
    "usage: sampo report [options] [FILE]\n"
    "  Run summary, flat profile (self%, cumulative%, total%, counts), call tree (recursion\n"
    "  folded), top call edges, per-thread view, VM-state split, trigger, rate changes and\n"
    "  dropped samples.  FILE defaults to " SAMPO_DEFAULT_FILE " (what sampo record writes).\n"
    "sections (default: all; any of these prints only the ones given):\n"
    "  --summary        the run summary (metadata)\n"
    "  --flat           the flat profile (and the time-weighted view of exact profiles)\n"
    "  --tree           the call tree\n"
    "  --edges          the top call edges\n"
    "  --threads        the per-thread view\n"
    "  --states         the VM-state split\n"
    "  --events         the events (rate changes, pauses, dropped samples)\n"
    "selection:\n"
    "  --sort self|cum  flat profile by self (default) or cumulative (inclusive) weight\n"
    "  --top N          rows in the flat profile and edge list (default 25, 0 = all)\n"
    "  --limit N        the same as --top N\n"
    "  --min PCT        hide flat rows and edges below PCT percent of the total\n"
    "  --focus RE       keep only samples with a frame matching RE (POSIX extended regex)\n"
    "  --ignore RE      drop samples with a frame matching RE\n"
    "  --tree-min PCT   hide call-tree nodes below PCT percent (default 1)\n"
    "  --tree-depth N   limit the call-tree depth (default unlimited)\n"
    "  --lines          add the self weight per source line of the samples' leaves (SOM\n"
    "                   methods: the sampled bytecode's line; native code: DWARF)\n"
    "  --thread TID     only the samples of one thread (OS thread id)\n"
    "  -h, --help       this text\n";

/* Parses a percentage 0..100 into *v; returns 0 on success. */
static int report_parse_pct(const char *s, double *v) {
    char *end;
    double x = strtod(s, &end);
    if (end == s || *end || !(x >= 0 && x <= 100)) return -1;
    *v = x;
    return 0;
}

/* SpReportOpts.site_line for SOM methods: their classes compiled from the class path. */
static int report_site_line(void *ctx, const SpProfile *p, uint32_t caller, uint32_t callsite,
                            char *buf, size_t len) {
    if (p->frames[caller].kind != SP_FRAME_VM_METHOD) return -1;
    return sampo_somsrc_site(ctx, sp_str(p, p->frames[caller].name), callsite, buf, len);
}

int cmd_report(int argc, char **argv) {
    enum {
        O_SUMMARY = 256,
        O_FLAT,
        O_TREE,
        O_EDGES,
        O_THREADS,
        O_STATES,
        O_EVENTS,
        O_SORT,
        O_MIN,
        O_FOCUS,
        O_IGNORE,
        O_LINES
    };
    static const struct option opts[] = {{"limit", required_argument, 0, 'l'},
                                         {"top", required_argument, 0, 'l'},
                                         {"tree-min", required_argument, 0, 'm'},
                                         {"tree-depth", required_argument, 0, 'd'},
                                         {"thread", required_argument, 0, 'T'},
                                         {"summary", no_argument, 0, O_SUMMARY},
                                         {"flat", no_argument, 0, O_FLAT},
                                         {"tree", no_argument, 0, O_TREE},
                                         {"edges", no_argument, 0, O_EDGES},
                                         {"threads", no_argument, 0, O_THREADS},
                                         {"states", no_argument, 0, O_STATES},
                                         {"events", no_argument, 0, O_EVENTS},
                                         {"sort", required_argument, 0, O_SORT},
                                         {"min", required_argument, 0, O_MIN},
                                         {"focus", required_argument, 0, O_FOCUS},
                                         {"ignore", required_argument, 0, O_IGNORE},
                                         {"lines", no_argument, 0, O_LINES},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    SpReportOpts o;
    uint64_t v;
    const char *thread = NULL, *focus = NULL, *ignore = NULL;
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
        case O_MIN:
            if (report_parse_pct(optarg, c == 'm' ? &o.tree_min : &o.min_pct)) {
                fprintf(stderr, "sampo report: expected a percentage in 0..100, got '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case 'T':
            thread = optarg;
            break;
        case O_SUMMARY:
        case O_FLAT:
        case O_TREE:
        case O_EDGES:
        case O_THREADS:
        case O_STATES:
        case O_EVENTS:
            o.sections |= 1 << (c - O_SUMMARY); /* SP_REPORT_SUMMARY .. SP_REPORT_EVENTS */
            break;
        case O_SORT:
            if (strcmp(optarg, "self") && strcmp(optarg, "cum")) {
                fprintf(stderr, "sampo report: expected --sort self or cum, got '%s'\n", optarg);
                return 2;
            }
            o.sort_total = !strcmp(optarg, "cum");
            break;
        case O_FOCUS:
            focus = optarg;
            break;
        case O_IGNORE:
            ignore = optarg;
            break;
        case O_LINES:
            o.lines = 1;
            break;
        case 'h':
            fputs(report_usage, stdout);
            return 0;
        default:
            fputs(report_usage, stderr);
            return 2;
        }
    }
    const char *path = sampo_file_arg(argc, argv, optind, report_usage);
    if (!path) return 2;
    SpProfile *p = sampo_load_thread(path, thread);
    if (!p) return 1;
    SampoSomSrc *src = sampo_somsrc_new(p, NULL); /* call sites' source lines, when found */
    o.site_line = src ? report_site_line : NULL;
    o.site_ctx = src;
    char err[512];
    int frc = sp_profile_filter_frames(p, focus, ignore, err, sizeof err);
    if (frc) {
        if (frc == -2)
            fprintf(stderr, "sampo report: %s: %s\n", path, err);
        else
            fprintf(stderr, "sampo report: out of memory\n");
        sampo_somsrc_free(src);
        sp_profile_free(p);
        return frc == -2 ? 2 : 1;
    }
    SampoSrcLines *sl = o.lines ? sampo_srclines_new(p) : NULL;
    o.linefn = sl ? sampo_srcline : NULL, o.linectx = sl;
    SpBuf out;
    sp_buf_init(&out);
    int rc = sp_report(p, &o, &out) == 0 && sampo_write_out(NULL, &out) == 0 ? 0 : 1;
    sampo_srclines_free(sl);
    if (out.oom) fprintf(stderr, "sampo report: out of memory\n");
    sp_buf_fini(&out);
    sampo_somsrc_free(src);
    sp_profile_free(p);
    return rc;
}
