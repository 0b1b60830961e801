/* SPDX-License-Identifier: MIT */
/*
 * cmd_timeline.c - `sampo timeline FILE [-o out.svg]`: samples over time by thread and the
 * sampling interval over time (src/analysis/timeline.h).
 */
#include "cmds.h"

#include <getopt.h>
#include <stdio.h>

#include "timeline.h"

static const char timeline_usage[] =
    "usage: sampo timeline [--buckets N] [FILE] [-o OUT.svg]\n"
    "  Samples per time bucket stacked by thread, the sampling interval over time (log scale,\n"
    "  following the self-tuner's rate changes) and pause/resume/dropped marks.  Sampled\n"
    "  profiles only (an exact profile has no samples over time).  FILE defaults to\n"
    "  " SAMPO_DEFAULT_FILE ".\n"
    "  -b, --buckets N    number of time buckets, 1..100000 (default 100)\n"
    "  -o, --output OUT   output file (default: standard output)\n"
    "  -h, --help         this text\n";

int cmd_timeline(int argc, char **argv) {
    static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                         {"buckets", required_argument, 0, 'b'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    SpTimelineOpts o;
    const char *outpath = NULL;
    uint64_t v;
    int c;
    sp_timeline_opts_default(&o);
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:b:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            outpath = optarg;
            break;
        case 'b':
            if (sampo_parse_u64(optarg, &v) || v < 1 || v > 100000) {
                fprintf(stderr, "sampo timeline: expected buckets in 1..100000, got '%s'\n",
                        optarg);
                return 2;
            }
            o.buckets = (unsigned)v;
            break;
        case 'h':
            fputs(timeline_usage, stdout);
            return 0;
        default:
            fputs(timeline_usage, stderr);
            return 2;
        }
    }
    const char *path = sampo_file_arg(argc, argv, optind, timeline_usage);
    if (!path) return 2;
    SpProfile *p = sampo_load(path);
    if (!p) return 1;
    SpBuf out;
    char err[256];
    sp_buf_init(&out);
    int rc = sp_timeline_svg(p, &o, &out, err, sizeof err);
    if (rc == -2)
        fprintf(stderr, "sampo timeline: %s: %s\n", path, err);
    else if (rc)
        fprintf(stderr, "sampo timeline: out of memory\n");
    else
        rc = sampo_write_out(outpath, &out);
    sp_buf_fini(&out);
    sp_profile_free(p);
    return rc ? 1 : 0;
}
