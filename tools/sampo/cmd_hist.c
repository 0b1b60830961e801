/* SPDX-License-Identifier: MIT */
/*
 * cmd_hist.c - `sampo hist FILE [-o out.svg] [--range A-B | --symbol NAME]`: the PC
 * histogram over the address space (src/analysis/hist.h).
 */
#include "cmds.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "hist.h"

static const char hist_usage[] =
    "usage: sampo hist [--range ADDR-ADDR | --symbol NAME] [--bins N] [--thread TID] [FILE]\n"
    "                  [-o OUT.svg]\n"
    "  Histogram of sampled PCs over the address space with the cumulative share line.\n"
    "  FILE defaults to " SAMPO_DEFAULT_FILE ".\n"
    "  -r, --range A-B     zoom to addresses [A, B) (hex with 0x, or decimal)\n"
    "  -s, --symbol NAME   zoom to one symbol\n"
    "  -b, --bins N        number of bins, 1..100000 (default 200)\n"
    "  --thread TID        only the samples of one thread (OS thread id)\n"
    "  -o, --output OUT    output file (default: standard output)\n"
    "  -h, --help          this text\n";

static int hist_parse_range(const char *s, SpHistOpts *o) {
    char lo[64];
    const char *dash = strchr(s, '-');
    if (!dash || (size_t)(dash - s) >= sizeof lo) return -1;
    memcpy(lo, s, (size_t)(dash - s));
    lo[dash - s] = 0;
    if (sampo_parse_u64(lo, &o->lo) || sampo_parse_u64(dash + 1, &o->hi) || o->hi <= o->lo)
        return -1;
    return 0;
}

int cmd_hist(int argc, char **argv) {
    static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                         {"range", required_argument, 0, 'r'},
                                         {"symbol", required_argument, 0, 's'},
                                         {"bins", required_argument, 0, 'b'},
                                         {"thread", required_argument, 0, 'T'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    SpHistOpts o;
    const char *outpath = NULL;
    uint64_t v;
    const char *thread = NULL;
    int c;
    sp_hist_opts_default(&o);
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:r:s:b:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            outpath = optarg;
            break;
        case 'r':
            if (hist_parse_range(optarg, &o)) {
                fprintf(stderr, "sampo hist: expected --range LO-HI with LO < HI, got '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case 's':
            o.symbol = optarg;
            break;
        case 'b':
            if (sampo_parse_u64(optarg, &v) || v < 1 || v > 100000) {
                fprintf(stderr, "sampo hist: expected bins in 1..100000, got '%s'\n", optarg);
                return 2;
            }
            o.bins = (unsigned)v;
            break;
        case 'T':
            thread = optarg;
            break;
        case 'h':
            fputs(hist_usage, stdout);
            return 0;
        default:
            fputs(hist_usage, stderr);
            return 2;
        }
    }
    const char *path = sampo_file_arg(argc, argv, optind, hist_usage);
    if (!path) return 2;
    SpProfile *p = sampo_load_thread(path, thread);
    if (!p) return 1;
    SpBuf out;
    char err[512];
    sp_buf_init(&out);
    int rc = sp_hist_svg(p, &o, &out, err, sizeof err);
    if (rc == -2)
        fprintf(stderr, "sampo hist: %s: %s\n", path, err);
    else if (rc)
        fprintf(stderr, "sampo hist: out of memory\n");
    else
        rc = sampo_write_out(outpath, &out);
    sp_buf_fini(&out);
    sp_profile_free(p);
    return rc ? 1 : 0;
}
